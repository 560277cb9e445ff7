//! [`Engine`] (shared by every connection) and [`Session`] (one per
//! connection): a DataFusion context of its own over the one warehouse
//! catalog, its settings and transaction state, and the dispatch of each
//! statement to the code that runs it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::{create_udf, ColumnarValue, LogicalPlan, Volatility};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::Statement as DFStatement;
use datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_pg_catalog::pg_catalog::{PgCatalogSchemaProvider, PgCatalogStaticTables};
use futures::TryStreamExt;
use lakegres_delta::grants::{Grants, Principal};
use lakegres_delta::lookup::{table_identity, LookupTable};
use lakegres_delta::row_cache::RowCache;
use lakegres_delta::{
    Access, Catalog, FileRoots, LakeCatalogProvider, Location, TableName, DEFAULT_SCHEMA,
};
use sqlparser::ast::{self, Expr, Set, Use, Value};

use crate::cursors::{parse_duration, timed_out, Cursors, Deadline};
use crate::error::{Error, Result};
use crate::parser::Statement;
use crate::planner::LakegresPlanner;
use crate::settings::{self, Settings};
use crate::{ddl, describe};

/// The DataFusion catalog name; `current_database()` answers it.
pub const CATALOG_NAME: &str = "lakegres";

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

/// What every session shares: the catalog and the memory pool.
pub struct Engine {
    catalog: Arc<Catalog>,
    /// The open sessions (`pg_stat_activity`).
    activity: Arc<crate::activity::Registry>,
    next_pid: std::sync::atomic::AtomicI32,
    /// Where statements may read files from.
    file_roots: Arc<FileRoots>,
    /// The warehouse's real folder when it is local: reading files inside
    /// it needs privileges on the table they belong to.
    warehouse_folder: Option<std::path::PathBuf>,
    /// The warehouse's grants and the configured admins.
    grants: Arc<Grants>,
    runtime: Arc<RuntimeEnv>,
    config: SqlConfig,
    /// Rewrites the catalog queries of psql, JDBC and BI tools into SQL
    /// DataFusion plans (datafusion-pg-catalog's rules).
    compat: datafusion_pg_catalog::sql::PostgresCompatibilityParser,
    /// pg_catalog's fixed tables (pg_type, pg_proc, …), parsed once.
    pg_catalog_tables: Arc<PgCatalogStaticTables>,
    /// What the statements did, for `/metrics`.
    metrics: crate::metrics::Metrics,
    /// The connections, once the server has registered them.
    backends: std::sync::OnceLock<Arc<dyn Backends>>,
    /// Tables prepared for point queries (lookup.rs), by the table
    /// version they were prepared from; `None` where the table's files
    /// need the general scan.
    lookups: std::sync::Mutex<HashMap<TableName, LookupEntry>>,
    /// Decoded rows of the tables point queries read.
    row_cache: Arc<RowCache>,
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
        let mut runtime = RuntimeEnvBuilder::new();
        if config.memory_limit > 0 {
            let limit = usize::try_from(config.memory_limit).unwrap_or(usize::MAX);
            runtime = runtime.with_memory_limit(limit, 1.0);
        }
        let runtime = runtime.build_arc()?;
        let warehouse_folder = catalog.local_root().and_then(|p| p.canonicalize().ok());
        // DataFusion's file readers (read_files, COPY INTO) find a bucket's
        // store by its URL; Delta scans register their own.
        for (bucket, store) in file_roots.object_stores() {
            runtime.register_object_store(&bucket, store);
        }
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

    /// A new session for one connection.
    pub fn new_session(self: &Arc<Self>) -> Result<Session> {
        let principal = Arc::new(Principal::new(Arc::clone(&self.grants)));
        let committed = lakegres_delta::Committed::new();
        let file_roots = Arc::new(self.file_roots.guarded({
            let principal = Arc::clone(&principal);
            let catalog = Arc::clone(&self.catalog);
            let folder = self.warehouse_folder.clone();
            Arc::new(move |access: Access| {
                let principal = Arc::clone(&principal);
                let catalog = Arc::clone(&catalog);
                let folder = folder.clone();
                Box::pin(async move {
                    check_file_access(&principal, &catalog, folder.as_deref(), access).await
                })
            })
        }));
        let mut config = SessionConfig::new()
            .with_extension(Arc::clone(&principal))
            .with_extension(Arc::clone(&committed))
            .with_default_catalog_and_schema(CATALOG_NAME, DEFAULT_SCHEMA)
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(true)
            .with_batch_size(self.config.batch_size);
        if self.config.target_partitions > 0 {
            config = config.with_target_partitions(self.config.target_partitions);
        }
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(Arc::clone(&self.runtime))
            .with_default_features()
            .with_query_planner(Arc::new(LakegresPlanner))
            .build();
        let ctx = SessionContext::new_with_state(state);
        let lake = LakeCatalogProvider::new(Arc::clone(&self.catalog));
        for format in ["csv", "json", "parquet"] {
            lake.register_hidden_schema(
                format,
                Arc::new(crate::files::FormatSchema {
                    format,
                    roots: Arc::clone(&file_roots),
                    runtime: Arc::clone(&self.runtime),
                }),
            );
        }
        let system = Arc::new(datafusion::catalog::MemorySchemaProvider::new());
        datafusion::catalog::SchemaProvider::register_table(
            system.as_ref(),
            "pg_stat_activity".to_string(),
            Arc::new(crate::activity::ActivityTable {
                registry: Arc::clone(&self.activity),
            }),
        )?;
        lake.register_hidden_schema(crate::compat::SYSTEM_SCHEMA, system);
        let time_travel = crate::time_travel::schema();
        lake.register_hidden_schema(
            crate::time_travel::TIME_TRAVEL_SCHEMA,
            Arc::clone(&time_travel) as Arc<dyn datafusion::catalog::SchemaProvider>,
        );
        ctx.register_catalog(CATALOG_NAME, Arc::new(lake));
        ctx.register_udtf(
            "read_files",
            Arc::new(crate::files::ReadFiles {
                roots: Arc::clone(&file_roots),
            }),
        );
        ctx.register_udtf(
            "list_files",
            Arc::new(crate::files::ListFiles {
                roots: Arc::clone(&file_roots),
            }),
        );
        datafusion_pg_catalog::setup_pg_catalog(&ctx, CATALOG_NAME, EmptyContextProvider)
            .map_err(|e| Error::DataFusion(*e))?;
        crate::functions::install(&ctx);
        // The crate's pg_catalog, with stable OIDs and our comments.
        let pg_catalog = PgCatalogSchemaProvider::try_new(
            Arc::new(crate::pg_catalog::WeakCatalogList(Arc::downgrade(
                ctx.state().catalog_list(),
            ))) as Arc<dyn datafusion::catalog::CatalogProviderList>,
            Arc::clone(&self.pg_catalog_tables),
            EmptyContextProvider,
        )?;
        if let Some(catalog) = ctx.catalog(CATALOG_NAME) {
            catalog.register_schema(
                "pg_catalog",
                Arc::new(crate::pg_catalog::LakePgCatalog::new(
                    pg_catalog,
                    Arc::clone(&self.catalog),
                )),
            )?;
        }
        let version = settings::version_string();
        ctx.register_udf(create_udf(
            "version",
            vec![],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(move |_| {
                Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(
                    version.clone(),
                ))))
            }),
        ));
        for function in crate::pg_functions::functions() {
            ctx.register_udf(function);
        }
        // The pid the client got in BackendKeyData and pg_stat_activity
        // shows (datafusion-pg-catalog's answers 1).
        let pid = self
            .next_pid
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ctx.register_udf(create_udf(
            "pg_backend_pid",
            vec![],
            DataType::Int32,
            Volatility::Stable,
            Arc::new(move |_| Ok(ColumnarValue::Scalar(ScalarValue::Int32(Some(pid))))),
        ));
        for (name, terminate) in [("pg_cancel_backend", false), ("pg_terminate_backend", true)] {
            let engine = Arc::clone(self);
            let caller = Arc::clone(&principal);
            ctx.register_udf(create_udf(
                name,
                vec![DataType::Int32],
                DataType::Boolean,
                Volatility::Volatile,
                Arc::new(move |args| {
                    let pids = datafusion::common::cast::as_int32_array(
                        &ColumnarValue::values_to_arrays(args)?[0],
                    )?
                    .clone();
                    let done: datafusion::arrow::array::BooleanArray = pids
                        .iter()
                        .map(|pid| {
                            let (pid, backends) = (pid?, engine.backends.get()?);
                            // As in Postgres: admins may signal any session,
                            // others only their own user's.
                            let Some(owner) = engine.activity.user_of(pid) else {
                                return Some(false);
                            };
                            if !caller.is_admin() && !owner.eq_ignore_ascii_case(&caller.user()) {
                                return Some(false);
                            }
                            Some(if terminate {
                                backends.terminate(pid)
                            } else {
                                backends.cancel(pid)
                            })
                        })
                        .collect();
                    Ok(ColumnarValue::Array(Arc::new(done)))
                }),
            ));
        }
        self.activity.open(pid);
        Ok(Session {
            principal,
            committed,
            file_roots,
            time_travel,
            pid,
            engine: Arc::clone(self),
            ctx,
            state: Mutex::new(SessionState {
                settings: Settings::default(),
                transaction: Transaction::Idle,
                schema: DEFAULT_SCHEMA.to_string(),
                writes_in_block: Vec::new(),
                notices: Vec::new(),
                jdbc: false,
                user: String::new(),
            }),
            cursors: tokio::sync::Mutex::new(Cursors::default()),
            idle: IdleWatch::default(),
        })
    }
}

