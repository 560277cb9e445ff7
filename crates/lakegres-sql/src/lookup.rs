//! Point queries without the SQL planner: `SELECT cols | * FROM t [alias]
//! WHERE c = v [AND d = w …]` on a Delta table, where each value is a
//! literal or a parameter. These run over the table version's cached
//! [`LookupTable`] (see lakegres-delta's `lookup`), which is what makes a
//! prepared key lookup cheap; every other statement, and every case this
//! module is unsure of, returns `None` and is planned the general way.

use datafusion::common::{ParamValues, ScalarValue};
use lakegres_delta::lookup::{key_value, LookupTable};
use lakegres_delta::TableName;
use sqlparser::ast;

use crate::error::Result;
use crate::output::{CommandTag, Output};
use crate::statement_context::StatementContext;

/// A column the query returns.
enum Item {
    All,
    Column {
        qualifier: Option<String>,
        name: String,
        alias: Option<String>,
    },
}

/// A key's value as written.
enum Value {
    Literal(ScalarValue),
    Param(usize),
}

/// The parts of a point query.
pub(crate) struct Shape {
    table: Vec<String>,
    alias: Option<String>,
    items: Vec<Item>,
    keys: Vec<(Option<String>, String, Value)>,
}

/// Runs a query of a lookup's shape ([`shape`]) as a lookup when its table
/// and values allow one; `None` otherwise.
pub(crate) async fn try_run(
    cx: &StatementContext<'_>,
    shape: Shape,
    params: Option<&ParamValues>,
) -> Result<Option<Output>> {
    // A temporary view of that name shadows the table; a transaction
    // reads its own snapshot.
    if cx.state().has_temp_view_parts(&shape.table) || cx.committed().in_transaction() {
        return Ok(None);
    }
    let Some(Ok(name)) = crate::names::resolve(cx, &shape.table) else {
        return Ok(None);
    };
    let Some(table) = cx.engine().lookup_table(&name).await else {
        return Ok(None);
    };
    crate::privileges::require_select(cx, &name)?;
    let Some((output, keys)) = bind(&table, &name, &shape, params) else {
        return Ok(None);
    };
    let stream = table
        .execute(&output, &keys, || cx.context().task_ctx())
        .await?;
    cx.engine().metrics().lookup();
    Ok(Some(Output::Rows {
        stream,
        tag: CommandTag::Counted("SELECT"),
    }))
}

/// Output columns (index, name) and key values (index, value).
type Bound = (Vec<(usize, String)>, Vec<(usize, ScalarValue)>);

/// The output columns and the key values, by column index; `None` when a
/// column or a value does not fit a lookup.
fn bind(
    table: &LookupTable,
    name: &TableName,
    shape: &Shape,
    params: Option<&ParamValues>,
) -> Option<Bound> {
    let schema = table.schema();
    let column = |qualifier: &Option<String>, column: &str| -> Option<usize> {
        let qualified_right = match qualifier {
            None => true,
            Some(q) => match &shape.alias {
                Some(alias) => q == alias,
                None => q == &name.table,
            },
        };
        if !qualified_right {
            return None;
        }
        schema.index_of(column).ok()
    };
    let mut output = Vec::new();
    for item in &shape.items {
        match item {
            Item::All => output.extend(
                schema
                    .fields()
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (i, f.name().clone())),
            ),
            Item::Column {
                qualifier,
                name,
                alias,
            } => {
                let i = column(qualifier, name)?;
                output.push((i, alias.clone().unwrap_or_else(|| name.clone())));
            }
        }
    }
    let mut keys = Vec::new();
    for (qualifier, name, value) in &shape.keys {
        let i = column(qualifier, name)?;
        let value = match value {
            Value::Literal(v) => v.clone(),
            Value::Param(n) => match params {
                Some(ParamValues::List(list)) => list.get(n.checked_sub(1)?)?.value.clone(),
                _ => return None,
            },
        };
        keys.push((i, key_value(&value, schema.field(i).data_type())?));
    }
    Some((output, keys))
}

/// An identifier as DataFusion resolves it: unquoted ones in lower case.
fn ident(i: &ast::Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    }
}

