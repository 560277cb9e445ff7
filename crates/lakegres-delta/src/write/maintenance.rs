//! Table maintenance: RESTORE, OPTIMIZE and VACUUM, and the file-level
//! facts DESCRIBE DETAIL reports.
//!
//! OPTIMIZE and VACUUM are delta-rs' `OptimizeBuilder` and `VacuumBuilder`.
//! RESTORE is one `CommitBuilder` commit put together here, as delta-rs'
//! `RestoreBuilder` does it, because that builder records only two file
//! counts (Databricks reports six figures, sizes included), refuses to
//! restore the current version, and reads a timestamp before the first
//! commit as version 0; the version to restore is resolved by the catalog
//! (its time travel checks) before this runs.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::execution::context::SessionState;
use deltalake::kernel::transaction::CommitBuilder;
use deltalake::kernel::{Action, Add, EagerSnapshot, LogicalFileView, Remove};
use deltalake::logstore::object_store::ObjectStoreExt;
use deltalake::operations::optimize::{Metrics as OptimizeMetrics, OptimizeType};
use deltalake::operations::vacuum::VacuumMode;
use deltalake::protocol::DeltaOperation;
use deltalake::table::config::TablePropertiesExt;
use deltalake::{DeltaTable, FilterValue};
use futures::TryStreamExt;

use crate::catalog::TableName;
use crate::commit::committed::CommitSink;
use crate::error::{Error, Result};
use crate::write::files::writer_properties;
use datafusion::datasource::TableProvider;

/// The live files of a snapshot: count, total size in bytes, and their
/// deletion vectors (Databricks' DESCRIBE DETAIL `statistics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileTotals {
    pub files: i64,
    pub bytes: i64,
    pub deletion_vectors: i64,
    pub rows_deleted_by_deletion_vectors: i64,
}

/// The live files of a loaded table, counted (DESCRIBE DETAIL).
pub async fn file_totals(name: &TableName, table: &crate::Table) -> Result<FileTotals> {
    let table = table.delta();
    let files = live_files(name, table).await?;
    let dvs: Vec<_> = files
        .iter()
        .filter_map(LogicalFileView::deletion_vector_descriptor)
        .collect();
    Ok(FileTotals {
        files: files.len() as i64,
        bytes: files.iter().map(LogicalFileView::size).sum(),
        deletion_vectors: dvs.len() as i64,
        rows_deleted_by_deletion_vectors: dvs.iter().map(|dv| dv.cardinality).sum(),
    })
}

fn snapshot<'a>(name: &TableName, table: &'a DeltaTable) -> Result<&'a EagerSnapshot> {
    table
        .snapshot()
        .map(|s| s.snapshot())
        .map_err(|e| Error::delta("reading", name.to_string(), e))
}

async fn live_files(name: &TableName, table: &DeltaTable) -> Result<Vec<LogicalFileView>> {
    snapshot(name, table)?
        .file_views(table.log_store().as_ref(), None)
        .try_collect()
        .await
        .map_err(|e| Error::delta("listing the files of", name.to_string(), e))
}

/// What a RESTORE did, as Databricks reports it (SEMANTICS.md §0.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RestoreMetrics {
    pub table_size_after_restore: i64,
    pub num_of_files_after_restore: i64,
    pub num_removed_files: i64,
    pub num_restored_files: i64,
    pub removed_files_size: i64,
    pub restored_files_size: i64,
}

/// A file's identity across versions: its path and deletion vector.
fn file_key(file: &LogicalFileView) -> (String, Option<String>) {
    let dv = file.deletion_vector_descriptor().map(|dv| {
        format!(
            "{}{}@{:?}",
            dv.storage_type, dv.path_or_inline_dv, dv.offset
        )
    });
    (file.path().to_string(), dv)
}

