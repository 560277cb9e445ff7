//! Session variables (`DECLARE VARIABLE`, `SET VAR`, `DROP TEMPORARY
//! VARIABLE`), `EXECUTE IMMEDIATE` and `IDENTIFIER(…)`.
//! <https://docs.databricks.com/sql/language-manual/sql-ref-variables.html>
//!
//! A variable belongs to its session and has the type it was declared with
//! (or its default's). An expression reads it by name (`v`, `session.v`,
//! `system.session.v`); as in Databricks a column of the same name wins:
//! the planner puts the variable's value in only where a name resolves to
//! no column (`plan.rs`), as it does for lateral column aliases.

use std::ops::ControlFlow;

use datafusion::arrow::array::Array;
use datafusion::common::ScalarValue;
use sqlparser::ast::{self, Expr, Ident, SelectItem, SetExpr, VisitMut, VisitorMut};

use crate::error::{class, Error, Result};
use crate::output::{fixed, Description, Output};
use crate::parser::{SetValues, Statement, VariableStatement};
use crate::session::Session;

/// A session variable.
#[derive(Debug, Clone)]
pub(crate) struct Variable {
    /// Its value, of the variable's type.
    value: ScalarValue,
    /// Its DEFAULT expression (cast to its type), evaluated again by
    /// `SET VAR v = DEFAULT`.
    default: String,
}

