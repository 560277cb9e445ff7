//! Delta table snapshots
//!
//! A snapshot represents the state of a Delta Table at a given version.
//!
//! There are two types of snapshots:
//!
//! - [`Snapshot`] is a snapshot where most data is loaded on demand and only the
//!   bare minimum - [`Protocol`] and [`Metadata`] - is cached in memory.
//! - [`EagerSnapshot`] is a snapshot where much more log data is eagerly loaded into memory.
//!
//! The submodules provide structures and methods that aid in generating
//! and consuming snapshots.
//!
//! ## Reading the log
//!
//!

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

use arrow::array::RecordBatch;
use arrow::compute::{filter_record_batch, is_not_null};
use arrow::datatypes::{DataType as ArrowDataType, SchemaRef};
use delta_kernel::actions::{Remove, Sidecar};
use delta_kernel::engine::arrow_conversion::TryIntoArrow as _;
use delta_kernel::engine::arrow_data::ArrowEngineData;
use delta_kernel::path::{LogPathFileType, ParsedLogPath};
use delta_kernel::scan::scan_row_schema;
use delta_kernel::schema::derive_macro_utils::ToDataType;
use delta_kernel::schema::{SchemaRef as KernelSchemaRef, StructField, ToSchema};
use delta_kernel::snapshot::Snapshot as KernelSnapshot;
use delta_kernel::table_configuration::TableConfiguration;
use delta_kernel::table_properties::TableProperties;
use delta_kernel::{
    Engine, EvaluationHandler, Expression, ExpressionEvaluator, FileSlice, PredicateRef, Version,
};
use futures::future::ready;
use futures::stream::{BoxStream, once};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _};
use serde_json::Deserializer;
use url::Url;

use super::{Action, CommitInfo, Metadata, Protocol};
use crate::checkpoints::parse_last_checkpoint_hint;
use crate::kernel::arrow::engine_ext::{ExpressionEvaluatorExt, rb_from_scan_meta};
use crate::kernel::models::actions::serde_path::decode_path;
use crate::kernel::{ARROW_HANDLER, StructType, spawn_blocking_with_span};
use crate::logstore::{LogStore, LogStoreExt, get_actions};
use crate::{DeltaResult, DeltaTableError};

pub use self::log_data::*;
use self::stats_projection::FIELD_STATS;
pub(crate) use self::stats_projection::{
    FIELD_STATS_PARSED, FileStatsMaterialization, StatsProjection,
};
pub use iterators::*;
pub use scan::*;
pub use stream::*;

mod iterators;
mod log_data;
mod scan;
mod serde;
mod stats_projection;
mod stream;

pub(crate) static SCAN_ROW_ARROW_SCHEMA: LazyLock<arrow_schema::SchemaRef> =
    LazyLock::new(|| Arc::new(scan_row_schema().as_ref().try_into_arrow().unwrap()));

/// Minimum stats payload requested when streaming active add actions.
///
/// The policy controls replay materialization and cache eligibility. Replay
/// retains representations present in the log. Consumers validate raw stats
/// when they parse them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddStatsPolicy {
    /// Make stats optional during log replay.
    ///
    /// Compatible full table caches may include stats.
    None,
    /// Request available raw JSON stats and row counts without parsed stats.
    RawJson,
    /// Request stats that support parsed access.
    Parsed,
}

/// Active add stream options.
#[derive(Debug, Clone)]
pub(crate) struct ActiveAddOptions {
    /// Kernel predicate used for replay pruning.
    pub(crate) predicate: Option<PredicateRef>,
    /// Stats payload requested for each add action.
    pub(crate) stats: AddStatsPolicy,
}

/// Identifies the snapshot that owns materialized file state.
#[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
struct SnapshotIdentity {
    table_root: Url,
    version: Version,
    checkpoint_version: Option<Version>,
    protocol: Protocol,
    metadata: Metadata,
}

impl SnapshotIdentity {
    fn is_for(&self, snapshot: &Snapshot) -> bool {
        &self.table_root == snapshot.inner.table_root()
            && self.version == snapshot.version()
            && self.checkpoint_version == snapshot.checkpoint_version()
            && &self.protocol == snapshot.protocol()
            && &self.metadata == snapshot.metadata()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MaterializedFilesPolicy {
    FullTablePreserveRaw,
    FullTableWithoutStats,
}

impl MaterializedFilesPolicy {
    fn satisfies(self, stats: AddStatsPolicy) -> bool {
        match stats {
            AddStatsPolicy::None => true,
            AddStatsPolicy::RawJson => self == Self::FullTablePreserveRaw,
            AddStatsPolicy::Parsed => self == Self::FullTablePreserveRaw,
        }
    }
}

/// Borrowed protocol, metadata, and table configuration for metadata planners.
pub(crate) struct SnapshotMetadataRef<'a> {
    /// Table protocol at this snapshot version.
    pub(crate) protocol: &'a Protocol,
    /// Table metadata at this snapshot version.
    pub(crate) metadata: &'a Metadata,
    /// Kernel table configuration from protocol, metadata, and properties.
    pub(crate) table_configuration: &'a TableConfiguration,
}

/// Active add read set for optimistic transaction conflict checks.
///
/// The read set borrows materialized log data when available. Lazy snapshots
/// store replayed add batches in the returned value, which keeps the snapshot
/// file cache empty.
pub(crate) struct ConflictReadSet<'a> {
    inner: ConflictReadSetInner<'a>,
}

enum ConflictReadSetInner<'a> {
    Borrowed(LogDataHandler<'a>),
    Owned {
        batches: Arc<Vec<RecordBatch>>,
        table_configuration: &'a TableConfiguration,
    },
}

impl<'a> ConflictReadSet<'a> {
    fn from_log_data(log_data: LogDataHandler<'a>) -> Self {
        Self {
            inner: ConflictReadSetInner::Borrowed(log_data),
        }
    }

    fn from_owned_batches(
        batches: Vec<RecordBatch>,
        table_configuration: &'a TableConfiguration,
    ) -> Self {
        Self {
            inner: ConflictReadSetInner::Owned {
                batches: Arc::new(batches),
                table_configuration,
            },
        }
    }

    #[cfg(test)]
    pub(crate) fn from_log_data_for_test(log_data: LogDataHandler<'a>) -> Self {
        Self::from_log_data(log_data)
    }

    pub(crate) fn log_data(&self) -> LogDataHandler<'_> {
        match &self.inner {
            ConflictReadSetInner::Borrowed(log_data) => log_data.clone(),
            ConflictReadSetInner::Owned {
                batches,
                table_configuration,
            } => LogDataHandler::new(batches.as_ref().as_slice(), table_configuration),
        }
    }
}

/// A snapshot of a Delta table
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Log segment containing all log files in the snapshot
    pub(crate) inner: Arc<KernelSnapshot>,
    /// Optional materialized replay state owned by this snapshot.
    materialized_files: Option<Arc<MaterializedFiles>>,
}

impl Snapshot {
    /// Build a snapshot of the table at `table_root` using the provided kernel `engine`.
    ///
    /// When `version` is `None` the latest available version is loaded. This is the engine-aware
    /// constructor used when callers want to control the kernel [`Engine`] backing log replay.
    pub async fn try_new_with_engine(
        engine: Arc<dyn Engine>,
        table_root: Url,
        version: Option<Version>,
    ) -> DeltaResult<Self> {
        let snapshot = match spawn_blocking_with_span(move || {
            let mut builder = KernelSnapshot::builder_for(table_root);
            if let Some(version) = version {
                builder = builder.at_version(version);
            }
            builder.build(engine.as_ref())
        })
        .await
        .map_err(|e| DeltaTableError::Generic(e.to_string()))?
        {
            Ok(snapshot) => snapshot,
            Err(e) => {
                // TODO: we should have more handling-friendly errors upstream in kernel.
                if e.to_string().contains("No files in log segment") {
                    return Err(DeltaTableError::NotATable(e.to_string()));
                } else {
                    return Err(e.into());
                }
            }
        };

        Ok(Self {
            inner: snapshot,
            materialized_files: None,
        })
    }

    /// Create a new [`Snapshot`] instance
    pub async fn try_new(log_store: &dyn LogStore, version: Option<Version>) -> DeltaResult<Self> {
        // TODO: bundle operation_id with logstore ...
        let engine = log_store.engine(None);

        // NB: kernel engine uses Url::join to construct paths,
        // if the path does not end with a slash, the would override the entire path.
        // So we need to be extra sure its ends with a slash.
        let mut table_root = log_store.table_root_url();
        if !table_root.path().ends_with('/') {
            table_root.set_path(&format!("{}/", table_root.path()));
        }

        Self::try_new_with_engine(engine, table_root, version).await
    }

    /// Create a [`ScanBuilder`] borrowing this snapshot to configure a read of the table.
    pub fn scan_builder(&self) -> ScanBuilder {
        ScanBuilder::new(self.inner.clone())
    }

    /// Consume this snapshot and create a [`ScanBuilder`] that owns the underlying state.
    pub fn into_scan_builder(self) -> ScanBuilder {
        ScanBuilder::new(self.inner)
    }

    /// Update the snapshot to the given version
    pub async fn update(
        self: Arc<Self>,
        engine: Arc<dyn Engine>,
        target_version: Option<Version>,
    ) -> DeltaResult<Arc<Self>> {
        let current_version = self.version();
        if let Some(version) = target_version {
            if version < current_version {
                return Err(DeltaTableError::VersionDowngrade {
                    current_version,
                    requested_version: version,
                });
            }
            if version == current_version {
                return self
                    .refresh_same_version_checkpoint_if_needed(engine, version)
                    .await;
            }
            if version < self.version() {
                return Err(DeltaTableError::Generic("Cannot downgrade snapshot".into()));
            }
        }

        let snapshot = self
            .next_without_files(engine.clone(), target_version)
            .await?;
        if snapshot.version() as u64 == current_version {
            // `target_version` was `None`, but there were no new commits.
            // We may still need to pick up a checkpoint written for the current version.
            self.refresh_same_version_checkpoint_if_needed(engine, current_version)
                .await
        } else {
            match self.materialized_files() {
                Some(materialized_files) => {
                    // Lakegres patch 14: when every commit since this version
                    // only added new files (other sessions' and servers'
                    // appends), extend this file list as `update_appended`
                    // does, instead of replaying all of it.
                    // A commit that cannot be read here is left to the replay.
                    if let Some(seed) = self.full_table_seed()
                        && let Ok(Some(added)) =
                            only_adds_since(engine.clone(), &snapshot, current_version).await
                        && !seed.holds_any(&added)
                    {
                        tracing::debug!(
                            from = current_version,
                            to = snapshot.version(),
                            "update: the new commits only add files; extending the file list"
                        );
                        return extend_appended(engine, snapshot, seed).await;
                    }
                    snapshot
                        .materialize_files_with_engine(engine, Some(materialized_files))
                        .await
                }
                None => Ok(snapshot),
            }
        }
    }

    /// The kernel snapshot at `target_version` (the latest if `None`), built
    /// incrementally from this one, without its files materialized.
    async fn next_without_files(
        &self,
        engine: Arc<dyn Engine>,
        target_version: Option<Version>,
    ) -> DeltaResult<Arc<Self>> {
        let current = self.inner.clone();
        let snapshot = spawn_blocking_with_span(move || {
            let mut builder = KernelSnapshot::builder_from(current);
            if let Some(version) = target_version {
                builder = builder.at_version(version);
            }
            builder.build(engine.as_ref())
        })
        .await
        .map_err(|e| DeltaTableError::Generic(e.to_string()))??;
        Ok(Arc::new(Self {
            inner: snapshot,
            materialized_files: None,
        }))
    }

    /// Lakegres patch: the snapshot at `version`, when the commits after this
    /// one only added new files (the caller wrote them and knows): the new
    /// files are read from those commits alone and put before the ones this
    /// snapshot has, instead of replaying all of them again with the new
    /// commits (which made every small append cost time in proportion to
    /// the table's files). Anything else takes [`Self::update`].
    pub(crate) async fn update_appended(
        self: Arc<Self>,
        engine: Arc<dyn Engine>,
        version: Version,
    ) -> DeltaResult<Arc<Self>> {
        let Some(seed) = self.full_table_seed().filter(|_| version > self.version()) else {
            tracing::debug!(
                version,
                materialized = self.materialized_files().is_some(),
                "update_appended: no full-table file list to extend; replaying"
            );
            return self.update(engine, Some(version)).await;
        };
        let snapshot = self
            .next_without_files(engine.clone(), Some(version))
            .await?;
        extend_appended(engine, snapshot, seed).await
    }

    /// The whole table's file list this snapshot has, to extend.
    fn full_table_seed(&self) -> Option<MaterializedFilesSeed> {
        self.materialized_files()
            .filter(|m| matches!(m.scope, MaterializedFilesScope::FullTable))
            .and_then(|m| m.full_table_seed())
    }

    /// Rebuild a same-version snapshot if a checkpoint showed up after it was loaded.
    ///
    /// Version bumps still go through the normal snapshot update path.
    async fn refresh_same_version_checkpoint_if_needed(
        self: Arc<Self>,
        engine: Arc<dyn Engine>,
        current_version: Version,
    ) -> DeltaResult<Arc<Self>> {
        if self.checkpoint_version() == Some(current_version) {
            return Ok(self);
        }

        let mut table_root = self.inner.table_root().clone();
        if !table_root.path().ends_with('/') {
            table_root.set_path(&format!("{}/", table_root.path()));
        }
        let log_root = table_root
            .join("_delta_log/")
            .map_err(|e| DeltaTableError::Generic(e.to_string()))?;
        let checkpoint_version = read_last_checkpoint_version(engine.clone(), log_root).await?;
        if checkpoint_version != Some(current_version) {
            return Ok(self);
        }

        tracing::trace!(
            version = current_version,
            "rebuilding snapshot to adopt a newly available checkpoint at the current version"
        );
        let snapshot =
            Snapshot::try_new_with_engine(engine.clone(), table_root, Some(current_version))
                .await
                .map(Arc::new)?;

        match self.materialized_files() {
            Some(materialized_files) => {
                snapshot
                    .materialize_files_with_engine(engine, Some(materialized_files))
                    .await
            }
            None => Ok(snapshot),
        }
    }

    /// Get the table version of the snapshot
    pub fn version(&self) -> Version {
        self.inner.version()
    }

    /// Get the checkpoint version currently backing this snapshot, if any.
    pub(crate) fn checkpoint_version(&self) -> Option<Version> {
        self.inner.log_segment().checkpoint_version
    }

    /// Get the logical table schema of the snapshot
    pub fn schema(&self) -> KernelSchemaRef {
        self.inner.table_configuration().logical_schema()
    }

    /// Convert the lgoical schema into an Arrow [SchemaRef]
    ///
    /// NOTE: This can panic if the table's logical schema is not compatible with Arrow!
    pub fn arrow_schema(&self) -> SchemaRef {
        Arc::new(
            self.schema()
                .as_ref()
                .try_into_arrow()
                .expect("Failed to coerce the logical schema into Arrow"),
        )
    }

    /// Get the table metadata of the snapshot
    pub fn metadata(&self) -> &Metadata {
        self.inner.table_configuration().metadata()
    }

    /// Get the table protocol of the snapshot
    pub fn protocol(&self) -> &Protocol {
        self.inner.table_configuration().protocol()
    }

