//! CREATE / DROP of tables and schemas. Creating a table is one Delta commit
//! (version 0, or the next version when replacing, so history is kept).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::ParamValues;
use lakegres_delta::create::{NewColumn, NewTable};
use lakegres_delta::WriteMode;
use lakegres_delta::{write_plan, Table, TableName, WriteOptions};
use sqlparser::ast::{self, ObjectName, ObjectType};

use crate::error::class;
use crate::error::{Error, Result};
use crate::names::{object_leaf, table_name};
use crate::output::{fixed, Description, Output};
use crate::parser::CreateTable;
use crate::plan::{bind, parameter_types};
use crate::statement_context::StatementContext;
use crate::types::column_type;

/// `CREATE [OR REPLACE] TABLE … [AS query]`.
pub(crate) async fn create_table(
    cx: &StatementContext<'_>,
    create: &CreateTable,
    params: Option<&ParamValues>,
) -> Result<Output> {
    let name = table_name(cx, &create.name)?;
    let keyed = with_keys(create, &name)?;
    let create = keyed.as_ref().unwrap_or(create);
    if let Some(using) = &create.using {
        // A table of Parquet files without a path is a Delta table here
        // (Delta is Parquet with a log), with a warning; other formats and
        // tables over existing files are refused.
        let parquet = using.eq_ignore_ascii_case("parquet") && create.location.is_none();
        if parquet {
            cx.state().notices.push(crate::session_state::Notice {
                code: lakegres_delta::SqlState::WARNING,
                message: format!(
                    "USING {using}: {name} is made a Delta table (its data files are Parquet)"
                ),
            });
        } else if !using.eq_ignore_ascii_case("delta") {
            return Err(Error::not_supported(format!(
                "USING {using} (tables are Delta tables)"
            )));
        }
    }
    if create.external && create.location.is_none() {
        return Err(Error::not_supported(
            "CREATE EXTERNAL TABLE without LOCATION",
        ));
    }
    if !create.cluster_by.is_empty() && create.clone.is_some() {
        return Err(Error::not_supported("CLUSTER BY with CLONE"));
    }
    let catalog = cx.engine().catalog();
    let tables = cx.catalog();
    if !tables.schema_exists(&name.schema).await? {
        return Err(lakegres_delta::Error::SchemaNotFound {
            schema: name.schema.clone(),
        }
        .into());
    }
    if tables.in_transaction() {
        refuse_in_block(create)?;
    }
    let exists = tables.table_exists(&name).await?;
    if !exists && tables.view(&name).await?.is_some() {
        // Tables and views share one namespace, as on Databricks.
        return Err(lakegres_delta::Error::TableExists {
            schema: name.schema,
            table: name.table,
        }
        .into());
    }
    if exists && create.if_not_exists {
        return Ok(Output::Done(fixed("CREATE TABLE")));
    }
    if exists && !create.or_replace {
        return Err(lakegres_delta::Error::TableExists {
            schema: name.schema,
            table: name.table,
        }
        .into());
    }
    if !exists && create.replace_only {
        return Err(lakegres_delta::Error::TableNotFound {
            schema: name.schema,
            table: name.table,
        }
        .into());
    }
    if create.query.is_some() && !create.columns.is_empty() {
        return Err(Error::not_supported("a column list together with AS query"));
    }
    let configuration = table_properties(&create.properties)?;
    if let Some(clone) = &create.clone {
        clone_table(cx, &name, create, clone, exists, configuration).await?;
        catalog.note_table(&name);
        return Ok(Output::Done(fixed("CREATE TABLE")));
    }
    let configuration = if create.location.is_none() {
        with_session_defaults(cx, configuration)?
    } else {
        configuration
    };
    if let Some(location) = &create.location {
        create_external(cx, &name, create, location, exists, configuration, params).await?;
        catalog.note_table(&name);
        return Ok(Output::Done(fixed("CREATE TABLE")));
    }
    if create.query.is_none()
        && create.columns.is_empty()
        && create.partitioned_by.is_empty()
        && !create.or_replace
        && !create.replace_only
    {
        // Databricks' `CREATE TABLE t;`: its first COPY INTO with
        // mergeSchema takes the files' columns.
        let table = lakegres_delta::SchemalessTable {
            comment: create.comment.clone(),
            configuration,
        };
        catalog.create_schemaless(&name, &table).await?;
        catalog.note_table(&name);
        return Ok(Output::Done(fixed("CREATE TABLE")));
    }
    // Replacing a table without columns is creating its Delta table.
    let schemaless = exists && catalog.schemaless(&name).await?.is_some();
    if schemaless && tables.in_transaction() {
        return Err(Error::NotInTransaction {
            command: "CREATE OR REPLACE of a table without columns",
        });
    }
    let exists = exists && !schemaless;
    // Replacing writes a new version where the table is: an external
    // table stays external, at its location (as in Delta's
    // CreateDeltaTableCommand, which keeps the existing table's storage).
    // A block replaces the table it sees.
    let table = match (exists, tables.in_transaction()) {
        (true, true) => tables.load_table(&name).await?,
        (true, false) => catalog.new_table_at(&name, &catalog.location(&name).await?)?,
        (false, _) => tables.new_table(&name).await?,
    };
    write_table(cx, &name, create, table, exists, configuration, params).await?;
    if schemaless {
        catalog.clear_schemaless(&name).await?;
    }
    tables.note_table(&name);
    Ok(Output::Done(fixed("CREATE TABLE")))
}

