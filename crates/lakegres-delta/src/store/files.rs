//! The files statements may name — `COPY INTO … FROM`, `read_files`,
//! `LIST`, `csv.\`path\`` — and listing them.
//!
//! A path is allowed only inside one of the configured roots (by default
//! the warehouse and an `ingest` folder beside it): local folders, or
//! object-store prefixes (`s3://bucket/prefix/`). Relative paths start at
//! the first root. On a local disk the check is made on the real path: `..`
//! and symbolic links are resolved first, so neither can lead out of the
//! roots; an object-store path may not contain `.` or `..` segments at all.
//!
//! A guard (the session's privileges) sees every path a statement names,
//! and every Delta table folder a listing reaches below it: reading a
//! folder recursively must not hand out the files of a table inside it
//! that the user may not read.

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::SystemTime;

use deltalake::logstore::object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use deltalake::logstore::object_store::list::{PaginatedListOptions, PaginatedListStore};
use deltalake::logstore::object_store::{ListResult, ObjectStoreExt};
use deltalake::logstore::{store_for, ObjectStoreRef};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use url::Url;

use crate::error::{Error, Result};

/// A further check of each resolved location and of each Delta table
/// folder a listing reaches (a session's privileges); it may read storage
/// (see [`Location::delta_table`]).
pub type PathGuard =
    std::sync::Arc<dyn Fn(Access) -> futures::future::BoxFuture<'static, Result<()>> + Send + Sync>;

/// What a [`PathGuard`] is asked to allow.
#[derive(Debug, Clone)]
pub enum Access {
    /// A file or folder a statement names.
    Path(Location),
    /// A Delta table folder (one holding a `_delta_log`) that a listing of
    /// the folder `listed` reached below it: the listing would hand out its
    /// files.
    TableBelow {
        /// The folder the statement named.
        listed: Location,
        /// The Delta table folder inside it.
        table: Location,
    },
}

/// The folders and object-store prefixes statements may read files from.
#[derive(Clone)]
pub struct FileRoots {
    roots: Vec<Root>,
    guard: Option<PathGuard>,
}

impl std::fmt::Debug for FileRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileRoots")
            .field("roots", &self.roots)
            .finish()
    }
}

#[derive(Clone)]
enum Root {
    /// Absolute, with symbolic links resolved where the folder exists.
    Local(PathBuf),
    /// An object-store prefix (ends with `/`) and a store for its bucket;
    /// on S3 also one that lists a page at a time (see [`page_lister`]).
    Remote {
        url: Url,
        store: ObjectStoreRef,
        pages: Option<Arc<dyn PaginatedListStore>>,
    },
}

impl std::fmt::Debug for Root {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::Remote { url, .. } => write!(f, "{url}"),
        }
    }
}

/// A file or folder inside the roots.
#[derive(Clone)]
pub enum Location {
    /// A real local path.
    Local(PathBuf),
    /// An object (or prefix) in a bucket.
    Remote {
        /// `scheme://bucket/key`, without a trailing `/`.
        url: Url,
        /// The bucket's store.
        store: ObjectStoreRef,
    },
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::Remote { url, .. } => write!(f, "{url}"),
        }
    }
}

/// One listed file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEntry {
    /// Absolute local path, or the object's URL (`s3://bucket/key`).
    pub path: String,
    /// The name relative to the listed folder (`a.csv`, `2026/b.csv`).
    pub name: String,
    pub size: u64,
    /// Milliseconds since the epoch.
    pub modified_ms: i64,
    pub is_dir: bool,
}

/// Whether a root setting names an object store rather than a local folder.
pub fn is_url(root: &str) -> bool {
    match root.split_once("://") {
        Some((scheme, _)) => scheme.len() > 1 && scheme != "file",
        None => false,
    }
}

/// The URL of the bucket a URL lies in (`s3://bucket/`), under which its
/// store is registered with DataFusion.
pub fn bucket_url(url: &Url) -> Result<Url> {
    Url::parse(&format!("{}://{}/", url.scheme(), url.authority())).map_err(|e| {
        Error::InvalidWarehouse {
            location: url.to_string(),
            reason: e.to_string(),
        }
    })
}

/// A store for the whole bucket `url` lies in.
pub(crate) fn bucket_store(url: &Url, options: &HashMap<String, String>) -> Result<ObjectStoreRef> {
    let bucket = bucket_url(url)?;
    store_for(&bucket, options.clone()).map_err(|e| Error::InvalidWarehouse {
        location: url.to_string(),
        reason: e.to_string(),
    })
}

/// The object path of a URL inside its bucket.
fn object_path(url: &Url) -> Result<deltalake::Path> {
    let key = url.path().trim_start_matches('/').trim_end_matches('/');
    deltalake::Path::parse(key).map_err(|e| Error::PathNotAllowed {
        path: url.to_string(),
        reason: e.to_string(),
    })
}

