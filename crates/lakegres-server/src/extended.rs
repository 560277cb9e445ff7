//! The extended query protocol: Parse and Describe through [`Parser`]
//! ([`Prepared`] is what a Parse keeps), Execute of a portal with rows
//! streamed up to the row limit (PortalSuspended, then the rest on the next
//! Execute), and, after an error, skip to the next Sync.

use std::fmt::Debug;
use std::pin::pin;
use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use lakegres_common::SqlState;
use lakegres_sql::{CommandTag, Description, Output, Session, Statement};
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::{NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{Bind, BindComplete, Describe, Execute, PortalSuspended};
use pgwire::messages::response::EmptyQueryResponse;
use pgwire::messages::PgWireBackendMessage;
use tokio::sync::Mutex;

use crate::connection::Queries;
use crate::encode::{self, ResultColumns};
use crate::sqlstate::{info, user_error};
use crate::statement::{
    complete_tag, encode_error, execute, failed, report_status, send_rows, Ended, Reply, Streamed,
};

/// A parsed statement of the extended protocol, with what Describe reports.
#[derive(Debug)]
pub struct Prepared {
    statement: Statement,
    /// Its text for `pg_stat_activity`, rendered once.
    text: String,
    description: Description,
    /// Its result columns in text format, made at the first Describe or
    /// Execute that asks: a prepared statement is described and run again
    /// and again, and making them each time was a tenth of the server's
    /// work on a prepared `SELECT 1`'s Describe and Execute.
    text_columns: OnceLock<Option<ResultColumns>>,
}

impl Prepared {
    fn new(statement: Statement, description: Description) -> Self {
        Self {
            text: statement.text(),
            statement,
            description,
            text_columns: OnceLock::new(),
        }
    }

    /// Its result columns in text format; `None` when it returns no rows.
    fn text_columns(&self) -> PgWireResult<Option<&ResultColumns>> {
        if let Some(columns) = self.text_columns.get() {
            return Ok(columns.as_ref());
        }
        let columns = match &self.description.schema {
            Some(schema) => Some(ResultColumns::new(
                Arc::clone(schema),
                &Format::UnifiedText,
            )?),
            None => None,
        };
        Ok(self.text_columns.get_or_init(|| columns).as_ref())
    }
}

/// Parses and describes statements for the extended protocol.
pub struct Parser {
    session: Arc<Session>,
}

impl Parser {
    pub(crate) fn new(session: Arc<Session>) -> Self {
        Self { session }
    }
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Arc<Prepared>;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut statements = lakegres_sql::parse_client(sql, self.session.string_literals())
            .map_err(|e| user_error(&e))?;
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
        self.session.declare_parameters(
            types
                .iter()
                .map(|t| encode::declared_number(t.as_ref()))
                .collect(),
        );
        let described = self.session.describe(&statement).await;
        self.session.declare_parameters(Vec::new());
        let description = described.map_err(|e| user_error(&e))?;
        Ok(Some(Arc::new(Prepared::new(statement, description))))
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
        match column_format.unwrap_or(&Format::UnifiedText) {
            Format::UnifiedText => Ok(stmt
                .text_columns()?
                .map_or_else(Vec::new, |c| c.fields().to_vec())),
            format => match &stmt.description.schema {
                Some(schema) => encode::fields(schema, format),
                None => Ok(vec![]),
            },
        }
    }
}