/// The transaction block state, as Postgres reports it in ReadyForQuery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transaction {
    Idle,
    InBlock,
    Failed,
}

struct SessionState {
    settings: Settings,
    transaction: Transaction,
    schema: String,
    /// Writes committed inside the open transaction block (ROLLBACK
    /// cannot undo them and says so).
    writes_in_block: Vec<String>,
    /// Warnings for the client, sent before the statement completes.
    notices: Vec<String>,
    /// The client is pgjdbc (it sends `extra_float_digits` at startup),
    /// whose `executeUpdate` refuses a result row.
    jdbc: bool,
    /// The user the client logged in as.
    user: String,
}

/// How the command tag of a statement is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandTag {
    /// A word followed by the number of rows sent (`SELECT 3`).
    Counted(&'static str),
    /// The whole tag (`INSERT 0 3`, `CREATE TABLE`).
    Fixed(String),
}

impl CommandTag {
    /// The counted tag for a command word (`SELECT`, `SHOW` …).
    pub fn counted(word: &str) -> Self {
        const WORDS: &[&str] = &[
            "SELECT", "SHOW", "DESCRIBE", "EXPLAIN", "UPDATE", "DELETE", "MERGE", "INSERT", "COPY",
        ];
        match WORDS.iter().find(|w| **w == word) {
            Some(w) => Self::Counted(w),
            None => Self::Fixed(word.to_string()),
        }
    }
}

/// The outcome of one statement.
pub enum Output {
    /// Rows to stream to the client.
    Rows {
        stream: SendableRecordBatchStream,
        tag: CommandTag,
    },
    /// A statement without rows.
    Done(CommandTag),
    /// `BEGIN`.
    TransactionStart(CommandTag),
    /// `COMMIT`/`ROLLBACK`.
    TransactionEnd(CommandTag),
    /// `COPY … FROM STDIN`: the wire feeds the client's data to it.
    CopyIn(Box<crate::copy::CopyIn>),
    /// `COPY … TO STDOUT`: rows to send in a COPY format.
    CopyOut {
        stream: SendableRecordBatchStream,
        options: crate::copy::CopyOptions,
    },
}

/// What the extended protocol's Describe reports before execution.
#[derive(Debug, Clone)]
pub struct Description {
    /// The types of `$1`, `$2`, … where they could be inferred.
    pub params: Vec<Option<DataType>>,
    /// The result columns, if the statement returns rows.
    pub schema: Option<SchemaRef>,
}

impl Description {
    /// A statement without parameters that returns rows of `schema`.
    fn rows(schema: SchemaRef) -> Self {
        Self {
            params: vec![],
            schema: Some(schema),
        }
    }
}

/// One connection's session.
pub struct Session {
    /// The user the session runs as, with the grants (also in the
    /// DataFusion config, where table scans and writes check it).
    principal: Arc<Principal>,
    /// The table as the running statement's commit left it (also in the
    /// DataFusion config, where writes leave it).
    committed: Arc<lakegres_delta::Committed>,
    /// Where the session's statements may read files from.
    file_roots: Arc<FileRoots>,
    /// Tables read at an older version by the statement being planned.
    time_travel: Arc<datafusion::catalog::MemorySchemaProvider>,
    /// The session's process id in `pg_stat_activity`.
    pid: i32,
    engine: Arc<Engine>,
    ctx: SessionContext,
    state: Mutex<SessionState>,
    cursors: tokio::sync::Mutex<Cursors>,
    idle: IdleWatch,
}

/// Since when a session waits for its client, and how long it may: what the
/// server's idle timeouts watch (`idle_session_timeout`,
/// `idle_in_transaction_session_timeout`).
#[derive(Debug, Default)]
pub struct Idle {
    since: Option<std::time::Instant>,
    limit: Option<std::time::Duration>,
    setting: &'static str,
}

/// A session's [`Idle`] state, shared with the server's connection task.
pub type IdleWatch = Arc<Mutex<Idle>>;

/// Completes when the session has waited for its client longer than its
/// idle timeout allows; yields the setting that ended it.
pub async fn idle_timeout(watch: IdleWatch) -> &'static str {
    const RECHECK: std::time::Duration = std::time::Duration::from_secs(1);
    loop {
        let (since, limit, setting) = match watch.lock() {
            Ok(idle) => (idle.since, idle.limit, idle.setting),
            Err(_) => (None, None, ""),
        };
        let now = std::time::Instant::now();
        match (since, limit) {
            (Some(since), Some(limit)) if now >= since + limit => return setting,
            // Re-read at least every second: the client may have become busy.
            (Some(since), Some(limit)) => {
                tokio::time::sleep((since + limit - now).min(RECHECK)).await
            }
            _ => tokio::time::sleep(RECHECK).await,
        }
    }
}

