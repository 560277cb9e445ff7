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
use deltalake::kernel::{
    Action, CommitInfo, DataType, EagerSnapshot, MetadataExt, MetadataValue, PrimitiveType,
    Protocol, StructField, StructType,
};
use deltalake::protocol::DeltaOperation;
use deltalake::DeltaTable;
use serde_json::{json, Value};

use crate::catalog::TableName;
use crate::committed::Committed;
use crate::error::{Error, Result};

/// The table property a CHECK constraint is stored under (Delta protocol,
/// "Check Constraints").
pub const CONSTRAINT_PREFIX: &str = "delta.constraints.";

/// The column metadata key of a generated column's expression (Delta
/// protocol, "Generated Columns").
pub const GENERATION_EXPRESSION: &str = "delta.generationExpression";

/// One metadata change.
#[derive(Debug, Clone)]
pub enum MetadataChange {
    /// New nullable columns at the end.
    AddColumns(Vec<StructField>),
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
}

/// The table's CHECK constraints: (name, expression), names lower case.
pub fn constraints(snapshot: &EagerSnapshot) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = snapshot
        .metadata()
        .configuration()
        .iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix(CONSTRAINT_PREFIX)?;
            Some((name.to_lowercase(), v.clone()))
        })
        .collect();
    found.sort();
    found
}

