//! Deletion vectors: removing rows from a data file by marking them
//! (merge-on-read), as Databricks does on a table with
//! `delta.enableDeletionVectors = true`.
//!
//! A statement that removes rows finds them with a scan carrying each
//! row's file and its ordinal among the file's rows not yet deleted
//! ([`ORDINAL_COLUMN`], delta-rs' row index); [`Marks`] collects those.
//! [`Marks::into_changes`] turns the ordinals into row positions in the
//! file (skipping the rows the file's current deletion vector already
//! removes), joins them with that vector, and writes every new vector into
//! one file in the format of the Delta protocol — delta-kernel's
//! `StreamingDeletionVectorWriter` over a RoaringTreemap — named by a UUID
//! beside the data (`deletion_vector_<uuid>.bin`, storage type `u`). The
//! commit removes each touched file and adds it again with its new
//! descriptor; a file whose every row is gone is only removed. Readers
//! (delta-rs' scan, ours; Spark; DuckDB) leave the marked rows out;
//! OPTIMIZE and `REORG TABLE … APPLY (PURGE)` rewrite the files without
//! them.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, UInt64Type};
use datafusion::execution::context::SessionState;
use delta_kernel::actions::deletion_vector_writer::{
    KernelDeletionVector, StreamingDeletionVectorWriter,
};
use delta_kernel::table_features::TableFeature;
use deltalake::kernel::{Add, DeletionVectorDescriptor, EagerSnapshot, Remove, StorageType};
use deltalake::logstore::object_store::ObjectStoreExt;
use deltalake::logstore::LogStore;
use deltalake::Path;
use futures::TryStreamExt;

use crate::error::{Error, Result};

/// The column that carries each row's one-based ordinal in its file.
pub(crate) const ORDINAL_COLUMN: &str = "__lakegres_ordinal";

/// Whether statements on the table at `snapshot` mark removed rows in
/// deletion vectors: the feature is in the protocol and
/// `delta.enableDeletionVectors` is true (delta-rs' scan asks the same).
pub(crate) fn enabled(snapshot: &EagerSnapshot) -> bool {
    snapshot
        .table_configuration()
        .is_feature_enabled(&TableFeature::DeletionVectors)
}

/// `state` made fit to read [`ORDINAL_COLUMN`]. delta-rs numbers a file's
/// rows as its batches arrive, so every row of the file must arrive, in
/// the file's order: no file split into byte ranges read side by side, and
/// no row group or page skipped by the Parquet reader for a filter pushed
/// down to it (statistics, page index, bloom filters) — those would give
/// the rows after a skipped part smaller ordinals and mark the wrong rows.
/// Whole files are still skipped by the Delta log's statistics.
pub(crate) fn ordinal_state(mut state: SessionState) -> SessionState {
    let options = state.config_mut().options_mut();
    options.optimizer.repartition_file_scans = false;
    options.execution.parquet.pruning = false;
    options.execution.parquet.enable_page_index = false;
    options.execution.parquet.bloom_filter_on_read = false;
    options.execution.parquet.pushdown_filters = false;
    state
}

/// The rows a statement removes, by file (its URL, as the scan's file
/// column gives it) and ordinal.
#[derive(Debug, Default)]
pub(crate) struct Marks {
    by_file: HashMap<String, Vec<u64>>,
}

/// What marking rows does to the table: the actions of its commit and the
/// counts its history records.
#[derive(Debug, Default)]
pub(crate) struct MarkedChanges {
    pub(crate) removed: Vec<Remove>,
    pub(crate) added: Vec<Add>,
    /// Rows removed by this statement.
    pub(crate) rows: u64,
    /// Files given their first deletion vector.
    pub(crate) vectors_added: u64,
    /// Files whose deletion vector was replaced by a larger one.
    pub(crate) vectors_updated: u64,
    /// Files removed because no row of theirs is left.
    pub(crate) files_removed: u64,
}

impl Marks {
    /// Records the rows of a batch's file and ordinal columns.
    pub(crate) fn add(&mut self, files: &ArrayRef, ordinals: &ArrayRef) -> Result<()> {
        let files = cast(files, &DataType::Utf8).map_err(arrow)?;
        let Some(files) = files.as_string_opt::<i32>() else {
            return Err(Error::Internal("file ids are not strings".into()));
        };
        let Some(ordinals) = ordinals.as_primitive_opt::<UInt64Type>() else {
            return Err(Error::Internal("row ordinals are not UInt64".into()));
        };
        for i in 0..files.len() {
            if files.is_null(i) || ordinals.is_null(i) {
                return Err(Error::Internal(
                    "a matched row has no file or ordinal".into(),
                ));
            }
            self.by_file
                .entry(files.value(i).to_string())
                .or_default()
                .push(ordinals.value(i));
        }
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_file.is_empty()
    }

