//! Arithmetic and math functions
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#numeric-functions>).
//!
//! The operators' Databricks semantics: `/` is DOUBLE or DECIMAL division
//! (never integral), `div` integral, and DECIMAL `+ - * /` take the result
//! precision and scale of Spark's `DecimalPrecision` rules, with the scale
//! cut to keep 38 digits (`spark.sql.decimalOperations.allowPrecisionLoss`);
//! a result that still does not fit is `NUMERIC_VALUE_OUT_OF_RANGE`.
//! datafusion-spark provides `abs`, `ceil`, `floor`, `round` (HALF_UP),
//! `pmod`, `mod`, `pow`, `factorial`, `hex`, `unhex`, `bin`, `negative`,
//! `width_bucket` …

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::i256;
use datafusion::arrow::datatypes::{DataType, Decimal128Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{
    double_rows, long_rows, string_rows, Arg, Call, Returns, Udf, FLOAT64, INT64, UTF8,
};

use Arg::{Any, Double, Long, Str};

/// The functions registered by name.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        // The planner's (integer `+ - *`), registered to be found by name.
        checked_integer_arithmetic(DecimalOp::Add),
        checked_integer_arithmetic(DecimalOp::Subtract),
        checked_integer_arithmetic(DecimalOp::Multiply),
        Udf::new("try_divide", &[&[Any, Any]], Returns::Computed(divide_type), |c| divide(c, true))
            .describe("try_divide(dividend, divisor) - Returns dividend divided by divisor, or NULL if divisor is 0.")
            .build(),
        Udf::new("try_add", &[&[Any, Any]], Returns::Computed(arithmetic_type_add), |c| try_arithmetic(c, DecimalOp::Add))
            .describe("try_add(expr1, expr2) - Returns the sum of expr1 and expr2, or NULL on overflow.")
            .build(),
        Udf::new("try_subtract", &[&[Any, Any]], Returns::Computed(arithmetic_type_subtract), |c| try_arithmetic(c, DecimalOp::Subtract))
            .describe("try_subtract(expr1, expr2) - Returns expr1 minus expr2, or NULL on overflow.")
            .build(),
        Udf::new("try_multiply", &[&[Any, Any]], Returns::Computed(arithmetic_type_multiply), |c| try_arithmetic(c, DecimalOp::Multiply))
            .describe("try_multiply(multiplier, multiplicand) - Returns multiplier multiplied by multiplicand, or NULL on overflow.")
            .build(),
        Udf::new("try_mod", &[&[Any, Any]], Returns::Computed(mod_type), try_mod)
            .describe("try_mod(dividend, divisor) - Returns the remainder after dividend / divisor, or NULL if divisor is 0.")
            .build(),
        Udf::new("round", &[&[Any], &[Any, Long]], Returns::Computed(round_type), |c| round_half(c, false))
            .describe("round(expr [, targetScale]) - Returns the rounded expr using HALF_UP rounding mode.")
            .build(),
        Udf::new("bround", &[&[Any], &[Any, Long]], Returns::Computed(round_type), |c| round_half(c, true))
            .describe("bround(expr [, targetScale]) - Returns the rounded expr using HALF_EVEN rounding mode.")
            .build(),
        Udf::new("conv", &[&[Str, Long, Long]], Returns::Fixed(&UTF8), conv)
            .describe("conv(num, fromBase, toBase) - Converts num from fromBase to toBase.")
            .build(),
        Udf::new("e", &[&[]], Returns::Fixed(&FLOAT64), |_| Ok(ColumnarValue::Scalar(ScalarValue::Float64(Some(std::f64::consts::E)))))
            .describe("e() - Returns Euler's number.")
            .build(),
        Udf::new("ln", &[&[Double]], Returns::Fixed(&FLOAT64), |c| log_of(c, f64::ln))
            .describe("ln(expr) - Returns the natural logarithm (base e) of expr; NULL if expr <= 0.")
            .build(),
        Udf::new("log10", &[&[Double]], Returns::Fixed(&FLOAT64), |c| log_of(c, f64::log10))
            .describe("log10(expr) - Returns the logarithm of expr with base 10; NULL if expr <= 0.")
            .build(),
        Udf::new("log2", &[&[Double]], Returns::Fixed(&FLOAT64), |c| log_of(c, f64::log2))
            .describe("log2(expr) - Returns the logarithm of expr with base 2; NULL if expr <= 0.")
            .build(),
        Udf::new("log", &[&[Double], &[Double, Double]], Returns::Fixed(&FLOAT64), log)
            .describe("log(base, expr) - Returns the logarithm of expr with base; log(expr) the natural logarithm.")
            .build(),
        Udf::new("log1p", &[&[Double]], Returns::Fixed(&FLOAT64), log_of_shifted)
            .describe("log1p(expr) - Returns log(1 + expr); NULL if expr <= -1.")
            .build(),
        Udf::new("positive", &[&[Any]], Returns::ArgType(0), |c| Ok(c.arg(0)?.clone()))
            .describe("positive(expr) - Returns the value of expr.")
            .build(),
        Udf::new("lakegres_ceil", &[&[Any, Long]], Returns::Computed(scaled_round_type), |c| round_to_scale(c, true))
            .build(),
        Udf::new("lakegres_floor", &[&[Any, Long]], Returns::Computed(scaled_round_type), |c| round_to_scale(c, false))
            .build(),
        Udf::new("rint", &[&[Double]], Returns::Fixed(&FLOAT64), |c| {
            let values = c.double(0)?;
            double_rows(c.len(), |i| Ok(values.get(i).map(f64::round_ties_even)))
        })
        .describe("rint(expr) - Returns the double value that is closest in value to expr and is equal to a mathematical integer (ties to even).")
        .build(),
        Udf::new("nanvl", &[&[Double, Double]], Returns::Fixed(&FLOAT64), nanvl)
            .describe("nanvl(expr1, expr2) - Returns expr1 if it's not NaN, or expr2 otherwise.")
            .build(),
        Udf::new("shiftleft", &[&[Long, Long]], Returns::Fixed(&INT64), |c| shift(c, 0))
            .describe("shiftleft(expr, n) - Returns a bitwise left shift by n bits.")
            .build(),
        Udf::new("shiftright", &[&[Long, Long]], Returns::Fixed(&INT64), |c| shift(c, 1))
            .describe("shiftright(expr, n) - Returns a bitwise signed right shift by n bits.")
            .build(),
        Udf::new("shiftrightunsigned", &[&[Long, Long]], Returns::Fixed(&INT64), |c| shift(c, 2))
            .describe("shiftrightunsigned(expr, n) - Returns a bitwise unsigned right shift by n bits.")
            .build(),
        Udf::new("sign", &[&[Any]], Returns::Fixed(&FLOAT64), sign)
        .aliases(&["signum"])
        .describe("sign(expr) - Returns -1.0, 0.0 or 1.0 as expr is negative, 0 or positive.")
        .build(),
        Udf::new("zeroifnull", &[&[Any]], Returns::Computed(|t, _| Ok(match t.first() {
            Some(DataType::Null) | None => DataType::Int32,
            Some(t) => t.clone(),
        })), zeroifnull)
            .describe("zeroifnull(expr) - Returns 0 if expr is NULL, expr otherwise.")
            .build(),
        Udf::new("nullifzero", &[&[Any]], Returns::ArgType(0), nullifzero)
            .describe("nullifzero(expr) - Returns NULL if expr is 0, expr otherwise.")
            .build(),
        Udf::new("rand", &[&[], &[Long]], Returns::Fixed(&FLOAT64), rand)
            .volatile()
            .describe("rand([seed]) - Returns a random value between 0 and 1.")
            .build(),
        Udf::new("randn", &[&[], &[Long]], Returns::Fixed(&FLOAT64), randn)
            .volatile()
            .describe("randn([seed]) - Returns a random value from a standard normal distribution.")
            .build(),
        Udf::new("div", &[&[Any, Any]], Returns::Fixed(&INT64), integral_divide_kernel)
            .describe("expr1 div expr2 - Returns the integral part of the division of expr1 by expr2.")
            .build(),
    ]
}

