//! The server's side of a cluster: whether a query goes to the workers and
//! its plan cut into stages for them ([`Cluster::plan`]), the configured
//! workers and their addresses, how many tasks a Delta scan becomes and
//! which files each reads, and the plans that run a distributed query as
//! the input of another ([`DistributedInput`], [`ClusterSource`]).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::Column;
use datafusion::common::Result as DFResult;
use datafusion::datasource::TableType;
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedCodec, DistributedConfig,
    DistributedExec, DistributedExt, DistributedLeafExec, NetworkBoundaryExt, ScaleUpLeafNodeEvent,
    ScaleUpLeafNodeEventResponse, SessionStateBuilderExt, Stage, WorkerResolver,
};
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use lakegres_delta::task_scan::{DeltaTaskScanExec, SentScans, TaskScanCodec, TaskTables};
use lakegres_functions::wire::{for_workers, ForWorkers};
use url::Url;

use super::{task_session, ClusterConfig, ClusterTls, SessionSettings, TokenChannels};

/// The workers a server sends tasks to, and how it reaches them.
pub struct Cluster {
    workers: Workers,
    channels: TokenChannels,
    bytes_per_task: usize,
    /// A session as a worker builds it (no tables opened): every stage
    /// is decoded in it before the query starts.
    receiver: SessionState,
}

impl Cluster {
    /// A cluster of `config.workers`. Every stage but the last runs on
    /// them: a stage kept here would have to be served to the workers that
    /// read it.
    pub fn new(
        config: &ClusterConfig,
        token: String,
        tls: Option<ClusterTls>,
    ) -> Result<Self, String> {
        let workers = Workers::new(&config.workers, tls.is_some())?;
        let channels = TokenChannels::new(&token, tls, Some(workers.clone()))?;
        let receiver = task_session(
            SessionStateBuilder::new().with_default_features(),
            &TaskTables::new(HashMap::new()),
            &channels,
        );
        Ok(Self {
            workers,
            channels,
            bytes_per_task: usize::try_from(config.bytes_per_task.max(1)).unwrap_or(usize::MAX),
            receiver,
        })
    }

    /// The physical plan of `plan` cut into stages for the workers, or
    /// `None` when it is not worth sending (`force` unset and at most one
    /// task of data), holds a node that cannot travel, or has nothing to
    /// send.
    pub(crate) async fn plan(
        &self,
        state: &SessionState,
        plan: &LogicalPlan,
        force: bool,
    ) -> DFResult<Option<(Arc<dyn ExecutionPlan>, SessionState)>> {
        let stays = if !reads_only(plan)? {
            Some("it writes, or holds a statement node")
        } else if self.workers.get_urls()?.is_empty() {
            Some("no worker is known")
        } else {
            None
        };
        // `auto`: a query over at most one task's worth of Delta data is
        // not planned for the workers at all.
        let small = || -> DFResult<bool> {
            Ok(delta_bytes(plan)?.is_some_and(|bytes| bytes <= self.bytes_per_task as u64))
        };
        let stays = match stays {
            None if !force && small()? => Some("its Delta tables hold one task's worth of data"),
            stays => stays,
        };
        if let Some(reason) = stays {
            tracing::debug!("a query runs on this server: {reason}");
            return Ok(None);
        }
        let bytes_per_task = if force { 1 } else { self.bytes_per_task };
        let mut builder = SessionStateBuilder::new_from_existing(state.clone());
        if let Some(config) = builder.config().as_mut() {
            config.options_mut().extensions.insert(SentScans::on());
            // Not an uncorrelated scalar subquery run ahead of the plan: it
            // would not travel.
            config
                .options_mut()
                .optimizer
                .enable_physical_uncorrelated_scalar_subquery = false;
        }
        let distributed = builder
            .with_distributed_option_extension(SessionSettings::of(state))
            .with_distributed_planner()
            .with_distributed_worker_resolver(self.workers.clone())
            .with_distributed_channel_resolver(self.channels.clone())
            .with_distributed_user_codec(TaskScanCodec)
            .with_distributed_desired_task_count_handler(desired_tasks)
            .with_distributed_scale_up_leaf_node_handler(scale_up)
            .with_distributed_file_scan_config_bytes_per_partition(bytes_per_task)?
            .build();
        // Functions travel by name: the planner's own under names workers
        // know.
        let plan = match for_workers(plan.clone(), state)? {
            ForWorkers::Sent(plan) => plan,
            ForWorkers::Stays { function } => {
                tracing::debug!("a query runs on this server: {function} has no name on workers");
                return Ok(None);
            }
        };
        let physical = distributed.create_physical_plan(&plan).await?;
        if !physical.exists(|node| Ok(node.downcast_ref::<DistributedExec>().is_some()))? {
            tracing::debug!("a query runs on this server: its plan has nothing to cut");
            return Ok(None);
        }
        // Every stage that is sent must encode; otherwise run it all here
        // (decided before a row is sent).
        if let Err(e) = encodable(&physical, &distributed, &self.receiver) {
            tracing::debug!("a query runs on this server: {e}");
            return Ok(None);
        }
        Ok(Some((physical, distributed)))
    }
}

