//! `COPY … TO STDOUT`: CopyOut of query rows in Postgres text, CSV or
//! binary format.
//!
//! Values are rendered by the same encoder as DataRows (so COPY TO prints
//! what SELECT shows) and then escaped for the format; each row is one
//! CopyData message, as Postgres sends them.

use std::fmt::Debug;

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::Array;
use datafusion::execution::SendableRecordBatchStream;
use futures::{Sink, SinkExt, StreamExt};
use lakegres_sql::{CopyFormat, CopyOptions};
use pgwire::api::portal::Format;
use pgwire::api::results::Tag;
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyOutResponse};
use pgwire::messages::data::DataRow;
use pgwire::messages::PgWireBackendMessage;

use crate::connection::Queries;
use crate::encode;
use crate::sqlstate::user_error;
use crate::statement::{fail, Ended};

/// The buffer rows are encoded into, refilled when it runs low.
const CHUNK: usize = 64 * 1024;

impl Queries {
    /// A `COPY … TO STDOUT`; a row that fails is the statement's
    /// ErrorResponse.
    pub(crate) async fn copy_out<C>(
        &self,
        client: &mut C,
        stream: SendableRecordBatchStream,
        options: &CopyOptions,
    ) -> PgWireResult<Ended>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match copy_out(client, stream, options).await? {
            CopyOutEnd::Done => Ok(Ended::Ok),
            CopyOutEnd::Failed(PgWireError::UserError(e)) => fail(client, &self.session, *e).await,
            CopyOutEnd::Failed(e) => Err(e),
        }
    }
}

/// How a COPY TO ended.
enum CopyOutEnd {
    Done,
    /// A row failed; the error was sent.
    Failed(PgWireError),
}

/// Streams `stream` as CopyOutResponse, CopyData…, CopyDone, CommandComplete.
async fn copy_out<C>(
    client: &mut C,
    stream: SendableRecordBatchStream,
    options: &CopyOptions,
) -> PgWireResult<CopyOutEnd>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let binary = options.format == CopyFormat::Binary;
    if !binary && encode::copy_text_supported(stream.schema().as_ref()) {
        return copy_out_text(client, stream, options).await;
    }
    let format = if binary {
        Format::UnifiedBinary
    } else {
        Format::UnifiedText
    };
    // COPY writes instants in UTC (`+00`), whatever the session zone.
    let mut response = encode::query_response(stream, &format, None)?;
    let names: Vec<String> = response
        .row_schema()
        .iter()
        .map(|f| f.name().to_string())
        .collect();
    let columns = names.len();
    client
        .send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            i8::from(binary),
            i16::try_from(columns).unwrap_or(i16::MAX),
            vec![i16::from(binary); columns],
        )))
        .await?;
    let mut buf = BytesMut::with_capacity(CHUNK * 2);
    if binary {
        // Signature, flags, no header extension.
        buf.put_slice(b"PGCOPY\n\xff\r\n\0");
        buf.put_i32(0);
        buf.put_i32(0);
    }
    put_header(client, &mut buf, &names, options).await?;
    let mut rows = 0usize;
    let data_rows = response.data_rows();
    while let Some(row) = data_rows.next().await {
        let row = match row {
            Ok(row) => row,
            Err(e) => return Ok(CopyOutEnd::Failed(e)),
        };
        if binary {
            // A DataRow's body is already the tuple's fields.
            buf.put_i16(row.field_count);
            buf.put_slice(&row.data);
        } else {
            put_row(&mut buf, &row, options);
        }
        rows += 1;
        send_row(client, &mut buf).await?;
    }
    if binary {
        buf.put_i16(-1);
    }
    finish(client, buf, rows).await
}

/// CopyOutResponse for `columns` text columns.
fn text_response(columns: usize) -> PgWireBackendMessage {
    PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
        0,
        i16::try_from(columns).unwrap_or(i16::MAX),
        vec![0; columns],
    ))
}

/// The CSV header line, when asked for.
async fn put_header<C>(
    client: &mut C,
    buf: &mut BytesMut,
    names: &[String],
    options: &CopyOptions,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if options.header && options.format == CopyFormat::Csv {
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                buf.put_u8(options.delimiter);
            }
            put_csv(buf, name.as_bytes(), options);
        }
        buf.put_u8(b'\n');
        let header = buf.split().freeze();
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(header)))
            .await?;
    }
    Ok(())
}

/// Sends the row in `buf` as one CopyData, as Postgres sends them: clients
/// such as psycopg parse each message as one row. Messages share `buf`'s
/// allocation and are written out together.
async fn send_row<C>(client: &mut C, buf: &mut BytesMut) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let message = buf.split().freeze();
    client
        .feed(PgWireBackendMessage::CopyData(CopyData::new(message)))
        .await?;
    if buf.capacity() < 1024 {
        buf.reserve(CHUNK);
    }
    Ok(())
}

/// Sends what is left in `buf`, CopyDone and CommandComplete.
async fn finish<C>(client: &mut C, buf: BytesMut, rows: usize) -> PgWireResult<CopyOutEnd>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if !buf.is_empty() {
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(buf.freeze())))
            .await?;
    }
    client
        .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    client
        .feed(PgWireBackendMessage::CommandComplete(
            Tag::new("COPY").with_rows(rows).into(),
        ))
        .await?;
    Ok(CopyOutEnd::Done)
}

