//! [`WriteChecks`]: what every row written to a table must satisfy — its NOT
//! NULL columns, its CHECK constraints (`delta.constraints.<name>`), its
//! generated columns' expressions — applied to the batches of every write
//! path before anything is committed.
//!
//! delta-rs checks the same inside its builders, but with one combined
//! predicate whose error names neither the constraint nor the kind of
//! violation; Databricks names both (`DELTA_NOT_NULL_CONSTRAINT_VIOLATED`,
//! `DELTA_VIOLATE_CONSTRAINT_WITH_VALUES`), and some of our paths write
//! Parquet without those builders (REPLACE USING / ON).
//!
//! A generated column the write leaves NULL is computed here from its
//! expression; a value given for it must equal the expression's (Delta
//! treats the expression as a constraint named `Generated Column`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray};
use datafusion::arrow::compute::kernels::cmp::distinct;
use datafusion::arrow::compute::kernels::zip::zip;
use datafusion::arrow::compute::{cast, is_null};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::{DFSchema, DataFusionError};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::PhysicalExpr;
use deltalake::kernel::EagerSnapshot;

use crate::error::{Error, Result, CHECK_VIOLATED, EXCEED_LIMIT_LENGTH, NOT_NULL_VIOLATED};
use crate::table::constraints::{constraints, generation_expression};
use lakegres_common::SqlState;

/// The checks of one table for batches of one schema.
pub struct WriteChecks {
    /// How many columns the checked batches have.
    width: usize,
    /// Batch columns of NOT NULL table columns, with their declared names.
    not_null: Vec<(usize, String)>,
    generated: Vec<Generated>,
    checks: Vec<Check>,
    /// Batch columns of CHAR(n) / VARCHAR(n) columns, with their limit.
    lengths: Vec<(usize, usize)>,
}

impl std::fmt::Debug for WriteChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteChecks")
            .field("not_null", &self.not_null)
            .field("checks", &self.checks.len())
            .field("generated", &self.generated.len())
            .finish()
    }
}

struct Generated {
    index: usize,
    name: String,
    text: String,
    expr: Arc<dyn PhysicalExpr>,
    /// Batch columns the expression reads.
    reads: Vec<usize>,
}

struct Check {
    name: String,
    text: String,
    expr: Arc<dyn PhysicalExpr>,
    reads: Vec<usize>,
}

impl WriteChecks {
    /// The checks of the table at `snapshot` for batches shaped as
    /// `input` (the table's columns by name, any case; columns the table
    /// lacks are ignored). `None` when the table has nothing to check.
    pub(crate) fn new(
        snapshot: &EagerSnapshot,
        input: &SchemaRef,
        state: &SessionState,
    ) -> Result<Option<Self>> {
        let schema = snapshot.schema();
        let find = |name: &str| {
            input
                .fields()
                .iter()
                .position(|f| f.name().eq_ignore_ascii_case(name))
        };
        let mut not_null = Vec::new();
        let mut generated_fields = Vec::new();
        let mut lengths = Vec::new();
        for field in schema.fields() {
            let Some(i) = find(&field.name) else { continue };
            if !field.nullable {
                not_null.push((i, field.name.clone()));
            }
            if let Some(declared) = crate::table::types::char_varchar(field) {
                lengths.push((i, declared.length));
            }
            if let Some(text) = generation_expression(field) {
                generated_fields.push((i, field.name.clone(), text));
            }
        }
        let table_constraints = constraints(snapshot);
        if not_null.is_empty()
            && generated_fields.is_empty()
            && table_constraints.is_empty()
            && lengths.is_empty()
        {
            return Ok(None);
        }
        // Expressions are SQL over the columns; unquoted names are read
        // lower case, so they are planned over lower-case column names.
        let lower = Arc::new(Schema::new(
            input
                .fields()
                .iter()
                .map(|f| Field::new(f.name().to_lowercase(), f.data_type().clone(), true))
                .collect::<Vec<_>>(),
        ));
        let df_schema = DFSchema::try_from(Arc::clone(&lower)).map_err(planning)?;
        let plan = |text: &str| -> Result<(Arc<dyn PhysicalExpr>, Vec<usize>)> {
            let expr = state
                .create_logical_expr(text, &df_schema)
                .map_err(planning)?;
            let mut reads: Vec<usize> = expr
                .column_refs()
                .iter()
                .filter_map(|c| lower.index_of(&c.name).ok())
                .collect();
            reads.sort_unstable();
            reads.dedup();
            let physical = state
                .create_physical_expr(expr, &df_schema)
                .map_err(planning)?;
            Ok((physical, reads))
        };
        let mut generated = Vec::new();
        for (index, name, text) in generated_fields {
            let (expr, reads) = plan(&text)?;
            generated.push(Generated {
                index,
                name,
                text,
                expr,
                reads,
            });
        }
        let mut checks = Vec::new();
        for (name, text) in table_constraints {
            let (expr, reads) = plan(&text)?;
            checks.push(Check {
                name,
                text,
                expr,
                reads,
            });
        }
        Ok(Some(Self {
            width: input.fields().len(),
            not_null,
            generated,
            checks,
            lengths,
        }))
    }

