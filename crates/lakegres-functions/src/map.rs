//! Map functions: `map(k1, v1, …)` refusing NULL and duplicate keys as
//! Databricks does (`NULL_MAP_KEY`, `DUPLICATED_MAP_KEY`), `m[k]` and
//! `element_at(m, k)` (NULL for a missing key), `map_concat`,
//! `map_contains_key`
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#map-functions>).
//! DataFusion provides `map_keys`, `map_values`, `map_entries`;
//! datafusion-spark `map_from_arrays`, `map_from_entries`, `str_to_map`.

use std::sync::Arc;

use datafusion::arrow::array::{
    make_array, Array, ArrayRef, AsArray, LargeListArray, ListArray, MapArray, MutableArrayData,
    StructArray, UInt32Array, UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{cast, take, SortOptions};
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    Aggregate, ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarUDF,
};
use datafusion::optimizer::AnalyzerRule;

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
        map_sort_udf(),
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

/// `lakegres_map_sort(x)`: `x` with the entries of each of its maps (nested
/// in arrays and structs too) in key order, so that two maps holding the
/// same entries are one value. Spark sorts a grouping key's maps so
/// (`InsertMapSortInGroupingExpressions`): `GROUP BY m` puts
/// `map(1, 2, 2, 3)` and `map(2, 3, 1, 2)` in one group.
pub(crate) fn map_sort_udf() -> ScalarUDF {
    Udf::new("lakegres_map_sort", &[&[Any]], Returns::ArgType(0), |c| {
        Ok(ColumnarValue::Array(sorted_maps(&c.array(0)?)?))
    })
    .build()
}

/// A type holding a map somewhere.
pub(crate) fn has_map(t: &DataType) -> bool {
    match t {
        DataType::Map(..) => true,
        DataType::List(f) | DataType::LargeList(f) => has_map(f.data_type()),
        DataType::Struct(fields) => fields.iter().any(|f| has_map(f.data_type())),
        _ => false,
    }
}

fn sorted_maps(a: &ArrayRef) -> Result<ArrayRef> {
    if !has_map(a.data_type()) {
        return Ok(Arc::clone(a));
    }
    Ok(match a.data_type() {
        DataType::Map(field, ordered) => {
            let map = a.as_map();
            let keys = sorted_maps(map.keys())?;
            let values = sorted_maps(map.values())?;
            let converter = RowConverter::new(vec![SortField::new(keys.data_type().clone())])?;
            let rows = converter.convert_columns(std::slice::from_ref(&keys))?;
            let offsets = map.value_offsets();
            let first = offsets.first().copied().unwrap_or(0);
            let mut order: Vec<u32> = Vec::with_capacity(keys.len());
            for window in offsets.windows(2) {
                let mut entries: Vec<u32> = (window[0] as u32..window[1] as u32).collect();
                entries.sort_by(|x, y| rows.row(*x as usize).cmp(&rows.row(*y as usize)));
                order.extend(entries);
            }
            let order = UInt32Array::from(order);
            let DataType::Struct(entry_fields) = field.data_type() else {
                return Err(DataFusionError::Internal("map entries not a struct".into()));
            };
            let entries = StructArray::try_new(
                entry_fields.clone(),
                vec![take(&keys, &order, None)?, take(&values, &order, None)?],
                None,
            )?;
            let offsets = OffsetBuffer::new(offsets.iter().map(|o| o - first).collect());
            Arc::new(MapArray::try_new(
                Arc::clone(field),
                offsets,
                entries,
                map.nulls().cloned(),
                *ordered,
            )?)
        }
        DataType::List(field) => {
            let list = a.as_list::<i32>();
            Arc::new(ListArray::try_new(
                Arc::clone(field),
                list.offsets().clone(),
                sorted_maps(list.values())?,
                list.nulls().cloned(),
            )?)
        }
        DataType::LargeList(field) => {
            let list = a.as_list::<i64>();
            Arc::new(LargeListArray::try_new(
                Arc::clone(field),
                list.offsets().clone(),
                sorted_maps(list.values())?,
                list.nulls().cloned(),
            )?)
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let columns = s
                .columns()
                .iter()
                .map(sorted_maps)
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(
                fields.clone(),
                columns,
                s.nulls().cloned(),
            )?)
        }
        _ => Arc::clone(a),
    })
}

/// The analyzer rule giving each grouping key that holds a map its sorted
/// entries (named as before, so the plan above still finds it).
#[derive(Debug)]
pub(crate) struct MapGroupKeys;

impl AnalyzerRule for MapGroupKeys {
    fn name(&self) -> &str {
        "map_group_keys"
    }

    fn analyze(&self, plan: LogicalPlan, _: &ConfigOptions) -> Result<LogicalPlan> {
        let sort = Arc::new(map_sort_udf());
        plan.transform_up_with_subqueries(|plan| {
            let LogicalPlan::Aggregate(aggregate) = &plan else {
                return Ok(Transformed::no(plan));
            };
            if aggregate
                .group_expr
                .iter()
                .any(|e| matches!(e, Expr::GroupingSet(_)))
            {
                return Ok(Transformed::no(plan));
            }
            let input = aggregate.input.schema();
            let mut changed = false;
            let mut group = Vec::with_capacity(aggregate.group_expr.len());
            for (i, key) in aggregate.group_expr.iter().enumerate() {
                if !has_map(&key.get_type(input)?) {
                    group.push(key.clone());
                    continue;
                }
                let (qualifier, field) = aggregate.schema.qualified_field(i);
                let sorted = Expr::ScalarFunction(ScalarFunction::new_udf(
                    Arc::clone(&sort),
                    vec![key.clone()],
                ));
                group.push(sorted.alias_qualified(qualifier.cloned(), field.name()));
                changed = true;
            }
            if !changed {
                return Ok(Transformed::no(plan));
            }
            let rebuilt = Aggregate::try_new(
                Arc::clone(&aggregate.input),
                group,
                aggregate.aggr_expr.clone(),
            )?;
            Ok(Transformed::yes(LogicalPlan::Aggregate(rebuilt)))
        })
        .map(|t| t.data)
    }
}
