//! UPDATE and DELETE (and TRUNCATE) on a Delta table, each one commit made
//! by delta-rs' UpdateBuilder / DeleteBuilder. A predicate on partition
//! columns only removes whole files without reading them.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::UInt64Array;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema, DataFusionError, Result as DFResult};
use datafusion::datasource::{provider_as_source, TableProvider};
use datafusion::execution::context::SessionState;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::LogicalPlanBuilder;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use datafusion::prelude::SessionContext;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use deltalake::DeltaTable;
use futures::StreamExt;

use crate::alter::generation_expression;
use crate::catalog::TableName;
use crate::checks::WriteChecks;
use crate::error::{Error, Result};
use crate::provider::DeltaProvider;

/// What a [`DeltaDmlExec`] does.
#[derive(Debug, Clone)]
pub enum DmlOp {
    /// Delete the rows matching the predicate (all rows without one).
    Delete { predicate: Option<Expr> },
    /// Set columns (declared names) for the rows matching the predicate.
    Update {
        assignments: Vec<(String, Expr)>,
        predicate: Option<Expr>,
    },
}

/// Runs an UPDATE or DELETE as one commit and yields the affected row count.
pub struct DeltaDmlExec {
    name: TableName,
    table: DeltaTable,
    op: DmlOp,
    state: Arc<SessionState>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for DeltaDmlExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaDmlExec")
            .field("table", &self.name)
            .field("op", &self.op)
            .finish()
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

impl DeltaDmlExec {
    /// A DML operation on the table at its loaded version.
    pub fn new(name: TableName, table: DeltaTable, op: DmlOp, state: Arc<SessionState>) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            name,
            table,
            op,
            state,
            properties,
        }
    }
}

