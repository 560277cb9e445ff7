//! Views where a statement reads them: a temporary view of the session or
//! a stored view of the warehouse, expanded at the AST as a subquery over
//! the tables as they are at that moment, the tables a stored view reads
//! read with its owner's rights through private names of the statement.
//! (The view statements themselves are in `statements/views.rs`.)

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lakegres_delta::grants::Privilege;
use lakegres_delta::{DeltaProvider, StoredView, TableName};
use sqlparser::ast::{self, Ident, ObjectName, ObjectNamePart, TableAlias, TableFactor};

use crate::error::{class, Error, Result};
use crate::names::table_name;
use crate::parser::each_table_factor;
use crate::session_state::view_name;
use crate::statement_context::StatementContext;
use crate::time_travel::{read_private, register_private};

/// Views nest at most this deep (a view reading itself would not end).
pub(crate) const MAX_NESTING: usize = 32;

/// Rows for `information_schema.columns` of this session's temporary
/// tables, in schema `pg_temp` as Postgres lists them (dbt reads the
/// columns of the temporary table it stages an incremental run or a
/// snapshot in): `UNION ALL SELECT …` of pg_attribute's shape, to follow
/// the warehouse's columns; empty when the session has none.
pub(crate) fn temporary_columns_sql(cx: &StatementContext<'_>) -> String {
    let state = cx.state();
    let mut sql = String::new();
    for (name, rows) in state
        .temp_views
        .iter()
        .filter_map(|(name, view)| Some((name, view.rows.as_ref()?)))
    {
        for (i, field) in rows.schema.fields().iter().enumerate() {
            let (typid, typmod) = crate::pg_catalog::attribute_type(field.data_type());
            sql.push_str(&format!(
                " UNION ALL SELECT 'pg_temp', {table}, {column}, {position}, {notnull}, \
                 {typid}, {typmod}",
                table = quote_literal(name),
                column = quote_literal(field.name()),
                position = i + 1,
                notnull = !field.is_nullable(),
            ));
        }
    }
    sql
}

/// `'text'` with its quotes doubled.
pub(crate) fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The session's temporary views whose names match `pattern`, sorted.
pub(crate) fn names(cx: &StatementContext<'_>, pattern: impl Fn(&str) -> bool) -> Vec<String> {
    cx.state()
        .temp_views
        .keys()
        .filter(|n| pattern(n))
        .cloned()
        .collect()
}

/// Whether `name` is a view, temporary or stored. A name the listing knows
/// as a table costs nothing; any other costs one read of storage.
pub(crate) async fn is_any_view(cx: &StatementContext<'_>, name: &ObjectName) -> Result<bool> {
    if cx.state().has_temp_view(name) {
        return Ok(true);
    }
    Ok(stored(cx, name).await?.is_some())
}

/// The stored view `name` resolves to, if it is one.
pub(crate) async fn stored(
    cx: &StatementContext<'_>,
    name: &ObjectName,
) -> Result<Option<(TableName, StoredView)>> {
    let Some(Ok(resolved)) = crate::names::resolve(cx, &parts(name)) else {
        return Ok(None);
    };
    let catalog = cx.catalog();
    // Tables, and names outside the warehouse's schemas (pg_catalog,
    // information_schema, file formats), are no views.
    if catalog.cached_table_exists(&resolved) || !catalog.cached_schema_exists(&resolved.schema) {
        return Ok(None);
    }
    Ok(catalog.view(&resolved).await?.map(|v| (resolved, v)))
}

pub(crate) fn parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| p.as_ident().map(|i| i.value.clone()).unwrap_or_default())
        .collect()
}

/// What one view reference becomes.
pub(crate) struct Expansion {
    pub(crate) query: ast::Query,
    pub(crate) columns: Vec<String>,
    pub(crate) alias: String,
}

