//! Postgres' binary COPY format, read into Arrow columns: the `PGCOPY`
//! header, then tuples of length-prefixed fields in each type's binary
//! send form (big-endian integers and floats, days and microseconds since
//! 2000-01-01, base-10000 numerics).

use datafusion::arrow::array::{
    ArrayBuilder, ArrayRef, BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder,
    Float32Builder, Float64Builder, Int16Builder, Int32Builder, Int64Builder, Int8Builder,
    StringBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, TimeUnit};

/// The 11-byte signature that starts binary COPY data.
pub const SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";

/// Days from 1970-01-01 to 2000-01-01, Postgres' epoch.
const EPOCH_DAYS: i32 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
const EPOCH_MICROS: i64 = 946_684_800_000_000;

/// One column being filled.
pub struct Column {
    builder: Box<dyn ArrayBuilder>,
    data_type: DataType,
}

impl Column {
    /// A column of `data_type`, or the type's name if binary COPY of it is
    /// not supported.
    pub fn new(data_type: &DataType) -> Result<Self, String> {
        let builder: Box<dyn ArrayBuilder> = match data_type {
            DataType::Boolean => Box::new(BooleanBuilder::new()),
            DataType::Int8 => Box::new(Int8Builder::new()),
            DataType::Int16 => Box::new(Int16Builder::new()),
            DataType::Int32 => Box::new(Int32Builder::new()),
            DataType::Int64 => Box::new(Int64Builder::new()),
            DataType::Float32 => Box::new(Float32Builder::new()),
            DataType::Float64 => Box::new(Float64Builder::new()),
            DataType::Utf8 => Box::new(StringBuilder::new()),
            DataType::Binary => Box::new(BinaryBuilder::new()),
            DataType::Date32 => Box::new(Date32Builder::new()),
            DataType::Timestamp(TimeUnit::Microsecond, tz) => {
                Box::new(TimestampMicrosecondBuilder::new().with_timezone_opt(tz.clone()))
            }
            DataType::Decimal128(p, s) => Box::new(
                Decimal128Builder::new()
                    .with_precision_and_scale(*p, *s)
                    .map_err(|e| e.to_string())?,
            ),
            other => return Err(other.to_string()),
        };
        Ok(Self {
            builder,
            data_type: data_type.clone(),
        })
    }

    /// Appends one field (`None` is NULL); an error says what is wrong.
    pub fn append(&mut self, field: Option<&[u8]>) -> Result<(), String> {
        let b = self.builder.as_any_mut();
        macro_rules! builder {
            ($t:ty) => {
                b.downcast_mut::<$t>()
                    .ok_or_else(|| "internal: builder type".to_string())?
            };
        }
        let Some(v) = field else {
            match &self.data_type {
                DataType::Boolean => builder!(BooleanBuilder).append_null(),
                DataType::Int8 => builder!(Int8Builder).append_null(),
                DataType::Int16 => builder!(Int16Builder).append_null(),
                DataType::Int32 => builder!(Int32Builder).append_null(),
                DataType::Int64 => builder!(Int64Builder).append_null(),
                DataType::Float32 => builder!(Float32Builder).append_null(),
                DataType::Float64 => builder!(Float64Builder).append_null(),
                DataType::Utf8 => builder!(StringBuilder).append_null(),
                DataType::Binary => builder!(BinaryBuilder).append_null(),
                DataType::Date32 => builder!(Date32Builder).append_null(),
                DataType::Timestamp(..) => builder!(TimestampMicrosecondBuilder).append_null(),
                DataType::Decimal128(..) => builder!(Decimal128Builder).append_null(),
                _ => return Err("unsupported type".into()),
            }
            return Ok(());
        };
        match &self.data_type {
            DataType::Boolean => match v {
                [b0] => builder!(BooleanBuilder).append_value(*b0 != 0),
                _ => return Err(size(v, "1")),
            },
            DataType::Int8 => {
                let i = int(v)?;
                builder!(Int8Builder).append_value(i8::try_from(i).map_err(|_| range(i))?)
            }
            DataType::Int16 => {
                let i = int(v)?;
                builder!(Int16Builder).append_value(i16::try_from(i).map_err(|_| range(i))?)
            }
            DataType::Int32 => {
                let i = int(v)?;
                builder!(Int32Builder).append_value(i32::try_from(i).map_err(|_| range(i))?)
            }
            DataType::Int64 => builder!(Int64Builder).append_value(int(v)?),
            DataType::Float32 => {
                let f = float(v)?;
                builder!(Float32Builder).append_value(f as f32)
            }
            DataType::Float64 => builder!(Float64Builder).append_value(float(v)?),
            DataType::Utf8 => builder!(StringBuilder)
                .append_value(std::str::from_utf8(v).map_err(|_| "invalid UTF-8".to_string())?),
            DataType::Binary => builder!(BinaryBuilder).append_value(v),
            DataType::Date32 => {
                let days = i32::try_from(int(v)?).map_err(|_| "date out of range".to_string())?;
                builder!(Date32Builder).append_value(days + EPOCH_DAYS)
            }
            DataType::Timestamp(..) => {
                let micros = int(v)?;
                builder!(TimestampMicrosecondBuilder).append_value(micros + EPOCH_MICROS)
            }
            DataType::Decimal128(_, s) => {
                let value = numeric(v, *s)?;
                builder!(Decimal128Builder).append_value(value)
            }
            _ => return Err("unsupported type".into()),
        }
        Ok(())
    }

