//! The warehouse catalog: which schemas and tables exist and where their
//! Delta tables live.
//!
//! A managed table `schema.table` lives at `<root>/<schema>/<table>/`; a schema
//! is a folder holding the marker object [`SCHEMA_MARKER`], so that it exists
//! even when empty and on object stores that have no folders. There is no
//! catalog database: the warehouse itself is the catalog, so several servers on
//! one root see the same tables. Names are case-insensitive and stored lower
//! case; `public` is another name for `default`.
//!
//! The rest of what the warehouse holds besides tables is beside it:
//! views (`views.rs`), privileges (`grants.rs`), the listings of a log that
//! statements share (`listings.rs`), and the warehouse as DataFusion sees
//! it, a catalog of schemas of tables (`schema_provider.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use deltalake::logstore::object_store::{ObjectStoreExt, PutMode, PutPayload};
use deltalake::logstore::{store_for, ObjectStoreRef};
use deltalake::{DeltaTable, DeltaTableBuilder, Path};
use futures::{StreamExt, TryStreamExt};
use url::Url;

use crate::error::{Error, Result};
use crate::table::handle::commit_timestamp;

pub mod grants;
mod listings;
mod schema_provider;
mod session;
mod views;
pub use schema_provider::{LakeCatalogProvider, LakeSchemaProvider, ViewEntry};
pub use session::{Reads, SessionCatalog};
pub use views::{StoredView, ViewColumn, ViewWrite, VIEW_MARKER};

/// The object that marks a folder under the root as a schema.
pub const SCHEMA_MARKER: &str = ".lakegres-schema";

/// The object that stands for a table created without columns
/// (`CREATE TABLE t;`) until its first COPY INTO gives it the files' schema.
/// Delta cannot hold a table without columns that delta-rs (or DuckDB) could
/// open, so there is no `_delta_log` until then; the object keeps what the
/// CREATE said about the table for that first commit.
pub const SCHEMALESS_MARKER: &str = "_lakegres_schemaless.json";

/// The object that makes `schema.table` an external table: it holds the
/// URL of the Delta table (`{"location": "s3://bucket/landing/t/"}`), which
/// lies inside a file root. Dropping the table deletes this object only.
pub const EXTERNAL_MARKER: &str = "_lakegres_external.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct ExternalTable {
    location: String,
}

/// What `CREATE TABLE t` without columns recorded for the table's first commit.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct SchemalessTable {
    /// The table comment.
    pub comment: Option<String>,
    /// The table properties.
    pub configuration: HashMap<String, Option<String>>,
}

/// The schema unqualified names resolve to.
pub use lakegres_common::names::DEFAULT_SCHEMA;

/// The name of a version's commit file in `_delta_log`.
fn commit_file(version: u64) -> String {
    format!("{version:020}.json")
}

/// A point in a table's history.
#[derive(Debug, Clone, PartialEq)]
pub enum TableAt {
    Version(i64),
    Timestamp(chrono::DateTime<chrono::Utc>),
}

impl std::fmt::Display for TableAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Version(v) => write!(f, "version {v}"),
            Self::Timestamp(t) => write!(f, "timestamp {t}"),
        }
    }
}

/// How long a listing of schemas and tables is trusted before it is re-read;
/// only name listings (pg_catalog, SHOW) and the map of external tables'
/// locations use it, never table contents.
const LISTING_TTL: Duration = Duration::from_secs(1);

pub use lakegres_common::names::{normalize_schema, TableName};

/// External tables by location, read from every table's marker: for the
/// privilege checks of reads by path ([`Catalog::external_table_at`]).
#[derive(Default)]
struct Externals {
    read_at: Option<Instant>,
    at: HashMap<Url, TableName>,
}

/// Each schema's tables, and its views.
type ListedNames = (
    BTreeMap<String, BTreeSet<String>>,
    BTreeMap<String, BTreeMap<String, Arc<StoredView>>>,
);

#[derive(Default)]
struct Listing {
    read_at: Option<Instant>,
    /// Bumped by every change this server makes to the names; a refresh
    /// that listed the warehouse while one was made does not store its
    /// (older) listing over it.
    generation: u64,
    /// Each schema's tables.
    schemas: BTreeMap<String, BTreeSet<String>>,
    /// Each schema's views, with what they store (pg_views and
    /// `pg_get_viewdef` answer from here).
    views: BTreeMap<String, BTreeMap<String, Arc<StoredView>>>,
}

/// A table as last loaded, with the identity of its latest commit file (its
/// write time on a local disk, its ETag on an object store, whose times
/// have one-second steps), which tells a table dropped and created again
/// (by another server) from the same.
#[derive(Clone)]
struct Loaded {
    table: DeltaTable,
    committed: String,
    /// The version the table was last read whole at (from its latest
    /// checkpoint); see `load_known`.
    read_whole_at: u64,
}

/// The catalog of one warehouse root.
pub struct Catalog {
    root: Url,
    /// The root's folder when the warehouse is on a local disk.
    local_root: Option<std::path::PathBuf>,
    root_path: Path,
    store: ObjectStoreRef,
    storage_options: HashMap<String, String>,
    listing: RwLock<Listing>,
    externals: RwLock<Externals>,
    /// Tables loaded before: brought up to date from their log's new
    /// commits instead of read again (a point query spent more time loading
    /// the table than reading its row).
    loaded: std::sync::Mutex<HashMap<TableName, Loaded>>,
    /// Each table's latest version known to be visible: not one a
    /// transaction still being committed made ([`Self::load_delta`]).
    visible: std::sync::Mutex<HashMap<TableName, (u64, Option<Made>)>>,
    /// Each table's owner, read once from its first commit; forgotten with
    /// the table when this server drops it.
    owners: std::sync::Mutex<HashMap<TableName, Option<String>>>,
    /// Each table's appends waiting to be committed together.
    pub(crate) groups: crate::commit::queues::Groups,
    /// Listings of tables' logs, shared by statements that wait together.
    listings: listings::SharedListings,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("root", &self.root.as_str())
            .finish()
    }
}

/// A multi-table transaction a commit belongs to: its id and tables.
#[derive(Debug, Clone)]
pub(crate) struct Made {
    pub(crate) id: String,
    pub(crate) tables: Vec<TableName>,
}

