//! What the simple and extended query paths share for one statement, each
//! in one place: the race against a cancel request, running the statement (a
//! panic caught) and sending its notices, the replies of an output without
//! rows, streaming rows, a failure (ErrorResponse, failed transaction
//! block) and the transaction status the next ReadyForQuery reports.

use std::fmt::Debug;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use datafusion::common::ParamValues;
use datafusion::execution::SendableRecordBatchStream;
use futures::channel::oneshot;
use futures::{FutureExt, Sink, SinkExt, StreamExt};
use lakegres_common::SqlState;
use lakegres_sql::{CommandTag, Output, Session, Statement, Transaction};
use pgwire::api::results::QueryResponse;
use pgwire::api::{ClientInfo, ConnectionHandle};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::response::{CommandComplete, TransactionStatus};
use pgwire::messages::PgWireBackendMessage;

use crate::connection::Queries;
use crate::sqlstate::{error_info, info, warning};

/// How a statement ended, for the caller's transaction bookkeeping.
pub(crate) enum Ended {
    Ok,
    /// The statement failed; its ErrorResponse was sent.
    Failed,
    /// A COPY FROM STDIN started: the client sends its data next.
    CopyIn,
}

/// A connection's receiver of cancel requests, kept from one statement to
/// the next while no request fired it.
///
/// pgwire arms a new channel for each statement (`start_query`: a map
/// lookup, an async lock and a channel); that was 3% of the server's time
/// for a prepared `SELECT 1`. A request that arrives between statements
/// fires the kept receiver, which is then dropped for a new one before the
/// next statement, so it cancels nothing, as in PostgreSQL.
#[derive(Default)]
pub(crate) struct CancelSlot(std::sync::Mutex<Option<oneshot::Receiver<()>>>);

impl CancelSlot {
    /// The receiver for the next statement (none before login).
    pub(crate) async fn receiver<C: ClientInfo>(
        &self,
        client: &C,
    ) -> Option<oneshot::Receiver<()>> {
        let kept = self.slot().take();
        if let Some(mut receiver) = kept {
            // Not fired, and its sender is still armed.
            if let Ok(None) = receiver.try_recv() {
                return Some(receiver);
            }
        }
        let handle = client.session_extensions().get::<Arc<ConnectionHandle>>()?;
        Some(handle.start_query().await)
    }

    /// Runs a statement until it ends or `cancel` (from [`Self::receiver`])
    /// fires: the statement, its rows included, then stops with 57014. The
    /// receiver is kept for the next statement. The statement's future
    /// stays where the caller pinned it (a future passed by value to an
    /// async fn is held twice, and copied).
    pub(crate) async fn run<T, F: Future<Output = PgWireResult<T>>>(
        &self,
        mut cancel: Option<oneshot::Receiver<()>>,
        run: Pin<&mut F>,
    ) -> PgWireResult<T> {
        let result = Cancelable {
            run,
            cancel: cancel.as_mut(),
        }
        .await;
        *self.slot() = cancel;
        result
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<oneshot::Receiver<()>>> {
        // An Option is whole after any panic.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A statement's future raced against its cancel receiver
/// ([`CancelSlot::run`]).
struct Cancelable<'a, F> {
    run: Pin<&'a mut F>,
    cancel: Option<&'a mut oneshot::Receiver<()>>,
}

impl<T, F: Future<Output = PgWireResult<T>>> Future for Cancelable<'_, F> {
    type Output = PgWireResult<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(result) = self.run.as_mut().poll(cx) {
            return Poll::Ready(result);
        }
        if let Some(cancel) = self.cancel.as_mut() {
            // Fired, or its sender gone with the connection.
            if Pin::new(&mut **cancel).poll(cx).is_ready() {
                return Poll::Ready(Err(canceled()));
            }
        }
        Poll::Pending
    }
}

/// Runs a statement (whose text the caller may have kept), catching a
/// panic as an internal error, then sends the warnings it raised.
pub(crate) async fn execute<C>(
    client: &mut C,
    session: &Session,
    statement: &Statement,
    text: Option<&str>,
    params: Option<ParamValues>,
) -> PgWireResult<Result<Output, lakegres_sql::Error>>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let output = match AssertUnwindSafe(session.execute_as(statement, params, text))
        .catch_unwind()
        .await
    {
        Ok(result) => result,
        Err(_) => Err(lakegres_sql::Error::Internal {
            message: "the statement panicked".into(),
        }),
    };
    send_notices(client, session).await?;
    Ok(output)
}

/// Sends the session's warnings (NoticeResponse, severity WARNING).
async fn send_notices<C>(client: &mut C, session: &Session) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for message in session.take_notices() {
        client
            .feed(PgWireBackendMessage::NoticeResponse(
                warning(message.code, message.message).into(),
            ))
            .await?;
    }
    for (name, value) in session.take_reported() {
        client
            .feed(PgWireBackendMessage::ParameterStatus(
                pgwire::messages::startup::ParameterStatus::new(name, value),
            ))
            .await?;
    }
    Ok(())
}

/// What an output asks of the protocol path that ran it.
pub(crate) enum Reply {
    /// Rows, for the caller to describe and stream in its protocol's way.
    Rows {
        stream: SendableRecordBatchStream,
        tag: CommandTag,
    },
    /// Everything went out here.
    Sent(Ended),
}

