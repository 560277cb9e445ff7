//! DataFusion-backed extensions to the basic data-file traits: write an
//! `ExecutionPlan`'s output, and read through `DeltaScanNext` (pushdown,
//! deletion vectors, transforms). The writer extension late-materializes a plan
//! into the basic record-batch stream and delegates to [`DeltaDataWriter`].

use std::sync::Arc;

use datafusion::catalog::{Session, TableProvider};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::{
    ExecutionPlan, SendableRecordBatchStream, execute_stream_partitioned,
};
use futures::stream::{StreamExt as _, select_all};

use super::writer::DeltaWriter;
use super::{BatchStream, DeltaDataReader, DeltaDataWriter, ReadOptions, results_to_stream};
use crate::DeltaTable;
use crate::errors::{DeltaResult, DeltaTableError};
use crate::kernel::Add;

/// Adapt several DataFusion partition streams into one basic [`BatchStream`],
/// polling all of them concurrently.
fn sendable_streams_to_stream(streams: Vec<SendableRecordBatchStream>) -> BatchStream {
    // `select_all` panics on an empty iterator; an empty input is just an empty stream.
    if streams.is_empty() {
        return futures::stream::empty().boxed();
    }
    results_to_stream(select_all(streams))
}

/// Run `provider.scan(..)` and coalesce its output partitions into one stream.
/// Shared by [`DataFusionDataReader::scan`] and the `load` operation.
pub(crate) async fn coalesce_provider_scan(
    provider: &Arc<dyn TableProvider>,
    session: &dyn Session,
    projection: Option<&Vec<usize>>,
    limit: Option<usize>,
) -> DeltaResult<SendableRecordBatchStream> {
    let scan_plan = provider.scan(session, projection, &[], limit).await?;
    Ok(CoalescePartitionsExec::new(scan_plan).execute(0, session.task_ctx())?)
}

/// Options controlling a DataFusion-backed scan.
#[derive(Debug, Default, Clone)]
pub struct ScanOptions {
    /// Project to this subset of (logical) column names. `None` reads all columns.
    pub projection: Option<Vec<String>>,
    /// Stop after returning at least this many rows. `None` reads the whole table.
    pub limit: Option<usize>,
}

impl From<ReadOptions> for ScanOptions {
    fn from(value: ReadOptions) -> Self {
        Self {
            projection: value.projection,
            limit: value.limit,
        }
    }
}

/// DataFusion extension to [`DeltaDataWriter`]: write the output of an execution plan.
#[async_trait::async_trait]
pub trait DeltaDataWriterExt {
    /// Execute `plan` (already containing any validation/repartition/CDC nodes)
    /// against `session` and write its output through the basic writer.
    async fn write_plan(
        self: Box<Self>,
        session: &dyn Session,
        plan: Arc<dyn ExecutionPlan>,
    ) -> DeltaResult<Vec<Add>>;
}

#[async_trait::async_trait]
impl DeltaDataWriterExt for DeltaWriter {
    async fn write_plan(
        self: Box<Self>,
        session: &dyn Session,
        plan: Arc<dyn ExecutionPlan>,
    ) -> DeltaResult<Vec<Add>> {
        let streams = execute_stream_partitioned(plan, session.task_ctx())?;
        self.write_all(sendable_streams_to_stream(streams)).await
    }
}

/// DataFusion extension to [`DeltaDataReader`]: a full scan with pushdown.
#[async_trait::async_trait]
pub trait DeltaDataReaderExt: DeltaDataReader {
    /// Scan the table through the DataFusion `DeltaScanNext` provider, returning
    /// a coalesced single-partition stream.
    ///
    /// `session` must have the table's object store registered — for
    /// [`DataFusionDataReader`], the session passed to
    /// [`try_new`](DataFusionDataReader::try_new) (which registers it) or one
    /// sharing that session's `RuntimeEnv`. A reader built via
    /// [`new`](DataFusionDataReader::new) registers nothing, and scanning with
    /// an unrelated session fails at execution with an
    /// "object store not registered" error.
    async fn scan(
        &self,
        session: &dyn Session,
        options: ScanOptions,
    ) -> DeltaResult<SendableRecordBatchStream>;
}

/// A DataFusion-backed reader wrapping the existing `DeltaScanNext` provider.
/// It carries its own session so it can also satisfy [`DeltaDataReader`].
pub struct DataFusionDataReader {
    provider: Arc<dyn TableProvider>,
    session: Arc<dyn Session>,
}

impl DataFusionDataReader {
    /// Create a reader from an already-built table provider and session.
    pub fn new(provider: Arc<dyn TableProvider>, session: Arc<dyn Session>) -> Self {
        Self { provider, session }
    }

    /// Build a reader for `table`, registering the table's object store with
    /// `session` (idempotent) and resolving the `DeltaScanNext` provider.
    pub async fn try_new(table: &DeltaTable, session: Arc<dyn Session>) -> DeltaResult<Self> {
        table.update_datafusion_session(session.as_ref())?;
        let provider = table.table_provider().await?;
        Ok(Self::new(provider, session))
    }
}