    fn identity(&self) -> SnapshotIdentity {
        SnapshotIdentity {
            table_root: self.inner.table_root().clone(),
            version: self.version(),
            checkpoint_version: self.checkpoint_version(),
            protocol: self.protocol().clone(),
            metadata: self.metadata().clone(),
        }
    }

    fn materialized_files_policy(&self) -> MaterializedFilesPolicy {
        MaterializedFilesPolicy::FullTablePreserveRaw
    }

    pub(crate) fn materialized_files(&self) -> Option<&Arc<MaterializedFiles>> {
        self.materialized_files
            .as_ref()
            .filter(|materialized_files| materialized_files.is_cache_for(self))
    }

    fn materialized_files_for(&self, stats: AddStatsPolicy) -> Option<&Arc<MaterializedFiles>> {
        self.materialized_files()
            .filter(|materialized_files| materialized_files.policy.satisfies(stats))
    }

    #[cfg(test)]
    pub(crate) fn has_materialized_files_for_test(&self) -> bool {
        self.materialized_files().is_some()
    }

    pub(crate) async fn ensure_materialized_files(
        self: Arc<Self>,
        log_store: &dyn LogStore,
    ) -> DeltaResult<Arc<Self>> {
        if self.materialized_files().is_some() {
            return Ok(self);
        }

        self.materialize_files_with_engine(log_store.engine(None), None)
            .await
    }

    pub(crate) fn try_materialized_log_data(&self) -> DeltaResult<LogDataHandler<'_>> {
        let materialized_files = self.materialized_files().ok_or_else(|| {
            DeltaTableError::NotInitializedWithFiles("try_materialized_log_data".to_string())
        })?;
        Ok(LogDataHandler::new(
            &materialized_files.batches,
            self.table_configuration(),
        ))
    }

    /// Stream active add actions without requiring `materialized_files`.
    pub(crate) fn active_adds(
        &self,
        log_store: &dyn LogStore,
        options: ActiveAddOptions,
    ) -> BoxStream<'_, DeltaResult<LogicalFileView>> {
        self.files_with_stats_policy(log_store, options.predicate, options.stats)
            .map_ok(|batch| {
                futures::stream::iter(0..batch.num_rows()).map(move |idx| {
                    Ok::<_, DeltaTableError>(LogicalFileView::new(batch.clone(), idx))
                })
            })
            .try_flatten()
            .boxed()
    }

    /// Collect active add batches without requiring `materialized_files`.
    pub(crate) async fn active_add_batches(
        &self,
        log_store: &dyn LogStore,
        options: ActiveAddOptions,
    ) -> DeltaResult<Vec<RecordBatch>> {
        self.files_with_stats_policy(log_store, options.predicate, options.stats)
            .try_collect()
            .await
    }

    /// Stream active tombstones with the snapshot capability API.
    ///
    /// This matches [`Snapshot::tombstones`]. The named method gives maintenance
    /// callers a `Snapshot` entry point instead of eager snapshot state.
    pub(crate) fn active_tombstones(
        &self,
        log_store: &dyn LogStore,
    ) -> BoxStream<'_, DeltaResult<TombstoneView>> {
        self.tombstones(log_store)
    }

    /// Build active add input for conflict checking.
    ///
    /// Snapshots borrow materialized log data that supports parsed stats. A cache
    /// miss replays active adds with parsed stats and stores the batches in the
    /// read set. Replay leaves the snapshot cache unchanged.
    pub(crate) async fn conflict_read_set(
        &self,
        log_store: &dyn LogStore,
    ) -> DeltaResult<ConflictReadSet<'_>> {
        if let Some(materialized_files) = self.materialized_files_for(AddStatsPolicy::Parsed) {
            return Ok(ConflictReadSet::from_log_data(LogDataHandler::new(
                &materialized_files.batches,
                self.table_configuration(),
            )));
        }

        let batches = self
            .active_add_batches(
                log_store,
                ActiveAddOptions {
                    predicate: None,
                    stats: AddStatsPolicy::Parsed,
                },
            )
            .await?;
        Ok(ConflictReadSet::from_owned_batches(
            batches,
            self.table_configuration(),
        ))
    }

    /// Get the table root of the snapshot
    pub(crate) fn table_root_path(&self) -> DeltaResult<Path> {
        Ok(Path::from_url_path(self.inner.table_root().path())?)
    }

    /// Well known properties of the table
    pub fn table_properties(&self) -> &TableProperties {
        self.inner.table_properties()
    }

    /// Returns the resolved [`TableConfiguration`] (protocol, metadata and parsed properties).
    pub fn table_configuration(&self) -> &TableConfiguration {
        self.inner.table_configuration()
    }

    /// Return borrowed metadata state without materializing files.
    pub(crate) fn metadata_state(&self) -> SnapshotMetadataRef<'_> {
        SnapshotMetadataRef {
            protocol: self.protocol(),
            metadata: self.metadata(),
            table_configuration: self.table_configuration(),
        }
    }

    /// Get the active files for the current snapshot.
    ///
    /// This method returns a stream of record batches where each row
    /// represents an active file for the current snapshot.
    ///
    /// The files can be filtered using the provided predicate. This is a
    /// best effort to skip files that are excluded by the predicate. Individual
    /// files may still contain data that is not relevant to the predicate.
    ///
    /// ## Arguments
    ///
    /// * `log_store` - The log store to use for reading the snapshot.
    /// * `predicate` - An optional predicate to filter the files.
    ///
    /// ## Returns
    ///
    /// A stream of active files for the current snapshot.
    pub fn files(
        &self,
        log_store: &dyn LogStore,
        predicate: Option<PredicateRef>,
    ) -> SendableRBStream {
        // Use cached parsed batches when no predicate is present. This avoids
        // replaying stats through JSON.
        if predicate.is_none()
            && let Some(cached) = self.cached_parsed_batches()
        {
            return cached;
        }
        match self
            .materialized_files()
            .and_then(|materialized_files| materialized_files.full_table_seed())
        {
            Some(materialized_seed) => {
                let (existing_version, existing_data, existing_predicate) =
                    materialized_seed.into_parts();
                self.files_from(
                    log_store.engine(None),
                    predicate,
                    existing_version,
                    Box::new(existing_data),
                    existing_predicate,
                )
            }
            None => self.files_with_engine(log_store.engine(None), predicate),
        }
    }

    fn cached_parsed_batches(&self) -> Option<SendableRBStream> {
        self.cached_parsed_batches_for(AddStatsPolicy::None)
    }

    fn cached_parsed_batches_for(&self, stats: AddStatsPolicy) -> Option<SendableRBStream> {
        let materialized = self.materialized_files_for(stats)?;
        if materialized.existing_predicate.is_some() {
            return None;
        }
        match materialized.scope {
            MaterializedFilesScope::FullTable => {
                let batches = Arc::clone(&materialized.batches);
                Some(
                    futures::stream::iter((0..batches.len()).map(move |i| Ok(batches[i].clone())))
                        .boxed(),
                )
            }
        }
    }

    fn files_with_engine(
        &self,
        engine: Arc<dyn Engine>,
        predicate: Option<PredicateRef>,
    ) -> SendableRBStream {
        self.files_with_engine_materialized(engine, predicate, FileStatsMode::PreserveRaw)
    }

    fn files_with_engine_preserving_raw(
        &self,
        engine: Arc<dyn Engine>,
        predicate: Option<PredicateRef>,
    ) -> SendableRBStream {
        self.files_with_engine_materialized(engine, predicate, FileStatsMode::FullPreserveRaw)
    }

    fn files_with_engine_materialized(
        &self,
        engine: Arc<dyn Engine>,
        predicate: Option<PredicateRef>,
        stats_mode: FileStatsMode,
    ) -> SendableRBStream {
        self.files_with_engine_materialized_with_skip_stats(engine, predicate, stats_mode, false)
    }

    fn files_with_engine_materialized_with_skip_stats(
        &self,
        engine: Arc<dyn Engine>,
        predicate: Option<PredicateRef>,
        stats_mode: FileStatsMode,
        skip_stats: bool,
    ) -> SendableRBStream {
        let scan = match self.scan_for_files(predicate, skip_stats, stats_mode) {
            Ok(scan) => scan,
            Err(err) => return Box::pin(once(ready(Err(err)))),
        };
        let stats_materialization = scan.stats_materialization().clone();

        let stream = scan
            .scan_metadata(engine)
            .map(|d| Ok(rb_from_scan_meta(d?)?));

        match ScanRowOutStream::try_new_with_materialization(
            self.inner.clone(),
            stream,
            stats_materialization,
        ) {
            Ok(s) => s.boxed(),
            Err(err) => Box::pin(once(ready(Err(err)))),
        }
    }

    fn scan_for_files(
        &self,
        predicate: Option<PredicateRef>,
        skip_stats: bool,
        stats_mode: FileStatsMode,
    ) -> DeltaResult<Scan> {
        let stats_materialization =
            self.file_stats_materialization(predicate.as_ref(), skip_stats, stats_mode)?;

        self.scan_builder()
            .with_predicate(predicate)
            .with_stats_materialization(stats_materialization)
            .build()
    }

    fn file_stats_materialization(
        &self,
        predicate: Option<&PredicateRef>,
        skip_stats: bool,
        stats_mode: FileStatsMode,
    ) -> DeltaResult<FileStatsMaterialization> {
        if skip_stats {
            return Ok(FileStatsMaterialization::without_stats());
        }

        let stats_projection = match stats_mode {
            FileStatsMode::PreserveRaw => {
                StatsProjection::for_scan_inputs(self.inner.as_ref(), None, predicate)?
            }
            FileStatsMode::FullPreserveRaw => StatsProjection::full(),
        };

        Ok(FileStatsMaterialization::compatibility(stats_projection))
    }

    fn files_with_stats_policy(
        &self,
        log_store: &dyn LogStore,
        predicate: Option<PredicateRef>,
        stats_policy: AddStatsPolicy,
    ) -> SendableRBStream {
        let skip_stats = matches!(stats_policy, AddStatsPolicy::None);
        if predicate.is_none()
            && let Some(cached) = self.cached_parsed_batches_for(stats_policy)
        {
            return cached;
        }

        let stats_mode = match stats_policy {
            AddStatsPolicy::None => FileStatsMode::PreserveRaw,
            AddStatsPolicy::RawJson => FileStatsMode::PreserveRaw,
            AddStatsPolicy::Parsed => FileStatsMode::FullPreserveRaw,
        };

        match self
            .materialized_files_for(stats_policy)
            .and_then(|materialized_files| materialized_files.full_table_seed())
        {
            Some(materialized_seed) => {
                let (existing_version, existing_data, existing_predicate) =
                    materialized_seed.into_parts();
                self.files_from_materialized_with_options(
                    log_store.engine(None),
                    predicate,
                    existing_version,
                    Box::new(existing_data),
                    existing_predicate,
                    FileMaterializationOptions {
                        stats_mode,
                        skip_stats,
                    },
                )
            }
            None => self.files_with_engine_materialized_with_skip_stats(
                log_store.engine(None),
                predicate,
                stats_mode,
                skip_stats,
            ),
        }
    }

    pub(crate) fn files_from<T: Iterator<Item = RecordBatch> + Send + 'static>(
        &self,
        engine: Arc<dyn Engine>,
        predicate: Option<PredicateRef>,
        existing_version: Version,
        existing_data: Box<T>,
        existing_predicate: Option<PredicateRef>,
    ) -> SendableRBStream {
        self.files_from_materialized(
            engine,
            predicate,
            existing_version,
            existing_data,
            existing_predicate,
            FileStatsMode::PreserveRaw,
        )
    }

    fn files_from_preserving_raw<T: Iterator<Item = RecordBatch> + Send + 'static>(
        &self,
        engine: Arc<dyn Engine>,
        predicate: Option<PredicateRef>,
        existing_version: Version,
        existing_data: Box<T>,
        existing_predicate: Option<PredicateRef>,
    ) -> SendableRBStream {
        self.files_from_materialized(
            engine,
            predicate,
            existing_version,
            existing_data,
            existing_predicate,
            FileStatsMode::FullPreserveRaw,
        )
    }

    fn files_from_materialized<T: Iterator<Item = RecordBatch> + Send + 'static>(
        &self,
        engine: Arc<dyn Engine>,
        predicate: Option<PredicateRef>,
        existing_version: Version,
        existing_data: Box<T>,
        existing_predicate: Option<PredicateRef>,
        stats_mode: FileStatsMode,
    ) -> SendableRBStream {
        self.files_from_materialized_with_options(
            engine,
            predicate,
            existing_version,
            existing_data,
            existing_predicate,
            FileMaterializationOptions {
                stats_mode,
                skip_stats: false,
            },
        )
    }

    fn files_from_materialized_with_options<T: Iterator<Item = RecordBatch> + Send + 'static>(
        &self,
        engine: Arc<dyn Engine>,
        predicate: Option<PredicateRef>,
        existing_version: Version,
        existing_data: Box<T>,
        existing_predicate: Option<PredicateRef>,
        options: FileMaterializationOptions,
    ) -> SendableRBStream {
        let scan = match self.scan_for_files(predicate, options.skip_stats, options.stats_mode) {
            Ok(scan) => scan,
            Err(err) => return Box::pin(once(ready(Err(err)))),
        };
        let stats_materialization = scan.stats_materialization().clone();

        let stream = scan
            .scan_metadata_from(engine, existing_version, existing_data, existing_predicate)
            .map(|d| Ok(rb_from_scan_meta(d?)?));

        match ScanRowOutStream::try_new_with_materialization(
            self.inner.clone(),
            stream,
            stats_materialization,
        ) {
            Ok(s) => s.boxed(),
            Err(err) => Box::pin(once(ready(Err(err)))),
        }
    }

    /// Stream the active files in the snapshot
    ///
    /// This function returns a stream of [`LogicalFileView`] objects,
    /// which represent the active files in the snapshot.
    ///
    /// ## Parameters
    ///
    /// * `log_store` - A reference to a [`LogStore`] implementation.
    /// * `predicate` - An optional predicate to filter the files.
    ///
    /// ## Returns
    ///
    /// A stream of [`LogicalFileView`] objects, newest first.
    pub fn file_views(
        &self,
        log_store: &dyn LogStore,
        predicate: Option<PredicateRef>,
    ) -> BoxStream<'_, DeltaResult<LogicalFileView>> {
        self.files(log_store, predicate)
            .map_ok(|batch| {
                futures::stream::iter(0..batch.num_rows()).map(move |idx| {
                    Ok::<_, DeltaTableError>(LogicalFileView::new(batch.clone(), idx))
                })
            })
            .try_flatten()
            .boxed()
    }

    fn with_materialized_files(&self, materialized_files: Option<Arc<MaterializedFiles>>) -> Self {
        Self {
            inner: self.inner.clone(),
            materialized_files,
        }
    }

    async fn materialize_files_with_engine(
        self: Arc<Self>,
        engine: Arc<dyn Engine>,
        materialized_seed: Option<&Arc<MaterializedFiles>>,
    ) -> DeltaResult<Arc<Self>> {
        if materialized_seed.is_none() && self.materialized_files().is_some() {
            return Ok(self);
        }

        let batches = match materialized_seed.and_then(|seed| seed.full_table_seed()) {
            Some(materialized_seed) => {
                let (existing_version, existing_data, existing_predicate) =
                    materialized_seed.into_parts();
                self.files_from_preserving_raw(
                    engine,
                    None,
                    existing_version,
                    Box::new(existing_data),
                    existing_predicate,
                )
                .try_collect()
                .await?
            }
            None => {
                tracing::debug!(
                    version = self.version(),
                    "materializing all files by log replay"
                );
                self.files_with_engine_preserving_raw(engine, None)
                    .try_collect()
                    .await?
            }
        };
        let materialized_files = Arc::new(MaterializedFiles::full(self.as_ref(), batches));
        Ok(Arc::new(
            self.with_materialized_files(Some(materialized_files)),
        ))
    }

    /// Get the commit infos in the snapshot
    ///
    /// ## Parameters
    ///
    /// * `log_store`: The log store to use.
    /// * `limit`: The maximum number of commit infos to return (optional).
    ///
    /// ## Returns
    ///
    /// A stream of commit infos.
    // TODO: move outer error into stream.
    pub(crate) async fn commit_infos(
        &self,
        log_store: &dyn LogStore,
        limit: Option<usize>,
    ) -> DeltaResult<BoxStream<'_, DeltaResult<Option<CommitInfo>>>> {
        let store = log_store.root_object_store(None);

        let log_root = self.table_root_path()?.join("_delta_log");
        let start_from = if let Some(limit) = limit {
            let v = self.version() as i64;
            std::cmp::max(v - limit as i64 + 1, 0)
        } else {
            0
        };
        let start_from = log_root
            .clone()
            .join(format!("{:020}", start_from).as_str());

        let dummy_url = url::Url::parse("memory:///")
            .map_err(|e| DeltaTableError::InvalidTableLocation(format!("memory:///: {}", e)))?;
        let mut commit_files = Vec::new();
        for meta in store
            .list_with_offset(Some(&log_root), &start_from)
            .try_collect::<Vec<_>>()
            .await?
        {
            let dummy_path = dummy_url
                .join(meta.location.as_ref())
                .map_err(|err| DeltaTableError::InvalidTableLocation(err.to_string()))?;
            if let Some(parsed_path) = ParsedLogPath::try_from(dummy_path)?
                && matches!(parsed_path.file_type, LogPathFileType::Commit)
            {
                commit_files.push(meta);
            }
        }
        commit_files.sort_unstable_by(|a, b| b.location.cmp(&a.location));
        Ok(futures::stream::iter(commit_files)
            .map(move |meta| {
                let store = store.clone();
                async move {
                    let commit_log_bytes = store.get(&meta.location).await?.bytes().await?;

                    for result in Deserializer::from_slice(&commit_log_bytes).into_iter::<Action>()
                    {
                        let action = result?;
                        if let Action::CommitInfo(commit_info) = action {
                            return Ok::<_, DeltaTableError>(Some(commit_info));
                        }
                    }
                    Ok(None)
                }
            })
            .buffered(
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
                    * 4,
            )
            .boxed())
    }

    pub(crate) fn tombstones(
        &self,
        log_store: &dyn LogStore,
    ) -> BoxStream<'_, DeltaResult<TombstoneView>> {
        static TOMBSTONE_SCHEMA: LazyLock<Arc<StructType>> = LazyLock::new(|| {
            Arc::new(
                StructType::try_new(vec![
                    StructField::nullable("remove", Remove::to_data_type()),
                    StructField::nullable("sidecar", Sidecar::to_data_type()),
                ])
                .expect("Failed to create a StructType somehow"),
            )
        });
        static TOMBSTONE_EVALUATOR: LazyLock<Arc<dyn ExpressionEvaluator>> = LazyLock::new(|| {
            let expression = Expression::struct_from(
                Remove::to_schema()
                    .fields()
                    .map(|field| Expression::column(["remove", field.name()])),
            )
            .into();
            ARROW_HANDLER
                .new_expression_evaluator(
                    TOMBSTONE_SCHEMA.clone(),
                    expression,
                    Remove::to_data_type(),
                )
                .expect("Failed to create tombstone evaluator")
        });

        // TODO: which capacity to choose
        let mut builder = RecordBatchReceiverStreamBuilder::new(100);
        let tx = builder.tx();

        // TODO: bundle operation id with log store ...
        let engine = log_store.engine(None);

        let remove_data = match self
            .inner
            .log_segment()
            .read_actions(engine.as_ref(), TOMBSTONE_SCHEMA.clone())
        {
            Ok(data) => data,
            Err(err) => {
                return Box::pin(once(ready(Err(DeltaTableError::KernelError(err)))));
            }
        };

        builder.spawn_blocking(move || {
            for res in remove_data {
                let batch = ArrowEngineData::try_from_engine_data(res?.actions)?.into();
                if tx.blocking_send(Ok(batch)).is_err() {
                    break;
                }
            }
            Ok(())
        });

        builder
            .build()
            .map(|maybe_batch| {
                maybe_batch.and_then(|batch| {
                    let filtered = filter_record_batch(&batch, &is_not_null(batch.column(0))?)?;
                    let tombstones = TOMBSTONE_EVALUATOR.evaluate_arrow(filtered)?;
                    Ok((0..tombstones.num_rows())
                        .map(move |idx| TombstoneView::new(tombstones.clone(), idx)))
                })
            })
            .map_ok(|removes| futures::stream::iter(removes.map(Ok::<_, DeltaTableError>)))
            .try_flatten()
            .boxed()
    }

    /// Fetch the latest version of the provided application_id for this snapshot.
    ///
    /// Filters the txn based on the SetTransactionRetentionDuration property and lastUpdated
    async fn application_transaction_version(
        &self,
        log_store: &dyn LogStore,
        app_id: String,
    ) -> DeltaResult<Option<i64>> {
        // TODO: bundle operation id with log store ...
        let engine = log_store.engine(None);
        let inner = self.inner.clone();
        let version =
            spawn_blocking_with_span(move || inner.get_app_id_version(&app_id, engine.as_ref()))
                .await
                .map_err(|e| DeltaTableError::GenericError { source: e.into() })??;
        if let Some(version) = version {
            return Ok(Some(version));
        }
        Ok(None)
    }

    /// Lakegres patch: the latest `txn` version of every application id that
    /// starts with `prefix`, from one replay of the log (the kernel's lookup
    /// replays the whole log for each id it does not find). Transactions
    /// expired under `delta.setTransactionRetentionDuration` are left out,
    /// as the kernel leaves them out.
    async fn application_transaction_versions(
        &self,
        log_store: &dyn LogStore,
        prefix: String,
    ) -> DeltaResult<HashMap<String, i64>> {
        use arrow::array::{Array, AsArray};
        use arrow::datatypes::Int64Type;

        let expiration = self
            .table_properties()
            .set_transaction_retention_duration
            .map(|d| {
                chrono::Utc::now().timestamp_millis()
                    - i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
            });
        let engine = log_store.engine(None);
        let inner = self.inner.clone();
        let replay = move || -> DeltaResult<HashMap<String, i64>> {
            // Newest first: the first transaction seen of an id is its latest.
            let mut latest: HashMap<String, Option<i64>> = HashMap::new();
            let batches = inner.log_segment().read_actions(
                engine.as_ref(),
                delta_kernel::actions::LOG_TXN_SCHEMA.clone(),
            )?;
            for batch in batches {
                let batch: RecordBatch =
                    ArrowEngineData::try_from_engine_data(batch?.actions)?.into();
                let Some(txn) = batch.column_by_name("txn").and_then(|c| c.as_struct_opt()) else {
                    continue;
                };
                let (Some(ids), Some(versions)) = (
                    txn.column_by_name("appId")
                        .and_then(|c| c.as_string_opt::<i32>()),
                    txn.column_by_name("version")
                        .and_then(|c| c.as_primitive_opt::<Int64Type>()),
                ) else {
                    return Err(DeltaTableError::Generic(
                        "txn actions without appId or version".to_string(),
                    ));
                };
                let updated = txn
                    .column_by_name("lastUpdated")
                    .and_then(|c| c.as_primitive_opt::<Int64Type>());
                for row in 0..txn.len() {
                    if txn.is_null(row) || ids.is_null(row) || !ids.value(row).starts_with(&prefix)
                    {
                        continue;
                    }
                    let id = ids.value(row);
                    if latest.contains_key(id) {
                        continue;
                    }
                    let last_updated = updated.filter(|u| u.is_valid(row)).map(|u| u.value(row));
                    let expired =
                        matches!((expiration, last_updated), (Some(e), Some(u)) if u <= e);
                    latest.insert(id.to_string(), (!expired).then(|| versions.value(row)));
                }
            }
            Ok(latest
                .into_iter()
                .filter_map(|(id, version)| Some((id, version?)))
                .collect())
        };
        spawn_blocking_with_span(replay)
            .await
            .map_err(|e| DeltaTableError::GenericError { source: e.into() })?
    }

    /// Fetch the [domainMetadata] for a specific domain in this snapshot.
    ///
    /// This returns the latest configuration for the domain, or None if the domain does not exist.
    ///
    /// [domainMetadata]: https://github.com/delta-io/delta/blob/master/PROTOCOL.md#domain-metadata
    pub async fn domain_metadata(
        &self,
        log_store: &dyn LogStore,
        domain: impl ToString,
    ) -> DeltaResult<Option<String>> {
        let engine = log_store.engine(None);
        let inner = self.inner.clone();
        let domain = domain.to_string();
        let metadata =
            spawn_blocking_with_span(move || inner.get_domain_metadata(&domain, engine.as_ref()))
                .await
                .map_err(|e| DeltaTableError::GenericError { source: e.into() })??;
        Ok(metadata)
    }
}

