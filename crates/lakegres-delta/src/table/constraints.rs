//! The constraints a table's metadata declares: CHECK constraints in its
//! properties, generation expressions in its columns' metadata (Delta
//! protocol, "Check Constraints" and "Generated Columns").

use deltalake::kernel::{EagerSnapshot, MetadataValue, StructField};

/// The table property a CHECK constraint is stored under (Delta protocol,
/// "Check Constraints").
pub const CONSTRAINT_PREFIX: &str = "delta.constraints.";

/// The column metadata key of a generated column's expression (Delta
/// protocol, "Generated Columns").
pub const GENERATION_EXPRESSION: &str = "delta.generationExpression";

/// The table's CHECK constraints: (name, expression), names lower case.
pub(crate) fn constraints(snapshot: &EagerSnapshot) -> Vec<(String, String)> {
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
pub(crate) fn generation_expression(field: &StructField) -> Option<String> {
    match field.metadata.get(GENERATION_EXPRESSION) {
        Some(MetadataValue::String(s)) => Some(s.clone()),
        _ => None,
    }
}