impl DisplayAs for DeltaDmlExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.op {
            DmlOp::Delete { predicate } => write!(
                f,
                "DeltaDeleteExec: table={} predicate={}",
                self.name,
                predicate
                    .as_ref()
                    .map(|p| p.to_string())
                    .unwrap_or_default()
            ),
            DmlOp::Update {
                assignments,
                predicate,
            } => write!(
                f,
                "DeltaUpdateExec: table={} set=[{}] predicate={}",
                self.name,
                assignments
                    .iter()
                    .map(|(c, e)| format!("{c} = {e}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                predicate
                    .as_ref()
                    .map(|p| p.to_string())
                    .unwrap_or_default()
            ),
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
        let name = self.name.clone();
        let table = self.table.clone();
        let op = self.op.clone();
        let state = Arc::clone(&self.state);
        Ok(count_stream(
            async move { run(&name, table, op, state).await },
        ))
    }
}

async fn run(
    name: &TableName,
    table: DeltaTable,
    op: DmlOp,
    state: Arc<SessionState>,
) -> Result<u64> {
    let committed = crate::Committed::of(state.config());
    match op {
        DmlOp::Delete { predicate } => {
            let mut builder = table
                .delete()
                .with_commit_properties(crate::commit_properties())
                .with_session_state(state)
                .with_writer_properties(crate::provider::writer_properties());
            if let Some(p) = predicate {
                builder = builder.with_predicate(p);
            }
            let (table, metrics) = builder
                .await
                .map_err(|e| Error::delta("deleting from", name.to_string(), e))?;
            if let Some(committed) = committed {
                committed.set(name, table);
            }
            Ok(metrics.num_deleted_rows.unwrap_or(0) as u64)
        }
        DmlOp::Update {
            assignments,
            predicate,
        } => {
            let assignments = with_generated(&table, name, assignments, &state)?;
            check_updated_rows(name, &table, &assignments, predicate.as_ref(), &state).await?;
            let mut builder = table
                .update()
                .with_commit_properties(crate::commit_properties())
                .with_session_state(state)
                .with_writer_properties(crate::provider::writer_properties());
            for (column, value) in assignments {
                builder = builder.with_update(column, value);
            }
            if let Some(p) = predicate {
                builder = builder.with_predicate(p);
            }
            let (table, metrics) = builder
                .await
                .map_err(|e| Error::delta("updating", name.to_string(), e))?;
            if let Some(committed) = committed {
                committed.set(name, table);
            }
            Ok(metrics.num_updated_rows as u64)
        }
    }
}

/// A column reference over lower-case names (the provider's and the
/// checks'), as the declared ones are matched case-insensitively.
fn lower_columns(expr: &Expr) -> DFResult<Expr> {
    expr.clone()
        .transform(|e| match e {
            Expr::Column(c) => Ok(Transformed::yes(Expr::Column(Column::new_unqualified(
                c.name.to_lowercase(),
            )))),
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
}

fn df_error(what: &'static str) -> impl Fn(DataFusionError) -> Error {
    move |source| Error::DataFusion {
        what,
        source: Box::new(source),
    }
}

/// The assignments plus one for each generated column whose expression
/// reads an assigned column: Databricks recomputes it from the new values.
fn with_generated(
    table: &DeltaTable,
    name: &TableName,
    mut assignments: Vec<(String, Expr)>,
    state: &SessionState,
) -> Result<Vec<(String, Expr)>> {
    let snapshot = table
        .snapshot()
        .map_err(|e| Error::delta("updating", name.to_string(), e))?
        .snapshot()
        .clone();
    let schema = snapshot.schema();
    let generated: Vec<(String, String)> = schema
        .fields()
        .filter_map(|f| generation_expression(f).map(|g| (f.name.clone(), g)))
        .collect();
    if generated.is_empty() {
        return Ok(assignments);
    }
    let lower = Schema::new(
        schema
            .fields()
            .map(|f| {
                let arrow: DFResult<DataType> = (&f.data_type)
                    .try_into_arrow()
                    .map_err(|e: datafusion::arrow::error::ArrowError| e.into());
                arrow.map(|t| Field::new(f.name.to_lowercase(), t, true))
            })
            .collect::<DFResult<Vec<_>>>()
            .map_err(df_error("reading generated columns"))?,
    );
    let df_schema = DFSchema::try_from(lower).map_err(df_error("reading generated columns"))?;
    let assigned: Vec<(String, Expr)> = assignments
        .iter()
        .map(|(c, e)| Ok((c.to_lowercase(), lower_columns(e)?)))
        .collect::<DFResult<_>>()
        .map_err(df_error("reading generated columns"))?;
    for (column, text) in generated {
        if assigned.iter().any(|(c, _)| *c == column.to_lowercase()) {
            continue;
        }
        let expr = state
            .create_logical_expr(&text, &df_schema)
            .map_err(df_error("reading generated columns"))?;
        let mut reads_assigned = false;
        let value = expr
            .transform(|e| match e {
                Expr::Column(c) => match assigned.iter().find(|(a, _)| *a == c.name) {
                    Some((_, value)) => {
                        reads_assigned = true;
                        Ok(Transformed::yes(value.clone()))
                    }
                    None => Ok(Transformed::no(Expr::Column(c))),
                },
                other => Ok(Transformed::no(other)),
            })
            .map_err(df_error("reading generated columns"))?
            .data;
        if reads_assigned {
            assignments.push((column, value));
        }
    }
    Ok(assignments)
}

/// Computes the rows an UPDATE would write and runs the table's
/// [`WriteChecks`] over them, so a violation fails the statement with the
/// constraint's name (delta-rs' own check names none) before delta-rs
/// writes anything.
async fn check_updated_rows(
    name: &TableName,
    table: &DeltaTable,
    assignments: &[(String, Expr)],
    predicate: Option<&Expr>,
    state: &Arc<SessionState>,
) -> Result<()> {
    let provider = DeltaProvider::try_new(name.clone(), table.clone())?;
    let schema = provider.schema();
    let snapshot = provider.snapshot()?.clone();
    let Some(checks) = WriteChecks::new(&snapshot, &schema, state)? else {
        return Ok(());
    };
    let df = df_error("checking updated rows");
    let mut values = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let value = match assignments
            .iter()
            .find(|(c, _)| c.eq_ignore_ascii_case(field.name()))
        {
            Some((_, e)) => lower_columns(e).map_err(&df)?,
            None => Expr::Column(Column::new_unqualified(field.name())),
        };
        values.push(value.alias(field.name()));
    }
    let mut plan = LogicalPlanBuilder::scan(
        "lakegres_update_target",
        provider_as_source(Arc::new(provider)),
        None,
    )
    .map_err(&df)?;
    if let Some(p) = predicate {
        plan = plan.filter(lower_columns(p).map_err(&df)?).map_err(&df)?;
    }
    let plan = plan.project(values).and_then(|p| p.build()).map_err(&df)?;
    let ctx = SessionContext::new_with_state(state.as_ref().clone());
    let mut stream = ctx
        .execute_logical_plan(plan)
        .await
        .map_err(&df)?
        .execute_stream()
        .await
        .map_err(&df)?;
    while let Some(batch) = stream.next().await {
        checks.apply(batch.map_err(&df)?)?;
    }
    Ok(())
}
