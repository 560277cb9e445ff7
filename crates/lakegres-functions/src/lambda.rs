//! Higher-order functions with lambdas
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-lambda-functions.html>):
//! `transform`, `filter`, `exists`, `forall`, `aggregate`/`reduce`,
//! `zip_with`, `array_sort` (with a comparator), `map_filter`,
//! `transform_keys`, `transform_values`, on DataFusion's higher-order
//! function support (its lambdas are evaluated over a whole batch of array
//! elements at once).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, Int32Array, ListArray, MapArray,
    StructArray, UInt32Array, UInt64Array,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::Result;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    ColumnarValue, HigherOrderFunctionArgs, HigherOrderReturnFieldArgs, HigherOrderSignature,
    HigherOrderUDF, HigherOrderUDFImpl, LambdaArgument, LambdaParametersProgress, ValueOrLambda,
    Volatility,
};

use super::error::{df, FunctionError};

/// The kinds of higher-order function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Transform,
    Filter,
    Exists,
    Forall,
    Aggregate,
    ZipWith,
    ArraySort,
    MapFilter,
    TransformKeys,
    TransformValues,
}

const FUNCTIONS: &[(&str, Kind, &[&str], &str)] = &[
    ("transform", Kind::Transform, &[], "transform(expr, func) - Transforms elements in an array using the function (x [, i]) -> …."),
    ("filter", Kind::Filter, &[], "filter(expr, func) - Filters the input array using the given predicate (x [, i]) -> …."),
    ("exists", Kind::Exists, &[], "exists(expr, pred) - Tests whether a predicate holds for one or more elements in the array."),
    ("forall", Kind::Forall, &[], "forall(expr, pred) - Tests whether a predicate holds for all elements in the array."),
    ("aggregate", Kind::Aggregate, &["reduce"], "aggregate(expr, start, merge [, finish]) - Applies a binary operator to an initial state and all elements in the array, and reduces this to a single state."),
    ("zip_with", Kind::ZipWith, &[], "zip_with(left, right, func) - Merges the two given arrays, element-wise, into a single array using function."),
    ("array_sort", Kind::ArraySort, &[], "array_sort(expr [, func]) - Sorts the input array, ascending with NULLs last, or by the comparator (left, right) -> INT."),
    ("map_filter", Kind::MapFilter, &[], "map_filter(expr, func) - Filters entries in a map using the function (k, v) -> BOOLEAN."),
    ("transform_keys", Kind::TransformKeys, &[], "transform_keys(expr, func) - Transforms keys in a map using the function (k, v) -> …."),
    ("transform_values", Kind::TransformValues, &[], "transform_values(expr, func) - Transforms values in a map using the function (k, v) -> …."),
];

/// The functions.
pub(crate) fn functions() -> Vec<Arc<HigherOrderUDF>> {
    FUNCTIONS
        .iter()
        .map(|(name, kind, aliases, _)| {
            Arc::new(HigherOrderUDF::new_from_impl(Lambda {
                name,
                kind: *kind,
                aliases: aliases.iter().map(|a| a.to_string()).collect(),
                signature: HigherOrderSignature::user_defined(Volatility::Immutable),
            }))
        })
        .collect()
}

/// What `DESCRIBE FUNCTION` says of one of our higher-order functions.
pub(crate) fn description_of(name: &str) -> Option<&'static str> {
    FUNCTIONS
        .iter()
        .find(|(n, _, aliases, _)| *n == name || aliases.contains(&name))
        .map(|(_, _, _, d)| *d)
}

#[derive(Debug)]
struct Lambda {
    name: &'static str,
    kind: Kind,
    aliases: Vec<String>,
    signature: HigherOrderSignature,
}

impl PartialEq for Lambda {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}

impl Eq for Lambda {}

impl Hash for Lambda {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
    }
}

fn element_field(t: &DataType) -> Result<FieldRef> {
    match t {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Ok(Arc::clone(f))
        }
        DataType::Null => Ok(Arc::new(Field::new("element", DataType::Null, true))),
        other => Err(df(FunctionError::mismatch(
            "a higher-order function",
            format!("expected an ARRAY, got {other}"),
        ))),
    }
}

