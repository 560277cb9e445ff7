//! What a table is, beyond its rows: the protocol features it needs
//! (`features.rs`), its column types as Databricks names them
//! (`types.rs`), identity columns (`identity.rs`), liquid clustering
//! (`clustering.rs`), column mapping in the files our writers make
//! (`column_mapping.rs`), the checks every row written must pass
//! (`checks.rs`) and the constraints its metadata declares
//! (`constraints.rs`), and the table handle the SQL layer holds, with what
//! a table's snapshot says of it (`handle.rs`).

pub(crate) mod checks;
pub mod clustering;
pub(crate) mod column_mapping;
pub mod constraints;
pub mod features;
pub mod handle;
pub mod identity;
pub mod types;