/// The table property a key constraint is kept in.
pub(crate) const KEY_PREFIX: &str = "lakegres.key.";

/// `create` with its PRIMARY KEY, UNIQUE and FOREIGN KEY constraints
/// applied: each column of the primary key NOT NULL (as Postgres makes
/// them), and each constraint kept as a table property
/// `lakegres.key.<name>` (its text; Postgres' default names). `None` when
/// it has none.
fn with_keys(create: &CreateTable, table: &TableName) -> Result<Option<CreateTable>> {
    use crate::parser::KeyKind;
    if create.constraints.is_empty() {
        return Ok(None);
    }
    if create.columns.is_empty() {
        return Err(Error::not_supported(
            "key constraints without a column list",
        ));
    }
    let mut create = create.clone();
    let mut primary = false;
    let mut properties = Vec::new();
    for key in &create.constraints {
        let mut columns = Vec::with_capacity(key.columns.len());
        for column in &key.columns {
            let Some(known) = create
                .columns
                .iter()
                .find(|c| c.name.value.eq_ignore_ascii_case(&column.value))
            else {
                return Err(Error::analysis(
                    class::UNRESOLVED_COLUMN,
                    format!("column {column} of a key constraint is not a column of the table"),
                ));
            };
            columns.push(known.name.value.clone());
        }
        let list = columns.join(", ");
        let (text, default_name) = match &key.kind {
            KeyKind::PrimaryKey => {
                if std::mem::replace(&mut primary, true) {
                    return Err(Error::not_supported("more than one PRIMARY KEY"));
                }
                (
                    format!("PRIMARY KEY ({list})"),
                    format!("{}_pkey", table.table),
                )
            }
            KeyKind::Unique => (
                format!("UNIQUE ({list})"),
                format!("{}_{}_key", table.table, columns.join("_")),
            ),
            KeyKind::ForeignKey {
                table: parent,
                columns: parent_columns,
            } => {
                let parent_list = if parent_columns.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({})",
                        parent_columns
                            .iter()
                            .map(|c| c.value.clone())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                (
                    format!("FOREIGN KEY ({list}) REFERENCES {parent}{parent_list}"),
                    format!("{}_{}_fkey", table.table, columns.join("_")),
                )
            }
        };
        let name = key.name.as_ref().map_or(default_name, |n| n.value.clone());
        properties.push((format!("{KEY_PREFIX}{name}"), text));
        if matches!(key.kind, KeyKind::PrimaryKey) {
            for column in &mut create.columns {
                if columns.contains(&column.name.value) {
                    column.not_null = true;
                }
            }
        }
    }
    create.properties.extend(properties);
    Ok(Some(create))
}

