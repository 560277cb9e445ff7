//! Session variables where a statement reads them: `v`, `session.v`,
//! `system.session.v` and `IDENTIFIER(…)` replaced by their values. (The
//! variable statements themselves are in `statements/variables.rs`.)

use std::ops::ControlFlow;

use datafusion::common::ScalarValue;
use sqlparser::ast::{self, Expr, Ident, SelectItem, SetExpr, VisitMut, VisitorMut};

use crate::error::{class, Error, Result};
use crate::session_state::Variable;
use crate::statement_context::StatementContext;

/// A value as an expression of its own type.
pub(crate) fn literal(value: &ScalarValue) -> Result<Expr> {
    let unparsed = datafusion::sql::unparser::Unparser::default()
        .expr_to_sql(&datafusion::logical_expr::lit(value.clone()))
        .map_err(Error::DataFusion)?;
    let text = format!("lakegres_cast({unparsed}, '{}')", value.data_type());
    let dialect = crate::parser::LakegresDialect::default();
    sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| Error::Internal {
            message: format!("a variable's value as SQL: {e}"),
        })
}

pub(crate) fn not_found(name: &str) -> Error {
    Error::analysis(
        class::UNRESOLVED_VARIABLE,
        format!("the variable {name} is not declared"),
    )
}

/// Puts the value of the variable `name` where the statement names it
/// without a qualifier (a name that resolved to no column). Whether it is
/// a variable.
pub(crate) fn inline(
    cx: &StatementContext<'_>,
    statement: &mut ast::Statement,
    name: &str,
) -> Result<bool> {
    let value = cx.state().variables.get(&name.to_lowercase()).cloned();
    let Some(variable) = value else {
        return Ok(false);
    };
    let value = literal(&variable.value)?;
    replace(
        statement,
        &value,
        |parts| matches!(parts, [only] if only.value.eq_ignore_ascii_case(name)),
    );
    Ok(true)
}

/// The session's variables as expressions of their values, by lower-case
/// name: for statements that resolve names themselves (MERGE's clauses).
pub(crate) fn values(cx: &StatementContext<'_>) -> Result<std::collections::HashMap<String, Expr>> {
    let variables: Vec<(String, Variable)> = cx
        .state()
        .variables
        .iter()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    variables
        .into_iter()
        .map(|(name, variable)| Ok((name, literal(&variable.value)?)))
        .collect()
}

