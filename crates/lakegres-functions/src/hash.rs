//! `hash` (Spark's Murmur3, seed 42)
//! (<https://docs.databricks.com/sql/language-manual/functions/hash.html>).
//! datafusion-spark provides `sha1` (also `sha`), `sha2`, `crc32`,
//! `xxhash64`; DataFusion `md5`.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{int_rows, Arg, Call, Returns, Udf, INT32};

/// The functions.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        Udf::new("hash", &[&[Arg::Any]], Returns::Fixed(&INT32), hash)
            .variadic(Arg::Any)
            .describe(
                "hash(expr1 [, ...]) - Returns a hash value of the arguments (Murmur3, seed 42).",
            )
            .build(),
    ]
}

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

fn mix_k1(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

fn mix_h1(h: u32, k: u32) -> u32 {
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

fn fmix(mut h: u32, len: u32) -> u32 {
    h ^= len;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

fn hash_int(v: i32, seed: u32) -> u32 {
    fmix(mix_h1(seed, mix_k1(v as u32)), 4)
}

fn hash_long(v: i64, seed: u32) -> u32 {
    let h = mix_h1(seed, mix_k1(v as u32));
    fmix(mix_h1(h, mix_k1((v >> 32) as u32)), 8)
}

/// Spark's `hashUnsafeBytes`: 4-byte words, then each remaining byte on
/// its own (sign-extended).
fn hash_bytes(b: &[u8], seed: u32) -> u32 {
    let aligned = b.len() - b.len() % 4;
    let mut h = seed;
    for chunk in b[..aligned].chunks_exact(4) {
        h = mix_h1(
            h,
            mix_k1(u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])),
        );
    }
    for &byte in &b[aligned..] {
        h = mix_h1(h, mix_k1(byte as i8 as i32 as u32));
    }
    fmix(h, b.len() as u32)
}

/// Row `i` of `a` hashed into `seed`; NULL leaves it.
fn hash_value(a: &dyn Array, i: usize, seed: u32) -> Result<u32> {
    if a.is_null(i) {
        return Ok(seed);
    }
    use datafusion::arrow::datatypes as t;
    Ok(match a.data_type() {
        DataType::Boolean => hash_int(a.as_boolean().value(i) as i32, seed),
        DataType::Int8 => hash_int(a.as_primitive::<t::Int8Type>().value(i) as i32, seed),
        DataType::Int16 => hash_int(a.as_primitive::<t::Int16Type>().value(i) as i32, seed),
        DataType::Int32 => hash_int(a.as_primitive::<t::Int32Type>().value(i), seed),
        DataType::Date32 => hash_int(a.as_primitive::<t::Date32Type>().value(i), seed),
        DataType::Int64 => hash_long(a.as_primitive::<t::Int64Type>().value(i), seed),
        DataType::Timestamp(TimeUnit::Microsecond, _) => hash_long(
            a.as_primitive::<t::TimestampMicrosecondType>().value(i),
            seed,
        ),
        DataType::Float32 => {
            let v = a.as_primitive::<t::Float32Type>().value(i);
            hash_int(if v == 0.0 { 0 } else { v.to_bits() as i32 }, seed)
        }
        DataType::Float64 => {
            let v = a.as_primitive::<t::Float64Type>().value(i);
            hash_long(if v == 0.0 { 0 } else { v.to_bits() as i64 }, seed)
        }
        DataType::Decimal128(p, _) if *p <= 18 => {
            hash_long(a.as_primitive::<t::Decimal128Type>().value(i) as i64, seed)
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let owned = datafusion::arrow::array::make_array(a.to_data());
            let s = super::udf::strs_of(&owned)?;
            hash_bytes(s.get(i).unwrap_or("").as_bytes(), seed)
        }
        DataType::Binary => hash_bytes(a.as_binary::<i32>().value(i), seed),
        DataType::List(_) | DataType::LargeList(_) => {
            let list = super::array::as_list(a.slice(i, 1))?;
            let values = list.value(0);
            let mut h = seed;
            for k in 0..values.len() {
                h = hash_value(values.as_ref(), k, h)?;
            }
            h
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            let mut h = seed;
            for col in s.columns() {
                h = hash_value(col.as_ref(), i, h)?;
            }
            h
        }
        other => {
            return Err(df(FunctionError::mismatch(
                "hash",
                format!("cannot hash {other}"),
            )))
        }
    })
}

fn hash(c: &Call) -> Result<ColumnarValue> {
    let arrays: Vec<ArrayRef> = (0..c.args.len())
        .map(|i| c.array(i))
        .collect::<Result<_>>()?;
    int_rows(c.len(), |i| {
        let mut h = 42u32;
        for a in &arrays {
            h = hash_value(a.as_ref(), i, h)?;
        }
        Ok(Some(h as i32))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur3_matches_spark() {
        // Spark: SELECT hash(1) = -559580957.
        assert_eq!(hash_int(1, 42) as i32, -559_580_957);
    }
}
