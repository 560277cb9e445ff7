//! One connection's pgwire handlers: the login ([`Startup`]), the queries
//! ([`Queries`]: simple, extended and COPY, over the connection's
//! [`Session`]) and pgwire's cancel handler.
//!
//! The simple and extended query paths are our own rather than pgwire's
//! defaults so that: statements of one query string run one after another
//! and stop at the first error; rows stream straight from DataFusion to the
//! socket, also for `Execute` with a row limit (pgwire's portal fetch would
//! collect them); command tags can be complete (`INSERT 0 3` next to a result
//! row); a cancel request stops a statement while its rows stream.

use std::sync::Arc;

use lakegres_sql::Session;
use pgwire::api::auth::StartupHandler;
use pgwire::api::cancel::{CancelHandler, DefaultCancelHandler};
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::{ConnectionManager, PgWireServerHandlers};
use tokio::sync::Notify;

use crate::copy::CopySlot;
use crate::extended::{Parser, SuspendedTags};
use crate::registry::{Connections, Security};
use crate::startup::Startup;
use crate::statement::CancelSlot;

/// The handlers of one connection.
pub struct Connection {
    startup: Arc<Startup>,
    queries: Arc<Queries>,
    manager: Arc<ConnectionManager>,
    connections: Arc<Connections>,
}

impl Connection {
    /// A connection over a new session.
    pub fn new(
        session: Session,
        manager: Arc<ConnectionManager>,
        security: Arc<Security>,
        connections: Arc<Connections>,
        terminate: Arc<Notify>,
    ) -> Self {
        let session = Arc::new(session);
        Self {
            startup: Arc::new(Startup::new(
                Arc::clone(&session),
                Arc::clone(&manager),
                security,
                Arc::clone(&connections),
                terminate,
            )),
            queries: Arc::new(Queries {
                parser: Arc::new(Parser::new(Arc::clone(&session))),
                session,
                copy: CopySlot::default(),
                suspended: SuspendedTags::default(),
                cancel: CancelSlot::default(),
            }),
            manager,
            connections,
        }
    }
}

impl PgWireServerHandlers for Connection {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::clone(&self.queries)
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::clone(&self.queries)
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::clone(&self.startup)
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        Arc::clone(&self.queries)
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        Arc::new(Cancels {
            default: DefaultCancelHandler::new(Arc::clone(&self.manager)),
            connections: Arc::clone(&self.connections),
            session: Arc::clone(&self.queries.session),
        })
    }
}

/// A cancel request: pgwire's handler fires the statement's cancel
/// receiver, which stops it at its next await; the session's interrupt
/// stops it in the optimizer too ([`Session::interrupt_session`]), when
/// the request carries the session's key.
struct Cancels {
    default: DefaultCancelHandler,
    connections: Arc<Connections>,
    /// The new connection's session, which reaches the engine.
    session: Arc<Session>,
}

#[async_trait::async_trait]
impl CancelHandler for Cancels {
    async fn on_cancel_request(&self, request: pgwire::messages::cancel::CancelRequest) {
        if self
            .connections
            .key_matches(request.pid, &request.secret_key)
        {
            self.session.interrupt_session(request.pid);
        }
        self.default.on_cancel_request(request).await;
    }
}

/// The query handlers of one connection (simple, extended, COPY), over its
/// session.
pub struct Queries {
    pub(crate) session: Arc<Session>,
    pub(crate) parser: Arc<Parser>,
    /// A COPY FROM STDIN between its statement and the client's CopyDone.
    pub(crate) copy: CopySlot,
    /// The command tags of portals whose rows are suspended.
    pub(crate) suspended: SuspendedTags,
    /// The receiver of the connection's cancel requests.
    pub(crate) cancel: CancelSlot,
}
