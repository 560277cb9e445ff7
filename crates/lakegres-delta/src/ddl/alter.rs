//! Schema and metadata changes (`ALTER TABLE`, `COMMENT ON TABLE`): each is
//! one Delta commit of a `metaData` action (and a `protocol` action when the
//! change needs a feature the table's protocol lacks), recorded under the
//! operation name Databricks writes (`ADD COLUMNS`, `CHANGE COLUMN`,
//! `SET TBLPROPERTIES`, `UNSET TBLPROPERTIES`, `ADD CONSTRAINT`,
//! `DROP CONSTRAINT`).
//!
//! The commit is put together here rather than by delta-rs' builders
//! (`AddColumnBuilder`, `ConstraintBuilder` …) because those record their own
//! operation names (`ADD COLUMN`, `UPDATE FIELD METADATA`) and parameters.
//! Checking the existing rows against a new constraint is the caller's job
//! (it has the SQL engine); the commit allows no concurrent commit between
//! the version read and its own (a concurrent write fails it with 40001), so
//! rows checked are the rows the constraint then covers.

use std::collections::HashMap;

use deltalake::kernel::transaction::CommitBuilder;
use deltalake::kernel::{Action, CommitInfo, MetadataExt, MetadataValue, StructField, StructType};
use deltalake::protocol::DeltaOperation;
use serde_json::{json, Value};

use crate::catalog::TableName;
use crate::commit::committed::CommitSink;
use crate::error::{Error, Result};
use crate::table::constraints::{constraints, generation_expression, CONSTRAINT_PREFIX};

/// One metadata change.
#[derive(Debug, Clone)]
pub enum MetadataChange {
    /// New nullable columns at the end.
    AddColumns(Vec<crate::create::NewColumn>),
    ColumnComment {
        column: String,
        comment: String,
    },
    ColumnNotNull {
        column: String,
        not_null: bool,
    },
    SetProperties(Vec<(String, String)>),
    UnsetProperties {
        keys: Vec<String>,
        if_exists: bool,
    },
    AddConstraint {
        name: String,
        expr: String,
    },
    DropConstraint {
        name: String,
        if_exists: bool,
    },
    TableComment(Option<String>),
    /// `RENAME COLUMN from TO to` (column-mapped tables): the logical name
    /// changes, the data files keep the physical one.
    RenameColumn {
        from: String,
        to: String,
    },
    /// `CLUSTER BY (cols)` / `CLUSTER BY NONE` (an empty list).
    ClusterBy(Vec<String>),
    /// `ALTER COLUMN c SET DEFAULT expr` / `DROP DEFAULT` (`None`).
    ColumnDefault {
        column: String,
        default: Option<String>,
    },
    /// `ALTER COLUMN c TYPE t`: a wider type, metadata-only (type widening).
    ColumnType {
        column: String,
        data_type: datafusion::arrow::datatypes::DataType,
    },
    /// `DROP COLUMN[S] [IF EXISTS] (a, b)` (column-mapped tables): the
    /// columns leave the schema, the data files keep them until rewritten.
    DropColumns {
        columns: Vec<String>,
        if_exists: bool,
    },
}

fn unknown_column(table: &TableName, column: &str) -> Error {
    Error::UnknownColumn {
        table: table.to_string(),
        column: column.to_string(),
    }
}

