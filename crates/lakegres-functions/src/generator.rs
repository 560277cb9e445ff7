//! Generator functions — `explode`, `explode_outer`, `posexplode`,
//! `posexplode_outer`, `inline`, `inline_outer`, `stack` — in the select
//! list and as `LATERAL VIEW [OUTER]`
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#generator-functions>,
//! <https://docs.databricks.com/sql/language-manual/sql-ref-syntax-qry-select-lateral-view.html>).
//!
//! DataFusion generates rows with `unnest` in a select list; a generator is
//! rewritten into it (before planning, [`rewrite_query`]), with helper
//! functions that give `unnest` what Databricks' generators produce: a
//! position column, a row of NULLs for an empty or NULL array (`_outer`),
//! the rows of `stack`. `LATERAL VIEW` becomes a derived table that adds
//! the generated columns to its FROM's.

use std::sync::Arc;

use datafusion::arrow::array::{
    make_array, Array, ArrayRef, AsArray, Int32Array, ListArray, MutableArrayData, StructArray,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::catalog::TableFunctionImpl;
use datafusion::common::{Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};
use sqlparser::ast::{
    Expr, Ident, ObjectName, Query, Select, SelectItem, SetExpr, TableAlias, TableFactor,
    TableWithJoins, VisitMut, VisitorMut,
};

use super::error::{df, FunctionError};
use super::rewrite::{function_name, parse_expr, plain_args};
use super::udf::{Arg, Call, Returns, Udf};

/// The generators, with what `DESCRIBE FUNCTION` says of them.
pub(crate) const GENERATORS: &[(&str, &str)] = &[
    ("explode", "explode(expr) - Returns rows by un-nesting expr (an ARRAY, or a MAP as key, value)."),
    ("explode_outer", "explode_outer(expr) - Returns rows by un-nesting expr; a NULL or empty expr gives one row of NULLs."),
    ("posexplode", "posexplode(expr) - Returns rows by un-nesting the array with numbering of positions (pos, col)."),
    ("posexplode_outer", "posexplode_outer(expr) - posexplode, with one row of NULLs for a NULL or empty array."),
    ("inline", "inline(expr) - Explodes an array of structs into a table."),
    ("inline_outer", "inline_outer(expr) - inline, with one row of NULLs for a NULL or empty array."),
    ("stack", "stack(numRows, expr1 [, ...]) - Separates expr1, ..., exprN into numRows rows."),
];

/// The helper functions the rewritten generators call.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        Udf::new("lakegres_outer", &[&[Arg::Any]], Returns::ArgType(0), outer).build(),
        Udf::new(
            "lakegres_posexplode",
            &[&[Arg::Any]],
            Returns::Computed(positions_type),
            |c| positions(c, false),
        )
        .build(),
        Udf::new(
            "lakegres_posexplode_outer",
            &[&[Arg::Any]],
            Returns::Computed(positions_type),
            |c| positions(c, true),
        )
        .build(),
        Udf::new(
            "lakegres_stack",
            &[&[Arg::Long, Arg::Any]],
            Returns::Computed(stack_type),
            stack,
        )
        .variadic(Arg::Any)
        .build(),
    ]
    .into_iter()
    .chain(FIELD_HELPERS.iter().enumerate().map(|(i, name)| {
        let (returns, kernel): FieldKernel = FIELD_KERNELS[i];
        Udf::new(name, &[&[Arg::Any]], Returns::Computed(returns), kernel).build()
    }))
    .collect()
}

/// `range(start, end, step)`: DataFusion's, with its column named `id` as
/// in Databricks (DataFusion's is `value`).
pub(crate) fn table_functions() -> Vec<(&'static str, Arc<dyn TableFunctionImpl>)> {
    datafusion::functions_table::all_default_table_functions()
        .into_iter()
        .filter(|f| f.name() == "range")
        .map(|f| {
            let range: Arc<dyn TableFunctionImpl> = Arc::new(Range(Arc::clone(f.function())));
            ("range", range)
        })
        .collect()
}

#[derive(Debug)]
struct Range(Arc<dyn TableFunctionImpl>);

impl TableFunctionImpl for Range {
    fn call_with_args(
        &self,
        args: datafusion::catalog::TableFunctionArgs,
    ) -> datafusion::common::Result<Arc<dyn datafusion::catalog::TableProvider>> {
        use datafusion::logical_expr::{col, LogicalPlanBuilder};
        // Databricks' fourth argument, the number of partitions, changes
        // no row.
        let exprs = args.exprs();
        let exprs = &exprs[..exprs.len().min(3)];
        let inner = self
            .0
            .call_with_args(datafusion::catalog::TableFunctionArgs::new(
                exprs,
                args.session(),
            ))?;
        let plan = LogicalPlanBuilder::scan(
            "range",
            datafusion::datasource::provider_as_source(inner),
            None,
        )?
        .project(vec![col("value").alias("id")])?
        .build()?;
        Ok(Arc::new(datafusion::catalog::view::ViewTable::new(
            plan, None,
        )))
    }
}

