//! DESCRIBE TABLE and SHOW SCHEMAS / SHOW TABLES, with the columns
//! Databricks returns (SEMANTICS.md §6.1).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::error::DataFusionError;

use crate::error::{Error, Result};
use crate::names::table_name;
use crate::output::{rows_output, CommandTag, Output};
use crate::parser::{DescribeHistory, DescribeTable, ShowObjects};
use crate::statement_context::StatementContext;

/// The columns DESCRIBE returns.
pub(crate) fn describe_schema(describe: &DescribeTable) -> SchemaRef {
    let (a, b) = if describe.column.is_some() {
        ("info_name", "info_value")
    } else {
        ("col_name", "data_type")
    };
    let mut fields = vec![
        Field::new(a, DataType::Utf8, false),
        Field::new(b, DataType::Utf8, true),
    ];
    if describe.column.is_none() {
        fields.push(Field::new("comment", DataType::Utf8, true));
    }
    Arc::new(Schema::new(fields))
}

/// `DESCRIBE [TABLE] [EXTENDED] t [col]`.
pub(crate) async fn describe_table(
    cx: &StatementContext<'_>,
    describe: &DescribeTable,
) -> Result<Output> {
    if describe.column.is_none() {
        let view =
            crate::statements::views::describe_rows(cx, &describe.name, describe.extended).await?;
        if let Some(rows) = view {
            return describe_output(describe, rows);
        }
    }
    let name = table_name(cx, &describe.name)?;
    let catalog = cx.engine().catalog();
    let table = match cx.load_table(&name).await {
        Ok(table) => table,
        // A table created without columns describes as no rows.
        Err(lakegres_delta::Error::SchemaNotSet { .. }) if describe.column.is_none() => {
            let batch = RecordBatch::new_empty(describe_schema(describe));
            return Ok(rows_output(batch, CommandTag::Counted("DESCRIBE")));
        }
        Err(e) => return Err(e.into()),
    };
    let info = table.info(&name)?;
    let partition_columns = &info.partition_columns;

    if let Some(column) = &describe.column {
        let field = info
            .column(&column.value)
            .ok_or_else(|| Error::UnknownColumn {
                table: name.to_string(),
                column: column.value.clone(),
            })?;
        let rows = vec![
            ("col_name".to_string(), Some(field.name.clone())),
            ("data_type".to_string(), Some(field.type_name.clone())),
            ("comment".to_string(), field.comment.clone()),
        ];
        let (names, values): (Vec<String>, Vec<Option<String>>) = rows.into_iter().unzip();
        let batch = RecordBatch::try_new(
            describe_schema(describe),
            vec![
                Arc::new(StringArray::from(names)) as ArrayRef,
                Arc::new(StringArray::from(values)) as ArrayRef,
            ],
        )
        .map_err(DataFusionError::from)?;
        return Ok(rows_output(batch, CommandTag::Counted("DESCRIBE")));
    }

    let column_row = |f: &lakegres_delta::ColumnInfo| {
        (f.name.clone(), Some(f.type_name.clone()), f.comment.clone())
    };
    let mut rows: Vec<(String, Option<String>, Option<String>)> =
        info.columns.iter().map(column_row).collect();
    if !partition_columns.is_empty() {
        rows.push((
            "# Partition Information".into(),
            Some(String::new()),
            Some(String::new()),
        ));
        rows.push((
            "# col_name".into(),
            Some("data_type".into()),
            Some("comment".into()),
        ));
        for p in partition_columns.iter() {
            if let Some(f) = info.columns.iter().find(|f| &f.name == p) {
                rows.push(column_row(f));
            }
        }
    }
    if describe.extended {
        // Databricks' block for a Delta table (Spark's CatalogTable rows).
        let external = catalog.external_location(&name).await?;
        let managed = external.is_none();
        let location = match external {
            Some(url) => url.to_string(),
            None => catalog.table_url(&name)?.to_string(),
        };
        let mut properties: Vec<(String, String)> = info
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        properties.push((
            "delta.minReaderVersion".into(),
            info.min_reader_version.to_string(),
        ));
        properties.push((
            "delta.minWriterVersion".into(),
            info.min_writer_version.to_string(),
        ));
        properties.sort();
        let properties = properties
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let created = created_text(info.created_time);
        let mut detail = vec![
            ("Catalog", crate::CATALOG_NAME.to_string()),
            ("Database", name.schema.clone()),
            ("Table", name.table.clone()),
            ("Created Time", created),
            ("Last Access", "UNKNOWN".to_string()),
            (
                "Created By",
                format!("Lakegres {}", env!("CARGO_PKG_VERSION")),
            ),
            (
                "Type",
                if managed { "MANAGED" } else { "EXTERNAL" }.to_string(),
            ),
        ];
        if let Some(comment) = &info.description {
            detail.push(("Comment", comment.clone()));
        }
        let owner = catalog.table_owner(&name).await;
        detail.extend([
            ("Location", location),
            ("Provider", "delta".to_string()),
            ("Owner", owner.unwrap_or_else(|| "postgres".to_string())),
            ("Is_managed_location", managed.to_string()),
            ("Table Properties", format!("[{properties}]")),
        ]);
        push_detail(&mut rows, detail);
    }
    describe_output(describe, rows)
}

