//! The walls ARCHITECTURE.md states, checked: what each crate may depend on
//! and name. A dependency added across a wall fails here, with the rule it
//! breaks, instead of being found in review.

use std::fs;
use std::path::{Path, PathBuf};

/// A crate, the dependencies it may never have, and the paths its source
/// may never name.
struct Wall {
    krate: &'static str,
    why: &'static str,
    no_dependencies: &'static [&'static str],
    never_names: &'static [&'static str],
}

const WALLS: &[Wall] = &[
    Wall {
        krate: "lakegres-common",
        why: "names codes, tables and privileges for every crate, so it knows no engine",
        no_dependencies: &[
            "datafusion",
            "deltalake",
            "pgwire",
            "sqlparser",
            "lakegres-delta",
            "lakegres-functions",
            "lakegres-sql",
            "lakegres-server",
        ],
        never_names: &["datafusion::", "deltalake::", "pgwire::", "sqlparser::"],
    },
    Wall {
        krate: "lakegres-functions",
        why: "is the expression library: it knows DataFusion and SQL expressions, \
              not the wire, Delta or the statements around the expressions",
        no_dependencies: &[
            "pgwire",
            "deltalake",
            "delta_kernel",
            "lakegres-delta",
            "lakegres-sql",
            "lakegres-server",
        ],
        never_names: &[
            "pgwire::",
            "deltalake::",
            "delta_kernel::",
            "lakegres_delta::",
            "lakegres_sql::",
            "lakegres_server::",
        ],
    },
    Wall {
        krate: "lakegres-server",
        why: "is the wire: it knows Postgres' protocol, not Delta",
        no_dependencies: &["lakegres-delta", "deltalake", "delta_kernel"],
        never_names: &["lakegres_delta::", "deltalake::"],
    },
    Wall {
        krate: "lakegres-sql",
        why: "is the language: it knows neither the wire nor delta-rs",
        no_dependencies: &["pgwire", "deltalake", "delta_kernel", "lakegres-server"],
        never_names: &["pgwire::", "deltalake::", "delta_kernel::"],
    },
    Wall {
        krate: "lakegres-delta",
        why: "is storage: it knows neither the wire nor SQL text",
        no_dependencies: &[
            "pgwire",
            "sqlparser",
            "lakegres-functions",
            "lakegres-sql",
            "lakegres-server",
        ],
        never_names: &[
            "pgwire::",
            "sqlparser::",
            "lakegres_functions::",
            "lakegres_sql::",
        ],
    },
];

fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The names under `[dependencies]` of a Cargo.toml (not dev- or build-).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut inside = false;
    let mut names = vec![];
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
            continue;
        }
        if inside {
            if let Some((name, _)) = line.split_once('=') {
                names.push(name.trim().to_string());
            }
        }
    }
    names
}

/// Every `.rs` file below `dir`, with its text.
fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            if let Ok(text) = fs::read_to_string(&path) {
                out.push((path, text));
            }
        }
    }
}

