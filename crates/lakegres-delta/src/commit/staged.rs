//! A transaction's staged commits (issue #59, docs/design/transactions.md).
//!
//! A table a transaction touches is loaded through a [`StagedStore`]: an
//! object store that keeps every write under the table's `_delta_log/` in
//! memory and lays it over the real log for reads and listings, while data
//! files go through to storage. Every write path of this crate then runs
//! unchanged against the staged table: its commit lands at the next
//! version of the staged log, the transaction's next statement reads it,
//! and no one else sees it (a data file no commit names is invisible to
//! every reader; VACUUM removes it when the transaction never commits).
//!
//! [`Transaction::commit`] makes each table's staged versions N+1 … N+k one
//! commit on top of N, the version the transaction first read: the net
//! effect of their actions. A transaction that only appended commits as a
//! blind append (a concurrent commit does not fail it, as in Delta); any
//! other fails with 40001 if anything was committed to the table since N.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use chrono::Utc;
use deltalake::kernel::transaction::CommitBuilder;
use deltalake::kernel::Action;
use deltalake::logstore::object_store::{
    self, Attributes, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutMultipartOptions,
    PutOptions, PutPayload, PutResult,
};
use deltalake::logstore::ObjectStoreRef;
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::{DeltaTable, DeltaTableBuilder, Path};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use crate::catalog::{Catalog, TableName};
use crate::commit::committed::{Commit, CommitSink};
use crate::error::{Error, Result};

/// A store whose writes under one table's `_delta_log/` stay in memory.
#[derive(Debug)]
pub(crate) struct StagedStore {
    inner: ObjectStoreRef,
    /// `<table>/_delta_log/`, as the root store names it.
    log: String,
    kept: Mutex<BTreeMap<Path, (Bytes, chrono::DateTime<Utc>)>>,
}

impl StagedStore {
    fn new(inner: ObjectStoreRef, table: &Path) -> Self {
        Self {
            inner,
            log: format!("{}/_delta_log/", table.as_ref().trim_end_matches('/')),
            kept: Mutex::new(BTreeMap::new()),
        }
    }

    fn in_log(&self, location: &Path) -> bool {
        location.as_ref().starts_with(&self.log)
    }

    fn kept(&self, location: &Path) -> Option<(Bytes, chrono::DateTime<Utc>)> {
        self.kept.lock().ok()?.get(location).cloned()
    }

    fn kept_metas(&self, prefix: Option<&Path>, after: Option<&Path>) -> Vec<ObjectMeta> {
        let Ok(kept) = self.kept.lock() else {
            return Vec::new();
        };
        kept.iter()
            .filter(|(path, _)| prefix.is_none_or(|p| path.prefix_matches(p)))
            .filter(|(path, _)| after.is_none_or(|a| path.as_ref() > a.as_ref()))
            .map(|(path, (bytes, at))| meta(path, bytes, *at))
            .collect()
    }

    /// The commit entries kept, by version.
    fn commit_entries(&self) -> BTreeMap<u64, Bytes> {
        let Ok(kept) = self.kept.lock() else {
            return BTreeMap::new();
        };
        kept.iter()
            .filter_map(|(path, (bytes, _))| {
                let file = path.filename()?;
                let version = file.strip_suffix(".json")?.parse::<u64>().ok()?;
                Some((version, bytes.clone()))
            })
            .collect()
    }

    /// `listing` with the kept entries under `prefix` (after `after`) laid
    /// over it, in name order.
    fn overlaid(
        &self,
        listing: BoxStream<'static, object_store::Result<ObjectMeta>>,
        prefix: Option<&Path>,
        after: Option<&Path>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let kept = self.kept_metas(prefix, after);
        if kept.is_empty() {
            return listing;
        }
        futures::stream::once(async move {
            let mut all: BTreeMap<Path, ObjectMeta> = BTreeMap::new();
            let listed: Vec<ObjectMeta> = listing.try_collect().await?;
            for m in listed.into_iter().chain(kept) {
                all.insert(m.location.clone(), m);
            }
            Ok::<_, object_store::Error>(futures::stream::iter(all.into_values().map(Ok)))
        })
        .try_flatten()
        .boxed()
    }
}

fn meta(path: &Path, bytes: &Bytes, at: chrono::DateTime<Utc>) -> ObjectMeta {
    ObjectMeta {
        location: path.clone(),
        last_modified: at,
        size: bytes.len() as u64,
        e_tag: None,
        version: None,
    }
}