impl Catalog {
    /// Opens (and creates, if new) the warehouse at `root`, a local path or a
    /// URL, and makes sure the `default` schema exists.
    pub async fn open(root: &str, storage_options: HashMap<String, String>) -> Result<Arc<Self>> {
        crate::store::requests::count_requests();
        let root = root_url(root)?;
        let store =
            store_for(&root, storage_options.clone()).map_err(|e| Error::InvalidWarehouse {
                location: root.to_string(),
                reason: e.to_string(),
            })?;
        // `store_for` returns a store already prefixed at the root.
        let root_path = Path::default();
        let local_root = match root.scheme() {
            "file" => root.to_file_path().ok(),
            _ => None,
        };
        if local_root.is_none() {
            crate::store::storage::check_conditional_put(&store, root.as_str()).await?;
        }
        let catalog = Arc::new(Self {
            local_root,
            root,
            root_path,
            store,
            storage_options,
            listing: RwLock::new(Listing::default()),
            externals: RwLock::new(Externals::default()),
            loaded: std::sync::Mutex::new(HashMap::new()),
            visible: std::sync::Mutex::new(HashMap::new()),
            owners: std::sync::Mutex::new(HashMap::new()),
            groups: Default::default(),
            listings: Default::default(),
        });
        catalog.create_schema(DEFAULT_SCHEMA, true).await?;
        catalog.refresh().await?;
        Ok(catalog)
    }

    /// The warehouse root URL (ends with `/`).
    pub fn root(&self) -> &Url {
        &self.root
    }

    /// The warehouse's object store, rooted at the warehouse.
    pub(crate) fn store(&self) -> ObjectStoreRef {
        Arc::clone(&self.store)
    }

    /// The warehouse folder when it is on a local disk.
    pub fn local_root(&self) -> Option<&std::path::Path> {
        self.local_root.as_deref()
    }

    /// Options for object stores (credentials, endpoints) the tables need.
    pub fn storage_options(&self) -> &HashMap<String, String> {
        &self.storage_options
    }

    pub(crate) fn path(&self, parts: &[&str]) -> Path {
        parts
            .iter()
            .fold(self.root_path.clone(), |p, part| p.join(*part))
    }

    /// The location of a managed table.
    pub fn table_url(&self, name: &TableName) -> Result<Url> {
        self.root
            .join(&format!("{}/{}/", name.schema, name.table))
            .map_err(|e| Error::InvalidWarehouse {
                location: self.root.to_string(),
                reason: e.to_string(),
            })
    }

    /// Whether the schema exists (reads storage).
    pub async fn schema_exists(&self, schema: &str) -> Result<bool> {
        let schema = normalize_schema(schema)?;
        match self.store.head(&self.path(&[&schema, SCHEMA_MARKER])).await {
            Ok(_) => Ok(true),
            Err(deltalake::ObjectStoreError::NotFound { .. }) => Ok(false),
            Err(source) => Err(Error::Storage {
                op: "looking up a schema",
                source: Box::new(source),
            }),
        }
    }

    /// Creates a schema; an existing one is an error unless `if_not_exists`.
    pub async fn create_schema(&self, schema: &str, if_not_exists: bool) -> Result<()> {
        let schema = normalize_schema(schema)?;
        if self.schema_exists(&schema).await? {
            return if if_not_exists {
                Ok(())
            } else {
                Err(Error::SchemaExists { schema })
            };
        }
        self.store
            .put(
                &self.path(&[&schema, SCHEMA_MARKER]),
                PutPayload::from_static(b"{}"),
            )
            .await
            .map_err(|source| Error::Storage {
                op: "creating a schema",
                source: Box::new(source),
            })?;
        self.note_schema(&schema);
        Ok(())
    }

    /// Drops a schema: with `cascade` its tables too, otherwise it must be empty.
    pub async fn drop_schema(&self, schema: &str, if_exists: bool, cascade: bool) -> Result<()> {
        let schema = normalize_schema(schema)?;
        if !self.schema_exists(&schema).await? {
            return if if_exists {
                Ok(())
            } else {
                Err(Error::SchemaNotFound { schema })
            };
        }
        let (tables, views) = self.list_relations(&schema).await?;
        if (!tables.is_empty() || !views.is_empty()) && !cascade {
            return Err(Error::SchemaNotEmpty { schema });
        }
        for table in tables {
            self.drop_table(&TableName::new(&schema, &table)?).await?;
        }
        self.delete_prefix(&self.path(&[&schema])).await?;
        if let Ok(mut listing) = self.listing.write() {
            listing.generation += 1;
            listing.schemas.remove(&schema);
            listing.views.remove(&schema);
        }
        Ok(())
    }

    /// The schemas, read from storage.
    pub async fn list_schemas(&self) -> Result<Vec<String>> {
        let listed = self
            .store
            .list_with_delimiter(Some(&self.root_path))
            .await
            .map_err(|source| Error::Storage {
                op: "listing schemas",
                source: Box::new(source),
            })?;
        let mut schemas = Vec::new();
        for prefix in listed.common_prefixes {
            let Some(name) = prefix.filename() else {
                continue;
            };
            if self.schema_exists(name).await.unwrap_or(false) {
                schemas.push(name.to_string());
            }
        }
        schemas.sort();
        Ok(schemas)
    }

    /// The tables of a schema, read from storage.
    pub async fn list_tables(&self, schema: &str) -> Result<Vec<String>> {
        Ok(self.list_relations(schema).await?.0)
    }

    /// The views of a schema, read from storage.
    pub async fn list_views(&self, schema: &str) -> Result<Vec<String>> {
        Ok(self.list_relations(schema).await?.1)
    }

    /// The tables and the views of a schema, read from storage.
    async fn list_relations(&self, schema: &str) -> Result<(Vec<String>, Vec<String>)> {
        let schema = normalize_schema(schema)?;
        let listed = self
            .store
            .list_with_delimiter(Some(&self.path(&[&schema])))
            .await
            .map_err(|source| Error::Storage {
                op: "listing tables",
                source: Box::new(source),
            })?;
        let (mut tables, mut views) = (Vec::new(), Vec::new());
        for prefix in listed.common_prefixes {
            let Some(name) = prefix.filename() else {
                continue;
            };
            if self.has_delta_log(&prefix).await?
                || self.has_marker(&prefix, SCHEMALESS_MARKER).await?
                || self.has_marker(&prefix, EXTERNAL_MARKER).await?
            {
                tables.push(name.to_string());
            } else if self.is_view_folder(&prefix).await? {
                views.push(name.to_string());
            }
        }
        tables.sort();
        views.sort();
        Ok((tables, views))
    }