/// The CREATE TABLE forms that cannot take part in a transaction block:
/// those that name a location outside the warehouse's folders, clone, or
/// make a table without columns.
fn refuse_in_block(create: &CreateTable) -> Result<()> {
    let command = if create.clone.is_some() {
        "CREATE TABLE … CLONE"
    } else if create.location.is_some() {
        "CREATE TABLE … LOCATION"
    } else if create.query.is_none()
        && create.columns.is_empty()
        && create.partitioned_by.is_empty()
    {
        "CREATE TABLE without columns"
    } else {
        return Ok(());
    };
    Err(Error::NotInTransaction { command })
}

/// `CREATE [OR REPLACE] TABLE t {SHALLOW | DEEP} CLONE s [VERSION | TIMESTAMP
/// AS OF …] [TBLPROPERTIES …] [LOCATION …]`: one commit recorded as
/// `CLONE` (`lakegres_delta::clone` says what each kind does).
async fn clone_table(
    cx: &StatementContext<'_>,
    name: &TableName,
    create: &CreateTable,
    clone: &crate::parser::CloneSource,
    exists: bool,
    configuration: HashMap<String, Option<String>>,
) -> Result<()> {
    if !create.columns.is_empty() || create.query.is_some() || !create.partitioned_by.is_empty() {
        return Err(Error::not_supported(
            "a column list, PARTITIONED BY or AS query with CLONE",
        ));
    }
    let catalog = cx.engine().catalog();
    let source_name = table_name(cx, &clone.source)?;
    crate::privileges::require_select(cx, &source_name)?;
    let source = match &clone.at {
        Some(at) => {
            let at = crate::time_travel::point(cx, at).await?;
            catalog.load_table_at(&source_name, &at).await?
        }
        None => cx.load_table(&source_name).await?,
    };
    let properties: HashMap<String, String> =
        lakegres_delta::features::kept_configuration(configuration)
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
    let request = lakegres_delta::clone::CloneRequest {
        shallow: clone.shallow,
        source_name: source_name.to_string(),
        properties,
        replace: exists,
    };
    let target = if exists {
        cx.load_table(name).await?
    } else if let Some(location) = &create.location {
        let url = external_url(cx, location).await?;
        claim_location(cx, name, location, &url).await?;
        if catalog.load_at(&url).await.is_some() {
            return Err(Error::LocationNotEmpty {
                table: name.to_string(),
                location: url.to_string(),
            });
        }
        // The name first, as for any external CREATE: a failed clone gives
        // it back.
        catalog.create_external(name, &url).await?;
        let target = catalog.new_table_at(name, &url)?;
        let cloned =
            lakegres_delta::clone::clone_table(name, &target, &source, request, cx.committed())
                .await;
        if let Err(e) = cloned {
            if let Err(undo) = catalog.forget_external(name).await {
                tracing::warn!(table = %name, error = %undo, "could not remove the name of a failed CLONE");
            }
            return Err(e.into());
        }
        return Ok(());
    } else {
        catalog.new_table(name)?
    };
    if let (true, Some(location)) = (exists, &create.location) {
        let current = catalog.location(name).await?;
        let url = external_url(cx, location).await?;
        if current != url {
            return Err(Error::LocationMismatch {
                table: name.to_string(),
                existing: current.to_string(),
                location: url.to_string(),
            });
        }
    }
    lakegres_delta::clone::clone_table(name, &target, &source, request, cx.committed()).await?;
    Ok(())
}

/// The one commit of a CREATE: the column list's empty table, or the
/// query's rows; `replace` makes it the next version of `table`.
async fn write_table(
    cx: &StatementContext<'_>,
    name: &TableName,
    create: &CreateTable,
    table: Table,
    replace: bool,
    configuration: HashMap<String, Option<String>>,
    params: Option<&ParamValues>,
) -> Result<()> {
    match &create.query {
        None => create_empty(cx, name, table, create, replace, configuration).await,
        Some(_) => create_as_select(cx, name, create, table, replace, configuration, params).await,
    }
}

