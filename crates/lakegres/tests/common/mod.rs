//! A real Lakegres server for tests: the built binary on a free loopback
//! port with its own temporary warehouse, found ready by its startup log
//! line (never by sleeping).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running server process.
pub struct TestServer {
    child: Child,
    pub addr: SocketAddr,
    pub warehouse: PathBuf,
    _tempdir: Option<tempfile::TempDir>,
}

impl TestServer {
    /// The actions of one version of `default.table`, from its log.
    pub fn log_entry(&self, table: &str, version: u64) -> Vec<serde_json::Value> {
        let path = self
            .warehouse
            .join("default")
            .join(table)
            .join("_delta_log")
            .join(format!("{version:020}.json"));
        std::fs::read_to_string(path)
            .expect("the version's log entry")
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .collect()
    }

    /// The commitInfo of one version of `default.table`.
    pub fn commit_info(&self, table: &str, version: u64) -> serde_json::Value {
        self.log_entry(table, version)
            .into_iter()
            .find_map(|a| a.get("commitInfo").cloned())
            .expect("a commitInfo action")
    }

    /// The `ingest` folder beside the warehouse (the first file root).
    pub fn ingest(&self) -> PathBuf {
        self.warehouse
            .parent()
            .map(|p| p.join("ingest"))
            .unwrap_or_else(|| PathBuf::from("ingest"))
    }

    /// Starts a server with a fresh temporary warehouse.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let warehouse = dir.path().join("warehouse");
        let mut s = Self::start_in(&warehouse);
        s._tempdir = Some(dir);
        s
    }

    /// Starts a server with a fresh temporary warehouse whose statements may
    /// also read files anywhere under `root` (the slt cases write theirs
    /// to the system temporary folder).
    pub fn start_with_file_root(root: &Path) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let warehouse = dir.path().join("warehouse");
        let ingest = dir.path().join("ingest");
        let roots = format!(
            "{},{},{}",
            ingest.display(),
            warehouse.display(),
            root.display()
        );
        let mut s = Self::spawn(&warehouse, &["--file-root", &roots]);
        s._tempdir = Some(dir);
        s
    }

    /// Starts a server on an existing (or new) warehouse folder.
    pub fn start_in(warehouse: &Path) -> Self {
        Self::spawn(warehouse, &[])
    }

    fn spawn(warehouse: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lakegres"))
            .args(["--listen", "127.0.0.1:0", "--warehouse"])
            .arg(warehouse)
            .args(extra)
            .env("RUST_LOG", "warn,lakegres=info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn lakegres");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent {
                    if let Some(addr) = listening_addr(&line) {
                        let _ = tx.send(addr);
                        sent = true;
                        continue;
                    }
                }
                if std::env::var_os("LAKEGRES_TEST_LOG").is_some() || line.contains("ERROR") {
                    eprintln!("[server] {line}");
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server did not report its address");
        Self {
            child,
            addr,
            warehouse: warehouse.to_path_buf(),
            _tempdir: None,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A libpq-style connection string.
    pub fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=tester dbname=lakegres",
            self.port()
        )
    }

    /// Connects with tokio-postgres.
    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.conn_str(), tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// Kills the process at once (SIGKILL), as a crash would.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops the process with SIGTERM and waits for it.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().expect("wait")
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The Delta versions of a table (numbers of the JSON commits).
    pub fn delta_versions(&self, schema: &str, table: &str) -> Vec<u64> {
        let log = self.warehouse.join(schema).join(table).join("_delta_log");
        let mut versions: Vec<u64> = std::fs::read_dir(&log)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().to_string();
                        name.strip_suffix(".json")?.parse().ok()
                    })
                    .collect()
            })
            .unwrap_or_default();
        versions.sort();
        versions
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in the startup line "lakegres listening on ADDR, warehouse …".
fn listening_addr(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("listening on ")? + "listening on ".len()..];
    rest.split(',').next()?.trim().parse().ok()
}