    async fn has_delta_log(&self, table_path: &Path) -> Result<bool> {
        let mut log = self
            .store
            .list(Some(&table_path.clone().join("_delta_log")));
        match log.next().await {
            None => Ok(false),
            Some(Ok(_)) => Ok(true),
            Some(Err(source)) => Err(Error::Storage {
                op: "looking up a table",
                source: Box::new(source),
            }),
        }
    }

    /// Whether a table exists (reads storage), with or without columns.
    pub async fn table_exists(&self, name: &TableName) -> Result<bool> {
        let path = self.path(&[&name.schema, &name.table]);
        Ok(self.has_delta_log(&path).await?
            || self.has_marker(&path, SCHEMALESS_MARKER).await?
            || self.has_marker(&path, EXTERNAL_MARKER).await?)
    }

    async fn has_marker(&self, table_path: &Path, marker: &str) -> Result<bool> {
        match self.store.head(&table_path.clone().join(marker)).await {
            Ok(_) => Ok(true),
            Err(deltalake::ObjectStoreError::NotFound { .. }) => Ok(false),
            Err(source) => Err(Error::Storage {
                op: "looking up a table",
                source: Box::new(source),
            }),
        }
    }

    /// Creates a table without columns (see [`SCHEMALESS_MARKER`]); an
    /// existing table of that name is an error.
    pub async fn create_schemaless(&self, name: &TableName, table: &SchemalessTable) -> Result<()> {
        let body = serde_json::to_vec(table).map_err(|e| Error::Internal(e.to_string()))?;
        self.create_marker(name, SCHEMALESS_MARKER, body).await
    }

    /// Creates a table that exists as a marker object in its folder; an
    /// existing table of that name (even one made at this moment by
    /// another server: the put is conditional) is an error.
    async fn create_marker(&self, name: &TableName, marker: &str, body: Vec<u8>) -> Result<()> {
        let exists = || Error::TableExists {
            schema: name.schema.clone(),
            table: name.table.clone(),
        };
        if self.table_exists(name).await? {
            return Err(exists());
        }
        let marker = self.path(&[&name.schema, &name.table, marker]);
        match self
            .store
            .put_opts(&marker, PutPayload::from(body), PutMode::Create.into())
            .await
        {
            Ok(_) => Ok(()),
            Err(deltalake::ObjectStoreError::AlreadyExists { .. }) => Err(exists()),
            Err(source) => Err(Error::Storage {
                op: "creating a table",
                source: Box::new(source),
            }),
        }
    }

    /// What a table without columns recorded, or `None` when the table has
    /// a Delta log (or does not exist).
    pub async fn schemaless(&self, name: &TableName) -> Result<Option<SchemalessTable>> {
        let path = self.path(&[&name.schema, &name.table]);
        if self.has_delta_log(&path).await? {
            return Ok(None);
        }
        let Some(bytes) = self.read_marker(&path.join(SCHEMALESS_MARKER)).await? else {
            return Ok(None);
        };
        // A marker we cannot parse still marks a table without columns.
        Ok(Some(serde_json::from_slice(&bytes).unwrap_or_default()))
    }

    /// A marker object's body, `None` when there is none.
    async fn read_marker(&self, marker: &Path) -> Result<Option<bytes::Bytes>> {
        let read = |source| Error::Storage {
            op: "reading a table",
            source: Box::new(source),
        };
        match self.store.get(marker).await {
            Ok(got) => got.bytes().await.map(Some).map_err(read),
            Err(deltalake::ObjectStoreError::NotFound { .. }) => Ok(None),
            Err(source) => Err(read(source)),
        }
    }

    /// Removes the marker once the table's first commit gave it columns.
    pub async fn clear_schemaless(&self, name: &TableName) -> Result<()> {
        self.delete_marker(name, SCHEMALESS_MARKER, "creating a table")
            .await
    }

    async fn delete_marker(&self, name: &TableName, marker: &str, op: &'static str) -> Result<()> {
        let marker = self.path(&[&name.schema, &name.table, marker]);
        match self.store.delete(&marker).await {
            Ok(()) | Err(deltalake::ObjectStoreError::NotFound { .. }) => Ok(()),
            Err(source) => Err(Error::Storage {
                op,
                source: Box::new(source),
            }),
        }
    }

    /// Records an external table whose Delta table is at `location`; an
    /// existing table of that name is an error.
    pub async fn create_external(&self, name: &TableName, location: &Url) -> Result<()> {
        let body = serde_json::to_vec(&ExternalTable {
            location: location.to_string(),
        })
        .map_err(|e| Error::Internal(e.to_string()))?;
        self.create_marker(name, EXTERNAL_MARKER, body).await?;
        // Seen at once by this server's reads by path; another server's
        // within LISTING_TTL (until then its folder is for admins only).
        if let Ok(mut externals) = self.externals.write() {
            externals.read_at = None;
        }
        Ok(())
    }

    /// Removes the name of an external table whose creating commit failed
    /// (its marker only: the location's files are not the catalog's).
    pub async fn forget_external(&self, name: &TableName) -> Result<()> {
        self.delete_marker(name, EXTERNAL_MARKER, "removing a table")
            .await
    }

    /// Where an external table's Delta table is, or `None` for a managed
    /// (or missing) table.
    pub async fn external_location(&self, name: &TableName) -> Result<Option<Url>> {
        let marker = self.path(&[&name.schema, &name.table, EXTERNAL_MARKER]);
        let Some(bytes) = self.read_marker(&marker).await? else {
            return Ok(None);
        };
        let invalid = |reason: String| Error::InvalidWarehouse {
            location: marker.to_string(),
            reason,
        };
        let table: ExternalTable =
            serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
        Url::parse(&table.location)
            .map(Some)
            .map_err(|e| invalid(e.to_string()))
    }

