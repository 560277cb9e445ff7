//! Object-store requests, counted by kind for `/metrics`
//! (`lakegres_object_store_requests_total{op}`).
//!
//! Every store the server opens — the warehouse's, each table's log store,
//! the stores DataFusion scans data files through, the file roots' — comes
//! from delta-rs' object-store factories (`store_for`, `DeltaTableBuilder`).
//! [`count_requests`] wraps each registered factory once, so every store
//! they make counts its requests, on S3 as on a local disk. The same wrapper
//! is where a commit entry gets the operation name its writer asked for
//! (`commit/operation_name.rs`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};

use deltalake::logstore::object_store::{
    self, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};
use deltalake::logstore::{
    object_store_factories, ObjectStoreFactory, ObjectStoreRef, StorageConfig,
};
use deltalake::{DeltaResult, Path};
use futures::stream::BoxStream;

use crate::store::faults::{self, Fault};
use futures::StreamExt;
use url::Url;

/// The kinds of request counted, in the order [`requests`] returns them.
pub const KINDS: [&str; 7] = ["get", "head", "put", "list", "delete", "copy", "rename"];

/// S3 returns at most this many keys per LIST page: a listing of more
/// objects is one more request per page.
const LIST_PAGE: u64 = 1000;

static COUNTS: [AtomicU64; KINDS.len()] = [const { AtomicU64::new(0) }; KINDS.len()];

#[derive(Clone, Copy)]
enum Kind {
    Get = 0,
    Head = 1,
    Put = 2,
    List = 3,
    Delete = 4,
    Copy = 5,
    Rename = 6,
}

fn count(kind: Kind, path: Option<&Path>) {
    COUNTS[kind as usize].fetch_add(1, Ordering::Relaxed);
    tracing::trace!(target: "lakegres::object_store", op = KINDS[kind as usize], path = %path.map(Path::as_ref).unwrap_or(""));
}

/// Whether `path` is a commit entry of a Delta log (`_delta_log/N.json`).
pub(crate) fn is_commit_entry(path: &Path) -> bool {
    let key = path.as_ref();
    let Some((folder, name)) = key.rsplit_once('/') else {
        return false;
    };
    (folder == "_delta_log" || folder.ends_with("/_delta_log"))
        && name
            .strip_suffix(".json")
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
}

/// Objects this process treats as absent, by path: checkpoints found
/// damaged (see `commit/damaged_checkpoint.rs`) until they are rewritten.
/// Paths are the full ones a bucket's (or the local disk's) store sees.
static HIDDEN: std::sync::LazyLock<std::sync::RwLock<std::collections::HashSet<String>>> =
    std::sync::LazyLock::new(Default::default);
/// How many paths [`HIDDEN`] holds: the common case (none) takes no lock.
static HIDING: AtomicU64 = AtomicU64::new(0);

