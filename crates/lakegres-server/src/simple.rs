//! The simple query protocol: a Query message's statements run one after
//! another, each answered with RowDescription, rows and CommandComplete,
//! until the first error; then one ReadyForQuery (after CopyDone, when a
//! statement starts a COPY FROM STDIN).

use std::fmt::Debug;

use async_trait::async_trait;
use futures::future::{select, Either};
use futures::{Sink, SinkExt};
use lakegres_sql::{Output, Statement};
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
use crate::statement::{canceled, complete_tag, encode_error, transaction_status, Ended};

impl Queries {
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
