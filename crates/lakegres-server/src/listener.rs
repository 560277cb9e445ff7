//! The accept loop: one task per connection, each in its own `conn` span,
//! until the shutdown future resolves.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lakegres_sql::Engine;
use pgwire::api::ConnectionManager;
use pgwire::tokio::TlsAcceptor;
use std::path::Path;
use tokio::net::TcpListener;
use tracing::{field::Empty, Instrument};

use crate::connection::Connection;
use crate::registry::{Connections, Registered, Security};

/// Makes aws-lc the process' TLS crypto back end. Both of rustls' back
/// ends are linked in (object_store brings ring); a TLS configuration that
/// names none (tonic's, between servers and workers) takes this one.
pub fn use_aws_lc_for_tls() {
    use pgwire::tokio::tokio_rustls::rustls;
    // Set already (by an earlier call): nothing to do.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// Accepts TLS connections with the given certificate chain and key (PEM
/// files); an unreadable file is an error, never a silent fall-back to
/// plaintext.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    use pgwire::tokio::tokio_rustls::rustls;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("reading the certificate {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("reading the private key {}: {e}", key.display()))?;
    // Both of rustls' crypto back ends are linked in (object_store brings
    // ring), so name the one pgwire uses rather than a process default.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("the certificate and key do not fit together: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves connections from `listener` until `shutdown` resolves; connections
/// still open then are left to finish on the runtime.
pub async fn serve(
    listener: TcpListener,
    engine: Arc<Engine>,
    security: Arc<Security>,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let manager = Arc::new(ConnectionManager::new());
    let connections = Arc::new(Connections::new(Arc::clone(&manager)));
    engine.set_backends(Arc::clone(&connections) as Arc<dyn lakegres_sql::Backends>);
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
        let logging_in = security.logging_in();
        let _ = socket.set_nodelay(true);
        let conn_id = next_id.fetch_add(1, Ordering::Relaxed);
        let span = tracing::info_span!("conn", conn_id, %peer, user = Empty, db = Empty);
        let open = security.opened();
        let started = Started {
            engine: Arc::clone(&engine),
            manager: Arc::clone(&manager),
            security: Arc::clone(&security),
            connections: Arc::clone(&connections),
            tls: tls.clone(),
        };
        tokio::spawn(started.serve(socket, logging_in, open, span));
    }
}

/// What a new connection needs of the server.
struct Started {
    engine: Arc<Engine>,
    manager: Arc<ConnectionManager>,
    security: Arc<Security>,
    connections: Arc<Connections>,
    tls: Option<TlsAcceptor>,
}

impl Started {
    /// Serves one accepted socket. Its session is made once the client
    /// sends its first bytes (a debug build takes 160 ms for one): a
    /// socket that sends nothing costs no session and, on the accept loop,
    /// no time, and is closed at the login timeout or when newer logins
    /// push it out.
    async fn serve(
        self,
        socket: tokio::net::TcpStream,
        logging_in: crate::registry::LoggingIn,
        open: crate::registry::OpenConnection,
        span: tracing::Span,
    ) {
        // A socket closed without a word is readable too: peek for a byte.
        let mut first = [0u8; 1];
        let spoke = tokio::select! {
            _ = tokio::time::sleep(crate::framing::STARTUP_TIMEOUT) => false,
            _ = logging_in.evicted.notified() => false,
            peeked = socket.peek(&mut first) => matches!(peeked, Ok(n) if n > 0),
        };
        if !spoke {
            return;
        }
        let session = match self.engine.new_session() {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(parent: &span, error = %e, "cannot start a session");
                return;
            }
        };
        let pid = session.pid();
        let idle = session.idle_watch();
        let terminate = Arc::new(tokio::sync::Notify::new());
        let connection = Connection::new(
            session,
            Arc::clone(&self.manager),
            Arc::clone(&self.security),
            Arc::clone(&self.connections),
            Arc::clone(&terminate),
        );
        let max_message_size = self.security.max_message_size;
        let connections = self.connections;
        let tls = self.tls;
        let served = tokio::spawn(
            async move {
                let _open = open;
                // Unregisters the connection however its task ends, a panic
                // or an abort included (its future is dropped).
                let _registered = Registered { connections, pid };
                tracing::debug!("connected");
                let ended = crate::framing::serve_connection(
                    socket,
                    tls,
                    connection,
                    max_message_size,
                    logging_in,
                )
                .await;
                if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            }
            .instrument(span.clone()),
        );
        // pg_terminate_backend and the idle timeouts end the connection from
        // a task of their own: the connection's task, woken for every
        // message, then polls only the connection, not a timer and a
        // notification besides (a few percent of a `SELECT 1`).
        let abort = served.abort_handle();
        async move {
            tokio::select! {
                _ = served => {}
                // Aborting drops the connection's future, which closes
                // its socket.
                _ = terminate.notified() => {
                    abort.abort();
                    tracing::info!("connection closed by pg_terminate_backend");
                }
                setting = lakegres_sql::idle_timeout(idle) => {
                    abort.abort();
                    tracing::info!(setting, "connection closed: idle longer than {setting}");
                }
            }
            tracing::debug!("disconnected");
        }
        .instrument(span)
        .await;
    }
}
