//! One connection's pgwire handlers, over its [`Session`].
//!
//! The simple and extended query paths are our own rather than pgwire's
//! defaults so that: statements of one query string run one after another
//! and stop at the first error; rows stream straight from DataFusion to the
//! socket, also for `Execute` with a row limit (pgwire's portal fetch would
//! collect them); command tags can be complete (`INSERT 0 3` next to a result
//! row); a cancel request stops a statement while its rows stream.

use std::fmt::Debug;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::ParamValues;
use futures::channel::oneshot;
use futures::future::{select, Either};
use futures::{FutureExt, Sink, SinkExt, StreamExt};
use lakegres_delta::SqlState;
use lakegres_sql::{CommandTag, CopyIn, Description, Output, Session, Statement, Transaction};
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::cancel::DefaultCancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{
    ClientInfo, ClientPortalStore, ConnectionHandle, ConnectionManager, PgWireConnectionState,
    PgWireServerHandlers, PidSecretKeyGenerator, RandomPidSecretKeyGenerator, Type, DEFAULT_NAME,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse};
use pgwire::messages::data::{NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{Describe, Execute, PortalSuspended};
use pgwire::messages::response::{EmptyQueryResponse, ReadyForQuery, TransactionStatus};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::{Authentication, SecretKey};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::auth::{Auth, Method, ScramError, ScramExchange};
use crate::copy;
use crate::encode;
use crate::sqlstate::{error_info, info, user_error};

/// A parsed statement of the extended protocol, with what Describe reports.
#[derive(Debug)]
pub struct Prepared {
    statement: Statement,
    description: Description,
}

/// A COPY FROM STDIN waiting for the client's data; shared by the query
/// handlers (which start it) and the copy handler (which feeds it).
type CopySlot = Arc<tokio::sync::Mutex<Option<Box<CopyIn>>>>;

/// The handlers of one connection.
pub struct Connection {
    session: Arc<Session>,
    parser: Arc<Parser>,
    manager: Arc<ConnectionManager>,
    copy: CopySlot,
    security: Arc<Security>,
    login: Arc<tokio::sync::Mutex<Login>>,
    connections: Arc<Connections>,
    terminate: Arc<tokio::sync::Notify>,
}

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
    open: std::sync::atomic::AtomicUsize,
    /// Sockets accepted since the server started.
    accepted: std::sync::atomic::AtomicU64,
    /// Failed logins per user since the server started.
    failures: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

/// The logged-in connections by session pid, for `pg_cancel_backend` and
/// `pg_terminate_backend`.
#[derive(Debug)]
pub struct Connections {
    manager: Arc<ConnectionManager>,
    open: std::sync::Mutex<std::collections::HashMap<i32, (SecretKey, Arc<tokio::sync::Notify>)>>,
}

impl Connections {
    pub(crate) fn new(manager: Arc<ConnectionManager>) -> Self {
        Self {
            manager,
            open: Default::default(),
        }
    }

    fn opened(&self, pid: i32, secret: SecretKey, terminate: Arc<tokio::sync::Notify>) {
        if let Ok(mut open) = self.open.lock() {
            open.insert(pid, (secret, terminate));
        }
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

/// Counts one open socket while alive.
pub(crate) struct OpenConnection(Arc<Security>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0
            .open
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Security {
    pub fn new(auth: Auth, tls_required: bool, max_connections: usize) -> Self {
        Self {
            auth,
            tls_required,
            max_connections,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            open: std::sync::atomic::AtomicUsize::new(0),
            accepted: std::sync::atomic::AtomicU64::new(0),
            failures: Default::default(),
        }
    }

    /// Counts a socket as open until the returned guard drops.
    pub(crate) fn opened(self: &Arc<Self>) -> OpenConnection {
        self.open.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
            self.accepted.load(std::sync::atomic::Ordering::Relaxed),
            failed,
        )
    }

    fn open_connections(&self) -> usize {
        self.open.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts a failed login; returns the user's count so far.
    fn note_failure(&self, user: &str) -> u64 {
        let Ok(mut failures) = self.failures.lock() else {
            return 0;
        };
        let count = failures.entry(user.to_string()).or_default();
        *count += 1;
        *count
    }
}

impl Connection {
    /// A connection over a new session.
    pub fn new(
        session: Session,
        manager: Arc<ConnectionManager>,
        security: Arc<Security>,
        connections: Arc<Connections>,
        terminate: Arc<tokio::sync::Notify>,
    ) -> Self {
        let session = Arc::new(session);
        Self {
            parser: Arc::new(Parser {
                session: Arc::clone(&session),
            }),
            session,
            manager,
            copy: Arc::default(),
            security,
            login: Arc::default(),
            connections,
            terminate,
        }
    }

    fn handler(&self) -> Arc<Handler> {
        Arc::new(Handler {
            session: Arc::clone(&self.session),
            parser: Arc::clone(&self.parser),
            manager: Arc::clone(&self.manager),
            copy: Arc::clone(&self.copy),
            security: Arc::clone(&self.security),
            login: Arc::clone(&self.login),
            connections: Arc::clone(&self.connections),
            terminate: Arc::clone(&self.terminate),
        })
    }
}

impl PgWireServerHandlers for Connection {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.handler()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.handler()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.handler()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.handler()
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        Arc::new(DefaultCancelHandler::new(Arc::clone(&self.manager)))
    }
}

/// Implements every handler trait over the session.
pub struct Handler {
    session: Arc<Session>,
    parser: Arc<Parser>,
    manager: Arc<ConnectionManager>,
    copy: CopySlot,
    security: Arc<Security>,
    login: Arc<tokio::sync::Mutex<Login>>,
    connections: Arc<Connections>,
    terminate: Arc<tokio::sync::Notify>,
}

/// Parses and describes statements for the extended protocol.
pub struct Parser {
    session: Arc<Session>,
}

/// The startup parameters reported to the client, from the session's settings.
struct StartupParameters {
    session: Arc<Session>,
}

impl ServerParameterProvider for StartupParameters {
    fn server_parameters<C>(&self, _client: &C) -> Option<std::collections::HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let settings = self.session.settings();
        Some(
            lakegres_sql::settings::REPORTED
                .iter()
                .filter_map(|name| {
                    settings.get(name).ok().map(|v| {
                        (
                            lakegres_sql::settings::display_name(name).to_string(),
                            v.to_string(),
                        )
                    })
                })
                .collect(),
        )
    }
}

/// Where a connection's login stands.
#[derive(Debug, Default)]
enum Login {
    #[default]
    Start,
    AwaitPassword {
        user: String,
    },
    AwaitScramFirst {
        user: String,
    },
    AwaitScramFinal {
        user: String,
        exchange: Box<ScramExchange>,
    },
}

/// A refused login: FATAL, so the connection closes.
fn refuse(state: SqlState, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".into(),
        state.code().into(),
        message,
    )))
}