/// Replaces every read of a view in `statement` by its query (views within
/// views too), except where a CTE of the same name is meant.
pub(crate) async fn expand(
    cx: &StatementContext<'_>,
    statement: &mut ast::Statement,
) -> Result<()> {
    drop_private_names(cx)?;
    let mut private = PrivateNames::new();
    refuse_names(cx, statement).await?;
    for _ in 0..MAX_NESTING {
        let ctes = cte_names(statement);
        let mut candidates: Vec<ObjectName> = Vec::new();
        for name in plain_tables(statement) {
            let own_cte = name.0.len() == 1 && view_name(&name).is_some_and(|n| ctes.contains(&n));
            if !own_cte && !candidates.contains(&name) {
                candidates.push(name);
            }
        }
        let mut found: HashMap<ObjectName, Expansion> = HashMap::new();
        for name in candidates {
            let temporary = view_name(&name).and_then(|key| temporary_view(cx, &key));
            if let Some(expansion) = temporary {
                found.insert(name, expansion);
            } else if let Some((resolved, view)) = stored(cx, &name).await? {
                let query = stored_query(cx, &resolved, &view, &mut private).await?;
                found.insert(
                    name,
                    Expansion {
                        query,
                        columns: view.columns.iter().map(|c| c.name.clone()).collect(),
                        alias: resolved.table,
                    },
                );
            }
        }
        if found.is_empty() {
            return check_named_tables(cx, statement, &private).await;
        }
        splice(statement, &found);
    }
    Err(Error::analysis(
        class::RECURSIVE_VIEW,
        format!("views nest more than {MAX_NESTING} deep (a view reads itself)"),
    ))
}

/// Each read of a view of `found` in `statement` replaced by its query.
fn splice(statement: &mut ast::Statement, found: &HashMap<ObjectName, Expansion>) {
    each_table_factor(statement, |factor| {
        let Some((name, alias)) = plain_reference(factor) else {
            return;
        };
        if let Some(view) = found.get(name) {
            let alias = alias.take();
            *factor = derived(view, alias);
        }
    });
}

/// The name and alias of a table reference that is a plain name (no
/// table function arguments, no time travel): what views replace.
fn plain_reference(factor: &mut TableFactor) -> Option<(&mut ObjectName, &mut Option<TableAlias>)> {
    match factor {
        TableFactor::Table {
            name,
            alias,
            args: None,
            version: None,
            ..
        } => Some((name, alias)),
        _ => None,
    }
}

/// The temporary view `key` with the temporary views its query reads
/// expanded in the view's own scope: a CTE of the statement reading it
/// does not stand for a view its query names (`WITH t AS (…) SELECT *
/// FROM v` where `v` reads a view `t`).
fn temporary_view(cx: &StatementContext<'_>, key: &str) -> Option<Expansion> {
    let (query, columns) = {
        let state = cx.state();
        let view = state.temp_views.get(key)?;
        (view.query.clone(), view.columns.clone())
    };
    let mut statement = ast::Statement::Query(Box::new(query));
    for _ in 0..MAX_NESTING {
        let ctes = cte_names(&statement);
        let mut found: HashMap<ObjectName, Expansion> = HashMap::new();
        for name in plain_tables(&mut statement) {
            let Some(inner) = view_name(&name) else {
                continue;
            };
            if (name.0.len() == 1 && ctes.contains(&inner)) || found.contains_key(&name) {
                continue;
            }
            let state = cx.state();
            if let Some(view) = state.temp_views.get(&inner) {
                let expansion = Expansion {
                    query: view.query.clone(),
                    columns: view.columns.clone(),
                    alias: inner,
                };
                found.insert(name, expansion);
            }
        }
        if found.is_empty() {
            break;
        }
        splice(&mut statement, &found);
    }
    let ast::Statement::Query(query) = statement else {
        return None;
    };
    Some(Expansion {
        query: *query,
        columns,
        alias: key.to_string(),
    })
}

