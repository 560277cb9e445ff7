//! The files statements may name — `COPY INTO … FROM`, `read_files`,
//! `LIST`, `csv.\`path\`` — and listing them.
//!
//! A path is allowed only inside one of the configured roots (by default
//! the warehouse and an `ingest` folder beside it). Relative paths start at
//! the first root. The check is made on the real path: `..` and symbolic
//! links are resolved first, so neither can lead out of the roots.

use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, Result};

/// A further check of each resolved path (a session's privileges).
pub type PathGuard = std::sync::Arc<dyn Fn(&Path) -> Result<()> + Send + Sync>;

/// The folders statements may read files from.
#[derive(Clone)]
pub struct FileRoots {
    /// Absolute, with symbolic links resolved where the folder exists.
    roots: Vec<PathBuf>,
    guard: Option<PathGuard>,
}

impl std::fmt::Debug for FileRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileRoots")
            .field("roots", &self.roots)
            .finish()
    }
}

/// One listed file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEntry {
    /// Absolute path.
    pub path: PathBuf,
    /// The name relative to the listed folder (`a.csv`, `2026/b.csv`).
    pub name: String,
    pub size: u64,
    /// Milliseconds since the epoch.
    pub modified_ms: i64,
    pub is_dir: bool,
}

impl FileRoots {
    /// Roots from paths (relative ones against the working directory);
    /// missing folders are created.
    pub fn new(roots: &[PathBuf]) -> Result<Self> {
        let mut resolved = Vec::with_capacity(roots.len());
        for root in roots {
            std::fs::create_dir_all(root).map_err(|e| Error::InvalidWarehouse {
                location: root.display().to_string(),
                reason: format!("cannot create the file root: {e}"),
            })?;
            let real = root.canonicalize().map_err(|e| Error::InvalidWarehouse {
                location: root.display().to_string(),
                reason: format!("cannot resolve the file root: {e}"),
            })?;
            resolved.push(real);
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
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The real path `path` names, if it lies inside a root (42501 if not).
    pub fn resolve(&self, path: &str) -> Result<PathBuf> {
        let denied = |why: &str| Error::PathNotAllowed {
            path: path.to_string(),
            reason: why.to_string(),
        };
        let raw = match path.strip_prefix("file://") {
            Some(rest) => rest,
            None if path.contains("://") => {
                return Err(denied("only local files inside the file roots can be read"))
            }
            None => path,
        };
        if raw.is_empty() {
            return Err(denied("the path is empty"));
        }
        let given = Path::new(raw);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            match self.roots.first() {
                Some(root) => root.join(given),
                None => return Err(denied("no file roots are configured")),
            }
        };
        let real = real_path(&joined).ok_or_else(|| denied("the path cannot be resolved"))?;
        if self.roots.iter().any(|root| real.starts_with(root)) {
            if let Some(guard) = &self.guard {
                guard(&real)?;
            }
            Ok(real)
        } else {
            Err(denied("it is outside the file roots"))
        }
    }
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

/// The files under `dir` (recursively; names are relative to `dir`), or
/// `dir` itself when it is a file. Hidden names (`.x`, `_x`) are skipped,
/// as Spark skips them.
pub fn list_files(dir: &Path, recursive: bool) -> Result<Vec<FileEntry>> {
    let io = |e: std::io::Error| Error::Storage {
        op: "listing files",
        source: Box::new(deltalake::ObjectStoreError::Generic {
            store: "local",
            source: Box::new(e),
        }),
    };
    let meta = std::fs::metadata(dir).map_err(io)?;
    if meta.is_file() {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        return Ok(vec![entry(dir.to_path_buf(), name, &meta)]);
    }
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for item in std::fs::read_dir(&folder).map_err(io)? {
            let item = item.map_err(io)?;
            let file_name = item.file_name().to_string_lossy().to_string();
            if file_name.starts_with('.') || file_name.starts_with('_') {
                continue;
            }
            let path = item.path();
            let meta = std::fs::metadata(&path).map_err(io)?;
            let name = path
                .strip_prefix(dir)
                .map(|p| p.to_string_lossy().to_string())
                .unwrap_or(file_name);
            if meta.is_dir() {
                if recursive {
                    stack.push(path);
                } else {
                    out.push(entry(path, format!("{name}/"), &meta));
                }
            } else {
                out.push(entry(path, name, &meta));
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn entry(path: PathBuf, name: String, meta: &std::fs::Metadata) -> FileEntry {
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    FileEntry {
        path,
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
    fn paths_outside_the_roots_are_refused() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("ingest");
        let roots = FileRoots::new(std::slice::from_ref(&root)).unwrap();
        std::fs::write(root.join("a.csv"), "x").unwrap();
        std::fs::write(base.path().join("secret"), "s").unwrap();
        assert!(roots.resolve("a.csv").unwrap().ends_with("ingest/a.csv"));
        assert!(roots.resolve("new/folder").is_ok());
        for bad in ["../secret", "/etc/passwd", "new/../../secret", "s3://b/k"] {
            let err = roots.resolve(bad).unwrap_err();
            assert_eq!(err.sqlstate().code(), "42501", "{bad}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(base.path().join("secret"), root.join("link")).unwrap();
            assert!(roots.resolve("link").is_err());
        }
    }
}