#[async_trait]
impl StartupHandler for Handler {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let peer = client.socket_addr();
        match message {
            PgWireFrontendMessage::Startup(startup) => {
                protocol_negotiation(client, &startup).await?;
                save_startup_parameters_to_metadata(client, &startup);
                // Whatever database the client names is the one warehouse.
                for (name, value) in &startup.parameters {
                    tracing::debug!(%name, %value, "startup parameter");
                    if !matches!(name.as_str(), "database" | "options" | "replication") {
                        self.session.set_startup_parameter(name, value);
                    }
                }
                let user = startup.parameters.get("user").cloned().unwrap_or_default();
                let span = tracing::Span::current();
                span.record("user", user.as_str());
                span.record("db", startup.parameters.get("database").map(String::as_str));
                let open = self.security.open_connections();
                if open > self.security.max_connections {
                    tracing::warn!(%user, %peer, open, "connection refused: max_connections reached");
                    return Err(refuse(
                        SqlState::TOO_MANY_CONNECTIONS,
                        format!(
                            "sorry, too many clients already (max_connections = {})",
                            self.security.max_connections
                        ),
                    ));
                }
                if self.security.tls_required && !client.is_secure() {
                    return Err(refuse(
                        SqlState::INVALID_AUTHORIZATION,
                        "this server accepts only TLS connections (sslmode=require)".into(),
                    ));
                }
                match self.security.auth.method {
                    Method::Trust if Auth::trust_allowed(&peer) => {
                        self.complete_login(client).await
                    }
                    Method::Trust => {
                        tracing::warn!(%user, %peer, "trust login refused: not a loopback address");
                        Err(refuse(
                            SqlState::INVALID_AUTHORIZATION,
                            format!("no trust login for user \"{user}\" from {}: trust is for loopback addresses only", peer.ip()),
                        ))
                    }
                    Method::Password => {
                        *self.login.lock().await = Login::AwaitPassword { user };
                        client.set_state(PgWireConnectionState::AuthenticationInProgress);
                        client
                            .send(PgWireBackendMessage::Authentication(
                                Authentication::CleartextPassword,
                            ))
                            .await?;
                        Ok(())
                    }
                    Method::ScramSha256 => {
                        *self.login.lock().await = Login::AwaitScramFirst { user };
                        client.set_state(PgWireConnectionState::AuthenticationInProgress);
                        client
                            .send(PgWireBackendMessage::Authentication(Authentication::SASL(
                                vec!["SCRAM-SHA-256".to_string()],
                            )))
                            .await?;
                        Ok(())
                    }
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                let login = std::mem::take(&mut *self.login.lock().await);
                match login {
                    Login::AwaitPassword { user } => {
                        let password = message.into_password()?;
                        let known = self.security.auth.users.get(&user);
                        if known.is_some_and(|v| v.matches(&password.password)) {
                            self.complete_login(client).await
                        } else {
                            Err(self.failed_login(&user, peer))
                        }
                    }
                    Login::AwaitScramFirst { user } => {
                        let first = message.into_sasl_initial_response()?;
                        if first.auth_method != "SCRAM-SHA-256" {
                            return Err(refuse(
                                SqlState::INVALID_AUTHORIZATION,
                                format!("unsupported SASL mechanism {}", first.auth_method),
                            ));
                        }
                        let verifier = self.security.auth.users.get(&user).cloned();
                        let data = first.data.unwrap_or_default();
                        let (exchange, server_first) = ScramExchange::start(&data, verifier)
                            .map_err(|e| scram_error(e, &user, peer))?;
                        *self.login.lock().await = Login::AwaitScramFinal {
                            user,
                            exchange: Box::new(exchange),
                        };
                        client
                            .send(PgWireBackendMessage::Authentication(
                                Authentication::SASLContinue(server_first.into_bytes().into()),
                            ))
                            .await?;
                        Ok(())
                    }
                    Login::AwaitScramFinal { user, exchange } => {
                        let last = message.into_sasl_response()?;
                        match exchange.finish(&last.data) {
                            Ok(server_final) => {
                                client
                                    .send(PgWireBackendMessage::Authentication(
                                        Authentication::SASLFinal(server_final.into_bytes().into()),
                                    ))
                                    .await?;
                                self.complete_login(client).await
                            }
                            Err(ScramError::Rejected) => Err(self.failed_login(&user, peer)),
                            Err(e) => Err(scram_error(e, &user, peer)),
                        }
                    }
                    Login::Start => Err(refuse(
                        SqlState::INVALID_AUTHORIZATION,
                        "unexpected password message".into(),
                    )),
                }
            }
            _ => Ok(()),
        }
    }
}