/// SHOW TABLE EXTENDED's `information` of a table or view: DESCRIBE
/// EXTENDED's detail as `Key: value` lines, then its columns as a schema
/// tree (`Schema: root` / ` |-- id: int (nullable = true)`).
async fn extended_information(
    cx: &StatementContext<'_>,
    schema: &str,
    table: &str,
) -> Result<String> {
    let describe = DescribeTable {
        name: sqlparser::ast::ObjectName::from(vec![
            sqlparser::ast::Ident::new(schema),
            sqlparser::ast::Ident::new(table),
        ]),
        extended: true,
        column: None,
    };
    let Output::Rows { stream, .. } = describe_table(cx, &describe).await? else {
        return Ok(String::new());
    };
    let batches: Vec<RecordBatch> = futures::TryStreamExt::try_collect(stream).await?;
    let mut columns = Vec::new();
    let mut detail = Vec::new();
    let mut in_detail = false;
    for batch in &batches {
        let (Some(names), Some(types)) = (
            batch.column(0).as_any().downcast_ref::<StringArray>(),
            batch.column(1).as_any().downcast_ref::<StringArray>(),
        ) else {
            continue;
        };
        for i in 0..batch.num_rows() {
            let (name, value) = (names.value(i), types.value(i));
            if name == "# Detailed Table Information" {
                in_detail = true;
            } else if in_detail {
                detail.push(format!("{name}: {value}"));
            } else if name.is_empty() || name.starts_with('#') {
                // The partition block repeats columns; the tree has them.
            } else if !columns
                .iter()
                .any(|c: &String| c.starts_with(&format!(" |-- {name}:")))
            {
                columns.push(format!(" |-- {name}: {value} (nullable = true)"));
            }
        }
    }
    Ok(format!(
        "{}\nSchema: root\n{}\n",
        detail.join("\n"),
        columns.join("\n")
    ))
}

/// A creation time (ms) as DESCRIBE EXTENDED writes it.
pub(crate) fn created_text(ms: Option<i64>) -> String {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%a %b %d %H:%M:%S UTC %Y").to_string())
        .unwrap_or_default()
}

/// DESCRIBE EXTENDED's block after the columns: a blank row, its title, a
/// row per `(name, value)`.
pub(crate) fn push_detail(
    rows: &mut Vec<(String, Option<String>, Option<String>)>,
    detail: Vec<(&str, String)>,
) {
    rows.push((String::new(), Some(String::new()), Some(String::new())));
    rows.push((
        "# Detailed Table Information".into(),
        Some(String::new()),
        Some(String::new()),
    ));
    for (k, v) in detail {
        rows.push((k.to_string(), Some(v), Some(String::new())));
    }
}

