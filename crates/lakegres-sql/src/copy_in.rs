//! The data of Postgres' `COPY t [(cols)] FROM STDIN` (text, CSV and
//! binary) and the options of `COPY … TO STDOUT` (the statement itself is
//! `statements/copy.rs`).
//!
//! COPY FROM streams: the wire hands each CopyData message to [`CopyIn`],
//! which parses whole lines into Arrow batches and passes them through a
//! small channel to a write running in its own task, so memory stays bounded
//! however many rows come. The write is one Delta commit made when the
//! client says CopyDone; a bad row, a CopyFail or a dropped connection ends
//! the write without a commit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use datafusion::arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, StringBuilder};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::csv::reader::Decoder as CsvDecoder;
use datafusion::arrow::csv::ReaderBuilder as CsvReaderBuilder;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::util::display::FormatOptions;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchReceiverStream;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;
use lakegres_delta::TableName;
use lakegres_delta::WriteMode;
use lakegres_delta::WriteOptions;
use sqlparser::ast::{self, CopyLegacyCsvOption, CopyLegacyOption, CopyOption};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

mod binary;

use crate::error::class;
use crate::error::{Error, Result};

/// Rows per batch handed to the write.
const BATCH_ROWS: usize = 8192;

/// The data format of a COPY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
    Binary,
}

/// The options of a COPY, with Postgres' defaults for its format.
#[derive(Debug, Clone)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub delimiter: u8,
    /// The text of a NULL (`\N` in text format, the empty string in CSV).
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
    /// CSV columns whose empty values are empty strings, not NULL.
    pub force_not_null: Vec<String>,
}

impl CopyOptions {
    pub(crate) fn from_ast(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<Self> {
        let mut format = CopyFormat::Text;
        let (mut delimiter, mut null, mut header, mut quote, mut escape) =
            (None, None, false, None, None);
        let mut force_not_null = Vec::new();
        let one_byte = |c: char, what: &str| -> Result<u8> {
            u8::try_from(u32::from(c)).map_err(|_| {
                Error::analysis(
                    class::INVALID_COPY_OPTION,
                    format!("COPY {what} must be a single one-byte character"),
                )
            })
        };
        for o in options {
            match o {
                CopyOption::Format(f) => {
                    format = match f.value.to_lowercase().as_str() {
                        "text" => CopyFormat::Text,
                        "csv" => CopyFormat::Csv,
                        "binary" => CopyFormat::Binary,
                        other => return Err(Error::not_supported(format!("COPY format {other}"))),
                    }
                }
                CopyOption::Delimiter(c) => delimiter = Some(one_byte(*c, "delimiter")?),
                CopyOption::Null(s) => null = Some(s.clone()),
                CopyOption::Header(h) => header = *h,
                CopyOption::Quote(c) => quote = Some(one_byte(*c, "quote")?),
                CopyOption::Escape(c) => escape = Some(one_byte(*c, "escape")?),
                CopyOption::ForceNotNull(cols) => {
                    force_not_null.extend(cols.iter().map(|c| c.value.to_lowercase()))
                }
                CopyOption::Freeze(_) | CopyOption::Encoding(_) => {}
                CopyOption::ForceQuote(_) | CopyOption::ForceNull(_) => {
                    return Err(Error::not_supported(format!("COPY option {o}")))
                }
            }
        }
        for o in legacy {
            match o {
                CopyLegacyOption::Csv(csv) => {
                    format = CopyFormat::Csv;
                    for c in csv {
                        match c {
                            CopyLegacyCsvOption::Header => header = true,
                            CopyLegacyCsvOption::Quote(q) => quote = Some(one_byte(*q, "quote")?),
                            CopyLegacyCsvOption::Escape(e) => {
                                escape = Some(one_byte(*e, "escape")?)
                            }
                            CopyLegacyCsvOption::ForceNotNull(cols) => {
                                force_not_null.extend(cols.iter().map(|c| c.value.to_lowercase()))
                            }
                            CopyLegacyCsvOption::ForceQuote(_) => {}
                        }
                    }
                }
                CopyLegacyOption::Delimiter(c) => delimiter = Some(one_byte(*c, "delimiter")?),
                CopyLegacyOption::Null(s) => null = Some(s.clone()),
                CopyLegacyOption::Header => header = true,
                CopyLegacyOption::Binary => format = CopyFormat::Binary,
                other => return Err(Error::not_supported(format!("COPY option {other}"))),
            }
        }
        let csv = format == CopyFormat::Csv;
        let quote = quote.unwrap_or(b'"');
        Ok(Self {
            format,
            delimiter: delimiter.unwrap_or(if csv { b',' } else { b'\t' }),
            null: null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() }),
            header,
            quote,
            escape: escape.unwrap_or(quote),
            force_not_null,
        })
    }
}