#[async_trait]
impl ExtendedQueryHandler for Queries {
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
        // Every answer waits in the buffer for the Sync (or Flush), as
        // Postgres' does: a prepared statement's Bind, Describe, Execute,
        // Sync is answered in one write, not a write for the Describe and
        // one for the rest (a third of a point lookup's server CPU was
        // sending).
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let is_portal = message.target_type == b'P';
        if is_portal {
            let message = match client.portal_store().get_portal(name) {
                Some(Entry::Value(portal)) => result_description(&self.parser.get_result_schema(
                    &portal.statement.statement,
                    Some(&portal.result_column_format),
                )?),
                Some(Entry::Empty) => PgWireBackendMessage::NoData(NoData::new()),
                None => match self.session.cursor_schema(name).await {
                    Some(schema) => {
                        let fields = encode::fields(&schema, &Format::UnifiedText)?;
                        PgWireBackendMessage::RowDescription(RowDescription::new(
                            fields.iter().map(Into::into).collect(),
                        ))
                    }
                    None => return Err(PgWireError::PortalNotFound(name.to_owned())),
                },
            };
            client.feed(message).await?;
            return Ok(());
        }
        if message.target_type == b'S' {
            // pgwire answers a statement with parameters and no result
            // columns with an empty RowDescription; Postgres sends NoData,
            // and pgjdbc counts a batch's updates only then.
            if let Some(Entry::Value(stmt)) = client.portal_store().get_statement(name) {
                let described = self
                    .do_describe_statement(client, &undeclare_unknown(stmt))
                    .await?;
                client
                    .feed(PgWireBackendMessage::ParameterDescription(
                        ParameterDescription::new(
                            described.parameters.iter().map(|t| t.oid()).collect(),
                        ),
                    ))
                    .await?;
                client.feed(result_description(&described.fields)).await?;
                return Ok(());
            }
        }
        self._on_describe(client, message).await
    }

    /// pgwire's Bind, but its BindComplete waits in the buffer for the
    /// Execute's rows and the Sync (or Flush) instead of going out in a
    /// send of its own: a prepared statement's round trip is one write.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(statement)) => {
                let portal = Portal::try_new(&message, undeclare_unknown(statement))?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) => {
                if !message.parameters.is_empty() {
                    return Err(PgWireError::UserError(Box::new(info(
                        SqlState::PROTOCOL_VIOLATION,
                        format!(
                            "bind message supplies {} parameters, but prepared statement {:?} requires 0",
                            message.parameters.len(),
                            statement_name
                        ),
                        None,
                    ))));
                }
                client.portal_store().put_empty_portal(portal_name);
            }
            None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
        }
        client
            .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
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
        let busy = self.session.busy();
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
        let cancel = self.cancel.receiver(client).await;
        let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
        let result = self
            .cancel
            .run(cancel, pin!(self.execute_portal(client, &portal, max_rows)))
            .await;
        let ended = match result {
            Ok(ended) => ended,
            // pgwire sends the error and skips to the next Sync.
            Err(e) => return Err(failed(client, &self.session, e)),
        };
        report_status(client, &self.session);
        match ended {
            Ended::Ok => client.set_state(PgWireConnectionState::ReadyForQuery),
            // The ErrorResponse went out while rows streamed; like any
            // error, skip to the next Sync.
            Ended::Failed => client.set_state(PgWireConnectionState::AwaitingSync),
            // The client sends the COPY's data next.
            Ended::CopyIn => busy.keep(),
        }
        Ok(())
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

/// A Describe's answer for result columns `fields`: NoData when there are
/// none, as Postgres answers.
fn result_description(fields: &[FieldInfo]) -> PgWireBackendMessage {
    if fields.is_empty() {
        PgWireBackendMessage::NoData(NoData::new())
    } else {
        PgWireBackendMessage::RowDescription(RowDescription::new(
            fields.iter().map(Into::into).collect(),
        ))
    }
}

impl Queries {
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
        let previous = replace_state(&state, PortalExecutionState::Initial).await;
        let (mut response, tag) = match previous {
            PortalExecutionState::Suspended(response) => {
                let tag = self.suspended.take(&state).await;
                (response, tag)
            }
            PortalExecutionState::Finished => {
                replace_state(&state, PortalExecutionState::Finished).await;
                client
                    .feed(PgWireBackendMessage::CommandComplete(complete_tag(
                        &CommandTag::Counted("SELECT"),
                        0,
                    )))
                    .await?;
                return Ok(Ended::Ok);
            }
            PortalExecutionState::Initial => {
                let prepared = &portal.statement.statement;
                let params = if portal.parameter_len() > 0 {
                    Some(encode::parameters(portal, &prepared.description.params)?)
                } else {
                    None
                };
                let text = Some(prepared.text.as_str());
                if let Some(values) = &params {
                    self.session
                        .declare_parameters(encode::declared_types(portal, values));
                }
                let output =
                    execute(client, &self.session, &prepared.statement, text, params).await;
                self.session.declare_parameters(Vec::new());
                let output = output?.map_err(|e| user_error(&e))?;
                if !matches!(output, Output::Rows { .. }) {
                    replace_state(&state, PortalExecutionState::Finished).await;
                }
                let (stream, tag) = match self.reply(client, output, true).await? {
                    Reply::Rows { stream, tag } => (stream, tag),
                    Reply::Sent(ended) => return Ok(ended),
                };
                // The described columns, when the result has them; any
                // other result makes its own (and reports its own error).
                let kept = match portal.result_column_format {
                    Format::UnifiedText => prepared.text_columns().ok().flatten(),
                    _ => None,
                };
                let zone = encode::zone_for(&stream.schema(), || self.session.time_zone());
                let response = match kept {
                    Some(columns) if columns.fits(&stream.schema()) => {
                        encode::query_response_as(stream, columns, zone)
                    }
                    _ => encode::query_response(stream, &portal.result_column_format, zone)
                        .map_err(|e| encode_error(&e))?,
                };
                (response, tag)
            }
        };
        match send_rows(client, &self.session, &mut response, max_rows).await? {
            Streamed::Failed => {
                replace_state(&state, PortalExecutionState::Finished).await;
                return Ok(Ended::Failed);
            }
            Streamed::Suspended => {
                self.suspended.keep(&state, tag).await;
                replace_state(&state, PortalExecutionState::Suspended(response)).await;
                client
                    .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                    .await?;
            }
            Streamed::Finished(sent) => {
                replace_state(&state, PortalExecutionState::Finished).await;
                client
                    .feed(PgWireBackendMessage::CommandComplete(complete_tag(
                        &tag, sent,
                    )))
                    .await?;
            }
        }
        Ok(Ended::Ok)
    }
}

