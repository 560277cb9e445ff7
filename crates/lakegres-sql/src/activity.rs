//! `pg_stat_activity`: one row per open session of this server, with what
//! it runs now, as Postgres shows it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, Int32Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::Session as DfSession;
use datafusion::common::Result as DFResult;
use datafusion::datasource::{MemTable, TableProvider, TableType};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

/// What one session is doing.
#[derive(Debug, Clone)]
pub(crate) struct Activity {
    pub user: String,
    pub application_name: String,
    pub backend_start_ms: i64,
    pub state: &'static str,
    pub query: String,
    pub query_start_ms: Option<i64>,
    /// Stops the session's statement while it is planned.
    pub interrupt: Arc<crate::interrupt::Interrupt>,
}

/// The sessions of the server, by process id.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    sessions: Mutex<BTreeMap<i32, Activity>>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<i32, Activity>> {
        // Every update replaces whole fields, so a poisoned lock is usable.
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn open(&self, pid: i32, interrupt: Arc<crate::interrupt::Interrupt>) {
        self.lock().insert(
            pid,
            Activity {
                user: String::new(),
                application_name: String::new(),
                backend_start_ms: now_ms(),
                state: "idle",
                query: String::new(),
                query_start_ms: None,
                interrupt,
            },
        );
    }

    pub fn close(&self, pid: i32) {
        self.lock().remove(&pid);
    }

    pub fn update(&self, pid: i32, f: impl FnOnce(&mut Activity)) {
        if let Some(a) = self.lock().get_mut(&pid) {
            f(a);
        }
    }

    /// Stops the statement session `pid` runs, at its next checkpoint
    /// ([`crate::interrupt`]).
    pub fn interrupt(&self, pid: i32) {
        if let Some(a) = self.lock().get(&pid) {
            a.interrupt.interrupt();
        }
    }

    /// The user of session `pid`, if it is open.
    pub fn user_of(&self, pid: i32) -> Option<String> {
        self.lock().get(&pid).map(|a| a.user.clone())
    }

    fn snapshot(&self) -> Vec<(i32, Activity)> {
        self.lock().iter().map(|(p, a)| (*p, a.clone())).collect()
    }
}

/// Milliseconds since the Unix epoch: `query_start` is set for every
/// statement, and chrono's `Utc::now` (which also works out the calendar
/// date) was a percent of a `SELECT 1`.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The `pg_stat_activity` table over a [`Registry`].
#[derive(Debug)]
pub(crate) struct ActivityTable {
    pub registry: Arc<Registry>,
}

fn schema() -> SchemaRef {
    let ts = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
    Arc::new(Schema::new(vec![
        Field::new("datid", DataType::Int32, true),
        Field::new("datname", DataType::Utf8, true),
        Field::new("pid", DataType::Int32, false),
        Field::new("usename", DataType::Utf8, true),
        Field::new("application_name", DataType::Utf8, true),
        Field::new("client_addr", DataType::Utf8, true),
        Field::new("backend_start", ts.clone(), true),
        Field::new("query_start", ts, true),
        Field::new("state", DataType::Utf8, true),
        Field::new("query", DataType::Utf8, true),
        Field::new("backend_type", DataType::Utf8, true),
    ]))
}

#[async_trait]
impl TableProvider for ActivityTable {
    fn schema(&self) -> SchemaRef {
        schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let mut rows = self.registry.snapshot();
        // Other users' statement texts (with their literals) are for
        // admins, as Postgres shows them only to their own user and to
        // pg_read_all_stats.
        if let Some(principal) = state
            .config()
            .get_extension::<lakegres_delta::grants::Principal>()
            .filter(|p| !p.is_admin())
        {
            let me = principal.user().to_lowercase();
            for (_, activity) in rows.iter_mut() {
                if activity.user.to_lowercase() != me {
                    activity.query = "<insufficient privilege>".to_string();
                    activity.query_start_ms = None;
                }
            }
        }
        let text = |f: &dyn Fn(&Activity) -> String| -> ArrayRef {
            Arc::new(StringArray::from(
                rows.iter().map(|(_, a)| Some(f(a))).collect::<Vec<_>>(),
            ))
        };
        let n = rows.len();
        let batch = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int32Array::from(vec![Some(1); n])),
                text(&|_| crate::CATALOG_NAME.to_string()),
                Arc::new(Int32Array::from(
                    rows.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
                )),
                text(&|a| a.user.clone()),
                text(&|a| a.application_name.clone()),
                Arc::new(StringArray::from(vec![None::<String>; n])),
                Arc::new(
                    TimestampMillisecondArray::from(
                        rows.iter()
                            .map(|(_, a)| Some(a.backend_start_ms))
                            .collect::<Vec<_>>(),
                    )
                    .with_timezone("UTC"),
                ),
                Arc::new(
                    TimestampMillisecondArray::from(
                        rows.iter()
                            .map(|(_, a)| a.query_start_ms)
                            .collect::<Vec<_>>(),
                    )
                    .with_timezone("UTC"),
                ),
                text(&|a| a.state.to_string()),
                text(&|a| a.query.clone()),
                text(&|_| "client backend".to_string()),
            ],
        )?;
        MemTable::try_new(schema(), vec![vec![batch]])?
            .scan(state, projection, filters, limit)
            .await
    }
}
