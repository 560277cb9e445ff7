//! [`StatementContext`]: what one statement runs with — the engine (the
//! catalog and the server's services), the session's DataFusion context
//! (the planner), the principal, the session's settings and temporary
//! objects ([`SessionState`], plain data), and the sink its commits go to.
//!
//! The pipeline builds one per statement from the [`crate::Session`];
//! statement modules and the services below them take it, never the
//! session itself (the connection's idle watch, busy guard and startup
//! parameters are none of a statement's business).

use std::sync::{Arc, Mutex, MutexGuard};

use datafusion::catalog::MemorySchemaProvider;
use datafusion::common::ParamValues;
use datafusion::prelude::SessionContext;
use futures::future::BoxFuture;
use lakegres_delta::grants::Principal;
use lakegres_delta::FileRoots;

use crate::constant_plans::ConstantPlans;
use crate::cursors::Cursors;
use crate::engine::Engine;
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::output::{Description, Output};
use crate::parser::Statement;
use crate::session_state::{lock_state, SessionState, Transaction};
use crate::settings::Settings;

/// Runs a statement the running one holds (`EXECUTE IMMEDIATE`) through
/// the whole pipeline, as the client's own statements run.
pub(crate) trait Nested: Send + Sync {
    fn execute<'a>(
        &'a self,
        statement: &'a Statement,
        params: Option<ParamValues>,
    ) -> BoxFuture<'a, Result<Output>>;

    fn describe<'a>(&'a self, statement: &'a Statement) -> BoxFuture<'a, Result<Description>>;
}

/// One statement's view of its session and server.
pub(crate) struct StatementContext<'s> {
    /// Where statements the statement holds run.
    pub(crate) nested: &'s dyn Nested,
    pub(crate) engine: &'s Arc<Engine>,
    /// The session's DataFusion context: the planner the statement's
    /// queries go through.
    pub(crate) planner: &'s SessionContext,
    /// The user the statement runs as, with the grants.
    pub(crate) principal: &'s Arc<Principal>,
    /// Where the statement's writes hand their commits.
    pub(crate) commits: &'s Arc<lakegres_delta::CommitSink>,
    /// Where the statement may read files from.
    pub(crate) file_roots: &'s Arc<FileRoots>,
    /// Tables read at an older version by the statement being planned.
    pub(crate) time_travel: &'s Arc<MemorySchemaProvider>,
    /// Stops the statement while it is planned.
    pub(crate) interrupt: &'s Arc<Interrupt>,
    /// The session's settings, schema, block state and temporary objects.
    pub(crate) state: &'s Arc<Mutex<SessionState>>,
    /// The session's SQL cursors.
    pub(crate) cursors: &'s tokio::sync::Mutex<Cursors>,
    /// Plans of the queries that read nothing, run again.
    pub(crate) constant_plans: &'s ConstantPlans,
    /// The session's process id in `pg_stat_activity`.
    pub(crate) pid: i32,
}

impl StatementContext<'_> {
    pub(crate) fn state(&self) -> MutexGuard<'_, SessionState> {
        lock_state(self.state)
    }

    /// The engine the session belongs to.
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        self.engine
    }

    /// The session's DataFusion context.
    pub(crate) fn context(&self) -> &SessionContext {
        self.planner
    }

    /// The user the statement runs as, with the server's grants.
    pub(crate) fn principal(&self) -> &Arc<Principal> {
        self.principal
    }

    /// Where the statement's writes hand their commits.
    pub(crate) fn committed(&self) -> &Arc<lakegres_delta::CommitSink> {
        self.commits
    }

    /// The catalog as the statement sees it: through the session's open
    /// transaction block, if any.
    pub(crate) fn catalog(&self) -> lakegres_delta::SessionCatalog {
        self.commits.session_catalog()
    }

    /// `name` as the statement reads and writes it: through the session's
    /// open transaction, or at its latest committed version.
    pub(crate) async fn load_table(
        &self,
        name: &lakegres_delta::TableName,
    ) -> lakegres_delta::Result<lakegres_delta::Table> {
        self.commits.load_table(name).await
    }

    /// Where the statement may read files from (the server's roots, with
    /// the session's privileges on warehouse files).
    pub(crate) fn file_roots(&self) -> &Arc<FileRoots> {
        self.file_roots
    }

    /// Tables read at an older version by the statement being planned.
    pub(crate) fn time_travel(&self) -> &Arc<MemorySchemaProvider> {
        self.time_travel
    }

    /// The session's SQL cursors.
    pub(crate) fn cursors(&self) -> &tokio::sync::Mutex<Cursors> {
        self.cursors
    }

    /// The plans of the queries that read nothing that the session keeps.
    pub(crate) fn constant_plans(&self) -> &ConstantPlans {
        self.constant_plans
    }

    /// The session's process id, as pg_stat_activity shows it.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// The transaction block state.
    pub(crate) fn transaction(&self) -> Transaction {
        self.state().transaction
    }

    /// The schema unqualified names resolve to.
    pub(crate) fn current_schema(&self) -> String {
        self.state().schema.clone()
    }

    /// A copy of the current settings.
    pub(crate) fn settings(&self) -> Settings {
        self.state().settings.clone()
    }

    /// Whether INSERT, UPDATE, DELETE and MERGE answer with Databricks'
    /// result row (`lakegres.dml_result_rows`).
    pub(crate) fn dml_result_rows(&self) -> bool {
        self.state().settings.lakegres().dml_result_rows.0
    }

    /// Whether the statement's queries may run on workers
    /// (`lakegres.distributed`).
    pub(crate) fn distribution(&self) -> crate::settings::Distribution {
        self.state().settings.lakegres().distributed
    }

    /// The database the client connected to, if it named one.
    pub(crate) fn database(&self) -> Option<String> {
        self.state().database.clone()
    }
}