impl FileRoots {
    /// Roots from local paths (relative ones against the working directory;
    /// missing folders are created) and object-store URLs (opened with
    /// `storage_options`).
    pub fn new(roots: &[String], storage_options: &HashMap<String, String>) -> Result<Self> {
        crate::store::requests::count_requests();
        let mut resolved = Vec::with_capacity(roots.len());
        for root in roots {
            if is_url(root) {
                let invalid = |reason: String| Error::InvalidWarehouse {
                    location: root.clone(),
                    reason,
                };
                let mut url = Url::parse(root).map_err(|e| invalid(e.to_string()))?;
                if !url.path().ends_with('/') {
                    url.set_path(&format!("{}/", url.path()));
                }
                let store = bucket_store(&url, storage_options)?;
                let pages = page_lister(&url, storage_options);
                resolved.push(Root::Remote { url, store, pages });
                continue;
            }
            let root = PathBuf::from(root.strip_prefix("file://").unwrap_or(root));
            std::fs::create_dir_all(&root).map_err(|e| Error::InvalidWarehouse {
                location: root.display().to_string(),
                reason: format!("cannot create the file root: {e}"),
            })?;
            let real = root.canonicalize().map_err(|e| Error::InvalidWarehouse {
                location: root.display().to_string(),
                reason: format!("cannot resolve the file root: {e}"),
            })?;
            resolved.push(Root::Local(real));
        }
        Ok(Self {
            roots: resolved,
            guard: None,
        })
    }

    /// The same roots, with every resolved path also passed to `guard`.
    pub fn guarded(&self, guard: PathGuard) -> Self {
        Self {
            roots: self.roots.clone(),
            guard: Some(guard),
        }
    }

    /// The roots, for messages and `SHOW`.
    pub fn roots(&self) -> Vec<String> {
        self.roots.iter().map(|r| format!("{r:?}")).collect()
    }

    /// Registers the object-store roots' buckets with DataFusion's
    /// `runtime`, so that its file readers (read_files, COPY INTO) reach
    /// them; Delta scans register their own.
    pub fn register_stores(&self, runtime: &datafusion::execution::runtime_env::RuntimeEnv) {
        for root in &self.roots {
            if let Root::Remote { url, store, .. } = root {
                if let Ok(bucket) = bucket_url(url) {
                    runtime.register_object_store(&bucket, ObjectStoreRef::clone(store));
                }
            }
        }
    }

    /// Where `path` points, if it lies inside a root and the guard lets
    /// it pass (42501 if not).
    pub async fn resolve(&self, path: &str) -> Result<Location> {
        let location = self.locate(path)?;
        if let Some(guard) = &self.guard {
            guard(Access::Path(location.clone())).await?;
        }
        Ok(location)
    }

    /// The files under the folder `location` (recursively; names are
    /// relative to it), or the file itself. Hidden names (`.x`, `_x`) are
    /// skipped, as Spark skips them. Each Delta table folder the listing
    /// reaches below `location` goes to the guard first (42501 if it may
    /// not be read): the whole listing, before any pattern picks from it.
    pub async fn list(&self, location: &Location) -> Result<Vec<FileEntry>> {
        let listed = match location {
            Location::Local(p) => {
                let (dir, roots) = (p.clone(), self.clone());
                blocking(move || list_files(&dir, &|real| roots.inside_local(real))).await?
            }
            Location::Remote { url, store } => list_remote(url, store).await?,
        };
        if let Some(guard) = &self.guard {
            for table in listed.tables {
                guard(Access::TableBelow {
                    listed: location.clone(),
                    table,
                })
                .await?;
            }
        }
        Ok(listed.files)
    }