impl Queries {
    /// Answers an output without rows the same way in both protocols:
    /// CommandComplete, CopyInResponse, or a COPY TO's data.
    pub(crate) async fn reply<C>(
        &self,
        client: &mut C,
        output: Output,
        extended: bool,
    ) -> PgWireResult<Reply>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match output {
            Output::Rows { stream, tag } => Ok(Reply::Rows { stream, tag }),
            Output::Done(tag) | Output::TransactionStart(tag) | Output::TransactionEnd(tag) => {
                client
                    .feed(PgWireBackendMessage::CommandComplete(complete_tag(&tag, 0)))
                    .await?;
                Ok(Reply::Sent(Ended::Ok))
            }
            Output::CopyIn(copy_in) => {
                self.start_copy_in(client, copy_in, extended).await?;
                Ok(Reply::Sent(Ended::CopyIn))
            }
            Output::CopyOut { stream, options } => self
                .copy_out(client, stream, &options)
                .await
                .map(Reply::Sent),
        }
    }
}

/// How far a response's rows went out.
pub(crate) enum Streamed {
    /// The last of them; this many in this call.
    Finished(usize),
    /// As many as the row limit allows; more remain.
    Suspended,
    /// A row failed; its ErrorResponse was sent.
    Failed,
}

/// Sends rows of a response: all of them (`max_rows` 0) or up to
/// `max_rows`. A row error is sent as the statement's failure.
pub(crate) async fn send_rows<C>(
    client: &mut C,
    session: &Session,
    response: &mut QueryResponse,
    max_rows: usize,
) -> PgWireResult<Streamed>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let mut sent = 0;
    while max_rows == 0 || sent < max_rows {
        let error = match response.data_rows().next().await {
            Some(Ok(row)) => {
                client.feed(PgWireBackendMessage::DataRow(row)).await?;
                sent += 1;
                continue;
            }
            None => return Ok(Streamed::Finished(sent)),
            Some(Err(PgWireError::UserError(e))) => *e,
            Some(Err(e)) => error_info(&lakegres_sql::Error::Internal {
                message: format!("encoding a row: {e}"),
            }),
        };
        fail(client, session, error).await?;
        return Ok(Streamed::Failed);
    }
    Ok(Streamed::Suspended)
}

/// A statement failed after its reply began, or before pgwire saw it: the
/// ErrorResponse goes out here and an open transaction block fails.
pub(crate) async fn fail<C>(
    client: &mut C,
    session: &Session,
    error: ErrorInfo,
) -> PgWireResult<Ended>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    mark_failed(session);
    client
        .feed(PgWireBackendMessage::ErrorResponse(error.into()))
        .await?;
    Ok(Ended::Failed)
}

/// A statement failed with an error pgwire sends (it skips to Sync in the
/// extended protocol, and sends ReadyForQuery after it in the simple one):
/// an open transaction block fails, and the status pgwire reports next is
/// the session's.
pub(crate) fn failed<C: ClientInfo>(
    client: &mut C,
    session: &Session,
    error: PgWireError,
) -> PgWireError {
    mark_failed(session);
    report_status(client, session);
    error
}

/// An open transaction block fails with its statement. The session fails
/// it itself for the statements it runs (their rows and COPY data
/// included); errors it cannot see — a parse error, a cancel, a row that
/// cannot be encoded, a protocol error — are reported to it here.
fn mark_failed(session: &Session) {
    session.note_error();
}

/// Sets the transaction status the next ReadyForQuery reports, whoever sends
/// it, from the session's; returns it.
pub(crate) fn report_status<C: ClientInfo>(client: &mut C, session: &Session) -> TransactionStatus {
    let status = match session.transaction() {
        Transaction::Idle => TransactionStatus::Idle,
        Transaction::InBlock => TransactionStatus::Transaction,
        Transaction::Failed => TransactionStatus::Error,
    };
    client.set_transaction_status(status);
    status
}

/// The CommandComplete of a statement that sent `rows` rows. Made here, in
/// one allocation: pgwire's `Tag` makes two and goes through `format!`.
pub(crate) fn complete_tag(tag: &CommandTag, rows: usize) -> CommandComplete {
    match tag {
        CommandTag::Counted(word) => {
            let mut count = itoa::Buffer::new();
            let count = count.format(rows);
            let mut text = String::with_capacity(word.len() + 1 + count.len());
            text.push_str(word);
            text.push(' ');
            text.push_str(count);
            CommandComplete::new(text)
        }
        CommandTag::Fixed(text) => CommandComplete::new(text.clone()),
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

fn canceled() -> PgWireError {
    PgWireError::UserError(Box::new(info(
        SqlState::QUERY_CANCELED,
        "canceling statement due to user request".into(),
        None,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(tag: &CommandTag, rows: usize) -> String {
        complete_tag(tag, rows).tag
    }

    #[test]
    fn a_counted_tag_carries_the_rows_sent() {
        assert_eq!(sent(&CommandTag::Counted("SELECT"), 3), "SELECT 3");
        assert_eq!(sent(&CommandTag::Counted("SHOW"), 0), "SHOW 0");
        assert_eq!(sent(&CommandTag::counted("COPY"), 12), "COPY 12");
    }

    #[test]
    fn a_fixed_tag_goes_out_as_it_is() {
        assert_eq!(
            sent(&CommandTag::Fixed("INSERT 0 3".into()), 7),
            "INSERT 0 3"
        );
        assert_eq!(
            sent(&CommandTag::Fixed("CREATE TABLE".into()), 0),
            "CREATE TABLE"
        );
        assert_eq!(sent(&CommandTag::counted("BEGIN"), 0), "BEGIN");
    }
}