/// The generation expression of a column, if it is a generated column.
pub fn generation_expression(field: &StructField) -> Option<String> {
    match field.metadata.get(GENERATION_EXPRESSION) {
        Some(MetadataValue::String(s)) => Some(s.clone()),
        _ => None,
    }
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
    table: &DeltaTable,
    change: MetadataChange,
    committed: &Committed,
) -> Result<()> {
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
    let mut protocol = serde_json::to_value(snapshot.protocol())
        .map_err(|e| Error::Internal(format!("reading the protocol of {name}: {e}")))?;
    let mut protocol_changed = false;

    let (operation, parameters, metadata) = match change {
        MetadataChange::AddColumns(new) => {
            let mut seen: Vec<String> = fields.iter().map(|f| f.name.to_lowercase()).collect();
            for field in &new {
                if seen.contains(&field.name.to_lowercase()) {
                    return Err(Error::DuplicateColumn {
                        column: field.name.clone(),
                    });
                }
                seen.push(field.name.to_lowercase());
                if contains_timestamp_ntz(&field.data_type) {
                    protocol_changed |= add_feature(&mut protocol, "timestampNtz", None, true);
                }
            }
            let columns: Vec<Value> = new
                .iter()
                .map(|f| json!({ "column": f, "position": Value::Null }))
                .collect();
            fields.extend(new);
            let schema = struct_type(fields)?;
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
            let schema = struct_type(fields)?;
            (
                "CHANGE COLUMN",
                json!({ "column": serde_json::to_string(&changed).unwrap_or_default() }),
                metadata.with_schema(&schema).map_err(delta)?,
            )
        }
        MetadataChange::ColumnNotNull { column, not_null } => {
            let field = find_field(&mut fields, name, &column)?;
            field.nullable = !not_null;
            let changed = field.clone();
            let schema = struct_type(fields)?;
            (
                "CHANGE COLUMN",
                json!({ "column": serde_json::to_string(&changed).unwrap_or_default() }),
                metadata.with_schema(&schema).map_err(delta)?,
            )
        }
        MetadataChange::SetProperties(properties) => {
            let mut metadata = metadata;
            let mut recorded = serde_json::Map::new();
            for (key, value) in properties {
                if key.to_lowercase().starts_with(CONSTRAINT_PREFIX) {
                    return Err(Error::ConstraintProperty { key });
                }
                recorded.insert(key.clone(), Value::String(value.clone()));
                if key.eq_ignore_ascii_case("comment") {
                    metadata = metadata.with_description(value).map_err(delta)?;
                } else {
                    metadata = metadata.add_config_key(key, value).map_err(delta)?;
                }
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
            protocol_changed |= add_feature(&mut protocol, "checkConstraints", Some(3), false);
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

    let mut actions = vec![commit_info(operation, parameters, read_version)];
    if protocol_changed {
        let protocol: Protocol = serde_json::from_value(protocol)
            .map_err(|e| Error::Internal(format!("upgrading the protocol of {name}: {e}")))?;
        actions.push(Action::Protocol(protocol));
    }
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

fn struct_type(fields: Vec<StructField>) -> Result<StructType> {
    StructType::try_new(fields).map_err(|e| Error::Internal(format!("a new schema: {e}")))
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
        user_name: crate::upkeep::current_user(),
        ..Default::default()
    })
}

fn contains_timestamp_ntz(data_type: &DataType) -> bool {
    match data_type {
        DataType::Primitive(PrimitiveType::TimestampNtz) => true,
        DataType::Array(a) => contains_timestamp_ntz(a.element_type()),
        DataType::Map(m) => {
            contains_timestamp_ntz(m.key_type()) || contains_timestamp_ntz(m.value_type())
        }
        DataType::Struct(s) => s.fields().any(|f| contains_timestamp_ntz(&f.data_type)),
        _ => false,
    }
}

/// The writer features legacy writer versions imply (Delta protocol,
/// "Table Features": a table moving to version 7 lists them explicitly).
const LEGACY_WRITER_FEATURES: &[(i64, &str)] = &[
    (2, "appendOnly"),
    (2, "invariants"),
    (3, "checkConstraints"),
    (4, "changeDataFeed"),
    (4, "generatedColumns"),
    (5, "columnMapping"),
    (6, "identityColumns"),
];

/// Makes the protocol (as JSON) support `feature`: on a table-features
/// protocol (writer 7) by listing it, on a legacy one by raising the writer
/// version to `legacy_writer`, or, for a feature no legacy version has
/// (`reader`: a reader-writer feature like timestampNtz), by moving the
/// table to reader 3 / writer 7 with the features its versions implied.
/// Returns whether anything changed.
fn add_feature(
    protocol: &mut Value,
    feature: &str,
    legacy_writer: Option<i64>,
    reader: bool,
) -> bool {
    let writer = protocol["minWriterVersion"].as_i64().unwrap_or(2);
    let has = |p: &Value, list: &str| {
        p[list]
            .as_array()
            .is_some_and(|a| a.iter().any(|f| f.as_str() == Some(feature)))
    };
    if writer < 7 {
        if let Some(needed) = legacy_writer {
            if writer >= needed {
                return false;
            }
            protocol["minWriterVersion"] = json!(needed);
            return true;
        }
        // To table features: list what the legacy versions implied.
        let implied: Vec<&str> = LEGACY_WRITER_FEATURES
            .iter()
            .filter(|(v, _)| *v <= writer)
            .map(|(_, f)| *f)
            .collect();
        let read = protocol["minReaderVersion"].as_i64().unwrap_or(1);
        let reader_implied: Vec<&str> = if read >= 2 {
            vec!["columnMapping"]
        } else {
            vec![]
        };
        protocol["minWriterVersion"] = json!(7);
        protocol["writerFeatures"] = json!(implied);
        if reader {
            protocol["minReaderVersion"] = json!(3);
            protocol["readerFeatures"] = json!(reader_implied);
        }
    }
    let mut changed = false;
    if !has(protocol, "writerFeatures") {
        match protocol["writerFeatures"].as_array_mut() {
            Some(list) => list.push(json!(feature)),
            None => protocol["writerFeatures"] = json!([feature]),
        }
        changed = true;
    }
    if reader {
        let read = protocol["minReaderVersion"].as_i64().unwrap_or(1);
        if read < 3 {
            protocol["minReaderVersion"] = json!(3);
            protocol["readerFeatures"] = json!([]);
        }
        if !has(protocol, "readerFeatures") {
            match protocol["readerFeatures"].as_array_mut() {
                Some(list) => list.push(json!(feature)),
                None => protocol["readerFeatures"] = json!([feature]),
            }
            changed = true;
        }
    }
    changed
}