/// `a / b` on DOUBLEs (integers and floating point).
pub(crate) fn double_divide() -> ScalarUDF {
    Udf::new("/", &[&[Double, Double]], Returns::Fixed(&FLOAT64), |c| {
        divide(c, false)
    })
    .build()
}

/// `a / b` with a DECIMAL side.
pub(crate) fn decimal_divide() -> ScalarUDF {
    Udf::new("/", &[&[Any, Any]], Returns::Computed(divide_type), |c| {
        divide(c, false)
    })
    .build()
}

/// `a div b`.
pub(crate) fn integral_divide() -> ScalarUDF {
    Udf::new(
        "div",
        &[&[Any, Any]],
        Returns::Fixed(&INT64),
        integral_divide_kernel,
    )
    .build()
}

/// The DECIMAL arithmetic operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecimalOp {
    Add,
    Subtract,
    Multiply,
    Divide,
}

/// `a + b`, `a - b`, `a * b` with a DECIMAL side.
pub(crate) fn decimal_arithmetic(op: DecimalOp) -> ScalarUDF {
    let (name, returns, kernel): (&'static str, _, super::udf::Kernel) = match op {
        DecimalOp::Add => ("+", arithmetic_type_add as _, |c| {
            arithmetic(c, DecimalOp::Add, false)
        }),
        DecimalOp::Subtract => ("-", arithmetic_type_subtract as _, |c| {
            arithmetic(c, DecimalOp::Subtract, false)
        }),
        _ => ("*", arithmetic_type_multiply as _, |c| {
            arithmetic(c, DecimalOp::Multiply, false)
        }),
    };
    Udf::new(name, &[&[Any, Any]], Returns::Computed(returns), kernel).build()
}

/// `a + b [+ c …]`, `a - b …`, `a * b …` over integers, left to right:
/// `[ARITHMETIC_OVERFLOW]` where DataFusion's kernels would wrap around
/// (Databricks' ANSI mode). Taking any number of operands lets the planner
/// make a long chain of one operator one call (see `planner.rs`).
pub(crate) fn checked_integer_arithmetic(op: DecimalOp) -> ScalarUDF {
    let (name, kernel): (&'static str, super::udf::Kernel) = match op {
        DecimalOp::Add => ("lakegres_checked_add", |c| checked_chain(c, DecimalOp::Add)),
        DecimalOp::Subtract => ("lakegres_checked_subtract", |c| {
            checked_chain(c, DecimalOp::Subtract)
        }),
        _ => ("lakegres_checked_multiply", |c| {
            checked_chain(c, DecimalOp::Multiply)
        }),
    };
    Udf::new(
        name,
        &[&[Any, Any]],
        Returns::Computed(widest_integer),
        kernel,
    )
    .variadic(Any)
    .build()
}

/// The widest integer type of the operands: literals narrowed to INT after
/// planning must not narrow the others (a cast would make them NULL).
fn widest_integer(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    Ok(types
        .iter()
        .fold(DataType::Null, |wide, t| wider_integer(&wide, t)))
}

/// The operands of a checked chain, left to right, in the call's type.
fn checked_chain(c: &Call, op: DecimalOp) -> Result<ColumnarValue> {
    use datafusion::arrow::compute::kernels::numeric;
    let mut acc = cast(&c.array(0)?, c.return_type)?;
    for i in 1..c.args.len() {
        let next = cast(&c.array(i)?, c.return_type)?;
        let result = match op {
            DecimalOp::Add => numeric::add(&acc, &next),
            DecimalOp::Subtract => numeric::sub(&acc, &next),
            _ => numeric::mul(&acc, &next),
        };
        acc = match result {
            Ok(array) => array,
            Err(datafusion::arrow::error::ArrowError::ArithmeticOverflow(operation)) => {
                let operation = operation.trim_start_matches("Overflow happened on: ");
                return Err(overflow(op, operation.to_string()));
            }
            Err(e) => return Err(e.into()),
        };
    }
    Ok(ColumnarValue::Array(acc))
}

/// `[ARITHMETIC_OVERFLOW]` of `operation`, pointing to the `try_` form of `op`.
fn overflow(op: DecimalOp, operation: String) -> DataFusionError {
    df(FunctionError::ArithmeticOverflow {
        operation,
        hint: match op {
            DecimalOp::Add => "add",
            DecimalOp::Subtract => "subtract",
            DecimalOp::Multiply => "multiply",
            DecimalOp::Divide => "divide",
        },
    })
}

/// The DECIMAL a value of an exact type is taken as (Spark's
/// `DecimalPrecision.forType`).
pub(crate) fn as_decimal(t: &DataType) -> Option<(u8, i8)> {
    Some(match t {
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => (*p, *s),
        DataType::Int8 | DataType::UInt8 => (3, 0),
        DataType::Int16 | DataType::UInt16 => (5, 0),
        DataType::Int32 | DataType::UInt32 => (10, 0),
        DataType::Int64 | DataType::UInt64 => (20, 0),
        DataType::Null => (1, 0),
        _ => return None,
    })
}

const MAX_PRECISION: i32 = 38;
const MIN_ADJUSTED_SCALE: i32 = 6;

/// Spark's `DecimalType.adjustPrecisionScale`: past 38 digits the scale
/// gives way, down to 6.
pub(crate) fn adjust(precision: i32, scale: i32) -> (u8, i8) {
    if precision <= MAX_PRECISION {
        return (precision as u8, scale as i8);
    }
    let int_digits = precision - scale;
    let min_scale = scale.min(MIN_ADJUSTED_SCALE);
    let scale = (MAX_PRECISION - int_digits).max(min_scale);
    (MAX_PRECISION as u8, scale as i8)
}

/// The result DECIMAL of `op` (Spark's `DecimalPrecision`).
pub(crate) fn decimal_result(op: DecimalOp, (p1, s1): (u8, i8), (p2, s2): (u8, i8)) -> (u8, i8) {
    let (p1, s1, p2, s2) = (p1 as i32, s1 as i32, p2 as i32, s2 as i32);
    match op {
        DecimalOp::Add | DecimalOp::Subtract => {
            let scale = s1.max(s2);
            adjust((p1 - s1).max(p2 - s2) + scale + 1, scale)
        }
        DecimalOp::Multiply => adjust(p1 + p2 + 1, s1 + s2),
        DecimalOp::Divide => {
            let scale = MIN_ADJUSTED_SCALE.max(s1 + p2 + 1);
            adjust(p1 - s1 + s2 + scale, scale)
        }
    }
}

fn decimal_or_double(
    types: &[DataType],
    literals: &[Option<&ScalarValue>],
    op: DecimalOp,
) -> Result<DataType> {
    let (Some(a), Some(b)) = (types.first(), types.get(1)) else {
        return Err(DataFusionError::Internal("two arguments expected".into()));
    };
    if is_temporal(a) || is_temporal(b) {
        return temporal_type(a, b, op, literals);
    }
    if a.is_floating() || b.is_floating() {
        return Ok(DataType::Float64);
    }
    // An integer literal beside a DECIMAL is as wide as its digits
    // (Spark's `DecimalType.fromLiteral`): `d * 10` is `d * 10BD`.
    let operand = |i: usize, t: &DataType| match literals.get(i).copied().flatten() {
        Some(v) if t.is_integer() && a.is_decimal() != b.is_decimal() => {
            literal_decimal(v).or_else(|| as_decimal(t))
        }
        _ => as_decimal(t),
    };
    match (operand(0, a), operand(1, b)) {
        (Some(x), Some(y)) if a.is_decimal() || b.is_decimal() || op == DecimalOp::Divide => {
            if op == DecimalOp::Divide && !(a.is_decimal() || b.is_decimal()) {
                return Ok(DataType::Float64);
            }
            let (p, s) = decimal_result(op, x, y);
            Ok(DataType::Decimal128(p, s))
        }
        // The wider of the two (Spark: `try_add(INT, INT)` is an INT,
        // NULL when the sum is not one).
        (Some(_), Some(_)) => Ok(wider_integer(a, b)),
        _ => Err(df(FunctionError::mismatch(
            match op {
                DecimalOp::Add => "+",
                DecimalOp::Subtract => "-",
                DecimalOp::Multiply => "*",
                DecimalOp::Divide => "/",
            },
            format!("the operands must be numbers, got {a} and {b}"),
        ))),
    }
}

