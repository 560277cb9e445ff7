//! The one resolver of table names: `table` (in the session's schema),
//! `schema.table`, and `catalog.schema.table` where the catalog is this
//! warehouse — `lakegres`, or the database name the client connected with
//! (a dbt profile's `dbname`, which it writes into every three-part name).

use lakegres_delta::TableName;
use sqlparser::ast::ObjectName;

use crate::error::{Error, Result};
use crate::session::{Session, CATALOG_NAME};

/// Resolves a possibly qualified table name against the session.
pub(crate) fn table_name(session: &Session, name: &ObjectName) -> Result<TableName> {
    let parts = name_parts(session, name)?;
    resolve(session, &parts).ok_or_else(|| Error::Syntax {
        message: format!("invalid table name {name}"),
        position: None,
    })?
}

/// `db.s.t` as `lakegres.s.t` in a statement DataFusion plans, where `db`
/// is the database the client connected to (the catalog DataFusion knows is
/// `lakegres`): a client's three-part names name this warehouse.
pub(crate) fn client_catalog_names(session: &Session, statement: &mut sqlparser::ast::Statement) {
    let Some(database) = session.database() else {
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
pub(crate) fn name_parts(session: &Session, name: &ObjectName) -> Result<Vec<String>> {
    let mut parts = Vec::with_capacity(name.0.len());
    for part in &name.0 {
        match part {
            sqlparser::ast::ObjectNamePart::Function(f) => {
                let resolved = crate::statements::variables::identifier_name(session, &f.args)?
                    .ok_or_else(|| Error::Syntax {
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
    session: &Session,
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
        _ => table_name(session, to),
    }
}

/// [`table_name`] over the name's parts; `None` when they do not name a
/// table of this warehouse (too many parts, another catalog).
pub(crate) fn resolve(session: &Session, parts: &[String]) -> Option<Result<TableName>> {
    let (schema, table) = match parts {
        [table] => (session.current_schema(), table.clone()),
        [schema, table] => (schema.clone(), table.clone()),
        [catalog, schema, table] if is_this_catalog(session, catalog) => {
            (schema.clone(), table.clone())
        }
        _ => return None,
    };
    Some(TableName::new(&schema, &table).map_err(Error::from))
}

/// Whether `name` names this warehouse as a catalog.
fn is_this_catalog(session: &Session, name: &str) -> bool {
    name.eq_ignore_ascii_case(CATALOG_NAME)
        || session
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
