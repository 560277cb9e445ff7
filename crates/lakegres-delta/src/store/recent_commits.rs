//! The commit entries this server wrote last, kept to answer reads of them.
//!
//! After a commit delta-rs brings its snapshot to the new version, and the
//! kernel reads the entry it just wrote back from the store (for the
//! protocol and metadata, then for the files it adds), and the catalog's
//! next look at the table reads it again: on S3 a single-row INSERT made
//! three GETs of the entry it had just PUT (issue #25). An entry is written
//! once (put-if-absent) and never changed while its table lives, so its
//! bytes as this server put them are what a read of it returns. Only
//! entries this process wrote are kept; another server's are read from the
//! store as before.
//!
//! A table dropped by another server and created again at the same place
//! writes the same paths anew. So a kept entry is served only for a few
//! seconds after this server last saw it as it is: its put, or a listing
//! showing it with the same ETag. A listing showing it otherwise forgets
//! it, and the kernel lists a log before it reads from it.

use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;
use deltalake::logstore::object_store::{
    self, Attributes, GetOptions, GetResult, GetResultPayload, ObjectMeta, PutResult,
};
use deltalake::Path;
use futures::StreamExt;

use crate::store::requests::is_commit_entry;

/// Entries kept at most; the oldest go first.
const ENTRIES: usize = 256;

/// Larger entries (a CTAS of many files) are not kept.
const ENTRY_BYTES: usize = 256 << 10;

/// How long after it was last seen as it is an entry is served: the reads
/// after a commit come within milliseconds.
const SEEN_FOR: Duration = Duration::from_secs(5);

/// Kept entries by store (its display: scheme and bucket), then path; a
/// lookup (every listed or read commit entry) allocates nothing.
#[derive(Default)]
struct Kept {
    stores: HashMap<String, HashMap<Path, Entry>>,
    /// Keys in the order they were kept, oldest first.
    order: VecDeque<(String, Path)>,
}

impl Kept {
    fn entry(&mut self, store: &str, path: &Path) -> Option<&mut Entry> {
        self.stores.get_mut(store)?.get_mut(path)
    }

    fn remove(&mut self, store: &str, path: &Path) {
        let Some(entries) = self.stores.get_mut(store) else {
            return;
        };
        if entries.remove(path).is_some() {
            self.order.retain(|(s, p)| s != store || p != path);
        }
    }
}

#[derive(Clone)]
struct Entry {
    bytes: Bytes,
    meta: ObjectMeta,
    seen: Instant,
}

static KEPT: LazyLock<Mutex<Kept>> = LazyLock::new(Default::default);

/// Keeps the entry `bytes` this server put at `path` of `store`.
pub(crate) fn keep(store: &str, path: &Path, bytes: Bytes, put: &PutResult) {
    if !is_commit_entry(path) || bytes.len() > ENTRY_BYTES {
        return;
    }
    let meta = ObjectMeta {
        location: path.clone(),
        last_modified: Utc::now(),
        size: bytes.len() as u64,
        e_tag: put.e_tag.clone(),
        version: put.version.clone(),
    };
    let Ok(mut kept) = KEPT.lock() else {
        return;
    };
    let entry = Entry {
        bytes,
        meta,
        seen: Instant::now(),
    };
    let entries = kept.stores.entry(store.to_string()).or_default();
    if entries.insert(path.clone(), entry).is_none() {
        kept.order.push_back((store.to_string(), path.clone()));
    }
    while kept.order.len() > ENTRIES {
        if let Some((store, path)) = kept.order.pop_front() {
            if let Some(entries) = kept.stores.get_mut(&store) {
                entries.remove(&path);
            }
        }
    }
}