/// Makes `current` (the latest version) hold what `target` (an older
/// version of the same table) held, in one commit recorded as `RESTORE`:
/// the files only `target` has are added back, the files only `current`
/// has are removed, and `target`'s metadata comes back with them. A
/// concurrent commit fails it (40001) rather than being retried over: the
/// restore was planned against `current`. `timestamp_ms` is the time the
/// statement named, when it named one.
pub async fn restore(
    name: &TableName,
    current: &crate::Table,
    target: &crate::Table,
    timestamp_ms: Option<i64>,
    committed: &CommitSink,
) -> Result<RestoreMetrics> {
    let current = current.delta();
    let target = target.delta();
    let target_version = target
        .version()
        .ok_or_else(|| Error::Internal(format!("{name}: the version to restore is not loaded")))?;
    let current_snapshot = snapshot(name, current)?;
    let target_snapshot = snapshot(name, target)?;
    let target_files = live_files(name, target).await?;
    let current_files = live_files(name, current).await?;
    let target_keys: HashSet<_> = target_files.iter().map(file_key).collect();
    let current_keys: HashSet<_> = current_files.iter().map(file_key).collect();

    let now = chrono::Utc::now().timestamp_millis();
    #[allow(deprecated)] // the view's own conversion; `to_add` is crate-private
    let adds: Vec<Add> = target_files
        .iter()
        .filter(|f| !current_keys.contains(&file_key(f)))
        .map(|f| {
            let mut add = f.add_action();
            add.data_change = true;
            add
        })
        .collect();
    let removes: Vec<Remove> = current_files
        .iter()
        .filter(|f| !target_keys.contains(&file_key(f)))
        .map(|f| {
            let mut remove = f.remove_action(true);
            remove.deletion_timestamp = Some(now);
            remove
        })
        .collect();
    // Removing data from an append-only table is refused, as for any
    // commit that removes files with `dataChange` (Delta's assertRemovable).
    if !removes.is_empty() && current_snapshot.table_properties().append_only() {
        return Err(Error::WriteCheck {
            message: format!(
                "[DELTA_CANNOT_MODIFY_APPEND_ONLY] table {name} only allows appends: restoring version {target_version} would remove files. To permit it, use 'ALTER TABLE {name} SET TBLPROPERTIES (delta.appendOnly=false)'"
            ),
            state: crate::SqlState::WRONG_OBJECT_TYPE,
        });
    }
    // A file vacuumed since cannot come back: fail before committing.
    let store = current.log_store().object_store(None);
    for add in &adds {
        let path = deltalake::Path::parse(&add.path)
            .map_err(|e| Error::Internal(format!("file path {}: {e}", add.path)))?;
        match store.head(&path).await {
            Ok(_) => {}
            Err(deltalake::ObjectStoreError::NotFound { .. }) => {
                return Err(Error::RestoreMissingFile {
                    table: name.to_string(),
                    version: target_version,
                    path: add.path.clone(),
                })
            }
            Err(source) => {
                return Err(Error::Storage {
                    op: "restoring a table",
                    source: Box::new(source),
                })
            }
        }
    }

    let metrics = RestoreMetrics {
        table_size_after_restore: target_files.iter().map(LogicalFileView::size).sum(),
        num_of_files_after_restore: target_files.len() as i64,
        num_removed_files: removes.len() as i64,
        num_restored_files: adds.len() as i64,
        removed_files_size: removes.iter().filter_map(|r| r.size).sum(),
        restored_files_size: adds.iter().map(|a| a.size).sum(),
    };

    let mut actions = Vec::with_capacity(adds.len() + removes.len() + 2);
    // Never downgrade the protocol: a reader of the new version must
    // understand everything either version uses.
    let (cp, tp) = (current_snapshot.protocol(), target_snapshot.protocol());
    if tp.min_reader_version() > cp.min_reader_version()
        || tp.min_writer_version() > cp.min_writer_version()
    {
        actions.push(Action::Protocol(tp.clone()));
    }
    actions.extend(adds.into_iter().map(Action::Add));
    actions.extend(removes.into_iter().map(Action::Remove));
    // The restored version's schema, properties and comment come back too.
    actions.push(Action::Metadata(target_snapshot.metadata().clone()));

    let operation_metrics = serde_json::json!({
        "tableSizeAfterRestore": metrics.table_size_after_restore.to_string(),
        "numOfFilesAfterRestore": metrics.num_of_files_after_restore.to_string(),
        "numRemovedFiles": metrics.num_removed_files.to_string(),
        "numRestoredFiles": metrics.num_restored_files.to_string(),
        "removedFilesSize": metrics.removed_files_size.to_string(),
        "restoredFilesSize": metrics.restored_files_size.to_string(),
    });
    let read_version = current_snapshot.version();
    let properties = crate::commit_properties_with([
        ("operationMetrics".to_string(), operation_metrics),
        ("readVersion".to_string(), read_version.into()),
    ]);
    let operation = DeltaOperation::Restore {
        version: Some(target_version),
        datetime: timestamp_ms,
    };
    let finalized = CommitBuilder::from(properties)
        .with_actions(actions)
        .with_max_retries(0)
        .build(Some(current_snapshot), current.log_store(), operation)
        .await
        .map_err(|e| Error::delta("restoring", name.to_string(), e))?;
    let mut restored = current.clone();
    restored.state = Some(finalized.snapshot());
    committed.finish(name, current.version(), restored).await;
    Ok(metrics)
}

