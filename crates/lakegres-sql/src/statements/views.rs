//! Views: `CREATE [OR REPLACE] [TEMPORARY] VIEW`, `ALTER VIEW`, `DROP VIEW`,
//! and their expansion where a statement reads them.
//! <https://docs.databricks.com/sql/language-manual/sql-ref-syntax-ddl-create-view.html>
//!
//! A view keeps its query's text and the column names (and types) it had
//! when created, as Databricks does, and is expanded at the AST where a
//! statement reads it — as a subquery over the tables as they are at that
//! moment — so every statement that reads tables reads views too (queries,
//! joins, CTAS, `INSERT … SELECT` and MERGE sources, COPY TO).
//!
//! - A **temporary view** lives in its session, is gone at disconnect (and
//!   at `DISCARD ALL`), and shadows a table of the same name when named
//!   without a schema (or as `session.v`).
//! - A **stored view** lives in the warehouse (`lakegres_delta`'s
//!   `StoredView`): every server on it sees it. Unqualified table names in
//!   its query resolve in the schema current when it was created. A reader
//!   needs SELECT on the view, not on the tables it reads: those are read
//!   with the view owner's rights (Postgres' and Unity Catalog's rule),
//!   checked as the view is read, through private names of the statement,
//!   as time travel reads its tables.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use lakegres_delta::grants::Privilege;
use lakegres_delta::{DeltaProvider, StoredView, TableName, ViewColumn, ViewWrite};
use sqlparser::ast::{self, Ident, ObjectName, ObjectNamePart, TableAlias, TableFactor};

use crate::error::{class, Error, Result};
use crate::names::table_name;
use crate::output::{fixed, Output};
use crate::parser::{AlterChange, CreateView, Statement, ViewStatement};
use crate::session::Session;
use crate::statements::describe;
use crate::time_travel::{each_table_factor, read_private, register_private};

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
    /// For a temporary table, where its rows are.
    rows: Option<TempRows>,
}

/// The rows of a temporary table.
#[derive(Debug, Clone)]
struct TempRows {
    /// The private name they are registered under (the query reads them
    /// from there).
    private: String,
    /// Their columns.
    schema: datafusion::arrow::datatypes::SchemaRef,
}

/// Runs a view statement.
pub(crate) async fn run(session: &Session, statement: &ViewStatement) -> Result<Output> {
    match statement {
        ViewStatement::Create(create) if create.temporary => {
            create_temporary(session, create).await
        }
        ViewStatement::Create(create) => create_stored(session, create).await,
        ViewStatement::AlterQuery { name, query } => {
            let (name, mut view) = existing(session, name).await?;
            let columns = planned_columns(session, query, &[], &name.to_string()).await?;
            refuse_temporary_reads(session, query)?;
            view.sql = query.to_string();
            view.schema = session.current_schema();
            view.columns = columns;
            require_reads(session, &name, &view).await?;
            let catalog = session.engine().catalog();
            catalog.create_view(&name, &view, ViewWrite::Alter).await?;
            Ok(Output::Done(fixed("ALTER VIEW")))
        }
        ViewStatement::Rename { name, to } => {
            let (from, _) = existing(session, name).await?;
            let to = crate::names::rename_target(session, &from, to)?;
            session.engine().catalog().rename_view(&from, &to).await?;
            Ok(Output::Done(fixed("ALTER VIEW")))
        }
        ViewStatement::Comment {
            name,
            column,
            comment,
        } => {
            let (name, mut view) = existing(session, name).await?;
            match column {
                None => view.comment = comment.clone(),
                Some(column) => {
                    let Some(target) = view
                        .columns
                        .iter_mut()
                        .find(|c| c.name.eq_ignore_ascii_case(&column.value))
                    else {
                        return Err(lakegres_delta::Error::UnknownColumn {
                            table: name.to_string(),
                            column: column.value.clone(),
                        }
                        .into());
                    };
                    target.comment = comment.clone();
                }
            }
            let catalog = session.engine().catalog();
            catalog.create_view(&name, &view, ViewWrite::Alter).await?;
            Ok(Output::Done(fixed("COMMENT")))
        }
        ViewStatement::SetProperties { name, properties } => {
            let (name, mut view) = existing(session, name).await?;
            view.properties.extend(properties.iter().cloned());
            let catalog = session.engine().catalog();
            catalog.create_view(&name, &view, ViewWrite::Alter).await?;
            Ok(Output::Done(fixed("ALTER VIEW")))
        }
    }
}

