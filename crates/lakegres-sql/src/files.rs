//! Reading files in SQL: `read_files(path, format => 'csv', header => true,
//! …)`, `csv.\`path\`` (also `json`, `parquet`), `list_files(path)` and
//! `LIST 'path'`. Every path goes through the session's [`FileRoots`].
//!
//! Files are read by DataFusion's file scans over the files a listing
//! found (with their sizes, so nothing is asked of the store before they
//! are read), so hidden files (`_SUCCESS`, `.crc`) are never read, as in
//! Spark.
//! CSV follows Spark's reader options: without `header` the columns are
//! `_c0, _c1, …`; without `inferSchema` every column is a string.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray, TimestampMillisecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::catalog::{SchemaProvider, Session as DfSession, TableFunctionImpl};
use datafusion::common::{plan_err, DataFusionError, Result as DFResult, ScalarValue};
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::json::JsonFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::datasource::TableProvider;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use futures::{StreamExt, TryStreamExt};
use lakegres_delta::{FileEntry, FileRoots, Location};

use crate::error::class;
use crate::error::{Error, Result};

/// A file format and its reader options (keys lower-case).
#[derive(Debug, Clone)]
pub(crate) struct FileSpec {
    pub format: String,
    pub options: HashMap<String, String>,
}

impl FileSpec {
    pub fn new(format: &str, options: impl IntoIterator<Item = (String, String)>) -> Self {
        Self {
            format: format.to_lowercase(),
            options: options
                .into_iter()
                .map(|(k, v)| (k.to_lowercase(), v))
                .collect(),
        }
    }

    fn flag(&self, key: &str) -> bool {
        self.options
            .get(key)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }

    fn byte(&self, keys: &[&str], default: u8) -> Result<u8> {
        match keys.iter().find_map(|k| self.options.get(*k)) {
            None => Ok(default),
            Some(v) if v.len() == 1 => Ok(v.as_bytes()[0]),
            Some(v) if v == "\\t" => Ok(b'\t'),
            Some(v) => Err(Error::InvalidParameter {
                message: format!("{} must be one character, not {v:?}", keys[0]),
            }),
        }
    }

    fn format(&self) -> Result<Arc<dyn FileFormat>> {
        match self.format.as_str() {
            "csv" => {
                let mut csv = CsvFormat::default()
                    .with_has_header(self.flag("header"))
                    .with_delimiter(self.byte(&["delimiter", "sep"], b',')?)
                    .with_quote(self.byte(&["quote"], b'"')?);
                if let Some(e) = self.options.get("escape") {
                    if e.len() == 1 {
                        csv = csv.with_escape(Some(e.as_bytes()[0]));
                    }
                }
                Ok(Arc::new(csv))
            }
            "json" => {
                if self.flag("multiline") {
                    return Err(Error::not_supported("JSON with multiLine = true"));
                }
                Ok(Arc::new(JsonFormat::default()))
            }
            "parquet" => Ok(Arc::new(ParquetFormat::default())),
            other => Err(Error::not_supported(format!("file format {other}"))),
        }
    }
}

/// A table over `files` (all of one format), its schema inferred as Spark's
/// reader would.
pub(crate) async fn file_table(
    state: &dyn DfSession,
    files: &[FileEntry],
    spec: &FileSpec,
) -> Result<Arc<dyn TableProvider>> {
    /// CSV and JSON schemas are read from the first files until enough
    /// rows are seen (DataFusion's `schema_infer_max_rec`), at most this
    /// many; a Parquet schema from the first file, as Spark reads it
    /// without `mergeSchema`. Planning time does not grow with the files.
    const SCHEMA_FROM: usize = 1_000;

    let Some(first) = files.first() else {
        return Err(Error::analysis(class::PATH_NOT_FOUND, "no files to read"));
    };
    let format = spec.format()?;
    let url = file_url(&first.path)?;
    let store = state.runtime_env().object_store(url.object_store())?;
    let sample = if spec.format == "parquet" {
        1
    } else {
        SCHEMA_FROM
    };
    let metas = files
        .iter()
        .take(sample)
        .map(|f| Ok(object_meta(&file_url(&f.path)?, f)))
        .collect::<Result<Vec<_>>>()?;
    let inferred = format.infer_schema(state, &store, &metas).await?;
    let schema = spark_schema(&inferred, spec);
    let files: Vec<&FileEntry> = files.iter().collect();
    Ok(Arc::new(KnownFiles::try_new(format, schema, &files)?))
}

