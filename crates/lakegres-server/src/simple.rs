//! The simple query protocol: a Query message's statements run one after
//! another, each answered with RowDescription, rows and CommandComplete,
//! until the first error; then one ReadyForQuery (after CopyDone, when a
//! statement starts a COPY FROM STDIN).

use std::fmt::Debug;
use std::pin::pin;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use lakegres_sql::Parsed;
use pgwire::api::portal::Format;
use pgwire::api::query::SimpleQueryHandler;
use pgwire::api::results::Response;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::RowDescription;
use pgwire::messages::response::{EmptyQueryResponse, ReadyForQuery};
use pgwire::messages::simplequery::Query;
use pgwire::messages::PgWireBackendMessage;

use crate::connection::Queries;
use crate::encode;
use crate::sqlstate::error_info;
use crate::statement::{
    complete_tag, encode_error, execute, fail, report_status, send_rows, Ended, Reply, Streamed,
};

impl Queries {
    /// One statement of a simple query: RowDescription, rows, CommandComplete.
    async fn simple_statement<C>(&self, client: &mut C, parsed: &Parsed) -> PgWireResult<Ended>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let text = Some(parsed.text());
        let output = match execute(client, &self.session, &parsed.statement, text, None).await? {
            Ok(output) => output,
            Err(e) => return fail(client, &self.session, error_info(&e)).await,
        };
        let (stream, tag) = match self.reply(client, output, false).await? {
            Reply::Rows { stream, tag } => (stream, tag),
            Reply::Sent(ended) => return Ok(ended),
        };
        let zone = encode::zone_for(&stream.schema(), || self.session.time_zone());
        let mut response = encode::query_response(stream, &Format::UnifiedText, zone)
            .map_err(|e| encode_error(&e))?;
        let description =
            RowDescription::new(response.row_schema().iter().map(Into::into).collect());
        client
            .feed(PgWireBackendMessage::RowDescription(description))
            .await?;
        match send_rows(client, &self.session, &mut response, 0).await? {
            Streamed::Finished(sent) => {
                client
                    .feed(PgWireBackendMessage::CommandComplete(complete_tag(
                        &tag, sent,
                    )))
                    .await?;
                Ok(Ended::Ok)
            }
            // Without a row limit, every row goes out.
            Streamed::Suspended => Ok(Ended::Ok),
            Streamed::Failed => Ok(Ended::Failed),
        }
    }

    /// The statements of one Query message, until the first that fails or
    /// starts a COPY FROM STDIN.
    async fn simple_query<C>(&self, client: &mut C, sql: &str) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statements = match lakegres_sql::parse_shared(sql, self.session.string_literals()) {
            Ok(s) => s,
            Err(e) => {
                fail(client, &self.session, error_info(&e)).await?;
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
        for parsed in statements.iter() {
            match self.simple_statement(client, parsed).await? {
                Ended::Ok => {}
                Ended::Failed | Ended::CopyIn => break,
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SimpleQueryHandler for Queries {
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
        let busy = self.session.busy();
        let cancel = self.cancel.receiver(client).await;
        let result = self
            .cancel
            .run(cancel, pin!(self.simple_query(client, &query.query)))
            .await;
        match result {
            Err(PgWireError::UserError(e)) => {
                fail(client, &self.session, *e).await?;
            }
            result => result?,
        }
        let status = report_status(client, &self.session);
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            // ReadyForQuery comes after the client's CopyDone.
            busy.keep();
            return Ok(());
        }
        drop(busy);
        client.set_state(PgWireConnectionState::ReadyForQuery);
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
