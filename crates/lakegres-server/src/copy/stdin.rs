//! `COPY … FROM STDIN`: the statement leaves its [`CopyIn`] in the
//! connection's [`CopySlot`] and answers CopyInResponse; the client's
//! CopyData feed it, CopyDone commits it (CommandComplete `COPY n`) and
//! CopyFail drops it. The session stays busy until then.

use std::fmt::Debug;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use lakegres_common::SqlState;
use lakegres_sql::CopyIn;
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::Tag;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse};
use pgwire::messages::PgWireBackendMessage;
use tokio::sync::Mutex;

use crate::connection::Queries;
use crate::sqlstate::{info, user_error};
use crate::statement::{failed, report_status};

/// The COPY FROM STDIN of a connection, between its statement and the
/// client's CopyDone or CopyFail.
#[derive(Default)]
pub(crate) struct CopySlot(Mutex<Option<Waiting>>);

/// A COPY waiting for the client's data, and the session busy meanwhile.
struct Waiting {
    copy_in: Box<CopyIn>,
    busy: lakegres_sql::Busy,
}

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
        *self.copy.0.lock().await = Some(Waiting {
            copy_in,
            busy: self.session.busy(),
        });
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
        if let Some(waiting) = self.copy.0.lock().await.as_mut() {
            waiting.copy_in.data(&copy_data.data).await;
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(Waiting { copy_in, busy }) = self.copy.0.lock().await.take() else {
            return Err(PgWireError::UserError(Box::new(info(
                SqlState::PROTOCOL_VIOLATION,
                "CopyDone without a COPY in progress".into(),
                None,
            ))));
        };
        let finished = self.session.finish_copy(copy_in).await;
        drop(busy);
        match finished {
            Ok(rows) => {
                client
                    .send(PgWireBackendMessage::CommandComplete(
                        Tag::new("COPY")
                            .with_rows(usize::try_from(rows).unwrap_or(usize::MAX))
                            .into(),
                    ))
                    .await?;
                report_status(client, &self.session);
                Ok(())
            }
            Err(e) => Err(failed(client, &self.session, user_error(&e))),
        }
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(waiting) = self.copy.0.lock().await.take() {
            waiting.copy_in.abort();
        }
        let error = PgWireError::UserError(Box::new(info(
            SqlState::QUERY_CANCELED,
            format!("COPY from stdin failed: {}", fail.message),
            None,
        )));
        failed(client, &self.session, error)
    }
}