/// A SCRAM message that breaks the protocol.
fn scram_error(e: ScramError, user: &str, peer: std::net::SocketAddr) -> PgWireError {
    tracing::warn!(%user, %peer, error = ?e, "login failed: invalid SCRAM exchange");
    refuse(
        SqlState::INVALID_AUTHORIZATION,
        format!("invalid SCRAM exchange: {e:?}"),
    )
}

impl Handler {
    /// After the credentials are checked (or trusted): the backend key for
    /// cancel requests, then AuthenticationOk, parameters, ReadyForQuery.
    async fn complete_login<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // The backend pid is the session's, as pg_stat_activity shows it, so
        // pg_cancel_backend / pg_terminate_backend take what clients see.
        let (_, secret_key) = RandomPidSecretKeyGenerator::default().generate(client);
        let pid = self.session.pid();
        client.set_pid_and_secret_key(pid, secret_key.clone());
        self.connections
            .opened(pid, secret_key.clone(), Arc::clone(&self.terminate));
        let (handle, guard) = self.manager.register(pid, secret_key);
        client
            .session_extensions()
            .insert::<Arc<ConnectionHandle>>(handle);
        client.session_extensions().insert(guard);
        finish_authentication(
            client,
            &StartupParameters {
                session: Arc::clone(&self.session),
            },
        )
        .await
    }

    /// A wrong password or unknown user: the same answer for both (28P01),
    /// and a log line per failure.
    fn failed_login(&self, user: &str, peer: std::net::SocketAddr) -> PgWireError {
        let failures = self.security.note_failure(user);
        tracing::warn!(%user, %peer, failures, "login failed: wrong password or unknown user");
        refuse(
            SqlState::INVALID_PASSWORD,
            format!("password authentication failed for user \"{user}\""),
        )
    }
}

