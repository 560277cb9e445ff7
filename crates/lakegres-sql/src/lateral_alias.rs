//! Lateral column aliases: in Databricks a select list may use an alias an
//! earlier item of the same list defines (`SELECT a + 1 AS b, b * 2 AS c`),
//! when no column of that name exists. DataFusion does not resolve them;
//! when planning fails on an unknown name, the planner inlines the earlier
//! item's expression and plans again (`plan.rs`).
//! <https://docs.databricks.com/sql/language-manual/sql-ref-name-resolution.html>

use std::ops::ControlFlow;

use sqlparser::ast::{self, Expr, SelectItem, SetExpr, VisitMut, VisitorMut};

/// Replaces, in every select list of `statement`, the uses of `name` that
/// follow the item aliased `name` by that item's expression. Whether any
/// was replaced.
pub(crate) fn inline(statement: &mut ast::Statement, name: &str) -> bool {
    struct Inline<'a> {
        name: &'a str,
        done: bool,
    }
    impl VisitorMut for Inline<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
            if let SetExpr::Select(select) = query.body.as_mut() {
                self.done |= inline_in(&mut select.projection, self.name);
            }
            ControlFlow::Continue(())
        }
    }
    let mut visitor = Inline { name, done: false };
    let _ = statement.visit(&mut visitor);
    visitor.done
}

fn inline_in(projection: &mut [SelectItem], name: &str) -> bool {
    let Some(at) = projection.iter().position(|item| {
        matches!(item, SelectItem::ExprWithAlias { alias, .. } if alias.value.eq_ignore_ascii_case(name))
    }) else {
        return false;
    };
    let SelectItem::ExprWithAlias { expr: defined, .. } = &projection[at] else {
        return false;
    };
    let defined = Expr::Nested(Box::new(defined.clone()));
    let mut done = false;
    for item in &mut projection[at + 1..] {
        let expr = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => continue,
        };
        let _ = ast::visit_expressions_mut(expr, |e| {
            if matches!(e, Expr::Identifier(i) if i.value.eq_ignore_ascii_case(name)) {
                *e = defined.clone();
                done = true;
            }
            ControlFlow::<()>::Continue(())
        });
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{parse_sql, Statement};

    fn sql(text: &str) -> ast::Statement {
        match parse_sql(text).unwrap().pop().unwrap() {
            Statement::Sql(s) => *s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_later_item_gets_the_earlier_expression() {
        let mut s = sql("SELECT a + 1 AS b, b * 2 AS c FROM t");
        assert!(inline(&mut s, "b"));
        assert_eq!(s.to_string(), "SELECT a + 1 AS b, (a + 1) * 2 AS c FROM t");
    }

    #[test]
    fn chains_inline_in_any_order() {
        let mut s = sql("SELECT a AS x, x + 1 AS y, y + 1 AS z FROM t");
        assert!(inline(&mut s, "y"));
        assert!(inline(&mut s, "x"));
        assert_eq!(
            s.to_string(),
            "SELECT a AS x, (a) + 1 AS y, ((a) + 1) + 1 AS z FROM t"
        );
    }

    #[test]
    fn an_earlier_use_or_an_unknown_name_is_left_alone() {
        let mut s = sql("SELECT b, a AS b FROM t");
        assert!(!inline(&mut s, "b"));
        let mut s = sql("SELECT a AS x, y FROM t");
        assert!(!inline(&mut s, "y"));
    }
}
