//! Rewriting the files a statement touches, as one Delta commit: the parts
//! shared by the statements that delta-rs' builders cannot run whole
//! (REPLACE USING / ON, and UPDATE / DELETE whose condition holds a
//! subquery).
//!
//! Each of them finds the files holding a row it changes with a scan that
//! carries every row's file ([`FILE_COLUMN`]), writes the rows that stay and
//! the new rows with delta-rs' `DeltaWriter` ([`FileWriter`]), and commits
//! the removal of the touched files and the new files in one `CommitBuilder`
//! commit ([`commit`]). Files without a changed row are neither read twice
//! nor rewritten.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{cast, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, UInt64Type};
use datafusion::common::{Column, DataFusionError, TableReference};
use datafusion::datasource::provider_as_source;
use datafusion::logical_expr::{lit, Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::SessionContext;
use deltalake::delta_datafusion::{DeltaScanConfig, DeltaScanNext};
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action, Add, EagerSnapshot, Remove};
use deltalake::logstore::LogStoreRef;
use deltalake::protocol::DeltaOperation;
use deltalake::DeltaTable;
use futures::{StreamExt, TryStreamExt};

use crate::error::{Error, Result};
use crate::read::provider::DeltaProvider;
use crate::write::deletion_vectors::ORDINAL_COLUMN;
use crate::write::files::BackgroundWriter;

/// The column that carries each target row's file (its URL).
pub(crate) const FILE_COLUMN: &str = "__lakegres_file";

/// The live files of the snapshot, by the id the scan's file column gives
/// them (the file's URL), as the Remove action each would become.
pub(crate) async fn file_index(
    snapshot: &EagerSnapshot,
    log_store: &dyn deltalake::logstore::LogStore,
    name: &str,
) -> Result<HashMap<String, Remove>> {
    let root = crate::write::files::table_root(log_store);
    let views: Vec<_> = snapshot
        .file_views(log_store, None)
        .try_collect()
        .await
        .map_err(|e| Error::delta("listing the files of", name.to_string(), e))?;
    let mut index = HashMap::with_capacity(views.len());
    for view in views {
        let path = view.path();
        let url = root
            .join(&path)
            .map_err(|e| Error::Internal(format!("file path {path}: {e}")))?;
        index.insert(url.to_string(), view.remove_action(true));
    }
    Ok(index)
}

/// A scan of exactly the rows of the files `ids` (as the file column names
/// them), file column included, under `table_ref`. delta-rs' file selection
/// reaches only files in the table's folder: a shallow clone's files
/// elsewhere are read by a filter on the file column instead.
pub(crate) fn scan_files(
    provider: &DeltaProvider,
    table_ref: TableReference,
    ids: Vec<String>,
) -> Result<LogicalPlan> {
    let root = crate::write::files::table_root(provider.table().log_store().as_ref()).to_string();
    let planning = |source: DataFusionError| Error::DataFusion {
        what: "planning a file rewrite",
        source: Box::new(source),
    };
    let elsewhere = ids.iter().any(|id| !id.starts_with(&root));
    let plan = if elsewhere {
        let file = Expr::Column(Column::new(Some(table_ref.clone()), FILE_COLUMN));
        let only = file.in_list(ids.into_iter().map(lit).collect(), false);
        let rows = provider.with_file_column(FILE_COLUMN)?;
        LogicalPlanBuilder::scan(table_ref, provider_as_source(Arc::new(rows)), None)
            .and_then(|p| p.filter(only))
    } else {
        let rows = provider.with_files(FILE_COLUMN, ids)?;
        LogicalPlanBuilder::scan(table_ref, provider_as_source(Arc::new(rows)), None)
    };
    plan.and_then(|p| p.build()).map_err(planning)
}

/// The file ids in the first column of `batches` (a scan's file column,
/// whatever string or dictionary type it has), NULLs skipped.
pub(crate) fn file_ids(batches: &[RecordBatch]) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for batch in batches {
        if batch.num_columns() == 0 {
            continue;
        }
        let column = cast(batch.column(0), &DataType::Utf8).map_err(|e| Error::DataFusion {
            what: "reading file ids",
            source: Box::new(e.into()),
        })?;
        let Some(column) = column.as_string_opt::<i32>() else {
            return Err(Error::Internal("file ids are not strings".into()));
        };
        for i in 0..column.len() {
            if column.is_valid(i) {
                ids.push(column.value(i).to_string());
            }
        }
    }
    Ok(ids)
}

