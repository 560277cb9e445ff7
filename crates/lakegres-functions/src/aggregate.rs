//! Aggregate functions Databricks has under other names or shapes than
//! DataFusion (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#aggregate-functions>).
//! Most are DataFusion's (`sum`, `min`, `max`, `count`,
//! `approx_count_distinct`, `median`, `stddev*`, `var*`, `corr`, `covar_*`,
//! `regr_*`, `bit_*`, `bool_and`, `bool_or`, `array_agg`, `string_agg`,
//! `first_value`, `last_value`); datafusion-spark gives `collect_list`,
//! `collect_set` and `try_sum`; `avg` is ours (average.rs). The rest are rewritten into
//! those before planning ([`rewrite_call`]): `count_if`, `any`, `some`,
//! `every`, `max_by`, `min_by`, `std`, `percentile`, `percentile_approx`,
//! `approx_percentile`; `first`/`last` and `listagg` in rewrite.rs.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, ListArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use sqlparser::ast::{Expr, Function};

use super::error::{df, FunctionError};
use super::rewrite::{parse_expr, plain_args};

/// Our aggregates: `skewness`, `kurtosis` (Spark's central moments) and
/// `mode`.
pub(crate) fn functions() -> Vec<AggregateUDF> {
    vec![
        AggregateUDF::new_from_impl(Moments::new(Moment::Skewness)),
        AggregateUDF::new_from_impl(Moments::new(Moment::Kurtosis)),
        AggregateUDF::new_from_impl(Mode::new()),
        AggregateUDF::new_from_impl(PercentileDisc::new()),
        super::histogram::histogram_numeric(),
    ]
}

/// What `DESCRIBE FUNCTION` says of one of our aggregates.
pub(crate) fn description_of(f: &AggregateUDF) -> Option<&'static str> {
    Some(match f.name() {
        "skewness" => "skewness(expr) - Returns the skewness value calculated from values of a group.",
        "kurtosis" => "kurtosis(expr) - Returns the kurtosis value calculated from values of a group.",
        "lakegres_percentile_disc" => "percentile_disc(percentage) WITHIN GROUP (ORDER BY expr [DESC]) - Returns the first value of expr in the group's order whose cumulative distribution is at least percentage.",
        "histogram_numeric" => "histogram_numeric(expr, nb) - Computes a histogram on numeric expr using nb bins: an array of (x, y) structs, the bins' centres and heights.",
        "mode" => "mode(expr) - Returns the most frequent value of expr in a group (the smallest of those as frequent); NULLs are ignored.",
        _ => return None,
    })
}

/// Which central moment statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Moment {
    Skewness,
    Kurtosis,
}

/// `skewness` and `kurtosis` over DOUBLE, updated and merged as Spark's
/// `CentralMomentAgg` does, so that results agree to the last digit.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Moments {
    moment: Moment,
    signature: Signature,
}