/// The fields `{prefix}0 … {prefix}{width - 1}` of the struct `call`
/// makes, and those names as the columns' default names.
fn numbered_fields(call: &str, prefix: &str, width: usize) -> (Vec<String>, Vec<String>) {
    (0..width)
        .map(|i| {
            let name = format!("{prefix}{i}");
            (format!("get_field({call}, '{name}')"), name)
        })
        .unzip()
}

/// Functions whose value is a MAP, so `explode` of them gives key, value.
const MAP_FUNCTIONS: &[&str] = &[
    "map",
    "map_from_arrays",
    "map_from_entries",
    "map_concat",
    "str_to_map",
    "map_filter",
    "transform_keys",
    "transform_values",
    "map_zip_with",
];

/// The columns a generator call makes, as select items: `unnest(…)`
/// expressions with their names (given or Databricks' defaults).
fn generated_items(call: &Expr, aliases: &[Ident], outer: bool) -> Option<Vec<SelectItem>> {
    let Expr::Function(f) = call else {
        return None;
    };
    let name = function_name(f);
    let outer = outer || name.ends_with("_outer");
    let base = name.trim_end_matches("_outer");
    if !GENERATORS.iter().any(|(g, _)| *g == name) && name != "json_tuple" {
        return None;
    }
    let args = plain_args(f)?;
    let named = |exprs: Vec<String>, defaults: &[&str]| -> Option<Vec<SelectItem>> {
        exprs
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                let alias = aliases
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| Ident::new(defaults.get(i).copied().unwrap_or("col")));
                Some(SelectItem::ExprWithAlias {
                    expr: parse_expr(&e)?,
                    alias,
                })
            })
            .collect()
    };
    match base {
        "explode" => {
            let [arg] = args.as_slice() else { return None };
            let is_map = aliases.len() == 2
                || matches!(arg, Expr::Function(g) if MAP_FUNCTIONS.contains(&function_name(g).as_str()));
            if is_map {
                let entries = format!("map_entries({arg})");
                let entries = if outer {
                    format!("lakegres_outer({entries})")
                } else {
                    entries
                };
                named(
                    vec![
                        format!("get_field(unnest({entries}), 'key')"),
                        format!("get_field(unnest({entries}), 'value')"),
                    ],
                    &["key", "value"],
                )
            } else if outer {
                named(vec![format!("unnest(lakegres_outer({arg}))")], &["col"])
            } else {
                named(vec![format!("unnest({arg})")], &["col"])
            }
        }
        "posexplode" => {
            let [arg] = args.as_slice() else { return None };
            let helper = if outer {
                "lakegres_posexplode_outer"
            } else {
                "lakegres_posexplode"
            };
            named(
                vec![
                    format!("get_field(unnest({helper}({arg})), 'pos')"),
                    format!("get_field(unnest({helper}({arg})), 'col')"),
                ],
                &["pos", "col"],
            )
        }
        "inline" => {
            let [arg] = args.as_slice() else { return None };
            let source = if outer {
                format!("lakegres_outer({arg})")
            } else {
                arg.to_string()
            };
            // The struct's fields are known only when planned: each alias
            // names the field at its position; without aliases the whole
            // struct is one column.
            if aliases.is_empty() {
                return named(vec![format!("unnest({source})")], &["col"]);
            }
            if aliases.len() > FIELD_HELPERS.len() {
                return None;
            }
            named(
                (0..aliases.len())
                    .map(|i| format!("{}(unnest({source}))", FIELD_HELPERS[i]))
                    .collect(),
                &[],
            )
        }
        "stack" => {
            let (count, values) = args.split_first()?;
            let Expr::Value(v) = count else { return None };
            let n: usize = v.value.to_string().parse().ok()?;
            if n == 0 {
                return None;
            }
            let width = values.len().div_ceil(n).max(1);
            let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            let call = format!("unnest(lakegres_stack({n}, {}))", values.join(", "));
            let (fields, defaults) = numbered_fields(&call, "col", width);
            named(
                fields,
                &defaults.iter().map(String::as_str).collect::<Vec<_>>(),
            )
        }
        // `json_tuple(json, k1, k2 …)`: one column per key (c0, c1 …),
        // the fields of datafusion-spark's struct.
        "json_tuple" => {
            let width = args.len().checked_sub(1).filter(|w| *w > 0)?;
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let call = format!("json_tuple({})", args.join(", "));
            let (fields, defaults) = numbered_fields(&call, "c", width);
            named(
                fields,
                &defaults.iter().map(String::as_str).collect::<Vec<_>>(),
            )
        }
        _ => None,
    }
}

