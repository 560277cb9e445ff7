//! Functions whose result can be far larger than their arguments
//! (`repeat('x', 1500000000)`, `lpad`, `sequence(1, 300000000)`): a call
//! that would build more than [`MAX_RESULT_BYTES`] is refused (54000)
//! before it runs. Such results are built outside DataFusion's memory
//! pool, so without the bound one statement took gigabytes past
//! `sql.memory_limit` while other sessions waited (issue #57).

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::compute::kernels::length::length;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, Expr, LogicalPlan, ScalarFunctionArgs};

use super::error::{df, FunctionError};

/// The most one call of a bounded function may build, over all the rows of
/// its batch: 256 MiB.
pub(crate) const MAX_RESULT_BYTES: u64 = 256 << 20;

/// The functions bounded, and how each one's result size follows from its
/// arguments.
pub(crate) const BOUNDED: &[(&str, Size)] = &[
    ("repeat", Size::LengthTimesCount),
    ("lpad", Size::Count(1)),
    ("rpad", Size::Count(1)),
    ("space", Size::Count(0)),
    ("array_repeat", Size::Elements(1)),
    ("sequence", Size::Range),
];

/// How a result's size follows from a call's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Size {
    /// The first argument's length times the second (`repeat`).
    LengthTimesCount,
    /// The argument at that position, a length in characters.
    Count(usize),
    /// The argument at that position, a number of 8-byte elements.
    Elements(usize),
    /// `(stop - start) / step + 1` elements of 8 bytes, of integers.
    Range,
}

/// 54000 when a call of `function` would build more than
/// [`MAX_RESULT_BYTES`], by `size` of its arguments.
pub(crate) fn check(size: Size, function: &str, args: &ScalarFunctionArgs) -> Result<()> {
    // With every argument a scalar, the result is one value.
    let rows = if args
        .args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)))
    {
        1
    } else {
        args.number_rows
    };
    let numbers = |i: usize| -> Result<Option<Vec<i64>>> {
        let Some(arg) = args.args.get(i) else {
            return Ok(None);
        };
        if !arg.data_type().is_integer() {
            return Ok(None);
        }
        let array = cast(&arg.to_array(rows)?, &DataType::Int64)?;
        let array = array.as_primitive::<Int64Type>();
        Ok(Some(
            (0..rows)
                .map(|r| if array.is_null(r) { 0 } else { array.value(r) })
                .collect(),
        ))
    };
    let bytes: u64 = match size {
        Size::LengthTimesCount => {
            let (Some(lengths), Some(counts)) = (lengths(args.args.first(), rows)?, numbers(1)?)
            else {
                return Ok(());
            };
            lengths
                .iter()
                .zip(&counts)
                .map(|(l, c)| non_negative(*l).saturating_mul(non_negative(*c)))
                .fold(0, u64::saturating_add)
        }
        Size::Count(i) => sum(numbers(i)?, 1),
        Size::Elements(i) => sum(numbers(i)?, 8),
        Size::Range => {
            let (Some(start), Some(stop)) = (numbers(0)?, numbers(1)?) else {
                return Ok(());
            };
            let step = numbers(2)?;
            (0..rows)
                .map(|r| {
                    let span = stop[r].abs_diff(start[r]);
                    let step = step.as_ref().map_or(1, |s| s[r].unsigned_abs().max(1));
                    (span / step).saturating_add(1).saturating_mul(8)
                })
                .fold(0, u64::saturating_add)
        }
    };
    if bytes > MAX_RESULT_BYTES {
        return Err(df(FunctionError::ResultTooLarge {
            function: function.to_string(),
            bytes,
            limit: MAX_RESULT_BYTES,
        }));
    }
    Ok(())
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn sum(numbers: Option<Vec<i64>>, width: u64) -> u64 {
    numbers
        .unwrap_or_default()
        .into_iter()
        .map(|n| non_negative(n).saturating_mul(width))
        .fold(0, u64::saturating_add)
}

/// The byte lengths of a string or binary argument, row by row; a scalar's
/// without copying it once per row.
fn lengths(arg: Option<&ColumnarValue>, rows: usize) -> Result<Option<Vec<i64>>> {
    match arg {
        Some(ColumnarValue::Scalar(scalar)) => {
            let length = match scalar {
                ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => {
                    s.as_ref().map_or(0, String::len)
                }
                ScalarValue::Binary(b)
                | ScalarValue::LargeBinary(b)
                | ScalarValue::BinaryView(b) => b.as_ref().map_or(0, Vec::len),
                _ => return Ok(None),
            };
            Ok(Some(vec![i64::try_from(length).unwrap_or(i64::MAX); rows]))
        }
        Some(ColumnarValue::Array(array)) => {
            let Ok(lengths) = length(array) else {
                return Ok(None);
            };
            let lengths = cast(&lengths, &DataType::Int64)?;
            let lengths = lengths.as_primitive::<Int64Type>();
            Ok(Some(
                (0..rows.min(lengths.len()))
                    .map(|r| {
                        if lengths.is_null(r) {
                            0
                        } else {
                            lengths.value(r)
                        }
                    })
                    .collect(),
            ))
        }
        None => Ok(None),
    }
}

/// The most rows a batch of `plan` may hold so that its largest constant
/// repeated down a batch stays within [`MAX_RESULT_BYTES`], or `None` when
/// `batch_size` rows already do. A constant is one value in the plan but a
/// projection (`concat(s, repeat('x', 100000000))`) copies it into every
/// row of its batch, outside the memory pool: 40 rows of a folded 100 MB
/// constant took 3 GB before failing.
pub fn rows_per_batch(plan: &LogicalPlan, batch_size: usize) -> Option<usize> {
    let mut largest = 0usize;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::Literal(value, _) = e {
                    largest = largest.max(value.size());
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    let rows = usize::try_from(MAX_RESULT_BYTES).ok()? / largest.max(1);
    (rows < batch_size).then_some(rows.max(1))
}