    /// Fills the generated columns left NULL, then checks every row: the
    /// batch to write, or the first violation.
    pub fn apply(&self, batch: RecordBatch) -> Result<RecordBatch> {
        if batch.num_columns() != self.width {
            return Err(Error::Internal(format!(
                "constraint checks for {} columns got a batch of {}",
                self.width,
                batch.num_columns()
            )));
        }
        let batch = self.fill_generated(batch)?;
        for (i, name) in &self.not_null {
            if batch.column(*i).null_count() > 0 {
                return Err(Error::ConstraintViolation {
                    message: format!(
                        "{NOT_NULL_VIOLATED} NOT NULL constraint violated for column: {name}."
                    ),
                    state: SqlState::NOT_NULL_VIOLATION,
                });
            }
        }
        for &(i, limit) in &self.lengths {
            check_length(batch.column(i), limit)?;
        }
        let eval = lower_case(&batch)?;
        for check in &self.checks {
            let holds = evaluate(&check.expr, &eval)?;
            // Delta: a constraint that is false or NULL is broken.
            if let Some(row) = (0..holds.len()).find(|&r| !holds.is_valid(r) || !holds.value(r)) {
                return Err(violation(
                    &format!("{} ({})", check.name, check.text),
                    &batch,
                    &check.reads,
                    row,
                ));
            }
        }
        Ok(batch)
    }

    fn fill_generated(&self, batch: RecordBatch) -> Result<RecordBatch> {
        if self.generated.is_empty() {
            return Ok(batch);
        }
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        for g in &self.generated {
            let eval =
                lower_case(&RecordBatch::try_new(batch.schema(), columns.clone()).map_err(arrow)?)?;
            let computed = g
                .expr
                .evaluate(&eval)
                .and_then(|v| v.into_array(batch.num_rows()))
                .map_err(planning)?;
            let given = Arc::clone(&columns[g.index]);
            let computed = cast(&computed, given.data_type()).map_err(arrow)?;
            let filled = zip(&is_null(&given).map_err(arrow)?, &computed, &given).map_err(arrow)?;
            let differs = distinct(&filled, &computed).map_err(arrow)?;
            if let Some(row) = (0..differs.len()).find(|&r| differs.value(r)) {
                let mut reads = vec![g.index];
                reads.extend(g.reads.iter().copied().filter(|i| *i != g.index));
                return Err(violation(
                    &format!("Generated Column ({} <=> {})", g.name, g.text),
                    &batch,
                    &reads,
                    row,
                ));
            }
            columns[g.index] = filled;
        }
        RecordBatch::try_new(batch.schema(), columns).map_err(arrow)
    }
}