fn entry_fields(t: &DataType) -> Result<(FieldRef, FieldRef)> {
    match t {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(f) if f.len() == 2 => Ok((Arc::clone(&f[0]), Arc::clone(&f[1]))),
            _ => Err(DataFusionError::Internal("map entries".into())),
        },
        other => Err(df(FunctionError::mismatch(
            "a map function",
            format!("expected a MAP, got {other}"),
        ))),
    }
}

fn named(f: &FieldRef, name: &str) -> FieldRef {
    Arc::new(f.as_ref().clone().with_name(name).with_nullable(true))
}

fn index_field() -> FieldRef {
    Arc::new(Field::new("i", DataType::Int32, false))
}

fn values_of(fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>]) -> Vec<FieldRef> {
    fields
        .iter()
        .filter_map(|f| match f {
            ValueOrLambda::Value(v) => Some(Arc::clone(v)),
            _ => None,
        })
        .collect()
}

impl HigherOrderUDFImpl for Lambda {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &HigherOrderSignature {
        &self.signature
    }

    fn coerce_value_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        Ok(arg_types
            .iter()
            .map(|t| match t {
                DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
                    DataType::List(Arc::clone(f))
                }
                DataType::Null if self.kind != Kind::Aggregate => {
                    DataType::new_list(DataType::Null, true)
                }
                other => other.clone(),
            })
            .collect())
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        let values = values_of(fields);
        let first = values.first().ok_or_else(|| {
            df(FunctionError::InvalidLambda {
                message: format!("{} needs an array", self.name),
            })
        })?;
        Ok(match self.kind {
            Kind::Transform | Kind::Filter | Kind::Exists | Kind::Forall => {
                let e = element_field(first.data_type())?;
                LambdaParametersProgress::Complete(vec![vec![named(&e, "x"), index_field()]])
            }
            Kind::ArraySort => {
                let e = element_field(first.data_type())?;
                let lambdas = fields
                    .iter()
                    .filter(|f| matches!(f, ValueOrLambda::Lambda(_)))
                    .count();
                LambdaParametersProgress::Complete(if lambdas == 0 {
                    vec![]
                } else {
                    vec![vec![named(&e, "l"), named(&e, "r")]]
                })
            }
            Kind::ZipWith => {
                let a = element_field(first.data_type())?;
                let b = element_field(
                    values
                        .get(1)
                        .map(|f| f.data_type())
                        .unwrap_or(&DataType::Null),
                )?;
                LambdaParametersProgress::Complete(vec![vec![named(&a, "x"), named(&b, "y")]])
            }
            Kind::MapFilter | Kind::TransformKeys | Kind::TransformValues => {
                let (k, v) = entry_fields(first.data_type())?;
                LambdaParametersProgress::Complete(vec![vec![named(&k, "k"), named(&v, "v")]])
            }
            Kind::Aggregate => {
                let e = element_field(first.data_type())?;
                let start = values.get(1).cloned().ok_or_else(|| {
                    df(FunctionError::InvalidLambda {
                        message: "aggregate needs a start value".into(),
                    })
                })?;
                // The accumulator takes the merge's result type once known.
                let merged = fields.iter().find_map(|f| match f {
                    ValueOrLambda::Lambda(Some(out)) => Some(Arc::clone(out)),
                    _ => None,
                });
                let lambdas = fields
                    .iter()
                    .filter(|f| matches!(f, ValueOrLambda::Lambda(_)))
                    .count();
                let acc = match &merged {
                    Some(out) if out.data_type() != &DataType::Null => named(out, "acc"),
                    _ => named(&start, "acc"),
                };
                let mut params = vec![vec![Arc::clone(&acc), named(&e, "x")]];
                if lambdas == 2 {
                    params.push(vec![acc]);
                }
                if merged.is_none() {
                    LambdaParametersProgress::Partial(params.into_iter().map(Some).collect())
                } else {
                    LambdaParametersProgress::Complete(params)
                }
            }
        })
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs) -> Result<FieldRef> {
        let values: Vec<&FieldRef> = args
            .arg_fields
            .iter()
            .filter_map(|f| match f {
                ValueOrLambda::Value(v) => Some(v),
                _ => None,
            })
            .collect();
        let lambdas: Vec<&FieldRef> = args
            .arg_fields
            .iter()
            .filter_map(|f| match f {
                ValueOrLambda::Lambda(l) => Some(l),
                _ => None,
            })
            .collect();
        let first = values
            .first()
            .ok_or_else(|| DataFusionError::Internal("no array".into()))?;
        let body = |i: usize| -> Result<&FieldRef> {
            lambdas.get(i).copied().ok_or_else(|| {
                df(FunctionError::InvalidLambda {
                    message: format!("{} needs a lambda", self.name),
                })
            })
        };
        let list_of = |t: DataType| DataType::List(Arc::new(Field::new("element", t, true)));
        let data_type = match self.kind {
            Kind::Transform => list_of(body(0)?.data_type().clone()),
            Kind::Filter | Kind::ArraySort => first.data_type().clone(),
            Kind::Exists | Kind::Forall => DataType::Boolean,
            Kind::ZipWith => list_of(body(0)?.data_type().clone()),
            Kind::Aggregate => match lambdas.get(1) {
                Some(finish) => finish.data_type().clone(),
                None => body(0)?.data_type().clone(),
            },
            Kind::MapFilter => first.data_type().clone(),
            Kind::TransformKeys | Kind::TransformValues => {
                let (k, v) = entry_fields(first.data_type())?;
                let (k, v) = if self.kind == Kind::TransformKeys {
                    (body(0)?.data_type().clone(), v.data_type().clone())
                } else {
                    (k.data_type().clone(), body(0)?.data_type().clone())
                };
                DataType::Map(
                    Arc::new(Field::new(
                        "entries",
                        DataType::Struct(Fields::from(vec![
                            Field::new("key", k, false),
                            Field::new("value", v, true),
                        ])),
                        false,
                    )),
                    false,
                )
            }
        };
        Ok(Arc::new(Field::new(self.name, data_type, true)))
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let mut values = Vec::new();
        let mut lambdas = Vec::new();
        for a in &args.args {
            match a {
                ValueOrLambda::Value(v) => values.push(v.to_array(rows)?),
                ValueOrLambda::Lambda(l) => lambdas.push(l),
            }
        }
        let first = values
            .first()
            .cloned()
            .ok_or_else(|| DataFusionError::Internal("no array".into()))?;
        let result_type = args.return_field.data_type().clone();
        let lambda = |i: usize| -> Result<&LambdaArgument> {
            lambdas.get(i).copied().ok_or_else(|| {
                df(FunctionError::InvalidLambda {
                    message: format!("{} needs a lambda", self.name),
                })
            })
        };
        let array = match self.kind {
            Kind::Transform | Kind::Filter | Kind::Exists | Kind::Forall => {
                per_element(self.kind, &first, lambda(0)?, &result_type)?
            }
            Kind::Aggregate => {
                let start = values
                    .get(1)
                    .cloned()
                    .ok_or_else(|| DataFusionError::Internal("start".into()))?;
                aggregate(
                    &first,
                    &start,
                    lambda(0)?,
                    lambdas.get(1).copied(),
                    &result_type,
                )?
            }
            Kind::ZipWith => {
                let second = values
                    .get(1)
                    .cloned()
                    .ok_or_else(|| DataFusionError::Internal("right".into()))?;
                zip_with(&first, &second, lambda(0)?, &result_type)?
            }
            Kind::ArraySort => match lambdas.first() {
                Some(l) => sort_with(&first, l, &result_type)?,
                None => {
                    let list = super::array::as_list(first)?;
                    match super::array::sort_lists(&list, true, false, &result_type)? {
                        ColumnarValue::Array(a) => a,
                        ColumnarValue::Scalar(s) => s.to_array_of_size(rows)?,
                    }
                }
            },
            Kind::MapFilter | Kind::TransformKeys | Kind::TransformValues => {
                map_lambda(self.kind, &first, lambda(0)?, &result_type)?
            }
        };
        Ok(ColumnarValue::Array(array))
    }
}