fn transaction_status(session: &Session) -> TransactionStatus {
    match session.transaction() {
        Transaction::Idle => TransactionStatus::Idle,
        Transaction::InBlock => TransactionStatus::Transaction,
        Transaction::Failed => TransactionStatus::Error,
    }
}

fn complete_tag(tag: &CommandTag, rows: usize) -> Tag {
    match tag {
        CommandTag::Counted(word) => Tag::new(word).with_rows(rows),
        CommandTag::Fixed(text) => Tag::new(text),
    }
}

/// How a statement ended, for the caller's transaction bookkeeping.
enum Ended {
    Ok,
    /// The statement failed; its ErrorResponse was sent.
    Failed,
    /// A COPY FROM STDIN started: the client sends its data next.
    CopyIn,
}

impl Handler {
    /// Runs a statement, catching a panic as an internal error.
    async fn run(
        &self,
        statement: &Statement,
        params: Option<ParamValues>,
    ) -> Result<Output, lakegres_sql::Error> {
        match AssertUnwindSafe(self.session.execute(statement, params))
            .catch_unwind()
            .await
        {
            Ok(result) => result,
            Err(_) => Err(lakegres_sql::Error::Internal {
                message: "the statement panicked".into(),
            }),
        }
    }

    async fn cancel_receiver<C: ClientInfo>(&self, client: &C) -> Option<oneshot::Receiver<()>> {
        let handle = client.session_extensions().get::<Arc<ConnectionHandle>>()?;
        Some(handle.start_query().await)
    }

