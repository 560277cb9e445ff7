//! `INSERT … RETURNING items`, as ORMs send it to learn the keys the table
//! made (a SERIAL or identity column) and the defaults it filled, and
//! `DELETE … RETURNING items`.
//!
//! The INSERT runs in a transaction block of its own (inside an open block,
//! as one of its statements), so that its commit is a version no other
//! statement shares: outside a block, appends may share a group commit
//! with other sessions' rows. The RETURNING items are then read from the
//! rows that version added, as they were written — identity values,
//! defaults and store-assignment casts included. A failure after the rows
//! were staged (the RETURNING items, a user without SELECT) rolls the block
//! of its own back, so nothing lands.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::common::ParamValues;
use datafusion::logical_expr::{Expr as DfExpr, LogicalPlan, LogicalPlanBuilder};
use futures::TryStreamExt;
use sqlparser::ast::{self, Ident, SelectItem};

use crate::error::{Error, Result};
use crate::output::{batches_output, fixed, Description, Output};
use crate::parser::Statement;
use crate::session_state::Transaction;
use crate::statement_context::StatementContext;
use crate::statements::transaction;

/// The INSERT's table and the name its other clauses (RETURNING, ON
/// CONFLICT) qualify the table's columns by: its alias, or its name.
pub(crate) fn target(insert: &ast::Insert) -> Result<(ast::ObjectName, Ident)> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(Error::not_supported("RETURNING from a table function"));
    };
    let alias = match &insert.table_alias {
        Some(alias) => alias.alias.clone(),
        None => name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .cloned()
            .ok_or_else(|| Error::internal("an INSERT's table has no name"))?,
    };
    Ok((name.clone(), alias))
}

/// The INSERT's parameters, and the RETURNING items' columns.
pub(crate) async fn describe(
    cx: &StatementContext<'_>,
    insert: &ast::Insert,
) -> Result<Description> {
    let items = insert.returning.clone().unwrap_or_default();
    let mut plain = insert.clone();
    plain.returning = None;
    let inserted = super::insert::describe_sql(cx, &ast::Statement::Insert(plain)).await?;
    let (object, alias) = target(insert)?;
    let name = crate::names::table_name(cx, &object)?;
    let provider =
        lakegres_delta::DeltaProvider::try_new(name.clone(), cx.load_table(&name).await?)?;
    let rows = returning_plan(cx, &items, Arc::new(provider), &alias)?;
    Ok(Description {
        params: inserted.params,
        schema: Some(Arc::new(rows.schema().as_arrow().clone())),
    })
}

/// Runs the INSERT and returns its RETURNING items.
pub(crate) async fn insert_returning(
    cx: &StatementContext<'_>,
    insert: &ast::Insert,
    params: Option<ParamValues>,
) -> Result<Output> {
    in_own_block(
        cx,
        |rows| format!("INSERT 0 {rows}"),
        insert_in_block(cx, insert, params),
    )
    .await
}

/// Runs `write` (a write that reads back the rows it returns) in a
/// transaction block of its own, or as part of the open one; a failure
/// rolls the block of its own back, so nothing lands. Answers with its
/// rows and the tag `tag` makes of their count.
async fn in_own_block(
    cx: &StatementContext<'_>,
    tag: impl Fn(usize) -> String,
    write: impl std::future::Future<Output = Result<Vec<RecordBatch>>>,
) -> Result<Output> {
    let opened = cx.transaction() == Transaction::Idle;
    if opened {
        transaction::begin(cx);
    }
    let returned = write.await;
    if opened {
        match &returned {
            Ok(_) => transaction::end(cx, true).await.map(|_| ())?,
            Err(_) => {
                transaction::end(cx, false).await?;
                cx.state().notices.clear();
            }
        }
    }
    let batches = returned?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => return Err(Error::internal("RETURNING produced no schema")),
    };
    Ok(batches_output(schema, batches, fixed(&tag(rows))))
}

async fn insert_in_block(
    cx: &StatementContext<'_>,
    insert: &ast::Insert,
    params: Option<ParamValues>,
) -> Result<Vec<RecordBatch>> {
    let items = insert.returning.clone().unwrap_or_default();
    let (object, alias) = target(insert)?;
    let name = crate::names::table_name(cx, &object)?;
    let before = cx.load_table(&name).await?.version();
    let mut plain = insert.clone();
    plain.returning = None;
    let statement = Statement::Sql(Box::new(ast::Statement::Insert(plain)));
    if let Output::Rows { stream, .. } = cx.nested.execute(&statement, params).await? {
        stream.try_collect::<Vec<_>>().await?;
    }
    let table = cx.load_table(&name).await?;
    let after = table.version();
    let provider = lakegres_delta::DeltaProvider::try_new(name.clone(), table)?;
    let provider = match after {
        Some(v) if after > before => provider.added_at(v.unsigned_abs()).await?,
        // Nothing was written (no rows): the items of no rows.
        _ => provider.with_no_rows(),
    };
    let plan = returning_plan(cx, &items, Arc::new(provider), &alias)?;
    let schema = Arc::new(plan.schema().as_arrow().clone());
    let mut batches: Vec<RecordBatch> = cx.physical(&plan).await?.execute()?.try_collect().await?;
    if batches.is_empty() {
        batches.push(RecordBatch::new_empty(schema));
    }
    Ok(batches)
}