/// The privilege checks of the tables a statement names, before it is
/// planned: SELECT on each (every write needs SELECT too), so that an
/// unreadable table's columns, versions or files are never told apart by
/// their errors (42703 for a missing column came first). And EXPLAIN
/// shows a plan's statistics (min and max of each column) and files
/// (partition values in their paths), so of a table read through a view
/// it is for those who may read the table itself (42501).
pub(crate) async fn check_named_tables(
    cx: &StatementContext<'_>,
    statement: &mut ast::Statement,
    private: &PrivateNames,
) -> Result<()> {
    let principal = cx.principal();
    if !principal.grants().enforced() || principal.is_admin() {
        return Ok(());
    }
    let explain = matches!(
        statement,
        ast::Statement::Explain { .. } | ast::Statement::ExplainTable { .. }
    );
    if let (true, Some(table)) = (explain, &private.hidden) {
        return Err(Error::Delta(lakegres_delta::Error::PermissionDenied {
            user: principal.user(),
            privilege: Privilege::Select.name(),
            object: format!(
                "table {table} (EXPLAIN of a view shows the statistics and files of what it reads)"
            ),
        }));
    }
    let ctes = cte_names(statement);
    let catalog = cx.catalog();
    for name in plain_tables(statement) {
        let private_name = name.0.first().and_then(|p| p.as_ident()).is_some_and(|i| {
            i.value
                .eq_ignore_ascii_case(crate::time_travel::TIME_TRAVEL_SCHEMA)
        });
        let cte = name.0.len() == 1 && view_name(&name).is_some_and(|n| ctes.contains(&n));
        if private_name || cte || cx.state().has_temp_view(&name) {
            continue;
        }
        let Ok(table) = table_name(cx, &name) else {
            continue;
        };
        if catalog.table_exists(&table).await? {
            principal.require(Privilege::Select, &table)?;
        }
    }
    Ok(())
}

/// The subquery a view's reference becomes: the view's query under the
/// reference's alias (or the view's name), with the view's columns.
pub(crate) fn derived(view: &Expansion, alias: Option<TableAlias>) -> TableFactor {
    let alias = match alias {
        Some(mut alias) => {
            if alias.columns.is_empty() {
                alias.columns = column_defs(&view.columns);
            }
            alias
        }
        None => TableAlias {
            explicit: true,
            name: Ident::new(view.alias.clone()),
            columns: column_defs(&view.columns),
            at: None,
        },
    };
    TableFactor::Derived {
        lateral: false,
        subquery: Box::new(view.query.clone()),
        alias: Some(alias),
        sample: None,
    }
}

/// Drops the private names the session's earlier statements read views'
/// tables by ([`PrivateNames`]).
pub(crate) fn drop_private_names(cx: &StatementContext<'_>) -> Result<()> {
    use datafusion::catalog::SchemaProvider;
    let schema = cx.time_travel().as_ref();
    for name in schema.table_names() {
        if name.contains(VIEW_MARK) {
            schema.deregister_table(&name).map_err(Error::DataFusion)?;
        }
    }
    Ok(())
}

/// Names a statement may not use, found in one walk: the hidden schema of
/// time-travelled tables and views' tables is the server's (a statement
/// that names it is told no such table exists); and a view has no history,
/// so `v VERSION AS OF n` is refused, as Databricks refuses it, rather
/// than reported as a missing table.
pub(crate) async fn refuse_names(
    cx: &StatementContext<'_>,
    statement: &mut ast::Statement,
) -> Result<()> {
    let mut private = None;
    let mut travelled = Vec::new();
    each_table_factor(statement, |factor| {
        let TableFactor::Table { name, version, .. } = factor else {
            return;
        };
        let in_private_schema = name.0.iter().rev().skip(1).any(|part| {
            part.as_ident().is_some_and(|i| {
                i.value
                    .eq_ignore_ascii_case(crate::time_travel::TIME_TRAVEL_SCHEMA)
            })
        });
        if in_private_schema && private.is_none() {
            private = Some(name.clone());
        }
        if version.is_some() {
            travelled.push(name.clone());
        }
    });
    if let Some(name) = private {
        return Err(Error::analysis(
            class::TABLE_OR_VIEW_NOT_FOUND,
            format!("table or view {name} does not exist"),
        ));
    }
    for name in travelled {
        if is_any_view(cx, &name).await? {
            return Err(Error::analysis(
                class::DELTA_UNSUPPORTED_TIME_TRAVEL_VIEWS,
                format!("{name} is a view: time travel reads tables only"),
            ));
        }
    }
    Ok(())
}

