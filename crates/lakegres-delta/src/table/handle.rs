//! The table handle storage gives the SQL layer: a Delta table loaded at a
//! version (or not created yet), and what its snapshot says of it — the
//! columns as declared, partitioning, properties, protocol — in this
//! crate's own types, so that no delta-rs type crosses into the SQL crate.

use std::collections::HashMap;

use datafusion::arrow::datatypes::SchemaRef;
use deltalake::kernel::{EagerSnapshot, Protocol, StructField};
use deltalake::DeltaTable;

use lakegres_common::names::TableName;

use crate::error::{Error, Result};
use crate::table::identity::{identity_of, IdentityColumn};
use crate::table::types::{self, CharVarchar};

/// A Delta table: loaded at one version, or a handle on a location where
/// a table is to be created (`version()` is `None`).
#[derive(Clone, Debug)]
pub struct Table {
    delta: DeltaTable,
}

impl Table {
    pub(crate) fn new(delta: DeltaTable) -> Self {
        Self { delta }
    }

    pub(crate) fn delta(&self) -> &DeltaTable {
        &self.delta
    }

    pub(crate) fn into_delta(self) -> DeltaTable {
        self.delta
    }

    /// The loaded version; `None` before the table's first commit.
    pub fn version(&self) -> Option<i64> {
        self.delta.version().and_then(|v| i64::try_from(v).ok())
    }

    /// The latest version, where this handle has not loaded one yet (a
    /// table being replaced).
    pub async fn loaded(mut self, name: &TableName) -> Result<Self> {
        if self.delta.version().is_none() {
            self.delta
                .load()
                .await
                .map_err(|e| Error::delta("loading", name.to_string(), e))?;
        }
        Ok(self)
    }

    pub(crate) fn snapshot(&self, name: &TableName) -> Result<&EagerSnapshot> {
        self.delta
            .snapshot()
            .map(|state| state.snapshot())
            .map_err(|e| Error::delta("loading", name.to_string(), e))
    }

    /// The columns as DataFusion reads them.
    pub fn arrow_schema(&self, name: &TableName) -> Result<SchemaRef> {
        Ok(self.snapshot(name)?.arrow_schema())
    }

    /// What the loaded version says of the table.
    pub fn info(&self, name: &TableName) -> Result<TableInfo> {
        let snapshot = self.snapshot(name)?;
        let metadata = snapshot.metadata();
        let protocol = snapshot.protocol();
        Ok(TableInfo {
            version: i64::try_from(snapshot.version()).unwrap_or(i64::MAX),
            id: metadata.id().to_string(),
            description: metadata.description().map(str::to_string),
            created_time: metadata.created_time(),
            partition_columns: metadata.partition_columns().to_vec(),
            properties: metadata.configuration().clone(),
            min_reader_version: protocol.min_reader_version(),
            min_writer_version: protocol.min_writer_version(),
            features: features(protocol),
            columns: snapshot.schema().fields().map(ColumnInfo::of).collect(),
        })
    }

    /// When the loaded version was committed (ms since the epoch).
    pub async fn committed_at(&self) -> Option<i64> {
        self.version_committed_at(self.version()?).await
    }

    /// When `version` was committed (ms since the epoch).
    pub async fn version_committed_at(&self, version: i64) -> Option<i64> {
        let version = u64::try_from(version).ok()?;
        commit_timestamp(&self.delta.log_store(), version).await
    }

    /// The `commitInfo` of each version from `latest` down, newest first,
    /// at most `limit` of them; stops at the first commit cleaned up.
    pub async fn history(
        &self,
        name: &TableName,
        limit: u64,
    ) -> Result<Vec<(i64, serde_json::Value)>> {
        let log_store = self.delta.log_store();
        let mut rows = Vec::new();
        let mut version = self.version().unwrap_or(0);
        while version >= 0 && (rows.len() as u64) < limit {
            let Some(bytes) = log_store
                .read_commit_entry(version as _)
                .await
                .map_err(|e| Error::delta("reading the history of", name.to_string(), e))?
            else {
                break; // older commits were cleaned up
            };
            let info = String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find_map(|v| v.get("commitInfo").cloned())
                .unwrap_or(serde_json::Value::Null);
            rows.push((version, info));
            version -= 1;
        }
        Ok(rows)
    }
}