/// 42501 unless the session's user may read everything `view`'s query
/// reads: who creates or alters a view's query must be able to run it
/// (reads of it then take its owner's rights, checked again each time).
async fn require_reads(session: &Session, name: &TableName, view: &StoredView) -> Result<()> {
    let principal = session.principal();
    if !principal.grants().enforced() || principal.is_admin() {
        return Ok(());
    }
    let as_writer = StoredView {
        owner: principal.user(),
        ..view.clone()
    };
    view_query(session, name, &as_writer, true, &mut PrivateNames::new(), 0).await?;
    Ok(())
}

/// A stored view that must exist (ALTER VIEW).
async fn existing(session: &Session, name: &ObjectName) -> Result<(TableName, StoredView)> {
    let name = table_name(session, name)?;
    let catalog = session.engine().catalog();
    match catalog.view(&name).await? {
        Some(view) => Ok((name, view)),
        None if catalog.table_exists(&name).await? => Err(Error::analysis(
            class::EXPECT_VIEW_NOT_TABLE,
            format!("{name} is a table: ALTER VIEW needs a view (use ALTER TABLE)"),
        )),
        None => Err(lakegres_delta::Error::TableNotFound {
            schema: name.schema,
            table: name.table,
        }
        .into()),
    }
}

/// The session's key for a new temporary view or table `name`; `None` when
/// one exists and IF NOT EXISTS says to leave it.
fn temporary_name(
    session: &Session,
    name: &ObjectName,
    kind: &str,
    or_replace: bool,
    if_not_exists: bool,
) -> Result<Option<String>> {
    let key = view_name(name).ok_or_else(|| {
        Error::analysis(
            class::TEMP_VIEW_NAME_TOO_MANY_NAME_PARTS,
            format!("CREATE TEMPORARY {kind} can only take a single-part name, got {name}"),
        )
    })?;
    let exists = session.state().temp_views.contains_key(&key);
    if exists && if_not_exists {
        return Ok(None);
    }
    if exists && !or_replace {
        return Err(Error::analysis(
            class::TABLE_OR_VIEW_ALREADY_EXISTS,
            format!("temporary {} {key} already exists", kind.to_lowercase()),
        ));
    }
    Ok(Some(key))
}

/// `CREATE [OR REPLACE] TEMPORARY VIEW [IF NOT EXISTS] v [(cols)] AS query`.
async fn create_temporary(session: &Session, view: &CreateView) -> Result<Output> {
    let Some(name) = temporary_name(
        session,
        &view.name,
        "VIEW",
        view.or_replace,
        view.if_not_exists,
    )?
    else {
        return Ok(Output::Done(fixed("CREATE VIEW")));
    };
    let columns = planned_columns(session, &view.query, &view.columns, &name).await?;
    session.state().temp_views.insert(
        name,
        TempView {
            query: view.query.as_ref().clone(),
            columns: columns.into_iter().map(|c| c.name).collect(),
            rows: None,
        },
    );
    Ok(Output::Done(fixed("CREATE VIEW")))
}

