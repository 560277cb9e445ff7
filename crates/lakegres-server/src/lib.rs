//! lakegres-server: the wire. Accepts Postgres connections, runs the
//! startup handshake, and serves each connection's simple and extended
//! queries from its own [`lakegres_sql::Session`], streaming Arrow results as
//! Postgres rows and errors with their SQLSTATEs.
//!
//! It knows pgwire and the session API, never Delta.

pub mod auth;
mod config;
mod copy;
mod encode;
mod framing;
mod handler;
mod http;
mod listener;
mod sqlstate;

pub use config::default_listen;
pub use handler::{Security, DEFAULT_MAX_MESSAGE_SIZE};
pub use http::serve_http;
pub use listener::{serve, tls_acceptor};
