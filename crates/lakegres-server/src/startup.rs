//! The login of one connection: the startup message, the connection limits,
//! the password or SCRAM-SHA-256 exchange ([`Login`] is where it stands),
//! then the backend key, the server parameters and the first ReadyForQuery.
//!
//! pgwire 0.41 keeps login state inside the handler, so each connection has
//! its own. A refused login is FATAL: the connection closes.

use std::collections::HashMap;
use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use lakegres_common::SqlState;
use lakegres_sql::Session;
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::{
    ClientInfo, ConnectionHandle, ConnectionManager, PgWireConnectionState, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tokio::sync::{Mutex, Notify};

use crate::auth::{Auth, Method, ScramError, ScramExchange};
use crate::registry::{Connections, Security};
use crate::sqlstate::fatal;

/// The startup handler of one connection.
pub struct Startup {
    session: Arc<Session>,
    manager: Arc<ConnectionManager>,
    security: Arc<Security>,
    connections: Arc<Connections>,
    /// Notified by `pg_terminate_backend`; registered with the pid at login.
    terminate: Arc<Notify>,
    login: Mutex<Login>,
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

impl Startup {
    pub(crate) fn new(
        session: Arc<Session>,
        manager: Arc<ConnectionManager>,
        security: Arc<Security>,
        connections: Arc<Connections>,
        terminate: Arc<Notify>,
    ) -> Self {
        Self {
            session,
            manager,
            security,
            connections,
            terminate,
            login: Mutex::default(),
        }
    }
}

/// The startup parameters reported to the client, from the session's settings.
struct StartupParameters {
    session: Arc<Session>,
}

impl ServerParameterProvider for StartupParameters {
    fn server_parameters<C>(&self, _client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let settings = self.session.settings();
        Some(
            lakegres_sql::settings::REPORTED
                .iter()
                .filter_map(|name| {
                    settings
                        .get(name)
                        .ok()
                        .map(|v| (lakegres_sql::settings::display_name(name).to_string(), v))
                })
                .collect(),
        )
    }
}

/// A refused login: FATAL, so the connection closes.
fn refuse(state: SqlState, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(fatal(state, message)))
}

#[async_trait]
impl StartupHandler for Startup {
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
                    if name != "replication" {
                        self.session.set_startup_parameter(name, value);
                    }
                }
                let user = startup.parameters.get("user").cloned().unwrap_or_default();
                let span = tracing::Span::current();
                span.record("user", user.as_str());
                span.record("db", startup.parameters.get("database").map(String::as_str));
                if let Some(open) = self.security.too_many_connections() {
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
fn scram_error(e: ScramError, user: &str, peer: SocketAddr) -> PgWireError {
    tracing::warn!(%user, %peer, error = ?e, "login failed: invalid SCRAM exchange");
    refuse(
        SqlState::INVALID_AUTHORIZATION,
        format!("invalid SCRAM exchange: {e:?}"),
    )
}

impl Startup {
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
    fn failed_login(&self, user: &str, peer: SocketAddr) -> PgWireError {
        let failures = self.security.note_failure(user);
        tracing::warn!(%user, %peer, failures, "login failed: wrong password or unknown user");
        refuse(
            SqlState::INVALID_PASSWORD,
            format!("password authentication failed for user \"{user}\""),
        )
    }
}
