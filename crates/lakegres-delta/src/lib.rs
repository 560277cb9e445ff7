//! lakegres-delta: the storage layer. The warehouse catalog (schema.table →
//! Delta table location), the DataFusion table provider over Delta tables,
//! and every write as one Delta commit.
//!
//! It knows deltalake and DataFusion, never pgwire or SQL text. Its rooms:
//!
//! - `catalog`: the warehouse — schemas, tables, views, grants — and the
//!   DataFusion catalog over it;
//! - `table`: what a table is beyond its rows — protocol features, column
//!   types, identity, clustering, column mapping, the checks rows pass;
//! - `read`: the DataFusion table over a Delta table ([`DeltaProvider`]),
//!   the scan that travels to workers, key lookups;
//! - `write`: the writes of rows and files, one commit each — the general
//!   path of a planned query's rows ([`write_plan`]), appends, COPY INTO,
//!   REPLACE, UPDATE/DELETE, MERGE, maintenance;
//! - `ddl`: the commits that make or redefine a table (CREATE, ALTER,
//!   CLONE);
//! - `commit`: around a commit — [`CommitSink`], group commit, operation
//!   names, checkpoints;
//! - `store`: the object stores — settings, the request wrapper, the file
//!   roots statements may name.
//!
//! Other crates name what is re-exported here, at the root.

mod catalog;
mod commit;
mod ddl;
mod error;
mod read;
mod store;
mod table;
mod write;

#[cfg(test)]
mod test_support;

pub use catalog::grants;
pub use ddl::{clone, create};
pub use read::{changes, lookup, row_cache, task_scan};
pub use store::{files, requests};
pub use table::handle::{ColumnInfo, Table, TableInfo};
pub use table::{clustering, features, identity, types};
pub use write::{append, copy_into, merge};

pub use catalog::{
    normalize_schema, Catalog, LakeCatalogProvider, LakeSchemaProvider, Reads, SchemalessTable,
    SessionCatalog, StoredView, TableAt, TableName, ViewColumn, ViewEntry, ViewWrite,
    DEFAULT_SCHEMA, EXTERNAL_MARKER, SCHEMALESS_MARKER, SCHEMA_MARKER, VIEW_MARKER,
};
pub use commit::committed::{Commit, CommitSink};
pub use commit::transaction::{Listed, Transaction};
pub use commit::transaction_record::recover as recover_transactions;
pub use commit::upkeep::{as_user, commit_properties, commit_properties_with};
pub use ddl::alter::{alter_metadata, MetadataChange};
pub use error::{
    delta_cause, storage_full_or, DeltaCause, Error, Result, CHECK_VIOLATED, NOT_NULL_VIOLATED,
    REPLACE_WHERE_MISMATCH,
};
pub use lakegres_common::SqlState;
pub use read::not_in::NullFreeNotIn;
pub use read::provider::DeltaProvider;
pub use store::files::{Access, FileEntry, FileRoots, Location};
pub use store::storage::StorageConfig;
pub use table::checks::WriteChecks;
pub use table::constraints::{CONSTRAINT_PREFIX, GENERATION_EXPRESSION};
pub use write::dml::{DeltaDmlExec, DmlNode, DmlOp, DmlPlanner, DmlRoute, DmlRule};
pub use write::files::writer_properties;
pub use write::insert::{write_plan, DeltaWriteExec, WriteMode, WriteOptions};
pub use write::maintenance::{
    file_totals, optimize, optimize_metrics, purge, restore, vacuum, FileTotals, FilterOp,
    OptimizeRequest, PartitionFilter, PurgeMetrics, RestoreMetrics, VacuumOutcome, VacuumRequest,
};
pub use write::replace::{replace_matching, ReplaceMetrics, Replacement};

/// The physical planners of the nodes this crate and delta-rs put into
/// plans (delta-rs' metric and validation nodes, UPDATE / DELETE).
pub fn extension_planners(
) -> Vec<std::sync::Arc<dyn datafusion::physical_planner::ExtensionPlanner + Send + Sync>> {
    vec![
        deltalake::delta_datafusion::planner::DeltaExtensionPlanner::new(),
        std::sync::Arc::new(DmlPlanner),
    ]
}
