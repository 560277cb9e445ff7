//! Temporary views: `CREATE [OR REPLACE] TEMP[ORARY] VIEW v [(cols)] AS
//! query`, `DROP VIEW [IF EXISTS] v`, `SHOW VIEWS`. A temporary view lives
//! in its session and is gone at disconnect (and at `DISCARD ALL`). It
//! keeps its query's text and the column names it had when created, as
//! Databricks does, and is expanded where a statement reads it — as a
//! subquery over the tables as they are at that moment — shadowing a table
//! of the same name when named without a schema (or as `session.v`).
//! <https://docs.databricks.com/sql/language-manual/sql-ref-syntax-ddl-create-view.html>

use sqlparser::ast::{self, Ident, ObjectName, ObjectNamePart, TableAlias, TableFactor};

use crate::error::{class, Error, Result};
use crate::output::{fixed, Output};
use crate::session::Session;

/// Views nest at most this deep (a view reading itself would not end).
const MAX_NESTING: usize = 32;

/// The schema name that qualifies a temporary view (`session.v`).
const SESSION_SCHEMA: &str = "session";

/// One temporary view.
#[derive(Debug, Clone)]
pub(crate) struct TempView {
    query: ast::Query,
    /// The names of its columns, fixed when it was created.
    columns: Vec<String>,
}

/// `CREATE [OR REPLACE] TEMPORARY VIEW [IF NOT EXISTS] v [(cols)] AS query`.
pub(crate) async fn create(session: &Session, view: &ast::CreateView) -> Result<Output> {
    if !view.temporary {
        return Err(Error::not_supported(
            "CREATE VIEW stored in the warehouse (not built yet); \
             CREATE TEMPORARY VIEW makes one for the session",
        ));
    }
    if view.materialized {
        return Err(Error::not_supported("CREATE MATERIALIZED VIEW"));
    }
    let name = view_name(&view.name).ok_or_else(|| {
        Error::analysis(
            class::TEMP_VIEW_NAME_TOO_MANY_NAME_PARTS,
            format!(
                "CREATE TEMPORARY VIEW can only take a single-part view name, got {}",
                view.name
            ),
        )
    })?;
    let exists = session.state().temp_views.contains_key(&name);
    if exists && view.if_not_exists {
        return Ok(Output::Done(fixed("CREATE VIEW")));
    }
    if exists && !view.or_replace {
        return Err(Error::analysis(
            class::TABLE_OR_VIEW_ALREADY_EXISTS,
            format!("temporary view {name} already exists"),
        ));
    }
    // The query must plan now; its columns are the view's.
    let plan = session
        .plan(&ast::Statement::Query(view.query.clone()))
        .await?;
    let planned: Vec<String> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let columns = if view.columns.is_empty() {
        planned
    } else if view.columns.len() == planned.len() {
        view.columns.iter().map(|c| c.name.value.clone()).collect()
    } else {
        return Err(Error::analysis(
            class::CREATE_VIEW_COLUMN_ARITY_MISMATCH,
            format!(
                "the view {name} names {} columns, its query has {}",
                view.columns.len(),
                planned.len()
            ),
        ));
    };
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = columns.iter().find(|c| !seen.insert(c.to_lowercase())) {
        return Err(Error::analysis(
            class::COLUMN_ALREADY_EXISTS,
            format!("the view {name} has the column {twice} twice"),
        ));
    }
    session.state().temp_views.insert(
        name,
        TempView {
            query: view.query.as_ref().clone(),
            columns,
        },
    );
    Ok(Output::Done(fixed("CREATE VIEW")))
}

/// `DROP VIEW [IF EXISTS] v, …`.
pub(crate) fn drop(session: &Session, names: &[ObjectName], if_exists: bool) -> Result<Output> {
    let mut state = session.state();
    for name in names {
        let removed = view_name(name).and_then(|n| state.temp_views.remove(&n));
        if removed.is_none() && !if_exists {
            return Err(Error::analysis(
                class::TABLE_OR_VIEW_NOT_FOUND,
                format!("view {name} does not exist"),
            ));
        }
    }
    Ok(Output::Done(fixed("DROP VIEW")))
}