/// Commits `change` to the table at its loaded version: one new version.
/// A change that changes nothing (`DROP CONSTRAINT IF EXISTS` of a missing
/// one, `UNSET TBLPROPERTIES IF EXISTS` of missing keys, a comment the table
/// or column already has) commits nothing.
pub async fn alter_metadata(
    name: &TableName,
    table: &crate::Table,
    change: MetadataChange,
    committed: &CommitSink,
) -> Result<()> {
    let table = table.delta();
    let snapshot = table
        .snapshot()
        .map_err(|e| Error::delta("altering", name.to_string(), e))?
        .snapshot()
        .clone();
    let read_version = snapshot.version();
    let delta = |e: deltalake::kernel::Error| Error::delta("altering", name.to_string(), e.into());
    let metadata = snapshot.metadata().clone();
    let schema: StructType = snapshot.schema().as_ref().clone();
    let mut fields: Vec<StructField> = schema.fields().cloned().collect();
    let mut explicit_versions: Vec<(String, String)> = Vec::new();
    let mut domains: Vec<Action> = Vec::new();

    let (operation, parameters, metadata) = match change {
        MetadataChange::AddColumns(new) => {
            let new = new
                .into_iter()
                .map(crate::ddl::create::field)
                .collect::<Result<Vec<StructField>>>()?;
            let mut seen: Vec<String> = fields.iter().map(|f| f.name.to_lowercase()).collect();
            for field in &new {
                if seen.contains(&field.name.to_lowercase()) {
                    return Err(Error::DuplicateColumn {
                        column: field.name.clone(),
                    });
                }
                seen.push(field.name.to_lowercase());
            }
            let columns: Vec<Value> = new
                .iter()
                .map(|f| json!({ "column": f, "position": Value::Null }))
                .collect();
            fields.extend(new);
            let mut schema = struct_type(fields)?;
            let mut metadata = metadata;
            if crate::table::features::column_mapping(metadata.configuration()) {
                // New columns get ids past the table's highest and fresh
                // physical names.
                let max = max_column_id(&metadata);
                let (mapped, max) =
                    crate::table::features::assign_column_mapping(&schema, max, false)?;
                schema = mapped;
                metadata = metadata
                    .add_config_key(
                        crate::table::features::COLUMN_MAPPING_MAX_ID.to_string(),
                        max.to_string(),
                    )
                    .map_err(delta)?;
            }
            (
                "ADD COLUMNS",
                json!({ "columns": Value::Array(columns).to_string() }),
                metadata.with_schema(&schema).map_err(delta)?,
            )
        }
        MetadataChange::ColumnComment { column, comment } => {
            let field = find_field(&mut fields, name, &column)?;
            // An empty comment (COMMENT ON COLUMN … IS NULL or '') removes it.
            let current = match field.metadata.get("comment") {
                Some(MetadataValue::String(c)) => c.as_str(),
                _ => "",
            };
            // dbt's persist_docs comments every documented column on every
            // run; a comment already there is no change to commit.
            if current == comment {
                return Ok(());
            }
            if comment.is_empty() {
                field.metadata.remove("comment");
            } else {
                field
                    .metadata
                    .insert("comment".into(), MetadataValue::String(comment));
            }
            let changed = field.clone();
            change_column(name, &changed, fields, metadata)?
        }
        MetadataChange::ColumnNotNull { column, not_null } => {
            let field = find_field(&mut fields, name, &column)?;
            field.nullable = !not_null;
            let changed = field.clone();
            change_column(name, &changed, fields, metadata)?
        }
        MetadataChange::SetProperties(properties) => {
            let mut metadata = metadata;
            let mut recorded = serde_json::Map::new();
            let was_mapped = crate::table::features::column_mapping(metadata.configuration());
            for (key, value) in properties {
                if key.to_lowercase().starts_with(CONSTRAINT_PREFIX) {
                    return Err(Error::ConstraintProperty { key });
                }
                recorded.insert(key.clone(), Value::String(value.clone()));
                if key.eq_ignore_ascii_case("comment") {
                    metadata = metadata.with_description(value).map_err(delta)?;
                } else if crate::table::features::protocol_only(&key) {
                    // Versions raise the protocol; they are not kept.
                    explicit_versions.push((key, value));
                } else {
                    metadata = metadata.add_config_key(key, value).map_err(delta)?;
                }
            }
            let mapped = crate::table::features::column_mapping(metadata.configuration());
            if was_mapped && !mapped {
                return Err(Error::Refused {
                    message: format!(
                        "[DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE] changing the column \
                         mapping mode of {name} from 'name' to 'none' is not supported"
                    ),
                    state: crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED,
                });
            }
            if mapped && !was_mapped {
                // Turning mapping on rewrites nothing: each column's
                // physical name is its current name.
                let (schema, max) =
                    crate::table::features::assign_column_mapping(&schema, 0, true)?;
                metadata = metadata
                    .with_schema(&schema)
                    .map_err(delta)?
                    .add_config_key(
                        crate::table::features::COLUMN_MAPPING_MAX_ID.to_string(),
                        max.to_string(),
                    )
                    .map_err(delta)?;
            }
            (
                "SET TBLPROPERTIES",
                json!({ "properties": Value::Object(recorded).to_string() }),
                metadata,
            )
        }
        MetadataChange::UnsetProperties { keys, if_exists } => {
            let mut metadata = metadata;
            let mut removed = false;
            for key in &keys {
                if key.to_lowercase().starts_with(CONSTRAINT_PREFIX) {
                    return Err(Error::ConstraintProperty { key: key.clone() });
                }
                let present = metadata
                    .configuration()
                    .keys()
                    .find(|k| k.eq_ignore_ascii_case(key))
                    .cloned();
                match present {
                    Some(k) => {
                        metadata = metadata.remove_config_key(&k).map_err(delta)?;
                        removed = true;
                    }
                    None if if_exists => {}
                    None => {
                        return Err(Error::UnsetMissingProperty {
                            table: name.to_string(),
                            key: key.clone(),
                        })
                    }
                }
            }
            if !removed {
                // `IF EXISTS` of keys the table does not have: no change.
                return Ok(());
            }
            (
                "UNSET TBLPROPERTIES",
                json!({
                    "properties": Value::from(keys).to_string(),
                    "ifExists": if_exists.to_string(),
                }),
                metadata,
            )
        }
        MetadataChange::AddConstraint {
            name: constraint,
            expr,
        } => {
            let constraint = constraint.to_lowercase();
            if constraints(&snapshot).iter().any(|(n, _)| *n == constraint) {
                return Err(Error::ConstraintExists {
                    table: name.to_string(),
                    name: constraint,
                });
            }
            (
                "ADD CONSTRAINT",
                json!({ "name": constraint, "expr": expr }),
                metadata
                    .add_config_key(format!("{CONSTRAINT_PREFIX}{constraint}"), expr)
                    .map_err(delta)?,
            )
        }
        MetadataChange::DropConstraint {
            name: constraint,
            if_exists,
        } => {
            let key = metadata
                .configuration()
                .keys()
                .find(|k| {
                    k.strip_prefix(CONSTRAINT_PREFIX)
                        .is_some_and(|n| n.eq_ignore_ascii_case(&constraint))
                })
                .cloned();
            let Some(key) = key else {
                if if_exists {
                    return Ok(());
                }
                return Err(Error::ConstraintNotFound {
                    table: name.to_string(),
                    name: constraint,
                });
            };
            let expr = metadata
                .configuration()
                .get(&key)
                .cloned()
                .unwrap_or_default();
            (
                "DROP CONSTRAINT",
                json!({ "name": constraint.to_lowercase(), "expr": expr, "existed": "true" }),
                metadata.remove_config_key(&key).map_err(delta)?,
            )
        }
        MetadataChange::RenameColumn { from, to } => {
            require_column_mapping(name, &metadata, "RENAME COLUMN")?;
            if fields
                .iter()
                .any(|f| f.name.eq_ignore_ascii_case(&to) && !f.name.eq_ignore_ascii_case(&from))
            {
                return Err(Error::DuplicateColumn { column: to });
            }
            let field = find_field(&mut fields, name, &from)?;
            let old = field.name.clone();
            field.name = to.clone();
            let schema = struct_type(fields)?;
            // Partition columns are listed by logical name.
            let partitions: Vec<String> = metadata
                .partition_columns()
                .iter()
                .map(|c| if *c == old { to.clone() } else { c.clone() })
                .collect();
            let metadata =
                with_partition_columns(metadata.with_schema(&schema).map_err(delta)?, partitions)?;
            (
                "RENAME COLUMN",
                json!({ "oldColumnPath": old, "newColumnPath": to }),
                metadata,
            )
        }
        MetadataChange::DropColumns { columns, if_exists } => {
            require_column_mapping(name, &metadata, "DROP COLUMN")?;
            let mut dropped = Vec::new();
            for column in &columns {
                let Some(at) = fields
                    .iter()
                    .position(|f| f.name.eq_ignore_ascii_case(column))
                else {
                    if if_exists {
                        continue;
                    }
                    return Err(unknown_column(name, column));
                };
                let field = fields.remove(at);
                if metadata.partition_columns().contains(&field.name) {
                    return Err(Error::Refused {
                        message: format!(
                            "[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN] dropping partition \
                             column {} of {name} is not allowed",
                            field.name
                        ),
                        state: crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED,
                    });
                }
                if let Some((constraint, _)) = constraints(&snapshot)
                    .into_iter()
                    .find(|(_, expr)| mentions(expr, &field.name))
                {
                    return Err(Error::Refused {
                        message: format!(
                            "[DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE] cannot drop column {} \
                             of {name}: CHECK constraint {constraint} uses it",
                            field.name
                        ),
                        state: crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED,
                    });
                }
                if let Some(generated) = fields
                    .iter()
                    .find(|f| generation_expression(f).is_some_and(|e| mentions(&e, &field.name)))
                {
                    return Err(Error::Refused {
                        message: format!(
                            "[DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE] cannot drop \
                             column {} of {name}: generated column {} uses it",
                            field.name, generated.name
                        ),
                        state: crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED,
                    });
                }
                dropped.push(field.name);
            }
            if dropped.is_empty() {
                return Ok(());
            }
            if fields.is_empty() {
                return Err(Error::Refused {
                    message: format!(
                        "[DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA] cannot drop every column \
                         of {name}"
                    ),
                    state: crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED,
                });
            }
            let schema = struct_type(fields)?;
            (
                "DROP COLUMNS",
                json!({ "columns": Value::from(dropped).to_string() }),
                metadata.with_schema(&schema).map_err(delta)?,
            )
        }
        MetadataChange::ColumnDefault { column, default } => {
            let field = find_field(&mut fields, name, &column)?;
            let key = crate::table::features::CURRENT_DEFAULT;
            match default {
                Some(text) => {
                    field
                        .metadata
                        .insert(key.to_string(), MetadataValue::String(text));
                }
                None => {
                    if field.metadata.remove(key).is_none() {
                        return Ok(());
                    }
                }
            }
            let changed = field.clone();
            change_column(name, &changed, fields, metadata)?
        }
        MetadataChange::ColumnType { column, data_type } => {
            let data_type = crate::table::types::delta_type(&data_type)?;
            let enabled = metadata
                .configuration()
                .get("delta.enableTypeWidening")
                .is_some_and(|v| v.eq_ignore_ascii_case("true"));
            let field = find_field(&mut fields, name, &column)?;
            let from = field.data_type().clone();
            if from == data_type {
                return Ok(());
            }
            let (from_name, to_name) = (
                crate::table::types::spark_type_name(&from),
                crate::table::types::spark_type_name(&data_type),
            );
            if !enabled || !crate::table::types::widens(&from, &data_type) {
                let why = if enabled {
                    "it is not a widening Delta's type widening allows".to_string()
                } else {
                    format!(
                        "enable type widening first: ALTER TABLE {name} SET TBLPROPERTIES \
                         ('delta.enableTypeWidening' = 'true')"
                    )
                };
                return Err(Error::Refused {
                    message: format!(
                        "[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER TABLE ALTER \
                         COLUMN is not supported for changing column {} from {from_name} to \
                         {to_name}: {why}",
                        field.name
                    ),
                    state: crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED,
                });
            }
            // Delta's type widening: the field keeps each change, so that a
            // reader knows older files hold the narrower type.
            let mut changes = match field.metadata.get(crate::table::types::TYPE_CHANGES) {
                Some(MetadataValue::Other(Value::Array(a))) => a.clone(),
                _ => Vec::new(),
            };
            let primitive =
                |t: &deltalake::kernel::DataType| serde_json::to_value(t).unwrap_or(Value::Null);
            changes.push(json!({ "fromType": primitive(&from), "toType": primitive(&data_type) }));
            field.data_type = data_type;
            field.metadata.insert(
                crate::table::types::TYPE_CHANGES.to_string(),
                MetadataValue::Other(Value::Array(changes)),
            );
            let changed = field.clone();
            change_column(name, &changed, fields, metadata)?
        }
        MetadataChange::ClusterBy(columns) => {
            let old = crate::table::clustering::columns(metadata.configuration());
            let (logical, property, domain) = crate::table::clustering::cluster_by(
                &name.to_string(),
                &columns,
                &schema,
                metadata.partition_columns(),
            )?;
            if logical == old && crate::table::clustering::is_clustered(metadata.configuration()) {
                return Ok(());
            }
            domains.push(Action::DomainMetadata(domain));
            (
                "CLUSTER BY",
                json!({
                    "oldClusteringColumns": old.join(","),
                    "newClusteringColumns": logical.join(","),
                }),
                metadata
                    .add_config_key(crate::table::clustering::PROPERTY.to_string(), property)
                    .map_err(delta)?,
            )
        }
        MetadataChange::TableComment(comment) => {
            let text = comment.unwrap_or_default();
            if metadata.description().unwrap_or_default() == text {
                return Ok(());
            }
            (
                "SET TBLPROPERTIES",
                json!({ "properties": json!({ "comment": text }).to_string() }),
                metadata.with_description(text).map_err(delta)?,
            )
        }
    };

    // The protocol the new metadata needs, in the same commit.
    let mut configuration = metadata.configuration().clone();
    configuration.extend(explicit_versions);
    let schema = metadata
        .parse_schema()
        .map_err(|e| Error::delta("altering", name.to_string(), e.into()))?;
    let clustered = crate::table::clustering::is_clustered(&configuration);
    let protocol = crate::table::features::upgrade(
        Some(snapshot.protocol()),
        &configuration,
        &schema,
        clustered,
    )?;
    let mut actions = vec![commit_info(operation, parameters, read_version)];
    if let Some(protocol) = protocol {
        actions.push(Action::Protocol(protocol));
    }
    actions.extend(domains);
    actions.push(Action::Metadata(metadata));
    let operation = DeltaOperation::SetTableProperties {
        properties: HashMap::new(),
    };
    let finalized = CommitBuilder::from(crate::commit_properties())
        .with_actions(actions)
        // Rows a new constraint was checked against must be all the rows:
        // any commit since the read version fails this one (40001).
        .with_max_retries(0)
        .build(Some(&snapshot), table.log_store(), operation)
        .await
        .map_err(|e| Error::delta("altering", name.to_string(), e))?;
    let mut altered = table.clone();
    altered.state = Some(finalized.snapshot());
    committed.finish(name, Some(read_version), altered).await;
    Ok(())
}