/// A stored view's query, ready to stand where the view is named: its
/// unqualified table names qualified with the view's schema (a CTE's name
/// stays the CTE's) and, when privileges are checked, the reader's SELECT
/// on the view checked and what the view reads read with its owner's
/// rights ([`with_owner_rights`]).
pub(crate) async fn stored_query(
    cx: &StatementContext<'_>,
    name: &TableName,
    view: &StoredView,
    private: &mut PrivateNames,
) -> Result<ast::Query> {
    let principal = cx.principal();
    let checked = principal.grants().enforced() && !principal.is_admin();
    if checked {
        principal.require(Privilege::Select, name)?;
    }
    view_query(cx, name, view, checked, private, 0).await
}

/// `view`'s query with its names bound as when it was created; when
/// `checked`, what it reads read with its owner's rights.
pub(crate) fn view_query<'a>(
    cx: &'a StatementContext<'a>,
    name: &'a TableName,
    view: &'a StoredView,
    checked: bool,
    private: &'a mut PrivateNames,
    depth: usize,
) -> futures::future::BoxFuture<'a, Result<ast::Query>> {
    Box::pin(async move {
        if depth >= MAX_NESTING {
            return Err(Error::analysis(
                class::RECURSIVE_VIEW,
                format!("views nest more than {MAX_NESTING} deep (a view reads itself)"),
            ));
        }
        let mut statement = match crate::parser::parse_sql(&view.sql)?.pop() {
            Some(crate::parser::Statement::Sql(statement))
                if matches!(statement.as_ref(), ast::Statement::Query(_)) =>
            {
                *statement
            }
            _ => {
                return Err(Error::Internal {
                    message: format!("the stored view {name} does not hold a query"),
                })
            }
        };
        let ctes = cte_names(&statement);
        each_table_factor(&mut statement, |factor| {
            if let TableFactor::Table { name: table, .. } = factor {
                if let [ObjectNamePart::Identifier(only)] = table.0.as_slice() {
                    if !ctes.contains(&only.value.to_lowercase()) {
                        table
                            .0
                            .insert(0, ObjectNamePart::Identifier(Ident::new(&view.schema)));
                    }
                }
            }
        });
        if checked {
            with_owner_rights(cx, name, view, &mut statement, private, depth).await?;
        }
        match statement {
            ast::Statement::Query(query) => Ok(*query),
            _ => Err(Error::Internal {
                message: format!("the stored view {name} does not hold a query"),
            }),
        }
    })
}

