//! lakegres-server: the wire. Accepts Postgres connections, runs the
//! startup handshake, and serves each connection's simple and extended
//! queries from its own [`lakegres_sql::Session`], streaming Arrow results as
//! Postgres rows and errors with their SQLSTATEs.
//!
//! The accept loop ([`serve`]) hands each socket to its message loop
//! (`framing`) with the connection's handlers (`connection`): the login
//! (`startup`), the simple and extended query protocols (`simple`,
//! `extended`, sharing `statement`) and COPY (`copy`). `registry` counts
//! and limits connections and finds one by pid; `sqlstate` alone turns
//! errors into ErrorResponses and `encode` alone calls arrow-pg.
//!
//! It knows pgwire and the session API, never Delta.

pub mod auth;
mod config;
mod connection;
mod copy;
mod encode;
mod extended;
mod framing;
mod http;
mod listener;
mod registry;
mod simple;
mod sqlstate;
mod startup;
mod statement;

pub use config::default_listen;
pub use http::serve_http;
pub use listener::{serve, tls_acceptor, use_aws_lc_for_tls};
pub use registry::{Security, DEFAULT_MAX_MESSAGE_SIZE};
