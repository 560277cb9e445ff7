//! Array functions where Databricks differs from DataFusion: 0-based `[]`
//! and `get`, 1-based `element_at` with ANSI errors, `array_position`
//! answering 0, `array_prepend(array, element)`, `array_insert`,
//! `sort_array`, `sequence`, `size` …
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#array-functions>).
//! datafusion-spark provides `array`, `array_contains`, `array_repeat`,
//! `slice`, `shuffle`; DataFusion `array_distinct`, `array_union`,
//! `array_intersect`, `array_except`, `array_append`, `flatten`,
//! `arrays_overlap`, `array_join` …

use std::sync::Arc;

use datafusion::arrow::array::{
    make_array, new_null_array, Array, ArrayRef, AsArray, Int64Array, ListArray, MutableArrayData,
    UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{cast, take, SortOptions};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{int_rows, long_rows, Arg, Call, Returns, Udf, INT32, INT64};

use Arg::{Any, Long};

/// The functions.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        Udf::new("element_at", &[&[Any, Any]], Returns::Computed(element_type), |c| element(c, Access::OneBased { strict: true }))
            .describe("element_at(arrayExpr, index) - Returns the element of arrayExpr at index (1-based, negative from the end); element_at(mapExpr, key) the value of key.")
            .build(),
        Udf::new("lakegres_arrays_zip", &[&[Any, Any]], Returns::Computed(zip_type), arrays_zip)
            .variadic(Any)
            .build(),
        Udf::new("try_element_at", &[&[Any, Any]], Returns::Computed(element_type), |c| element(c, Access::OneBased { strict: false }))
            .describe("try_element_at(arrayExpr, index) - element_at, or NULL if index is out of bounds.")
            .build(),
        Udf::new("get", &[&[Any, Any]], Returns::Computed(element_type), |c| element(c, Access::ZeroBased { strict: false }))
            .describe("get(arrayExpr, index) - Returns the element of arrayExpr at index (0-based), or NULL if out of bounds.")
            .build(),
        Udf::new("array_position", &[&[Any, Any]], Returns::Fixed(&INT64), array_position)
            .describe("array_position(array, element) - Returns the (1-based) position of the first element equal to element in array, or 0.")
            .build(),
        Udf::new("array_prepend", &[&[Any, Any]], Returns::Computed(same_list), |c| insert_at(c, Some(1), 1))
            .describe("array_prepend(array, elem) - Returns array with elem added at the beginning.")
            .build(),
        Udf::new("array_insert", &[&[Any, Long, Any]], Returns::Computed(same_list), |c| insert_at(c, None, 2))
            .describe("array_insert(array, index, elem) - Returns array with elem inserted at the (1-based) index.")
            .build(),
        Udf::new("array_compact", &[&[Any]], Returns::Computed(same_list), array_compact)
            .describe("array_compact(array) - Removes NULL values from array.")
            .build(),
        Udf::new("sort_array", &[&[Any], &[Any, Arg::Bool]], Returns::Computed(same_list), sort_array)
            .describe("sort_array(array [, ascendingOrder]) - Sorts array in ascending (NULLs first) or descending (NULLs last) order.")
            .build(),
        Udf::new("size", &[&[Any]], Returns::Fixed(&INT32), size)
            .aliases(&["cardinality", "array_size"])
            .describe("size(expr) - Returns the number of elements of an ARRAY or MAP; NULL for NULL.")
            .build(),
        Udf::new("array_remove", &[&[Any, Any]], Returns::Computed(same_list), array_remove)
            .describe("array_remove(array, element) - Removes all elements equal to element from array.")
            .build(),
        Udf::new("sequence", &[&[Any, Any], &[Any, Any, Any]], Returns::Computed(sequence_type), sequence)
            .describe("sequence(start, stop [, step]) - Generates an array of elements from start to stop (inclusive), incrementing by step.")
            .build(),
        Udf::new("reverse", &[&[Any]], Returns::ArgType(0), reverse)
            .describe("reverse(expr) - Returns a reversed string or an array with reverse order of elements.")
            .build(),
    ]
}