/// A COPY FROM STDIN under way.
pub struct CopyIn {
    /// The table written.
    table: TableName,
    options: CopyOptions,
    /// The columns the data holds, in its order: (index in the table, name).
    columns: Vec<(usize, String)>,
    table_schema: SchemaRef,
    parser: Parser,
    /// Complete rows waiting to become a batch (text format).
    builders: Vec<StringBuilder>,
    buffered: usize,
    /// Bytes of an incomplete last line.
    pending: Vec<u8>,
    /// The line number of the next line (1-based, header included).
    line: u64,
    rows: u64,
    done: bool,
    error: Option<Error>,
    tx: Option<mpsc::Sender<Result<RecordBatch, DataFusionError>>>,
    /// Set by CopyDone only: a channel that closes without it (a dropped
    /// connection) ends the write with an error, so nothing is committed.
    complete: Arc<AtomicBool>,
    writer: JoinHandle<Result<u64>>,
}

enum Parser {
    Text,
    Csv(Box<CsvDecoder>),
    Binary {
        header_done: bool,
        columns: Vec<binary::Column>,
    },
}

impl CopyIn {
    /// Starts a COPY into `table` (`name` as the statement resolved it),
    /// its rows written by `user` with `state`'s configuration.
    pub(crate) async fn start(
        name: TableName,
        table: lakegres_delta::Table,
        state: datafusion::execution::context::SessionState,
        user: String,
        columns: &[ast::Ident],
        options: CopyOptions,
    ) -> Result<Self> {
        // Every column nullable here: a NULL in a NOT NULL column is the
        // table checks' to refuse (23502, by name), not Arrow's.
        let table_schema: SchemaRef = Arc::new(Schema::new(
            table
                .arrow_schema(&name)?
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect::<Vec<_>>(),
        ));
        let chosen: Vec<(usize, String)> = if columns.is_empty() {
            table_schema
                .fields()
                .iter()
                .enumerate()
                .map(|(i, f)| (i, f.name().clone()))
                .collect()
        } else {
            let mut chosen = Vec::new();
            for c in columns {
                let lower = c.value.to_lowercase();
                let Some(i) = table_schema
                    .fields()
                    .iter()
                    .position(|f| f.name().to_lowercase() == lower)
                else {
                    return Err(Error::UnknownColumn {
                        table: name.to_string(),
                        column: c.value.clone(),
                    });
                };
                if chosen.iter().any(|(j, _)| *j == i) {
                    return Err(Error::analysis(
                        class::COLUMN_ALREADY_EXISTS,
                        format!("column {} is listed twice", c.value),
                    ));
                }
                chosen.push((i, table_schema.field(i).name().clone()));
            }
            chosen
        };
        let parser = match options.format {
            CopyFormat::Text => Parser::Text,
            CopyFormat::Binary => Parser::Binary {
                header_done: false,
                columns: chosen
                    .iter()
                    .map(|(i, name)| {
                        binary::Column::new(table_schema.field(*i).data_type()).map_err(|t| {
                            Error::not_supported(format!(
                                "binary COPY of column {name} of type {t}"
                            ))
                        })
                    })
                    .collect::<Result<_>>()?,
            },
            CopyFormat::Csv => {
                let text_schema = Arc::new(Schema::new(
                    chosen
                        .iter()
                        .map(|(_, n)| Field::new(n, DataType::Utf8, true))
                        .collect::<Vec<_>>(),
                ));
                let mut builder = CsvReaderBuilder::new(text_schema)
                    .with_header(options.header)
                    .with_delimiter(options.delimiter)
                    .with_quote(options.quote)
                    .with_batch_size(BATCH_ROWS);
                if options.escape != options.quote {
                    builder = builder.with_escape(options.escape);
                }
                if !options.null.is_empty() {
                    let pattern = format!("^{}$", regex::escape(&options.null));
                    let re = regex::Regex::new(&pattern).map_err(|e| Error::InvalidParameter {
                        message: format!("COPY NULL: {e}"),
                    })?;
                    builder = builder.with_null_regex(re);
                }
                Parser::Csv(Box::new(builder.build_decoder()))
            }
        };

        let (tx, rx) = mpsc::channel(4);
        let complete = Arc::new(AtomicBool::new(false));
        let input = channel_exec(Arc::clone(&table_schema), rx, Arc::clone(&complete))?;
        let state = Arc::new(state);
        let written = name.clone();
        let writer = tokio::spawn(lakegres_delta::as_user(user, async move {
            Ok(lakegres_delta::write_plan(
                &written,
                &table,
                input,
                state,
                WriteOptions::new(WriteMode::Append),
            )
            .await?)
        }));
        let builders = chosen.iter().map(|_| StringBuilder::new()).collect();
        let line = 1;
        Ok(Self {
            table: name,
            options,
            columns: chosen,
            table_schema,
            parser,
            builders,
            buffered: 0,
            pending: Vec::new(),
            line,
            rows: 0,
            done: false,
            error: None,
            tx: Some(tx),
            complete,
            writer,
        })
    }

