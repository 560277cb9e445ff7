//! One connection's message loop: pgwire's `process_socket`, with a limit on
//! the size of each message a client sends.
//!
//! pgwire accepts messages up to 1 GiB and buffers a whole message before
//! decoding it, so any client could make the server hold a gigabyte per
//! connection. Its limits are constants with no hook, so the loop is ours
//! (pgwire's own, step for step) and the socket is wrapped in [`Limited`],
//! which reads each message's length as the bytes arrive and refuses one
//! longer than `max_message_size` before it is buffered: the client gets a
//! FATAL 54000 and the connection closes.
//!
//! Under it, [`Coalesced`] holds the server's output until the connection
//! waits for its client, so an answer goes out in one write, as
//! PostgreSQL's does.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, SinkExt, StreamExt};
use lakegres_common::SqlState;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::PgWireError;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use pgwire::tokio::TlsAcceptor;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

use crate::sqlstate::fatal;

/// How long a client has to finish logging in. Postgres'
/// `authentication_timeout` is 60 s; a driver logs in within milliseconds,
/// and a socket that idles in the login holds one of the
/// [`crate::registry::MAX_LOGGING_IN`] slots.
pub(crate) const STARTUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A message longer than the limit, as the reader reports it.
#[derive(Debug, thiserror::Error)]
#[error("a message of {size} bytes is larger than max_message_size ({limit} bytes)")]
struct TooLarge {
    size: u64,
    limit: u64,
}

/// Serves one client connection until it ends.
pub(crate) async fn serve_connection<H: PgWireServerHandlers>(
    tcp: TcpStream,
    tls: Option<TlsAcceptor>,
    handlers: H,
    max_message_size: u64,
    logging_in: crate::registry::LoggingIn,
) -> io::Result<()> {
    let evicted = Arc::clone(&logging_in.evicted);
    let mut logging_in_slot = Some(logging_in);
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let negotiated = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        _ = evicted.notified() => return Ok(()),
        socket = negotiate_tls(tcp, tls) => socket?,
    };
    let Some(socket) = negotiated else {
        return Ok(());
    };
    // The same socket and codec state, read through the limit. Bytes the
    // TLS negotiation already read are counted first.
    let old = socket.into_parts();
    let mut limited = Limited::new(Coalesced::new(old.io), max_message_size);
    let early = limited.observe(&old.read_buf);
    let mut parts = FramedParts::new(limited, old.codec);
    parts.read_buf = old.read_buf;
    parts.write_buf = old.write_buf;
    let mut socket = Framed::from_parts(parts);
    if let Err(e) = early {
        let message = too_large(&e).map_or_else(|| e.to_string(), ToString::to_string);
        return refuse(&mut socket, SqlState::PROGRAM_LIMIT_EXCEEDED, message).await;
    }

    let startup_handler = handlers.startup_handler();
    let simple_query_handler = handlers.simple_query_handler();
    let extended_query_handler = handlers.extended_query_handler();
    let copy_handler = handlers.copy_handler();
    let cancel_handler = handlers.cancel_handler();
    let error_handler = handlers.error_handler();
    loop {
        let logging_in = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        // pgwire's decoder panics on some malformed messages (the wire
        // fuzzer found them); the client then gets an error, not a reset.
        let read = AssertUnwindSafe(socket.next()).catch_unwind();
        if !logging_in {
            // Logged in: the socket now holds a connection's slot.
            logging_in_slot.take();
        }
        let next = if logging_in {
            tokio::select! {
                _ = &mut startup_timeout => break,
                _ = evicted.notified() => {
                    tracing::debug!("login pushed out by newer ones");
                    break;
                }
                read = read => read,
            }
        } else {
            read.await
        };
        let msg = match next {
            Ok(Some(Ok(msg))) => msg,
            Ok(Some(Err(PgWireError::IoError(e)))) => match too_large(&e) {
                Some(t) => {
                    let message = t.to_string();
                    return refuse(&mut socket, SqlState::PROGRAM_LIMIT_EXCEEDED, message).await;
                }
                None => break,
            },
            Ok(Some(Err(e))) => {
                let message = format!("invalid message: {e}");
                return refuse(&mut socket, SqlState::PROTOCOL_VIOLATION, message).await;
            }
            Ok(None) => break,
            Err(_) => {
                let message = "invalid message: it cannot be decoded".to_string();
                return refuse(&mut socket, SqlState::PROTOCOL_VIOLATION, message).await;
            }
        };
        // A client's Terminate ends the connection (asyncpg waits for it).
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        let is_extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(is_extended_query) => is_extended_query,
            _ => msg.is_extended_query(),
        };
        if let Err(mut e) = process_message(
            msg,
            &mut socket,
            Arc::clone(&startup_handler),
            Arc::clone(&simple_query_handler),
            Arc::clone(&extended_query_handler),
            Arc::clone(&copy_handler),
            Arc::clone(&cancel_handler),
        )
        .await
        {
            error_handler.on_error(&socket, &mut e);
            process_error(&mut socket, e, is_extended_query).await?;
        }
    }
    Ok(())
}

