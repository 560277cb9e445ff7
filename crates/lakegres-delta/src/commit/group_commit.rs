//! Group commit: blind appends to one table that this server runs at the
//! same time become one Delta version, as PostgreSQL flushes the WAL of
//! concurrent transactions together.
//!
//! Without it every INSERT commits alone: with several clients appending to
//! one table, each commit races the others for the next version, loses,
//! reads the log again and retries, so four clients did less than one.
//!
//! A statement writes its data files on its own (delta-rs' `WriteBuilder`),
//! then hands its actions to the table's [`Queue`] through the builder's
//! commit gate ([`StatementGate`]). Whoever holds the table's commit lock
//! commits every waiting append it can merge in one commit and answers each;
//! the others wait for the lock meanwhile, so while one commit is written
//! the next group gathers. Each statement is answered only after the commit
//! that holds it is durable, a failed commit fails every statement in it,
//! and a statement withdrawn before a commit took it (cancelled, timed out,
//! its client gone) is left out of every commit.
//!
//! Only what can be merged without changing any statement's meaning is
//! grouped: appends to an existing table (no overwrite, REPLACE WHERE,
//! schema change, identity values, COPY INTO's record of loaded files), by
//! the same user with the same `commitInfo`. The commit reads at the oldest
//! version any of its statements read, so a concurrent change of schema or
//! constraints that one of them did not see fails the commit as a conflict,
//! as it would have failed that statement alone.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use datafusion::arrow::record_batch::RecordBatch;
use deltalake::kernel::transaction::{CommitBuilder, CommitGate, GatedCommit};
use deltalake::kernel::Action;
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::table::state::DeltaTableState;
use deltalake::{DeltaResult, DeltaTable, DeltaTableError};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::catalog::{Catalog, TableName};
use crate::commit::queues::{lock, Grouped, Queue, Waiting, Withdraw, TAKEN, WAITING};
use crate::error::SharedError;

/// Appends one commit takes at most: its log entry stays small enough to
/// read and replay quickly.
const MOST_PER_COMMIT: usize = 1_000;

/// The `commitInfo` field delta-rs fills with the operation's metrics; the
/// grouped commit carries their sums.
pub(crate) const METRICS: &str = "operationMetrics";

/// The `commitInfo` field saying how many statements a grouped commit holds
/// (absent when it holds one).
pub const STATEMENTS: &str = "statementsInCommit";

/// The commit gate of one statement's write: sends an append that can be
/// grouped to its table's queue and keeps what came back for the
/// statement's record ([`crate::CommitSink`]).
pub(crate) struct StatementGate {
    catalog: Arc<Catalog>,
    name: TableName,
    outcome: Arc<Mutex<Option<Grouped>>>,
}

impl StatementGate {
    pub fn new(catalog: Arc<Catalog>, name: TableName) -> Arc<Self> {
        Arc::new(Self {
            catalog,
            name,
            outcome: Arc::new(Mutex::new(None)),
        })
    }

    /// The grouped commit that held the write, if it went through one.
    pub fn outcome(&self) -> Option<Grouped> {
        self.outcome.lock().ok()?.clone()
    }
}

impl CommitGate for StatementGate {
    fn commit(
        &self,
        commit: GatedCommit,
    ) -> Result<BoxFuture<'static, DeltaResult<DeltaTableState>>, GatedCommit> {
        if !groupable(&commit) {
            return Err(commit);
        }
        let queue = self
            .catalog
            .groups
            .queue(commit.log_store.root_url().as_str());
        let catalog = Arc::clone(&self.catalog);
        let name = self.name.clone();
        let outcome = Arc::clone(&self.outcome);
        Ok(Box::pin(async move {
            let grouped = submit(queue, catalog, name, commit, None).await?;
            let state = grouped.state.clone();
            if let Ok(mut slot) = outcome.lock() {
                *slot = Some(grouped);
            }
            Ok(state)
        }))
    }
}