    /// The external table registered at `location` (a folder URL, as
    /// recorded), if any: for privilege checks of reads by path, not for
    /// statements on tables. The locations are kept in memory and read
    /// again from every table's marker once older than `LISTING_TTL` (so
    /// another server's CREATE is seen within it); a table found there is
    /// checked against its marker each time (one read), so a table dropped,
    /// renamed or created again elsewhere never lends its name to a folder.
    pub async fn external_table_at(&self, location: &Url) -> Result<Option<TableName>> {
        let known = self.externals.read().ok().and_then(|e| {
            e.read_at
                .filter(|t| t.elapsed() <= LISTING_TTL)
                .map(|_| e.at.get(location).cloned())
        });
        match known {
            Some(None) => return Ok(None),
            Some(Some(name)) => {
                let now = self.external_location(&name).await?;
                if now.as_ref() == Some(location) {
                    return Ok(Some(name));
                }
            }
            None => {}
        }
        Ok(self.read_external_locations().await?.get(location).cloned())
    }

    /// Every external table's location, read from every table's marker
    /// (and kept for [`Self::external_table_at`]): for the checks of a new
    /// table's LOCATION against the folders other tables hold.
    pub async fn external_locations(&self) -> Result<HashMap<Url, TableName>> {
        self.read_external_locations().await
    }

    async fn read_external_locations(&self) -> Result<HashMap<Url, TableName>> {
        let mut at = HashMap::new();
        for schema in self.list_schemas().await? {
            for table in self.list_tables(&schema).await? {
                let name = TableName::new(&schema, &table)?;
                if let Some(url) = self.external_location(&name).await? {
                    at.insert(url, name);
                }
            }
        }
        if let Ok(mut externals) = self.externals.write() {
            *externals = Externals {
                read_at: Some(Instant::now()),
                at: at.clone(),
            };
        }
        Ok(at)
    }

    /// Where a table's Delta table is: its external location, or its
    /// folder in the warehouse.
    pub async fn location(&self, name: &TableName) -> Result<Url> {
        match self.external_location(name).await? {
            Some(url) => Ok(url),
            None => self.table_url(name),
        }
    }

    /// A table handle for a Delta table that may not exist yet at `url`.
    pub fn new_table_at(&self, name: &TableName, url: &Url) -> Result<crate::Table> {
        DeltaTableBuilder::from_url(url.clone())
            .map(|b| b.with_storage_options(self.storage_options.clone()))
            .and_then(|b| b.build())
            .map(crate::Table::new)
            .map_err(|source| Error::delta("opening", name.to_string(), source))
    }

    /// Loads the Delta table at `url` (an external location), if there is one.
    pub async fn load_at(&self, url: &Url) -> Option<crate::Table> {
        DeltaTableBuilder::from_url(url.clone())
            .ok()?
            .with_storage_options(self.storage_options.clone())
            .load()
            .await
            .ok()
            .map(crate::Table::new)
    }

    /// The user who created the table: `commitInfo.userName` of its first
    /// commit, as Databricks and Lakegres record it. `None` when that
    /// commit names no user (another engine wrote it) or is gone (log
    /// clean-up); the catalog then shows the bootstrap user.
    pub async fn table_owner(&self, name: &TableName) -> Option<String> {
        if let Some(known) = self.owners.lock().ok()?.get(name) {
            return known.clone();
        }
        let table = self.load_delta(name).await.ok()?;
        let first = table.log_store().read_commit_entry(0).await.ok()?;
        let owner = first.and_then(|bytes| {
            String::from_utf8_lossy(&bytes).lines().find_map(|line| {
                let action: serde_json::Value = serde_json::from_str(line).ok()?;
                action
                    .get("commitInfo")?
                    .get("userName")?
                    .as_str()
                    .map(str::to_string)
            })
        });
        if let Ok(mut owners) = self.owners.lock() {
            owners.insert(name.clone(), owner.clone());
        }
        owner
    }

    /// Loads the latest committed version of a table.
    pub async fn load_table(&self, name: &TableName) -> Result<crate::Table> {
        self.load_delta(name).await.map(crate::Table::new)
    }

    /// [`Self::load_table`], as delta-rs' table: its latest version that
    /// is not part of a transaction still being committed.
    pub(crate) async fn load_delta(&self, name: &TableName) -> Result<DeltaTable> {
        self.load_read(name, None).await
    }

    /// [`Self::load_delta`] for a statement (or block) that has read
    /// `reads` so far, and reads `name` now at a version consistent with
    /// them: a transaction over several tables is seen on all of them or
    /// on none.
    pub(crate) async fn load_read(
        &self,
        name: &TableName,
        reads: Option<&crate::Reads>,
    ) -> Result<DeltaTable> {
        let table = self.load_latest(name).await?;
        self.visible(name, table, reads).await
    }

    /// The latest version in the log, whatever it belongs to.
    pub(crate) async fn load_latest(&self, name: &TableName) -> Result<DeltaTable> {
        if let Some(table) = self.load_known(name).await {
            return Ok(table);
        }
        let table = self.load_from_log(name).await?;
        let version = table.version().unwrap_or_default();
        self.remember(name, &table, version).await;
        Ok(table)
    }

    /// `table`, or its version before the ones a transaction that changes
    /// several tables has committed while its record is still in the
    /// warehouse (`crate::commit::transaction_record`), or that `reads`
    /// (what the statement read before) has on another table at a version
    /// before it: so no session of any server sees one of its tables
    /// changed and another not. What a version belongs to is remembered
    /// (versions do not change).
    async fn visible(
        &self,
        name: &TableName,
        mut table: DeltaTable,
        reads: Option<&crate::Reads>,
    ) -> Result<DeltaTable> {
        // Each step back is a version of another transaction.
        for _ in 0..16 {
            let Some(version) = table.version() else {
                return Ok(table);
            };
            let known = self
                .visible
                .lock()
                .ok()
                .and_then(|v| v.get(name).cloned())
                .filter(|(v, _)| *v == version)
                .map(|(_, made)| made);
            let made = match &known {
                Some(made) => made.clone(),
                None => self.made_by(&table, version).await,
            };
            let hide = match &made {
                None => false,
                Some(made) if reads.is_some_and(|r| r.reads_before(&made.id)) => true,
                Some(made) if known.is_none() && self.record_exists(&made.id).await => {
                    if let Some(r) = reads {
                        r.read_before(&made.id);
                    }
                    true
                }
                Some(made) => match reads {
                    Some(r) if self.read_before_elsewhere(name, made, r).await => {
                        r.read_before(&made.id);
                        true
                    }
                    _ => false,
                },
            };
            if !hide {
                if known.is_none() {
                    if let Ok(mut visible) = self.visible.lock() {
                        visible.insert(name.clone(), (version, made));
                    }
                }
                if let Some(r) = reads {
                    r.loaded(name, version);
                }
                return Ok(table);
            }
            if version == 0 {
                // Created by a transaction not (yet) seen.
                return Err(Error::TableNotFound {
                    schema: name.schema.clone(),
                    table: name.table.clone(),
                });
            }
            table
                .load_version(version - 1)
                .await
                .map_err(|e| Error::delta("loading", name.to_string(), e))?;
        }
        Ok(table)
    }

