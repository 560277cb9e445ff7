//! The general write path: the rows of a planned query written into a
//! table as one Delta commit by delta-rs' `WriteBuilder` (which, unlike
//! delta-rs' own `insert_into` sink, enforces CHECK constraints and
//! generated columns — DESIGN.md). An `INSERT` planned by DataFusion comes
//! here from [`DeltaProvider`](crate::DeltaProvider)'s `insert_into` as a
//! [`DeltaWriteExec`]; CREATE TABLE … AS SELECT and COPY INTO call
//! [`write_plan`] themselves. Every data file Lakegres writes is written
//! with [`writer_properties`](crate::write::files::writer_properties).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result as DFResult};
use datafusion::datasource::{provider_as_source, TableProvider, TableType};
use datafusion::execution::context::SessionState;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder};
use datafusion::physical_expr::expressions::Column as PhysicalColumn;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use deltalake::kernel::{EagerSnapshot, Transaction};
use deltalake::logstore::LogStoreRef;
use deltalake::operations::write::{SchemaMode, WriteBuilder};
use deltalake::protocol::SaveMode;
use deltalake::DeltaTable;
use futures::{StreamExt, TryStreamExt};

use crate::catalog::TableName;
use crate::error::{Error, Result};
use crate::table::checks::WriteChecks;
use crate::write::dml::{count_schema, count_stream};
use crate::write::files::writer_properties;

/// Writes its input to a Delta table as one commit and yields the row count.
pub struct DeltaWriteExec {
    name: TableName,
    table: DeltaTable,
    input: Arc<dyn ExecutionPlan>,
    mode: WriteMode,
    state: Arc<SessionState>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for DeltaWriteExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaWriteExec")
            .field("table", &self.name)
            .field("mode", &self.mode)
            .finish()
    }
}

impl DeltaWriteExec {
    pub(crate) fn new(
        name: TableName,
        table: DeltaTable,
        input: Arc<dyn ExecutionPlan>,
        mode: WriteMode,
        state: Arc<SessionState>,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            name,
            table,
            input,
            mode,
            state,
            properties,
        }
    }
}

impl DisplayAs for DeltaWriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "DeltaWriteExec: table={} mode={:?}",
            self.name, self.mode
        )
    }
}

impl ExecutionPlan for DeltaWriteExec {
    fn name(&self) -> &str {
        "DeltaWriteExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("DeltaWriteExec has one input".into()))?;
        Ok(Arc::new(Self::new(
            self.name.clone(),
            self.table.clone(),
            input,
            self.mode,
            Arc::clone(&self.state),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "DeltaWriteExec has one partition, asked for {partition}"
            )));
        }
        let name = self.name.clone();
        let table = self.table.clone();
        let input = Arc::clone(&self.input);
        let mode = self.mode;
        let state = Arc::clone(&self.state);
        Ok(count_stream(async move {
            let snapshot = table
                .snapshot()
                .map_err(|e| Error::delta("writing", name.to_string(), e))?
                .snapshot()
                .clone();
            let options = WriteOptions::new(mode);
            write_plan_at(
                &name,
                table.log_store(),
                Some(snapshot),
                input,
                state,
                options,
            )
            .await
            .map(|(rows, _)| rows)
        }))
    }
}

/// What a write does to the rows the table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Adds to them.
    Append,
    /// Replaces them (those a predicate selects, when it has one).
    Overwrite,
    /// Creates the table; fails if one is there.
    ErrorIfExists,
}

impl From<WriteMode> for SaveMode {
    fn from(mode: WriteMode) -> Self {
        match mode {
            WriteMode::Append => SaveMode::Append,
            WriteMode::Overwrite => SaveMode::Overwrite,
            WriteMode::ErrorIfExists => SaveMode::ErrorIfExists,
        }
    }
}

/// How a write treats the table it writes to.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Append, overwrite, or fail if the table exists.
    pub mode: WriteMode,
    /// Replace the schema and partitioning (CREATE OR REPLACE … AS SELECT).
    pub overwrite_schema: bool,
    /// Partition columns of a table the write creates.
    pub partition_columns: Option<Vec<String>>,
    /// Table comment of a table the write creates.
    pub description: Option<String>,
    /// Table properties of a table the write creates.
    pub configuration: HashMap<String, Option<String>>,
    /// Declare every column nullable, whatever the query's nullability
    /// (CTAS columns are nullable in Databricks).
    pub all_nullable: bool,
    /// Add the input's new columns to the table (WITH SCHEMA EVOLUTION).
    pub merge_schema: bool,
    /// In overwrite mode, replace only the rows matching this predicate
    /// (over the declared column names); delta-rs also checks that every
    /// new row matches it.
    pub replace_where: Option<Expr>,
    /// The id of the record of files COPY INTO loads with this write,
    /// committed with it (see [`crate::write::copy_into`]).
    pub load_record: Option<i64>,
    /// The operation the log records, where Databricks names it otherwise
    /// than delta-rs' `WRITE` (see [`crate::commit::operation_name`]).
    pub operation: Option<&'static str>,
    /// `CLUSTER BY` of a table the write creates or replaces.
    pub clustering: Vec<String>,
}