/// `CREATE [OR REPLACE] TABLE t [(cols)] LOCATION 'path' [AS query]`: an
/// external table over the Delta table at `path`, which must lie inside a
/// file root and outside the warehouse. DROP TABLE forgets the table and
/// keeps its files.
///
/// As in Delta (SEMANTICS.md §1.2, `CreateDeltaTableCommand`):
/// - a table of that name already in the catalog (so REPLACE) must be at
///   that location: a new version is written there, history kept;
///   another location — a managed table's included — is
///   `DELTA_TABLE_LOCATION_MISMATCH` (42613);
/// - an existing Delta table at the location is taken as it is (a column
///   list must be its columns); `AS query` onto it is
///   `DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION` (42601), and with
///   `OR REPLACE` writes its next version;
/// - otherwise the columns or the query create the table there.
async fn create_external(
    cx: &StatementContext<'_>,
    name: &TableName,
    create: &CreateTable,
    location: &str,
    exists: bool,
    configuration: HashMap<String, Option<String>>,
    params: Option<&ParamValues>,
) -> Result<()> {
    let catalog = cx.engine().catalog();
    let url = external_url(cx, location).await?;
    if exists {
        let current = catalog.location(name).await?;
        if current != url {
            return Err(Error::LocationMismatch {
                table: name.to_string(),
                existing: current.to_string(),
                location: url.to_string(),
            });
        }
        let table = catalog.new_table_at(name, &url)?;
        return write_table(cx, name, create, table, true, configuration, params).await;
    }
    claim_location(cx, name, location, &url).await?;
    // What to commit: `None` takes the Delta table there as it is.
    let write = match catalog.load_at(&url).await {
        Some(_) if create.query.is_some() && !create.or_replace => {
            return Err(Error::LocationNotEmpty {
                table: name.to_string(),
                location: url.to_string(),
            })
        }
        Some(existing) if create.query.is_some() => Some((existing, true)),
        Some(existing) => {
            if !create.columns.is_empty() {
                same_columns(name, &url, &existing, create)?;
            }
            None
        }
        None => Some((catalog.new_table_at(name, &url)?, false)),
    };
    // The name first: its marker is a conditional put, so of two servers
    // creating it one wins before either commits; a failed commit gives
    // the name back, and a failed statement leaves nothing behind.
    catalog.create_external(name, &url).await?;
    if let Some((table, replace)) = write {
        if let Err(e) = write_table(cx, name, create, table, replace, configuration, params).await {
            if let Err(undo) = catalog.forget_external(name).await {
                tracing::warn!(table = %name, error = %undo, "could not remove the name of a failed CREATE");
            }
            return Err(e);
        }
    }
    Ok(())
}

/// The folder an external table's `LOCATION` names: inside a file root
/// and outside the warehouse.
async fn external_url(cx: &StatementContext<'_>, location: &str) -> Result<url::Url> {
    let url = cx
        .engine()
        .file_roots()
        .resolve(location)
        .await?
        .folder_url()?;
    if url
        .as_str()
        .starts_with(cx.engine().catalog().root().as_str())
    {
        return Err(lakegres_delta::Error::PathNotAllowed {
            path: location.to_string(),
            reason: "an external table's location may not lie inside the warehouse".into(),
        }
        .into());
    }
    Ok(url)
}