    /// Sends rows of a response: all of them (`max_rows` 0) or up to
    /// `max_rows`. Returns the number sent and whether rows remain; a row
    /// error is sent as the statement's ErrorResponse.
    async fn send_rows<C>(
        &self,
        client: &mut C,
        response: &mut QueryResponse,
        max_rows: usize,
    ) -> PgWireResult<(usize, bool, Ended)>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut sent = 0;
        while max_rows == 0 || sent < max_rows {
            match response.data_rows().next().await {
                Some(Ok(row)) => {
                    client.feed(PgWireBackendMessage::DataRow(row)).await?;
                    sent += 1;
                }
                Some(Err(PgWireError::UserError(e))) => {
                    self.session.note_error();
                    client
                        .feed(PgWireBackendMessage::ErrorResponse((*e).into()))
                        .await?;
                    return Ok((sent, false, Ended::Failed));
                }
                Some(Err(e)) => {
                    let e = lakegres_sql::Error::Internal {
                        message: format!("encoding a row: {e}"),
                    };
                    self.session.note_error();
                    client
                        .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                        .await?;
                    return Ok((sent, false, Ended::Failed));
                }
                None => return Ok((sent, false, Ended::Ok)),
            }
        }
        Ok((sent, true, Ended::Ok))
    }

    /// One statement of a simple query: RowDescription, rows, CommandComplete.
    async fn simple_statement<C>(
        &self,
        client: &mut C,
        statement: &Statement,
    ) -> PgWireResult<Ended>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let output = self.run(statement, None).await;
        self.send_notices(client).await?;
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                client
                    .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                    .await?;
                return Ok(Ended::Failed);
            }
        };
        match output {
            Output::Rows { stream, tag } => {
                let mut response = encode::query_response(stream, &Format::UnifiedText, "")
                    .map_err(|e| encode_error(&e))?;
                let description =
                    RowDescription::new(response.row_schema().iter().map(Into::into).collect());
                client
                    .feed(PgWireBackendMessage::RowDescription(description))
                    .await?;
                let (sent, _, ended) = self.send_rows(client, &mut response, 0).await?;
                if let Ended::Ok = ended {
                    client
                        .feed(PgWireBackendMessage::CommandComplete(
                            complete_tag(&tag, sent).into(),
                        ))
                        .await?;
                }
                Ok(ended)
            }
            Output::Done(tag) | Output::TransactionStart(tag) | Output::TransactionEnd(tag) => {
                client
                    .feed(PgWireBackendMessage::CommandComplete(
                        complete_tag(&tag, 0).into(),
                    ))
                    .await?;
                Ok(Ended::Ok)
            }
            Output::CopyIn(copy_in) => {
                self.start_copy_in(client, copy_in, false).await?;
                Ok(Ended::CopyIn)
            }
            Output::CopyOut { stream, options } => self.copy_out(client, stream, &options).await,
        }
    }

    /// Sends the session's warnings (NoticeResponse, severity WARNING).
    async fn send_notices<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        for message in self.session.take_notices() {
            let notice = pgwire::error::ErrorInfo::new("WARNING".into(), "01000".into(), message);
            client
                .feed(PgWireBackendMessage::NoticeResponse(notice.into()))
                .await?;
        }
        Ok(())
    }

    /// Sends CopyInResponse and keeps the COPY for the copy handler.
    async fn start_copy_in<C>(
        &self,
        client: &mut C,
        copy_in: Box<CopyIn>,
        extended: bool,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let columns = copy_in.column_count();
        let binary = copy_in.is_binary();
        *self.copy.lock().await = Some(copy_in);
        client
            .send(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
                i8::from(binary),
                i16::try_from(columns).unwrap_or(i16::MAX),
                vec![i16::from(binary); columns],
            )))
            .await?;
        client.set_state(PgWireConnectionState::CopyInProgress(extended));
        Ok(())
    }

    async fn copy_out<C>(
        &self,
        client: &mut C,
        stream: datafusion::execution::SendableRecordBatchStream,
        options: &lakegres_sql::CopyOptions,
    ) -> PgWireResult<Ended>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match copy::copy_out(client, stream, options).await? {
            copy::CopyOutEnd::Done => Ok(Ended::Ok),
            copy::CopyOutEnd::Failed(PgWireError::UserError(e)) => {
                self.session.note_error();
                client
                    .feed(PgWireBackendMessage::ErrorResponse((*e).into()))
                    .await?;
                Ok(Ended::Failed)
            }
            copy::CopyOutEnd::Failed(e) => Err(e),
        }
    }

    async fn simple_query<C>(&self, client: &mut C, sql: &str) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statements = match lakegres_sql::parse_sql(sql) {
            Ok(s) => s,
            Err(e) => {
                self.session.note_error();
                client
                    .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                    .await?;
                return Ok(());
            }
        };
        if statements.is_empty() {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
        }
        for statement in &statements {
            match self.simple_statement(client, statement).await? {
                Ended::Ok => {}
                Ended::Failed | Ended::CopyIn => break,
            }
        }
        Ok(())
    }
}