/// The files of a load, in tables of files that share a schema: one table
/// per distinct schema, each with the indexes into `files` it reads. Each
/// file's schema is read on its own (CSV columns are read by position, so
/// files whose headers differ cannot share a table); `Err((i, e))` names
/// the file that could not be read.
pub(crate) async fn file_tables(
    state: &dyn DfSession,
    files: &[FileEntry],
    spec: &FileSpec,
) -> std::result::Result<Vec<(Vec<usize>, Arc<dyn TableProvider>)>, (usize, Error)> {
    use futures::{StreamExt as _, TryStreamExt as _};
    /// Files whose schemas are read at once.
    const AT_ONCE: usize = 16;

    let format = spec.format().map_err(|e| (0, e))?;
    // Grouped as they are read: one schema kept per group, not per file.
    let mut groups: Vec<(SchemaRef, Vec<usize>)> = Vec::new();
    // The futures of a chunk of files are made before they are streamed (a
    // closure in the stream would make the statement's future not `Send`),
    // a chunk at a time so that they take bounded memory.
    for (c, chunk) in files.chunks(AT_ONCE * 64).enumerate() {
        let first = c * AT_ONCE * 64;
        let reads: Vec<_> = chunk
            .iter()
            .enumerate()
            .map(|(i, file)| {
                let format = Arc::clone(&format);
                async move {
                    let schema = file_schema(state, file, format.as_ref(), spec).await;
                    schema.map(|s| (first + i, s)).map_err(|e| (first + i, e))
                }
            })
            .collect();
        let mut schemas = futures::stream::iter(reads).buffered(AT_ONCE);
        while let Some((i, schema)) = schemas.try_next().await? {
            match groups.iter_mut().find(|(s, _)| *s == schema) {
                Some((_, members)) => members.push(i),
                None => groups.push((schema, vec![i])),
            }
        }
    }
    let mut tables = Vec::with_capacity(groups.len());
    for (schema, members) in groups {
        let group: Vec<&FileEntry> = members.iter().map(|&i| &files[i]).collect();
        let table = KnownFiles::try_new(Arc::clone(&format), schema, &group)
            .map_err(|e| (members[0], e))?;
        tables.push((members, Arc::new(table) as Arc<dyn TableProvider>));
    }
    Ok(tables)
}

/// A table over files already listed, with their sizes: unlike a listing
/// table over file paths it asks the store nothing before reading them
/// (a listing table looks up each path first: a request per file on
/// object storage).
#[derive(Debug)]
struct KnownFiles {
    format: Arc<dyn FileFormat>,
    /// The columns as the files name them.
    file_schema: SchemaRef,
    /// The columns as SQL names them: lower case (see [`sql_names`]).
    schema: SchemaRef,
    store: ObjectStoreUrl,
    files: Vec<PartitionedFile>,
}