    /// How many columns the data has (for CopyInResponse).
    pub fn column_count(&self) -> usize {
        self.columns.len()
    }

    /// Whether the data comes in binary format.
    pub fn is_binary(&self) -> bool {
        self.options.format == CopyFormat::Binary
    }

    /// One CopyData message. Errors are kept for [`CopyIn::finish`]: a
    /// client sends all its data before it reads a response.
    pub async fn data(&mut self, bytes: &[u8]) {
        if self.error.is_some() || self.done {
            return;
        }
        let result = match self.parser {
            Parser::Text => self.text(bytes).await,
            Parser::Csv(_) => self.csv(bytes).await,
            Parser::Binary { .. } => self.binary(bytes).await,
        };
        if let Err(e) = result {
            self.fail(e);
        }
    }

    /// The table the rows go into.
    pub fn table(&self) -> &TableName {
        &self.table
    }

    /// CopyDone: the last rows, then the commit. Returns the rows
    /// written ([`crate::Session::finish_copy`] records the write).
    pub(crate) async fn finish(self) -> Result<u64> {
        self.commit().await
    }

    async fn commit(mut self) -> Result<u64> {
        if self.error.is_none() {
            let result = match self.parser {
                Parser::Text => self.text_end().await,
                Parser::Csv(_) => self.csv(&[]).await,
                Parser::Binary { .. } => self.binary_end().await,
            };
            if let Err(e) = result {
                self.fail(e);
            }
        }
        if let Some(e) = self.error.take() {
            self.writer.abort();
            return Err(e);
        }
        self.complete.store(true, Ordering::SeqCst);
        drop(self.tx.take());
        let writer = std::mem::replace(&mut self.writer, tokio::spawn(async { Ok(0) }));
        match writer.await {
            Ok(result) => result,
            Err(e) => Err(Error::Internal {
                message: format!("the COPY writer stopped: {e}"),
            }),
        }
    }

    /// CopyFail: nothing is committed (as when the CopyIn is dropped).
    pub fn abort(self) {}

    fn fail(&mut self, e: Error) {
        self.error = Some(e);
        if let Some(tx) = self.tx.take() {
            // The write sees an error rather than a clean end, so it cannot
            // commit the rows sent so far.
            let _ = tx.try_send(Err(DataFusionError::Execution("COPY failed".into())));
        }
    }

    async fn csv(&mut self, mut bytes: &[u8]) -> Result<()> {
        let finishing = bytes.is_empty();
        loop {
            let Parser::Csv(decoder) = &mut self.parser else {
                return Ok(());
            };
            let line = self.line;
            let consumed = decoder
                .decode(bytes)
                .map_err(|e| bad_data(line, e.to_string()))?;
            bytes = &bytes[consumed..];
            let full = decoder.capacity() == 0;
            if full || (finishing && consumed == 0) {
                let flushed = decoder.flush().map_err(|e| bad_data(line, e.to_string()))?;
                match flushed {
                    Some(batch) if batch.num_rows() > 0 => {
                        let first_line =
                            self.line + u64::from(self.options.header && self.rows == 0);
                        let n = batch.num_rows() as u64;
                        let columns = batch.columns().to_vec();
                        self.send(columns, first_line).await?;
                        self.line = first_line + n;
                    }
                    _ => {}
                }
                if finishing {
                    return Ok(());
                }
            }
            if bytes.is_empty() && !full {
                return Ok(());
            }
        }
    }

