//! `SHOW [ALL|SYSTEM|USER] FUNCTIONS [[LIKE] 'pattern']` and
//! `DESCRIBE FUNCTION [EXTENDED] name`
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-syntax-aux-show-functions.html>,
//! <https://docs.databricks.com/sql/language-manual/sql-ref-syntax-aux-describe-function.html>).
//!
//! Both are parsed into queries over table functions that read the
//! function registry of the session planning them — the one that plans
//! calls — so what they list is exactly what can be called.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Result, ScalarValue};
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::Expr;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use crate::error::class;
use crate::parser::{eat_word, is_word, Statement};

const SHOW: &str = "lakegres_show_functions";
const DESCRIBE: &str = "lakegres_describe_function";

/// The table functions behind the statements.
pub(crate) fn table_functions() -> Vec<(&'static str, Arc<dyn TableFunctionImpl>)> {
    vec![
        (SHOW, Arc::new(ShowFunctions) as Arc<dyn TableFunctionImpl>),
        (DESCRIBE, Arc::new(DescribeFunction)),
    ]
}

/// Reads `SHOW FUNCTIONS …` or `DESCRIBE FUNCTION …` at the parser's
/// position, as the query that answers it.
pub(crate) fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let start = parser.index();
    let query = if eat_word(parser, "SHOW") {
        for scope in ["ALL", "SYSTEM", "USER"] {
            if is_word(&parser.peek_token().token, scope)
                && is_word(&parser.peek_nth_token(1).token, "FUNCTIONS")
            {
                parser.next_token();
            }
        }
        if !eat_word(parser, "FUNCTIONS") {
            crate::parser::rewind(parser, start);
            return Ok(None);
        }
        // `IN schema`: every function is built in, in every schema.
        if eat_word(parser, "IN") || eat_word(parser, "FROM") {
            parser.next_token();
        }
        let _ = eat_word(parser, "LIKE");
        let pattern = match parser.peek_token().token {
            Token::SingleQuotedString(p) => {
                parser.next_token();
                p
            }
            Token::Word(w) => {
                parser.next_token();
                w.value
            }
            _ => "*".to_string(),
        };
        format!(
            "SELECT function FROM {SHOW}('{}')",
            pattern.replace('\'', "''")
        )
    } else if eat_word(parser, "DESCRIBE") || eat_word(parser, "DESC") {
        if !eat_word(parser, "FUNCTION") {
            crate::parser::rewind(parser, start);
            return Ok(None);
        }
        let extended = eat_word(parser, "EXTENDED");
        let name = match parser.next_token().token {
            Token::Word(w) => w.value,
            Token::SingleQuotedString(s) => s,
            other => other.to_string(),
        };
        format!(
            "SELECT function_desc FROM {DESCRIBE}('{}', {extended})",
            name.replace('\'', "''")
        )
    } else {
        return Ok(None);
    };
    let dialect = crate::parser::LakegresDialect::default();
    let statement = Parser::new(&dialect)
        .try_with_sql(&query)?
        .parse_statement()?;
    Ok(Some(Statement::Sql(Box::new(statement))))
}

/// Hive-style patterns: `*` any characters, `|` alternatives, any case.
fn matches(pattern: &str, name: &str) -> bool {
    pattern.split('|').any(|alternative| {
        let regex = format!(
            "(?i)^{}$",
            alternative
                .trim()
                .split('*')
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join(".*")
        );
        regex::Regex::new(&regex).is_ok_and(|r| r.is_match(name))
    })
}

/// Internal helpers the rewrites call; not for users.
pub(crate) fn hidden(name: &str) -> bool {
    name.starts_with("lakegres_") || name == "[]" || name == "cast_to_string"
}

/// Every function name the session can plan, sorted.
fn names(session: &dyn Session) -> Vec<String> {
    let mut names: Vec<String> = session
        .scalar_functions()
        .keys()
        .chain(session.aggregate_functions().keys())
        .chain(session.window_functions().keys())
        .chain(session.higher_order_functions().keys())
        .cloned()
        .chain(
            super::generator::GENERATORS
                .iter()
                .map(|(g, _)| g.to_string()),
        )
        .chain(
            super::aggregate::REWRITTEN
                .iter()
                .chain(super::rewrite::REWRITTEN_SCALARS)
                .map(|(g, _)| g.to_string()),
        )
        .filter(|n| !hidden(n))
        .collect();
    names.sort();
    names.dedup();
    names
}