    /// The entries directly in the folder `location` (a folder's name ends
    /// with `/`), or the file itself, in name order, at most `page` at a
    /// time, each page read when the one before has been taken: a listing
    /// of many files is sent while it is read, and one dropped early stops
    /// reading. A local folder's names are read and sorted first (about
    /// 100 bytes each), then each page's metadata; an S3 prefix is read a
    /// LIST page at a time where the store allows it ([`page_lister`]),
    /// else whole. Hidden names are skipped. No table below the folder is
    /// reached, so the guard is not asked beyond [`FileRoots::resolve`].
    pub fn list_pages(
        &self,
        location: &Location,
        page: usize,
    ) -> BoxStream<'static, Result<Vec<FileEntry>>> {
        let page = page.max(1);
        match location {
            Location::Local(dir) => local_pages(dir.clone(), self.clone(), page),
            Location::Remote { url, store } => match self.page_lister(url) {
                Some(lister) => remote_pages(url.clone(), ObjectStoreRef::clone(store), lister),
                None => {
                    let (url, store) = (url.clone(), ObjectStoreRef::clone(store));
                    futures::stream::once(async move { remote_folder(&url, &store).await })
                        .map_ok(move |entries| {
                            let pages: Vec<Result<Vec<FileEntry>>> =
                                entries.chunks(page).map(|c| Ok(c.to_vec())).collect();
                            futures::stream::iter(pages)
                        })
                        .try_flatten()
                        .boxed()
                }
            },
        }
    }

    /// The page lister of the root whose bucket `url` lies in.
    fn page_lister(&self, url: &Url) -> Option<Arc<dyn PaginatedListStore>> {
        self.roots.iter().find_map(|root| match root {
            Root::Remote {
                url: root_url,
                pages: Some(pages),
                ..
            } if root_url.scheme() == url.scheme() && root_url.authority() == url.authority() => {
                Some(Arc::clone(pages))
            }
            _ => None,
        })
    }

    fn locate(&self, path: &str) -> Result<Location> {
        let denied = |why: &str| Error::PathNotAllowed {
            path: path.to_string(),
            reason: why.to_string(),
        };
        if path.is_empty() {
            return Err(denied("the path is empty"));
        }
        if is_url(path) {
            return self.resolve_url(path);
        }
        let raw = path.strip_prefix("file://").unwrap_or(path);
        if raw.is_empty() {
            return Err(denied("the path is empty"));
        }
        let given = Path::new(raw);
        if !given.is_absolute() {
            match self.roots.first() {
                Some(Root::Local(root)) => return self.resolve_local(path, &root.join(given)),
                Some(Root::Remote { url, .. }) => {
                    let joined = url.join(raw).map_err(|e| denied(&e.to_string()))?;
                    return self.resolve_url_checked(path, raw, joined);
                }
                None => return Err(denied("no file roots are configured")),
            }
        }
        self.resolve_local(path, given)
    }

    fn resolve_local(&self, path: &str, joined: &Path) -> Result<Location> {
        let denied = |why: &str| Error::PathNotAllowed {
            path: path.to_string(),
            reason: why.to_string(),
        };
        let real = real_path(joined).ok_or_else(|| denied("the path cannot be resolved"))?;
        if self.inside_local(&real) {
            Ok(Location::Local(real))
        } else {
            Err(denied("it is outside the file roots"))
        }
    }

    /// Whether a real (resolved) local path lies inside a root.
    fn inside_local(&self, real: &Path) -> bool {
        self.roots.iter().any(|root| match root {
            Root::Local(root) => real.starts_with(root),
            Root::Remote { .. } => false,
        })
    }

    fn resolve_url(&self, path: &str) -> Result<Location> {
        let url = Url::parse(path).map_err(|e| Error::PathNotAllowed {
            path: path.to_string(),
            reason: e.to_string(),
        })?;
        let after_scheme = path.split_once("://").map(|(_, r)| r).unwrap_or(path);
        self.resolve_url_checked(path, after_scheme, url)
    }

    /// `raw` is the path as written: the URL parser drops `..` segments on
    /// its own, so they are looked for (also percent-encoded) in the text.
    fn resolve_url_checked(&self, path: &str, raw: &str, mut url: Url) -> Result<Location> {
        let denied = |why: &str| Error::PathNotAllowed {
            path: path.to_string(),
            reason: why.to_string(),
        };
        let dotted = raw.split('/').any(|seg| {
            let seg = seg.to_ascii_lowercase().replace("%2e", ".");
            seg == "." || seg == ".."
        });
        if dotted || raw.contains('\\') || url.query().is_some() || url.fragment().is_some() {
            return Err(denied(
                "object-store paths may not contain . or .. segments",
            ));
        }
        let trimmed = url.path().trim_end_matches('/').to_string();
        url.set_path(&trimmed);
        for root in &self.roots {
            let Root::Remote {
                url: root_url,
                store,
                ..
            } = root
            else {
                continue;
            };
            let same_bucket =
                root_url.scheme() == url.scheme() && root_url.authority() == url.authority();
            let prefix = root_url.path();
            let inside = url.path().starts_with(prefix) || format!("{}/", url.path()) == prefix;
            if same_bucket && inside {
                return Ok(Location::Remote {
                    url,
                    store: ObjectStoreRef::clone(store),
                });
            }
        }
        Err(denied("it is outside the file roots"))
    }
}

impl Location {
    /// The location as a folder URL (ends with `/`), as a Delta table's.
    pub fn folder_url(&self) -> Result<Url> {
        match self {
            Self::Local(p) => Url::from_directory_path(p).map_err(|()| Error::PathNotAllowed {
                path: p.display().to_string(),
                reason: "not an absolute path".into(),
            }),
            Self::Remote { url, .. } => {
                let mut url = url.clone();
                url.set_path(&format!("{}/", url.path().trim_end_matches('/')));
                Ok(url)
            }
        }
    }

    /// The Delta table folder this location is, or lies inside: the nearest
    /// folder above it (itself included) that holds a `_delta_log`. On an
    /// object store that is one LIST per folder level, up to the bucket.
    pub async fn delta_table(&self) -> Result<Option<Location>> {
        match self {
            Self::Local(p) => Ok(p
                .ancestors()
                .find(|a| a.join("_delta_log").is_dir())
                .map(|a| Self::Local(a.to_path_buf()))),
            Self::Remote { url, store } => {
                let key = object_path(url)?;
                let parts: Vec<_> = key.parts().collect();
                for depth in (0..=parts.len()).rev() {
                    let folder: deltalake::Path = parts.iter().take(depth).cloned().collect();
                    let mut log = store.list(Some(&folder.clone().join("_delta_log")));
                    let found = log
                        .try_next()
                        .await
                        .map_err(|e| storage("listing files", e))?;
                    if found.is_some() {
                        let mut table = url.clone();
                        table.set_path(&format!("/{folder}"));
                        return Ok(Some(Self::Remote {
                            url: table,
                            store: ObjectStoreRef::clone(store),
                        }));
                    }
                }
                Ok(None)
            }
        }
    }

