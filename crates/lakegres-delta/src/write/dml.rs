//! UPDATE and DELETE on a Delta table, one commit each.
//!
//! **The condition is the statement's own.** DataFusion plans `UPDATE` and
//! `DELETE` as a `Dml` node over `[Projection →] Filter → [SubqueryAlias →]
//! TableScan`. Its optimizer then rewrites that input (a subquery becomes a
//! join above the scan) and its physical planner hands the table provider
//! only the filters it still finds there — none for `id IN (SELECT …)`,
//! which made delta-rs delete every row. [`DmlRule`], an analyzer rule that
//! runs before the optimizer, replaces every such `Dml` node on a Delta
//! table with a [`DmlNode`] holding the condition exactly as written (the
//! Filter nodes right above the scan). An input of any other shape is
//! refused, and the provider's own `delete_from` / `update` hooks refuse to
//! run: no plan reaches delta-rs with a predicate other than the user's.
//!
//! **Two ways to run it** ([`DmlRoute`]):
//! - delta-rs' `DeleteBuilder` / `UpdateBuilder` with the condition, when it
//!   is an expression over the table's columns that delta-rs takes whole (no
//!   subquery, and one it can write into the commit) — [`builders`];
//! - otherwise the file rewrite, as Delta runs subqueries in DELETE and
//!   UPDATE: a scan that carries each row's file finds the files with a
//!   matching row, the condition is evaluated again over exactly their rows,
//!   and the rows that stay and the changed ones are written, in one commit —
//!   [`matched`], over [`crate::write::rewrite`];
//! - on a table with deletion vectors enabled, any condition: the matched
//!   rows are marked deleted in deletion vectors and the data files are
//!   left as they are (an UPDATE writes only the changed rows) —
//!   [`marked`], over [`crate::write::deletion_vectors`].
//!
//! What Databricks refuses is refused with its error class (Databricks SQL
//! reference, DELETE FROM and UPDATE): a non-deterministic condition, a
//! subquery inside a subquery, `NOT IN (subquery)` inside an `OR`.

mod builders;
mod marked;
mod matched;

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::UInt64Array;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{
    DFSchema, DFSchemaRef, DataFusionError, Result as DFResult, TableReference,
};
use datafusion::datasource::{provider_as_source, source_as_provider, TableProvider};
use datafusion::execution::context::SessionState;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::logical_plan::dml::WriteOp;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{
    DmlStatement, Expr, Extension, LogicalPlan, LogicalPlanBuilder, TableSource,
    UserDefinedLogicalNode, UserDefinedLogicalNodeCore,
};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use datafusion::physical_planner::{ExtensionPlanner, PhysicalPlanner};
use deltalake::DeltaTable;

use crate::catalog::TableName;
use crate::error::{Error, Result};
use crate::read::provider::DeltaProvider;

/// What an UPDATE or DELETE does to the rows its condition matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd)]
pub enum DmlOp {
    /// Remove them.
    Delete,
    /// Give them new values: one expression per column of the table, in
    /// table order, aliased to the column's name (a column the statement
    /// does not set is the column itself).
    Update { values: Vec<Expr> },
}

impl DmlOp {
    /// The statement's keyword, as errors and history name it.
    pub fn keyword(&self) -> &'static str {
        match self {
            Self::Delete => "DELETE",
            Self::Update { .. } => "UPDATE",
        }
    }

    /// What the statement does to a table, as its errors say it.
    fn doing(&self) -> &'static str {
        match self {
            Self::Delete => "deleting from",
            Self::Update { .. } => "updating",
        }
    }

    /// The operation its commit records, reading `predicate`, and the
    /// metric of the rows it changed.
    fn operation(
        &self,
        predicate: Option<String>,
    ) -> (deltalake::protocol::DeltaOperation, &'static str) {
        use deltalake::protocol::DeltaOperation;
        match self {
            Self::Delete => (DeltaOperation::Delete { predicate }, "num_deleted_rows"),
            Self::Update { .. } => (DeltaOperation::Update { predicate }, "num_updated_rows"),
        }
    }
}

