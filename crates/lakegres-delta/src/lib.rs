//! lakegres-delta: the storage layer. The warehouse catalog (schema.table →
//! Delta table location), the DataFusion table provider over Delta tables,
//! and every write as one Delta commit.
//!
//! It knows deltalake and DataFusion, never pgwire or SQL text.

mod alter;
pub mod append;
mod catalog;
mod checks;
pub mod clone;
pub mod clustering;
mod column_mapping;
mod committed;
pub mod copy_into;
pub mod create;
mod damaged_checkpoint;
mod deletion_vectors;
mod dml;
mod error;
mod faults;
pub mod features;
pub mod files;
pub mod grants;
mod group_commit;
pub mod identity;
pub mod kernel;
pub mod lookup;
mod maintenance;
pub mod merge;
mod not_in;
mod operation_name;
mod provider;
mod recent_commits;
mod replace;
pub mod requests;
mod rewrite;
pub mod row_cache;
mod schema_provider;
mod storage;
pub mod task_scan;
pub mod types;
mod upkeep;

pub use alter::{
    alter_metadata, constraints, generation_expression, MetadataChange, CONSTRAINT_PREFIX,
    GENERATION_EXPRESSION,
};
pub use catalog::{
    commit_timestamp, normalize_schema, Catalog, SchemalessTable, StoredView, TableAt, TableName,
    ViewColumn, ViewWrite, DEFAULT_SCHEMA, EXTERNAL_MARKER, SCHEMALESS_MARKER, SCHEMA_MARKER,
    VIEW_MARKER,
};
pub use checks::{explain_invalid_data, WriteChecks};
pub use committed::{Commit, CommitSink};
pub use dml::{DeltaDmlExec, DmlNode, DmlOp, DmlPlanner, DmlRoute, DmlRule};
pub use error::{
    delta_error_sqlstate, storage_full_or, Error, Result, CHECK_VIOLATED, NOT_NULL_VIOLATED,
    REPLACE_WHERE_MISMATCH,
};
pub use files::{Access, FileEntry, FileRoots, Location};
pub use lakegres_common::SqlState;
pub use maintenance::{
    deleted_file_retention_ms, file_totals, optimize, purge, restore, vacuum, FileTotals,
    OptimizeRequest, PartitionFilter, PurgeMetrics, RestoreMetrics, VacuumOutcome, VacuumRequest,
};
pub use not_in::NullFreeNotIn;
pub use provider::{write_plan, writer_properties, DeltaProvider, DeltaWriteExec, WriteOptions};
pub use replace::{replace_matching, ReplaceMetrics, Replacement};
pub use schema_provider::{LakeCatalogProvider, LakeSchemaProvider, ViewEntry};
pub use storage::{check_conditional_put, StorageConfig};
pub use upkeep::{after_commit, as_user, commit_properties, commit_properties_with};

/// The physical planners of the nodes this crate and delta-rs put into
/// plans (delta-rs' metric and validation nodes, UPDATE / DELETE).
pub fn extension_planners(
) -> Vec<std::sync::Arc<dyn datafusion::physical_planner::ExtensionPlanner + Send + Sync>> {
    vec![
        deltalake::delta_datafusion::planner::DeltaExtensionPlanner::new(),
        std::sync::Arc::new(DmlPlanner),
    ]
}