fn too_large(e: &io::Error) -> Option<&TooLarge> {
    e.get_ref()?.downcast_ref::<TooLarge>()
}

/// Ends the connection with a FATAL error: a message too large (54000) or
/// one that cannot be read (08P01).
async fn refuse<S, C>(
    socket: &mut Framed<Limited<S>, C>,
    state: SqlState,
    message: String,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: tokio_util::codec::Encoder<PgWireBackendMessage, Error = io::Error>,
{
    tracing::warn!(sqlstate = state.code(), "connection closed: {message}");
    let info = fatal(state, message);
    // The client may be gone already; the connection ends either way.
    let _ = socket
        .send(PgWireBackendMessage::ErrorResponse(info.into()))
        .await;
    let _ = SinkExt::<PgWireBackendMessage>::close(socket).await;
    // A client still sending the refused message would get a reset, not the
    // error, if the socket closed with its bytes unread: read and drop
    // them until it hangs up (bounded in time and bytes).
    drain(&mut socket.get_mut().io).await;
    Ok(())
}

/// Reads and drops what the client still sends: until it closes, for at
/// most [`DRAIN_TIME`] and [`DRAIN_BYTES`].
async fn drain<S: AsyncRead + Unpin>(io: &mut S) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0usize;
    let deadline = tokio::time::sleep(DRAIN_TIME);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => break,
            read = io.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total += n;
                    if total > DRAIN_BYTES {
                        break;
                    }
                }
            },
        }
    }
}

/// How long, and how much, a refused connection is read before it closes.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(2);
const DRAIN_BYTES: usize = 64 << 20;

/// A reader that follows the Postgres framing of what the client sends —
/// untyped messages (the startup packet, SSL and GSS requests) and then
/// typed ones (one type byte, then a length that counts itself) — and fails
/// on a length over the limit as soon as the length has arrived.
pub(crate) struct Limited<S> {
    io: S,
    limit: u64,
    /// The header of the message being read: its bytes so far.
    header: [u8; 5],
    have: usize,
    /// Bytes of the current message's body not yet seen.
    remaining: u64,
    /// Whether messages have a type byte (everything after the startup
    /// packet does).
    typed: bool,
}

impl<S> Limited<S> {
    fn new(io: S, limit: u64) -> Self {
        Self {
            io,
            limit,
            header: [0; 5],
            have: 0,
            remaining: 0,
            typed: false,
        }
    }

    /// Follows the framing over `bytes`, the next bytes the client sent.
    fn observe(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            if self.remaining > 0 {
                let skip = usize::try_from(self.remaining)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                self.remaining -= skip as u64;
                bytes = &bytes[skip..];
                continue;
            }
            let need = if self.typed { 5 } else { 4 };
            let take = (need - self.have).min(bytes.len());
            self.header[self.have..self.have + take].copy_from_slice(&bytes[..take]);
            self.have += take;
            bytes = &bytes[take..];
            if self.have < need {
                break;
            }
            let mut length = [0; 4];
            length.copy_from_slice(&self.header[need - 4..need]);
            let length = u64::from(u32::from_be_bytes(length));
            if length > self.limit {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    TooLarge {
                        size: length,
                        limit: self.limit,
                    },
                ));
            }
            self.remaining = length.saturating_sub(4);
            self.have = 0;
            // An 8-byte untyped message is an SSL or GSS encryption request,
            // after which the startup packet (untyped too) still comes.
            if self.typed || length != 8 {
                self.typed = true;
            }
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Limited<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let new = &buf.filled()[before..];
                Poll::Ready(self.observe(new))
            }
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Limited<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Output held back while a connection has more of the client's messages to
/// answer, and written when it waits for the client.
///
/// pgwire flushes after most messages it sends (ParseComplete, BindComplete,
/// RowDescription, CommandComplete, ReadyForQuery), so the answer to one
/// prepared statement went out in four writes, each one a system call here
/// and a wakeup in the client. PostgreSQL buffers its output until it waits
/// for the client's next message (or its buffer fills); so does this: writes
/// collect in memory, and go out when a read would wait, when
/// [`HELD_BYTES`] have collected (a long result still streams), or when the
/// connection shuts down. The client sees the same bytes in the same order,
/// never later than the moment the server stops to wait for it. Only what
/// pgwire flushes reaches this: what it feeds stays in the codec's buffer,
/// which is how a portal's answers wait for their Sync (extended.rs).
pub(crate) struct Coalesced<S> {
    io: S,
    held: Vec<u8>,
    /// How much of `held` the socket has taken.
    written: usize,
}