/// Stats materialization mode for file replay APIs that preserve compatibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileStatsMode {
    /// Use raw JSON stats and the requested parsed stats shape.
    PreserveRaw,
    /// Use raw JSON stats and the full parsed stats schema.
    FullPreserveRaw,
}

#[derive(Debug, Clone, Copy)]
struct FileMaterializationOptions {
    stats_mode: FileStatsMode,
    skip_stats: bool,
}

/// Scope for materialized file replay data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MaterializedFilesScope {
    FullTable,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MaterializedFiles {
    identity: SnapshotIdentity,
    policy: MaterializedFilesPolicy,
    pub(crate) scope: MaterializedFilesScope,
    pub(crate) existing_predicate: Option<PredicateRef>,
    pub(crate) batches: Arc<[RecordBatch]>,
}

#[derive(Debug, Clone)]
struct MaterializedFilesSeed {
    version: Version,
    existing_predicate: Option<PredicateRef>,
    batches: Arc<[RecordBatch]>,
}

impl MaterializedFilesSeed {
    /// Lakegres patch: whether any of `paths` (decoded, as an `Add` holds
    /// them) is one of these files: an `add` of a file the table has
    /// replaces it.
    fn holds_any(&self, paths: &HashSet<String>) -> bool {
        !paths.is_empty()
            && self.batches.iter().any(|batch| {
                match batch
                    .column_by_name("path")
                    .and_then(|c| c.as_any().downcast_ref::<arrow::array::StringArray>())
                {
                    // The file list keeps the log's encoded paths.
                    Some(known) => known
                        .iter()
                        .flatten()
                        .any(|p| decode_path(p).map_or(true, |p| paths.contains(&p))),
                    // Paths it cannot see: assume the worst.
                    None => true,
                }
            })
    }

    fn into_parts(self) -> (Version, SharedRecordBatchIter, Option<PredicateRef>) {
        (
            self.version,
            SharedRecordBatchIter::new(self.batches),
            self.existing_predicate,
        )
    }
}

impl IntoIterator for MaterializedFilesSeed {
    type Item = RecordBatch;
    type IntoIter = SharedRecordBatchIter;

    fn into_iter(self) -> Self::IntoIter {
        SharedRecordBatchIter::new(self.batches)
    }
}

#[derive(Debug)]
struct SharedRecordBatchIter {
    batches: Arc<[RecordBatch]>,
    next_idx: usize,
}

impl SharedRecordBatchIter {
    fn new(batches: Arc<[RecordBatch]>) -> Self {
        Self {
            batches,
            next_idx: 0,
        }
    }
}

impl Iterator for SharedRecordBatchIter {
    type Item = RecordBatch;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = self.batches.get(self.next_idx).cloned()?;
        self.next_idx += 1;
        Some(batch)
    }
}

impl MaterializedFiles {
    fn full(snapshot: &Snapshot, batches: Vec<RecordBatch>) -> Self {
        let identity = snapshot.identity();
        Self {
            identity,
            policy: snapshot.materialized_files_policy(),
            scope: MaterializedFilesScope::FullTable,
            existing_predicate: None,
            batches: batches.into(),
        }
    }

    fn is_cache_for(&self, snapshot: &Snapshot) -> bool {
        self.policy == snapshot.materialized_files_policy() && self.identity.is_for(snapshot)
    }

    fn full_table_seed(&self) -> Option<MaterializedFilesSeed> {
        if self.policy == MaterializedFilesPolicy::FullTableWithoutStats
            && !self.batches.iter().all(|batch| {
                batch
                    .schema_ref()
                    .field_with_name(FIELD_STATS)
                    .is_ok_and(|field| {
                        field.data_type() == &ArrowDataType::Utf8 && field.is_nullable()
                    })
            })
        {
            return None;
        }

        match self.scope {
            MaterializedFilesScope::FullTable => Some(MaterializedFilesSeed {
                version: self.identity.version,
                existing_predicate: self.existing_predicate.clone(),
                batches: self.batches.clone(),
            }),
        }
    }
}

/// A snapshot of a Delta table that has been eagerly loaded into memory.
#[derive(Debug, Clone, PartialEq)]
pub struct EagerSnapshot {
    snapshot: Arc<Snapshot>,
}

/// Read `_last_checkpoint` and return the hinted version when present.
///
/// Missing, empty, or invalid hint files return `Ok(None)`. Callers can fall back to listing.
async fn read_last_checkpoint_version(
    engine: Arc<dyn Engine>,
    log_root: Url,
) -> DeltaResult<Option<Version>> {
    spawn_blocking_with_span(move || {
        let storage = engine.storage_handler();
        let checkpoint_path = log_root
            .join("_last_checkpoint")
            .map_err(|e| DeltaTableError::Generic(e.to_string()))?;
        match storage.read_files(vec![(checkpoint_path, None)])?.next() {
            Some(Ok(data)) => Ok(parse_last_checkpoint_hint(&data).map(|hint| hint.version)),
            Some(Err(delta_kernel::Error::FileNotFound(_))) => Ok(None),
            Some(Err(err)) => Err(err.into()),
            None => {
                tracing::warn!("empty _last_checkpoint file");
                Ok(None)
            }
        }
    })
    .await
    .map_err(|e| DeltaTableError::Generic(e.to_string()))?
}

pub(crate) async fn resolve_snapshot(
    log_store: &dyn LogStore,
    maybe_snapshot: Option<EagerSnapshot>,
    version: Option<Version>,
) -> DeltaResult<EagerSnapshot> {
    if let Some(snapshot) = maybe_snapshot {
        if let Some(version) = version
            && snapshot.version() as Version != version
        {
            return Err(DeltaTableError::Generic(
                "Provided snapshot version does not match the requested version".to_string(),
            ));
        }
        snapshot.with_files(log_store).await
    } else {
        EagerSnapshot::try_new(log_store, version).await
    }
}

impl EagerSnapshot {
    /// Create a new [`EagerSnapshot`] instance
    pub async fn try_new(log_store: &dyn LogStore, version: Option<Version>) -> DeltaResult<Self> {
        let snapshot = Snapshot::try_new(log_store, version).await?;
        Self::try_new_with_snapshot(log_store, snapshot.into()).await
    }