/// The file's columns in lower case, as SQL names them: an unquoted `ID` or
/// `id` is the file's `ID` (Databricks resolves names case-insensitively;
/// DataFusion folds unquoted names to lower case and then matches exactly).
/// Left as they are when two would become one.
fn sql_names(schema: &SchemaRef) -> SchemaRef {
    let lower: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name().to_lowercase())
        .collect();
    let distinct: std::collections::HashSet<&String> = lower.iter().collect();
    if distinct.len() < lower.len()
        || schema
            .fields()
            .iter()
            .zip(&lower)
            .all(|(f, l)| f.name() == l)
    {
        return Arc::clone(schema);
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .zip(lower)
        .map(|(f, name)| f.as_ref().clone().with_name(name))
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

impl KnownFiles {
    fn try_new(
        format: Arc<dyn FileFormat>,
        schema: SchemaRef,
        files: &[&FileEntry],
    ) -> Result<Self> {
        let mut store = None;
        let mut known = Vec::with_capacity(files.len());
        for file in files {
            let url = file_url(&file.path)?;
            let here = url.object_store();
            match &store {
                None => store = Some(here),
                Some(s) if *s == here => {}
                Some(s) => {
                    return Err(Error::InvalidParameter {
                        message: format!(
                            "files of one load must be in one store, not {} and {}",
                            s.as_str(),
                            here.as_str()
                        ),
                    })
                }
            }
            known.push(PartitionedFile::new_from_meta(object_meta(&url, file)));
        }
        let store =
            store.ok_or_else(|| Error::analysis(class::PATH_NOT_FOUND, "no files to read"))?;
        Ok(Self {
            format,
            schema: sql_names(&schema),
            file_schema: schema,
            store,
            files: known,
        })
    }
}

#[async_trait]
impl TableProvider for KnownFiles {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> datafusion::datasource::TableType {
        datafusion::datasource::TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        // Contiguous runs of files, one per partition, so each is read in
        // its listed order.
        let partitions = state.config().target_partitions().max(1);
        let per_group = self.files.len().div_ceil(partitions).max(1);
        let groups: Vec<FileGroup> = self
            .files
            .chunks(per_group)
            .map(|c| FileGroup::new(c.to_vec()))
            .collect();
        let source = self
            .format
            .file_source(TableSchema::from(Arc::clone(&self.file_schema)));
        let config = FileScanConfigBuilder::new(self.store.clone(), source)
            .with_file_groups(groups)
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .build();
        let scan = self.format.create_physical_plan(state, config).await?;
        // `sql_names` hands the files' schema back when no name changes.
        if Arc::ptr_eq(&self.schema, &self.file_schema) {
            return Ok(scan);
        }
        // The files' names as SQL's.
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let renamed: Vec<(Arc<dyn datafusion::physical_plan::PhysicalExpr>, String)> = columns
            .iter()
            .enumerate()
            .map(|(at, &i)| {
                let expr = datafusion::physical_expr::expressions::Column::new(
                    self.file_schema.field(i).name(),
                    at,
                );
                (Arc::new(expr) as _, self.schema.field(i).name().clone())
            })
            .collect();
        Ok(Arc::new(
            datafusion::physical_plan::projection::ProjectionExec::try_new(renamed, scan)?,
        ))
    }
}

/// What the store would say of a listed file (the path as the listing
/// table URL keeps it: encoded once).
fn object_meta(url: &ListingTableUrl, file: &FileEntry) -> datafusion::object_store::ObjectMeta {
    datafusion::object_store::ObjectMeta {
        location: url.prefix().clone(),
        last_modified: chrono::DateTime::from_timestamp_millis(file.modified_ms)
            .unwrap_or_default(),
        size: file.size,
        e_tag: None,
        version: None,
    }
}

/// One file's schema, as Spark's reader would see it.
async fn file_schema(
    state: &dyn DfSession,
    file: &FileEntry,
    format: &dyn FileFormat,
    spec: &FileSpec,
) -> Result<SchemaRef> {
    let url = file_url(&file.path)?;
    let store = state.runtime_env().object_store(url.object_store())?;
    let inferred = format
        .infer_schema(state, &store, &[object_meta(&url, file)])
        .await?;
    Ok(spark_schema(&inferred, spec))
}

/// CSV as Spark reads it: `_cN` names without a header, strings without
/// `inferSchema`.
fn spark_schema(inferred: &SchemaRef, spec: &FileSpec) -> SchemaRef {
    if spec.format != "csv" {
        return Arc::clone(inferred);
    }
    let infer = spec.flag("inferschema");
    let header = spec.flag("header");
    let fields: Vec<Field> = inferred
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let name = if header {
                f.name().clone()
            } else {
                format!("_c{i}")
            };
            let data_type = if infer {
                f.data_type().clone()
            } else {
                DataType::Utf8
            };
            Field::new(name, data_type, true)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

fn file_url(path: &str) -> Result<ListingTableUrl> {
    ListingTableUrl::parse(path).map_err(Error::DataFusion)
}

/// The files a path names (the file, or the files under the folder), which
/// must exist. A local path is checked first (listing a missing folder
/// fails); an object store's is listed first and looked up only when the
/// listing is empty, as an empty listing is how a missing prefix shows:
/// two requests fewer per statement.
pub(crate) async fn files_at(roots: &FileRoots, path: &str) -> Result<(Location, Vec<FileEntry>)> {
    let real = located(roots, path).await?;
    let entries = roots.list(&real).await?;
    if entries.is_empty() && !real.exists().await? {
        return Err(missing_path(path));
    }
    Ok((real, entries))
}

/// Where `path` points inside the roots; a local path must exist (an
/// object store's is known to by its listing).
async fn located(roots: &FileRoots, path: &str) -> Result<Location> {
    let real = roots.resolve(path).await?;
    if matches!(real, Location::Local(_)) && !real.exists().await? {
        return Err(missing_path(path));
    }
    Ok(real)
}

fn missing_path(path: &str) -> Error {
    Error::analysis(
        class::PATH_NOT_FOUND,
        format!("path does not exist: {path}"),
    )
}

/// The rows of `LIST 'path'` and `list_files(path)`: the entries directly
/// in the folder (folders end with `/`), in name order, a batch of
/// [`LISTED_PER_BATCH`] rows at a time, each listed as the client takes
/// the one before (see [`FileRoots::list_pages`]). The path must exist
/// (checked as for [`files_at`]), which the first batch settles.
pub(crate) async fn listing(roots: &FileRoots, path: &str) -> Result<SendableRecordBatchStream> {
    let real = located(roots, path).await?;
    let mut pages = roots.list_pages(&real, LISTED_PER_BATCH);
    let first = pages.try_next().await?.unwrap_or_default();
    if first.is_empty() && !real.exists().await? {
        return Err(missing_path(path));
    }
    let batches = futures::stream::once(async move { Ok(first) })
        .chain(pages)
        .map(|page| {
            page.map_err(Error::from)
                .and_then(|page| listing_batch(&page))
                .map_err(external)
        });
    Ok(Box::pin(RecordBatchStreamAdapter::new(
        listing_schema(),
        batches,
    )))
}

/// Rows per batch of a listing.
const LISTED_PER_BATCH: usize = 8_192;

fn listing_batch(entries: &[FileEntry]) -> Result<RecordBatch> {
    let batch = RecordBatch::try_new(
        listing_schema(),
        vec![
            Arc::new(StringArray::from_iter_values(entries.iter().map(|e| {
                if e.is_dir && !e.path.ends_with('/') {
                    format!("{}/", e.path)
                } else {
                    e.path.clone()
                }
            }))) as ArrayRef,
            Arc::new(StringArray::from_iter_values(
                entries.iter().map(|e| e.name.as_str()),
            )),
            Arc::new(Int64Array::from_iter_values(
                entries
                    .iter()
                    .map(|e| i64::try_from(e.size).unwrap_or(i64::MAX)),
            )),
            Arc::new(
                TimestampMillisecondArray::from_iter_values(entries.iter().map(|e| e.modified_ms))
                    .with_timezone("UTC"),
            ),
        ],
    )
    .map_err(DataFusionError::from)?;
    Ok(batch)
}

/// `path, name, size, modification_time`, as Databricks' LIST.
pub(crate) fn listing_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("size", DataType::Int64, false),
        Field::new(
            "modification_time",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
    ]))
}

