//! Conditions that write statements hand to the storage layer as they are
//! (MERGE's conditions, REPLACE WHERE): Databricks refuses subqueries in
//! them, and delta-rs could not take one whole — refused here, before
//! anything is planned, rather than run with a different predicate.

use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions, Expr};

use crate::error::Result;

/// `[DELTA_UNSUPPORTED_SUBQUERY]` (0AKDC) if `expr` holds a subquery.
pub(crate) fn refuse_subqueries(op: &'static str, reason: &'static str, expr: &Expr) -> Result<()> {
    let found = visit_expressions(expr, |e| match e {
        Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. } => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    });
    if found.is_break() {
        return Err(lakegres_delta::Error::UnsupportedSubquery {
            op,
            condition: expr.to_string(),
            reason,
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(sql: &str) -> Expr {
        let dialect = sqlparser::dialect::GenericDialect {};
        sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    #[test]
    fn subqueries_anywhere_are_refused_with_0akdc() {
        for sql in [
            "a IN (SELECT b FROM t)",
            "EXISTS (SELECT 1 FROM t) AND a = 1",
            "a = 1 OR b > (SELECT max(c) FROM t)",
            "a > ANY (SELECT b FROM t)",
            "coalesce((SELECT 1), 2) = a",
        ] {
            let err = refuse_subqueries("MERGE", "test", &condition(sql)).unwrap_err();
            assert_eq!(err.sqlstate().code(), "0AKDC", "{sql}");
            assert!(
                err.to_string().starts_with("[DELTA_UNSUPPORTED_SUBQUERY]"),
                "{sql}"
            );
        }
    }

    #[test]
    fn plain_conditions_pass() {
        for sql in ["a = 1", "a IN (1, 2) AND b IS NULL", "t.a <=> s.a"] {
            assert!(
                refuse_subqueries("MERGE", "test", &condition(sql)).is_ok(),
                "{sql}"
            );
        }
    }
}
