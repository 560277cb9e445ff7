//! A Delta scan that can be sent to another process and run there over a
//! share of the table's files: the leaf node of a distributed query.
//!
//! delta-rs plans a read as its own `DeltaScanExec` over a Parquet scan; that
//! node applies partition values, column mapping, type widening and deletion
//! vectors per file, and it has no codec (delta-io/delta-rs#4171). Shipping
//! only the Parquet scan under it would read physical columns, without
//! partition values. So [`DeltaTaskScanExec`] ships what *names* the scan —
//! the table's location, the pinned version, delta-rs' scan configuration,
//! projection, filters, limit, and the files this task reads — and the
//! receiving side plans the same delta-rs scan from that version and keeps
//! those files. Everything per file then comes from the same snapshot, as
//! on the server that planned it. No credentials travel: the receiver opens
//! the table with its own storage options ([`TaskTables`]).
//!
//! [`TaskScanCodec`] is the `PhysicalExtensionCodec` for the node.

use std::any::Any;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result as DFResult, Statistics};
use datafusion::config::{ConfigExtension, ConfigOptions, ExtensionOptions};
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties, StatisticsArgs, StatisticsContext,
};
use datafusion_proto::bytes::Serializeable;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use deltalake::delta_datafusion::{DeltaScanConfig, DeltaScanNext};
use deltalake::{DeltaTable, DeltaTableBuilder};
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use url::Url;

datafusion::common::extensions_options! {
    /// Set in a session whose plans may run in other processes: plain
    /// Delta scans are then planned as [`DeltaTaskScanExec`]s.
    pub struct SentScans {
        pub enabled: bool, default = false
    }
}

impl SentScans {
    /// Scans are sent.
    pub fn on() -> Self {
        Self { enabled: true }
    }
}

impl ConfigExtension for SentScans {
    const PREFIX: &'static str = "lakegres_sent_scans";
}

/// What names one task's Delta scan: enough to plan it again anywhere the
/// table's storage can be reached.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskScan {
    /// The table's root.
    pub table_url: Url,
    /// The version the statement reads (time travel included).
    pub version: u64,
    /// delta-rs' scan configuration, as the planning server made it.
    pub config: DeltaScanConfig,
    /// Columns of the scan's schema, as `TableProvider::scan` takes them.
    pub projection: Option<Vec<usize>>,
    /// Filters on the table's declared column names (travel as
    /// DataFusion's protobuf, see [`TaskScanCodec`]).
    #[serde(skip)]
    pub filters: Vec<Expr>,
    pub limit: Option<usize>,
    /// The data files this task reads, by object-store path; `None` reads
    /// every file the scan selects.
    pub files: Option<Vec<String>>,
    /// The node's output partitions (every task's variant has as many).
    pub partitions: usize,
}

/// A data file of the scan and its size (to share files among tasks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanFile {
    pub location: String,
    pub bytes: u64,
}

/// A Delta scan that can be encoded ([`TaskScanCodec`]) and restricted to
/// some of its files ([`Self::for_files`]).
pub struct DeltaTaskScanExec {
    spec: Arc<TaskScan>,
    /// The files the scan selects, known where it was planned (empty on a
    /// decoded node, which reads `spec.files`).
    files: Arc<Vec<ScanFile>>,
    /// Whether the scan may be shared among tasks: delta-rs reads a table
    /// with deletion vectors through one scan of all its files.
    splittable: bool,
    /// The delta-rs scan: set where it was planned, planned again on first
    /// execution elsewhere.
    inner: Arc<tokio::sync::OnceCell<Arc<dyn ExecutionPlan>>>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for DeltaTaskScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaTaskScanExec")
            .field("table", &self.spec.table_url.as_str())
            .field("version", &self.spec.version)
            .field("files", &self.spec.files.as_ref().map(Vec::len))
            .finish()
    }
}

