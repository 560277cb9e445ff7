//! RESTORE, OPTIMIZE and VACUUM: the statements, their checks and the
//! result rows Databricks gives (SEMANTICS.md §0.4, §8); the Delta work is
//! lakegres-delta's.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::DataFusionError;
use lakegres_delta::{FilterOp, OptimizeRequest, PartitionFilter, TableAt, VacuumRequest};
use sqlparser::ast::{BinaryOperator, Expr, Value};

use crate::error::class;
use crate::error::{Error, Result};
use crate::names::table_name;
use crate::output::{fixed, rows_output, Output};
use crate::parser::{Optimize, Restore, Vacuum};
use crate::statement_context::StatementContext;

/// The setting that lets VACUUM keep less than the table's retention.
pub(crate) const RETENTION_CHECK: &str = "spark.databricks.delta.retentionDurationCheck.enabled";

/// The six BIGINT columns RESTORE returns.
pub(crate) fn restore_schema() -> SchemaRef {
    let column = |n: &str| Field::new(n, DataType::Int64, false);
    Arc::new(Schema::new(vec![
        column("table_size_after_restore"),
        column("num_of_files_after_restore"),
        column("num_removed_files"),
        column("num_restored_files"),
        column("removed_files_size"),
        column("restored_files_size"),
    ]))
}

/// `RESTORE [TABLE] t [TO] VERSION AS OF n | TIMESTAMP AS OF e`: a new
/// version holding what version n (or the last one committed at or before
/// e) held. Errors as Databricks raises them (22003), nothing committed.
pub(crate) async fn restore(cx: &StatementContext<'_>, restore: &Restore) -> Result<Output> {
    let name = table_name(cx, &restore.name)?;
    let catalog = cx.engine().catalog();
    let current = cx.load_table(&name).await?;
    let latest = current.version().unwrap_or(0);
    let at = crate::time_travel::point(cx, &restore.to).await?;
    let target = match catalog.load_table_at(&name, &at).await {
        Ok(target) => target,
        Err(lakegres_delta::Error::VersionNotFound { .. }) => {
            let version = match at {
                TableAt::Version(v) => v,
                TableAt::Timestamp(_) => latest,
            };
            return Err(lakegres_delta::Error::RestoreVersionNotFound {
                table: name.to_string(),
                version,
                first: 0,
                latest,
            }
            .into());
        }
        Err(lakegres_delta::Error::TimestampOutOfHistory { later, .. }) => {
            let when = |version: i64| {
                let current = &current;
                async move {
                    let ms = current.version_committed_at(version).await;
                    ms.and_then(chrono::DateTime::from_timestamp_millis)
                        .map(|t| t.to_rfc3339())
                        .unwrap_or_default()
                }
            };
            let at = match &at {
                TableAt::Timestamp(t) => t.to_rfc3339(),
                other => other.to_string(),
            };
            return Err(if later {
                lakegres_delta::Error::RestoreTimestampGreater {
                    table: name.to_string(),
                    at,
                    latest: when(latest).await,
                }
            } else {
                lakegres_delta::Error::RestoreTimestampEarlier {
                    table: name.to_string(),
                    at,
                    earliest: when(0).await,
                }
            }
            .into());
        }
        Err(e) => return Err(e.into()),
    };
    let timestamp_ms = match &at {
        TableAt::Timestamp(t) => Some(t.timestamp_millis()),
        TableAt::Version(_) => None,
    };
    let m = lakegres_delta::restore(&name, &current, &target, timestamp_ms, cx.committed()).await?;
    let columns: Vec<ArrayRef> = [
        m.table_size_after_restore,
        m.num_of_files_after_restore,
        m.num_removed_files,
        m.num_restored_files,
        m.removed_files_size,
        m.restored_files_size,
    ]
    .into_iter()
    .map(|v| Arc::new(Int64Array::from(vec![v])) as ArrayRef)
    .collect();
    let batch = RecordBatch::try_new(restore_schema(), columns).map_err(DataFusionError::from)?;
    Ok(rows_output(batch, fixed("RESTORE")))
}

/// OPTIMIZE's columns: the table's location and what was done, as JSON
/// (Databricks' `metrics` struct; maps and structs are JSON text here).
pub(crate) fn optimize_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("metrics", DataType::Utf8, true),
    ]))
}

