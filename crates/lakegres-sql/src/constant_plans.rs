//! Queries that read nothing — `SELECT 1` (a connection pool's validation
//! query, sent before every checkout), `SELECT version()`, `VALUES (…)` —
//! planned once per session and their result (or, when large, their
//! physical plan) kept.
//!
//! Planning such a query costs far more than running it (parsing aside,
//! DataFusion's analyzer, optimizer and physical optimizer passes). Its
//! result can only depend on the statement's text and on the session's
//! state (settings, variables, the user — the rewrites fold them into
//! literals), so a plan is kept while the session runs nothing but queries
//! and DML: any other statement (SET, USE, SET VAR, DDL, a transaction
//! statement) may change that state and clears the cache.

use std::sync::{Arc, Mutex, MutexGuard};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
// Hashed with DataFusion's default hasher: each kept query's lookup hashes
// its whole syntax tree, and SipHash made that a few percent of `SELECT 1`.
use datafusion::common::HashMap;
use datafusion::logical_expr::{Expr, LogicalPlan, Volatility};
use sqlparser::ast;

use crate::error::Result;
use crate::runnable::Runnable;

/// How many plans one session keeps; when full, it starts over.
const MAX_PLANS: usize = 64;

/// The most result a session keeps of one query, in bytes of Arrow memory.
const MAX_KEPT_RESULT: usize = 64 * 1024;

/// What a session keeps of a query that reads nothing.
#[derive(Clone)]
pub(crate) enum Kept {
    /// Its plan, run again (its result was large, or not yet seen whole).
    Plan(Runnable),
    /// Its result: a query of literals and immutable functions gives the
    /// same rows while the session's state stands, and running even a
    /// kept plan (DataFusion's streams and their metrics) was a tenth of
    /// the server's time for `SELECT 1`.
    Rows(SchemaRef, Vec<RecordBatch>),
}

impl Kept {
    /// Its rows.
    pub(crate) fn execute(&self) -> Result<SendableRecordBatchStream> {
        match self {
            Kept::Plan(plan) => plan.execute(),
            Kept::Rows(schema, batches) => Ok(Box::pin(RecordBatchStreamAdapter::new(
                Arc::clone(schema),
                futures::stream::iter(batches.clone().into_iter().map(Ok)),
            ))),
        }
    }
}

/// One session's plans of queries that read nothing, by the query's text:
/// its rendered SQL ([`crate::Statement::text`]), which the pipeline holds
/// for `pg_stat_activity` anyway. sqlparser renders every part of a syntax
/// tree, so one text is one query; finding a kept query by its tree
/// instead (hashing and comparing it, and [`may_keep`]'s walk before that)
/// was a tenth of the server's time for `SELECT 1`.
#[derive(Default)]
pub(crate) struct ConstantPlans(Mutex<HashMap<Box<str>, Kept>>);

impl ConstantPlans {
    fn plans(&self) -> MutexGuard<'_, HashMap<Box<str>, Kept>> {
        // A plan map is whole after any panic: insert and clear are single steps.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What is kept of the query whose text is `text`. Only queries that
    /// passed [`may_keep`] and [`reads_nothing`] are ever kept.
    pub(crate) fn get(&self, text: &str) -> Option<Kept> {
        self.plans().get(text).cloned()
    }

    fn insert(&self, statement: &ast::Statement, kept: Kept) {
        let text = crate::info::Text::Sql(statement).render().into_boxed_str();
        let mut plans = self.plans();
        if plans.len() >= MAX_PLANS {
            plans.clear();
        }
        plans.insert(text, kept);
    }

    /// Keeps `plan` of `statement` and runs it: its rows. A small result
    /// read whole is kept instead of the plan; a larger one streams on
    /// from where the reading stopped.
    pub(crate) async fn keep(
        &self,
        statement: &ast::Statement,
        plan: Runnable,
    ) -> Result<SendableRecordBatchStream> {
        let mut stream = plan.execute()?;
        let schema = stream.schema();
        let mut read = Vec::new();
        let mut size = 0;
        while size <= MAX_KEPT_RESULT {
            match stream.next().await {
                Some(batch) => {
                    let batch = batch?;
                    size += batch.get_array_memory_size();
                    read.push(batch);
                }
                None => {
                    self.insert(statement, Kept::Rows(Arc::clone(&schema), read.clone()));
                    return Kept::Rows(schema, read).execute();
                }
            }
        }
        self.insert(statement, Kept::Plan(plan));
        let rest = futures::stream::iter(read.into_iter().map(Ok)).chain(stream);
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, rest)))
    }

    pub(crate) fn clear(&self) {
        self.plans().clear();
    }
}

