//! UPDATE and DELETE through delta-rs' `UpdateBuilder` / `DeleteBuilder`,
//! handed the statement's condition as written (see [`super::DmlRule`]). A
//! condition on partition columns only removes whole files without reading
//! them.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, DataFusionError, Result as DFResult};
use datafusion::datasource::{provider_as_source, TableProvider};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder};
use datafusion::prelude::SessionContext;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use deltalake::DeltaTable;
use futures::StreamExt;

use super::{DmlNode, DmlOp};
use crate::catalog::TableName;
use crate::error::{Error, Result};
use crate::read::provider::DeltaProvider;
use crate::table::checks::WriteChecks;
use crate::table::constraints::generation_expression;

/// Runs `node` with delta-rs' builder: the affected rows, and the table as
/// the builder left it.
pub(super) async fn run(
    node: &DmlNode,
    table: DeltaTable,
    state: Arc<SessionState>,
) -> Result<(u64, Option<DeltaTable>)> {
    let name = &node.name;
    let provider = node
        .provider()
        .map_err(df_error("planning a DML statement"))?;
    let predicate = node
        .predicate
        .as_ref()
        .map(|p| provider.storage_expr(p))
        .transpose()
        .map_err(df_error("planning a DML statement"))?;
    match &node.op {
        DmlOp::Delete => delete(name, table, predicate, state).await,
        DmlOp::Update { values } => {
            let assignments = assignments(provider, values)?;
            let assignments = with_generated(&table, name, assignments, &state)?;
            check_updated_rows(name, &table, &assignments, predicate.as_ref(), &state).await?;
            let mut builder = table
                .update()
                .with_commit_properties(crate::commit_properties())
                .with_session_state(state)
                .with_writer_properties(crate::write::files::writer_properties());
            for (column, value) in assignments {
                builder = builder.with_update(column, value);
            }
            if let Some(p) = predicate {
                builder = builder.with_predicate(p);
            }
            let (table, metrics) = builder
                .await
                .map_err(|e| Error::delta("updating", name.to_string(), e))?;
            Ok((metrics.num_updated_rows as u64, Some(table)))
        }
    }
}

/// DELETE (or TRUNCATE, without a predicate) through `DeleteBuilder`.
pub(super) async fn delete(
    name: &TableName,
    table: DeltaTable,
    predicate: Option<Expr>,
    state: Arc<SessionState>,
) -> Result<(u64, Option<DeltaTable>)> {
    let mut builder = table
        .delete()
        .with_commit_properties(crate::commit_properties())
        .with_session_state(state)
        .with_writer_properties(crate::write::files::writer_properties());
    if let Some(p) = predicate {
        builder = builder.with_predicate(p);
    }
    let (table, metrics) = builder
        .await
        .map_err(|e| Error::delta("deleting from", name.to_string(), e))?;
    Ok((metrics.num_deleted_rows.unwrap_or(0) as u64, Some(table)))
}