/// A pgwire error while encoding, as a statement error.
fn encode_error(e: &PgWireError) -> PgWireError {
    PgWireError::UserError(Box::new(info(
        SqlState::INTERNAL_ERROR,
        format!("encoding the result: {e}"),
        None,
    )))
}

#[async_trait]
impl SimpleQueryHandler for Handler {
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        self.session.set_busy();
        let cancel = self.cancel_receiver(client).await;
        let result = match cancel {
            Some(cancel) => {
                let run = self.simple_query(client, &query.query);
                match select(Box::pin(run), cancel).await {
                    Either::Left((result, _)) => result,
                    Either::Right(_) => Err(canceled()),
                }
            }
            None => self.simple_query(client, &query.query).await,
        };
        if let Err(PgWireError::UserError(e)) = result {
            self.session.note_error();
            client
                .feed(PgWireBackendMessage::ErrorResponse((*e).into()))
                .await?;
        } else {
            result?;
        }
        let status = transaction_status(&self.session);
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            // ReadyForQuery comes after the client's CopyDone.
            client.set_transaction_status(status);
            return Ok(());
        }
        self.session.set_idle();
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                status,
            )))
            .await?;
        Ok(())
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // `on_query` above runs queries itself and never calls this.
        Err(PgWireError::NotReadyForQuery)
    }
}

fn canceled() -> PgWireError {
    PgWireError::UserError(Box::new(info(
        SqlState::QUERY_CANCELED,
        "canceling statement due to user request".into(),
        None,
    )))
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Arc<Prepared>;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut statements = lakegres_sql::parse_sql(sql).map_err(|e| user_error(&e))?;
        if statements.len() > 1 {
            return Err(PgWireError::UserError(Box::new(info(
                SqlState::SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement".into(),
                None,
            ))));
        }
        let Some(statement) = statements.pop() else {
            return Ok(None);
        };
        let description = self
            .session
            .describe(&statement)
            .await
            .map_err(|e| user_error(&e))?;
        Ok(Some(Arc::new(Prepared {
            statement,
            description,
        })))
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        Ok(stmt
            .description
            .params
            .iter()
            .map(|t| t.as_ref().map(encode::pg_type).unwrap_or(Type::UNKNOWN))
            .collect())
    }

    fn get_result_schema(
        &self,
        stmt: &Self::Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        match &stmt.description.schema {
            Some(schema) => encode::fields(schema, column_format.unwrap_or(&Format::UnifiedText)),
            None => Ok(vec![]),
        }
    }
}

