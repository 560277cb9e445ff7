//! Running the read side of a query on workers, with datafusion-distributed.
//!
//! The server that receives a statement plans it as always; for a query the
//! session lets go (`SET lakegres.distributed`), datafusion-distributed's
//! planner then cuts the physical plan into stages joined by network
//! boundaries, and the stages run as tasks on the workers the server knows
//! ([`ClusterConfig::workers`]). Delta scans travel as
//! [`DeltaTaskScanExec`](lakegres_delta::task_scan::DeltaTaskScanExec)s:
//! each task is sent the table's location, version and its share of the
//! files, and plans the same delta-rs scan where it runs; functions travel
//! by name (`lakegres_functions::wire`). Every stage but the last runs on workers.
//! The rows a write reads (INSERT … SELECT, CTAS, a MERGE's source) come
//! through `DistributedInput` and `ClusterSource`; commits, DDL, point
//! lookups and catalog queries never reach this module: workers only read.
//!
//! A worker is the same binary (`lakegres worker`), or any server with
//! `cluster.worker_listen` set; it requires the cluster's shared secret on
//! every request, over TLS when `[tls]` is set ([`ClusterTls`]).
//!
//! The two sides: `coordinator.rs` is the server's — the planning for the
//! workers, the worker list, the plans that run on them; `worker.rs` is the
//! worker's — the server it runs for tasks ([`serve_worker`]). Here is what
//! both use: the settings, TLS and the secret on the channels between them,
//! the settings a task is sent, and the session a task's plan is decoded
//! and run in.

mod coordinator;
mod worker;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::Result as DFResult;
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use datafusion_distributed::grpc::{create_worker_client, BoxCloneSyncChannel};
use datafusion_distributed::{ChannelResolver, DistributedExt, WorkerChannel};
use lakegres_delta::task_scan::{TaskScanCodec, TaskTables};
use url::Url;

pub use coordinator::Cluster;
pub(crate) use coordinator::{ClusterSource, DistributedInput};
pub use worker::serve_worker;

use coordinator::Workers;

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

datafusion::common::extensions_options! {
    /// The session settings a task's functions read, sent with every task
    /// (only datafusion-distributed's own options travel otherwise).
    pub struct SessionSettings {
        /// `datafusion.execution.time_zone`; empty when unset.
        pub time_zone: String, default = String::new()
    }
}

impl datafusion::config::ConfigExtension for SessionSettings {
    const PREFIX: &'static str = "lakegres_session";
}

impl SessionSettings {
    fn of(state: &SessionState) -> Self {
        let zone = &state.config().options().execution.time_zone;
        Self {
            time_zone: zone.clone().unwrap_or_default(),
        }
    }

    /// Puts the settings into a task's session.
    fn apply(&self, config: &mut datafusion::config::ConfigOptions) {
        if !self.time_zone.is_empty() {
            config.execution.time_zone = Some(self.time_zone.clone());
        }
    }
}

/// The header a worker finds the cluster's secret in.
const TOKEN_HEADER: &str = "authorization";

/// TLS between servers and workers, from `[tls]`: workers serve with the
/// certificate and key, servers check a worker's certificate against the
/// same certificate file (the cluster shares it, as it shares the secret).
#[derive(Clone)]
pub struct ClusterTls {
    certificate: tonic::transport::Certificate,
    identity: tonic::transport::Identity,
}

impl ClusterTls {
    /// From the PEM files of `[tls]`.
    pub fn from_files(cert: &std::path::Path, key: &std::path::Path) -> Result<Self, String> {
        let read = |path: &std::path::Path| {
            std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))
        };
        let cert = read(cert)?;
        let key = read(key)?;
        Ok(Self {
            certificate: tonic::transport::Certificate::from_pem(&cert),
            identity: tonic::transport::Identity::from_pem(cert, key),
        })
    }
}

/// Channels to workers (one per worker URL, kept; each reconnects when its
/// worker comes back), over TLS when the cluster has it, each request
/// carrying the cluster's secret.
#[derive(Clone)]
struct TokenChannels {
    channels: Arc<std::sync::Mutex<HashMap<Url, tonic::transport::Channel>>>,
    header: http::HeaderValue,
    tls: Option<ClusterTls>,
    /// The configured workers, for the names their certificates carry.
    workers: Option<Workers>,
}

impl TokenChannels {
    fn new(token: &str, tls: Option<ClusterTls>, workers: Option<Workers>) -> Result<Self, String> {
        let header = http::HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "the cluster's secret is not a valid header value".to_string())?;
        Ok(Self {
            channels: Arc::default(),
            header,
            tls,
            workers,
        })
    }

    fn channel(&self, url: &Url) -> DFResult<tonic::transport::Channel> {
        let internal = |what: String| datafusion::error::DataFusionError::Internal(what);
        let mut channels = self
            .channels
            .lock()
            .map_err(|_| internal("the workers' channels".into()))?;
        if let Some(channel) = channels.get(url) {
            return Ok(channel.clone());
        }
        let mut endpoint = tonic::transport::Endpoint::from_shared(url.to_string())
            .map_err(|e| internal(format!("the worker {url}: {e}")))?;
        if let Some(tls) = &self.tls {
            let name = self
                .workers
                .as_ref()
                .and_then(|w| w.server_name(url))
                .or_else(|| {
                    url.host_str()
                        .map(|h| h.trim_matches(['[', ']']).to_string())
                })
                .unwrap_or_default();
            let config = tonic::transport::ClientTlsConfig::new()
                .ca_certificate(tls.certificate.clone())
                .domain_name(name);
            endpoint = endpoint
                .tls_config(config)
                .map_err(|e| internal(format!("TLS to the worker {url}: {e}")))?;
        }
        let channel = endpoint.connect_lazy();
        channels.insert(url.clone(), channel.clone());
        Ok(channel)
    }
}

#[async_trait]
impl ChannelResolver for TokenChannels {
    async fn get_worker_client_for_url(&self, url: &Url) -> DFResult<Box<dyn WorkerChannel>> {
        let channel = self.channel(url)?;
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

/// The session a task runs in: Lakegres' functions (functions travel by
/// name: the task's registry must hold ours), the scan codec, the tables.
fn task_session(
    mut builder: SessionStateBuilder,
    tables: &TaskTables,
    channels: &TokenChannels,
) -> SessionState {
    if let Some(config) = builder.config().as_mut() {
        config.options_mut().extensions.insert(tables.clone());
    }
    let state = builder
        .with_distributed_user_codec(TaskScanCodec)
        .with_distributed_channel_resolver(channels.clone())
        .build();
    let context = SessionContext::new_with_state(state);
    lakegres_functions::install(&context);
    lakegres_functions::wire::install(&context);
    context.state()
}
