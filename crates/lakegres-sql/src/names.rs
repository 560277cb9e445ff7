//! The one resolver of table names: `table` (in the session's schema),
//! `schema.table`, and `catalog.schema.table` where the catalog is this
//! warehouse — `lakegres`, or the database name the client connected with
//! (a dbt profile's `dbname`, which it writes into every three-part name).

use lakegres_delta::TableName;
use sqlparser::ast::ObjectName;

use crate::error::{Error, Result};
use crate::statement_context::StatementContext;

use crate::CATALOG_NAME;

/// Resolves a possibly qualified table name against the session.
pub(crate) fn table_name(cx: &StatementContext<'_>, name: &ObjectName) -> Result<TableName> {
    let parts = name_parts(cx, name)?;
    resolve(cx, &parts).ok_or_else(|| Error::Syntax {
        message: format!("invalid table name {name}"),
        position: None,
    })?
}

/// `db.s.t` as `lakegres.s.t` in a statement DataFusion plans, where `db`
/// is the database the client connected to (the catalog DataFusion knows is
/// `lakegres`): a client's three-part names name this warehouse.
pub(crate) fn client_catalog_names(
    cx: &StatementContext<'_>,
    statement: &mut sqlparser::ast::Statement,
) {
    let Some(database) = cx.database() else {
        return;
    };
    if database.eq_ignore_ascii_case(CATALOG_NAME) {
        return;
    }
    let _ = sqlparser::ast::visit_relations_mut(statement, |name| {
        if let [first, _, _] = name.0.as_mut_slice() {
            if first
                .as_ident()
                .is_some_and(|i| i.value.eq_ignore_ascii_case(&database))
            {
                *first = sqlparser::ast::ObjectNamePart::Identifier(sqlparser::ast::Ident::new(
                    CATALOG_NAME,
                ));
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// The parts of a name as written, with `IDENTIFIER(…)` (Databricks' name
/// from a string or variable) resolved: `IDENTIFIER('s.t')` is two parts.
pub(crate) fn name_parts(cx: &StatementContext<'_>, name: &ObjectName) -> Result<Vec<String>> {
    let mut parts = Vec::with_capacity(name.0.len());
    for part in &name.0 {
        match part {
            sqlparser::ast::ObjectNamePart::Function(f) => {
                let resolved = identifier_name(cx, &f.args)?.ok_or_else(|| Error::Syntax {
                    message: format!(
                        "{part}: IDENTIFIER takes a string, a STRING variable or || of those"
                    ),
                    position: None,
                })?;
                parts.extend(resolved.into_iter().map(|i| i.value));
            }
            other => parts.push(
                other
                    .as_ident()
                    .map(|i| i.value.clone())
                    .unwrap_or_default(),
            ),
        }
    }
    Ok(parts)
}

/// The new name of `ALTER TABLE|VIEW from RENAME TO to`: a bare name stays
/// in `from`'s schema, as in Databricks (and Postgres, where RENAME TO
/// takes no schema at all), rather than moving to the current one.
pub(crate) fn rename_target(
    cx: &StatementContext<'_>,
    from: &TableName,
    to: &ObjectName,
) -> Result<TableName> {
    match to.0.as_slice() {
        [part] => {
            let table = part
                .as_ident()
                .map(|i| i.value.as_str())
                .unwrap_or_default();
            Ok(TableName::new(&from.schema, table)?)
        }
        _ => table_name(cx, to),
    }
}

/// [`table_name`] over the name's parts; `None` when they do not name a
/// table of this warehouse (too many parts, another catalog).
pub(crate) fn resolve(cx: &StatementContext<'_>, parts: &[String]) -> Option<Result<TableName>> {
    let (schema, table) = match parts {
        [table] => (cx.current_schema(), table.clone()),
        [schema, table] => (schema.clone(), table.clone()),
        [catalog, schema, table] if is_this_catalog(cx, catalog) => (schema.clone(), table.clone()),
        _ => return None,
    };
    Some(TableName::new(&schema, &table).map_err(Error::from))
}

/// Whether `name` names this warehouse as a catalog.
fn is_this_catalog(cx: &StatementContext<'_>, name: &str) -> bool {
    name.eq_ignore_ascii_case(CATALOG_NAME)
        || cx
            .database()
            .is_some_and(|db| db.eq_ignore_ascii_case(name))
}

/// The last part of a possibly qualified name.
pub(crate) fn object_leaf(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}

/// The name parts `IDENTIFIER(arg)` stands for: `arg` is a string
/// literal, a STRING variable, or `||` of those. `None` for another
/// argument (left to fail where it stands).
pub(crate) fn identifier_name(
    cx: &StatementContext<'_>,
    args: &[sqlparser::ast::FunctionArg],
) -> Result<Option<Vec<sqlparser::ast::Ident>>> {
    fn text(cx: &StatementContext<'_>, arg: &sqlparser::ast::Expr) -> Option<String> {
        match arg {
            sqlparser::ast::Expr::Value(v) => match &v.value {
                sqlparser::ast::Value::SingleQuotedString(s) => Some(s.clone()),
                _ => None,
            },
            sqlparser::ast::Expr::Identifier(id) => {
                let state = cx.state();
                match state
                    .variables
                    .get(&id.value.to_lowercase())
                    .map(|v| &v.value)
                {
                    Some(
                        datafusion::common::ScalarValue::Utf8(Some(s))
                        | datafusion::common::ScalarValue::Utf8View(Some(s)),
                    ) => Some(s.clone()),
                    _ => None,
                }
            }
            sqlparser::ast::Expr::Nested(inner) => text(cx, inner),
            sqlparser::ast::Expr::BinaryOp {
                left,
                op: sqlparser::ast::BinaryOperator::StringConcat,
                right,
            } => Some(text(cx, left)? + &text(cx, right)?),
            _ => None,
        }
    }
    let [sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(arg))] = args
    else {
        return Ok(None);
    };
    let Some(text) = text(cx, arg) else {
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
            crate::error::class::INVALID_SQL_SYNTAX,
            format!("IDENTIFIER({text}) is not a name: {e}"),
        )),
    }
}
