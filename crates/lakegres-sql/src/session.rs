//! [`Session`]: one connection's state — settings, the transaction block,
//! the current schema, cursors, the idle watch and the DataFusion context.
//! How a statement runs is in `pipeline.rs`; what each statement does is in
//! `statements/`.

use std::sync::{Arc, Mutex, MutexGuard};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::prelude::SessionContext;
use lakegres_delta::grants::Principal;
use lakegres_delta::FileRoots;

use crate::cursors::Cursors;
use crate::engine::Engine;
pub use crate::session_state::Transaction;
use crate::session_state::{lock_state, SessionState};
use crate::settings::Settings;
use crate::statement_context::StatementContext;

/// The session is busy while this guard lives ([`Session::busy`]). A COPY
/// FROM STDIN that starts keeps it busy until the client's CopyDone or
/// CopyFail, with a guard of its own: its statement's is let go with
/// [`Busy::keep`].
pub struct Busy(Option<Arc<Session>>);

impl Busy {
    /// Leaves the session busy: a COPY FROM STDIN holds it now.
    pub fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(session) = &self.0 {
            session.set_idle();
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
    committed: Arc<lakegres_delta::CommitSink>,
    /// Where the session's statements may read files from.
    file_roots: Arc<FileRoots>,
    /// Tables read at an older version by the statement being planned.
    time_travel: Arc<datafusion::catalog::MemorySchemaProvider>,
    /// The session's process id in `pg_stat_activity`.
    pid: i32,
    engine: Arc<Engine>,
    ctx: SessionContext,
    /// Stops the running statement while it is planned.
    pub(crate) interrupt: Arc<crate::interrupt::Interrupt>,
    /// Shared with the result streams the session hands out, which fail
    /// the transaction block when a row fails ([`crate::pipeline`]).
    state: Arc<Mutex<SessionState>>,
    cursors: tokio::sync::Mutex<Cursors>,
    idle: IdleWatch,
    /// Plans of the queries that read nothing, run again ([`crate::constant_plans`]).
    constant_plans: crate::constant_plans::ConstantPlans,
}

/// What [`Session::new`] is made of (`context.rs` builds them).
pub(crate) struct SessionParts {
    pub(crate) principal: Arc<Principal>,
    pub(crate) committed: Arc<lakegres_delta::CommitSink>,
    pub(crate) file_roots: Arc<FileRoots>,
    pub(crate) time_travel: Arc<datafusion::catalog::MemorySchemaProvider>,
    pub(crate) pid: i32,
    pub(crate) engine: Arc<Engine>,
    pub(crate) ctx: SessionContext,
    pub(crate) interrupt: Arc<crate::interrupt::Interrupt>,
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
    /// A new session in its initial state: the default schema and
    /// settings, no transaction block.
    /// Stops the statement session `pid` (of this server) runs, also
    /// while it is planned.
    pub fn interrupt_session(&self, pid: i32) {
        self.engine.interrupt(pid);
    }

    pub(crate) fn new(parts: SessionParts) -> Self {
        let SessionParts {
            principal,
            committed,
            file_roots,
            time_travel,
            pid,
            engine,
            ctx,
            interrupt,
        } = parts;
        Self {
            principal,
            committed,
            file_roots,
            time_travel,
            pid,
            engine,
            ctx,
            interrupt,
            state: Arc::new(Mutex::new(SessionState {
                settings: Settings::default(),
                transaction: Transaction::Idle,
                schema: lakegres_delta::DEFAULT_SCHEMA.to_string(),
                notices: Vec::new(),
                grants_before_block: Vec::new(),
                user: String::new(),
                database: None,
                temp_views: Default::default(),
                variables: Default::default(),
                declared_params: Vec::new(),
                reported: Vec::new(),
            })),
            cursors: tokio::sync::Mutex::new(Cursors::default()),
            idle: IdleWatch::default(),
            constant_plans: Default::default(),
        }
    }

    /// The session's idle state, for the server's idle timeouts.
    pub fn idle_watch(&self) -> IdleWatch {
        Arc::clone(&self.idle)
    }

    /// The session is busy (no idle timeout runs) from a Query or Execute
    /// until the guard drops, however the statement ends.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.set_busy();
        Busy(Some(Arc::clone(self)))
    }