/// For each element, the row of the array it belongs to.
fn element_rows(list: &ListArray) -> UInt32Array {
    let mut rows = Vec::with_capacity(list.values().len());
    let base = list.value_offsets()[0];
    for i in 0..list.len() {
        let n = (list.value_offsets()[i + 1] - list.value_offsets()[i]) as usize;
        rows.extend(std::iter::repeat_n(i as u32, n));
    }
    let _ = base;
    UInt32Array::from(rows)
}

/// The elements of a list (its slice of values) and their positions.
fn flat(list: &ListArray) -> (ArrayRef, Int32Array) {
    let start = list.value_offsets()[0] as usize;
    let end = list.value_offsets()[list.len()] as usize;
    let values = list.values().slice(start, end - start);
    let mut positions = Vec::with_capacity(end - start);
    for i in 0..list.len() {
        let n = list.value_offsets()[i + 1] - list.value_offsets()[i];
        positions.extend(0..n);
    }
    (values, Int32Array::from(positions))
}

fn evaluate(
    lambda: &LambdaArgument,
    params: &[ArrayRef],
    rows: &UInt32Array,
    len: usize,
) -> Result<ArrayRef> {
    let getters: Vec<Box<dyn Fn() -> Result<ArrayRef>>> = params
        .iter()
        .map(|p| {
            let p = Arc::clone(p);
            Box::new(move || Ok(Arc::clone(&p))) as Box<dyn Fn() -> Result<ArrayRef>>
        })
        .collect();
    let refs: Vec<&dyn Fn() -> Result<ArrayRef>> = getters.iter().map(|g| g.as_ref()).collect();
    lambda
        .evaluate(&refs, |captured| {
            captured
                .iter()
                .map(|c| Ok(take(c.as_ref(), rows, None)?))
                .collect()
        })?
        .into_array(len)
}

