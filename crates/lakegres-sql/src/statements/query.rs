//! Queries — SELECT, VALUES, EXPLAIN, and any other statement sqlparser
//! reads that DataFusion plans (or refuses): point queries answered from the
//! lookup cache, the rest planned and streamed. A Postgres client's catalog
//! query DataFusion cannot plan, over relations that are always empty here,
//! is answered with no rows.

use std::sync::Arc;

use datafusion::common::ParamValues;
use sqlparser::ast;

use crate::error::Result;
use crate::output::{rows_output, CommandTag, Description, Output};
use crate::plan::{bind, parameter_types};
use crate::statement_context::StatementContext;

/// The result columns and parameter types of a query.
pub(crate) async fn describe(
    cx: &StatementContext<'_>,
    statement: &ast::Statement,
) -> Result<Description> {
    let plan = match cx.plan(statement).await {
        Ok(plan) => plan,
        Err(e) => {
            return match crate::compat::empty_catalog_answer(statement) {
                Some(empty) => Ok(Description {
                    params: vec![],
                    schema: Some(empty.schema()),
                }),
                None => Err(e),
            }
        }
    };
    Ok(Description {
        params: parameter_types(&plan)?,
        schema: Some(Arc::new(plan.schema().as_arrow().clone())),
    })
}

/// Runs a query and streams its rows.
pub(crate) async fn run(
    cx: &StatementContext<'_>,
    statement: &ast::Statement,
    params: Option<ParamValues>,
) -> Result<Output> {
    // A point query's lookup and planning each hold kilobytes of state:
    // they are boxed, and entered only when needed, so that a query
    // answered from the session's kept results copies neither.
    if let Some(shape) = crate::lookup::shape(statement) {
        let lookup = Box::pin(crate::lookup::try_run(cx, shape, params.as_ref()));
        if let Some(rows) = lookup.await? {
            return Ok(rows);
        }
    }
    // A query whose result the session keeps was answered by the pipeline,
    // found by its text; this one is planned, and kept if it may be.
    let keep = params.is_none() && crate::constant_plans::may_keep(statement);
    let planned = Box::pin(planned(cx, statement, params, keep));
    planned.await
}

/// A query's command tag.
fn tag_of(statement: &ast::Statement) -> &'static str {
    match statement {
        ast::Statement::Explain { .. } => "EXPLAIN",
        _ => "SELECT",
    }
}

/// Runs a query the general way: planned, optimized and executed. When
/// `keep` (the query may be kept) and it reads nothing, its result is kept
/// for the session's next run of it ([`crate::constant_plans`]).
async fn planned(
    cx: &StatementContext<'_>,
    statement: &ast::Statement,
    params: Option<ParamValues>,
    keep: bool,
) -> Result<Output> {
    let tag = tag_of(statement);
    let planned = match cx.plan(statement).await {
        Ok(plan) if keep && crate::constant_plans::reads_nothing(&plan) => {
            async {
                let physical = cx.physical(&plan).await?;
                let stream = cx.constant_plans().keep(statement, physical).await?;
                Ok(Output::Rows {
                    stream,
                    tag: CommandTag::Counted(tag),
                })
            }
            .await
        }
        Ok(plan) => match bind(plan, params) {
            Ok(plan) => cx.run(plan, CommandTag::Counted(tag)).await,
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    match planned {
        Err(e) => match crate::compat::empty_catalog_answer(statement) {
            Some(empty) => {
                tracing::debug!(error = %e, "a catalog query DataFusion cannot plan answered with no rows");
                Ok(rows_output(empty, CommandTag::Counted("SELECT")))
            }
            None => Err(e),
        },
        ok => ok,
    }
}
