//! Key lookups without planning: a table version's data files, resolved once,
//! read through DataFusion's Parquet scan with an equality predicate.
//!
//! A point query (`SELECT … FROM t WHERE id = $1`) spent almost all of its
//! time in the fixed cost of a statement — SQL planning, the optimizer, and
//! delta-rs replaying the snapshot's file list for every scan — not in
//! reading its row. A [`LookupTable`] does that work once per table version;
//! each lookup then builds a three-node plan (Parquet scan with the predicate
//! pushed into the decoder, filter, projection) over the cached file list and
//! DataFusion's Parquet metadata cache.
//!
//! Only tables whose files are plain Parquet with the table's columns qualify:
//! no deletion vectors, no column mapping, no partition columns (their values
//! are not in the files), no files outside the table's folder. Anything else
//! is planned the general way.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::config::TableParquetOptions;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::physical_plan::parquet::CachedParquetFileReaderFactory;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Operator;
use datafusion::parquet::file::metadata::PageIndexPolicy;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, Literal};
use datafusion::physical_expr::{conjunction, PhysicalExpr};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::ExecutionPlan;
use deltalake::{DeltaTable, ObjectMeta};
use futures::{StreamExt, TryStreamExt};

use crate::catalog::TableName;
use crate::error::{Error, Result};
use crate::read::provider::DeltaProvider;
use crate::read::row_cache::RowCache;

/// Tables of up to this many data files get their files' metadata read
/// when prepared.
const WARMED_FILES: usize = 256;

/// One version of a table, ready for lookups.
#[derive(Debug)]
pub struct LookupTable {
    /// The columns as DataFusion sees them (the same schema a planned query
    /// of the table has).
    schema: SchemaRef,
    store_url: ObjectStoreUrl,
    reader: Arc<CachedParquetFileReaderFactory>,
    files: Vec<PartitionedFile>,
    /// The Delta table's id and this version, which key its decoded rows.
    identity: (String, u64),
    cache: Arc<RowCache>,
}

impl LookupTable {
    /// Prepares a loaded table, or `None` when its files need the general
    /// Delta scan (see the module's comment).
    pub async fn try_new(
        name: &TableName,
        table: &crate::Table,
        runtime: &RuntimeEnv,
        rows: Arc<RowCache>,
    ) -> Result<Option<Self>> {
        let table = table.delta();
        let Some(identity) = identity_of(table) else {
            return Ok(None);
        };
        let provider = DeltaProvider::of_delta(name.clone(), table.clone())?;
        if provider.declared_column_names() != column_names(provider.schema()) {
            return Ok(None);
        }
        let snapshot = provider.snapshot()?;
        let column_mapping = snapshot
            .metadata()
            .configuration()
            .get("delta.columnMapping.mode")
            .is_some_and(|mode| !mode.eq_ignore_ascii_case("none"));
        if column_mapping || !snapshot.metadata().partition_columns().is_empty() {
            return Ok(None);
        }
        let mut files = Vec::new();
        for file in snapshot.log_data().iter() {
            let path = file.path();
            if file.deletion_vector_descriptor().is_some() || path.contains("://") {
                return Ok(None);
            }
            let Ok(size) = u64::try_from(file.size()) else {
                return Ok(None);
            };
            // Files never change once written: a fixed modification time
            // keeps DataFusion's metadata cache valid for them.
            files.push(PartitionedFile::from(ObjectMeta {
                location: file.object_store_path(),
                size,
                last_modified: Utc.timestamp_nanos(0),
                e_tag: None,
                version: None,
            }));
        }
        let log_store = table.log_store();
        let store_url = log_store.object_store_url();
        let store = log_store.object_store(None);
        if runtime.object_store(&store_url).is_err() {
            runtime.register_object_store(store_url.as_ref(), Arc::clone(&store));
        }
        let cache = runtime.cache_manager.get_file_metadata_cache();
        // DataFusion's scan asks the metadata cache for the footer only and
        // then reads the page index from the file on every open; a footer
        // cached with its page index is used as it is. So cache each file's
        // whole metadata once (for tables of not too many files).
        if files.len() <= WARMED_FILES {
            for file in &files {
                DFParquetMetadata::new(store.as_ref(), &file.object_meta)
                    .with_file_metadata_cache(Some(Arc::clone(&cache)))
                    .with_page_index_policy(Some(PageIndexPolicy::Optional))
                    .fetch_metadata()
                    .await
                    .map_err(|source| Error::DataFusion {
                        what: "reading a data file's metadata",
                        source: Box::new(source),
                    })?;
            }
        }
        let reader = Arc::new(CachedParquetFileReaderFactory::new(store, cache));
        Ok(Some(Self {
            schema: provider.schema(),
            store_url,
            reader,
            files,
            identity,
            cache: rows,
        }))
    }

