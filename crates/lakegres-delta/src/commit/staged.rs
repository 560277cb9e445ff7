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

use std::collections::BTreeMap;
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
///
/// It also fences the log at the version the transaction first read: what
/// other writers committed after it (commits, checkpoints, CRC files) is
/// not there for the transaction, which reads its snapshot and its own
/// commits only (snapshot isolation; conflicts are checked at COMMIT).
#[derive(Debug)]
pub(crate) struct StagedStore {
    inner: ObjectStoreRef,
    fence: Fence,
    kept: Mutex<Kept>,
}

/// The log files a staged store keeps, with the time each was put.
pub(crate) type Kept = BTreeMap<Path, (Bytes, chrono::DateTime<Utc>)>;

/// Where a staged log ends: the table's `_delta_log/` and the version the
/// transaction read.
#[derive(Debug, Clone)]
struct Fence {
    /// `<table>/_delta_log/`, as the root store names it.
    log: String,
    /// The version read; `None` for a table the transaction creates.
    base: Option<u64>,
}

impl Fence {
    fn in_log(&self, location: &Path) -> bool {
        location.as_ref().starts_with(&self.log)
    }

    /// Whether a file of the real log is past the fence: a commit,
    /// checkpoint, CRC or compaction of a version after the base, or
    /// `_last_checkpoint` (which may name one).
    fn hidden(&self, location: &Path) -> bool {
        if !self.in_log(location) {
            return false;
        }
        let Some(file) = location.filename() else {
            return false;
        };
        if file == "_last_checkpoint" {
            return true;
        }
        let mut parts = file.split('.');
        let first = parts.next().and_then(|p| p.parse::<u64>().ok());
        // `<from>.<to>.compacted.json` covers up to `<to>`.
        let second = parts.next().and_then(|p| p.parse::<u64>().ok());
        match first.map(|f| second.unwrap_or(f)) {
            Some(version) => self.base.is_none_or(|base| version > base),
            None => false,
        }
    }
}

impl StagedStore {
    fn new(inner: ObjectStoreRef, table: &Path, base: Option<u64>) -> Self {
        Self {
            inner,
            fence: Fence {
                log: format!("{}/_delta_log/", table.as_ref().trim_end_matches('/')),
                base,
            },
            kept: Mutex::new(BTreeMap::new()),
        }
    }

    fn in_log(&self, location: &Path) -> bool {
        self.fence.in_log(location)
    }