/// The files a rewrite replaces and the files it wrote.
pub(crate) struct Changes {
    pub(crate) removed: Vec<Remove>,
    pub(crate) added: Vec<Add>,
}

/// Commits `changes` on top of `snapshot` (the version `table` was loaded
/// at) as one version; the table at that version.
pub(crate) async fn commit(
    op: &'static str,
    name: &str,
    table: &DeltaTable,
    snapshot: &EagerSnapshot,
    changes: Changes,
    operation: DeltaOperation,
    properties: CommitProperties,
) -> Result<DeltaTable> {
    let actions: Vec<Action> = changes
        .removed
        .into_iter()
        .map(Action::Remove)
        .chain(changes.added.into_iter().map(Action::Add))
        .collect();
    let finalized = CommitBuilder::from(properties)
        .with_actions(actions)
        .build(Some(snapshot), table.log_store(), operation)
        .await
        .map_err(|e| Error::delta(op, name.to_string(), e))?;
    let mut committed = table.clone();
    committed.state = Some(finalized.snapshot());
    Ok(committed)
}

/// What [`copy_unmarked`] did.
pub(crate) struct Copied {
    /// The files it rewrote, as the commit removes them.
    pub(crate) removed: Vec<Remove>,
    /// Rows written again.
    pub(crate) rows: u64,
    /// Rows left out: the marked ones.
    pub(crate) marked: u64,
}

/// Copy-on-write of marked rows: every row of each file in `marked` but
/// its marked ordinals (one-based, ascending, each once — what
/// [`crate::write::deletion_vectors::Marks::into_sorted`] gives) is written to
/// `writer`, and the files are to be removed. `ctx` reads ordinals
/// ([`crate::write::deletion_vectors::ordinal_state`]), as the scan that marked
/// them did, so an ordinal names the same row in both.
pub(crate) async fn copy_unmarked(
    name: &str,
    snapshot: &EagerSnapshot,
    log_store: &LogStoreRef,
    ctx: &SessionContext,
    marked: HashMap<String, Vec<u64>>,
    writer: &mut BackgroundWriter,
) -> Result<Copied> {
    let mut copied = Copied {
        removed: Vec::with_capacity(marked.len()),
        rows: 0,
        marked: marked.values().map(|o| o.len() as u64).sum(),
    };
    if marked.is_empty() {
        return Ok(copied);
    }
    let files = file_index(snapshot, log_store.as_ref(), name).await?;
    for id in marked.keys() {
        let Some(file) = files.get(id) else {
            return Err(Error::Internal(format!(
                "a marked file is not in the snapshot: {id}"
            )));
        };
        copied.removed.push(file.clone());
    }
    let planning = |source: DataFusionError| Error::DataFusion {
        what: "planning a file rewrite",
        source: Box::new(source),
    };
    let running = |source: DataFusionError| Error::DataFusion {
        what: "rewriting files",
        source: Box::new(source),
    };
    let scan = ordinal_scan(snapshot)
        .map(|s| s.with_file_paths(marked.keys().cloned()))
        .map_err(planning)?;
    let frame = ctx.read_table(Arc::new(scan)).map_err(planning)?;
    // The table's columns, in its order, by their place in the scan's rows
    // (the writer casts them to the table's types).
    let scanned = frame.schema().as_arrow().clone();
    let columns = snapshot
        .arrow_schema()
        .fields()
        .iter()
        .map(|f| scanned.index_of(f.name()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| planning(e.into()))?;
    let (file_at, ordinal_at) = (
        scanned
            .index_of(FILE_COLUMN)
            .map_err(|e| planning(e.into()))?,
        scanned
            .index_of(ORDINAL_COLUMN)
            .map_err(|e| planning(e.into()))?,
    );
    let mut stream = frame.execute_stream().await.map_err(running)?;
    let mut keep = KeepUnmarked::new(&marked);
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(running)?;
        let mask = keep.mask(batch.column(file_at), batch.column(ordinal_at))?;
        copied.rows += mask.true_count() as u64;
        let rows = batch
            .project(&columns)
            .and_then(|rows| filter_record_batch(&rows, &mask))
            .map_err(|e| running(e.into()))?;
        writer.write(rows).await?;
    }
    Ok(copied)
}

