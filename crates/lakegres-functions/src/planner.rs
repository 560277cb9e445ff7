//! Operators as Databricks plans them, hooked into DataFusion's SQL
//! planning (an [`ExprPlanner`] asked before DataFusion's own):
//!
//! - `a / b` is DOUBLE division unless a decimal is involved, then decimal
//!   division with Spark's result precision; a zero divisor is
//!   `DIVIDE_BY_ZERO` (<https://docs.databricks.com/sql/language-manual/functions/slashsign.html>);
//! - `a div b` is integral division, a BIGINT;
//! - `arr[i]` is 0-based and out of bounds is `INVALID_ARRAY_INDEX`,
//!   `map[k]` is NULL for a missing key
//!   (<https://docs.databricks.com/sql/language-manual/functions/bracketsign.html>);
//! - `s:a.b[0]` reads a JSON path of a string, as `get_json_object`
//!   (<https://docs.databricks.com/sql/language-manual/sql-ref-json-path-expression.html>);
//! - `a || b` is `concat`: NULL if either side is.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{
    ExprPlanner, PlannerResult, RawBinaryExpr, RawFieldAccessExpr,
};
use datafusion::logical_expr::{lit, Expr, ExprSchemable, GetFieldAccess, ScalarUDF};
use sqlparser::ast::BinaryOperator;

/// See the module comment.
#[derive(Debug, Default)]
pub(crate) struct DatabricksPlanner;

fn call(udf: ScalarUDF, args: Vec<Expr>) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(std::sync::Arc::new(udf), args))
}

fn is_integer(t: &DataType) -> bool {
    t.is_integer()
}

/// How many nested calls of one checked operator stay nested: `(a + 1) + 1`
/// keeps `a + 1` whole, for a `GROUP BY a + 1` to find. Deeper, a chain is
/// one call of all its operands: nested calls are named again at every
/// level (a chain of 200 took 4 s to plan).
const NESTED_CHAIN: usize = 8;

/// The arguments of `left OP right`, with `left` a call of `name` or not.
fn chain_operands(left: Expr, name: &str, right: Expr) -> Vec<Expr> {
    let same = |e: &Expr| matches!(e, Expr::ScalarFunction(f) if f.func.name() == name);
    let mut depth = 0;
    let mut at = &left;
    while let Expr::ScalarFunction(f) = at {
        if !same(at) {
            break;
        }
        depth += 1;
        if f.args.len() > 2 {
            // Already one call: the chain goes on in it.
            depth = NESTED_CHAIN;
            break;
        }
        at = &f.args[0];
    }
    if depth < NESTED_CHAIN {
        return vec![left, right];
    }
    // Unnest the chain down its first operands.
    let mut operands = vec![right];
    let mut at = left;
    loop {
        match at {
            Expr::ScalarFunction(f) if f.func.name() == name => {
                let mut args = f.args;
                let first = args.remove(0);
                operands.extend(args.into_iter().rev());
                at = first;
            }
            other => {
                operands.push(other);
                break;
            }
        }
    }
    operands.reverse();
    operands
}

/// An interval literal with hours, minutes or seconds.
fn has_time_of_day(e: &Expr) -> bool {
    match e {
        Expr::Literal(ScalarValue::IntervalMonthDayNano(Some(v)), _) => v.nanoseconds != 0,
        Expr::Negative(inner) => has_time_of_day(inner),
        _ => false,
    }
}

fn is_signed_integer(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    )
}

fn is_number(t: &DataType) -> bool {
    t.is_numeric() || matches!(t, DataType::Null)
}