/// Runs a future from a synchronous DataFusion callback (table functions
/// are planned synchronously; reading a file's schema is async).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(f))
}

fn literal_text(e: &Expr) -> DFResult<String> {
    match e {
        Expr::Literal(v, _) => match v {
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s)) => Ok(s.clone()),
            ScalarValue::Boolean(Some(b)) => Ok(b.to_string()),
            other if !other.is_null() => Ok(other.to_string()),
            _ => plan_err!("file function arguments must not be NULL"),
        },
        other => plan_err!("file function arguments must be literals, not {other}"),
    }
}

fn external(e: Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// `read_files(path, 'key', 'value', …)` — the session rewrites
/// `key => value` arguments into pairs before planning.
#[derive(Debug)]
pub(crate) struct ReadFiles {
    pub roots: Arc<FileRoots>,
}

impl TableFunctionImpl for ReadFiles {
    fn call_with_args(
        &self,
        args: datafusion::catalog::TableFunctionArgs,
    ) -> DFResult<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        let Some((path, rest)) = exprs.split_first() else {
            return plan_err!("read_files needs a path");
        };
        let path = literal_text(path)?;
        if rest.len() % 2 != 0 {
            return plan_err!("read_files options come as name => value");
        }
        let mut options = Vec::new();
        for pair in rest.chunks(2) {
            options.push((literal_text(&pair[0])?, literal_text(&pair[1])?));
        }
        let format = options
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("format"))
            .map(|(_, v)| v.clone());
        let (_, files) = block_on(files_at(&self.roots, &path)).map_err(external)?;
        let format = match format {
            Some(f) => f,
            None => guess_format(&files).map_err(external)?,
        };
        let spec = FileSpec::new(&format, options);
        block_on(file_table(args.session(), &files, &spec)).map_err(external)
    }
}

