//! New data files of a table, laid out as every write of ours lays them
//! out: the writer properties (`writer_properties`), a writer of one
//! statement's files (`FileWriter`) and one that encodes on another task
//! (`BackgroundWriter`).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::SchemaRef;
use deltalake::kernel::{Add, EagerSnapshot};
use deltalake::logstore::LogStoreRef;
use deltalake::operations::write::writer::{DeltaWriter, WriterConfig};
use deltalake::operations::write::WriterStatsConfig;
use deltalake::parquet::basic::Compression;
use deltalake::parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};

/// Rows per Parquet data page at most. delta-rs leaves Parquet's 20,000:
/// a lookup by key, pruned by the page index to one page, then decompresses
/// 20,000 rows of every column it reads, which was most of its time.
const PAGE_ROWS: usize = 4096;

/// Dictionary page size at most (Parquet's default is 1 MiB). A reader
/// decompresses a column's whole dictionary page before any of its data
/// pages, so a lookup paid for 1 MiB per high-cardinality column; past this
/// size a column falls back to plain encoding, as it would past 1 MiB.
const DICTIONARY_PAGE_BYTES: usize = 128 * 1024;

/// Rows per Parquet row group at most (Parquet's default is 1 Mi). A scan
/// splits a file between its threads by row group, so a table of a million
/// rows in one group was read by one thread; DuckDB writes about 120k.
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// How every data file we write is written: delta-rs' defaults (Snappy)
/// with smaller row groups, data pages and dictionary pages.
pub fn writer_properties() -> WriterProperties {
    WriterProperties::builder()
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!(
            "lakegres version {} (delta-rs)",
            env!("CARGO_PKG_VERSION")
        ))
        .set_compression(Compression::SNAPPY)
        .set_data_page_row_count_limit(PAGE_ROWS)
        .set_dictionary_page_size_limit(DICTIONARY_PAGE_BYTES)
        .build()
}

/// The batch under the table's declared column names and types (its
/// columns are the table's, in order).
pub(crate) fn relabel(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(Arc::clone(c))
            } else {
                cast(c, f.data_type())
            }
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .and_then(|columns| RecordBatch::try_new(Arc::clone(schema), columns));
    columns.map_err(|e| Error::DataFusion {
        what: "shaping rows for the table",
        source: Box::new(e.into()),
    })
}

/// New data files for the table at `snapshot`, laid out as its other
/// writes lay them out (partitioning, statistics, writer properties).
pub(crate) struct FileWriter {
    name: String,
    schema: SchemaRef,
    /// The files' schema on a column-mapped table (physical names).
    physical: Option<SchemaRef>,
    writer: DeltaWriter,
}

impl FileWriter {
    pub(crate) fn new(name: &str, snapshot: &EagerSnapshot, log_store: &LogStoreRef) -> Self {
        let schema = snapshot.arrow_schema();
        let stats = WriterStatsConfig::from_config(snapshot.table_configuration());
        let mut partition_columns = snapshot.metadata().partition_columns().to_vec();
        let physical =
            if crate::table::features::column_mapping(snapshot.metadata().configuration()) {
                let table = snapshot.schema();
                for column in &mut partition_columns {
                    if let Some(field) = table.field(column.as_str()) {
                        *column = crate::table::column_mapping::physical_name(field).to_string();
                    }
                }
                Some(crate::table::column_mapping::physical_schema(
                    &schema, &table,
                ))
            } else {
                None
            };
        let config = WriterConfig::new(
            physical.clone().unwrap_or_else(|| Arc::clone(&schema)),
            partition_columns,
            Some(writer_properties()),
            None,
            None,
            stats.num_indexed_cols,
            stats.stats_columns,
        );
        Self {
            name: name.to_string(),
            schema,
            physical,
            writer: DeltaWriter::new(log_store.object_store(None), config),
        }
    }

    /// Writes `batch`, whose columns are the table's in order (any names).
    pub(crate) async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let mut batch = relabel(batch, &self.schema)?;
        if let Some(physical) = &self.physical {
            batch = crate::table::column_mapping::to_physical(&batch, physical).map_err(|e| {
                Error::DataFusion {
                    what: "naming columns by their physical names",
                    source: Box::new(e.into()),
                }
            })?;
        }
        self.writer
            .write(&batch)
            .await
            .map_err(|e| Error::delta("writing", self.name.clone(), e))
    }

    /// Closes the open files; their Add actions.
    pub(crate) async fn finish(self) -> Result<Vec<Add>> {
        self.writer
            .close()
            .await
            .map_err(|e| Error::delta("writing", self.name, e))
    }
}

/// A [`FileWriter`] on a task of its own, fed through a short queue: the
/// Parquet encoding of a rewrite runs beside the scan and join that make
/// its rows (on another core) instead of between their batches. Dropped
/// unfinished (the statement failed or was cancelled), it stops the task;
/// the files it wrote are in no commit.
pub(crate) struct BackgroundWriter {
    rows: Option<tokio::sync::mpsc::Sender<RecordBatch>>,
    task: Option<tokio::task::JoinHandle<Result<Vec<Add>>>>,
}

impl BackgroundWriter {
    pub(crate) fn new(writer: FileWriter) -> Self {
        let (rows, mut queue) = tokio::sync::mpsc::channel::<RecordBatch>(4);
        let task = tokio::spawn(async move {
            let mut writer = writer;
            while let Some(batch) = queue.recv().await {
                writer.write(&batch).await?;
            }
            writer.finish().await
        });
        Self {
            rows: Some(rows),
            task: Some(task),
        }
    }

    /// Queues `batch`, whose columns are the table's in order (any names).
    pub(crate) async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let sent = match &self.rows {
            Some(rows) => rows.send(batch).await.is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        // The task stopped early: its error.
        match self.join().await {
            Err(e) => Err(e),
            Ok(_) => Err(Error::Internal("the file writer stopped early".into())),
        }
    }

    /// Writes what is queued and closes the files; their Add actions.
    pub(crate) async fn finish(mut self) -> Result<Vec<Add>> {
        self.join().await
    }

    async fn join(&mut self) -> Result<Vec<Add>> {
        self.rows = None;
        let Some(task) = self.task.take() else {
            return Err(Error::Internal("the file writer is gone".into()));
        };
        task.await
            .map_err(|e| Error::Internal(format!("the file writer failed: {e}")))?
    }
}

impl Drop for BackgroundWriter {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The table's root URL, ending in `/` (what its file paths join onto).
pub(crate) fn table_root(log_store: &dyn deltalake::logstore::LogStore) -> url::Url {
    let mut root = log_store.root_url().clone();
    if !root.path().ends_with('/') {
        let path = format!("{}/", root.path());
        root.set_path(&path);
    }
    root
}