/// `concat` of arrays (datafusion-spark's concat is for strings): NULL if
/// any array is NULL.
pub(crate) fn concat_arrays(c: &Call) -> Result<ColumnarValue> {
    let result = c.return_type.clone();
    let lists: Vec<ListArray> = (0..c.args.len())
        .map(|i| as_list(cast(&c.array(i)?, &result)?))
        .collect::<Result<_>>()?;
    let datas: Vec<_> = lists.iter().map(|l| l.values().to_data()).collect();
    let mut out = MutableArrayData::new(datas.iter().collect(), false, 0);
    let (offsets, nulls) = each_row(&lists, c.len(), |spans| {
        let mut added = 0;
        for (k, (start, end)) in spans.into_iter().enumerate() {
            out.try_extend(k, start, end)?;
            added += end - start;
        }
        Ok(added)
    })?;
    list_of(
        &result,
        offsets,
        make_array(out.freeze()),
        Some(nulls.into()),
    )
}

/// `arr[i]`: 0-based, out of bounds is `INVALID_ARRAY_INDEX`.
pub(crate) fn subscript() -> ScalarUDF {
    Udf::new("[]", &[&[Any, Any]], Returns::Computed(element_type), |c| {
        element(c, Access::ZeroBased { strict: true })
    })
    .build()
}

#[derive(Debug, Clone, Copy)]
enum Access {
    ZeroBased { strict: bool },
    OneBased { strict: bool },
}

fn element_type(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    match types.first() {
        Some(DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _)) => {
            Ok(f.data_type().clone())
        }
        Some(DataType::Map(entries, _)) => match entries.data_type() {
            DataType::Struct(fields) if fields.len() == 2 => Ok(fields[1].data_type().clone()),
            other => Err(DataFusionError::Internal(format!("map entries {other}"))),
        },
        Some(DataType::Null) => Ok(DataType::Null),
        other => Err(df(FunctionError::mismatch(
            "element_at",
            format!("the first argument must be an ARRAY or MAP, got {other:?}"),
        ))),
    }
}

fn same_list(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    match types.first() {
        Some(DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _)) => Ok(
            DataType::List(Arc::new(f.as_ref().clone().with_nullable(true))),
        ),
        Some(DataType::Null) => {
            // The element's type decides (array_prepend(NULL, 1)).
            let element = types.last().cloned().unwrap_or(DataType::Null);
            Ok(DataType::List(Arc::new(Field::new(
                "element", element, true,
            ))))
        }
        other => Err(df(FunctionError::mismatch(
            "an array function",
            format!("the first argument must be an ARRAY, got {other:?}"),
        ))),
    }
}

/// An argument as a `List` array of `rows` rows.
pub(crate) fn as_list(a: ArrayRef) -> Result<ListArray> {
    let a = match a.data_type() {
        DataType::List(_) => a,
        DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            cast(&a, &DataType::List(Arc::clone(f)))?
        }
        DataType::Null => {
            let t = DataType::List(Arc::new(Field::new("element", DataType::Null, true)));
            new_null_array(&t, a.len())
        }
        other => {
            return Err(df(FunctionError::mismatch(
                "an array function",
                format!("expected an ARRAY, got {other}"),
            )))
        }
    };
    Ok(a.as_list::<i32>().clone())
}

fn element(c: &Call, access: Access) -> Result<ColumnarValue> {
    let container = c.array(0)?;
    if let DataType::Map(..) = container.data_type() {
        return super::map::lookup(c, &container);
    }
    let list = as_list(container)?;
    let indexes = cast(&c.array(1)?, &DataType::Int64)?;
    let indexes = indexes.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
    let mut take_at = Vec::with_capacity(list.len());
    for i in 0..list.len() {
        if list.is_null(i) || indexes.is_null(i) {
            take_at.push(None);
            continue;
        }
        let len = list.value_length(i) as i64;
        let index = indexes.value(i);
        let position = match access {
            Access::ZeroBased { .. } => Some(index).filter(|p| (0..len).contains(p)),
            Access::OneBased { .. } => {
                if index == 0 {
                    return Err(df(FunctionError::IndexOfZero));
                }
                let p = if index > 0 { index - 1 } else { len + index };
                Some(p).filter(|p| (0..len).contains(p))
            }
        };
        match (position, access) {
            (Some(p), _) => take_at.push(Some(list.value_offsets()[i] as u64 + p as u64)),
            (None, Access::ZeroBased { strict: true }) => {
                return Err(df(FunctionError::InvalidArrayIndex {
                    index,
                    size: len as usize,
                }))
            }
            (None, Access::OneBased { strict: true }) => {
                return Err(df(FunctionError::InvalidArrayIndexInElementAt {
                    index,
                    size: len as usize,
                }))
            }
            (None, _) => take_at.push(None),
        }
    }
    let values = take(list.values(), &UInt64Array::from(take_at), None)?;
    Ok(ColumnarValue::Array(values))
}