impl Session {
    /// The session's idle state, for the server's idle timeouts.
    pub fn idle_watch(&self) -> IdleWatch {
        Arc::clone(&self.idle)
    }

    /// The client sent work: no idle timeout runs until [`Self::set_idle`].
    pub fn set_busy(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.since = None;
        }
    }

    /// The session waits for its client from now on, as long as the
    /// timeout of its state allows (inside a transaction block or not).
    pub fn set_idle(&self) {
        let setting = match self.transaction() {
            Transaction::Idle => "idle_session_timeout",
            _ => "idle_in_transaction_session_timeout",
        };
        let limit = self
            .state()
            .settings
            .get(setting)
            .ok()
            .and_then(parse_duration);
        if let Ok(mut idle) = self.idle.lock() {
            *idle = Idle {
                since: Some(std::time::Instant::now()),
                limit,
                setting,
            };
        }
    }

    fn state(&self) -> MutexGuard<'_, SessionState> {
        // A panic while holding the lock cannot leave the settings torn
        // (every update is one assignment), so a poisoned lock is usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The engine this session belongs to.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The session's DataFusion context.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// The transaction block state.
    pub fn transaction(&self) -> Transaction {
        self.state().transaction
    }

    /// The schema unqualified names resolve to.
    pub fn current_schema(&self) -> String {
        self.state().schema.clone()
    }

    /// A copy of the current settings.
    pub fn settings(&self) -> Settings {
        self.state().settings.clone()
    }

    /// Sets a parameter from the startup message (`application_name` …);
    /// unknown ones are ignored as Postgres ignores them there.
    pub fn set_startup_parameter(&self, name: &str, value: &str) {
        if name != "user" {
            let _ = self.state().settings.set(name, value);
        }
        match name {
            "user" => {
                self.principal.set_user(value);
                self.state().user = value.to_string();
                self.engine
                    .activity
                    .update(self.pid, |a| a.user = value.to_string())
            }
            // pgjdbc is the driver that sends extra_float_digits at startup.
            "extra_float_digits" => self.state().jdbc = true,
            "application_name" => {
                if value.starts_with("PostgreSQL JDBC Driver") {
                    self.state().jdbc = true;
                }
                self.engine
                    .activity
                    .update(self.pid, |a| a.application_name = value.to_string())
            }
            _ => {}
        }
    }

    /// Whether INSERT, UPDATE, DELETE and MERGE answer with Databricks'
    /// result row (`lakegres.dml_result_rows`, default on) or, as in
    /// Postgres, with the command tag alone (default for pgjdbc, whose
    /// `executeUpdate` and batches refuse a row).
    fn dml_result_rows(&self) -> bool {
        let state = self.state();
        match state.settings.get(DML_RESULT_ROWS) {
            Ok(v) => !matches!(v.to_lowercase().as_str(), "off" | "false" | "0"),
            Err(_) => !state.jdbc,
        }
    }

    /// The columns of an open SQL cursor (for a Describe of it as a portal).
    pub async fn cursor_schema(&self, name: &str) -> Option<SchemaRef> {
        self.cursors.lock().await.schema(name)
    }

    /// Records that a statement failed (for the transaction block state);
    /// the wire calls it for errors that happen while rows stream.
    pub fn note_error(&self) {
        let mut state = self.state();
        if state.transaction == Transaction::InBlock {
            state.transaction = Transaction::Failed;
        }
    }

    /// Runs one statement.
    pub async fn execute(
        &self,
        statement: &Statement,
        params: Option<ParamValues>,
    ) -> Result<Output> {
        if self.transaction() == Transaction::Failed && !ends_transaction(statement) {
            return Err(Error::InFailedTransaction);
        }
        let timeout = self
            .state()
            .settings
            .get("statement_timeout")
            .ok()
            .and_then(parse_duration);
        let text = statement_text(statement);
        let kind = crate::metrics::kind_of(&text);
        self.engine.activity.update(self.pid, |a| {
            a.state = "active";
            a.query = text;
            a.query_start_ms = Some(crate::activity::now_ms());
        });
        let started = tokio::time::Instant::now();
        self.committed.clear();
        let run = async {
            crate::privileges::authorize(self, statement).await?;
            let output = self.dispatch(statement, params).await?;
            crate::privileges::after(self, statement).await?;
            Ok(output)
        };
        let result = match timeout {
            Some(limit) => tokio::time::timeout(limit, run)
                .await
                .unwrap_or_else(|_| Err(timed_out())),
            None => run.await,
        };
        let result = match (result, timeout) {
            (Ok(Output::Rows { stream, tag }), Some(limit)) => Ok(Output::Rows {
                stream: Box::pin(Deadline::new(stream, started + limit)),
                tag,
            }),
            (other, _) => other,
        };
        let result = match result {
            Ok(Output::Rows {
                tag: CommandTag::Fixed(tag),
                ..
            }) if is_dml(statement) && !self.dml_result_rows() => {
                Ok(Output::Done(CommandTag::Fixed(tag)))
            }
            other => other,
        };
        self.engine.metrics.record(
            &kind,
            result.as_ref().err().map(Error::sqlstate),
            write_kind(statement).is_some(),
            started.elapsed(),
        );
        let idle = match self.transaction() {
            Transaction::Idle => "idle",
            _ => "idle in transaction",
        };
        self.engine.activity.update(self.pid, |a| a.state = idle);
        match &result {
            Err(_) => self.note_error(),
            Ok(Output::CopyIn(_)) => {}
            Ok(_) => {
                if let Some(kind) = write_kind(statement) {
                    self.record_write(&kind, written_table(self, statement).as_ref())
                        .await;
                    let mut state = self.state();
                    if state.transaction == Transaction::InBlock {
                        state.writes_in_block.push(kind);
                    }
                }
            }
        }
        result
    }

    /// After a write: its audit line (user, kind, table, the table's
    /// version after it, the data files and bytes its commit added) and the
    /// bytes and files written in the metrics. The version is the one the
    /// statement committed where its write handed the table back (INSERT,
    /// UPDATE, DELETE, MERGE, COPY, CREATE … AS SELECT); otherwise the
    /// table's latest when the statement returns, which under concurrent
    /// writers can be a later writer's.
    pub async fn record_write(&self, kind: &str, table: Option<&TableName>) {
        let user = self.state().user.clone();
        let Some(table) = table else {
            tracing::info!(target: "lakegres::audit", user, kind, "write");
            return;
        };
        let catalog = &self.engine.catalog;
        let (loaded, entry) = match self.committed.take(table) {
            // The table as this statement's commit left it: into the
            // catalog's cache, with no read of the log but the entry's.
            Some(written) => {
                let entry = catalog.adopt(table, &written).await;
                (Some(written), entry)
            }
            None => {
                let loaded = catalog.load_table(table).await.ok();
                let entry = match loaded.as_ref().and_then(|t| t.version().map(|v| (t, v))) {
                    Some((t, v)) => t.log_store().read_commit_entry(v).await.ok().flatten(),
                    None => None,
                };
                (loaded, entry)
            }
        };
        let version = loaded.as_ref().and_then(|t| t.version());
        let (files, bytes) = entry.as_deref().map(added_files).unwrap_or((0, 0));
        self.engine.metrics.written(files, bytes);
        if let Some(table) = loaded {
            // Off the statement's path: the client has its answer already.
            tokio::spawn(async move {
                lakegres_delta::after_commit(&table).await;
            });
        }
        tracing::info!(
            target: "lakegres::audit",
            user,
            kind,
            table = %table,
            version,
            files_added = files,
            bytes_added = bytes,
            "write"
        );
    }

    /// The user the session runs as, with the server's grants.
    pub fn principal(&self) -> &Arc<Principal> {
        &self.principal
    }

    /// Where the running statement's writes leave the table they committed.
    pub(crate) fn committed(&self) -> &lakegres_delta::Committed {
        &self.committed
    }

    /// Where the session's statements may read files from (the server's
    /// roots, with the session's privileges on warehouse files).
    pub fn file_roots(&self) -> &Arc<FileRoots> {
        &self.file_roots
    }

    /// The session's process id, as pg_stat_activity shows it.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Warnings raised by the last statement, for the client.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.state().notices)
    }

    /// Describes a statement for the extended protocol without running it.
    pub async fn describe(&self, statement: &Statement) -> Result<Description> {
        let mut description = self.describe_rows(statement).await?;
        if is_dml(statement) && !self.dml_result_rows() {
            description.schema = None;
        }
        Ok(description)
    }

    async fn describe_rows(&self, statement: &Statement) -> Result<Description> {
        match statement {
            Statement::Sql(ast) => match ast.as_ref() {
                ast::Statement::Query(_) | ast::Statement::Explain { .. } => {
                    let plan = match self.plan(ast).await {
                        Ok(plan) => plan,
                        Err(e) => {
                            return match crate::compat::empty_catalog_answer(ast) {
                                Some(empty) => Ok(Description {
                                    params: vec![],
                                    schema: Some(empty.schema()),
                                }),
                                None => Err(e),
                            }
                        }
                    };
                    Ok(Description {
                        params: parameter_types(&plan)?,
                        schema: Some(Arc::new(plan.schema().as_arrow().clone())),
                    })
                }
                ast::Statement::Insert(_) => {
                    let plan = self.plan(ast).await?;
                    Ok(Description {
                        params: parameter_types(&plan)?,
                        schema: Some(insert_result_schema()),
                    })
                }
                ast::Statement::Update(_)
                | ast::Statement::Delete(_)
                | ast::Statement::Truncate(_) => {
                    let plan = self.plan(ast).await?;
                    Ok(Description {
                        params: parameter_types(&plan)?,
                        schema: Some(Arc::new(Schema::new(vec![Field::new(
                            "num_affected_rows",
                            DataType::Int64,
                            false,
                        )]))),
                    })
                }
                ast::Statement::ShowVariable { variable } => Ok(Description {
                    params: vec![],
                    schema: Some(show_schema(&variable_name(variable))),
                }),
                _ => Ok(Description {
                    params: vec![],
                    schema: None,
                }),
            },
            Statement::Describe(d) => Ok(Description {
                params: vec![],
                schema: Some(describe::describe_schema(d)),
            }),
            Statement::Show(s) => Ok(Description {
                params: vec![],
                schema: Some(describe::show_schema(s)),
            }),
            Statement::CreateTable(_) | Statement::AlterTable(_) => Ok(Description {
                params: vec![],
                schema: None,
            }),
            Statement::DescribeHistory(_) => Ok(Description {
                params: vec![],
                schema: Some(describe::history_schema()),
            }),
            Statement::DescribeDetail(_) => {
                Ok(Description::rows(crate::table_info::detail_schema()))
            }
            Statement::Restore(_) => Ok(Description::rows(crate::maintenance::restore_schema())),
            Statement::Optimize(_) => Ok(Description::rows(crate::maintenance::optimize_schema())),
            Statement::Vacuum(_) => Ok(Description::rows(crate::maintenance::vacuum_schema())),
            Statement::ShowGrants(_) => {
                Ok(Description::rows(crate::privileges::show_grants_schema()))
            }
            Statement::Grant(_) => Ok(Description {
                params: vec![],
                schema: None,
            }),
            Statement::ExplainMerge(_) => Ok(Description {
                params: vec![],
                schema: Some(crate::merge::explain_schema()),
            }),
            Statement::Merge(_) => Ok(Description {
                params: vec![],
                schema: Some(crate::merge::merge_result_schema()),
            }),
            Statement::Insert(_) => Ok(Description {
                params: vec![],
                schema: Some(insert_result_schema()),
            }),
            Statement::CopyInto(_) => Ok(Description {
                params: vec![],
                schema: Some(crate::copy_into::copy_into_schema()),
            }),
            Statement::NoRows => Ok(Description {
                params: vec![],
                schema: Some(Arc::new(Schema::empty())),
            }),
            Statement::NoOp(_) => Ok(Description {
                params: vec![],
                schema: None,
            }),
            Statement::List(_) => Ok(Description {
                params: vec![],
                schema: Some(crate::files::listing_schema()),
            }),
        }
    }

    async fn dispatch(&self, statement: &Statement, params: Option<ParamValues>) -> Result<Output> {
        match statement {
            Statement::CreateTable(create) => ddl::create_table(self, create).await,
            Statement::AlterTable(alter) => crate::alter::alter_table(self, alter).await,
            Statement::Describe(d) => describe::describe_table(self, d).await,
            Statement::Show(s) => describe::show(self, s).await,
            Statement::Merge(m) => crate::merge::merge(self, m).await,
            Statement::Insert(i) => crate::insert::insert(self, i).await,
            Statement::CopyInto(c) => crate::copy_into::copy_into(self, c).await,
            Statement::NoOp(tag) => Ok(Output::Done(fixed(tag))),
            Statement::NoRows => Ok(rows_output(
                RecordBatch::new_empty(Arc::new(Schema::empty())),
                CommandTag::Counted("SELECT"),
            )),
            Statement::Grant(g) => crate::privileges::grant(self, g).await,
            Statement::ShowGrants(s) => crate::privileges::show_grants(self, s).await,
            Statement::List(path) => {
                let batch = crate::files::listing(&self.file_roots, path).await?;
                Ok(rows_output(batch, CommandTag::Counted("SELECT")))
            }
            Statement::ExplainMerge(m) => crate::merge::explain(self, m).await,
            Statement::DescribeHistory(h) => describe::history(self, h).await,
            Statement::DescribeDetail(name) => crate::table_info::describe_detail(self, name).await,
            Statement::Restore(r) => crate::maintenance::restore(self, r).await,
            Statement::Optimize(o) => crate::maintenance::optimize(self, o).await,
            Statement::Vacuum(v) => crate::maintenance::vacuum(self, v).await,
            Statement::Sql(ast) => self.dispatch_sql(ast, params).await,
        }
    }

    async fn dispatch_sql(
        &self,
        ast: &ast::Statement,
        params: Option<ParamValues>,
    ) -> Result<Output> {
        use ast::Statement as S;
        match ast {
            S::StartTransaction { .. } => {
                let mut state = self.state();
                state.transaction = Transaction::InBlock;
                state.writes_in_block.clear();
                Ok(Output::TransactionStart(fixed("BEGIN")))
            }
            S::Commit { .. } => {
                let mut state = self.state();
                let tag = if state.transaction == Transaction::Failed {
                    "ROLLBACK"
                } else {
                    "COMMIT"
                };
                state.transaction = Transaction::Idle;
                state.writes_in_block.clear();
                Ok(Output::TransactionEnd(fixed(tag)))
            }
            // Savepoints mark nothing (each statement is its own commit);
            // ROLLBACK TO one leaves the block open, and usable again.
            S::Savepoint { .. } => Ok(Output::Done(fixed("SAVEPOINT"))),
            S::ReleaseSavepoint { .. } => Ok(Output::Done(fixed("RELEASE"))),
            S::Rollback {
                savepoint: Some(_), ..
            } => {
                let mut state = self.state();
                if state.transaction == Transaction::Failed {
                    state.transaction = Transaction::InBlock;
                }
                Ok(Output::Done(fixed("ROLLBACK")))
            }
            S::Rollback { .. } => {
                let mut state = self.state();
                state.transaction = Transaction::Idle;
                let writes = std::mem::take(&mut state.writes_in_block);
                if !writes.is_empty() {
                    state.notices.push(format!(
                        "ROLLBACK does not undo the {} write(s) of this block, each committed to Delta when it ran: {}",
                        writes.len(),
                        writes.join(", ")
                    ));
                }
                Ok(Output::TransactionEnd(fixed("ROLLBACK")))
            }
            S::Declare { stmts } => {
                for d in stmts {
                    let (Some(query), Some(name)) = (&d.for_query, d.names.first()) else {
                        return Err(Error::not_supported("DECLARE without a cursor query"));
                    };
                    let plan = self.plan(&ast::Statement::Query(query.clone())).await?;
                    let stream = self
                        .ctx
                        .execute_logical_plan(plan)
                        .await?
                        .execute_stream()
                        .await?;
                    self.cursors.lock().await.declare(&name.value, stream)?;
                }
                Ok(Output::Done(fixed("DECLARE CURSOR")))
            }
            S::Fetch {
                name, direction, ..
            } => {
                use ast::FetchDirection as D;
                let count = |v: &ast::ValueWithSpan| -> Result<usize> {
                    v.value
                        .to_string()
                        .parse()
                        .map_err(|_| Error::not_supported(format!("FETCH {v}")))
                };
                let count = match direction {
                    D::Count { limit } => Some(count(limit)?),
                    D::Next | D::Forward { limit: None } => Some(1),
                    D::Forward { limit: Some(l) } => Some(count(l)?),
                    D::All | D::ForwardAll => None,
                    other => return Err(Error::not_supported(format!("FETCH {other}"))),
                };
                let batch = self.cursors.lock().await.fetch(&name.value, count).await?;
                let n = batch.num_rows();
                Ok(rows_output(batch, fixed(&format!("FETCH {n}"))))
            }
            S::Set(set) => self.set(set),
            S::ShowVariable { variable } => self.show_variable(variable),
            S::Reset(reset) => {
                let mut state = self.state();
                match &reset.reset {
                    ast::Reset::ALL => state.settings.reset_all(),
                    ast::Reset::ConfigurationParameter(name) => {
                        state.settings.reset(&name.to_string())
                    }
                }
                Ok(Output::Done(fixed("RESET")))
            }
            S::Discard { .. } => {
                self.state().settings.reset_all();
                Ok(Output::Done(fixed("DISCARD ALL")))
            }
            S::Close { cursor } => {
                let name = match cursor {
                    ast::CloseCursor::All => None,
                    ast::CloseCursor::Specific { name } => Some(name.value.as_str()),
                };
                self.cursors.lock().await.close(name)?;
                Ok(Output::Done(fixed(if name.is_some() {
                    "CLOSE CURSOR"
                } else {
                    "CLOSE CURSOR ALL"
                })))
            }
            S::Deallocate { .. } => Ok(Output::Done(fixed("DEALLOCATE"))),
            S::Use(u) => {
                let name = match u {
                    Use::Schema(n) | Use::Database(n) | Use::Object(n) => n.to_string(),
                    Use::Default => DEFAULT_SCHEMA.to_string(),
                    other => return Err(Error::not_supported(other.to_string())),
                };
                self.use_schema(&name).await?;
                Ok(Output::Done(fixed("USE")))
            }
            S::CreateSchema {
                schema_name,
                if_not_exists,
                ..
            } => {
                let name = match schema_name {
                    ast::SchemaName::Simple(n) | ast::SchemaName::NamedAuthorization(n, _) => {
                        object_leaf(n)
                    }
                    ast::SchemaName::UnnamedAuthorization(i) => i.value.clone(),
                };
                self.engine
                    .catalog
                    .create_schema(&name, *if_not_exists)
                    .await?;
                Ok(Output::Done(fixed("CREATE SCHEMA")))
            }
            S::CreateDatabase {
                db_name,
                if_not_exists,
                ..
            } => {
                self.engine
                    .catalog
                    .create_schema(&object_leaf(db_name), *if_not_exists)
                    .await?;
                Ok(Output::Done(fixed("CREATE SCHEMA")))
            }
            S::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => ddl::drop(self, *object_type, *if_exists, names, *cascade).await,
            S::Insert(_) => self.insert(ast, params).await,
            S::Copy { .. } => crate::copy::copy(self, ast).await,
            S::Update(_) | S::Delete(_) | S::Truncate(_) => {
                let word = match ast {
                    S::Update(_) => "UPDATE",
                    S::Delete(_) => "DELETE",
                    _ => "TRUNCATE TABLE",
                };
                let plan = bind(self.plan(ast).await?, params)?;
                let rows = self.run_count(plan).await?;
                let tag = if word == "TRUNCATE TABLE" {
                    word.to_string()
                } else {
                    format!("{word} {rows}")
                };
                Ok(affected_rows_output(rows, &tag)?)
            }
            S::CreateTable(_) => Err(Error::not_supported("this form of CREATE TABLE")),
            _ => {
                if let Some(rows) = crate::lookup::try_run(self, ast, params.as_ref()).await? {
                    return Ok(rows);
                }
                let tag = match ast {
                    S::Explain { .. } => "EXPLAIN",
                    _ => "SELECT",
                };
                let planned = match self.plan(ast).await {
                    Ok(plan) => match bind(plan, params) {
                        Ok(plan) => self.run(plan, CommandTag::Counted(tag)).await,
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                };
                match planned {
                    Err(e) => match crate::compat::empty_catalog_answer(ast) {
                        Some(empty) => {
                            tracing::debug!(error = %e, "a catalog query DataFusion cannot plan answered with no rows");
                            Ok(rows_output(empty, CommandTag::Counted("SELECT")))
                        }
                        None => Err(e),
                    },
                    ok => ok,
                }
            }
        }
    }

    /// Plans a sqlparser statement with DataFusion.
    pub(crate) async fn plan(&self, ast: &ast::Statement) -> Result<LogicalPlan> {
        let mut statement = ast.clone();
        if mentions_catalog_tables(ast) {
            self.engine.catalog.refresh_if_stale().await?;
            crate::compat::catalog_regclass_names(&mut statement);
            if let Ok(mut rewritten) = self.engine.compat.parse(&statement.to_string()) {
                if rewritten.len() == 1 {
                    statement = rewritten.remove(0);
                }
            }
        }
        crate::compat::rewrite(&mut statement);
        crate::time_travel::rewrite(self, &self.time_travel, &mut statement).await?;
        crate::changes::rewrite(self, &self.time_travel, &mut statement).await?;
        let settings = self.settings();
        crate::compat::current_settings(&mut statement, |name| {
            settings.get(name).ok().map(str::to_string)
        });
        let user = self.state().user.clone();
        crate::compat::current_user(&mut statement, &user);
        let state = self.ctx.state();
        let plan = state
            .statement_to_plan(DFStatement::Statement(Box::new(statement)))
            .await?;
        int_literals_as_int(plan)
    }

    /// Runs a plan and streams its rows.
    pub(crate) async fn run(&self, plan: LogicalPlan, tag: CommandTag) -> Result<Output> {
        let df = self.ctx.execute_logical_plan(plan).await?;
        let stream = df.execute_stream().await?;
        Ok(Output::Rows { stream, tag })
    }

    async fn insert(&self, ast: &ast::Statement, params: Option<ParamValues>) -> Result<Output> {
        let plan = match self.plan(ast).await {
            Ok(plan) => plan,
            Err(e)
                if e.to_string()
                    .contains("Column count doesn't match insert query") =>
            {
                return Err(self.insert_arity_error(ast).await.unwrap_or(e));
            }
            Err(e) => return Err(e),
        };
        let plan = bind(plan, params)?;
        let rows = match self.run_count(plan).await {
            Ok(rows) => rows,
            Err(e) => return Err(self.insert_not_null_error(ast, &e).await.unwrap_or(e)),
        };
        let batch = RecordBatch::try_new(
            insert_result_schema(),
            vec![
                Arc::new(Int64Array::from(vec![rows])) as ArrayRef,
                Arc::new(Int64Array::from(vec![rows])) as ArrayRef,
            ],
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        Ok(rows_output(batch, fixed(&format!("INSERT 0 {rows}"))))
    }

    /// DataFusion reports a positional INSERT of the wrong width without
    /// numbers; Databricks tells too few (42802) from too many (42KDG).
    async fn insert_arity_error(&self, ast: &ast::Statement) -> Option<Error> {
        let ast::Statement::Insert(insert) = ast else {
            return None;
        };
        let source = insert.source.as_ref()?;
        let got = self
            .plan(&ast::Statement::Query(source.clone()))
            .await
            .ok()?
            .schema()
            .fields()
            .len();
        let expected = if insert.columns.is_empty() {
            let ast::TableObject::TableName(name) = &insert.table else {
                return None;
            };
            let name = crate::ddl::table_name(self, name).ok()?;
            let table = self.engine.catalog.load_table(&name).await.ok()?;
            table.snapshot().ok()?.schema().fields().count()
        } else {
            insert.columns.len()
        };
        Some(if got < expected {
            Error::Analysis {
                class: "DELTA_INSERT_COLUMN_ARITY_MISMATCH",
                state: lakegres_delta::SqlState::COLUMN_ARITY_MISMATCH,
                message: format!(
                    "not enough data columns: the table has {expected}, the data {got}"
                ),
            }
        } else {
            Error::Analysis {
                class: "DELTA_METADATA_MISMATCH",
                state: lakegres_delta::SqlState::DELTA_METADATA_MISMATCH,
                message: format!("too many data columns: the table has {expected}, the data {got}"),
            }
        })
    }

    /// DataFusion types a VALUES list by the table's columns, NOT NULL
    /// included, and Arrow refuses its batch before our checks see it, with
    /// the VALUES column's name (`column2`). Databricks names the table's.
    async fn insert_not_null_error(&self, ast: &ast::Statement, e: &Error) -> Option<Error> {
        let text = e.to_string();
        let (_, rest) = text.split_once("Column '")?;
        let (column, _) = rest.split_once("' is declared as non-nullable")?;
        let ast::Statement::Insert(insert) = ast else {
            return None;
        };
        let mut name = column.to_string();
        if let Some(n) = column
            .strip_prefix("column")
            .and_then(|n| n.parse::<usize>().ok())
        {
            let columns: Vec<String> = if insert.columns.is_empty() {
                let ast::TableObject::TableName(table) = &insert.table else {
                    return None;
                };
                let table = crate::ddl::table_name(self, table).ok()?;
                let table = self.engine.catalog.load_table(&table).await.ok()?;
                let snapshot = table.snapshot().ok()?;
                snapshot
                    .schema()
                    .fields()
                    .map(|f| f.name().clone())
                    .collect()
            } else {
                insert.columns.iter().map(|c| c.to_string()).collect()
            };
            name = columns.get(n.checked_sub(1)?)?.clone();
        }
        Some(
            lakegres_delta::Error::ConstraintViolation {
                message: format!(
                    "{} NOT NULL constraint violated for column: {name}.",
                    lakegres_delta::NOT_NULL_VIOLATED
                ),
                state: lakegres_delta::SqlState::NOT_NULL_VIOLATION,
            }
            .into(),
        )
    }

    /// Runs a DML plan to the end and returns its `count`.
    pub(crate) async fn run_count(&self, plan: LogicalPlan) -> Result<i64> {
        let df = self.ctx.execute_logical_plan(plan).await?;
        let batches: Vec<RecordBatch> = df.execute_stream().await?.try_collect().await?;
        let count = batches
            .iter()
            .filter_map(|b| b.column(0).as_any().downcast_ref::<UInt64Array>())
            .flat_map(|a| a.iter().flatten())
            .sum::<u64>();
        Ok(i64::try_from(count).unwrap_or(i64::MAX))
    }

    fn set(&self, set: &Set) -> Result<Output> {
        match set {
            Set::SingleAssignment {
                variable, values, ..
            } => {
                let name = variable.to_string();
                let is_default = values.len() == 1
                    && matches!(&values[0], Expr::Identifier(i) if i.value.eq_ignore_ascii_case("default"));
                if is_default {
                    self.state().settings.reset(&name);
                } else {
                    let value = values.iter().map(expr_text).collect::<Vec<_>>().join(", ");
                    self.apply_setting(&name, &value)?;
                }
            }
            Set::SetTimeZone { value, .. } => self.apply_setting("timezone", &expr_text(value))?,
            Set::SetNames { charset_name, .. } => {
                self.apply_setting("client_encoding", &charset_name.value)?
            }
            Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    self.apply_setting(&a.name.to_string(), &expr_text(&a.value))?;
                }
            }
            // Transaction modes and roles are accepted and have no effect:
            // every statement is its own serializable Delta commit.
            _ => {}
        }
        Ok(Output::Done(fixed("SET")))
    }

    fn apply_setting(&self, name: &str, value: &str) -> Result<()> {
        let key = settings::normalize_name(name);
        if key.starts_with("datafusion.") {
            let state = self.ctx.state_ref();
            let mut state = state.write();
            state
                .config_mut()
                .options_mut()
                .set(&key, value)
                .map_err(Error::DataFusion)?;
            return Ok(());
        }
        if key == "timezone" {
            let state = self.ctx.state_ref();
            let mut state = state.write();
            state.config_mut().options_mut().execution.time_zone = Some(value.to_string());
        }
        self.state().settings.set(&key, value)?;
        if key == "search_path" {
            if let Some(first) = value
                .split(',')
                .map(|s| s.trim().trim_matches('"'))
                .find(|s| !s.is_empty() && *s != "$user" && *s != "pg_catalog")
            {
                let schema = lakegres_delta::normalize_schema(first)?;
                self.set_schema(&schema);
            }
        }
        Ok(())
    }

    async fn use_schema(&self, name: &str) -> Result<()> {
        let schema = lakegres_delta::normalize_schema(name)?;
        if !self.engine.catalog.schema_exists(&schema).await? {
            return Err(lakegres_delta::Error::SchemaNotFound { schema }.into());
        }
        self.set_schema(&schema);
        Ok(())
    }

    fn set_schema(&self, schema: &str) {
        self.state().schema = schema.to_string();
        let state = self.ctx.state_ref();
        let mut state = state.write();
        state.config_mut().options_mut().catalog.default_schema = schema.to_string();
    }

    fn show_variable(&self, variable: &[ast::Ident]) -> Result<Output> {
        let name = variable_name(variable);
        if name == "all" {
            let settings = self.settings();
            let (names, values): (Vec<String>, Vec<String>) = settings
                .all()
                .map(|(k, v)| (settings::display_name(k).to_string(), v.to_string()))
                .unzip();
            let schema = Arc::new(Schema::new(vec![
                Field::new("name", DataType::Utf8, false),
                Field::new("setting", DataType::Utf8, false),
            ]));
            let batch = RecordBatch::try_new(
                schema,
                vec![
                    Arc::new(StringArray::from(names)) as ArrayRef,
                    Arc::new(StringArray::from(values)) as ArrayRef,
                ],
            )
            .map_err(datafusion::error::DataFusionError::from)?;
            return Ok(rows_output(batch, CommandTag::Counted("SHOW")));
        }
        let value = self.state().settings.get(&name)?.to_string();
        let batch = RecordBatch::try_new(
            show_schema(&name),
            vec![Arc::new(StringArray::from(vec![value])) as ArrayRef],
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        Ok(rows_output(batch, CommandTag::Counted("SHOW")))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.engine.activity.close(self.pid);
    }
}

