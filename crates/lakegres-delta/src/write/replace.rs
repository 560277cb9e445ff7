//! Delete the target rows some new row matches, insert every new row, as one
//! Delta commit: `INSERT INTO … REPLACE USING (cols)` and `REPLACE ON cond`
//! (SEMANTICS.md §2.6–2.7).
//!
//! delta-rs' `WriteBuilder::with_replace_where` cannot do this: it also
//! requires every new row to satisfy the predicate, and a new row with a
//! NULL key (which REPLACE USING appends) or one that a REPLACE ON condition
//! does not describe would fail it. So the commit is put together here from
//! delta-rs parts: a semi join finds the files holding matched rows, an anti
//! join keeps their other rows, `DeltaWriter` writes the survivors and the new
//! rows, and one `CommitBuilder` commit removes the old files and adds the
//! new ones — recorded as Databricks records it, a `WRITE` with mode
//! Overwrite and the condition as predicate.
//!
//! When the condition reads only partition columns of the target, whole
//! files go and none is read.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{Column, DataFusionError, JoinType};
use datafusion::datasource::{provider_as_source, MemTable, TableProvider};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{cast as cast_expr, Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::SessionContext;
use deltalake::protocol::{DeltaOperation, SaveMode};

use crate::commit::committed::CommitSink;
use crate::error::{Error, Result};
use crate::read::provider::DeltaProvider;
use crate::table::checks::WriteChecks;
use crate::write::files::FileWriter;
use crate::write::rewrite::{self, file_index, FILE_COLUMN};

/// One REPLACE USING / REPLACE ON.
pub struct Replacement {
    /// The rows to insert, shaped as the table (the provider's lower-case
    /// names, the table's types).
    pub rows: Vec<RecordBatch>,
    /// The condition over `t.<column>` (target) and `s.<column>` (new rows)
    /// that marks the target rows to delete.
    pub condition: Expr,
    /// The condition reads no target column but partition columns.
    pub partition_only: bool,
    /// What the commit info records of the statement, as Databricks names
    /// it (`replaceUsingCols`, `replaceOnCond`). The operation's predicate
    /// stays empty: delta-rs' conflict check parses that as an expression
    /// over the table alone.
    pub parameter: (&'static str, String),
}

/// What a replacement did.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplaceMetrics {
    pub inserted_rows: u64,
    pub removed_files: usize,
    pub added_files: usize,
}

/// Runs `r` against the table of `provider` (its loaded version) and
/// commits once.
pub async fn replace_matching(
    provider: &DeltaProvider,
    state: SessionState,
    r: Replacement,
    committed: &CommitSink,
) -> Result<ReplaceMetrics> {
    let name = provider.name().to_string();
    let snapshot = provider.snapshot()?.clone();
    let log_store = provider.table().log_store();
    let inserted_rows: u64 = r.rows.iter().map(|b| b.num_rows() as u64).sum();
    let mut metrics = ReplaceMetrics {
        inserted_rows,
        ..Default::default()
    };
    // No new row matches nothing: the statement is a plain append.
    let empty = inserted_rows == 0;

    let ctx = SessionContext::new_with_state(state);
    let df = |e| Error::DataFusion {
        what: "planning a replace",
        source: Box::new(e),
    };
    // The new rows meet the table's constraints (and get their generated
    // columns) before they decide anything.
    let table_schema = datafusion::datasource::TableProvider::schema(provider);
    let rows = match WriteChecks::new(&snapshot, &table_schema, &ctx.state())? {
        Some(checks) => r
            .rows
            .into_iter()
            .map(|b| checks.apply(b))
            .collect::<Result<Vec<_>>>()?,
        None => r.rows,
    };
    let source: Arc<dyn TableProvider> = Arc::new(
        MemTable::try_new(TableProvider::schema(provider), vec![rows.clone()]).map_err(df)?,
    );

    let files = file_index(&snapshot, log_store.as_ref(), &name).await?;
    let mut removed: Vec<String> = Vec::new();
    let mut survivors: Vec<RecordBatch> = Vec::new();
    if !empty && !files.is_empty() {
        let target: Arc<dyn TableProvider> = if r.partition_only {
            Arc::new(partition_table(provider, &files)?)
        } else {
            Arc::new(provider.with_file_column(FILE_COLUMN)?)
        };
        removed = matched_files(&ctx, target, Arc::clone(&source), &r.condition).await?;
        if !r.partition_only && !removed.is_empty() {
            survivors = surviving_rows(&ctx, provider, source, &r.condition, &removed).await?;
        }
    }

    let mut removes = Vec::with_capacity(removed.len());
    for id in &removed {
        let Some(file) = files.get(id) else {
            return Err(Error::Internal(format!(
                "a matched file is not in the snapshot: {id}"
            )));
        };
        removes.push(file.clone());
    }
    metrics.removed_files = removed.len();

    let mut writer = FileWriter::new(&name, &snapshot, &log_store);
    for batch in survivors.iter().chain(rows.iter()) {
        writer.write(batch).await?;
    }
    let adds = writer.finish().await?;
    metrics.added_files = adds.len();

    let partition_by = snapshot.metadata().partition_columns().to_vec();
    let operation = DeltaOperation::Write {
        mode: SaveMode::Overwrite,
        partition_by: (!partition_by.is_empty()).then_some(partition_by),
        predicate: None,
    };
    let properties = crate::commit_properties_with([
        (
            "operationMetrics".to_string(),
            serde_json::json!({
                "numOutputRows": inserted_rows.to_string(),
                "numFiles": metrics.added_files.to_string(),
                "numRemovedFiles": metrics.removed_files.to_string(),
            }),
        ),
        (r.parameter.0.to_string(), r.parameter.1.into()),
    ]);
    let replaced = rewrite::commit(
        "replacing rows of",
        &name,
        provider.table(),
        &snapshot,
        rewrite::Changes {
            removed: removes,
            added: adds,
        },
        operation,
        properties,
    )
    .await?;
    committed
        .finish(provider.name(), Some(snapshot.version()), replaced)
        .await;
    Ok(metrics)
}

/// One row per live file: its id and its partition values, typed as the
/// table declares them.
fn partition_table(
    provider: &DeltaProvider,
    files: &HashMap<String, deltalake::kernel::Remove>,
) -> Result<MemTable> {
    let schema = provider.schema();
    let declared = provider.declared_column_names();
    let partitions = provider.partition_columns()?;
    let ids: Vec<&String> = files.keys().collect();
    let mut fields = vec![Field::new(FILE_COLUMN, DataType::Utf8, false)];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(StringArray::from(
        ids.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    ))];
    for (field, declared) in schema.fields().iter().zip(&declared) {
        if !partitions.contains(declared) {
            continue;
        }
        let raw: StringArray = ids
            .iter()
            .map(|id| {
                files
                    .get(*id)
                    .and_then(|f| f.partition_values.as_ref())
                    .and_then(|p| p.get(declared).cloned().flatten())
            })
            .collect();
        let typed = cast(&raw, field.data_type()).map_err(|e| Error::DataFusion {
            what: "reading partition values",
            source: Box::new(e.into()),
        })?;
        fields.push(Field::new(field.name(), field.data_type().clone(), true));
        columns.push(typed);
    }
    let schema = Arc::new(Schema::new(fields));
    let batch =
        RecordBatch::try_new(Arc::clone(&schema), columns).map_err(|e| Error::DataFusion {
            what: "reading partition values",
            source: Box::new(e.into()),
        })?;
    MemTable::try_new(schema, vec![vec![batch]]).map_err(|e| Error::DataFusion {
        what: "reading partition values",
        source: Box::new(e),
    })
}