/// The wider of two integer types (unsigned ones as BIGINT, NULL as the other).
fn wider_integer(a: &DataType, b: &DataType) -> DataType {
    let rank = |t: &DataType| match t {
        DataType::Null => 0,
        DataType::Int8 => 1,
        DataType::Int16 => 2,
        DataType::Int32 => 3,
        _ => 4,
    };
    match rank(a).max(rank(b)) {
        0 => DataType::Int32,
        1 => DataType::Int8,
        2 => DataType::Int16,
        3 => DataType::Int32,
        _ => DataType::Int64,
    }
}

/// The DECIMAL of an integer literal: as many digits as it has.
fn literal_decimal(value: &ScalarValue) -> Option<(u8, i8)> {
    let v: i128 = match value {
        ScalarValue::Int8(Some(v)) => (*v).into(),
        ScalarValue::Int16(Some(v)) => (*v).into(),
        ScalarValue::Int32(Some(v)) => (*v).into(),
        ScalarValue::Int64(Some(v)) => (*v).into(),
        _ => return None,
    };
    let digits = v.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1);
    Some((digits as u8, 0))
}

fn divide_type(types: &[DataType], literals: &[Option<&ScalarValue>]) -> Result<DataType> {
    decimal_or_double(types, literals, DecimalOp::Divide)
}

fn arithmetic_type_add(types: &[DataType], literals: &[Option<&ScalarValue>]) -> Result<DataType> {
    decimal_or_double(types, literals, DecimalOp::Add)
}

fn arithmetic_type_subtract(
    types: &[DataType],
    literals: &[Option<&ScalarValue>],
) -> Result<DataType> {
    decimal_or_double(types, literals, DecimalOp::Subtract)
}

fn arithmetic_type_multiply(
    types: &[DataType],
    literals: &[Option<&ScalarValue>],
) -> Result<DataType> {
    decimal_or_double(types, literals, DecimalOp::Multiply)
}

fn mod_type(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    let (Some(a), Some(b)) = (types.first(), types.get(1)) else {
        return Err(DataFusionError::Internal("two arguments expected".into()));
    };
    if a.is_floating() || b.is_floating() {
        return Ok(DataType::Float64);
    }
    match (as_decimal(a), as_decimal(b)) {
        (Some((p1, s1)), Some((p2, s2))) if a.is_decimal() || b.is_decimal() => {
            let scale = s1.max(s2);
            let precision = ((p1 as i8 - s1).min(p2 as i8 - s2) + scale) as u8;
            Ok(DataType::Decimal128(precision, scale))
        }
        _ => Ok(DataType::Int64),
    }
}

fn pow10(n: u32) -> Option<i256> {
    i256::from_i128(10).checked_pow(n)
}

/// `n / d` rounded half away from zero.
fn div_half_up(n: i256, d: i256) -> Option<i256> {
    let q = n.checked_div(d)?;
    let r = n.checked_rem(d)?;
    let twice = r.checked_abs()?.checked_mul(i256::from_i128(2))?;
    if twice >= d.checked_abs()? {
        let sign = if n.is_negative() != d.is_negative() {
            i256::from_i128(-1)
        } else {
            i256::from_i128(1)
        };
        q.checked_add(sign)
    } else {
        Some(q)
    }
}

/// Moves an unscaled value from scale `from` to `to`, rounding half up.
fn rescale(v: i256, from: i8, to: i8) -> Option<i256> {
    if to >= from {
        v.checked_mul(pow10((to - from) as u32)?)
    } else {
        div_half_up(v, pow10((from - to) as u32)?)
    }
}

fn fits(v: i256, precision: u8) -> bool {
    pow10(precision as u32).is_some_and(|limit| v.checked_abs().is_some_and(|a| a < limit))
}

fn decimal_text(v: i256, scale: i8) -> String {
    let digits = v.checked_abs().unwrap_or(v).to_string();
    let sign = if v.is_negative() { "-" } else { "" };
    if scale <= 0 {
        return format!("{sign}{digits}");
    }
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// The column of argument `i` as DECIMAL(p, s) unscaled values.
fn decimal_values(c: &Call, i: usize) -> Result<(Decimal128Array, u8, i8)> {
    decimal_array(&c.array(i)?)
}

/// `array` (of an exact type) as DECIMAL(p, s) unscaled values.
fn decimal_array(array: &ArrayRef) -> Result<(Decimal128Array, u8, i8)> {
    let (p, s) = as_decimal(array.data_type()).ok_or_else(|| {
        df(FunctionError::mismatch(
            "a decimal operator",
            format!("expected a number, got {}", array.data_type()),
        ))
    })?;
    let cast = cast(array, &DataType::Decimal128(p, s))?;
    Ok((cast.as_primitive::<Decimal128Type>().clone(), p, s))
}

/// 10^n for n in 0..=38, the powers a DECIMAL(38) reaches.
const POW10_I128: [i128; 39] = {
    let mut table = [1i128; 39];
    let mut n = 1;
    while n < 39 {
        table[n] = table[n - 1] * 10;
        n += 1;
    }
    table
};

/// One decimal operation on unscaled values of scales `s1` and `s2`, giving
/// scale `s`: exact, rounded half up where the scale shrinks.
struct Exact {
    op: DecimalOp,
    s1: i8,
    s2: i8,
    s: i8,
}

impl Exact {
    fn new(op: DecimalOp, s1: i8, s2: i8, s: i8) -> Self {
        Self { op, s1, s2, s }
    }

    /// In i128; None on overflow (then [`Self::i256`] decides).
    #[inline]
    fn i128(&self, x: i128, y: i128) -> Option<i128> {
        fn pow(n: i32) -> Option<i128> {
            POW10_I128.get(usize::try_from(n).ok()?).copied()
        }
        fn rescale(v: i128, from: i8, to: i8) -> Option<i128> {
            if to >= from {
                v.checked_mul(pow((to - from) as i32)?)
            } else {
                div_half_up_i128(v, pow((from - to) as i32)?)
            }
        }
        let (s1, s2, s) = (self.s1, self.s2, self.s);
        match self.op {
            DecimalOp::Add | DecimalOp::Subtract => {
                let scale = s1.max(s2);
                let (x, y) = (rescale(x, s1, scale)?, rescale(y, s2, scale)?);
                let v = if self.op == DecimalOp::Add {
                    x.checked_add(y)?
                } else {
                    x.checked_sub(y)?
                };
                rescale(v, scale, s)
            }
            DecimalOp::Multiply => rescale(x.checked_mul(y)?, s1 + s2, s),
            DecimalOp::Divide => {
                let shift = s as i32 - s1 as i32 + s2 as i32;
                if shift >= 0 {
                    div_half_up_i128(x.checked_mul(pow(shift)?)?, y)
                } else {
                    div_half_up_i128(x, y.checked_mul(pow(-shift)?)?)
                }
            }
        }
    }

    /// In i256.
    fn i256(&self, x: i256, y: i256) -> Option<i256> {
        let (s1, s2, s) = (self.s1, self.s2, self.s);
        match self.op {
            DecimalOp::Add | DecimalOp::Subtract => {
                let scale = s1.max(s2);
                rescale(x, s1, scale)
                    .zip(rescale(y, s2, scale))
                    .and_then(|(x, y)| {
                        if self.op == DecimalOp::Add {
                            x.checked_add(y)
                        } else {
                            x.checked_sub(y)
                        }
                    })
                    .and_then(|v| rescale(v, scale, s))
            }
            DecimalOp::Multiply => x.checked_mul(y).and_then(|v| rescale(v, s1 + s2, s)),
            DecimalOp::Divide => {
                // x / 10^s1 / (y / 10^s2) at scale s.
                let shift = s as i32 - s1 as i32 + s2 as i32;
                if shift >= 0 {
                    pow10(shift as u32)
                        .and_then(|f| x.checked_mul(f))
                        .and_then(|n| div_half_up(n, y))
                } else {
                    pow10((-shift) as u32)
                        .and_then(|f| y.checked_mul(f))
                        .and_then(|d| div_half_up(x, d))
                }
            }
        }
    }
}

/// `n / d` rounded half away from zero, in i128.
#[inline]
fn div_half_up_i128(n: i128, d: i128) -> Option<i128> {
    let q = n.checked_div(d)?;
    let r = n.checked_rem(d)?;
    if r.unsigned_abs().checked_mul(2)? >= d.unsigned_abs() {
        q.checked_add(if (n < 0) != (d < 0) { -1 } else { 1 })
    } else {
        Some(q)
    }
}

/// An interval as `div` counts it: whether in months (`None`: zero) and
/// how many months or nanoseconds.
type IntervalCount = (Option<bool>, i128);

/// `div` of two intervals: how many whole times the second goes into the
/// first, by months (year-month) or by time (day-time).
fn interval_div(a: &ArrayRef, b: &ArrayRef) -> Result<ColumnarValue> {
    let to_count = |x: &ArrayRef| -> Result<Vec<Option<IntervalCount>>> {
        let intervals = cast(
            x,
            &DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano),
        )?;
        Ok(intervals
            .as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>()
            .iter()
            .map(|v| {
                v.map(|v| {
                    let time = i128::from(v.days) * 86_400_000_000_000 + i128::from(v.nanoseconds);
                    match (v.months, time) {
                        (0, 0) => (None, 0),
                        (0, t) => (Some(false), t),
                        (m, _) => (Some(true), i128::from(m)),
                    }
                })
            })
            .collect())
    };
    let (a, b) = (to_count(a)?, to_count(b)?);
    long_rows(a.len(), |i| match (a[i], b.get(i).copied().flatten()) {
        (Some((Some(x), _)), Some((Some(y), _))) if x != y => Err(df(FunctionError::mismatch(
            "div",
            "a year-month interval and a day-time interval",
        ))),
        (Some(_), Some((_, 0))) => Err(df(FunctionError::IntervalDividedByZero)),
        (Some((_, x)), Some((_, y))) => Ok(i64::try_from(x / y).ok()),
        _ => Ok(None),
    })
}

