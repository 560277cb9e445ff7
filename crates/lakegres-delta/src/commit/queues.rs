//! Each table's queue of appends waiting for a grouped commit
//! (`group_commit.rs` commits them), and what this server's own commits
//! left: kept in the catalog, so a statement that loads a table takes the
//! table as this server's latest commit left it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use datafusion::arrow::record_batch::RecordBatch;
use deltalake::kernel::transaction::GatedCommit;
use deltalake::table::state::DeltaTableState;
use deltalake::{DeltaTable, DeltaTableError};
use tokio::sync::oneshot;

/// Each table's queue on this server, by table URL.
#[derive(Default)]
pub(crate) struct Groups {
    queues: Mutex<HashMap<String, Arc<Queue>>>,
}

impl Groups {
    pub(crate) fn queue(&self, url: &str) -> Arc<Queue> {
        Arc::clone(lock(&self.queues).entry(url.to_string()).or_default())
    }

    /// The table as this server's latest grouped commit to it left it, when
    /// that is newer than `table`: a statement that finds its cached table
    /// one commit behind takes it instead of replaying the table's files
    /// (with concurrent appends, most statements plan while a commit lands).
    pub(crate) fn newer(&self, table: &DeltaTable) -> Option<DeltaTableState> {
        let snapshot = table.snapshot().ok()?;
        let queue = lock(&self.queues)
            .get(table.log_store().root_url().as_str())
            .cloned()?;
        queue
            .last(snapshot.metadata().id())
            .filter(|last| last.version() > snapshot.version())
            .map(DeltaTableState::new)
    }

    /// Waits for the commit this server is writing to `table`, if any (at
    /// most a moment): a statement that finds a commit file past its
    /// cached version while this server's own commit is in flight takes
    /// the table as that commit leaves it ([`Self::newer`]) rather than
    /// reading the commit back from the log and extending its whole file
    /// list (with 8 clients appending, most statements found one). Returns
    /// whether it waited.
    pub(crate) async fn await_in_flight(&self, table: &DeltaTable) -> bool {
        let Some(queue) = lock(&self.queues)
            .get(table.log_store().root_url().as_str())
            .cloned()
        else {
            return false;
        };
        let landed = queue.landed.notified();
        tokio::pin!(landed);
        landed.as_mut().enable();
        if queue.lock.try_lock().is_ok() {
            return false;
        }
        let _ = tokio::time::timeout(IN_FLIGHT_WAIT, landed).await;
        true
    }
}

/// The longest a statement waits for this server's commit in flight
/// ([`Groups::await_in_flight`]); a commit takes a few milliseconds.
const IN_FLIGHT_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// One table's waiting appends and its commit lock.
#[derive(Default)]
pub(crate) struct Queue {
    pub(crate) waiting: Mutex<Vec<Waiting>>,
    /// Held by the task writing a commit of this table.
    pub(crate) lock: Arc<tokio::sync::Mutex<()>>,
    /// What this queue committed to the table it last committed to.
    pub(crate) ours: Mutex<Ours>,
    /// Told when a commit of this queue ends, committed or failed.
    pub(crate) landed: tokio::sync::Notify,
}

/// The table (by its Delta id: a table dropped and created again at the
/// same place is another) a queue last committed to, the latest versions it
/// committed there (blind appends) and the table as the latest left it.
#[derive(Default)]
pub(crate) struct Ours {
    table_id: String,
    versions: std::collections::BTreeSet<u64>,
    last: Option<deltalake::kernel::EagerSnapshot>,
}

/// How many of its own versions a queue remembers.
const REMEMBERED: u64 = 10_000;

impl Queue {
    /// Whether every version after `from` up to `to` is an append this
    /// queue committed: nothing there can conflict with an append.
    pub(crate) fn only_ours(&self, table_id: &str, from: u64, to: u64) -> bool {
        let ours = lock(&self.ours);
        ours.table_id == table_id && (from + 1..=to).all(|v| ours.versions.contains(&v))
    }

    pub(crate) fn committed(&self, snapshot: &deltalake::kernel::EagerSnapshot) {
        let mut ours = lock(&self.ours);
        let table_id = snapshot.metadata().id().to_string();
        if ours.table_id != table_id {
            *ours = Ours {
                table_id,
                ..Ours::default()
            };
        }
        let version = snapshot.version();
        ours.versions.insert(version);
        let keep = ours.versions.split_off(&version.saturating_sub(REMEMBERED));
        ours.versions = keep;
        ours.last = Some(snapshot.clone());
    }

    /// The table as this queue's latest commit to `table_id` left it.
    pub(crate) fn last(&self, table_id: &str) -> Option<deltalake::kernel::EagerSnapshot> {
        let ours = lock(&self.ours);
        ours.last.clone().filter(|_| ours.table_id == table_id)
    }
}

/// A request's state: waiting, taken into a commit, or withdrawn by its
/// statement before any commit took it.
pub(crate) const WAITING: u8 = 0;
pub(crate) const TAKEN: u8 = 1;
pub(crate) const WITHDRAWN: u8 = 2;

pub(crate) struct Waiting {
    pub(crate) commit: GatedCommit,
    /// Rows the commit writes to a data file of its own, for a statement
    /// that holds its rows rather than files ([`crate::write::append`]).
    pub(crate) rows: Option<RecordBatch>,
    pub(crate) state: Arc<AtomicU8>,
    pub(crate) answer: oneshot::Sender<Result<Grouped, Arc<DeltaTableError>>>,
}

/// What a statement learns of the commit that held it.
#[derive(Clone)]
pub(crate) struct Grouped {
    pub(crate) state: DeltaTableState,
    pub version: u64,
    /// This statement's own data files and bytes.
    pub files_added: u64,
    pub bytes_added: u64,
    /// Statements in the commit.
    pub statements: usize,
}

/// Withdraws a request whose statement stopped waiting before a commit
/// took it.
pub(crate) struct Withdraw(pub(crate) Arc<AtomicU8>);

impl Drop for Withdraw {
    fn drop(&mut self) {
        let _ = self
            .0
            .compare_exchange(WAITING, WITHDRAWN, Ordering::AcqRel, Ordering::Acquire);
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
