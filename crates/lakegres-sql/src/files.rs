//! Reading files in SQL: `read_files(path, format => 'csv', header => true,
//! …)`, `csv.\`path\`` (also `json`, `parquet`), `list_files(path)` and
//! `LIST 'path'`. Every path goes through the session's [`FileRoots`].
//!
//! Files are read by DataFusion's listing tables over an explicit list of
//! files, so hidden files (`_SUCCESS`, `.crc`) are never read, as in Spark.
//! CSV follows Spark's reader options: without `header` the columns are
//! `_c0, _c1, …`; without `inferSchema` every column is a string.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray, TimestampMillisecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{SchemaProvider, Session as DfSession, TableFunctionImpl};
use datafusion::common::{plan_err, DataFusionError, Result as DFResult, ScalarValue};
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::json::JsonFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::logical_expr::Expr;
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
    let urls = files
        .iter()
        .map(|f| file_url(&f.path))
        .collect::<Result<Vec<_>>>()?;
    if urls.is_empty() {
        return Err(Error::analysis(class::PATH_NOT_FOUND, "no files to read"));
    }
    let options = ListingOptions::new(spec.format()?).with_file_extension("");
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .infer_schema(state)
        .await?;
    let inferred = config.file_schema.clone().ok_or_else(|| Error::Internal {
        message: "no schema inferred".into(),
    })?;
    let schema = spark_schema(&inferred, spec);
    let table = ListingTable::try_new(config.with_schema(schema))?;
    Ok(Arc::new(table))
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

/// An existing file or folder inside the roots.
async fn existing(roots: &FileRoots, path: &str) -> Result<Location> {
    let real = roots.resolve(path).await?;
    if !real.exists().await? {
        return Err(Error::analysis(
            class::PATH_NOT_FOUND,
            format!("path does not exist: {path}"),
        ));
    }
    Ok(real)
}

/// The files a path names: the file, or the files under the folder.
pub(crate) async fn files_at(roots: &FileRoots, path: &str) -> Result<(Location, Vec<FileEntry>)> {
    let real = existing(roots, path).await?;
    let files = roots.list(&real, true).await?;
    Ok((real, files))
}

/// The rows of `LIST 'path'` and `list_files(path)`: the entries directly
/// in the folder (folders end with `/`).
pub(crate) async fn listing(roots: &FileRoots, path: &str) -> Result<RecordBatch> {
    let real = existing(roots, path).await?;
    let entries = roots.list(&real, false).await?;
    let batch = RecordBatch::try_new(
        listing_schema(),
        vec![
            Arc::new(StringArray::from(
                entries
                    .iter()
                    .map(|e| {
                        if e.is_dir && !e.path.ends_with('/') {
                            format!("{}/", e.path)
                        } else {
                            e.path.clone()
                        }
                    })
                    .collect::<Vec<_>>(),
            )) as ArrayRef,
            Arc::new(StringArray::from(
                entries.iter().map(|e| e.name.clone()).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                entries
                    .iter()
                    .map(|e| i64::try_from(e.size).unwrap_or(i64::MAX))
                    .collect::<Vec<_>>(),
            )),
            Arc::new(
                TimestampMillisecondArray::from(
                    entries.iter().map(|e| e.modified_ms).collect::<Vec<_>>(),
                )
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

/// `list_files(path)`: the LIST rows as a table.
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
        let batch = block_on(listing(&self.roots, &literal_text(path)?)).map_err(external)?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
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
