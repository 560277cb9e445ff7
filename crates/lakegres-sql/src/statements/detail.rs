//! What the catalog tells of one table: `DESCRIBE DETAIL` (SEMANTICS.md
//! §6.2, Delta's `TableDetail`), `SHOW CREATE TABLE`, `SHOW TBLPROPERTIES`
//! and `SHOW COLUMNS`, read from the table's latest snapshot.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int32Array, Int64Array, ListBuilder, RecordBatch, StringArray, StringBuilder,
    TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::error::DataFusionError;
use lakegres_delta::{ColumnInfo, Table, TableInfo, TableName};
use sqlparser::ast::{Ident, ObjectName};

use crate::error::class;
use crate::error::{Error, Result};
use crate::names::table_name;
use crate::output::{rows_output, CommandTag, Output};
use crate::statement_context::StatementContext;
use crate::CATALOG_NAME;

/// The columns of DESCRIBE DETAIL, in Delta's `TableDetail` order, with
/// Databricks' `statistics` last; maps and structs are JSON text.
pub(crate) fn detail_schema() -> SchemaRef {
    let text = |n: &str| Field::new(n, DataType::Utf8, true);
    let list = |n: &str| {
        Field::new(
            n,
            DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
            true,
        )
    };
    let time = |n: &str| {
        Field::new(
            n,
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        )
    };
    Arc::new(Schema::new(vec![
        text("format"),
        text("id"),
        text("name"),
        text("description"),
        text("location"),
        time("createdAt"),
        time("lastModified"),
        list("partitionColumns"),
        list("clusteringColumns"),
        Field::new("numFiles", DataType::Int64, true),
        Field::new("sizeInBytes", DataType::Int64, true),
        text("properties"),
        Field::new("minReaderVersion", DataType::Int32, true),
        Field::new("minWriterVersion", DataType::Int32, true),
        list("tableFeatures"),
        text("statistics"),
    ]))
}

fn string_list(values: &[String]) -> ArrayRef {
    let mut builder = ListBuilder::new(StringBuilder::new());
    for v in values {
        builder.values().append_value(v);
    }
    builder.append(true);
    Arc::new(builder.finish())
}

/// The table `name` names, at its latest version, and what that says of
/// it.
async fn load(
    cx: &StatementContext<'_>,
    name: &ObjectName,
) -> Result<(TableName, Table, TableInfo)> {
    let name = table_name(cx, name)?;
    let table = cx.load_table(&name).await?;
    let info = table.info(&name)?;
    Ok((name, table, info))
}

/// The table's name as DESCRIBE DETAIL and SHOW CREATE TABLE print it.
pub(crate) fn full_name(name: &TableName) -> String {
    format!("{CATALOG_NAME}.{}.{}", name.schema, name.table)
}

/// `DESCRIBE DETAIL t`: one row.
pub(crate) async fn describe_detail(
    cx: &StatementContext<'_>,
    name: &ObjectName,
) -> Result<Output> {
    let (name, table, info) = load(cx, name).await?;
    let totals = lakegres_delta::file_totals(&name, &table).await?;
    let last_modified = table.committed_at().await;
    let properties: BTreeMap<&String, &String> = info.properties.iter().collect();
    let properties = serde_json::to_string(&properties).map_err(|e| Error::Internal {
        message: e.to_string(),
    })?;
    let statistics = serde_json::json!({
        "numRowsDeletedByDeletionVectors": totals.rows_deleted_by_deletion_vectors,
        "numDeletionVectors": totals.deletion_vectors,
    })
    .to_string();
    let location = cx.engine().catalog().location(&name).await?.to_string();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec!["delta"])),
        Arc::new(StringArray::from(vec![info.id.clone()])),
        Arc::new(StringArray::from(vec![full_name(&name)])),
        Arc::new(StringArray::from(vec![info.description.clone()])),
        Arc::new(StringArray::from(vec![location])),
        Arc::new(TimestampMillisecondArray::from(vec![info.created_time]).with_timezone("UTC")),
        Arc::new(TimestampMillisecondArray::from(vec![last_modified]).with_timezone("UTC")),
        string_list(&info.partition_columns),
        string_list(&info.clustering_columns()),
        Arc::new(Int64Array::from(vec![totals.files])),
        Arc::new(Int64Array::from(vec![totals.bytes])),
        Arc::new(StringArray::from(vec![properties])),
        Arc::new(Int32Array::from(vec![info.min_reader_version])),
        Arc::new(Int32Array::from(vec![info.min_writer_version])),
        string_list(&info.features),
        Arc::new(StringArray::from(vec![statistics])),
    ];
    let batch = RecordBatch::try_new(detail_schema(), columns).map_err(DataFusionError::from)?;
    Ok(rows_output(batch, CommandTag::Counted("DESCRIBE")))
}