/// How a [`DmlNode`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd)]
pub enum DmlRoute {
    /// delta-rs' builder, handed the condition.
    Builder,
    /// The file rewrite: touched files found by a scan, their rows evaluated
    /// again (subqueries, and conditions delta-rs cannot take whole).
    Rewrite,
    /// Merge-on-read: the matched rows marked in deletion vectors (a table
    /// with `delta.enableDeletionVectors`), any condition.
    DeletionVectors,
}

impl fmt::Display for DmlRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Builder => "delta-rs",
            Self::Rewrite => "rewrite",
            Self::DeletionVectors => "deletion vectors",
        })
    }
}

/// An UPDATE or DELETE on a Delta table, with the condition as written.
///
/// It has no inputs and shows the optimizer no expressions: the condition
/// and the new values are planned again, whole, when it runs.
#[derive(Clone)]
pub struct DmlNode {
    name: TableName,
    source: Arc<dyn TableSource>,
    /// The scan's name for the table (what the condition's columns are
    /// qualified with unless the statement gave an alias).
    table_ref: TableReference,
    /// `UPDATE t AS x …`, `DELETE FROM t AS x …`.
    alias: Option<TableReference>,
    op: DmlOp,
    predicate: Option<Expr>,
    route: DmlRoute,
    schema: DFSchemaRef,
}

impl fmt::Debug for DmlNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmlNode")
            .field("table", &self.name)
            .field("op", &self.op)
            .field("predicate", &self.predicate)
            .field("route", &self.route)
            .finish()
    }
}

impl PartialEq for DmlNode {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.table_ref == other.table_ref
            && self.alias == other.alias
            && self.op == other.op
            && self.predicate == other.predicate
            && self.route == other.route
    }
}

impl Eq for DmlNode {}

impl Hash for DmlNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.table_ref.hash(state);
        self.alias.hash(state);
        self.op.hash(state);
        self.predicate.hash(state);
        self.route.hash(state);
    }
}

impl PartialOrd for DmlNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match self.name.partial_cmp(&other.name) {
            Some(Ordering::Equal) => None,
            order => order,
        }
    }
}

/// The result of a write as DataFusion's DML plans give it: one `count` row.
pub(crate) fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]))
}

/// The one-row `count` stream of a write that `fut` performs.
pub(crate) fn count_stream(
    fut: impl std::future::Future<Output = Result<u64>> + Send + 'static,
) -> SendableRecordBatchStream {
    let batch = async move {
        let rows = fut
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let count = Arc::new(UInt64Array::from(vec![rows]));
        RecordBatch::try_new(count_schema(), vec![count]).map_err(DataFusionError::from)
    };
    Box::pin(RecordBatchStreamAdapter::new(
        count_schema(),
        futures::stream::once(batch),
    ))
}