impl WriteOptions {
    /// A plain append or overwrite of an existing table.
    pub fn new(mode: WriteMode) -> Self {
        Self {
            mode,
            overwrite_schema: false,
            partition_columns: None,
            description: None,
            configuration: HashMap::new(),
            all_nullable: false,
            merge_schema: false,
            replace_where: None,
            load_record: None,
            operation: None,
            clustering: Vec::new(),
        }
    }
}

/// Runs `input` into `table` through `WriteBuilder`: one commit; returns
/// the number of rows written. The write is based on the version `table`
/// has loaded; a table not created yet is created.
pub async fn write_plan(
    name: &TableName,
    table: &crate::Table,
    input: Arc<dyn ExecutionPlan>,
    state: Arc<SessionState>,
    options: WriteOptions,
) -> Result<u64> {
    let delta = table.delta();
    let snapshot = match delta.version() {
        Some(_) => Some(table.snapshot(name)?.clone()),
        None => None,
    };
    let (rows, _) = write_plan_at(name, delta.log_store(), snapshot, input, state, options).await?;
    Ok(rows)
}

/// [`write_plan`], also saying the version it committed (when known: a
/// commit shared with other statements' appends is not waited for here).
pub(crate) async fn write_plan_at(
    name: &TableName,
    log_store: LogStoreRef,
    snapshot: Option<EagerSnapshot>,
    input: Arc<dyn ExecutionPlan>,
    state: Arc<SessionState>,
    options: WriteOptions,
) -> Result<(u64, Option<u64>)> {
    let rows = Arc::new(AtomicU64::new(0));
    let schema = if options.all_nullable {
        let fields: Vec<Field> = input
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        Arc::new(Schema::new(fields))
    } else {
        input.schema()
    };
    // A table the write creates or whose schema it replaces has nothing
    // to check yet.
    let checks = match &snapshot {
        Some(snapshot) if !options.overwrite_schema => {
            WriteChecks::new(snapshot, &schema, &state)?.map(Arc::new)
        }
        _ => None,
    };
    // Identity columns take their values as the rows pass; the commit
    // carries the new high-water marks.
    let identity = match &snapshot {
        Some(snapshot) if !options.overwrite_schema => {
            let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
            crate::table::identity::Allocator::new(&name.to_string(), snapshot, &names)
        }
        _ => None,
    };
    if identity.is_some() && options.merge_schema {
        return Err(Error::Refused {
            message: format!(
                "[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_SCHEMA_EVOLUTION] {name} has identity \
                 columns: schema evolution on it is not supported"
            ),
            state: crate::SqlState::FEATURE_NOT_SUPPORTED,
        });
    }
    let written_schema = Arc::clone(&schema);
    let source = Arc::new(ExecSource {
        plan: input,
        schema,
        rows: Arc::clone(&rows),
        steps: BatchSteps {
            identity: identity.clone(),
            checks,
        },
    });
    let plan = LogicalPlanBuilder::scan("lakegres_write_input", provider_as_source(source), None)
        .and_then(|b| b.build())
        .map_err(|source| Error::DataFusion {
            what: "planning a write",
            source: Box::new(source),
        })?;
    // CLUSTER BY of a created or replaced table: the protocol and the
    // clustering domain go into the commit that makes it.
    let mut configuration = options.configuration.clone();
    let mut create_actions = Vec::new();
    if !options.clustering.is_empty() {
        use deltalake::kernel::engine::arrow_conversion::TryIntoKernel as _;
        let table_schema: deltalake::kernel::StructType = written_schema
            .as_ref()
            .try_into_kernel()
            .map_err(|e| Error::Internal(format!("the schema of {name}: {e}")))?;
        let partitions = options.partition_columns.clone().unwrap_or_default();
        let (logical, property, action) = crate::table::clustering::cluster_by(
            &name.to_string(),
            &options.clustering,
            &table_schema,
            &partitions,
        )?;
        configuration.insert(
            crate::table::clustering::PROPERTY.to_string(),
            Some(property),
        );
        let kept: HashMap<String, String> = configuration
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
            .collect();
        match &snapshot {
            None => {
                if let Some(protocol) =
                    crate::table::features::upgrade(None, &kept, &table_schema, true)?
                {
                    create_actions.push(deltalake::kernel::Action::Protocol(protocol));
                }
                create_actions.push(deltalake::kernel::Action::DomainMetadata(action));
            }
            Some(current) => {
                // Replacing keeps the table's metadata but for its schema:
                // the clustering must be the one it has (dbt's every run).
                let current = crate::table::clustering::columns(current.metadata().configuration());
                if current != logical {
                    return Err(Error::Refused {
                        message: format!(
                            "[UNSUPPORTED_FEATURE] CREATE OR REPLACE of {name} with CLUSTER BY \
                             ({}) while it is clustered by ({}): ALTER TABLE {name} CLUSTER BY \
                             (…) first",
                            logical.join(", "),
                            current.join(", ")
                        ),
                        state: crate::SqlState::FEATURE_NOT_SUPPORTED,
                    });
                }
            }
        }
    }
    let creating = snapshot.is_none();
    let read = snapshot.as_ref().map(|s| s.version());
    let committed = crate::CommitSink::of(state.config());
    let mut builder = WriteBuilder::new(log_store, snapshot)
        .with_input_plan(plan)
        .with_session_state(state)
        .with_save_mode(options.mode.into())
        .with_table_name(name.table.clone())
        .with_writer_properties(writer_properties())
        .with_configuration(configuration)
        .with_create_actions(create_actions);
    if options.overwrite_schema {
        builder = builder.with_schema_mode(SchemaMode::Overwrite);
    } else if options.merge_schema {
        builder = builder.with_schema_mode(SchemaMode::Merge);
    }
    if let Some(predicate) = options.replace_where {
        builder = builder.with_replace_where(predicate);
    }
    // A write that creates the table must fail with a commit conflict when
    // another writer created it first: delta-rs would otherwise commit it,
    // unchecked, as that table's next version.
    let mut metadata = Vec::new();
    if let Some(operation) = options.operation {
        use serde_json::{json, Value};
        metadata.push((
            crate::commit::operation_name::KEY.to_string(),
            Value::String(operation.to_string()),
        ));
        // A write that creates the table records what Databricks' CREATE
        // TABLE AS SELECT records beside delta-rs' own parameters.
        if let Some(columns) = &options.partition_columns {
            let properties: serde_json::Map<String, Value> = options
                .configuration
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.clone().map(Value::String).unwrap_or(Value::Null),
                    )
                })
                .collect();
            metadata.push((
                "operationParameters".to_string(),
                json!({
                    "isManaged": "true",
                    "description": options.description,
                    "partitionBy": Value::from(columns.clone()).to_string(),
                    "properties": Value::Object(properties).to_string(),
                }),
            ));
        }
    }
    let mut properties = crate::commit_properties_with(metadata).with_application_transactions(
        options
            .load_record
            .map(|id| Transaction::new(crate::write::copy_into::RECORD_APP_ID, id))
            .into_iter()
            .collect(),
    );
    if creating {
        properties = properties.with_max_retries(0);
    }
    if let Some(identity) = &identity {
        properties = properties.with_actions_at_commit(identity.actions_at_commit());
    }
    builder = builder.with_commit_properties(properties);
    // Appends to an existing table may share a commit with other
    // statements' (see `group_commit`).
    let gate = match (&committed, creating) {
        (Some(committed), false) if !committed.in_transaction() => {
            Some(crate::commit::group_commit::StatementGate::new(
                Arc::clone(committed.catalog()),
                name.clone(),
            ))
        }
        _ => None,
    };
    if let Some(gate) = &gate {
        builder = builder.with_commit_gate(Arc::clone(gate) as _);
    }
    if let Some(columns) = options.partition_columns {
        builder = builder.with_partition_columns(columns);
    }
    if let Some(description) = options.description {
        builder = builder.with_description(description);
    }
    let table = builder
        .await
        .map_err(|e| Error::delta("writing", name.to_string(), e))?;
    let version = table.version();
    if let Some(committed) = committed {
        match gate.and_then(|g| g.outcome()) {
            Some(grouped) => committed.record(crate::commit::committed::Commit {
                table: name.clone(),
                version: grouped.version,
                files_added: grouped.files_added,
                bytes_added: grouped.bytes_added,
                statements_in_commit: grouped.statements,
                statements: Vec::new(),
            }),
            None => {
                committed.finish(name, read, table).await;
            }
        }
    }
    Ok((rows.load(Ordering::Relaxed), version))
}

