//! The privilege model, Unity Catalog's reduced to what a warehouse of
//! schemas and tables needs: what a grant allows, what it is on, and who
//! holds it. The grant store (in the warehouse) is `lakegres-delta`'s.

use serde::{Deserialize, Serialize};

use crate::names::TableName;

/// What a grant allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Privilege {
    #[serde(rename = "SELECT")]
    Select,
    #[serde(rename = "MODIFY")]
    Modify,
    #[serde(rename = "CREATE")]
    Create,
    #[serde(rename = "USE SCHEMA")]
    UseSchema,
    #[serde(rename = "ALL PRIVILEGES")]
    All,
}

impl Privilege {
    /// The name SHOW GRANTS prints.
    pub fn name(self) -> &'static str {
        match self {
            Self::Select => "SELECT",
            Self::Modify => "MODIFY",
            Self::Create => "CREATE",
            Self::UseSchema => "USE SCHEMA",
            Self::All => "ALL PRIVILEGES",
        }
    }

    /// Whether a grant of `self` allows `wanted`.
    pub fn covers(self, wanted: Privilege) -> bool {
        self == wanted || self == Self::All
    }
}

/// What a grant is on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Securable {
    Schema { schema: String },
    Table { schema: String, table: String },
}

impl Securable {
    pub fn table(name: &TableName) -> Self {
        Self::Table {
            schema: name.schema.clone(),
            table: name.table.clone(),
        }
    }

    /// `SCHEMA` or `TABLE`, as SHOW GRANTS prints it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Schema { .. } => "SCHEMA",
            Self::Table { .. } => "TABLE",
        }
    }

    /// The object's name (`s` or `s.t`).
    pub fn key(&self) -> String {
        match self {
            Self::Schema { schema } => schema.clone(),
            Self::Table { schema, table } => format!("{schema}.{table}"),
        }
    }

    /// Whether a grant on `self` holds for the table `name`.
    pub fn holds_for(&self, name: &TableName) -> bool {
        match self {
            Self::Schema { schema } => *schema == name.schema,
            Self::Table { schema, table } => *schema == name.schema && *table == name.table,
        }
    }
}

/// One privilege given to one user on one object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Grant {
    /// The user, lower case (names compare without case, as Databricks'
    /// principals do).
    pub principal: String,
    pub privilege: Privilege,
    pub object: Securable,
}