/// Whether a new external table `name` may take the folder `url` (its
/// LOCATION `location`): a folder belongs to the one table registered
/// there. Refused (42501):
/// - a folder above the warehouse, or inside or above another external
///   table's folder: the tables' files would mix, and one table's VACUUM
///   or DROP would reach the other's;
/// - a folder inside a Delta table that no table registers there;
/// - another table's folder, without SELECT and MODIFY on that table: a
///   second name for a table grants nothing the first does not;
/// - an existing Delta table no table registers, unless an admin creates
///   it (as reading that folder by path is for admins).
async fn claim_location(
    cx: &StatementContext<'_>,
    name: &TableName,
    location: &str,
    url: &url::Url,
) -> Result<()> {
    let catalog = cx.engine().catalog();
    let refuse = |reason: String| -> Error {
        lakegres_delta::Error::PathNotAllowed {
            path: location.to_string(),
            reason,
        }
        .into()
    };
    if catalog.root().as_str().starts_with(url.as_str()) {
        return Err(refuse(
            "a table's location may not hold the warehouse".into(),
        ));
    }
    let mut registered = false;
    for (other_url, other) in catalog.external_locations().await? {
        if other == *name {
            continue;
        }
        if other_url == *url {
            let principal = cx.principal();
            principal.require(lakegres_delta::grants::Privilege::Select, &other)?;
            principal.require(lakegres_delta::grants::Privilege::Modify, &other)?;
            registered = true;
        } else if url.as_str().starts_with(other_url.as_str()) {
            return Err(refuse(format!(
                "it lies inside the folder of table {other}"
            )));
        } else if other_url.as_str().starts_with(url.as_str()) {
            return Err(refuse(format!("it holds the folder of table {other}")));
        }
    }
    let resolved = cx.engine().file_roots().resolve(location).await?;
    if let Some(table) = resolved.delta_table().await? {
        if table.folder_url()? != *url {
            return Err(refuse(format!(
                "it lies inside the Delta table at {}",
                table.folder_url()?
            )));
        }
        if !registered && cx.principal().grants().enforced() {
            cx.principal().require_admin(
                "registering a Delta table no table names (CREATE TABLE … LOCATION)",
            )?;
        }
    }
    Ok(())
}

/// Databricks takes a column list over an existing Delta table only when
/// it is the table's (`DELTA_CREATE_TABLE_SCHEME_MISMATCH`).
fn same_columns(
    name: &TableName,
    url: &url::Url,
    existing: &Table,
    create: &CreateTable,
) -> Result<()> {
    let have = existing.info(name)?.columns;
    let same = create.columns.len() == have.len()
        && create.columns.iter().zip(&have).all(|(c, f)| {
            f.name.eq_ignore_ascii_case(&c.name.value)
                && column_type(&c.data_type)
                    .is_ok_and(|t| lakegres_delta::types::type_name(&t) == f.type_name)
        });
    if same {
        Ok(())
    } else {
        Err(Error::LocationSchemaMismatch {
            table: name.to_string(),
            location: url.to_string(),
        })
    }
}

async fn create_empty(
    cx: &StatementContext<'_>,
    name: &TableName,
    table: Table,
    create: &CreateTable,
    replace: bool,
    configuration: HashMap<String, Option<String>>,
) -> Result<()> {
    if create.columns.is_empty() {
        return Err(Error::SchemaNotProvided);
    }
    let mut columns = Vec::with_capacity(create.columns.len());
    for column in &create.columns {
        let data_type = column_type(&column.data_type)?;
        columns.push(NewColumn {
            name: column.name.value.clone(),
            identity: column
                .identity
                .map(|spec| identity(&column.name.value, &data_type, spec, create))
                .transpose()?,
            data_type,
            nullable: !column.not_null,
            comment: column.comment.clone(),
            generated: column.generated.clone(),
            default: column.default.clone(),
            char_varchar: crate::types::char_varchar(&column.data_type),
        });
    }
    let mut partition_columns = Vec::new();
    for p in &create.partitioned_by {
        let existing = columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(&p.name.value))
            .map(|c| c.name.clone());
        match (existing, &p.data_type) {
            (Some(declared), None) => partition_columns.push(declared),
            (None, Some(data_type)) => {
                // Hive form: a typed partition column not in the list.
                columns.push(NewColumn {
                    name: p.name.value.clone(),
                    data_type: column_type(data_type)?,
                    nullable: true,
                    comment: None,
                    generated: None,
                    identity: None,
                    default: None,
                    char_varchar: crate::types::char_varchar(data_type),
                });
                partition_columns.push(p.name.value.clone());
            }
            (Some(_), Some(_)) => {
                return Err(lakegres_delta::Error::DuplicateColumn {
                    column: p.name.value.clone(),
                }
                .into())
            }
            (None, None) => {
                return Err(lakegres_delta::Error::UnknownPartitionColumn {
                    column: p.name.value.clone(),
                }
                .into())
            }
        }
    }
    check_columns(columns.iter().map(|c| c.name.as_str()), &partition_columns)?;
    lakegres_delta::create::create_table(
        name,
        &table,
        NewTable {
            columns,
            partition_columns,
            configuration,
            comment: create.comment.clone(),
            replace,
            clustering: create.cluster_by.iter().map(|c| c.value.clone()).collect(),
        },
        cx.committed(),
    )
    .await?;
    Ok(())
}