impl DeltaTaskScanExec {
    /// Wraps `inner`, the plan `DeltaScanNext::scan` returned for `table`
    /// with these arguments.
    pub(crate) fn planned(
        table: &DeltaTable,
        config: DeltaScanConfig,
        projection: Option<Vec<usize>>,
        filters: Vec<Expr>,
        limit: Option<usize>,
        inner: Arc<dyn ExecutionPlan>,
    ) -> crate::Result<Self> {
        let version = table.version().ok_or_else(|| {
            crate::Error::Internal("a scanned Delta table has no loaded version".into())
        })?;
        let spec = TaskScan {
            table_url: table.table_url().clone(),
            version,
            config,
            projection,
            filters,
            limit,
            files: None,
            partitions: inner.output_partitioning().partition_count(),
        };
        let files = scanned_files(&inner).map_err(|source| crate::Error::DataFusion {
            what: "listing a scan's files",
            source: Box::new(source),
        })?;
        let deletion_vectors = table
            .snapshot()
            .map_err(|e| crate::Error::delta("reading", table.table_url().to_string(), e))?
            .snapshot()
            .log_data()
            .iter()
            .any(|file| file.deletion_vector_descriptor().is_some());
        let cell = tokio::sync::OnceCell::new_with(Some(Arc::clone(&inner)));
        let mut scan = Self::new(spec, inner.schema(), Arc::new(files), Arc::new(cell));
        scan.splittable = !deletion_vectors;
        Ok(scan)
    }

    /// The node as a receiver decodes it: planned on first execution.
    fn decoded(spec: TaskScan, schema: SchemaRef) -> Self {
        let files = spec
            .files
            .iter()
            .flatten()
            .map(|location| ScanFile {
                location: location.clone(),
                bytes: 0,
            })
            .collect();
        Self::new(
            spec,
            schema,
            Arc::new(files),
            Arc::new(tokio::sync::OnceCell::new()),
        )
    }

    fn new(
        spec: TaskScan,
        schema: SchemaRef,
        files: Arc<Vec<ScanFile>>,
        inner: Arc<tokio::sync::OnceCell<Arc<dyn ExecutionPlan>>>,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(spec.partitions.max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self {
            spec: Arc::new(spec),
            files,
            splittable: false,
            inner,
            properties,
        }
    }

    /// What names the scan.
    pub fn spec(&self) -> &TaskScan {
        &self.spec
    }

    /// The files the scan reads (with sizes where it was planned).
    pub fn files(&self) -> &[ScanFile] {
        &self.files
    }

    /// Whether [`Self::for_files`] may share the scan among tasks (a table
    /// with deletion vectors is read by one).
    pub fn splittable(&self) -> bool {
        self.splittable
    }

    /// The same scan over `files` only (object-store paths, each one of
    /// [`Self::files`]): one task's share. It is planned again where it
    /// runs.
    pub fn for_files(&self, files: Vec<String>) -> DFResult<Self> {
        if !self.splittable {
            return Err(DataFusionError::Internal(
                "this Delta scan cannot be shared among tasks".into(),
            ));
        }
        let known: HashSet<&str> = self.files.iter().map(|f| f.location.as_str()).collect();
        if let Some(unknown) = files.iter().find(|f| !known.contains(f.as_str())) {
            return Err(DataFusionError::Internal(format!(
                "{unknown} is not a file of this scan"
            )));
        }
        let kept: HashSet<&str> = files.iter().map(String::as_str).collect();
        let sizes = self
            .files
            .iter()
            .filter(|f| kept.contains(f.location.as_str()))
            .cloned()
            .collect();
        let mut spec = (*self.spec).clone();
        spec.files = Some(files);
        Ok(Self::new(
            spec,
            self.schema(),
            Arc::new(sizes),
            Arc::new(tokio::sync::OnceCell::new()),
        ))
    }
}

/// The data files under `plan`'s Parquet scans, each once, in plan order.
fn scanned_files(plan: &Arc<dyn ExecutionPlan>) -> DFResult<Vec<ScanFile>> {
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    plan.apply(|node| {
        if let Some(config) = file_scan_config(node.as_ref()) {
            for group in &config.file_groups {
                for file in group.files() {
                    let location = file.object_meta.location.to_string();
                    if seen.insert(location.clone()) {
                        files.push(ScanFile {
                            location,
                            bytes: file.object_meta.size,
                        });
                    }
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(files)
}

fn file_scan_config(node: &dyn ExecutionPlan) -> Option<&FileScanConfig> {
    node.downcast_ref::<DataSourceExec>()?
        .data_source()
        .downcast_ref::<FileScanConfig>()
}

/// `plan` reading only the files `keep`; every one of them must be among
/// the files it would read (a task never reads less than it was given).
fn keep_files(plan: Arc<dyn ExecutionPlan>, keep: &[String]) -> DFResult<Arc<dyn ExecutionPlan>> {
    let wanted: HashSet<&str> = keep.iter().map(String::as_str).collect();
    let mut found = BTreeSet::new();
    let plan = plan
        .transform_up(|node| {
            let Some(config) = file_scan_config(node.as_ref()) else {
                return Ok(Transformed::no(node));
            };
            let mut groups: Vec<FileGroup> = config
                .file_groups
                .iter()
                .map(|group| {
                    let files: Vec<_> = group
                        .files()
                        .iter()
                        .filter(|f| wanted.contains(f.object_meta.location.as_ref()))
                        .cloned()
                        .collect();
                    for file in &files {
                        found.insert(file.object_meta.location.to_string());
                    }
                    FileGroup::new(files)
                })
                .filter(|group| !group.is_empty())
                .collect();
            if groups.is_empty() {
                groups.push(FileGroup::new(Vec::new()));
            }
            let config = FileScanConfigBuilder::from(config.clone())
                .with_file_groups(groups)
                .build();
            let node: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(config);
            Ok(Transformed::yes(node))
        })?
        .data;
    if let Some(missing) = keep.iter().find(|f| !found.contains(f.as_str())) {
        return Err(DataFusionError::Execution(format!(
            "{missing} is no longer a file of the table's version (it may have been vacuumed)"
        )));
    }
    Ok(plan)
}

impl DisplayAs for DeltaTaskScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "DeltaTaskScanExec: table={} version={} files={} partitions={}",
            self.spec.table_url,
            self.spec.version,
            self.spec
                .files
                .as_ref()
                .map_or_else(|| self.files.len(), Vec::len),
            self.spec.partitions
        )
    }
}

impl ExecutionPlan for DeltaTaskScanExec {
    fn name(&self) -> &str {
        "DeltaTaskScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
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
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "DeltaTaskScanExec has no inputs".into(),
            ))
        }
    }

