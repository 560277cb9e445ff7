//! Writing a table's rows and files, one Delta commit each: the general
//! path, a planned query's rows written by delta-rs' `WriteBuilder` (INSERT,
//! CREATE TABLE … AS SELECT, a COPY INTO load; `insert.rs`), appends of
//! literal rows (`append.rs`), COPY INTO's target and record of loaded
//! files (`copy_into.rs`), REPLACE USING / ON (`replace.rs`), UPDATE and
//! DELETE (`dml.rs`, `dml/`), MERGE (`merge.rs`, `merge/`), and RESTORE,
//! OPTIMIZE, VACUUM and PURGE (`maintenance.rs`). What several of them
//! share: writing new data files (`files.rs`), rewriting the files a statement touches (`rewrite.rs`) and
//! marking removed rows in deletion vectors (`deletion_vectors.rs`).

pub mod append;
pub mod copy_into;
mod deletion_vectors;
pub(crate) mod dml;
pub(crate) mod files;
pub(crate) mod insert;
pub(crate) mod maintenance;
pub mod merge;
pub(crate) mod replace;
pub(crate) mod rewrite;
