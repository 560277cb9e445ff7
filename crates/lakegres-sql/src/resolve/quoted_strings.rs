//! `"active"` as Databricks reads it: a string. Postgres clients quote
//! names that way, so a double-quoted word is a name first, and a string
//! only when no column of that name is in scope (what Spark does with
//! `"…"` when `spark.sql.ansi.doubleQuotedIdentifiers` is off).

use std::ops::ControlFlow;

use sqlparser::ast::{self, Expr, Value, VisitMut, VisitorMut};

/// Reads the double-quoted name `name`, which the planner found as no
/// column, as a string wherever it stands as an expression. `columns` are
/// the names that were in scope: a name that differs from one only in case
/// is a misspelt column and stays an error, and so is one tested with
/// `IS [NOT] NULL` (as a string it would be a constant condition, which a
/// DELETE would take for every row).
pub(crate) fn inline(statement: &mut ast::Statement, name: &str, columns: &[String]) -> bool {
    if columns.iter().any(|c| c.eq_ignore_ascii_case(name)) {
        return false;
    }
    struct Quoted<'a> {
        name: &'a str,
        done: bool,
    }
    impl Quoted<'_> {
        fn is_name(&self, expr: &Expr) -> bool {
            matches!(expr, Expr::Identifier(ident)
                if ident.quote_style == Some('"') && ident.value == self.name)
        }
    }
    impl VisitorMut for Quoted<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            match expr {
                Expr::IsNull(inner) | Expr::IsNotNull(inner) if self.is_name(inner) => {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Identifier(ident) = expr {
                if ident.quote_style == Some('"') && ident.value == self.name {
                    *expr = Expr::value(Value::SingleQuotedString(ident.value.clone()));
                    self.done = true;
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut visitor = Quoted { name, done: false };
    // Tried on a copy: a name that must stay an error leaves the statement as it was.
    let mut tried = statement.clone();
    if tried.visit(&mut visitor).is_break() || !visitor.done {
        return false;
    }
    *statement = tried;
    true
}
