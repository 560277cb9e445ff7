//! `(a, b) IN (SELECT x, y …)`: a row value tested against a subquery's
//! rows, as dbt's incremental models with a composite `unique_key` write
//! their DELETE. DataFusion's IN takes a single column, so a condition of
//! this form that is one of a WHERE's conjuncts is written as the EXISTS it
//! means there: a row matches when some subquery row equals it column by
//! column. (Where the condition's NULL would differ from EXISTS' false —
//! under NOT, OR, or in a select list — it is left as it is, and refused.)

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, Ident, Query, SetExpr, Statement, TableAlias, TableAliasColumnDef,
    TableFactor, TableWithJoins, VisitMut, VisitorMut,
};

/// The derived table's name inside the EXISTS.
const ROWS: &str = "__lakegres_in_rows";

/// Rewrites each WHERE conjunct `(…) IN (subquery)` of `statement`.
pub(crate) fn rewrite(statement: &mut Statement) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<Self::Break> {
            if let SetExpr::Select(select) = query.body.as_mut() {
                if let Some(selection) = &mut select.selection {
                    conjuncts(selection);
                }
            }
            ControlFlow::Continue(())
        }
    }
    match statement {
        Statement::Delete(delete) => {
            if let Some(selection) = &mut delete.selection {
                conjuncts(selection);
            }
        }
        Statement::Update(update) => {
            if let Some(selection) = &mut update.selection {
                conjuncts(selection);
            }
        }
        _ => {}
    }
    let _ = statement.visit(&mut Rewrite);
}

/// Each conjunct of `expr` (through AND and parentheses).
fn conjuncts(expr: &mut Expr) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left);
            conjuncts(right);
        }
        Expr::Nested(inner) => conjuncts(inner),
        Expr::InSubquery {
            expr: row,
            subquery,
            negated: false,
        } => {
            let Expr::Tuple(values) = row.as_ref() else {
                return;
            };
            if let Some(exists) = exists(values, subquery) {
                *expr = exists;
            }
        }
        _ => {}
    }
}

/// `EXISTS (SELECT 1 FROM (subquery) AS rows(c1 …) WHERE rows.c1 = v1 AND …)`.
fn exists(values: &[Expr], subquery: &Query) -> Option<Expr> {
    let column = |i: usize| Ident::new(format!("c{}", i + 1));
    let matches = values
        .iter()
        .enumerate()
        .map(|(i, value)| Expr::BinaryOp {
            left: Box::new(Expr::CompoundIdentifier(vec![Ident::new(ROWS), column(i)])),
            op: BinaryOperator::Eq,
            right: Box::new(Expr::Nested(Box::new(value.clone()))),
        })
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::And,
            right: Box::new(b),
        });
    let rows = TableFactor::Derived {
        lateral: false,
        subquery: Box::new(subquery.clone()),
        sample: None,
        alias: Some(TableAlias {
            at: None,
            explicit: true,
            name: Ident::new(ROWS),
            columns: (0..values.len())
                .map(|i| TableAliasColumnDef::from_name(column(i).value))
                .collect(),
        }),
    };
    let mut query = crate::parser::query_template("SELECT 1").ok()?;
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    select.from = vec![TableWithJoins {
        relation: rows,
        joins: vec![],
    }];
    select.selection = matches;
    Some(Expr::Exists {
        subquery: query,
        negated: false,
    })
}
