#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Runs the sqllogictest files against a real server over the wire: ours
//! under `tests/slt/`, and the shared conformance cases listed in
//! `tests/slt/conformance.list` (the ones whose statements are built so far).
//!
//! `cargo test --test slt -- FILTER` runs the files whose path contains FILTER.
//!
//! Every file runs twice: on a local warehouse, then on a warehouse in S3
//! (moto, from the repo's `.venv`; skipped when moto is missing unless
//! `LAKEGRES_REQUIRE_MOTO` is set; `LAKEGRES_SLT_LOCAL_ONLY` skips it).
//! The MERGE, UPDATE and DELETE files run a third time with deletion
//! vectors on for every table they create (`[dv]`): the same rows must come
//! out of the merge-on-read route. Every file runs again on a server with
//! two workers, every query the plan of which can be cut into stages forced
//! onto them (`[cluster]`; `LAKEGRES_SLT_CLUSTER=off` skips it).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};
use tokio_postgres::SimpleQueryMessage;

struct Postgres {
    client: tokio_postgres::Client,
}

#[derive(Debug)]
struct DbError(tokio_postgres::Error);

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_db_error() {
            Some(e) => write!(f, "{}: {}", e.code().code(), e.message()),
            None => write!(f, "{}", self.0),
        }
    }
}

impl std::error::Error for DbError {}

#[async_trait]
impl AsyncDB for Postgres {
    type Error = DbError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<Self::ColumnType>, Self::Error> {
        let messages = self.client.simple_query(sql).await.map_err(DbError)?;
        let mut rows = Vec::new();
        let mut columns = None;
        let mut count = 0;
        for m in messages {
            match m {
                SimpleQueryMessage::RowDescription(desc) => columns = Some(desc.len()),
                SimpleQueryMessage::Row(row) => {
                    let values = (0..row.len())
                        .map(|i| match row.get(i) {
                            None => "NULL".to_string(),
                            Some("") => "(empty)".to_string(),
                            Some(v) => v.to_string(),
                        })
                        .collect();
                    rows.push(values);
                }
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        match columns {
            Some(n) => Ok(DBOutput::Rows {
                types: vec![DefaultColumnType::Any; n],
                rows,
            }),
            None => Ok(DBOutput::StatementComplete(count)),
        }
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "lakegres"
    }

    async fn sleep(dur: Duration) {
        tokio::time::sleep(dur).await
    }

    async fn run_command(command: std::process::Command) -> std::io::Result<std::process::Output> {
        tokio::process::Command::from(command).output().await
    }

    fn error_sql_state(err: &Self::Error) -> Option<String> {
        err.0.code().map(|c| c.code().to_string())
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn slt_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            slt_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "slt") {
            out.push(path);
        }
    }
}

/// The conformance cases this build must pass, from `conformance.list`.
fn conformance_files() -> Vec<PathBuf> {
    let root = repo_root();
    let list = std::fs::read_to_string(root.join("tests/slt/conformance.list")).unwrap_or_default();
    let dir = std::env::var_os("LAKEGRES_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/conformance"));
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|name| dir.join(name))
        .collect()
}

/// Files that need a warehouse on a local disk: RENAME moves a folder,
/// which object stores cannot do at once (it answers 0A000 there).
const LOCAL_ONLY: &[&str] = &["ddl/rename_table.slt", "session/transactions_rename.slt"];

/// The files run again with deletion vectors on ([`DV_DEFAULT`]).
const DV_FILES: &[&str] = &[
    "merge",
    "session/transactions",
    "update_delete",
    "subquery_conditions",
    "store_assignment",
    "dml_result_sets",
    "time_travel",
    "restore",
    "history",
    "generated_columns",
    "constraints",
    "char_varchar",
    "identity",
    "column_mapping",
    "nested_types",
    "type_widening",
    "views.slt",
    "point_lookup",
];

/// Of those, the ones that look at what deletion vectors change on
/// purpose (table properties, protocol, file counts).
const DV_SKIP: &[&str] = &[
    "ddl/constraints",
    "ddl/generated_columns",
    "features/column_mapping",
    "features/identity",
    "features/type_widening",
    "maintenance/history_operations",
];

/// What each `[dv]` connection runs first: Databricks' session default for
/// new tables' properties.
const DV_DEFAULT: &str =
    "SET spark.databricks.delta.properties.defaults.enableDeletionVectors = true";