/// The columns an UPDATE sets (declared names) and their values over the
/// declared, unqualified column names delta-rs resolves.
fn assignments(provider: &DeltaProvider, values: &[Expr]) -> Result<Vec<(String, Expr)>> {
    let mut assigned = Vec::new();
    for value in values {
        let Expr::Alias(alias) = value else {
            return Err(Error::Internal(format!(
                "an UPDATE value without its column: {value}"
            )));
        };
        if matches!(alias.expr.as_ref(), Expr::Column(c) if c.name == alias.name) {
            continue;
        }
        let expr = provider
            .storage_expr(&alias.expr)
            .map_err(df_error("planning an UPDATE"))?;
        assigned.push((provider.declared_name(&alias.name), expr));
    }
    Ok(assigned)
}
/// A column reference over lower-case names (the provider's and the
/// checks'), as the declared ones are matched case-insensitively.
fn lower_columns(expr: &Expr) -> DFResult<Expr> {
    expr.clone()
        .transform(|e| match e {
            Expr::Column(c) => Ok(Transformed::yes(Expr::Column(Column::new_unqualified(
                c.name.to_lowercase(),
            )))),
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
}

fn df_error(what: &'static str) -> impl Fn(DataFusionError) -> Error {
    move |source| Error::DataFusion {
        what,
        source: Box::new(source),
    }
}

/// The assignments plus one for each generated column whose expression
/// reads an assigned column: Databricks recomputes it from the new values.
fn with_generated(
    table: &DeltaTable,
    name: &TableName,
    mut assignments: Vec<(String, Expr)>,
    state: &SessionState,
) -> Result<Vec<(String, Expr)>> {
    let state_of_table = table
        .snapshot()
        .map_err(|e| Error::delta("updating", name.to_string(), e))?;
    let schema = state_of_table.snapshot().schema();
    let generated: Vec<(String, String)> = schema
        .fields()
        .filter_map(|f| generation_expression(f).map(|g| (f.name.clone(), g)))
        .collect();
    if generated.is_empty() {
        return Ok(assignments);
    }
    let lower = Schema::new(
        schema
            .fields()
            .map(|f| {
                let arrow: DFResult<DataType> = (&f.data_type)
                    .try_into_arrow()
                    .map_err(|e: datafusion::arrow::error::ArrowError| e.into());
                arrow.map(|t| Field::new(f.name.to_lowercase(), t, true))
            })
            .collect::<DFResult<Vec<_>>>()
            .map_err(df_error("reading generated columns"))?,
    );
    let df_schema = DFSchema::try_from(lower).map_err(df_error("reading generated columns"))?;
    let assigned: Vec<(String, Expr)> = assignments
        .iter()
        .map(|(c, e)| Ok((c.to_lowercase(), lower_columns(e)?)))
        .collect::<DFResult<_>>()
        .map_err(df_error("reading generated columns"))?;
    for (column, text) in generated {
        if assigned.iter().any(|(c, _)| *c == column.to_lowercase()) {
            continue;
        }
        let expr = state
            .create_logical_expr(&text, &df_schema)
            .map_err(df_error("reading generated columns"))?;
        let mut reads_assigned = false;
        let value = expr
            .transform(|e| match e {
                Expr::Column(c) => match assigned.iter().find(|(a, _)| *a == c.name) {
                    Some((_, value)) => {
                        reads_assigned = true;
                        Ok(Transformed::yes(value.clone()))
                    }
                    None => Ok(Transformed::no(Expr::Column(c))),
                },
                other => Ok(Transformed::no(other)),
            })
            .map_err(df_error("reading generated columns"))?
            .data;
        if reads_assigned {
            assignments.push((column, value));
        }
    }
    Ok(assignments)
}

/// Computes the rows an UPDATE would write and runs the table's
/// [`WriteChecks`] over them, so a violation fails the statement with the
/// constraint's name (delta-rs' own check names none) before delta-rs
/// writes anything.
async fn check_updated_rows(
    name: &TableName,
    table: &DeltaTable,
    assignments: &[(String, Expr)],
    predicate: Option<&Expr>,
    state: &Arc<SessionState>,
) -> Result<()> {
    let provider = DeltaProvider::of_delta(name.clone(), table.clone())?;
    let schema = provider.schema();
    let snapshot = provider.snapshot()?.clone();
    let Some(checks) = WriteChecks::new(&snapshot, &schema, state)? else {
        return Ok(());
    };
    let df = df_error("checking updated rows");
    let mut values = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let value = match assignments
            .iter()
            .find(|(c, _)| c.eq_ignore_ascii_case(field.name()))
        {
            Some((_, e)) => lower_columns(e).map_err(&df)?,
            None => Expr::Column(Column::new_unqualified(field.name())),
        };
        values.push(value.alias(field.name()));
    }
    let mut plan = LogicalPlanBuilder::scan(
        "lakegres_update_target",
        provider_as_source(Arc::new(provider)),
        None,
    )
    .map_err(&df)?;
    if let Some(p) = predicate {
        plan = plan.filter(lower_columns(p).map_err(&df)?).map_err(&df)?;
    }
    let plan = plan.project(values).and_then(|p| p.build()).map_err(&df)?;
    let ctx = SessionContext::new_with_state(state.as_ref().clone());
    let mut stream = ctx
        .execute_logical_plan(plan)
        .await
        .map_err(&df)?
        .execute_stream()
        .await
        .map_err(&df)?;
    while let Some(batch) = stream.next().await {
        checks.apply(batch.map_err(&df)?)?;
    }
    Ok(())
}