    fn hidden(&self, location: &Path) -> bool {
        self.fence.hidden(location)
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
        let fence = self.fence.clone();
        futures::stream::once(async move {
            let mut all: BTreeMap<Path, ObjectMeta> = BTreeMap::new();
            let listed: Vec<ObjectMeta> = listing.try_collect().await?;
            let listed = listed.into_iter().filter(|m| !fence.hidden(&m.location));
            for m in listed.chain(kept) {
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
            let exists = self.kept(location).is_some()
                || (!self.hidden(location) && self.inner.head(location).await.is_ok());
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
            if self.hidden(location) {
                return Err(object_store::Error::NotFound {
                    path: location.to_string(),
                    source: "past the transaction's snapshot".into(),
                });
            }
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
        // A staged table never removes anything of the real log (a log
        // clean-up after a staged checkpoint would drop what only that
        // checkpoint, in memory, stands for).
        let fence = self.fence.clone();
        let outside_log = locations
            .filter(move |l| futures::future::ready(!matches!(l, Ok(p) if fence.in_log(p))))
            .boxed();
        self.inner.delete_stream(outside_log)
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
            .filter(|m| !self.hidden(&m.location))
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

/// One table of a transaction: the version it first read (`None` for a
/// table the transaction creates), its staged log and its handle on it.
#[derive(Clone)]
pub(crate) struct Staged {
    pub(crate) base: Option<DeltaTable>,
    pub(crate) store: Arc<StagedStore>,
    pub(crate) table: DeltaTable,
    /// Where its files are: the name it had when the transaction first
    /// read or created it (a rename moves the folder at COMMIT).
    pub(crate) folder: TableName,
    /// Rows appended as they are (`INSERT … VALUES`, see
    /// `crate::write::append`), not written yet: the next statement that
    /// reads or writes the table otherwise, or COMMIT, writes them as one
    /// file — so a block's thousand single-row INSERTs make one file.
    pub(crate) pending: Vec<datafusion::arrow::record_batch::RecordBatch>,
}

/// Pending rows past this many are written at once.
const MAX_PENDING_ROWS: usize = 100_000;

impl Staged {
    /// `name`'s staged handle over `base`, the version read (`None`: a
    /// table to create at `name`'s place).
    pub(crate) fn new(
        catalog: &Catalog,
        name: &TableName,
        base: Option<DeltaTable>,
    ) -> Result<Self> {
        let plain = match &base {
            Some(base) => base.clone(),
            None => {
                // delta-kernel lists a local log's folder, which must be
                // there (an empty folder left by a ROLLBACK is no table).
                if let Some(root) = catalog.local_root() {
                    let folder = root.join(&name.schema).join(&name.table);
                    std::fs::create_dir_all(&folder).map_err(|e| Error::Storage {
                        op: "creating a table folder",
                        source: Box::new(deltalake::ObjectStoreError::Generic {
                            store: "local",
                            source: Box::new(e),
                        }),
                    })?;
                }
                catalog.new_table(name)?.into_delta()
            }
        };
        let url = plain.table_url().clone();
        let root = plain.log_store().root_object_store(None);
        let prefix = Path::from_url_path(url.path())
            .map_err(|e| Error::Internal(format!("{name}: its location {url}: {e}")))?;
        let store = Arc::new(StagedStore::new(
            root,
            &prefix,
            base.as_ref().and_then(DeltaTable::version),
        ));
        let mut table = DeltaTableBuilder::from_url(url.clone())
            .map(|b| {
                b.with_storage_options(catalog.storage_options().clone())
                    .with_storage_backend(Arc::clone(&store) as ObjectStoreRef, url)
            })
            .and_then(|b| b.build())
            .map_err(|e| Error::delta("staging", name.to_string(), e))?;
        // The staged handle starts from the base's snapshot, as loaded (the
        // catalog's cache): only its log store differs.
        table.state = base.as_ref().and_then(|b| b.state.clone());
        Ok(Self {
            base,
            store,
            table,
            folder: name.clone(),
            pending: Vec::new(),
        })
    }

    /// The latest version of the staged log: the base's, or the last
    /// staged commit's (nothing past the fence is there).
    pub(crate) fn latest(&self) -> Option<u64> {
        let staged = self.store.commit_entries().keys().next_back().copied();
        staged.or(self.base.as_ref().and_then(DeltaTable::version))
    }

    /// Brings the handle to the staged log's latest version, with the
    /// pending rows written.
    pub(crate) async fn refreshed(&mut self, name: &TableName) -> Result<crate::Table> {
        self.flush(name).await?;
        Ok(crate::Table::new(self.table.clone()))
    }

    /// The handle at the staged log's latest version, pending rows aside
    /// (what an append of more rows needs: the columns).
    pub(crate) async fn caught_up(&mut self, name: &TableName) -> Result<crate::Table> {
        if self.latest() != self.table.version() {
            let read = match self.table.state {
                Some(_) => self.table.update_incremental(None).await,
                None => self.table.load().await,
            };
            read.map_err(|e| Error::delta("reading", name.to_string(), e))?;
        }
        Ok(crate::Table::new(self.table.clone()))
    }

    /// Takes `batch` to append with the next write of the table.
    pub(crate) async fn append(
        &mut self,
        name: &TableName,
        batch: datafusion::arrow::record_batch::RecordBatch,
    ) -> Result<()> {
        self.pending.push(batch);
        if self.pending.iter().map(|b| b.num_rows()).sum::<usize>() > MAX_PENDING_ROWS {
            self.flush(name).await?;
        }
        Ok(())
    }

    /// Writes the pending rows as one staged commit.
    pub(crate) async fn flush(&mut self, name: &TableName) -> Result<()> {
        self.caught_up(name).await?;
        if self.pending.is_empty() {
            return Ok(());
        }
        let batches = std::mem::take(&mut self.pending);
        self.table = self
            .table
            .clone()
            .write(batches)
            .with_commit_properties(crate::commit::upkeep::commit_properties())
            .await
            .map_err(|e| Error::delta("writing", name.to_string(), e))?;
        Ok(())
    }

    /// What was staged, to restore at a savepoint.
    pub(crate) fn kept(&self) -> Kept {
        self.store
            .kept
            .lock()
            .map(|k| k.clone())
            .unwrap_or_default()
    }

    /// Goes back to `kept` and the handle `table`.
    pub(crate) fn restore(&mut self, kept: Kept, table: &DeltaTable) {
        if let Ok(mut now) = self.store.kept.lock() {
            *now = kept;
        }
        self.table.state = table.state.clone();
    }

    /// Forgets everything staged: back to the version read.
    pub(crate) fn reset(&mut self) {
        self.pending.clear();
        if let Ok(mut now) = self.store.kept.lock() {
            now.clear();
        }
        self.table.state = self.base.as_ref().and_then(|b| b.state.clone());
    }

    /// The relative paths of the data files the staged commits add.
    pub(crate) fn added_paths(&self) -> Result<Vec<String>> {
        Ok(staged_actions(&self.folder, &self.store, None)?
            .1
            .into_iter()
            .filter_map(|a| match a {
                Action::Add(add) => Some(add.path),
                _ => None,
            })
            .collect())
    }
}

/// A staged `commitInfo` with the operation name its writer asked for in
/// place (what the store below would have done on its way to storage).
fn rename_asked(entry: &mut serde_json::Value) {
    let Some(info) = entry.get_mut("commitInfo").and_then(|i| i.as_object_mut()) else {
        return;
    };
    if let Some(serde_json::Value::String(name)) = info.remove(crate::commit::operation_name::KEY) {
        info.insert("operation".into(), serde_json::Value::String(name));
    }
}

/// The operations and the actions (commit infos left out) of the staged
/// commits after `after`.
pub(crate) fn staged_actions(
    name: &TableName,
    store: &StagedStore,
    after: Option<u64>,
) -> Result<(Vec<String>, Vec<Action>, Vec<serde_json::Value>)> {
    let mut operations = Vec::new();
    let mut actions = Vec::new();
    let mut infos = Vec::new();
    for (_, entry) in store
        .commit_entries()
        .into_iter()
        .filter(|(v, _)| after.is_none_or(|a| *v > a))
    {
        for line in entry.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let action: Action = serde_json::from_slice(line)
                .map_err(|e| Error::Internal(format!("{name}: a staged commit: {e}")))?;
            if let Action::CommitInfo(info) = &action {
                // A staged entry keeps the name its writer asked for (the
                // store that renames sits below the staged log).
                let asked = info
                    .info
                    .get(crate::commit::operation_name::KEY)
                    .and_then(|v| v.as_str());
                if let Some(op) = asked.or(info.operation.as_deref()) {
                    operations.push(op.to_string());
                }
                if let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(line) {
                    rename_asked(&mut value);
                    infos.push(value);
                }
                continue;
            }
            actions.push(action);
        }
    }
    Ok((operations, net(actions), infos))
}

/// What a transaction does to one table it read: its staged versions' net
/// actions, and the statements (operations) they came from.
pub(crate) struct TableChange {
    pub(crate) operations: Vec<String>,
    pub(crate) actions: Vec<Action>,
}

impl Staged {
    /// The net change of the staged versions after the base; `None` when
    /// nothing was staged (or the table is one the transaction creates).
    pub(crate) fn change(&self, name: &TableName) -> Result<Option<TableChange>> {
        let Some(base) = &self.base else {
            return Ok(None);
        };
        let (operations, actions, _) = staged_actions(name, &self.store, base.version())?;
        if operations.is_empty() && actions.is_empty() {
            return Ok(None);
        }
        Ok(Some(TableChange {
            operations,
            actions,
        }))
    }

    /// The first commit of a table the transaction creates: the first
    /// staged commit's information and the net actions of all.
    pub(crate) fn first_commit(
        &self,
        name: &TableName,
    ) -> Result<(Option<serde_json::Value>, Vec<Action>)> {
        let (_, actions, infos) = staged_actions(name, &self.store, None)?;
        Ok((infos.into_iter().next(), actions))
    }
}

/// Only files added: a blind append, which a concurrent commit does not
/// fail.
pub(crate) fn blind_append(actions: &[Action]) -> bool {
    actions
        .iter()
        .all(|a| matches!(a, Action::Add(add) if add.data_change))
}

impl TableChange {
    /// Commits the change on top of `base` as one version, recorded as the
    /// transaction `transaction` (when several tables take part).
    pub(crate) async fn commit(
        self,
        name: &TableName,
        base: &DeltaTable,
        transaction: Option<(&str, &[String])>,
        committed: &CommitSink,
    ) -> Result<Option<Commit>> {
        let base_version = base.version().unwrap_or(0);
        let blind_append = blind_append(&self.actions);
        let snapshot = base
            .snapshot()
            .map_err(|e| Error::delta("committing", name.to_string(), e))?
            .snapshot()
            .clone();
        let operation = DeltaOperation::Write {
            mode: SaveMode::Append,
            partition_by: None,
            predicate: None,
        };
        let name_of = if self.operations.len() == 1 {
            self.operations[0].clone()
        } else {
            "TRANSACTION".to_string()
        };
        // DESCRIBE HISTORY shows the block's statements in the commit's
        // operationParameters (a JSON array as a string, as Delta keeps
        // every parameter).
        let statements = serde_json::Value::from(self.operations.clone()).to_string();
        let mut info = vec![
            (
                crate::commit::operation_name::KEY.to_string(),
                serde_json::Value::String(name_of),
            ),
            (
                crate::commit::operation_name::PARAMETERS.to_string(),
                serde_json::json!({ "statements": statements }),
            ),
        ];
        if let Some((id, tables)) = transaction {
            info.push((TRANSACTION_KEY.to_string(), serde_json::Value::from(id)));
            info.push((
                crate::commit::transaction_record::TABLES_KEY.to_string(),
                serde_json::Value::from(tables.to_vec()),
            ));
        }
        let properties = crate::commit::upkeep::commit_properties_with(info);
        let mut builder = CommitBuilder::from(properties).with_actions(self.actions);
        if !blind_append {
            // Anything the transaction read may have changed since: the
            // first commit wins (40001 for this one).
            builder = builder.with_max_retries(0);
        }
        let finalized = builder
            .build(Some(&snapshot), base.log_store(), operation)
            .await
            .map_err(|e| Error::delta("committing", name.to_string(), e))?;
        let mut table = base.clone();
        table.state = Some(finalized.snapshot());
        Ok(committed
            .finish_with(name, Some(base_version), table, self.operations)
            .await)
    }
}

/// The `commitInfo` field naming the transaction a commit belongs to.
pub(crate) const TRANSACTION_KEY: &str = "lakegresTransaction";

/// Writes the first commit of a table a transaction created: `info` (with
/// the transaction's id) and `actions`. A table created there meanwhile
/// wins (42P07), unless it is this very commit, written before (a
/// transaction rolled forward after a crash).
pub(crate) async fn create_table(
    catalog: &Catalog,
    name: &TableName,
    info: Option<serde_json::Value>,
    actions: &[Action],
    transaction: &str,
) -> Result<()> {
    let mut lines = Vec::new();
    if let Some(mut info) = info {
        if let Some(fields) = info.get_mut("commitInfo").and_then(|i| i.as_object_mut()) {
            fields.insert(
                TRANSACTION_KEY.to_string(),
                serde_json::Value::from(transaction),
            );
        }
        lines.push(info.to_string());
    }
    for action in actions {
        lines.push(
            serde_json::to_string(action)
                .map_err(|e| Error::Internal(format!("{name}: writing its first commit: {e}")))?,
        );
    }
    let body = lines.join("\n") + "\n";
    let first = catalog.path(&[
        &name.schema,
        &name.table,
        "_delta_log",
        "00000000000000000000.json",
    ]);
    let store = catalog.store();
    let put = store
        .put_opts(
            &first,
            PutPayload::from(body.into_bytes()),
            PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            },
        )
        .await;
    match put {
        Ok(_) => Ok(()),
        Err(object_store::Error::AlreadyExists { .. }) => {
            let there = store.get(&first).await.ok();
            let written = match there {
                Some(got) => got.bytes().await.ok(),
                None => None,
            };
            let ours = written.is_some_and(|b| {
                crate::commit::transaction_record::transaction_of(&b).as_deref()
                    == Some(transaction)
            });
            if ours {
                return Ok(());
            }
            Err(Error::TableExists {
                schema: name.schema.clone(),
                table: name.table.clone(),
            })
        }
        Err(source) => Err(Error::Storage {
            op: "committing a created table",
            source: Box::new(source),
        }),
    }
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