/// `sign(x)`: -1.0, 0.0 or 1.0; of an interval, by its months or its time.
fn sign(c: &Call) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    if let DataType::Interval(_) = a.data_type() {
        let intervals = cast(
            &a,
            &DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano),
        )?;
        let intervals =
            intervals.as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>();
        return double_rows(c.len(), |i| {
            Ok(intervals.is_valid(i).then(|| {
                let v = intervals.value(i);
                let time = i128::from(v.days) * 86_400_000_000_000 + i128::from(v.nanoseconds);
                let s = if v.months != 0 {
                    i128::from(v.months.signum())
                } else {
                    time.signum()
                };
                s as f64
            }))
        });
    }
    let x = super::ansi_cast::cast_checked(&a, &DataType::Float64, None)?;
    let x = x.as_primitive::<datafusion::arrow::datatypes::Float64Type>();
    double_rows(c.len(), |i| {
        Ok(x.is_valid(i).then(|| {
            let v = x.value(i);
            if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                v
            }
        }))
    })
}

/// A date, timestamp or interval operand (of `try_add` and the like).
fn is_temporal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Interval(_)
            | DataType::Duration(_)
            | DataType::Date32
            | DataType::Date64
            | DataType::Timestamp(..)
    )
}

/// The type of `try_add`, `try_subtract`, `try_multiply`, `try_divide` of
/// dates, timestamps and intervals: the operator's.
fn temporal_type(
    a: &DataType,
    b: &DataType,
    op: DecimalOp,
    literals: &[Option<&ScalarValue>],
) -> Result<DataType> {
    use super::interval_math::{is_interval, is_scale};
    use datafusion::logical_expr::type_coercion::binary::BinaryTypeCoercer;
    use datafusion::logical_expr::Operator;
    let scaled = (is_interval(a) && is_scale(b)) || (is_scale(a) && is_interval(b));
    let operator = match op {
        DecimalOp::Multiply if scaled => {
            return Ok(DataType::Interval(
                datafusion::arrow::datatypes::IntervalUnit::MonthDayNano,
            ))
        }
        DecimalOp::Divide if is_interval(a) && is_scale(b) => {
            return Ok(DataType::Interval(
                datafusion::arrow::datatypes::IntervalUnit::MonthDayNano,
            ))
        }
        // A date and a number of days.
        DecimalOp::Add | DecimalOp::Subtract
            if (a == &DataType::Date32 && b.is_integer())
                || (op == DecimalOp::Add && a.is_integer() && b == &DataType::Date32) =>
        {
            return Ok(DataType::Date32);
        }
        // A date and an interval with a time of day: a timestamp (Spark
        // types `INTERVAL '2' SECOND` day-time, `INTERVAL '2' DAY` keeps
        // a date).
        DecimalOp::Add | DecimalOp::Subtract
            if (a == &DataType::Date32 || b == &DataType::Date32)
                && literals.iter().flatten().any(|v| {
                    matches!(v, ScalarValue::IntervalMonthDayNano(Some(i)) if i.nanoseconds != 0)
                }) =>
        {
            return Ok(DataType::Timestamp(
                datafusion::arrow::datatypes::TimeUnit::Nanosecond,
                None,
            ));
        }
        DecimalOp::Add => Operator::Plus,
        DecimalOp::Subtract => Operator::Minus,
        _ => {
            return Err(df(FunctionError::mismatch(
                "arithmetic",
                format!(
                    "the operands must be numbers or an interval and a number, got {a} and {b}"
                ),
            )))
        }
    };
    BinaryTypeCoercer::new(a, &operator, b).get_result_type()
}

/// `try_add` and the like over dates, timestamps and intervals: the
/// operator's value, NULL where it overflows.
fn temporal_arithmetic(c: &Call, op: DecimalOp, lenient: bool) -> Result<ColumnarValue> {
    use datafusion::arrow::compute::kernels::numeric::{add, sub};
    match op {
        DecimalOp::Multiply => return super::interval_math::kernel(c, false, lenient),
        DecimalOp::Divide => return super::interval_math::kernel(c, true, lenient),
        _ => {}
    }
    let (mut a, mut b) = (c.array(0)?, c.array(1)?);
    // A number of days: as a day interval.
    for side in [&mut a, &mut b] {
        if side.data_type().is_integer() {
            let days = cast(side, &DataType::Int32)?;
            let days = days.as_primitive::<datafusion::arrow::datatypes::Int32Type>();
            *side = Arc::new(
                days.unary::<_, datafusion::arrow::datatypes::IntervalMonthDayNanoType>(|d| {
                    datafusion::arrow::datatypes::IntervalMonthDayNano::new(0, d, 0)
                }),
            );
        }
    }
    if matches!(c.return_type, DataType::Timestamp(..)) {
        for side in [&mut a, &mut b] {
            if side.data_type() == &DataType::Date32 {
                *side = cast(side, c.return_type)?;
            }
        }
    }
    let apply = |a: &ArrayRef, b: &ArrayRef| -> Result<ArrayRef> {
        let out = if op == DecimalOp::Add {
            add(a, b)?
        } else {
            sub(a, b)?
        };
        let out = cast(&out, c.return_type)?;
        // A day-time interval holds at most i64 microseconds.
        if let DataType::Interval(_) = out.data_type() {
            let intervals = cast(
                &out,
                &DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano),
            )?;
            let too_long = intervals
                .as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>()
                .iter()
                .flatten()
                .any(|v| {
                    let micros =
                        i128::from(v.days) * 86_400_000_000 + i128::from(v.nanoseconds / 1000);
                    i64::try_from(micros).is_err()
                });
            if too_long {
                return Err(df(FunctionError::IntervalOverflow {
                    operation: "interval arithmetic".into(),
                    hint: if op == DecimalOp::Add {
                        "add"
                    } else {
                        "subtract"
                    },
                }));
            }
        }
        Ok(out)
    };
    match apply(&a, &b) {
        Ok(out) => Ok(ColumnarValue::Array(out)),
        Err(_) if lenient => {
            // Row by row: NULL where the operator fails.
            let mut rows = Vec::with_capacity(a.len());
            for i in 0..a.len() {
                rows.push(apply(&a.slice(i, 1), &b.slice(i, 1)).or_else(|_| {
                    Ok::<_, DataFusionError>(datafusion::arrow::array::new_null_array(
                        c.return_type,
                        1,
                    ))
                })?);
            }
            let refs: Vec<&dyn Array> = rows.iter().map(|r| r.as_ref()).collect();
            Ok(ColumnarValue::Array(datafusion::arrow::compute::concat(
                &refs,
            )?))
        }
        Err(e) => Err(e),
    }
}

