//! The `lakegres` binary: reads the configuration, opens the warehouse and
//! serves until SIGINT or SIGTERM.

mod config;

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use lakegres_delta::grants::Grants;
use lakegres_delta::{Catalog, FileRoots};
use lakegres_sql::Engine;
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

use lakegres_server::auth::{Auth, Verifier};
use lakegres_server::Security;

use crate::config::{Cli, Command, Config, UserAction};

/// mimalloc, as DataFusion's own binaries use: query execution allocates
/// and frees Arrow buffers from many threads at once, where glibc's malloc
/// was a measurable share of TPC-H time (bench/tpch).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Stack of each runtime thread. Planning recurses per level of a
/// statement's expressions (up to the parser's depth limit); tokio's 2 MiB
/// default is too little for that in a debug build. Only touched pages are
/// ever committed.
const THREAD_STACK_BYTES: usize = 16 * 1024 * 1024;

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(THREAD_STACK_BYTES)
        .build()
        .context("starting the runtime")?
        .block_on(serve())
}

async fn serve() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::load(&cli)?;
    if let Some(Command::User {
        action: UserAction::Add { name },
    }) = &cli.command
    {
        return add_user(&config, name);
    }
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.log.filter))
        .context("log.filter")?
        // delta-kernel logs a missing table or version at ERROR before
        // returning the error, which we report (42P01, 22003) ourselves.
        .add_directive("buoyant_kernel=off".parse().context("log directive")?);
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match config.log.format.as_str() {
        "text" => logs.init(),
        "json" => logs.json().with_current_span(true).init(),
        other => anyhow::bail!("log.format must be \"text\" or \"json\", not {other:?}"),
    }

    lakegres_server::use_aws_lc_for_tls();
    let storage_options = config.storage.storage_options();
    if matches!(cli.command, Some(Command::Worker { .. })) {
        return serve_worker_only(&config, storage_options).await;
    }
    let catalog = Catalog::open(&config.warehouse, storage_options.clone())
        .await
        .with_context(|| format!("opening the warehouse {}", config.warehouse))?;
    // Transactions a crash left half committed are made whole first.
    lakegres_delta::recover_transactions(&catalog)
        .await
        .context("rolling forward the warehouse's transactions")?;
    let file_roots =
        FileRoots::new(&config.file_roots(), &storage_options).context("files.roots")?;
    let grants = Grants::open(&catalog, config.auth.admins.clone())
        .await
        .context("reading the warehouse's grants")?;
    let engine = Engine::new(Arc::clone(&catalog), config.sql.clone(), file_roots, grants)?;
    if !config.cluster.workers.is_empty() || !config.cluster.worker_listen.is_empty() {
        let token = config.cluster.token().map_err(|e| anyhow::anyhow!(e))?;
        if !config.cluster.workers.is_empty() {
            engine
                .join_cluster(&config.cluster, token.clone(), cluster_tls(&config)?)
                .map_err(|e| anyhow::anyhow!(e))?;
            tracing::info!(workers = ?config.cluster.workers, "queries may run on workers");
        }
        if !config.cluster.worker_listen.is_empty() {
            let listener = bind_worker(&config.cluster.worker_listen).await?;
            tracing::info!("serving tasks on {}", listener.local_addr()?);
            tokio::spawn(lakegres_sql::cluster::serve_worker(
                listener,
                token,
                Arc::clone(engine.runtime()),
                storage_options.clone(),
                cluster_tls(&config)?,
                shutdown_signal(),
            ));
        }
    }
    let auth = Auth {
        method: config.auth_method()?,
        users: config.users()?,
    };
    let tls = if config.tls.cert.is_empty() {
        None
    } else {
        let acceptor = lakegres_server::tls_acceptor(
            std::path::Path::new(&config.tls.cert),
            std::path::Path::new(&config.tls.key),
        )
        .map_err(|e| anyhow::anyhow!("tls: {e}"))?;
        Some(acceptor)
    };
    tracing::info!(
        method = ?auth.method,
        users = auth.users.len(),
        tls = tls.is_some(),
        tls_required = config.tls.required,
        "authentication"
    );
    let mut security = Security::new(auth, config.tls.required, config.max_connections);
    security.max_message_size = config.max_message_size;
    let security = Arc::new(security);
    if !config.http_listen.is_empty() {
        let http = TcpListener::bind(&config.http_listen)
            .await
            .with_context(|| format!("http_listen {}", config.http_listen))?;
        tracing::info!(
            "metrics on http://{}/metrics, health on /health",
            http.local_addr()?
        );
        tokio::spawn(lakegres_server::serve_http(
            http,
            Arc::clone(&engine),
            Arc::clone(&security),
        ));
    }
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        listen = %addr,
        warehouse = %catalog.root(),
        "lakegres listening on {addr}, warehouse {}",
        catalog.root()
    );
    lakegres_server::serve(listener, engine, security, tls, shutdown_signal()).await?;
    tracing::info!("lakegres stopped");
    Ok(())
}

