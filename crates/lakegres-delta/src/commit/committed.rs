//! The end of every write's commit path ([`CommitSink::finish`]) and what it
//! leaves for the statement ([`Commit`]).
//!
//! delta-rs' builders (and our own commits) return the table at the version
//! they committed. Every write of this crate hands that table to the
//! session's [`CommitSink`] — a DataFusion config extension, as
//! [`crate::catalog::grants::Principal`] is, so DataFusion's DML execs reach it as
//! well as our own write paths — which then, in one place:
//! - takes it into the catalog's cache ([`crate::Catalog::adopt`]), so
//!   neither the statement nor the next one reads the log again (on an
//!   object store, a LIST and two GETs of the commit the server had just
//!   written);
//! - starts its checkpoint and log clean-up in the background when due, so
//!   a committed statement never reports their failure;
//! - keeps the [`Commit`] record — the version, the data files and bytes it
//!   added — for the statement's audit line and metrics.

use std::sync::{Arc, Mutex};

use datafusion::prelude::SessionConfig;
use deltalake::DeltaTable;

use crate::catalog::{Catalog, TableName};

/// What one write committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub table: TableName,
    pub version: u64,
    /// Data files the commit added, and their bytes.
    pub files_added: u64,
    pub bytes_added: u64,
    /// Statements the commit holds: more than one when a group commit
    /// took this write with others (see [`crate::commit::group_commit`]).
    pub statements_in_commit: usize,
}

/// Where one session's writes hand their commits: the statement context's
/// commit sink. Every write ends here, with the commit record as a value
/// (also returned to the write's caller where the write is a call of this
/// crate); the statement's pipeline drains the records when it ends, for
/// the audit line and the metrics, whether the statement succeeded or not.
pub struct CommitSink {
    catalog: Arc<Catalog>,
    commits: Mutex<Vec<Commit>>,
    /// The sink of a transaction's statements: their commits are staged
    /// (`crate::commit::staged`), so nothing of them may reach the
    /// catalog's shared cache or the log's upkeep.
    staging: bool,
}

impl CommitSink {
    pub fn new(catalog: Arc<Catalog>) -> Arc<Self> {
        Arc::new(Self {
            catalog,
            commits: Mutex::new(Vec::new()),
            staging: false,
        })
    }

    /// The sink of a transaction's writes, which commit to its staged logs.
    pub fn staging(catalog: Arc<Catalog>) -> Arc<Self> {
        Arc::new(Self {
            catalog,
            commits: Mutex::new(Vec::new()),
            staging: true,
        })
    }

    /// The sink of the session whose statement runs with `config`.
    pub fn of(config: &SessionConfig) -> Option<Arc<Self>> {
        config.get_extension::<CommitSink>()
    }

    /// Ends a write's commit path: `table` is `name` as the write left it,
    /// which read the table at `read` (`None`: the write created it). A
    /// write that committed nothing (its table is still at `read`) has no
    /// record.
    pub(crate) async fn finish(
        &self,
        name: &TableName,
        read: Option<u64>,
        table: DeltaTable,
    ) -> Option<Commit> {
        let version = table.version().filter(|v| Some(*v) > read)?;
        if self.staging {
            let commit = Commit {
                table: name.clone(),
                version,
                files_added: 0,
                bytes_added: 0,
                statements_in_commit: 1,
            };
            self.record(commit.clone());
            return Some(commit);
        }
        let entry = self.catalog.adopt(name, &table).await;
        let (files_added, bytes_added) = entry.as_deref().map(added_files).unwrap_or((0, 0));
        // Off the statement's path: the client has its answer already.
        tokio::spawn(async move {
            crate::commit::upkeep::after_commit(&table).await;
        });
        let commit = Commit {
            table: name.clone(),
            version,
            files_added,
            bytes_added,
            statements_in_commit: 1,
        };
        self.record(commit.clone());
        Some(commit)
    }

    /// The catalog the session's statements run against.
    pub(crate) fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Takes the record of a commit made elsewhere: by a group commit (see
    /// [`crate::commit::group_commit`]), which took the table into the
    /// cache and started the log's upkeep already.
    pub(crate) fn record(&self, commit: Commit) {
        if let Ok(mut commits) = self.commits.lock() {
            commits.push(commit);
        }
    }

    /// The running statement's commits, in the order they were made; the
    /// sink is empty afterwards, for the next statement.
    pub fn drain(&self) -> Vec<Commit> {
        self.commits
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }
}

/// The data files a commit adds and their bytes, from its log entry.
fn added_files(commit: &[u8]) -> (u64, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for line in commit.split(|b| *b == b'\n') {
        let Ok(action) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        if let Some(add) = action.get("add") {
            files += 1;
            bytes += add
                .get("size")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
        }
    }
    (files, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_entry_counts_its_added_files() {
        let entry = concat!(
            r#"{"commitInfo":{"operation":"WRITE"}}"#,
            "\n",
            r#"{"add":{"path":"a.parquet","size":100}}"#,
            "\n",
            r#"{"remove":{"path":"b.parquet","size":7}}"#,
            "\n",
            r#"{"add":{"path":"c.parquet","size":20}}"#,
        );
        assert_eq!(added_files(entry.as_bytes()), (2, 120));
        assert_eq!(added_files(b""), (0, 0));
    }
}
