//! Reading tables: the DataFusion table over a Delta table
//! (`provider.rs`), the change data feed (`changes.rs`), the scan that travels to workers (`task_scan.rs`), key
//! lookups without planning (`lookup.rs`) over tables held decoded in
//! memory (`row_cache.rs`), and `NOT IN` planned as a plain anti join where
//! the log proves the keys free of NULLs (`not_in.rs`).

pub mod changes;
pub mod lookup;
pub(crate) mod not_in;
pub(crate) mod provider;
pub mod row_cache;
pub mod task_scan;