/// `CREATE TEMP[ORARY] TABLE t AS query | (columns)`, as dbt-postgres
/// stages the new rows of an incremental model: the query runs now and its
/// rows stay in this session's memory, read through a temporary view of
/// that name (so they shadow a table as temporary views do) until DROP
/// TABLE or disconnect. INSERT adds rows ([`insert_into_temporary_table`]).
pub(crate) async fn create_temporary_table(
    session: &Session,
    create: &ast::CreateTable,
) -> Result<Output> {
    let query = match create.query.as_deref() {
        Some(query) => query.clone(),
        None => empty_rows(&create.columns)?,
    };
    let Some(name) = temporary_name(
        session,
        &create.name,
        "TABLE",
        create.or_replace,
        create.if_not_exists,
    )?
    else {
        return Ok(Output::Done(fixed("CREATE TABLE")));
    };
    let with_columns = create.query.is_none();
    let plan = session
        .plan(&ast::Statement::Query(Box::new(query)))
        .await?;
    let schema = Arc::new(plan.schema().as_arrow().clone());
    let frame = session.context().execute_logical_plan(plan).await?;
    let batches = frame.collect().await?;
    let count: usize = batches.iter().map(|b| b.num_rows()).sum();
    let table = datafusion::datasource::MemTable::try_new(Arc::clone(&schema), vec![batches])?;
    let private = format!("temporary table {name}");
    register_private(session.time_travel(), &private, Arc::new(table))?;
    let read = parse_query(&format!(
        "SELECT * FROM {}.{} AS {}",
        crate::time_travel::TIME_TRAVEL_SCHEMA,
        Ident::with_quote('"', &private),
        Ident::with_quote('"', &name),
    ))?;
    session.state().temp_views.insert(
        name,
        TempView {
            query: read,
            columns: schema.fields().iter().map(|f| f.name().clone()).collect(),
            rows: Some(TempRows { private, schema }),
        },
    );
    if with_columns {
        return Ok(Output::Done(fixed("CREATE TABLE")));
    }
    Ok(Output::Done(fixed(&format!("SELECT {count}"))))
}

/// The query of no rows that a column list describes:
/// `SELECT CAST(NULL AS t) AS c, … WHERE false`.
fn empty_rows(columns: &[ast::ColumnDef]) -> Result<ast::Query> {
    if columns.is_empty() {
        return Err(Error::Syntax {
            message: "CREATE TEMPORARY TABLE needs columns or AS query".into(),
            position: None,
        });
    }
    let select: Vec<String> = columns
        .iter()
        .map(|c| format!("CAST(NULL AS {}) AS {}", c.data_type, c.name))
        .collect();
    parse_query(&format!("SELECT {} WHERE false", select.join(", ")))
}

/// The query `sql` is.
fn parse_query(sql: &str) -> Result<ast::Query> {
    match crate::parser::parse_sql(sql)?.pop() {
        Some(Statement::Sql(statement)) => match *statement {
            ast::Statement::Query(query) => Ok(*query),
            _ => Err(Error::Internal {
                message: format!("{sql} is no query"),
            }),
        },
        _ => Err(Error::Internal {
            message: format!("{sql} is no query"),
        }),
    }
}

/// `INSERT INTO t …` where `t` is this session's temporary table: the rows
/// go into its memory table (DataFusion's own INSERT into a `MemTable`),
/// never to the warehouse. None when `t` is no temporary table.
pub(crate) async fn insert_into_temporary_table(
    session: &Session,
    statement: &Statement,
    params: &Option<datafusion::common::ParamValues>,
) -> Result<Option<Output>> {
    let Statement::Sql(sql) = statement else {
        return Ok(None);
    };
    let ast::Statement::Insert(insert) = sql.as_ref() else {
        return Ok(None);
    };
    let ast::TableObject::TableName(name) = &insert.table else {
        return Ok(None);
    };
    let Some(key) = view_name(name) else {
        return Ok(None);
    };
    let Some(private) = session
        .state()
        .temp_views
        .get(&key)
        .and_then(|v| v.rows.as_ref().map(|r| r.private.clone()))
    else {
        return Ok(None);
    };
    if insert.overwrite || insert.partitioned.is_some() || insert.replace_into {
        return Err(Error::not_supported(
            "INSERT OVERWRITE, PARTITION or REPLACE into a temporary table",
        ));
    }
    let mut insert = insert.clone();
    insert.table = ast::TableObject::TableName(ObjectName::from(vec![
        ast::Ident::new(crate::time_travel::TIME_TRAVEL_SCHEMA),
        ast::Ident::with_quote('"', private),
    ]));
    insert.table_alias = None;
    let output = crate::statements::insert::run_sql(
        session,
        &ast::Statement::Insert(insert),
        params.clone(),
    )
    .await?;
    Ok(Some(output))
}