    /// The client sent work: no idle timeout runs until [`Self::set_idle`].
    fn set_busy(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.since = None;
        }
    }

    /// The session waits for its client from now on, as long as the
    /// timeout of its state allows (inside a transaction block or not).
    fn set_idle(&self) {
        let timeouts = self.state().settings.timeouts();
        let (setting, limit) = match self.transaction() {
            Transaction::Idle => ("idle_session_timeout", timeouts.idle_session),
            _ => (
                "idle_in_transaction_session_timeout",
                timeouts.idle_in_transaction,
            ),
        };
        if let Ok(mut idle) = self.idle.lock() {
            *idle = Idle {
                since: Some(std::time::Instant::now()),
                limit,
                setting,
            };
        }
    }

    fn state(&self) -> MutexGuard<'_, SessionState> {
        lock_state(&self.state)
    }

    /// The context the running statement gets: the session's parts a
    /// statement may use.
    pub(crate) fn statement_context(&self) -> StatementContext<'_> {
        StatementContext {
            nested: self,
            engine: &self.engine,
            planner: &self.ctx,
            principal: &self.principal,
            commits: &self.committed,
            file_roots: &self.file_roots,
            time_travel: &self.time_travel,
            interrupt: &self.interrupt,
            state: &self.state,
            cursors: &self.cursors,
            constant_plans: &self.constant_plans,
            pid: self.pid,
        }
    }

    /// The transaction block state.
    pub fn transaction(&self) -> Transaction {
        self.state().transaction
    }

    /// How this session's statements read string literals
    /// (`standard_conforming_strings`).
    pub fn string_literals(&self) -> crate::parser::StringLiterals {
        self.state().settings.string_literals()
    }

    /// The types the client declared for the parameters of the statements
    /// the session describes and runs next, until declared again (an
    /// empty list: none): [`crate::declared_params`].
    pub fn declare_parameters(&self, types: Vec<Option<datafusion::arrow::datatypes::DataType>>) {
        self.state().declared_params = types;
    }

    /// The session's `TimeZone` setting.
    pub fn time_zone(&self) -> Option<String> {
        self.state().settings.get("timezone").ok()
    }

    /// A copy of the current settings.
    pub fn settings(&self) -> Settings {
        self.state().settings.clone()
    }

    /// Sets a parameter from the startup message (`application_name` …);
    /// unknown ones are ignored as Postgres ignores them there.
    pub fn set_startup_parameter(&self, name: &str, value: &str) {
        if !matches!(name, "user" | "database") {
            let _ = self.state().settings.set(name, value);
        }
        match name {
            "user" => {
                self.principal.set_user(value);
                self.state().user = value.to_string();
                self.engine
                    .activity()
                    .update(self.pid, |a| a.user = value.to_string())
            }
            "database" => self.state().database = Some(value.to_string()),
            // `options=-c search_path=s -c statement_timeout=5s` (libpq's
            // PGOPTIONS, JDBC's `options`): each one as SET would set it.
            "options" => {
                for (name, value) in startup_options(value) {
                    if let Err(e) = self.statement_context().apply_setting(&name, &value) {
                        tracing::warn!("startup option {name}={value} ignored: {e}");
                    }
                }
            }
            // pgjdbc is the driver that sends extra_float_digits at startup.
            "extra_float_digits" => self.for_jdbc(),
            "application_name" => {
                if value.starts_with("PostgreSQL JDBC Driver") {
                    self.for_jdbc();
                }
                self.engine
                    .activity()
                    .update(self.pid, |a| a.application_name = value.to_string())
            }
            _ => {}
        }
    }

    /// pgjdbc's `executeUpdate` and batches refuse a result row: for it,
    /// DML answers with the command tag alone unless the client sets
    /// otherwise.
    fn for_jdbc(&self) {
        let _ = self
            .state()
            .settings
            .set_client_default("lakegres.dml_result_rows", "off");
    }

    /// The columns of an open SQL cursor (for a Describe of it as a portal).
    pub async fn cursor_schema(&self, name: &str) -> Option<SchemaRef> {
        self.cursors.lock().await.schema(name)
    }

    /// Records that a statement failed where the session cannot see it
    /// (a parse error, a cancel, a row the wire cannot encode): an open
    /// transaction block fails. Errors of the statements the session runs,
    /// their rows and COPY data included, fail it without this.
    pub fn note_error(&self) {
        self.state().fail_block();
    }

    /// The session's process id, as pg_stat_activity shows it.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Warnings raised by the last statement, for the client.
    pub fn take_notices(&self) -> Vec<crate::session_state::Notice> {
        std::mem::take(&mut self.state().notices)
    }

    /// The reported settings the last statements changed, to send as
    /// ParameterStatus (name as clients know it, new value).
    pub fn take_reported(&self) -> Vec<(String, String)> {
        std::mem::take(&mut self.state().reported)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.engine.activity().close(self.pid);
        // A block left open rolls back: its staged writes go with the
        // session's commit sink; its grant changes are put back here.
        let changes = std::mem::take(&mut self.state().grants_before_block);
        if !changes.is_empty() {
            let grants = std::sync::Arc::clone(self.principal.grants());
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    if let Err(e) = crate::privileges::restore_grants(&grants, changes).await {
                        tracing::warn!(error = %e, "could not put back the grants of a block left open");
                    }
                });
            }
        }
    }
}

/// The `-c name=value` (or `-cname=value`, `--name=value`) settings of a
/// startup `options` string; a backslash keeps the next character (a
/// space) in the value, as Postgres reads it.
fn startup_options(options: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut settings = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let setting = if word == "-c" {
            words.next()
        } else {
            word.strip_prefix("--")
                .or_else(|| word.strip_prefix("-c"))
                .map(str::to_string)
        };
        if let Some((name, value)) = setting.as_deref().and_then(|s| s.split_once('=')) {
            settings.push((name.replace('-', "_"), value.to_string()));
        }
    }
    settings
}

#[cfg(test)]
mod startup_tests {
    use super::startup_options;

    #[test]
    fn startup_options_read_as_postgres_reads_them() {
        assert_eq!(
            startup_options("-c search_path=shop  -cstatement_timeout=5s --application-name=a\\ b"),
            vec![
                ("search_path".to_string(), "shop".to_string()),
                ("statement_timeout".to_string(), "5s".to_string()),
                ("application_name".to_string(), "a b".to_string()),
            ]
        );
        assert!(startup_options("").is_empty());
    }
}
