//! Time travel in queries: `t VERSION AS OF n`, `t TIMESTAMP AS OF e`
//! (SEMANTICS.md §7). Each such reference is loaded at that point of its
//! history, registered under a private name in the session's hidden
//! schema [`TIME_TRAVEL_SCHEMA`], and the query is rewritten to read it;
//! the reference keeps its alias (or gets the table's name as one) so
//! qualified column names still resolve.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::catalog::{MemorySchemaProvider, SchemaProvider};
use lakegres_delta::{DeltaProvider, TableAt};
use sqlparser::ast::{
    Expr, Ident, ObjectName, Statement, TableAlias, TableFactor, TableVersion, Value,
};

use crate::error::class;
use crate::error::{Error, Result};
use crate::names::table_name;
use crate::statement_context::StatementContext;

/// The hidden schema time-travelled tables are registered in.
pub(crate) const TIME_TRAVEL_SCHEMA: &str = "lakegres_time_travel";

/// A schema for one session's time-travelled tables.
pub(crate) fn schema() -> Arc<MemorySchemaProvider> {
    Arc::new(MemorySchemaProvider::new())
}

/// Loads every time-travelled reference of `statement` and rewrites it.
pub(crate) async fn rewrite(
    cx: &StatementContext<'_>,
    schema: &MemorySchemaProvider,
    statement: &mut Statement,
) -> Result<()> {
    // First the references, in order; then load each; then rewrite in order.
    let mut found: Vec<(ObjectName, TableVersion)> = Vec::new();
    crate::parser::each_table_factor(statement, |factor| {
        if let TableFactor::Table {
            name,
            version: Some(version),
            ..
        } = factor
        {
            found.push((name.clone(), version.clone()));
        }
    });
    if found.is_empty() {
        return Ok(());
    }
    let mut names = Vec::with_capacity(found.len());
    for (i, (name, version)) in found.iter().enumerate() {
        // The privilege first: an unreadable table's versions are not
        // told apart by their errors (22003 for a missing one).
        let table = table_name(cx, name)?;
        crate::privileges::require_select(cx, &table)?;
        let at = point(cx, version).await?;
        let loaded = cx.engine().catalog().load_table_at(&table, &at).await?;
        let provider = DeltaProvider::try_new(table.clone(), loaded)?;
        let private = format!("{}.{}@{i}", table.schema, table.table);
        register_private(schema, &private, Arc::new(provider))?;
        names.push((private, table.table.clone()));
    }
    let mut names = names.into_iter();
    crate::parser::each_table_factor(statement, |factor| {
        if let TableFactor::Table {
            name,
            version: version @ Some(_),
            alias,
            ..
        } = factor
        {
            if let Some((private, original)) = names.next() {
                *version = None;
                read_private(name, alias, private, &original);
            }
        }
    });
    Ok(())
}

/// Registers `provider` as `private` in the hidden schema, replacing the
/// previous statement's table of that name.
pub(crate) fn register_private(
    schema: &MemorySchemaProvider,
    private: &str,
    provider: Arc<dyn datafusion::datasource::TableProvider>,
) -> Result<()> {
    schema
        .deregister_table(private)
        .map_err(Error::DataFusion)?;
    schema
        .register_table(private.to_string(), provider)
        .map_err(Error::DataFusion)?;
    Ok(())
}

/// Points a table reference at `private` in the hidden schema; without an
/// alias of its own it gets `alias_name`, so qualified column names still
/// resolve.
pub(crate) fn read_private(
    name: &mut ObjectName,
    alias: &mut Option<TableAlias>,
    private: String,
    alias_name: &str,
) {
    *name = ObjectName::from(vec![
        Ident::new(TIME_TRAVEL_SCHEMA),
        Ident::with_quote('"', private),
    ]);
    if alias.is_none() {
        *alias = Some(TableAlias {
            explicit: false,
            name: Ident::new(alias_name),
            columns: vec![],
            at: None,
        });
    }
}

/// The version or time a temporal clause names.
pub(crate) async fn point(cx: &StatementContext<'_>, version: &TableVersion) -> Result<TableAt> {
    match version {
        TableVersion::VersionAsOf(e) => {
            let text = match e {
                Expr::Value(v) => match &v.value {
                    Value::Number(n, _) => n.clone(),
                    Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                },
                other => other.to_string(),
            };
            text.trim()
                .parse::<i64>()
                .map(TableAt::Version)
                .map_err(|_| {
                    Error::analysis(
                        class::DELTA_INVALID_TIME_TRAVEL_SPEC,
                        format!("VERSION AS OF needs a version number, not {e}"),
                    )
                })
        }
        TableVersion::TimestampAsOf(e) | TableVersion::ForSystemTimeAsOf(e) => {
            // A timestamp string is read here: DataFusion's CAST goes through
            // nanoseconds, which end in 2262 ('2999-01-01' must be a time
            // after the table's history, not an error).
            if let Expr::Value(v) = e {
                if let Value::SingleQuotedString(s) = &v.value {
                    if let Some(t) = parse_timestamp(s) {
                        return Ok(TableAt::Timestamp(t));
                    }
                }
            }
            // Any constant expression castable to a timestamp, evaluated here.
            let sql = format!("SELECT CAST(({e}) AS TIMESTAMP)");
            let df = cx.context().sql(&sql).await?;
            let batches = df.collect().await?;
            let value = batches.first().and_then(|b| {
                let column = datafusion::arrow::compute::cast(
                    b.column(0),
                    &DataType::Timestamp(TimeUnit::Microsecond, None),
                )
                .ok()?;
                let micros = column.as_primitive_opt::<TimestampMicrosecondType>()?;
                (micros.len() == 1 && micros.is_valid(0)).then(|| micros.value(0))
            });
            let micros = value.ok_or_else(|| {
                Error::analysis(
                    class::DELTA_INVALID_TIME_TRAVEL_SPEC,
                    format!("TIMESTAMP AS OF needs a timestamp, not {e}"),
                )
            })?;
            chrono::DateTime::from_timestamp_micros(micros)
                .map(TableAt::Timestamp)
                .ok_or_else(|| Error::Internal {
                    message: "timestamp out of range".into(),
                })
        }
        other => Err(Error::not_supported(format!("time travel by {other}"))),
    }
}

/// A timestamp literal in the forms Spark reads (`2024-01-01`,
/// `2024-01-01 10:00:00[.fff]`, ISO 8601 with `T` and an offset), as UTC
/// when it has no offset.
fn parse_timestamp(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&chrono::Utc));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, format) {
            return Some(t.and_utc());
        }
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_literals_past_2262() {
        assert_eq!(
            parse_timestamp("2999-01-01 00:00:00").map(|t| t.timestamp()),
            Some(32472144000)
        );
        assert!(parse_timestamp("2024-01-01").is_some());
        assert!(parse_timestamp("2024-01-01 10:00:00.123").is_some());
        assert!(parse_timestamp("2024-01-01T10:00:00+02:00").is_some());
        assert!(parse_timestamp("yesterday").is_none());
    }
}