/// An identity column as Databricks allows it: BIGINT, a step other than
/// 0, not a partition column.
fn identity(
    column: &str,
    data_type: &datafusion::arrow::datatypes::DataType,
    spec: crate::parser::IdentitySpec,
    create: &CreateTable,
) -> Result<lakegres_delta::identity::Identity> {
    if *data_type != datafusion::arrow::datatypes::DataType::Int64 {
        return Err(Error::analysis(
            class::DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE,
            format!(
                "DataType {} is not supported for IDENTITY column {column}: it must be BIGINT",
                lakegres_delta::types::type_name(data_type)
            ),
        ));
    }
    if spec.step == 0 {
        return Err(Error::analysis(
            class::DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP,
            format!("IDENTITY column {column}: the step cannot be 0"),
        ));
    }
    if create
        .partitioned_by
        .iter()
        .any(|p| p.name.value.eq_ignore_ascii_case(column))
    {
        return Err(Error::analysis(
            class::DELTA_IDENTITY_COLUMNS_PARTITION_NOT_SUPPORTED,
            format!("PARTITIONED BY IDENTITY column {column} is not supported"),
        ));
    }
    Ok(lakegres_delta::identity::Identity {
        start: spec.start,
        step: spec.step,
        always: spec.always,
    })
}

/// Plans the query whose columns become a new table's (or view's).
/// DataFusion refuses a projection that names a column twice (names fold
/// to lower case): the new relation cannot have it either.
pub(crate) async fn plan_columns_of(
    cx: &StatementContext<'_>,
    query: &ast::Query,
    what: &str,
) -> Result<datafusion::logical_expr::LogicalPlan> {
    cx.plan(&ast::Statement::Query(Box::new(query.clone())))
        .await
        .map_err(|e| {
            if e.to_string()
                .contains("Projections require unique expression names")
            {
                Error::analysis(
                    class::COLUMN_ALREADY_EXISTS,
                    format!("the query names a column of the new {what} twice: {e}"),
                )
            } else {
                e
            }
        })
}

