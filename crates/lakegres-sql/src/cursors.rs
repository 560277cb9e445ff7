//! What connection pools and drivers do to a session besides queries:
//! SQL cursors (`DECLARE … CURSOR FOR`, `FETCH`, `CLOSE`), a statement
//! timeout that also ends streaming results, and the parsing of Postgres
//! durations.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use futures::{Stream, StreamExt};

use crate::error::class;
use crate::error::{Error, Result};

/// An open cursor: the rest of its query's rows.
pub(crate) struct Cursor {
    stream: SendableRecordBatchStream,
    /// Rows read from the stream but not fetched yet.
    pending: Option<RecordBatch>,
}

/// The cursors of one session, by name.
#[derive(Default)]
pub(crate) struct Cursors {
    open: HashMap<String, Cursor>,
}

impl Cursors {
    pub fn declare(&mut self, name: &str, stream: SendableRecordBatchStream) -> Result<()> {
        if self.open.contains_key(name) {
            return Err(Error::analysis(
                class::DUPLICATE_CURSOR,
                format!("cursor \"{name}\" already exists"),
            ));
        }
        self.open.insert(
            name.to_string(),
            Cursor {
                stream,
                pending: None,
            },
        );
        Ok(())
    }

    /// The columns of an open cursor.
    pub fn schema(&self, name: &str) -> Option<SchemaRef> {
        self.open.get(name).map(|c| c.stream.schema())
    }

    /// Up to `count` rows (all with `None`) of the cursor, as one batch.
    pub async fn fetch(&mut self, name: &str, count: Option<usize>) -> Result<RecordBatch> {
        let Some(cursor) = self.open.get_mut(name) else {
            return Err(Error::analysis(
                class::INVALID_CURSOR_NAME,
                format!("cursor \"{name}\" does not exist"),
            ));
        };
        let schema: SchemaRef = cursor.stream.schema();
        let mut out: Vec<RecordBatch> = Vec::new();
        let mut have = 0usize;
        let want = count.unwrap_or(usize::MAX);
        while have < want {
            let batch = match cursor.pending.take() {
                Some(b) => b,
                None => match cursor.stream.next().await {
                    Some(b) => b?,
                    None => break,
                },
            };
            let take = (want - have).min(batch.num_rows());
            if take < batch.num_rows() {
                cursor.pending = Some(batch.slice(take, batch.num_rows() - take));
            }
            have += take;
            out.push(batch.slice(0, take));
        }
        Ok(concat_batches(&schema, &out).map_err(DataFusionError::from)?)
    }

    /// Closes one cursor, or all with `None`.
    pub fn close(&mut self, name: Option<&str>) -> Result<()> {
        match name {
            None => self.open.clear(),
            Some(n) => {
                if self.open.remove(n).is_none() {
                    return Err(Error::analysis(
                        class::INVALID_CURSOR_NAME,
                        format!("cursor \"{n}\" does not exist"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A Postgres duration setting (`statement_timeout`): milliseconds by
/// default, or with a unit (`ms`, `s`, `min`, `h`, `d`); 0 is none.
pub(crate) fn parse_duration(value: &str) -> Option<Duration> {
    let v = value.trim().trim_matches('\'').to_lowercase();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let n: f64 = number.parse().ok()?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "s" => n * 1_000.0,
        "min" => n * 60_000.0,
        "h" => n * 3_600_000.0,
        "d" => n * 86_400_000.0,
        _ => return None,
    };
    (ms > 0.0).then(|| Duration::from_millis(ms as u64))
}

/// The error of a statement that ran past `statement_timeout`.
pub(crate) fn timed_out() -> Error {
    Error::analysis(
        class::QUERY_CANCELED,
        "canceling statement due to statement timeout",
    )
}

/// Rows that end with the timeout error once `deadline` passes.
pub(crate) struct Deadline {
    inner: SendableRecordBatchStream,
    sleep: Pin<Box<tokio::time::Sleep>>,
    done: bool,
}

impl Deadline {
    pub fn new(inner: SendableRecordBatchStream, deadline: tokio::time::Instant) -> Self {
        Self {
            inner,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
            done: false,
        }
    }
}

impl Stream for Deadline {
    type Item = datafusion::error::Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.done = true;
            return Poll::Ready(Some(Err(DataFusionError::External(Box::new(timed_out())))));
        }
        self.inner.poll_next_unpin(cx)
    }
}

impl RecordBatchStream for Deadline {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0"), None);
        assert_eq!(parse_duration("250"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("'2min'"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("nonsense"), None);
    }
}
