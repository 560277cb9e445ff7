//! UPDATE and DELETE that delta-rs cannot run whole — a subquery (`IN`,
//! `NOT IN`, `EXISTS`, scalar; correlated or not) in the condition or in a
//! SET value, or a condition delta-rs cannot write into its commit — run as
//! Delta runs them:
//!
//! 1. A scan carrying each row's file, filtered by the condition, names the
//!    files with a matching row. Other files are neither read again nor
//!    rewritten.
//! 2. Those files, a group at a time (about [`GROUP_BYTES`] of Parquet): their
//!    rows are read into memory and numbered, and the condition is evaluated
//!    over exactly those rows — the plan DataFusion runs for `SELECT … WHERE
//!    condition`, so a DELETE removes the rows that SELECT returns, NULL
//!    semantics of `NOT IN` included. The numbers of the matching rows (and,
//!    for UPDATE, their new values) come back; every other row is carried
//!    over unchanged. Numbering the rows, rather than evaluating `condition
//!    IS NOT TRUE` for the rows that stay, keeps the two sets complementary
//!    whatever the plan does with subqueries.
//! 3. One commit: the touched files removed, the new ones added.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, UInt64Array,
};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{Column, DataFusionError};
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::prelude::SessionContext;
use deltalake::kernel::Remove;
use deltalake::DeltaTable;

use super::{has_subquery, DmlNode, DmlOp};
use crate::error::{Error, Result};
use crate::read::provider::DeltaProvider;
use crate::table::checks::WriteChecks;
use crate::table::constraints::generation_expression;
use crate::write::files::FileWriter;
use crate::write::rewrite::{self, FILE_COLUMN};

/// How much Parquet (compressed bytes, as the log records it) one group of
/// touched files may hold: the rows of a group are in memory at once.
const GROUP_BYTES: i64 = 128 << 20;

/// The number of each row of a group, in the order read.
const ROW_COLUMN: &str = "__lakegres_row";