/// Row-wise equality of an element of `values` with row `j` of `needle`.
fn equal_at<'a>(
    values: &'a dyn Array,
    needle: &'a dyn Array,
) -> Result<impl Fn(usize, usize) -> bool + 'a> {
    let compare =
        datafusion::arrow::array::make_comparator(values, needle, SortOptions::default())?;
    Ok(move |i: usize, j: usize| values.is_valid(i) && needle.is_valid(j) && compare(i, j).is_eq())
}

fn element_of(c: &Call, list: &ListArray) -> Result<ArrayRef> {
    let element_type = match list.data_type() {
        DataType::List(f) => f.data_type().clone(),
        other => other.clone(),
    };
    let needle = c.array(1)?;
    if element_type == DataType::Null || needle.data_type() == &element_type {
        return Ok(needle);
    }
    Ok(cast(&needle, &element_type)?)
}

fn array_position(c: &Call) -> Result<ColumnarValue> {
    let list = as_list(c.array(0)?)?;
    let needle = element_of(c, &list)?;
    let values = list.values();
    let equal = equal_at(values.as_ref(), needle.as_ref())?;
    long_rows(list.len(), |i| {
        if list.is_null(i) || needle.is_null(i) {
            return Ok(None);
        }
        let (start, end) = (
            list.value_offsets()[i] as usize,
            list.value_offsets()[i + 1] as usize,
        );
        Ok(Some(
            (start..end)
                .position(|k| equal(k, i))
                .map(|p| p as i64 + 1)
                .unwrap_or(0),
        ))
    })
}

fn list_of(
    result: &DataType,
    offsets: Vec<i32>,
    values: ArrayRef,
    nulls: Option<datafusion::arrow::buffer::NullBuffer>,
) -> Result<ColumnarValue> {
    let DataType::List(field) = result else {
        return Err(DataFusionError::Internal(format!(
            "expected a list type, got {result}"
        )));
    };
    let values = if values.data_type() != field.data_type() {
        cast(&values, field.data_type())?
    } else {
        values
    };
    Ok(ColumnarValue::Array(Arc::new(ListArray::try_new(
        Arc::clone(field),
        OffsetBuffer::new(offsets.into()),
        values,
        nulls,
    )?)))
}

/// `array_prepend` (position 1) and `array_insert` (the position argument):
/// the element at a 1-based position, negative counting from the end, past
/// the end padded with NULLs.
fn insert_at(c: &Call, fixed: Option<i64>, element_arg: usize) -> Result<ColumnarValue> {
    let first = c.array(0)?;
    let result_type = c.return_type.clone();
    let DataType::List(field) = &result_type else {
        return Err(DataFusionError::Internal(
            "array_insert returns a list".into(),
        ));
    };
    let list = if first.data_type() == &DataType::Null {
        as_list(new_null_array(&result_type, first.len()))?
    } else {
        as_list(cast(&first, &result_type)?)?
    };
    let elements = cast(&c.array(element_arg)?, field.data_type())?;
    let positions = match fixed {
        Some(_) => None,
        None => Some(cast(&c.array(1)?, &DataType::Int64)?),
    };
    let values = list.values().to_data();
    let inserted = elements.to_data();
    let mut out = MutableArrayData::new(vec![&values, &inserted], true, values.len() + list.len());
    let mut offsets = vec![0i32];
    let mut nulls = Vec::with_capacity(list.len());
    let mut len = 0i32;
    for i in 0..list.len() {
        let position = match (&positions, fixed) {
            (_, Some(p)) => Some(p),
            (Some(p), None) => {
                let p = p.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
                p.is_valid(i).then(|| p.value(i))
            }
            _ => None,
        };
        let (Some(position), false) = (position, list.is_null(i)) else {
            offsets.push(len);
            nulls.push(false);
            continue;
        };
        if position == 0 {
            return Err(df(FunctionError::IndexOfZero));
        }
        let (start, end) = (
            list.value_offsets()[i] as usize,
            list.value_offsets()[i + 1] as usize,
        );
        let n = (end - start) as i64;
        // 0-based slot of the new element, and NULLs to pad with.
        let (slot, pad_before, pad_after) = if position > 0 {
            let slot = position - 1;
            if slot > n {
                (n, slot - n, 0)
            } else {
                (slot, 0, 0)
            }
        } else {
            // -1 after the last element (array_insert.html: -1 appends).
            let slot = n + 1 + position;
            if slot < 0 {
                (0, 0, -slot)
            } else {
                (slot, 0, 0)
            }
        };
        let slot = slot as usize;
        out.try_extend(0, start, start + slot)?;
        out.try_extend_nulls(pad_before as usize)?;
        out.try_extend(1, i, i + 1)?;
        out.try_extend_nulls(pad_after as usize)?;
        out.try_extend(0, start + slot, end)?;
        len += (n + 1 + pad_before + pad_after) as i32;
        offsets.push(len);
        nulls.push(true);
    }
    list_of(
        &result_type,
        offsets,
        make_array(out.freeze()),
        Some(datafusion::arrow::buffer::NullBuffer::from(nulls)),
    )
}