    /// Whether a file or folder exists there.
    pub async fn exists(&self) -> Result<bool> {
        match self {
            Self::Local(p) => Ok(p.exists()),
            Self::Remote { url, store } => {
                let path = object_path(url)?;
                match store.head(&path).await {
                    Ok(_) => return Ok(true),
                    Err(deltalake::ObjectStoreError::NotFound { .. }) => {}
                    Err(source) => return Err(storage("reading a file", source)),
                }
                let mut under = store.list(Some(&path));
                match under.try_next().await {
                    Ok(found) => Ok(found.is_some()),
                    Err(source) => Err(storage("listing files", source)),
                }
            }
        }
    }
}

/// A listing: the files it yields, and the Delta table folders it reached
/// below the listed folder (sorted, each once).
struct Listed {
    files: Vec<FileEntry>,
    tables: Vec<Location>,
}

/// Whether a name is hidden from listings (`.x`, `_x`), as Spark's are.
fn hidden_name(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

/// The Delta table folders below a listed folder, given the names (relative
/// to it, `/`-separated) of the objects a recursive listing found: each
/// folder with a `_delta_log/` after it. Not the listed folder
/// itself (`_delta_log/…`: it was checked when resolved), and not a folder
/// under a hidden one, whose files a listing never yields.
fn delta_folders<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    let mut folders = BTreeSet::new();
    for name in names {
        let parts: Vec<&str> = name.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            if *part == "_delta_log" && i + 1 < parts.len() {
                if i > 0 {
                    folders.insert(parts[..i].join("/"));
                }
                break;
            }
            if hidden_name(part) {
                break;
            }
        }
    }
    folders
}

fn storage(op: &'static str, source: deltalake::ObjectStoreError) -> Error {
    Error::Storage {
        op,
        source: Box::new(source),
    }
}

fn object_url(url: &Url, key: &deltalake::Path) -> String {
    format!("{}://{}/{}", url.scheme(), url.authority(), key)
}

/// Every object under `url` (recursively), or the object `url` names.
async fn list_remote(url: &Url, store: &ObjectStoreRef) -> Result<Listed> {
    let dir = object_path(url)?;
    let objects: Vec<deltalake::ObjectMeta> = store
        .list(Some(&dir))
        .try_collect()
        .await
        .map_err(|e| storage("listing files", e))?;
    // An object store lists recursively, so a table's `_delta_log/`
    // objects are in the listing of any folder above it.
    let names: Vec<String> = objects
        .iter()
        .map(|m| relative_key(&dir, &m.location))
        .collect();
    let tables = delta_folders(names.iter().map(String::as_str))
        .into_iter()
        .map(|folder| {
            let mut table = url.clone();
            table.set_path(&format!("{}/{folder}", url.path().trim_end_matches('/')));
            Location::Remote {
                url: table,
                store: ObjectStoreRef::clone(store),
            }
        })
        .collect();
    let mut files: Vec<FileEntry> = objects
        .iter()
        .zip(names)
        .filter(|(_, name)| !name.is_empty() && !name.split('/').any(hidden_name))
        .map(|(meta, name)| object_entry(url, meta, name))
        .collect();
    if files.is_empty() {
        files.extend(remote_object(url, store, &dir).await?);
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Listed { files, tables })
}

/// The entries directly under `url`, in one listing (of every page), or
/// the object `url` names.
async fn remote_folder(url: &Url, store: &ObjectStoreRef) -> Result<Vec<FileEntry>> {
    let dir = object_path(url)?;
    let listed = store
        .list_with_delimiter(Some(&dir))
        .await
        .map_err(|e| storage("listing files", e))?;
    let mut entries = folder_entries(url, &dir, listed);
    if entries.is_empty() {
        entries.extend(remote_object(url, store, &dir).await?);
    }
    Ok(entries)
}