/// Runs `node` as a file rewrite: the affected rows, and the table at the
/// version committed (`None` when no row matched and nothing was committed,
/// as delta-rs' builders do).
pub(super) async fn run(
    node: &DmlNode,
    table: DeltaTable,
    state: Arc<SessionState>,
) -> Result<(u64, Option<DeltaTable>)> {
    let name = node.name.to_string();
    let provider = DeltaProvider::of_delta(node.name.clone(), table)?;
    let snapshot = provider.snapshot()?.clone();
    let log_store = provider.table().log_store();
    let ctx = SessionContext::new_with_state(state.as_ref().clone());
    let width = provider.schema().fields().len();

    // 1. The files with a matching row.
    let with_file = Arc::new(provider.with_file_column(FILE_COLUMN)?);
    let file = Expr::Column(Column::new(Some(node.qualifier().clone()), FILE_COLUMN));
    let plan = node
        .matching(with_file)
        .and_then(|p| p.project(vec![file]))
        .and_then(|p| p.distinct())
        .and_then(|p| p.build())
        .map_err(planning)?;
    let touched = rewrite::file_ids(&collect(&ctx, plan).await?)?;
    if touched.is_empty() {
        return Ok((0, None));
    }
    let files = rewrite::file_index(&snapshot, log_store.as_ref(), &name).await?;
    let mut removes: Vec<Remove> = Vec::with_capacity(touched.len());
    for id in &touched {
        let Some(remove) = files.get(id) else {
            return Err(Error::Internal(format!(
                "a matched file is not in the snapshot: {id}"
            )));
        };
        removes.push(remove.clone());
    }

    // 2. Their rows, a group of files at a time.
    let update = match &node.op {
        DmlOp::Update { values } => Some(Update::new(&provider, values, &state)?),
        DmlOp::Delete => None,
    };
    let mut writer = FileWriter::new(&name, &snapshot, &log_store);
    let mut changed = 0u64;
    let mut copied = 0u64;
    for group in groups(&touched, &removes) {
        let plan = rewrite::scan_files(&provider, node.table_ref.clone(), group)?;
        let (numbered, total) = number(collect(&ctx, plan).await?)?;
        let Some(first) = numbered.first() else {
            continue;
        };
        let group_rows =
            MemTable::try_new(first.schema(), vec![numbered.clone()]).map_err(planning)?;
        let row = Expr::Column(Column::new(Some(node.qualifier().clone()), ROW_COLUMN));
        let mut outputs = vec![row];
        if let DmlOp::Update { values } = &node.op {
            outputs.extend(values.iter().cloned());
        }
        let plan = node
            .matching(Arc::new(group_rows))
            .and_then(|p| p.project(outputs))
            .and_then(|p| p.build())
            .map_err(planning)?;
        let matches = collect(&ctx, plan).await?;

        let mut hit = vec![false; total];
        for batch in &matches {
            let Some(numbers) = batch.column(0).as_primitive_opt::<UInt64Type>() else {
                return Err(Error::Internal("row numbers are not UInt64".into()));
            };
            for n in numbers.iter().flatten() {
                let Some(seen) = hit.get_mut(n as usize) else {
                    return Err(Error::Internal(format!("row number {n} out of range")));
                };
                if *seen && update.is_some() {
                    // A row an UPDATE would write twice: only a scalar
                    // subquery giving several rows can do that.
                    return Err(Error::ScalarSubqueryTooManyRows);
                }
                *seen = true;
            }
        }
        for batch in &numbered {
            let Some(numbers) = batch.column(width + 1).as_primitive_opt::<UInt64Type>() else {
                return Err(Error::Internal("row numbers are not UInt64".into()));
            };
            let keep: BooleanArray = numbers
                .iter()
                .map(|n| Some(!n.is_some_and(|n| hit.get(n as usize).copied().unwrap_or(false))))
                .collect();
            let kept = filter_record_batch(batch, &keep).map_err(arrow)?;
            copied += kept.num_rows() as u64;
            writer
                .write(
                    &kept
                        .project(&(0..width).collect::<Vec<_>>())
                        .map_err(arrow)?,
                )
                .await?;
        }
        match &update {
            None => changed += hit.iter().filter(|h| **h).count() as u64,
            Some(update) => {
                for batch in &matches {
                    let values = update.row(batch)?;
                    changed += values.num_rows() as u64;
                    writer.write(&values).await?;
                }
            }
        }
    }
    let adds = writer.finish().await?;

    // 3. One commit.
    let (operation, changed_key) = node.op.operation(read_predicate(node, &provider));
    let properties = crate::commit_properties_with([(
        "operationMetrics".to_string(),
        serde_json::json!({
            "num_added_files": adds.len(),
            "num_removed_files": removes.len(),
            changed_key: changed,
            "num_copied_rows": copied,
        }),
    )]);
    let table = rewrite::commit(
        node.op.doing(),
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
    Ok((changed, Some(table)))
}

/// What the commit records as the rows the statement read, which delta-rs'
/// conflict check parses back as an expression over the table: the
/// condition's conjuncts without a subquery that it can write (a superset
/// of the rows matched), or `true` (the whole table) when none is left —
/// never narrower than what was read, so a concurrent change to a row this
/// statement might have matched still conflicts.
pub(super) fn read_predicate(node: &DmlNode, provider: &DeltaProvider) -> Option<String> {
    let plain = node
        .predicate
        .as_ref()
        .map(|p| {
            split_conjunction(p)
                .into_iter()
                .filter(|c| !has_subquery(c))
                .filter_map(|c| provider.storage_expr(c).ok())
                .filter(|c| deltalake::delta_datafusion::expr::fmt_expr_to_sql(c).is_ok())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let text = conjunction(plain)
        .and_then(|p| deltalake::delta_datafusion::expr::fmt_expr_to_sql(&p).ok())
        .unwrap_or_else(|| "true".to_string());
    Some(text)
}

/// The touched files in groups of about [`GROUP_BYTES`] (at least one file
/// each).
fn groups(ids: &[String], removes: &[Remove]) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0i64;
    for (id, remove) in ids.iter().zip(removes) {
        let size = remove.size.unwrap_or(0);
        match groups.last_mut() {
            Some(group) if bytes + size <= GROUP_BYTES => {
                group.push(id.clone());
                bytes += size;
            }
            _ => {
                groups.push(vec![id.clone()]);
                bytes = size;
            }
        }
    }
    groups
}

/// The batches with one more column, [`ROW_COLUMN`], numbering their rows
/// from 0; and how many there are.
fn number(batches: Vec<RecordBatch>) -> Result<(Vec<RecordBatch>, usize)> {
    let mut next = 0u64;
    let mut numbered = Vec::with_capacity(batches.len());
    for batch in batches {
        let schema = batch.schema();
        let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(ROW_COLUMN, DataType::UInt64, false)));
        let rows = batch.num_rows() as u64;
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        columns.push(Arc::new(UInt64Array::from_iter_values(next..next + rows)));
        next += rows;
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        numbered.push(RecordBatch::try_new(schema, columns).map_err(arrow)?);
    }
    Ok((numbered, next as usize))
}