fn filter_elements(
    list: &ListArray,
    keep: impl Fn(usize, usize) -> bool,
    result: &DataType,
) -> Result<ColumnarValue> {
    let values = list.values().to_data();
    let mut out = MutableArrayData::new(vec![&values], false, values.len());
    let mut offsets = vec![0i32];
    let mut len = 0i32;
    for i in 0..list.len() {
        let (start, end) = (
            list.value_offsets()[i] as usize,
            list.value_offsets()[i + 1] as usize,
        );
        if list.is_valid(i) {
            for k in start..end {
                if keep(i, k) {
                    out.try_extend(0, k, k + 1)?;
                    len += 1;
                }
            }
        }
        offsets.push(len);
    }
    list_of(
        result,
        offsets,
        make_array(out.freeze()),
        list.nulls().cloned(),
    )
}

fn array_compact(c: &Call) -> Result<ColumnarValue> {
    let list = as_list(c.array(0)?)?;
    // Logical: the values of `array(NULL)` are a NullArray, whose NULLs
    // are in no buffer.
    let nulls = list.values().logical_nulls();
    filter_elements(
        &list,
        |_, k| nulls.as_ref().is_none_or(|n| n.is_valid(k)),
        c.return_type,
    )
}

fn array_remove(c: &Call) -> Result<ColumnarValue> {
    let list = as_list(c.array(0)?)?;
    let needle = element_of(c, &list)?;
    let values = Arc::clone(list.values());
    let equal = equal_at(values.as_ref(), needle.as_ref())?;
    let ColumnarValue::Array(result) = filter_elements(&list, |i, k| !equal(k, i), c.return_type)?
    else {
        return Err(DataFusionError::Internal("array_remove".into()));
    };
    // array_remove(a, NULL) is NULL.
    let null_needle = datafusion::arrow::compute::is_null(&needle)?;
    Ok(ColumnarValue::Array(datafusion::arrow::compute::nullif(
        &result,
        &null_needle,
    )?))
}

fn sort_array(c: &Call) -> Result<ColumnarValue> {
    let list = as_list(c.array(0)?)?;
    let ascending = if c.args.len() == 2 {
        match c.bool(1)?.get(0) {
            Some(ascending) => ascending,
            // sort_array(a, NULL) is NULL.
            None => {
                return Ok(ColumnarValue::Array(
                    datafusion::arrow::array::new_null_array(c.return_type, list.len()),
                ))
            }
        }
    } else {
        true
    };
    sort_lists(&list, ascending, ascending, c.return_type)
}

/// Sorts each array; NULLs first or last.
pub(crate) fn sort_lists(
    list: &ListArray,
    ascending: bool,
    nulls_first: bool,
    result: &DataType,
) -> Result<ColumnarValue> {
    let values = list.values();
    let options = SortOptions {
        descending: !ascending,
        nulls_first,
    };
    let mut order: Vec<u64> = Vec::with_capacity(values.len());
    let compare =
        datafusion::arrow::array::make_comparator(values.as_ref(), values.as_ref(), options)?;
    for i in 0..list.len() {
        let (start, end) = (
            list.value_offsets()[i] as usize,
            list.value_offsets()[i + 1] as usize,
        );
        let mut idx: Vec<usize> = (start..end).collect();
        idx.sort_by(|a, b| compare(*a, *b));
        order.extend(idx.into_iter().map(|k| k as u64));
    }
    let sorted = take(values.as_ref(), &UInt64Array::from(order), None)?;
    let offsets: Vec<i32> = list
        .value_offsets()
        .iter()
        .map(|o| o - list.value_offsets()[0])
        .collect();
    list_of(result, offsets, sorted, list.nulls().cloned())
}