/// A table at one version, as its snapshot describes it.
#[derive(Clone, Debug)]
pub struct TableInfo {
    pub version: i64,
    pub id: String,
    pub description: Option<String>,
    /// When the table was created (ms since the epoch).
    pub created_time: Option<i64>,
    pub partition_columns: Vec<String>,
    pub properties: HashMap<String, String>,
    pub min_reader_version: i32,
    pub min_writer_version: i32,
    /// The table features the protocol supports, by name, sorted.
    pub features: Vec<String>,
    pub columns: Vec<ColumnInfo>,
}

impl TableInfo {
    /// The column named `name`, in any case.
    pub fn column(&self, name: &str) -> Option<&ColumnInfo> {
        self.columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// The liquid clustering columns.
    pub fn clustering_columns(&self) -> Vec<String> {
        crate::table::clustering::columns(&self.properties)
    }
}

/// One column as the table declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnInfo {
    pub name: String,
    /// Databricks' name of its type as declared (`varchar(20)`, `bigint`,
    /// `array<string>`).
    pub type_name: String,
    pub nullable: bool,
    pub comment: Option<String>,
    /// `DEFAULT`: SQL text.
    pub default: Option<String>,
    /// `GENERATED ALWAYS AS (…)`: SQL text.
    pub generated: Option<String>,
    pub identity: Option<IdentityColumn>,
    pub char_varchar: Option<CharVarchar>,
    /// Precision and scale of a DECIMAL.
    pub decimal_digits: Option<(u8, u8)>,
}

impl ColumnInfo {
    fn of(field: &StructField) -> Self {
        Self {
            name: field.name().clone(),
            type_name: types::column_type_name(field),
            nullable: field.is_nullable(),
            comment: types::column_comment(field),
            default: types::column_default(field),
            generated: crate::table::constraints::generation_expression(field),
            identity: identity_of(field),
            char_varchar: types::char_varchar(field),
            decimal_digits: types::decimal_digits(field),
        }
    }
}

/// The features a protocol supports, by name: its feature lists, or for a
/// legacy protocol (writer version < 7) the features that version implies,
/// as Databricks lists them.
fn features(protocol: &Protocol) -> Vec<String> {
    let mut features: Vec<String> = Vec::new();
    if protocol.min_writer_version() >= 7 {
        for f in protocol
            .reader_features()
            .unwrap_or_default()
            .iter()
            .chain(protocol.writer_features().unwrap_or_default())
        {
            let name = f.to_string();
            if !features.contains(&name) {
                features.push(name);
            }
        }
    } else if let Ok(json) = serde_json::to_value(protocol) {
        use crate::table::features::{supports, FEATURES};
        features.extend(
            FEATURES
                .iter()
                .filter(|f| supports(&json, **f))
                .map(|f| f.name().to_string()),
        );
    }
    features.sort();
    features
}

/// The commit time (ms) of a version, from its commitInfo.
pub(crate) async fn commit_timestamp(
    log_store: &deltalake::logstore::LogStoreRef,
    version: u64,
) -> Option<i64> {
    let bytes = log_store.read_commit_entry(version as _).await.ok()??;
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v.get("commitInfo")?.get("timestamp")?.as_i64())
}

#[cfg(test)]
mod tests {
    use deltalake::kernel::executor::InlineTokioExecutor;
    use tokio::runtime::Handle;

    /// The executor the kernel's engine reads the log with (vendored
    /// delta-rs patch 13) runs a future from a worker, from a blocking-pool
    /// thread, and nested inside itself.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_kernel_executor_runs_futures_on_any_runtime_thread() {
        let executor = InlineTokioExecutor::new(Handle::current());
        assert_eq!(executor.run_here(async { 2 + 2 }), 4);
        let inner = executor.clone();
        let nested = tokio::task::spawn_blocking(move || {
            let again = inner.clone();
            inner.run_here(async move {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                tokio::task::spawn_blocking(move || again.run_here(async { 3 }))
                    .await
                    .unwrap_or(0)
            })
        })
        .await;
        assert_eq!(nested.ok(), Some(3));
    }
}