fn external(e: Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The Delta table behind a DML target, if it is one.
fn delta_provider(source: &Arc<dyn TableSource>) -> Option<Arc<dyn TableProvider>> {
    let provider = source_as_provider(source).ok()?;
    provider.is::<DeltaProvider>().then_some(provider)
}

impl DmlNode {
    /// The node for a DataFusion `Dml` UPDATE or DELETE on a Delta table;
    /// `None` for any other statement or table.
    fn try_from_dml(dml: &DmlStatement) -> Result<Option<Self>> {
        if !matches!(dml.op, WriteOp::Delete | WriteOp::Update) {
            return Ok(None);
        }
        let Some(provider) = delta_provider(&dml.target) else {
            return Ok(None);
        };
        let Some(delta) = provider.downcast_ref::<DeltaProvider>() else {
            return Ok(None);
        };
        let keyword = match dml.op {
            WriteOp::Update => "UPDATE",
            _ => "DELETE",
        };
        let shape = |what: &'static str| Error::UnsupportedDml {
            op: keyword,
            what: what.to_string(),
        };
        let (op, mut plan) = match (&dml.op, dml.input.as_ref()) {
            (WriteOp::Update, LogicalPlan::Projection(p)) => (
                DmlOp::Update {
                    values: p.expr.clone(),
                },
                p.input.as_ref(),
            ),
            (WriteOp::Update, _) => return Err(shape("an UPDATE without a SET list")),
            _ => (DmlOp::Delete, dml.input.as_ref()),
        };
        let mut conditions = Vec::new();
        while let LogicalPlan::Filter(filter) = plan {
            conditions.push(filter.predicate.clone());
            plan = filter.input.as_ref();
        }
        let scanned = Arc::clone(plan.schema());
        let mut alias = None;
        if let LogicalPlan::SubqueryAlias(a) = plan {
            alias = Some(a.alias.clone());
            plan = a.input.as_ref();
        }
        let LogicalPlan::TableScan(scan) = plan else {
            return Err(match plan {
                LogicalPlan::Join(_) | LogicalPlan::Projection(_) => {
                    shape("reading other tables beside the target (UPDATE … FROM); use MERGE INTO")
                }
                LogicalPlan::Limit(_) => shape("LIMIT"),
                _ => shape("this form"),
            });
        };
        let same_table = delta_provider(&scan.source)
            .and_then(|p| {
                p.downcast_ref::<DeltaProvider>()
                    .map(|p| p.name() == delta.name())
            })
            .unwrap_or(false);
        if !same_table || !scan.filters.is_empty() || scan.fetch.is_some() {
            return Err(shape("this form"));
        }
        // DataFusion's expression simplifier (constant folding, a cast taken
        // off a column compared with a literal): the same condition, in the
        // form delta-rs prunes files and partitions by.
        let written = conjunction(conditions.into_iter().rev());
        if let Some(p) = &written {
            check_condition(keyword, p)?;
        }
        let simplifier =
            ExprSimplifier::new(SimplifyContext::builder().with_schema(scanned).build());
        let predicate = written
            .map(|p| simplifier.simplify(p))
            .transpose()
            .map_err(|e| Error::DataFusion {
                what: "planning a DML statement",
                source: Box::new(e),
            })?;
        if let DmlOp::Update { values } = &op {
            for value in values {
                check_nested_subqueries(keyword, value)?;
            }
            check_identity_unchanged(delta, values)?;
        }

        let route = if crate::write::deletion_vectors::enabled(delta.snapshot()?) {
            DmlRoute::DeletionVectors
        } else if needs_rewrite(delta, predicate.as_ref(), &op) {
            DmlRoute::Rewrite
        } else {
            DmlRoute::Builder
        };
        let schema = DFSchema::try_from(count_schema())
            .map_err(|e| Error::DataFusion {
                what: "planning a DML statement",
                source: Box::new(e),
            })?
            .into();
        Ok(Some(Self {
            name: delta.name().clone(),
            source: Arc::clone(&dml.target),
            table_ref: scan.table_name.clone(),
            alias,
            op,
            predicate,
            route,
            schema,
        }))
    }

    /// The table, as the statement's plan loaded it.
    fn provider(&self) -> DFResult<&DeltaProvider> {
        let provider = self
            .source
            .downcast_ref::<datafusion::datasource::DefaultTableSource>()
            .and_then(|s| s.table_provider.downcast_ref::<DeltaProvider>());
        provider.ok_or_else(|| DataFusionError::Internal("DML target is not a Delta table".into()))
    }

    /// The target scanned as `source` (the table, or its rows with more
    /// columns), under the statement's names, filtered by its condition.
    fn matching(&self, source: Arc<dyn TableProvider>) -> DFResult<LogicalPlanBuilder> {
        let mut plan =
            LogicalPlanBuilder::scan(self.table_ref.clone(), provider_as_source(source), None)?;
        if let Some(alias) = &self.alias {
            plan = plan.alias(alias.clone())?;
        }
        if let Some(predicate) = &self.predicate {
            plan = plan.filter(predicate.clone())?;
        }
        Ok(plan)
    }

    /// The qualifier of the target's columns in the statement.
    fn qualifier(&self) -> &TableReference {
        self.alias.as_ref().unwrap_or(&self.table_ref)
    }
}

