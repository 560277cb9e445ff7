//! Tables held decoded in memory for key lookups, with a hash index on each
//! column a lookup has used.
//!
//! A point query read through Parquet decodes whole pages around its row
//! (decompressing them, for every column read) and builds a scan for each
//! statement; that was most of a lookup's time. Small, hot tables are better
//! served the way a database's buffer cache serves them: decoded once, then
//! found by key. The cache holds each table's files as Arrow batches, keyed by
//! the Delta table's id; data files never change once written, so a newer
//! version of the table reuses the files it kept and decodes only the ones it
//! added. Tables compete for one byte budget (`sql.lookup_cache_size`); the
//! least recently used go first, and a table larger than the budget is read
//! through Parquet as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array};
use datafusion::arrow::compute::take_record_batch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::hash_utils::{create_hashes, RandomState};
use datafusion::common::ScalarValue;
use datafusion::datasource::listing::PartitionedFile;
use deltalake::Path;

use crate::error::{Error, Result};

/// How much a table's decoded rows may take compared with its Parquet files,
/// to decide before reading whether it can fit.
const DECODED_PER_STORED_BYTE: u64 = 4;

/// Marks the end of a chain of rows in a [`KeyIndex`].
const END: u32 = u32::MAX;

/// Decoded tables for key lookups, shared by every session.
#[derive(Debug)]
pub struct RowCache {
    budget: u64,
    state: Mutex<State>,
    /// One loader per table at a time: sessions that ask for a table being
    /// loaded wait for it rather than decode it again.
    loading: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

#[derive(Debug, Default)]
struct State {
    tables: HashMap<String, Entry>,
    used: u64,
    tick: u64,
}

#[derive(Debug)]
struct Entry {
    version: u64,
    /// `None` when this version did not fit the budget.
    rows: Option<Arc<TableRows>>,
    bytes: u64,
    last_used: u64,
}

/// One version of a table, decoded: its files' rows by file path, all with
/// the table's columns at that version.
#[derive(Debug)]
pub struct TableRows {
    schema: SchemaRef,
    files: Vec<(Path, Arc<FileRows>)>,
}

/// One data file's rows, and the indexes built over them so far.
#[derive(Debug)]
pub struct FileRows {
    batch: RecordBatch,
    indexes: Vec<OnceLock<Option<KeyIndex>>>,
}

/// Rows by the hash of a column's value: the first row with a hash, and
/// from each row the next one with the same hash. Candidates are checked
/// against the key itself afterwards, so collisions cost time, not answers.
#[derive(Debug)]
struct KeyIndex {
    heads: HashMap<u64, u32, RandomState>,
    next: Vec<u32>,
}

impl RowCache {
    /// A cache of at most `budget` bytes; 0 turns it off.
    pub fn new(budget: u64) -> Self {
        Self {
            budget,
            state: Mutex::default(),
            loading: Mutex::default(),
        }
    }

    /// The decoded rows of table `id` at `version`, whose data files are
    /// `files` and whose columns are `schema`; `load` decodes one file with
    /// those columns. `None` when the table does not
    /// fit the budget.
    pub async fn rows<F, Fut>(
        &self,
        id: &str,
        version: u64,
        schema: &SchemaRef,
        files: &[PartitionedFile],
        load: F,
    ) -> Result<Option<Arc<TableRows>>>
    where
        F: Fn(PartitionedFile) -> Fut,
        Fut: std::future::Future<Output = Result<RecordBatch>>,
    {
        if let Some(found) = self.cached(id, version) {
            return Ok(found);
        }
        let stored: u64 = files.iter().map(|f| f.object_meta.size).sum();
        if stored.saturating_mul(DECODED_PER_STORED_BYTE) > self.budget {
            self.remember(id, version, None, 0);
            return Ok(None);
        }
        let loader = {
            let mut loading = self.loading.lock().map_err(|_| poisoned())?;
            Arc::clone(loading.entry(id.to_string()).or_default())
        };
        let _loading = loader.lock().await;
        if let Some(found) = self.cached(id, version) {
            return Ok(found);
        }
        // The files an earlier version already decoded, if it had the same
        // columns (a file read after ADD COLUMN gets the new column).
        let earlier: HashMap<Path, Arc<FileRows>> = {
            let state = self.state.lock().map_err(|_| poisoned())?;
            state
                .tables
                .get(id)
                .and_then(|entry| entry.rows.as_ref())
                .filter(|rows| &rows.schema == schema)
                .map(|rows| rows.files.iter().cloned().collect())
                .unwrap_or_default()
        };
        let mut decoded = Vec::with_capacity(files.len());
        let mut bytes = 0u64;
        for file in files {
            let path = &file.object_meta.location;
            let file = match earlier.get(path) {
                Some(file) => Arc::clone(file),
                None => {
                    let batch = load(file.clone()).await?;
                    if batch.schema() != *schema {
                        return Err(Error::Internal(format!(
                            "{path} was decoded with other columns than the table's"
                        )));
                    }
                    Arc::new(FileRows::new(batch))
                }
            };
            bytes += file.bytes();
            decoded.push((path.clone(), file));
        }
        let rows = (bytes <= self.budget).then(|| {
            Arc::new(TableRows {
                schema: Arc::clone(schema),
                files: decoded,
            })
        });
        self.remember(id, version, rows.clone(), bytes);
        Ok(rows)
    }