impl ExprPlanner for DatabricksPlanner {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let types = (expr.left.get_type(schema), expr.right.get_type(schema));
        let (Ok(left), Ok(right)) = types else {
            return Ok(PlannerResult::Original(expr));
        };
        // Parameters ($1) keep DataFusion's planning, which infers their type.
        let has_placeholder = |e: &Expr| matches!(e, Expr::Placeholder(_));
        if has_placeholder(&expr.left) || has_placeholder(&expr.right) {
            return Ok(PlannerResult::Original(expr));
        }
        match &expr.op {
            // A date and an interval with a time of day: a timestamp
            // (DataFusion keeps the date and drops the time).
            BinaryOperator::Plus | BinaryOperator::Minus
                if (left == DataType::Date32 && has_time_of_day(&expr.right))
                    || (expr.op == BinaryOperator::Plus
                        && right == DataType::Date32
                        && has_time_of_day(&expr.left)) =>
            {
                let timestamp =
                    DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Nanosecond, None);
                let as_timestamp = |e: Expr, t: &DataType| {
                    if t == &DataType::Date32 {
                        e.cast_to(&timestamp, schema)
                    } else {
                        Ok(e)
                    }
                };
                Ok(PlannerResult::Original(RawBinaryExpr {
                    op: expr.op,
                    left: as_timestamp(expr.left, &left)?,
                    right: as_timestamp(expr.right, &right)?,
                }))
            }
            // An interval times or divided by a number.
            BinaryOperator::Multiply | BinaryOperator::Divide
                if (super::interval_math::is_interval(&left)
                    && super::interval_math::is_scale(&right))
                    || (expr.op == BinaryOperator::Multiply
                        && super::interval_math::is_scale(&left)
                        && super::interval_math::is_interval(&right)) =>
            {
                let divide = expr.op == BinaryOperator::Divide;
                Ok(PlannerResult::Planned(call(
                    super::interval_math::udf(divide, false),
                    vec![expr.left, expr.right],
                )))
            }
            BinaryOperator::Divide if is_number(&left) && is_number(&right) => {
                let udf = if left.is_decimal() || right.is_decimal() {
                    if left.is_floating() || right.is_floating() {
                        super::math::double_divide()
                    } else {
                        super::math::decimal_divide()
                    }
                } else {
                    super::math::double_divide()
                };
                Ok(PlannerResult::Planned(call(
                    udf,
                    vec![expr.left, expr.right],
                )))
            }
            BinaryOperator::MyIntegerDivide | BinaryOperator::DuckIntegerDivide
                if is_number(&left) && is_number(&right) =>
            {
                Ok(PlannerResult::Planned(call(
                    super::math::integral_divide(),
                    vec![expr.left, expr.right],
                )))
            }
            // Two integers of one type: checked (DataFusion's kernels wrap
            // around), a chain of one operator as one call.
            BinaryOperator::Multiply | BinaryOperator::Plus | BinaryOperator::Minus
                if is_signed_integer(&left) && left == right =>
            {
                let op = match expr.op {
                    BinaryOperator::Multiply => super::math::DecimalOp::Multiply,
                    BinaryOperator::Plus => super::math::DecimalOp::Add,
                    _ => super::math::DecimalOp::Subtract,
                };
                let udf = super::math::checked_integer_arithmetic(op);
                let args = chain_operands(expr.left, udf.name(), expr.right);
                Ok(PlannerResult::Planned(call(udf, args)))
            }
            BinaryOperator::Multiply | BinaryOperator::Plus | BinaryOperator::Minus
                if (left.is_decimal() || right.is_decimal())
                    && (left.is_decimal() || is_integer(&left))
                    && (right.is_decimal() || is_integer(&right)) =>
            {
                let op = match expr.op {
                    BinaryOperator::Multiply => super::math::DecimalOp::Multiply,
                    BinaryOperator::Plus => super::math::DecimalOp::Add,
                    _ => super::math::DecimalOp::Subtract,
                };
                Ok(PlannerResult::Planned(call(
                    super::math::decimal_arithmetic(op),
                    vec![expr.left, expr.right],
                )))
            }
            BinaryOperator::StringConcat
                if !matches!(left, DataType::List(_) | DataType::LargeList(_))
                    && !matches!(right, DataType::List(_) | DataType::LargeList(_)) =>
            {
                let concat = datafusion_spark::function::string::concat();
                Ok(PlannerResult::Planned(Expr::ScalarFunction(
                    ScalarFunction::new_udf(concat, vec![expr.left, expr.right]),
                )))
            }
            BinaryOperator::Custom(op) if op == ":" => {
                let path = match &expr.right {
                    Expr::Literal(ScalarValue::Utf8(Some(p)), _) => p.clone(),
                    _ => return Ok(PlannerResult::Original(expr)),
                };
                let path = if path.starts_with('[') {
                    format!("${path}")
                } else {
                    format!("$.{path}")
                };
                Ok(PlannerResult::Planned(call(
                    super::json::get_json_object(),
                    vec![expr.left, lit(path)],
                )))
            }
            _ => Ok(PlannerResult::Original(expr)),
        }
    }

    /// `map(k1, v1, …)`: ours refuses NULL and duplicate keys.
    fn plan_make_map(&self, args: Vec<Expr>) -> Result<PlannerResult<Vec<Expr>>> {
        Ok(PlannerResult::Planned(call(super::map::map_udf(), args)))
    }

    /// `substr(s, p[, l])` / `SUBSTRING(s FROM p FOR l)`: Databricks counts
    /// a negative position from the end.
    fn plan_substring(&self, args: Vec<Expr>) -> Result<PlannerResult<Vec<Expr>>> {
        Ok(PlannerResult::Planned(call(
            super::string::substring_udf(),
            args,
        )))
    }

    fn plan_field_access(
        &self,
        expr: RawFieldAccessExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        let Ok(data_type) = expr.expr.get_type(schema) else {
            return Ok(PlannerResult::Original(expr));
        };
        match (&expr.field_access, &data_type) {
            (
                GetFieldAccess::ListIndex { key },
                DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..),
            ) => Ok(PlannerResult::Planned(call(
                super::array::subscript(),
                vec![expr.expr, key.as_ref().clone()],
            ))),
            (GetFieldAccess::ListIndex { key }, DataType::Map(..)) => {
                Ok(PlannerResult::Planned(call(
                    super::map::map_subscript(),
                    vec![expr.expr, key.as_ref().clone()],
                )))
            }
            _ => Ok(PlannerResult::Original(expr)),
        }
    }
}