/// Rows for `information_schema.columns` of this session's temporary
/// tables, in schema `pg_temp` as Postgres lists them (dbt reads the
/// columns of the temporary table it stages an incremental run or a
/// snapshot in): `UNION ALL SELECT …` of pg_attribute's shape, to follow
/// the warehouse's columns; empty when the session has none.
pub(crate) fn temporary_columns_sql(session: &Session) -> String {
    let state = session.state();
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
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Drops the temporary table `name`, if the session has one: DROP TABLE
/// finds these before the warehouse's tables.
pub(crate) fn drop_temporary_table(session: &Session, name: &ObjectName) -> bool {
    let Some(key) = view_name(name) else {
        return false;
    };
    let private = {
        let mut state = session.state();
        let Some(private) = state
            .temp_views
            .get(&key)
            .and_then(|v| v.rows.as_ref().map(|r| r.private.clone()))
        else {
            return false;
        };
        state.temp_views.remove(&key);
        private
    };
    let _ = datafusion::catalog::SchemaProvider::deregister_table(
        session.time_travel().as_ref(),
        &private,
    );
    true
}

/// `CREATE [OR REPLACE] VIEW [IF NOT EXISTS] s.v [(cols)] [COMMENT …]
/// [TBLPROPERTIES …] AS query`, stored in the warehouse.
async fn create_stored(session: &Session, create: &CreateView) -> Result<Output> {
    let name = table_name(session, &create.name)?;
    let catalog = session.engine().catalog();
    if !catalog.schema_exists(&name.schema).await? {
        return Err(lakegres_delta::Error::SchemaNotFound {
            schema: name.schema,
        }
        .into());
    }
    if create.if_not_exists && catalog.view(&name).await?.is_some() {
        return Ok(Output::Done(fixed("CREATE VIEW")));
    }
    refuse_temporary_reads(session, &create.query)?;
    let columns =
        planned_columns(session, &create.query, &create.columns, &name.to_string()).await?;
    let view = StoredView {
        sql: create.query.to_string(),
        schema: session.current_schema(),
        columns,
        comment: create.comment.clone(),
        properties: create
            .properties
            .iter()
            .cloned()
            .collect::<BTreeMap<_, _>>(),
        owner: session.principal().user(),
        created_ms: chrono::Utc::now().timestamp_millis(),
    };
    require_reads(session, &name, &view).await?;
    let write = if create.or_replace {
        ViewWrite::CreateOrReplace
    } else {
        ViewWrite::Create
    };
    catalog.create_view(&name, &view, write).await?;
    Ok(Output::Done(fixed("CREATE VIEW")))
}

/// Plans `query` (it must plan now) and names its columns: the query's
/// own, or the view's column list (with comments).
async fn planned_columns(
    session: &Session,
    query: &ast::Query,
    declared: &[(Ident, Option<String>)],
    view: &str,
) -> Result<Vec<ViewColumn>> {
    let plan = crate::statements::ddl::plan_columns_of(session, query, "view").await?;
    let planned: Vec<(String, DataType)> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect();
    if !declared.is_empty() && declared.len() != planned.len() {
        return Err(Error::analysis(
            class::CREATE_VIEW_COLUMN_ARITY_MISMATCH,
            format!(
                "the view {view} names {} columns, its query has {}",
                declared.len(),
                planned.len()
            ),
        ));
    }
    let columns: Vec<ViewColumn> = planned
        .into_iter()
        .enumerate()
        .map(|(i, (name, data_type))| {
            let (name, comment) = match declared.get(i) {
                Some((ident, comment)) => (ident.value.clone(), comment.clone()),
                None => (name, None),
            };
            ViewColumn {
                name,
                arrow_type: data_type.to_string(),
                comment,
            }
        })
        .collect();
    let mut seen = HashSet::new();
    if let Some(twice) = columns.iter().find(|c| !seen.insert(c.name.to_lowercase())) {
        return Err(Error::analysis(
            class::COLUMN_ALREADY_EXISTS,
            format!("the view {view} has the column {} twice", twice.name),
        ));
    }
    Ok(columns)
}

/// A stored view may not read a temporary view: it would mean something
/// else in every other session (INVALID_TEMP_OBJ_REFERENCE).
fn refuse_temporary_reads(session: &Session, query: &ast::Query) -> Result<()> {
    let mut statement = ast::Statement::Query(Box::new(query.clone()));
    let ctes = cte_names(&statement);
    let mut temporary = None;
    each_table_factor(&mut statement, |factor| {
        if let TableFactor::Table { name, .. } = factor {
            let own_cte = name.0.len() == 1 && view_name(name).is_some_and(|n| ctes.contains(&n));
            if !own_cte && is_view(session, name) && temporary.is_none() {
                temporary = Some(name.to_string());
            }
        }
    });
    match temporary {
        Some(name) => Err(Error::analysis(
            class::INVALID_TEMP_OBJ_REFERENCE,
            format!("a view stored in the warehouse cannot read the temporary view {name}"),
        )),
        None => Ok(()),
    }
}

/// `DROP VIEW [IF EXISTS] v, …`: a temporary view first, as names resolve.
pub(crate) async fn drop(
    session: &Session,
    names: &[ObjectName],
    if_exists: bool,
) -> Result<Output> {
    let catalog = session.engine().catalog();
    for name in names {
        let removed = view_name(name).and_then(|n| session.state().temp_views.remove(&n));
        if removed.is_some() {
            continue;
        }
        let stored = table_name(session, name)?;
        if catalog.drop_view(&stored).await? {
            continue;
        }
        if catalog.table_exists(&stored).await? {
            return Err(Error::analysis(
                class::WRONG_COMMAND_FOR_OBJECT_TYPE,
                format!("{stored} is a table: use DROP TABLE"),
            ));
        }
        if !if_exists {
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

/// Whether `name` is a view, temporary or stored. A name the listing knows
/// as a table costs nothing; any other costs one read of storage.
pub(crate) async fn is_any_view(session: &Session, name: &ObjectName) -> Result<bool> {
    if is_view(session, name) {
        return Ok(true);
    }
    Ok(stored(session, name).await?.is_some())
}

/// `ALTER TABLE v RENAME TO w` and `COMMENT ON …` on a stored view, as the
/// view statement they mean. Postgres renames views with ALTER TABLE, and
/// dbt-postgres renames (and documents) every view model it builds that
/// way; Databricks would ask for ALTER VIEW.
pub(crate) async fn alter_table_as_view(
    session: &Session,
    statement: &Statement,
) -> Result<Option<Statement>> {
    let Statement::AlterTable(alter) = statement else {
        return Ok(None);
    };
    let name = alter.name.clone();
    let view = match &alter.change {
        AlterChange::RenameTo(to) => ViewStatement::Rename {
            name,
            to: to.clone(),
        },
        AlterChange::TableComment(comment) => ViewStatement::Comment {
            name,
            column: None,
            comment: comment.clone(),
        },
        AlterChange::ColumnComment { column, comment } => ViewStatement::Comment {
            name,
            column: Some(column.clone()),
            comment: Some(comment.clone()).filter(|c| !c.is_empty()),
        },
        _ => return Ok(None),
    };
    if stored(session, &alter.name).await?.is_none() {
        return Ok(None);
    }
    Ok(Some(Statement::View(Box::new(view))))
}

/// The stored view `name` resolves to, if it is one.
async fn stored(session: &Session, name: &ObjectName) -> Result<Option<(TableName, StoredView)>> {
    let Some(Ok(resolved)) = crate::names::resolve(session, &parts(name)) else {
        return Ok(None);
    };
    let catalog = session.engine().catalog();
    // Tables, and names outside the warehouse's schemas (pg_catalog,
    // information_schema, file formats), are no views.
    if catalog.cached_table_exists(&resolved) || !catalog.cached_schema_exists(&resolved.schema) {
        return Ok(None);
    }
    Ok(catalog.view(&resolved).await?.map(|v| (resolved, v)))
}

fn parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| p.as_ident().map(|i| i.value.clone()).unwrap_or_default())
        .collect()
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
        // `session.v` (Databricks), `pg_temp.t` (Postgres).
        [schema, view]
            if schema.eq_ignore_ascii_case(SESSION_SCHEMA)
                || schema.eq_ignore_ascii_case("pg_temp") =>
        {
            Some(view.to_lowercase())
        }
        _ => None,
    }
}

/// What one view reference becomes.
struct Expansion {
    query: ast::Query,
    columns: Vec<String>,
    alias: String,
}

/// Replaces every read of a view in `statement` by its query (views within
/// views too), except where a CTE of the same name is meant.
pub(crate) async fn expand(session: &Session, statement: &mut ast::Statement) -> Result<()> {
    drop_private_names(session)?;
    let mut private = PrivateNames::new();
    refuse_names(session, statement).await?;
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
            let temporary = view_name(&name).and_then(|key| {
                let state = session.state();
                state.temp_views.get(&key).map(|view| Expansion {
                    query: view.query.clone(),
                    columns: view.columns.clone(),
                    alias: key,
                })
            });
            if let Some(expansion) = temporary {
                found.insert(name, expansion);
            } else if let Some((resolved, view)) = stored(session, &name).await? {
                let query = stored_query(session, &resolved, &view, &mut private).await?;
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
            return check_named_tables(session, statement, &private).await;
        }
        each_table_factor(statement, |factor| {
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
            let Some(view) = found.get(name) else {
                return;
            };
            *factor = derived(view, alias.take());
        });
    }
    Err(Error::analysis(
        class::RECURSIVE_VIEW,
        format!("views nest more than {MAX_NESTING} deep (a view reads itself)"),
    ))
}