/// Whether `commit` is an append that can share a commit with others.
fn groupable(commit: &GatedCommit) -> bool {
    let append = matches!(
        &commit.operation,
        DeltaOperation::Write {
            mode: SaveMode::Append,
            predicate: None,
            ..
        }
    );
    append
        && commit.read_snapshot.is_some()
        && !commit.properties.has_extra_actions()
        && commit
            .actions
            .iter()
            .all(|a| matches!(a, Action::Add(add) if add.data_change))
}

/// Queues `commit` and waits for the commit that holds it: whoever gets the
/// table's lock commits what is waiting; a request still waiting after a
/// commit that could not take it (another user's group) tries again.
pub(crate) async fn submit(
    queue: Arc<Queue>,
    catalog: Arc<Catalog>,
    name: TableName,
    commit: GatedCommit,
    rows: Option<RecordBatch>,
) -> DeltaResult<Grouped> {
    let state = Arc::new(AtomicU8::new(WAITING));
    let _withdraw = Withdraw(Arc::clone(&state));
    let (answer, answered) = oneshot::channel();
    lock(&queue.waiting).push(Waiting {
        commit,
        rows,
        state: Arc::clone(&state),
        answer,
    });
    let queued = std::time::Instant::now();
    while state.load(Ordering::Acquire) == WAITING {
        let held = Arc::clone(&queue.lock).lock_owned().await;
        // Taken by the commit that held the lock before: that commit
        // answers it. Committing what arrived since would put this task
        // between the new statements and the lock, one commit each.
        if state.load(Ordering::Acquire) != WAITING {
            break;
        }
        let group = take_group(&queue);
        if group.is_empty() {
            continue;
        }
        tracing::trace!(table = %name, statements = group.len(), waited_us = queued.elapsed().as_micros() as u64, "committing a group");
        // Its own task: the commit completes and answers every statement
        // in it even if this one is cancelled meanwhile.
        let catalog = Arc::clone(&catalog);
        let name = name.clone();
        let queue_of_group = Arc::clone(&queue);
        let committing = tokio::spawn(async move {
            commit_group(&queue_of_group, group, &catalog, &name).await;
            drop(held);
            queue_of_group.landed.notify_waiters();
        });
        let _ = committing.await;
    }
    match answered.await {
        Ok(Ok(grouped)) => Ok(grouped),
        Ok(Err(shared)) => Err(DeltaTableError::GenericError {
            source: Box::new(SharedError(shared)),
        }),
        Err(_) => Err(DeltaTableError::Generic(format!(
            "the group commit of {name} ended without an answer"
        ))),
    }
}

/// Takes the oldest waiting request and the others that can join it,
/// leaving the rest waiting; withdrawn requests are dropped.
fn take_group(queue: &Queue) -> Vec<Waiting> {
    let mut waiting = lock(&queue.waiting);
    let mut group: Vec<Waiting> = Vec::new();
    let mut rest = Vec::new();
    for request in waiting.drain(..) {
        let joins = group.len() < MOST_PER_COMMIT
            && group.first().is_none_or(|first| same_kind(first, &request));
        if !joins {
            rest.push(request);
        } else if request
            .state
            .compare_exchange(WAITING, TAKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            group.push(request);
        }
    }
    *waiting = rest;
    group
}

/// Two appends share a commit when the log would record them alike: the
/// same operation and the same `commitInfo` fields but for the metrics —
/// and, when both bring rows, rows of the same columns, which go into one
/// file.
fn same_kind(a: &Waiting, b: &Waiting) -> bool {
    let rows_alike = match (&a.rows, &b.rows) {
        (Some(x), Some(y)) => x.schema() == y.schema(),
        _ => true,
    };
    rows_alike && same_commit_kind(&a.commit, &b.commit)
}

fn same_commit_kind(a: &GatedCommit, b: &GatedCommit) -> bool {
    let fields = |c: &GatedCommit| {
        let mut fields: Vec<(String, Value)> = c
            .properties
            .app_metadata()
            .iter()
            .filter(|(k, _)| k.as_str() != METRICS)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        fields.sort_by(|x, y| x.0.cmp(&y.0));
        fields
    };
    let table = |c: &GatedCommit| {
        c.read_snapshot
            .as_ref()
            .map(|s| s.metadata().id().to_string())
    };
    table(a) == table(b)
        && a.operation.name() == b.operation.name()
        && a.operation.operation_parameters().ok() == b.operation.operation_parameters().ok()
        && fields(a) == fields(b)
}

