//! Writing a table's rows and files, one Delta commit each: appends of
//! literal rows (`append.rs`), COPY INTO (`copy_into.rs`), REPLACE USING /
//! ON (`replace.rs`), UPDATE and DELETE (`dml.rs`, `dml/`), MERGE
//! (`merge.rs`, `merge/`), and RESTORE, OPTIMIZE, VACUUM and PURGE
//! (`maintenance.rs`). What several of them share: rewriting the files a
//! statement touches (`rewrite.rs`) and marking removed rows in deletion
//! vectors (`deletion_vectors.rs`).

pub mod append;
pub mod copy_into;
mod deletion_vectors;
pub(crate) mod dml;
pub(crate) mod maintenance;
pub mod merge;
pub(crate) mod replace;
pub(crate) mod rewrite;
