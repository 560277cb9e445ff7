//! What every Lakegres crate names and none owns: SQLSTATE codes (each
//! crate's error maps to one, the wire sends it), table names as the
//! warehouse normalises them, the privilege model grants are made of, and
//! the declared `CHAR(n)` / `VARCHAR(n)` of a STRING column.
//!
//! It depends on no engine (no DataFusion, no delta-rs, no pgwire), so the
//! wire can name a SQLSTATE without depending on storage.

pub mod char_varchar;
pub mod names;
pub mod privileges;
pub mod sqlstate;

pub use names::{normalize_schema, InvalidName, TableName, DEFAULT_SCHEMA};
pub use privileges::{Grant, Privilege, Securable};
pub use sqlstate::SqlState;