/// A portal's execution state, as pgwire keeps it.
type PortalState = Arc<Mutex<PortalExecutionState>>;

/// Sets a portal's execution state; the state it had. Only the
/// connection's own task touches it, so the lock is free: taken without
/// an `Acquire` future, which cost a prepared `SELECT 1` 2% of its time.
async fn replace_state(state: &PortalState, value: PortalExecutionState) -> PortalExecutionState {
    match state.try_lock() {
        Ok(mut held) => std::mem::replace(&mut *held, value),
        Err(_) => std::mem::replace(&mut *state.lock().await, value),
    }
}

/// The command tags of a connection's suspended portals.
///
/// pgwire keeps a suspended portal's rows as a `QueryResponse`, whose only
/// tag is a string (and a `Tag` is only a word with counts), so the
/// statement's [`CommandTag`] is kept here beside it until the last rows go
/// out. It is found by the portal's execution state: a Bind makes a new one,
/// so a portal bound again under the same name never finds the old tag.
#[derive(Default)]
pub(crate) struct SuspendedTags(Mutex<Vec<(Weak<Mutex<PortalExecutionState>>, CommandTag)>>);

impl SuspendedTags {
    /// Keeps the tag of a portal whose rows are suspended; forgets those of
    /// portals that are gone.
    async fn keep(&self, portal: &PortalState, tag: CommandTag) {
        let mut tags = self.0.lock().await;
        tags.retain(|(state, _)| state.strong_count() > 0 && !is(state, portal));
        tags.push((Arc::downgrade(portal), tag));
    }

    /// The tag of a suspended portal that resumes.
    async fn take(&self, portal: &PortalState) -> CommandTag {
        let mut tags = self.0.lock().await;
        match tags.iter().position(|(state, _)| is(state, portal)) {
            Some(at) => tags.swap_remove(at).1,
            // Every suspended portal's tag is kept above.
            None => CommandTag::Counted("SELECT"),
        }
    }
}

fn is(kept: &Weak<Mutex<PortalExecutionState>>, portal: &PortalState) -> bool {
    std::ptr::eq(kept.as_ptr(), Arc::as_ptr(portal))
}

/// The statement with each parameter the client declared `unknown` (oid
/// 705) left undeclared, as Postgres reads both: the statement's own type
/// for it decides (pgwire kept `unknown`, and arrow-pg then read a value
/// sent in the described type as text).
fn undeclare_unknown<S: Clone>(
    statement: Arc<pgwire::api::stmt::StoredStatement<S>>,
) -> Arc<pgwire::api::stmt::StoredStatement<S>> {
    if !statement
        .parameter_types
        .iter()
        .any(|t| t.as_ref() == Some(&Type::UNKNOWN))
    {
        return statement;
    }
    Arc::new(pgwire::api::stmt::StoredStatement::new(
        statement.id.clone(),
        statement.statement.clone(),
        statement
            .parameter_types
            .iter()
            .map(|t| t.clone().filter(|t| *t != Type::UNKNOWN))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_suspended_portal_gets_its_own_tag_back() {
        let tags = SuspendedTags::default();
        let insert = PortalState::default();
        let show = PortalState::default();
        tags.keep(&insert, CommandTag::Fixed("INSERT 0 3".into()))
            .await;
        tags.keep(&show, CommandTag::Counted("SHOW")).await;
        assert_eq!(
            tags.take(&insert).await,
            CommandTag::Fixed("INSERT 0 3".into())
        );
        assert_eq!(tags.take(&show).await, CommandTag::Counted("SHOW"));
        assert!(tags.0.lock().await.is_empty());
    }

    #[tokio::test]
    async fn a_portal_suspended_again_keeps_one_tag() {
        let tags = SuspendedTags::default();
        let portal = PortalState::default();
        tags.keep(&portal, CommandTag::Fixed("MERGE 2".into()))
            .await;
        tags.keep(&portal, CommandTag::Fixed("MERGE 2".into()))
            .await;
        assert_eq!(tags.0.lock().await.len(), 1);
    }

    #[tokio::test]
    async fn a_portal_bound_again_does_not_find_the_old_tag() {
        let tags = SuspendedTags::default();
        let old = PortalState::default();
        tags.keep(&old, CommandTag::Fixed("INSERT 0 3".into()))
            .await;
        // A Bind under the same name drops the old portal and makes a new
        // state; the kept tag must not answer for it.
        drop(old);
        let new = PortalState::default();
        assert_eq!(tags.take(&new).await, CommandTag::Counted("SELECT"));
        tags.keep(&new, CommandTag::Counted("SHOW")).await;
        assert_eq!(
            tags.0.lock().await.len(),
            1,
            "the gone portal's tag is forgotten"
        );
        assert_eq!(tags.take(&new).await, CommandTag::Counted("SHOW"));
    }
}
