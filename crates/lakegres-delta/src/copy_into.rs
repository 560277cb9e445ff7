//! The storage side of COPY INTO: the table a load writes to, which files
//! it loaded before, and the load's one commit.
//!
//! A loaded file is remembered as a Delta application transaction (`txn`,
//! app id `lakegres.copy_into:<path>`) committed with the file's rows, so a
//! concurrent load of the same file conflicts and a later one skips it.

use std::sync::Arc;

use datafusion::execution::context::SessionState;
use datafusion::physical_plan::ExecutionPlan;
use deltalake::kernel::EagerSnapshot;
use deltalake::logstore::LogStoreRef;
use deltalake::protocol::SaveMode;
use deltalake::DeltaTable;

use crate::catalog::TableName;
use crate::error::{Error, Result};
use crate::provider::{write_plan, DeltaProvider, WriteOptions};

/// The application id that records `path` as loaded.
pub fn load_id(path: &str) -> String {
    format!("lakegres.copy_into:{path}")
}

/// The table a load writes to: an existing Delta table, or one created
/// without columns, whose first commit the load makes.
pub struct LoadTarget {
    name: TableName,
    log_store: LogStoreRef,
    /// `None` for a table without columns.
    snapshot: Option<EagerSnapshot>,
}

impl LoadTarget {
    /// An existing table, at the version `provider` read.
    pub fn existing(provider: &DeltaProvider) -> Result<Self> {
        Ok(Self {
            name: provider.name().clone(),
            log_store: provider.table().log_store(),
            snapshot: Some(provider.snapshot()?.clone()),
        })
    }

    /// A table created without columns (no Delta table yet at `table`).
    pub fn without_columns(name: TableName, table: &DeltaTable) -> Self {
        Self {
            name,
            log_store: table.log_store(),
            snapshot: None,
        }
    }

    /// The table's name.
    pub fn name(&self) -> &TableName {
        &self.name
    }

    /// Whether the table has columns (a Delta table) already.
    pub fn has_columns(&self) -> bool {
        self.snapshot.is_some()
    }

    /// Which of `paths` the table has no record of loading.
    pub async fn not_loaded(&self, paths: &[String]) -> Result<Vec<bool>> {
        let Some(snapshot) = &self.snapshot else {
            return Ok(vec![true; paths.len()]);
        };
        let mut fresh = Vec::with_capacity(paths.len());
        for path in paths {
            let loaded = snapshot
                .transaction_version(self.log_store.as_ref(), load_id(path))
                .await
                .map_err(|e| Error::delta("reading", self.name.to_string(), e))?;
            fresh.push(loaded.is_none());
        }
        Ok(fresh)
    }

    /// Writes `input` and records `loaded` as loaded, in one commit; the
    /// rows written. A table without columns gets them from `input` (all
    /// nullable) and `options`' comment and properties.
    pub async fn write(
        &self,
        input: Arc<dyn ExecutionPlan>,
        state: Arc<SessionState>,
        mut options: WriteOptions,
        loaded: &[String],
    ) -> Result<u64> {
        options.loaded_files = loaded.to_vec();
        options.operation = Some("COPY INTO");
        if self.snapshot.is_none() {
            options.mode = SaveMode::ErrorIfExists;
            options.all_nullable = true;
        }
        write_plan(
            &self.name,
            Arc::clone(&self.log_store),
            self.snapshot.clone(),
            input,
            state,
            options,
        )
        .await
    }
}
