//! Building one session's DataFusion context: the warehouse catalog and
//! its hidden schemas (file formats, time travel, pg_catalog), the
//! functions Postgres clients call, the planners and rules every plan goes
//! through, and the policy for reading files by path.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{create_udf, ColumnarValue, Volatility};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_pg_catalog::pg_catalog::PgCatalogSchemaProvider;
use lakegres_delta::grants::{Principal, Privilege};
use lakegres_delta::{Access, Catalog, LakeCatalogProvider, Location, DEFAULT_SCHEMA};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::planner::LakegresPlanner;
use crate::session::{Session, SessionParts};
use crate::settings;
use crate::CATALOG_NAME;

impl Engine {
    /// A new session for one connection.
    pub fn new_session(self: &Arc<Self>) -> Result<Session> {
        let principal = Arc::new(Principal::new(Arc::clone(&self.grants)));
        let committed = lakegres_delta::CommitSink::new(Arc::clone(&self.catalog));
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
            // UPDATE / DELETE keep the condition the statement wrote.
            .with_analyzer_rule(Arc::new(lakegres_delta::DmlRule))
            // NOT IN over keys the Delta log proves NULL-free: a plain anti join.
            .with_optimizer_rule(Arc::new(lakegres_delta::NullFreeNotIn))
            .build();
        // Statement timeouts and cancels stop the optimizer too.
        let interrupt = Arc::new(crate::interrupt::Interrupt::default());
        let state = crate::interrupt::with_checkpoints(state, &interrupt);
        let ctx = SessionContext::new_with_state(state);
        let lake = LakeCatalogProvider::new(Arc::clone(&self.catalog), Arc::clone(&committed));
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
        lakegres_functions::install(&ctx);
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
        ctx.register_udf(crate::pg_catalog::user_by_id());
        ctx.register_udf(crate::pg_catalog::view_definition(Arc::clone(
            &self.catalog,
        )));
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
        // information_schema lists the tables and views the user holds a
        // privilege on (Postgres' and Databricks' rule); pg_catalog lists
        // all, as Postgres' does. System schemas and temporary objects are
        // everyone's.
        let viewer = Arc::clone(&principal);
        ctx.register_udf(create_udf(
            "lakegres_visible",
            vec![DataType::Utf8, DataType::Utf8],
            DataType::Boolean,
            Volatility::Stable,
            Arc::new(move |args| {
                let arrays = ColumnarValue::values_to_arrays(args)?;
                let schemas = datafusion::common::cast::as_string_array(&arrays[0])?;
                let names = datafusion::common::cast::as_string_array(&arrays[1])?;
                let everything = !viewer.grants().enforced() || viewer.is_admin();
                let user = viewer.user();
                let visible: datafusion::arrow::array::BooleanArray = schemas
                    .iter()
                    .zip(names.iter())
                    .map(|(schema, name)| {
                        let (Some(schema), Some(name)) = (schema, name) else {
                            return Some(true);
                        };
                        if everything
                            || matches!(schema, "pg_temp" | "pg_catalog" | "information_schema")
                        {
                            return Some(true);
                        }
                        let Ok(table) = lakegres_delta::TableName::new(schema, name) else {
                            return Some(true);
                        };
                        let grants = viewer.grants();
                        Some(
                            [Privilege::Select, Privilege::Modify, Privilege::All]
                                .into_iter()
                                .any(|p| grants.allows(&user, p, &table)),
                        )
                    })
                    .collect();
                Ok(ColumnarValue::Array(Arc::new(visible)))
            }),
        ));
        for (name, terminate) in [("pg_cancel_backend", false), ("pg_terminate_backend", true)] {
            let engine = Arc::clone(self);
            let caller = Arc::clone(&principal);
            ctx.register_udf(create_udf(
                name,
                // BIGINT, so that a literal pid (`pg_terminate_backend(123)`)
                // is taken as it is; an INT is widened to it.
                vec![DataType::Int64],
                DataType::Boolean,
                Volatility::Volatile,
                Arc::new(move |args| {
                    let pids = datafusion::common::cast::as_int64_array(
                        &ColumnarValue::values_to_arrays(args)?[0],
                    )?
                    .clone();
                    let done: datafusion::arrow::array::BooleanArray = pids
                        .iter()
                        .map(|pid| {
                            let Ok(pid) = i32::try_from(pid?) else {
                                return Some(false);
                            };
                            let backends = engine.backends.get()?;
                            // As in Postgres: admins may signal any session,
                            // others only their own user's.
                            let Some(owner) = engine.activity.user_of(pid) else {
                                return Some(false);
                            };
                            if !caller.is_admin() && !owner.eq_ignore_ascii_case(&caller.user()) {
                                return Some(false);
                            }
                            engine.activity.interrupt(pid);
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
        self.activity.open(pid, Arc::clone(&interrupt));
        Ok(Session::new(SessionParts {
            principal,
            committed,
            file_roots,
            time_travel,
            pid,
            engine: Arc::clone(self),
            ctx,
            interrupt,
        }))
    }
}

/// Whether the session's user may read a path by name, or the Delta table
/// folder a listing of a named folder reached (docs/security.md, Privileges): in the
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