/// What a view's query reads, read with the rights of the view's owner
/// (Postgres' and Unity Catalog's rule): each table the owner may SELECT
/// is pointed at a private copy that reads without the reader's
/// privileges, each view the owner may SELECT is replaced by its own query
/// read with its own owner's rights, and anything the owner may not read
/// fails the statement (42501) — checked as the view is read, so a revoke
/// takes effect at once. A single-part name left in the query is one of
/// its CTEs ([`view_query`] qualified the others) and stays as it is.
pub(crate) async fn with_owner_rights(
    cx: &StatementContext<'_>,
    name: &TableName,
    view: &StoredView,
    statement: &mut ast::Statement,
    private: &mut PrivateNames,
    depth: usize,
) -> Result<()> {
    let grants = Arc::clone(cx.principal().grants());
    let catalog = cx.catalog();
    let mut replacements = Vec::new();
    for table in plain_tables(statement) {
        if table.0.len() < 2 {
            replacements.push(None);
            continue;
        }
        let resolved = table_name(cx, &table)?;
        let owner_may = grants.allows(&view.owner, Privilege::Select, &resolved);
        let refused = || {
            Error::Delta(lakegres_delta::Error::PermissionDenied {
                user: view.owner.clone(),
                privilege: Privilege::Select.name(),
                object: format!("table {resolved} (read by the view {name}, which it owns)"),
            })
        };
        match cx.load_table(&resolved).await {
            Ok(loaded) => {
                if !owner_may {
                    return Err(refused());
                }
                if private.hidden.is_none()
                    && !grants.allows(&cx.principal().user(), Privilege::Select, &resolved)
                {
                    private.hidden = Some(resolved.clone());
                }
                let provider =
                    DeltaProvider::try_new(resolved.clone(), loaded)?.read_through_view();
                let key = private.next(&resolved);
                register_private(cx.time_travel(), &key, Arc::new(provider))?;
                replacements.push(Some(Replacement::Table {
                    private: key,
                    alias: resolved.table,
                }));
            }
            Err(lakegres_delta::Error::TableNotFound { .. }) => {
                let Some(inner) = catalog.view(&resolved).await? else {
                    // Neither: the planner reports the missing table.
                    replacements.push(None);
                    continue;
                };
                if !owner_may {
                    return Err(refused());
                }
                let query = view_query(cx, &resolved, &inner, true, private, depth + 1).await?;
                replacements.push(Some(Replacement::View(Box::new(Expansion {
                    query,
                    columns: inner.columns.iter().map(|c| c.name.clone()).collect(),
                    alias: resolved.table,
                }))));
            }
            Err(e) => return Err(e.into()),
        }
    }
    let mut replacements = replacements.into_iter();
    each_table_factor(statement, |factor| {
        let Some((name, alias)) = plain_reference(factor) else {
            return;
        };
        match replacements.next().flatten() {
            Some(Replacement::Table { private, alias: a }) => {
                read_private(name, alias, private, &a)
            }
            Some(Replacement::View(view)) => *factor = derived(&view, alias.take()),
            None => {}
        }
    });
    Ok(())
}

/// The private names one statement reads a view's tables by: fresh for
/// each statement (a random part no reader can know in advance, though
/// EXPLAIN shows it), and dropped when the next statement expands its
/// views, so no statement reaches a table under another's name.
pub(crate) struct PrivateNames {
    pub(crate) nonce: String,
    pub(crate) next: usize,
    /// A table read through a view that the reader may not read itself.
    pub(crate) hidden: Option<TableName>,
}

/// The mark of a view's private name, by which the next statement drops it.
pub(crate) const VIEW_MARK: &str = "@view";

impl PrivateNames {
    pub(crate) fn new() -> Self {
        Self {
            nonce: uuid::Uuid::new_v4().simple().to_string(),
            next: 0,
            hidden: None,
        }
    }

    pub(crate) fn next(&mut self, table: &TableName) -> String {
        self.next += 1;
        format!(
            "{}.{}{VIEW_MARK}{}.{}",
            table.schema, table.table, self.next, self.nonce
        )
    }
}

/// What a table reference of a view's query becomes.
pub(crate) enum Replacement {
    /// A table, read through its private name.
    Table { private: String, alias: String },
    /// A view, replaced by its query.
    View(Box<Expansion>),
}

/// The names of the statement's plain table references (no arguments, no
/// time travel), in order.
pub(crate) fn plain_tables(statement: &mut ast::Statement) -> Vec<ObjectName> {
    let mut tables = Vec::new();
    each_table_factor(statement, |factor| {
        if let TableFactor::Table {
            name,
            args: None,
            version: None,
            ..
        } = factor
        {
            tables.push(name.clone());
        }
    });
    tables
}

pub(crate) fn column_defs(columns: &[String]) -> Vec<ast::TableAliasColumnDef> {
    columns
        .iter()
        .map(|c| ast::TableAliasColumnDef {
            name: Ident::with_quote('"', c.clone()),
            data_type: None,
        })
        .collect()
}

/// The names of the statement's CTEs, lower case.
pub(crate) fn cte_names(statement: &ast::Statement) -> HashSet<String> {
    use sqlparser::ast::{Visit, Visitor};
    struct Ctes(HashSet<String>);
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