/// Rewrites the generators of a query's SELECTs (its body and nested set
/// operations; subqueries are visited on their own).
pub(crate) fn rewrite_query(query: &mut Query) {
    rewrite_set_expr(query.body.as_mut());
}

fn rewrite_set_expr(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => rewrite_select(select),
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_set_expr(left);
            rewrite_set_expr(right);
        }
        _ => {}
    }
}

fn rewrite_select(select: &mut Select) {
    // Generators in the select list.
    let mut projection = Vec::with_capacity(select.projection.len());
    for item in std::mem::take(&mut select.projection) {
        let generated = match &item {
            SelectItem::UnnamedExpr(e) => generated_items(e, &[], false),
            SelectItem::ExprWithAlias { expr, alias } => {
                generated_items(expr, std::slice::from_ref(alias), false)
            }
            SelectItem::ExprWithAliases { expr, aliases } => generated_items(expr, aliases, false),
            _ => None,
        };
        match generated {
            Some(items) => projection.extend(items),
            None => projection.push(item),
        }
    }
    select.projection = projection;

    // LATERAL VIEW, one derived table per view, innermost first.
    if select.lateral_views.is_empty() {
        return;
    }
    let views = std::mem::take(&mut select.lateral_views);
    let (alias, single) = match select.from.as_slice() {
        [TableWithJoins { relation, joins }] if joins.is_empty() => match relation {
            TableFactor::Table { alias: Some(a), .. }
            | TableFactor::Derived { alias: Some(a), .. } => (a.name.clone(), true),
            TableFactor::Table { name, .. } => (
                name.0
                    .last()
                    .and_then(|p| p.as_ident())
                    .cloned()
                    .unwrap_or_else(|| Ident::new("lateral")),
                true,
            ),
            _ => (Ident::new("lateral"), false),
        },
        _ => (Ident::new("lateral"), false),
    };
    let mut from = std::mem::take(&mut select.from);
    let mut view_names: Vec<String> = Vec::new();
    for view in views {
        let mut call = view.lateral_view.clone();
        // Earlier views' columns are plain columns of the derived table now.
        unqualify(&mut call, &view_names, !single);
        let Some(items) = generated_items(&call, &view.lateral_col_alias, view.outer) else {
            // Not a generator: leave the statement for DataFusion to refuse.
            select.from = from;
            return;
        };
        let items: Vec<String> = items.iter().map(ToString::to_string).collect();
        let from_text: Vec<String> = from.iter().map(ToString::to_string).collect();
        let inner = format!(
            "SELECT *, {} FROM {}",
            items.join(", "),
            from_text.join(", ")
        );
        let dialect = crate::LakegresDialect::default();
        let Ok(query) = sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(&inner)
            .and_then(|mut p| p.parse_query())
        else {
            select.from = from;
            return;
        };
        let mut query = query;
        rewrite_query(&mut query);
        from = vec![TableWithJoins {
            relation: TableFactor::Derived {
                lateral: false,
                subquery: query,
                alias: Some(TableAlias {
                    at: None,
                    explicit: true,
                    name: alias.clone(),
                    columns: vec![],
                }),
                sample: None,
            },
            joins: vec![],
        }];
        if let Some(name) = view.lateral_view_name.0.last().and_then(|p| p.as_ident()) {
            view_names.push(name.value.to_lowercase());
        }
    }
    select.from = from;
    // `v.col` names the derived table's column now.
    let _ = select.visit(&mut Unqualify {
        views: &view_names,
        all: !single,
    });
}

fn unqualify(expr: &mut Expr, views: &[String], all: bool) {
    let _ = expr.visit(&mut Unqualify { views, all });
}

struct Unqualify<'a> {
    views: &'a [String],
    all: bool,
}