impl std::fmt::Display for StagedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Staged({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for StagedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        if !self.in_log(location) {
            return self.inner.put_opts(location, payload, opts).await;
        }
        if matches!(opts.mode, PutMode::Create) {
            let exists = self.kept(location).is_some() || self.inner.head(location).await.is_ok();
            if exists {
                return Err(object_store::Error::AlreadyExists {
                    path: location.to_string(),
                    source: "a staged commit is there".into(),
                });
            }
        }
        let bytes = Bytes::from(payload);
        if let Ok(mut kept) = self.kept.lock() {
            kept.insert(location.clone(), (bytes, Utc::now()));
        }
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        if self.in_log(location) {
            return Err(object_store::Error::NotSupported {
                source: "a multipart upload into a staged log".into(),
            });
        }
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let Some((bytes, at)) = self.in_log(location).then(|| self.kept(location)).flatten() else {
            return self.inner.get_opts(location, options).await;
        };
        let len = bytes.len() as u64;
        let range = match &options.range {
            None => 0..len,
            Some(GetRange::Bounded(r)) => r.start.min(len)..r.end.min(len),
            Some(GetRange::Offset(o)) => (*o).min(len)..len,
            Some(GetRange::Suffix(n)) => len.saturating_sub(*n)..len,
        };
        let meta = meta(location, &bytes, at);
        let body = if options.head {
            Bytes::new()
        } else {
            bytes.slice(range.start as usize..range.end as usize)
        };
        let stream =
            futures::stream::once(async move { Ok::<_, object_store::Error>(body) }).boxed();
        Ok(GetResult {
            payload: GetResultPayload::Stream(stream),
            meta,
            range,
            attributes: Attributes::new(),
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.overlaid(self.inner.list(prefix), prefix, None)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.overlaid(
            self.inner.list_with_offset(prefix, offset),
            prefix,
            Some(offset),
        )
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let mut listed = self.inner.list_with_delimiter(prefix).await?;
        let depth = prefix.map(|p| p.parts().count()).unwrap_or(0) + 1;
        let mut objects: BTreeMap<Path, ObjectMeta> = listed
            .objects
            .drain(..)
            .map(|m| (m.location.clone(), m))
            .collect();
        for m in self.kept_metas(prefix, None) {
            if m.location.parts().count() == depth {
                objects.insert(m.location.clone(), m);
            }
        }
        listed.objects = objects.into_values().collect();
        Ok(listed)
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: object_store::RenameOptions,
    ) -> object_store::Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

/// One table of a transaction: the version it first read, and its staged
/// log.
struct Staged {
    base: DeltaTable,
    store: Arc<StagedStore>,
    table: DeltaTable,
}

/// The tables a transaction wrote, staged until [`Transaction::commit`].
#[derive(Default)]
pub struct Transaction {
    tables: tokio::sync::Mutex<HashMap<TableName, Staged>>,
}

impl Transaction {
    pub fn new() -> Self {
        Self::default()
    }

    /// `name` as this transaction sees it: the version it first read with
    /// the transaction's own commits over it. Writes through the handle
    /// (with a [`CommitSink::staging`] sink) stage their commits here.
    pub async fn table(&self, catalog: &Catalog, name: &TableName) -> Result<crate::Table> {
        let mut tables = self.tables.lock().await;
        if let Some(staged) = tables.get_mut(name) {
            staged
                .table
                .update_incremental(None)
                .await
                .map_err(|e| Error::delta("reading", name.to_string(), e))?;
            return Ok(crate::Table::new(staged.table.clone()));
        }
        let base = catalog.load_delta(name).await?;
        let url = base.table_url().clone();
        let root = base.log_store().root_object_store(None);
        let prefix = Path::from_url_path(url.path())
            .map_err(|e| Error::Internal(format!("{name}: its location {url}: {e}")))?;
        let store = Arc::new(StagedStore::new(root, &prefix));
        let version = base.version().unwrap_or(0);
        let table = DeltaTableBuilder::from_url(url.clone())
            .map(|b| {
                b.with_storage_options(catalog.storage_options().clone())
                    .with_storage_backend(Arc::clone(&store) as ObjectStoreRef, url)
                    .with_version(version)
            })
            .map_err(|e| Error::delta("staging", name.to_string(), e))?
            .load()
            .await
            .map_err(|e| Error::delta("staging", name.to_string(), e))?;
        let handle = crate::Table::new(table.clone());
        tables.insert(name.clone(), Staged { base, store, table });
        Ok(handle)
    }

    /// Commits each table's staged versions as one version of the table;
    /// the commits made, in table order. A table whose commit fails fails
    /// the call (tables committed before it stay committed: one table per
    /// transaction is atomic, several are not yet — the design's
    /// transaction record).
    pub async fn commit(self, committed: &CommitSink) -> Result<Vec<Commit>> {
        let tables = self.tables.into_inner();
        let mut names: Vec<&TableName> = tables.keys().collect();
        names.sort_by_key(|n| n.to_string());
        let mut commits = Vec::new();
        for name in names {
            let staged = &tables[name];
            if let Some(commit) = commit_table(name, staged, committed).await? {
                commits.push(commit);
            }
        }
        Ok(commits)
    }
}

/// The staged versions of one table after `base`, as one commit.
async fn commit_table(
    name: &TableName,
    staged: &Staged,
    committed: &CommitSink,
) -> Result<Option<Commit>> {
    let base_version = staged.base.version().unwrap_or(0);
    let entries: Vec<Bytes> = staged
        .store
        .commit_entries()
        .into_iter()
        .filter(|(v, _)| *v > base_version)
        .map(|(_, bytes)| bytes)
        .collect();
    if entries.is_empty() {
        return Ok(None);
    }
    let mut operations: Vec<String> = Vec::new();
    let mut actions: Vec<Action> = Vec::new();
    for entry in &entries {
        for line in entry.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let action: Action = serde_json::from_slice(line)
                .map_err(|e| Error::Internal(format!("{name}: a staged commit: {e}")))?;
            if let Action::CommitInfo(info) = &action {
                if let Some(op) = &info.operation {
                    operations.push(op.clone());
                }
                continue;
            }
            actions.push(action);
        }
    }
    let actions = net(actions);
    let blind_append = actions
        .iter()
        .all(|a| matches!(a, Action::Add(add) if add.data_change));
    let snapshot = staged
        .base
        .snapshot()
        .map_err(|e| Error::delta("committing", name.to_string(), e))?
        .snapshot()
        .clone();
    let operation = DeltaOperation::Write {
        mode: SaveMode::Append,
        partition_by: None,
        predicate: None,
    };
    let name_of = if operations.len() == 1 {
        operations[0].clone()
    } else {
        "TRANSACTION".to_string()
    };
    let properties = crate::commit::upkeep::commit_properties_with([
        (
            crate::commit::operation_name::KEY.to_string(),
            serde_json::Value::String(name_of),
        ),
        (
            "statements".to_string(),
            serde_json::Value::from(operations.clone()),
        ),
    ]);
    let mut builder = CommitBuilder::from(properties).with_actions(actions);
    if !blind_append {
        // Anything the transaction read may have changed since: the first
        // commit wins (40001 for this one).
        builder = builder.with_max_retries(0);
    }
    let finalized = builder
        .build(Some(&snapshot), staged.base.log_store(), operation)
        .await
        .map_err(|e| Error::delta("committing", name.to_string(), e))?;
    let mut table = staged.base.clone();
    table.state = Some(finalized.snapshot());
    Ok(committed.finish(name, Some(base_version), table).await)
}

/// The net effect of a sequence of commits' actions: a file added and
/// removed again within them is neither; the last metadata and protocol,
/// the last version of each transaction id and domain.
fn net(actions: Vec<Action>) -> Vec<Action> {
    let mut adds: BTreeMap<String, Action> = BTreeMap::new();
    let mut removes: BTreeMap<String, Action> = BTreeMap::new();
    let mut metadata = None;
    let mut protocol = None;
    let mut txns: BTreeMap<String, Action> = BTreeMap::new();
    let mut domains: BTreeMap<String, Action> = BTreeMap::new();
    let mut rest = Vec::new();
    for action in actions {
        match &action {
            Action::Add(add) => {
                adds.insert(add.path.clone(), action);
            }
            Action::Remove(remove) => {
                if adds.remove(&remove.path).is_none() {
                    removes.insert(remove.path.clone(), action);
                }
            }
            Action::Metadata(_) => metadata = Some(action),
            Action::Protocol(_) => protocol = Some(action),
            Action::Txn(txn) => {
                txns.insert(txn.app_id.clone(), action);
            }
            Action::DomainMetadata(domain) => {
                domains.insert(domain.domain.clone(), action);
            }
            _ => rest.push(action),
        }
    }
    protocol
        .into_iter()
        .chain(metadata)
        .chain(removes.into_values())
        .chain(adds.into_values())
        .chain(txns.into_values())
        .chain(domains.into_values())
        .chain(rest)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ids, rows};
    use deltalake::kernel::{DataType, PrimitiveType, StructField};

    fn name() -> TableName {
        TableName::new("default", "t").unwrap()
    }

    /// A warehouse with `default.t` holding id 1 (versions 0 and 1).
    async fn warehouse(dir: &std::path::Path) -> Arc<Catalog> {
        let catalog = Catalog::open(dir.to_str().unwrap(), HashMap::new())
            .await
            .unwrap();
        std::fs::create_dir_all(dir.join("default").join("t")).unwrap();
        let url = catalog.table_url(&name()).unwrap();
        let table = DeltaTable::try_from_url(url)
            .await
            .unwrap()
            .create()
            .with_columns([StructField::new(
                "id",
                DataType::Primitive(PrimitiveType::Integer),
                true,
            )])
            .await
            .unwrap();
        table.write([rows(&[1])]).await.unwrap();
        catalog
    }

    /// The table as everyone else reads it: its log, read anew.
    async fn committed(catalog: &Catalog) -> DeltaTable {
        DeltaTable::try_from_url(catalog.table_url(&name()).unwrap())
            .await
            .unwrap()
    }

    async fn loaded(catalog: &Catalog) -> DeltaTable {
        let mut table = committed(catalog).await;
        table.load().await.unwrap();
        table
    }

    #[tokio::test]
    async fn staged_writes_are_seen_by_the_transaction_alone_and_commit_as_one_version() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = warehouse(dir.path()).await;
        let txn = Transaction::new();
        let staged = txn.table(&catalog, &name()).await.unwrap().into_delta();
        staged.write([rows(&[2])]).await.unwrap();
        let staged = txn.table(&catalog, &name()).await.unwrap().into_delta();
        assert_eq!(staged.version(), Some(2));
        assert_eq!(ids(&staged).await, [1, 2]);
        let (staged, _) = staged.delete().with_predicate("id = 1").await.unwrap();
        assert_eq!(staged.version(), Some(3));
        let staged = txn.table(&catalog, &name()).await.unwrap().into_delta();
        assert_eq!(ids(&staged).await, [2]);

        // Nobody else sees any of it: not the log, not a new reader.
        let outside = loaded(&catalog).await;
        assert_eq!(outside.version(), Some(1));
        assert_eq!(ids(&outside).await, [1]);

        let sink = CommitSink::new(Arc::clone(&catalog));
        let commits = txn.commit(&sink).await.unwrap();
        assert_eq!(commits.len(), 1);
        assert_eq!(commits[0].version, 2);
        let after = loaded(&catalog).await;
        assert_eq!(after.version(), Some(2), "one version for the transaction");
        assert_eq!(ids(&after).await, [2]);
        let last: Vec<_> = after.history(None).try_collect().await.unwrap();
        assert!(last
            .iter()
            .any(|c| c.operation.as_deref() == Some("TRANSACTION")));
    }

    #[tokio::test]
    async fn a_transaction_that_rewrote_files_loses_to_a_commit_since_its_read() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = warehouse(dir.path()).await;
        let txn = Transaction::new();
        let staged = txn.table(&catalog, &name()).await.unwrap().into_delta();
        staged.delete().with_predicate("id = 1").await.unwrap();
        // Another writer commits after the transaction's read.
        loaded(&catalog).await.write([rows(&[5])]).await.unwrap();
        let sink = CommitSink::new(Arc::clone(&catalog));
        let err = txn.commit(&sink).await.unwrap_err();
        assert_eq!(
            err.sqlstate(),
            crate::SqlState::SERIALIZATION_FAILURE,
            "{err}"
        );
        let after = loaded(&catalog).await;
        assert_eq!(after.version(), Some(2));
        assert_eq!(
            ids(&after).await,
            [1, 5],
            "nothing of the transaction applied"
        );
    }

    #[tokio::test]
    async fn a_blind_append_commits_beside_a_concurrent_one_and_rollback_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = warehouse(dir.path()).await;
        let txn = Transaction::new();
        let staged = txn.table(&catalog, &name()).await.unwrap().into_delta();
        staged.write([rows(&[3])]).await.unwrap();
        loaded(&catalog).await.write([rows(&[4])]).await.unwrap();
        let sink = CommitSink::new(Arc::clone(&catalog));
        txn.commit(&sink).await.unwrap();
        let after = loaded(&catalog).await;
        assert_eq!(after.version(), Some(3));
        assert_eq!(ids(&after).await, [1, 3, 4]);

        // A transaction dropped without COMMIT applies nothing.
        let txn = Transaction::new();
        let staged = txn.table(&catalog, &name()).await.unwrap().into_delta();
        staged.write([rows(&[9])]).await.unwrap();
        drop(txn);
        let after = loaded(&catalog).await;
        assert_eq!(after.version(), Some(3));
        assert_eq!(ids(&after).await, [1, 3, 4]);
    }
}
