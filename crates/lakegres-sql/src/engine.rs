//! [`Engine`]: what every connection of one server shares — the warehouse
//! catalog, the runtime (object stores, memory pool), the grants, the open
//! sessions and the point-lookup caches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion_pg_catalog::pg_catalog::PgCatalogStaticTables;
use lakegres_delta::grants::Grants;
use lakegres_delta::lookup::{table_identity, LookupTable};
use lakegres_delta::row_cache::RowCache;
use lakegres_delta::{Catalog, FileRoots, TableName};

use crate::error::Result;

/// The server's connections, as SQL functions reach them:
/// `pg_cancel_backend(pid)` and `pg_terminate_backend(pid)`.
pub trait Backends: Send + Sync + std::fmt::Debug {
    /// Cancels the running statement of a session; false if there is none
    /// with that pid.
    fn cancel(&self, pid: i32) -> bool;
    /// Closes a session's connection; false if there is none with that pid.
    fn terminate(&self, pid: i32) -> bool;
}

/// Settings of the SQL engine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SqlConfig {
    /// Rows per Arrow batch.
    pub batch_size: usize,
    /// Parallelism of one query (0: the number of cores).
    pub target_partitions: usize,
    /// Memory all queries together may use before spilling or failing, in
    /// bytes (0: no limit).
    pub memory_limit: u64,
    /// Bytes of decoded table rows kept for point lookups (row_cache.rs in
    /// lakegres-delta); 0 reads every lookup through Parquet.
    pub lookup_cache_size: u64,
}

impl Default for SqlConfig {
    fn default() -> Self {
        Self {
            batch_size: 8192,
            target_partitions: 0,
            memory_limit: 0,
            lookup_cache_size: 256 << 20,
        }
    }
}

impl SqlConfig {
    /// The runtime queries run in: the memory pool of `memory_limit`.
    pub fn runtime_env(&self) -> Result<Arc<RuntimeEnv>> {
        let mut runtime = RuntimeEnvBuilder::new();
        if self.memory_limit > 0 {
            let limit = usize::try_from(self.memory_limit).unwrap_or(usize::MAX);
            runtime = runtime.with_memory_limit(limit, 1.0);
        }
        Ok(runtime.build_arc()?)
    }
}

/// What every session shares: the catalog and the memory pool.
pub struct Engine {
    pub(crate) catalog: Arc<Catalog>,
    /// The open sessions (`pg_stat_activity`).
    pub(crate) activity: Arc<crate::activity::Registry>,
    pub(crate) next_pid: std::sync::atomic::AtomicI32,
    /// Where statements may read files from.
    pub(crate) file_roots: Arc<FileRoots>,
    /// The warehouse's real folder when it is local: reading files inside
    /// it needs privileges on the table they belong to.
    pub(crate) warehouse_folder: Option<std::path::PathBuf>,
    /// The warehouse's grants and the configured admins.
    pub(crate) grants: Arc<Grants>,
    pub(crate) runtime: Arc<RuntimeEnv>,
    pub(crate) config: SqlConfig,
    /// Rewrites the catalog queries of psql, JDBC and BI tools into SQL
    /// DataFusion plans (datafusion-pg-catalog's rules).
    pub(crate) compat: datafusion_pg_catalog::sql::PostgresCompatibilityParser,
    /// pg_catalog's fixed tables (pg_type, pg_proc, …), parsed once.
    pub(crate) pg_catalog_tables: Arc<PgCatalogStaticTables>,
    /// What the statements did, for `/metrics`.
    pub(crate) metrics: crate::metrics::Metrics,
    /// The connections, once the server has registered them.
    pub(crate) backends: std::sync::OnceLock<Arc<dyn Backends>>,
    /// Tables prepared for point queries (lookup.rs), by the table
    /// version they were prepared from; `None` where the table's files
    /// need the general scan.
    pub(crate) lookups: std::sync::Mutex<HashMap<TableName, LookupEntry>>,
    /// Decoded rows of the tables point queries read.
    pub(crate) row_cache: Arc<RowCache>,
    /// The workers queries may run on (`[cluster]`), once joined.
    pub(crate) cluster: std::sync::OnceLock<crate::cluster::Cluster>,
}