fn literal_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Literal(
            ScalarValue::Utf8(s) | ScalarValue::Utf8View(s) | ScalarValue::LargeUtf8(s),
            _,
        ) => s.clone(),
        Expr::Literal(ScalarValue::Boolean(b), _) => b.map(|b| b.to_string()),
        _ => None,
    }
}

fn one_column(name: &str, rows: Vec<String>) -> Result<Arc<dyn TableProvider>> {
    let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new(name, DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(StringArray::from(rows))])?;
    Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
}

#[derive(Debug)]
struct ShowFunctions;

impl TableFunctionImpl for ShowFunctions {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let pattern = args
            .exprs()
            .first()
            .and_then(literal_text)
            .unwrap_or_else(|| "*".to_string());
        let rows = names(args.session())
            .into_iter()
            .filter(|n| matches(&pattern, n))
            .collect();
        one_column("function", rows)
    }
}

#[derive(Debug)]
struct DescribeFunction;

impl TableFunctionImpl for DescribeFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let name = args
            .exprs()
            .first()
            .and_then(literal_text)
            .unwrap_or_default();
        let extended = args.exprs().get(1).and_then(literal_text).as_deref() == Some("true");
        let session = args.session();
        let key = name.to_lowercase();
        let generator = super::generator::GENERATORS.iter().find(|(g, _)| *g == key);
        let rewritten = super::aggregate::REWRITTEN.iter().find(|(g, _)| *g == key);
        let rewritten_scalar = super::rewrite::REWRITTEN_SCALARS
            .iter()
            .find(|(g, _)| *g == key);
        let (kind, usage, syntax) = if let Some(f) = session
            .scalar_functions()
            .get(&key)
            .filter(|_| !hidden(&key))
        {
            let doc = f.documentation();
            (
                "scalar",
                super::udf::description_of(f)
                    .map(str::to_string)
                    .or_else(|| doc.map(|d| format!("{} - {}", d.syntax_example, d.description))),
                doc.map(|d| d.sql_example.clone().unwrap_or_default()),
            )
        } else if let Some(f) = session.aggregate_functions().get(&key) {
            let doc = f.documentation();
            (
                "aggregate",
                super::aggregate::description_of(f)
                    .map(str::to_string)
                    .or_else(|| doc.map(|d| format!("{} - {}", d.syntax_example, d.description))),
                doc.map(|d| d.sql_example.clone().unwrap_or_default()),
            )
        } else if let Some(f) = session.window_functions().get(&key) {
            let doc = f.documentation();
            (
                "window",
                doc.map(|d| format!("{} - {}", d.syntax_example, d.description)),
                doc.map(|d| d.sql_example.clone().unwrap_or_default()),
            )
        } else if let Some(f) = session.higher_order_functions().get(&key) {
            let doc = f.documentation();
            (
                "higher-order",
                super::lambda::description_of(&key)
                    .map(str::to_string)
                    .or_else(|| doc.map(|d| format!("{} - {}", d.syntax_example, d.description))),
                doc.map(|d| d.sql_example.clone().unwrap_or_default()),
            )
        } else if let Some((_, description)) = generator {
            ("generator", Some(description.to_string()), None)
        } else if let Some((_, description)) = rewritten {
            ("aggregate", Some(description.to_string()), None)
        } else if let Some((_, description)) = rewritten_scalar {
            ("scalar", Some(description.to_string()), None)
        } else {
            return Err(DataFusionError::External(Box::new(
                crate::error::Error::analysis(
                    class::UNRESOLVED_ROUTINE,
                    format!("Cannot resolve routine `{name}` on search path [`system`.`builtin`]."),
                ),
            )));
        };
        let mut rows = vec![
            format!("Function: {key}"),
            format!("Class: lakegres.{kind}"),
            format!("Usage: {}", usage.unwrap_or_else(|| format!("{key}(...)"))),
        ];
        if extended {
            rows.push("Extended Usage:".to_string());
            if let Some(example) = syntax.filter(|s| !s.is_empty()) {
                rows.extend(example.lines().map(|l| format!("    {l}")));
            } else {
                rows.push("    No example.".to_string());
            }
        }
        one_column("function_desc", rows)
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns_are_hive_style() {
        assert!(matches("date*", "date_format"));
        assert!(matches("*json*|to_*", "to_date"));
        assert!(matches("ABS", "abs"));
        assert!(!matches("date*", "to_date"));
    }
}
