//! The Delta log's upkeep after commits: a checkpoint every
//! `delta.checkpointInterval` commits (100 unless set), then the clean-up of
//! log files older than `delta.logRetentionDuration` (when
//! `delta.enableExpiredLogCleanup`, the default).
//!
//! delta-rs runs both right after each commit, inside the write, and returns
//! their failure as the write's failure — of a write that has committed. So
//! every write here switches that off ([`commit_properties`]) and the
//! server runs [`after_commit`] itself, whose failures are only logged: a
//! table without its latest checkpoint is slower to load, never wrong.

use deltalake::kernel::transaction::CommitProperties;
use deltalake::protocol::checkpoints::{cleanup_metadata, create_checkpoint};
use deltalake::table::config::TablePropertiesExt;
use deltalake::DeltaTable;

/// How many times a commit that lost its version to another writer, and
/// does not conflict with it, tries the next one. delta-rs gives up after
/// 15, so under many concurrent writers a blind append could fail with
/// 40001 (seen with eight writers on three servers); Delta on Spark keeps
/// trying (`spark.databricks.delta.maxCommitAttempts`, 10,000,000).
/// `statement_timeout` bounds the time.
const COMMIT_ATTEMPTS: usize = 10_000;

/// What every commit of this server starts from: no checkpoint or log
/// clean-up inside the commit (see the module's comment), and retries of a
/// lost version as long as there is no conflict.
pub fn commit_properties() -> CommitProperties {
    commit_properties_with([])
}

tokio::task_local! {
    /// The user whose statement is running, for the commits it makes.
    static USER: String;
}

/// Runs `statement` as `user`: each commit it makes records the user in
/// `commitInfo.userName`, as Databricks records it (DESCRIBE HISTORY shows
/// it, and a table's first commit names its owner).
pub fn as_user<F: std::future::Future>(
    user: String,
    statement: F,
) -> impl std::future::Future<Output = F::Output> {
    // Not an `async fn`: one would hold `statement` twice, as its argument
    // and as the scope it awaits.
    USER.scope(user, statement)
}

/// The user [`as_user`] runs the current statement as.
pub(crate) fn current_user() -> Option<String> {
    USER.try_with(Clone::clone).ok()
}

/// [`commit_properties`] with more `commitInfo` fields (delta-rs' own
/// `with_metadata` replaces, so the user is added here).
pub fn commit_properties_with(
    metadata: impl IntoIterator<Item = (String, serde_json::Value)>,
) -> CommitProperties {
    let mut metadata: Vec<(String, serde_json::Value)> = metadata.into_iter().collect();
    if let Some(user) = current_user() {
        metadata.push(("userName".to_string(), serde_json::Value::String(user)));
    }
    properties_of(metadata)
}

/// [`commit_properties`] with exactly these `commitInfo` fields (a group
/// commit's, whose user is the one its statements give).
pub(crate) fn properties_of(
    metadata: impl IntoIterator<Item = (String, serde_json::Value)>,
) -> CommitProperties {
    CommitProperties::default()
        .with_metadata(metadata)
        .with_create_checkpoint(false)
        .with_cleanup_expired_logs(Some(false))
        .with_max_retries(COMMIT_ATTEMPTS)
}

/// `delta.checkpointInterval` of the table's loaded version (100 unless set).
pub(crate) fn checkpoint_interval(table: &DeltaTable) -> u64 {
    table
        .snapshot()
        .map(|s| s.table_config().checkpoint_interval().get())
        .unwrap_or(100)
}

/// The checkpoint of `table`'s version when the interval says so, then the
/// log clean-up. Returns whether a checkpoint was written.
pub(crate) async fn after_commit(table: &DeltaTable) -> bool {
    let Some(version) = table.version() else {
        return false;
    };
    let Ok(snapshot) = table.snapshot() else {
        return false;
    };
    let config = snapshot.table_config();
    if !(version + 1).is_multiple_of(checkpoint_interval(table)) {
        return false;
    }
    let table_uri = table.log_store().root_url().to_string();
    if let Err(e) = create_checkpoint(table, None).await {
        tracing::warn!(table = %table_uri, version, error = %e, "writing the checkpoint failed; the commit stands");
        return false;
    }
    if config.enable_expired_log_cleanup() {
        match cleanup_metadata(table, None).await {
            Ok(0) => {}
            Ok(removed) => {
                tracing::debug!(table = %table_uri, removed, "expired log files removed")
            }
            Err(e) => {
                tracing::warn!(table = %table_uri, error = %e, "cleaning up expired log files failed")
            }
        }
    }
    true
}