    /// The marked ordinals of each file, ascending, each once. `once`: a
    /// row marked twice is this error (an UPDATE would write it twice);
    /// `None` lets it be.
    pub(crate) fn into_sorted(
        self,
        once: Option<&(dyn Fn() -> Error + Sync)>,
    ) -> Result<HashMap<String, Vec<u64>>> {
        let mut by_file = self.by_file;
        for ordinals in by_file.values_mut() {
            ordinals.sort_unstable();
            let before = ordinals.len();
            ordinals.dedup();
            if let Some(error) = once.filter(|_| ordinals.len() != before) {
                return Err(error());
            }
        }
        Ok(by_file)
    }

    /// The commit's actions for the marked rows of the table at
    /// `snapshot`;
    /// the new deletion vectors are written.
    /// `once`: a row marked twice is this error (an UPDATE would write it
    /// twice); `None` lets it be.
    pub(crate) async fn into_changes(
        self,
        name: &str,
        snapshot: &EagerSnapshot,
        log_store: &dyn LogStore,
        once: Option<&(dyn Fn() -> Error + Sync)>,
    ) -> Result<MarkedChanges> {
        let mut changes = MarkedChanges::default();
        let by_file = self.into_sorted(once)?;
        if by_file.is_empty() {
            return Ok(changes);
        }
        let root = crate::write::files::table_root(log_store);

        // The touched files' actions, and what their vectors delete now.
        let mut files: HashMap<String, (Add, Remove)> = HashMap::new();
        let mut views = snapshot.file_views(log_store, None);
        while let Some(view) = views
            .try_next()
            .await
            .map_err(|e| Error::delta("listing the files of", name.to_string(), e))?
        {
            let path = view.path();
            let url = root
                .join(&path)
                .map_err(|e| Error::Internal(format!("file path {path}: {e}")))?
                .to_string();
            if by_file.contains_key(&url) {
                #[allow(deprecated)] // delta-rs' way to an Add that keeps every field
                let add = view.add_action();
                files.insert(url, (add, view.remove_action(true)));
            }
        }
        // The rows the touched files' vectors delete already, read with
        // delta-kernel from wherever the vectors lie (a shallow clone's are
        // in its source's folder).
        let mut deleted: HashMap<String, Vec<u64>> = HashMap::new();
        let stored: Vec<(String, DeletionVectorDescriptor)> = files
            .iter()
            .filter_map(|(id, (add, _))| Some((id.clone(), add.deletion_vector.clone()?)))
            .collect();
        if !stored.is_empty() {
            let engine = log_store.engine(None);
            let root = root.clone();
            deleted = tokio::task::spawn_blocking(move || {
                let storage = engine.storage_handler();
                stored
                    .into_iter()
                    .map(|(id, vector)| {
                        let rows = delta_kernel::actions::deletion_vector::DeletionVectorDescriptor::try_from(vector)
                            .and_then(|v| v.read(Arc::clone(&storage), &root))
                            .map_err(|e| Error::Internal(format!("reading the deletion vector of {id}: {e}")))?;
                        Ok((id, rows.iter().collect()))
                    })
                    .collect::<Result<HashMap<_, _>>>()
            })
            .await
            .map_err(|e| Error::Internal(format!("reading deletion vectors: {e}")))??;
        }

        // The new vectors, one file for all of them.
        let mut buffer: Vec<u8> = Vec::new();
        let mut written = Vec::new();
        {
            let mut writer = StreamingDeletionVectorWriter::new(&mut buffer);
            let mut ids: Vec<&String> = by_file.keys().collect();
            ids.sort();
            for id in ids {
                let Some((add, remove)) = files.get(id) else {
                    return Err(Error::Internal(format!(
                        "a matched file is not in the snapshot: {id}"
                    )));
                };
                let ordinals: &[u64] = by_file.get(id).map(Vec::as_slice).unwrap_or_default();
                let already: &[u64] = deleted.get(id).map(Vec::as_slice).unwrap_or_default();
                if add.deletion_vector.is_some() != deleted.contains_key(id) {
                    return Err(Error::Internal(format!("no deletion vector read for {id}")));
                }
                let positions = positions(ordinals, already)?;
                changes.rows += positions.len() as u64;
                let mut vector = KernelDeletionVector::new();
                vector.add_deleted_row_indexes(already);
                vector.add_deleted_row_indexes(positions);
                let physical_rows = physical_rows(add);
                changes.removed.push(remove.clone());
                if physical_rows.is_some_and(|rows| vector.cardinality() >= rows) {
                    changes.files_removed += 1;
                    continue;
                }
                if add.deletion_vector.is_some() {
                    changes.vectors_updated += 1;
                } else {
                    changes.vectors_added += 1;
                }
                let result = writer.write_deletion_vector(vector).map_err(kernel)?;
                written.push((add.clone(), result));
            }
            writer.finalize().map_err(kernel)?;
        }
        if written.is_empty() {
            return Ok(changes);
        }
        let uuid = uuid::Uuid::new_v4();
        let location = Path::from(format!("deletion_vector_{uuid}.bin"));
        log_store
            .object_store(None)
            .put(&location, buffer.into())
            .await
            .map_err(|e| Error::delta("writing", name.to_string(), e.into()))?;
        let encoded = z85::encode(uuid.as_bytes());
        for (mut add, result) in written {
            add.deletion_vector = Some(DeletionVectorDescriptor {
                storage_type: StorageType::UuidRelativePath,
                path_or_inline_dv: encoded.clone(),
                offset: Some(result.offset),
                size_in_bytes: result.size_in_bytes,
                cardinality: result.cardinality,
            });
            add.data_change = true;
            add.modification_time = chrono::Utc::now().timestamp_millis();
            add.stats = add.stats.as_deref().map(loose_bounds);
            changes.added.push(add);
        }
        Ok(changes)
    }
}