/// Output that is written out even though the connection is still busy.
const HELD_BYTES: usize = 64 * 1024;

impl<S> Coalesced<S> {
    fn new(io: S) -> Self {
        Self {
            io,
            held: Vec::new(),
            written: 0,
        }
    }
}

impl<S: AsyncWrite + Unpin> Coalesced<S> {
    /// Writes what is held, then flushes the socket.
    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.held.len() {
            match Pin::new(&mut self.io).poll_write(cx, &self.held[self.written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.held.clear();
        self.written = 0;
        Pin::new(&mut self.io).poll_flush(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Coalesced<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Pending if !this.held.is_empty() => {
                // The connection waits for its client: send what it has.
                // Whether the write finishes or waits for the socket, the
                // task is woken by whichever of the two it waits for.
                match this.poll_write_held(cx) {
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Ready(Ok(())) | Poll::Pending => Poll::Pending,
                }
            }
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Coalesced<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.held.len() >= HELD_BYTES {
            std::task::ready!(this.poll_write_held(cx))?;
        }
        this.held.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.held.len() >= HELD_BYTES {
            this.poll_write_held(cx)
        } else {
            Poll::Ready(Ok(()))
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        std::task::ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: Option<u8>, length: u32) -> Vec<u8> {
        let mut out: Vec<u8> = kind.into_iter().collect();
        out.extend_from_slice(&length.to_be_bytes());
        out.resize(out.len() + length as usize - 4, b'x');
        out
    }

    #[test]
    fn follows_the_framing_across_reads() {
        let mut limited = Limited::new((), 100);
        let mut stream = message(None, 8); // SSLRequest
        stream.extend(message(None, 40)); // startup
        stream.extend(message(Some(b'Q'), 100));
        stream.extend(message(Some(b'S'), 4));
        // Any split of the stream into reads is followed alike.
        for chunk in stream.chunks(3) {
            limited.observe(chunk).unwrap();
        }
        assert_eq!(
            (limited.have, limited.remaining, limited.typed),
            (0, 0, true)
        );
        let too_big = message(Some(b'Q'), 101);
        let err = limited.observe(&too_big[..5]).unwrap_err();
        assert_eq!(too_large(&err).map(|t| t.size), Some(101));
    }

    #[test]
    fn an_oversized_startup_packet_is_refused() {
        let mut limited = Limited::new((), 64);
        assert!(limited.observe(&1000u32.to_be_bytes()).is_err());
    }

    /// What the client has received within a moment.
    async fn received(client: &mut tokio::io::DuplexStream) -> Vec<u8> {
        use tokio::io::AsyncReadExt;
        let mut got = Vec::new();
        let mut buf = vec![0u8; 256 * 1024];
        while let Ok(Ok(n)) =
            tokio::time::timeout(std::time::Duration::from_millis(50), client.read(&mut buf)).await
        {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got
    }

    #[tokio::test]
    async fn output_waits_until_the_connection_waits_for_its_client() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let mut server = Coalesced::new(server);
        // Three answers, each flushed as pgwire flushes them: none is sent.
        for message in [&b"BindComplete;"[..], b"DataRow;", b"ReadyForQuery;"] {
            server.write_all(message).await.unwrap();
            server.flush().await.unwrap();
        }
        assert!(received(&mut client).await.is_empty());
        // The server waits for the client's next message: all of it goes,
        // in order, before the client has to send anything.
        let reading = tokio::spawn(async move {
            let mut byte = [0u8; 1];
            server.read_exact(&mut byte).await.map(|_| (server, byte))
        });
        assert_eq!(
            received(&mut client).await,
            b"BindComplete;DataRow;ReadyForQuery;"
        );
        client.write_all(b"Q").await.unwrap();
        let (mut server, byte) = reading.await.unwrap().unwrap();
        assert_eq!(&byte, b"Q");
        // A long answer streams without waiting for the read.
        let long = vec![7u8; HELD_BYTES + 10];
        server.write_all(&long).await.unwrap();
        server.write_all(b"end").await.unwrap();
        assert_eq!(received(&mut client).await.len(), HELD_BYTES + 10);
        // Shutting down sends what is held.
        server.shutdown().await.unwrap();
        assert_eq!(received(&mut client).await, b"end");
    }
}