/// The entries directly under `url`, a LIST page at a time; the object
/// `url` names when the first page is empty and the last.
fn remote_pages(
    url: Url,
    store: ObjectStoreRef,
    lister: Arc<dyn PaginatedListStore>,
) -> BoxStream<'static, Result<Vec<FileEntry>>> {
    enum Next {
        First,
        Page(String),
        Done,
    }
    futures::stream::try_unfold(Next::First, move |next| {
        let (url, store, lister) = (
            url.clone(),
            ObjectStoreRef::clone(&store),
            Arc::clone(&lister),
        );
        async move {
            let token = match next {
                Next::Done => return Ok(None),
                Next::First => None,
                Next::Page(token) => Some(token),
            };
            let first = token.is_none();
            let dir = object_path(&url)?;
            // Unlike `ObjectStore::list`, the prefix is taken as given.
            let prefix = (!dir.as_ref().is_empty()).then(|| format!("{dir}/"));
            crate::store::requests::count_list(&dir);
            let page = lister
                .list_paginated(
                    prefix.as_deref(),
                    PaginatedListOptions {
                        delimiter: Some("/".into()),
                        page_token: token,
                        ..Default::default()
                    },
                )
                .await
                .map_err(|e| storage("listing files", e))?;
            let mut entries = folder_entries(&url, &dir, page.result);
            let next = page.page_token.map_or(Next::Done, Next::Page);
            if first && entries.is_empty() && matches!(next, Next::Done) {
                entries.extend(remote_object(&url, &store, &dir).await?);
            }
            Ok(Some((entries, next)))
        }
    })
    .boxed()
}

/// A listing's folders and objects as entries in name order, without
/// hidden names or the folder's own marker object.
fn folder_entries(url: &Url, dir: &deltalake::Path, listed: ListResult) -> Vec<FileEntry> {
    let folders = listed.common_prefixes.iter().filter_map(|prefix| {
        let name = relative_key(dir, prefix);
        (!name.is_empty() && !hidden_name(&name)).then(|| FileEntry {
            path: object_url(url, prefix),
            name: format!("{name}/"),
            size: 0,
            modified_ms: 0,
            is_dir: true,
        })
    });
    let files = listed.objects.iter().filter_map(|meta| {
        let name = relative_key(dir, &meta.location);
        (!name.is_empty() && !hidden_name(&name)).then(|| object_entry(url, meta, name))
    });
    let mut entries: Vec<FileEntry> = folders.chain(files).collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

/// The object `dir` itself, if there is one (a path naming a file).
async fn remote_object(
    url: &Url,
    store: &ObjectStoreRef,
    dir: &deltalake::Path,
) -> Result<Option<FileEntry>> {
    match store.head(dir).await {
        Ok(meta) => {
            let name = meta.location.filename().unwrap_or_default().to_string();
            Ok(Some(object_entry(url, &meta, name)))
        }
        Err(deltalake::ObjectStoreError::NotFound { .. }) => Ok(None),
        Err(source) => Err(storage("listing files", source)),
    }
}

/// A key's name relative to the listed folder.
fn relative_key(dir: &deltalake::Path, key: &deltalake::Path) -> String {
    let key = key.as_ref();
    key.strip_prefix(dir.as_ref())
        .map(|r| r.trim_start_matches('/'))
        .unwrap_or(key)
        .to_string()
}

fn object_entry(url: &Url, meta: &deltalake::ObjectMeta, name: String) -> FileEntry {
    FileEntry {
        path: object_url(url, &meta.location),
        name,
        size: meta.size,
        modified_ms: meta.last_modified.timestamp_millis(),
        is_dir: false,
    }
}

/// A store that lists a folder one page at a time: object_store's
/// `PaginatedListStore`, which the type-erased stores delta-rs makes do not
/// expose. Only for S3 with the keys given as options or in the
/// environment (object_store resolves them as delta-rs does); other
/// credentials (AWS profiles, SSO) are the AWS SDK's, which delta-rs alone
/// resolves, so those listings are read whole.
fn page_lister(
    url: &Url,
    options: &HashMap<String, String>,
) -> Option<Arc<dyn PaginatedListStore>> {
    if !matches!(url.scheme(), "s3" | "s3a") {
        return None;
    }
    let bucket = bucket_url(url).ok()?;
    let mut builder = AmazonS3Builder::from_env().with_url(bucket.as_str());
    for (key, value) in options {
        if let Ok(key) = AmazonS3ConfigKey::from_str(&key.to_ascii_lowercase()) {
            builder = builder.with_config(key, value.clone());
        }
    }
    builder.get_config_value(&AmazonS3ConfigKey::AccessKeyId)?;
    let store = builder.build().ok()?;
    Some(Arc::new(store))
}

/// The path with symbolic links and `..` resolved: the longest existing
/// prefix is canonicalized, the rest (which does not exist yet) may not
/// climb with `..`.
fn real_path(path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        let name = existing.file_name()?.to_os_string();
        if Path::new(&name)
            .components()
            .any(|c| matches!(c, Component::ParentDir))
        {
            return None;
        }
        rest.push(name);
        if !existing.pop() {
            return None;
        }
    }
}

