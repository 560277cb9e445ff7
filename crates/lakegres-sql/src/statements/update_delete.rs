//! UPDATE, DELETE and TRUNCATE: planned by DataFusion as `Dml` statements
//! (DELETE by [`plan`] here), run by lakegres-delta's DML node, which takes
//! the condition from that plan exactly as written; the Databricks result
//! row `num_affected_rows`.
//!
//! DataFusion's own DELETE planning drops the table's alias, so the
//! Databricks reference's own example `DELETE FROM orders AS t1 WHERE EXISTS
//! (SELECT oid FROM returned_orders WHERE t1.oid = oid)` could not resolve
//! `t1`. Planning the target as a query keeps the alias (as DataFusion's
//! UPDATE planning does); lakegres-delta's DML rule then takes the condition
//! from this plan exactly as written.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ParamValues;
use sqlparser::ast;

use crate::error::{Error, Result};
use crate::output::{affected_rows_output, Description, Output};
use crate::plan::{bind, parameter_types};
use crate::statement_context::StatementContext;

/// The parameters and the `num_affected_rows` column.
pub(crate) async fn describe(
    cx: &StatementContext<'_>,
    statement: &ast::Statement,
) -> Result<Description> {
    if let ast::Statement::Delete(delete) = statement {
        if delete.returning.is_some() {
            return Box::pin(super::returning::describe_delete(cx, delete)).await;
        }
    }
    let params = match statement {
        ast::Statement::Update(update) if update.from.is_some() => {
            let merge = merge_of_update_from(update)?;
            crate::statements::merge::describe(cx, &merge).await?.params
        }
        _ => parameter_types(&cx.plan(statement).await?)?,
    };
    Ok(Description {
        params,
        schema: Some(Arc::new(Schema::new(vec![Field::new(
            "num_affected_rows",
            DataType::Int64,
            false,
        )]))),
    })
}

/// Runs an UPDATE, DELETE or TRUNCATE as one commit.
pub(crate) async fn run(
    cx: &StatementContext<'_>,
    statement: &ast::Statement,
    params: Option<ParamValues>,
) -> Result<Output> {
    if let ast::Statement::Update(update) = statement {
        if update.from.is_some() {
            return update_from(cx, update, params).await;
        }
    }
    if let ast::Statement::Delete(delete) = statement {
        if delete.returning.is_some() {
            return Box::pin(super::returning::delete_returning(cx, delete, params)).await;
        }
    }
    let plan = bind(cx.plan(statement).await?, params)?;
    let rows = cx.run_count(plan).await?;
    let tag = match statement {
        ast::Statement::Update(_) => format!("UPDATE {rows}"),
        ast::Statement::Delete(_) => format!("DELETE {rows}"),
        _ => "TRUNCATE TABLE".to_string(),
    };
    affected_rows_output(rows, &tag)
}

/// Postgres' `UPDATE t SET c = s.x FROM src AS s WHERE cond` (dbt-postgres
/// closes snapshot rows with it) as the MERGE it means: `MERGE INTO t USING
/// src AS s ON cond WHEN MATCHED THEN UPDATE SET c = s.x`, one commit. The
/// target may be named in the condition by its name in any of its forms
/// (`t.c`, `s.t.c`, `db.s.t.c`). Where Postgres would pick one of several
/// source rows for a target row, the MERGE refuses the statement.
async fn update_from(
    cx: &StatementContext<'_>,
    update: &ast::Update,
    params: Option<ParamValues>,
) -> Result<Output> {
    let merge = merge_of_update_from(update)?;
    let (updated, _, _) =
        crate::statements::merge::merge_counts(cx, &merge, params.as_ref()).await?;
    affected_rows_output(updated, &format!("UPDATE {updated}"))
}

/// The MERGE an `UPDATE … FROM` means.
fn merge_of_update_from(update: &ast::Update) -> Result<crate::parser::Merge> {
    let unsupported = |what: &str| Err(Error::not_supported(format!("UPDATE … FROM with {what}")));
    let sources = match &update.from {
        Some(ast::UpdateTableFromKind::BeforeSet(f) | ast::UpdateTableFromKind::AfterSet(f)) => f,
        None => return unsupported("no source"),
    };
    let [source] = sources.as_slice() else {
        return unsupported("several tables (join them in one FROM item)");
    };
    if !source.joins.is_empty() {
        return unsupported("joins (use MERGE INTO … USING (query))");
    }
    if update.returning.is_some() || update.limit.is_some() || !update.table.joins.is_empty() {
        return unsupported("RETURNING, LIMIT or joins");
    }
    let ast::TableFactor::Table { name, alias, .. } = &update.table.relation else {
        return unsupported("a target that is not a table");
    };
    let target_parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(|i| i.value.to_lowercase()))
        .collect();
    let alias_name = match alias {
        Some(a) => a.name.clone(),
        None => match name.0.last().and_then(|p| p.as_ident()) {
            Some(last) => last.clone(),
            None => return unsupported("this target name"),
        },
    };
    let mut condition = match &update.selection {
        Some(condition) => condition.clone(),
        None => ast::Expr::Value(ast::Value::Boolean(true).into()),
    };
    // References to the target by a longer form of its name read its alias.
    let _ = ast::visit_expressions_mut(&mut condition, |e| {
        if let ast::Expr::CompoundIdentifier(parts) = e {
            if parts.len() > 2 && alias.is_none() {
                let prefix: Vec<String> = parts[..parts.len() - 1]
                    .iter()
                    .map(|p| p.value.to_lowercase())
                    .collect();
                if target_parts.ends_with(&prefix) {
                    let column = parts[parts.len() - 1].clone();
                    *parts = vec![alias_name.clone(), column];
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let mut set = Vec::with_capacity(update.assignments.len());
    for assignment in &update.assignments {
        match &assignment.target {
            ast::AssignmentTarget::ColumnName(column) => {
                set.push((column.clone(), assignment.value.clone()))
            }
            ast::AssignmentTarget::Tuple(_) => return unsupported("SET (a, b) = (…)"),
        }
    }
    Ok(crate::parser::Merge {
        with: None,
        schema_evolution: false,
        target: name.clone(),
        target_alias: Some(alias_name),
        source: source.relation.clone(),
        on: condition,
        clauses: vec![crate::parser::MergeClause {
            kind: crate::parser::MergeClauseKind::Matched,
            condition: None,
            action: crate::parser::MergeAction::Update(set),
        }],
    })
}
