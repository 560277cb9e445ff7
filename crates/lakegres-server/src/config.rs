//! Settings of the wire layer.

use std::net::SocketAddr;

/// The default listen address: loopback, one port above Postgres'.
pub fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 5433))
}
