//! What the simple and extended query paths share for one statement:
//! running it (a panic caught), its notices, its rows, its CommandComplete,
//! and the transaction status the next ReadyForQuery reports.

use std::fmt::Debug;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use datafusion::common::ParamValues;
use futures::channel::oneshot;
use futures::{FutureExt, Sink, SinkExt, StreamExt};
use lakegres_delta::SqlState;
use lakegres_sql::{CommandTag, Output, Session, Statement, Transaction};
use pgwire::api::results::{QueryResponse, Tag};
use pgwire::api::{ClientInfo, ConnectionHandle};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::PgWireBackendMessage;

use crate::connection::Queries;
use crate::sqlstate::{error_info, info};

pub(crate) fn transaction_status(session: &Session) -> TransactionStatus {
    match session.transaction() {
        Transaction::Idle => TransactionStatus::Idle,
        Transaction::InBlock => TransactionStatus::Transaction,
        Transaction::Failed => TransactionStatus::Error,
    }
}

pub(crate) fn complete_tag(tag: &CommandTag, rows: usize) -> Tag {
    match tag {
        CommandTag::Counted(word) => Tag::new(word).with_rows(rows),
        CommandTag::Fixed(text) => Tag::new(text),
    }
}

/// How a statement ended, for the caller's transaction bookkeeping.
pub(crate) enum Ended {
    Ok,
    /// The statement failed; its ErrorResponse was sent.
    Failed,
    /// A COPY FROM STDIN started: the client sends its data next.
    CopyIn,
}

impl Queries {
    /// Runs a statement, catching a panic as an internal error.
    pub(crate) async fn run(
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

    pub(crate) async fn cancel_receiver<C: ClientInfo>(
        &self,
        client: &C,
    ) -> Option<oneshot::Receiver<()>> {
        let handle = client.session_extensions().get::<Arc<ConnectionHandle>>()?;
        Some(handle.start_query().await)
    }

    /// Sends rows of a response: all of them (`max_rows` 0) or up to
    /// `max_rows`. Returns the number sent and whether rows remain; a row
    /// error is sent as the statement's ErrorResponse.
    pub(crate) async fn send_rows<C>(
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

    /// Sends the session's warnings (NoticeResponse, severity WARNING).
    pub(crate) async fn send_notices<C>(&self, client: &mut C) -> PgWireResult<()>
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
}

/// A pgwire error while encoding, as a statement error.
pub(crate) fn encode_error(e: &PgWireError) -> PgWireError {
    PgWireError::UserError(Box::new(info(
        SqlState::INTERNAL_ERROR,
        format!("encoding the result: {e}"),
        None,
    )))
}

pub(crate) fn canceled() -> PgWireError {
    PgWireError::UserError(Box::new(info(
        SqlState::QUERY_CANCELED,
        "canceling statement due to user request".into(),
        None,
    )))
}