    /// The optimizer spreads the scan over more partitions as it would the
    /// delta-rs scan itself.
    fn repartitioned(
        &self,
        target_partitions: usize,
        config: &ConfigOptions,
    ) -> DFResult<Option<Arc<dyn ExecutionPlan>>> {
        let Some(inner) = self.inner.get() else {
            return Ok(None);
        };
        let Some(inner) = inner.repartitioned(target_partitions, config)? else {
            return Ok(None);
        };
        let mut spec = (*self.spec).clone();
        spec.partitions = inner.output_partitioning().partition_count();
        let cell = tokio::sync::OnceCell::new_with(Some(inner));
        let mut scan = Self::new(spec, self.schema(), Arc::clone(&self.files), Arc::new(cell));
        scan.splittable = self.splittable;
        Ok(Some(Arc::new(scan)))
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DFResult<Arc<Statistics>> {
        match self.inner.get() {
            Some(inner) if self.spec.files.is_none() => {
                StatisticsContext::new().compute(inner.as_ref(), args)
            }
            _ => Ok(Arc::new(Statistics::new_unknown(&self.schema()))),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        let spec = Arc::clone(&self.spec);
        let cell = Arc::clone(&self.inner);
        let schema = self.schema();
        let partitions = self.properties.partitioning.partition_count();
        let expected = Arc::clone(&schema);
        let streams = async move {
            let inner = cell.get_or_try_init(|| plan_again(&spec, &context)).await?;
            if !same_columns(&inner.schema(), &expected) {
                return Err(DataFusionError::Execution(format!(
                    "the scan of {} version {} planned again has other columns than were sent",
                    spec.table_url, spec.version
                )));
            }
            // This node's partition p reads the inner scan's p, p + n, ….
            let count = inner.output_partitioning().partition_count();
            let streams = (partition..count)
                .step_by(partitions.max(1))
                .map(|i| inner.execute(i, Arc::clone(&context)))
                .collect::<DFResult<Vec<_>>>()?;
            Ok(futures::stream::iter(streams).flatten())
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::once(streams).try_flatten(),
        )))
    }
}

/// Equal names and types, field by field (metadata may differ).
fn same_columns(a: &SchemaRef, b: &SchemaRef) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields().iter())
            .all(|(x, y)| x.name() == y.name() && x.data_type() == y.data_type())
}

/// Plans `spec`'s delta-rs scan where it is to run: the table at its
/// version, opened through the [`TaskTables`] of the task's session.
async fn plan_again(
    spec: &TaskScan,
    context: &Arc<TaskContext>,
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let tables = context
        .session_config()
        .options()
        .extensions
        .get::<TaskTables>()
        .cloned()
        .unwrap_or_default();
    let table = tables.load(&spec.table_url, spec.version).await?;
    let state = SessionStateBuilder::new()
        .with_config(context.session_config().clone())
        .with_runtime_env(context.runtime_env())
        .with_default_features()
        .build();
    table
        .update_datafusion_session(&state)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let snapshot = table
        .snapshot()
        .map_err(|e| DataFusionError::External(Box::new(e)))?
        .snapshot()
        .clone();
    let scan = DeltaScanNext::new(Arc::new(snapshot), spec.config.clone())?;
    let plan = scan
        .scan(&state, spec.projection.as_ref(), &spec.filters, spec.limit)
        .await?;
    match &spec.files {
        None => Ok(plan),
        Some(files) => keep_files(plan, files),
    }
}