/// Commits `group` as one version and answers each of its statements.
async fn commit_group(queue: &Queue, group: Vec<Waiting>, catalog: &Catalog, name: &TableName) {
    let Some(first) = group.first() else {
        return;
    };
    let statements = group.len();
    let log_store = Arc::clone(&first.commit.log_store);
    let operation = first.commit.operation.clone();
    let operation_id = first.commit.operation_id;
    let mut metadata = first.commit.properties.app_metadata().clone();
    metadata.insert(
        METRICS.to_string(),
        summed_metrics(group.iter().map(|w| w.commit.properties.app_metadata())),
    );
    if statements > 1 {
        metadata.insert(STATEMENTS.to_string(), Value::from(statements));
    }
    // Conflicts are checked from the oldest version any statement read
    // (see the module's comment) — or from the newest, when every version
    // between is an append of this queue's, which conflicts with none; the
    // commit then usually lands right after the version it read, and
    // delta-rs extends that version's file list instead of replaying it.
    let reads = group.iter().filter_map(|w| w.commit.read_snapshot.as_ref());
    let (Some(oldest), Some(newest)) = (
        reads.clone().min_by_key(|s| s.version()),
        reads.max_by_key(|s| s.version()),
    ) else {
        return;
    };
    // Past the newest read, the table as this queue's latest commit left
    // it, when that is later still: the commit does not race for a version
    // it already lost.
    let table_id = newest.metadata().id().to_string();
    let read = match queue.last(&table_id) {
        Some(last)
            if last.version() > newest.version()
                && queue.only_ours(&table_id, oldest.version(), last.version()) =>
        {
            last
        }
        _ if queue.only_ours(&table_id, oldest.version(), newest.version()) => newest.clone(),
        _ => oldest.clone(),
    };
    let mut own = Vec::with_capacity(statements);
    let mut actions = Vec::new();
    let mut answers = Vec::with_capacity(statements);
    let mut rows = Vec::new();
    for waiting in group {
        let (files, bytes) = added(&waiting.commit.actions);
        own.push((
            files,
            bytes,
            waiting.rows.as_ref().map_or(0, |r| r.num_rows()),
        ));
        actions.extend(waiting.commit.actions);
        rows.extend(waiting.rows);
        answers.push(waiting.answer);
    }
    // The statements' own rows, in one file per partition; a failure here
    // fails every statement of the group, as a failed commit does.
    if !rows.is_empty() {
        let started = std::time::Instant::now();
        match write_rows(&name.to_string(), &read, &log_store, &rows).await {
            Ok(adds) => {
                let (files, bytes) = added(&adds);
                let total: usize = rows.iter().map(RecordBatch::num_rows).sum();
                for (own_files, own_bytes, own_rows) in &mut own {
                    if *own_rows > 0 {
                        // The files its rows went into, and its share of
                        // their bytes.
                        *own_files += files;
                        *own_bytes += bytes * *own_rows as u64 / total.max(1) as u64;
                    }
                }
                if let Some(Value::Object(metrics)) = metadata.get_mut(METRICS) {
                    let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    for (key, more) in [("num_added_files", files), ("execution_time_ms", ms)] {
                        let before = metrics.get(key).and_then(Value::as_u64).unwrap_or(0);
                        metrics.insert(key.to_string(), Value::from(before + more));
                    }
                }
                actions.extend(adds);
            }
            Err(e) => {
                tracing::debug!(table = %name, statements, error = %e, "writing a group's rows failed");
                let shared = Arc::new(e);
                for answer in answers {
                    let _ = answer.send(Err(Arc::clone(&shared)));
                }
                return;
            }
        }
    }
    let committed = CommitBuilder::from(crate::commit::upkeep::properties_of(metadata))
        .with_actions(actions)
        .with_operation_id(operation_id)
        .build(Some(&read), Arc::clone(&log_store), operation)
        .await;
    match committed {
        Ok(finalized) => {
            queue.committed(finalized.snapshot.snapshot());
            let mut table = DeltaTable::new(log_store);
            table.state = Some(finalized.snapshot.clone());
            // Into the cache before any statement is answered, so each
            // one's next statement reads its own rows.
            catalog.adopt(name, &table).await;
            tokio::spawn(async move {
                crate::commit::upkeep::after_commit(&table).await;
            });
            for (answer, (files_added, bytes_added, _)) in answers.into_iter().zip(own) {
                let _ = answer.send(Ok(Grouped {
                    state: finalized.snapshot.clone(),
                    version: finalized.version,
                    files_added,
                    bytes_added,
                    statements,
                }));
            }
        }
        Err(e) => {
            tracing::debug!(table = %name, statements, error = %e, "a group commit failed");
            let shared = Arc::new(e);
            for answer in answers {
                let _ = answer.send(Err(Arc::clone(&shared)));
            }
        }
    }
}