/// Puts the session's variables into `expr`, a condition a statement
/// resolves itself (REPLACE WHERE / ON): each `session.v`, and each bare
/// name that is none of `columns` (a column wins, as in Databricks).
pub(crate) fn inline_in_condition(
    cx: &StatementContext<'_>,
    expr: &mut Expr,
    columns: &[String],
) -> Result<()> {
    let values = values(cx)?;
    if values.is_empty() {
        return Ok(());
    }
    let _ = ast::visit_expressions_mut(expr, |e| {
        let name = match e {
            Expr::Identifier(id) if !columns.iter().any(|c| c.eq_ignore_ascii_case(&id.value)) => {
                Some(id.value.to_lowercase())
            }
            Expr::CompoundIdentifier(ids)
                if ids.len() == 2 && ids[0].value.eq_ignore_ascii_case("session") =>
            {
                Some(ids[1].value.to_lowercase())
            }
            _ => None,
        };
        if let Some(value) = name.and_then(|n| values.get(&n)) {
            *e = value.clone();
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(())
}

/// Puts in the values of variables named `session.v` or
/// `system.session.v`.
pub(crate) fn inline_qualified(
    cx: &StatementContext<'_>,
    statement: &mut ast::Statement,
) -> Result<()> {
    let variables: Vec<(String, Variable)> = {
        let state = cx.state();
        if state.variables.is_empty() {
            return Ok(());
        }
        state
            .variables
            .iter()
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect()
    };
    for (name, variable) in variables {
        let value = literal(&variable.value)?;
        replace(statement, &value, |parts| {
            let words: Vec<String> = parts.iter().map(|p| p.value.to_lowercase()).collect();
            matches!(words.as_slice(), [s, v] if s == "session" && *v == name)
                || matches!(words.as_slice(), [sys, s, v] if sys == "system" && s == "session" && *v == name)
        });
    }
    Ok(())
}

/// Replaces each name `is_it` accepts by `value`; a select item that is
/// only the name keeps it as its column name.
pub(crate) fn replace(
    statement: &mut ast::Statement,
    value: &Expr,
    is_it: impl Fn(&[Ident]) -> bool,
) {
    struct Replace<'a, F> {
        value: &'a Expr,
        is_it: F,
    }
    fn parts(expr: &Expr) -> Option<&[Ident]> {
        match expr {
            Expr::Identifier(id) => Some(std::slice::from_ref(id)),
            Expr::CompoundIdentifier(ids) => Some(ids),
            _ => None,
        }
    }
    impl<F: Fn(&[Ident]) -> bool> VisitorMut for Replace<'_, F> {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
            if let SetExpr::Select(select) = query.body.as_mut() {
                for item in &mut select.projection {
                    if let SelectItem::UnnamedExpr(expr) = item {
                        if let Some(name) = parts(expr).filter(|p| (self.is_it)(p)) {
                            let alias = name[name.len() - 1].clone();
                            *item = SelectItem::ExprWithAlias {
                                expr: self.value.clone(),
                                alias,
                            };
                        }
                    }
                }
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if parts(expr).is_some_and(|p| (self.is_it)(p)) {
                *expr = self.value.clone();
            }
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Replace { value, is_it });
}

/// `IDENTIFIER('name')` (or of a string variable): the name, as a table
/// name in FROM and as a column name in expressions.
pub(crate) fn resolve_identifiers(
    cx: &StatementContext<'_>,
    statement: &mut ast::Statement,
) -> Result<()> {
    struct Names<'a> {
        cx: &'a StatementContext<'a>,
        failed: Option<Error>,
    }
    /// `IDENTIFIER(v)(args)`, as the parser leaves it.
    fn is_call(name: &ast::ObjectName) -> bool {
        matches!(name.0.as_slice(),
            [ast::ObjectNamePart::Identifier(i)] if i.value.eq_ignore_ascii_case(crate::parser::IDENTIFIER_CALL))
    }
    impl Names<'_> {
        /// `IDENTIFIER_CALL(v, args)` as the call of the function `v` names.
        fn call(&self, f: &mut ast::Function) -> Result<()> {
            let ast::FunctionArguments::List(list) = &mut f.args else {
                return Ok(());
            };
            if list.args.is_empty() {
                return Ok(());
            }
            let variable = list.args.remove(0);
            match crate::names::identifier_name(self.cx, std::slice::from_ref(&variable))? {
                Some(parts) => {
                    f.name = ast::ObjectName::from(parts);
                    Ok(())
                }
                None => Err(Error::analysis(
                    class::INVALID_SQL_SYNTAX,
                    format!("IDENTIFIER({variable}) names no function: it takes a string or a STRING variable"),
                )),
            }
        }

        /// The name an `IDENTIFIER(…)` argument gives.
        fn name(&mut self, args: &[ast::FunctionArg]) -> Option<Vec<Ident>> {
            match crate::names::identifier_name(self.cx, args) {
                Ok(name) => name,
                Err(e) => {
                    self.failed = Some(e);
                    None
                }
            }
        }
    }
    fn is_identifier(name: &ast::ObjectName) -> bool {
        matches!(name.0.as_slice(), [ast::ObjectNamePart::Identifier(i)] if i.value.eq_ignore_ascii_case("identifier"))
    }
    impl VisitorMut for Names<'_> {
        type Break = ();
        fn pre_visit_relation(&mut self, relation: &mut ast::ObjectName) -> ControlFlow<()> {
            if relation
                .0
                .iter()
                .any(|p| matches!(p, ast::ObjectNamePart::Function(_)))
            {
                match crate::names::name_parts(self.cx, relation) {
                    Ok(parts) => {
                        *relation = ast::ObjectName::from(
                            parts.into_iter().map(Ident::new).collect::<Vec<_>>(),
                        )
                    }
                    Err(e) => {
                        self.failed = Some(e);
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &mut ast::TableFactor) -> ControlFlow<()> {
            if let ast::TableFactor::Table { name, args, .. } = factor {
                if is_identifier(name) {
                    if let Some(parts) = args.as_ref().and_then(|a| self.name(&a.args)) {
                        *name = ast::ObjectName::from(parts);
                        *args = None;
                    }
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = expr {
                if is_call(&f.name) {
                    return match self.call(f) {
                        Ok(()) => ControlFlow::Continue(()),
                        Err(e) => {
                            self.failed = Some(e);
                            ControlFlow::Break(())
                        }
                    };
                }
            }
            if let Expr::Function(f) = expr {
                if is_identifier(&f.name) {
                    if let ast::FunctionArguments::List(list) = &f.args {
                        if let Some(mut parts) = self.name(&list.args) {
                            *expr = if parts.len() == 1 {
                                Expr::Identifier(parts.remove(0))
                            } else {
                                Expr::CompoundIdentifier(parts)
                            };
                        }
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names { cx, failed: None };
    let _ = statement.visit(&mut names);
    match names.failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
