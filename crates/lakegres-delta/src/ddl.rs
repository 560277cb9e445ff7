//! The commits that make a table or change its definition: CREATE TABLE
//! (`create.rs`), ALTER TABLE and COMMENT ON (`alter.rs`), and SHALLOW /
//! DEEP CLONE (`clone.rs`).

pub(crate) mod alter;
pub mod clone;
pub mod create;
