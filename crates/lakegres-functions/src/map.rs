//! Map functions: `map(k1, v1, …)` refusing NULL and duplicate keys as
//! Databricks does (`NULL_MAP_KEY`, `DUPLICATED_MAP_KEY`), `m[k]` and
//! `element_at(m, k)` (NULL for a missing key), `map_concat`,
//! `map_contains_key`
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#map-functions>).
//! DataFusion provides `map_keys`, `map_values`, `map_entries`;
//! datafusion-spark `map_from_arrays`, `map_from_entries`, `str_to_map`.

use std::sync::Arc;

use datafusion::arrow::array::{
    make_array, Array, ArrayRef, AsArray, MapArray, MutableArrayData, StructArray, UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{cast, take, SortOptions};
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{bool_rows, Arg, Call, Returns, Udf, BOOLEAN};

use Arg::Any;

/// The functions.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        map_udf(),
        Udf::new("map_concat", &[&[Any]], Returns::ArgType(0), map_concat)
            .variadic(Any)
            .describe("map_concat(map [, ...]) - Returns the union of all the given maps.")
            .build(),
        Udf::new(
            "map_contains_key",
            &[&[Any, Any]],
            Returns::Fixed(&BOOLEAN),
            map_contains_key,
        )
        .describe("map_contains_key(map, key) - Returns true if map contains key.")
        .build(),
    ]
}

/// `map(k1, v1, …)`; `lakegres_map()` is the empty map (DataFusion refuses
/// `map()` before any function sees it; rewrite.rs renames it).
pub(crate) fn map_udf() -> ScalarUDF {
    Udf::new("map", &[&[]], Returns::Computed(map_type), map)
        .aliases(&["lakegres_map"])
        .variadic(Any)
        .describe("map(key1, value1 [, key2, value2 ...]) - Creates a map with the given key/value pairs.")
        .build()
}

/// `m[k]`.
pub(crate) fn map_subscript() -> ScalarUDF {
    Udf::new("[]", &[&[Any, Any]], Returns::Computed(value_type), |c| {
        lookup(c, &c.array(0)?)
    })
    .build()
}