/// Text and CSV COPY TO straight from the batches: each column is turned
/// into its Postgres text once per batch (the same text SELECT sends), and
/// rows are cut from those arrays, with no DataRow in between.
async fn copy_out_text<C>(
    client: &mut C,
    mut stream: SendableRecordBatchStream,
    options: &CopyOptions,
) -> PgWireResult<CopyOutEnd>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let names: Vec<String> = stream
        .schema()
        .fields()
        .iter()
        .map(|f| encode::sent_name(f.name()).to_string())
        .collect();
    client.send(text_response(names.len())).await?;
    let mut buf = BytesMut::with_capacity(CHUNK * 2);
    put_header(client, &mut buf, &names, options).await?;
    let mut rows = 0usize;
    while let Some(batch) = stream.next().await {
        let columns = match batch.and_then(|b| {
            encode::copy_text_columns(&b)
                .map(|columns| (b.num_rows(), columns))
                .map_err(|e| datafusion::error::DataFusionError::ArrowError(Box::new(e), None))
        }) {
            Ok(columns) => columns,
            Err(e) => {
                return Ok(CopyOutEnd::Failed(user_error(
                    &lakegres_sql::Error::DataFusion(e),
                )))
            }
        };
        let (count, columns) = columns;
        for row in 0..count {
            for (i, column) in columns.iter().enumerate() {
                if i > 0 {
                    buf.put_u8(options.delimiter);
                }
                if column.is_null(row) {
                    buf.put_slice(options.null.as_bytes());
                } else {
                    put_value(&mut buf, column.value(row).as_bytes(), options);
                }
            }
            buf.put_u8(b'\n');
            rows += 1;
            send_row(client, &mut buf).await?;
        }
    }
    finish(client, buf, rows).await
}

/// The fields of a DataRow: each is a length (-1 for NULL) and its bytes.
fn fields(row: &DataRow) -> impl Iterator<Item = Option<&[u8]>> {
    let data: &[u8] = &row.data;
    let mut at = 0usize;
    (0..row.field_count).map(move |_| {
        let len = data
            .get(at..at + 4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .unwrap_or(-1);
        at += 4;
        if len < 0 {
            return None;
        }
        let len = len as usize;
        let value = data.get(at..at + len);
        at += len;
        value
    })
}

fn put_row(buf: &mut BytesMut, row: &DataRow, options: &CopyOptions) {
    for (i, value) in fields(row).enumerate() {
        if i > 0 {
            buf.put_u8(options.delimiter);
        }
        match value {
            None => buf.put_slice(options.null.as_bytes()),
            Some(v) => put_value(buf, v, options),
        }
    }
    buf.put_u8(b'\n');
}

fn put_value(buf: &mut BytesMut, value: &[u8], options: &CopyOptions) {
    match options.format {
        CopyFormat::Csv => put_csv(buf, value, options),
        CopyFormat::Text | CopyFormat::Binary => put_text(buf, value, options.delimiter),
    }
}

/// Text format: backslash escapes for the bytes that would end a field.
fn put_text(buf: &mut BytesMut, value: &[u8], delimiter: u8) {
    for &b in value {
        match b {
            b'\\' => buf.put_slice(b"\\\\"),
            b'\n' => buf.put_slice(b"\\n"),
            b'\r' => buf.put_slice(b"\\r"),
            b'\t' if delimiter == b'\t' => buf.put_slice(b"\\t"),
            d if d == delimiter => {
                buf.put_u8(b'\\');
                buf.put_u8(d);
            }
            other => buf.put_u8(other),
        }
    }
}

/// CSV: quoted when it holds a delimiter, quote, line break, is empty or
/// reads as the NULL text.
fn put_csv(buf: &mut BytesMut, value: &[u8], options: &CopyOptions) {
    let needs_quotes = value.is_empty()
        || value == options.null.as_bytes()
        || value
            .iter()
            .any(|&b| b == options.delimiter || b == options.quote || b == b'\n' || b == b'\r');
    if !needs_quotes {
        buf.put_slice(value);
        return;
    }
    buf.put_u8(options.quote);
    for &b in value {
        if b == options.quote || b == options.escape {
            buf.put_u8(options.escape);
        }
        buf.put_u8(b);
    }
    buf.put_u8(options.quote);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(format: CopyFormat) -> CopyOptions {
        CopyOptions {
            format,
            delimiter: if format == CopyFormat::Csv {
                b','
            } else {
                b'\t'
            },
            null: if format == CopyFormat::Csv {
                String::new()
            } else {
                "\\N".into()
            },
            header: false,
            quote: b'"',
            escape: b'"',
            force_not_null: vec![],
        }
    }

    #[test]
    fn text_escapes_what_ends_a_field() {
        let mut buf = BytesMut::new();
        put_text(&mut buf, b"a\tb\\c\nd", b'\t');
        assert_eq!(&buf[..], b"a\\tb\\\\c\\nd");
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        let o = options(CopyFormat::Csv);
        let mut buf = BytesMut::new();
        put_csv(&mut buf, b"plain", &o);
        buf.put_u8(b'|');
        put_csv(&mut buf, b"a,\"b\"", &o);
        buf.put_u8(b'|');
        put_csv(&mut buf, b"", &o);
        assert_eq!(&buf[..], b"plain|\"a,\"\"b\"\"\"|\"\"");
    }
}
