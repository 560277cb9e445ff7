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

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::{Column, DataFusionError, TableReference};
use datafusion::datasource::provider_as_source;
use datafusion::logical_expr::{lit, Expr, LogicalPlan, LogicalPlanBuilder};
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action, Add, EagerSnapshot, Remove};
use deltalake::logstore::LogStoreRef;
use deltalake::operations::write::writer::{DeltaWriter, WriterConfig};
use deltalake::operations::write::WriterStatsConfig;
use deltalake::protocol::DeltaOperation;
use deltalake::DeltaTable;
use futures::TryStreamExt;

use crate::error::{Error, Result};
use crate::provider::DeltaProvider;

/// The column that carries each target row's file (its URL).
pub(crate) const FILE_COLUMN: &str = "__lakegres_file";

/// The live files of the snapshot, by the id the scan's file column gives
/// them (the file's URL), as the Remove action each would become.
pub(crate) async fn file_index(
    snapshot: &EagerSnapshot,
    log_store: &dyn deltalake::logstore::LogStore,
    name: &str,
) -> Result<HashMap<String, Remove>> {
    let root = table_root(log_store);
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

/// The table's root URL, ending in `/` (what its file paths join onto).
pub(crate) fn table_root(log_store: &dyn deltalake::logstore::LogStore) -> url::Url {
    let mut root = log_store.root_url().clone();
    if !root.path().ends_with('/') {
        let path = format!("{}/", root.path());
        root.set_path(&path);
    }
    root
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
    let root = table_root(provider.table().log_store().as_ref()).to_string();
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
        let physical = if crate::features::column_mapping(snapshot.metadata().configuration()) {
            let table = snapshot.schema();
            for column in &mut partition_columns {
                if let Some(field) = table.field(column.as_str()) {
                    *column = crate::column_mapping::physical_name(field).to_string();
                }
            }
            Some(crate::column_mapping::physical_schema(&schema, &table))
        } else {
            None
        };
        let config = WriterConfig::new(
            physical.clone().unwrap_or_else(|| Arc::clone(&schema)),
            partition_columns,
            Some(crate::provider::writer_properties()),
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
            batch = crate::column_mapping::to_physical(&batch, physical).map_err(|e| {
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