/// Hides an object from every store of this process: reads find it
/// absent, listings leave it out.
pub(crate) fn hide(path: &Path) {
    if let Ok(mut hidden) = HIDDEN.write() {
        if hidden.insert(path.to_string()) {
            HIDING.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Shows an object [`hide`] hid again.
pub(crate) fn unhide(path: &Path) {
    if let Ok(mut hidden) = HIDDEN.write() {
        if hidden.remove(path.as_ref()) {
            HIDING.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

fn is_hidden(path: &Path) -> bool {
    HIDING.load(Ordering::Relaxed) > 0
        && HIDDEN
            .read()
            .is_ok_and(|hidden| hidden.contains(path.as_ref()))
}

/// A listing without the hidden objects.
fn visible(
    listing: BoxStream<'static, object_store::Result<ObjectMeta>>,
) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
    if HIDING.load(Ordering::Relaxed) == 0 {
        return listing;
    }
    listing
        .filter(|m| futures::future::ready(!m.as_ref().is_ok_and(|m| is_hidden(&m.location))))
        .boxed()
}

/// Counts one LIST request made outside the counting stores (a page of a
/// folder listing read through object_store's paginated lister).
pub(crate) fn count_list(prefix: &Path) {
    count(Kind::List, Some(prefix));
}

/// Requests made so far by every store of this process, by kind (see
/// [`KINDS`]). A multipart upload counts as one put, a batch delete as one
/// delete per object, a listing as one list per 1,000 objects it returns.
pub fn requests() -> [(&'static str, u64); KINDS.len()] {
    let mut out = [("", 0); KINDS.len()];
    for (i, kind) in KINDS.iter().enumerate() {
        out[i] = (kind, COUNTS[i].load(Ordering::Relaxed));
    }
    out
}

/// Wraps delta-rs' object-store factories (every scheme registered: `file`,
/// `s3`, `gs`, `az` …) so the stores they make count their requests. Runs
/// once; stores made before it are not counted.
pub fn count_requests() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        faults::setup();
        let registry = object_store_factories();
        let schemes: Vec<Url> = registry.iter().map(|e| e.key().clone()).collect();
        for scheme in schemes {
            let inner = match registry.get(&scheme) {
                Some(entry) => Arc::clone(entry.value()),
                None => continue,
            };
            registry.insert(scheme, Arc::new(CountingFactory { inner }));
        }
    });
}

struct CountingFactory {
    inner: Arc<dyn ObjectStoreFactory>,
}

impl ObjectStoreFactory for CountingFactory {
    fn parse_url_opts(
        &self,
        url: &Url,
        config: &StorageConfig,
    ) -> DeltaResult<(ObjectStoreRef, Path)> {
        let (store, path) = self.inner.parse_url_opts(url, config)?;
        // object_store's own store of `file://` URLs, rooted at `/`.
        let local = (url.scheme() == "file" && store.to_string() == "LocalFileSystem(file:///)")
            .then(|| Arc::new(object_store::local::LocalFileSystem::new()));
        // Commit entries this server wrote are read back from memory on
        // object stores (`recent_commits.rs`); a local read is cheap.
        let remote = url.scheme() != "file";
        Ok((
            Arc::new(CountingStore {
                name: store.to_string(),
                inner: store,
                local,
                remote,
            }),
            path,
        ))
    }
}

/// A store that counts the requests it passes on.
#[derive(Debug)]
struct CountingStore {
    inner: ObjectStoreRef,
    /// `inner`'s display (scheme and bucket), naming it for
    /// `recent_commits`.
    name: String,
    /// Set when `inner` is a local store rooted at `/`: its paths to files.
    local: Option<Arc<object_store::local::LocalFileSystem>>,
    /// An object store, whose commit entries written here are kept.
    remote: bool,
}

impl CountingStore {
    /// A listing whose entries check the commit entries kept from this
    /// store (`recent_commits::listed`).
    fn checked(
        &self,
        listing: BoxStream<'static, object_store::Result<ObjectMeta>>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        if !self.remote {
            return listing;
        }
        let name = self.name.clone();
        listing
            .inspect(move |meta| {
                if let Ok(meta) = meta {
                    crate::store::recent_commits::listed(&name, meta);
                }
            })
            .boxed()
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

/// Counts one list request, and one more per full page of objects.
fn counted_listing(
    listing: BoxStream<'static, object_store::Result<ObjectMeta>>,
    prefix: Option<&Path>,
) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
    count(Kind::List, prefix);
    let mut seen = 0u64;
    listing
        .inspect(move |_| {
            seen += 1;
            if seen.is_multiple_of(LIST_PAGE) {
                count(Kind::List, None);
            }
        })
        .boxed()
}

#[async_trait::async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        count(Kind::Put, Some(location));
        // A commit entry gets the operation name its writer asked for.
        let payload = crate::commit::operation_name::renamed(location, &payload).unwrap_or(payload);
        match faults::at("put", location, "before") {
            Some(Fault::Error) => return Err(faults::injected(location)),
            Some(Fault::Partial) => {
                let bytes = bytes::Bytes::from(payload);
                let half = PutPayload::from(bytes.slice(..bytes.len() / 2));
                let _ = self.inner.put_opts(location, half, opts).await;
                faults::abort_now();
            }
            Some(Fault::Abort) | None => {}
        }
        // Only commit entries are kept: a data file's payload is not
        // gathered into one buffer for nothing.
        let kept = (self.remote && is_commit_entry(location)).then(|| payload.clone());
        let put = self.inner.put_opts(location, payload, opts).await?;
        if let Some(Fault::Error) = faults::at("put", location, "after") {
            return Err(faults::injected(location));
        }
        if let Some(payload) = kept {
            crate::store::recent_commits::keep(
                &self.name,
                location,
                bytes::Bytes::from(payload),
                &put,
            );
        }
        Ok(put)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        count(Kind::Put, Some(location));
        if let Some(Fault::Error) = faults::at("put_multipart", location, "before") {
            return Err(faults::injected(location));
        }
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if self.remote {
            if let Some(kept) = crate::store::recent_commits::get(&self.name, location, &options) {
                return Ok(kept);
            }
        }
        count(
            if options.head { Kind::Head } else { Kind::Get },
            Some(location),
        );
        if is_hidden(location) {
            return Err(object_store::Error::NotFound {
                path: location.to_string(),
                source: "hidden as damaged".into(),
            });
        }
        self.inner.get_opts(location, options).await
    }

    // get_ranges is left to the trait's default, which coalesces the ranges
    // and reads each run through get_opts above: one count per request, as
    // S3 sees them (a local store's own get_ranges would read them at once).

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let name = self.name.clone();
        let locations = locations
            .map(move |path| {
                count(Kind::Delete, None);
                let path = path?;
                crate::store::recent_commits::forget(&name, &path);
                match faults::at("delete", &path, "before") {
                    Some(Fault::Error) => Err(faults::injected(&path)),
                    _ => Ok(path),
                }
            })
            .boxed();
        self.inner
            .delete_stream(locations)
            .map(|deleted| {
                let path = deleted?;
                match faults::at("delete", &path, "after") {
                    Some(Fault::Error) => Err(faults::injected(&path)),
                    _ => Ok(path),
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.checked(counted_listing(visible(self.inner.list(prefix)), prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        match (&self.local, prefix) {
            (Some(local), Some(prefix)) => counted_listing(
                visible(local_listing_after(
                    Arc::clone(&self.inner),
                    Arc::clone(local),
                    prefix.clone(),
                    offset.clone(),
                )),
                Some(prefix),
            ),
            _ => self.checked(counted_listing(
                visible(self.inner.list_with_offset(prefix, offset)),
                prefix,
            )),
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        count(Kind::List, prefix);
        let mut listed = self.inner.list_with_delimiter(prefix).await?;
        listed.objects.retain(|m| !is_hidden(&m.location));
        if self.remote {
            for meta in &listed.objects {
                crate::store::recent_commits::listed(&self.name, meta);
            }
        }
        Ok(listed)
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        count(Kind::Copy, Some(from));
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        count(Kind::Rename, Some(from));
        self.inner.rename_opts(from, to, options).await
    }
}

/// A local folder's files after `offset`. object_store's local listing
/// stats every entry of the folder before it compares it with the offset
/// (its directory walk follows links), so each look for a table's next
/// commits cost time in proportion to every commit the table ever had
/// (thousands of small INSERTs: thousands of stats per INSERT). Here the
/// names are read without stats and only the later files are looked up.
/// A folder holding anything but plain files with plain names is listed
/// by the store itself.
fn local_listing_after(
    inner: ObjectStoreRef,
    local: Arc<object_store::local::LocalFileSystem>,
    prefix: Path,
    offset: Path,
) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
    let later = {
        let (prefix, offset) = (prefix.clone(), offset.clone());
        move || -> Option<Vec<ObjectMeta>> {
            let folder = local.path_to_filesystem(&prefix).ok()?;
            if let Some(probed) = log_files_from(&folder, &prefix, &offset) {
                return Some(probed);
            }
            let mut later = Vec::new();
            for entry in std::fs::read_dir(folder).ok()? {
                let entry = entry.ok()?;
                let name = entry.file_name().into_string().ok()?;
                // `name#n`: another writer's upload in progress.
                if name.contains('#') {
                    continue;
                }
                if !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                {
                    return None;
                }
                let location = prefix.clone().join(name.as_str());
                if location <= offset {
                    continue;
                }
                // One stat of the entry, in this same blocking call: the
                // store's `head` opens each file on a blocking thread of its
                // own, which cost a small commit more than the commit.
                let meta = match entry.metadata() {
                    Ok(meta) => meta,
                    // Removed since (log clean-up): not there.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(_) => return None,
                };
                if !meta.is_file() {
                    return None;
                }
                later.push(local_object_meta(&meta, location)?);
            }
            later.sort_by(|a, b| a.location.cmp(&b.location));
            Some(later)
        }
    };
    futures::stream::once(async move {
        match tokio::task::spawn_blocking(later).await {
            Ok(Some(metas)) => futures::stream::iter(metas.into_iter().map(Ok)).boxed(),
            _ => inner.list_with_offset(Some(&prefix), &offset),
        }
    })
    .flatten()
    .boxed()
}

/// The files of a local `_delta_log` folder after `offset` when `offset`
/// names a version whose commit file is there, found by looking up the
/// names a log has rather than by reading the folder: each commit file from
/// that version on (versions are consecutive, and the log clean-up removes
/// the oldest first, so from a commit that is there every later one is),
/// each version's single-file checkpoint, and `_last_checkpoint`. A folder
/// of thousands of commits was read whole after every commit, which made a
/// small INSERT's time grow with the table's history. `None` (read the
/// folder) when the offset names no version, its commit is gone, or the
/// table's checkpoints are multi-part or V2 (their names cannot be looked
/// up); checksum and compacted-log files, which readers may do without,
/// are not listed.
fn log_files_from(
    folder: &std::path::Path,
    prefix: &Path,
    offset: &Path,
) -> Option<Vec<ObjectMeta>> {
    if prefix.filename() != Some("_delta_log") {
        return None;
    }
    let name = offset.filename()?;
    if !offset.prefix_matches(prefix) || name.len() < 20 {
        return None;
    }
    let first: u64 = name.get(..20)?.parse().ok()?;
    let stat = |name: &str| -> Option<Option<ObjectMeta>> {
        match std::fs::metadata(folder.join(name)) {
            Ok(meta) if meta.is_file() => Some(local_object_meta(&meta, prefix.clone().join(name))),
            Ok(_) => None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(None),
            Err(_) => None,
        }
    };
    let mut found = Vec::new();
    if let Some(last) = stat("_last_checkpoint")? {
        let hint = std::fs::read(folder.join("_last_checkpoint")).ok()?;
        let hint: serde_json::Value = serde_json::from_slice(&hint).ok()?;
        if hint.get("parts").is_some() || hint.get("v2Checkpoint").is_some() {
            return None;
        }
        found.push(last);
    }
    let mut version = first;
    loop {
        let commit = format!("{version:020}.json");
        let Some(meta) = stat(&commit)? else {
            break;
        };
        found.push(meta);
        if let Some(checkpoint) = stat(&format!("{version:020}.checkpoint.parquet"))? {
            found.push(checkpoint);
        }
        version += 1;
    }
    if version == first {
        return None;
    }
    let mut later: Vec<ObjectMeta> = found.into_iter().filter(|m| &m.location > offset).collect();
    later.sort_by(|a, b| a.location.cmp(&b.location));
    Some(later)
}

/// What object_store's local store says of a file (its e-tag scheme
/// included: inode, modification time in microseconds, size).
fn local_object_meta(meta: &std::fs::Metadata, location: Path) -> Option<ObjectMeta> {
    let modified = meta.modified().ok()?;
    let micros = modified
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    Some(ObjectMeta {
        location,
        last_modified: modified.into(),
        size: meta.len(),
        e_tag: Some(format!("{inode:x}-{micros:x}-{:x}", meta.len())),
        version: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltalake::logstore::object_store::ObjectStoreExt;

    #[tokio::test]
    async fn a_local_listing_after_an_offset_gives_the_later_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("_delta_log");
        std::fs::create_dir(&log).unwrap();
        for v in 0..6 {
            std::fs::write(log.join(format!("{v:020}.json")), vec![b'x'; v + 1]).unwrap();
        }
        // Another writer's upload in progress is not a file of the log.
        std::fs::write(log.join(format!("{:020}.json#1", 6)), b"x").unwrap();
        let local = Arc::new(object_store::local::LocalFileSystem::new());
        let store = CountingStore {
            inner: Arc::clone(&local) as ObjectStoreRef,
            name: "local".to_string(),
            local: Some(Arc::clone(&local)),
            remote: false,
        };
        let prefix = Path::from_filesystem_path(&log).unwrap();
        let offset = prefix.clone().join(format!("{:020}.json", 2).as_str());
        let listed = |store: &CountingStore| {
            let listing = store.list_with_offset(Some(&prefix), &offset);
            async move {
                let mut got: Vec<(String, u64)> = listing
                    .map(|m| m.unwrap())
                    .map(|m| (m.location.filename().unwrap().to_string(), m.size))
                    .collect()
                    .await;
                got.sort();
                got
            }
        };
        let want: Vec<(String, u64)> = (3..6)
            .map(|v| (format!("{v:020}.json"), v as u64 + 1))
            .collect();
        assert_eq!(listed(&store).await, want);
        // Each entry is what the store itself says of the file, e-tag too.
        let metas: Vec<ObjectMeta> = store
            .list_with_offset(Some(&prefix), &offset)
            .map(|m| m.unwrap())
            .collect()
            .await;
        for meta in metas {
            assert_eq!(meta, local.head(&meta.location).await.unwrap());
        }
        // A checkpoint and its hint are listed; a folder inside is not read.
        std::fs::write(log.join(format!("{:020}.checkpoint.parquet", 4)), b"cp").unwrap();
        std::fs::write(log.join("_last_checkpoint"), br#"{"version":4,"size":1}"#).unwrap();
        std::fs::create_dir(log.join("_sidecars")).unwrap();
        std::fs::write(log.join("_sidecars").join("a.parquet"), b"xy").unwrap();
        let mut with_checkpoint = want.clone();
        with_checkpoint.push((format!("{:020}.checkpoint.parquet", 4), 2));
        with_checkpoint.push(("_last_checkpoint".to_string(), 22));
        with_checkpoint.sort();
        assert_eq!(listed(&store).await, with_checkpoint);
        // Multi-part checkpoints cannot be looked up by name: the folder is
        // read, recursively, as the store reads it.
        std::fs::write(
            log.join("_last_checkpoint"),
            br#"{"version":4,"size":1,"parts":2}"#,
        )
        .unwrap();
        let mut everything = with_checkpoint.clone();
        everything.push(("a.parquet".to_string(), 2));
        for entry in &mut everything {
            if entry.0 == "_last_checkpoint" {
                entry.1 = 32;
            }
        }
        everything.sort();
        assert_eq!(listed(&store).await, everything);
        // An offset whose commit is gone (cleaned up): the folder is read.
        let gone = prefix.clone().join(format!("{:020}.json", 9).as_str());
        let listing: Vec<ObjectMeta> = store
            .list_with_offset(Some(&prefix), &gone)
            .map(|m| m.unwrap())
            .collect()
            .await;
        assert!(listing.iter().all(|m| m.location > gone));
    }

    #[tokio::test]
    async fn a_wrapped_store_counts_its_requests() {
        let store = CountingStore {
            inner: Arc::new(object_store::memory::InMemory::new()),
            name: "memory".to_string(),
            local: None,
            remote: false,
        };
        let before = requests();
        let path = Path::from("a/b.json");
        store
            .put(&path, PutPayload::from_static(b"{}"))
            .await
            .unwrap();
        store.head(&path).await.unwrap();
        store.get(&path).await.unwrap();
        let listed: Vec<_> = store.list(Some(&Path::from("a"))).collect().await;
        assert_eq!(listed.len(), 1);
        store.delete(&path).await.unwrap();
        let after = requests();
        let moved: Vec<(&str, u64)> = after
            .iter()
            .zip(before.iter())
            .map(|((k, a), (_, b))| (*k, a - b))
            .collect();
        // Other tests in this process may count too: at least these.
        for (kind, at_least) in [
            ("get", 1),
            ("head", 1),
            ("put", 1),
            ("list", 1),
            ("delete", 1),
        ] {
            let got = moved
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, n)| *n)
                .unwrap_or(0);
            assert!(got >= at_least, "{kind}: {got}");
        }
    }
}
