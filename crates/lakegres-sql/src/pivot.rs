//! `PIVOT` and `UNPIVOT` in FROM, which DataFusion's planner does not take,
//! rewritten to the queries they mean (Databricks' semantics):
//! <https://docs.databricks.com/sql/language-manual/sql-ref-syntax-qry-select-pivot.html>,
//! <https://docs.databricks.com/sql/language-manual/sql-ref-syntax-qry-select-unpivot.html>.
//!
//! - `src PIVOT (agg(e) [AS a], … FOR c IN (v [AS n], …))` groups by the
//!   columns of `src` that neither the aggregates nor `c` use, with one
//!   column per value (and aggregate): `agg(e) FILTER (WHERE c = v)`, named
//!   `n` (or the value), `n_a` when there are several aggregates.
//! - `src UNPIVOT [INCLUDE | EXCLUDE NULLS] (v FOR n IN (c [AS x], …))` is
//!   one `SELECT others, 'x' AS n, c AS v FROM src` per column, `UNION ALL`;
//!   rows whose value is NULL are left out unless `INCLUDE NULLS`.
//!   `(v1, v2) FOR n IN ((a, b) AS x, …)` unpivots several at once.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DFStatement;
use sqlparser::ast::{
    self, Expr, ExprWithAlias, Ident, NullInclusion, PivotValueSource, TableFactor, Visit, Visitor,
};

use crate::error::{Error, Result};
use crate::parser::each_table_factor;