fn size(c: &Call) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    match a.data_type() {
        DataType::Map(..) => {
            let m = a.as_map();
            int_rows(m.len(), |i| Ok(m.is_valid(i).then(|| m.value_length(i))))
        }
        DataType::Null => int_rows(a.len(), |_| Ok(None)),
        _ => {
            let list = as_list(a)?;
            int_rows(list.len(), |i| {
                Ok(list.is_valid(i).then(|| list.value_length(i)))
            })
        }
    }
}

fn sequence_type(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    let element = match (types.first(), types.get(1)) {
        (Some(a), Some(b)) if a.is_integer() && b.is_integer() => {
            if matches!(a, DataType::Int64) || matches!(b, DataType::Int64) {
                DataType::Int64
            } else {
                DataType::Int32
            }
        }
        (Some(DataType::Date32), _) => DataType::Date32,
        (Some(DataType::Timestamp(_, tz)), _) => DataType::Timestamp(
            datafusion::arrow::datatypes::TimeUnit::Microsecond,
            tz.clone(),
        ),
        (a, b) => {
            return Err(df(FunctionError::mismatch(
                "sequence",
                format!(
                    "start and stop must be integers, dates or timestamps, got {a:?} and {b:?}"
                ),
            )))
        }
    };
    Ok(DataType::List(Arc::new(Field::new(
        "element", element, true,
    ))))
}

fn sequence(c: &Call) -> Result<ColumnarValue> {
    let DataType::List(field) = c.return_type.clone() else {
        return Err(DataFusionError::Internal("sequence returns a list".into()));
    };
    let n = c.len();
    let start_type = c.arg(0)?.data_type();
    let mut offsets = vec![0i32];
    let mut nulls = Vec::with_capacity(n);
    let mut len = 0i32;
    const MAX_LENGTH: i64 = i32::MAX as i64 - 15;
    let too_long = |count: i64| {
        df(FunctionError::InvalidParameter {
            function: "sequence",
            parameter: "stop",
            reason: format!("the sequence would have {count} elements, more than {MAX_LENGTH}"),
        })
    };
    let bad_step = || {
        df(FunctionError::InvalidParameter {
            function: "sequence",
            parameter: "step",
            reason: "the step must move from start toward stop".into(),
        })
    };
    match start_type {
        t if t.is_integer() => {
            let starts = cast(&c.array(0)?, &DataType::Int64)?;
            let stops = cast(&c.array(1)?, &DataType::Int64)?;
            let steps = if c.args.len() == 3 {
                Some(cast(&c.array(2)?, &DataType::Int64)?)
            } else {
                None
            };
            let (starts, stops) = (
                starts.as_primitive::<datafusion::arrow::datatypes::Int64Type>(),
                stops.as_primitive::<datafusion::arrow::datatypes::Int64Type>(),
            );
            let steps = steps
                .as_ref()
                .map(|s| s.as_primitive::<datafusion::arrow::datatypes::Int64Type>());
            let mut values: Vec<i64> = Vec::new();
            for i in 0..n {
                let step = match steps {
                    Some(s) => s.is_valid(i).then(|| s.value(i)),
                    None => Some(if starts.value(i) <= stops.value(i) {
                        1
                    } else {
                        -1
                    }),
                };
                if starts.is_null(i) || stops.is_null(i) || step.is_none() {
                    offsets.push(len);
                    nulls.push(false);
                    continue;
                }
                let (a, b, s) = (starts.value(i), stops.value(i), step.unwrap_or(1));
                if s == 0 || (a < b && s < 0) || (a > b && s > 0) {
                    if a == b {
                        values.push(a);
                        len += 1;
                        offsets.push(len);
                        nulls.push(true);
                        continue;
                    }
                    return Err(bad_step());
                }
                let count = (b as i128 - a as i128) / s as i128 + 1;
                if count > MAX_LENGTH as i128 {
                    return Err(too_long(count as i64));
                }
                let mut v = a;
                for _ in 0..count {
                    values.push(v);
                    v = v.wrapping_add(s);
                }
                len += count as i32;
                offsets.push(len);
                nulls.push(true);
            }
            let values: ArrayRef = Arc::new(Int64Array::from(values));
            list_of(&DataType::List(field), offsets, values, Some(nulls.into()))
        }
        DataType::Date32 | DataType::Timestamp(..) => {
            // Dates and timestamps step by an interval (a day by default).
            let zone = c.time_zone();
            let starts = super::datetime::Moment::new(c.arg(0)?)?;
            let stops = super::datetime::Moment::new(c.arg(1)?)?;
            let steps = if c.args.len() == 3 {
                Some(c.array(2)?)
            } else {
                None
            };
            let is_date = start_type == DataType::Date32;
            let mut micros: Vec<i64> = Vec::new();
            for i in 0..n {
                let (Some(a), Some(b)) = (starts.get(i, &zone)?, stops.get(i, &zone)?) else {
                    offsets.push(len);
                    nulls.push(false);
                    continue;
                };
                let (months, days, nanos) = match &steps {
                    None => (0i64, if a.local() <= b.local() { 1i64 } else { -1 }, 0i64),
                    Some(s) => interval_at(s, i)?,
                };
                if months == 0 && days == 0 && nanos == 0 {
                    return Err(bad_step());
                }
                let (mut t, end) = (a.local(), b.local());
                let forward = months > 0 || days > 0 || nanos > 0;
                let mut count = 0i64;
                while (forward && t <= end) || (!forward && t >= end) {
                    micros.push(if is_date {
                        super::datetime::date_to_days(t.date()) as i64
                    } else {
                        super::datetime::instant_of(t, &zone).unwrap_or_default()
                    });
                    count += 1;
                    if count > MAX_LENGTH {
                        return Err(too_long(count));
                    }
                    let next = super::datetime::add_interval(t, months, days, nanos)
                        .ok_or_else(bad_step)?;
                    if next == t {
                        return Err(bad_step());
                    }
                    t = next;
                }
                len += count as i32;
                offsets.push(len);
                nulls.push(true);
            }
            let values: ArrayRef = if is_date {
                Arc::new(datafusion::arrow::array::Date32Array::from(
                    micros.into_iter().map(|d| d as i32).collect::<Vec<_>>(),
                ))
            } else {
                Arc::new(datafusion::arrow::array::TimestampMicrosecondArray::from(
                    micros,
                ))
            };
            list_of(&DataType::List(field), offsets, values, Some(nulls.into()))
        }
        other => Err(df(FunctionError::mismatch(
            "sequence",
            format!("unsupported type {other}"),
        ))),
    }
}