impl Moments {
    fn new(moment: Moment) -> Self {
        Self {
            moment,
            signature: Signature::exact(vec![DataType::Float64], Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for Moments {
    fn name(&self) -> &str {
        match self.moment {
            Moment::Skewness => "skewness",
            Moment::Kurtosis => "kurtosis",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(MomentsAccumulator {
            moment: self.moment,
            state: [0.0; 5],
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(["n", "avg", "m2", "m3", "m4"]
            .iter()
            .map(|part| {
                Arc::new(Field::new(
                    format!("{}[{part}]", args.name),
                    DataType::Float64,
                    true,
                ))
            })
            .collect())
    }
}

#[derive(Debug)]
struct MomentsAccumulator {
    moment: Moment,
    /// n, mean, and the 2nd to 4th central moment sums.
    state: [f64; 5],
}

impl MomentsAccumulator {
    fn add(&mut self, x: f64) {
        let [n, avg, m2, m3, m4] = self.state;
        let n = n + 1.0;
        let delta = x - avg;
        let delta_n = delta / n;
        let avg = avg + delta_n;
        let m2 = m2 + delta * (delta - delta_n);
        let (delta2, delta_n2) = (delta * delta, delta_n * delta_n);
        let m3 = m3 - 3.0 * delta_n * m2 + delta * (delta2 - delta_n2);
        let m4 = m4 - 4.0 * delta_n * m3 - 6.0 * delta_n2 * m2
            + delta * (delta * delta2 - delta_n * delta_n2);
        self.state = [n, avg, m2, m3, m4];
    }

    fn merge(&mut self, other: [f64; 5]) {
        let [n1, avg1, m2_1, m3_1, m4_1] = self.state;
        let [n2, avg2, m2_2, m3_2, m4_2] = other;
        let n = n1 + n2;
        let delta = avg2 - avg1;
        let delta_n = if n == 0.0 { 0.0 } else { delta / n };
        let avg = avg1 + delta_n * n2;
        let m2 = m2_1 + m2_2 + delta * delta_n * n1 * n2;
        let m3 = m3_1
            + m3_2
            + delta_n * delta_n * delta * n1 * n2 * (n1 - n2)
            + 3.0 * delta_n * (n1 * m2_2 - n2 * m2_1);
        let m4 = m4_1
            + m4_2
            + delta_n * delta_n * delta_n * delta * n1 * n2 * (n1 * n1 - n1 * n2 + n2 * n2)
            + 6.0 * delta_n * delta_n * (n1 * n1 * m2_2 + n2 * n2 * m2_1)
            + 4.0 * delta_n * (n1 * m3_2 - n2 * m3_1);
        self.state = [n, avg, m2, m3, m4];
    }
}

impl Accumulator for MomentsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(values) = values.first() {
            for x in values.as_primitive::<Float64Type>().iter().flatten() {
                self.add(x);
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let columns: Vec<&Float64Array> = states
            .iter()
            .map(|s| s.as_primitive::<Float64Type>())
            .collect();
        let [n, avg, m2, m3, m4] = columns.as_slice() else {
            return Err(datafusion::error::DataFusionError::Internal(
                "moments: five state columns expected".into(),
            ));
        };
        for i in 0..n.len() {
            if n.is_valid(i) && n.value(i) > 0.0 {
                self.merge([
                    n.value(i),
                    avg.value(i),
                    m2.value(i),
                    m3.value(i),
                    m4.value(i),
                ]);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(self
            .state
            .iter()
            .map(|v| ScalarValue::Float64(Some(*v)))
            .collect())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let [n, _, m2, m3, m4] = self.state;
        // No rows, or no variance: NULL (Spark without its legacy flag).
        if n == 0.0 || m2 == 0.0 {
            return Ok(ScalarValue::Float64(None));
        }
        Ok(ScalarValue::Float64(Some(match self.moment {
            Moment::Skewness => n.sqrt() * m3 / (m2 * m2 * m2).sqrt(),
            Moment::Kurtosis => n * m4 / (m2 * m2) - 3.0,
        })))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// `mode(expr)`: the most frequent non-NULL value; of equally frequent
/// ones the smallest, so that the answer does not depend on the order of
/// the rows (Databricks' `mode(expr, true)`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Mode {
    signature: Signature,
}

impl Mode {
    fn new() -> Self {
        Self {
            signature: Signature::one_of(
                vec![
                    datafusion::logical_expr::TypeSignature::Any(1),
                    datafusion::logical_expr::TypeSignature::Any(2),
                ],
                Volatility::Immutable,
            ),
        }
    }
}

impl AggregateUDFImpl for Mode {
    fn name(&self) -> &str {
        "mode"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t)
                if matches!(
                    t,
                    DataType::List(_) | DataType::Map(..) | DataType::Struct(_)
                ) =>
            {
                Err(df(FunctionError::mismatch(
                    "mode",
                    format!("the argument must be of an orderable type, not {t}"),
                )))
            }
            Some(t) => Ok(t.clone()),
            None => Err(df(FunctionError::WrongNumArgs {
                function: "mode".into(),
                expected: "1 or 2".into(),
                actual: 0,
            })),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(ModeAccumulator {
            data_type: args.return_field.data_type().clone(),
            counts: HashMap::new(),
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let value = args.return_field.data_type().clone();
        Ok(vec![
            Arc::new(Field::new_list(
                format!("{}[values]", args.name),
                Field::new_list_field(value, true),
                true,
            )),
            Arc::new(Field::new_list(
                format!("{}[counts]", args.name),
                Field::new_list_field(DataType::Int64, true),
                true,
            )),
        ])
    }
}

#[derive(Debug)]
struct ModeAccumulator {
    data_type: DataType,
    counts: HashMap<ScalarValue, i64>,
}

impl Accumulator for ModeAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(values) = values.first() {
            for i in 0..values.len() {
                if values.is_valid(i) {
                    *self
                        .counts
                        .entry(ScalarValue::try_from_array(values, i)?)
                        .or_insert(0) += 1;
                }
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(values), Some(counts)) = (states.first(), states.get(1)) else {
            return Ok(());
        };
        let (values, counts): (&ListArray, &ListArray) = (values.as_list(), counts.as_list());
        for row in 0..values.len() {
            if values.is_null(row) {
                continue;
            }
            let (vs, cs) = (values.value(row), counts.value(row));
            let cs: &Int64Array = cs.as_primitive::<Int64Type>();
            for i in 0..vs.len() {
                *self
                    .counts
                    .entry(ScalarValue::try_from_array(&vs, i)?)
                    .or_insert(0) += cs.value(i);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let values: Vec<ScalarValue> = self.counts.keys().cloned().collect();
        let counts: Vec<ScalarValue> = values
            .iter()
            .map(|v| ScalarValue::Int64(self.counts.get(v).copied()))
            .collect();
        Ok(vec![
            ScalarValue::List(ScalarValue::new_list_nullable(&values, &self.data_type)),
            ScalarValue::List(ScalarValue::new_list_nullable(&counts, &DataType::Int64)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut best: Option<(&ScalarValue, i64)> = None;
        for (value, &count) in &self.counts {
            best = match best {
                Some((b, c))
                    if c > count
                        || (c == count
                            && b.partial_cmp(value) != Some(std::cmp::Ordering::Greater)) =>
                {
                    Some((b, c))
                }
                _ => Some((value, count)),
            };
        }
        match best {
            Some((value, _)) => Ok(value.clone()),
            None => ScalarValue::try_from(&self.data_type),
        }
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self
                .counts
                .keys()
                .map(|k| k.size() + std::mem::size_of::<i64>())
                .sum::<usize>()
    }
}

/// The aggregates planned by rewriting, with their descriptions.
pub(crate) const REWRITTEN: &[(&str, &str)] = &[
    ("approx_count_distinct", "approx_count_distinct(expr [, relativeSD]) - Returns the estimated number of distinct values in expr."),
    ("count_if", "count_if(expr) - Returns the number of rows for which expr is true."),
    ("any", "any(expr) - Returns true if at least one value of expr is true."),
    ("some", "some(expr) - Returns true if at least one value of expr is true."),
    ("every", "every(expr) - Returns true if all values of expr are true."),
    ("max_by", "max_by(expr1, expr2) - Returns the value of expr1 associated with the maximum value of expr2."),
    ("min_by", "min_by(expr1, expr2) - Returns the value of expr1 associated with the minimum value of expr2."),
    ("std", "std(expr) - Returns the sample standard deviation."),
    ("percentile", "percentile(expr, percentage) - Returns the exact percentile value of expr at percentage."),
    ("percentile_approx", "percentile_approx(expr, percentage [, accuracy]) - Returns an approximate percentile of expr at percentage."),
    ("approx_percentile", "approx_percentile(expr, percentage [, accuracy]) - Returns an approximate percentile of expr at percentage."),
    ("percentile_disc", "percentile_disc(percentage) WITHIN GROUP (ORDER BY expr [DESC]) - Returns the first value of expr in the group's order whose cumulative distribution is at least percentage."),
    ("try_avg", "try_avg(expr) - Returns the mean calculated from values of a group (integers are averaged as DOUBLE, which cannot overflow)."),
    ("variance", "variance(expr) - Returns the sample variance calculated from values of a group."),
    ("listagg", "listagg(expr [, delimiter]) [WITHIN GROUP (ORDER BY key)] - Returns the concatenation of the non-NULL values of a group, separated by delimiter."),
    ("first", "first(expr [, ignoreNull]) - Returns the first value of expr for a group of rows."),
    ("last", "last(expr [, ignoreNull]) - Returns the last value of expr for a group of rows."),
];

/// The percentages of `array(p1, p2, …)` (or `ARRAY[…]`), as text.
fn percentages(text: &str) -> Option<Vec<String>> {
    match parse_expr(text)? {
        Expr::Function(call) if super::rewrite::function_name(&call) == "array" => {
            Some(plain_args(&call)?.iter().map(|a| a.to_string()).collect())
        }
        Expr::Array(a) => Some(a.elem.iter().map(|e| e.to_string()).collect()),
        _ => None,
    }
}

/// `array(agg1, agg2, …)`, each aggregate with the call's FILTER and OVER.
fn wrap_each(f: &Function, each: &[String]) -> Option<Expr> {
    let mut calls = Vec::with_capacity(each.len());
    for call in each {
        let Expr::Function(mut new) = parse_expr(call)? else {
            return None;
        };
        new.filter = f.filter.clone();
        new.over = f.over.clone();
        calls.push(Expr::Function(new).to_string());
    }
    parse_expr(&format!("array({})", calls.join(", ")))
}

/// The DataFusion form of a rewritten aggregate call, keeping its
/// `FILTER`, `OVER` and `DISTINCT`.
pub(crate) fn rewrite_call(name: &str, f: &Function) -> Option<Expr> {
    let args: Vec<String> = plain_args(f)?.iter().map(|a| a.to_string()).collect();
    let call = match (name, args.as_slice()) {
        ("count_if", [c]) => format!("count(CASE WHEN {c} THEN 1 END)"),
        ("approx_count_distinct", [x] | [x, _]) => format!("approx_distinct({x})"),
        ("any" | "some", [c]) => format!("bool_or({c})"),
        ("every", [c]) => format!("bool_and({c})"),
        ("max_by", [x, y]) => format!("first_value({x} ORDER BY {y} DESC NULLS LAST)"),
        ("min_by", [x, y]) => format!("first_value({x} ORDER BY {y} ASC NULLS LAST)"),
        ("std", [x]) => format!("stddev({x})"),
        ("try_avg", [x]) => format!("avg({x})"),
        ("variance", [x]) => format!("var_samp({x})"),
        // `percentile(x, array(p1, p2))`: an array of percentiles.
        ("percentile", [x, p]) if percentages(p).is_some() => {
            let each: Vec<String> = percentages(p)?
                .iter()
                .map(|p| format!("percentile_cont({p}) WITHIN GROUP (ORDER BY {x})"))
                .collect();
            return wrap_each(f, &each);
        }
        ("percentile_approx" | "approx_percentile", [x, p, rest @ ..])
            if percentages(p).is_some() =>
        {
            let accuracy: String = rest.iter().map(|a| format!(", {a}")).collect();
            let each: Vec<String> = percentages(p)?
                .iter()
                .map(|p| {
                    format!("approx_percentile_cont({p}{accuracy}) WITHIN GROUP (ORDER BY {x})")
                })
                .collect();
            return wrap_each(f, &each);
        }
        ("percentile", [x, p]) => format!("percentile_cont({p}) WITHIN GROUP (ORDER BY {x})"),
        ("percentile_approx" | "approx_percentile", [x, p]) => {
            format!("approx_percentile_cont({p}) WITHIN GROUP (ORDER BY {x})")
        }
        ("percentile_approx" | "approx_percentile", [x, p, accuracy]) => {
            format!("approx_percentile_cont({p}, {accuracy}) WITHIN GROUP (ORDER BY {x})")
        }
        _ => return None,
    };
    let Expr::Function(mut new) = parse_expr(&call)? else {
        return None;
    };
    new.filter = f.filter.clone();
    new.over = f.over.clone();
    Some(Expr::Function(new))
}

/// `percentile_disc(p) WITHIN GROUP (ORDER BY x [DESC])`, planned as
/// `lakegres_percentile_disc(x, p, descending)` (rewrite.rs): the first
/// value whose cumulative distribution reaches p, as a DOUBLE.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PercentileDisc {
    signature: Signature,
}

impl PercentileDisc {
    fn new() -> Self {
        Self {
            signature: Signature::exact(
                vec![DataType::Float64, DataType::Float64, DataType::Boolean],
                Volatility::Immutable,
            ),
        }
    }
}

impl AggregateUDFImpl for PercentileDisc {
    fn name(&self) -> &str {
        "lakegres_percentile_disc"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let literal = |i: usize| -> Option<ScalarValue> {
            let e = args.exprs.get(i)?;
            e.downcast_ref::<datafusion::physical_expr::expressions::Literal>()
                .map(|l| l.value().clone())
        };
        let percentage = match literal(1) {
            Some(ScalarValue::Float64(Some(p))) if (0.0..=1.0).contains(&p) => p,
            other => {
                return Err(df(FunctionError::InvalidParameter {
                    function: "percentile_disc",
                    parameter: "percentage",
                    reason: format!(
                        "must be a literal between 0.0 and 1.0, but got {}",
                        other
                            .map(|v| v.to_string())
                            .unwrap_or_else(|| "an expression".into())
                    ),
                }))
            }
        };
        let descending = matches!(literal(2), Some(ScalarValue::Boolean(Some(true))));
        Ok(Box::new(PercentileDiscAccumulator {
            percentage,
            descending,
            values: Vec::new(),
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new_list(
            format!("{}[values]", args.name),
            Field::new_list_field(DataType::Float64, true),
            true,
        ))])
    }
}

#[derive(Debug)]
struct PercentileDiscAccumulator {
    percentage: f64,
    descending: bool,
    values: Vec<f64>,
}

impl Accumulator for PercentileDiscAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(values) = values.first() {
            self.values
                .extend(values.as_primitive::<Float64Type>().iter().flatten());
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        if let Some(lists) = states.first() {
            let lists: &ListArray = lists.as_list();
            for row in 0..lists.len() {
                if lists.is_valid(row) {
                    let values = lists.value(row);
                    self.values
                        .extend(values.as_primitive::<Float64Type>().iter().flatten());
                }
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let values: Vec<ScalarValue> = self
            .values
            .iter()
            .map(|v| ScalarValue::Float64(Some(*v)))
            .collect();
        Ok(vec![ScalarValue::List(ScalarValue::new_list_nullable(
            &values,
            &DataType::Float64,
        ))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.values.is_empty() {
            return Ok(ScalarValue::Float64(None));
        }
        self.values.sort_by(|a, b| a.total_cmp(b));
        if self.descending {
            self.values.reverse();
        }
        let n = self.values.len();
        let at = ((self.percentage * n as f64).ceil() as usize).clamp(1, n) - 1;
        Ok(ScalarValue::Float64(self.values.get(at).copied()))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.capacity() * std::mem::size_of::<f64>()
    }
}