/// How a partition filter compares a partition's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
}

impl From<FilterOp> for deltalake::FilterOp {
    fn from(op: FilterOp) -> Self {
        match op {
            FilterOp::Eq => Self::Eq,
            FilterOp::Ne => Self::Ne,
            FilterOp::Lt => Self::Lt,
            FilterOp::Le => Self::Le,
            FilterOp::Gt => Self::Gt,
            FilterOp::Ge => Self::Ge,
            FilterOp::In => Self::In,
            FilterOp::NotIn => Self::NotIn,
        }
    }
}

/// One conjunct of an OPTIMIZE `WHERE`: a partition column compared with
/// a value (`=`, `!=`, `<`, `<=`, `>`, `>=`) or a list (`IN`, `NOT IN`),
/// the values as partition values are written (text; `None` is NULL).
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionFilter {
    pub column: String,
    pub op: FilterOp,
    pub values: Vec<String>,
}

impl PartitionFilter {
    /// A filter no partition passes (`p = NULL`, `p NOT IN (…, NULL)`):
    /// `p IN ()`.
    pub fn none(column: String) -> Self {
        Self {
            column,
            op: FilterOp::In,
            values: Vec::new(),
        }
    }

    /// Whether no partition passes it. (delta-rs reads an empty list as
    /// no filter at all.)
    fn passes_none(&self) -> bool {
        self.op == FilterOp::In && self.values.is_empty()
    }
}

/// What OPTIMIZE is asked to do.
#[derive(Debug, Clone, Default)]
pub struct OptimizeRequest {
    /// Only files of the partitions these select (all of them together).
    pub filters: Vec<PartitionFilter>,
    /// Z-order by these columns (declared names) instead of compacting.
    pub zorder: Vec<String>,
    /// The z-order clusters a liquid-clustered table: `Some(full)`; only
    /// the files not clustered yet unless `full` (`OPTIMIZE t FULL`).
    pub clustering: Option<bool>,
}

/// Compacts (or z-orders) the table's small files into larger ones, in one
/// commit recorded as `OPTIMIZE`; nothing to do commits nothing. The new
/// files hold the same rows (the commit's removes and adds carry
/// `dataChange = false`), so a concurrent append never conflicts with it,
/// while a concurrent DELETE, UPDATE or MERGE that removed one of its
/// files does (40001, nothing committed).
pub async fn optimize(
    name: &TableName,
    table: crate::Table,
    state: Arc<SessionState>,
    request: &OptimizeRequest,
) -> Result<OptimizeMetrics> {
    let table = table.into_delta();
    if request.filters.iter().any(PartitionFilter::passes_none) {
        return Ok(OptimizeMetrics::default());
    }
    let _running = OptimizeGuard::take(name, &table)?;
    let filters = filter_literals(&request.filters);
    let kind = if request.zorder.is_empty() {
        OptimizeType::Compact
    } else {
        OptimizeType::ZOrder(request.zorder.clone())
    };
    let read = table.version();
    let committed = crate::CommitSink::of(state.config());
    let mut builder = table.optimize();
    if let Some(full) = request.clustering {
        builder = builder.with_liquid_clustering(full);
    }
    let (optimized, metrics) = builder
        .with_commit_properties(crate::commit_properties())
        .with_type(kind)
        .with_filters(&filters)
        .with_writer_properties(writer_properties())
        .with_session_state(state)
        .await
        .map_err(|e| Error::delta("optimizing", name.to_string(), e))?;
    if let Some(committed) = committed {
        committed.finish(name, read, optimized).await;
    }
    Ok(metrics)
}