fn arithmetic(c: &Call, op: DecimalOp, lenient: bool) -> Result<ColumnarValue> {
    let return_type = c.return_type.clone();
    let temporal = |i: usize| c.arg(i).map(|a| is_temporal(&a.data_type()));
    if temporal(0)? || temporal(1)? {
        return temporal_arithmetic(c, op, lenient);
    }
    if return_type == DataType::Float64 {
        return float_arithmetic(c, op, lenient);
    }
    if return_type.is_integer() {
        return integer_arithmetic(c, op, lenient);
    }
    let DataType::Decimal128(p, s) = return_type else {
        return Err(DataFusionError::Internal(format!(
            "decimal arithmetic returns {return_type}"
        )));
    };
    if let Some(result) = vectorized(c, op, p, s)? {
        return Ok(ColumnarValue::Array(result));
    }
    let (a, _, s1) = decimal_values(c, 0)?;
    let (b, _, s2) = decimal_values(c, 1)?;
    let plan = Exact::new(op, s1, s2, s);
    let limit = POW10_I128.get(p as usize).copied().unwrap_or(i128::MAX);
    let mut out = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        if a.is_null(i) || b.is_null(i) {
            out.push(None);
            continue;
        }
        let (x, y) = (a.value(i), b.value(i));
        if op == DecimalOp::Divide && y == 0 {
            if lenient {
                out.push(None);
                continue;
            }
            return Err(df(FunctionError::DivideByZero));
        }
        // Most rows fit in i128 all the way; i256 only when they do not.
        if let Some(v) = plan.i128(x, y).filter(|v| v.unsigned_abs() < limit as u128) {
            out.push(Some(v));
            continue;
        }
        let exact = plan.i256(i256::from_i128(x), i256::from_i128(y));
        match exact.filter(|v| fits(*v, p)).and_then(|v| v.to_i128()) {
            Some(v) => out.push(Some(v)),
            None if lenient => out.push(None),
            None => {
                let shown = match exact {
                    Some(v) => decimal_text(v, s),
                    None => "the result".to_string(),
                };
                return Err(df(FunctionError::DecimalOutOfRange {
                    value: shown,
                    precision: p,
                    scale: s,
                }));
            }
        }
    }
    let array = Decimal128Array::from(out).with_precision_and_scale(p, s)?;
    Ok(ColumnarValue::Array(Arc::new(array)))
}

/// One side of a vectorized decimal operation: a column or one literal
/// value (NULL: `None`), as unscaled values.
#[derive(Clone)]
enum Side {
    Column(Decimal128Array),
    Value(Option<i128>),
}

impl Side {
    /// The side, its precision and its scale.
    fn of(value: &ColumnarValue) -> Result<(Self, u8, i8)> {
        Ok(match value {
            ColumnarValue::Array(array) => {
                let (values, precision, scale) = decimal_array(array)?;
                (Side::Column(values), precision, scale)
            }
            ColumnarValue::Scalar(scalar) => {
                let (values, precision, scale) = decimal_array(&scalar.to_array_of_size(1)?)?;
                let value = values.is_valid(0).then(|| values.value(0));
                (Side::Value(value), precision, scale)
            }
        })
    }
}

/// `op` over whole columns in i128, the way nearly every row goes: `None`
/// when some row does not fit the result's precision in i128 (or divides
/// by zero), which the row-by-row path then computes in i256 or reports.
/// Arrow's kernels skip NULL slots and combine the null masks.
fn vectorized(c: &Call, op: DecimalOp, p: u8, s: i8) -> Result<Option<ArrayRef>> {
    let (Some(a), Some(b)) = (c.args.first(), c.args.get(1)) else {
        return Ok(None);
    };
    if c.len() != c.rows || op == DecimalOp::Divide {
        return Ok(None);
    }
    let ((a, p1, s1), (b, p2, s2)) = (Side::of(a)?, Side::of(b)?);
    if let Some(values) = bounded(op, (&a, p1, s1), (&b, p2, s2), (p, s), c.rows) {
        return Ok(Some(Arc::new(values.with_precision_and_scale(p, s)?)));
    }
    let limit = POW10_I128.get(p as usize).copied().unwrap_or(i128::MAX) as u128;
    let scale = s1.max(s2);
    let factor = |from: i8| POW10_I128.get(usize::try_from(scale - from).ok()?).copied();
    // The common shapes get closures of their own: through `Exact::i128`
    // (a match on the operation and three rescalings per row) q1 took 15%
    // longer.
    let computed = match op {
        DecimalOp::Add | DecimalOp::Subtract if s == scale => {
            let (Some(fx), Some(fy)) = (factor(s1), factor(s2)) else {
                return Ok(None);
            };
            let subtract = op == DecimalOp::Subtract;
            columns(&a, &b, c.rows, |x, y| {
                let (x, y) = (x.checked_mul(fx)?, y.checked_mul(fy)?);
                let v = if subtract {
                    x.checked_sub(y)?
                } else {
                    x.checked_add(y)?
                };
                (v.unsigned_abs() < limit).then_some(v)
            })
        }
        DecimalOp::Multiply if s == s1 + s2 => columns(&a, &b, c.rows, |x, y| {
            let v = x.checked_mul(y)?;
            (v.unsigned_abs() < limit).then_some(v)
        }),
        _ => {
            let plan = Exact::new(op, s1, s2, s);
            columns(&a, &b, c.rows, |x, y| {
                plan.i128(x, y).filter(|v| v.unsigned_abs() < limit)
            })
        }
    };
    let Some(values) = computed else {
        return Ok(None);
    };
    Ok(Some(Arc::new(values.with_precision_and_scale(p, s)?)))
}