/// The files under the local `dir` (recursively; names are relative to
/// `dir`), or `dir` itself when it is a file. Hidden names (`.x`, `_x`)
/// are skipped, as Spark skips them; a `_delta_log` below `dir` marks its
/// folder as a Delta table the walk reached.
/// A symbolic link is followed only to a real path `inside` allows (the
/// file roots; 42501 otherwise), and each real folder is walked once, so
/// a link can neither lead out of the roots nor loop.
fn list_files(dir: &Path, inside: &dyn Fn(&Path) -> bool) -> Result<Listed> {
    let meta = std::fs::metadata(dir).map_err(local_io)?;
    if meta.is_file() {
        return Ok(Listed {
            files: vec![file_itself(dir, &meta)],
            tables: Vec::new(),
        });
    }
    let mut out = Vec::new();
    let mut tables = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut walked = std::collections::HashSet::new();
    walked.insert(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()));
    while let Some(folder) = stack.pop() {
        for item in std::fs::read_dir(&folder).map_err(local_io)? {
            let item = item.map_err(local_io)?;
            let file_name = item.file_name().to_string_lossy().to_string();
            if file_name == "_delta_log" && folder != dir && item.path().is_dir() {
                // The real path, as the guard compares it with the
                // warehouse and with external tables' locations.
                tables.insert(folder.canonicalize().unwrap_or_else(|_| folder.clone()));
            }
            if hidden_name(&file_name) {
                continue;
            }
            let path = item.path();
            let link = item.file_type().map_err(local_io)?.is_symlink();
            let real = followed(&path, link, inside)?;
            let meta = std::fs::metadata(&path).map_err(local_io)?;
            let name = path
                .strip_prefix(dir)
                .map(|p| p.to_string_lossy().to_string())
                .unwrap_or(file_name);
            if meta.is_dir() {
                if walked.insert(real.canonicalize().unwrap_or(real)) {
                    stack.push(path);
                }
            } else {
                out.push(entry(&path, name, &meta));
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Listed {
        files: out,
        tables: tables.into_iter().map(Location::Local).collect(),
    })
}

/// The entries directly in the local folder `dir` a page at a time (see
/// [`FileRoots::list_pages`]).
fn local_pages(
    dir: PathBuf,
    roots: FileRoots,
    page: usize,
) -> BoxStream<'static, Result<Vec<FileEntry>>> {
    let names = {
        let dir = dir.clone();
        blocking(move || folder_names(&dir))
    };
    futures::stream::once(names)
        .map_ok(move |names| -> BoxStream<'static, Result<Vec<FileEntry>>> {
            let names = match names {
                FolderNames::File(entry) => {
                    return futures::stream::iter([Ok(vec![entry])]).boxed()
                }
                FolderNames::Folder(names) => names,
            };
            let mut pages = Vec::with_capacity(names.len().div_ceil(page));
            let mut names = names.into_iter().peekable();
            while names.peek().is_some() {
                pages.push(names.by_ref().take(page).collect::<Vec<_>>());
            }
            let (dir, roots) = (dir.clone(), roots.clone());
            futures::stream::iter(pages)
                .then(move |names| {
                    let (dir, roots) = (dir.clone(), roots.clone());
                    blocking(move || folder_page(&dir, names, &|real| roots.inside_local(real)))
                })
                .boxed()
        })
        .try_flatten()
        .boxed()
}

/// A local path's listing before any metadata is read.
enum FolderNames {
    /// The path is a file: its entry.
    File(FileEntry),
    /// The visible names in the folder, sorted, each with whether it is a
    /// symbolic link.
    Folder(Vec<(String, bool)>),
}

fn folder_names(dir: &Path) -> Result<FolderNames> {
    let meta = std::fs::metadata(dir).map_err(local_io)?;
    if meta.is_file() {
        return Ok(FolderNames::File(file_itself(dir, &meta)));
    }
    let mut names = Vec::new();
    for item in std::fs::read_dir(dir).map_err(local_io)? {
        let item = item.map_err(local_io)?;
        let name = item.file_name().to_string_lossy().to_string();
        if !hidden_name(&name) {
            names.push((name, item.file_type().map_err(local_io)?.is_symlink()));
        }
    }
    names.sort_unstable();
    Ok(FolderNames::Folder(names))
}

/// The entries of some names in `dir`. A name gone since the folder was
/// read is left out.
fn folder_page(
    dir: &Path,
    names: Vec<(String, bool)>,
    inside: &dyn Fn(&Path) -> bool,
) -> Result<Vec<FileEntry>> {
    let mut out = Vec::with_capacity(names.len());
    for (name, link) in names {
        let path = dir.join(&name);
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !link => continue,
            Err(e) => return Err(local_io(e)),
        };
        followed(&path, link, inside)?;
        let name = if meta.is_dir() {
            format!("{name}/")
        } else {
            name
        };
        out.push(entry(&path, name, &meta));
    }
    Ok(out)
}

/// The real path of a listed item; a symbolic link only to a real path
/// `inside` allows.
fn followed(path: &Path, link: bool, inside: &dyn Fn(&Path) -> bool) -> Result<PathBuf> {
    if !link {
        return Ok(path.to_path_buf());
    }
    let real = path.canonicalize().map_err(local_io)?;
    if !inside(&real) {
        return Err(Error::PathNotAllowed {
            path: path.display().to_string(),
            reason: "it links to outside the file roots".into(),
        });
    }
    Ok(real)
}