impl VisitorMut for Unqualify<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> std::ops::ControlFlow<()> {
        if let Expr::CompoundIdentifier(parts) = expr {
            if parts.len() == 2 && (self.all || self.views.contains(&parts[0].value.to_lowercase()))
            {
                *expr = Expr::Identifier(parts[1].clone());
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}

#[allow(dead_code)]
fn object_name(name: &str) -> ObjectName {
    ObjectName::from(vec![Ident::new(name)])
}

fn list_parts(a: &ArrayRef) -> Result<(&ListArray, &ArrayRef)> {
    let list = a.as_list_opt::<i32>().ok_or_else(|| {
        df(FunctionError::mismatch(
            "explode",
            format!(
                "the argument must be an ARRAY or MAP, got {}",
                a.data_type()
            ),
        ))
    })?;
    Ok((list, list.values()))
}

/// The array with NULL or empty rows made one NULL element.
fn outer_list(a: &ArrayRef) -> Result<ArrayRef> {
    if a.data_type() == &DataType::Null {
        return Ok(Arc::clone(a));
    }
    let (list, values) = list_parts(a)?;
    let data = values.to_data();
    let mut out = MutableArrayData::new(vec![&data], true, values.len() + list.len());
    let mut offsets = vec![0i32];
    let mut len = 0i32;
    for i in 0..list.len() {
        let (start, end) = (
            list.value_offsets()[i] as usize,
            list.value_offsets()[i + 1] as usize,
        );
        if list.is_null(i) || start == end {
            out.try_extend_nulls(1)?;
            len += 1;
        } else {
            out.try_extend(0, start, end)?;
            len += (end - start) as i32;
        }
        offsets.push(len);
    }
    let field = match a.data_type() {
        DataType::List(f) => Arc::clone(f),
        other => return Err(DataFusionError::Internal(format!("not a list: {other}"))),
    };
    Ok(Arc::new(ListArray::try_new(
        field.with_nullable_pub(),
        OffsetBuffer::new(offsets.into()),
        make_array(out.freeze()),
        None,
    )?))
}

trait Nullable {
    fn with_nullable_pub(self) -> Arc<Field>;
}

impl Nullable for Arc<Field> {
    fn with_nullable_pub(self) -> Arc<Field> {
        Arc::new(self.as_ref().clone().with_nullable(true))
    }
}

fn outer(c: &Call) -> Result<ColumnarValue> {
    Ok(ColumnarValue::Array(outer_list(&c.array(0)?)?))
}

fn positions_type(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    let element = match types.first() {
        Some(DataType::List(f)) => f.data_type().clone(),
        Some(DataType::Null) => DataType::Null,
        other => {
            return Err(df(FunctionError::mismatch(
                "posexplode",
                format!("the argument must be an ARRAY, got {other:?}"),
            )))
        }
    };
    Ok(DataType::List(Arc::new(Field::new(
        "element",
        DataType::Struct(Fields::from(vec![
            Field::new("pos", DataType::Int32, true),
            Field::new("col", element, true),
        ])),
        true,
    ))))
}

fn positions(c: &Call, outer_rows: bool) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    let DataType::List(result_field) = c.return_type.clone() else {
        return Err(DataFusionError::Internal(
            "posexplode returns a list".into(),
        ));
    };
    let DataType::Struct(fields) = result_field.data_type().clone() else {
        return Err(DataFusionError::Internal(
            "posexplode returns structs".into(),
        ));
    };
    let original = if a.data_type() == &DataType::Null {
        return Ok(ColumnarValue::Array(
            datafusion::arrow::array::new_null_array(c.return_type, a.len()),
        ));
    } else {
        a
    };
    let source = if outer_rows {
        outer_list(&original)?
    } else {
        Arc::clone(&original)
    };
    let (list, values) = list_parts(&source)?;
    let (orig_list, _) = list_parts(&original)?;
    let mut pos = Vec::with_capacity(values.len());
    for i in 0..list.len() {
        let n = list.value_length(i);
        let empty = orig_list.is_null(i) || orig_list.value_length(i) == 0;
        for p in 0..n {
            pos.push(if empty { None } else { Some(p) });
        }
    }
    let structs = StructArray::try_new(
        fields,
        vec![
            Arc::new(Int32Array::from(pos)) as ArrayRef,
            Arc::clone(values),
        ],
        None,
    )?;
    Ok(ColumnarValue::Array(Arc::new(ListArray::try_new(
        result_field,
        list.offsets().clone(),
        Arc::new(structs),
        list.nulls().cloned(),
    )?)))
}

fn stack_type(types: &[DataType], scalars: &[Option<&ScalarValue>]) -> Result<DataType> {
    let n = match scalars.first() {
        Some(Some(s)) => match s {
            ScalarValue::Int64(Some(n)) if *n > 0 => *n as usize,
            ScalarValue::Int32(Some(n)) if *n > 0 => *n as usize,
            _ => {
                return Err(df(FunctionError::mismatch(
                    "stack",
                    "the number of rows must be a positive constant",
                )))
            }
        },
        _ => 1,
    };
    let values = &types[1.min(types.len())..];
    let width = values.len().div_ceil(n).max(1);
    let fields: Vec<Field> = (0..width)
        .map(|j| {
            let t = values
                .iter()
                .skip(j)
                .step_by(width)
                .find(|t| **t != DataType::Null)
                .cloned()
                .unwrap_or(DataType::Null);
            Field::new(format!("col{j}"), t, true)
        })
        .collect();
    Ok(DataType::List(Arc::new(Field::new(
        "element",
        DataType::Struct(Fields::from(fields)),
        true,
    ))))
}

fn stack(c: &Call) -> Result<ColumnarValue> {
    let DataType::List(result_field) = c.return_type.clone() else {
        return Err(DataFusionError::Internal("stack returns a list".into()));
    };
    let DataType::Struct(fields) = result_field.data_type().clone() else {
        return Err(DataFusionError::Internal("stack returns structs".into()));
    };
    let width = fields.len();
    let rows = c.len();
    let values: Vec<ArrayRef> = (1..c.args.len())
        .map(|i| c.array(i))
        .collect::<Result<_>>()?;
    let n = values.len().div_ceil(width).max(1);
    let mut columns = Vec::with_capacity(width);
    for (j, field) in fields.iter().enumerate() {
        let mut sources: Vec<ArrayRef> = Vec::new();
        for r in 0..n {
            match values.get(r * width + j) {
                Some(v) => sources.push(datafusion::arrow::compute::cast(v, field.data_type())?),
                None => sources.push(datafusion::arrow::array::new_null_array(
                    field.data_type(),
                    rows,
                )),
            }
        }
        let refs: Vec<&dyn Array> = sources.iter().map(|a| a.as_ref()).collect();
        let indices: Vec<(usize, usize)> = (0..rows)
            .flat_map(|i| (0..n).map(move |r| (r, i)))
            .collect();
        columns.push(datafusion::arrow::compute::interleave(&refs, &indices)?);
    }
    let structs = StructArray::try_new(fields, columns, None)?;
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(n, rows));
    Ok(ColumnarValue::Array(Arc::new(ListArray::try_new(
        result_field,
        offsets,
        Arc::new(structs),
        None,
    )?)))
}

