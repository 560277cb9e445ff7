//! A checkpoint that cannot be read is skipped, then rewritten.
//!
//! A checkpoint is a summary of the log up to its version, written after
//! the commit it summarises: a process that dies while writing one on a
//! store without atomic puts (or a damaged disk, or another writer's bug)
//! leaves a file whose footer is missing. delta-rs (through the kernel)
//! then loads the table from that newest checkpoint and fails with a
//! Parquet error, although every commit is intact. Delta on Spark falls
//! back to an older checkpoint in that case; here, when loading a table
//! fails, the newest checkpoint's footers are checked, a damaged one is
//! hidden from this process's stores (`requests::hide`) together with a
//! `_last_checkpoint` naming it, the load is retried (from the checkpoint
//! before it, or the commits alone), and the checkpoint is written again
//! from the log so that other readers see a good one.

use std::collections::{BTreeMap, HashMap};

use datafusion::parquet::file::metadata::{FooterTail, ParquetMetaDataReader};
use deltalake::logstore::object_store::ObjectStoreExt;
use deltalake::{DeltaResult, DeltaTable, DeltaTableBuilder, Path};
use url::Url;

use crate::store::requests::{hide, unhide};

/// Loads the latest version of the table at `url`, past a damaged newest
/// checkpoint as the module says.
pub(crate) async fn load(url: &Url, options: &HashMap<String, String>) -> DeltaResult<DeltaTable> {
    let builder = |version: Option<u64>| -> DeltaResult<DeltaTableBuilder> {
        let builder =
            DeltaTableBuilder::from_url(url.clone())?.with_storage_options(options.clone());
        Ok(match version {
            Some(v) => builder.with_version(v),
            None => builder,
        })
    };
    let error = match builder(None)?.load().await {
        Ok(table) => return Ok(table),
        // No log at all: nothing to look at (the common failure, as when a
        // name is tried as a table).
        Err(
            e @ (deltalake::DeltaTableError::NotATable(_)
            | deltalake::DeltaTableError::InvalidTableLocation(_)),
        ) => return Err(e),
        Err(e) => e,
    };
    let Some(damaged) = hide_damaged(&builder(None)?.build()?).await else {
        return Err(error);
    };
    let table = builder(None)?.load().await?;
    tracing::warn!(table = %url, version = damaged.version, "the checkpoint could not be read: loaded without it; rewriting it");
    // The checkpoint again, from the log: kept hidden until it is whole.
    match builder(Some(damaged.version))?.load().await {
        Ok(at) => match deltalake::protocol::checkpoints::create_checkpoint(&at, None).await {
            Ok(()) => damaged.paths.iter().for_each(unhide),
            Err(e) => {
                tracing::warn!(table = %url, error = %e, "rewriting the damaged checkpoint failed")
            }
        },
        Err(e) => {
            tracing::warn!(table = %url, error = %e, "rewriting the damaged checkpoint failed")
        }
    }
    Ok(table)
}

/// A damaged checkpoint, hidden.
struct Damaged {
    version: u64,
    /// Its parts and the `_last_checkpoint` that named it.
    paths: Vec<Path>,
}

/// Hides the newest checkpoint of `table` (not loaded) if any part of it
/// has no readable Parquet footer; `None` when it is whole (or there is
/// none).
async fn hide_damaged(table: &DeltaTable) -> Option<Damaged> {
    let log_store = table.log_store();
    let store = log_store.root_object_store(None);
    let log = Path::from_url_path(log_store.root_url().path())
        .ok()?
        .join("_delta_log");
    let listed = store.list_with_delimiter(Some(&log)).await.ok()?;
    let mut checkpoints: BTreeMap<u64, Vec<(Path, u64)>> = BTreeMap::new();
    for meta in listed.objects {
        let name = meta.location.filename().unwrap_or_default();
        if let Some((version, rest)) = name.split_once('.') {
            if rest.starts_with("checkpoint") && rest.ends_with(".parquet") {
                if let Ok(version) = version.parse::<u64>() {
                    let part = (meta.location.clone(), meta.size);
                    checkpoints.entry(version).or_default().push(part);
                }
            }
        }
    }
    let (version, parts) = checkpoints.pop_last()?;
    let mut damaged = false;
    for (path, size) in &parts {
        damaged |= !footer_reads(store.as_ref(), path, *size).await;
    }
    if !damaged {
        return None;
    }
    let mut paths: Vec<Path> = parts.into_iter().map(|(p, _)| p).collect();
    let last = log.clone().join("_last_checkpoint");
    let names_it = match store.get(&last).await {
        Ok(got) => got.bytes().await.ok().is_none_or(|b| {
            serde_json::from_slice::<serde_json::Value>(&b)
                .ok()
                .and_then(|v| v.get("version")?.as_u64())
                .is_none_or(|v| v == version)
        }),
        Err(_) => false,
    };
    if names_it {
        paths.push(last);
    }
    paths.iter().for_each(hide);
    Some(Damaged { version, paths })
}

/// Whether a Parquet file's footer reads.
async fn footer_reads(
    store: &dyn deltalake::logstore::object_store::ObjectStore,
    path: &Path,
    size: u64,
) -> bool {
    if size < 8 {
        return false;
    }
    let Ok(tail) = store.get_range(path, size - 8..size).await else {
        return false;
    };
    let Ok(tail) = <[u8; 8]>::try_from(&tail[..]) else {
        return false;
    };
    let Ok(footer) = FooterTail::try_new(&tail) else {
        return false;
    };
    let length = footer.metadata_length() as u64;
    if length + 8 > size {
        return false;
    }
    let Ok(metadata) = store.get_range(path, size - 8 - length..size - 8).await else {
        return false;
    };
    ParquetMetaDataReader::decode_metadata(&metadata).is_ok()
}