/// A statement's text for `pg_stat_activity`.
fn statement_text(statement: &Statement) -> String {
    match statement {
        Statement::Sql(ast) => ast.to_string(),
        Statement::CreateTable(c) => format!("CREATE TABLE {}", c.name),
        Statement::AlterTable(a) => format!("ALTER TABLE {}", a.name),
        Statement::Merge(m) => format!("MERGE INTO {}", m.target),
        Statement::ExplainMerge(m) => format!("EXPLAIN MERGE INTO {}", m.target),
        Statement::Insert(i) => format!("INSERT INTO {}", i.table),
        Statement::CopyInto(c) => format!("COPY INTO {} FROM '{}'", c.table, c.path),
        Statement::Describe(d) => format!("DESCRIBE {}", d.name),
        Statement::DescribeHistory(h) => format!("DESCRIBE HISTORY {}", h.name),
        Statement::DescribeDetail(name) => format!("DESCRIBE DETAIL {name}"),
        Statement::Restore(r) => format!("RESTORE TABLE {}", r.name),
        Statement::Optimize(o) => format!("OPTIMIZE {}", o.name),
        Statement::Vacuum(v) => format!("VACUUM {}", v.name),
        Statement::Show(_) => "SHOW".to_string(),
        Statement::List(p) => format!("LIST '{p}'"),
        Statement::Grant(g) => format!("{} ON …", if g.grant { "GRANT" } else { "REVOKE" }),
        Statement::ShowGrants(_) => "SHOW GRANTS".to_string(),
        Statement::NoOp(tag) => tag.clone(),
        Statement::NoRows => String::new(),
    }
}