    /// Materialize active-file metadata through kernel replay; this does not set a kernel scan mode.
    /// Direct [`Snapshot`] construction remains lazy, while this constructor and
    /// [`resolve_snapshot`] require materialized files, including for metadata-only callers.
    /// See [issue 4584](https://github.com/delta-io/delta-rs/issues/4584) for the ongoing migration.
    pub(crate) async fn try_new_with_snapshot(
        log_store: &dyn LogStore,
        snapshot: Arc<Snapshot>,
    ) -> DeltaResult<Self> {
        let snapshot = snapshot.ensure_materialized_files(log_store).await?;
        Ok(Self { snapshot })
    }

    pub(crate) async fn with_files(self, log_store: &dyn LogStore) -> DeltaResult<Self> {
        let snapshot = self.snapshot.ensure_materialized_files(log_store).await?;
        Ok(Self { snapshot })
    }

    /// Update the snapshot to the given version
    pub(crate) async fn update(
        &mut self,
        log_store: &dyn LogStore,
        target_version: Option<Version>,
    ) -> DeltaResult<()> {
        let previous_snapshot = self.snapshot.clone();
        let updated_snapshot = previous_snapshot
            .clone()
            .update(log_store.engine(None), target_version)
            .await?;
        if Arc::ptr_eq(&updated_snapshot, &previous_snapshot) {
            return Ok(());
        }

        self.snapshot = updated_snapshot;
        Ok(())
    }

    /// Lakegres patch: [`Snapshot::update_appended`] (the commits up to
    /// `version` only added new files).
    pub(crate) async fn update_appended(
        &mut self,
        log_store: &dyn LogStore,
        version: Version,
    ) -> DeltaResult<()> {
        self.snapshot = self
            .snapshot
            .clone()
            .update_appended(log_store.engine(None), version)
            .await?;
        Ok(())
    }

    /// Get the underlying snapshot
    pub(crate) fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Get the table version of the snapshot
    pub fn version(&self) -> Version {
        self.snapshot.version()
    }

    /// Get the timestamp of the given version
    pub fn version_timestamp(&self, version: Version) -> Option<i64> {
        for path in &self
            .snapshot
            .inner
            .log_segment()
            .listed
            .ascending_commit_files
        {
            if path.version == version {
                return Some(path.location.last_modified);
            }
        }
        None
    }

    /// Get the table schema of the snapshot
    pub fn schema(&self) -> KernelSchemaRef {
        self.snapshot.schema()
    }

    /// Get the table arrow schema of the snapshot
    pub fn arrow_schema(&self) -> SchemaRef {
        self.snapshot.arrow_schema()
    }

    /// Get the table metadata of the snapshot
    pub fn metadata(&self) -> &Metadata {
        self.snapshot.metadata()
    }

    /// Get the table protocol of the snapshot
    pub fn protocol(&self) -> &Protocol {
        self.snapshot.protocol()
    }

    /// Well known table configuration
    pub fn table_properties(&self) -> &TableProperties {
        self.snapshot.table_properties()
    }

    /// Returns the resolved [`TableConfiguration`] (protocol, metadata and parsed properties).
    pub fn table_configuration(&self) -> &TableConfiguration {
        self.snapshot.table_configuration()
    }

    /// Try to get a [`LogDataHandler`] for the snapshot to inspect the currently loaded state of
    /// the log.
    pub fn try_log_data(&self) -> DeltaResult<LogDataHandler<'_>> {
        match self.snapshot.try_materialized_log_data() {
            Ok(log_data) => Ok(log_data),
            Err(DeltaTableError::NotInitializedWithFiles(_)) => Ok(LogDataHandler::new(
                &[],
                self.snapshot.table_configuration(),
            )),
            Err(err) => Err(err),
        }
    }

    /// Get a [`LogDataHandler`] for the snapshot to inspect the currently loaded state of the log.
    pub fn log_data(&self) -> LogDataHandler<'_> {
        // try_log_data() returns Ok(empty) for the legitimate NotInitializedWithFiles case
        // (lazy snapshots), so any Err here is a genuine unexpected failure. Panicking loudly
        // is intentionally safer than returning empty, which would cause conflict-checking
        // callers to silently operate on a zero-file set and potentially allow conflicting
        // commits through.
        self.try_log_data()
            .unwrap_or_else(|err| panic!("unexpected error loading EagerSnapshot log data: {err}"))
    }

    /// Stream the active files in the snapshot
    ///
    /// This function returns a stream of [`LogicalFileView`] objects,
    /// which represent the active files in the snapshot.
    ///
    /// ## Parameters
    ///
    /// * `log_store` - A reference to a [`LogStore`] implementation.
    /// * `predicate` - An optional predicate to filter the files.
    ///
    /// ## Returns
    ///
    /// A stream of [`LogicalFileView`] objects, newest first.
    pub fn file_views(
        &self,
        log_store: &dyn LogStore,
        predicate: Option<PredicateRef>,
    ) -> BoxStream<'_, DeltaResult<LogicalFileView>> {
        self.snapshot.file_views(log_store, predicate)
    }

    /// Return the latest committed transaction version for the given application id, if any.
    ///
    /// This is used to implement idempotent writes: an application records its own monotonic
    /// version via a transaction action, and readers can recover the last value seen.
    pub async fn transaction_version(
        &self,
        log_store: &dyn LogStore,
        app_id: impl ToString,
    ) -> DeltaResult<Option<i64>> {
        self.snapshot
            .application_transaction_version(log_store, app_id.to_string())
            .await
    }

    /// Return the configuration string stored for the given metadata `domain`, if present.
    pub async fn domain_metadata(
        &self,
        log_store: &dyn LogStore,
        domain: impl ToString,
    ) -> DeltaResult<Option<String>> {
        self.snapshot.domain_metadata(log_store, domain).await
    }

    /// Lakegres patch: the latest committed transaction version of every
    /// application id that starts with `prefix`, in one replay of the log.
    pub async fn transaction_versions(
        &self,
        log_store: &dyn LogStore,
        prefix: impl ToString,
    ) -> DeltaResult<HashMap<String, i64>> {
        self.snapshot
            .application_transaction_versions(log_store, prefix.to_string())
            .await
    }
}