/// The filters as delta-rs takes them.
fn filter_literals(
    filters: &[PartitionFilter],
) -> Vec<(&str, deltalake::FilterOp, FilterValue<'_>)> {
    filters
        .iter()
        .map(|f| {
            let value = match f.op {
                FilterOp::In | FilterOp::NotIn => {
                    FilterValue::Set(f.values.iter().map(String::as_str).collect())
                }
                _ => FilterValue::Scalar(f.values.first().map(String::as_str).unwrap_or("")),
            };
            (f.column.as_str(), f.op.into(), value)
        })
        .collect()
}

/// OPTIMIZE's metrics as Databricks reports them in its result and its
/// history (the times are the caller's).
pub fn optimize_metrics(m: &OptimizeMetrics) -> serde_json::Map<String, serde_json::Value> {
    let details = |d: &deltalake::operations::optimize::MetricDetails| {
        serde_json::json!({
            "min": if d.total_files == 0 { 0 } else { d.min },
            "max": d.max,
            "avg": d.avg,
            "totalFiles": d.total_files,
            "totalSize": d.total_size,
        })
    };
    match serde_json::json!({
        "numFilesAdded": m.num_files_added,
        "numFilesRemoved": m.num_files_removed,
        "filesAdded": details(&m.files_added),
        "filesRemoved": details(&m.files_removed),
        "partitionsOptimized": m.partitions_optimized,
        "zOrderStats": serde_json::Value::Null,
        "numBatches": m.num_batches,
        "totalConsideredFiles": m.total_considered_files,
        "totalFilesSkipped": m.total_files_skipped,
        "preserveInsertionOrder": m.preserve_insertion_order,
    }) {
        serde_json::Value::Object(metrics) => metrics,
        _ => serde_json::Map::new(),
    }
}

/// What `REORG TABLE … APPLY (PURGE)` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeMetrics {
    /// Files with a deletion vector, rewritten.
    pub files_removed: u64,
    pub files_added: u64,
    /// Rows their deletion vectors removed, now gone from the files.
    pub rows_purged: u64,
    pub bytes_removed: u64,
    pub bytes_added: u64,
}