/// The session's temporary views whose names match `pattern`, sorted.
pub(crate) fn names(session: &Session, pattern: impl Fn(&str) -> bool) -> Vec<String> {
    session
        .state()
        .temp_views
        .keys()
        .filter(|n| pattern(n))
        .cloned()
        .collect()
}

/// Whether `name`, as a statement writes it, is a temporary view.
pub(crate) fn is_view(session: &Session, name: &ObjectName) -> bool {
    view_name(name).is_some_and(|n| session.state().temp_views.contains_key(&n))
}

/// Whether a name given by its parts is a temporary view.
pub(crate) fn is_view_parts(session: &Session, parts: &[String]) -> bool {
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    view_key(&parts).is_some_and(|n| session.state().temp_views.contains_key(&n))
}

/// The view a name can be: `v` or `session.v`, lower case.
fn view_name(name: &ObjectName) -> Option<String> {
    let parts: Vec<&str> = name
        .0
        .iter()
        .filter_map(ObjectNamePart::as_ident)
        .map(|i| i.value.as_str())
        .collect();
    view_key(&parts)
}

fn view_key(parts: &[&str]) -> Option<String> {
    match parts {
        [view] => Some(view.to_lowercase()),
        [schema, view] if schema.eq_ignore_ascii_case(SESSION_SCHEMA) => Some(view.to_lowercase()),
        _ => None,
    }
}

/// Replaces every read of a temporary view in `statement` by its query
/// (views within views too), except where a CTE of the same name is meant.
pub(crate) fn expand(session: &Session, statement: &mut ast::Statement) -> Result<()> {
    let state = session.state();
    let views = &state.temp_views;
    if views.is_empty() {
        return Ok(());
    }
    let ctes = cte_names(statement);
    for _ in 0..MAX_NESTING {
        let mut expanded = false;
        crate::time_travel::each_table_factor(statement, |factor| {
            let TableFactor::Table {
                name,
                alias,
                args: None,
                version: None,
                ..
            } = factor
            else {
                return;
            };
            let Some(view_key) = view_name(name) else {
                return;
            };
            if name.0.len() == 1 && ctes.contains(&view_key) {
                return;
            }
            let Some(view) = views.get(&view_key) else {
                return;
            };
            let alias = match alias.take() {
                Some(mut alias) => {
                    if alias.columns.is_empty() {
                        alias.columns = column_defs(&view.columns);
                    }
                    alias
                }
                None => TableAlias {
                    explicit: true,
                    name: Ident::new(view_key.clone()),
                    columns: column_defs(&view.columns),
                    at: None,
                },
            };
            *factor = TableFactor::Derived {
                lateral: false,
                subquery: Box::new(view.query.clone()),
                alias: Some(alias),
                sample: None,
            };
            expanded = true;
        });
        if !expanded {
            return Ok(());
        }
    }
    Err(Error::analysis(
        class::RECURSIVE_VIEW,
        format!("views nest more than {MAX_NESTING} deep (a view reads itself)"),
    ))
}

fn column_defs(columns: &[String]) -> Vec<ast::TableAliasColumnDef> {
    columns
        .iter()
        .map(|c| ast::TableAliasColumnDef {
            name: Ident::with_quote('"', c.clone()),
            data_type: None,
        })
        .collect()
}

/// The names of the statement's CTEs, lower case.
fn cte_names(statement: &ast::Statement) -> std::collections::HashSet<String> {
    use sqlparser::ast::{Visit, Visitor};
    struct Ctes(std::collections::HashSet<String>);
    impl Visitor for Ctes {
        type Break = ();
        fn pre_visit_query(&mut self, query: &ast::Query) -> std::ops::ControlFlow<()> {
            if let Some(with) = &query.with {
                for cte in &with.cte_tables {
                    self.0.insert(cte.alias.name.value.to_lowercase());
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut ctes = Ctes(Default::default());
    let _ = statement.visit(&mut ctes);
    ctes.0
}