/// The privilege checks of the tables a statement names, before it is
/// planned: SELECT on each (every write needs SELECT too), so that an
/// unreadable table's columns, versions or files are never told apart by
/// their errors (42703 for a missing column came first). And EXPLAIN
/// shows a plan's statistics (min and max of each column) and files
/// (partition values in their paths), so of a table read through a view
/// it is for those who may read the table itself (42501).
async fn check_named_tables(
    session: &Session,
    statement: &mut ast::Statement,
    private: &PrivateNames,
) -> Result<()> {
    let principal = session.principal();
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
    let catalog = session.engine().catalog();
    for name in plain_tables(statement) {
        let private_name = name.0.first().and_then(|p| p.as_ident()).is_some_and(|i| {
            i.value
                .eq_ignore_ascii_case(crate::time_travel::TIME_TRAVEL_SCHEMA)
        });
        let cte = name.0.len() == 1 && view_name(&name).is_some_and(|n| ctes.contains(&n));
        if private_name || cte || is_view(session, &name) {
            continue;
        }
        let Ok(table) = table_name(session, &name) else {
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
fn derived(view: &Expansion, alias: Option<TableAlias>) -> TableFactor {
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
fn drop_private_names(session: &Session) -> Result<()> {
    use datafusion::catalog::SchemaProvider;
    let schema = session.time_travel().as_ref();
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
async fn refuse_names(session: &Session, statement: &mut ast::Statement) -> Result<()> {
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
        if is_any_view(session, &name).await? {
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
async fn stored_query(
    session: &Session,
    name: &TableName,
    view: &StoredView,
    private: &mut PrivateNames,
) -> Result<ast::Query> {
    let principal = session.principal();
    let checked = principal.grants().enforced() && !principal.is_admin();
    if checked {
        principal.require(Privilege::Select, name)?;
    }
    view_query(session, name, view, checked, private, 0).await
}

/// `view`'s query with its names bound as when it was created; when
/// `checked`, what it reads read with its owner's rights.
fn view_query<'a>(
    session: &'a Session,
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
            with_owner_rights(session, name, view, &mut statement, private, depth).await?;
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
async fn with_owner_rights(
    session: &Session,
    name: &TableName,
    view: &StoredView,
    statement: &mut ast::Statement,
    private: &mut PrivateNames,
    depth: usize,
) -> Result<()> {
    let grants = Arc::clone(session.principal().grants());
    let catalog = session.engine().catalog();
    let mut replacements = Vec::new();
    for table in plain_tables(statement) {
        if table.0.len() < 2 {
            replacements.push(None);
            continue;
        }
        let resolved = table_name(session, &table)?;
        let owner_may = grants.allows(&view.owner, Privilege::Select, &resolved);
        let refused = || {
            Error::Delta(lakegres_delta::Error::PermissionDenied {
                user: view.owner.clone(),
                privilege: Privilege::Select.name(),
                object: format!("table {resolved} (read by the view {name}, which it owns)"),
            })
        };
        match catalog.load_table(&resolved).await {
            Ok(loaded) => {
                if !owner_may {
                    return Err(refused());
                }
                if private.hidden.is_none()
                    && !grants.allows(&session.principal().user(), Privilege::Select, &resolved)
                {
                    private.hidden = Some(resolved.clone());
                }
                let provider =
                    DeltaProvider::try_new(resolved.clone(), loaded)?.read_through_view();
                let key = private.next(&resolved);
                register_private(session.time_travel(), &key, Arc::new(provider))?;
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
                let query =
                    view_query(session, &resolved, &inner, true, private, depth + 1).await?;
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
    nonce: String,
    next: usize,
    /// A table read through a view that the reader may not read itself.
    hidden: Option<TableName>,
}

/// The mark of a view's private name, by which the next statement drops it.
const VIEW_MARK: &str = "@view";

impl PrivateNames {
    fn new() -> Self {
        Self {
            nonce: uuid::Uuid::new_v4().simple().to_string(),
            next: 0,
            hidden: None,
        }
    }

    fn next(&mut self, table: &TableName) -> String {
        self.next += 1;
        format!(
            "{}.{}{VIEW_MARK}{}.{}",
            table.schema, table.table, self.next, self.nonce
        )
    }
}

/// What a table reference of a view's query becomes.
enum Replacement {
    /// A table, read through its private name.
    Table { private: String, alias: String },
    /// A view, replaced by its query.
    View(Box<Expansion>),
}

/// The names of the statement's plain table references (no arguments, no
/// time travel), in order.
fn plain_tables(statement: &mut ast::Statement) -> Vec<ObjectName> {
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
fn cte_names(statement: &ast::Statement) -> HashSet<String> {
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

/// The rows `DESCRIBE [EXTENDED] v` answers for a view (temporary or
/// stored), or `None` when `name` is no view.
pub(crate) async fn describe_rows(
    session: &Session,
    name: &ObjectName,
    extended: bool,
) -> Result<Option<Vec<(String, Option<String>, Option<String>)>>> {
    use lakegres_functions::cast::type_text;
    if let Some(key) = view_name(name) {
        let temporary = session.state().temp_views.get(&key).cloned();
        if let Some(view) = temporary {
            let plan = session
                .plan(&ast::Statement::Query(Box::new(view.query.clone())))
                .await?;
            let rows = view
                .columns
                .iter()
                .zip(plan.schema().fields())
                .map(|(c, f)| (c.clone(), Some(type_text(f.data_type())), None))
                .collect();
            return Ok(Some(rows));
        }
    }
    let Some((resolved, view)) = stored(session, name).await? else {
        return Ok(None);
    };
    let mut rows: Vec<(String, Option<String>, Option<String>)> = view
        .columns
        .iter()
        .map(|c| {
            let data_type = c.arrow_type.parse::<DataType>().unwrap_or(DataType::Utf8);
            (
                c.name.clone(),
                Some(type_text(&data_type)),
                c.comment.clone(),
            )
        })
        .collect();
    if extended {
        let created = describe::created_text(Some(view.created_ms));
        let columns: Vec<String> = view
            .columns
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect();
        let properties: Vec<String> = view
            .properties
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut detail = vec![
            ("Catalog", crate::session::CATALOG_NAME.to_string()),
            ("Database", resolved.schema.clone()),
            ("Table", resolved.table.clone()),
            ("Owner", view.owner.clone()),
            ("Created Time", created),
            ("Type", "VIEW".to_string()),
        ];
        if let Some(comment) = &view.comment {
            detail.push(("Comment", comment.clone()));
        }
        detail.extend([
            ("View Text", view.sql.clone()),
            ("View Original Text", view.sql.clone()),
            ("View Schema Mode", "BINDING".to_string()),
            (
                "View Catalog and Namespace",
                format!("{}.{}", crate::session::CATALOG_NAME, view.schema),
            ),
            (
                "View Query Output Columns",
                format!("[{}]", columns.join(", ")),
            ),
            ("Table Properties", format!("[{}]", properties.join(","))),
        ]);
        describe::push_detail(&mut rows, detail);
    }
    Ok(Some(rows))
}

/// `SHOW CREATE TABLE v` for a stored view, or `None` when `name` is none.
pub(crate) async fn show_create(session: &Session, name: &ObjectName) -> Result<Option<String>> {
    use crate::statements::detail::{full_name, quote_name, quote_string};
    let Some((resolved, view)) = stored(session, name).await? else {
        return Ok(None);
    };
    let columns: Vec<String> = view
        .columns
        .iter()
        .map(|c| match &c.comment {
            Some(comment) => format!(
                "  {} COMMENT {}",
                quote_name(&c.name),
                quote_string(comment)
            ),
            None => format!("  {}", quote_name(&c.name)),
        })
        .collect();
    let mut sql = format!(
        "CREATE VIEW {} (\n{})\n",
        full_name(&resolved),
        columns.join(",\n")
    );
    if let Some(comment) = &view.comment {
        sql.push_str(&format!("COMMENT {}\n", quote_string(comment)));
    }
    if !view.properties.is_empty() {
        let entries: Vec<String> = view
            .properties
            .iter()
            .map(|(k, v)| format!("  {} = {}", quote_string(k), quote_string(v)))
            .collect();
        sql.push_str(&format!("TBLPROPERTIES (\n{})\n", entries.join(",\n")));
    }
    sql.push_str(&format!("AS {}", view.sql));
    Ok(Some(sql))
}

/// The stored views of a schema whose names match `pattern`, sorted.
pub(crate) async fn stored_names(
    session: &Session,
    schema: &str,
    pattern: impl Fn(&str) -> bool,
) -> Result<Vec<String>> {
    Ok(session
        .engine()
        .catalog()
        .list_views(schema)
        .await?
        .into_iter()
        .filter(|v| pattern(v))
        .collect())
}