/// `REORG TABLE t [WHERE partition predicate] APPLY (PURGE)`: every file
/// with a deletion vector (of the partitions `filters` select) is written
/// again without the rows it marks, in one commit recorded as `REORG`. The
/// files hold the same rows (`dataChange = false`, as OPTIMIZE's); nothing
/// to purge commits nothing.
pub async fn purge(
    name: &TableName,
    table: crate::Table,
    state: Arc<SessionState>,
    filters: &[PartitionFilter],
) -> Result<PurgeMetrics> {
    let table = table.into_delta();
    if filters.iter().any(PartitionFilter::passes_none) {
        return Ok(PurgeMetrics::default());
    }
    let _running = OptimizeGuard::take(name, &table)?;
    let snapshot = table
        .snapshot()
        .map_err(|e| Error::delta("purging", name.to_string(), e))?
        .snapshot()
        .clone();
    let log_store = table.log_store();
    let literals = filter_literals(filters);
    let predicate = if literals.is_empty() {
        None
    } else {
        Some(Arc::new(
            deltalake::conjunction_to_kernel_predicate(&literals, snapshot.schema().as_ref())
                .map_err(|e| Error::delta("purging", name.to_string(), e))?,
        ))
    };
    let views: Vec<LogicalFileView> = snapshot
        .file_views(log_store.as_ref(), predicate)
        .try_collect()
        .await
        .map_err(|e| Error::delta("purging", name.to_string(), e))?;
    let root = crate::write::files::table_root(log_store.as_ref());
    let mut metrics = PurgeMetrics::default();
    let mut ids = Vec::new();
    let mut removes = Vec::new();
    for view in views {
        let Some(dv) = view.deletion_vector_descriptor() else {
            continue;
        };
        let path = view.path();
        let url = root
            .join(&path)
            .map_err(|e| Error::Internal(format!("file path {path}: {e}")))?;
        ids.push(url.to_string());
        removes.push(view.remove_action(false));
        metrics.files_removed += 1;
        metrics.rows_purged += dv.cardinality.max(0) as u64;
        metrics.bytes_removed += view.size().max(0) as u64;
    }
    if ids.is_empty() {
        return Ok(metrics);
    }

    let provider = crate::read::provider::DeltaProvider::of_delta(name.clone(), table.clone())?;
    let rows = crate::write::rewrite::scan_files(
        &provider,
        datafusion::common::TableReference::bare(name.table.clone()),
        ids,
    )?;
    let width = provider.schema().fields().len();
    let ctx = datafusion::prelude::SessionContext::new_with_state(state.as_ref().clone());
    let reading = |source: datafusion::common::DataFusionError| Error::DataFusion {
        what: "purging deleted rows",
        source: Box::new(source),
    };
    let mut stream = ctx
        .execute_logical_plan(rows)
        .await
        .map_err(reading)?
        .execute_stream()
        .await
        .map_err(reading)?;
    let mut writer = crate::write::files::FileWriter::new(&name.to_string(), &snapshot, &log_store);
    while let Some(batch) = futures::StreamExt::next(&mut stream).await {
        let batch = batch.map_err(reading)?;
        let columns: Vec<usize> = (0..width).collect();
        let batch = batch.project(&columns).map_err(|e| reading(e.into()))?;
        writer.write(&batch).await?;
    }
    let mut adds = writer.finish().await?;
    for add in &mut adds {
        add.data_change = false;
        metrics.files_added += 1;
        metrics.bytes_added += add.size.max(0) as u64;
    }

    let read = table.version();
    let committed = CommitSink::of(state.config());
    let properties = crate::commit_properties_with([
        (
            crate::commit::operation_name::KEY.to_string(),
            serde_json::Value::String("REORG".into()),
        ),
        (
            "operationMetrics".to_string(),
            serde_json::json!({
                "numRemovedFiles": metrics.files_removed.to_string(),
                "numAddedFiles": metrics.files_added.to_string(),
                "numDeletionVectorsRemoved": metrics.files_removed.to_string(),
                "numRemovedBytes": metrics.bytes_removed.to_string(),
                "numAddedBytes": metrics.bytes_added.to_string(),
            }),
        ),
    ]);
    let operation = DeltaOperation::Optimize {
        target_size: 0,
        predicate: None,
    };
    let purged = crate::write::rewrite::commit(
        "purging",
        &name.to_string(),
        &table,
        &snapshot,
        crate::write::rewrite::Changes {
            removed: removes,
            added: adds,
        },
        operation,
        properties,
    )
    .await?;
    if let Some(committed) = committed {
        committed.finish(name, read, purged).await;
    }
    Ok(metrics)
}

/// Tables an OPTIMIZE of this server is rewriting. delta-rs' conflict
/// check ignores removes without `dataChange`, so two OPTIMIZEs of the same
/// files both commit and every row is then there twice; while one runs, a
/// second on the same table is refused (40001) as Databricks refuses it
/// (`DELTA_CONCURRENT_DELETE_DELETE`). This guards one server only.
static OPTIMIZING: std::sync::LazyLock<std::sync::Mutex<HashSet<String>>> =
    std::sync::LazyLock::new(Default::default);

/// The mark of one running OPTIMIZE, removed when it ends (or fails).
struct OptimizeGuard(String);