#[async_trait]
impl ExtendedQueryHandler for Handler {
    type Statement = Arc<Prepared>;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        Arc::clone(&self.parser)
    }

    /// A Describe of a portal that is a SQL cursor (`DECLARE c CURSOR FOR
    /// …`: psycopg's named cursors describe it before fetching) answers
    /// with the cursor's columns; every other Describe is pgwire's.
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let is_portal = message.target_type == b'P';
        if is_portal && client.portal_store().get_portal(name).is_none() {
            if let Some(schema) = self.session.cursor_schema(name).await {
                let fields = encode::fields(&schema, &Format::UnifiedText)?;
                client
                    .send(PgWireBackendMessage::RowDescription(RowDescription::new(
                        fields.iter().map(Into::into).collect(),
                    )))
                    .await?;
                return Ok(());
            }
        }
        if message.target_type == b'S' {
            // pgwire answers a statement with parameters and no result
            // columns with an empty RowDescription; Postgres sends NoData,
            // and pgjdbc counts a batch's updates only then.
            if let Some(Entry::Value(stmt)) = client.portal_store().get_statement(name) {
                let described = self.do_describe_statement(client, &stmt).await?;
                client
                    .send(PgWireBackendMessage::ParameterDescription(
                        ParameterDescription::new(
                            described.parameters.iter().map(|t| t.oid()).collect(),
                        ),
                    ))
                    .await?;
                let message = if described.fields.is_empty() {
                    PgWireBackendMessage::NoData(NoData::new())
                } else {
                    PgWireBackendMessage::RowDescription(RowDescription::new(
                        described.fields.iter().map(Into::into).collect(),
                    ))
                };
                client.send(message).await?;
                return Ok(());
            }
        }
        self._on_describe(client, message).await
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        self.session.set_busy();
        let portal_name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(portal_name) {
            Some(Entry::Value(portal)) => portal,
            Some(Entry::Empty) => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
                client.set_state(PgWireConnectionState::ReadyForQuery);
                return Ok(());
            }
            None => {
                client.set_state(PgWireConnectionState::ReadyForQuery);
                return Err(PgWireError::PortalNotFound(portal_name.to_owned()));
            }
        };
        let cancel = self.cancel_receiver(client).await;
        let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
        let result = match cancel {
            Some(cancel) => {
                let run = self.execute_portal(client, &portal, max_rows);
                match select(Box::pin(run), cancel).await {
                    Either::Left((result, _)) => result,
                    Either::Right(_) => Err(canceled()),
                }
            }
            None => self.execute_portal(client, &portal, max_rows).await,
        };
        if result.is_err() {
            self.session.note_error();
        }
        if !matches!(result, Ok(Ended::CopyIn)) {
            self.session.set_idle();
        }
        client.set_transaction_status(transaction_status(&self.session));
        match result {
            Ok(Ended::Ok) => {
                client.set_state(PgWireConnectionState::ReadyForQuery);
                Ok(())
            }
            // The ErrorResponse went out while rows streamed; like any
            // error, skip to the next Sync.
            Ok(Ended::Failed) => {
                client.set_state(PgWireConnectionState::AwaitingSync);
                Ok(())
            }
            Ok(Ended::CopyIn) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn do_query<C>(
        &self,
        _client: &mut C,
        _portal: &Portal<Self::Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // `on_execute` above runs portals itself and never calls this.
        Err(PgWireError::NotReadyForQuery)
    }
}

/// A portal's statement tag, kept with its suspended rows.
const SUSPENDED_TAG_SEPARATOR: char = '\u{1}';