/// delta-rs' own check (MERGE writes through it) fails with a preview of
/// the offending rows as a text table, naming neither the constraint nor
/// the kind of violation. This reads the preview's first row back into the
/// table's types and runs our checks on it, for the error Databricks gives
/// (23502 for a NOT NULL column, the named CHECK constraint); `None` when
/// the preview cannot be read (an empty cell is taken as NULL).
pub(crate) fn explain_invalid_data(
    snapshot: &EagerSnapshot,
    message: &str,
    state: &SessionState,
) -> Option<Error> {
    let rows: Vec<Vec<String>> = message
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
            // The cells between the first and the last `|`.
            cells
                .get(1..cells.len().saturating_sub(1))
                .unwrap_or_default()
                .to_vec()
        })
        .collect();
    let (header, first) = (rows.first()?, rows.get(1)?);
    let table = snapshot.arrow_schema();
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (name, value) in header.iter().zip(first) {
        let Ok(field) = table.field_with_name(name) else {
            continue;
        };
        let text: ArrayRef = Arc::new(datafusion::arrow::array::StringArray::from(vec![(!value
            .is_empty())
        .then_some(value.as_str())]));
        columns.push(cast(&text, field.data_type()).ok()?);
        fields.push(Field::new(name, field.data_type().clone(), true));
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).ok()?;
    WriteChecks::new(snapshot, &schema, state)
        .ok()??
        .apply(batch)
        .err()
}

/// The batch with lower-case column names (the same arrays), as the
/// expressions were planned.
fn lower_case(batch: &RecordBatch) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(
        batch
            .schema()
            .fields()
            .iter()
            .map(|f| Field::new(f.name().to_lowercase(), f.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    RecordBatch::try_new(schema, batch.columns().to_vec()).map_err(arrow)
}

fn evaluate(expr: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Result<BooleanArray> {
    let value = expr
        .evaluate(batch)
        .and_then(|v: ColumnarValue| v.into_array(batch.num_rows()))
        .map_err(planning)?;
    let value = cast(&value, &datafusion::arrow::datatypes::DataType::Boolean).map_err(arrow)?;
    value
        .as_any()
        .downcast_ref::<BooleanArray>()
        .cloned()
        .ok_or_else(|| Error::Internal("a constraint that is not a boolean".into()))
}

/// A CHAR(n) / VARCHAR(n) column takes values of at most n characters
/// (Databricks' `EXCEED_LIMIT_LENGTH`, 54006).
fn check_length(column: &ArrayRef, limit: usize) -> Result<()> {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::DataType;
    let too_long = |s: Option<&str>| s.is_some_and(|s| s.chars().count() > limit);
    let exceeded = match column.data_type() {
        DataType::Utf8 => column.as_string::<i32>().iter().any(too_long),
        DataType::LargeUtf8 => column.as_string::<i64>().iter().any(too_long),
        DataType::Utf8View => column.as_string_view().iter().any(too_long),
        _ => false,
    };
    if exceeded {
        return Err(Error::ConstraintViolation {
            message: format!(
                "{EXCEED_LIMIT_LENGTH} Exceeds char/varchar type length limitation: {limit}."
            ),
            state: SqlState::EXCEED_LIMIT_LENGTH,
        });
    }
    Ok(())
}

/// Databricks' `DELTA_VIOLATE_CONSTRAINT_WITH_VALUES`: the constraint and
/// the values the row has in the columns it reads.
fn violation(constraint: &str, batch: &RecordBatch, reads: &[usize], row: usize) -> Error {
    let options = FormatOptions::default().with_null("null");
    let values: Vec<String> = reads
        .iter()
        .map(|&i| {
            let name = batch.schema().field(i).name().clone();
            let value = ArrayFormatter::try_new(batch.column(i).as_ref(), &options)
                .map(|f| f.value(row).to_string())
                .unwrap_or_default();
            format!("{name} : {value}")
        })
        .collect();
    Error::ConstraintViolation {
        message: format!(
            "{CHECK_VIOLATED} CHECK constraint {constraint} violated by row with values: {}",
            values.join(", ")
        ),
        state: SqlState::CHECK_VIOLATION,
    }
}

fn planning(source: DataFusionError) -> Error {
    Error::DataFusion {
        what: "checking constraints",
        source: Box::new(source),
    }
}

fn arrow(source: datafusion::arrow::error::ArrowError) -> Error {
    planning(source.into())
}