/// How a process that runs tasks opens the tables they name: the
/// warehouse's storage options (credentials stay with each process), and
/// the tables opened so far, by location and version.
#[derive(Debug, Clone, Default)]
pub struct TaskTables {
    storage_options: HashMap<String, String>,
    opened: Arc<Mutex<HashMap<(Url, u64), DeltaTable>>>,
}

/// Tables kept open per process; a query's tasks share them.
const OPENED_TABLES: usize = 64;

impl TaskTables {
    pub fn new(storage_options: HashMap<String, String>) -> Self {
        Self {
            storage_options,
            opened: Arc::default(),
        }
    }

    async fn load(&self, url: &Url, version: u64) -> DFResult<DeltaTable> {
        let key = (url.clone(), version);
        if let Some(table) = self.opened()?.get(&key) {
            return Ok(table.clone());
        }
        let table = DeltaTableBuilder::from_url(url.clone())
            .map_err(|e| DataFusionError::External(Box::new(e)))?
            .with_storage_options(self.storage_options.clone())
            .with_version(version)
            .load()
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let mut opened = self.opened()?;
        if opened.len() >= OPENED_TABLES {
            opened.clear();
        }
        opened.insert(key, table.clone());
        Ok(table)
    }

    fn opened(&self) -> DFResult<std::sync::MutexGuard<'_, HashMap<(Url, u64), DeltaTable>>> {
        self.opened
            .lock()
            .map_err(|_| DataFusionError::Internal("the open tables' lock is poisoned".into()))
    }
}

// A session-config extension, so the tasks' TaskContext carries it. It has
// no settable options.
impl ExtensionOptions for TaskTables {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, _value: &str) -> DFResult<()> {
        Err(DataFusionError::Configuration(format!(
            "{} has no option {key}",
            Self::PREFIX
        )))
    }

    fn entries(&self) -> Vec<datafusion::config::ConfigEntry> {
        Vec::new()
    }
}

impl ConfigExtension for TaskTables {
    const PREFIX: &'static str = "lakegres_task_tables";
}

/// Encodes and decodes [`DeltaTaskScanExec`]; any other node is refused
/// without writing to the buffer (codecs are tried in turn on one buffer).
#[derive(Debug, Default, Clone, Copy)]
pub struct TaskScanCodec;

/// A [`DeltaTaskScanExec`] on the wire.
#[derive(Serialize, Deserialize)]
struct Wire {
    spec: TaskScan,
    /// Each filter as DataFusion's protobuf.
    filters: Vec<Vec<u8>>,
    schema: datafusion::arrow::datatypes::Schema,
}

impl PhysicalExtensionCodec for TaskScanCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return Err(DataFusionError::Internal(
                "a DeltaTaskScanExec was sent with inputs".into(),
            ));
        }
        let wire: Wire =
            serde_json::from_slice(buf).map_err(|e| DataFusionError::External(Box::new(e)))?;
        let mut spec = wire.spec;
        // Functions resolve in the receiver's registry.
        spec.filters = wire
            .filters
            .iter()
            .map(|bytes| Expr::from_bytes_with_ctx(bytes, ctx))
            .collect::<DFResult<_>>()?;
        Ok(Arc::new(DeltaTaskScanExec::decoded(
            spec,
            Arc::new(wire.schema),
        )))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<()> {
        let Some(scan) = node.downcast_ref::<DeltaTaskScanExec>() else {
            return Err(DataFusionError::NotImplemented(format!(
                "TaskScanCodec cannot encode {}",
                node.name()
            )));
        };
        let filters = scan
            .spec
            .filters
            .iter()
            .map(|f| f.to_bytes().map(|b| b.to_vec()))
            .collect::<DFResult<_>>()?;
        let wire = Wire {
            spec: (*scan.spec).clone(),
            filters,
            schema: scan.schema().as_ref().clone(),
        };
        let bytes =
            serde_json::to_vec(&wire).map_err(|e| DataFusionError::External(Box::new(e)))?;
        buf.extend_from_slice(&bytes);
        Ok(())
    }
}