impl OptimizeGuard {
    fn take(name: &TableName, table: &DeltaTable) -> Result<Self> {
        let key = table.log_store().root_url().to_string();
        let mut running = OPTIMIZING.lock().unwrap_or_else(|p| p.into_inner());
        if !running.insert(key.clone()) {
            return Err(Error::ConcurrentOptimize {
                table: name.to_string(),
            });
        }
        Ok(Self(key))
    }
}

impl Drop for OptimizeGuard {
    fn drop(&mut self) {
        let mut running = OPTIMIZING.lock().unwrap_or_else(|p| p.into_inner());
        running.remove(&self.0);
    }
}

/// What VACUUM is asked to do.
#[derive(Debug, Clone, Default)]
pub struct VacuumRequest {
    /// `RETAIN n HOURS`, in milliseconds; the table's
    /// `delta.deletedFileRetentionDuration` (7 days) without it.
    pub retain_ms: Option<i64>,
    /// Refuse a retention below the table's (Databricks'
    /// `spark.databricks.delta.retentionDurationCheck.enabled`).
    pub check_retention: bool,
    /// List the files, delete nothing.
    pub dry_run: bool,
    /// `LITE`: only files the log removed; otherwise (`FULL`, Databricks'
    /// default) every file of the table's folder no version needs.
    pub lite: bool,
}

/// What VACUUM found: the files deleted (or, in a dry run, to delete), as
/// URLs.
#[derive(Debug, Clone, Default)]
pub struct VacuumOutcome {
    pub files: Vec<String>,
}

/// The table's `delta.deletedFileRetentionDuration`, in milliseconds.
pub(crate) fn deleted_file_retention_ms(name: &TableName, table: &DeltaTable) -> Result<i64> {
    let retention = snapshot(name, table)?
        .table_properties()
        .deleted_file_retention_duration();
    Ok(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX))
}

