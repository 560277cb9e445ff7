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
use crate::commit::transaction::Transaction;
use crate::error::Result;

/// What one write committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub table: TableName,
    pub version: u64,
    /// Data files the commit added, and their bytes.
    pub files_added: u64,
    pub bytes_added: u64,
    /// Statements the commit holds: more than one when a group commit
    /// took this write with others (see [`crate::commit::group_commit`]),
    /// or a transaction block's statements on the table.
    pub statements_in_commit: usize,
    /// A transaction block's statements the commit holds (INSERT, DELETE
    /// …); empty for a statement's own commit.
    pub statements: Vec<String>,
}

/// Where one session's writes hand their commits: the statement context's
/// commit sink. Every write ends here, with the commit record as a value
/// (also returned to the write's caller where the write is a call of this
/// crate); the statement's pipeline drains the records when it ends, for
/// the audit line and the metrics, whether the statement succeeded or not.
pub struct CommitSink {
    catalog: Arc<Catalog>,
    commits: Mutex<Vec<Commit>>,
    /// The session's open transaction: its statements read and write the
    /// tables through it, their commits staged (`crate::commit::staged`),
    /// so nothing of them may reach the catalog's shared cache, the log's
    /// upkeep or the group commits other sessions share.
    transaction: Mutex<Option<Arc<Transaction>>>,
    /// What the running statement, or the open block, has read.
    reads: Arc<crate::Reads>,
}

impl std::fmt::Debug for CommitSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitSink")
            .field("in_transaction", &self.in_transaction())
            .finish_non_exhaustive()
    }
}

impl CommitSink {
    pub fn new(catalog: Arc<Catalog>) -> Arc<Self> {
        Arc::new(Self {
            catalog,
            commits: Mutex::new(Vec::new()),
            transaction: Mutex::new(None),
            reads: Arc::new(crate::Reads::default()),
        })
    }

    /// Opens a transaction: from now on the session's statements read each
    /// table as of their first read of it, and stage their writes, until
    /// [`Self::commit_transaction`] or [`Self::rollback_transaction`].
    pub fn begin_transaction(&self) {
        if let Ok(mut open) = self.transaction.lock() {
            open.get_or_insert_with(|| Arc::new(Transaction::new()));
        }
    }

    fn transaction(&self) -> Option<Arc<Transaction>> {
        self.transaction.lock().ok()?.clone()
    }

    /// Whether the session's writes are staged in an open transaction.
    pub fn in_transaction(&self) -> bool {
        self.transaction().is_some()
    }

    /// The catalog as the session's statements see it: through the open
    /// transaction, if any.
    pub fn session_catalog(&self) -> crate::SessionCatalog {
        crate::SessionCatalog::new(
            Arc::clone(&self.catalog),
            self.transaction(),
            Arc::clone(&self.reads),
        )
    }

    /// `name` as the session's statements read and write it: through the
    /// open transaction, or its latest committed version.
    pub async fn load_table(&self, name: &TableName) -> Result<crate::Table> {
        self.session_catalog().load_table(name).await
    }

    /// Ends the open transaction by committing what it staged (nothing
    /// when none is open); the commits made.
    pub async fn commit_transaction(&self) -> Result<Vec<Commit>> {
        let open = self.transaction.lock().ok().and_then(|mut t| t.take());
        self.reads.clear();
        match open {
            Some(transaction) => transaction.commit(&self.catalog, self).await,
            None => Ok(Vec::new()),
        }
    }

    /// The open transaction, for its savepoints.
    pub fn open_transaction(&self) -> Option<Arc<Transaction>> {
        self.transaction()
    }

    /// Ends the open transaction, applying nothing of it.
    pub fn rollback_transaction(&self) {
        if let Ok(mut open) = self.transaction.lock() {
            open.take();
        }
        self.reads.clear();
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
        self.finish_with(name, read, table, Vec::new()).await
    }

    /// [`Self::finish`] of a transaction block's commit to `name`, which
    /// holds the block's `statements` on it.
    pub(crate) async fn finish_with(
        &self,
        name: &TableName,
        read: Option<u64>,
        table: DeltaTable,
        statements: Vec<String>,
    ) -> Option<Commit> {
        let version = table.version().filter(|v| Some(*v) > read)?;
        if self.in_transaction() {
            // A staged commit: no version anyone will see, so no record;
            // COMMIT records the block's.
            return Some(Commit {
                table: name.clone(),
                version,
                files_added: 0,
                bytes_added: 0,
                statements_in_commit: 1,
                statements: Vec::new(),
            });
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
            statements_in_commit: statements.len().max(1),
            statements,
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
    /// A statement starts: outside a block, what earlier statements read
    /// does not bind it.
    pub fn new_statement(&self) {
        if !self.in_transaction() {
            self.reads.clear();
        }
    }

    pub fn drain(&self) -> Vec<Commit> {
        // A block reads on; a statement of its own is over.
        if !self.in_transaction() {
            self.reads.clear();
        }
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