/// A table whose scan is an already planned `ExecutionPlan`, so that a
/// physical input can be handed to delta-rs builders, which take logical
/// plans. It counts the rows that pass through.
struct ExecSource {
    plan: Arc<dyn ExecutionPlan>,
    /// The plan's schema, or the same with every column nullable.
    schema: SchemaRef,
    rows: Arc<AtomicU64>,
    steps: BatchSteps,
}

impl fmt::Debug for ExecSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ExecSource")
    }
}

#[async_trait]
impl TableProvider for ExecSource {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let counted: Arc<dyn ExecutionPlan> = Arc::new(CountingExec::new(
            Arc::clone(&self.plan),
            Arc::clone(&self.schema),
            Arc::clone(&self.rows),
            self.steps.clone(),
        ));
        match projection {
            Some(p)
                if p.len() != self.schema.fields().len()
                    || p.iter().enumerate().any(|(i, j)| i != *j) =>
            {
                let schema = Arc::clone(&self.schema);
                let exprs: Vec<(Arc<dyn PhysicalExpr>, String)> = p
                    .iter()
                    .map(|&i| {
                        let name = schema.field(i).name().clone();
                        (
                            Arc::new(PhysicalColumn::new(&name, i)) as Arc<dyn PhysicalExpr>,
                            name,
                        )
                    })
                    .collect();
                Ok(Arc::new(ProjectionExec::try_new(exprs, counted)?))
            }
            _ => Ok(counted),
        }
    }
}

