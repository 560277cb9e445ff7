//! The operators' HTTP port: `GET /metrics` (Prometheus text format) and
//! `GET /health`. A few lines of HTTP/1.1 on a tokio listener are enough for
//! two read-only endpoints; each response closes its connection.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use lakegres_sql::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::registry::Security;

/// Serves `/metrics` and `/health` on `listener` until the task is dropped.
pub async fn serve_http(listener: TcpListener, engine: Arc<Engine>, security: Arc<Security>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let engine = Arc::clone(&engine);
        let security = Arc::clone(&security);
        tokio::spawn(async move {
            let answer =
                tokio::time::timeout(Duration::from_secs(10), answer(socket, &engine, &security));
            if let Ok(Err(e)) = answer.await {
                tracing::debug!(error = %e, "metrics request failed");
            }
        });
    }
}

async fn answer(
    mut socket: TcpStream,
    engine: &Engine,
    security: &Security,
) -> std::io::Result<()> {
    // The request line is all we need; read until the end of the headers.
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&request);
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, body) = match (method, path) {
        ("GET", "/health") => ("200 OK", "ok\n".to_string()),
        ("GET", "/metrics") => ("200 OK", metrics(engine, security)),
        ("GET", _) => ("404 Not Found", "not found\n".to_string()),
        _ => ("405 Method Not Allowed", "GET only\n".to_string()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await
}

fn metrics(engine: &Engine, security: &Security) -> String {
    let mut out = String::new();
    let (open, accepted, failed) = security.connection_counts();
    for (name, kind, help, value) in [
        (
            "lakegres_connections_open",
            "gauge",
            "Client connections open now.",
            open,
        ),
        (
            "lakegres_connections_total",
            "counter",
            "Client connections accepted.",
            accepted,
        ),
        (
            "lakegres_logins_failed_total",
            "counter",
            "Logins refused for a wrong password or unknown user.",
            failed,
        ),
        (
            "lakegres_memory_pool_bytes",
            "gauge",
            "Bytes the query memory pool has handed out now.",
            u64::try_from(engine.runtime().memory_pool.reserved()).unwrap_or(u64::MAX),
        ),
        (
            "lakegres_lookup_cache_bytes",
            "gauge",
            "Bytes of decoded table rows held for point queries (sql.lookup_cache_size).",
            engine.lookup_cache_bytes(),
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let _ = writeln!(out, "{name} {value}");
    }
    engine.metrics().render(&mut out);
    out
}