/// DESCRIBE's answer: its rows of name, type and comment.
fn describe_output(
    describe: &DescribeTable,
    rows: Vec<(String, Option<String>, Option<String>)>,
) -> Result<Output> {
    let mut names = Vec::with_capacity(rows.len());
    let mut types = Vec::with_capacity(rows.len());
    let mut comments = Vec::with_capacity(rows.len());
    for (n, t, c) in rows {
        names.push(n);
        types.push(t);
        comments.push(c);
    }
    let batch = RecordBatch::try_new(
        describe_schema(describe),
        vec![
            Arc::new(StringArray::from(names)) as ArrayRef,
            Arc::new(StringArray::from(types)) as ArrayRef,
            Arc::new(StringArray::from(comments)) as ArrayRef,
        ],
    )
    .map_err(DataFusionError::from)?;
    Ok(rows_output(batch, CommandTag::Counted("DESCRIBE")))
}

/// The 15 columns of DESCRIBE HISTORY (SEMANTICS.md §6.3); maps and structs
/// are sent as JSON text.
pub(crate) fn history_schema() -> SchemaRef {
    let text = |n: &str| Field::new(n, DataType::Utf8, true);
    Arc::new(Schema::new(vec![
        Field::new("version", DataType::Int64, false),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        text("userId"),
        text("userName"),
        text("operation"),
        text("operationParameters"),
        text("job"),
        text("notebook"),
        text("clusterId"),
        Field::new("readVersion", DataType::Int64, true),
        text("isolationLevel"),
        Field::new("isBlindAppend", DataType::Boolean, true),
        text("operationMetrics"),
        text("userMetadata"),
        text("engineInfo"),
    ]))
}

