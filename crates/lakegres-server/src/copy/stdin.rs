//! `COPY … FROM STDIN`: the statement leaves its [`CopyIn`] in the
//! connection's [`CopySlot`] and answers CopyInResponse; the client's
//! CopyData feed it, CopyDone commits it (CommandComplete `COPY n`) and
//! CopyFail drops it.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use lakegres_delta::SqlState;
use lakegres_sql::CopyIn;
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::Tag;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse};
use pgwire::messages::PgWireBackendMessage;

use crate::connection::Queries;
use crate::sqlstate::{info, user_error};
use crate::statement::transaction_status;

/// A COPY FROM STDIN waiting for the client's data; shared by the query
/// handlers (which start it) and the copy handler (which feeds it).
pub(crate) type CopySlot = Arc<tokio::sync::Mutex<Option<Box<CopyIn>>>>;

impl Queries {
    /// Sends CopyInResponse and keeps the COPY for the copy handler.
    pub(crate) async fn start_copy_in<C>(
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
}

#[async_trait]
impl CopyHandler for Queries {
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