    /// The columns, as a planned query of the table sees them.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The rows whose columns equal the given values, with the columns
    /// `output` (index into [`Self::schema`], output name). A key's value
    /// must already have its column's type.
    ///
    /// From the decoded rows in the [`RowCache`] when the table fits it,
    /// otherwise read through Parquet with the keys pushed into the decoder.
    /// `context` is asked for only when files are read (making one clones
    /// the session's function registries, which cost more than a cached
    /// lookup).
    pub async fn execute(
        &self,
        output: &[(usize, String)],
        keys: &[(usize, ScalarValue)],
        context: impl Fn() -> Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let out_schema = Arc::new(Schema::new(
            output
                .iter()
                .map(|(i, name)| self.schema.field(*i).as_ref().clone().with_name(name))
                .collect::<Vec<_>>(),
        ));
        let all_keys = conjunction(
            keys.iter()
                .map(|(column, value)| equals(self.schema.field(*column).name(), *column, value)),
        );
        if let Some(rows) = self.cached_rows(keys, &context).await? {
            let columns: Vec<usize> = output.iter().map(|(i, _)| *i).collect();
            let batch = matching(&rows, &all_keys, &columns, &out_schema)
                .map_err(|e| plan_error("reading cached rows", e))?;
            let rows = futures::stream::iter([Ok(batch)]);
            return Ok(Box::pin(RecordBatchStreamAdapter::new(out_schema, rows)));
        }
        // Read the output columns and the key columns, in that order.
        let mut read: Vec<usize> = output.iter().map(|(i, _)| *i).collect();
        for (i, _) in keys {
            if !read.contains(i) {
                read.push(*i);
            }
        }
        let read_schema = self
            .schema
            .project(&read)
            .map_err(|e| plan_error("planning a lookup", e.into()))?;
        // The same predicate over the columns read, to filter each batch.
        let on_read = conjunction(keys.iter().filter_map(|(column, value)| {
            let at = read.iter().position(|i| i == column)?;
            Some(equals(read_schema.field(at).name(), at, value))
        }));
        let rows = self
            .scan(self.files.clone(), Some(read), Some(all_keys))?
            .execute(0, context())
            .map_err(|e| plan_error("planning a lookup", e))?;
        // The decoder's row filter already dropped most other rows; this
        // keeps the answer exact where a column cannot be filtered there.
        // (FilterExec and ProjectionExec would cost more to build than the
        // lookup takes to run.)
        let columns: Vec<usize> = (0..output.len()).collect();
        let schema = Arc::clone(&out_schema);
        let batches = rows.map(move |batch| matching(&batch?, &on_read, &columns, &schema));
        Ok(Box::pin(RecordBatchStreamAdapter::new(out_schema, batches)))
    }

