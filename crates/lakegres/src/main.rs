//! The `lakegres` binary: reads the configuration, opens the warehouse and
//! serves until SIGINT or SIGTERM.

mod config;

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use lakegres_delta::{Catalog, FileRoots};
use lakegres_sql::Engine;
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

use crate::config::{Cli, Config};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::load(&cli)?;
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.log.filter))
        .context("log.filter")?
        // delta-kernel logs a missing table or version at ERROR before
        // returning the error, which we report (42P01, 22003) ourselves.
        .add_directive("buoyant_kernel=off".parse().context("log directive")?);
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();

    let catalog = Catalog::open(&config.warehouse, Default::default())
        .await
        .with_context(|| format!("opening the warehouse {}", config.warehouse))?;
    let file_roots = FileRoots::new(&config.file_roots()).context("files.roots")?;
    let engine = Engine::new(Arc::clone(&catalog), config.sql.clone(), file_roots)?;
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
    lakegres_server::serve(listener, engine, shutdown_signal()).await?;
    tracing::info!("lakegres stopped");
    Ok(())
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