/// Resolve logical projection column names to their indices in `schema`.
/// Shared by [`DataFusionDataReader::scan`] and the `load` operation.
pub(crate) fn projection_indices(
    schema: &arrow_schema::Schema,
    columns: Option<&[String]>,
) -> DeltaResult<Option<Vec<usize>>> {
    columns
        .map(|cols| {
            cols.iter()
                .map(|col| {
                    schema
                        .column_with_name(col)
                        .map(|(idx, _)| idx)
                        .ok_or_else(|| DeltaTableError::SchemaMismatch {
                            msg: format!("Column '{col}' does not exist in table schema."),
                        })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
}

#[async_trait::async_trait]
impl DeltaDataReaderExt for DataFusionDataReader {
    async fn scan(
        &self,
        session: &dyn Session,
        options: ScanOptions,
    ) -> DeltaResult<SendableRecordBatchStream> {
        let projection =
            projection_indices(&self.provider.schema(), options.projection.as_deref())?;
        coalesce_provider_scan(&self.provider, session, projection.as_ref(), options.limit).await
    }
}

#[async_trait::async_trait]
impl DeltaDataReader for DataFusionDataReader {
    async fn read(&self, options: ReadOptions) -> DeltaResult<BatchStream> {
        let stream = self.scan(self.session.as_ref(), options.into()).await?;
        Ok(results_to_stream(stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use datafusion::prelude::SessionContext;
    use futures::stream::TryStreamExt as _;

    use crate::operations::create::CreateBuilder;
    use crate::writer::DeltaWriter as _;
    use crate::writer::RecordBatchWriter;
    use crate::writer::test_utils::{get_delta_schema, get_record_batch};

    #[tokio::test]
    async fn test_sendable_streams_to_stream_empty_is_empty() {
        // Empty input must not panic in `select_all`; it yields an empty stream.
        let mut stream = sendable_streams_to_stream(vec![]);
        assert!(stream.next().await.is_none());
    }

    /// Write a small unpartitioned table with one batch; returns the temp dir
    /// (kept alive for the on-disk files), the loaded table, and the row count.
    async fn table_with_one_batch() -> (tempfile::TempDir, DeltaTable, usize) {
        let schema = get_delta_schema();
        let tmp = tempfile::tempdir().unwrap();
        let mut table = CreateBuilder::new()
            .with_location(tmp.path().to_str().unwrap())
            .with_columns(schema.fields().cloned())
            .await
            .unwrap();

        let batch = get_record_batch(None, false);
        let rows = batch.num_rows();
        let mut writer = RecordBatchWriter::for_table(&table).unwrap();
        writer.write(batch).await.unwrap();
        writer.flush_and_commit(&mut table).await.unwrap();
        (tmp, table, rows)
    }

    fn session() -> Arc<dyn Session> {
        Arc::new(SessionContext::new().state())
    }

    #[tokio::test]
    async fn test_datafusion_data_reader_reads_all_rows() {
        // `try_new` + `read(default)` round-trips every written row through the
        // advanced (DataFusion-backed) reader.
        let (_tmp, table, rows) = table_with_one_batch().await;
        let reader = DataFusionDataReader::try_new(&table, session())
            .await
            .unwrap();

        let stream = reader.read(ReadOptions::default()).await.unwrap();
        let batches: Vec<_> = stream.try_collect().await.unwrap();

        let total: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(total, rows);
    }

    #[tokio::test]
    async fn test_datafusion_data_reader_projection() {
        // A column projection is resolved against the schema and applied to the scan.
        let (_tmp, table, _rows) = table_with_one_batch().await;
        let session = session();
        let reader = DataFusionDataReader::try_new(&table, session.clone())
            .await
            .unwrap();

        let options = ScanOptions {
            projection: Some(vec!["id".to_string()]),
            limit: None,
        };
        let stream = reader.scan(session.as_ref(), options).await.unwrap();

        assert_eq!(stream.schema().fields().len(), 1);
        assert_eq!(stream.schema().field(0).name(), "id");
    }

    #[tokio::test]
    async fn test_datafusion_data_reader_projection_unknown_column_errors() {
        // Projecting a column that isn't in the schema is a clear error, not a panic.
        let (_tmp, table, _rows) = table_with_one_batch().await;
        let session = session();
        let reader = DataFusionDataReader::try_new(&table, session.clone())
            .await
            .unwrap();

        let options = ScanOptions {
            projection: Some(vec!["does_not_exist".to_string()]),
            limit: None,
        };
        let err = reader
            .scan(session.as_ref(), options)
            .await
            .err()
            .expect("projecting an unknown column should error");
        assert!(
            matches!(err, DeltaTableError::SchemaMismatch { .. }),
            "got: {err:?}"
        );
    }
}