impl UserDefinedLogicalNodeCore for DmlNode {
    fn name(&self) -> &str {
        "DeltaDml"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        vec![]
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "Delta{}: table={} route={}",
            match self.op {
                DmlOp::Delete => "Delete",
                DmlOp::Update { .. } => "Update",
            },
            self.name,
            self.route
        )?;
        if let DmlOp::Update { values } = &self.op {
            write!(
                f,
                " values=[{}]",
                values
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
        if let Some(p) = &self.predicate {
            write!(f, " predicate={p}")?;
        }
        Ok(())
    }

    fn with_exprs_and_inputs(
        &self,
        _exprs: Vec<Expr>,
        _inputs: Vec<LogicalPlan>,
    ) -> DFResult<Self> {
        Ok(self.clone())
    }
}

/// Replaces DataFusion's `Dml` UPDATE / DELETE on Delta tables with
/// [`DmlNode`]s, before the optimizer can rewrite their input.
#[derive(Debug, Default)]
pub struct DmlRule;

impl AnalyzerRule for DmlRule {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DFResult<LogicalPlan> {
        plan.transform_up(|plan| {
            let LogicalPlan::Dml(dml) = &plan else {
                return Ok(Transformed::no(plan));
            };
            match DmlNode::try_from_dml(dml).map_err(external)? {
                Some(node) => Ok(Transformed::yes(LogicalPlan::Extension(Extension {
                    node: Arc::new(node),
                }))),
                None => Ok(Transformed::no(plan)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "lakegres_dml"
    }
}

/// Plans [`DmlNode`]s.
#[derive(Debug, Default)]
pub struct DmlPlanner;

#[async_trait]
impl ExtensionPlanner for DmlPlanner {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        _physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
        _planning_ctx: &PhysicalPlanningContext,
    ) -> DFResult<Option<Arc<dyn ExecutionPlan>>> {
        let Some(node) = node.as_any().downcast_ref::<DmlNode>() else {
            return Ok(None);
        };
        let provider = node.provider()?;
        provider.require_write(session)?;
        let state = session
            .as_any()
            .downcast_ref::<SessionState>()
            .cloned()
            .map(Arc::new)
            .ok_or_else(|| DataFusionError::Internal("DML needs a SessionState".into()))?;
        Ok(Some(Arc::new(DeltaDmlExec::with_job(
            DmlJob::Statement(Box::new(node.clone())),
            provider.table().clone(),
            state,
        ))))
    }
}

/// 0AKDC for what Databricks refuses in an UPDATE or DELETE condition.
fn check_condition(keyword: &'static str, predicate: &Expr) -> Result<()> {
    if predicate.is_volatile() {
        return Err(Error::NonDeterministicCondition {
            op: keyword,
            condition: sql_text(predicate),
        });
    }
    check_nested_subqueries(keyword, predicate)?;
    if not_in_under_or(predicate, false) {
        return Err(Error::UnsupportedSubquery {
            op: keyword,
            condition: sql_text(predicate),
            reason: "NOT IN (subquery) inside an OR; write it as NOT EXISTS",
        });
    }
    Ok(())
}

/// `expr` as SQL, for messages and commit info (DataFusion's own display
/// where it has no SQL form).
pub(crate) fn sql_text(expr: &Expr) -> String {
    datafusion::sql::unparser::expr_to_sql(expr)
        .map(|e| e.to_string())
        .unwrap_or_else(|_| expr.to_string())
}

/// The subquery inside a subquery expression, if `expr` is one.
fn subquery_of(expr: &Expr) -> Option<&datafusion::logical_expr::Subquery> {
    match expr {
        Expr::ScalarSubquery(s) => Some(s),
        Expr::Exists(e) => Some(&e.subquery),
        Expr::InSubquery(i) => Some(&i.subquery),
        Expr::SetComparison(c) => Some(&c.subquery),
        _ => None,
    }
}

fn has_subquery(expr: &Expr) -> bool {
    expr.exists(|e| Ok(subquery_of(e).is_some() || matches!(e, Expr::OuterReferenceColumn(..))))
        .unwrap_or(true)
}

fn check_nested_subqueries(keyword: &'static str, expr: &Expr) -> Result<()> {
    let mut nested = false;
    let _ = expr.apply(|e| {
        if let Some(subquery) = subquery_of(e) {
            let _ = subquery.subquery.apply(|plan| {
                if plan.expressions().iter().any(has_subquery_expr) {
                    nested = true;
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            });
        }
        Ok(if nested {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    if nested {
        return Err(Error::UnsupportedSubquery {
            op: keyword,
            condition: sql_text(expr),
            reason: "a subquery inside another subquery",
        });
    }
    Ok(())
}

fn has_subquery_expr(expr: &Expr) -> bool {
    expr.exists(|e| Ok(subquery_of(e).is_some()))
        .unwrap_or(true)
}

/// Whether a `NOT IN (subquery)` sits under an `OR` in `expr`.
fn not_in_under_or(expr: &Expr, under_or: bool) -> bool {
    use datafusion::logical_expr::{BinaryExpr, Operator};
    match expr {
        Expr::InSubquery(i) => under_or && i.negated,
        Expr::Not(inner) => match inner.as_ref() {
            Expr::InSubquery(i) if !i.negated => under_or,
            other => not_in_under_or(other, under_or),
        },
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let or = under_or || *op == Operator::Or;
            not_in_under_or(left, or) || not_in_under_or(right, or)
        }
        other => {
            let mut found = false;
            let _ = other.apply_children(|child| {
                found = not_in_under_or(child, under_or);
                Ok(if found {
                    TreeNodeRecursion::Stop
                } else {
                    TreeNodeRecursion::Continue
                })
            });
            found
        }
    }
}

/// Whether the statement must run as a file rewrite rather than through
/// delta-rs' builder: a subquery anywhere in it, or a condition delta-rs
/// cannot write into its commit.
fn needs_rewrite(provider: &DeltaProvider, predicate: Option<&Expr>, op: &DmlOp) -> bool {
    if predicate.is_some_and(has_subquery) {
        return true;
    }
    // A shallow clone's files are its source's, outside the table's folder,
    // which delta-rs' DELETE and UPDATE do not take.
    if provider
        .snapshot()
        .is_ok_and(crate::write::rewrite::references_other_files)
    {
        return true;
    }

    if let DmlOp::Update { values } = op {
        if values.iter().any(has_subquery) {
            return true;
        }
    }
    match predicate {
        None => false,
        Some(p) => match provider.storage_expr(p) {
            Ok(p) => deltalake::delta_datafusion::expr::fmt_expr_to_sql(&p).is_err(),
            Err(_) => true,
        },
    }
}

/// What a [`DeltaDmlExec`] runs.
#[derive(Debug, Clone)]
enum DmlJob {
    Statement(Box<DmlNode>),
    /// `TRUNCATE TABLE`: every row.
    Truncate(TableName),
}

/// Runs an UPDATE, DELETE or TRUNCATE as one commit and yields the affected
/// row count.
pub struct DeltaDmlExec {
    job: DmlJob,
    table: DeltaTable,
    state: Arc<SessionState>,
    properties: Arc<PlanProperties>,
}

/// `TRUNCATE TABLE`'s plan.
pub(crate) type TruncateExec = DeltaDmlExec;

impl fmt::Debug for DeltaDmlExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaDmlExec")
            .field("job", &self.job)
            .finish()
    }
}

impl DeltaDmlExec {
    fn with_job(job: DmlJob, table: DeltaTable, state: Arc<SessionState>) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            job,
            table,
            state,
            properties,
        }
    }

    /// Removes every row of `table`.
    pub(crate) fn new(name: TableName, table: DeltaTable, state: Arc<SessionState>) -> Self {
        Self::with_job(DmlJob::Truncate(name), table, state)
    }
}

impl DisplayAs for DeltaDmlExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.job {
            DmlJob::Statement(node) => {
                f.write_str("DeltaDmlExec: ")?;
                UserDefinedLogicalNodeCore::fmt_for_explain(node.as_ref(), f)
            }
            DmlJob::Truncate(name) => write!(f, "DeltaTruncateExec: table={name}"),
        }
    }
}

impl ExecutionPlan for DeltaDmlExec {
    fn name(&self) -> &str {
        "DeltaDmlExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "DeltaDmlExec has one partition, asked for {partition}"
            )));
        }
        let job = self.job.clone();
        let table = self.table.clone();
        let read = table.version();
        let state = Arc::clone(&self.state);
        Ok(count_stream(async move {
            let committed = crate::CommitSink::of(state.config());
            let (name, (rows, table)) = match &job {
                DmlJob::Statement(node) => (
                    &node.name,
                    match node.route {
                        DmlRoute::Builder => builders::run(node, table, state).await?,
                        DmlRoute::Rewrite => matched::run(node, table, state).await?,
                        DmlRoute::DeletionVectors => marked::run(node, table, state).await?,
                    },
                ),
                DmlJob::Truncate(name) => (name, builders::delete(name, table, None, state).await?),
            };
            if let (Some(committed), Some(table)) = (committed, table) {
                committed.finish(name, read, table).await;
            }
            Ok(rows)
        }))
    }
}

