//! `DECLARE c CURSOR FOR query`, `FETCH [n] FROM c`, `CLOSE c | ALL`: SQL
//! cursors over a query's row stream (the cursors themselves are in
//! `cursors.rs`).

use sqlparser::ast;

use crate::error::{Error, Result};
use crate::output::{fixed, rows_output, Output};
use crate::statement_context::StatementContext;

/// Runs a cursor statement.
pub(crate) async fn run(cx: &StatementContext<'_>, statement: &ast::Statement) -> Result<Output> {
    use ast::Statement as S;
    match statement {
        S::Declare { stmts } => {
            for d in stmts {
                let (Some(query), Some(name)) = (&d.for_query, d.names.first()) else {
                    return Err(Error::not_supported("DECLARE without a cursor query"));
                };
                let plan = cx.plan(&ast::Statement::Query(query.clone())).await?;
                let stream = cx
                    .context()
                    .execute_logical_plan(plan)
                    .await?
                    .execute_stream()
                    .await?;
                cx.cursors().lock().await.declare(&name.value, stream)?;
            }
            Ok(Output::Done(fixed("DECLARE CURSOR")))
        }
        S::Fetch {
            name, direction, ..
        } => {
            use ast::FetchDirection as D;
            let count = |v: &ast::ValueWithSpan| -> Result<usize> {
                v.value
                    .to_string()
                    .parse()
                    .map_err(|_| Error::not_supported(format!("FETCH {v}")))
            };
            let count = match direction {
                D::Count { limit } => Some(count(limit)?),
                D::Next | D::Forward { limit: None } => Some(1),
                D::Forward { limit: Some(l) } => Some(count(l)?),
                D::All | D::ForwardAll => None,
                other => return Err(Error::not_supported(format!("FETCH {other}"))),
            };
            let batch = cx.cursors().lock().await.fetch(&name.value, count).await?;
            let n = batch.num_rows();
            Ok(rows_output(batch, fixed(&format!("FETCH {n}"))))
        }
        S::Close { cursor } => {
            let name = match cursor {
                ast::CloseCursor::All => None,
                ast::CloseCursor::Specific { name } => Some(name.value.as_str()),
            };
            cx.cursors().lock().await.close(name)?;
            Ok(Output::Done(fixed(if name.is_some() {
                "CLOSE CURSOR"
            } else {
                "CLOSE CURSOR ALL"
            })))
        }
        other => Err(Error::not_supported(format!(
            "{other} as a cursor statement"
        ))),
    }
}
