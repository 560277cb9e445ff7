//! UPDATE and DELETE (and TRUNCATE) on a Delta table, each one commit made
//! by delta-rs' UpdateBuilder / DeleteBuilder. A predicate on partition
//! columns only removes whole files without reading them.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::UInt64Array;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result as DFResult};
use datafusion::execution::context::SessionState;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use deltalake::DeltaTable;

use crate::catalog::TableName;
use crate::error::{Error, Result};

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
            let (_, metrics) = builder
                .await
                .map_err(|e| Error::delta("deleting from", name.to_string(), e))?;
            Ok(metrics.num_deleted_rows.unwrap_or(0) as u64)
        }
        DmlOp::Update {
            assignments,
            predicate,
        } => {
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
            let (_, metrics) = builder
                .await
                .map_err(|e| Error::delta("updating", name.to_string(), e))?;
            Ok(metrics.num_updated_rows as u64)
        }
    }
}
