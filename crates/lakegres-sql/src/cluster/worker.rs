//! The worker's side of a cluster: the server a `lakegres worker` process
//! (or a server with `cluster.worker_listen`) runs, which takes tasks from
//! the cluster's servers ([`serve_worker`]), refuses a request without the
//! cluster's secret, and runs each task in a session with Lakegres'
//! functions and scan codec.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::Result as DFResult;
use datafusion::execution::context::SessionState;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext, WorkerSessionBuilder};
use lakegres_delta::task_scan::TaskTables;

use super::{task_session, ClusterTls, SessionSettings, TokenChannels, TOKEN_HEADER};

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
        let mut builder = ctx
            .builder
            .with_distributed_option_extension_from_headers::<SessionSettings>(&ctx.headers)?;
        if let Some(config) = builder.config().as_mut() {
            let settings = config
                .options()
                .extensions
                .get::<SessionSettings>()
                .cloned();
            if let Some(settings) = settings {
                settings.apply(config.options_mut());
            }
        }
        Ok(task_session(builder, &self.tables, &self.channels))
    }
}

/// Serves tasks on `listener` until `shutdown` resolves: the worker of a
/// `lakegres worker` process (or of a server with `worker_listen`).
pub async fn serve_worker(
    listener: tokio::net::TcpListener,
    token: String,
    runtime: Arc<RuntimeEnv>,
    storage_options: HashMap<String, String>,
    tls: Option<ClusterTls>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), String> {
    let identity = tls.as_ref().map(|t| t.identity.clone());
    let channels = TokenChannels::new(&token, tls, None)?;
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
    let mut server = tonic::transport::Server::builder();
    if let Some(identity) = identity {
        server = server
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
            .map_err(|e| format!("TLS for tasks: {e}"))?;
    }
    server
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
