//! `SHOW [ALL|SYSTEM|USER] FUNCTIONS [[LIKE] 'pattern']` and
//! `DESCRIBE FUNCTION [EXTENDED] name`
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-syntax-aux-show-functions.html>,
//! <https://docs.databricks.com/sql/language-manual/sql-ref-syntax-aux-describe-function.html>).
//!
//! Both are parsed (by lakegres-sql's parser) into queries over the table
//! functions here, which read the function registry of the session planning
//! them — the one that plans calls — so what they list is exactly what can
//! be called.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Result, ScalarValue};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Expr;

use crate::error::{df, FunctionError};

/// The table function that lists the functions: `SHOW FUNCTIONS` is
/// `SELECT function FROM lakegres_show_functions('pattern')`.
pub const SHOW: &str = "lakegres_show_functions";
/// The table function that describes one function: `DESCRIBE FUNCTION
/// [EXTENDED] f` is `SELECT function_desc FROM
/// lakegres_describe_function('f', extended)`.
pub const DESCRIBE: &str = "lakegres_describe_function";

/// The table functions behind the statements.
pub(crate) fn table_functions() -> Vec<(&'static str, Arc<dyn TableFunctionImpl>)> {
    vec![
        (SHOW, Arc::new(ShowFunctions) as Arc<dyn TableFunctionImpl>),
        (DESCRIBE, Arc::new(DescribeFunction)),
    ]
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
            return Err(df(FunctionError::UnresolvedRoutine { name }));
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
