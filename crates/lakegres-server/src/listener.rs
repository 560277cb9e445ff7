//! The accept loop: one task per connection, each in its own `conn` span,
//! until the shutdown future resolves.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lakegres_sql::Engine;
use pgwire::api::ConnectionManager;
use pgwire::tokio::process_socket;
use tokio::net::TcpListener;
use tracing::{field::Empty, Instrument};

use crate::handler::Connection;

/// Serves connections from `listener` until `shutdown` resolves; connections
/// still open then are left to finish on the runtime.
pub async fn serve(
    listener: TcpListener,
    engine: Arc<Engine>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let manager = Arc::new(ConnectionManager::new());
    let next_id = AtomicU64::new(1);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => accepted,
        };
        let (socket, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: keep serving the others.
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let _ = socket.set_nodelay(true);
        let conn_id = next_id.fetch_add(1, Ordering::Relaxed);
        let span = tracing::info_span!("conn", conn_id, %peer, user = Empty, db = Empty);
        let session = match engine.new_session() {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot start a session");
                continue;
            }
        };
        let connection = Connection::new(session, Arc::clone(&manager));
        tokio::spawn(
            async move {
                tracing::debug!("connected");
                if let Err(e) = process_socket(socket, None, connection).await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                tracing::debug!("disconnected");
            }
            .instrument(span),
        );
    }
}