    /// The rows that may match `keys`, from the row cache, found by the
    /// first key whose column is indexed; `None` when the table does not
    /// fit the cache or no key's column can be indexed.
    async fn cached_rows(
        &self,
        keys: &[(usize, ScalarValue)],
        context: &impl Fn() -> Arc<TaskContext>,
    ) -> Result<Option<RecordBatch>> {
        let (id, version) = &self.identity;
        let load = |file| self.read_file(file, context());
        let rows = self
            .cache
            .rows(id, *version, &self.schema, &self.files, load);
        let Some(rows) = rows.await? else {
            return Ok(None);
        };
        for (column, value) in keys {
            if let Some(found) = rows.candidates(*column, value)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// All rows of one of the table's files, with the table's columns.
    async fn read_file(
        &self,
        file: PartitionedFile,
        context: Arc<TaskContext>,
    ) -> Result<RecordBatch> {
        let read_error = |e| plan_error("reading a data file for lookups", e);
        let stream = self
            .scan(vec![file], None, None)?
            .execute(0, context)
            .map_err(read_error)?;
        let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(read_error)?;
        let batch = concat_batches(&self.schema, &batches).map_err(|e| read_error(e.into()))?;
        // Concatenated string views keep every batch's buffers; taking a row
        // would clone them all. Compact them into a few.
        let columns = batch
            .columns()
            .iter()
            .map(|column| match column.as_string_view_opt() {
                Some(views) => Arc::new(views.gc()) as ArrayRef,
                None => Arc::clone(column),
            })
            .collect();
        RecordBatch::try_new(Arc::clone(&self.schema), columns).map_err(|e| read_error(e.into()))
    }

    /// A Parquet scan of `files` reading the columns `read` (all when
    /// `None`), with `predicate` pushed into the decoder.
    fn scan(
        &self,
        files: Vec<PartitionedFile>,
        read: Option<Vec<usize>>,
        predicate: Option<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<DataSourceExec>> {
        let mut options = TableParquetOptions::default();
        options.global.pushdown_filters = predicate.is_some();
        options.global.reorder_filters = predicate.is_some();
        let mut source = ParquetSource::new(TableSchema::builder(Arc::clone(&self.schema)).build())
            .with_table_parquet_options(options)
            .with_parquet_file_reader_factory(Arc::clone(&self.reader) as _);
        if let Some(predicate) = predicate {
            source = source.with_predicate(predicate);
        }
        let scan = FileScanConfigBuilder::new(self.store_url.clone(), Arc::new(source))
            .with_file_groups(vec![FileGroup::new(files)])
            .with_projection_indices(read)
            .map_err(|e| plan_error("planning a lookup", e))?
            .build();
        Ok(DataSourceExec::from_data_source(scan))
    }
}

/// The rows of `batch` where `keep` holds, with its first columns
/// `columns` under `schema`'s names.
fn matching(
    batch: &RecordBatch,
    keep: &Arc<dyn PhysicalExpr>,
    columns: &[usize],
    schema: &SchemaRef,
) -> datafusion::error::Result<RecordBatch> {
    let keep = keep.evaluate(batch)?.into_array(batch.num_rows())?;
    let Some(keep) = keep.as_any().downcast_ref::<BooleanArray>() else {
        return Err(DataFusionError::Internal(
            "a key predicate that is not boolean".into(),
        ));
    };
    let batch = filter_record_batch(batch, keep)?;
    let columns = columns
        .iter()
        .map(|i| batch.columns().get(*i).cloned())
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| DataFusionError::Internal("a lookup's column is missing".into()))?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

fn plan_error(what: &'static str, source: DataFusionError) -> Error {
    Error::DataFusion {
        what,
        source: Box::new(source),
    }
}

/// `column = value`, `column` at `index` of the batches it is applied to.
fn equals(column: &str, index: usize, value: &ScalarValue) -> Arc<dyn PhysicalExpr> {
    Arc::new(BinaryExpr::new(
        Arc::new(Column::new(column, index)),
        Operator::Eq,
        Arc::new(Literal::new(value.clone())),
    ))
}

fn column_names(schema: SchemaRef) -> Vec<String> {
    schema.fields().iter().map(|f| f.name().clone()).collect()
}

/// Which table and version `table` is: its id in the Delta metadata (a
/// table dropped and created again under the same name has another) and
/// its version.
pub fn table_identity(table: &crate::Table) -> Option<(String, u64)> {
    identity_of(table.delta())
}

fn identity_of(table: &DeltaTable) -> Option<(String, u64)> {
    let state = table.snapshot().ok()?;
    let snapshot = state.snapshot();
    Some((snapshot.metadata().id().to_string(), snapshot.version()))
}

/// `value` as a value of type `to` when that changes nothing about the
/// comparison (same type, an integer that fits, text to text); `None`
/// otherwise, and the statement is planned the general way, which coerces
/// as Postgres would.
pub fn key_value(value: &ScalarValue, to: &DataType) -> Option<ScalarValue> {
    let from = value.data_type();
    if &from == to {
        return Some(value.clone());
    }
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let exact = (from.is_integer() && to.is_integer()) || (text(&from) && text(to));
    if !exact {
        return None;
    }
    let cast = value.cast_to(to).ok()?;
    // An integer that did not fit comes back different.
    match cast.cast_to(&from) {
        Ok(back) if &back == value => Some(cast),
        _ => None,
    }
}