/// The setting that switches the result row of DML statements.
const DML_RESULT_ROWS: &str = "lakegres.dml_result_rows";

/// INSERT, UPDATE, DELETE, MERGE (the statements pgjdbc runs with
/// `executeUpdate`).
fn is_dml(statement: &Statement) -> bool {
    use ast::Statement as S;
    match statement {
        Statement::Merge(_) | Statement::Insert(_) => true,
        Statement::Sql(ast) => matches!(
            ast.as_ref(),
            S::Insert(_) | S::Update(_) | S::Delete(_) | S::Truncate(_)
        ),
        _ => false,
    }
}

/// What kind of write a statement is, for ROLLBACK's warning.
fn write_kind(statement: &Statement) -> Option<String> {
    use ast::Statement as S;
    let kind = match statement {
        Statement::CreateTable(_) => "CREATE TABLE",
        Statement::AlterTable(_) => "ALTER TABLE",
        Statement::Merge(_) => "MERGE",
        Statement::Insert(_) => "INSERT",
        Statement::CopyInto(_) => "COPY INTO",
        Statement::Restore(_) => "RESTORE",
        Statement::Optimize(_) => "OPTIMIZE",
        Statement::Vacuum(v) if !v.dry_run => "VACUUM",
        Statement::Sql(ast) => match ast.as_ref() {
            S::Insert(_) => "INSERT",
            S::Update(_) => "UPDATE",
            S::Delete(_) => "DELETE",
            S::Truncate(_) => "TRUNCATE",
            S::Copy { to: false, .. } => "COPY",
            S::Drop { .. } => "DROP",
            S::CreateSchema { .. } | S::CreateDatabase { .. } => "CREATE SCHEMA",
            _ => return None,
        },
        _ => return None,
    };
    Some(kind.to_string())
}

