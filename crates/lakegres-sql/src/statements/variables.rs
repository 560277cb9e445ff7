//! Session variables (`DECLARE VARIABLE`, `SET VAR`, `DROP TEMPORARY
//! VARIABLE`), `EXECUTE IMMEDIATE` and `IDENTIFIER(…)`.
//! <https://docs.databricks.com/sql/language-manual/sql-ref-variables.html>
//!
//! A variable belongs to its session and has the type it was declared with
//! (or its default's). An expression reads it by name (`v`, `session.v`,
//! `system.session.v`); as in Databricks a column of the same name wins:
//! the planner puts the variable's value in only where a name resolves to
//! no column (`plan.rs`), as it does for lateral column aliases.

use datafusion::arrow::array::Array;
use datafusion::common::ScalarValue;
use sqlparser::ast::Expr;

use crate::error::{class, Error, Result};
use crate::output::{fixed, Description, Output};
use crate::parser::{SetValues, Statement, VariableStatement};
use crate::resolve::variables::{literal, not_found};
use crate::session_state::Variable;
use crate::statement_context::StatementContext;

/// Runs a variable statement.
pub(crate) async fn run(
    cx: &StatementContext<'_>,
    statement: &VariableStatement,
) -> Result<Output> {
    match statement {
        VariableStatement::Declare {
            or_replace,
            name,
            data_type,
            default,
        } => {
            if !or_replace && cx.state().variables.contains_key(name) {
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
            let value = evaluate(cx, &format!("SELECT {default}"), 1)
                .await?
                .remove(0);
            cx.state()
                .variables
                .insert(name.clone(), Variable { value, default });
            Ok(Output::Done(fixed("DECLARE VARIABLE")))
        }
        VariableStatement::Set { names, values } => {
            let types = names
                .iter()
                .map(|n| variable(cx, n).map(|v| v.value.data_type()))
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
                                variable(cx, name)?.default
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
            let values = evaluate(cx, &query, names.len()).await?;
            assign(cx, names, values)?;
            Ok(Output::Done(fixed("SET VARIABLE")))
        }
        VariableStatement::Drop { name, if_exists } => {
            let removed = cx.state().variables.remove(name);
            if removed.is_none() && !if_exists {
                return Err(not_found(name));
            }
            Ok(Output::Done(fixed("DROP VARIABLE")))
        }
        VariableStatement::ExecuteImmediate { sql, into, using } => {
            let inner = immediate(cx, sql, using).await?;
            let output = cx.nested.execute(&inner, None).await?;
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
                .map(|n| variable(cx, n).map(|v| v.value.data_type()))
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
            assign(cx, into, values)?;
            Ok(Output::Done(fixed("EXECUTE IMMEDIATE")))
        }
    }
}

/// What the extended protocol's Describe reports: the rows of the
/// statement `EXECUTE IMMEDIATE` runs (without INTO).
pub(crate) async fn describe(
    cx: &StatementContext<'_>,
    statement: &VariableStatement,
) -> Result<Option<Description>> {
    match statement {
        VariableStatement::ExecuteImmediate { sql, into, using } if into.is_empty() => {
            let inner = immediate(cx, sql, using).await?;
            Ok(Some(cx.nested.describe(&inner).await?))
        }
        _ => Ok(None),
    }
}

/// The statement `EXECUTE IMMEDIATE` runs: its text, with each `?` (in
/// order) and `:name` marker replaced by the value given for it.
async fn immediate(
    cx: &StatementContext<'_>,
    sql: &Expr,
    using: &[(Expr, Option<String>)],
) -> Result<Statement> {
    let mut exprs = vec![format!("CAST(({sql}) AS STRING)")];
    exprs.extend(using.iter().map(|(e, _)| e.to_string()));
    let mut values = evaluate(cx, &format!("SELECT {}", exprs.join(", ")), exprs.len())
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
    // The text's literals are read as the session reads them; the text
    // with values in place is rendered with Postgres' (`''` only).
    let text = bind_markers(&text, cx.settings().string_literals(), &args)?;
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
fn bind_markers(
    text: &str,
    strings: crate::parser::StringLiterals,
    args: &[(Option<&String>, String)],
) -> Result<String> {
    use sqlparser::tokenizer::Token;
    let tokens = crate::parser::tokenize(text, strings)
        .map_err(|e| Error::Syntax {
            message: e.to_string(),
            position: None,
        })?
        .into_iter()
        .map(|t| t.token);
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

/// Runs a one-row query and returns its `width` values (NULLs when it has
/// no row; more than one row is an error, as for a scalar subquery).
async fn evaluate(
    cx: &StatementContext<'_>,
    query: &str,
    width: usize,
) -> Result<Vec<ScalarValue>> {
    let statement = match crate::parser::parse_sql(query)?.pop() {
        Some(Statement::Sql(statement)) => *statement,
        _ => {
            return Err(Error::Internal {
                message: format!("not a query: {query}"),
            })
        }
    };
    let plan = cx.plan(&statement).await?;
    let batches = cx
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

fn variable(cx: &StatementContext<'_>, name: &str) -> Result<Variable> {
    cx.state()
        .variables
        .get(name)
        .cloned()
        .ok_or_else(|| not_found(name))
}

fn assign(cx: &StatementContext<'_>, names: &[String], values: Vec<ScalarValue>) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = names.iter().find(|n| !seen.insert(*n)) {
        return Err(Error::analysis(
            class::DUPLICATE_ASSIGNMENTS,
            format!("the variable {twice} is assigned twice"),
        ));
    }
    let mut state = cx.state();
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