/// Deletes the files no version younger than the retention needs. A run
/// that deletes files commits `VACUUM START` before and `VACUUM END`
/// after (as Databricks logs it); a dry run or one with nothing to delete
/// commits nothing. A retention below the table's is refused unless the
/// check is off.
pub async fn vacuum(
    name: &TableName,
    table: crate::Table,
    request: &VacuumRequest,
    committed: &CommitSink,
) -> Result<VacuumOutcome> {
    let table = table.into_delta();
    let minimum = deleted_file_retention_ms(name, &table)?;
    let retain = request.retain_ms.unwrap_or(minimum);
    if retain < 0 {
        return Err(Error::VacuumNegativeRetention {
            table: name.to_string(),
        });
    }
    if request.check_retention && retain < minimum {
        return Err(Error::VacuumRetentionTooShort {
            table: name.to_string(),
            hours: retain as f64 / 3_600_000.0,
            minimum_hours: (minimum + 3_599_999) / 3_600_000,
        });
    }
    let root = table.log_store().root_url().clone();
    let read = table.version();
    let (vacuumed, metrics) = table
        .vacuum()
        .with_commit_properties(crate::commit_properties())
        .with_retention_period(chrono::Duration::milliseconds(retain))
        .with_enforce_retention_duration(request.check_retention)
        .with_dry_run(request.dry_run)
        .with_mode(if request.lite {
            VacuumMode::Lite
        } else {
            VacuumMode::Full
        })
        .await
        .map_err(|e| Error::delta("vacuuming", name.to_string(), e))?;
    committed.finish(name, read, vacuumed).await;
    let base = if root.path().ends_with('/') {
        root
    } else {
        let mut r = root;
        let path = format!("{}/", r.path());
        r.set_path(&path);
        r
    };
    let mut files: Vec<String> = metrics
        .files_deleted
        .iter()
        .map(|f| {
            base.join(f)
                .map(|u| u.to_string())
                .unwrap_or_else(|_| f.clone())
        })
        .collect();
    // delta-rs lists a file once per remove of it in the log (a file
    // removed, restored and removed again is listed twice).
    files.sort();
    files.dedup();
    Ok(VacuumOutcome { files })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ids, rows};
    use datafusion::prelude::SessionContext;
    use deltalake::kernel::{DataType, PrimitiveType, StructField};

    /// A table of three one-row files (versions 0 to 3).
    async fn table_of_three_files(dir: &std::path::Path) -> DeltaTable {
        let url = url::Url::from_directory_path(dir).unwrap();
        let mut table = DeltaTable::try_from_url(url).await.unwrap();
        table = table
            .create()
            .with_columns([StructField::new(
                "id",
                DataType::Primitive(PrimitiveType::Integer),
                true,
            )])
            .await
            .unwrap();
        for id in 1..=3 {
            table = table.write([rows(&[id])]).await.unwrap();
        }
        table
    }

    fn name() -> TableName {
        TableName::new("default", "t").unwrap()
    }

    fn state() -> Arc<SessionState> {
        Arc::new(SessionContext::new().state())
    }

    #[tokio::test]
    async fn optimize_conflicts_with_a_concurrent_delete_of_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let stale = table_of_three_files(dir.path()).await;
        // Another writer deletes a row (its file) after OPTIMIZE read version 3.
        let deleted = stale
            .clone()
            .delete()
            .with_predicate("id = 2")
            .await
            .unwrap()
            .0;
        assert_eq!(deleted.version(), Some(4));
        let err = optimize(
            &name(),
            crate::Table::new(stale),
            state(),
            &OptimizeRequest::default(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, Error::CommitConflict { .. }),
            "expected a conflict, got {err}"
        );
        assert_eq!(err.sqlstate(), crate::SqlState::SERIALIZATION_FAILURE);
        // Nothing committed: still version 4, and the delete holds.
        let mut latest = deleted.clone();
        latest.update_state().await.unwrap();
        assert_eq!(latest.version(), Some(4));
        assert_eq!(ids(&latest).await, vec![1, 3]);
    }

    #[tokio::test]
    async fn optimize_does_not_conflict_with_a_concurrent_append() {
        let dir = tempfile::tempdir().unwrap();
        let stale = table_of_three_files(dir.path()).await;
        let appended = stale.clone().write([rows(&[4])]).await.unwrap();
        assert_eq!(appended.version(), Some(4));
        let metrics = optimize(
            &name(),
            crate::Table::new(stale),
            state(),
            &OptimizeRequest::default(),
        )
        .await
        .unwrap();
        assert_eq!((metrics.num_files_removed, metrics.num_files_added), (3, 1));
        let mut latest = appended.clone();
        latest.update_state().await.unwrap();
        assert_eq!(latest.version(), Some(5));
        assert_eq!(ids(&latest).await, vec![1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn restore_planned_against_an_old_version_commits_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let current = table_of_three_files(dir.path()).await;
        let mut target = current.clone();
        target.load_version(1).await.unwrap();
        // Someone commits after the restore read version 3.
        let appended = current.clone().write([rows(&[4])]).await.unwrap();
        let catalog = crate::Catalog::open(dir.path().to_str().unwrap(), Default::default())
            .await
            .unwrap();
        let committed = crate::CommitSink::new(catalog);
        let err = restore(
            &name(),
            &crate::Table::new(current.clone()),
            &crate::Table::new(target.clone()),
            None,
            &committed,
        )
        .await
        .unwrap_err();
        assert_eq!(err.sqlstate(), crate::SqlState::SERIALIZATION_FAILURE);
        let mut latest = appended;
        latest.update_state().await.unwrap();
        assert_eq!(latest.version(), Some(4));
        assert_eq!(ids(&latest).await, vec![1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn two_optimizes_at_once_do_not_both_commit() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_of_three_files(dir.path()).await;
        // The first holds the table while it runs; a second is refused.
        let guard = OptimizeGuard::take(&name(), &table).unwrap();
        let err = optimize(
            &name(),
            crate::Table::new(table.clone()),
            state(),
            &OptimizeRequest::default(),
        )
        .await
        .unwrap_err();
        assert_eq!(err.sqlstate(), crate::SqlState::SERIALIZATION_FAILURE);
        drop(guard);
        optimize(
            &name(),
            crate::Table::new(table.clone()),
            state(),
            &OptimizeRequest::default(),
        )
        .await
        .unwrap();
        assert_eq!(ids(&table).await, vec![1, 2, 3]);
    }
}