/// The table a write statement writes (for its audit line).
pub(crate) fn written_table(session: &Session, statement: &Statement) -> Option<TableName> {
    let name = match statement {
        Statement::CreateTable(c) => c.name.clone(),
        Statement::AlterTable(a) => a.name.clone(),
        Statement::Merge(m) => m.target.clone(),
        Statement::Insert(i) => i.table.clone(),
        Statement::CopyInto(c) => c.table.clone(),
        Statement::Restore(r) => r.name.clone(),
        Statement::Optimize(o) => o.name.clone(),
        Statement::Vacuum(v) => v.name.clone(),
        // INSERT INTO t, UPDATE t, DELETE FROM t, TRUNCATE t, DROP TABLE t:
        // the first relation named.
        Statement::Sql(ast) => {
            let mut first = None;
            let _ = ast::visit_relations(ast.as_ref(), |name| {
                first = Some(name.clone());
                std::ops::ControlFlow::Break(())
            });
            first?
        }
        _ => return None,
    };
    crate::ddl::table_name(session, &name).ok()
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

fn ends_transaction(statement: &Statement) -> bool {
    matches!(
        statement,
        Statement::Sql(ast) if matches!(ast.as_ref(), ast::Statement::Commit { .. } | ast::Statement::Rollback { .. } | ast::Statement::ReleaseSavepoint { .. })
    )
}

/// Statements naming pg_catalog or information_schema enumerate tables from
/// the cached listing; refresh it first so they see recent DDL of other servers.
fn mentions_catalog_tables(ast: &ast::Statement) -> bool {
    let text = ast.to_string().to_lowercase();
    text.contains("pg_catalog")
        || text.contains("information_schema")
        || text.contains("pg_class")
        || text.contains("pg_namespace")
        || text.contains("pg_tables")
}

fn variable_name(variable: &[ast::Ident]) -> String {
    let joined = variable
        .iter()
        .map(|i| i.value.clone())
        .collect::<Vec<_>>()
        .join(" ");
    settings::normalize_name(&joined)
}

fn show_schema(name: &str) -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        settings::display_name(name),
        DataType::Utf8,
        false,
    )]))
}