    /// The multi-table transaction `version` of `table` belongs to, if any.
    async fn made_by(&self, table: &DeltaTable, version: u64) -> Option<Made> {
        let entry = table.log_store().read_commit_entry(version).await.ok()??;
        crate::commit::transaction_record::made_by(&entry)
    }

    async fn record_exists(&self, id: &str) -> bool {
        let record = crate::commit::transaction_record::record_path(self, id);
        self.store.head(&record).await.is_ok()
    }

    /// Whether the statement read another table of `made` at a version
    /// before that transaction's commit to it.
    async fn read_before_elsewhere(
        &self,
        name: &TableName,
        made: &Made,
        reads: &crate::Reads,
    ) -> bool {
        for other in made.tables.iter().filter(|t| *t != name) {
            let Some(read) = reads.version_of(other) else {
                continue;
            };
            let Ok(latest) = self.load_latest(other).await else {
                continue;
            };
            for version in read + 1..=latest.version().unwrap_or(0) {
                let Ok(Some(entry)) = latest.log_store().read_commit_entry(version).await else {
                    continue;
                };
                let id = crate::commit::transaction_record::transaction_of(&entry);
                if id.as_deref() == Some(made.id.as_str()) {
                    return true;
                }
            }
        }
        false
    }

    /// A table loaded before, brought up to date: `None` when it was not
    /// loaded, or its commit file changed (dropped and created again), or
    /// anything fails — the caller then reads it whole.
    async fn load_known(&self, name: &TableName) -> Option<DeltaTable> {
        let known = self.loaded.lock().ok()?.get(name).cloned()?;
        let version = known.table.version()?;
        let log = self.path(&[&name.schema, &name.table, "_delta_log"]);
        let (this, next) = (
            log.clone().join(commit_file(version)),
            log.clone().join(commit_file(version + 1)),
        );
        let (committed, next) = match &self.local_root {
            Some(_) => (self.modified(&this).await, self.modified(&next).await),
            None => self.both_listed(&log, version, &this, &next).await,
        };
        if committed? != Some(known.committed) {
            return None;
        }
        // Versions are consecutive: no next commit file, no newer version.
        match next? {
            None => Some(known.table),
            // delta-rs keeps each commit brought in incrementally as a batch
            // of its own, and every later write works through all of them:
            // after thousands of commits an INSERT took half a second. Once
            // a checkpoint interval has passed since the table was read
            // whole, read it whole again, from the newer checkpoint.
            Some(_)
                if version + 1 - known.read_whole_at
                    >= crate::commit::upkeep::checkpoint_interval(&known.table) =>
            {
                None
            }
            Some(_) => {
                let mut table = known.table;
                let mut behind = self.catch_up_with_ours(&mut table, &log).await?;
                if behind && self.groups.await_in_flight(&table).await {
                    behind = self.catch_up_with_ours(&mut table, &log).await?;
                }
                if behind {
                    table.update_incremental(None).await.ok()?;
                }
                self.remember(name, &table, known.read_whole_at).await;
                Some(table)
            }
        }
    }

    /// Moves `table` to the version this server's latest commit to it left
    /// it at, when that is newer; whether the log has a commit past it
    /// still (`None` when that cannot be told).
    async fn catch_up_with_ours(&self, table: &mut DeltaTable, log: &Path) -> Option<bool> {
        match self.groups.newer(table) {
            Some(newer) => {
                let at = newer.version();
                table.state = Some(newer);
                Some(
                    self.modified(&log.clone().join(commit_file(at + 1)))
                        .await?
                        .is_some(),
                )
            }
            None => Some(true),
        }
    }

    /// [`Self::modified`] of the commit files `this` (of `version`) and
    /// `next`, from one listing of the log from `version` on: on an object
    /// store one request instead of two HEADs for every statement's look
    /// at its cached table. Statements waiting while one lists share the
    /// next listing ([`listings`]).
    async fn both_listed(
        &self,
        log: &Path,
        version: u64,
        this: &Path,
        next: &Path,
    ) -> listings::Listed {
        let list_now = async {
            let offset = log.clone().join(format!("{version:020}").as_str());
            let mut listing = self.store.list_with_offset(Some(log), &offset);
            let (mut found_this, mut found_next) = (None, None);
            while let Some(meta) = listing.next().await {
                let Ok(meta) = meta else {
                    return (None, None);
                };
                // Listings come in key order: past `next`, nothing more to find.
                if &meta.location > next {
                    break;
                }
                let identity = meta
                    .e_tag
                    .clone()
                    .unwrap_or_else(|| meta.last_modified.to_rfc3339());
                if &meta.location == this {
                    found_this = Some(identity);
                } else if &meta.location == next {
                    found_next = Some(identity);
                    break;
                }
            }
            (Some(found_this), Some(found_next))
        };
        self.listings.list(log, version, list_now).await
    }