/// The one text column a SHOW answers with.
fn text_column(name: &str) -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(name, DataType::Utf8, false)]))
}

/// The columns of SHOW CREATE TABLE.
pub(crate) fn create_table_schema() -> SchemaRef {
    text_column("createtab_stmt")
}

/// The columns of SHOW TBLPROPERTIES.
pub(crate) fn properties_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]))
}

/// The columns of SHOW COLUMNS.
pub(crate) fn columns_schema() -> SchemaRef {
    text_column("col_name")
}

/// A name as SQL can read it back: bare when it is a plain identifier,
/// else in backticks.
pub(crate) fn quote_name(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

pub(crate) fn quote_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn column_definition(field: &ColumnInfo) -> String {
    let mut def = format!(
        "  {} {}",
        quote_name(&field.name),
        field.type_name.to_uppercase()
    );
    if !field.nullable {
        def.push_str(" NOT NULL");
    }
    if let Some(expr) = &field.generated {
        def.push_str(&format!(" GENERATED ALWAYS AS ({expr})"));
    }
    if let Some(c) = &field.identity {
        let how = if c.identity.always {
            "ALWAYS"
        } else {
            "BY DEFAULT"
        };
        def.push_str(&format!(
            " GENERATED {how} AS IDENTITY (START WITH {} INCREMENT BY {})",
            c.identity.start, c.identity.step
        ));
    }
    if let Some(comment) = &field.comment {
        def.push_str(" COMMENT ");
        def.push_str(&quote_string(comment));
    }
    def
}

/// `SHOW CREATE TABLE t`: a statement that, run again, makes the same
/// table: columns (types, NOT NULL, comments), USING DELTA, PARTITIONED BY,
/// COMMENT and TBLPROPERTIES, laid out as Databricks prints it. Managed
/// tables have no LOCATION (external tables come with issue #9).
pub(crate) async fn show_create_table(
    cx: &StatementContext<'_>,
    name: &ObjectName,
) -> Result<Output> {
    if let Some(sql) = crate::statements::views::show_create(cx, name).await? {
        return create_statement_output(sql);
    }
    let (name, _, info) = load(cx, name).await?;
    let columns: Vec<String> = info.columns.iter().map(column_definition).collect();
    let mut sql = format!(
        "CREATE TABLE {} (\n{})\nUSING delta\n",
        full_name(&name),
        columns.join(",\n")
    );
    let partitions = &info.partition_columns;
    if !partitions.is_empty() {
        let names: Vec<String> = partitions.iter().map(|p| quote_name(p)).collect();
        sql.push_str(&format!("PARTITIONED BY ({})\n", names.join(", ")));
    }
    if let Some(comment) = &info.description {
        sql.push_str(&format!("COMMENT {}\n", quote_string(comment)));
    }
    let properties: BTreeMap<&String, &String> = info.properties.iter().collect();
    if !properties.is_empty() {
        let entries: Vec<String> = properties
            .iter()
            .map(|(k, v)| format!("  {} = {}", quote_string(k), quote_string(v)))
            .collect();
        sql.push_str(&format!("TBLPROPERTIES (\n{})\n", entries.join(",\n")));
    }
    create_statement_output(sql)
}

fn create_statement_output(sql: String) -> Result<Output> {
    let batch = RecordBatch::try_new(
        create_table_schema(),
        vec![Arc::new(StringArray::from(vec![sql])) as ArrayRef],
    )
    .map_err(DataFusionError::from)?;
    Ok(rows_output(batch, CommandTag::Counted("SHOW")))
}

/// `SHOW TBLPROPERTIES t [(key)]`: the table's properties and its protocol
/// versions (`delta.minReaderVersion`, `delta.minWriterVersion`), by key;
/// an unknown key answers, as Databricks does, with a row saying so.
pub(crate) async fn show_properties(
    cx: &StatementContext<'_>,
    name: &ObjectName,
    key: Option<&str>,
) -> Result<Output> {
    let (name, _, info) = load(cx, name).await?;
    let mut properties: BTreeMap<String, String> = info.properties.into_iter().collect();
    properties.insert(
        "delta.minReaderVersion".into(),
        info.min_reader_version.to_string(),
    );
    properties.insert(
        "delta.minWriterVersion".into(),
        info.min_writer_version.to_string(),
    );
    let rows: Vec<(String, String)> = match key {
        None => properties.into_iter().collect(),
        Some(key) => {
            let found = properties
                .iter()
                .find(|(k, _)| k.as_str() == key)
                .or_else(|| {
                    // `delta.*` keys are case-insensitive.
                    properties
                        .iter()
                        .find(|(k, _)| k.starts_with("delta.") && k.eq_ignore_ascii_case(key))
                });
            vec![match found {
                Some((k, v)) => (k.clone(), v.clone()),
                None => (
                    key.to_string(),
                    format!("Table {name} does not have property: {key}"),
                ),
            }]
        }
    };
    let (keys, values): (Vec<String>, Vec<String>) = rows.into_iter().unzip();
    let batch = RecordBatch::try_new(
        properties_schema(),
        vec![
            Arc::new(StringArray::from(keys)) as ArrayRef,
            Arc::new(StringArray::from(values)) as ArrayRef,
        ],
    )
    .map_err(DataFusionError::from)?;
    Ok(rows_output(batch, CommandTag::Counted("SHOW")))
}

/// `SHOW COLUMNS {IN|FROM} t [{IN|FROM} schema]`: one row per column, in
/// table order. A schema that contradicts the table's qualified name is
/// Spark's `SHOW_COLUMNS_WITH_CONFLICT_NAMESPACE`.
pub(crate) async fn show_columns(
    cx: &StatementContext<'_>,
    name: &ObjectName,
    schema: Option<&Ident>,
) -> Result<Output> {
    let name = match schema {
        None => name.clone(),
        Some(schema) => {
            let parts = &name.0;
            if parts.len() > 1 {
                let given = lakegres_delta::normalize_schema(&schema.value)?;
                let qualified = table_name(cx, name)?;
                if qualified.schema != given {
                    return Err(Error::analysis(
                        class::SHOW_COLUMNS_WITH_CONFLICT_NAMESPACE,
                        format!(
                            "SHOW COLUMNS with conflicting namespaces: `{given}` != `{}`",
                            qualified.schema
                        ),
                    ));
                }
                name.clone()
            } else {
                let mut parts = vec![schema.clone()];
                parts.extend(name.0.iter().filter_map(|p| p.as_ident().cloned()));
                ObjectName::from(parts)
            }
        }
    };
    let (_, _, info) = load(cx, &name).await?;
    let columns: Vec<String> = info.columns.into_iter().map(|c| c.name).collect();
    let batch = RecordBatch::try_new(
        columns_schema(),
        vec![Arc::new(StringArray::from(columns)) as ArrayRef],
    )
    .map_err(DataFusionError::from)?;
    Ok(rows_output(batch, CommandTag::Counted("SHOW")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_only_when_needed() {
        assert_eq!(quote_name("amount_1"), "amount_1");
        assert_eq!(quote_name("my col"), "`my col`");
        assert_eq!(quote_name("1a"), "`1a`");
        assert_eq!(quote_string("it's"), "'it''s'");
    }
}
