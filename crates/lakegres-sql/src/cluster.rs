//! Running the read side of a query on workers, with datafusion-distributed.
//!
//! The server that receives a statement plans it as always; for a query the
//! session lets go (`SET lakegres.distributed`), datafusion-distributed's
//! planner then cuts the physical plan into stages joined by network
//! boundaries, and the stages run as tasks on the workers the server knows
//! ([`ClusterConfig::workers`]). Delta scans travel as
//! [`DeltaTaskScanExec`]s: each task is sent the table's location, version
//! and its share of the files, and plans the same delta-rs scan where it
//! runs. Single-task stages stay in this process. Commits, DDL, point
//! lookups and catalog queries never reach this module: workers only read.
//!
//! A worker is the same binary (`lakegres worker`), or any server with
//! `cluster.worker_listen` set; it requires the cluster's shared secret on
//! every request.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::Result as DFResult;
use datafusion::execution::context::SessionState;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion::prelude::SessionContext;
use datafusion_distributed::grpc::{
    create_worker_client, BoxCloneSyncChannel, DefaultChannelResolver,
};
use datafusion_distributed::{
    ChannelResolver, DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedCodec,
    DistributedConfig, DistributedExec, DistributedExt, DistributedLeafExec, NetworkBoundaryExt,
    ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse, SessionStateBuilderExt, Stage, Worker,
    WorkerChannel, WorkerQueryContext, WorkerResolver, WorkerSessionBuilder,
};
use datafusion_proto::bytes::physical_plan_to_bytes_with_extension_codec;
use lakegres_delta::task_scan::{DeltaTaskScanExec, SentScans, TaskScanCodec, TaskTables};
use url::Url;

/// The `[cluster]` settings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// Workers this server sends tasks to, as `host:port`; empty means
    /// every query runs here.
    pub workers: Vec<String>,
    /// Address this process serves tasks on, as a worker; empty means it
    /// serves none (`lakegres worker --listen` sets it).
    pub worker_listen: String,
    /// A file holding the secret every request to a worker must carry;
    /// required as soon as workers or `worker_listen` are set.
    pub token_file: String,
    /// Bytes of data files one task reads (the planner's unit of work); a
    /// query of at most one task's worth runs here unless the session
    /// forces distribution.
    pub bytes_per_task: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            workers: Vec::new(),
            worker_listen: String::new(),
            token_file: String::new(),
            bytes_per_task: 128 << 20,
        }
    }
}

impl ClusterConfig {
    /// The shared secret, read from `token_file`.
    pub fn token(&self) -> Result<String, String> {
        if self.token_file.is_empty() {
            return Err("cluster.token_file is not set: workers need a shared secret".into());
        }
        let text = std::fs::read_to_string(&self.token_file)
            .map_err(|e| format!("cluster.token_file {}: {e}", self.token_file))?;
        let token = text.trim().to_string();
        if token.len() < 16 {
            return Err(format!(
                "cluster.token_file {} holds fewer than 16 characters",
                self.token_file
            ));
        }
        Ok(token)
    }
}

/// The workers a server sends tasks to, and how it reaches them.
pub struct Cluster {
    workers: Vec<Url>,
    channels: TokenChannels,
    bytes_per_task: usize,
}