async fn create_as_select(
    cx: &StatementContext<'_>,
    name: &TableName,
    create: &CreateTable,
    table: Table,
    replace: bool,
    configuration: HashMap<String, Option<String>>,
    params: Option<&ParamValues>,
) -> Result<()> {
    let Some(query) = &create.query else {
        return Err(Error::Internal {
            message: "CREATE TABLE AS without its query".into(),
        });
    };
    let plan = bind(plan_columns_of(cx, query, "table").await?, params.cloned())?;
    let output: Vec<String> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut partition_columns = Vec::new();
    for p in &create.partitioned_by {
        match output
            .iter()
            .find(|c| c.eq_ignore_ascii_case(&p.name.value))
        {
            Some(c) => partition_columns.push(c.clone()),
            None => {
                return Err(lakegres_delta::Error::UnknownPartitionColumn {
                    column: p.name.value.clone(),
                }
                .into())
            }
        }
    }
    check_columns(output.iter().map(String::as_str), &partition_columns)?;
    let input = cx.physical(&plan).await?.into_input();
    let state = Arc::new(cx.context().state());
    // Replacing writes the next version of the table there.
    let table = if replace {
        table.loaded(name).await?
    } else {
        table
    };
    let options = WriteOptions {
        mode: if replace {
            WriteMode::Overwrite
        } else {
            WriteMode::ErrorIfExists
        },
        overwrite_schema: replace,
        partition_columns: Some(partition_columns),
        description: create.comment.clone(),
        configuration,
        all_nullable: true,
        clustering: create.cluster_by.iter().map(|c| c.value.clone()).collect(),
        operation: Some(if create.replace_only {
            "REPLACE TABLE AS SELECT"
        } else if create.or_replace {
            "CREATE OR REPLACE TABLE AS SELECT"
        } else {
            "CREATE TABLE AS SELECT"
        }),
        ..WriteOptions::new(WriteMode::Overwrite)
    };
    match write_plan(name, &table, input, state, options).await {
        // Another session created the table first.
        Err(e) if !replace && e.sqlstate() == lakegres_delta::SqlState::SERIALIZATION_FAILURE => {
            Err(lakegres_delta::Error::TableExists {
                schema: name.schema.clone(),
                table: name.table.clone(),
            }
            .into())
        }
        written => written.map(|_| ()).map_err(Into::into),
    }
}

/// Column names unique without regard to case, and not all of them
/// partition columns (SEMANTICS.md §0.1, §1.2).
fn check_columns<'a>(
    columns: impl Iterator<Item = &'a str>,
    partition_columns: &[String],
) -> Result<()> {
    let mut seen: Vec<String> = Vec::new();
    for c in columns {
        let lower = c.to_lowercase();
        if seen.contains(&lower) {
            return Err(lakegres_delta::Error::DuplicateColumn {
                column: c.to_string(),
            }
            .into());
        }
        seen.push(lower);
    }
    if !partition_columns.is_empty() && partition_columns.len() >= seen.len() {
        return Err(lakegres_delta::Error::AllColumnsPartitioned.into());
    }
    Ok(())
}

/// TBLPROPERTIES as Delta configuration; `delta.*` keys take their
/// canonical spelling whatever case they were written in, an unknown
/// `delta.*` key is an error (`DELTA_UNKNOWN_CONFIGURATION`), and each
/// value is checked against what its key allows
/// (`lakegres_delta::features`, the one list of accepted keys); other keys
/// are the user's own properties.
pub(crate) fn table_properties(
    properties: &[(String, String)],
) -> Result<HashMap<String, Option<String>>> {
    properties
        .iter()
        .map(|(k, v)| {
            let (key, value) = match lakegres_delta::features::canonical_property(k) {
                Some(known) => (
                    known.to_string(),
                    lakegres_delta::features::property_value(known, v)?,
                ),
                None if k
                    .to_lowercase()
                    .starts_with(lakegres_delta::CONSTRAINT_PREFIX) =>
                {
                    return Err(lakegres_delta::Error::ConstraintProperty { key: k.clone() }.into())
                }
                None if k.to_lowercase().starts_with("delta.") => {
                    return Err(Error::analysis(
                        class::DELTA_UNKNOWN_CONFIGURATION,
                        format!("unknown configuration was specified: {k}"),
                    ))
                }
                None => (k.clone(), v.clone()),
            };
            Ok((key, Some(value)))
        })
        .collect()
}

/// The session's defaults for new tables' Delta properties, as Databricks
/// takes them: `SET spark.databricks.delta.properties.defaults.<key> = v`
/// gives a table created afterwards `delta.<key> = v` unless its own
/// TBLPROPERTIES set it. Keys Delta does not know are left out.
fn with_session_defaults(
    cx: &StatementContext<'_>,
    mut configuration: HashMap<String, Option<String>>,
) -> Result<HashMap<String, Option<String>>> {
    const PREFIX: &str = "spark.databricks.delta.properties.defaults.";
    for (name, value) in cx.settings().with_prefix(PREFIX) {
        let Some(key) = lakegres_delta::features::canonical_property(&format!("delta.{name}"))
        else {
            continue;
        };
        if !configuration.contains_key(key) {
            let value = lakegres_delta::features::property_value(key, &value)?;
            configuration.insert(key.to_string(), Some(value));
        }
    }
    Ok(configuration)
}

