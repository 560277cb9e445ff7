//! `CREATE [OR REPLACE] TABLE t {SHALLOW | DEEP} CLONE s [VERSION | TIMESTAMP
//! AS OF …]`, as Databricks does it: one commit recorded as `CLONE` that
//! gives `t` the source version's protocol, schema, partitioning and
//! properties, and its files —
//!
//! - **shallow**: the source's files, referenced by absolute path (nothing
//!   copied). VACUUM of the source may then delete files the clone still
//!   reads; as on Databricks, reading such a clone fails (the missing file
//!   is named) rather than returning fewer rows, and cloning again with
//!   `CREATE OR REPLACE` repairs it;
//! - **deep**: the files copied into the clone's own folder. Cloning again
//!   onto an existing deep clone copies only the files it lacks.

use std::collections::{HashMap, HashSet};

use datafusion::object_store::ObjectStoreExt;
use deltalake::kernel::transaction::CommitBuilder;
use deltalake::kernel::{Action, Add, DeletionVectorDescriptor, MetadataExt, Remove, StorageType};
use deltalake::protocol::{DeltaOperation, SaveMode};
use futures::TryStreamExt;
use serde_json::{json, Value};

use crate::catalog::TableName;
use crate::commit::committed::CommitSink;
use crate::error::{Error, Result};

/// What a clone is asked to do.
#[derive(Debug, Clone)]
pub struct CloneRequest {
    pub shallow: bool,
    /// The source's name as the statement wrote it (for the history).
    pub source_name: String,
    /// Properties to set on the clone over the source's.
    pub properties: HashMap<String, String>,
    /// `CREATE OR REPLACE` onto an existing table: its next version.
    pub replace: bool,
}

/// What a clone did, as Databricks reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CloneMetrics {
    pub source_table_size: i64,
    pub source_num_of_files: i64,
    pub num_removed_files: i64,
    pub num_copied_files: i64,
    pub removed_files_size: i64,
    pub copied_files_size: i64,
}

