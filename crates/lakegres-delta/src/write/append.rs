//! Appending rows a statement already holds (`INSERT … VALUES` of literals)
//! without planning a write: the rows go to the table's group-commit queue
//! as they are, and the commit that takes them writes the rows of all its
//! statements into one data file (one per partition) before it commits.
//!
//! The general write path plans each INSERT, writes a file per statement
//! through delta-rs' `WriteBuilder` and then joins the group; for a one-row
//! INSERT that cost several milliseconds of CPU and a file per statement.
//! This path serves only tables whose rows need nothing but their values —
//! no NOT NULL, CHECK, generated, identity, CHAR/VARCHAR or invariant
//! columns, no column mapping, and no writer feature besides the ones an
//! append of plain rows honours by itself ([`appendable`]); every other
//! table, and every statement that is more than literals, takes the general
//! path, so the two cannot disagree on what a statement means.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use deltalake::kernel::transaction::GatedCommit;
use deltalake::kernel::EagerSnapshot;
use deltalake::logstore::LogStoreRef;
use deltalake::operations::write::WriteMetrics;
use deltalake::protocol::{DeltaOperation, SaveMode};
use uuid::Uuid;

use crate::catalog::TableName;
use crate::commit::committed::{Commit, CommitSink};
use crate::error::{Error, Result};

/// The writer features an append of plain rows satisfies without doing
/// anything for them (CHECK constraints, generated and identity columns are
/// also allowed as features: [`appendable`] refuses a table that uses them).
const HARMLESS_WRITER_FEATURES: &[&str] = &[
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
    "identityColumns",
    "deletionVectors",
    "timestampNtz",
    "domainMetadata",
    "clustering",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "typeWidening",
    "typeWidening-preview",
    "allowColumnDefaults",
];

/// A table whose rows can be appended as they are, and the session that
/// appends them.
pub struct Appendable {
    /// The table's columns in order, with the Arrow types the rows must
    /// have.
    pub schema: SchemaRef,
    snapshot: EagerSnapshot,
    log_store: LogStoreRef,
    committed: Arc<CommitSink>,
    /// The session's open transaction: the rows wait in it for the block's
    /// next write of the table, instead of joining the queues other
    /// sessions share.
    transaction: Option<Arc<crate::Transaction>>,
}

/// `Some` when rows of `table` need nothing but their values (see the
/// module's comment); `committed` is the session's record of its commits.
pub fn appendable(table: &crate::Table, committed: &Arc<CommitSink>) -> Option<Appendable> {
    let table = table.delta();
    let committed = Arc::clone(committed);
    let snapshot = table.snapshot().ok()?.snapshot().clone();
    let protocol = serde_json::to_value(snapshot.protocol()).ok()?;
    if protocol["minWriterVersion"].as_i64()? > 7 {
        return None;
    }
    let features_known = protocol["writerFeatures"]
        .as_array()
        .is_none_or(|features| {
            features.iter().all(|f| {
                f.as_str()
                    .is_some_and(|name| HARMLESS_WRITER_FEATURES.contains(&name))
            })
        });
    let configuration = snapshot.metadata().configuration();
    if !features_known
        || crate::table::features::column_mapping(configuration)
        || !crate::table::constraints::constraints(&snapshot).is_empty()
    {
        return None;
    }
    let schema = snapshot.schema();
    let plain = schema.fields().all(|field| {
        let metadata = field.metadata();
        field.is_nullable()
            && crate::table::types::char_varchar(field).is_none()
            && crate::table::constraints::generation_expression(field).is_none()
            && !metadata.contains_key("delta.invariants")
            && crate::table::identity::identity_of(field).is_none()
    });
    plain.then(|| Appendable {
        schema: snapshot.arrow_schema(),
        snapshot,
        log_store: table.log_store(),
        transaction: committed.open_transaction(),
        committed,
    })
}

impl Appendable {
    /// Appends `batch` — the table's columns in order, of [`Self::schema`]'s
    /// types — to `name`: queued with the other appends to the table, and
    /// answered once the commit holding it is durable. Returns the rows
    /// appended.
    pub async fn append(self, name: &TableName, batch: RecordBatch) -> Result<u64> {
        let rows = batch.num_rows() as u64;
        if rows == 0 {
            return Ok(0);
        }
        if let Some(transaction) = &self.transaction {
            transaction.append(name, batch).await?;
            return Ok(rows);
        }
        let partitions = self.snapshot.metadata().partition_columns().to_vec();
        let operation = DeltaOperation::Write {
            mode: SaveMode::Append,
            partition_by: (!partitions.is_empty()).then_some(partitions),
            predicate: None,
        };
        // What `WriteBuilder` records for an append; the group commit fills
        // in the files and the time when it has written them.
        let metrics = WriteMetrics {
            num_added_rows: batch.num_rows(),
            ..Default::default()
        };
        let metrics = serde_json::to_value(&metrics).map_err(|e| Error::Internal(e.to_string()))?;
        let properties = crate::commit_properties_with([(
            crate::commit::group_commit::METRICS.to_string(),
            metrics,
        )]);
        let catalog = Arc::clone(self.committed.catalog());
        let commit = GatedCommit {
            actions: Vec::new(),
            operation,
            properties,
            read_snapshot: Some(self.snapshot),
            log_store: self.log_store,
            operation_id: Uuid::new_v4(),
        };
        let queue = catalog.groups.queue(commit.log_store.root_url().as_str());
        let grouped = crate::commit::group_commit::submit(
            queue,
            Arc::clone(&catalog),
            name.clone(),
            commit,
            Some(batch),
        )
        .await
        .map_err(|e| Error::delta("writing", name.to_string(), e))?;
        self.committed.record(Commit {
            table: name.clone(),
            version: grouped.version,
            files_added: grouped.files_added,
            bytes_added: grouped.bytes_added,
            statements_in_commit: grouped.statements,
            statements: Vec::new(),
        });
        Ok(rows)
    }
}
