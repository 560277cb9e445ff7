//! Identity columns (Delta protocol, "Identity Columns"; Databricks'
//! `GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY`): a BIGINT column whose
//! metadata holds `delta.identity.start`, `.step`, `.allowExplicitInsert`
//! and, once values were handed out, `.highWaterMark`.
//!
//! A write hands out values through one [`Allocator`]: the rows of every
//! partition draw from one counter, and the commit carries a `metaData`
//! action whose high-water mark is the last value handed out. A concurrent
//! write that also moved the mark changes the metadata, so one of the two
//! commits fails (40001) instead of committing duplicates — Databricks
//! likewise runs identity writes one at a time.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use deltalake::kernel::transaction::ActionsAtCommit;
use deltalake::kernel::{
    Action, EagerSnapshot, Metadata, MetadataExt, MetadataValue, StructField, StructType,
};

use crate::error::{Error, Result};
use lakegres_common::SqlState;

pub const START: &str = crate::table::features::IDENTITY_START;
pub const STEP: &str = "delta.identity.step";
pub const HIGH_WATER_MARK: &str = "delta.identity.highWaterMark";
pub const ALLOW_EXPLICIT_INSERT: &str = "delta.identity.allowExplicitInsert";

pub use crate::error::EXPLICIT_INSERT;

/// A declared identity column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub start: i64,
    pub step: i64,
    /// `GENERATED ALWAYS` (no explicit values) rather than `BY DEFAULT`.
    pub always: bool,
}

impl Identity {
    /// The column metadata Delta keeps for it.
    pub(crate) fn metadata(&self) -> Vec<(String, MetadataValue)> {
        vec![
            (START.to_string(), MetadataValue::Number(self.start)),
            (STEP.to_string(), MetadataValue::Number(self.step)),
            (
                ALLOW_EXPLICIT_INSERT.to_string(),
                MetadataValue::Boolean(!self.always),
            ),
        ]
    }
}

/// An identity column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityColumn {
    pub name: String,
    pub identity: Identity,
    pub high_water_mark: Option<i64>,
}

fn number(field: &StructField, key: &str) -> Option<i64> {
    match field.metadata().get(key) {
        Some(MetadataValue::Number(n)) => Some(*n),
        Some(MetadataValue::String(s)) => s.parse().ok(),
        _ => None,
    }
}

/// The identity definition of a column, if it is one.
pub(crate) fn identity_of(field: &StructField) -> Option<IdentityColumn> {
    let start = number(field, START)?;
    let step = number(field, STEP).unwrap_or(1);
    let always = !matches!(
        field.metadata().get(ALLOW_EXPLICIT_INSERT),
        Some(MetadataValue::Boolean(true))
    );
    Some(IdentityColumn {
        name: field.name().clone(),
        identity: Identity {
            start,
            step,
            always,
        },
        high_water_mark: number(field, HIGH_WATER_MARK),
    })
}

/// The identity columns of a schema.
pub(crate) fn identity_columns(schema: &StructType) -> Vec<IdentityColumn> {
    schema.fields().filter_map(identity_of).collect()
}

/// One identity column of a write: where it is in the rows.
#[derive(Debug)]
struct Column {
    column: IdentityColumn,
    index: usize,
}

impl Column {
    /// The `k`-th value this write hands out (from 0).
    fn value(&self, k: i64) -> Option<i64> {
        let Identity { start, step, .. } = self.column.identity;
        match self.column.high_water_mark {
            None => k.checked_mul(step)?.checked_add(start),
            Some(mark) => k.checked_add(1)?.checked_mul(step)?.checked_add(mark),
        }
    }
}

/// What a write has handed out so far, and the `metaData` action that
/// records it.
#[derive(Debug, Default)]
struct HandedOut {
    counts: Vec<i64>,
    metadata: Option<Metadata>,
}

/// Hands out the identity values of one write and makes its commit's
/// `metaData` action.
#[derive(Debug)]
pub struct Allocator {
    table: String,
    metadata: Metadata,
    schema: StructType,
    columns: Vec<Column>,
    handed_out: std::sync::Mutex<HandedOut>,
}