    async fn binary(&mut self, bytes: &[u8]) -> Result<()> {
        self.pending.extend_from_slice(bytes);
        let data = std::mem::take(&mut self.pending);
        let mut at = 0usize;
        let result = self.binary_tuples(&data, &mut at).await;
        self.pending = data[at..].to_vec();
        result
    }

    /// Reads the header and every complete tuple from `data[*at..]`,
    /// moving `at` past what was read.
    async fn binary_tuples(&mut self, data: &[u8], at: &mut usize) -> Result<()> {
        let Parser::Binary { header_done, .. } = &mut self.parser else {
            return Ok(());
        };
        if !*header_done {
            // Signature, flags, header extension length, extension.
            if data.len() < 19 {
                return Ok(());
            }
            if &data[..11] != binary::SIGNATURE {
                return Err(bad_data(
                    self.line,
                    "binary COPY data must start with the PGCOPY signature".into(),
                ));
            }
            let ext = u32::from_be_bytes([data[15], data[16], data[17], data[18]]) as usize;
            if data.len() < 19 + ext {
                return Ok(());
            }
            *header_done = true;
            *at = 19 + ext;
        }
        loop {
            let start = *at;
            let Some(count) = data.get(start..start + 2) else {
                return Ok(());
            };
            let count = i16::from_be_bytes([count[0], count[1]]);
            if count == -1 {
                self.done = true;
                *at = data.len();
                return self.flush_binary().await;
            }
            let mut fields: Vec<Option<(usize, usize)>> = Vec::with_capacity(self.columns.len());
            let mut p = start + 2;
            let mut complete = true;
            for _ in 0..count.max(0) {
                let Some(len) = data.get(p..p + 4) else {
                    complete = false;
                    break;
                };
                let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
                p += 4;
                if len < 0 {
                    fields.push(None);
                    continue;
                }
                let len = len as usize;
                if data.len() < p + len {
                    complete = false;
                    break;
                }
                fields.push(Some((p, len)));
                p += len;
            }
            if !complete {
                return Ok(());
            }
            if fields.len() != self.columns.len() {
                return Err(self.bad_row(format!(
                    "a tuple of {} fields for {} columns",
                    fields.len(),
                    self.columns.len()
                )));
            }
            let line = self.line;
            let Parser::Binary { columns, .. } = &mut self.parser else {
                return Ok(());
            };
            for (k, (column, field)) in columns.iter_mut().zip(&fields).enumerate() {
                let value = field.map(|(o, l)| &data[o..o + l]);
                column.append(value).map_err(|why| {
                    Error::analysis(
                        class::INVALID_BINARY_REPRESENTATION,
                        format!("row {line}, column \"{}\": {why}", self.columns[k].1),
                    )
                })?;
            }
            *at = p;
            self.line += 1;
            self.buffered += 1;
            if self.buffered >= BATCH_ROWS {
                self.flush_binary().await?;
            }
        }
    }

    async fn binary_end(&mut self) -> Result<()> {
        if !self.pending.is_empty() && !self.done {
            return Err(bad_data(
                self.line,
                "binary COPY data ends inside a tuple".into(),
            ));
        }
        self.flush_binary().await
    }

    async fn flush_binary(&mut self) -> Result<()> {
        if self.buffered == 0 {
            return Ok(());
        }
        let Parser::Binary { columns, .. } = &mut self.parser else {
            return Ok(());
        };
        let arrays: Vec<ArrayRef> = columns.iter_mut().map(|c| c.finish()).collect();
        let first_line = self.line - self.buffered as u64;
        self.buffered = 0;
        self.send(arrays, first_line).await
    }

    async fn text(&mut self, bytes: &[u8]) -> Result<()> {
        let mut data = std::mem::take(&mut self.pending);
        data.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(end) = data[start..].iter().position(|b| *b == b'\n') {
            let line = &data[start..start + end];
            start += end + 1;
            self.text_line(line).await?;
            if self.done {
                return Ok(());
            }
        }
        self.pending = data[start..].to_vec();
        Ok(())
    }

    async fn text_end(&mut self) -> Result<()> {
        let rest = std::mem::take(&mut self.pending);
        if !rest.is_empty() && !self.done {
            self.text_line(&rest).await?;
        }
        self.flush_text().await
    }