fn entry_fields(t: &DataType) -> Option<Fields> {
    match t {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(fields) if fields.len() == 2 => Some(fields.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn value_type(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    types
        .first()
        .and_then(entry_fields)
        .map(|f| f[1].data_type().clone())
        .ok_or_else(|| df(FunctionError::mismatch("[]", "expected a MAP")))
}

/// The value of key `c.arg(1)` in each map of `container`, NULL if absent.
pub(crate) fn lookup(c: &Call, container: &ArrayRef) -> Result<ColumnarValue> {
    let map = container.as_map();
    let keys = map.keys();
    let needle = cast(&c.array(1)?, keys.data_type())?;
    let compare = datafusion::arrow::array::make_comparator(
        keys.as_ref(),
        needle.as_ref(),
        SortOptions::default(),
    )?;
    let mut at = Vec::with_capacity(map.len());
    for i in 0..map.len() {
        if map.is_null(i) || needle.is_null(i) {
            at.push(None);
            continue;
        }
        let (start, end) = (
            map.value_offsets()[i] as usize,
            map.value_offsets()[i + 1] as usize,
        );
        at.push(
            (start..end)
                .find(|k| compare(*k, i).is_eq())
                .map(|k| k as u64),
        );
    }
    Ok(ColumnarValue::Array(take(
        map.values().as_ref(),
        &UInt64Array::from(at),
        None,
    )?))
}

fn map_type(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    if !types.len().is_multiple_of(2) {
        return Err(df(FunctionError::WrongNumArgs {
            function: "map".into(),
            expected: "an even number of".into(),
            actual: types.len(),
        }));
    }
    let common = |start: usize| -> DataType {
        types
            .iter()
            .skip(start)
            .step_by(2)
            .filter(|t| **t != DataType::Null)
            .fold(None::<DataType>, |acc, t| match acc {
                None => Some(t.clone()),
                Some(a) => {
                    datafusion::logical_expr::type_coercion::binary::comparison_coercion(&a, t)
                        .or(Some(a))
                }
            })
            .unwrap_or(DataType::Null)
    };
    if types.iter().step_by(2).any(|t| *t == DataType::Null) {
        return Err(df(FunctionError::NullMapKey));
    }
    // The empty map is MAP<STRING, STRING>.
    let key = match common(0) {
        DataType::Null => DataType::Utf8,
        k => k,
    };
    Ok(DataType::Map(
        Arc::new(Field::new(
            "entries",
            DataType::Struct(Fields::from(vec![
                Field::new("key", key, false),
                Field::new(
                    "value",
                    match common(1) {
                        DataType::Null if types.is_empty() => DataType::Utf8,
                        v => v,
                    },
                    true,
                ),
            ])),
            false,
        )),
        false,
    ))
}

fn map(c: &Call) -> Result<ColumnarValue> {
    let fields = entry_fields(c.return_type)
        .ok_or_else(|| DataFusionError::Internal("map returns a map".into()))?;
    let rows = c.len();
    let pairs = c.args.len() / 2;
    let keys: Vec<ArrayRef> = (0..pairs)
        .map(|p| Ok(cast(&c.array(2 * p)?, fields[0].data_type())?))
        .collect::<Result<_>>()?;
    let values: Vec<ArrayRef> = (0..pairs)
        .map(|p| Ok(cast(&c.array(2 * p + 1)?, fields[1].data_type())?))
        .collect::<Result<_>>()?;
    let key_refs: Vec<&dyn Array> = keys.iter().map(|a| a.as_ref()).collect();
    let value_refs: Vec<&dyn Array> = values.iter().map(|a| a.as_ref()).collect();
    let mut indices = Vec::with_capacity(rows * pairs);
    for i in 0..rows {
        for (p, key) in keys.iter().enumerate() {
            if key.is_null(i) {
                return Err(df(FunctionError::NullMapKey));
            }
            for earlier in &keys[..p] {
                let cmp = datafusion::arrow::array::make_comparator(
                    earlier.as_ref(),
                    key.as_ref(),
                    SortOptions::default(),
                )?;
                if cmp(i, i).is_eq() {
                    return Err(df(FunctionError::DuplicatedMapKey {
                        key: ScalarValue::try_from_array(key, i)?.to_string(),
                    }));
                }
            }
            indices.push((p, i));
        }
    }
    let entries = if pairs == 0 {
        StructArray::try_new(
            fields.clone(),
            vec![
                datafusion::arrow::array::new_empty_array(fields[0].data_type()),
                datafusion::arrow::array::new_empty_array(fields[1].data_type()),
            ],
            None,
        )?
    } else {
        let k = datafusion::arrow::compute::interleave(&key_refs, &indices)?;
        let v = datafusion::arrow::compute::interleave(&value_refs, &indices)?;
        StructArray::try_new(fields.clone(), vec![k, v], None)?
    };
    let DataType::Map(entry_field, sorted) = c.return_type.clone() else {
        return Err(DataFusionError::Internal("map returns a map".into()));
    };
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(pairs, rows));
    Ok(ColumnarValue::Array(Arc::new(MapArray::try_new(
        entry_field,
        offsets,
        entries,
        None,
        sorted,
    )?)))
}

fn map_concat(c: &Call) -> Result<ColumnarValue> {
    let result = c.return_type.clone();
    let maps: Vec<ArrayRef> = (0..c.args.len())
        .map(|i| Ok(cast(&c.array(i)?, &result)?))
        .collect::<Result<_>>()?;
    let rows = c.len();
    let DataType::Map(entry_field, sorted) = result.clone() else {
        return Err(DataFusionError::Internal("map_concat returns a map".into()));
    };
    let datas: Vec<_> = maps
        .iter()
        .map(|m| m.as_map().entries().to_data())
        .collect();
    let refs: Vec<_> = datas.iter().collect();
    let mut out = MutableArrayData::new(refs, false, 0);
    let mut offsets = vec![0i32];
    let mut nulls = Vec::with_capacity(rows);
    let mut len = 0i32;
    for i in 0..rows {
        if maps.iter().any(|m| m.is_null(i)) {
            offsets.push(len);
            nulls.push(false);
            continue;
        }
        let mut seen: Vec<(usize, usize)> = Vec::new();
        for (m, map) in maps.iter().enumerate() {
            let map = map.as_map();
            let (start, end) = (
                map.value_offsets()[i] as usize,
                map.value_offsets()[i + 1] as usize,
            );
            for k in start..end {
                for (pm, pk) in &seen {
                    let other = maps[*pm].as_map();
                    let cmp = datafusion::arrow::array::make_comparator(
                        other.keys().as_ref(),
                        map.keys().as_ref(),
                        SortOptions::default(),
                    )?;
                    if cmp(*pk, k).is_eq() {
                        return Err(df(FunctionError::DuplicatedMapKey {
                            key: ScalarValue::try_from_array(map.keys(), k)?.to_string(),
                        }));
                    }
                }
                seen.push((m, k));
                out.try_extend(m, k, k + 1)?;
                len += 1;
            }
        }
        offsets.push(len);
        nulls.push(true);
    }
    let entries = make_array(out.freeze());
    let entries = entries.as_struct().clone();
    Ok(ColumnarValue::Array(Arc::new(MapArray::try_new(
        entry_field,
        OffsetBuffer::new(offsets.into()),
        entries,
        Some(nulls.into()),
        sorted,
    )?)))
}

fn map_contains_key(c: &Call) -> Result<ColumnarValue> {
    let container = c.array(0)?;
    let map = container.as_map_opt().ok_or_else(|| {
        df(FunctionError::mismatch(
            "map_contains_key",
            "the first argument must be a MAP",
        ))
    })?;
    let keys = map.keys();
    let needle = cast(&c.array(1)?, keys.data_type())?;
    let compare = datafusion::arrow::array::make_comparator(
        keys.as_ref(),
        needle.as_ref(),
        SortOptions::default(),
    )?;
    bool_rows(map.len(), |i| {
        if map.is_null(i) || needle.is_null(i) {
            return Ok(None);
        }
        let (start, end) = (
            map.value_offsets()[i] as usize,
            map.value_offsets()[i + 1] as usize,
        );
        Ok(Some((start..end).any(|k| compare(k, i).is_eq())))
    })
}