/// `op` over whole columns when the inputs' precisions leave the result no
/// room to overflow, as Databricks' result types usually do (the product
/// of DECIMAL(15,2) and DECIMAL(16,2) is a DECIMAL(32,4)): no row is
/// checked, and the loops vectorize (TPC-H q1 spent a fifth of its time
/// checking rows that could not overflow). A value beyond its column's
/// declared precision, which no writer of ours produces, wraps instead of
/// failing.
fn bounded(
    op: DecimalOp,
    (a, p1, s1): (&Side, u8, i8),
    (b, p2, s2): (&Side, u8, i8),
    (p, s): (u8, i8),
    rows: usize,
) -> Option<Decimal128Array> {
    let digits = |p: u8, s: i8| i16::from(p) - i16::from(s);
    let scale = s1.max(s2);
    match op {
        DecimalOp::Add | DecimalOp::Subtract
            if s == scale
                && digits(p1, s1).max(digits(p2, s2)) + 1 + i16::from(s) <= i16::from(p) =>
        {
            let fx = *POW10_I128.get(usize::try_from(scale - s1).ok()?)?;
            let fy = *POW10_I128.get(usize::try_from(scale - s2).ok()?)?;
            // Negated, a subtraction is an addition; a literal side is
            // rescaled once, not per row.
            let (fy, b) = match (op, b) {
                (DecimalOp::Subtract, Side::Value(v)) => {
                    (1, Side::Value(v.map(|v| v.wrapping_mul(fy).wrapping_neg())))
                }
                (DecimalOp::Subtract, _) => (-fy, b.clone()),
                (_, Side::Value(v)) => (1, Side::Value(v.map(|v| v.wrapping_mul(fy)))),
                _ => (fy, b.clone()),
            };
            let (fx, a) = match a {
                Side::Value(v) => (1, Side::Value(v.map(|v| v.wrapping_mul(fx)))),
                _ => (fx, a.clone()),
            };
            match (fx, fy) {
                (1, 1) => unchecked(&a, &b, rows, |x, y| x.wrapping_add(y)),
                (1, -1) => unchecked(&a, &b, rows, |x, y| x.wrapping_sub(y)),
                _ => unchecked(&a, &b, rows, |x, y| {
                    x.wrapping_mul(fx).wrapping_add(y.wrapping_mul(fy))
                }),
            }
        }
        DecimalOp::Multiply
            if i16::from(s) == i16::from(s1) + i16::from(s2)
                && u16::from(p1) + u16::from(p2) <= u16::from(p) =>
        {
            unchecked(a, b, rows, |x, y| x.wrapping_mul(y))
        }
        _ => None,
    }
}

/// `f` over the rows of two sides, no row checked.
fn unchecked(
    a: &Side,
    b: &Side,
    rows: usize,
    f: impl Fn(i128, i128) -> i128,
) -> Option<Decimal128Array> {
    use datafusion::arrow::compute::{binary, unary};
    match (a, b) {
        (Side::Column(x), Side::Column(y)) => binary(x, y, f).ok(),
        (Side::Column(x), Side::Value(Some(y))) => Some(unary(x, |x| f(x, *y))),
        (Side::Value(Some(x)), Side::Column(y)) => Some(unary(y, |y| f(*x, y))),
        (Side::Value(None), _) | (_, Side::Value(None)) => Some(Decimal128Array::new_null(rows)),
        (Side::Value(Some(_)), Side::Value(Some(_))) => None,
    }
}

/// `f` over the rows of two sides; `None` as soon as `f` fails on a row
/// that is not NULL.
fn columns(
    a: &Side,
    b: &Side,
    rows: usize,
    f: impl Fn(i128, i128) -> Option<i128>,
) -> Option<Decimal128Array> {
    use datafusion::arrow::compute::{try_binary, try_unary};
    use datafusion::arrow::error::ArrowError;
    let failed = || ArrowError::ComputeError(String::new());
    match (a, b) {
        (Side::Column(x), Side::Column(y)) => {
            try_binary(x, y, |x, y| f(x, y).ok_or_else(failed)).ok()
        }
        (Side::Column(x), Side::Value(Some(y))) => {
            try_unary(x, |x| f(x, *y).ok_or_else(failed)).ok()
        }
        (Side::Value(Some(x)), Side::Column(y)) => {
            try_unary(y, |y| f(*x, y).ok_or_else(failed)).ok()
        }
        (Side::Value(None), _) | (_, Side::Value(None)) => Some(Decimal128Array::new_null(rows)),
        (Side::Value(Some(_)), Side::Value(Some(_))) => None,
    }
}

fn float_arithmetic(c: &Call, op: DecimalOp, lenient: bool) -> Result<ColumnarValue> {
    let a = cast(&c.array(0)?, &DataType::Float64)?;
    let b = cast(&c.array(1)?, &DataType::Float64)?;
    let (a, b) = (
        a.as_primitive::<datafusion::arrow::datatypes::Float64Type>(),
        b.as_primitive::<datafusion::arrow::datatypes::Float64Type>(),
    );
    if op == DecimalOp::Divide {
        let zero = (0..b.len()).any(|i| b.is_valid(i) && a.is_valid(i) && b.value(i) == 0.0);
        if zero && !lenient {
            return Err(df(FunctionError::DivideByZero));
        }
        if !zero {
            let result: ArrayRef =
                Arc::new(datafusion::arrow::compute::kernels::numeric::div(a, b)?);
            return Ok(ColumnarValue::Array(result));
        }
    }
    double_rows(a.len(), |i| {
        if a.is_null(i) || b.is_null(i) {
            return Ok(None);
        }
        let (x, y) = (a.value(i), b.value(i));
        Ok(match op {
            DecimalOp::Add => Some(x + y),
            DecimalOp::Subtract => Some(x - y),
            DecimalOp::Multiply => Some(x * y),
            DecimalOp::Divide => (y != 0.0).then(|| x / y),
        })
    })
}

/// Integer arithmetic in the call's result type: NULL (`lenient`) or
/// ARITHMETIC_OVERFLOW when the result is not a value of it.
fn integer_arithmetic(c: &Call, op: DecimalOp, lenient: bool) -> Result<ColumnarValue> {
    let (min, max) = match c.return_type {
        DataType::Int8 => (i8::MIN as i64, i8::MAX as i64),
        DataType::Int16 => (i16::MIN as i64, i16::MAX as i64),
        DataType::Int32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    let a = cast(&c.array(0)?, &DataType::Int64)?;
    let b = cast(&c.array(1)?, &DataType::Int64)?;
    let (a, b) = (
        a.as_primitive::<datafusion::arrow::datatypes::Int64Type>(),
        b.as_primitive::<datafusion::arrow::datatypes::Int64Type>(),
    );
    let result = long_rows(a.len(), |i| {
        if a.is_null(i) || b.is_null(i) {
            return Ok(None);
        }
        let (x, y) = (a.value(i), b.value(i));
        let v = match op {
            DecimalOp::Add => x.checked_add(y),
            DecimalOp::Subtract => x.checked_sub(y),
            DecimalOp::Multiply => x.checked_mul(y),
            DecimalOp::Divide => x.checked_div(y),
        }
        .filter(|v| (min..=max).contains(v));
        match v {
            Some(v) => Ok(Some(v)),
            None if lenient => Ok(None),
            None => Err(overflow(op, format!("{x} and {y}"))),
        }
    })?;
    match result {
        ColumnarValue::Array(array) => Ok(ColumnarValue::Array(cast(&array, c.return_type)?)),
        ColumnarValue::Scalar(value) => Ok(ColumnarValue::Scalar(value.cast_to(c.return_type)?)),
    }
}

fn divide(c: &Call, lenient: bool) -> Result<ColumnarValue> {
    arithmetic(c, DecimalOp::Divide, lenient)
}

fn try_arithmetic(c: &Call, op: DecimalOp) -> Result<ColumnarValue> {
    arithmetic(c, op, true)
}

fn try_mod(c: &Call) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    let b = c.array(1)?;
    let t = c.return_type.clone();
    let a = cast(&a, &t)?;
    let b = cast(&b, &t)?;
    let zero = ScalarValue::new_zero(&t)?.to_array_of_size(b.len())?;
    let is_zero = datafusion::arrow::compute::kernels::cmp::eq(&b, &zero)?;
    let b = datafusion::arrow::compute::nullif(&b, &is_zero)?;
    let r = datafusion::arrow::compute::kernels::numeric::rem(&a, &b)?;
    Ok(ColumnarValue::Array(r))
}