/// Commits `source` (loaded at the version to clone) as `target`'s first
/// version, or, with `replace`, its next.
pub async fn clone_table(
    name: &TableName,
    target: &crate::Table,
    source: &crate::Table,
    request: CloneRequest,
    committed: &CommitSink,
) -> Result<CloneMetrics> {
    let target = target.delta();
    let source = source.delta();
    let source_snapshot = source
        .snapshot()
        .map_err(|e| Error::delta("cloning", request.source_name.clone(), e))?
        .snapshot()
        .clone();
    let source_version = source_snapshot.version();
    let files: Vec<_> = source_snapshot
        .file_views(source.log_store().as_ref(), None)
        .try_collect()
        .await
        .map_err(|e| Error::delta("listing the files of", request.source_name.clone(), e))?;
    let source_root_url = crate::write::files::table_root(source.log_store().as_ref());
    let source_root = source_root_url.to_string();
    // Deletion-vector files a deep clone copied (several data files share one).
    let mut copied_vectors: HashSet<String> = HashSet::new();

    // What the clone has now (a deep clone cloned again keeps the files it
    // copied before).
    let current = if request.replace {
        let snapshot = target
            .snapshot()
            .map_err(|e| Error::delta("replacing", name.to_string(), e))?
            .snapshot()
            .clone();
        let files: Vec<_> = snapshot
            .file_views(target.log_store().as_ref(), None)
            .try_collect()
            .await
            .map_err(|e| Error::delta("listing the files of", name.to_string(), e))?;
        Some((snapshot, files))
    } else {
        None
    };
    let had: HashMap<String, i64> = current
        .iter()
        .flat_map(|(_, files)| files.iter())
        .map(|f| (f.path().to_string(), f.size()))
        .collect();

    let source_store = source.log_store().object_store(None);
    let target_store = target.log_store().object_store(None);
    let now = chrono::Utc::now().timestamp_millis();
    let mut metrics = CloneMetrics::default();
    let mut adds: Vec<Add> = Vec::with_capacity(files.len());
    #[allow(deprecated)] // the view's own conversion; `to_add` is crate-private
    for file in &files {
        let mut add = file.add_action();
        if let Some(vector) = add.deletion_vector.take() {
            let cloned = clone_deletion_vector(
                vector,
                &source_root_url,
                &request,
                (&source_store, &target_store),
                &mut copied_vectors,
            )
            .await?;
            add.deletion_vector = Some(cloned);
        }
        add.data_change = true;
        metrics.source_table_size += add.size;
        metrics.source_num_of_files += 1;
        let absolute = add.path.contains("://");
        if request.shallow {
            if !absolute {
                add.path = format!("{source_root}{}", add.path);
            }
        } else {
            if absolute {
                // A file the source itself references elsewhere (a shallow
                // clone's): copied under its own name.
                let file_name = add.path.rsplit('/').next().unwrap_or_default().to_string();
                add.path = file_name;
            }
            if had.get(&add.path) != Some(&add.size) {
                let from = if absolute {
                    return Err(Error::Refused {
                        message: format!(
                            "[DELTA_UNSUPPORTED_FEATURES_FOR_WRITE] DEEP CLONE of {}, itself a \
                             shallow clone, is not supported yet",
                            request.source_name
                        ),
                        state: crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED,
                    });
                } else {
                    object_path(&file.path())?
                };
                copy(
                    &source_store,
                    &from,
                    &target_store,
                    &object_path(&add.path)?,
                )
                .await?;
                metrics.num_copied_files += 1;
                metrics.copied_files_size += add.size;
            }
        }
        add.modification_time = now;
        adds.push(add);
    }
    let kept: HashSet<&str> = adds.iter().map(|a| a.path.as_str()).collect();
    let removes: Vec<Remove> = current
        .iter()
        .flat_map(|(_, files)| files.iter())
        .filter(|f| !kept.contains(f.path().as_ref()))
        .map(|f| {
            let mut remove = f.remove_action(true);
            remove.deletion_timestamp = Some(now);
            remove
        })
        .collect();
    metrics.num_removed_files = removes.len() as i64;
    metrics.removed_files_size = removes.iter().filter_map(|r| r.size).sum();

    // The source's metadata under a new table id, with the clone's
    // properties over the source's.
    let mut metadata = source_snapshot.metadata().clone();
    let mut value = serde_json::to_value(&metadata)
        .map_err(|e| Error::Internal(format!("reading {}'s metadata: {e}", request.source_name)))?;
    value["id"] = json!(uuid::Uuid::new_v4().to_string());
    value["name"] = json!(name.table.clone());
    value["createdTime"] = json!(now);
    metadata = serde_json::from_value(value)
        .map_err(|e| Error::Internal(format!("the clone's metadata: {e}")))?;
    for (key, v) in &request.properties {
        metadata = metadata
            .add_config_key(key.clone(), v.clone())
            .map_err(|e| Error::delta("cloning", name.to_string(), e.into()))?;
    }
    // A replaced table never gets an older protocol than it had.
    let protocol = match &current {
        Some((snapshot, _)) => {
            let mut configuration = metadata.configuration().clone();
            configuration.extend(request.properties.clone());
            let schema = metadata
                .parse_schema()
                .map_err(|e| Error::delta("cloning", name.to_string(), e.into()))?;
            let mut protocol = source_snapshot.protocol().clone();
            let (cp, sp) = (snapshot.protocol(), &protocol);
            if cp.min_reader_version() > sp.min_reader_version()
                || cp.min_writer_version() > sp.min_writer_version()
            {
                protocol = cp.clone();
            }
            crate::table::features::upgrade(Some(&protocol), &configuration, &schema, false)?
                .unwrap_or(protocol)
        }
        None => {
            let schema = metadata
                .parse_schema()
                .map_err(|e| Error::delta("cloning", name.to_string(), e.into()))?;
            crate::table::features::upgrade(
                Some(source_snapshot.protocol()),
                metadata.configuration(),
                &schema,
                false,
            )?
            .unwrap_or_else(|| source_snapshot.protocol().clone())
        }
    };

    let mut actions = Vec::with_capacity(adds.len() + removes.len() + 2);
    actions.push(Action::Protocol(protocol.clone()));
    actions.push(Action::Metadata(metadata.clone()));
    actions.extend(adds.into_iter().map(Action::Add));
    actions.extend(removes.into_iter().map(Action::Remove));

    let operation_parameters = json!({
        "source": request.source_name,
        "sourceVersion": source_version.to_string(),
        "isShallow": request.shallow.to_string(),
    });
    // Databricks writes operation metrics as strings.
    let operation_metrics = json!({
        "sourceTableSize": metrics.source_table_size.to_string(),
        "sourceNumOfFiles": metrics.source_num_of_files.to_string(),
        "numRemovedFiles": metrics.num_removed_files.to_string(),
        "numCopiedFiles": metrics.num_copied_files.to_string(),
        "removedFilesSize": metrics.removed_files_size.to_string(),
        "copiedFilesSize": metrics.copied_files_size.to_string(),
    });
    let mut app: Vec<(String, Value)> = vec![
        (
            crate::commit::operation_name::KEY.to_string(),
            Value::String("CLONE".into()),
        ),
        ("operationParameters".into(), operation_parameters),
        ("operationMetrics".into(), operation_metrics),
    ];
    if let Some((snapshot, _)) = &current {
        app.push(("readVersion".into(), snapshot.version().into()));
    }
    let operation = DeltaOperation::Create {
        mode: if request.replace {
            SaveMode::Overwrite
        } else {
            SaveMode::ErrorIfExists
        },
        location: target.log_store().root_url().clone(),
        protocol,
        metadata,
    };
    let read = current.as_ref().map(|(s, _)| s.version());
    let builder = CommitBuilder::from(crate::commit_properties_with(app))
        .with_actions(actions)
        .with_max_retries(0);
    let finalized = match &current {
        Some((snapshot, _)) => builder.build(Some(snapshot), target.log_store(), operation),
        None => builder.build(None, target.log_store(), operation),
    }
    .await
    .map_err(|e| Error::delta("cloning into", name.to_string(), e))?;
    let mut cloned = target.clone();
    cloned.state = Some(finalized.snapshot());
    committed.finish(name, read, cloned).await;
    Ok(metrics)
}

