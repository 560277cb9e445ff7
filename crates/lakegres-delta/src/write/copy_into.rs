//! The storage side of COPY INTO: the table a load writes to, which files
//! it loaded before, and the load's one commit.
//!
//! # The record of loaded files
//!
//! A load that loads files first writes a record of them,
//! `_lakegres_copy_into/<id>.json` under the table's folder, then commits
//! its rows with one Delta application transaction (`txn`, app id
//! `lakegres.copy_into`, version `<id>`). Each record names the one before
//! it, so the table's latest `txn` of that app id heads a chain of records
//! that together list every loaded path; every 16th record lists them all
//! and ends the chain, so a cold lookup reads at most 16 records. Why so:
//!
//! - The table's snapshot and checkpoints carry one `txn` however many
//!   files were loaded (a `txn` per file made every snapshot and checkpoint
//!   grow with them, and each lookup replayed the whole log once per file).
//! - The record's head is part of the commit that loads the rows, so the
//!   record is exactly as durable as the rows, and a record written by a
//!   load that failed to commit is never part of the chain.
//! - Two loads into one table, on one server or two, conflict at commit
//!   (both write the one app id): the loser deletes its record, reads the
//!   record again and loads only what is still new, so a file is loaded
//!   once.
//! - The folder starts with `_`, which VACUUM (ours, delta-rs', Spark's)
//!   leaves alone.
//!
//! The set a chain lists is kept in memory per table (the newest one),
//! keyed by the table version it holds for, so a re-run that finds nothing
//! new reads nothing beyond the folder's listing. Tables loaded before this
//! record existed have one `txn` per file (app id
//! `lakegres.copy_into:<path>`); those still count as loaded.
//!
//! RESTORE does not rewind the record (Delta's RESTORE leaves `txn`
//! actions as they are), so files loaded after the restored version stay
//! loaded; `COPY_OPTIONS ('force' = 'true')` loads them again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use datafusion::execution::context::SessionState;
use datafusion::physical_plan::ExecutionPlan;
use deltalake::kernel::EagerSnapshot;
use deltalake::logstore::object_store::{ObjectStoreExt, PutPayload};
use deltalake::logstore::LogStoreRef;
use serde::{Deserialize, Serialize};

use crate::catalog::TableName;
use crate::error::{Error, Result};
use crate::read::provider::DeltaProvider;
use crate::write::insert::{write_plan_at, WriteMode, WriteOptions};

/// The app id whose `txn` version names the newest record.
pub const RECORD_APP_ID: &str = "lakegres.copy_into";

/// The folder, under the table's, of the records.
pub const RECORD_FOLDER: &str = "_lakegres_copy_into";

/// The app id prefix of the one-`txn`-per-file records of earlier versions.
const PER_FILE_PREFIX: &str = "lakegres.copy_into:";

/// Every this many records, one lists every loaded file and ends the chain.
const CHAIN: u32 = 16;

/// Tables whose loaded files stay in memory.
const KEPT_TABLES: usize = 64;

/// One record file.
#[derive(Serialize, Deserialize)]
struct Record {
    /// The record this one follows; none for one that lists every file.
    previous: Option<i64>,
    /// Records since the last one that lists every file.
    depth: u32,
    files: Vec<String>,
}

/// A record's id: a sequence number in the high bits (so ids grow and
/// names sort), random low bits (so two loads racing for the same
/// sequence number never write the same file).
fn next_id(previous: Option<i64>) -> i64 {
    let sequence = previous.map_or(0, |p| p >> 40) + 1;
    let random = (uuid::Uuid::new_v4().as_u128() as i64) & ((1 << 40) - 1);
    (sequence << 40) | random
}

fn record_path(id: i64) -> deltalake::Path {
    deltalake::Path::from(format!(
        "{RECORD_FOLDER}/{:08}-{:010x}.json",
        id >> 40,
        id & ((1 << 40) - 1)
    ))
}

/// What a table's record says at one version.
struct Loaded {
    table_id: String,
    /// The table version this holds for; none when not known (then it is
    /// checked against the log before use).
    version: Option<u64>,
    /// The newest record, and its depth.
    head: Option<(i64, u32)>,
    /// The files the chain from `head` lists.
    files: Arc<HashSet<String>>,
    /// Files recorded one `txn` each, by earlier versions.
    per_file: Arc<HashSet<String>>,
}

impl Loaded {
    fn holds(&self, path: &str) -> bool {
        self.files.contains(path) || self.per_file.contains(path)
    }
}

