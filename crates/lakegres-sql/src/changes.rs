//! The change data feed: `table_changes('t', start [, end])` in a FROM
//! clause, on a table with `delta.enableChangeDataFeed = true`.
//!
//! `start` and `end` are versions (numbers) or times (anything `TIMESTAMP
//! AS OF` takes); both ends are included. Each row is a change with the
//! table's columns and `_change_type` (`insert`, `delete`,
//! `update_preimage`, `update_postimage`), `_commit_version` and
//! `_commit_timestamp`. Storage reads the feed
//! (`lakegres_delta::changes`); here each such call is loaded before planning and registered under a
//! private name in the session's hidden time travel schema, as time
//! travel's references are, and the query rewritten to read it.

use std::sync::Arc;

use datafusion::catalog::MemorySchemaProvider;
use datafusion::datasource::TableProvider;
use lakegres_delta::grants::Privilege;
use lakegres_delta::{TableAt, TableName};
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, Statement, TableFactor, TableVersion,
    Value,
};

use crate::error::class;
use crate::error::{Error, Result};
use crate::parser::each_table_factor;
use crate::statement_context::StatementContext;
use crate::time_travel::{point, read_private, register_private};

/// The function's name, as Databricks spells it.
const FUNCTION: &str = "table_changes";

fn is_table_changes(name: &ObjectName) -> bool {
    name.0.len() == 1
        && name.0[0]
            .as_ident()
            .is_some_and(|i| i.value.eq_ignore_ascii_case(FUNCTION))
}

fn invalid(message: String) -> Error {
    Error::analysis(class::INVALID_TABLE_CHANGES_ARGUMENTS, message)
}

/// Loads every `table_changes(…)` of `statement` and rewrites it to read
/// the registered feed.
pub(crate) async fn rewrite(
    cx: &StatementContext<'_>,
    schema: &MemorySchemaProvider,
    statement: &mut Statement,
) -> Result<()> {
    let mut found: Vec<Vec<FunctionArg>> = Vec::new();
    each_table_factor(statement, |factor| {
        if let TableFactor::Table {
            name,
            args: Some(args),
            ..
        } = factor
        {
            if is_table_changes(name) {
                found.push(args.args.clone());
            }
        }
    });
    if found.is_empty() {
        return Ok(());
    }
    let mut names = Vec::with_capacity(found.len());
    for (i, args) in found.iter().enumerate() {
        let (table, provider) = feed(cx, args).await?;
        let private = format!("{}.{}@changes{i}", table.schema, table.table);
        register_private(schema, &private, provider)?;
        names.push(private);
    }
    let mut names = names.into_iter();
    each_table_factor(statement, |factor| {
        if let TableFactor::Table {
            name, args, alias, ..
        } = factor
        {
            if args.is_some() && is_table_changes(name) {
                if let Some(private) = names.next() {
                    *args = None;
                    read_private(name, alias, private, FUNCTION);
                }
            }
        }
    });
    Ok(())
}

/// The feed one call names: the table, checked for SELECT, and delta-rs'
/// provider over the range.
async fn feed(
    cx: &StatementContext<'_>,
    args: &[FunctionArg],
) -> Result<(TableName, Arc<dyn TableProvider>)> {
    let exprs: Vec<&Expr> = args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
            other => Err(invalid(format!(
                "{FUNCTION} takes a table name and one or two versions or timestamps, not {other}"
            ))),
        })
        .collect::<Result<_>>()?;
    let (table, start, end) = match exprs.as_slice() {
        [table, start] => (*table, *start, None),
        [table, start, end] => (*table, *start, Some(*end)),
        _ => {
            return Err(invalid(format!(
                "{FUNCTION} takes a table name and one or two versions or timestamps"
            )))
        }
    };
    let name = match table {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => s.clone(),
            _ => {
                return Err(invalid(format!(
                    "the table name must be a string, not {table}"
                )))
            }
        },
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => table.to_string(),
        _ => {
            return Err(invalid(format!(
                "the table name must be a string, not {table}"
            )))
        }
    };
    let parts: Vec<Ident> = name.split('.').map(Ident::new).collect();
    let name = crate::names::table_name(cx, &ObjectName::from(parts))?;
    cx.principal().require(Privilege::Select, &name)?;
    let table = cx.load_table(&name).await?;
    let start = bound(cx, start).await?;
    let end = match end {
        Some(end) => Some(bound(cx, end).await?),
        None => None,
    };
    let Some(provider) = lakegres_delta::changes::feed(&name, table, start, end)? else {
        return Err(Error::analysis(
            class::DELTA_MISSING_CHANGE_DATA,
            format!(
                "table {name} does not record its changes: set delta.enableChangeDataFeed = true"
            ),
        ));
    };
    Ok((name, provider))
}

/// A range end: a number is a version, anything else a time.
async fn bound(cx: &StatementContext<'_>, e: &Expr) -> Result<TableAt> {
    let numeric = matches!(e, Expr::Value(v) if matches!(v.value, Value::Number(..)));
    let version = if numeric {
        TableVersion::VersionAsOf(e.clone())
    } else {
        TableVersion::TimestampAsOf(e.clone())
    };
    let at = point(cx, &version).await?;
    if let TableAt::Version(v) = at {
        if v < 0 {
            return Err(invalid(format!("a version cannot be negative: {v}")));
        }
    }
    Ok(at)
}