/// The format of files from their extension, as read_files does without
/// `format`.
fn guess_format(files: &[FileEntry]) -> Result<String> {
    let ext = files
        .first()
        .and_then(|f| Path::new(&f.path).extension())
        .map(|e| e.to_string_lossy().to_lowercase());
    match ext.as_deref() {
        Some("csv") | Some("tsv") => Ok("csv".into()),
        Some("json") | Some("jsonl") | Some("ndjson") => Ok("json".into()),
        Some("parquet") => Ok("parquet".into()),
        _ => Err(Error::InvalidParameter {
            message: "read_files cannot tell the format: pass format => 'csv' | 'json' | 'parquet'"
                .into(),
        }),
    }
}

/// `list_files(path)`: the LIST rows as a table, listed when the query
/// runs and as it takes rows (a `LIMIT` stops the listing).
#[derive(Debug)]
pub(crate) struct ListFiles {
    pub roots: Arc<FileRoots>,
}

impl TableFunctionImpl for ListFiles {
    fn call_with_args(
        &self,
        args: datafusion::catalog::TableFunctionArgs,
    ) -> DFResult<Arc<dyn TableProvider>> {
        let [path] = args.exprs() else {
            return plan_err!("list_files takes one path");
        };
        let listing = Listing {
            roots: Arc::clone(&self.roots),
            path: literal_text(path)?,
            schema: listing_schema(),
        };
        Ok(Arc::new(StreamingTable::try_new(
            listing_schema(),
            vec![Arc::new(listing)],
        )?))
    }
}

/// The listing of one path, as the one partition of `list_files`.
#[derive(Debug)]
struct Listing {
    roots: Arc<FileRoots>,
    path: String,
    schema: SchemaRef,
}

impl PartitionStream for Listing {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (roots, path) = (Arc::clone(&self.roots), self.path.clone());
        let batches =
            futures::stream::once(async move { listing(&roots, &path).await.map_err(external) })
                .try_flatten();
        Box::pin(RecordBatchStreamAdapter::new(listing_schema(), batches))
    }
}

/// The schemas `csv`, `json`, `parquet`: a table name is a path.
pub(crate) struct FormatSchema {
    pub format: &'static str,
    pub roots: Arc<FileRoots>,
    pub runtime: Arc<datafusion::execution::runtime_env::RuntimeEnv>,
}

impl std::fmt::Debug for FormatSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FormatSchema")
            .field("format", &self.format)
            .finish()
    }
}

#[async_trait]
impl SchemaProvider for FormatSchema {
    fn table_names(&self) -> Vec<String> {
        Vec::new()
    }

    async fn table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        let (_, files) = files_at(&self.roots, name).await.map_err(external)?;
        let spec = FileSpec::new(self.format, []);
        let state = datafusion::execution::session_state::SessionStateBuilder::new()
            .with_runtime_env(Arc::clone(&self.runtime))
            .with_default_features()
            .build();
        Ok(Some(
            file_table(&state, &files, &spec).await.map_err(external)?,
        ))
    }

    fn table_exist(&self, _name: &str) -> bool {
        true
    }
}