    pub fn finish(&mut self) -> ArrayRef {
        self.builder.finish()
    }
}

fn size(v: &[u8], want: &str) -> String {
    format!("a field of {} bytes where {want} were expected", v.len())
}

fn range(i: i64) -> String {
    format!("{i} is out of range for the column")
}

/// A 2-, 4- or 8-byte big-endian integer.
fn int(v: &[u8]) -> Result<i64, String> {
    Ok(match v {
        [a, b] => i64::from(i16::from_be_bytes([*a, *b])),
        [a, b, c, d] => i64::from(i32::from_be_bytes([*a, *b, *c, *d])),
        [a, b, c, d, e, f, g, h] => i64::from_be_bytes([*a, *b, *c, *d, *e, *f, *g, *h]),
        _ => return Err(size(v, "2, 4 or 8")),
    })
}

fn float(v: &[u8]) -> Result<f64, String> {
    Ok(match v {
        [a, b, c, d] => f64::from(f32::from_be_bytes([*a, *b, *c, *d])),
        [a, b, c, d, e, f, g, h] => f64::from_be_bytes([*a, *b, *c, *d, *e, *f, *g, *h]),
        _ => return Err(size(v, "4 or 8")),
    })
}

/// A numeric (ndigits, weight, sign, dscale, base-10000 digits) as an
/// integer scaled by 10^scale.
fn numeric(v: &[u8], scale: i8) -> Result<i128, String> {
    let word = |i: usize| -> Result<i16, String> {
        v.get(i * 2..i * 2 + 2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a truncated numeric".to_string())
    };
    let ndigits = usize::try_from(word(0)?).map_err(|_| "a bad numeric".to_string())?;
    let weight = i32::from(word(1)?);
    let sign = word(2)? as u16;
    if sign == 0xC000 {
        return Err("NaN does not fit a decimal column".into());
    }
    let mut out: i128 = 0;
    for i in 0..ndigits {
        let digit = i128::from(word(4 + i)?);
        // The digit's power of ten, once scaled.
        let exp = 4 * (weight - i as i32) + i32::from(scale);
        let term = if exp >= 0 {
            10i128
                .checked_pow(exp as u32)
                .and_then(|p| digit.checked_mul(p))
        } else {
            10i128.checked_pow((-exp) as u32).map(|p| digit / p)
        };
        out = term
            .and_then(|t| out.checked_add(t))
            .ok_or_else(|| "numeric out of range for the column".to_string())?;
    }
    Ok(if sign == 0x4000 { -out } else { out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_scale_to_the_column() {
        // 12345.67: ndigits 3, weight 1, sign +, dscale 2, digits 1 2345 6700
        let v: Vec<u8> = [3i16, 1, 0, 2, 1, 2345, 6700]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect();
        assert_eq!(numeric(&v, 2).unwrap(), 1_234_567);
        let neg: Vec<u8> = [1i16, -1, 0x4000, 1, 5000]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect();
        assert_eq!(numeric(&neg, 1).unwrap(), -5);
    }

    #[test]
    fn dates_and_timestamps_shift_epochs() {
        let mut c = Column::new(&DataType::Date32).unwrap();
        c.append(Some(&0i32.to_be_bytes())).unwrap();
        let a = c.finish();
        let d = a
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Date32Array>()
            .unwrap();
        assert_eq!(d.value(0), EPOCH_DAYS);
    }
}
