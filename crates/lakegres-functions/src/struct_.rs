//! Struct functions: `struct(a, b)` names its fields after the columns it
//! is given (`col1`, `col2` … for other expressions), as Databricks does;
//! DataFusion's `named_struct` and `.field` access serve the rest
//! (<https://docs.databricks.com/sql/language-manual/functions/struct.html>).

use datafusion::logical_expr::ScalarUDF;
use sqlparser::ast::Expr;

use super::rewrite::{parse_expr, plain_args};

/// No functions of our own: see [`named_fields`].
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![]
}

/// `struct(a, t.b, 1)` as `named_struct('a', a, 'b', t.b, 'col3', 1)`.
pub(crate) fn named_fields(f: &sqlparser::ast::Function) -> Option<Expr> {
    let args = plain_args(f)?;
    if args.is_empty() {
        return None;
    }
    let pairs: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let name = argument_name(a).unwrap_or_else(|| format!("col{}", i + 1));
            format!("'{}', {a}", name.replace('\'', "''"))
        })
        .collect();
    parse_expr(&format!("named_struct({})", pairs.join(", ")))
}

/// The name Databricks gives a field made of an argument: a column's name.
pub(crate) fn argument_name(a: &Expr) -> Option<String> {
    match a {
        Expr::Identifier(id) => Some(id.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.clone()),
        _ => None,
    }
}