/// What each `[cluster]` connection runs first.
const CLUSTER_FORCE: &str = "SET lakegres.distributed = force";

/// Whether the files run a fourth time on a cluster (`[cluster]`);
/// `LAKEGRES_SLT_CLUSTER=off` skips it.
fn on_cluster() -> bool {
    std::env::var("LAKEGRES_SLT_CLUSTER").map_or(true, |v| v != "off")
}

#[tokio::main]
async fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let mut files = Vec::new();
    slt_files(&repo_root().join("tests/slt"), &mut files);
    let conformance = conformance_files();
    for f in &conformance {
        assert!(f.exists(), "conformance case {} is missing", f.display());
    }
    files.extend(conformance);
    if let Some(filter) = &filter {
        files.retain(|f| f.to_string_lossy().contains(filter.as_str()));
    }

    let mut failed = Vec::new();
    let server = common::TestServer::start_with_file_root(&std::env::temp_dir());
    run_files(&server, &files, "", None, &mut failed).await;
    drop(server);
    // A new warehouse: the files create their tables again.
    let server = common::TestServer::start_with_file_root(&std::env::temp_dir());
    let dml: Vec<PathBuf> = files
        .iter()
        .filter(|f| {
            let name = f.to_string_lossy();
            DV_FILES.iter().any(|d| name.contains(d)) && !DV_SKIP.iter().any(|s| name.contains(s))
        })
        .cloned()
        .collect();
    run_files(&server, &dml, "[dv] ", Some(DV_DEFAULT), &mut failed).await;
    drop(server);
    let mut ran = files.len() + dml.len();
    // A cluster: a server and two workers, every query the sessions run
    // forced onto the workers; the same rows must come back.
    if on_cluster() {
        let workers = common::Workers::start(2, &[], &[]);
        let flags = workers.server_flags();
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let server = common::TestServer::start_with_file_root_and(&std::env::temp_dir(), &flags);
        run_files(
            &server,
            &files,
            "[cluster] ",
            Some(CLUSTER_FORCE),
            &mut failed,
        )
        .await;
        ran += files.len();
    }
    // The same files against a warehouse on S3 (moto), when moto is there
    // (tests/run installs it and sets LAKEGRES_REQUIRE_MOTO).
    if std::env::var_os("LAKEGRES_SLT_LOCAL_ONLY").is_none() {
        if let Some(moto) = common::Moto::start("slt") {
            let roots = std::env::temp_dir().display().to_string();
            let server = common::TestServer::start_s3(&moto, "wh", &["--file-root", &roots]);
            let remote: Vec<PathBuf> = files
                .iter()
                .filter(|f| !LOCAL_ONLY.iter().any(|l| f.ends_with(l)))
                .cloned()
                .collect();
            run_files(&server, &remote, "[s3] ", None, &mut failed).await;
            ran += remote.len();
        }
    }
    let passed = ran - failed.len();
    println!("\nslt: {passed} passed, {} failed", failed.len());
    if !failed.is_empty() {
        for f in &failed {
            println!("  failed: {f}");
        }
        std::process::exit(1);
    }
}

/// Runs `files` against `server`, each on its own connections; failures
/// are pushed to `failed` with `label` in front.
async fn run_files(
    server: &common::TestServer,
    files: &[PathBuf],
    label: &str,
    first: Option<&'static str>,
    failed: &mut Vec<String>,
) {
    for file in files {
        let conn_str = server.conn_str();
        let mut runner = sqllogictest::Runner::new(move || {
            let conn_str = conn_str.clone();
            async move {
                let (client, connection) =
                    tokio_postgres::connect(&conn_str, tokio_postgres::NoTls)
                        .await
                        .map_err(DbError)?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                if let Some(first) = first {
                    client.simple_query(first).await.map_err(DbError)?;
                }
                Ok(Postgres { client })
            }
        });
        let name = file
            .strip_prefix(repo_root())
            .unwrap_or(file)
            .display()
            .to_string();
        let name = format!("{label}{name}");
        match runner.run_file_async(file).await {
            Ok(()) => println!("ok      {name}"),
            Err(e) => {
                println!("FAILED  {name}\n{e}\n");
                failed.push(name);
            }
        }
    }
}
