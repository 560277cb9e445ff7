//! `COPY … FROM STDIN | TO STDOUT`, Postgres' bulk path: the statement's
//! part. The data stream the wire feeds is [`crate::copy_in::CopyIn`].

use sqlparser::ast::{self, CopySource, CopyTarget};

use crate::copy_in::{CopyIn, CopyOptions};
use crate::error::class;
use crate::error::{Error, Result};
use crate::names::table_name;
use crate::output::Output;
use crate::statement_context::StatementContext;

/// `COPY …`: the session's part. FROM STDIN returns a [`CopyIn`] the wire
/// feeds; TO STDOUT returns the rows with the options to encode them.
pub(crate) async fn copy(cx: &StatementContext<'_>, statement: &ast::Statement) -> Result<Output> {
    let ast::Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        values,
    } = statement
    else {
        return Err(Error::Internal {
            message: "not a COPY".into(),
        });
    };
    if !values.is_empty() {
        return Err(Error::not_supported("COPY data inline in the query text"));
    }
    match target {
        CopyTarget::Stdin | CopyTarget::Stdout => {}
        CopyTarget::File { .. } | CopyTarget::Program { .. } => {
            return Err(Error::analysis(class::INSUFFICIENT_PRIVILEGE, format!(
                    "COPY to or from a server {} is not allowed: use STDIN/STDOUT (psql \\copy) or COPY INTO",
                    if matches!(target, CopyTarget::File { .. }) { "file" } else { "program" }
                )))
        }
    }
    let options = CopyOptions::from_ast(options, legacy_options)?;
    if *to {
        // The query on the syntax tree: nothing the user wrote is rendered
        // to text and read again.
        let query = match source {
            CopySource::Table {
                table_name,
                columns,
            } => {
                let mut query = crate::parser::query_template("SELECT * FROM lakegres_copy")?;
                if let ast::SetExpr::Select(select) = query.body.as_mut() {
                    if !columns.is_empty() {
                        select.projection = columns
                            .iter()
                            .map(|c| ast::SelectItem::UnnamedExpr(ast::Expr::Identifier(c.clone())))
                            .collect();
                    }
                    if let [from] = select.from.as_mut_slice() {
                        if let ast::TableFactor::Table { name, .. } = &mut from.relation {
                            *name = table_name.clone();
                        }
                    }
                }
                query
            }
            CopySource::Query(q) => q.clone(),
        };
        let ast = ast::Statement::Query(query);
        let plan = cx.plan(&ast).await?;
        let stream = cx.physical(&plan).await?.execute()?;
        return Ok(Output::CopyOut { stream, options });
    }
    let CopySource::Table {
        table_name: name,
        columns,
    } = source
    else {
        return Err(Error::not_supported("COPY (query) FROM"));
    };
    let name = table_name(cx, name)?;
    let table = cx.load_table(&name).await?;
    let state = cx.context().state();
    let copy_in =
        CopyIn::start(name, table, state, cx.principal().user(), columns, options).await?;
    Ok(Output::CopyIn(Box::new(copy_in)))
}