/// `inline(…) AS (a, b, …)` reads the struct's fields by position, one
/// helper per position (the position is in the name, so the return type
/// never depends on a literal argument).
const FIELD_HELPERS: [&str; 8] = [
    "lakegres_field0",
    "lakegres_field1",
    "lakegres_field2",
    "lakegres_field3",
    "lakegres_field4",
    "lakegres_field5",
    "lakegres_field6",
    "lakegres_field7",
];

type FieldKernel = (
    fn(&[DataType], &[Option<&ScalarValue>]) -> Result<DataType>,
    super::udf::Kernel,
);

macro_rules! field_kernel {
    ($i:expr) => {
        (
            |t: &[DataType], _: &[Option<&ScalarValue>]| field_type(t, $i),
            |c: &Call| field_at(c, $i),
        )
    };
}

const FIELD_KERNELS: [FieldKernel; 8] = [
    field_kernel!(0),
    field_kernel!(1),
    field_kernel!(2),
    field_kernel!(3),
    field_kernel!(4),
    field_kernel!(5),
    field_kernel!(6),
    field_kernel!(7),
];

fn field_type(types: &[DataType], index: usize) -> Result<DataType> {
    match types.first() {
        Some(DataType::Struct(fields)) => fields
            .get(index)
            .map(|f| f.data_type().clone())
            .ok_or_else(|| {
                df(FunctionError::UnsupportedGenerator {
                    message: format!("the struct has {} fields, not {}", fields.len(), index + 1),
                })
            }),
        Some(DataType::Null) => Ok(DataType::Null),
        other => Err(df(FunctionError::mismatch(
            "inline",
            format!("expected an ARRAY of STRUCTs, got {other:?}"),
        ))),
    }
}

fn field_at(c: &Call, index: usize) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    if a.data_type() == &DataType::Null {
        return Ok(ColumnarValue::Array(a));
    }
    let s = a.as_struct_opt().ok_or_else(|| {
        DataFusionError::Internal(format!("expected a struct, got {}", a.data_type()))
    })?;
    let column = s.column(index);
    // A NULL struct has NULL fields.
    let column = match s.nulls() {
        Some(nulls) => {
            let mask = datafusion::arrow::array::BooleanArray::new(nulls.inner().clone(), None);
            let not_null = datafusion::arrow::compute::not(&mask)?;
            datafusion::arrow::compute::nullif(column, &not_null)?
        }
        None => Arc::clone(column),
    };
    Ok(ColumnarValue::Array(column))
}