fn per_element(
    kind: Kind,
    array: &ArrayRef,
    lambda: &LambdaArgument,
    result: &DataType,
) -> Result<ArrayRef> {
    let list = super::array::as_list(Arc::clone(array))?;
    let (values, positions) = flat(&list);
    let rows = element_rows(&list);
    let out = evaluate(
        lambda,
        &[Arc::clone(&values), Arc::new(positions)],
        &rows,
        values.len(),
    )?;
    let offsets: Vec<i32> = list
        .value_offsets()
        .iter()
        .map(|o| o - list.value_offsets()[0])
        .collect();
    match kind {
        Kind::Transform => list_result("transform", result, offsets, out, list.nulls().cloned()),
        Kind::Filter => {
            let keep = cast(&out, &DataType::Boolean)?;
            let keep = keep.as_boolean();
            let mut take_at = Vec::new();
            let mut new_offsets = vec![0i32];
            for i in 0..list.len() {
                for k in offsets[i] as usize..offsets[i + 1] as usize {
                    if keep.is_valid(k) && keep.value(k) {
                        take_at.push(k as u64);
                    }
                }
                new_offsets.push(take_at.len() as i32);
            }
            let kept = take(values.as_ref(), &UInt64Array::from(take_at), None)?;
            list_result("filter", result, new_offsets, kept, list.nulls().cloned())
        }
        _ => {
            let flags = cast(&out, &DataType::Boolean)?;
            let flags = flags.as_boolean();
            let mut answers = Vec::with_capacity(list.len());
            for i in 0..list.len() {
                if list.is_null(i) {
                    answers.push(None);
                    continue;
                }
                let (mut any_true, mut any_false, mut any_null) = (false, false, false);
                for k in offsets[i] as usize..offsets[i + 1] as usize {
                    if flags.is_null(k) {
                        any_null = true;
                    } else if flags.value(k) {
                        any_true = true;
                    } else {
                        any_false = true;
                    }
                }
                answers.push(if kind == Kind::Exists {
                    if any_true {
                        Some(true)
                    } else if any_null {
                        None
                    } else {
                        Some(false)
                    }
                } else if any_false {
                    Some(false)
                } else if any_null {
                    None
                } else {
                    Some(true)
                });
            }
            Ok(Arc::new(BooleanArray::from(answers)))
        }
    }
}