/// `DESCRIBE HISTORY t [LIMIT n]`: one row per version, newest first, read
/// from the commit files of the log.
pub(crate) async fn history(cx: &StatementContext<'_>, h: &DescribeHistory) -> Result<Output> {
    let name = table_name(cx, &h.name)?;
    let table = match cx.load_table(&name).await {
        Ok(table) => table,
        // A table created without columns has no commits yet.
        Err(lakegres_delta::Error::SchemaNotSet { .. }) => {
            let batch = RecordBatch::new_empty(history_schema());
            return Ok(rows_output(batch, CommandTag::Counted("DESCRIBE")));
        }
        Err(e) => return Err(e.into()),
    };
    let limit = h.limit.unwrap_or(u64::MAX);
    let rows: Vec<(i64, serde_json::Value)> = table
        .history(&name, limit)
        .await?
        .into_iter()
        .map(|(version, info)| (version, with_replace_parameters(info)))
        .collect();
    let text = |info: &serde_json::Value, key: &str| -> Option<String> {
        match info.get(key)? {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    };
    let strings = |key: &str| -> ArrayRef {
        Arc::new(StringArray::from(
            rows.iter().map(|(_, i)| text(i, key)).collect::<Vec<_>>(),
        ))
    };
    let metrics: ArrayRef = Arc::new(StringArray::from(
        rows.iter()
            .map(|(_, i)| text(i, "operationMetrics").or_else(|| text(i, "operation_metrics")))
            .collect::<Vec<_>>(),
    ));
    let nulls = || -> ArrayRef { Arc::new(StringArray::from(vec![None::<String>; rows.len()])) };
    let batch = RecordBatch::try_new(
        history_schema(),
        vec![
            Arc::new(Int64Array::from(
                rows.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
            )),
            Arc::new(
                TimestampMillisecondArray::from(
                    rows.iter()
                        .map(|(_, i)| i.get("timestamp").and_then(|t| t.as_i64()))
                        .collect::<Vec<_>>(),
                )
                .with_timezone("UTC"),
            ),
            strings("userId"),
            strings("userName"),
            strings("operation"),
            strings("operationParameters"),
            nulls(),
            nulls(),
            strings("clusterId"),
            Arc::new(Int64Array::from(
                rows.iter()
                    .map(|(_, i)| i.get("readVersion").and_then(|v| v.as_i64()))
                    .collect::<Vec<_>>(),
            )),
            strings("isolationLevel"),
            Arc::new(BooleanArray::from(
                rows.iter()
                    .map(|(_, i)| i.get("isBlindAppend").and_then(|v| v.as_bool()))
                    .collect::<Vec<_>>(),
            )),
            metrics,
            strings("userMetadata"),
            strings("engineInfo"),
        ],
    )
    .map_err(DataFusionError::from)?;
    Ok(rows_output(batch, CommandTag::Counted("DESCRIBE")))
}

/// The columns SHOW SCHEMAS / SHOW TABLES return.
pub(crate) fn show_schema(show: &ShowObjects) -> SchemaRef {
    match show {
        ShowObjects::Schemas { .. } => Arc::new(Schema::new(vec![Field::new(
            "databaseName",
            DataType::Utf8,
            false,
        )])),
        ShowObjects::Tables { .. } => Arc::new(Schema::new(vec![
            Field::new("database", DataType::Utf8, false),
            Field::new("tableName", DataType::Utf8, false),
            Field::new("isTemporary", DataType::Boolean, false),
        ])),
        ShowObjects::TablesExtended { .. } => Arc::new(Schema::new(vec![
            Field::new("database", DataType::Utf8, false),
            Field::new("tableName", DataType::Utf8, false),
            Field::new("isTemporary", DataType::Boolean, false),
            Field::new("information", DataType::Utf8, false),
        ])),
        // Its columns are the table's partition columns: see `partitions_plan`.
        ShowObjects::Partitions { .. } => Arc::new(Schema::empty()),
        ShowObjects::Views { .. } => Arc::new(Schema::new(vec![
            Field::new("namespace", DataType::Utf8, false),
            Field::new("viewName", DataType::Utf8, false),
            Field::new("isTemporary", DataType::Boolean, false),
            Field::new("isMaterialized", DataType::Boolean, false),
        ])),
        ShowObjects::CreateTable { .. } => crate::statements::detail::create_table_schema(),
        ShowObjects::TblProperties { .. } => crate::statements::detail::properties_schema(),
        ShowObjects::Columns { .. } => crate::statements::detail::columns_schema(),
    }
}

/// `SHOW SCHEMAS|DATABASES [LIKE p]`, `SHOW TABLES [IN s] [LIKE p]`.
pub(crate) async fn show(cx: &StatementContext<'_>, show: &ShowObjects) -> Result<Output> {
    let catalog = cx.engine().catalog();
    let batch = match show {
        ShowObjects::CreateTable { name } => {
            return crate::statements::detail::show_create_table(cx, name).await
        }
        ShowObjects::TblProperties { name, key } => {
            return crate::statements::detail::show_properties(cx, name, key.as_deref()).await
        }
        ShowObjects::Columns { name, schema } => {
            return crate::statements::detail::show_columns(cx, name, schema.as_ref()).await
        }
        ShowObjects::Schemas { pattern } => {
            let schemas: Vec<String> = catalog
                .list_schemas()
                .await?
                .into_iter()
                .filter(|s| matches_pattern(s, pattern.as_deref()))
                .collect();
            RecordBatch::try_new(
                show_schema(show),
                vec![Arc::new(StringArray::from(schemas)) as ArrayRef],
            )
        }
        ShowObjects::Partitions { name, spec } => {
            let plan = partitions_plan(cx, name, spec).await?;
            return cx.run(plan, CommandTag::Counted("SHOW")).await;
        }
        ShowObjects::TablesExtended { schema, pattern } => {
            let schema = match schema {
                Some(s) => lakegres_delta::normalize_schema(&s.value)?,
                None => cx.current_schema(),
            };
            if !catalog.schema_exists(&schema).await? {
                return Err(lakegres_delta::Error::SchemaNotFound { schema }.into());
            }
            let mut names: Vec<String> = catalog
                .list_tables(&schema)
                .await?
                .into_iter()
                .chain(catalog.list_views(&schema).await?)
                .filter(|t| matches_pattern(t, Some(pattern)))
                .collect();
            names.sort();
            let mut information = Vec::with_capacity(names.len());
            for table in &names {
                information.push(extended_information(cx, &schema, table).await?);
            }
            let n = names.len();
            RecordBatch::try_new(
                show_schema(show),
                vec![
                    Arc::new(StringArray::from(vec![schema; n])) as ArrayRef,
                    Arc::new(StringArray::from(names)) as ArrayRef,
                    Arc::new(BooleanArray::from(vec![false; n])) as ArrayRef,
                    Arc::new(StringArray::from(information)) as ArrayRef,
                ],
            )
        }
        ShowObjects::Views { schema, pattern } => {
            // The schema's views, then the session's temporary views with
            // an empty namespace, as Databricks shows them.
            let schema = match schema {
                Some(s) => lakegres_delta::normalize_schema(&s.value)?,
                None => cx.current_schema(),
            };
            if !catalog.schema_exists(&schema).await? {
                return Err(lakegres_delta::Error::SchemaNotFound { schema }.into());
            }
            let stored = crate::statements::views::stored_names(cx, &schema, |v| {
                matches_pattern(v, pattern.as_deref())
            })
            .await?;
            let temporary =
                crate::resolve::views::names(cx, |v| matches_pattern(v, pattern.as_deref()));
            let (n, t) = (stored.len(), temporary.len());
            let namespaces: Vec<String> = std::iter::repeat_n(schema, n)
                .chain(std::iter::repeat_n(String::new(), t))
                .collect();
            let is_temporary: Vec<bool> = std::iter::repeat_n(false, n)
                .chain(std::iter::repeat_n(true, t))
                .collect();
            let names: Vec<String> = stored.into_iter().chain(temporary).collect();
            RecordBatch::try_new(
                show_schema(show),
                vec![
                    Arc::new(StringArray::from(namespaces)) as ArrayRef,
                    Arc::new(StringArray::from(names)) as ArrayRef,
                    Arc::new(BooleanArray::from(is_temporary)) as ArrayRef,
                    Arc::new(BooleanArray::from(vec![false; n + t])) as ArrayRef,
                ],
            )
        }
        ShowObjects::Tables { schema, pattern } => {
            let schema = match schema {
                Some(s) => lakegres_delta::normalize_schema(&s.value)?,
                None => cx.current_schema(),
            };
            if !catalog.schema_exists(&schema).await? {
                return Err(lakegres_delta::Error::SchemaNotFound { schema }.into());
            }
            // Tables and the schema's views, as Databricks lists them.
            let mut tables: Vec<String> = catalog
                .list_tables(&schema)
                .await?
                .into_iter()
                .chain(catalog.list_views(&schema).await?)
                .filter(|t| matches_pattern(t, pattern.as_deref()))
                .collect();
            tables.sort();
            // The session's temporary views follow, with an empty
            // database, as Databricks lists them.
            let views =
                crate::resolve::views::names(cx, |v| matches_pattern(v, pattern.as_deref()));
            let (n, v) = (tables.len(), views.len());
            let databases: Vec<String> = std::iter::repeat_n(schema, n)
                .chain(std::iter::repeat_n(String::new(), v))
                .collect();
            let names: Vec<String> = tables.into_iter().chain(views).collect();
            let temporary: Vec<bool> = std::iter::repeat_n(false, n)
                .chain(std::iter::repeat_n(true, v))
                .collect();
            RecordBatch::try_new(
                show_schema(show),
                vec![
                    Arc::new(StringArray::from(databases)) as ArrayRef,
                    Arc::new(StringArray::from(names)) as ArrayRef,
                    Arc::new(BooleanArray::from(temporary)) as ArrayRef,
                ],
            )
        }
    }
    .map_err(DataFusionError::from)?;
    Ok(rows_output(batch, CommandTag::Counted("SHOW")))
}

/// Databricks SHOW patterns: `*` any characters, `|` alternatives, case-insensitive.
fn matches_pattern(name: &str, pattern: Option<&str>) -> bool {
    let Some(pattern) = pattern else {
        return true;
    };
    pattern
        .split('|')
        .any(|alt| glob(&alt.trim().to_lowercase(), &name.to_lowercase()))
}

fn glob(pattern: &str, name: &str) -> bool {
    match pattern.find(['*', '%']) {
        None => pattern == name,
        Some(i) => {
            let (prefix, rest) = (&pattern[..i], &pattern[i + 1..]);
            name.starts_with(prefix)
                && (0..=name.len() - prefix.len()).any(|skip| {
                    name.is_char_boundary(prefix.len() + skip)
                        && glob(rest, &name[prefix.len() + skip..])
                })
        }
    }
}

/// REPLACE USING / ON commits keep their Databricks parameters
/// (`replaceUsingCols`, `replaceOnCond`) beside delta-rs' operation
/// parameters; history shows them among the operation parameters.
fn with_replace_parameters(mut info: serde_json::Value) -> serde_json::Value {
    for key in ["replaceUsingCols", "replaceOnCond"] {
        let Some(value) = info.as_object_mut().and_then(|o| o.remove(key)) else {
            continue;
        };
        if let Some(parameters) = info
            .get_mut("operationParameters")
            .and_then(|p| p.as_object_mut())
        {
            parameters.insert(key.to_string(), value);
        }
    }
    info
}

/// `SHOW PARTITIONS t [PARTITION (c = v, …)]`: the distinct values of the
/// table's partition columns (one column each), in order, as a query.
pub(crate) async fn partitions_plan(
    cx: &StatementContext<'_>,
    name: &sqlparser::ast::ObjectName,
    spec: &[(sqlparser::ast::Ident, sqlparser::ast::Expr)],
) -> Result<datafusion::logical_expr::LogicalPlan> {
    let table = table_name(cx, name)?;
    let loaded = cx.load_table(&table).await?;
    let columns: Vec<String> = loaded.info(&table)?.partition_columns;
    if columns.is_empty() {
        return Err(Error::analysis(
            crate::error::class::DELTA_SHOW_PARTITION_IN_NON_PARTITIONED_TABLE,
            format!("SHOW PARTITIONS is not allowed on {table}: it is not partitioned"),
        ));
    }
    // Built on the syntax tree: the values as the user wrote them, never
    // rendered to text and read again.
    use sqlparser::ast;
    let ident = |c: &str| ast::Ident::with_quote('"', c);
    let column = |c: &str| ast::Expr::Identifier(ident(c));
    let mut condition: Option<ast::Expr> = None;
    for (name, value) in spec {
        let Some(c) = columns.iter().find(|c| c.eq_ignore_ascii_case(&name.value)) else {
            return Err(Error::analysis(
                crate::error::class::DELTA_NON_PARTITION_COLUMN_REFERENCE,
                format!("{} is not a partition column of {table}", name.value),
            ));
        };
        let equal = ast::Expr::BinaryOp {
            left: Box::new(column(c)),
            op: ast::BinaryOperator::Eq,
            right: Box::new(value.clone()),
        };
        condition = Some(match condition {
            None => equal,
            Some(before) => ast::Expr::BinaryOp {
                left: Box::new(before),
                op: ast::BinaryOperator::And,
                right: Box::new(equal),
            },
        });
    }
    let internal = || Error::internal("the SHOW PARTITIONS template changed shape");
    let mut query = crate::parser::query_template(
        "SELECT DISTINCT lakegres_c FROM lakegres_t ORDER BY lakegres_c",
    )?;
    let ast::SetExpr::Select(select) = query.body.as_mut() else {
        return Err(internal());
    };
    select.projection = columns
        .iter()
        .map(|c| ast::SelectItem::UnnamedExpr(column(c)))
        .collect();
    let [from] = select.from.as_mut_slice() else {
        return Err(internal());
    };
    let ast::TableFactor::Table { name, .. } = &mut from.relation else {
        return Err(internal());
    };
    *name = ast::ObjectName::from(vec![ident(&table.schema), ident(&table.table)]);
    select.selection = condition;
    let Some(ast::OrderBy {
        kind: ast::OrderByKind::Expressions(order),
        ..
    }) = query.order_by.as_mut()
    else {
        return Err(internal());
    };
    let [first] = order.as_slice() else {
        return Err(internal());
    };
    let first = first.clone();
    *order = columns
        .iter()
        .map(|c| ast::OrderByExpr {
            expr: column(c),
            ..first.clone()
        })
        .collect();
    let query = ast::Statement::Query(query);
    cx.plan(&query).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_patterns() {
        assert!(matches_pattern("sales", Some("sa*")));
        assert!(matches_pattern("sales", Some("x|sales")));
        assert!(!matches_pattern("sales", Some("x*")));
        assert!(matches_pattern("Sales", None));
    }
}