fn integral_divide_kernel(c: &Call) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    let b = c.array(1)?;
    if let (DataType::Interval(_), DataType::Interval(_)) = (a.data_type(), b.data_type()) {
        return interval_div(&a, &b);
    }
    let exact = as_decimal(a.data_type()).is_some() && as_decimal(b.data_type()).is_some();
    if exact && !(a.data_type().is_decimal() || b.data_type().is_decimal()) {
        let a = cast(&a, &DataType::Int64)?;
        let b = cast(&b, &DataType::Int64)?;
        let (a, b) = (
            a.as_primitive::<datafusion::arrow::datatypes::Int64Type>(),
            b.as_primitive::<datafusion::arrow::datatypes::Int64Type>(),
        );
        return long_rows(a.len(), |i| {
            if a.is_null(i) || b.is_null(i) {
                return Ok(None);
            }
            let (x, y) = (a.value(i), b.value(i));
            if y == 0 {
                return Err(df(FunctionError::DivideByZero));
            }
            x.checked_div(y).map(Some).ok_or_else(|| {
                df(FunctionError::ArithmeticOverflow {
                    operation: format!("{x} div {y}"),
                    hint: "divide",
                })
            })
        });
    }
    let a = cast(&a, &DataType::Float64)?;
    let b = cast(&b, &DataType::Float64)?;
    let (a, b) = (
        a.as_primitive::<datafusion::arrow::datatypes::Float64Type>(),
        b.as_primitive::<datafusion::arrow::datatypes::Float64Type>(),
    );
    long_rows(a.len(), |i| {
        if a.is_null(i) || b.is_null(i) {
            return Ok(None);
        }
        if b.value(i) == 0.0 {
            return Err(df(FunctionError::DivideByZero));
        }
        Ok(Some((a.value(i) / b.value(i)).trunc() as i64))
    })
}

/// Spark's `RoundBase`: a DECIMAL keeps its integral digits, with the
/// target scale (never more than its own).
fn round_type(types: &[DataType], scalars: &[Option<&ScalarValue>]) -> Result<DataType> {
    let target = match scalars.get(1) {
        Some(Some(s)) => match s.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(v)) => v,
            _ => 0,
        },
        _ => 0,
    };
    Ok(match types.first() {
        Some(DataType::Decimal128(p, s)) => {
            let scale = (target.max(0) as i8).min(*s);
            let integral = *p as i8 - *s;
            let precision = (integral + scale + 1).clamp(1, 38) as u8;
            DataType::Decimal128(precision, scale)
        }
        Some(t) if t.is_integer() => t.clone(),
        Some(DataType::Float32) => DataType::Float32,
        _ => DataType::Float64,
    })
}

fn round_half(c: &Call, even: bool) -> Result<ColumnarValue> {
    let scale = if c.args.len() == 2 {
        match c.arg(1)? {
            ColumnarValue::Scalar(ScalarValue::Int64(Some(s))) => *s,
            ColumnarValue::Scalar(s) if s.is_null() => {
                return Ok(ColumnarValue::Scalar(ScalarValue::try_from(c.return_type)?))
            }
            _ => {
                return Err(df(FunctionError::mismatch(
                    "bround",
                    "the scale must be a constant",
                )))
            }
        }
    } else {
        0
    };
    let array = c.array(0)?;
    match array.data_type().clone() {
        DataType::Decimal128(p, s) => {
            let a = array.as_primitive::<Decimal128Type>();
            let drop = s as i64 - scale;
            let values: Decimal128Array = a
                .iter()
                .map(|v| {
                    v.map(|v| {
                        if drop <= 0 || drop > 38 {
                            return v;
                        }
                        let f = 10i128.pow(drop as u32);
                        let q = v / f;
                        let r = v % f;
                        let half = f / 2;
                        let up = if even {
                            r.abs() > half || (r.abs() == half && q % 2 != 0)
                        } else {
                            r.abs() >= half
                        };
                        (if up { q + v.signum() } else { q }) * f
                    })
                })
                .collect();
            let values: ArrayRef = Arc::new(values.with_precision_and_scale(p, s)?);
            Ok(ColumnarValue::Array(cast(&values, c.return_type)?))
        }
        DataType::Float64 | DataType::Float32 => {
            let a = cast(&array, &DataType::Float64)?;
            let a = a.as_primitive::<datafusion::arrow::datatypes::Float64Type>();
            let f = 10f64.powi(scale as i32);
            let values: Float64Array = a
                .iter()
                .map(|v| {
                    v.map(|v| {
                        let x = v * f;
                        let r = if even {
                            let rounded = x.round();
                            if (x - x.trunc()).abs() == 0.5 {
                                2.0 * (x / 2.0).round()
                            } else {
                                rounded
                            }
                        } else {
                            x.round()
                        };
                        r / f
                    })
                })
                .collect();
            let result = cast(&(Arc::new(values) as ArrayRef), c.return_type)?;
            Ok(ColumnarValue::Array(result))
        }
        t if t.is_integer() => {
            if scale >= 0 {
                return Ok(ColumnarValue::Array(array));
            }
            let a = cast(&array, &DataType::Int64)?;
            let a = a.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
            let f = 10i64.checked_pow((-scale) as u32).unwrap_or(i64::MAX);
            let values: datafusion::arrow::array::Int64Array = a
                .iter()
                .map(|v| {
                    v.map(|v| {
                        let q = v / f;
                        let r = v % f;
                        let half = f / 2;
                        let up = if even {
                            r.abs() > half || (r.abs() == half && q % 2 != 0)
                        } else {
                            r.abs() >= half
                        };
                        (if up { q + v.signum() } else { q }) * f
                    })
                })
                .collect();
            Ok(ColumnarValue::Array(cast(
                &(Arc::new(values) as ArrayRef),
                c.return_type,
            )?))
        }
        other => Err(df(FunctionError::mismatch(
            "bround",
            format!("expected a number, got {other}"),
        ))),
    }
}

fn conv(c: &Call) -> Result<ColumnarValue> {
    let (nums, from, to) = (c.str(0)?, c.long(1)?, c.long(2)?);
    string_rows(c.len(), |i, out| {
        let (Some(n), Some(f), Some(t)) = (nums.get(i), from.get(i), to.get(i)) else {
            return Ok(false);
        };
        if !(2..=36).contains(&f) || !(2..=36).contains(&t.abs()) {
            return Ok(false);
        }
        let text = n.trim();
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        // Spark reads the longest valid prefix, as an unsigned 64-bit value.
        let mut value: u64 = 0;
        for ch in digits.chars() {
            match ch.to_digit(f as u32) {
                Some(d) => value = value.wrapping_mul(f as u64).wrapping_add(d as u64),
                None => break,
            }
        }
        if negative {
            value = value.wrapping_neg();
        }
        let (signed_out, mut v) = if t < 0 && (value as i64) < 0 {
            (true, (value as i64).unsigned_abs())
        } else {
            (false, value)
        };
        let base = t.unsigned_abs();
        let mut chars = Vec::new();
        loop {
            let d = (v % base) as u32;
            chars.push(
                std::char::from_digit(d, base as u32)
                    .unwrap_or('0')
                    .to_ascii_uppercase(),
            );
            v /= base;
            if v == 0 {
                break;
            }
        }
        if signed_out {
            out.push('-');
        }
        out.extend(chars.iter().rev());
        Ok(true)
    })
}

fn log_of(c: &Call, f: fn(f64) -> f64) -> Result<ColumnarValue> {
    let x = c.double(0)?;
    double_rows(c.len(), |i| Ok(x.get(i).filter(|v| *v > 0.0).map(f)))
}

fn log_of_shifted(c: &Call) -> Result<ColumnarValue> {
    let x = c.double(0)?;
    double_rows(c.len(), |i| {
        Ok(x.get(i).filter(|v| *v > -1.0).map(f64::ln_1p))
    })
}

fn log(c: &Call) -> Result<ColumnarValue> {
    if c.args.len() == 1 {
        return log_of(c, f64::ln);
    }
    let (base, x) = (c.double(0)?, c.double(1)?);
    double_rows(c.len(), |i| {
        Ok(match (base.get(i), x.get(i)) {
            (Some(b), Some(v)) if b > 0.0 && v > 0.0 => Some(v.ln() / b.ln()),
            _ => None,
        })
    })
}

fn nanvl(c: &Call) -> Result<ColumnarValue> {
    let (a, b) = (c.double(0)?, c.double(1)?);
    double_rows(c.len(), |i| {
        Ok(match a.get(i) {
            Some(v) if v.is_nan() => b.get(i),
            other => other,
        })
    })
}