impl Handler {
    /// Runs (or resumes) a portal, sending its rows up to `max_rows`.
    async fn execute_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<Arc<Prepared>>,
        max_rows: usize,
    ) -> PgWireResult<Ended>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Arc<Prepared>>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let state = portal.state();
        let previous = std::mem::take(&mut *state.lock().await);
        let (mut response, tag) = match previous {
            PortalExecutionState::Suspended(response) => {
                let tag = decode_tag(response.command_tag());
                (response, tag)
            }
            PortalExecutionState::Finished => {
                *state.lock().await = PortalExecutionState::Finished;
                client
                    .feed(PgWireBackendMessage::CommandComplete(
                        Tag::new("SELECT").with_rows(0).into(),
                    ))
                    .await?;
                return Ok(Ended::Ok);
            }
            PortalExecutionState::Initial => {
                let prepared = &portal.statement.statement;
                let params = if portal.parameter_len() > 0 {
                    let inferred: Vec<Option<&datafusion::arrow::datatypes::DataType>> = prepared
                        .description
                        .params
                        .iter()
                        .map(Option::as_ref)
                        .collect();
                    Some(arrow_pg::datatypes::df::deserialize_parameters(
                        portal, &inferred,
                    )?)
                } else {
                    None
                };
                let output = self.run(&prepared.statement, params).await;
                self.send_notices(client).await?;
                let output = output.map_err(|e| user_error(&e))?;
                match output {
                    Output::Rows { stream, tag } => {
                        let encoded_tag = encode_tag(&tag);
                        let response = encode::query_response(
                            stream,
                            &portal.result_column_format,
                            &encoded_tag,
                        )
                        .map_err(|e| encode_error(&e))?;
                        (response, tag)
                    }
                    Output::Done(tag)
                    | Output::TransactionStart(tag)
                    | Output::TransactionEnd(tag) => {
                        *state.lock().await = PortalExecutionState::Finished;
                        client
                            .feed(PgWireBackendMessage::CommandComplete(
                                complete_tag(&tag, 0).into(),
                            ))
                            .await?;
                        return Ok(Ended::Ok);
                    }
                    Output::CopyIn(copy_in) => {
                        *state.lock().await = PortalExecutionState::Finished;
                        self.start_copy_in(client, copy_in, true).await?;
                        return Ok(Ended::CopyIn);
                    }
                    Output::CopyOut { stream, options } => {
                        *state.lock().await = PortalExecutionState::Finished;
                        return self.copy_out(client, stream, &options).await;
                    }
                }
            }
        };
        let (sent, more, ended) = self.send_rows(client, &mut response, max_rows).await?;
        match ended {
            Ended::Failed | Ended::CopyIn => {
                *state.lock().await = PortalExecutionState::Finished;
                return Ok(Ended::Failed);
            }
            Ended::Ok if more => {
                *state.lock().await = PortalExecutionState::Suspended(response);
                client
                    .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                    .await?;
            }
            Ended::Ok => {
                *state.lock().await = PortalExecutionState::Finished;
                client
                    .feed(PgWireBackendMessage::CommandComplete(
                        complete_tag(&tag, sent).into(),
                    ))
                    .await?;
            }
        }
        Ok(Ended::Ok)
    }
}

#[async_trait]
impl CopyHandler for Handler {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(copy_in) = self.copy.lock().await.as_mut() {
            copy_in.data(&copy_data.data).await;
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(copy_in) = self.copy.lock().await.take() else {
            return Err(PgWireError::UserError(Box::new(info(
                SqlState::PROTOCOL_VIOLATION,
                "CopyDone without a COPY in progress".into(),
                None,
            ))));
        };
        let table = copy_in.table().clone();
        self.session.set_busy();
        let finished = copy_in.finish().await;
        self.session.set_idle();
        match finished {
            Ok(rows) => {
                self.session.record_write("COPY", Some(&table)).await;
                client
                    .send(PgWireBackendMessage::CommandComplete(
                        Tag::new("COPY")
                            .with_rows(usize::try_from(rows).unwrap_or(usize::MAX))
                            .into(),
                    ))
                    .await?;
                client.set_transaction_status(transaction_status(&self.session));
                Ok(())
            }
            Err(e) => {
                self.session.note_error();
                client.set_transaction_status(transaction_status(&self.session));
                Err(user_error(&e))
            }
        }
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(copy_in) = self.copy.lock().await.take() {
            copy_in.abort();
        }
        self.session.note_error();
        client.set_transaction_status(transaction_status(&self.session));
        PgWireError::UserError(Box::new(info(
            SqlState::QUERY_CANCELED,
            format!("COPY from stdin failed: {}", fail.message),
            None,
        )))
    }
}

/// A suspended portal keeps only pgwire's `QueryResponse`, whose tag is a
/// string; the kind of tag travels in it.
fn encode_tag(tag: &CommandTag) -> String {
    match tag {
        CommandTag::Counted(word) => format!("C{SUSPENDED_TAG_SEPARATOR}{word}"),
        CommandTag::Fixed(text) => format!("F{SUSPENDED_TAG_SEPARATOR}{text}"),
    }
}

fn decode_tag(encoded: &str) -> CommandTag {
    match encoded.split_once(SUSPENDED_TAG_SEPARATOR) {
        Some(("F", text)) => CommandTag::Fixed(text.to_string()),
        Some((_, word)) => CommandTag::counted(word),
        None => CommandTag::Fixed(encoded.to_string()),
    }
}