/// The RETURNING items over `rows` (the table's columns, qualified by
/// `alias`): `*`, `alias.*` and expressions, planned as SQL expressions of
/// those columns.
fn returning_plan(
    cx: &StatementContext<'_>,
    items: &[SelectItem],
    rows: Arc<dyn datafusion::datasource::TableProvider>,
    alias: &Ident,
) -> Result<LogicalPlan> {
    let scan = LogicalPlanBuilder::scan(
        alias.value.clone(),
        datafusion::datasource::provider_as_source(rows),
        None,
    )?
    .build()?;
    let schema = Arc::clone(scan.schema());
    let state = cx.planner.state();
    let mut exprs = Vec::new();
    for item in items {
        match item {
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                exprs.extend(schema.columns().into_iter().map(DfExpr::Column));
            }
            SelectItem::UnnamedExpr(e) => {
                let expr = state.create_logical_expr(&e.to_string(), &schema)?;
                // A column keeps its own name, as in Postgres.
                let name = match e {
                    ast::Expr::Identifier(i) => i.value.to_lowercase(),
                    ast::Expr::CompoundIdentifier(parts) => parts
                        .last()
                        .map(|i| i.value.to_lowercase())
                        .unwrap_or_default(),
                    other => other.to_string(),
                };
                exprs.push(expr.alias(name));
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let e = state.create_logical_expr(&expr.to_string(), &schema)?;
                exprs.push(e.alias(alias.value.clone()));
            }
            SelectItem::ExprWithAliases { .. } => {
                return Err(Error::not_supported("RETURNING items with several aliases"));
            }
        }
    }
    Ok(LogicalPlanBuilder::from(scan).project(exprs)?.build()?)
}

/// `SELECT items FROM <the DELETE's target> WHERE <its condition>`: the
/// rows a DELETE removes, as its RETURNING items.
fn deleted_rows_query(delete: &ast::Delete) -> Result<ast::Statement> {
    let Some(items) = &delete.returning else {
        return Err(Error::internal("a DELETE without RETURNING"));
    };
    let from = match &delete.from {
        ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => from,
    };
    if from.len() != 1 || delete.using.is_some() || !delete.tables.is_empty() {
        return Err(Error::not_supported(
            "RETURNING from a DELETE of several tables",
        ));
    }
    let mut query = crate::parser::query_template("SELECT 1")?;
    let ast::SetExpr::Select(select) = query.body.as_mut() else {
        return Err(Error::internal("the RETURNING template is not a SELECT"));
    };
    select.projection = items.clone();
    select.from = from.clone();
    select.selection = delete.selection.clone();
    Ok(ast::Statement::Query(query))
}

/// The DELETE's parameters, and its RETURNING items' columns.
pub(crate) async fn describe_delete(
    cx: &StatementContext<'_>,
    delete: &ast::Delete,
) -> Result<Description> {
    let mut plain = delete.clone();
    plain.returning = None;
    let params = crate::plan::parameter_types(&cx.plan(&ast::Statement::Delete(plain)).await?)?;
    let rows = cx.plan(&deleted_rows_query(delete)?).await?;
    Ok(Description {
        params,
        schema: Some(Arc::new(rows.schema().as_arrow().clone())),
    })
}

/// Runs a DELETE and returns its RETURNING items: in a block of its own
/// (or the open one), the rows its condition selects are read, then
/// deleted. Both read the block's one snapshot, and COMMIT fails (40001)
/// if another writer changed the table meanwhile, so the rows returned are
/// the rows deleted.
pub(crate) async fn delete_returning(
    cx: &StatementContext<'_>,
    delete: &ast::Delete,
    params: Option<ParamValues>,
) -> Result<Output> {
    in_own_block(
        cx,
        |rows| format!("DELETE {rows}"),
        delete_in_block(cx, delete, params),
    )
    .await
}

async fn delete_in_block(
    cx: &StatementContext<'_>,
    delete: &ast::Delete,
    params: Option<ParamValues>,
) -> Result<Vec<RecordBatch>> {
    let plan = crate::plan::bind(cx.plan(&deleted_rows_query(delete)?).await?, params.clone())?;
    let schema = Arc::new(plan.schema().as_arrow().clone());
    let mut batches: Vec<RecordBatch> = cx.physical(&plan).await?.execute()?.try_collect().await?;
    if batches.is_empty() {
        batches.push(RecordBatch::new_empty(schema));
    }
    let mut plain = delete.clone();
    plain.returning = None;
    let statement = Statement::Sql(Box::new(ast::Statement::Delete(plain)));
    if let Output::Rows { stream, .. } = cx.nested.execute(&statement, params).await? {
        stream.try_collect::<Vec<_>>().await?;
    }
    Ok(batches)
}