/// What a write does to each batch before delta-rs writes it: identity
/// values first, then the table's checks (which may need them).
#[derive(Debug, Clone, Default)]
struct BatchSteps {
    identity: Option<Arc<crate::table::identity::Allocator>>,
    checks: Option<Arc<WriteChecks>>,
}

impl BatchSteps {
    fn apply(&self, mut batch: RecordBatch) -> Result<RecordBatch> {
        if let Some(identity) = &self.identity {
            batch = identity.fill(batch)?;
        }
        match &self.checks {
            Some(checks) => checks.apply(batch),
            None => Ok(batch),
        }
    }
}

/// Passes batches through, labelled with `schema` (the input's, or the
/// same with nullable columns), through the table's [`BatchSteps`], and
/// counts their rows.
#[derive(Debug)]
struct CountingExec {
    input: Arc<dyn ExecutionPlan>,
    schema: SchemaRef,
    rows: Arc<AtomicU64>,
    steps: BatchSteps,
    properties: Arc<PlanProperties>,
}

impl CountingExec {
    fn new(
        input: Arc<dyn ExecutionPlan>,
        schema: SchemaRef,
        rows: Arc<AtomicU64>,
        steps: BatchSteps,
    ) -> Self {
        let p = input.properties();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            p.partitioning.clone(),
            p.emission_type,
            p.boundedness,
        ));
        Self {
            input,
            schema,
            rows,
            steps,
            properties,
        }
    }
}

impl DisplayAs for CountingExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("CountingExec")
    }
}

impl ExecutionPlan for CountingExec {
    fn name(&self) -> &str {
        "CountingExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("CountingExec has one input".into()))?;
        Ok(Arc::new(Self::new(
            input,
            Arc::clone(&self.schema),
            Arc::clone(&self.rows),
            self.steps.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        let rows = Arc::clone(&self.rows);
        let stream = self.input.execute(partition, context)?;
        let schema = Arc::clone(&self.schema);
        let relabel = Arc::clone(&schema);
        let steps = self.steps.clone();
        let counted = stream.and_then(move |b| {
            rows.fetch_add(b.num_rows() as u64, Ordering::Relaxed);
            let relabelled = if b.schema() == relabel {
                Ok(b)
            } else {
                // Names differ, or nested fields lack the metadata the
                // plan's schema carries (a STRUCT field's comment).
                crate::write::files::relabel(&b, &relabel)
                    .map_err(|e| DataFusionError::External(Box::new(e)))
            };
            let checked = relabelled.and_then(|b| {
                steps
                    .apply(b)
                    .map_err(|e| DataFusionError::External(Box::new(e)))
            });
            futures::future::ready(checked)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            counted.boxed(),
        )))
    }
}