/// A `CHANGE COLUMN` commit's name, parameters and metadata: `changed` is
/// the column as it now is among `fields`.
fn change_column(
    name: &TableName,
    changed: &StructField,
    fields: Vec<StructField>,
    metadata: deltalake::kernel::Metadata,
) -> Result<(&'static str, Value, deltalake::kernel::Metadata)> {
    let schema = struct_type(fields)?;
    let metadata = metadata
        .with_schema(&schema)
        .map_err(|e| Error::delta("altering", name.to_string(), e.into()))?;
    Ok((
        "CHANGE COLUMN",
        json!({ "column": serde_json::to_string(changed).unwrap_or_default() }),
        metadata,
    ))
}

fn struct_type(fields: Vec<StructField>) -> Result<StructType> {
    StructType::try_new(fields).map_err(|e| Error::Internal(format!("a new schema: {e}")))
}

/// RENAME and DROP COLUMN change only the metadata, which needs the data
/// files to be read by physical name: column mapping (Databricks refuses
/// both without it, with these classes).
fn require_column_mapping(
    name: &TableName,
    metadata: &deltalake::kernel::Metadata,
    what: &str,
) -> Result<()> {
    if crate::table::features::column_mapping(metadata.configuration()) {
        return Ok(());
    }
    let class = if what.starts_with("RENAME") {
        "DELTA_UNSUPPORTED_RENAME_COLUMN"
    } else {
        "DELTA_UNSUPPORTED_DROP_COLUMN"
    };
    Err(Error::Refused {
        message: format!(
            "[{class}] {what} is not supported for {name}: enable column mapping first with \
             ALTER TABLE {name} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
        ),
        state: crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED,
    })
}