fn aggregate(
    array: &ArrayRef,
    start: &ArrayRef,
    merge: &LambdaArgument,
    finish: Option<&LambdaArgument>,
    result: &DataType,
) -> Result<ArrayRef> {
    let list = super::array::as_list(Arc::clone(array))?;
    let n = list.len();
    let longest = (0..n).map(|i| list.value_length(i)).max().unwrap_or(0);
    // The accumulator's type is the merge's (or the finish's input).
    let mut acc: ArrayRef = Arc::clone(start);
    for k in 0..longest {
        let rows: Vec<u32> = (0..n)
            .filter(|i| list.is_valid(*i) && list.value_length(*i) > k)
            .map(|i| i as u32)
            .collect();
        if rows.is_empty() {
            break;
        }
        let rows = UInt32Array::from(rows);
        let elements: Vec<u64> = rows
            .values()
            .iter()
            .map(|i| (list.value_offsets()[*i as usize] + k) as u64)
            .collect();
        let x = take(list.values().as_ref(), &UInt64Array::from(elements), None)?;
        let current = take(acc.as_ref(), &rows, None)?;
        let merged = evaluate(merge, &[current, x], &rows, rows.len())?;
        let merged = if merged.data_type() != acc.data_type() {
            acc = cast(&acc, merged.data_type())?;
            merged
        } else {
            merged
        };
        // Scatter the merged values back.
        let mut from = Vec::with_capacity(n);
        let mut next = 0;
        for i in 0..n {
            if next < rows.len() && rows.value(next) as usize == i {
                from.push((1, next));
                next += 1;
            } else {
                from.push((0, i));
            }
        }
        acc = datafusion::arrow::compute::interleave(&[acc.as_ref(), merged.as_ref()], &from)?;
    }
    let all: UInt32Array = (0..n as u32).collect();
    let out = match finish {
        Some(f) => evaluate(f, &[acc], &all, n)?,
        None => acc,
    };
    let out = if out.data_type() != result {
        cast(&out, result)?
    } else {
        out
    };
    // A NULL array aggregates to NULL.
    let nulls = BooleanArray::from((0..n).map(|i| Some(list.is_null(i))).collect::<Vec<_>>());
    Ok(datafusion::arrow::compute::nullif(&out, &nulls)?)
}

fn zip_with(
    a: &ArrayRef,
    b: &ArrayRef,
    lambda: &LambdaArgument,
    result: &DataType,
) -> Result<ArrayRef> {
    let (left, right) = (
        super::array::as_list(Arc::clone(a))?,
        super::array::as_list(Arc::clone(b))?,
    );
    let n = left.len();
    let (mut li, mut ri, mut rows, mut offsets) = (Vec::new(), Vec::new(), Vec::new(), vec![0i32]);
    let mut nulls = Vec::with_capacity(n);
    for i in 0..n {
        if left.is_null(i) || right.is_null(i) {
            offsets.push(li.len() as i32);
            nulls.push(false);
            continue;
        }
        let (ln, rn) = (left.value_length(i), right.value_length(i));
        for k in 0..ln.max(rn) {
            li.push((k < ln).then(|| (left.value_offsets()[i] + k) as u64));
            ri.push((k < rn).then(|| (right.value_offsets()[i] + k) as u64));
            rows.push(i as u32);
        }
        offsets.push(li.len() as i32);
        nulls.push(true);
    }
    let x = take(left.values().as_ref(), &UInt64Array::from(li), None)?;
    let y = take(right.values().as_ref(), &UInt64Array::from(ri), None)?;
    let rows = UInt32Array::from(rows);
    let out = evaluate(lambda, &[x, y], &rows, rows.len())?;
    list_result("zip_with", result, offsets, out, Some(nulls.into()))
}

/// Sorts each array by a comparator lambda, evaluated once for every
/// pair of elements of the array (arrays in loading jobs are short).
fn sort_with(array: &ArrayRef, lambda: &LambdaArgument, result: &DataType) -> Result<ArrayRef> {
    let list = super::array::as_list(Arc::clone(array))?;
    let (mut l, mut r, mut rows) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..list.len() {
        let (start, end) = (
            list.value_offsets()[i] as u64,
            list.value_offsets()[i + 1] as u64,
        );
        for a in start..end {
            for b in start..end {
                l.push(a);
                r.push(b);
                rows.push(i as u32);
            }
        }
    }
    let x = take(list.values().as_ref(), &UInt64Array::from(l), None)?;
    let y = take(list.values().as_ref(), &UInt64Array::from(r), None)?;
    let rows = UInt32Array::from(rows);
    let order = evaluate(lambda, &[x, y], &rows, rows.len())?;
    let order = cast(&order, &DataType::Int64)?;
    let order = order.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
    let mut sorted: Vec<u64> = Vec::new();
    let mut base = 0usize;
    for i in 0..list.len() {
        let (start, end) = (
            list.value_offsets()[i] as usize,
            list.value_offsets()[i + 1] as usize,
        );
        let n = end - start;
        let mut idx: Vec<usize> = (0..n).collect();
        let mut failed = None;
        idx.sort_by(|a, b| {
            let k = base + a * n + b;
            if order.is_null(k) {
                failed = Some(());
                return std::cmp::Ordering::Equal;
            }
            order.value(k).cmp(&0)
        });
        if failed.is_some() {
            return Err(df(FunctionError::InvalidLambda {
                message: "the comparator of array_sort returned NULL".into(),
            }));
        }
        sorted.extend(idx.into_iter().map(|k| (start + k) as u64));
        base += n * n;
    }
    let values = take(list.values().as_ref(), &UInt64Array::from(sorted), None)?;
    let offsets: Vec<i32> = list
        .value_offsets()
        .iter()
        .map(|o| o - list.value_offsets()[0])
        .collect();
    list_result("array_sort", result, offsets, values, list.nulls().cloned())
}