/// The Databricks result of an INSERT: `num_affected_rows, num_inserted_rows`.
pub(crate) fn insert_result_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("num_affected_rows", DataType::Int64, false),
        Field::new("num_inserted_rows", DataType::Int64, false),
    ]))
}

/// The Databricks result of UPDATE, DELETE, TRUNCATE: `num_affected_rows`.
pub(crate) fn affected_rows_output(rows: i64, tag: &str) -> Result<Output> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "num_affected_rows",
        DataType::Int64,
        false,
    )]));
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from(vec![rows])) as ArrayRef],
    )
    .map_err(datafusion::error::DataFusionError::from)?;
    Ok(rows_output(batch, fixed(tag)))
}

/// The last part of a possibly qualified name.
pub(crate) fn object_leaf(name: &ast::ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}

pub(crate) fn fixed(tag: &str) -> CommandTag {
    CommandTag::Fixed(tag.to_string())
}

/// One batch as a row stream.
pub(crate) fn rows_output(batch: RecordBatch, tag: CommandTag) -> Output {
    let schema = batch.schema();
    let stream = futures::stream::iter(vec![Ok(batch)]);
    Output::Rows {
        stream: Box::pin(RecordBatchStreamAdapter::new(schema, stream)),
        tag,
    }
}

/// The text of a SET value: strings unquoted, names as written.
fn expr_text(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        Expr::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    }
}