    async fn text_line(&mut self, line: &[u8]) -> Result<()> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line == b"\\." {
            self.done = true;
            return self.flush_text().await;
        }
        if self.options.header && self.rows == 0 && self.buffered == 0 && self.line == 1 {
            self.line += 1;
            return Ok(());
        }
        let fields: Vec<&[u8]> = line.split(|b| *b == self.options.delimiter).collect();
        if fields.len() != self.columns.len() {
            let problem = if fields.len() < self.columns.len() {
                format!(
                    "missing data for column \"{}\"",
                    self.columns[fields.len()].1
                )
            } else {
                "extra data after last expected column".to_string()
            };
            return Err(self.bad_row(problem));
        }
        for (builder, field) in self.builders.iter_mut().zip(fields) {
            if field == self.options.null.as_bytes() {
                builder.append_null();
            } else {
                match unescape_text(field) {
                    Some(value) => builder.append_value(value),
                    None => {
                        let line = self.line;
                        return Err(Error::analysis(
                            class::BAD_COPY_FILE_FORMAT,
                            format!("line {line}: invalid UTF-8 or escape in COPY data"),
                        ));
                    }
                }
            }
        }
        self.buffered += 1;
        self.line += 1;
        if self.buffered >= BATCH_ROWS {
            self.flush_text().await?;
        }
        Ok(())
    }

    async fn flush_text(&mut self) -> Result<()> {
        if self.buffered == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = self
            .builders
            .iter_mut()
            .map(|b| Arc::new(b.finish()) as ArrayRef)
            .collect();
        let first_line = self.line - self.buffered as u64;
        self.buffered = 0;
        self.send(columns, first_line).await
    }

    /// Casts the text columns to the table's types and hands the batch to
    /// the write.
    async fn send(&mut self, text: Vec<ArrayRef>, first_line: u64) -> Result<()> {
        let rows = text.first().map_or(0, |c| c.len());
        let mut columns: Vec<ArrayRef> = self
            .table_schema
            .fields()
            .iter()
            .map(|f| new_null_array(f.data_type(), rows))
            .collect();
        for ((i, name), array) in self.columns.iter().zip(text) {
            let field = self.table_schema.field(*i);
            let array = if self.options.format == CopyFormat::Csv
                && self.options.force_not_null.contains(&name.to_lowercase())
            {
                empty_for_null(&array)
            } else {
                array
            };
            columns[*i] = to_type(&array, field.data_type()).map_err(|row| {
                let value = datafusion::arrow::array::AsArray::as_string::<i32>(array.as_ref())
                    .value(row)
                    .to_string();
                Error::analysis(
                    class::INVALID_TEXT_REPRESENTATION,
                    format!(
                        "invalid input for column \"{name}\" ({}) at line {}: \"{value}\"",
                        field.data_type(),
                        first_line + row as u64
                    ),
                )
            })?;
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.table_schema), columns)
            .map_err(DataFusionError::from)?;
        self.rows += rows as u64;
        let Some(tx) = &self.tx else {
            return Ok(());
        };
        if tx.send(Ok(batch)).await.is_err() {
            // The write ended early: its error is the statement's.
            return Err(self.writer_error().await);
        }
        Ok(())
    }

    async fn writer_error(&mut self) -> Error {
        self.tx = None;
        let writer = std::mem::replace(&mut self.writer, tokio::spawn(async { Ok(0) }));
        match writer.await {
            Ok(Err(e)) => e,
            Ok(Ok(_)) => Error::Internal {
                message: "the COPY writer ended before the data".into(),
            },
            Err(e) => Error::Internal {
                message: format!("the COPY writer stopped: {e}"),
            },
        }
    }

    fn bad_row(&self, problem: String) -> Error {
        Error::analysis(
            class::BAD_COPY_FILE_FORMAT,
            format!("line {}: {problem}", self.line),
        )
    }
}

fn bad_data(line: u64, message: String) -> Error {
    Error::analysis(
        class::BAD_COPY_FILE_FORMAT,
        format!("COPY data near line {line}: {message}"),
    )
}

