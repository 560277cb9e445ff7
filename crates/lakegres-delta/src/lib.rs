//! lakegres-delta: the storage layer. The warehouse catalog (schema.table →
//! Delta table location), the DataFusion table provider over Delta tables,
//! and every write as one Delta commit.
//!
//! It knows deltalake and DataFusion, never pgwire or SQL text.

mod catalog;
mod dml;
mod error;
pub mod files;
pub mod lookup;
mod maintenance;
mod provider;
mod replace;
mod schema_provider;
pub mod sqlstate;
mod storage;
pub mod types;

pub use catalog::{
    commit_timestamp, normalize_schema, Catalog, SchemalessTable, TableAt, TableName,
    DEFAULT_SCHEMA, EXTERNAL_MARKER, SCHEMALESS_MARKER, SCHEMA_MARKER,
};
pub use dml::{DeltaDmlExec, DmlOp};
pub use error::{delta_error_sqlstate, Error, Result, REPLACE_WHERE_MISMATCH};
pub use files::{FileEntry, FileRoots, Location};
pub use maintenance::{
    deleted_file_retention_ms, file_totals, optimize, restore, vacuum, FileTotals, OptimizeRequest,
    PartitionFilter, RestoreMetrics, VacuumOutcome, VacuumRequest,
};
pub use provider::{write_plan, writer_properties, DeltaProvider, DeltaWriteExec, WriteOptions};
pub use replace::{replace_matching, ReplaceMetrics, Replacement};
pub use schema_provider::{LakeCatalogProvider, LakeSchemaProvider};
pub use sqlstate::SqlState;
pub use storage::{check_conditional_put, StorageConfig};

/// Re-exported so the layers above use the same deltalake build.
pub use deltalake;