/// The data bytes of the Delta tables `plan` scans, or `None` when it
/// scans anything else (files by path, catalog tables).
fn delta_bytes(plan: &LogicalPlan) -> DFResult<Option<u64>> {
    let mut bytes = Some(0u64);
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let provider = datafusion::datasource::source_as_provider(&scan.source)?;
            let delta = provider
                .downcast_ref::<lakegres_delta::DeltaProvider>()
                .and_then(|p| p.data_bytes().ok());
            match (bytes, delta) {
                (Some(sum), Some(more)) => bytes = Some(sum.saturating_add(more)),
                _ => {
                    bytes = None;
                    return Ok(TreeNodeRecursion::Stop);
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(bytes)
}

/// A plan that only reads: no write, DDL, statement or extension node
/// (they run where the statement was received).
fn reads_only(plan: &LogicalPlan) -> DFResult<bool> {
    let mut only_reads = true;
    plan.apply_with_subqueries(|node| {
        if matches!(
            node,
            LogicalPlan::Dml(_)
                | LogicalPlan::Ddl(_)
                | LogicalPlan::Copy(_)
                | LogicalPlan::Statement(_)
                | LogicalPlan::Extension(_)
                | LogicalPlan::RecursiveQuery(_)
                | LogicalPlan::Explain(_)
        ) {
            tracing::debug!("a query runs on this server: it holds {}", node.display());
            only_reads = false;
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(only_reads)
}

/// Whether every stage encodes as the planner will send it to a worker
/// (each task's leaves in place, stages below cut off), and decodes as a
/// worker's session (`receiver`) will read it.
fn encodable(
    plan: &Arc<dyn ExecutionPlan>,
    state: &SessionState,
    receiver: &SessionState,
) -> DFResult<()> {
    let codec = DistributedCodec::new_combined_with_user(state.config());
    let decoder = DistributedCodec::new_combined_with_user(receiver.config());
    let task = receiver.task_ctx();
    plan.apply(|node| {
        if let Some(Stage::Local(stage)) = node.as_network_boundary().map(|b| b.input_stage()) {
            let bytes = physical_plan_to_bytes_with_extension_codec(as_sent(&stage.plan)?, &codec)?;
            physical_plan_from_bytes_with_extension_codec(&bytes, &task, &decoder)?;
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(())
}

/// A stage as a task receives it: its leaves specialised to one task,
/// the stages below it replaced by their boundaries' shape.
fn as_sent(plan: &Arc<dyn ExecutionPlan>) -> DFResult<Arc<dyn ExecutionPlan>> {
    Ok(Arc::clone(plan)
        .transform_down(|node| {
            if let Some(leaf) = node.downcast_ref::<DistributedLeafExec>() {
                if let Some(first) = leaf.variants().first() {
                    return Ok(Transformed::new(
                        Arc::clone(first),
                        true,
                        TreeNodeRecursion::Jump,
                    ));
                }
            }
            if node.is_network_boundary() {
                let stub = EmptyExec::new(node.schema())
                    .with_partitions(node.output_partitioning().partition_count());
                return Ok(Transformed::new(
                    Arc::new(stub) as Arc<dyn ExecutionPlan>,
                    true,
                    TreeNodeRecursion::Jump,
                ));
            }
            Ok(Transformed::no(node))
        })?
        .data)
}

/// How many tasks a Delta scan wants: its files' bytes over the bytes per
/// task, at most one per file.
fn desired_tasks(event: DesiredTaskCountEvent) -> Option<DFResult<DesiredTaskCountEventResponse>> {
    let scan = event.plan.downcast_ref::<DeltaTaskScanExec>()?;
    let files = scan.files();
    if files.len() < 2 || !scan.splittable() {
        return Some(Ok(DesiredTaskCountEventResponse::maximum(1)));
    }
    let per_task = match DistributedConfig::from_session_config(event.session_config) {
        Ok(config) => config.file_scan_config_bytes_per_partition.max(1),
        Err(e) => return Some(Err(e)),
    };
    let bytes: u64 = files.iter().map(|f| f.bytes).sum();
    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    let tasks = bytes.div_ceil(per_task).clamp(1, files.len());
    Some(Ok(DesiredTaskCountEventResponse::desired(tasks)))
}

/// A Delta scan shared among `task_count` tasks: its files dealt largest
/// first to the task with the fewest bytes so far.
fn scale_up(event: ScaleUpLeafNodeEvent) -> Option<DFResult<ScaleUpLeafNodeEventResponse>> {
    let scan = event.plan.downcast_ref::<DeltaTaskScanExec>()?;
    if event.task_count <= 1 || !scan.splittable() {
        return None;
    }
    let mut files = scan.files().to_vec();
    files.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.location.cmp(&b.location))
    });
    let mut shares: Vec<(u64, Vec<String>)> = vec![(0, Vec::new()); event.task_count];
    for file in files {
        if let Some(lightest) = shares.iter_mut().min_by_key(|(bytes, _)| *bytes) {
            lightest.0 += file.bytes;
            lightest.1.push(file.location);
        }
    }
    let variants = shares
        .into_iter()
        .map(|(_, files)| {
            scan.for_files(files)
                .map(|task| Arc::new(task) as Arc<dyn ExecutionPlan>)
        })
        .collect::<DFResult<Vec<_>>>();
    Some(variants.and_then(|variants| {
        DistributedLeafExec::try_new(Arc::clone(event.plan), variants)
            .map(|leaf| ScaleUpLeafNodeEventResponse::new(Arc::new(leaf)))
    }))
}

/// The configured workers: each `host:port` of `cluster.workers`, a name
/// standing for every address it resolves to, looked up again every
/// [`RESOLVE_EVERY`] (a headless service's name finds the workers running
/// now). A lookup that fails keeps the addresses the name had.
#[derive(Clone)]
pub(super) struct Workers {
    entries: Arc<Vec<String>>,
    /// The addresses of each entry, as last resolved.
    resolved: Arc<std::sync::RwLock<Vec<Vec<Url>>>>,
    /// `https` when the cluster talks TLS.
    scheme: &'static str,
}

/// How often worker names are resolved again.
const RESOLVE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

impl Workers {
    fn new(entries: &[String], tls: bool) -> Result<Self, String> {
        let scheme = if tls { "https" } else { "http" };
        for entry in entries {
            match entry.rsplit_once(':') {
                Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {}
                _ => return Err(format!("cluster.workers {entry}: expected host:port")),
            }
        }
        let resolved = entries
            .iter()
            .map(|e| urls_of_blocking(scheme, e))
            .collect();
        let workers = Self {
            entries: Arc::new(entries.to_vec()),
            resolved: Arc::new(std::sync::RwLock::new(resolved)),
            scheme,
        };
        let named = entries.iter().any(|e| {
            e.rsplit_once(':').is_some_and(|(host, _)| {
                host.trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_err()
            })
        });
        if let (true, Ok(runtime)) = (named, tokio::runtime::Handle::try_current()) {
            let refreshed = workers.clone();
            runtime.spawn(async move {
                let mut every = tokio::time::interval(RESOLVE_EVERY);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    every.tick().await;
                    refreshed.resolve().await;
                }
            });
        }
        Ok(workers)
    }

    /// Looks every entry up again.
    async fn resolve(&self) {
        for (i, entry) in self.entries.iter().enumerate() {
            let urls = match tokio::net::lookup_host(entry.as_str()).await {
                Ok(addrs) => urls_of(self.scheme, addrs),
                Err(e) => {
                    tracing::warn!("resolving the worker {entry}: {e}");
                    continue;
                }
            };
            if let Ok(mut resolved) = self.resolved.write() {
                if resolved[i] != urls {
                    tracing::info!(worker = entry.as_str(), ?urls, "workers found");
                    resolved[i] = urls;
                }
            }
        }
    }
}

impl Workers {
    /// The name a worker's certificate is checked against: the host of
    /// the entry that resolved to `url` (its address when none did).
    pub(super) fn server_name(&self, url: &Url) -> Option<String> {
        let resolved = self.resolved.read().ok()?;
        let i = resolved.iter().position(|urls| urls.contains(url))?;
        let (host, _) = self.entries.get(i)?.rsplit_once(':')?;
        Some(host.trim_matches(['[', ']']).to_string())
    }
}

/// The worker URLs `entry` resolves to now (at startup, before the
/// runtime's timers run).
fn urls_of_blocking(scheme: &str, entry: &str) -> Vec<Url> {
    use std::net::ToSocketAddrs;
    match entry.to_socket_addrs() {
        Ok(addrs) => urls_of(scheme, addrs),
        Err(e) => {
            tracing::warn!("resolving the worker {entry}: {e}");
            Vec::new()
        }
    }
}

fn urls_of(scheme: &str, addrs: impl Iterator<Item = std::net::SocketAddr>) -> Vec<Url> {
    let mut urls: Vec<Url> = addrs
        .filter_map(|a| Url::parse(&format!("{scheme}://{a}")).ok())
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

impl WorkerResolver for Workers {
    fn get_urls(&self) -> DFResult<Vec<Url>> {
        let resolved = self
            .resolved
            .read()
            .map_err(|_| datafusion::error::DataFusionError::Internal("worker list".into()))?;
        Ok(resolved.iter().flatten().cloned().collect())
    }
}

/// A distributed plan as the input of another plan (a write's rows, a
/// MERGE's source): it runs in the task context it was planned with, which
/// holds the cluster's channels and codec, whatever context the outer plan
/// runs in. To the outer plan's optimizer it is a leaf, so nothing is
/// rewritten inside the stages already cut.
#[derive(Debug)]
pub(crate) struct DistributedInput {
    plan: Arc<dyn ExecutionPlan>,
    task: Arc<TaskContext>,
}

impl DistributedInput {
    pub(crate) fn new(plan: Arc<dyn ExecutionPlan>, task: Arc<TaskContext>) -> Self {
        Self { plan, task }
    }

    /// A plan [`Cluster::plan`] cut, in the state it planned it in.
    pub(crate) fn planned(plan: Arc<dyn ExecutionPlan>, state: &SessionState) -> Self {
        Self::new(plan, Arc::new(TaskContext::from(state)))
    }
}

impl DisplayAs for DistributedInput {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match t {
            DisplayFormatType::TreeRender => Ok(()),
            _ => write!(
                f,
                "DistributedInput\n{}",
                datafusion_distributed::display_plan_ascii(self.plan.as_ref(), false)
            ),
        }
    }
}

impl ExecutionPlan for DistributedInput {
    fn name(&self) -> &str {
        "DistributedInput"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.plan.properties()
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
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        self.plan.execute(partition, Arc::clone(&self.task))
    }
}

/// A query's rows as a table (a MERGE's source, which the MERGE reads in
/// its own plans): each scan plans the query again, through the cluster
/// when the session lets it go there, so every execution has stages of its
/// own (a distributed plan runs once).
#[derive(Debug)]
pub(crate) struct ClusterSource {
    engine: Arc<crate::engine::Engine>,
    state: SessionState,
    plan: LogicalPlan,
    schema: SchemaRef,
    force: bool,
}

impl ClusterSource {
    /// The source `plan` of a statement of `engine`, planned again in `state`, whose session lets its
    /// queries go as `distribution` says, or `None` when it runs here
    /// anyway: no cluster, distribution off, a plan that writes, or columns
    /// of the same name (a table has one column per name).
    pub(crate) fn of(
        engine: &Arc<crate::engine::Engine>,
        distribution: crate::settings::Distribution,
        state: SessionState,
        plan: &LogicalPlan,
    ) -> DFResult<Option<Self>> {
        use crate::settings::Distribution;
        let force = match distribution {
            Distribution::Off => return Ok(None),
            Distribution::Auto => false,
            Distribution::Force => true,
        };
        let engine = Arc::clone(engine);
        if engine.cluster.get().is_none() || !reads_only(plan)? {
            return Ok(None);
        }
        let schema = Arc::clone(plan.schema().inner());
        let mut names = std::collections::HashSet::new();
        if !schema.fields().iter().all(|f| names.insert(f.name())) {
            return Ok(None);
        }
        Ok(Some(Self {
            engine,
            state,
            plan: plan.clone(),
            schema,
            force,
        }))
    }
}

#[async_trait]
impl TableProvider for ClusterSource {
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
        let plan = match projection {
            Some(columns) => {
                let schema = self.plan.schema();
                let exprs = columns
                    .iter()
                    .map(|&i| Expr::Column(Column::from(schema.qualified_field(i))));
                LogicalPlanBuilder::from(self.plan.clone())
                    .project(exprs)?
                    .build()?
            }
            None => self.plan.clone(),
        };
        if let Some(cluster) = self.engine.cluster.get() {
            if let Some((physical, state)) = cluster.plan(&self.state, &plan, self.force).await? {
                return Ok(Arc::new(DistributedInput::planned(physical, &state)));
            }
        }
        self.state.create_physical_plan(&plan).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_names_stand_for_their_addresses() {
        let workers = Workers::new(
            &["localhost:5500".to_string(), "10.1.2.3:5501".to_string()],
            false,
        )
        .expect("workers");
        let urls: Vec<String> = workers
            .get_urls()
            .expect("urls")
            .iter()
            .map(Url::to_string)
            .collect();
        assert!(
            urls.contains(&"http://127.0.0.1:5500/".to_string()),
            "{urls:?}"
        );
        assert!(
            urls.contains(&"http://10.1.2.3:5501/".to_string()),
            "{urls:?}"
        );
        // A name that does not resolve stands for no worker yet.
        let none =
            Workers::new(&["no-such-worker.invalid:5500".to_string()], false).expect("workers");
        assert!(none.get_urls().expect("urls").is_empty());
        for bad in ["10.1.2.3", "host:port", ":5500"] {
            assert!(Workers::new(&[bad.to_string()], false).is_err(), "{bad}");
        }
    }
}