/// Whether a query's text may be answered by a kept plan: a plain query
/// that names no catalog object (`'t'::regclass`, `pg_catalog.…`) and
/// calls no function that looks at the catalog (`pg_…`, `has_…`,
/// `to_reg…`, `obj_description`): those answer from state outside the
/// session.
pub(crate) fn may_keep(statement: &ast::Statement) -> bool {
    use std::ops::ControlFlow;
    if !matches!(statement, ast::Statement::Query(_)) {
        return false;
    }
    let catalog_function = |name: &str| {
        [
            "pg_",
            "has_",
            "to_reg",
            "obj_",
            "col_",
            "shobj_",
            "current_setting",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix))
    };
    let refused = ast::visit_expressions(statement, |expr| match expr {
        ast::Expr::Function(f)
            if f.name.0.iter().any(|part| {
                part.as_ident()
                    .is_some_and(|i| catalog_function(&i.value.to_lowercase()))
            }) =>
        {
            ControlFlow::Break(())
        }
        ast::Expr::Cast { data_type, .. }
            if data_type.to_string().to_lowercase().starts_with("reg") =>
        {
            ControlFlow::Break(())
        }
        ast::Expr::TypedString(t) if t.data_type.to_string().to_lowercase().starts_with("reg") => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    refused.is_continue()
}

/// Whether a planned (not yet optimized) query reads nothing and gives the
/// same rows every time: only projections of literals, VALUES and the
/// one-row relation, and only immutable functions (`now()` is folded at
/// optimization, to the time of that statement).
pub(crate) fn reads_nothing(plan: &LogicalPlan) -> bool {
    let mut constant = true;
    let _ = plan.apply(|node| {
        let node_ok = matches!(
            node,
            LogicalPlan::Projection(_) | LogicalPlan::EmptyRelation(_) | LogicalPlan::Values(_)
        );
        if !node_ok {
            constant = false;
            return Ok(TreeNodeRecursion::Stop);
        }
        for expr in node.expressions() {
            let _ = expr.apply(|e| {
                let ok = match e {
                    Expr::ScalarFunction(f) => {
                        f.func.signature().volatility == Volatility::Immutable
                    }
                    Expr::Column(_)
                    | Expr::OuterReferenceColumn(..)
                    | Expr::ScalarVariable(..)
                    | Expr::Placeholder(_)
                    | Expr::ScalarSubquery(_)
                    | Expr::Exists(_)
                    | Expr::InSubquery(_)
                    | Expr::AggregateFunction(_)
                    | Expr::WindowFunction(_) => false,
                    _ => true,
                };
                if ok {
                    Ok(TreeNodeRecursion::Continue)
                } else {
                    constant = false;
                    Ok(TreeNodeRecursion::Stop)
                }
            });
        }
        Ok(if constant {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    constant
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    async fn planned(sql: &str) -> LogicalPlan {
        let ctx = SessionContext::new();
        ctx.sql("CREATE TABLE t (a INT) AS VALUES (1)")
            .await
            .unwrap();
        ctx.state()
            .create_logical_plan(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    #[tokio::test]
    async fn only_literals_values_and_immutable_functions_read_nothing() {
        for sql in [
            "SELECT 1",
            "SELECT 1 AS one, 'x' || 'y', abs(-2) + 1",
            "VALUES (1, 'a'), (2, 'b')",
        ] {
            assert!(reads_nothing(&planned(sql).await), "{sql}");
        }
        for sql in [
            "SELECT now()",
            "SELECT random()",
            "SELECT a FROM t",
            "SELECT (SELECT 1)",
            "SELECT $1",
            "SELECT count(*)",
            "SELECT 1 FROM (VALUES (1)) v(x)",
            "EXPLAIN SELECT 1",
        ] {
            assert!(!reads_nothing(&planned(sql).await), "{sql}");
        }
    }

    #[test]
    fn a_kept_query_is_found_by_the_text_the_pipeline_holds() {
        let statement = crate::parser::parse_sql("select   1  as one -- check")
            .ok()
            .and_then(|mut s| s.pop())
            .expect("parses");
        let crate::parser::Statement::Sql(sql) = &statement else {
            panic!("{statement:?}")
        };
        let plans = ConstantPlans::default();
        let empty = Arc::new(datafusion::arrow::datatypes::Schema::empty());
        plans.insert(sql, Kept::Rows(empty, vec![]));
        assert!(plans.get(&statement.text()).is_some());
        assert!(plans.get("SELECT 1 AS two").is_none());
        plans.clear();
        assert!(plans.get(&statement.text()).is_none());
    }

    #[test]
    fn queries_that_look_at_the_catalog_are_not_kept() {
        let parse = |sql: &str| {
            crate::parser::parse_sql(sql)
                .ok()
                .and_then(|mut s| s.pop())
                .and_then(|s| match s {
                    crate::parser::Statement::Sql(sql) => Some(*sql),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("{sql}"))
        };
        assert!(may_keep(&parse("SELECT 1")));
        for sql in [
            "SELECT 't'::regclass",
            "SELECT CAST('t' AS regclass)",
            "SELECT pg_table_is_visible(1)",
            "SELECT has_table_privilege('t', 'select')",
            "SELECT to_regclass('t')",
            "SELECT current_setting('timezone')",
            "INSERT INTO t VALUES (1)",
        ] {
            assert!(!may_keep(&parse(sql)), "{sql}");
        }
    }
}