    /// Bytes of decoded rows (and their indexes) the cache holds now.
    pub fn bytes(&self) -> u64 {
        self.state.lock().map_or(0, |state| state.used)
    }

    /// What the cache knows of `id` at `version`: `Some(None)` when it is
    /// known not to fit.
    fn cached(&self, id: &str, version: u64) -> Option<Option<Arc<TableRows>>> {
        let mut state = self.state.lock().ok()?;
        state.tick += 1;
        let tick = state.tick;
        let entry = state.tables.get_mut(id)?;
        if entry.version != version {
            return None;
        }
        entry.last_used = tick;
        Some(entry.rows.clone())
    }

    /// Keeps `rows` as table `id`'s, then lets the least recently used
    /// tables go until the cache fits its budget.
    fn remember(&self, id: &str, version: u64, rows: Option<Arc<TableRows>>, bytes: u64) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.tick += 1;
        let last_used = state.tick;
        let replaced = state.tables.insert(
            id.to_string(),
            Entry {
                version,
                rows,
                bytes,
                last_used,
            },
        );
        state.used = state.used + bytes - replaced.map_or(0, |e| e.bytes);
        while state.used > self.budget {
            let Some(oldest) = state
                .tables
                .iter()
                .filter(|(key, entry)| key.as_str() != id && entry.bytes > 0)
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            if let Some(gone) = state.tables.remove(&oldest) {
                state.used -= gone.bytes;
            }
        }
    }
}

impl TableRows {
    /// The rows whose column `column` may equal `value` (every row that
    /// does, and perhaps others: the caller checks), as one batch; `None`
    /// when the column's type cannot be indexed.
    pub fn candidates(&self, column: usize, value: &ScalarValue) -> Result<Option<RecordBatch>> {
        let Some(hash) = hash_of(value)? else {
            return Ok(None);
        };
        let mut found = Vec::new();
        for (_, file) in &self.files {
            let Some(index) = file.index(column)? else {
                return Ok(None);
            };
            let rows = index.rows(hash);
            if rows.is_empty() {
                continue;
            }
            let taken = take_record_batch(&file.batch, &UInt32Array::from(rows))
                .map_err(|e| arrow_error("reading cached rows", e))?;
            found.push(taken);
        }
        match found.len() {
            0 => Ok(self.files.first().map(|(_, file)| file.batch.slice(0, 0))),
            1 => Ok(found.pop()),
            _ => {
                let schema = found[0].schema();
                datafusion::arrow::compute::concat_batches(&schema, &found)
                    .map(Some)
                    .map_err(|e| arrow_error("reading cached rows", e))
            }
        }
    }
}

impl FileRows {
    fn new(batch: RecordBatch) -> Self {
        let indexes = (0..batch.num_columns()).map(|_| OnceLock::new()).collect();
        Self { batch, indexes }
    }

    /// The decoded rows, with room for an index on one column.
    fn bytes(&self) -> u64 {
        let rows = u64::try_from(self.batch.num_rows()).unwrap_or(u64::MAX);
        let batch = u64::try_from(self.batch.get_array_memory_size()).unwrap_or(u64::MAX);
        batch.saturating_add(rows.saturating_mul(16))
    }

    /// The index on `column`, built on first use; `None` for a type that is
    /// not indexed.
    fn index(&self, column: usize) -> Result<Option<&KeyIndex>> {
        let Some(slot) = self.indexes.get(column) else {
            return Ok(None);
        };
        if let Some(index) = slot.get() {
            return Ok(index.as_ref());
        }
        let built = KeyIndex::build(self.batch.column(column))?;
        Ok(slot.get_or_init(|| built).as_ref())
    }
}

impl KeyIndex {
    /// The index of `column`, or `None` when its type is not one keys are
    /// looked up by exactly (floats compare equal across bit patterns).
    fn build(column: &ArrayRef) -> Result<Option<Self>> {
        if !indexable(column.data_type()) {
            return Ok(None);
        }
        let rows = column.len();
        let Ok(count) = u32::try_from(rows) else {
            return Ok(None);
        };
        let mut hashes = vec![0u64; rows];
        create_hashes([column], &RandomState::with_seed(0), &mut hashes).map_err(|e| {
            Error::DataFusion {
                what: "indexing cached rows",
                source: Box::new(e),
            }
        })?;
        let mut heads = HashMap::with_capacity_and_hasher(rows, RandomState::with_seed(1));
        let mut next = vec![END; rows];
        // From the last row back, so each chain runs in file order.
        for row in (0..count).rev() {
            let at = row as usize;
            if column.is_null(at) {
                continue;
            }
            if let Some(after) = heads.insert(hashes[at], row) {
                next[at] = after;
            }
        }
        Ok(Some(Self { heads, next }))
    }