#[cfg(any(test, feature = "integration_test"))]
pub(crate) fn partitions_schema(
    schema: &StructType,
    partition_columns: &[String],
) -> DeltaResult<Option<StructType>> {
    if partition_columns.is_empty() {
        return Ok(None);
    }
    Ok(Some(StructType::try_new(
        partition_columns
            .iter()
            .map(|col| {
                schema.field(col).cloned().ok_or_else(|| {
                    DeltaTableError::Generic(format!("Partition column {col} not found in schema"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
    )?))
}

/// Lakegres patch: `snapshot` (its files not materialized) with the files
/// of the commits after `seed`'s version put before `seed`'s, which the
/// caller knows those commits did not remove.
async fn extend_appended(
    engine: Arc<dyn Engine>,
    snapshot: Arc<Snapshot>,
    seed: MaterializedFilesSeed,
) -> DeltaResult<Arc<Snapshot>> {
    let (existing_version, existing, existing_predicate) = seed.into_parts();
    // Newest first, as a replay of the whole log lists them.
    let mut batches: Vec<RecordBatch> = snapshot
        .files_from_preserving_raw(
            engine,
            None,
            existing_version,
            Box::new(std::iter::empty::<RecordBatch>()),
            existing_predicate,
        )
        .try_collect()
        .await?;
    batches.extend(existing);
    let materialized_files = Arc::new(MaterializedFiles::full(snapshot.as_ref(), batches));
    Ok(Arc::new(
        snapshot.with_materialized_files(Some(materialized_files)),
    ))
}

/// Lakegres patch: the paths the commits of `snapshot` after version `from`
/// add, when those commits only appended (see [`Action::only_appends`]) and
/// each is there (no checkpoint after `from` stands in for them); `None`
/// otherwise. Reads those commit files (small ones: the commits a replay
/// would read anyway).
async fn only_adds_since(
    engine: Arc<dyn Engine>,
    snapshot: &Snapshot,
    from: Version,
) -> DeltaResult<Option<HashSet<String>>> {
    let segment = snapshot.inner.log_segment();
    if segment.checkpoint_version.is_some_and(|v| v > from) {
        return Ok(None);
    }
    let (versions, commits): (Vec<Version>, Vec<FileSlice>) = segment
        .listed
        .ascending_commit_files
        .iter()
        .filter(|c| c.version > from)
        .map(|c| (c.version, (c.location.location.clone(), None)))
        .unzip();
    if commits.len() as u64 != snapshot.version().saturating_sub(from) {
        return Ok(None);
    }
    spawn_blocking_with_span(move || -> DeltaResult<Option<HashSet<String>>> {
        let mut added = HashSet::new();
        let read = engine.storage_handler().read_files(commits)?;
        for (version, commit) in versions.into_iter().zip(read) {
            // An action this version of delta-rs does not know is no append.
            let Ok(actions) = get_actions(version, &commit?) else {
                return Ok(None);
            };
            if !actions.iter().all(Action::only_appends) {
                return Ok(None);
            }
            added.extend(actions.into_iter().filter_map(|action| match action {
                Action::Add(add) => Some(add.path),
                _ => None,
            }));
        }
        Ok(Some(added))
    })
    .await
    .map_err(|e| DeltaTableError::Generic(e.to_string()))?
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_ipc::writer::FileWriter;
    use arrow_schema::DataType as ArrowDataType;
    use delta_kernel::expressions::Scalar;
    use futures::TryStreamExt;
    use itertools::Itertools;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tempfile::TempDir;

    // use super::log_segment::tests::{concurrent_checkpoint};
    // use super::replay::tests::test_log_replay;
    use super::*;
    use crate::{
        DeltaTable, TableProperty, checkpoints,
        kernel::schema::partitions::{
            FilterOp, FilterValue, conjunction_to_kernel_predicate, dnf_to_kernel_predicate,
        },
        kernel::transaction::CommitData,
        kernel::transaction::{CommitBuilder, TableReference},
        kernel::{Action, DataType, PrimitiveType, StructField, StructType},
        operations::create::CreateBuilder,
        protocol::{DeltaOperation, SaveMode},
        test_utils::{
            TestResult, TestTables, assert_batches_sorted_eq, make_test_add,
            object_store::{
                drain_recorded_object_store_operations as drain_recorded_ops, recording_log_store,
            },
        },
    };

    impl Snapshot {
        /// Build an in-memory snapshot from the given commits for use in tests.
        pub async fn new_test<'a>(
            commits: impl IntoIterator<Item = &'a CommitData>,
        ) -> DeltaResult<(Self, Arc<dyn LogStore>)> {
            use crate::logstore::{commit_uri_from_version, default_logstore};
            use object_store::memory::InMemory;
            let store = Arc::new(InMemory::new());

            for (idx, commit) in commits.into_iter().enumerate() {
                let uri = commit_uri_from_version(Some(idx as u64));
                let data = commit.get_bytes()?;
                store.put(&uri, data.into()).await?;
            }

            let table_url = url::Url::parse("memory:///").unwrap();

            let log_store = default_logstore(
                store.clone(),
                store.clone(),
                &table_url,
                &Default::default(),
            );

            let engine = log_store.engine(None);
            let snapshot = KernelSnapshot::builder_for(table_url.clone()).build(engine.as_ref())?;
            Ok((
                Self {
                    inner: snapshot,
                    materialized_files: None,
                },
                log_store,
            ))
        }
    }

    impl EagerSnapshot {
        /// Build an in-memory eager snapshot from the given commits for use in tests.
        pub async fn new_test<'a>(
            commits: impl IntoIterator<Item = &'a CommitData>,
        ) -> DeltaResult<Self> {
            let (snapshot, log_store) = Snapshot::new_test(commits).await?;
            Self::try_new_with_snapshot(log_store.as_ref(), snapshot.into()).await
        }
    }

    async fn checkpoint_rebase_table() -> DeltaResult<(TempDir, DeltaTable)> {
        let table_dir = tempfile::tempdir().unwrap();
        let mut table = DeltaTable::new_in_memory()
            .create()
            .with_location(table_dir.path().to_str().unwrap())
            .with_columns([StructField::new(
                "id",
                DataType::Primitive(PrimitiveType::Integer),
                true,
            )])
            .await?;

        append_test_add(&mut table, "part-00000.snappy.parquet").await?;
        append_test_add(&mut table, "part-00001.snappy.parquet").await?;
        Ok((table_dir, table))
    }

    async fn local_test_table() -> DeltaResult<(TempDir, DeltaTable)> {
        let table_dir = tempfile::tempdir().unwrap();
        let table = CreateBuilder::new()
            .with_location(table_dir.path().to_string_lossy())
            .with_columns([StructField::new(
                "id",
                DataType::Primitive(PrimitiveType::Integer),
                true,
            )])
            .await?;
        Ok((table_dir, table))
    }

    async fn append_test_add(table: &mut DeltaTable, path: &str) -> DeltaResult<Version> {
        let version = CommitBuilder::default()
            .with_actions(vec![Action::Add(make_test_add(path, &[], 0))])
            .build(
                table
                    .state
                    .as_ref()
                    .map(|state| state as &dyn TableReference),
                table.log_store(),
                DeltaOperation::Write {
                    mode: SaveMode::Append,
                    partition_by: None,
                    predicate: None,
                },
            )
            .await?
            .version();
        table.update_state().await?;
        Ok(version)
    }

    async fn append_test_add_with_stats(
        table: &mut DeltaTable,
        path: &str,
        stats: &str,
    ) -> DeltaResult<Version> {
        let mut add = make_test_add(path, &[], 0);
        add.size = 1;
        add.stats = Some(stats.to_string());

        let version = CommitBuilder::default()
            .with_actions(vec![Action::Add(add)])
            .build(
                table
                    .state
                    .as_ref()
                    .map(|state| state as &dyn TableReference),
                table.log_store(),
                DeltaOperation::Write {
                    mode: SaveMode::Append,
                    partition_by: None,
                    predicate: None,
                },
            )
            .await?
            .version();
        table.update_state().await?;
        Ok(version)
    }

    async fn selective_stats_table() -> DeltaResult<(TempDir, DeltaTable)> {
        let table_dir = tempfile::tempdir().unwrap();
        let table_url = url::Url::from_directory_path(table_dir.path()).unwrap();
        let mut table = DeltaTable::try_from_url(table_url)
            .await?
            .create()
            .with_columns([
                StructField::new("value", DataType::Primitive(PrimitiveType::Long), true),
                StructField::new("other", DataType::Primitive(PrimitiveType::Long), true),
            ])
            .with_configuration_property(TableProperty::DataSkippingNumIndexedCols, Some("2"))
            .await?;

        let custom_stats = r#"{"numRecords":3,"minValues":{"value":1,"other":10},"maxValues":{"value":3,"other":30},"nullCount":{"value":0,"other":0}}"#;
        append_test_add_with_stats(&mut table, "part-00000.snappy.parquet", custom_stats).await?;

        Ok((table_dir, table))
    }

    fn field_count(batch: &RecordBatch, name: &str) -> usize {
        batch
            .schema()
            .fields()
            .iter()
            .filter(|field| field.name() == name)
            .count()
    }

    fn stats_parsed_field_names(batch: &RecordBatch) -> Vec<String> {
        let schema = batch.schema();
        let stats_field = schema
            .field_with_name("stats_parsed")
            .expect("stats_parsed field should exist");
        let ArrowDataType::Struct(fields) = stats_field.data_type() else {
            panic!("stats_parsed should be a struct");
        };
        fields.iter().map(|field| field.name().clone()).collect()
    }

    fn nested_stats_field_names(batch: &RecordBatch, field_name: &str) -> Vec<String> {
        let schema = batch.schema();
        let stats_field = schema
            .field_with_name("stats_parsed")
            .expect("stats_parsed field should exist");
        let ArrowDataType::Struct(stats_fields) = stats_field.data_type() else {
            panic!("stats_parsed should be a struct");
        };
        let (_, field) = stats_fields
            .find(field_name)
            .unwrap_or_else(|| panic!("{field_name} should exist"));
        let ArrowDataType::Struct(fields) = field.data_type() else {
            panic!("{field_name} should be a struct");
        };
        fields.iter().map(|field| field.name().clone()).collect()
    }

    async fn eager_file_paths(
        snapshot: &EagerSnapshot,
        log_store: &dyn LogStore,
    ) -> DeltaResult<Vec<String>> {
        Ok(snapshot
            .file_views(log_store, None)
            .try_collect::<Vec<_>>()
            .await?
            .into_iter()
            .map(|file| file.path().to_string())
            .collect())
    }

    async fn active_add_paths(
        snapshot: &Snapshot,
        log_store: &dyn LogStore,
    ) -> DeltaResult<Vec<String>> {
        let mut paths = Vec::new();
        for batch in snapshot
            .active_add_batches(
                log_store,
                ActiveAddOptions {
                    predicate: None,
                    stats: AddStatsPolicy::None,
                },
            )
            .await?
        {
            for idx in 0..batch.num_rows() {
                paths.push(
                    LogicalFileView::new(batch.clone(), idx)
                        .path_raw()
                        .to_string(),
                );
            }
        }
        paths.sort();
        Ok(paths)
    }

    async fn checkpoint_file_paths(
        log_store: &dyn LogStore,
        version: Version,
    ) -> DeltaResult<Vec<object_store::path::Path>> {
        let checkpoint_prefix = format!("{version:020}.checkpoint", version = version);
        Ok(log_store
            .object_store(None)
            .list(Some(log_store.log_path()))
            .try_collect::<Vec<_>>()
            .await?
            .into_iter()
            .map(|meta| meta.location)
            .filter(|path| {
                path.filename()
                    .is_some_and(|file_name| file_name.starts_with(&checkpoint_prefix))
            })
            .collect())
    }

    fn legacy_eager_snapshot_payload(snapshot: &EagerSnapshot) -> serde_json::Value {
        let mut snapshot_value = serde_json::to_value(snapshot.snapshot()).unwrap();
        snapshot_wire_fields_mut(&mut snapshot_value).pop();

        let materialized_files = snapshot
            .snapshot
            .materialized_files()
            .expect("expected materialized files for legacy eager snapshot payload");
        let bytes = if materialized_files.batches.is_empty() {
            Vec::new()
        } else {
            let mut buffer = vec![];
            let mut writer =
                FileWriter::try_new(&mut buffer, materialized_files.batches[0].schema().as_ref())
                    .unwrap();
            for batch in materialized_files.batches.iter() {
                writer.write(batch).unwrap();
            }
            writer.finish().unwrap();
            drop(writer);
            buffer
        };

        json!([snapshot_value, bytes])
    }

    fn snapshot_wire_fields_mut(value: &mut serde_json::Value) -> &mut Vec<serde_json::Value> {
        value
            .as_array_mut()
            .expect("snapshot wire must be a sequence")
    }

    fn snapshot_materialized_files_wire_mut(
        value: &mut serde_json::Value,
    ) -> &mut serde_json::Map<String, serde_json::Value> {
        snapshot_wire_fields_mut(value)[9]
            .as_object_mut()
            .expect("materialized file cache wire must be an object")
    }

    fn set_materialized_files_wire_table_root(
        materialized_files: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        let identity = materialized_files["identity"]
            .as_object_mut()
            .expect("snapshot identity wire must be an object");
        identity.insert("table_root".to_string(), json!("memory:///other/"));
    }

    #[tokio::test]
    async fn test_snapshots() -> TestResult {
        test_snapshot().await?;
        test_eager_snapshot().await?;

        Ok(())
    }

    // #[ignore]
    // #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    // async fn test_concurrent_checkpoint() -> TestResult {
    //     concurrent_checkpoint().await?;
    //     Ok(())
    // }

    async fn test_snapshot() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;

        let snapshot = Snapshot::try_new(&log_store, None).await?;

        let bytes = serde_json::to_vec(&snapshot).unwrap();
        let actual = serde_json::from_slice::<'_, Snapshot>(&bytes);
        assert!(actual.is_ok());

        let schema_string = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}"#;
        let expected: StructType = serde_json::from_str(schema_string)?;
        assert_eq!(snapshot.schema().as_ref(), &expected);

        let infos = snapshot
            .commit_infos(&log_store, None)
            .await?
            .try_collect::<Vec<_>>()
            .await?;
        let infos = infos.into_iter().flatten().collect_vec();
        assert_eq!(infos.len(), 5);

        let tombstones = snapshot
            .tombstones(&log_store)
            .try_collect::<Vec<_>>()
            .await?;
        assert_eq!(tombstones.len(), 31);

        let batches = snapshot
            .files(&log_store, None)
            .try_collect::<Vec<_>>()
            .await?;
        let expected = [
            "+---------------------------------------------------------------------+------+------------------+-------+----------------+---------------------------------------------------------------------------------------------+----------------+",
            "| path                                                                | size | modificationTime | stats | deletionVector | fileConstantValues                                                                          | stats_parsed   |",
            "+---------------------------------------------------------------------+------+------------------+-------+----------------+---------------------------------------------------------------------------------------------+----------------+",
            "| part-00000-2befed33-c358-4768-a43c-3eda0d2a499d-c000.snappy.parquet | 262  | 1587968626000    |       |                | {partitionValues: {}, baseRowId: , defaultRowCommitVersion: , tags: , clusteringProvider: } | {numRecords: } |",
            "| part-00000-c1777d7d-89d9-4790-b38a-6ee7e24456b1-c000.snappy.parquet | 262  | 1587968602000    |       |                | {partitionValues: {}, baseRowId: , defaultRowCommitVersion: , tags: , clusteringProvider: } | {numRecords: } |",
            "| part-00001-7891c33d-cedc-47c3-88a6-abcfb049d3b4-c000.snappy.parquet | 429  | 1587968602000    |       |                | {partitionValues: {}, baseRowId: , defaultRowCommitVersion: , tags: , clusteringProvider: } | {numRecords: } |",
            "| part-00004-315835fe-fb44-4562-98f6-5e6cfa3ae45d-c000.snappy.parquet | 429  | 1587968602000    |       |                | {partitionValues: {}, baseRowId: , defaultRowCommitVersion: , tags: , clusteringProvider: } | {numRecords: } |",
            "| part-00007-3a0e4727-de0d-41b6-81ef-5223cf40f025-c000.snappy.parquet | 429  | 1587968602000    |       |                | {partitionValues: {}, baseRowId: , defaultRowCommitVersion: , tags: , clusteringProvider: } | {numRecords: } |",
            "+---------------------------------------------------------------------+------+------------------+-------+----------------+---------------------------------------------------------------------------------------------+----------------+",
        ];
        assert_batches_sorted_eq!(expected, &batches);

        let log_store = TestTables::Checkpoints.table_builder()?.build_storage()?;

        for version in 0..=12 {
            let snapshot = Snapshot::try_new(&log_store, Some(version)).await?;
            let batches = snapshot
                .files(&log_store, None)
                .try_collect::<Vec<_>>()
                .await?;
            let num_files = batches.iter().map(|b| b.num_rows() as u64).sum::<u64>();
            assert_eq!(num_files, version);
        }

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_try_materialized_log_data_requires_materialized_files() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = Snapshot::try_new(&log_store, None).await?;

        assert!(matches!(
            snapshot.try_materialized_log_data(),
            Err(DeltaTableError::NotInitializedWithFiles(_))
        ));

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_capability_metadata_state_does_not_materialize_files() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = Snapshot::try_new(&log_store, None).await?;

        let metadata = snapshot.metadata_state();

        assert_eq!(metadata.protocol, snapshot.protocol());
        assert_eq!(metadata.metadata, snapshot.metadata());
        assert_eq!(metadata.table_configuration, snapshot.table_configuration());
        assert!(!snapshot.has_materialized_files_for_test());

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_capability_active_adds_without_stats_streams_from_lazy_snapshot() -> TestResult
    {
        let log_store = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let snapshot = Snapshot::try_new(log_store.as_ref(), Some(12)).await?;

        let files: Vec<_> = snapshot
            .active_adds(
                log_store.as_ref(),
                ActiveAddOptions {
                    predicate: None,
                    stats: AddStatsPolicy::None,
                },
            )
            .try_collect()
            .await?;

        assert_eq!(files.len(), 12);
        assert!(files.iter().all(|file| file.stats().is_none()));
        assert!(!snapshot.has_materialized_files_for_test());

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_capability_active_add_batches_match_stream_adapter() -> TestResult {
        let log_store = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let snapshot = Snapshot::try_new(log_store.as_ref(), Some(12)).await?;
        let options = ActiveAddOptions {
            predicate: None,
            stats: AddStatsPolicy::None,
        };

        let streamed_rows: usize = snapshot
            .active_adds(log_store.as_ref(), options.clone())
            .map_ok(|file| file.path_raw().to_string())
            .try_collect::<Vec<_>>()
            .await?
            .len();
        let batch_rows: usize = snapshot
            .active_add_batches(log_store.as_ref(), options)
            .await?
            .iter()
            .map(|batch| batch.num_rows())
            .sum();

        assert_eq!(batch_rows, streamed_rows);
        assert!(!snapshot.has_materialized_files_for_test());

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_filters_and_rebuilds_same_version_wrong_table_cache() -> TestResult {
        let log_store = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let target = Snapshot::try_new(log_store.as_ref(), Some(12)).await?;
        let expected = active_add_paths(&target, log_store.as_ref()).await?;

        let mut mismatched_cache = MaterializedFiles::full(&target, vec![]);
        mismatched_cache.identity.table_root = Url::parse("memory:///other/")?;
        let cached = Arc::new(target.with_materialized_files(Some(Arc::new(mismatched_cache))));

        assert_eq!(
            active_add_paths(cached.as_ref(), log_store.as_ref()).await?,
            expected
        );
        assert!(matches!(
            cached.try_materialized_log_data(),
            Err(DeltaTableError::NotInitializedWithFiles(_))
        ));
        assert!(!cached.has_materialized_files_for_test());

        let serialized = serde_json::to_value(cached.as_ref())?;
        assert!(serialized[10].is_null());

        let eager = EagerSnapshot::try_new_with_snapshot(log_store.as_ref(), cached).await?;
        let repaired = eager.snapshot();
        let materialized_files = repaired
            .materialized_files()
            .expect("eager materialization did not rebuild the cache");
        assert_eq!(materialized_files.identity, repaired.identity());
        assert_eq!(
            active_add_paths(repaired, log_store.as_ref()).await?,
            expected
        );

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_capability_active_tombstones_delegates_to_snapshot_stream() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = Snapshot::try_new(log_store.as_ref(), None).await?;

        let tombstones = snapshot
            .active_tombstones(log_store.as_ref())
            .try_collect::<Vec<_>>()
            .await?;

        assert_eq!(tombstones.len(), 31);
        assert!(!snapshot.has_materialized_files_for_test());

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_capability_conflict_read_set_replays_lazy_snapshot() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = Snapshot::try_new(log_store.as_ref(), None).await?;

        let read_set = snapshot.conflict_read_set(log_store.as_ref()).await?;

        assert_eq!(read_set.log_data().num_files(), 5);
        assert!(!snapshot.has_materialized_files_for_test());

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_capability_conflict_read_set_matches_materialized_stats() -> TestResult {
        let (_table_dir, table) = selective_stats_table().await?;
        let log_store = table.log_store();
        let lazy = Snapshot::try_new(log_store.as_ref(), None).await?;
        let materialized = Arc::new(Snapshot::try_new(log_store.as_ref(), None).await?)
            .ensure_materialized_files(log_store.as_ref())
            .await?;

        let lazy_read_set = lazy.conflict_read_set(log_store.as_ref()).await?;
        let materialized_read_set = materialized.conflict_read_set(log_store.as_ref()).await?;
        let lazy_log_data = lazy_read_set.log_data();
        let materialized_log_data = materialized_read_set.log_data();
        let lazy_files = lazy_log_data.iter().collect::<Vec<_>>();
        let materialized_files = materialized_log_data.iter().collect::<Vec<_>>();

        assert_eq!(lazy_files.len(), materialized_files.len());
        assert_eq!(lazy_files[0].path_raw(), materialized_files[0].path_raw());
        assert_eq!(lazy_files[0].stats(), materialized_files[0].stats());
        assert!(lazy_files[0].min_values().is_some());
        assert!(lazy_files[0].max_values().is_some());
        assert!(lazy_files[0].null_counts().is_some());
        assert!(!lazy.has_materialized_files_for_test());

        Ok(())
    }

    #[cfg(feature = "datafusion")]
    #[tokio::test]
    async fn snapshot_capability_active_adds_raw_json_preserves_row_counts_and_raw_stats()
    -> TestResult {
        let (_table_dir, table) = selective_stats_table().await?;
        let log_store = table.log_store();
        let snapshot = Snapshot::try_new(log_store.as_ref(), None).await?;

        let files: Vec<_> = snapshot
            .active_adds(
                log_store.as_ref(),
                ActiveAddOptions {
                    predicate: None,
                    stats: AddStatsPolicy::RawJson,
                },
            )
            .try_collect()
            .await?;

        assert_eq!(files.len(), 1);
        assert_eq!(files[0].num_records(), Some(3));
        assert!(files[0].stats().is_some());
        assert!(files[0].min_values().is_none());
        assert!(!snapshot.has_materialized_files_for_test());

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_capability_active_adds_reuses_compatible_materialized_stats_cache()
    -> TestResult {
        let (_table_dir, table) = selective_stats_table().await?;
        let (log_store, mut operations) = recording_log_store(table.log_store());
        let snapshot = EagerSnapshot::try_new(log_store.as_ref(), None).await?;
        let original_cache = snapshot
            .snapshot()
            .materialized_files()
            .cloned()
            .expect("expected materialized state with stats");
        drain_recorded_ops(&mut operations).await;

        #[cfg(feature = "datafusion")]
        let policies = [
            AddStatsPolicy::None,
            AddStatsPolicy::RawJson,
            AddStatsPolicy::Parsed,
        ];
        #[cfg(not(feature = "datafusion"))]
        let policies = [AddStatsPolicy::None, AddStatsPolicy::Parsed];

        for policy in policies {
            let files: Vec<_> = snapshot
                .snapshot()
                .active_adds(
                    log_store.as_ref(),
                    ActiveAddOptions {
                        predicate: None,
                        stats: policy,
                    },
                )
                .try_collect()
                .await?;

            assert_eq!(files.len(), 1);
            assert_eq!(files[0].num_records(), Some(3));
            assert!(drain_recorded_ops(&mut operations).await.is_empty());
            assert!(Arc::ptr_eq(
                &original_cache,
                snapshot
                    .snapshot()
                    .materialized_files()
                    .expect("compatible read removed the cache")
            ));
        }

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_capability_active_adds_parsed_preserves_full_stats() -> TestResult {
        let (_table_dir, table) = selective_stats_table().await?;
        let log_store = table.log_store();
        let snapshot = Snapshot::try_new(log_store.as_ref(), None).await?;

        let files: Vec<_> = snapshot
            .active_adds(
                log_store.as_ref(),
                ActiveAddOptions {
                    predicate: None,
                    stats: AddStatsPolicy::Parsed,
                },
            )
            .try_collect()
            .await?;

        assert_eq!(files.len(), 1);
        assert_eq!(files[0].num_records(), Some(3));
        assert!(files[0].min_values().is_some());
        assert!(files[0].max_values().is_some());
        assert!(files[0].null_counts().is_some());
        assert!(!snapshot.has_materialized_files_for_test());

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_capability_selected_malformed_stats_retains_consumer_error() -> TestResult {
        let table_dir = tempfile::tempdir().unwrap();
        let table_url = url::Url::from_directory_path(table_dir.path()).unwrap();
        let mut table = DeltaTable::try_from_url(table_url)
            .await?
            .create()
            .with_columns([StructField::new(
                "value",
                DataType::Primitive(PrimitiveType::Long),
                true,
            )])
            .with_configuration_property(TableProperty::DataSkippingNumIndexedCols, Some("1"))
            .await?;
        append_test_add_with_stats(
            &mut table,
            "selected-malformed.snappy.parquet",
            "{not valid stats json",
        )
        .await?;

        let log_store = table.log_store();
        let snapshot = Snapshot::try_new(log_store.as_ref(), None).await?;
        let files: Vec<_> = snapshot
            .active_adds(
                log_store.as_ref(),
                ActiveAddOptions {
                    predicate: Some(Arc::new(delta_kernel::Predicate::literal(true))),
                    stats: AddStatsPolicy::Parsed,
                },
            )
            .try_collect()
            .await?;

        assert_eq!(
            files.iter().map(|file| file.path_raw()).collect_vec(),
            ["selected-malformed.snappy.parquet"]
        );
        let error = files[0]
            .to_add()
            .get_stats()
            .expect_err("consumer parsed selected malformed stats");
        let error = DeltaTableError::from(error);

        assert!(
            matches!(error, DeltaTableError::InvalidStatsJson { .. }),
            "expected InvalidStatsJson, got {error:?}"
        );
        assert!(!snapshot.has_materialized_files_for_test());

        Ok(())
    }

    #[cfg(feature = "datafusion")]
    #[tokio::test]
    async fn snapshot_capability_predicate_prunes_malformed_stats_before_parsing() -> TestResult {
        let table_dir = tempfile::tempdir().unwrap();
        let table_url = url::Url::from_directory_path(table_dir.path()).unwrap();
        let mut table = DeltaTable::try_from_url(table_url)
            .await?
            .create()
            .with_columns([StructField::new(
                "value",
                DataType::Primitive(PrimitiveType::Long),
                true,
            )])
            .with_configuration_property(TableProperty::DataSkippingNumIndexedCols, Some("1"))
            .await?;

        append_test_add_with_stats(
            &mut table,
            "excluded.snappy.parquet",
            r#"{"numRecords":1,"minValues":{"value":7},"maxValues":{"value":7},"nullCount":{"value":"0"}}"#,
        )
        .await?;
        append_test_add_with_stats(
            &mut table,
            "selected.snappy.parquet",
            r#"{"numRecords":1,"nullCount":{"value":1}}"#,
        )
        .await?;

        let log_store = table.log_store();
        let lazy = Snapshot::try_new(log_store.as_ref(), None).await?;
        let materialized = Arc::new(lazy.clone())
            .ensure_materialized_files(log_store.as_ref())
            .await?;
        let predicate: PredicateRef = Arc::new(Expression::column(["value"]).is_null());

        for snapshot in [&lazy, materialized.as_ref()] {
            for policy in [AddStatsPolicy::RawJson, AddStatsPolicy::Parsed] {
                let files: Vec<_> = snapshot
                    .active_adds(
                        log_store.as_ref(),
                        ActiveAddOptions {
                            predicate: Some(predicate.clone()),
                            stats: policy,
                        },
                    )
                    .try_collect()
                    .await?;

                assert_eq!(
                    files.iter().map(|file| file.path_raw()).collect_vec(),
                    ["selected.snappy.parquet"]
                );
            }
        }

        assert!(!lazy.has_materialized_files_for_test());
        assert!(materialized.has_materialized_files_for_test());
        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_roundtrip_preserves_materialized_state() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = Arc::new(Snapshot::try_new(&log_store, None).await?)
            .ensure_materialized_files(&log_store)
            .await?;

        let value = serde_json::to_value(snapshot.as_ref())?;
        assert_eq!(value[9]["policy"], json!("FullTablePreserveRaw"));

        let bytes = serde_json::to_vec(snapshot.as_ref())?;
        let actual: Snapshot = serde_json::from_slice(&bytes)?;

        assert!(actual.materialized_files().is_some());
        assert_eq!(
            actual.try_materialized_log_data()?.num_files(),
            snapshot.try_materialized_log_data()?.num_files()
        );
        let materialized_files = actual
            .materialized_files()
            .expect("snapshot round trip lost materialized files");
        assert_eq!(materialized_files.identity, actual.identity());
        assert_eq!(
            materialized_files.policy,
            MaterializedFilesPolicy::FullTablePreserveRaw
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_roundtrip_preserves_empty_materialized_state() -> TestResult {
        let table = DeltaTable::new_in_memory()
            .create()
            .with_columns([StructField::new(
                "id",
                DataType::Primitive(PrimitiveType::Integer),
                true,
            )])
            .await?;
        let log_store = table.log_store();
        let snapshot = Arc::new(Snapshot::try_new(log_store.as_ref(), None).await?)
            .ensure_materialized_files(log_store.as_ref())
            .await?;

        assert!(snapshot.materialized_files().is_some());
        assert_eq!(snapshot.try_materialized_log_data()?.num_files(), 0);

        let bytes = serde_json::to_vec(snapshot.as_ref())?;
        let actual: Snapshot = serde_json::from_slice(&bytes)?;

        assert!(actual.materialized_files().is_some());
        assert_eq!(actual.try_materialized_log_data()?.num_files(), 0);

        Ok(())
    }

    #[test]
    fn eager_snapshot_rejects_invalid_or_missing_materialized_cache() -> TestResult {
        let snapshot: EagerSnapshot = serde_json::from_str(include_str!(
            "../../../tests/serde/eager_snapshot_pre_identity.json"
        ))?;
        for rejected_cache in ["missing", "wrong_identity", "without_stats"] {
            let mut value = serde_json::to_value(&snapshot)?;
            match rejected_cache {
                "missing" => value[0][9] = serde_json::Value::Null,
                "wrong_identity" => value[0][9]["identity"]["version"] = json!(999),
                "without_stats" => value[0][9]["policy"] = json!("FullTableWithoutStats"),
                _ => unreachable!(),
            }
            let error = serde_json::from_value::<EagerSnapshot>(value)
                .expect_err("an eager snapshot must not expose a rejected cache as an empty table");
            assert!(
                error
                    .to_string()
                    .contains("without valid materialized files")
            );
        }
        Ok(())
    }

    #[test]
    fn legacy_lazy_or_no_stats_eager_payload_is_not_an_empty_table() -> TestResult {
        let snapshot: EagerSnapshot = serde_json::from_str(include_str!(
            "../../../tests/serde/eager_snapshot_pre_identity.json"
        ))?;
        for (require_files, skip_stats) in [(false, false), (true, true)] {
            let mut value = legacy_eager_snapshot_payload(&snapshot);
            value[0].as_array_mut().unwrap().insert(
                9,
                json!({
                    "requireFiles": require_files,
                    "skipStats": skip_stats,
                    "logBufferSize": 4,
                    "logBatchSize": 1024,
                }),
            );
            if !require_files {
                value[1] = json!([]);
            }
            let error = serde_json::from_value::<EagerSnapshot>(value)
                .expect_err("legacy uncached state must require reopening, not look empty");
            assert!(
                error
                    .to_string()
                    .contains("without valid materialized files")
            );
        }
        Ok(())
    }

    #[test]
    fn legacy_lazy_loading_policy_preserves_present_eager_files() -> TestResult {
        let snapshot: EagerSnapshot = serde_json::from_str(include_str!(
            "../../../tests/serde/eager_snapshot_pre_identity.json"
        ))?;
        let mut value = legacy_eager_snapshot_payload(&snapshot);
        value[0].as_array_mut().unwrap().insert(
            9,
            json!({
                "requireFiles": false,
                "skipStats": false,
                "logBufferSize": 4,
                "logBatchSize": 1024,
            }),
        );
        let actual: EagerSnapshot = serde_json::from_value(value)?;
        assert_eq!(actual.try_log_data()?.num_files(), 1);
        Ok(())
    }

    #[tokio::test]
    async fn lazy_snapshot_explicit_materialization_preserves_active_files() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let lazy = Arc::new(Snapshot::try_new(&log_store, None).await?);
        let lazy_paths = active_add_paths(lazy.as_ref(), &log_store).await?;
        assert_eq!(lazy_paths.len(), 5);
        assert!(!lazy.has_materialized_files_for_test());

        let eager = EagerSnapshot {
            snapshot: lazy.clone(),
        }
        .with_files(&log_store)
        .await?;
        assert!(eager.snapshot().has_materialized_files_for_test());
        assert!(!lazy.has_materialized_files_for_test());
        assert_eq!(
            active_add_paths(eager.snapshot(), &log_store).await?,
            lazy_paths
        );
        assert_eq!(eager.try_log_data()?.num_files(), 5);
        Ok(())
    }

    #[test]
    fn test_eager_snapshot_deserializes_pre_identity_fixture() -> TestResult {
        let actual: EagerSnapshot = serde_json::from_str(include_str!(
            "../../../tests/serde/eager_snapshot_pre_identity.json"
        ))?;
        let materialized_files = actual
            .snapshot()
            .materialized_files()
            .expect("pre-identity fixture did not restore materialized files");

        assert_eq!(actual.version(), 1);
        assert_eq!(materialized_files.identity, actual.snapshot().identity());
        assert_eq!(
            materialized_files.policy,
            MaterializedFilesPolicy::FullTablePreserveRaw
        );
        assert_eq!(materialized_files.scope, MaterializedFilesScope::FullTable);
        assert_eq!(actual.try_log_data()?.num_files(), 1);
        assert_eq!(
            actual
                .try_log_data()?
                .iter()
                .map(|file| file.path_raw().to_string())
                .collect_vec(),
            vec!["legacy-fixture.parquet"]
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_wire_drops_same_version_wrong_table_cache_before_batch_decode()
    -> TestResult {
        let log_store = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let snapshot = Arc::new(Snapshot::try_new(log_store.as_ref(), Some(12)).await?)
            .ensure_materialized_files(log_store.as_ref())
            .await?;
        let expected = active_add_paths(snapshot.as_ref(), log_store.as_ref()).await?;
        let mut value = serde_json::to_value(snapshot.as_ref())?;
        let materialized_files = snapshot_materialized_files_wire_mut(&mut value);
        set_materialized_files_wire_table_root(materialized_files);
        materialized_files.insert("batches".to_string(), json!([255]));

        let actual: Snapshot = serde_json::from_value(value)?;

        assert!(actual.materialized_files().is_none());
        assert!(matches!(
            actual.try_materialized_log_data(),
            Err(DeltaTableError::NotInitializedWithFiles(_))
        ));
        assert_eq!(
            active_add_paths(&actual, log_store.as_ref()).await?,
            expected
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_wire_drops_mixed_identity_and_policy_foreign_cache() -> TestResult {
        let (_owner_dir, mut owner_table) = local_test_table().await?;
        let (_foreign_dir, mut foreign_table) = local_test_table().await?;
        append_test_add(&mut owner_table, "owner-only.snappy.parquet").await?;
        append_test_add(&mut foreign_table, "foreign-only.snappy.parquet").await?;

        let owner_log_store = owner_table.log_store();
        let foreign_log_store = foreign_table.log_store();
        let owner = Arc::new(Snapshot::try_new(owner_log_store.as_ref(), None).await?)
            .ensure_materialized_files(owner_log_store.as_ref())
            .await?;
        let foreign = Arc::new(Snapshot::try_new(foreign_log_store.as_ref(), None).await?)
            .ensure_materialized_files(foreign_log_store.as_ref())
            .await?;

        assert_eq!(owner.version(), foreign.version());
        assert_ne!(owner.identity().table_root, foreign.identity().table_root);
        let expected = active_add_paths(owner.as_ref(), owner_log_store.as_ref()).await?;
        let foreign_paths = active_add_paths(foreign.as_ref(), foreign_log_store.as_ref()).await?;
        assert_ne!(expected, foreign_paths);

        let mut owner_value = serde_json::to_value(owner.as_ref())?;
        let foreign_value = serde_json::to_value(foreign.as_ref())?;
        owner_value[9] = foreign_value[9].clone();
        snapshot_materialized_files_wire_mut(&mut owner_value).remove("identity");

        let actual: Snapshot = serde_json::from_value(owner_value)?;

        assert!(actual.materialized_files().is_none());
        assert!(matches!(
            actual.try_materialized_log_data(),
            Err(DeltaTableError::NotInitializedWithFiles(_))
        ));
        assert_eq!(
            active_add_paths(&actual, owner_log_store.as_ref()).await?,
            expected
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_wire_accepts_trusted_pre_identity_cache() -> TestResult {
        let (_owner_dir, mut owner_table) = local_test_table().await?;
        let (_foreign_dir, mut foreign_table) = local_test_table().await?;
        append_test_add(&mut owner_table, "owner-only.snappy.parquet").await?;
        append_test_add(&mut foreign_table, "trusted-legacy.snappy.parquet").await?;

        let owner_log_store = owner_table.log_store();
        let foreign_log_store = foreign_table.log_store();
        let owner = Arc::new(Snapshot::try_new(owner_log_store.as_ref(), None).await?)
            .ensure_materialized_files(owner_log_store.as_ref())
            .await?;
        let foreign = Arc::new(Snapshot::try_new(foreign_log_store.as_ref(), None).await?)
            .ensure_materialized_files(foreign_log_store.as_ref())
            .await?;

        assert_eq!(owner.version(), foreign.version());
        assert_ne!(owner.identity().table_root, foreign.identity().table_root);
        let owner_paths = active_add_paths(owner.as_ref(), owner_log_store.as_ref()).await?;
        let trusted_legacy_paths =
            active_add_paths(foreign.as_ref(), foreign_log_store.as_ref()).await?;
        assert_ne!(owner_paths, trusted_legacy_paths);

        // Pre-identity payloads have neither identity nor policy. Serde payloads are trusted
        // persistence input, so this exact historical shape is accepted for compatibility.
        let mut owner_value = serde_json::to_value(owner.as_ref())?;
        let foreign_value = serde_json::to_value(foreign.as_ref())?;
        owner_value[9] = foreign_value[9].clone();
        let materialized_files = snapshot_materialized_files_wire_mut(&mut owner_value);
        materialized_files.remove("identity");
        materialized_files.remove("policy");

        let actual: Snapshot = serde_json::from_value(owner_value)?;
        let materialized_files = actual
            .materialized_files()
            .expect("trusted pre-identity cache was not restored");
        let mut actual_paths = actual
            .try_materialized_log_data()?
            .iter()
            .map(|file| file.path_raw().to_string())
            .collect_vec();
        actual_paths.sort();

        assert_eq!(materialized_files.identity, actual.identity());
        assert_eq!(
            materialized_files.policy,
            MaterializedFilesPolicy::FullTablePreserveRaw
        );
        assert_eq!(actual_paths, trusted_legacy_paths);

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_wire_drops_cache_on_snapshot_identity_mismatch() -> TestResult {
        let log_store = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let snapshot = Arc::new(Snapshot::try_new(log_store.as_ref(), Some(12)).await?)
            .ensure_materialized_files(log_store.as_ref())
            .await?;
        let expected = active_add_paths(snapshot.as_ref(), log_store.as_ref()).await?;

        for field in ["checkpoint_version", "protocol", "metadata"] {
            let mut value = serde_json::to_value(snapshot.as_ref())?;
            let materialized_files = snapshot_materialized_files_wire_mut(&mut value);
            let identity = materialized_files["identity"]
                .as_object_mut()
                .expect("snapshot identity wire must be an object");

            match field {
                "checkpoint_version" => {
                    identity.insert(field.to_string(), json!(999));
                }
                "protocol" => {
                    let protocol = identity[field]
                        .as_object_mut()
                        .expect("protocol wire must be an object");
                    let min_reader_version = protocol["minReaderVersion"]
                        .as_i64()
                        .expect("minimum reader version must be an integer");
                    protocol.insert(
                        "minReaderVersion".to_string(),
                        json!(min_reader_version + 1),
                    );
                }
                "metadata" => {
                    identity[field]
                        .as_object_mut()
                        .expect("metadata wire must be an object")
                        .insert("id".to_string(), json!("foreign-table-id"));
                }
                _ => unreachable!(),
            }
            materialized_files.insert("batches".to_string(), json!([255]));

            let actual: Snapshot = serde_json::from_value(value)?;

            assert!(actual.materialized_files().is_none(), "field: {field}");
            assert_eq!(
                active_add_paths(&actual, log_store.as_ref()).await?,
                expected,
                "field: {field}"
            );
        }

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_wire_rejects_malformed_batches() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = Arc::new(Snapshot::try_new(&log_store, None).await?)
            .ensure_materialized_files(&log_store)
            .await?;
        let mut value = serde_json::to_value(snapshot.as_ref())?;
        snapshot_materialized_files_wire_mut(&mut value)
            .insert("batches".to_string(), json!([255]));

        let error = serde_json::from_value::<Snapshot>(value)
            .expect_err("snapshot accepted malformed IPC with valid cache metadata");

        assert!(
            error
                .to_string()
                .contains("failed to read ipc record batch")
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_wire_drops_unknown_policy_or_scope_before_batch_decode() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = Arc::new(Snapshot::try_new(&log_store, None).await?)
            .ensure_materialized_files(&log_store)
            .await?;
        let expected = active_add_paths(snapshot.as_ref(), &log_store).await?;
        for (field, future_value) in [
            ("policy", json!("FutureFullTablePolicy")),
            ("scope", json!("FutureScope")),
        ] {
            let mut value = serde_json::to_value(snapshot.as_ref())?;
            let materialized_files = snapshot_materialized_files_wire_mut(&mut value);
            materialized_files.insert(field.to_string(), future_value);
            materialized_files.insert("batches".to_string(), json!([255]));

            let actual: Snapshot = serde_json::from_value(value)?;

            assert!(actual.materialized_files().is_none());
            assert_eq!(active_add_paths(&actual, &log_store).await?, expected);
        }

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_wire_drops_cache_on_version_mismatch() -> TestResult {
        let log_store = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let snapshot = Arc::new(Snapshot::try_new(log_store.as_ref(), Some(12)).await?)
            .ensure_materialized_files(log_store.as_ref())
            .await?;
        let expected = active_add_paths(snapshot.as_ref(), log_store.as_ref()).await?;
        let mut value = serde_json::to_value(snapshot.as_ref())?;
        let materialized_files = snapshot_materialized_files_wire_mut(&mut value);
        materialized_files.insert("version".to_string(), serde_json::to_value(11)?);

        let actual: Snapshot = serde_json::from_value(value)?;

        assert!(actual.materialized_files().is_none());
        assert!(matches!(
            actual.try_materialized_log_data(),
            Err(DeltaTableError::NotInitializedWithFiles(_))
        ));
        assert_eq!(
            active_add_paths(&actual, log_store.as_ref()).await?,
            expected
        );

        Ok(())
    }

    async fn test_eager_snapshot() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;

        let snapshot = EagerSnapshot::try_new(&log_store, None).await?;

        let bytes = serde_json::to_vec(&snapshot).unwrap();
        let actual = serde_json::from_slice::<'_, EagerSnapshot>(&bytes);
        assert!(actual.is_ok());

        let schema_string = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}"#;
        let expected: StructType = serde_json::from_str(schema_string)?;
        assert_eq!(snapshot.schema().as_ref(), &expected);

        let log_store = TestTables::Checkpoints.table_builder()?.build_storage()?;

        for version in 0..=12 {
            let snapshot = EagerSnapshot::try_new(&log_store, Some(version)).await?;
            let batches: Vec<_> = snapshot.file_views(&log_store, None).try_collect().await?;
            assert_eq!(batches.len(), version as usize);
        }

        Ok(())
    }

    #[tokio::test]
    async fn test_eager_snapshot_try_new_with_snapshot_is_zero_io_when_materialized() -> TestResult
    {
        let base = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let (log_store, mut operations) = recording_log_store(base);

        let snapshot = Arc::new(Snapshot::try_new(log_store.as_ref(), Some(12)).await?)
            .ensure_materialized_files(log_store.as_ref())
            .await?;
        drain_recorded_ops(&mut operations).await;

        let eager =
            EagerSnapshot::try_new_with_snapshot(log_store.as_ref(), snapshot.clone()).await?;
        let constructor_ops = drain_recorded_ops(&mut operations).await;

        assert!(
            constructor_ops.is_empty(),
            "expected zero IO, got {constructor_ops:?}"
        );
        assert!(Arc::ptr_eq(&snapshot, &eager.snapshot));

        Ok(())
    }

    #[tokio::test]
    async fn test_eager_snapshot_serde_is_wrapper_only() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = EagerSnapshot::try_new(&log_store, None).await?;

        let value = serde_json::to_value(&snapshot)?;
        let elements = value.as_array().expect("expected eager snapshot sequence");
        assert_eq!(elements.len(), 1);

        let actual: EagerSnapshot = serde_json::from_value(value)?;
        assert_eq!(actual.version(), snapshot.version());
        assert_eq!(actual.metadata().id(), snapshot.metadata().id());

        Ok(())
    }

    #[tokio::test]
    async fn test_eager_snapshot_deserializes_legacy_empty_table_with_empty_cache() -> TestResult {
        let table = DeltaTable::new_in_memory()
            .create()
            .with_columns([StructField::new(
                "id",
                DataType::Primitive(PrimitiveType::Integer),
                true,
            )])
            .await?;
        let snapshot = EagerSnapshot::try_new(table.log_store().as_ref(), None).await?;
        let legacy = legacy_eager_snapshot_payload(&snapshot);

        let actual: EagerSnapshot = serde_json::from_value(legacy)?;

        assert!(actual.snapshot().has_materialized_files_for_test());
        assert_eq!(actual.try_log_data()?.num_files(), 0);

        Ok(())
    }

    #[tokio::test]
    async fn test_eager_snapshot_legacy_serde_preserves_materialized_state() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = EagerSnapshot::try_new(&log_store, None).await?;

        assert!(snapshot.snapshot().has_materialized_files_for_test());

        let legacy = legacy_eager_snapshot_payload(&snapshot);

        let actual: EagerSnapshot = serde_json::from_value(legacy)?;

        assert_eq!(actual.version(), snapshot.version());
        assert!(actual.snapshot().has_materialized_files_for_test());
        assert_eq!(
            actual.try_log_data()?.num_files(),
            snapshot.try_log_data()?.num_files()
        );

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_no_predicate_scan_preserves_raw_stats_but_keeps_narrow_parsed_stats()
    -> TestResult {
        let (_table_dir, table) = selective_stats_table().await?;
        let log_store = table.log_store();
        let snapshot = Snapshot::try_new(log_store.as_ref(), None).await?;

        let batches: Vec<_> = snapshot
            .files(log_store.as_ref(), None)
            .try_collect()
            .await?;

        assert!(!batches.is_empty());
        assert!(
            batches
                .iter()
                .all(|batch| batch.column_by_name("stats").is_some())
        );
        assert!(
            batches
                .iter()
                .all(|batch| field_count(batch, "stats_parsed") == 1)
        );
        assert!(
            batches
                .iter()
                .all(|batch| stats_parsed_field_names(batch) == vec!["numRecords"])
        );

        let file = LogicalFileView::new(batches[0].clone(), 0);
        assert_eq!(file.num_records(), Some(3));

        let add = file.to_add();
        let stats = add
            .stats
            .expect("raw stats should be preserved for Add compatibility");
        let stats: serde_json::Value = serde_json::from_str(&stats)?;
        assert_eq!(stats["minValues"]["value"], json!(1));
        assert_eq!(stats["maxValues"]["other"], json!(30));
        assert_eq!(stats["nullCount"]["value"], json!(0));

        Ok(())
    }

    #[tokio::test]
    async fn eager_snapshot_materialized_files_keep_full_parsed_stats() -> TestResult {
        let (_table_dir, table) = selective_stats_table().await?;
        let eager = EagerSnapshot::try_new(table.log_store().as_ref(), None).await?;

        let log_data = eager.log_data();
        let files = log_data.iter().collect::<Vec<_>>();
        assert_eq!(files.len(), 1);

        let file = &files[0];
        assert_eq!(file.num_records(), Some(3));
        assert!(
            file.min_values().is_some(),
            "materialized compatibility data must retain parsed min stats"
        );
        assert!(
            file.max_values().is_some(),
            "materialized compatibility data must retain parsed max stats"
        );
        assert!(
            file.null_counts().is_some(),
            "materialized compatibility data must retain parsed null-count stats"
        );

        Ok(())
    }

    #[tokio::test]
    async fn snapshot_predicate_scan_projects_only_required_stats_fields() -> TestResult {
        let (_table_dir, table) = selective_stats_table().await?;
        let snapshot = Snapshot::try_new(table.log_store().as_ref(), None).await?;
        let predicate: PredicateRef = Arc::new(Expression::column(["value"]).eq(Scalar::Long(1)));

        let batches: Vec<_> = snapshot
            .files(table.log_store().as_ref(), Some(predicate))
            .try_collect()
            .await?;

        assert_eq!(batches.len(), 1);
        assert!(batches[0].column_by_name("stats").is_some());
        assert_eq!(field_count(&batches[0], "stats_parsed"), 1);
        assert_eq!(
            stats_parsed_field_names(&batches[0]),
            vec!["numRecords", "nullCount", "minValues", "maxValues"]
        );
        assert_eq!(
            nested_stats_field_names(&batches[0], "minValues"),
            vec!["value"]
        );
        assert_eq!(
            nested_stats_field_names(&batches[0], "maxValues"),
            vec!["value"]
        );
        assert_eq!(
            nested_stats_field_names(&batches[0], "nullCount"),
            vec!["value"]
        );

        let add = LogicalFileView::new(batches[0].clone(), 0).to_add();
        let stats = add
            .stats
            .expect("raw stats should be preserved for Add compatibility");
        let stats: serde_json::Value = serde_json::from_str(&stats)?;
        assert_eq!(stats["minValues"]["other"], json!(10));

        Ok(())
    }

    #[tokio::test]
    async fn test_materialized_files_full_table_seed_shares_batches() -> TestResult {
        let log_store = TestTables::Simple.table_builder()?.build_storage()?;
        let snapshot = Snapshot::try_new(&log_store, None).await?;
        let batch = RecordBatch::new_empty(Arc::new(arrow_schema::Schema::empty()));
        let materialized_files = MaterializedFiles::full(&snapshot, vec![batch]);

        let seed = materialized_files
            .full_table_seed()
            .expect("full-table materialized state should be reusable");

        assert_eq!(seed.version, materialized_files.identity.version);
        assert_eq!(
            seed.existing_predicate,
            materialized_files.existing_predicate
        );
        assert!(Arc::ptr_eq(&seed.batches, &materialized_files.batches));
        assert_eq!(
            seed.into_iter().collect::<Vec<_>>(),
            materialized_files.batches.as_ref()
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_eager_file_views_reuses_materialized_files_same_version() -> TestResult {
        let base = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let (log_store, mut operations) = recording_log_store(base);

        let snapshot = EagerSnapshot::try_new(log_store.as_ref(), Some(12)).await?;

        drain_recorded_ops(&mut operations).await;

        let _: Vec<_> = snapshot
            .file_views(log_store.as_ref(), None)
            .try_collect()
            .await?;
        let replay_ops = drain_recorded_ops(&mut operations).await;

        assert!(
            replay_ops.iter().all(|op| !op.is_log_replay_read()),
            "expected file_views() to reuse materialized state, got {replay_ops:?}",
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_eager_file_views_reuses_materialized_files_after_update() -> TestResult {
        let base = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let (log_store, mut operations) = recording_log_store(base);

        let mut snapshot = EagerSnapshot::try_new(log_store.as_ref(), Some(11)).await?;
        snapshot.update(log_store.as_ref(), Some(12)).await?;

        drain_recorded_ops(&mut operations).await;

        let _: Vec<_> = snapshot
            .file_views(log_store.as_ref(), None)
            .try_collect()
            .await?;
        let replay_ops = drain_recorded_ops(&mut operations).await;

        assert!(
            replay_ops.iter().all(|op| !op.is_log_replay_read()),
            "expected updated file_views() to reuse materialized state, got {replay_ops:?}",
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_without_materialized_files_replays_log() -> TestResult {
        let base = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let (log_store, mut operations) = recording_log_store(base);

        let snapshot = Snapshot::try_new(log_store.as_ref(), Some(12)).await?;

        drain_recorded_ops(&mut operations).await;

        let _: Vec<_> = snapshot
            .file_views(log_store.as_ref(), None)
            .try_collect()
            .await?;
        let replay_ops = drain_recorded_ops(&mut operations).await;

        assert!(
            replay_ops.iter().any(|op| op.is_log_replay_read()),
            "expected plain Snapshot::file_views() to replay log data, got {replay_ops:?}",
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_failed_eager_update_preserves_materialized_files() -> TestResult {
        let base = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let (log_store, mut operations) = recording_log_store(base);

        let mut snapshot = EagerSnapshot::try_new(log_store.as_ref(), Some(12)).await?;

        drain_recorded_ops(&mut operations).await;

        assert!(snapshot.update(log_store.as_ref(), Some(11)).await.is_err());
        assert_eq!(snapshot.version(), 12);

        drain_recorded_ops(&mut operations).await;

        let file_views: Vec<_> = snapshot
            .file_views(log_store.as_ref(), None)
            .try_collect()
            .await?;
        let replay_ops = drain_recorded_ops(&mut operations).await;

        assert_eq!(file_views.len(), 12);
        assert!(
            replay_ops.iter().all(|op| !op.is_log_replay_read()),
            "expected failed update to preserve materialized state, got {replay_ops:?}",
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_eager_file_views_reuses_materialized_files_with_partition_predicate() -> TestResult
    {
        let base = TestTables::Delta0_8_0Partitioned
            .table_builder()?
            .build_storage()?;
        let (log_store, mut operations) = recording_log_store(base);

        let snapshot = Snapshot::try_new(log_store.as_ref(), None).await?;
        let eager = EagerSnapshot::try_new(log_store.as_ref(), None).await?;

        let predicate = Arc::new(conjunction_to_kernel_predicate(
            &[
                ("month", FilterOp::Eq, FilterValue::Scalar("2")),
                ("year", FilterOp::Eq, FilterValue::Scalar("2020")),
            ],
            eager.schema().as_ref(),
        )?);

        let expected_paths: Vec<_> = snapshot
            .file_views(log_store.as_ref(), Some(predicate.clone()))
            .map_ok(|view| view.path_raw().to_string())
            .try_collect()
            .await?;
        assert_eq!(
            expected_paths,
            vec![
                "year=2020/month=2/day=3/part-00000-94d16827-f2fd-42cd-a060-f67ccc63ced9.c000.snappy.parquet".to_string(),
                "year=2020/month=2/day=5/part-00000-89cdd4c8-2af7-4add-8ea3-3990b2f027b5.c000.snappy.parquet".to_string(),
            ]
        );

        drain_recorded_ops(&mut operations).await;

        let eager_paths: Vec<_> = eager
            .file_views(log_store.as_ref(), Some(predicate))
            .map_ok(|view| view.path_raw().to_string())
            .try_collect()
            .await?;
        let replay_ops = drain_recorded_ops(&mut operations).await;

        assert_eq!(eager_paths, expected_paths);
        assert!(
            replay_ops.iter().all(|op| !op.is_log_replay_read()),
            "expected predicate file_views() to reuse materialized state, got {replay_ops:?}",
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_file_views_with_dnf_predicate() -> TestResult {
        let base = TestTables::Delta0_8_0Partitioned
            .table_builder()?
            .build_storage()?;
        let snapshot = Snapshot::try_new(base.as_ref(), None).await?;

        let dnf = vec![
            vec![
                ("year", FilterOp::Eq, FilterValue::Scalar("2020")),
                ("month", FilterOp::Eq, FilterValue::Scalar("2")),
            ],
            vec![
                ("year", FilterOp::Eq, FilterValue::Scalar("2021")),
                ("month", FilterOp::Eq, FilterValue::Scalar("12")),
            ],
        ];
        let predicate = Arc::new(dnf_to_kernel_predicate(&dnf, snapshot.schema().as_ref())?);

        let mut paths: Vec<_> = snapshot
            .file_views(base.as_ref(), Some(predicate))
            .map_ok(|view| view.path_raw().to_string())
            .try_collect()
            .await?;
        paths.sort();
        assert_eq!(
            paths,
            vec![
                "year=2020/month=2/day=3/part-00000-94d16827-f2fd-42cd-a060-f67ccc63ced9.c000.snappy.parquet".to_string(),
                "year=2020/month=2/day=5/part-00000-89cdd4c8-2af7-4add-8ea3-3990b2f027b5.c000.snappy.parquet".to_string(),
                "year=2021/month=12/day=20/part-00000-9275fdf4-3961-4184-baa0-1c8a2bb98104.c000.snappy.parquet".to_string(),
                "year=2021/month=12/day=4/part-00000-6dc763c0-3e8b-4d52-b19e-1f92af3fbb25.c000.snappy.parquet".to_string(),
            ]
        );

        Ok(())
    }

    #[tokio::test]
    async fn test_partition_values_map_preserves_all_columns_under_narrowing_predicate()
    -> TestResult {
        use std::collections::BTreeSet;

        // A predicate that references only a subset of the partition columns (year + month, but
        // not day) makes the scan narrow `partition_values()` to the referenced columns for data
        // skipping. `partition_values_map()` must still return every partition column so connectors
        // can reconstruct the full partition identity of each file.
        let base = TestTables::Delta0_8_0Partitioned
            .table_builder()?
            .build_storage()?;
        let snapshot = Snapshot::try_new(base.as_ref(), None).await?;

        let predicate = Arc::new(conjunction_to_kernel_predicate(
            &[
                ("year", FilterOp::Eq, FilterValue::Scalar("2020")),
                ("month", FilterOp::Eq, FilterValue::Scalar("2")),
            ],
            snapshot.schema().as_ref(),
        )?);

        let views: Vec<_> = snapshot
            .file_views(base.as_ref(), Some(predicate))
            .try_collect()
            .await?;
        assert_eq!(views.len(), 2, "predicate should match exactly two files");

        for view in &views {
            // The parsed accessor is narrowed to the predicate-referenced columns: `day` is dropped.
            let narrowed: BTreeSet<String> = view
                .partition_values()
                .map(|values| {
                    values
                        .fields()
                        .iter()
                        .map(|f| f.name().to_string())
                        .collect()
                })
                .unwrap_or_default();
            assert!(
                !narrowed.contains("day"),
                "expected `day` to be narrowed out of partition_values(), got {narrowed:?}",
            );

            // The raw map preserves every partition column regardless of the scan predicate.
            let full: BTreeSet<String> = view.partition_values_map().into_keys().collect();
            assert_eq!(
                full,
                BTreeSet::from(["year".to_string(), "month".to_string(), "day".to_string()]),
                "partition_values_map() must return all partition columns regardless of predicate",
            );
        }

        Ok(())
    }

    #[tokio::test]
    async fn test_eager_file_views_reuses_materialized_files_with_data_predicate() -> TestResult {
        let (_table_dir, table) = selective_stats_table().await?;
        let (log_store, mut operations) = recording_log_store(table.log_store());

        let eager = EagerSnapshot::try_new(log_store.as_ref(), None).await?;
        drain_recorded_ops(&mut operations).await;

        let predicate: PredicateRef = Arc::new(Expression::column(["value"]).eq(Scalar::Long(1)));
        let files: Vec<_> = eager
            .file_views(log_store.as_ref(), Some(predicate))
            .try_collect()
            .await?;
        let replay_ops = drain_recorded_ops(&mut operations).await;

        assert_eq!(files.len(), 1);
        assert_eq!(files[0].num_records(), Some(3));
        assert!(files[0].min_values().is_some());
        assert!(
            replay_ops.iter().all(|op| !op.is_log_replay_read()),
            "expected data-predicate file_views() to reuse materialized state, got {replay_ops:?}",
        );

        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn test_eager_file_views_return_newest_files_first() -> TestResult {
        let (_dir, mut table) = checkpoint_rebase_table().await?;

        append_test_add(&mut table, "part-00002.snappy.parquet").await?;
        let version = table.version().unwrap();
        checkpoints::create_checkpoint(&table, None).await?;

        let snapshot = EagerSnapshot::try_new(table.log_store().as_ref(), None).await?;
        assert_eq!(snapshot.version(), version);

        let paths = eager_file_paths(&snapshot, table.log_store().as_ref()).await?;
        assert_eq!(
            paths,
            vec![
                "part-00002.snappy.parquet",
                "part-00001.snappy.parquet",
                "part-00000.snappy.parquet",
            ]
        );

        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn test_snapshot_update_explicit_same_version_adopts_late_checkpoint() -> TestResult {
        let (_dir, table) = checkpoint_rebase_table().await?;
        let version = table.version().unwrap();
        let log_store = table.log_store();
        let snapshot = Snapshot::try_new(log_store.as_ref(), Some(version)).await?;
        assert_eq!(snapshot.version(), version);
        assert_eq!(snapshot.checkpoint_version(), None);

        checkpoints::create_checkpoint(&table, None).await?;

        let updated = Arc::new(snapshot)
            .update(log_store.engine(None), Some(version))
            .await?;
        assert_eq!(updated.version(), version);
        assert_eq!(updated.checkpoint_version(), Some(version));
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn test_snapshot_update_latest_same_version_adopts_late_checkpoint() -> TestResult {
        let (_dir, table) = checkpoint_rebase_table().await?;
        let version = table.version().unwrap();
        let log_store = table.log_store();
        let snapshot = Snapshot::try_new(log_store.as_ref(), None).await?;
        assert_eq!(snapshot.version(), version);
        assert_eq!(snapshot.checkpoint_version(), None);

        checkpoints::create_checkpoint(&table, None).await?;

        let updated = Arc::new(snapshot)
            .update(log_store.engine(None), None)
            .await?;
        assert_eq!(updated.version(), version);
        assert_eq!(updated.checkpoint_version(), Some(version));
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn test_eager_snapshot_update_explicit_same_version_adopts_late_checkpoint() -> TestResult
    {
        let (_dir, table) = checkpoint_rebase_table().await?;
        let version = table.version().unwrap();
        let log_store = table.log_store();
        let mut snapshot = EagerSnapshot::try_new(log_store.as_ref(), Some(version)).await?;
        let expected_paths = eager_file_paths(&snapshot, log_store.as_ref()).await?;
        assert_eq!(snapshot.snapshot.checkpoint_version(), None);

        checkpoints::create_checkpoint(&table, None).await?;

        snapshot.update(log_store.as_ref(), Some(version)).await?;
        assert_eq!(snapshot.version(), version);
        assert_eq!(snapshot.snapshot.checkpoint_version(), Some(version));
        assert_eq!(
            eager_file_paths(&snapshot, log_store.as_ref()).await?,
            expected_paths
        );
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn test_eager_snapshot_update_latest_same_version_adopts_late_checkpoint() -> TestResult {
        let (_dir, table) = checkpoint_rebase_table().await?;
        let version = table.version().unwrap();
        let log_store = table.log_store();
        let mut snapshot = EagerSnapshot::try_new(log_store.as_ref(), None).await?;
        let expected_paths = eager_file_paths(&snapshot, log_store.as_ref()).await?;
        assert_eq!(snapshot.snapshot.checkpoint_version(), None);

        checkpoints::create_checkpoint(&table, None).await?;

        snapshot.update(log_store.as_ref(), None).await?;
        assert_eq!(snapshot.version(), version);
        assert_eq!(snapshot.snapshot.checkpoint_version(), Some(version));
        assert_eq!(
            eager_file_paths(&snapshot, log_store.as_ref()).await?,
            expected_paths
        );
        Ok(())
    }

    #[tokio::test]
    async fn test_snapshot_update_latest_same_version_without_changes_reuses_arc() -> TestResult {
        let log_store = TestTables::Checkpoints.table_builder()?.build_storage()?;
        let snapshot = Arc::new(Snapshot::try_new(log_store.as_ref(), None).await?)
            .ensure_materialized_files(log_store.as_ref())
            .await?;
        let prior_snapshot = snapshot.clone();
        let prior_materialized = snapshot
            .materialized_files()
            .cloned()
            .expect("expected materialized files");

        let updated = snapshot.update(log_store.engine(None), None).await?;

        assert!(Arc::ptr_eq(&updated, &prior_snapshot));
        assert!(Arc::ptr_eq(
            updated
                .materialized_files()
                .expect("expected materialized files"),
            &prior_materialized
        ));
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn test_eager_snapshot_same_version_checkpoint_refresh_is_idempotent() -> TestResult {
        let (_dir, table) = checkpoint_rebase_table().await?;
        let version = table.version().unwrap();
        let log_store = table.log_store();
        let mut snapshot = EagerSnapshot::try_new(log_store.as_ref(), Some(version)).await?;

        checkpoints::create_checkpoint(&table, None).await?;
        snapshot.update(log_store.as_ref(), Some(version)).await?;
        assert_eq!(snapshot.snapshot.checkpoint_version(), Some(version));

        let prior_snapshot = snapshot.snapshot.clone();
        let prior_materialized = snapshot
            .snapshot
            .materialized_files()
            .cloned()
            .expect("expected materialized files");
        let prior_paths = eager_file_paths(&snapshot, log_store.as_ref()).await?;

        snapshot.update(log_store.as_ref(), Some(version)).await?;

        assert!(Arc::ptr_eq(&snapshot.snapshot, &prior_snapshot));
        assert!(Arc::ptr_eq(
            snapshot
                .snapshot
                .materialized_files()
                .expect("expected materialized files"),
            &prior_materialized
        ));
        assert_eq!(
            eager_file_paths(&snapshot, log_store.as_ref()).await?,
            prior_paths
        );
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn test_snapshot_update_same_version_surfaces_invalid_current_checkpoint_hint()
    -> TestResult {
        let (_table_dir, table) = checkpoint_rebase_table().await?;
        let version = table.version().unwrap();
        let log_store = table.log_store();
        let snapshot = Snapshot::try_new(log_store.as_ref(), Some(version)).await?;

        checkpoints::create_checkpoint(&table, None).await?;
        let checkpoint_paths = checkpoint_file_paths(log_store.as_ref(), version).await?;
        assert!(!checkpoint_paths.is_empty());
        for checkpoint_path in checkpoint_paths {
            log_store
                .object_store(None)
                .delete(&checkpoint_path)
                .await?;
        }

        let err = Arc::new(snapshot)
            .update(log_store.engine(None), Some(version))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("Had a _last_checkpoint hint but didn't find any checkpoints"),
            "expected same-version checkpoint refresh to surface the kernel checkpoint error: {err}"
        );
        Ok(())
    }

    #[tokio::test]
    async fn test_cached_parsed_batches_short_circuit_guards() -> TestResult {
        let base = TestTables::Checkpoints.table_builder()?.build_storage()?;

        let plain = Snapshot::try_new(base.as_ref(), Some(12)).await?;
        assert!(plain.cached_parsed_batches().is_none());

        let eager = EagerSnapshot::try_new(base.as_ref(), Some(12)).await?;
        let cached_stream = eager
            .snapshot()
            .cached_parsed_batches()
            .expect("materialized full-table cache -> Some");
        let cached_batches: Vec<_> = cached_stream.try_collect().await?;
        let direct_batches = eager
            .snapshot()
            .materialized_files()
            .expect("materialized cache present")
            .batches
            .clone();
        assert_eq!(cached_batches.len(), direct_batches.len());
        for (a, b) in cached_batches.iter().zip(direct_batches.iter()) {
            assert_eq!(a.num_rows(), b.num_rows());
            assert_eq!(a.schema(), b.schema());
        }

        Ok(())
    }

    #[tokio::test]
    async fn test_file_views_no_predicate_matches_fresh_replay() -> TestResult {
        let base = TestTables::Checkpoints.table_builder()?.build_storage()?;

        let eager = EagerSnapshot::try_new(base.as_ref(), Some(12)).await?;
        let eager_paths: Vec<String> = eager
            .file_views(base.as_ref(), None)
            .map_ok(|view| view.path_raw().to_string())
            .try_collect()
            .await?;

        let plain = Snapshot::try_new(base.as_ref(), Some(12)).await?;
        let plain_paths: Vec<String> = plain
            .file_views(base.as_ref(), None)
            .map_ok(|view| view.path_raw().to_string())
            .try_collect()
            .await?;

        assert_eq!(
            eager_paths, plain_paths,
            "short-circuit cache replay must yield the same files in the same \
             order as a fresh kernel replay with predicate = None",
        );

        Ok(())
    }
}
