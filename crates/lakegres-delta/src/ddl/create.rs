//! CREATE TABLE with a column list: the table's first version (or, for
//! CREATE OR REPLACE, its next one), made by delta-rs' `CreateBuilder`.
//! CREATE … AS SELECT writes its rows through [`crate::write_plan`].

use std::collections::HashMap;

use datafusion::arrow::datatypes::DataType;
use deltalake::kernel::{Action, StructField, StructType};
use deltalake::operations::create::CreateBuilder;
use deltalake::protocol::SaveMode;

use crate::catalog::TableName;
use crate::commit::committed::CommitSink;
use crate::error::{Error, Result};

/// One column of a CREATE TABLE.
#[derive(Debug, Clone, PartialEq)]
pub struct NewColumn {
    /// As declared (Delta keeps the spelling; SQL matches it in any case).
    pub name: String,
    /// The column's type as Arrow writes it (`crate::table::types` maps it
    /// to Delta's).
    pub data_type: DataType,
    pub nullable: bool,
    pub comment: Option<String>,
    /// The expression of a generated column (`GENERATED ALWAYS AS (…)`).
    pub generated: Option<String>,
    /// `varchar(n)` / `char(n)` for a STRING declared so.
    pub char_varchar: Option<crate::table::types::CharVarchar>,
    /// `GENERATED … AS IDENTITY`.
    pub identity: Option<crate::table::identity::Identity>,
    /// `DEFAULT expr`: SQL text.
    pub default: Option<String>,
}

/// A table to create from a column list.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTable {
    pub columns: Vec<NewColumn>,
    /// Declared names of the partition columns, in order.
    pub partition_columns: Vec<String>,
    /// Table properties (`delta.*` keys spelled canonically).
    pub configuration: HashMap<String, Option<String>>,
    pub comment: Option<String>,
    /// CREATE OR REPLACE of an existing table: its next version, history
    /// kept.
    pub replace: bool,
    /// `CLUSTER BY (cols)`: declared names.
    pub clustering: Vec<String>,
}

/// Commits `new` as the table at `table`'s location.
pub async fn create_table(
    name: &TableName,
    table: &crate::Table,
    new: NewTable,
    committed: &CommitSink,
) -> Result<()> {
    let table = table.delta();
    let read = if new.replace { table.version() } else { None };
    let fields: Vec<StructField> = new.columns.into_iter().map(field).collect::<Result<_>>()?;
    // The protocol the new metadata needs (crate::table::features decides it);
    // a replaced table keeps at least the one it had.
    let current = match read {
        Some(_) => Some(
            table
                .snapshot()
                .map_err(|e| Error::delta("replacing", name.to_string(), e))?
                .protocol()
                .clone(),
        ),
        None => None,
    };
    let schema = StructType::try_new(fields.clone())
        .map_err(|e| Error::Internal(format!("a new schema: {e}")))?;
    let mut new_configuration = new.configuration;
    let mut domain = None;
    if !new.clustering.is_empty() {
        let (_, property, action) = crate::table::clustering::cluster_by(
            &name.to_string(),
            &new.clustering,
            &schema,
            &new.partition_columns,
        )?;
        new_configuration.insert(
            crate::table::clustering::PROPERTY.to_string(),
            Some(property),
        );
        domain = Some(Action::DomainMetadata(action));
    }
    let configuration: HashMap<String, String> = new_configuration
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
        .collect();
    let clustered = crate::table::clustering::is_clustered(&configuration);
    let protocol =
        crate::table::features::upgrade(current.as_ref(), &configuration, &schema, clustered)?
            .or(current);
    let mut builder = CreateBuilder::new()
        .with_log_store(table.log_store())
        .with_table_name(name.table.clone())
        .with_columns(fields)
        .with_partition_columns(new.partition_columns)
        .with_configuration(crate::table::features::kept_configuration(
            new_configuration,
        ))
        // The SQL layer checks the delta.* keys it knows; delta-rs would
        // refuse every other key, including the user's own properties.
        .with_raise_if_key_not_exists(false)
        .with_commit_properties(crate::commit_properties())
        .with_save_mode(if new.replace {
            SaveMode::Overwrite
        } else {
            SaveMode::ErrorIfExists
        });
    if let Some(comment) = new.comment {
        builder = builder.with_comment(comment);
    }
    if let Some(protocol) = protocol {
        builder = builder.with_actions([Action::Protocol(protocol)]);
    }
    if let Some(domain) = domain {
        builder = builder.with_actions([domain]);
    }
    let created = builder
        .await
        .map_err(|e| Error::delta("creating", name.to_string(), e))?;
    committed.finish(name, read, created).await;
    Ok(())
}

pub(crate) fn field(column: NewColumn) -> Result<StructField> {
    let data_type = crate::table::types::delta_type(&column.data_type)?;
    let mut field = StructField::new(column.name, data_type, column.nullable);
    let mut metadata = Vec::new();
    if let Some(comment) = column.comment {
        metadata.push(("comment".to_string(), comment));
    }
    if let Some(declared) = column.char_varchar {
        metadata.push((
            crate::table::types::CHAR_VARCHAR_TYPE.to_string(),
            declared.to_string(),
        ));
    }
    if let Some(expr) = column.generated {
        // Delta keeps a generated column's expression in its metadata;
        // delta-rs then raises the protocol to writer 4.
        metadata.push((crate::GENERATION_EXPRESSION.to_string(), expr));
    }
    if !metadata.is_empty() {
        field = field.with_metadata(metadata);
    }
    if let Some(identity) = column.identity {
        field = field.add_metadata(identity.metadata());
    }
    if let Some(default) = column.default {
        field =
            field.add_metadata([(crate::table::features::CURRENT_DEFAULT.to_string(), default)]);
    }
    Ok(field)
}