    fn rows(&self, hash: u64) -> Vec<u32> {
        let mut rows = Vec::new();
        let mut at = self.heads.get(&hash).copied().unwrap_or(END);
        while at != END {
            rows.push(at);
            at = self.next.get(at as usize).copied().unwrap_or(END);
        }
        rows
    }
}

/// Integer, text and date keys; their values are equal exactly when their
/// hashes' inputs are.
fn indexable(data_type: &DataType) -> bool {
    data_type.is_integer()
        || matches!(
            data_type,
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Date32
                | DataType::Date64
                | DataType::Boolean
        )
}

/// `value`'s hash as the index computes it; `None` for NULL (which equals
/// nothing) or a type that is not indexed.
fn hash_of(value: &ScalarValue) -> Result<Option<u64>> {
    if value.is_null() || !indexable(&value.data_type()) {
        return Ok(None);
    }
    let array = value.to_array().map_err(|e| Error::DataFusion {
        what: "hashing a key",
        source: Box::new(e),
    })?;
    let mut hash = [0u64];
    create_hashes([&array], &RandomState::with_seed(0), &mut hash).map_err(|e| {
        Error::DataFusion {
            what: "hashing a key",
            source: Box::new(e),
        }
    })?;
    Ok(Some(hash[0]))
}

fn arrow_error(what: &'static str, e: datafusion::arrow::error::ArrowError) -> Error {
    Error::DataFusion {
        what,
        source: Box::new(e.into()),
    }
}

fn poisoned() -> Error {
    Error::Internal("the lookup cache's lock was poisoned".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    fn batch(ids: Vec<Option<i64>>, names: Vec<&str>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap()
    }

    #[test]
    fn finds_every_row_with_a_key_in_file_order() {
        let file = FileRows::new(batch(
            vec![Some(1), Some(2), None, Some(2)],
            vec!["a", "b", "c", "d"],
        ));
        let rows = TableRows {
            schema: file.batch.schema(),
            files: vec![(Path::from("f"), Arc::new(file))],
        };
        let found = rows
            .candidates(0, &ScalarValue::Int64(Some(2)))
            .unwrap()
            .unwrap();
        let names = found
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(names.iter().collect::<Vec<_>>(), vec![Some("b"), Some("d")]);
        let by_name = rows
            .candidates(1, &ScalarValue::Utf8(Some("c".into())))
            .unwrap()
            .unwrap();
        assert_eq!(by_name.num_rows(), 1);
        // NULL equals nothing; a missing key finds nothing.
        assert!(rows
            .candidates(0, &ScalarValue::Int64(None))
            .unwrap()
            .is_none());
        let missing = rows
            .candidates(0, &ScalarValue::Int64(Some(9)))
            .unwrap()
            .unwrap();
        assert_eq!(missing.num_rows(), 0);
    }

    #[tokio::test]
    async fn keeps_decoded_files_across_versions_and_evicts_the_oldest_table() {
        let cache = RowCache::new(10_000);
        let loads = std::sync::atomic::AtomicUsize::new(0);
        let load = |_file: PartitionedFile| {
            loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok(batch(vec![Some(1)], vec!["a"])) }
        };
        let schema = batch(vec![], vec![]).schema();
        let one = [PartitionedFile::new("a", 10)];
        let two = [PartitionedFile::new("a", 10), PartitionedFile::new("b", 10)];
        assert!(cache
            .rows("t", 1, &schema, &one, load)
            .await
            .unwrap()
            .is_some());
        assert!(cache
            .rows("t", 1, &schema, &one, load)
            .await
            .unwrap()
            .is_some());
        assert!(cache
            .rows("t", 2, &schema, &two, load)
            .await
            .unwrap()
            .is_some());
        // File a was decoded once, b once.
        assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 2);
        // A table whose files could not fit is not read at all.
        let huge = [PartitionedFile::new("h", 1_000_000)];
        assert!(cache
            .rows("u", 1, &schema, &huge, load)
            .await
            .unwrap()
            .is_none());
        assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Filling the budget with other tables lets the oldest go.
        let per_table = cache.state.lock().unwrap().used;
        let mut n = 0;
        while cache.state.lock().unwrap().tables.contains_key("t") {
            n += 1;
            let other = [PartitionedFile::new(format!("o{n}"), 10)];
            cache
                .rows(&format!("o{n}"), 1, &schema, &other, load)
                .await
                .unwrap();
            assert!(cache.state.lock().unwrap().used <= 10_000);
            assert!(n < 10_000 / (per_table / 2).max(1) + 2);
        }
    }
}
