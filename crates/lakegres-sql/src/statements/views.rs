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

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use lakegres_delta::{StoredView, TableName, ViewColumn, ViewWrite};
use sqlparser::ast::{self, Ident, ObjectName, TableFactor};

use crate::error::{class, Error, Result};
use crate::names::table_name;
use crate::output::{fixed, Output};
use crate::parser::each_table_factor;
use crate::parser::{AlterChange, CreateView, Statement, ViewStatement};
use crate::resolve::views::{cte_names, stored, view_query, PrivateNames};
use crate::session_state::{view_name, TempRows, TempView};
use crate::statement_context::StatementContext;
use crate::statements::describe;
use crate::time_travel::register_private;

/// Runs a view statement.
pub(crate) async fn run(cx: &StatementContext<'_>, statement: &ViewStatement) -> Result<Output> {
    match statement {
        ViewStatement::Create(create) if create.temporary => create_temporary(cx, create).await,
        ViewStatement::Create(create) => create_stored(cx, create).await,
        ViewStatement::AlterQuery { name, query } => {
            let (name, mut view) = existing(cx, name).await?;
            let columns = planned_columns(cx, query, &[], &name.to_string()).await?;
            refuse_temporary_reads(cx, query)?;
            view.sql = query.to_string();
            view.schema = cx.current_schema();
            view.columns = columns;
            require_reads(cx, &name, &view).await?;
            let catalog = cx.catalog();
            catalog.create_view(&name, &view, ViewWrite::Alter).await?;
            Ok(Output::Done(fixed("ALTER VIEW")))
        }
        ViewStatement::Rename { name, to } => {
            let (from, _) = existing(cx, name).await?;
            let to = crate::names::rename_target(cx, &from, to)?;
            cx.catalog().rename_view(&from, &to).await?;
            Ok(Output::Done(fixed("ALTER VIEW")))
        }
        ViewStatement::Comment {
            name,
            column,
            comment,
        } => {
            let (name, mut view) = existing(cx, name).await?;
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
            let catalog = cx.catalog();
            catalog.create_view(&name, &view, ViewWrite::Alter).await?;
            Ok(Output::Done(fixed("COMMENT")))
        }
        ViewStatement::SetProperties { name, properties } => {
            let (name, mut view) = existing(cx, name).await?;
            view.properties.extend(properties.iter().cloned());
            let catalog = cx.catalog();
            catalog.create_view(&name, &view, ViewWrite::Alter).await?;
            Ok(Output::Done(fixed("ALTER VIEW")))
        }
    }
}

/// 42501 unless the session's user may read everything `view`'s query
/// reads: who creates or alters a view's query must be able to run it
/// (reads of it then take its owner's rights, checked again each time).
async fn require_reads(
    cx: &StatementContext<'_>,
    name: &TableName,
    view: &StoredView,
) -> Result<()> {
    let principal = cx.principal();
    if !principal.grants().enforced() || principal.is_admin() {
        return Ok(());
    }
    let as_writer = StoredView {
        owner: principal.user(),
        ..view.clone()
    };
    view_query(cx, name, &as_writer, true, &mut PrivateNames::new(), 0).await?;
    Ok(())
}

