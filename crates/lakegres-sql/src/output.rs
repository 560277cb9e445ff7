//! What a statement answers: its rows or its command tag ([`Output`]), and
//! what the extended protocol's Describe reports before it runs
//! ([`Description`]).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

use crate::error::Result;

/// How the command tag of a statement is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandTag {
    /// A word followed by the number of rows sent (`SELECT 3`).
    Counted(&'static str),
    /// The whole tag (`INSERT 0 3`, `CREATE TABLE`).
    Fixed(String),
}

impl CommandTag {
    /// The counted tag for a command word (`SELECT`, `SHOW` …).
    pub fn counted(word: &str) -> Self {
        const WORDS: &[&str] = &[
            "SELECT", "SHOW", "DESCRIBE", "EXPLAIN", "UPDATE", "DELETE", "MERGE", "INSERT", "COPY",
        ];
        match WORDS.iter().find(|w| **w == word) {
            Some(w) => Self::Counted(w),
            None => Self::Fixed(word.to_string()),
        }
    }
}

/// The outcome of one statement.
pub enum Output {
    /// Rows to stream to the client.
    Rows {
        stream: SendableRecordBatchStream,
        tag: CommandTag,
    },
    /// A statement without rows.
    Done(CommandTag),
    /// `BEGIN`.
    TransactionStart(CommandTag),
    /// `COMMIT`/`ROLLBACK`.
    TransactionEnd(CommandTag),
    /// `COPY … FROM STDIN`: the wire feeds the client's data to it.
    CopyIn(Box<crate::copy_in::CopyIn>),
    /// `COPY … TO STDOUT`: rows to send in a COPY format.
    CopyOut {
        stream: SendableRecordBatchStream,
        options: crate::copy_in::CopyOptions,
    },
}

/// What the extended protocol's Describe reports before execution.
#[derive(Debug, Clone)]
pub struct Description {
    /// The types of `$1`, `$2`, … where they could be inferred.
    pub params: Vec<Option<DataType>>,
    /// The result columns, if the statement returns rows.
    pub schema: Option<SchemaRef>,
}

impl Description {
    /// A statement without parameters that returns rows of `schema`.
    pub(crate) fn rows(schema: SchemaRef) -> Self {
        Self {
            params: vec![],
            schema: Some(schema),
        }
    }
}

/// The Databricks result of an INSERT: `num_affected_rows, num_inserted_rows`.
pub(crate) fn insert_result_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("num_affected_rows", DataType::Int64, false),
        Field::new("num_inserted_rows", DataType::Int64, false),
    ]))
}

/// The Databricks result of UPDATE, DELETE, TRUNCATE: `num_affected_rows`.
pub(crate) fn affected_rows_output(rows: i64, tag: &str) -> Result<Output> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "num_affected_rows",
        DataType::Int64,
        false,
    )]));
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from(vec![rows])) as ArrayRef],
    )
    .map_err(datafusion::error::DataFusionError::from)?;
    Ok(rows_output(batch, fixed(tag)))
}

pub(crate) fn fixed(tag: &str) -> CommandTag {
    CommandTag::Fixed(tag.to_string())
}

/// One batch as a row stream.
pub(crate) fn rows_output(batch: RecordBatch, tag: CommandTag) -> Output {
    batches_output(batch.schema(), vec![batch], tag)
}

/// Batches as a row stream.
pub(crate) fn batches_output(
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    tag: CommandTag,
) -> Output {
    let stream = futures::stream::iter(batches.into_iter().map(Ok));
    Output::Rows {
        stream: Box::pin(RecordBatchStreamAdapter::new(schema, stream)),
        tag,
    }
}
