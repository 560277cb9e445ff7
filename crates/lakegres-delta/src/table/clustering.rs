//! Liquid clustering (`CLUSTER BY (cols)`): the clustering columns are kept
//! where the Delta protocol keeps them — a `domainMetadata` action of the
//! `delta.clustering` domain whose configuration lists them by physical
//! name (`{"clusteringColumns":[["c"]]}`), with the table features
//! `clustering` and `domainMetadata` — and, as Delta's Spark connector does
//! in its catalog, under the table property `clusteringColumns` by logical
//! name, which is where Lakegres reads them back. `OPTIMIZE` then orders the
//! table's rows by those columns (Z-order), so that a filter on one of them
//! skips files by their statistics.

use std::collections::HashMap;

use deltalake::kernel::{DomainMetadata, StructType};
use serde_json::json;

use crate::error::{Error, Result};

/// The system domain the protocol keeps clustering columns in.
pub const DOMAIN: &str = "delta.clustering";
/// The table property that repeats them, by logical name.
pub const PROPERTY: &str = "clusteringColumns";

/// The clustering columns a table's configuration names (logical names).
pub fn columns(configuration: &HashMap<String, String>) -> Vec<String> {
    configuration
        .get(PROPERTY)
        .and_then(|v| serde_json::from_str::<Vec<Vec<String>>>(v).ok())
        .map(|paths| {
            paths
                .into_iter()
                .filter_map(|p| p.into_iter().next())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the table was ever clustered (its protocol keeps the feature,
/// even after `CLUSTER BY NONE`).
pub fn is_clustered(configuration: &HashMap<String, String>) -> bool {
    configuration.contains_key(PROPERTY)
}

/// Clustering by `columns` (declared names, any case) of a table with
/// `schema` and `partition_columns`: the columns as the table names them,
/// the property's value, and the domain action.
pub(crate) fn cluster_by(
    table: &str,
    columns: &[String],
    schema: &StructType,
    partition_columns: &[String],
) -> Result<(Vec<String>, String, DomainMetadata)> {
    if !columns.is_empty() && !partition_columns.is_empty() {
        return Err(Error::Refused {
            message: format!(
                "[DELTA_CLUSTER_BY_WITH_PARTITIONED_BY] {table}: clustering and partitioning \
                 cannot both be specified"
            ),
            state: crate::SqlState::SYNTAX_ERROR,
        });
    }
    if columns.len() > 4 {
        return Err(Error::Refused {
            message: format!(
                "[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS] {table}: at most 4 clustering columns, \
                 got {}",
                columns.len()
            ),
            state: crate::SqlState::INVALID_PARAMETER_VALUE,
        });
    }
    let mut logical = Vec::with_capacity(columns.len());
    let mut physical = Vec::with_capacity(columns.len());
    for column in columns {
        let field = schema
            .fields()
            .find(|f| f.name().eq_ignore_ascii_case(column))
            .ok_or_else(|| Error::UnknownColumn {
                table: table.to_string(),
                column: column.clone(),
            })?;
        if logical.contains(field.name()) {
            return Err(Error::DuplicateColumn {
                column: field.name().clone(),
            });
        }
        logical.push(field.name().clone());
        physical.push(vec![
            crate::table::column_mapping::physical_name(field).to_string()
        ]);
    }
    let property = json!(logical.iter().map(|c| vec![c]).collect::<Vec<_>>()).to_string();
    let domain = DomainMetadata {
        domain: DOMAIN.to_string(),
        configuration: json!({ "clusteringColumns": physical }).to_string(),
        removed: false,
    };
    Ok((logical, property, domain))
}