/// A stored view that must exist (ALTER VIEW).
async fn existing(cx: &StatementContext<'_>, name: &ObjectName) -> Result<(TableName, StoredView)> {
    let name = table_name(cx, name)?;
    let catalog = cx.catalog();
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
    cx: &StatementContext<'_>,
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
    let exists = cx.state().temp_views.contains_key(&key);
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
async fn create_temporary(cx: &StatementContext<'_>, view: &CreateView) -> Result<Output> {
    let Some(name) = temporary_name(cx, &view.name, "VIEW", view.or_replace, view.if_not_exists)?
    else {
        return Ok(Output::Done(fixed("CREATE VIEW")));
    };
    let columns = planned_columns(cx, &view.query, &view.columns, &name).await?;
    cx.state().temp_views.insert(
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
    cx: &StatementContext<'_>,
    create: &ast::CreateTable,
) -> Result<Output> {
    let query = match create.query.as_deref() {
        Some(query) => query.clone(),
        None => empty_rows(&create.columns)?,
    };
    let Some(name) = temporary_name(
        cx,
        &create.name,
        "TABLE",
        create.or_replace,
        create.if_not_exists,
    )?
    else {
        return Ok(Output::Done(fixed("CREATE TABLE")));
    };
    let with_columns = create.query.is_none();
    let plan = cx.plan(&ast::Statement::Query(Box::new(query))).await?;
    let schema = Arc::new(plan.schema().as_arrow().clone());
    let frame = cx.context().execute_logical_plan(plan).await?;
    let batches = frame.collect().await?;
    let count: usize = batches.iter().map(|b| b.num_rows()).sum();
    let table = datafusion::datasource::MemTable::try_new(Arc::clone(&schema), vec![batches])?;
    let private = format!("temporary table {name}");
    register_private(cx.time_travel(), &private, Arc::new(table))?;
    let read = parse_query(&format!(
        "SELECT * FROM {}.{} AS {}",
        crate::time_travel::TIME_TRAVEL_SCHEMA,
        Ident::with_quote('"', &private),
        Ident::with_quote('"', &name),
    ))?;
    cx.state().temp_views.insert(
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
    cx: &StatementContext<'_>,
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
    let Some(private) = cx
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
    let output =
        crate::statements::insert::run_sql(cx, &ast::Statement::Insert(insert), params.clone())
            .await?;
    Ok(Some(output))
}

/// Drops the temporary table `name`, if the session has one: DROP TABLE
/// finds these before the warehouse's tables.
pub(crate) fn drop_temporary_table(cx: &StatementContext<'_>, name: &ObjectName) -> bool {
    let Some(key) = view_name(name) else {
        return false;
    };
    let private = {
        let mut state = cx.state();
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
    let _ =
        datafusion::catalog::SchemaProvider::deregister_table(cx.time_travel().as_ref(), &private);
    true
}

/// `CREATE [OR REPLACE] VIEW [IF NOT EXISTS] s.v [(cols)] [COMMENT …]
/// [TBLPROPERTIES …] AS query`, stored in the warehouse.
async fn create_stored(cx: &StatementContext<'_>, create: &CreateView) -> Result<Output> {
    let name = table_name(cx, &create.name)?;
    let catalog = cx.catalog();
    if !catalog.schema_exists(&name.schema).await? {
        return Err(lakegres_delta::Error::SchemaNotFound {
            schema: name.schema,
        }
        .into());
    }
    if create.if_not_exists && catalog.view(&name).await?.is_some() {
        return Ok(Output::Done(fixed("CREATE VIEW")));
    }
    refuse_temporary_reads(cx, &create.query)?;
    let columns = planned_columns(cx, &create.query, &create.columns, &name.to_string()).await?;
    let view = StoredView {
        sql: create.query.to_string(),
        schema: cx.current_schema(),
        columns,
        comment: create.comment.clone(),
        properties: create
            .properties
            .iter()
            .cloned()
            .collect::<BTreeMap<_, _>>(),
        owner: cx.principal().user(),
        created_ms: chrono::Utc::now().timestamp_millis(),
    };
    require_reads(cx, &name, &view).await?;
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
    cx: &StatementContext<'_>,
    query: &ast::Query,
    declared: &[(Ident, Option<String>)],
    view: &str,
) -> Result<Vec<ViewColumn>> {
    let plan = crate::statements::ddl::plan_columns_of(cx, query, "view").await?;
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
fn refuse_temporary_reads(cx: &StatementContext<'_>, query: &ast::Query) -> Result<()> {
    let mut statement = ast::Statement::Query(Box::new(query.clone()));
    let ctes = cte_names(&statement);
    let mut temporary = None;
    each_table_factor(&mut statement, |factor| {
        if let TableFactor::Table { name, .. } = factor {
            let own_cte = name.0.len() == 1 && view_name(name).is_some_and(|n| ctes.contains(&n));
            if !own_cte && cx.state().has_temp_view(name) && temporary.is_none() {
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
    cx: &StatementContext<'_>,
    names: &[ObjectName],
    if_exists: bool,
) -> Result<Output> {
    let catalog = cx.catalog();
    for name in names {
        let removed = view_name(name).and_then(|n| cx.state().temp_views.remove(&n));
        if removed.is_some() {
            continue;
        }
        let stored = table_name(cx, name)?;
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

/// `ALTER TABLE v RENAME TO w` and `COMMENT ON …` on a stored view, as the
/// view statement they mean. Postgres renames views with ALTER TABLE, and
/// dbt-postgres renames (and documents) every view model it builds that
/// way; Databricks would ask for ALTER VIEW.
pub(crate) async fn alter_table_as_view(
    cx: &StatementContext<'_>,
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
    if stored(cx, &alter.name).await?.is_none() {
        return Ok(None);
    }
    Ok(Some(Statement::View(Box::new(view))))
}

/// The rows `DESCRIBE [EXTENDED] v` answers for a view (temporary or
/// stored), or `None` when `name` is no view.
pub(crate) async fn describe_rows(
    cx: &StatementContext<'_>,
    name: &ObjectName,
    extended: bool,
) -> Result<Option<Vec<(String, Option<String>, Option<String>)>>> {
    use lakegres_functions::cast::type_text;
    if let Some(key) = view_name(name) {
        let temporary = cx.state().temp_views.get(&key).cloned();
        if let Some(view) = temporary {
            let plan = cx
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
    let Some((resolved, view)) = stored(cx, name).await? else {
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
            ("Catalog", crate::CATALOG_NAME.to_string()),
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
                format!("{}.{}", crate::CATALOG_NAME, view.schema),
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
pub(crate) async fn show_create(
    cx: &StatementContext<'_>,
    name: &ObjectName,
) -> Result<Option<String>> {
    use crate::statements::detail::{full_name, quote_name, quote_string};
    let Some((resolved, view)) = stored(cx, name).await? else {
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
    cx: &StatementContext<'_>,
    schema: &str,
    pattern: impl Fn(&str) -> bool,
) -> Result<Vec<String>> {
    Ok(cx
        .engine()
        .catalog()
        .list_views(schema)
        .await?
        .into_iter()
        .filter(|v| pattern(v))
        .collect())
}