/// Writes the statements' `rows` to new data files of the table at `read`.
async fn write_rows(
    name: &str,
    read: &deltalake::kernel::EagerSnapshot,
    log_store: &deltalake::logstore::LogStoreRef,
    rows: &[RecordBatch],
) -> DeltaResult<Vec<Action>> {
    let mut writer = crate::write::files::FileWriter::new(name, read, log_store);
    // delta-rs' own error, where there is one, keeps its SQLSTATE.
    let failed = |e: crate::Error| match e {
        crate::Error::Delta { source, .. } | crate::Error::CommitConflict { source, .. } => *source,
        other => DeltaTableError::Generic(other.to_string()),
    };
    // One batch: the encoder handles one large batch faster than many
    // one-row ones.
    let schema = rows[0].schema();
    let batch = datafusion::arrow::compute::concat_batches(&schema, rows)
        .map_err(|source| DeltaTableError::Arrow { source })?;
    writer.write(&batch).await.map_err(failed)?;
    Ok(writer
        .finish()
        .await
        .map_err(failed)?
        .into_iter()
        .map(Action::Add)
        .collect())
}

/// The data files and bytes `actions` add.
fn added(actions: &[Action]) -> (u64, u64) {
    actions.iter().fold((0, 0), |(files, bytes), a| match a {
        Action::Add(add) => (files + 1, bytes + add.size.max(0) as u64),
        _ => (files, bytes),
    })
}

/// The sum of each numeric field of the statements' `operationMetrics`.
fn summed_metrics<'a>(all: impl Iterator<Item = &'a HashMap<String, Value>>) -> Value {
    let mut sums: serde_json::Map<String, Value> = serde_json::Map::new();
    for metrics in all.filter_map(|m| m.get(METRICS)?.as_object()) {
        for (key, value) in metrics {
            let Some(n) = value.as_u64() else {
                sums.entry(key.clone()).or_insert_with(|| value.clone());
                continue;
            };
            let sum = sums.get(key).and_then(Value::as_u64).unwrap_or(0) + n;
            sums.insert(key.clone(), Value::from(sum));
        }
    }
    Value::Object(sums)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::shared_cause;
    use serde_json::json;

    #[test]
    fn metrics_of_a_group_are_summed() {
        let a: HashMap<String, Value> = [(
            METRICS.to_string(),
            json!({"num_added_rows": 2, "num_added_files": 1, "note": "x"}),
        )]
        .into();
        let b: HashMap<String, Value> = [(
            METRICS.to_string(),
            json!({"num_added_rows": 3, "num_added_files": 1}),
        )]
        .into();
        assert_eq!(
            summed_metrics([&a, &b].into_iter()),
            json!({"num_added_rows": 5, "num_added_files": 2, "note": "x"})
        );
    }

    #[test]
    fn a_shared_error_is_seen_through() {
        let shared = Arc::new(DeltaTableError::VersionAlreadyExists(3));
        let wrapped = DeltaTableError::GenericError {
            source: Box::new(SharedError(shared)),
        };
        assert!(matches!(
            shared_cause(&wrapped),
            DeltaTableError::VersionAlreadyExists(3)
        ));
    }
}