/// A source file's deletion vector as the clone names it: a shallow clone
/// points at the source's vector file by its absolute path (storage type
/// `p`), a deep clone copies the file beside its own data under the same
/// name; a vector inline in the log stays as it is.
async fn clone_deletion_vector(
    vector: DeletionVectorDescriptor,
    source_root: &url::Url,
    request: &CloneRequest,
    (source_store, target_store): (
        &deltalake::logstore::ObjectStoreRef,
        &deltalake::logstore::ObjectStoreRef,
    ),
    copied: &mut HashSet<String>,
) -> Result<DeletionVectorDescriptor> {
    let elsewhere = || Error::Refused {
        message: format!(
            "[DELTA_UNSUPPORTED_FEATURES_FOR_WRITE] DEEP CLONE of {}, whose deletion vectors \
             lie outside its folder, is not supported yet",
            request.source_name
        ),
        state: crate::SqlState::DELTA_FEATURE_NOT_SUPPORTED,
    };
    match vector.storage_type {
        StorageType::Inline => Ok(vector),
        StorageType::AbsolutePath if request.shallow => Ok(vector),
        StorageType::AbsolutePath => Err(elsewhere()),
        StorageType::UuidRelativePath => {
            let kernel =
                delta_kernel::actions::deletion_vector::DeletionVectorDescriptor::try_from(
                    vector.clone(),
                )
                .and_then(|k| k.absolute_path(source_root))
                .map_err(|e| Error::Internal(format!("a deletion vector's path: {e}")))?;
            let Some(url) = kernel else {
                return Err(Error::Internal(
                    "a stored deletion vector without a path".into(),
                ));
            };
            if request.shallow {
                return Ok(DeletionVectorDescriptor {
                    storage_type: StorageType::AbsolutePath,
                    path_or_inline_dv: url.to_string(),
                    ..vector
                });
            }
            let Some(relative) = url.as_str().strip_prefix(source_root.as_str()) else {
                return Err(elsewhere());
            };
            if copied.insert(relative.to_string()) {
                let path = object_path(relative)?;
                copy(source_store, &path, target_store, &path).await?;
            }
            Ok(vector)
        }
    }
}

fn object_path(path: &str) -> Result<deltalake::Path> {
    deltalake::Path::parse(path).map_err(|e| Error::Internal(format!("file path {path}: {e}")))
}

/// Copies one data file between two tables' stores.
async fn copy(
    from_store: &deltalake::logstore::ObjectStoreRef,
    from: &deltalake::Path,
    to_store: &deltalake::logstore::ObjectStoreRef,
    to: &deltalake::Path,
) -> Result<()> {
    let storage = |source| Error::Storage {
        op: "copying a file for DEEP CLONE",
        source: Box::new(source),
    };
    let bytes = from_store
        .get(from)
        .await
        .map_err(storage)?
        .bytes()
        .await
        .map_err(storage)?;
    to_store.put(to, bytes.into()).await.map_err(storage)?;
    Ok(())
}
