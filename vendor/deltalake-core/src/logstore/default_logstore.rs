//! Default implementation of [`LogStore`] for storage backends with atomic put-if-absent operation

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use object_store::{Attributes, Error as ObjectStoreError, ObjectStore, PutOptions, TagSet};
use uuid::Uuid;

use super::storage::{ObjectStoreRef, utils::commit_uri_from_version};
use super::{CommitOrBytes, LogStore, LogStoreConfig};
use crate::DeltaResult;
use crate::kernel::Version;
use crate::kernel::transaction::TransactionError;

fn put_options() -> &'static PutOptions {
    static PUT_OPTS: OnceLock<PutOptions> = OnceLock::new();
    PUT_OPTS.get_or_init(|| PutOptions {
        mode: object_store::PutMode::Create, // Creates if file doesn't exists yet
        tags: TagSet::default(),
        attributes: Attributes::default(),
        extensions: Default::default(),
    })
}

/// Whether the commit entry `found` is the one written from `ours`: the
/// same actions line for line, and a `commitInfo` of the same time (the
/// store may rename its operation on the way; LAKEGRES PATCH 16). Each
/// entry's `add`s name fresh files and its `commitInfo` has the time in
/// milliseconds, so another writer's entry does not match.
fn same_commit(ours: &[u8], found: &[u8]) -> bool {
    fn split(entry: &[u8]) -> (Vec<&[u8]>, Option<serde_json::Value>) {
        let mut actions = Vec::new();
        let mut time = None;
        for line in entry.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            if line.starts_with(br#"{"commitInfo""#) {
                time = serde_json::from_slice::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| v.get("commitInfo")?.get("timestamp").cloned());
            } else {
                actions.push(line);
            }
        }
        (actions, time)
    }
    let (ours, our_time) = split(ours);
    let (found, found_time) = split(found);
    our_time.is_some() && ours == found && our_time == found_time
}

/// Default [`LogStore`] implementation
#[derive(Debug, Clone)]
pub struct DefaultLogStore {
    prefixed_store: ObjectStoreRef,
    root_store: ObjectStoreRef,
    config: LogStoreConfig,
}

impl DefaultLogStore {
    /// Create a new instance of [`DefaultLogStore`]
    ///
    /// # Arguments
    ///
    /// * `prefixed_store` - A shared reference to an [`object_store::ObjectStore`] with "/"
    ///   pointing at delta table root (i.e. where `_delta_log` is located).
    /// * `root_store` - A shared reference to an [`object_store::ObjectStore`] with "/"
    ///   pointing at root of the storage system.
    /// * `location` - A url corresponding to the storage location of `storage`.
    pub fn new(
        prefixed_store: ObjectStoreRef,
        root_store: ObjectStoreRef,
        config: LogStoreConfig,
    ) -> Self {
        Self {
            prefixed_store,
            root_store,
            config,
        }
    }
}

#[async_trait::async_trait]
impl LogStore for DefaultLogStore {
    fn name(&self) -> String {
        "DefaultLogStore".into()
    }

    async fn read_commit_entry(&self, version: Version) -> DeltaResult<Option<Bytes>> {
        super::read_commit_entry(self.object_store(None).as_ref(), version).await
    }

    /// Tries to commit a prepared commit file. Returns [`TransactionError`]
    /// if the given `version` already exists. The caller should handle the retry logic itself.
    /// This is low-level transaction API. If user does not want to maintain the commit loop then
    /// the `DeltaTransaction.commit` is desired to be used as it handles `try_commit_transaction`
    /// with retry logic.
    async fn write_commit_entry(
        &self,
        version: Version,
        commit_or_bytes: CommitOrBytes,
        _: Uuid,
    ) -> Result<(), TransactionError> {
        match commit_or_bytes {
            CommitOrBytes::LogBytes(log_bytes) => {
                let put = self
                    .object_store(None)
                    .put_opts(
                        &commit_uri_from_version(Some(version)),
                        log_bytes.clone().into(),
                        put_options().clone(),
                    )
                    .await;
                match put {
                    Ok(_) => {}
                    // LAKEGRES PATCH 16: a create whose response was lost
                    // (a reset, a timeout) is retried by object_store and
                    // then finds its own commit: that is a success, not a
                    // lost race to retry at the next version (a duplicate).
                    Err(ObjectStoreError::AlreadyExists { .. }) => {
                        let found = self.read_commit_entry(version).await.ok().flatten();
                        if !found.is_some_and(|found| same_commit(&log_bytes, &found)) {
                            return Err(TransactionError::VersionAlreadyExists(version));
                        }
                    }
                    // LAKEGRES PATCH 16: so is a create that failed on
                    // the way back (a timeout after the store took it):
                    // the entry is there, and it is ours.
                    Err(err) => {
                        let found = self.read_commit_entry(version).await.ok().flatten();
                        if !found.is_some_and(|found| same_commit(&log_bytes, &found)) {
                            return Err(TransactionError::from(err));
                        }
                    }
                }
            }
            _ => unreachable!(), // Default log store should never get a tmp_commit, since this is for conditional put stores
        };
        Ok(())
    }

    async fn abort_commit_entry(
        &self,
        _version: Version,
        commit_or_bytes: CommitOrBytes,
        _: Uuid,
    ) -> Result<(), TransactionError> {
        match &commit_or_bytes {
            CommitOrBytes::LogBytes(_) => Ok(()),
            _ => unreachable!(), // Default log store should never get a tmp_commit, since this is for conditional put stores
        }
    }

    async fn get_latest_version(&self, current_version: Version) -> DeltaResult<Version> {
        super::get_latest_version(self, current_version).await
    }

    fn object_store(&self, _: Option<Uuid>) -> Arc<dyn ObjectStore> {
        self.prefixed_store.clone()
    }

    fn root_object_store(&self, _: Option<Uuid>) -> Arc<dyn ObjectStore> {
        self.root_store.clone()
    }

    fn config(&self) -> &LogStoreConfig {
        &self.config
    }
}