/// The highest column id a column-mapped table has given out.
fn max_column_id(metadata: &deltalake::kernel::Metadata) -> i64 {
    metadata
        .configuration()
        .get(crate::table::features::COLUMN_MAPPING_MAX_ID)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `metadata` with other partition columns (the kernel type has no setter).
fn with_partition_columns(
    metadata: deltalake::kernel::Metadata,
    columns: Vec<String>,
) -> Result<deltalake::kernel::Metadata> {
    let mut value = serde_json::to_value(&metadata)
        .map_err(|e| Error::Internal(format!("reading table metadata: {e}")))?;
    value["partitionColumns"] = json!(columns);
    serde_json::from_value(value).map_err(|e| Error::Internal(format!("table metadata: {e}")))
}

/// Whether SQL text `expr` names `column` (as a whole word, any case).
fn mentions(expr: &str, column: &str) -> bool {
    let column = column.to_lowercase();
    expr.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| word == column)
}

fn find_field<'a>(
    fields: &'a mut [StructField],
    table: &TableName,
    column: &str,
) -> Result<&'a mut StructField> {
    fields
        .iter_mut()
        .find(|f| f.name.eq_ignore_ascii_case(column))
        .ok_or_else(|| unknown_column(table, column))
}

/// The commit's first action: Databricks' operation name and parameters.
fn commit_info(operation: &str, parameters: Value, read_version: u64) -> Action {
    let operation_parameters = match parameters {
        Value::Object(map) => map.into_iter().collect(),
        _ => HashMap::new(),
    };
    Action::CommitInfo(CommitInfo {
        timestamp: Some(chrono::Utc::now().timestamp_millis()),
        operation: Some(operation.to_string()),
        operation_parameters: Some(operation_parameters),
        read_version: Some(read_version),
        is_blind_append: Some(false),
        engine_info: Some(format!("lakegres:{}", env!("CARGO_PKG_VERSION"))),
        user_name: crate::commit::upkeep::current_user(),
        ..Default::default()
    })
}
