//! Who is connected, shared by all connections: the limits a new connection
//! is checked against ([`Security`]: how clients log in, how many may be
//! open, how large a message may be), the counters `/metrics` reports, and
//! the logged-in connections by pid ([`Connections`]) that
//! `pg_cancel_backend` and `pg_terminate_backend` reach.
//!
//! It knows neither the login exchange nor statements.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pgwire::api::ConnectionManager;
use pgwire::messages::startup::SecretKey;
use tokio::sync::Notify;

use crate::auth::Auth;

/// The default of `max_message_size`: 64 MiB (Postgres allows 1 GiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: u64 = 64 << 20;

/// Who may connect, and how; shared by all connections.
#[derive(Debug)]
pub struct Security {
    pub auth: Auth,
    /// Refuse connections without TLS.
    pub tls_required: bool,
    /// Connections past this many are refused (53300).
    pub max_connections: usize,
    /// A client message longer than this many bytes ends its connection
    /// (FATAL 54000) before the server buffers it.
    pub max_message_size: u64,
    /// Sockets open now (counted from accept to close).
    open: AtomicUsize,
    /// Of those, the ones that have not logged in yet, oldest first: each
    /// one's id and what closes it.
    logging_in: Mutex<std::collections::VecDeque<(u64, Arc<Notify>)>>,
    next_login: AtomicU64,
    /// Sockets accepted since the server started.
    accepted: AtomicU64,
    /// Failed logins per user since the server started.
    failures: Mutex<HashMap<String, u64>>,
}

impl Security {
    pub fn new(auth: Auth, tls_required: bool, max_connections: usize) -> Self {
        Self {
            auth,
            tls_required,
            max_connections,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            open: AtomicUsize::new(0),
            logging_in: Default::default(),
            next_login: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            failures: Default::default(),
        }
    }

    /// Counts a socket as open until the returned guard drops.
    pub(crate) fn opened(self: &Arc<Self>) -> OpenConnection {
        self.open.fetch_add(1, Ordering::Relaxed);
        OpenConnection(Arc::clone(self))
    }

    /// Connections open now, accepted so far, and failed logins so far.
    pub(crate) fn connection_counts(&self) -> (u64, u64, u64) {
        let failed = self
            .failures
            .lock()
            .map(|f| f.values().sum())
            .unwrap_or_default();
        (
            u64::try_from(self.open_connections()).unwrap_or(u64::MAX),
            self.accepted.load(Ordering::Relaxed),
            failed,
        )
    }