/// Row `i` of an interval column as (months, days, nanoseconds).
fn interval_at(a: &ArrayRef, i: usize) -> Result<(i64, i64, i64)> {
    let v = ScalarValue::try_from_array(a, i)?;
    Ok(match v {
        ScalarValue::IntervalYearMonth(Some(m)) => (m as i64, 0, 0),
        ScalarValue::IntervalDayTime(Some(d)) => {
            (0, d.days as i64, d.milliseconds as i64 * 1_000_000)
        }
        ScalarValue::IntervalMonthDayNano(Some(v)) => {
            (v.months as i64, v.days as i64, v.nanoseconds)
        }
        other => {
            return Err(df(FunctionError::mismatch(
                "sequence",
                format!("the step must be an INTERVAL, got {}", other.data_type()),
            )))
        }
    })
}

fn reverse(c: &Call) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    match a.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = super::udf::strs_of(&a)?;
            let out = super::udf::string_rows(a.len(), |i, out| match s.get(i) {
                Some(v) => {
                    out.extend(v.chars().rev());
                    Ok(true)
                }
                None => Ok(false),
            })?;
            match out {
                ColumnarValue::Array(r) => Ok(ColumnarValue::Array(cast(&r, a.data_type())?)),
                scalar => Ok(scalar),
            }
        }
        DataType::Null => Ok(ColumnarValue::Array(a)),
        _ => {
            let list = as_list(a)?;
            let values = list.values();
            let mut order: Vec<u64> = Vec::with_capacity(values.len());
            for i in 0..list.len() {
                let (start, end) = (
                    list.value_offsets()[i] as usize,
                    list.value_offsets()[i + 1] as usize,
                );
                order.extend((start..end).rev().map(|k| k as u64));
            }
            let reversed = take(values.as_ref(), &UInt64Array::from(order), None)?;
            let offsets: Vec<i32> = list
                .value_offsets()
                .iter()
                .map(|o| o - list.value_offsets()[0])
                .collect();
            let result = list.data_type().clone();
            list_of(&result, offsets, reversed, list.nulls().cloned())
        }
    }
}