#[test]
fn each_crate_keeps_to_its_side_of_the_walls() {
    let mut broken = vec![];
    for wall in WALLS {
        let dir = crates().join(wall.krate);
        let manifest = fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("{}: {e}", wall.krate));
        for dependency in dependencies(&manifest) {
            if wall.no_dependencies.contains(&dependency.as_str()) {
                broken.push(format!(
                    "{} depends on {dependency}, but it {}",
                    wall.krate, wall.why
                ));
            }
        }
        let mut files = vec![];
        sources(&dir.join("src"), &mut files);
        assert!(!files.is_empty(), "{} has no sources", wall.krate);
        for (path, text) in files {
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for name in wall.never_names {
                    if code.contains(name) {
                        broken.push(format!(
                            "{}:{} names {name}, but {} {}",
                            path.display(),
                            n + 1,
                            wall.krate,
                            wall.why
                        ));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_dependency_reader_reads_only_dependencies() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\na = \"1\"\nb = { workspace = true }\n\
                    [dev-dependencies]\nc = \"1\"\n";
    assert_eq!(dependencies(manifest), ["a", "b"]);
}

/// lakegres-sql's files that run statements: the statement modules, the
/// dispatch to them, the pipeline and the session (and its setup). Every
/// other file is a service they use — the planner, the resolver, names,
/// privileges, time travel, the statement context — and never names them.
const STATEMENT_LAYER: &[&str] = &[
    "statements/",
    "statement.rs",
    "pipeline.rs",
    "session.rs",
    "context.rs",
    "lib.rs",
];

/// The paths a service may not name, and a statement module may name only
/// the first two of (statements call each other, never the pipeline).
const ABOVE_THE_SERVICES: &[&str] = &[
    "crate::statements::",
    "crate::statement::",
    "crate::pipeline",
    "crate::session::",
    "crate::context::",
];

#[test]
fn no_service_of_the_sql_crate_names_the_statements_above_it() {
    let src = crates().join("lakegres-sql").join("src");
    let mut files = vec![];
    sources(&src, &mut files);
    let mut broken = vec![];
    for (path, text) in files {
        let relative = path
            .strip_prefix(&src)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        let layer = STATEMENT_LAYER.iter().find(|l| relative.starts_with(*l));
        let forbidden: &[&str] = match layer {
            None => ABOVE_THE_SERVICES,
            Some(&"statements/") => &ABOVE_THE_SERVICES[2..],
            Some(_) => &[],
        };
        // Tests may reach anything.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for name in forbidden {
                if code.contains(name) {
                    broken.push(format!("{relative}:{} names {name}", n + 1));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "services of lakegres-sql take a StatementContext and never call up into \
         the statements, the pipeline or the session:\n{}",
        broken.join("\n")
    );
}

/// delta-rs' types, as lakegres-delta's sources name them.
const DELTA_RS_TYPES: &[&str] = &[
    "deltalake::",
    "delta_kernel::",
    "DeltaTable",
    "DeltaTableState",
    "DeltaTableError",
    "EagerSnapshot",
    "LogStore",
    "StructField",
    "StructType",
    "MetadataValue",
    "Protocol",
    "PrimitiveType",
    "LogicalFileView",
    "CommitBuilder",
    "DeltaOperation",
    "SaveMode",
    "Action",
];

/// The public surface of a source file: each `pub fn` signature, `pub`
/// field and `pub use`, comments and tests left out (`pub(crate)` items
/// are the crate's own).
fn public_surface(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut items = vec![];
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub ") {
        let item = &rest[at..];
        let before = rest[..at].chars().last();
        rest = &item[4..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = if item.starts_with("pub fn") || item.starts_with("pub async fn") {
            item.find(['{', ';']).unwrap_or(item.len())
        } else if item.starts_with("pub use") {
            item.find(';').unwrap_or(item.len())
        } else {
            item.find(['\n', '{']).unwrap_or(item.len())
        };
        let item = &item[..end];
        let field = item.split_once(':').is_some_and(|(n, _)| {
            n["pub ".len()..]
                .trim()
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_')
        });
        if item.starts_with("pub fn")
            || item.starts_with("pub async fn")
            || item.starts_with("pub use")
            || field
        {
            items.push(item.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    items
}

#[test]
fn storage_hands_out_no_delta_rs_type() {
    let mut files = vec![];
    sources(&crates().join("lakegres-delta").join("src"), &mut files);
    let mut broken = vec![];
    for (path, text) in files {
        for item in public_surface(&text) {
            let names = |t: &str| {
                item.match_indices(t).any(|(i, _)| {
                    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    let before = item[..i].chars().last();
                    let after = item[i + t.len()..].chars().next();
                    !word(before) && (t.ends_with("::") || !word(after))
                })
            };
            if let Some(t) = DELTA_RS_TYPES.iter().find(|t| names(t)) {
                broken.push(format!("{}: `{item}` names {t}", path.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "lakegres-delta's public items take and return its own types (Table, TableInfo, \
         WriteMode …), never delta-rs': \n{}",
        broken.join("\n")
    );
}

#[test]
fn the_public_surface_reader_finds_signatures_and_fields() {
    let text = "pub struct S {\n    pub table: DeltaTable,\n    pub(crate) inner: X,\n}\n\
                pub(crate) fn hidden(t: &DeltaTable) {}\n\
                pub async fn load(\n    name: &str,\n) -> Result<DeltaTable> {\n}\n";
    assert_eq!(
        public_surface(text),
        [
            "pub table: DeltaTable,",
            "pub async fn load( name: &str, ) -> Result<DeltaTable>"
        ]
    );
}