/// The list a higher-order function returns (`result`, its planned type):
/// `values` cut by `offsets`, cast to the planned element type where the
/// lambda's own type differs.
fn list_result(
    name: &str,
    result: &DataType,
    offsets: Vec<i32>,
    values: ArrayRef,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let DataType::List(field) = result else {
        return Err(DataFusionError::Internal(format!("{name} returns a list")));
    };
    let values = if values.data_type() != field.data_type() {
        cast(&values, field.data_type())?
    } else {
        values
    };
    Ok(Arc::new(ListArray::try_new(
        Arc::clone(field),
        OffsetBuffer::new(offsets.into()),
        values,
        nulls,
    )?))
}

fn map_lambda(
    kind: Kind,
    array: &ArrayRef,
    lambda: &LambdaArgument,
    result: &DataType,
) -> Result<ArrayRef> {
    if array.data_type() == &DataType::Null {
        return Ok(new_null_array(result, array.len()));
    }
    let map = array.as_map();
    let start = map.value_offsets()[0] as usize;
    let end = map.value_offsets()[map.len()] as usize;
    let keys = map.keys().slice(start, end - start);
    let values = map.values().slice(start, end - start);
    let mut rows = Vec::with_capacity(end - start);
    for i in 0..map.len() {
        rows.extend(std::iter::repeat_n(i as u32, map.value_length(i) as usize));
    }
    let rows = UInt32Array::from(rows);
    let out = evaluate(
        lambda,
        &[Arc::clone(&keys), Arc::clone(&values)],
        &rows,
        keys.len(),
    )?;
    let offsets: Vec<i32> = map
        .value_offsets()
        .iter()
        .map(|o| o - map.value_offsets()[0])
        .collect();
    let DataType::Map(entry_field, sorted) = result else {
        return Err(DataFusionError::Internal(
            "map functions return maps".into(),
        ));
    };
    let DataType::Struct(fields) = entry_field.data_type() else {
        return Err(DataFusionError::Internal("map entries".into()));
    };
    let (keys, values, offsets) = match kind {
        Kind::MapFilter => {
            let keep = cast(&out, &DataType::Boolean)?;
            let keep = keep.as_boolean();
            let mut at = Vec::new();
            let mut new_offsets = vec![0i32];
            for i in 0..map.len() {
                for k in offsets[i] as usize..offsets[i + 1] as usize {
                    if keep.is_valid(k) && keep.value(k) {
                        at.push(k as u64);
                    }
                }
                new_offsets.push(at.len() as i32);
            }
            let at = UInt64Array::from(at);
            (
                take(keys.as_ref(), &at, None)?,
                take(values.as_ref(), &at, None)?,
                new_offsets,
            )
        }
        Kind::TransformKeys => {
            if out.null_count() > 0 {
                return Err(df(FunctionError::NullMapKey));
            }
            (cast(&out, fields[0].data_type())?, values, offsets)
        }
        _ => (keys, cast(&out, fields[1].data_type())?, offsets),
    };
    let entries = StructArray::try_new(fields.clone(), vec![keys, values], None)?;
    Ok(Arc::new(MapArray::try_new(
        Arc::clone(entry_field),
        OffsetBuffer::new(offsets.into()),
        entries,
        map.nulls().cloned(),
        *sorted,
    )?))
}