/// `DROP TABLE|SCHEMA|DATABASE [IF EXISTS] …`.
/// `CREATE SCHEMA|DATABASE [IF NOT EXISTS] s`.
pub(crate) async fn create_schema(
    cx: &StatementContext<'_>,
    statement: &ast::Statement,
) -> Result<Output> {
    let (name, if_not_exists) = match statement {
        ast::Statement::CreateSchema {
            schema_name,
            if_not_exists,
            ..
        } => (
            match schema_name {
                ast::SchemaName::Simple(n) | ast::SchemaName::NamedAuthorization(n, _) => {
                    object_leaf(n)
                }
                ast::SchemaName::UnnamedAuthorization(i) => i.value.clone(),
            },
            *if_not_exists,
        ),
        ast::Statement::CreateDatabase {
            db_name,
            if_not_exists,
            ..
        } => (object_leaf(db_name), *if_not_exists),
        other => return Err(Error::not_supported(format!("{other} as CREATE SCHEMA"))),
    };
    cx.catalog().create_schema(&name, if_not_exists).await?;
    Ok(Output::Done(fixed("CREATE SCHEMA")))
}

/// `DROP TABLE|SCHEMA|DATABASE …`.
pub(crate) async fn drop_statement(
    cx: &StatementContext<'_>,
    statement: &ast::Statement,
) -> Result<Output> {
    let ast::Statement::Drop {
        object_type,
        if_exists,
        names,
        cascade,
        ..
    } = statement
    else {
        return Err(Error::not_supported(format!("{statement} as DROP")));
    };
    drop(cx, *object_type, *if_exists, names, *cascade).await
}

pub(crate) async fn drop(
    cx: &StatementContext<'_>,
    object_type: ObjectType,
    if_exists: bool,
    names: &[ObjectName],
    cascade: bool,
) -> Result<Output> {
    let catalog = cx.engine().catalog();
    match object_type {
        ObjectType::Table => {
            for name in names {
                if crate::statements::views::drop_temporary_table(cx, name) {
                    continue;
                }
                let name = table_name(cx, name)?;
                let tables = cx.catalog();
                if tables.table_exists(&name).await? {
                    tables.drop_table(&name).await?;
                } else if tables.view(&name).await?.is_some() {
                    return Err(Error::analysis(
                        crate::error::class::WRONG_COMMAND_FOR_OBJECT_TYPE,
                        format!("{name} is a view: use DROP VIEW"),
                    ));
                } else if !if_exists {
                    return Err(lakegres_delta::Error::TableNotFound {
                        schema: name.schema,
                        table: name.table,
                    }
                    .into());
                }
            }
            Ok(Output::Done(fixed("DROP TABLE")))
        }
        ObjectType::Schema | ObjectType::Database => {
            for name in names {
                let schema = crate::names::object_leaf(name);
                catalog.drop_schema(&schema, if_exists, cascade).await?;
            }
            Ok(Output::Done(fixed("DROP SCHEMA")))
        }
        ObjectType::View => crate::statements::views::drop(cx, names, if_exists).await,
        other => Err(Error::not_supported(format!("DROP {other}"))),
    }
}

/// What the extended protocol's Describe reports of a CREATE TABLE: the
/// types of the `$n` in its query (`AS query`), and no result rows.
pub(crate) async fn describe_create_table(
    cx: &StatementContext<'_>,
    create: &CreateTable,
) -> Result<Description> {
    let params = match &create.query {
        Some(query) => parameter_types(&plan_columns_of(cx, query, "table").await?)?,
        None => Vec::new(),
    };
    Ok(Description {
        params,
        schema: None,
    })
}