/// `lakegres worker`: serves tasks of other servers' queries until SIGINT
/// or SIGTERM, with no SQL port.
async fn serve_worker_only(
    config: &Config,
    storage_options: std::collections::HashMap<String, String>,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        !config.cluster.worker_listen.is_empty(),
        "a worker needs an address: lakegres worker --listen HOST:PORT"
    );
    let token = config.cluster.token().map_err(|e| anyhow::anyhow!(e))?;
    let runtime = config.sql.runtime_env().context("the worker's runtime")?;
    let listener = bind_worker(&config.cluster.worker_listen).await?;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        "lakegres worker listening on {}, serving tasks",
        listener.local_addr()?
    );
    lakegres_sql::cluster::serve_worker(
        listener,
        token,
        runtime,
        storage_options,
        cluster_tls(config)?,
        shutdown_signal(),
    )
    .await
    .map_err(|e| anyhow::anyhow!(e))?;
    tracing::info!("lakegres worker stopped");
    Ok(())
}

/// TLS between servers and workers: on when `[tls]` is set.
fn cluster_tls(config: &Config) -> anyhow::Result<Option<lakegres_sql::cluster::ClusterTls>> {
    if config.tls.cert.is_empty() {
        return Ok(None);
    }
    lakegres_sql::cluster::ClusterTls::from_files(
        std::path::Path::new(&config.tls.cert),
        std::path::Path::new(&config.tls.key),
    )
    .map(Some)
    .map_err(|e| anyhow::anyhow!("tls: {e}"))
}

async fn bind_worker(address: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(address)
        .await
        .with_context(|| format!("cluster.worker_listen {address}"))
}

/// `lakegres user add NAME`: reads a password and stores the user's SCRAM
/// verifier in the users file.
fn add_user(config: &Config, name: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        !config.auth.users_file.is_empty(),
        "no users file: set auth.users_file or --users-file"
    );
    let password = read_password()?;
    anyhow::ensure!(!password.is_empty(), "the password is empty");
    let verifier = Verifier::new(&password).map_err(|e| anyhow::anyhow!(e))?;
    let path = std::path::Path::new(&config.auth.users_file);
    let mut users = config::read_users_file(path)?;
    users.insert(name.to_string(), verifier.to_string());
    let text = toml::to_string(&users).context("writing the users file")?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("user {name} written to {}", path.display());
    Ok(())
}

/// A password from the terminal without echo (asked twice), or one line of
/// standard input when it is not a terminal (scripts).
fn read_password() -> anyhow::Result<String> {
    use std::io::{BufRead, IsTerminal};
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut line = String::new();
        stdin.lock().read_line(&mut line)?;
        return Ok(line.trim_end_matches(['\r', '\n']).to_string());
    }
    let ask = |prompt: &str| -> anyhow::Result<String> {
        eprint!("{prompt}");
        let _echo = EchoOff::new();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        eprintln!();
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    };
    let first = ask("Password: ")?;
    let again = ask("Again: ")?;
    anyhow::ensure!(first == again, "the passwords differ");
    Ok(first)
}

/// Turns terminal echo off while alive (`stty`, so no new dependency).
struct EchoOff;

impl EchoOff {
    fn new() -> Self {
        let _ = std::process::Command::new("stty")
            .arg("-echo")
            .stdin(std::process::Stdio::inherit())
            .status();
        EchoOff
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        let _ = std::process::Command::new("stty")
            .arg("echo")
            .stdin(std::process::Stdio::inherit())
            .status();
    }
}

/// Resolves on SIGINT or SIGTERM. Every write is one atomic Delta commit,
/// so stopping between statements needs no draining.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