fn bind(plan: LogicalPlan, params: Option<ParamValues>) -> Result<LogicalPlan> {
    match params {
        Some(p) => Ok(plan.with_param_values(p)?),
        None => Ok(plan),
    }
}

/// Integer literals that fit in 32 bits are `INT` in Postgres and in
/// Databricks (`SELECT 1` is int4; `CREATE TABLE t AS SELECT 1 AS a` makes an
/// `int` column); DataFusion types them `BIGINT`. Literals in projections and
/// VALUES lists are narrowed before type coercion runs; other places
/// (LIMIT, positions in ORDER BY) are left as they are.
fn int_literals_as_int(plan: LogicalPlan) -> Result<LogicalPlan> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::logical_expr::Expr as DfExpr;
    fn narrow(e: DfExpr) -> datafusion::error::Result<Transformed<DfExpr>> {
        e.transform_down(|e| match e {
            // A lambda's parameters were typed from the literals it sees.
            DfExpr::HigherOrderFunction(_) => Ok(Transformed::new(
                e,
                false,
                datafusion::common::tree_node::TreeNodeRecursion::Jump,
            )),
            DfExpr::Literal(ScalarValue::Int64(Some(v)), meta) => match i32::try_from(v) {
                Ok(v) => Ok(Transformed::yes(DfExpr::Literal(
                    ScalarValue::Int32(Some(v)),
                    meta,
                ))),
                Err(_) => Ok(Transformed::no(DfExpr::Literal(
                    ScalarValue::Int64(Some(v)),
                    meta,
                ))),
            },
            other => Ok(Transformed::no(other)),
        })
    }
    // Set operations coerce their branches when planned; leave them alone.
    let mut has_set_operation = false;
    plan.apply(|node| {
        has_set_operation |= matches!(node, LogicalPlan::Union(_) | LogicalPlan::RecursiveQuery(_));
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    })?;
    if has_set_operation
        || !matches!(
            plan,
            LogicalPlan::Projection(_)
                | LogicalPlan::Sort(_)
                | LogicalPlan::Limit(_)
                | LogicalPlan::Distinct(_)
        )
    {
        return Ok(plan);
    }
    // Every node above a narrowed projection derives its schema again.
    let plan = plan.transform_up(|node| match node {
        LogicalPlan::Projection(_) => node
            .map_expressions(narrow)?
            .map_data(|p| p.recompute_schema()),
        other => Ok(Transformed::yes(other.recompute_schema()?)),
    })?;
    Ok(plan.data)
}

/// `$1 … $n` types in order.
fn parameter_types(plan: &LogicalPlan) -> Result<Vec<Option<DataType>>> {
    let types = plan.get_parameter_types()?;
    let count = types
        .keys()
        .filter_map(|k| k.trim_start_matches('$').parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    Ok((1..=count)
        .map(|i| types.get(&format!("${i}")).cloned().flatten())
        .collect())
}

/// Whether the session's user may read a path by name, or the Delta table
/// folder a listing of a named folder reached (README, Privileges): in the
/// warehouse only a table's own folder, with SELECT on it; outside it a
/// Delta table folder with SELECT on the external table registered there;
/// any other Delta table folder and the rest of the warehouse only admins.
async fn check_file_access(
    principal: &Principal,
    catalog: &Catalog,
    warehouse: Option<&std::path::Path>,
    access: Access,
) -> lakegres_delta::Result<()> {
    match access {
        Access::Path(location) => {
            let shown = location.to_string();
            let inside = warehouse_path(catalog, warehouse, &location);
            if inside.is_some() || principal.is_admin() {
                return principal.require_warehouse_path(inside.as_deref(), &shown);
            }
            // Outside the warehouse, a Delta table's folder (an
            // external table's) is read with that table's grants.
            let Some(table) = location.delta_table().await? else {
                return Ok(());
            };
            let owner = catalog.external_table_at(&table.folder_url()?).await?;
            principal.require_table_folder(owner.as_ref(), &shown)
        }
        Access::TableBelow { listed, table } => {
            if principal.is_admin() {
                return Ok(());
            }
            let owner = match warehouse_path(catalog, warehouse, &table) {
                Some(inside) => lakegres_delta::grants::warehouse_table(&inside),
                None => catalog.external_table_at(&table.folder_url()?).await?,
            };
            principal.require_table_folder_below(
                owner.as_ref(),
                &table.to_string(),
                &listed.to_string(),
            )
        }
    }
}

/// A location's path inside the warehouse, if it is inside.
fn warehouse_path(
    catalog: &Catalog,
    warehouse: Option<&std::path::Path>,
    location: &Location,
) -> Option<std::path::PathBuf> {
    match location {
        Location::Local(path) => warehouse
            .and_then(|w| path.strip_prefix(w).ok())
            .map(std::path::Path::to_path_buf),
        Location::Remote { url, .. } => {
            let root = catalog.root().as_str();
            let url = url.as_str();
            if format!("{url}/") == root {
                Some(std::path::PathBuf::new())
            } else {
                url.strip_prefix(root).map(std::path::PathBuf::from)
            }
        }
    }
}
