//! Aggregate functions Databricks has under other names or shapes than
//! DataFusion (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#aggregate-functions>).
//! Most are DataFusion's (`sum`, `avg`, `min`, `max`, `count`,
//! `approx_count_distinct`, `median`, `stddev*`, `var*`, `corr`, `covar_*`,
//! `regr_*`, `bit_*`, `bool_and`, `bool_or`, `array_agg`, `string_agg`,
//! `first_value`, `last_value`); datafusion-spark gives `collect_list`,
//! `collect_set`, `try_sum` and Spark's `avg`. The rest are rewritten into
//! those before planning ([`rewrite_call`]): `count_if`, `any`, `some`,
//! `every`, `max_by`, `min_by`, `std`, `percentile`, `percentile_approx`,
//! `approx_percentile`; `first`/`last` and `listagg` in rewrite.rs.

use datafusion::logical_expr::AggregateUDF;
use sqlparser::ast::{Expr, Function};

use super::rewrite::{parse_expr, plain_args};

/// No aggregate implementations of our own (see the module comment).
pub(crate) fn functions() -> Vec<AggregateUDF> {
    vec![]
}

/// What `DESCRIBE FUNCTION` says of one of our aggregates.
pub(crate) fn description_of(_: &AggregateUDF) -> Option<&'static str> {
    None
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
];

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