/// The file's rows as written (its statistics' `numRecords`).
fn physical_rows(add: &Add) -> Option<u64> {
    let stats: serde_json::Value = serde_json::from_str(add.stats.as_deref()?).ok()?;
    stats.get("numRecords")?.as_u64()
}

/// Statistics of a file with a deletion vector: the bounds may be those of
/// rows that are gone (`tightBounds: false`, as Databricks writes them).
fn loose_bounds(stats: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(stats) {
        Ok(serde_json::Value::Object(mut fields)) => {
            fields.insert("tightBounds".into(), serde_json::Value::Bool(false));
            serde_json::Value::Object(fields).to_string()
        }
        _ => stats.to_string(),
    }
}

/// The positions in the file of the rows with these one-based `ordinals`
/// (sorted, distinct) among the rows not in `deleted` (sorted positions the
/// file's vector already removes).
fn positions(ordinals: &[u64], deleted: &[u64]) -> Result<Vec<u64>> {
    let mut out = Vec::with_capacity(ordinals.len());
    let mut skipped = 0usize;
    for &ordinal in ordinals {
        let Some(first) = ordinal.checked_sub(1) else {
            return Err(Error::Internal("row ordinal 0".into()));
        };
        // The ordinal-th live row: past every deleted row up to it.
        let mut position = first + skipped as u64;
        while deleted.get(skipped).is_some_and(|d| *d <= position) {
            skipped += 1;
            position += 1;
        }
        out.push(position);
    }
    Ok(out)
}

fn arrow(source: datafusion::arrow::error::ArrowError) -> Error {
    Error::DataFusion {
        what: "reading marked rows",
        source: Box::new(source.into()),
    }
}

fn kernel(source: delta_kernel::Error) -> Error {
    Error::Internal(format!("writing a deletion vector: {source}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_skip_rows_already_deleted() {
        assert_eq!(positions(&[1, 3], &[]).unwrap(), vec![0, 2]);
        // Rows 1 and 2 are deleted: the live rows are 0, 3, 4, 5, 6…
        let deleted = [1, 2];
        assert_eq!(positions(&[1, 2, 3], &deleted).unwrap(), vec![0, 3, 4]);
        assert_eq!(positions(&[4, 5], &deleted).unwrap(), vec![5, 6]);
        assert_eq!(positions(&[2, 5], &deleted).unwrap(), vec![3, 6]);
        assert_eq!(positions(&[1, 2], &[0, 1]).unwrap(), vec![2, 3]);
        assert!(positions(&[0], &[]).is_err());
        assert!(positions(&[0], &deleted).is_err());
    }

    #[test]
    fn stats_get_loose_bounds() {
        let stats = loose_bounds(r#"{"numRecords":3,"minValues":{"a":1}}"#);
        let value: serde_json::Value = serde_json::from_str(&stats).unwrap();
        assert_eq!(value["tightBounds"], serde_json::Value::Bool(false));
        assert_eq!(value["numRecords"], 3);
    }
}