/// `OPTIMIZE t [WHERE partition predicate] [ZORDER BY (cols)]`.
pub(crate) async fn optimize(cx: &StatementContext<'_>, optimize: &Optimize) -> Result<Output> {
    let name = table_name(cx, &optimize.name)?;
    let catalog = cx.engine().catalog();
    let table = cx.load_table(&name).await?;
    let info = table.info(&name)?;
    let columns: Vec<String> = info.columns.iter().map(|c| c.name.clone()).collect();
    let partitions = info.partition_columns.clone();
    let declared = |column: &str| -> Result<String> {
        columns
            .iter()
            .find(|c| c.eq_ignore_ascii_case(column))
            .cloned()
            .ok_or_else(|| Error::UnknownColumn {
                table: name.to_string(),
                column: column.to_string(),
            })
    };
    let mut request = OptimizeRequest::default();
    if let Some(predicate) = &optimize.predicate {
        let mut conjuncts = Vec::new();
        split_and(predicate, &mut conjuncts);
        for conjunct in conjuncts {
            let mut filter = partition_filter(conjunct)?;
            filter.column = declared(&filter.column)?;
            if !partitions.contains(&filter.column) {
                return Err(Error::analysis(class::DELTA_NON_PARTITION_COLUMN_REFERENCE, format!(
                        "predicate references non-partition column '{}'. Only the partition columns may be referenced: [{}]",
                        filter.column,
                        partitions.join(", ")
                    )));
            }
            request.filters.push(filter);
        }
    }
    if optimize.purge {
        return purge(cx, name, table, &request.filters).await;
    }
    for column in &optimize.zorder {
        let column = declared(&column.value)?;
        if partitions.contains(&column) {
            return Err(Error::analysis(class::DELTA_ZORDERING_ON_PARTITION_COLUMN, format!(
                    "{column} is a partition column. Z-Ordering can only be performed on data columns"
                )));
        }
        request.zorder.push(column);
    }
    if request.zorder.is_empty() && request.filters.is_empty() {
        // A clustered table is ordered by its clustering columns.
        request.zorder = info.clustering_columns();
        if !request.zorder.is_empty() {
            request.clustering = Some(optimize.full);
        }
    }
    let location = catalog.location(&name).await?.to_string();
    let state = Arc::new(cx.context().state());
    let started = chrono::Utc::now().timestamp_millis();
    let m = lakegres_delta::optimize(&name, table, state, &request).await?;
    let mut metrics = lakegres_delta::optimize_metrics(&m);
    metrics.insert("startTimeMs".into(), started.into());
    metrics.insert(
        "endTimeMs".into(),
        chrono::Utc::now().timestamp_millis().into(),
    );
    let metrics = serde_json::Value::Object(metrics);
    path_and_metrics(location, &metrics, "OPTIMIZE")
}

/// `REORG TABLE t [WHERE partition predicate] APPLY (PURGE)`: the path and
/// the metrics, as OPTIMIZE reports them.
async fn purge(
    cx: &StatementContext<'_>,
    name: lakegres_delta::TableName,
    table: lakegres_delta::Table,
    filters: &[lakegres_delta::PartitionFilter],
) -> Result<Output> {
    let location = cx.engine().catalog().location(&name).await?.to_string();
    let state = Arc::new(cx.context().state());
    let started = chrono::Utc::now().timestamp_millis();
    let m = lakegres_delta::purge(&name, table, state, filters).await?;
    let metrics = serde_json::json!({
        "numFilesAdded": m.files_added,
        "numFilesRemoved": m.files_removed,
        "numDeletionVectorsRemoved": m.files_removed,
        "numRowsPurged": m.rows_purged,
        "numBytesAdded": m.bytes_added,
        "numBytesRemoved": m.bytes_removed,
        "startTimeMs": started,
        "endTimeMs": chrono::Utc::now().timestamp_millis(),
    });
    path_and_metrics(location, &metrics, "REORG")
}

/// OPTIMIZE's and REORG's one row: the table's path and the metrics.
fn path_and_metrics(location: String, metrics: &serde_json::Value, tag: &str) -> Result<Output> {
    let batch = RecordBatch::try_new(
        optimize_schema(),
        vec![
            Arc::new(StringArray::from(vec![location])) as ArrayRef,
            Arc::new(StringArray::from(vec![metrics.to_string()])) as ArrayRef,
        ],
    )
    .map_err(DataFusionError::from)?;
    Ok(rows_output(batch, fixed(tag)))
}

fn split_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        Expr::Nested(inner) => split_and(inner, out),
        other => out.push(other),
    }
}