/// The parts of `statement` when it is a point query. The structs are
/// taken apart without `..` so that a clause this module does not know
/// (a new sqlparser field) is a compile error, not a wrong answer.
pub(crate) fn shape(statement: &ast::Statement) -> Option<Shape> {
    let ast::Statement::Query(query) = statement else {
        return None;
    };
    let ast::Query {
        with,
        body,
        order_by,
        limit_clause,
        fetch,
        locks,
        for_clause,
        settings,
        format_clause,
        pipe_operators,
    } = query.as_ref();
    if with.is_some()
        || order_by.is_some()
        || limit_clause.is_some()
        || fetch.is_some()
        || !locks.is_empty()
        || for_clause.is_some()
        || settings.is_some()
        || format_clause.is_some()
        || !pipe_operators.is_empty()
    {
        return None;
    }
    let ast::SetExpr::Select(select) = body.as_ref() else {
        return None;
    };
    let ast::Select {
        select_token: _,
        optimizer_hints: _,
        distinct,
        select_modifiers,
        top,
        top_before_distinct: _,
        projection,
        exclude,
        into,
        from,
        lateral_views,
        prewhere,
        selection,
        connect_by,
        group_by,
        cluster_by,
        distribute_by,
        sort_by,
        having,
        named_window,
        qualify,
        window_before_qualify: _,
        value_table_mode,
        flavor,
    } = select.as_ref();
    let grouped = match group_by {
        ast::GroupByExpr::Expressions(exprs, modifiers) => {
            !exprs.is_empty() || !modifiers.is_empty()
        }
        ast::GroupByExpr::All(_) => true,
    };
    if distinct.is_some()
        || select_modifiers.is_some()
        || top.is_some()
        || exclude.is_some()
        || into.is_some()
        || !lateral_views.is_empty()
        || prewhere.is_some()
        || !connect_by.is_empty()
        || grouped
        || !cluster_by.is_empty()
        || !distribute_by.is_empty()
        || !sort_by.is_empty()
        || having.is_some()
        || !named_window.is_empty()
        || qualify.is_some()
        || value_table_mode.is_some()
        || *flavor != ast::SelectFlavor::Standard
    {
        return None;
    }
    let [ast::TableWithJoins { relation, joins }] = from.as_slice() else {
        return None;
    };
    if !joins.is_empty() {
        return None;
    }
    let ast::TableFactor::Table {
        name,
        alias,
        args,
        with_hints,
        version,
        with_ordinality,
        partitions,
        json_path,
        sample,
        index_hints,
    } = relation
    else {
        return None;
    };
    if args.is_some()
        || !with_hints.is_empty()
        || version.is_some()
        || *with_ordinality
        || !partitions.is_empty()
        || json_path.is_some()
        || sample.is_some()
        || !index_hints.is_empty()
    {
        return None;
    }
    let alias = match alias {
        None => None,
        Some(a) if a.columns.is_empty() => Some(ident(&a.name)),
        Some(_) => return None,
    };
    let table = name
        .0
        .iter()
        .map(|part| part.as_ident().map(ident))
        .collect::<Option<Vec<_>>>()?;
    // `t@v` is time travel (see time_travel.rs).
    if table.iter().any(|part| part.contains('@')) {
        return None;
    }
    let items = projection
        .iter()
        .map(|item| match item {
            ast::SelectItem::Wildcard(options) if plain_wildcard(options) => Some(Item::All),
            ast::SelectItem::UnnamedExpr(expr) => {
                let (qualifier, name) = column(expr)?;
                Some(Item::Column {
                    qualifier,
                    name,
                    alias: None,
                })
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                let (qualifier, name) = column(expr)?;
                Some(Item::Column {
                    qualifier,
                    name,
                    alias: Some(ident(alias)),
                })
            }
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let mut keys = Vec::new();
    equalities(selection.as_ref()?, &mut keys)?;
    Some(Shape {
        table,
        alias,
        items,
        keys,
    })
}

fn plain_wildcard(options: &ast::WildcardAdditionalOptions) -> bool {
    let ast::WildcardAdditionalOptions {
        wildcard_token: _,
        opt_ilike,
        opt_exclude,
        opt_except,
        opt_replace,
        opt_rename,
        opt_alias,
    } = options;
    opt_ilike.is_none()
        && opt_exclude.is_none()
        && opt_except.is_none()
        && opt_replace.is_none()
        && opt_rename.is_none()
        && opt_alias.is_none()
}

/// `c` or `q.c`.
fn column(expr: &ast::Expr) -> Option<(Option<String>, String)> {
    match expr {
        ast::Expr::Identifier(c) => Some((None, ident(c))),
        ast::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [q, c] => Some((Some(ident(q)), ident(c))),
            _ => None,
        },
        ast::Expr::Nested(inner) => column(inner),
        _ => None,
    }
}

/// Collects `column = value` terms of an AND chain; `None` when any term is
/// something else.
fn equalities(expr: &ast::Expr, keys: &mut Vec<(Option<String>, String, Value)>) -> Option<()> {
    match expr {
        ast::Expr::Nested(inner) => equalities(inner, keys),
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            equalities(left, keys)?;
            equalities(right, keys)
        }
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::Eq,
            right,
        } => {
            let ((qualifier, name), value) = match (column(left), column(right)) {
                (Some(c), None) => (c, value(right)?),
                (None, Some(c)) => (c, value(left)?),
                _ => return None,
            };
            keys.push((qualifier, name, value));
            Some(())
        }
        _ => None,
    }
}

/// A literal integer or text, or a `$n` parameter.
fn value(expr: &ast::Expr) -> Option<Value> {
    let ast::Expr::Value(v) = expr else {
        return None;
    };
    match &v.value {
        ast::Value::Placeholder(p) => p.strip_prefix('$')?.parse().ok().map(Value::Param),
        ast::Value::Number(n, false) => n
            .parse::<i64>()
            .ok()
            .map(|n| Value::Literal(ScalarValue::Int64(Some(n)))),
        ast::Value::SingleQuotedString(s) => {
            Some(Value::Literal(ScalarValue::Utf8(Some(s.clone()))))
        }
        _ => None,
    }
}