/// Databricks refuses an UPDATE that sets an identity column
/// (`DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED`): an UPDATE's value for
/// a column it does not set is the column itself.
fn check_identity_unchanged(table: &DeltaProvider, values: &[Expr]) -> Result<()> {
    let snapshot = table.snapshot()?;
    let identities = crate::table::identity::identity_columns(snapshot.schema().as_ref());
    for value in values {
        let Expr::Alias(alias) = value else { continue };
        let Some(identity) = identities
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(&alias.name))
        else {
            continue;
        };
        let unchanged = matches!(alias.expr.as_ref(), Expr::Column(c) if c.name.eq_ignore_ascii_case(&identity.name));
        if !unchanged {
            return Err(crate::table::identity::update_refused(&identity.name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::expr::{Exists, InSubquery};
    use datafusion::logical_expr::{col, lit, Subquery};

    use super::*;

    fn subquery() -> Subquery {
        let plan = LogicalPlanBuilder::empty(true)
            .project(vec![lit(1)])
            .and_then(|p| p.build())
            .unwrap();
        Subquery {
            subquery: Arc::new(plan),
            outer_ref_columns: vec![],
            spans: Default::default(),
        }
    }

    fn in_subquery(negated: bool) -> Expr {
        Expr::InSubquery(InSubquery::new(Box::new(col("a")), subquery(), negated))
    }

    #[test]
    fn not_in_is_refused_under_an_or_at_any_depth() {
        let b = col("b").eq(lit(1));
        assert!(!not_in_under_or(&in_subquery(true), false));
        assert!(!not_in_under_or(&in_subquery(true).and(b.clone()), false));
        assert!(not_in_under_or(&b.clone().or(in_subquery(true)), false));
        assert!(not_in_under_or(
            &b.clone().or(b.clone().and(in_subquery(true))),
            false
        ));
        // NOT (a IN …) is NOT IN too.
        assert!(not_in_under_or(
            &b.clone().or(Expr::Not(Box::new(in_subquery(false)))),
            false
        ));
        assert!(!not_in_under_or(&b.clone().or(in_subquery(false)), false));
        // Hidden in a function's argument under an OR.
        let wrapped = Expr::IsTrue(Box::new(in_subquery(true)));
        assert!(not_in_under_or(&b.or(wrapped), false));
    }

    #[test]
    fn volatile_and_nested_conditions_are_0akdc() {
        let nested = Expr::InSubquery(InSubquery::new(
            Box::new(col("a")),
            Subquery {
                subquery: Arc::new(
                    LogicalPlanBuilder::empty(true)
                        .filter(Expr::Exists(Exists::new(subquery(), false)))
                        .and_then(|p| p.project(vec![lit(1)]))
                        .and_then(|p| p.build())
                        .unwrap(),
                ),
                outer_ref_columns: vec![],
                spans: Default::default(),
            },
            false,
        ));
        let err = check_condition("DELETE", &nested).unwrap_err();
        assert_eq!(err.sqlstate(), crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED);
        assert!(err.to_string().starts_with("[DELTA_UNSUPPORTED_SUBQUERY]"));
        assert!(check_condition("DELETE", &in_subquery(true)).is_ok());
    }
}