    /// Which write of a warehouse file is there: `Some(None)` when it does
    /// not exist, `None` when that cannot be told.
    async fn modified(&self, path: &Path) -> Option<Option<String>> {
        if let Some(root) = &self.local_root {
            // On a local disk a stat takes microseconds; object_store would
            // hop to the blocking pool for it, which costs a point query more
            // than the stat itself.
            return match std::fs::metadata(root.join(path.as_ref())) {
                Ok(meta) => meta.modified().ok().map(|t| Some(format!("{t:?}"))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(None),
                Err(_) => None,
            };
        }
        match self.store.head(path).await {
            Ok(meta) => Some(Some(
                meta.e_tag
                    .unwrap_or_else(|| meta.last_modified.to_rfc3339()),
            )),
            Err(deltalake::ObjectStoreError::NotFound { .. }) => Some(None),
            Err(_) => None,
        }
    }

    async fn remember(&self, name: &TableName, table: &DeltaTable, read_whole_at: u64) {
        let Some(version) = table.version() else {
            return;
        };
        let log = self.path(&[&name.schema, &name.table, "_delta_log"]);
        let Some(Some(committed)) = self.modified(&log.join(commit_file(version))).await else {
            return;
        };
        self.keep(name, table, committed, read_whole_at);
    }

    fn keep(&self, name: &TableName, table: &DeltaTable, committed: String, read_whole_at: u64) {
        if let Ok(mut loaded) = self.loaded.lock() {
            // A statement finishing late hands back an older version of the
            // table than one already cached: keep the newer (the same table,
            // by its Delta id; one created again in its place replaces it).
            let id = |t: &DeltaTable| t.snapshot().ok().map(|s| s.metadata().id().to_string());
            if let Some(cached) = loaded.get(name) {
                if cached.table.version() > table.version() && id(&cached.table) == id(table) {
                    return;
                }
            }
            loaded.insert(
                name.clone(),
                Loaded {
                    table: table.clone(),
                    committed,
                    read_whole_at,
                },
            );
        }
    }

    /// Takes `table`, as a write of this server's just committed it, into
    /// the cache, and returns that commit's log entry (for the audit line).
    /// The entry is read once: its ETag (or write time) tells this commit
    /// from another server's at the same version, as [`Self::remember`]'s
    /// HEAD does. External tables are not cached; their entry is read.
    pub(crate) async fn adopt(&self, name: &TableName, table: &DeltaTable) -> Option<bytes::Bytes> {
        let version = table.version()?;
        let managed = self.table_url(name).ok().is_some_and(|url| {
            url.as_str().trim_end_matches('/') == table.table_url().as_str().trim_end_matches('/')
        });
        if !managed {
            return table.log_store().read_commit_entry(version).await.ok()?;
        }
        let path = self
            .path(&[&name.schema, &name.table, "_delta_log"])
            .join(commit_file(version));
        let (committed, entry) = match &self.local_root {
            // The same identity `modified` gives a local file; the commit
            // just written is read in place, as `modified` stats it, not
            // through a hop to the blocking pool.
            Some(root) => {
                let committed = self.modified(&path).await??;
                let entry = std::fs::read(root.join(path.as_ref())).ok()?;
                (committed, bytes::Bytes::from(entry))
            }
            None => {
                let got = self.store.get(&path).await.ok()?;
                let committed = got
                    .meta
                    .e_tag
                    .clone()
                    .unwrap_or_else(|| got.meta.last_modified.to_rfc3339());
                (committed, got.bytes().await.ok()?)
            }
        };
        let known = self.loaded.lock().ok()?.get(name).cloned();
        let read_whole_at = known
            .map(|k| k.read_whole_at)
            .filter(|at| *at <= version)
            .unwrap_or(version);
        // The write's table is the cached one plus the commit brought in
        // incrementally: past a checkpoint interval the next statement
        // reads the table whole instead (see `load_known`).
        if version - read_whole_at >= crate::commit::upkeep::checkpoint_interval(table) {
            self.forget(name);
        } else {
            self.keep(name, table, committed, read_whole_at);
        }
        // A commit of no multi-table transaction is visible: the next
        // statement need not read it again to tell.
        if crate::commit::transaction_record::transaction_of(&entry).is_none() {
            if let Ok(mut visible) = self.visible.lock() {
                visible.insert(name.clone(), (version, None));
            }
        }
        Some(entry)
    }

    fn forget(&self, name: &TableName) {
        if let Ok(mut loaded) = self.loaded.lock() {
            loaded.remove(name);
        }
        if let Ok(mut owners) = self.owners.lock() {
            owners.remove(name);
        }
        if let Ok(mut visible) = self.visible.lock() {
            visible.remove(name);
        }
    }

    async fn load_from_log(&self, name: &TableName) -> Result<DeltaTable> {
        let url = self.table_url(name)?;
        let loaded = crate::commit::damaged_checkpoint::load(&url, &self.storage_options).await;
        match loaded {
            Ok(table) => Ok(table),
            Err(source) => {
                if let Some(url) = self.external_location(name).await? {
                    // External tables are not cached (their log is
                    // elsewhere): each statement loads them.
                    let loaded =
                        crate::commit::damaged_checkpoint::load(&url, &self.storage_options).await;
                    return loaded.map_err(|e| Error::delta("loading", name.to_string(), e));
                }
                if !self.schema_exists(&name.schema).await? {
                    Err(Error::SchemaNotFound {
                        schema: name.schema.clone(),
                    })
                } else if self.schemaless(name).await?.is_some() {
                    Err(Error::SchemaNotSet {
                        schema: name.schema.clone(),
                        table: name.table.clone(),
                    })
                } else if !self.table_exists(name).await? {
                    Err(Error::TableNotFound {
                        schema: name.schema.clone(),
                        table: name.table.clone(),
                    })
                } else {
                    Err(Error::delta("loading", name.to_string(), source))
                }
            }
        }
    }

    /// A table handle for a table that may not exist yet (for creating it).
    pub fn new_table(&self, name: &TableName) -> Result<crate::Table> {
        self.new_table_at(name, &self.table_url(name)?)
    }

    /// Loads a table as it was at a version or a time (time travel).
    pub async fn load_table_at(&self, name: &TableName, at: &TableAt) -> Result<crate::Table> {
        let mut table = self.load_delta(name).await?;
        if let TableAt::Timestamp(t) = at {
            // Databricks refuses a time outside the table's history rather
            // than reading its first or last version.
            let latest = table.version().unwrap_or(0);
            let log_store = table.log_store();
            let first = commit_timestamp(&log_store, 0).await;
            let last = commit_timestamp(&log_store, latest).await;
            let ms = t.timestamp_millis();
            let earlier = first.is_some_and(|f| ms < f);
            if earlier || last.is_some_and(|l| ms > l) {
                return Err(Error::TimestampOutOfHistory {
                    table: name.to_string(),
                    at: at.to_string(),
                    later: !earlier,
                });
            }
        }
        let loaded = match at {
            TableAt::Version(v) => match u64::try_from(*v) {
                Ok(v) => table.load_version(v).await,
                Err(_) => {
                    return Err(Error::VersionNotFound {
                        table: name.to_string(),
                        at: at.to_string(),
                    })
                }
            },
            TableAt::Timestamp(t) => {
                let log_store = table.log_store();
                let latest = table.version().unwrap_or(0);
                match version_at(&log_store, latest, t.timestamp_millis()).await {
                    Some(v) => table.load_version(v).await,
                    None => table.load_with_datetime(*t).await,
                }
            }
        };
        loaded.map_err(|e| match e {
            deltalake::DeltaTableError::InvalidVersion(_)
            | deltalake::DeltaTableError::VersionMismatch(..)
            | deltalake::DeltaTableError::NotATable(_) => Error::VersionNotFound {
                table: name.to_string(),
                at: at.to_string(),
            },
            other
                if matches!(at, TableAt::Version(_))
                    && other.to_string().to_lowercase().contains("version") =>
            {
                Error::VersionNotFound {
                    table: name.to_string(),
                    at: at.to_string(),
                }
            }
            other => Error::delta("time travelling", name.to_string(), other),
        })?;
        Ok(crate::Table::new(table))
    }

    /// Deletes a managed table: its log first, so that a crash half-way leaves
    /// no table behind, only unreferenced files.
    pub async fn drop_table(&self, name: &TableName) -> Result<()> {
        self.drop_table_keeping(name, &std::collections::HashSet::new())
            .await
    }

    /// [`Self::drop_table`], leaving the files at `keep` (paths relative to
    /// the table's folder): a transaction that dropped the table and
    /// created another of that name has written the new one's files there.
    pub(crate) async fn drop_table_keeping(
        &self,
        name: &TableName,
        keep: &std::collections::HashSet<String>,
    ) -> Result<()> {
        self.forget(name);
        let table_path = self.path(&[&name.schema, &name.table]);
        self.delete_prefix(&table_path.clone().join("_delta_log"))
            .await?;
        self.delete_prefix_except(&table_path, keep).await?;
        if let Ok(mut listing) = self.listing.write() {
            listing.generation += 1;
            if let Some(tables) = listing.schemas.get_mut(&name.schema) {
                tables.remove(&name.table);
            }
        }
        Ok(())
    }

    /// Renames a managed table: its folder moves to the new name's place
    /// (`schema/table`), data files and log alike, with no Delta commit —
    /// the log holds paths relative to the table, so the moved folder is the
    /// same table, history included, as a metastore rename is on
    /// Databricks. On a local disk the move is one atomic `rename`; the
    /// target must not exist.
    pub async fn rename_table(&self, from: &TableName, to: &TableName) -> Result<()> {
        if !self.table_exists(from).await? {
            return Err(Error::TableNotFound {
                schema: from.schema.clone(),
                table: from.table.clone(),
            });
        }
        if !self.schema_exists(&to.schema).await? {
            return Err(Error::SchemaNotFound {
                schema: to.schema.clone(),
            });
        }
        if self.table_exists(to).await? || self.view(to).await?.is_some() {
            return Err(Error::TableExists {
                schema: to.schema.clone(),
                table: to.table.clone(),
            });
        }
        let Some(root) = &self.local_root else {
            return Err(Error::RenameNotSupported {
                table: from.to_string(),
            });
        };
        let source = root.join(&from.schema).join(&from.table);
        let target = root.join(&to.schema).join(&to.table);
        // A leftover empty folder (a dropped table's) is not a table.
        let _ = std::fs::remove_dir(&target);
        std::fs::rename(&source, &target).map_err(|e| Error::Storage {
            op: "renaming a table folder",
            source: Box::new(deltalake::ObjectStoreError::Generic {
                store: "local",
                source: Box::new(e),
            }),
        })?;
        self.forget(from);
        self.forget(to);
        if let Ok(mut listing) = self.listing.write() {
            listing.generation += 1;
            if let Some(tables) = listing.schemas.get_mut(&from.schema) {
                tables.remove(&from.table);
            }
            listing
                .schemas
                .entry(to.schema.clone())
                .or_default()
                .insert(to.table.clone());
        }
        Ok(())
    }

    async fn delete_prefix(&self, prefix: &Path) -> Result<()> {
        self.delete_prefix_except(prefix, &std::collections::HashSet::new())
            .await
    }

    /// Deletes the files under `prefix` but those at `keep` (relative to
    /// it, URL-encoded as Delta's paths are).
    async fn delete_prefix_except(
        &self,
        prefix: &Path,
        keep: &std::collections::HashSet<String>,
    ) -> Result<()> {
        let kept: std::collections::HashSet<Path> = keep
            .iter()
            .filter_map(|p| Path::from_url_path(format!("{}/{p}", prefix.as_ref())).ok())
            .collect();
        let locations = self
            .store
            .list(Some(prefix))
            .map_ok(|m| m.location)
            .try_filter(move |l| futures::future::ready(!kept.contains(l)))
            .boxed();
        self.store
            .delete_stream(locations)
            .try_collect::<Vec<_>>()
            .await
            .map_err(|source| Error::Storage {
                op: "deleting files",
                source: Box::new(source),
            })?;
        // A local store deletes files but leaves their folders behind.
        if let (true, Ok(root)) = (keep.is_empty(), self.root.to_file_path()) {
            let dir = prefix.parts().fold(root, |p, part| p.join(part.as_ref()));
            let _ = std::fs::remove_dir_all(dir);
        }
        Ok(())
    }

    /// Records a table created through this server in the name listing.
    pub fn note_table(&self, name: &TableName) {
        if let Ok(mut listing) = self.listing.write() {
            listing.generation += 1;
            listing
                .schemas
                .entry(name.schema.clone())
                .or_default()
                .insert(name.table.clone());
        }
    }

    fn note_schema(&self, schema: &str) {
        if let Ok(mut listing) = self.listing.write() {
            listing.generation += 1;
            listing.schemas.entry(schema.to_string()).or_default();
        }
    }

    /// Re-reads the listing of schemas, tables and views from storage.
    pub async fn refresh(&self) -> Result<()> {
        // A change this server made while the warehouse was listed (a
        // rename, a drop in another session) may be missing from the
        // listing: list again rather than store it over the change.
        for _ in 0..3 {
            let generation = self.listing.read().map(|l| l.generation).unwrap_or(0);
            let names = self.list_warehouse().await?;
            if self.store_listing(generation, names) {
                break;
            }
        }
        Ok(())
    }

    /// Takes `names`, listed when the names were at `generation`, as the
    /// listing; `false` (nothing stored) when this server changed a name
    /// since.
    fn store_listing(&self, generation: u64, (schemas, views): ListedNames) -> bool {
        let Ok(mut listing) = self.listing.write() else {
            return false;
        };
        if listing.generation != generation {
            return false;
        }
        listing.schemas = schemas;
        listing.views = views;
        listing.read_at = Some(Instant::now());
        true
    }

    /// Every schema's tables and views, as the warehouse holds them now.
    async fn list_warehouse(&self) -> Result<ListedNames> {
        let (mut schemas, mut views) = (BTreeMap::new(), BTreeMap::new());
        for schema in self.list_schemas().await? {
            let (tables, schema_views) = self.list_relations(&schema).await?;
            let mut stored = BTreeMap::new();
            for view in schema_views {
                // A view dropped since the listing is simply left out.
                if let Some(v) = self.view(&TableName::new(&schema, &view)?).await? {
                    stored.insert(view, Arc::new(v));
                }
            }
            schemas.insert(schema.clone(), tables.into_iter().collect());
            views.insert(schema, stored);
        }
        Ok((schemas, views))
    }

    /// Re-reads the listing when it is older than a second, for statements
    /// that enumerate tables (pg_catalog, information_schema).
    pub async fn refresh_if_stale(&self) -> Result<()> {
        let stale = self
            .listing
            .read()
            .map(|l| l.read_at.is_none_or(|t| t.elapsed() > LISTING_TTL))
            .unwrap_or(true);
        if stale {
            self.refresh().await?;
        }
        Ok(())
    }

    /// Schema names from the cached listing.
    pub fn cached_schemas(&self) -> Vec<String> {
        self.listing
            .read()
            .map(|l| l.schemas.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Table names of a schema from the cached listing.
    pub fn cached_tables(&self, schema: &str) -> Vec<String> {
        self.listing
            .read()
            .ok()
            .and_then(|l| l.schemas.get(schema).map(|t| t.iter().cloned().collect()))
            .unwrap_or_default()
    }

    /// Whether the cached listing knows the schema.
    pub fn cached_schema_exists(&self, schema: &str) -> bool {
        self.listing
            .read()
            .map(|l| l.schemas.contains_key(schema))
            .unwrap_or(false)
    }
}

/// The latest version committed at or before `ms`, by the commitInfo
/// timestamps (milliseconds) that DESCRIBE HISTORY shows. delta-rs'
/// `load_with_datetime` goes by the commit files' modification times,
/// which object stores keep to the second: two commits within one second
/// would be indistinguishable. `None` when a commit in the way has no
/// timestamp (or was cleaned up): the caller falls back to delta-rs.
async fn version_at(
    log_store: &deltalake::logstore::LogStoreRef,
    latest: u64,
    ms: i64,
) -> Option<u64> {
    // Timestamps grow with versions: binary search for the last <= ms.
    let (mut lo, mut hi) = (0u64, latest);
    if commit_timestamp(log_store, lo).await? > ms {
        return None;
    }
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if commit_timestamp(log_store, mid).await? <= ms {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// Turns a warehouse setting (a path, relative or absolute, or a URL) into a
/// URL that ends with `/`, creating a local folder if it is missing.
fn root_url(root: &str) -> Result<Url> {
    let invalid = |reason: String| Error::InvalidWarehouse {
        location: root.to_string(),
        reason,
    };
    let mut url = match Url::parse(root) {
        Ok(url) if url.scheme().len() > 1 => url,
        _ => {
            std::fs::create_dir_all(root).map_err(|e| invalid(e.to_string()))?;
            let abs = std::fs::canonicalize(root).map_err(|e| invalid(e.to_string()))?;
            Url::from_directory_path(&abs).map_err(|()| invalid("not an absolute path".into()))?
        }
    };
    if url.scheme() == "file" {
        if let Ok(p) = url.to_file_path() {
            std::fs::create_dir_all(&p).map_err(|e| invalid(e.to_string()))?;
        }
    }
    if !url.path().ends_with('/') {
        url.set_path(&format!("{}/", url.path()));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_lower_case_and_public_is_default() {
        let n = TableName::new("PUBLIC", "Emp").unwrap();
        assert_eq!(n.schema, "default");
        assert_eq!(n.table, "emp");
    }

    /// A listing taken while this server renamed a table (another
    /// session's refresh) is not stored over the rename: dbt's table
    /// materialization renames, then reads information_schema.
    #[tokio::test]
    async fn a_listing_older_than_a_name_change_is_not_stored() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path().to_str().unwrap(), HashMap::new())
            .await
            .unwrap();
        let generation = cat.listing.read().unwrap().generation;
        let before = cat.list_warehouse().await.unwrap();
        cat.note_table(&TableName::new("default", "renamed").unwrap());
        assert!(!cat.store_listing(generation, before));
        assert_eq!(cat.cached_tables("default"), ["renamed"]);

        let generation = cat.listing.read().unwrap().generation;
        let now = cat.list_warehouse().await.unwrap();
        assert!(cat.store_listing(generation, now));
    }

    #[test]
    fn names_cannot_leave_the_warehouse() {
        assert!(TableName::new("default", "../x").is_err());
        assert!(TableName::new("a/b", "t").is_err());
        assert!(TableName::new("default", "_delta_log").is_err());
        assert!(TableName::new("default", "").is_err());
    }

    #[tokio::test]
    async fn schemas_and_tables_are_folders() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path().to_str().unwrap(), HashMap::new())
            .await
            .unwrap();
        assert_eq!(cat.list_schemas().await.unwrap(), vec!["default"]);
        cat.create_schema("Sales", false).await.unwrap();
        assert!(matches!(
            cat.create_schema("sales", false).await,
            Err(Error::SchemaExists { .. })
        ));
        assert_eq!(cat.list_schemas().await.unwrap(), vec!["default", "sales"]);
        cat.drop_schema("sales", false, false).await.unwrap();
        assert_eq!(cat.list_schemas().await.unwrap(), vec!["default"]);
    }
}