type LookupEntry = ((String, u64), Option<Arc<LookupTable>>);

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("catalog", &self.catalog)
            .finish()
    }
}

impl Engine {
    /// Builds the engine over an opened catalog.
    pub fn new(
        catalog: Arc<Catalog>,
        config: SqlConfig,
        file_roots: FileRoots,
        grants: Arc<Grants>,
    ) -> Result<Arc<Self>> {
        let runtime = config.runtime_env()?;
        let warehouse_folder = catalog.local_root().and_then(|p| p.canonicalize().ok());
        file_roots.register_stores(&runtime);
        Ok(Arc::new(Self {
            warehouse_folder,
            grants,
            catalog,
            activity: Arc::default(),
            next_pid: std::sync::atomic::AtomicI32::new(10_000),
            file_roots: Arc::new(file_roots),
            runtime,
            compat: datafusion_pg_catalog::sql::PostgresCompatibilityParser::new(),
            pg_catalog_tables: Arc::new(PgCatalogStaticTables::try_new()?),
            metrics: Default::default(),
            backends: std::sync::OnceLock::new(),
            lookups: Mutex::new(HashMap::new()),
            row_cache: Arc::new(RowCache::new(config.lookup_cache_size)),
            cluster: std::sync::OnceLock::new(),
            config,
        }))
    }

    /// Lets `pg_cancel_backend` and `pg_terminate_backend` reach the
    /// server's connections (set once, at startup).
    pub fn set_backends(&self, backends: Arc<dyn Backends>) {
        let _ = self.backends.set(backends);
    }

    /// What the statements did so far.
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    /// `name`'s latest version prepared for point queries, or `None` when
    /// it cannot be (missing, not loadable, or files that need the general
    /// scan: the caller then plans the statement the general way).
    pub(crate) async fn lookup_table(&self, name: &TableName) -> Option<Arc<LookupTable>> {
        let table = self.catalog.load_table(name).await.ok()?;
        let identity = table_identity(&table)?;
        if let Some((known, prepared)) = self.lookups.lock().ok()?.get(name) {
            if known == &identity {
                return prepared.clone();
            }
        }
        let prepared =
            match LookupTable::try_new(name, &table, &self.runtime, Arc::clone(&self.row_cache))
                .await
            {
                Ok(prepared) => prepared.map(Arc::new),
                Err(e) => {
                    tracing::debug!(table = %name, error = %e, "not prepared for lookups");
                    None
                }
            };
        self.lookups
            .lock()
            .ok()?
            .insert(name.clone(), (identity, prepared.clone()));
        prepared
    }

    /// Bytes the point-lookup cache holds now.
    pub fn lookup_cache_bytes(&self) -> u64 {
        self.row_cache.bytes()
    }

    /// The open sessions (`pg_stat_activity`).
    /// Stops the statement session `pid` runs, also while it is planned:
    /// for a cancel request on the wire (its key already checked).
    pub fn interrupt(&self, pid: i32) {
        self.activity.interrupt(pid);
    }

    pub(crate) fn activity(&self) -> &crate::activity::Registry {
        &self.activity
    }

    /// Sends the reads of queries to the workers of `config` (at most
    /// once, at start).
    pub fn join_cluster(
        &self,
        config: &crate::cluster::ClusterConfig,
        token: String,
        tls: Option<crate::cluster::ClusterTls>,
    ) -> std::result::Result<(), String> {
        let cluster = crate::cluster::Cluster::new(config, token, tls)?;
        self.cluster
            .set(cluster)
            .map_err(|_| "the engine has joined a cluster already".to_string())
    }

    /// The warehouse catalog.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Where statements may read files from.
    pub fn file_roots(&self) -> &Arc<FileRoots> {
        &self.file_roots
    }

    /// The runtime (object stores, memory pool) every query runs on.
    pub fn runtime(&self) -> &Arc<RuntimeEnv> {
        &self.runtime
    }
}