/// `arrays_zip(a, b, …)`, planned as `lakegres_arrays_zip('a', 'b', …, a,
/// b, …)` (rewrite.rs): the field names first (a column's name, else the
/// argument's 0-based position), then the arrays.
fn zip_type(types: &[DataType], scalars: &[Option<&ScalarValue>]) -> Result<DataType> {
    let n = types.len() / 2;
    let fields: Vec<Field> = (0..n)
        .map(|k| {
            let name = match scalars.get(k) {
                Some(Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)))) => {
                    s.clone()
                }
                _ => k.to_string(),
            };
            let element = match &types[n + k] {
                DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
                    f.data_type().clone()
                }
                DataType::Null => DataType::Null,
                other => {
                    return Err(df(FunctionError::mismatch(
                        "arrays_zip",
                        format!("the arguments must be arrays, not {other}"),
                    )))
                }
            };
            Ok(Field::new(name, element, true))
        })
        .collect::<Result<_>>()?;
    Ok(DataType::List(Arc::new(Field::new_list_field(
        DataType::Struct(fields.into()),
        true,
    ))))
}

/// Row i: the i-th elements of every array (NULL past an array's end);
/// NULL if any array is NULL.
fn arrays_zip(c: &Call) -> Result<ColumnarValue> {
    let result = c.return_type.clone();
    let DataType::List(item) = &result else {
        return Err(DataFusionError::Internal(
            "arrays_zip returns a list".into(),
        ));
    };
    let DataType::Struct(fields) = item.data_type() else {
        return Err(DataFusionError::Internal(
            "arrays_zip returns structs".into(),
        ));
    };
    let n = c.args.len() / 2;
    let lists: Vec<ListArray> = (0..n)
        .map(|k| {
            let list_type = DataType::List(Arc::new(Field::new_list_field(
                fields[k].data_type().clone(),
                true,
            )));
            let a = c.array(n + k)?;
            if a.data_type() == &DataType::Null {
                as_list(new_null_array(&list_type, a.len()))
            } else {
                as_list(cast(&a, &list_type)?)
            }
        })
        .collect::<Result<_>>()?;
    let datas: Vec<_> = lists.iter().map(|l| l.values().to_data()).collect();
    let mut outs: Vec<MutableArrayData> = datas
        .iter()
        .map(|d| MutableArrayData::new(vec![d], true, d.len()))
        .collect();
    let (offsets, nulls) = each_row(&lists, c.len(), |spans| {
        let longest = spans.iter().map(|(s, e)| e - s).max().unwrap_or(0);
        for (out, (start, end)) in outs.iter_mut().zip(&spans) {
            out.try_extend(0, *start, *end)?;
            out.try_extend_nulls(longest - (end - start))?;
        }
        Ok(longest)
    })?;
    let columns: Vec<ArrayRef> = outs.into_iter().map(|o| make_array(o.freeze())).collect();
    let structs = datafusion::arrow::array::StructArray::try_new(fields.clone(), columns, None)?;
    list_of(&result, offsets, Arc::new(structs), Some(nulls.into()))
}

/// The offsets and validity of a list result built from `lists` row by
/// row: a row is NULL if any list's is; otherwise `row` gets where each
/// list's row lies in its values and says how many elements it added.
fn each_row(
    lists: &[ListArray],
    rows: usize,
    mut row: impl FnMut(Vec<(usize, usize)>) -> Result<usize>,
) -> Result<(Vec<i32>, Vec<bool>)> {
    let mut offsets = vec![0i32];
    let mut nulls = Vec::with_capacity(rows);
    let mut len = 0i32;
    for i in 0..rows {
        let spans: Option<Vec<(usize, usize)>> = lists
            .iter()
            .map(|l| {
                l.is_valid(i).then(|| {
                    (
                        l.value_offsets()[i] as usize,
                        l.value_offsets()[i + 1] as usize,
                    )
                })
            })
            .collect();
        nulls.push(spans.is_some());
        if let Some(spans) = spans {
            len += row(spans)? as i32;
        }
        offsets.push(len);
    }
    Ok((offsets, nulls))
}
