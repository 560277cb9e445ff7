//! One module per statement family, each with what the extended protocol's
//! Describe reports and how the statement runs. `statement.rs` says which
//! module takes which statement.

pub(crate) mod alter;
pub(crate) mod append_values;
pub(crate) mod copy;
pub(crate) mod copy_into;
pub(crate) mod cursor;
pub(crate) mod ddl;
pub(crate) mod describe;
pub(crate) mod detail;
pub(crate) mod grants;
pub(crate) mod insert;
pub(crate) mod list;
pub(crate) mod maintenance;
pub(crate) mod merge;
pub(crate) mod on_conflict;
pub(crate) mod query;
pub(crate) mod returning;
pub(crate) mod set;
pub(crate) mod transaction;
pub(crate) mod update_delete;
pub(crate) mod variables;
pub(crate) mod views;