impl Allocator {
    /// For a write to the table at `snapshot` whose rows have the table's
    /// columns in `names` order; `None` without identity columns.
    pub(crate) fn new(
        table: &str,
        snapshot: &EagerSnapshot,
        names: &[String],
    ) -> Option<Arc<Self>> {
        let schema = snapshot.schema().as_ref().clone();
        let columns: Vec<Column> = identity_columns(&schema)
            .into_iter()
            .filter_map(|column| {
                let index = names
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(&column.name))?;
                Some(Column { column, index })
            })
            .collect();
        if columns.is_empty() {
            return None;
        }
        Some(Arc::new(Self {
            table: table.to_string(),
            metadata: snapshot.metadata().clone(),
            schema,
            handed_out: std::sync::Mutex::new(HandedOut {
                counts: vec![0; columns.len()],
                metadata: None,
            }),
            columns,
        }))
    }

    /// Fills the identity columns of `batch`: every row of a `GENERATED
    /// ALWAYS` column (a value given for it is refused), the NULL rows of a
    /// `BY DEFAULT` one. The values come from one counter per column,
    /// shared by every partition of the write.
    pub fn fill(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        let mut handed_out = self
            .handed_out
            .lock()
            .map_err(|_| Error::Internal("identity allocator poisoned".into()))?;
        for (at, c) in self.columns.iter().enumerate() {
            let Some(given) = columns.get(c.index) else {
                continue;
            };
            let given = datafusion::arrow::compute::cast(
                given,
                &datafusion::arrow::datatypes::DataType::Int64,
            )
            .map_err(|e| Error::Internal(format!("identity column {}: {e}", c.column.name)))?;
            let given = given.as_primitive::<Int64Type>();
            if c.column.identity.always && given.null_count() < given.len() {
                return Err(explicit_value_refused(&c.column.name));
            }
            let wanted = given.null_count();
            let mut new = reserve(c, &mut handed_out.counts[at], wanted)?.into_iter();
            let values: Vec<Option<i64>> = (0..given.len())
                .map(|i| {
                    if given.is_null(i) {
                        new.next()
                    } else {
                        Some(given.value(i))
                    }
                })
                .collect();
            columns[c.index] = Arc::new(Int64Array::from(values));
        }
        handed_out.metadata = self.with_marks(&handed_out.counts)?;
        RecordBatch::try_new(batch.schema(), columns).map_err(|e| Error::DataFusion {
            what: "filling identity columns",
            source: Box::new(e.into()),
        })
    }

    /// `n` new values of identity column `column`, for a MERGE's inserted
    /// rows (through [`Self::udf`]).
    fn next_values(&self, column: usize, n: usize) -> Result<Vec<i64>> {
        let mut handed_out = self
            .handed_out
            .lock()
            .map_err(|_| Error::Internal("identity allocator poisoned".into()))?;
        let values = reserve(&self.columns[column], &mut handed_out.counts[column], n)?;
        handed_out.metadata = self.with_marks(&handed_out.counts)?;
        Ok(values)
    }

    /// The identity columns' names, with the function that gives each new
    /// values (`name()`, one per row): a MERGE's INSERT clause calls it for
    /// a column the clause leaves out.
    pub fn udfs(self: &Arc<Self>) -> Vec<(String, datafusion::logical_expr::ScalarUDF)> {
        self.columns
            .iter()
            .enumerate()
            .map(|(at, c)| {
                let udf = NextValue {
                    name: format!("lakegres_identity_{at}"),
                    allocator: Arc::clone(self),
                    column: at,
                    signature: datafusion::logical_expr::Signature::nullary(
                        datafusion::logical_expr::Volatility::Volatile,
                    ),
                };
                (
                    c.column.name.clone(),
                    datafusion::logical_expr::ScalarUDF::new_from_impl(udf),
                )
            })
            .collect()
    }

    /// Whether `column` is a `GENERATED ALWAYS` identity column.
    pub fn always(&self, column: &str) -> bool {
        self.columns
            .iter()
            .any(|c| c.column.identity.always && c.column.name.eq_ignore_ascii_case(column))
    }

    /// The table's metadata with each column's high-water mark after
    /// `counts` values; `None` when no value was handed out.
    fn with_marks(&self, counts: &[i64]) -> Result<Option<Metadata>> {
        if counts.iter().all(|c| *c == 0) {
            return Ok(None);
        }
        let fields: Vec<StructField> = self
            .schema
            .fields()
            .map(|field| {
                let found = self
                    .columns
                    .iter()
                    .zip(counts)
                    .find(|(c, _)| c.column.name == *field.name());
                match found {
                    Some((c, count)) if *count > 0 => {
                        let mark = c.value(count - 1).ok_or_else(|| overflow(&c.column.name))?;
                        Ok(field.clone().add_metadata([(
                            HIGH_WATER_MARK.to_string(),
                            MetadataValue::Number(mark),
                        )]))
                    }
                    _ => Ok(field.clone()),
                }
            })
            .collect::<Result<_>>()?;
        let schema = StructType::try_new(fields)
            .map_err(|e| Error::Internal(format!("identity schema of {}: {e}", self.table)))?;
        self.metadata
            .clone()
            .with_schema(&schema)
            .map(Some)
            .map_err(|e| Error::delta("writing", self.table.clone(), e.into()))
    }

    /// The commit's `metaData` action with the new high-water marks (made
    /// as the values were handed out); none when the write handed out none.
    pub(crate) fn commit_actions(&self) -> Vec<Action> {
        match self.handed_out.lock() {
            Ok(h) => h
                .metadata
                .clone()
                .map(Action::Metadata)
                .into_iter()
                .collect(),
            Err(_) => vec![],
        }
    }

    /// [`Self::commit_actions`] for delta-rs to add when it builds the
    /// commit, after the write ran.
    pub fn actions_at_commit(self: &Arc<Self>) -> ActionsAtCommit {
        let this = Arc::clone(self);
        ActionsAtCommit(Arc::new(move || this.commit_actions()))
    }
}