/// Runs a variable statement.
pub(crate) async fn run(session: &Session, statement: &VariableStatement) -> Result<Output> {
    match statement {
        VariableStatement::Declare {
            or_replace,
            name,
            data_type,
            default,
        } => {
            if !or_replace && session.state().variables.contains_key(name) {
                return Err(Error::analysis(
                    class::VARIABLE_ALREADY_EXISTS,
                    format!("the variable {name} already exists (use DECLARE OR REPLACE)"),
                ));
            }
            let value = match (data_type, default) {
                (Some(t), Some(d)) => format!("CAST(({d}) AS {t})"),
                (Some(t), None) => format!("CAST(NULL AS {t})"),
                (None, Some(d)) => d.to_string(),
                (None, None) => {
                    return Err(Error::analysis(
                        class::INVALID_SQL_SYNTAX,
                        format!("the variable {name} needs a type or a DEFAULT (VARIABLE_TYPE_OR_DEFAULT_REQUIRED)"),
                    ))
                }
            };
            let default = value;
            let value = evaluate(session, &format!("SELECT {default}"), 1)
                .await?
                .remove(0);
            session
                .state()
                .variables
                .insert(name.clone(), Variable { value, default });
            Ok(Output::Done(fixed("DECLARE VARIABLE")))
        }
        VariableStatement::Set { names, values } => {
            let types = names
                .iter()
                .map(|n| variable(session, n).map(|v| v.value.data_type()))
                .collect::<Result<Vec<_>>>()?;
            let query = match values {
                SetValues::Exprs(exprs) => {
                    if exprs.len() != names.len() {
                        return Err(arity(names.len(), exprs.len()));
                    }
                    let mut items = Vec::with_capacity(exprs.len());
                    for ((e, t), name) in exprs.iter().zip(&types).zip(names) {
                        let e = match e {
                            Expr::Identifier(id)
                                if id.quote_style.is_none()
                                    && id.value.eq_ignore_ascii_case("default") =>
                            {
                                variable(session, name)?.default
                            }
                            other => other.to_string(),
                        };
                        items.push(format!("lakegres_cast(({e}), '{t}')"));
                    }
                    format!("SELECT {}", items.join(", "))
                }
                SetValues::Query(query) => {
                    let items: Vec<String> = types
                        .iter()
                        .enumerate()
                        .map(|(i, t)| format!("lakegres_cast(column{}, '{t}')", i + 1))
                        .collect();
                    format!(
                        "SELECT {} FROM ({query}) AS assigned({})",
                        items.join(", "),
                        (1..=names.len())
                            .map(|i| format!("column{i}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            };
            let values = evaluate(session, &query, names.len()).await?;
            assign(session, names, values)?;
            Ok(Output::Done(fixed("SET VARIABLE")))
        }
        VariableStatement::Drop { name, if_exists } => {
            let removed = session.state().variables.remove(name);
            if removed.is_none() && !if_exists {
                return Err(not_found(name));
            }
            Ok(Output::Done(fixed("DROP VARIABLE")))
        }
        VariableStatement::ExecuteImmediate { sql, into, using } => {
            let inner = immediate(session, sql, using).await?;
            let output = Box::pin(session.execute(&inner, None)).await?;
            if into.is_empty() {
                return Ok(output);
            }
            let Output::Rows { stream, .. } = output else {
                return Err(Error::analysis(
                    class::INVALID_STATEMENT_FOR_EXECUTE_INTO,
                    "EXECUTE IMMEDIATE … INTO needs a query",
                ));
            };
            let batches: Vec<_> = futures::TryStreamExt::try_collect(stream).await?;
            let values = one_row(&batches, into.len())?;
            let types = into
                .iter()
                .map(|n| variable(session, n).map(|v| v.value.data_type()))
                .collect::<Result<Vec<_>>>()?;
            let values = values
                .into_iter()
                .zip(types)
                .map(|(v, t)| {
                    v.cast_to(&t).map_err(|e| {
                        Error::analysis(class::CAST_INVALID_INPUT, format!("EXECUTE INTO: {e}"))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            assign(session, into, values)?;
            Ok(Output::Done(fixed("EXECUTE IMMEDIATE")))
        }
    }
}

/// What the extended protocol's Describe reports: the rows of the
/// statement `EXECUTE IMMEDIATE` runs (without INTO).
pub(crate) async fn describe(
    session: &Session,
    statement: &VariableStatement,
) -> Result<Option<Description>> {
    match statement {
        VariableStatement::ExecuteImmediate { sql, into, using } if into.is_empty() => {
            let inner = immediate(session, sql, using).await?;
            Ok(Some(Box::pin(session.describe(&inner)).await?))
        }
        _ => Ok(None),
    }
}

/// The statement `EXECUTE IMMEDIATE` runs: its text, with each `?` (in
/// order) and `:name` marker replaced by the value given for it.
async fn immediate(
    session: &Session,
    sql: &Expr,
    using: &[(Expr, Option<String>)],
) -> Result<Statement> {
    let mut exprs = vec![format!("CAST(({sql}) AS STRING)")];
    exprs.extend(using.iter().map(|(e, _)| e.to_string()));
    let mut values = evaluate(
        session,
        &format!("SELECT {}", exprs.join(", ")),
        exprs.len(),
    )
    .await?
    .into_iter();
    let text = match values.next() {
        Some(ScalarValue::Utf8(Some(t)) | ScalarValue::LargeUtf8(Some(t))) => t,
        Some(ScalarValue::Utf8View(Some(t))) => t,
        _ => {
            return Err(Error::analysis(
                class::INVALID_STATEMENT_FOR_EXECUTE_INTO,
                "EXECUTE IMMEDIATE needs the statement's text (a string that is not NULL)",
            ))
        }
    };
    let args: Vec<(Option<&String>, String)> = using
        .iter()
        .zip(values)
        .map(|((_, name), value)| Ok((name.as_ref(), literal_sql(&value)?)))
        .collect::<Result<_>>()?;
    let text = bind_markers(&text, &args)?;
    let mut statements = crate::parser::parse_sql(&text)?;
    if statements.len() != 1 {
        return Err(Error::analysis(
            class::INVALID_STATEMENT_FOR_EXECUTE_INTO,
            format!(
                "EXECUTE IMMEDIATE runs one statement, the text has {}",
                statements.len()
            ),
        ));
    }
    Ok(statements.remove(0))
}

/// Replaces the markers of `text`: `?` by the unnamed arguments in order,
/// `:name` by the argument named so. Markers inside quotes are text.
fn bind_markers(text: &str, args: &[(Option<&String>, String)]) -> Result<String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = crate::parser::LakegresDialect::default();
    let tokens = Tokenizer::new(&dialect, text)
        .tokenize()
        .map_err(|e| Error::Syntax {
            message: e.to_string(),
            position: None,
        })?;
    let mut positional = args.iter().filter(|(n, _)| n.is_none()).map(|(_, v)| v);
    let named = |name: &str| {
        args.iter()
            .find(|(n, _)| n.is_some_and(|n| n.eq_ignore_ascii_case(name)))
            .map(|(_, v)| v.clone())
    };
    let mut out = String::with_capacity(text.len());
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match &token {
            Token::Placeholder(p) if p == "?" => {
                let value = positional.next().ok_or_else(|| {
                    Error::analysis(
                        class::UNBOUND_SQL_PARAMETER,
                        "a ? marker has no value in USING",
                    )
                })?;
                out.push_str(value);
            }
            Token::Placeholder(p) if p.starts_with(':') && p.len() > 1 => {
                let value = named(&p[1..]).ok_or_else(|| unbound(&p[1..]))?;
                out.push_str(&value);
            }
            Token::Colon => match tokens.peek() {
                Some(Token::Word(w)) if w.quote_style.is_none() => {
                    let value = named(&w.value).ok_or_else(|| unbound(&w.value))?;
                    out.push_str(&value);
                    tokens.next();
                }
                _ => out.push(':'),
            },
            other => out.push_str(&other.to_string()),
        }
    }
    Ok(out)
}

fn unbound(name: &str) -> Error {
    Error::analysis(
        class::UNBOUND_SQL_PARAMETER,
        format!("the marker :{name} has no value in USING"),
    )
}

/// A value as SQL text that evaluates to it, with its type.
fn literal_sql(value: &ScalarValue) -> Result<String> {
    Ok(literal(value)?.to_string())
}

/// A value as an expression of its own type.
fn literal(value: &ScalarValue) -> Result<Expr> {
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

/// Runs a one-row query and returns its `width` values (NULLs when it has
/// no row; more than one row is an error, as for a scalar subquery).
async fn evaluate(session: &Session, query: &str, width: usize) -> Result<Vec<ScalarValue>> {
    let statement = match crate::parser::parse_sql(query)?.pop() {
        Some(Statement::Sql(statement)) => *statement,
        _ => {
            return Err(Error::Internal {
                message: format!("not a query: {query}"),
            })
        }
    };
    let plan = session.plan(&statement).await?;
    let batches = session
        .context()
        .execute_logical_plan(plan)
        .await
        .map_err(Error::DataFusion)?
        .collect()
        .await
        .map_err(Error::DataFusion)?;
    one_row(&batches, width)
}

fn one_row(
    batches: &[datafusion::arrow::record_batch::RecordBatch],
    width: usize,
) -> Result<Vec<ScalarValue>> {
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if rows > 1 {
        return Err(Error::analysis(
            class::ROW_SUBQUERY_TOO_MANY_ROWS,
            format!("the query gives {rows} rows: a variable takes one"),
        ));
    }
    let Some(batch) = batches
        .iter()
        .find(|b| b.num_rows() == 1)
        .or(batches.first())
    else {
        return Ok(vec![ScalarValue::Null; width]);
    };
    if batch.num_columns() != width {
        return Err(arity(width, batch.num_columns()));
    }
    batch
        .columns()
        .iter()
        .map(|column| {
            if column.is_empty() {
                ScalarValue::try_from(column.data_type())
            } else {
                ScalarValue::try_from_array(column, 0)
            }
            .map_err(Error::DataFusion)
        })
        .collect()
}

fn arity(names: usize, values: usize) -> Error {
    Error::analysis(
        class::ASSIGNMENT_ARITY_MISMATCH,
        format!("{names} variables are assigned {values} values"),
    )
}

fn variable(session: &Session, name: &str) -> Result<Variable> {
    session
        .state()
        .variables
        .get(name)
        .cloned()
        .ok_or_else(|| not_found(name))
}

fn not_found(name: &str) -> Error {
    Error::analysis(
        class::UNRESOLVED_VARIABLE,
        format!("the variable {name} is not declared"),
    )
}

fn assign(session: &Session, names: &[String], values: Vec<ScalarValue>) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = names.iter().find(|n| !seen.insert(*n)) {
        return Err(Error::analysis(
            class::DUPLICATE_ASSIGNMENTS,
            format!("the variable {twice} is assigned twice"),
        ));
    }
    let mut state = session.state();
    for (name, value) in names.iter().zip(values) {
        let Some(old) = state.variables.get(name) else {
            return Err(not_found(name));
        };
        // A NULL keeps the variable's type.
        let value = if value.is_null() {
            ScalarValue::try_from(&old.value.data_type()).map_err(Error::DataFusion)?
        } else {
            value
        };
        let default = old.default.clone();
        state
            .variables
            .insert(name.clone(), Variable { value, default });
    }
    Ok(())
}

/// Puts the value of the variable `name` where the statement names it
/// without a qualifier (a name that resolved to no column). Whether it is
/// a variable.
pub(crate) fn inline(
    session: &Session,
    statement: &mut ast::Statement,
    name: &str,
) -> Result<bool> {
    let value = session.state().variables.get(&name.to_lowercase()).cloned();
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
pub(crate) fn values(session: &Session) -> Result<std::collections::HashMap<String, Expr>> {
    let variables: Vec<(String, Variable)> = session
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
    session: &Session,
    expr: &mut Expr,
    columns: &[String],
) -> Result<()> {
    let values = values(session)?;
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
pub(crate) fn inline_qualified(session: &Session, statement: &mut ast::Statement) -> Result<()> {
    let variables: Vec<(String, Variable)> = {
        let state = session.state();
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
fn replace(statement: &mut ast::Statement, value: &Expr, is_it: impl Fn(&[Ident]) -> bool) {
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

/// The name parts `IDENTIFIER(arg)` stands for: `arg` is a string
/// literal, a STRING variable, or `||` of those. `None` for another
/// argument (left to fail where it stands).
pub(crate) fn identifier_name(
    session: &Session,
    args: &[ast::FunctionArg],
) -> Result<Option<Vec<Ident>>> {
    fn text(session: &Session, arg: &Expr) -> Option<String> {
        match arg {
            Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => Some(s.clone()),
                _ => None,
            },
            Expr::Identifier(id) => {
                let state = session.state();
                match state
                    .variables
                    .get(&id.value.to_lowercase())
                    .map(|v| &v.value)
                {
                    Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s))) => {
                        Some(s.clone())
                    }
                    _ => None,
                }
            }
            Expr::Nested(inner) => text(session, inner),
            Expr::BinaryOp {
                left,
                op: ast::BinaryOperator::StringConcat,
                right,
            } => Some(text(session, left)? + &text(session, right)?),
            _ => None,
        }
    }
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = args else {
        return Ok(None);
    };
    let Some(text) = text(session, arg) else {
        return Ok(None);
    };
    let dialect = crate::parser::LakegresDialect::default();
    match sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_object_name(false))
    {
        Ok(name) => Ok(Some(
            name.0
                .iter()
                .filter_map(|p| p.as_ident().cloned())
                .collect(),
        )),
        Err(e) => Err(Error::analysis(
            class::INVALID_SQL_SYNTAX,
            format!("IDENTIFIER({text}) is not a name: {e}"),
        )),
    }
}

/// `IDENTIFIER('name')` (or of a string variable): the name, as a table
/// name in FROM and as a column name in expressions.
pub(crate) fn resolve_identifiers(session: &Session, statement: &mut ast::Statement) -> Result<()> {
    struct Names<'a> {
        session: &'a Session,
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
            match identifier_name(self.session, std::slice::from_ref(&variable))? {
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
            match identifier_name(self.session, args) {
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
                match crate::names::name_parts(self.session, relation) {
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
    let mut names = Names {
        session,
        failed: None,
    };
    let _ = statement.visit(&mut names);
    match names.failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