/// The newest known record of each table, by table URL.
static KNOWN: LazyLock<Mutex<HashMap<String, Arc<Loaded>>>> = LazyLock::new(Default::default);

fn known(url: &str) -> Option<Arc<Loaded>> {
    KNOWN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(url)
        .cloned()
}

fn remember(url: String, loaded: Arc<Loaded>) {
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if known.len() >= KEPT_TABLES && !known.contains_key(&url) {
        known.clear();
    }
    known.insert(url, loaded);
}

/// The table a load writes to: an existing Delta table, or one created
/// without columns, whose first commit the load makes.
pub struct LoadTarget {
    name: TableName,
    log_store: LogStoreRef,
    /// `None` for a table without columns.
    snapshot: Option<EagerSnapshot>,
    /// The record at `snapshot`, once read.
    loaded: OnceLock<Arc<Loaded>>,
}

impl LoadTarget {
    /// An existing table, at the version `provider` read.
    pub fn existing(provider: &DeltaProvider) -> Result<Self> {
        Ok(Self {
            name: provider.name().clone(),
            log_store: provider.table().log_store(),
            snapshot: Some(provider.snapshot()?.clone()),
            loaded: OnceLock::new(),
        })
    }

    /// A table created without columns (no Delta table yet at `table`).
    pub fn without_columns(name: TableName, table: &crate::Table) -> Self {
        let table = table.delta();
        Self {
            name,
            log_store: table.log_store(),
            snapshot: None,
            loaded: OnceLock::new(),
        }
    }

    /// The table's name.
    pub fn name(&self) -> &TableName {
        &self.name
    }

    /// Whether the table has columns (a Delta table) already.
    pub fn has_columns(&self) -> bool {
        self.snapshot.is_some()
    }

    fn url(&self) -> String {
        self.log_store.root_url().to_string()
    }

    /// Which of `paths` the table has no record of loading.
    pub async fn not_loaded(&self, paths: &[String]) -> Result<Vec<bool>> {
        let loaded = self.loaded().await?;
        Ok(paths.iter().map(|p| !loaded.holds(p)).collect())
    }

    /// The record at the snapshot's version: from memory when this server
    /// knows it, else from the log's `txn` actions and the record files.
    async fn loaded(&self) -> Result<Arc<Loaded>> {
        if let Some(loaded) = self.loaded.get() {
            return Ok(Arc::clone(loaded));
        }
        let loaded = match &self.snapshot {
            None => Arc::new(Loaded {
                table_id: String::new(),
                version: None,
                head: None,
                files: Arc::default(),
                per_file: Arc::default(),
            }),
            Some(snapshot) => self.read(snapshot).await?,
        };
        Ok(Arc::clone(self.loaded.get_or_init(|| loaded)))
    }

    async fn read(&self, snapshot: &EagerSnapshot) -> Result<Arc<Loaded>> {
        let url = self.url();
        let table_id = snapshot.metadata().id().to_string();
        let version = Some(snapshot.version());
        let before = known(&url).filter(|k| k.table_id == table_id);
        if let Some(k) = before.as_ref().filter(|k| k.version == version) {
            return Ok(Arc::clone(k));
        }
        let txns = snapshot
            .transaction_versions(self.log_store.as_ref(), RECORD_APP_ID)
            .await
            .map_err(|e| Error::delta("reading", self.name.to_string(), e))?;
        let per_file: Arc<HashSet<String>> = Arc::new(
            txns.keys()
                .filter_map(|id| id.strip_prefix(PER_FILE_PREFIX))
                .map(str::to_string)
                .collect(),
        );
        let (head, files) = match txns.get(RECORD_APP_ID) {
            None => (None, Arc::default()),
            Some(&head) => self.chain(head, before.as_deref()).await?,
        };
        let loaded = Arc::new(Loaded {
            table_id,
            version,
            head,
            files,
            per_file,
        });
        remember(url, Arc::clone(&loaded));
        Ok(loaded)
    }