/// `col op literal` (either side) or `col [NOT] IN (literals)`.
fn partition_filter(e: &Expr) -> Result<PartitionFilter> {
    let unsupported = || {
        let mut placeholder = false;
        let _ = sqlparser::ast::visit_expressions(e, |e| {
            placeholder |= matches!(e, Expr::Value(v) if matches!(v.value, Value::Placeholder(_)));
            std::ops::ControlFlow::<()>::Continue(())
        });
        Error::not_supported(if placeholder {
            format!("parameters ($n) in OPTIMIZE … WHERE {e} (write the values)")
        } else {
            format!(
                "OPTIMIZE … WHERE {e} (only comparisons of partition columns with literals, joined by AND)"
            )
        })
    };
    let column = |e: &Expr| match e {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
        _ => None,
    };
    match e {
        Expr::BinaryOp { left, op, right } => {
            let op_of = |op: &BinaryOperator, flipped: bool| -> Option<FilterOp> {
                Some(match (op, flipped) {
                    (BinaryOperator::Eq, _) => FilterOp::Eq,
                    (BinaryOperator::NotEq, _) => FilterOp::Ne,
                    (BinaryOperator::Lt, false) | (BinaryOperator::Gt, true) => FilterOp::Lt,
                    (BinaryOperator::LtEq, false) | (BinaryOperator::GtEq, true) => FilterOp::Le,
                    (BinaryOperator::Gt, false) | (BinaryOperator::Lt, true) => FilterOp::Gt,
                    (BinaryOperator::GtEq, false) | (BinaryOperator::LtEq, true) => FilterOp::Ge,
                    _ => return None,
                })
            };
            let (col, value, flipped) = match (column(left), column(right)) {
                (Some(c), None) => (c, right.as_ref(), false),
                (None, Some(c)) => (c, left.as_ref(), true),
                _ => return Err(unsupported()),
            };
            let op = op_of(op, flipped).ok_or_else(unsupported)?;
            if is_null(value) {
                // A comparison with NULL is NULL: no partition.
                return Ok(PartitionFilter::none(col));
            }
            let value = literal(value).ok_or_else(unsupported)?;
            Ok(PartitionFilter {
                column: col,
                op,
                values: vec![value],
            })
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let col = column(expr).ok_or_else(unsupported)?;
            // A NULL in the list makes NOT IN NULL or false for every
            // partition, and IN true only where another value matches.
            if *negated && list.iter().any(is_null) {
                return Ok(PartitionFilter::none(col));
            }
            let values = list
                .iter()
                .filter(|v| !is_null(v))
                .map(|v| literal(v).ok_or_else(unsupported))
                .collect::<Result<Vec<_>>>()?;
            Ok(PartitionFilter {
                column: col,
                op: if *negated {
                    FilterOp::NotIn
                } else {
                    FilterOp::In
                },
                values,
            })
        }
        Expr::Nested(inner) => partition_filter(inner),
        _ => Err(unsupported()),
    }
}

/// `NULL`, typed or not.
fn is_null(e: &Expr) -> bool {
    match e {
        Expr::Value(v) => matches!(v.value, Value::Null),
        Expr::Cast { expr, .. } | Expr::Nested(expr) => is_null(expr),
        _ => false,
    }
}

/// A literal as its partition value text (`DATE '2024-01-01'` too).
fn literal(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Some(s.clone()),
            Value::Number(n, _) => Some(n.clone()),
            Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        },
        Expr::TypedString(t) => match &t.value.value {
            Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Minus,
            expr,
        } => literal(expr).map(|v| format!("-{v}")),
        Expr::Cast { expr, .. } | Expr::Nested(expr) => literal(expr),
        _ => None,
    }
}

/// VACUUM's column: the table's location, or in a dry run each file that
/// would go.
pub(crate) fn vacuum_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("path", DataType::Utf8, false)]))
}

/// `VACUUM t [LITE|FULL] [RETAIN n HOURS] [DRY RUN]`.
pub(crate) async fn vacuum(cx: &StatementContext<'_>, vacuum: &Vacuum) -> Result<Output> {
    let name = table_name(cx, &vacuum.name)?;
    let catalog = cx.engine().catalog();
    let table = cx.load_table(&name).await?;
    let check_retention = cx
        .settings()
        .get(RETENTION_CHECK)
        .map(|v| !matches!(v.to_lowercase().as_str(), "false" | "off" | "0"))
        .unwrap_or(true);
    let retain_ms = match vacuum.retain_hours {
        Some(h) if h.is_finite() => Some((h * 3_600_000.0).round() as i64),
        Some(_) => {
            return Err(Error::InvalidParameter {
                message: "RETAIN needs a finite number of hours".into(),
            })
        }
        None => None,
    };
    let request = VacuumRequest {
        retain_ms,
        check_retention,
        dry_run: vacuum.dry_run,
        lite: vacuum.lite,
    };
    let outcome = lakegres_delta::vacuum(&name, table, &request, cx.committed()).await?;
    let paths = if vacuum.dry_run {
        outcome.files
    } else {
        vec![catalog.location(&name).await?.to_string()]
    };
    let batch = RecordBatch::try_new(
        vacuum_schema(),
        vec![Arc::new(StringArray::from(paths)) as ArrayRef],
    )
    .map_err(DataFusionError::from)?;
    Ok(rows_output(batch, fixed("VACUUM")))
}
