//! Lakegres patch: the files a scan of one snapshot replays, kept for the
//! next scan of the same snapshot with the same projection and filters.
//!
//! Planning a Delta scan replays the snapshot's file actions through the
//! kernel (data skipping, each file's JSON statistics parsed for the
//! columns read) before any row is read: about 0.2 ms for a one-file table,
//! paid for every scan of every statement (TPC-H q2 scans nine tables).
//! DataFusion's own listing tables keep their files' statistics in a cache
//! in the same way. A snapshot never changes, so neither does what a scan
//! of it with the same inputs replays.

use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::common::HashMap;
use delta_kernel::Expression;

use super::replay::ScanFileContext;
use super::{KernelScanPlan, PublicFileIdMap};
use crate::kernel::Snapshot;

/// Tables of more files than this are not kept: their scans are not the
/// ones whose planning dominates, and a kept entry holds its snapshot.
const MAX_TABLE_FILES: usize = 10_000;
/// The files of all the kept entries' snapshots together.
const MAX_KEPT_FILES: usize = 100_000;
/// Kept entries at most (scans of small tables weigh little).
const MAX_ENTRIES: usize = 512;
/// A scan named by more than this (a filter of a long IN list) is not kept.
const MAX_KEY_BYTES: usize = 16 * 1024;

/// A snapshot and its file list in memory (by identity: the entry holds
/// both, so nothing else can take their addresses) and everything else the
/// replay depends on.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct ReplayKey {
    snapshot: usize,
    files: usize,
    scan: String,
}

impl ReplayKey {
    /// The key of a scan of `snapshot`, `scan` naming its other inputs;
    /// `None` for a snapshot without its files in memory or too large.
    pub(crate) fn new(snapshot: &Snapshot, scan: String) -> Option<(Self, usize)> {
        if scan.len() > MAX_KEY_BYTES {
            return None;
        }
        // The whole table's files, not a list some predicate cut.
        let materialized = snapshot
            .materialized_files()
            .filter(|m| m.existing_predicate.is_none())?;
        let files = materialized
            .batches
            .iter()
            .map(|batch| batch.num_rows())
            .sum::<usize>();
        (files <= MAX_TABLE_FILES).then(|| {
            let key = Self {
                snapshot: Arc::as_ptr(&snapshot.inner) as *const () as usize,
                files: Arc::as_ptr(materialized) as *const () as usize,
                scan,
            };
            (key, files)
        })
    }
}

/// What a scan replayed, without deletion vectors (a scan that has them is
/// not kept) and without its metrics (each plan counts its own). Its scan
/// plan holds the snapshot (and file list) the key names.
pub(crate) struct Replayed {
    pub(crate) scan_plan: KernelScanPlan,
    pub(crate) files: Vec<ScanFileContext>,
    pub(crate) transforms: HashMap<String, Arc<Expression>>,
    pub(crate) public_file_ids: PublicFileIdMap,
    pub(crate) num_scanned: usize,
    /// The files of the snapshot, for the bound on what is kept.
    pub(crate) table_files: usize,
}

#[derive(Default)]
struct Kept {
    entries: HashMap<ReplayKey, Arc<Replayed>>,
    /// Oldest first.
    order: VecDeque<ReplayKey>,
    files: usize,
}

static KEPT: LazyLock<Mutex<Kept>> = LazyLock::new(Default::default);

pub(crate) fn get(key: &ReplayKey) -> Option<Arc<Replayed>> {
    KEPT.lock().ok()?.entries.get(key).cloned()
}

pub(crate) fn put(key: ReplayKey, replayed: Replayed) {
    let Ok(mut kept) = KEPT.lock() else {
        return;
    };
    let files = replayed.table_files;
    if kept.entries.insert(key.clone(), Arc::new(replayed)).is_some() {
        // Two statements planned the same scan at once: one entry.
        return;
    }
    kept.order.push_back(key);
    kept.files += files;
    while kept.files > MAX_KEPT_FILES || kept.order.len() > MAX_ENTRIES {
        let Some(oldest) = kept.order.pop_front() else {
            break;
        };
        if let Some(entry) = kept.entries.remove(&oldest) {
            kept.files -= entry.table_files;
        }
    }
}