fn shift(c: &Call, kind: u8) -> Result<ColumnarValue> {
    let (a, n) = (c.long(0)?, c.long(1)?);
    long_rows(c.len(), |i| {
        let (Some(v), Some(n)) = (a.get(i), n.get(i)) else {
            return Ok(None);
        };
        let n = (n & 63) as u32;
        Ok(Some(match kind {
            0 => v.wrapping_shl(n),
            1 => v.wrapping_shr(n),
            _ => ((v as u64).wrapping_shr(n)) as i64,
        }))
    })
}

fn zeroifnull(c: &Call) -> Result<ColumnarValue> {
    let t = c.arg(0)?.data_type();
    let t = if t == DataType::Null {
        DataType::Int32
    } else {
        t
    };
    let zero = ScalarValue::new_zero(&t)?;
    let a = c.array(0)?;
    let a = cast(&a, &t)?;
    let filled = datafusion::arrow::compute::kernels::zip::zip(
        &datafusion::arrow::compute::is_null(&a)?,
        &zero.to_scalar()?,
        &a,
    )?;
    Ok(ColumnarValue::Array(filled))
}

fn nullifzero(c: &Call) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    let t = a.data_type().clone();
    if t == DataType::Null {
        return Ok(ColumnarValue::Array(a));
    }
    let zero = ScalarValue::new_zero(&t)?.to_array_of_size(a.len())?;
    let is_zero = datafusion::arrow::compute::kernels::cmp::eq(&a, &zero)?;
    Ok(ColumnarValue::Array(datafusion::arrow::compute::nullif(
        &a, &is_zero,
    )?))
}

/// A small xorshift generator, seeded from the seed or the clock.
fn generator(c: &Call) -> Result<u64> {
    Ok(if c.args.is_empty() {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9E37_79B9_7F4A_7C15)
    } else {
        c.long(0)?.get(0).unwrap_or(0) as u64 ^ 0x9E37_79B9_7F4A_7C15
    }
    .max(1))
}

fn next(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

fn rand(c: &Call) -> Result<ColumnarValue> {
    let mut state = generator(c)?;
    let n = c.rows.max(1);
    double_rows(n, |_| Ok(Some(next(&mut state))))
}

fn randn(c: &Call) -> Result<ColumnarValue> {
    let mut state = generator(c)?;
    let n = c.rows.max(1);
    double_rows(n, |_| {
        // Box-Muller.
        let u1 = next(&mut state).max(f64::MIN_POSITIVE);
        let u2 = next(&mut state);
        Ok(Some(
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos(),
        ))
    })
}

/// The scale argument of `ceil(x, scale)` / `floor(x, scale)`.
fn literal_scale(scalars: &[Option<&ScalarValue>]) -> i64 {
    match scalars.get(1) {
        Some(Some(v)) => v
            .cast_to(&DataType::Int64)
            .ok()
            .and_then(|v| match v {
                ScalarValue::Int64(Some(n)) => Some(n),
                _ => None,
            })
            .unwrap_or(0),
        _ => 0,
    }
}

/// `ceil(x, s)` of a DECIMAL(p, q) is a DECIMAL(p - q + s + 1, s) (s ≥ 0),
/// of a DOUBLE a DOUBLE.
fn scaled_round_type(types: &[DataType], scalars: &[Option<&ScalarValue>]) -> Result<DataType> {
    let scale = literal_scale(scalars).clamp(-38, 38);
    Ok(match types.first() {
        Some(DataType::Float32 | DataType::Float64) => DataType::Float64,
        Some(t) => {
            let (p, s) = match t {
                DataType::Decimal128(p, s) => (*p as i64, *s as i64),
                _ => (20, 0),
            };
            let new_scale = scale.max(0);
            let precision = (p - s + new_scale + 1).clamp(1, 38);
            DataType::Decimal128(precision as u8, new_scale as i8)
        }
        None => DataType::Float64,
    })
}

/// `ceil(x, scale)` (`up`) and `floor(x, scale)`: rounded up or down at
/// `scale` digits after the point (before it, when negative).
fn round_to_scale(c: &Call, up: bool) -> Result<ColumnarValue> {
    let values = c.array(0)?;
    let scales = c.long(1)?;
    if let DataType::Float64 = c.return_type {
        let values = cast(&values, &DataType::Float64)?;
        let values = values.as_primitive::<datafusion::arrow::datatypes::Float64Type>();
        return double_rows(values.len(), |i| {
            let (false, Some(scale)) = (values.is_null(i), scales.get(i)) else {
                return Ok(None);
            };
            let factor = 10f64.powi(scale.clamp(-308, 308) as i32);
            let scaled = values.value(i) * factor;
            Ok(Some(
                if up { scaled.ceil() } else { scaled.floor() } / factor,
            ))
        });
    }
    let DataType::Decimal128(precision, new_scale) = c.return_type.clone() else {
        return Err(DataFusionError::Internal(
            "ceil/floor: unexpected type".into(),
        ));
    };
    let source = match values.data_type() {
        DataType::Decimal128(..) => values,
        _ => cast(&values, &DataType::Decimal128(20, 0))?,
    };
    let DataType::Decimal128(_, from_scale) = source.data_type().clone() else {
        return Err(DataFusionError::Internal(
            "ceil/floor: unexpected type".into(),
        ));
    };
    let source = source.as_primitive::<Decimal128Type>();
    let mut out = Vec::with_capacity(source.len());
    for i in 0..source.len() {
        let (false, Some(scale)) = (source.is_null(i), scales.get(i)) else {
            out.push(None);
            continue;
        };
        let v = source.value(i);
        let drop = from_scale as i64 - scale.clamp(-38, 38);
        // Rounded at `scale`, then expressed at the result's scale.
        let rounded = if drop > 0 {
            let unit = 10i128.checked_pow(drop as u32).unwrap_or(i128::MAX);
            let (q, r) = (v.div_euclid(unit), v.rem_euclid(unit));
            let q = if up && r != 0 { q + 1 } else { q };
            q.checked_mul(unit)
        } else {
            Some(v)
        };
        let shift = new_scale as i64 - from_scale as i64;
        let value = rounded.and_then(|r| {
            if shift >= 0 {
                10i128
                    .checked_pow(shift as u32)
                    .and_then(|m| r.checked_mul(m))
            } else {
                10i128.checked_pow((-shift) as u32).map(|d| r / d)
            }
        });
        match value {
            Some(v) => out.push(Some(v)),
            None => {
                return Err(df(FunctionError::ArithmeticOverflow {
                    operation: if up { "ceil" } else { "floor" }.to_string(),
                    hint: "cast",
                }))
            }
        }
    }
    let array = Decimal128Array::from(out).with_precision_and_scale(precision, new_scale)?;
    Ok(ColumnarValue::Array(Arc::new(array)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_precision_is_sparks() {
        assert_eq!(
            decimal_result(DecimalOp::Divide, (10, 2), (10, 2)),
            (23, 13)
        );
        assert_eq!(
            decimal_result(DecimalOp::Multiply, (10, 2), (10, 2)),
            (21, 4)
        );
        assert_eq!(decimal_result(DecimalOp::Add, (10, 2), (5, 3)), (12, 3));
        assert_eq!(
            decimal_result(DecimalOp::Multiply, (38, 10), (38, 10)),
            (38, 6)
        );
        assert_eq!(decimal_result(DecimalOp::Divide, (38, 0), (10, 0)), (38, 6));
    }

    #[test]
    fn division_rounds_half_up() {
        let v = div_half_up(i256::from_i128(5), i256::from_i128(2)).unwrap();
        assert_eq!(v, i256::from_i128(3));
        let v = div_half_up(i256::from_i128(-5), i256::from_i128(2)).unwrap();
        assert_eq!(v, i256::from_i128(-3));
        assert_eq!(decimal_text(i256::from_i128(-5), 2), "-0.05");
    }
}