    /// The files the chain from `head` lists, reading records until one
    /// that lists them all or one whose set `before` already holds.
    async fn chain(
        &self,
        head: i64,
        before: Option<&Loaded>,
    ) -> Result<(Option<(i64, u32)>, Arc<HashSet<String>>)> {
        let store = self.log_store.object_store(None);
        let mut id = head;
        let mut depth = None;
        let mut found: Vec<Vec<String>> = Vec::new();
        let base = loop {
            if let Some(k) = before.filter(|k| k.head.is_some_and(|(h, _)| h == id)) {
                depth.get_or_insert(k.head.map_or(0, |(_, d)| d));
                break Some(Arc::clone(&k.files));
            }
            let path = record_path(id);
            let unreadable = |reason: String| Error::LoadRecordUnreadable {
                table: self.name.to_string(),
                path: format!("{RECORD_FOLDER}/{}", path.filename().unwrap_or_default()),
                reason,
            };
            let bytes = match store.get(&path).await {
                Ok(got) => got.bytes().await,
                Err(e) => Err(e),
            }
            .map_err(|e| match e {
                deltalake::ObjectStoreError::NotFound { .. } => unreadable("missing".into()),
                other => unreadable(format!("unreadable ({other})")),
            })?;
            let record: Record =
                serde_json::from_slice(&bytes).map_err(|e| unreadable(format!("damaged ({e})")))?;
            depth.get_or_insert(record.depth);
            found.push(record.files);
            if found.len() > 1024 {
                return Err(unreadable("part of a chain that does not end".into()));
            }
            match record.previous {
                Some(previous) => id = previous,
                None => break None,
            }
        };
        let files = match base {
            Some(base) if found.is_empty() => base,
            base => {
                let mut all: HashSet<String> = base.map(|b| (*b).clone()).unwrap_or_default();
                all.extend(found.into_iter().flatten());
                Arc::new(all)
            }
        };
        Ok((Some((head, depth.unwrap_or(0))), files))
    }

    /// Writes `input` and records `loaded` as loaded, in one commit; the
    /// rows written. A table without columns gets them from `input` (all
    /// nullable) and `options`' comment and properties.
    pub async fn write(
        &self,
        input: Arc<dyn ExecutionPlan>,
        state: Arc<SessionState>,
        mut options: WriteOptions,
        loaded: &[String],
    ) -> Result<u64> {
        let before = self.loaded().await?;
        let record = self.write_record(&before, loaded).await?;
        options.load_record = Some(record.0);
        options.operation = Some("COPY INTO");
        if self.snapshot.is_none() {
            options.mode = WriteMode::ErrorIfExists;
            options.all_nullable = true;
        }
        let written = write_plan_at(
            &self.name,
            Arc::clone(&self.log_store),
            self.snapshot.clone(),
            input,
            state,
            options,
        )
        .await;
        let (rows, version) = match written {
            Ok(written) => written,
            Err(e) => {
                // A lost commit race certainly left the record out of the
                // log: it goes. After any other failure the commit may
                // have landed, so the record stays.
                if e.sqlstate() == crate::SqlState::SERIALIZATION_FAILURE {
                    let gone = self
                        .log_store
                        .object_store(None)
                        .delete(&record_path(record.0))
                        .await;
                    if let Err(cause) = gone {
                        tracing::debug!(table = %self.name, %cause, "an unused COPY INTO record stays");
                    }
                }
                return Err(e);
            }
        };
        // A table this load created is read from its log next time.
        if let Some(snapshot) = &self.snapshot {
            let mut files = (*before.files).clone();
            files.extend(loaded.iter().cloned());
            remember(
                self.url(),
                Arc::new(Loaded {
                    table_id: snapshot.metadata().id().to_string(),
                    version,
                    head: Some(record),
                    files: Arc::new(files),
                    per_file: Arc::clone(&before.per_file),
                }),
            );
        }
        Ok(rows)
    }

    /// Writes the record of a load of `loaded` after `before`: its id and
    /// depth.
    async fn write_record(&self, before: &Loaded, loaded: &[String]) -> Result<(i64, u32)> {
        let previous = before.head.map(|(id, _)| id);
        let id = next_id(previous);
        let record = match before.head {
            Some((previous, depth)) if depth + 1 < CHAIN => Record {
                previous: Some(previous),
                depth: depth + 1,
                files: loaded.to_vec(),
            },
            _ => {
                let mut files: Vec<String> = before.files.iter().cloned().collect();
                files.extend(loaded.iter().cloned());
                files.sort_unstable();
                Record {
                    previous: None,
                    depth: 0,
                    files,
                }
            }
        };
        let depth = record.depth;
        let body = serde_json::to_vec(&record).map_err(|e| Error::Internal(e.to_string()))?;
        self.log_store
            .object_store(None)
            .put(&record_path(id), PutPayload::from(body))
            .await
            .map_err(|e| Error::Storage {
                op: "writing COPY INTO's record of loaded files",
                source: Box::new(e),
            })?;
        Ok((id, depth))
    }
}