/// Rewrites every PIVOT and UNPIVOT of `statement` (not one nested in the
/// source of another).
pub(crate) async fn rewrite(state: &SessionState, statement: &mut ast::Statement) -> Result<()> {
    let mut sources: Vec<TableFactor> = Vec::new();
    each_table_factor(statement, |factor| match factor {
        TableFactor::Pivot { table, .. } | TableFactor::Unpivot { table, .. } => {
            sources.push(table.as_ref().clone())
        }
        _ => {}
    });
    if sources.is_empty() {
        return Ok(());
    }
    let mut columns = Vec::with_capacity(sources.len());
    for source in sources {
        columns.push(source_columns(state, source).await?);
    }
    let mut columns = columns.into_iter();
    let mut failed = None;
    each_table_factor(statement, |factor| {
        let replaced = match factor {
            TableFactor::Pivot { .. } | TableFactor::Unpivot { .. } => {
                let Some(columns) = columns.next() else {
                    return;
                };
                match factor {
                    TableFactor::Pivot { .. } => pivot(factor, &columns),
                    _ => unpivot(factor, &columns),
                }
            }
            _ => return,
        };
        match replaced {
            Ok(new) => *factor = new,
            Err(e) => failed = failed.take().or(Some(e)),
        }
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The column names of `SELECT * FROM source`.
async fn source_columns(state: &SessionState, source: TableFactor) -> Result<Vec<String>> {
    let query = query_of(
        vec![ast::SelectItem::Wildcard(Default::default())],
        source,
        None,
        vec![],
    )?;
    let plan = state
        .statement_to_plan(DFStatement::Statement(Box::new(ast::Statement::Query(
            Box::new(query),
        ))))
        .await?;
    Ok(plan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect())
}

fn pivot(factor: &TableFactor, columns: &[String]) -> Result<TableFactor> {
    let TableFactor::Pivot {
        table,
        aggregate_functions,
        value_column,
        value_source,
        default_on_null,
        alias,
    } = factor
    else {
        return Err(refused("PIVOT"));
    };
    if default_on_null.is_some() {
        return Err(Error::not_supported("PIVOT … DEFAULT ON NULL"));
    }
    let PivotValueSource::List(values) = value_source else {
        return Err(Error::not_supported(
            "PIVOT over ANY or a subquery (name the values)",
        ));
    };
    let mut used: HashSet<String> = HashSet::new();
    for e in aggregate_functions
        .iter()
        .map(|a| &a.expr)
        .chain(value_column)
    {
        names_in(e, &mut used);
    }
    let group: Vec<Expr> = columns
        .iter()
        .filter(|c| !used.contains(&c.to_lowercase()))
        .map(|c| Expr::Identifier(Ident::with_quote('"', c)))
        .collect();
    let mut items: Vec<ast::SelectItem> = group
        .iter()
        .map(|g| ast::SelectItem::UnnamedExpr(g.clone()))
        .collect();
    for value in values {
        let condition = matches(value_column, &value.expr)?;
        let value_name = match &value.alias {
            Some(a) => a.value.clone(),
            None => value_text(&value.expr),
        };
        for aggregate in aggregate_functions {
            let Expr::Function(mut function) = aggregate.expr.clone() else {
                return Err(Error::not_supported(
                    "a PIVOT expression that is not an aggregate call",
                ));
            };
            function.filter = Some(Box::new(match function.filter.take() {
                Some(own) => and(*own, condition.clone()),
                None => condition.clone(),
            }));
            let name = if aggregate_functions.len() == 1 {
                value_name.clone()
            } else {
                let aggregate_name = match &aggregate.alias {
                    Some(a) => a.value.clone(),
                    None => aggregate.expr.to_string(),
                };
                format!("{value_name}_{aggregate_name}")
            };
            items.push(ast::SelectItem::ExprWithAlias {
                expr: Expr::Function(function),
                alias: Ident::with_quote('"', name),
            });
        }
    }
    let query = query_of(items, table.as_ref().clone(), None, group)?;
    Ok(derived(query, alias.clone()))
}

fn unpivot(factor: &TableFactor, columns: &[String]) -> Result<TableFactor> {
    let TableFactor::Unpivot {
        table,
        value,
        name,
        columns: unpivoted,
        null_inclusion,
        alias,
    } = factor
    else {
        return Err(refused("UNPIVOT"));
    };
    let values: Vec<Ident> = match value {
        Expr::Identifier(i) => vec![i.clone()],
        Expr::Tuple(items) => items
            .iter()
            .map(|e| match e {
                Expr::Identifier(i) => Ok(i.clone()),
                _ => Err(Error::not_supported("an UNPIVOT value that is not a name")),
            })
            .collect::<Result<_>>()?,
        _ => return Err(Error::not_supported("an UNPIVOT value that is not a name")),
    };
    let mut used: HashSet<String> = HashSet::new();
    for c in unpivoted {
        names_in(&c.expr, &mut used);
    }
    let others: Vec<Expr> = columns
        .iter()
        .filter(|c| !used.contains(&c.to_lowercase()))
        .map(|c| Expr::Identifier(Ident::with_quote('"', c)))
        .collect();
    let include_nulls = matches!(null_inclusion, Some(NullInclusion::IncludeNulls));
    let mut branches: Vec<ast::Query> = Vec::with_capacity(unpivoted.len());
    for ExprWithAlias { expr, alias: label } in unpivoted {
        let sources: Vec<Expr> = match expr {
            Expr::Tuple(items) => items.clone(),
            other => vec![other.clone()],
        };
        if sources.len() != values.len() {
            return Err(Error::analysis(
                crate::error::class::UNPIVOT_ARITY_MISMATCH,
                format!(
                    "UNPIVOT names {} value columns, {expr} has {}",
                    values.len(),
                    sources.len()
                ),
            ));
        }
        let label = match label {
            Some(a) => a.value.clone(),
            None => sources.iter().map(value_text).collect::<Vec<_>>().join("_"),
        };
        let mut items: Vec<ast::SelectItem> = others
            .iter()
            .map(|o| ast::SelectItem::UnnamedExpr(o.clone()))
            .collect();
        items.push(ast::SelectItem::ExprWithAlias {
            expr: Expr::value(ast::Value::SingleQuotedString(label)),
            alias: name.clone(),
        });
        for (source, value) in sources.iter().zip(&values) {
            items.push(ast::SelectItem::ExprWithAlias {
                expr: source.clone(),
                alias: value.clone(),
            });
        }
        // EXCLUDE NULLS leaves out a row whose values are all NULL.
        let filter = (!include_nulls).then(|| {
            sources
                .iter()
                .map(|s| Expr::IsNotNull(Box::new(s.clone())))
                .reduce(|a, b| Expr::BinaryOp {
                    left: Box::new(a),
                    op: ast::BinaryOperator::Or,
                    right: Box::new(b),
                })
        });
        branches.push(query_of(
            items,
            table.as_ref().clone(),
            filter.flatten(),
            vec![],
        )?);
    }
    let mut branches = branches.into_iter();
    let Some(first) = branches.next() else {
        return Err(Error::not_supported("UNPIVOT without columns"));
    };
    let body = branches.fold(*first.body, |left, right| ast::SetExpr::SetOperation {
        op: ast::SetOperator::Union,
        set_quantifier: ast::SetQuantifier::All,
        left: Box::new(left),
        right: right.body,
    });
    let query = ast::Query {
        body: Box::new(body),
        ..first
    };
    Ok(derived(query, alias.clone()))
}

/// `SELECT items FROM source [WHERE filter] [GROUP BY group]`.
fn query_of(
    items: Vec<ast::SelectItem>,
    source: TableFactor,
    filter: Option<Expr>,
    group: Vec<Expr>,
) -> Result<ast::Query> {
    let dialect = crate::parser::LakegresDialect::default();
    // A query to fill in: sqlparser's structs have many fields.
    let mut query = sqlparser::parser::Parser::new(&dialect)
        .try_with_sql("SELECT 1 FROM t")
        .and_then(|mut p| p.parse_query())
        .map(|q| *q)
        .map_err(|e| Error::Internal {
            message: format!("the query PIVOT is rewritten to: {e}"),
        })?;
    if let ast::SetExpr::Select(select) = query.body.as_mut() {
        select.projection = items;
        select.from = vec![ast::TableWithJoins {
            relation: source,
            joins: vec![],
        }];
        select.selection = filter;
        select.group_by = ast::GroupByExpr::Expressions(group, vec![]);
    }
    Ok(query)
}

fn derived(query: ast::Query, alias: Option<ast::TableAlias>) -> TableFactor {
    TableFactor::Derived {
        lateral: false,
        subquery: Box::new(query),
        alias,
        sample: None,
    }
}

/// `c = v`, or `c1 = v1 AND c2 = v2` for `(c1, c2) IN ((v1, v2), …)`.
fn matches(columns: &[Expr], value: &Expr) -> Result<Expr> {
    let values: Vec<Expr> = match (columns.len(), value) {
        (1, v) => vec![v.clone()],
        (_, Expr::Tuple(items)) if items.len() == columns.len() => items.clone(),
        _ => {
            return Err(Error::analysis(
                crate::error::class::PIVOT_VALUE_DATA_TYPE_MISMATCH,
                format!("the PIVOT value {value} does not match its columns"),
            ))
        }
    };
    columns
        .iter()
        .zip(values)
        .map(|(c, v)| Expr::BinaryOp {
            left: Box::new(c.clone()),
            op: ast::BinaryOperator::Eq,
            right: Box::new(v),
        })
        .reduce(and)
        .ok_or_else(|| Error::not_supported("PIVOT without a column"))
}

fn and(a: Expr, b: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(a),
        op: ast::BinaryOperator::And,
        right: Box::new(b),
    }
}

/// A value as a column name: a string without its quotes, else its SQL.
fn value_text(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        Expr::Identifier(i) => i.value.clone(),
        Expr::Tuple(items) => items.iter().map(value_text).collect::<Vec<_>>().join("_"),
        other => other.to_string(),
    }
}

/// The (lower-case) column names an expression reads.
fn names_in(e: &Expr, out: &mut HashSet<String>) {
    struct Names<'a>(&'a mut HashSet<String>);
    impl Visitor for Names<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Identifier(i) => {
                    self.0.insert(i.value.to_lowercase());
                }
                Expr::CompoundIdentifier(parts) => {
                    if let Some(last) = parts.last() {
                        self.0.insert(last.value.to_lowercase());
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = e.visit(&mut Names(out));
}

fn refused(what: &str) -> Error {
    Error::not_supported(format!("this form of {what}"))
}