/// The entry of a path that names a file.
fn file_itself(path: &Path, meta: &std::fs::Metadata) -> FileEntry {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    entry(path, name, meta)
}

fn local_io(e: std::io::Error) -> Error {
    Error::Storage {
        op: "listing files",
        source: Box::new(deltalake::ObjectStoreError::Generic {
            store: "local",
            source: Box::new(e),
        }),
    }
}

/// Runs a blocking listing step off the async workers, which serve every
/// other session.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Storage {
            op: "listing files",
            source: Box::new(deltalake::ObjectStoreError::Generic {
                store: "local",
                source: Box::new(e),
            }),
        })?
}

fn entry(path: &Path, name: String, meta: &std::fs::Metadata) -> FileEntry {
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    FileEntry {
        path: path.to_string_lossy().to_string(),
        name,
        size: if meta.is_dir() { 0 } else { meta.len() },
        modified_ms,
        is_dir: meta.is_dir(),
    }
}

/// Whether `name` matches a glob: `*`, `?`, `[abc]`, `[a-z]`, `[!a]`,
/// `{ab,cd}` (Databricks' PATTERN). `*` does not cross `/`.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    // `{a,b}` alternatives expand into separate patterns.
    if let (Some(open), Some(close)) = (pattern.find('{'), pattern.find('}')) {
        if open < close {
            let (head, tail) = (&pattern[..open], &pattern[close + 1..]);
            return pattern[open + 1..close]
                .split(',')
                .any(|alt| glob_match(&format!("{head}{alt}{tail}"), name));
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    glob_chars(&p, &n)
}

fn glob_chars(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len())
            .take_while(|&i| i == 0 || n[i - 1] != '/')
            .any(|i| glob_chars(&p[1..], &n[i..])),
        Some('?') => !n.is_empty() && n[0] != '/' && glob_chars(&p[1..], &n[1..]),
        Some('[') => {
            let Some(end) = p.iter().position(|c| *c == ']') else {
                return !n.is_empty() && n[0] == '[' && glob_chars(&p[1..], &n[1..]);
            };
            let Some(&c) = n.first() else {
                return false;
            };
            let (negate, set) = match p.get(1) {
                Some('!') | Some('^') => (true, &p[2..end]),
                _ => (false, &p[1..end]),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != negate && glob_chars(&p[end + 1..], &n[1..])
        }
        Some(&c) => n.first() == Some(&c) && glob_chars(&p[1..], &n[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("a*.csv", "a1.csv"));
        assert!(!glob_match("a*.csv", "b1.csv"));
        assert!(glob_match("*.csv", "x.csv"));
        assert!(!glob_match("*.csv", "dir/x.csv"));
        assert!(glob_match("f?.json", "f1.json"));
        assert!(glob_match("[ab]*", "b.csv"));
        assert!(glob_match("[a-c]1", "b1"));
        assert!(!glob_match("[!a]1", "a1"));
        assert!(glob_match("{x,y}.csv", "y.csv"));
    }

    #[test]
    fn listings_find_the_delta_table_folders_below_them() {
        let found = delta_folders([
            "a.csv",
            "ext/_delta_log/00000000000000000000.json",
            "ext/part-0.parquet",
            "deep/er/t/_delta_log/_last_checkpoint",
            "deep/er/t/_delta_log/00000000000000000000.json",
            // The listed folder's own log: checked when it was resolved.
            "_delta_log/00000000000000000000.json",
            // Under a hidden folder, whose files are never listed.
            "_tmp/t/_delta_log/00000000000000000000.json",
            "x/.hidden/t/_delta_log/00000000000000000000.json",
            // A file of that name is not a log folder.
            "y/_delta_log",
        ]);
        assert_eq!(found.into_iter().collect::<Vec<_>>(), ["deep/er/t", "ext"]);
    }

    /// A guard that records what it was asked and refuses every Delta
    /// table folder below a listed one.
    fn recording_guard() -> (PathGuard, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = std::sync::Arc::clone(&asked);
        let guard: PathGuard = std::sync::Arc::new(move |access: Access| {
            let log = std::sync::Arc::clone(&log);
            Box::pin(async move {
                match access {
                    Access::Path(l) => {
                        log.lock().unwrap().push(format!("path {l}"));
                        Ok(())
                    }
                    Access::TableBelow { listed, table } => {
                        log.lock()
                            .unwrap()
                            .push(format!("table {table} in {listed}"));
                        Err(Error::PathNotAllowed {
                            path: table.to_string(),
                            reason: "refused".into(),
                        })
                    }
                }
            })
        });
        (guard, asked)
    }

    #[tokio::test]
    async fn a_recursive_listing_shows_the_guard_each_delta_table_below() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("ingest");
        let plain = FileRoots::new(&[root.display().to_string()], &HashMap::new()).unwrap();
        let landing = root.join("landing");
        for dir in ["ext/_delta_log", "plain", "_tmp/t/_delta_log"] {
            std::fs::create_dir_all(landing.join(dir)).unwrap();
        }
        for file in [
            "a.csv",
            "ext/_delta_log/00000000000000000000.json",
            "ext/part-0.parquet",
            "plain/b.csv",
            "_tmp/t/_delta_log/00000000000000000000.json",
        ] {
            std::fs::write(landing.join(file), "x").unwrap();
        }
        let real = landing.canonicalize().unwrap();
        let names = |files: Vec<FileEntry>| files.into_iter().map(|f| f.name).collect::<Vec<_>>();

        // Without a guard (privileges off) everything visible is listed.
        let at = plain.resolve("landing").await.unwrap();
        assert_eq!(
            names(plain.list(&at).await.unwrap()),
            ["a.csv", "ext/part-0.parquet", "plain/b.csv"]
        );

        let (guard, asked) = recording_guard();
        let roots = plain.guarded(guard);
        let at = roots.resolve("landing").await.unwrap();
        let err = roots.list(&at).await.unwrap_err();
        assert_eq!(err.sqlstate().code(), "42501");
        assert_eq!(
            asked.lock().unwrap().clone(),
            [
                format!("path {}", real.display()),
                format!("table {} in {}", real.join("ext").display(), real.display()),
            ]
        );
        // One level only: the table folder is an entry, its files are not.
        assert_eq!(
            names(
                roots
                    .list_pages(&at, 2)
                    .try_collect::<Vec<_>>()
                    .await
                    .unwrap()
                    .concat()
            ),
            ["a.csv", "ext/", "plain/"]
        );
        // A folder without tables, and a table's own folder (its log is
        // the listed folder's, checked when the path was resolved).
        asked.lock().unwrap().clear();
        for (path, files) in [
            ("landing/plain", vec!["b.csv"]),
            ("landing/ext", vec!["part-0.parquet"]),
        ] {
            let at = roots.resolve(path).await.unwrap();
            assert_eq!(names(roots.list(&at).await.unwrap()), files, "{path}");
        }
        assert!(asked.lock().unwrap().iter().all(|a| a.starts_with("path ")));
    }

    #[tokio::test]
    async fn paths_outside_the_roots_are_refused() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("ingest");
        let roots = FileRoots::new(&[root.display().to_string()], &HashMap::new()).unwrap();
        std::fs::write(root.join("a.csv"), "x").unwrap();
        std::fs::write(base.path().join("secret"), "s").unwrap();
        assert!(roots
            .resolve("a.csv")
            .await
            .unwrap()
            .to_string()
            .ends_with("ingest/a.csv"));
        assert!(roots.resolve("new/folder").await.is_ok());
        for bad in ["../secret", "/etc/passwd", "new/../../secret", "s3://b/k"] {
            let err = roots.resolve(bad).await.unwrap_err();
            assert_eq!(err.sqlstate().code(), "42501", "{bad}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(base.path().join("secret"), root.join("link")).unwrap();
            assert!(roots.resolve("link").await.is_err());
            // Inside a folder the statement names, a link out of the roots
            // is refused, and a link back up is walked once, not forever.
            let folder = root.join("linked");
            std::fs::create_dir_all(folder.join("sub")).unwrap();
            std::fs::write(folder.join("sub/b.csv"), "y").unwrap();
            std::os::unix::fs::symlink(&folder, folder.join("sub/up")).unwrap();
            let at = roots.resolve("linked").await.unwrap();
            let files: Vec<String> = roots
                .list(&at)
                .await
                .unwrap()
                .into_iter()
                .map(|f| f.name)
                .collect();
            assert_eq!(files, ["sub/b.csv"]);
            std::os::unix::fs::symlink(base.path(), folder.join("out")).unwrap();
            let err = roots.list(&at).await.unwrap_err();
            assert_eq!(err.sqlstate().code(), "42501", "{err}");
        }
    }

    #[tokio::test]
    async fn object_store_paths_stay_inside_their_roots() {
        // An endpoint keeps delta-rs from looking for AWS credentials.
        let options =
            HashMap::from([("aws_endpoint".to_string(), "http://127.0.0.1:1".to_string())]);
        let roots = FileRoots::new(&["s3://bucket/ingest".to_string()], &options).unwrap();
        for good in [
            "s3://bucket/ingest",
            "s3://bucket/ingest/a.csv",
            "s3://bucket/ingest/d/",
        ] {
            assert!(roots.resolve(good).await.is_ok(), "{good}");
        }
        assert_eq!(
            roots.resolve("x/a.csv").await.unwrap().to_string(),
            "s3://bucket/ingest/x/a.csv"
        );
        for bad in [
            "s3://bucket/ingest2/a.csv",
            "s3://bucket/other",
            "s3://other/ingest/a.csv",
            "s3://bucket/ingest/../secret",
            "s3://bucket/ingest/%2e%2e/secret",
            "../secret",
            "gs://bucket/ingest/a.csv",
            "/etc/passwd",
        ] {
            let err = roots.resolve(bad).await.unwrap_err();
            assert_eq!(err.sqlstate().code(), "42501", "{bad}");
        }
    }
}