/// The next `n` values of `c`, of which `count` were handed out already.
fn reserve(c: &Column, count: &mut i64, n: usize) -> Result<Vec<i64>> {
    let n = i64::try_from(n).map_err(|_| overflow(&c.column.name))?;
    let values = (*count..*count + n)
        .map(|k| c.value(k).ok_or_else(|| overflow(&c.column.name)))
        .collect::<Result<Vec<_>>>()?;
    *count += n;
    Ok(values)
}

/// `lakegres_identity_N()`: one new value of an identity column per row.
#[derive(Debug)]
struct NextValue {
    name: String,
    allocator: Arc<Allocator>,
    column: usize,
    signature: datafusion::logical_expr::Signature,
}

impl PartialEq for NextValue {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.allocator, &other.allocator)
    }
}

impl Eq for NextValue {}

impl std::hash::Hash for NextValue {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for NextValue {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(
        &self,
        _args: &[datafusion::arrow::datatypes::DataType],
    ) -> datafusion::common::Result<datafusion::arrow::datatypes::DataType> {
        Ok(datafusion::arrow::datatypes::DataType::Int64)
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> datafusion::common::Result<datafusion::logical_expr::ColumnarValue> {
        let values = self
            .allocator
            .next_values(self.column, args.number_rows)
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        Ok(datafusion::logical_expr::ColumnarValue::Array(Arc::new(
            Int64Array::from(values),
        )))
    }
}

/// A value given for a `GENERATED ALWAYS` identity column (42808).
pub(crate) fn explicit_value_refused(column: &str) -> Error {
    Error::Refused {
        message: format!(
            "{EXPLICIT_INSERT} Providing values for GENERATED ALWAYS AS IDENTITY column {column} \
             is not supported"
        ),
        state: SqlState::COLUMN_NOT_ASSIGNABLE,
    }
}

/// An UPDATE (or MERGE UPDATE SET) of an identity column (42808).
pub(crate) fn update_refused(column: &str) -> Error {
    Error::Refused {
        message: format!(
            "[DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] IDENTITY column {column} cannot be \
             updated"
        ),
        state: SqlState::COLUMN_NOT_ASSIGNABLE,
    }
}

fn overflow(column: &str) -> Error {
    Error::Refused {
        message: format!(
            "[DELTA_IDENTITY_COLUMNS_VALUE_OVERFLOW] the values of identity column {column} \
             overflow BIGINT"
        ),
        state: SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(start: i64, step: i64, mark: Option<i64>) -> Column {
        Column {
            column: IdentityColumn {
                name: "id".into(),
                identity: Identity {
                    start,
                    step,
                    always: true,
                },
                high_water_mark: mark,
            },
            index: 0,
        }
    }

    #[test]
    fn values_follow_start_step_and_mark() {
        let fresh = column(10, 5, None);
        assert_eq!((fresh.value(0), fresh.value(2)), (Some(10), Some(20)));
        let after = column(10, 5, Some(20));
        assert_eq!(after.value(0), Some(25));
        let down = column(-1, -2, Some(-5));
        assert_eq!(down.value(1), Some(-9));
        assert_eq!(column(i64::MAX, 1, None).value(1), None);
    }
}
