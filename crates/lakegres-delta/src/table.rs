//! What a table is, beyond its rows: the protocol features it needs
//! (`features.rs`), its column types as Databricks names them
//! (`types.rs`), identity columns (`identity.rs`), liquid clustering
//! (`clustering.rs`), column mapping in the files our writers make
//! (`column_mapping.rs`), the checks every row written must pass
//! (`checks.rs`) and the constraints its metadata declares
//! (`constraints.rs`), and the delta-rs types of the table handle that the SQL
//! layer names (`kernel.rs`).

pub(crate) mod checks;
pub mod clustering;
pub(crate) mod column_mapping;
pub mod constraints;
pub mod features;
pub mod identity;
pub mod kernel;
pub mod types;