/// The ids of the target files with a row some new row matches.
async fn matched_files(
    ctx: &SessionContext,
    target: Arc<dyn TableProvider>,
    source: Arc<dyn TableProvider>,
    condition: &Expr,
) -> Result<Vec<String>> {
    let plan = LogicalPlanBuilder::scan("t", provider_as_source(target), None)
        .and_then(|t| {
            t.join_on(
                LogicalPlanBuilder::scan("s", provider_as_source(source), None)?.build()?,
                JoinType::LeftSemi,
                [condition.clone()],
            )
        })
        .and_then(|j| {
            j.project([cast_expr(
                Expr::Column(Column::new(Some("t"), FILE_COLUMN)),
                DataType::Utf8,
            )])
        })
        .and_then(|p| p.distinct())
        .and_then(|p| p.build())
        .map_err(planning)?;
    rewrite::file_ids(&run(ctx, plan).await?)
}

/// The rows of the matched files that no new row matches.
async fn surviving_rows(
    ctx: &SessionContext,
    provider: &DeltaProvider,
    source: Arc<dyn TableProvider>,
    condition: &Expr,
    files: &[String],
) -> Result<Vec<RecordBatch>> {
    let touched = provider.with_files(FILE_COLUMN, files.to_vec())?;
    let columns: Vec<Expr> = TableProvider::schema(provider)
        .fields()
        .iter()
        .map(|f| Expr::Column(Column::new(Some("t"), f.name())))
        .collect();
    let plan = LogicalPlanBuilder::scan("t", provider_as_source(Arc::new(touched)), None)
        .and_then(|t| {
            t.join_on(
                LogicalPlanBuilder::scan("s", provider_as_source(source), None)?.build()?,
                JoinType::LeftAnti,
                [condition.clone()],
            )
        })
        .and_then(|j| j.project(columns))
        .and_then(|p| p.build())
        .map_err(planning)?;
    run(ctx, plan).await
}

fn planning(source: DataFusionError) -> Error {
    Error::DataFusion {
        what: "planning a replace",
        source: Box::new(source),
    }
}

async fn run(ctx: &SessionContext, plan: LogicalPlan) -> Result<Vec<RecordBatch>> {
    let df = ctx.execute_logical_plan(plan).await.map_err(planning)?;
    df.collect().await.map_err(|e| Error::DataFusion {
        what: "running a replace",
        source: Box::new(e),
    })
}
