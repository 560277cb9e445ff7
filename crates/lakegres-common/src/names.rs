//! Schema and table names as the warehouse keeps them: normalised, and
//! safe as folder names.

/// The schema of names without one (Postgres' `public` is this schema).
pub const DEFAULT_SCHEMA: &str = "default";

/// A name that cannot be a schema's or table's (42601).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[INVALID_IDENTIFIER] {name:?} is not a valid {what} name")]
pub struct InvalidName {
    pub what: &'static str,
    pub name: String,
}

/// A schema-qualified table name, normalised.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName {
    pub schema: String,
    pub table: String,
}

impl TableName {
    /// Normalises both parts: lower case, `public` → `default`.
    pub fn new(schema: &str, table: &str) -> Result<Self, InvalidName> {
        Ok(Self {
            schema: normalize_schema(schema)?,
            table: normalize_name("table", table)?,
        })
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.schema, self.table)
    }
}

/// Lower-cases a schema name and maps the Postgres name `public` to `default`.
pub fn normalize_schema(name: &str) -> Result<String, InvalidName> {
    let name = normalize_name("schema", name)?;
    Ok(if name == "public" {
        DEFAULT_SCHEMA.to_string()
    } else {
        name
    })
}

/// Names become folder names: letters, digits and `_` only, so no name can
/// climb out of the warehouse or collide with Delta's own `_delta_log`.
fn normalize_name(what: &'static str, name: &str) -> Result<String, InvalidName> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('_')
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(name.to_lowercase())
    } else {
        Err(InvalidName {
            what,
            name: name.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_folder_safe_and_public_is_default() {
        assert_eq!(
            TableName::new("Public", "Orders").map(|n| n.to_string()),
            Ok("default.orders".to_string())
        );
        for bad in ["", "_delta_log", "a/b", "..", "a.b"] {
            assert_eq!(
                normalize_schema(bad),
                Err(InvalidName {
                    what: "schema",
                    name: bad.to_string()
                })
            );
        }
    }
}