/// A whole read of a kept entry, answered from memory; `None` for
/// anything else (ranges, conditions, HEADs, entries not kept).
pub(crate) fn get(store: &str, path: &Path, options: &GetOptions) -> Option<GetResult> {
    let plain = !options.head
        && options.range.is_none()
        && options.if_match.is_none()
        && options.if_none_match.is_none()
        && options.if_modified_since.is_none()
        && options.if_unmodified_since.is_none()
        && options.version.is_none();
    if !plain || !is_commit_entry(path) {
        return None;
    }
    let Entry { bytes, meta, seen } = KEPT.lock().ok()?.entry(store, path)?.clone();
    if seen.elapsed() > SEEN_FOR {
        return None;
    }
    let range = 0..meta.size;
    let stream = futures::stream::once(async move { Ok::<_, object_store::Error>(bytes) }).boxed();
    Some(GetResult {
        payload: GetResultPayload::Stream(stream),
        meta,
        range,
        attributes: Attributes::new(),
    })
}

/// Forgets `path` (deleted: log cleanup, a dropped table).
pub(crate) fn forget(store: &str, path: &Path) {
    if !is_commit_entry(path) {
        return;
    }
    if let Ok(mut kept) = KEPT.lock() {
        kept.remove(store, path);
    }
}

/// A listing showed `meta`: a kept entry it shows with the ETag it was put
/// with is seen again, one it shows otherwise (written anew by another
/// server, or a store without ETags) is forgotten.
pub(crate) fn listed(store: &str, meta: &ObjectMeta) {
    if !is_commit_entry(&meta.location) {
        return;
    }
    let Ok(mut kept) = KEPT.lock() else {
        return;
    };
    let Some(entry) = kept.entry(store, &meta.location) else {
        return;
    };
    if meta.e_tag.is_some() && meta.e_tag == entry.meta.e_tag {
        entry.seen = Instant::now();
    } else {
        kept.remove(store, &meta.location);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_commit_entries_are_kept() {
        assert!(is_commit_entry(&Path::from(
            "wh/default/t/_delta_log/00000000000000000004.json"
        )));
        assert!(!is_commit_entry(&Path::from(
            "wh/default/t/_delta_log/00000000000000000010.checkpoint.parquet"
        )));
        assert!(!is_commit_entry(&Path::from(
            "wh/default/t/_delta_log/_last_checkpoint"
        )));
        assert!(!is_commit_entry(&Path::from(
            "wh/default/t/00000000000000000004.json"
        )));
    }

    #[tokio::test]
    async fn a_kept_entry_is_read_whole_until_forgotten() {
        let path = Path::from("wh/s/t/_delta_log/00000000000000000007.json");
        let put = PutResult {
            e_tag: Some("\"abc\"".into()),
            version: None,
        };
        keep(
            "test-store",
            &path,
            Bytes::from_static(b"{\"add\":{}}\n"),
            &put,
        );
        let whole = get("test-store", &path, &GetOptions::default()).unwrap();
        assert_eq!(whole.meta.e_tag.as_deref(), Some("\"abc\""));
        assert_eq!(whole.bytes().await.unwrap().as_ref(), b"{\"add\":{}}\n");
        // Another store, a range or a HEAD go to the store.
        assert!(get("other-store", &path, &GetOptions::default()).is_none());
        let head = GetOptions {
            head: true,
            ..Default::default()
        };
        assert!(get("test-store", &path, &head).is_none());
        forget("test-store", &path);
        assert!(get("test-store", &path, &GetOptions::default()).is_none());
    }

    #[test]
    fn a_listing_with_another_etag_forgets_an_entry() {
        let path = Path::from("wh/s/t/_delta_log/00000000000000000003.json");
        let put = PutResult {
            e_tag: Some("\"one\"".into()),
            version: None,
        };
        keep("listed-store", &path, Bytes::from_static(b"{}\n"), &put);
        let mut meta = ObjectMeta {
            location: path.clone(),
            last_modified: Utc::now(),
            size: 3,
            e_tag: Some("\"one\"".into()),
            version: None,
        };
        listed("listed-store", &meta);
        assert!(get("listed-store", &path, &GetOptions::default()).is_some());
        // Dropped and created again by another server: another entry.
        meta.e_tag = Some("\"two\"".into());
        listed("listed-store", &meta);
        assert!(get("listed-store", &path, &GetOptions::default()).is_none());
    }
}