    fn open_connections(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Counts a socket as logging in until the returned guard drops (at
    /// its login, or its end). Past [`MAX_LOGGING_IN`], the socket logging
    /// in longest is closed ([`LoggingIn::evicted`]): sockets that never log
    /// in hold neither the slots of connections nor, for long, those of
    /// logins, so a client that logs in at once always gets in.
    pub(crate) fn logging_in(self: &Arc<Self>) -> LoggingIn {
        let id = self.next_login.fetch_add(1, Ordering::Relaxed);
        let evicted = Arc::new(Notify::new());
        if let Ok(mut pending) = self.logging_in.lock() {
            pending.push_back((id, Arc::clone(&evicted)));
            if pending.len() > MAX_LOGGING_IN {
                if let Some((_, oldest)) = pending.pop_front() {
                    oldest.notify_one();
                }
            }
        }
        LoggingIn {
            security: Arc::clone(self),
            id,
            evicted,
        }
    }

    fn logging_in_count(&self) -> usize {
        self.logging_in.lock().map(|p| p.len()).unwrap_or_default()
    }

    /// The logged-in connections, this login among them, when they would
    /// be more than `max_connections`: sockets still logging in hold no
    /// slot (they have their own limit, [`MAX_LOGGING_IN`]).
    pub(crate) fn too_many_connections(&self) -> Option<usize> {
        let logged_in = self
            .open_connections()
            .saturating_sub(self.logging_in_count());
        (logged_in + 1 > self.max_connections).then_some(logged_in + 1)
    }

    /// Counts a failed login; returns the user's count so far.
    pub(crate) fn note_failure(&self, user: &str) -> u64 {
        let Ok(mut failures) = self.failures.lock() else {
            return 0;
        };
        let count = failures.entry(user.to_string()).or_default();
        *count += 1;
        *count
    }
}

/// How many sockets may be logging in at once (TLS, the startup message,
/// the password exchange), apart from `max_connections`.
pub(crate) const MAX_LOGGING_IN: usize = 32;

/// Counts one socket that has not logged in yet, while alive.
pub(crate) struct LoggingIn {
    security: Arc<Security>,
    id: u64,
    /// Notified when newer logins pushed this one out: its connection ends.
    pub(crate) evicted: Arc<Notify>,
}

impl Drop for LoggingIn {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.security.logging_in.lock() {
            pending.retain(|(id, _)| *id != self.id);
        }
    }
}

/// Counts one open socket while alive.
pub(crate) struct OpenConnection(Arc<Security>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The logged-in connections by session pid, for `pg_cancel_backend` and
/// `pg_terminate_backend`.
#[derive(Debug)]
pub struct Connections {
    manager: Arc<ConnectionManager>,
    open: Mutex<HashMap<i32, (SecretKey, Arc<Notify>)>>,
}

impl Connections {
    pub(crate) fn new(manager: Arc<ConnectionManager>) -> Self {
        Self {
            manager,
            open: Default::default(),
        }
    }

    pub(crate) fn opened(&self, pid: i32, secret: SecretKey, terminate: Arc<Notify>) {
        if let Ok(mut open) = self.open.lock() {
            open.insert(pid, (secret, terminate));
        }
    }

    /// Whether `secret` is session `pid`'s key (a cancel request's).
    pub(crate) fn key_matches(&self, pid: i32, secret: &SecretKey) -> bool {
        self.open
            .lock()
            .is_ok_and(|open| open.get(&pid).is_some_and(|(key, _)| key == secret))
    }

    pub(crate) fn closed(&self, pid: i32) {
        if let Ok(mut open) = self.open.lock() {
            open.remove(&pid);
        }
    }
}

impl lakegres_sql::Backends for Connections {
    fn cancel(&self, pid: i32) -> bool {
        let secret = self
            .open
            .lock()
            .ok()
            .and_then(|open| open.get(&pid).map(|(secret, _)| secret.clone()));
        let Some(secret) = secret else {
            return false;
        };
        let manager = Arc::clone(&self.manager);
        tokio::spawn(async move { manager.cancel(pid, &secret).await });
        true
    }

    fn terminate(&self, pid: i32) -> bool {
        let Ok(open) = self.open.lock() else {
            return false;
        };
        match open.get(&pid) {
            Some((_, terminate)) => {
                terminate.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A connection in the registry, until dropped.
pub(crate) struct Registered {
    pub(crate) connections: Arc<Connections>,
    pub(crate) pid: i32,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.connections.closed(self.pid);
    }
}

#[cfg(test)]
mod tests {
    use lakegres_sql::Backends;

    use super::*;

    fn security(max_connections: usize) -> Arc<Security> {
        Arc::new(Security::new(Auth::trust(), false, max_connections))
    }

    #[test]
    fn logins_past_max_connections_are_too_many() {
        let security = security(2);
        let first = security.opened();
        let second = (security.opened(), security.logging_in());
        assert_eq!(security.too_many_connections(), None);
        drop(second.1); // logged in
        let third = (security.opened(), security.logging_in());
        assert_eq!(security.too_many_connections(), Some(3));
        drop(third);
        // Sockets still logging in hold no connection's slot.
        let idle: Vec<_> = (0..5)
            .map(|_| (security.opened(), security.logging_in()))
            .collect();
        drop(second.0);
        let login = (security.opened(), security.logging_in());
        assert_eq!(security.too_many_connections(), None);
        drop((first, idle, login));
    }

    #[test]
    fn past_the_limit_of_logins_the_oldest_is_closed() {
        use futures::FutureExt;
        let security = security(2);
        let pending: Vec<_> = (0..MAX_LOGGING_IN).map(|_| security.logging_in()).collect();
        assert_eq!(security.logging_in_count(), MAX_LOGGING_IN);
        let newest = security.logging_in();
        assert_eq!(security.logging_in_count(), MAX_LOGGING_IN);
        // The oldest was told to close; the one after it was not.
        assert!(pending[0].evicted.notified().now_or_never().is_some());
        assert!(pending[1].evicted.notified().now_or_never().is_none());
        drop(pending);
        assert_eq!(security.logging_in_count(), 1);
        drop(newest);
        assert_eq!(security.logging_in_count(), 0);
    }

    #[test]
    fn a_socket_counts_as_open_until_its_guard_drops() {
        let security = security(10);
        let open = security.opened();
        assert_eq!(security.connection_counts().0, 1);
        drop(open);
        assert_eq!(security.connection_counts().0, 0);
    }

    #[test]
    fn failed_logins_are_counted_per_user_and_in_total() {
        let security = security(10);
        assert_eq!(security.note_failure("alice"), 1);
        assert_eq!(security.note_failure("alice"), 2);
        assert_eq!(security.note_failure("bob"), 1);
        assert_eq!(security.connection_counts().2, 3);
    }

    #[tokio::test]
    async fn a_pid_reaches_its_connection_until_it_closes() {
        let connections = Arc::new(Connections::new(Arc::new(ConnectionManager::new())));
        let terminate = Arc::new(Notify::new());
        connections.opened(7, SecretKey::I32(42), Arc::clone(&terminate));
        assert!(connections.cancel(7));
        assert!(connections.terminate(7));
        // notify_one left a permit: the connection's task sees it.
        terminate.notified().await;
        assert!(!connections.cancel(8));
        assert!(!connections.terminate(8));
        drop(Registered {
            connections: Arc::clone(&connections),
            pid: 7,
        });
        assert!(!connections.cancel(7));
        assert!(!connections.terminate(7));
    }
}