/// Postgres text format escapes: `\t`, `\n`, `\\`, `\NNN` octal, `\xHH`.
fn unescape_text(field: &[u8]) -> Option<String> {
    if !field.contains(&b'\\') {
        return std::str::from_utf8(field).ok().map(str::to_string);
    }
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let b = field[i];
        if b != b'\\' || i + 1 == field.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let c = field[i + 1];
        i += 2;
        match c {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && i < field.len() && (b'0'..=b'7').contains(&field[i]) {
                    v = v * 8 + u32::from(field[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push((v & 0xff) as u8);
            }
            b'x' => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 2 && i < field.len() && field[i].is_ascii_hexdigit() {
                    v = v * 16 + (field[i] as char).to_digit(16).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                if n == 0 {
                    out.push(b'x');
                } else {
                    out.push(v as u8);
                }
            }
            other => out.push(other),
        }
    }
    String::from_utf8(out).ok()
}

/// NULLs of a CSV column become empty strings (FORCE_NOT_NULL).
fn empty_for_null(array: &ArrayRef) -> ArrayRef {
    use datafusion::arrow::array::AsArray;
    let strings = array.as_string::<i32>();
    let out: datafusion::arrow::array::StringArray =
        strings.iter().map(|v| Some(v.unwrap_or(""))).collect();
    Arc::new(out)
}

/// Text values as `data_type`; on a value that is not one, the row.
fn to_type(array: &ArrayRef, data_type: &DataType) -> Result<ArrayRef, usize> {
    if array.data_type() == data_type {
        return Ok(Arc::clone(array));
    }
    let strict = CastOptions {
        safe: false,
        format_options: FormatOptions::default(),
    };
    let array = normalize_timestamps(array, data_type);
    match cast_with_options(&array, data_type, &strict) {
        Ok(a) => Ok(a),
        Err(_) => {
            let lenient = CastOptions {
                safe: true,
                format_options: FormatOptions::default(),
            };
            let row = cast_with_options(&array, data_type, &lenient)
                .ok()
                .and_then(|c| (0..c.len()).find(|r| c.is_null(*r) && array.is_valid(*r)))
                .unwrap_or(0);
            Err(row)
        }
    }
}

/// Postgres writes time zones as `+00` or `-05:30`; Arrow wants `+00:00`.
fn normalize_timestamps(array: &ArrayRef, data_type: &DataType) -> ArrayRef {
    use datafusion::arrow::array::AsArray;
    if !matches!(data_type, DataType::Timestamp(_, Some(_))) {
        return Arc::clone(array);
    }
    let strings = array.as_string::<i32>();
    let out: datafusion::arrow::array::StringArray = strings
        .iter()
        .map(|v| {
            v.map(|s| {
                let bytes = s.as_bytes();
                let n = bytes.len();
                // "…+HH" / "…-HH" at the end, after a time.
                if n > 3
                    && (bytes[n - 3] == b'+' || bytes[n - 3] == b'-')
                    && bytes[n - 2].is_ascii_digit()
                    && bytes[n - 1].is_ascii_digit()
                    && s[..n - 3].contains(':')
                {
                    format!("{s}:00")
                } else {
                    s.to_string()
                }
            })
        })
        .collect();
    Arc::new(out)
}

/// An execution plan whose one partition is the batches of a channel.
fn channel_exec(
    schema: SchemaRef,
    rx: mpsc::Receiver<Result<RecordBatch, DataFusionError>>,
    complete: Arc<AtomicBool>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let stream = ChannelStream {
        schema: Arc::clone(&schema),
        rx: std::sync::Mutex::new(Some(rx)),
        complete,
    };
    let exec =
        StreamingTableExec::try_new(schema, vec![Arc::new(stream)], None, vec![], false, None)?;
    Ok(Arc::new(exec))
}

struct ChannelStream {
    schema: SchemaRef,
    rx: std::sync::Mutex<Option<mpsc::Receiver<Result<RecordBatch, DataFusionError>>>>,
    complete: Arc<AtomicBool>,
}

impl std::fmt::Debug for ChannelStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChannelStream")
    }
}

impl PartitionStream for ChannelStream {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<datafusion::execution::TaskContext>) -> SendableRecordBatchStream {
        let rx = self.rx.lock().ok().and_then(|mut rx| rx.take());
        let complete = Arc::clone(&self.complete);
        let mut builder = RecordBatchReceiverStream::builder(Arc::clone(&self.schema), 1);
        let tx = builder.tx();
        builder.spawn(async move {
            let Some(mut rx) = rx else {
                return Err(DataFusionError::Internal(
                    "COPY data can be read only once".into(),
                ));
            };
            while let Some(batch) = rx.recv().await {
                if tx.send(batch).await.is_err() {
                    return Ok(());
                }
            }
            if complete.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err(DataFusionError::Execution(
                    "COPY ended without CopyDone: nothing is committed".into(),
                ))
            }
        });
        builder.build()
    }
}