impl Cluster {
    /// A cluster of `config.workers`. Every stage but the last runs on
    /// them: a stage kept here would have to be served to the workers that
    /// read it.
    pub fn new(config: &ClusterConfig, token: String) -> Result<Self, String> {
        let workers = config
            .workers
            .iter()
            .map(|w| {
                Url::parse(&format!("http://{w}")).map_err(|e| format!("cluster.workers {w}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let channels = TokenChannels::new(&token)?;
        Ok(Self {
            workers,
            channels,
            bytes_per_task: usize::try_from(config.bytes_per_task.max(1)).unwrap_or(usize::MAX),
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
        if !reads_only(plan)? || !travels(state) {
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
            .with_distributed_planner()
            .with_distributed_worker_resolver(Workers(self.workers.clone()))
            .with_distributed_channel_resolver(self.channels.clone())
            .with_distributed_user_codec(TaskScanCodec)
            .with_distributed_desired_task_count_handler(desired_tasks)
            .with_distributed_scale_up_leaf_node_handler(scale_up)
            .with_distributed_file_scan_config_bytes_per_partition(bytes_per_task)?
            .build();
        let physical = distributed.create_physical_plan(plan).await?;
        if !physical.exists(|node| Ok(node.downcast_ref::<DistributedExec>().is_some()))? {
            return Ok(None);
        }
        // Every stage that is sent must encode; otherwise run it all here
        // (decided before a row is sent).
        if let Err(e) = encodable(&physical, &distributed) {
            tracing::debug!("a query runs on this server: {e}");
            return Ok(None);
        }
        Ok(Some((physical, distributed)))
    }
}

/// Whether the session's settings that change results reach the workers.
/// Only datafusion-distributed's own options travel; a task's functions
/// read the time zone of the worker's session, UTC, so a session in
/// another time zone runs its queries here.
fn travels(state: &SessionState) -> bool {
    state
        .config()
        .options()
        .execution
        .time_zone
        .as_deref()
        .is_none_or(|zone| {
            matches!(
                zone.trim().to_ascii_uppercase().as_str(),
                "UTC" | "+00:00" | "Z" | "ETC/UTC" | "GMT"
            )
        })
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
            only_reads = false;
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(only_reads)
}

/// Whether every stage encodes as the planner will send it to a worker:
/// each task's leaves in place, stages below cut off.
fn encodable(plan: &Arc<dyn ExecutionPlan>, state: &SessionState) -> DFResult<()> {
    let codec = DistributedCodec::new_combined_with_user(state.config());
    plan.apply(|node| {
        if let Some(Stage::Local(stage)) = node.as_network_boundary().map(|b| b.input_stage()) {
            physical_plan_to_bytes_with_extension_codec(as_sent(&stage.plan)?, &codec)?;
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

/// The configured workers.
#[derive(Clone)]
struct Workers(Vec<Url>);

impl WorkerResolver for Workers {
    fn get_urls(&self) -> DFResult<Vec<Url>> {
        Ok(self.0.clone())
    }
}

/// The header a worker finds the cluster's secret in.
const TOKEN_HEADER: &str = "authorization";

/// Channels to workers (one per worker, kept), each request carrying the
/// cluster's secret.
#[derive(Clone)]
struct TokenChannels {
    channels: DefaultChannelResolver,
    header: http::HeaderValue,
}

impl TokenChannels {
    fn new(token: &str) -> Result<Self, String> {
        let header = http::HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "the cluster's secret is not a valid header value".to_string())?;
        Ok(Self {
            channels: DefaultChannelResolver::default(),
            header,
        })
    }
}

#[async_trait]
impl ChannelResolver for TokenChannels {
    async fn get_worker_client_for_url(&self, url: &Url) -> DFResult<Box<dyn WorkerChannel>> {
        let channel = self.channels.get_channel(url).await?;
        let header = self.header.clone();
        let with_token = tower::ServiceBuilder::new()
            .map_request(move |mut request: http::Request<tonic::body::Body>| {
                request.headers_mut().insert(TOKEN_HEADER, header.clone());
                request
            })
            .service(channel);
        Ok(create_worker_client(BoxCloneSyncChannel::new(with_token)))
    }
}

/// The worker of this process: plans decoded with Lakegres' functions and
/// scan codec, tables opened with `storage_options`.
fn worker(
    runtime: Arc<RuntimeEnv>,
    storage_options: HashMap<String, String>,
    channels: TokenChannels,
) -> Worker {
    Worker::from_session_builder(TaskSessions {
        tables: TaskTables::new(storage_options),
        channels,
    })
    .with_runtime_env(runtime)
}

/// Builds the session each task runs in.
#[derive(Clone)]
struct TaskSessions {
    tables: TaskTables,
    channels: TokenChannels,
}

#[async_trait]
impl WorkerSessionBuilder for TaskSessions {
    async fn build_session_state(&self, ctx: WorkerQueryContext) -> DFResult<SessionState> {
        let mut builder = ctx.builder;
        if let Some(config) = builder.config().as_mut() {
            config.options_mut().extensions.insert(self.tables.clone());
        }
        let state = builder
            .with_distributed_user_codec(TaskScanCodec)
            .with_distributed_channel_resolver(self.channels.clone())
            .build();
        // Functions travel by name: the task's registry must hold ours.
        let context = SessionContext::new_with_state(state);
        crate::functions::install(&context);
        Ok(context.state())
    }
}

/// Serves tasks on `listener` until `shutdown` resolves: the worker of a
/// `lakegres worker` process (or of a server with `worker_listen`).
pub async fn serve_worker(
    listener: tokio::net::TcpListener,
    token: String,
    runtime: Arc<RuntimeEnv>,
    storage_options: HashMap<String, String>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), String> {
    let channels = TokenChannels::new(&token)?;
    let worker = worker(runtime, storage_options, channels);
    let expected = format!("Bearer {token}");
    let check = move |request: tonic::Request<()>| {
        let given = request
            .metadata()
            .get(TOKEN_HEADER)
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        if same_secret(given, expected.as_bytes()) {
            Ok(request)
        } else {
            Err(tonic::Status::unauthenticated(
                "a request to a Lakegres worker needs the cluster's secret",
            ))
        }
    };
    let service =
        tonic::service::interceptor::InterceptedService::new(worker.into_worker_server(), check);
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| format!("serving tasks: {e}"))
}

/// Equal bytes, compared in time that does not depend on where they differ.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}