/// A scan of the table at `snapshot` under its declared names, each row
/// with its file ([`FILE_COLUMN`]) and its ordinal in the file
/// ([`ORDINAL_COLUMN`]): what rows are marked by.
pub(crate) fn ordinal_scan(snapshot: &EagerSnapshot) -> datafusion::common::Result<DeltaScanNext> {
    let config = DeltaScanConfig {
        wrap_partition_values: false,
        file_column_name: Some(FILE_COLUMN.to_string()),
        ..DeltaScanConfig::new()
    };
    DeltaScanNext::new(Arc::new(snapshot.clone()), config)
        .and_then(|s| s.with_row_index_column(ORDINAL_COLUMN))
}

/// Which scanned rows are not marked. A file's rows arrive in its order,
/// so each file keeps a cursor into its ascending marked ordinals; an
/// ordinal behind the cursor (not expected) is looked up from the start.
struct KeepUnmarked<'a> {
    marked: &'a HashMap<String, Vec<u64>>,
    cursors: HashMap<&'a str, usize>,
}

impl<'a> KeepUnmarked<'a> {
    fn new(marked: &'a HashMap<String, Vec<u64>>) -> Self {
        Self {
            marked,
            cursors: HashMap::new(),
        }
    }

    fn mask(&mut self, files: &ArrayRef, ordinals: &ArrayRef) -> Result<BooleanArray> {
        let unexpected =
            || Error::Internal("file ids or row ordinals of an unexpected type".into());
        let Some(ordinals) = ordinals.as_primitive_opt::<UInt64Type>() else {
            return Err(unexpected());
        };
        // The scan's file column is dictionary-encoded: its few values are
        // read once, not each row's.
        let (names, keys): (ArrayRef, Vec<usize>) = match files.as_any_dictionary_opt() {
            Some(dictionary) => (
                Arc::clone(dictionary.values()),
                dictionary.normalized_keys(),
            ),
            None => (Arc::clone(files), (0..files.len()).collect()),
        };
        let names = cast(&names, &DataType::Utf8).map_err(|e| Error::DataFusion {
            what: "reading file ids",
            source: Box::new(e.into()),
        })?;
        let Some(names) = names.as_string_opt::<i32>() else {
            return Err(unexpected());
        };
        if names.null_count() > 0 || files.null_count() > 0 {
            return Err(Error::Internal("a scanned row has no file".into()));
        }
        let mut keep = Vec::with_capacity(keys.len());
        let mut i = 0;
        while i < keys.len() {
            // A run of rows of one file.
            let key = keys[i];
            let mut end = i + 1;
            while end < keys.len() && keys[end] == key {
                end += 1;
            }
            let Some((file, marked)) = self.marked.get_key_value(names.value(key)) else {
                // A file with no marked row (not scanned for a copy): all kept.
                keep.resize(end, true);
                i = end;
                continue;
            };
            let cursor = self.cursors.entry(file.as_str()).or_default();
            for row in i..end {
                let ordinal = ordinals.value(row);
                if *cursor > 0 && marked.get(*cursor - 1).is_some_and(|&m| m >= ordinal) {
                    *cursor = marked.partition_point(|&m| m < ordinal);
                }
                while marked.get(*cursor).is_some_and(|&m| m < ordinal) {
                    *cursor += 1;
                }
                keep.push(marked.get(*cursor) != Some(&ordinal));
            }
            i = end;
        }
        Ok(BooleanArray::from(keep))
    }
}

/// Whether the table's log names files outside its folder (a shallow
/// clone's).
pub(crate) fn references_other_files(snapshot: &deltalake::kernel::EagerSnapshot) -> bool {
    snapshot.log_data().iter().any(|f| f.path().contains("://"))
}