/// How an UPDATE's matched rows become the rows written.
pub(super) struct Update {
    /// The table's columns, as the provider shows them.
    schema: SchemaRef,
    /// Generated columns the statement does not set: left NULL in the new
    /// row so [`WriteChecks`] computes them from its new values.
    regenerate: Vec<usize>,
    checks: Option<WriteChecks>,
}

impl Update {
    pub(super) fn new(
        provider: &DeltaProvider,
        values: &[Expr],
        state: &SessionState,
    ) -> Result<Self> {
        let schema = provider.schema();
        let snapshot = provider.snapshot()?;
        let set: HashMap<String, bool> = values
            .iter()
            .filter_map(|v| match v {
                Expr::Alias(a) => Some((
                    a.name.to_lowercase(),
                    !matches!(a.expr.as_ref(), Expr::Column(c) if c.name == a.name),
                )),
                _ => None,
            })
            .collect();
        let regenerate = snapshot
            .schema()
            .fields()
            .filter(|f| generation_expression(f).is_some())
            .filter(|f| !set.get(&f.name.to_lowercase()).copied().unwrap_or(false))
            .filter_map(|f| {
                schema
                    .fields()
                    .iter()
                    .position(|s| s.name().eq_ignore_ascii_case(&f.name))
            })
            .collect();
        let checks = WriteChecks::new(snapshot, &schema, state)?;
        Ok(Self {
            schema,
            regenerate,
            checks,
        })
    }

    /// The rows to write for a batch of (row number, new values…).
    pub(super) fn row(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let mut columns: Vec<ArrayRef> = batch.columns().iter().skip(1).cloned().collect();
        for &i in &self.regenerate {
            if let (Some(column), Some(field)) = (columns.get_mut(i), self.schema.fields().get(i)) {
                *column = new_null_array(field.data_type(), rows);
            }
        }
        let nullable: Vec<Field> = self
            .schema
            .fields()
            .iter()
            .zip(&columns)
            .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
            .collect();
        let batch =
            RecordBatch::try_new(Arc::new(Schema::new(nullable)), columns).map_err(arrow)?;
        match &self.checks {
            Some(checks) => checks.apply(batch),
            None => Ok(batch),
        }
    }
}

async fn collect(ctx: &SessionContext, plan: LogicalPlan) -> Result<Vec<RecordBatch>> {
    ctx.execute_logical_plan(plan)
        .await
        .map_err(running)?
        .collect()
        .await
        .map_err(running)
}

pub(super) fn planning(source: DataFusionError) -> Error {
    Error::DataFusion {
        what: "planning a DML statement",
        source: Box::new(source),
    }
}

pub(super) fn running(source: DataFusionError) -> Error {
    Error::DataFusion {
        what: "running a DML statement",
        source: Box::new(source),
    }
}

fn arrow(source: datafusion::arrow::error::ArrowError) -> Error {
    Error::DataFusion {
        what: "rewriting rows",
        source: Box::new(source.into()),
    }
}
