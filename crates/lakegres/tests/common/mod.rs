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

/// `lakegres worker` processes sharing a secret: the workers of a cluster.
pub struct Workers {
    pub processes: Vec<TestServer>,
    token_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Workers {
    /// `n` workers on free loopback ports; `extra` are flags before
    /// `worker` (a warehouse's object-store settings), `env` its
    /// environment (credentials).
    pub fn start(n: usize, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let token_file = dir.path().join("cluster-token");
        std::fs::write(&token_file, "a-test-secret-of-32-characters!!\n").expect("token file");
        let token = token_file.display().to_string();
        let processes = (0..n)
            .map(|_| {
                let mut args = vec!["--cluster-token-file", token.as_str()];
                args.extend_from_slice(extra);
                args.extend_from_slice(&["worker", "--listen", "127.0.0.1:0"]);
                TestServer::try_spawn(&args, env)
                    .unwrap_or_else(|log| panic!("the worker did not start:\n{log}"))
            })
            .collect();
        Self {
            processes,
            token_file,
            _dir: dir,
        }
    }

    /// The flags that make a server send tasks to these workers.
    pub fn server_flags(&self) -> Vec<String> {
        let workers = self
            .processes
            .iter()
            .map(|w| w.addr.to_string())
            .collect::<Vec<_>>()
            .join(",");
        vec![
            "--workers".to_string(),
            workers,
            "--cluster-token-file".to_string(),
            self.token_file.display().to_string(),
        ]
    }
}

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
        Self::start_with_file_root_and(root, &[])
    }

    /// [`Self::start_with_file_root`] with more flags.
    pub fn start_with_file_root_and(root: &Path, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let warehouse = dir.path().join("warehouse");
        let ingest = dir.path().join("ingest");
        let roots = format!(
            "{},{},{}",
            ingest.display(),
            warehouse.display(),
            root.display()
        );
        let mut args = vec!["--file-root", roots.as_str()];
        args.extend_from_slice(extra);
        let mut s = Self::spawn(&warehouse, &args);
        s._tempdir = Some(dir);
        s
    }

    /// Starts a server on an existing (or new) warehouse folder.
    pub fn start_in(warehouse: &Path) -> Self {
        Self::spawn(warehouse, &[])
    }

    /// Starts a server on an existing (or new) warehouse folder with more
    /// environment variables (`FAILPOINTS` for the crash points).
    pub fn start_in_with_env(warehouse: &Path, env: &[(&str, &str)]) -> Self {
        Self::spawn_with_env(warehouse, &[], env)
    }

    fn spawn(warehouse: &Path, extra: &[&str]) -> Self {
        Self::spawn_with_env(warehouse, extra, &[])
    }

    fn spawn_with_env(warehouse: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let warehouse_arg = warehouse.display().to_string();
        let mut args = vec!["--warehouse", warehouse_arg.as_str()];
        args.extend_from_slice(extra);
        match Self::try_spawn(&args, env) {
            Ok(mut s) => {
                s.warehouse = warehouse.to_path_buf();
                s
            }
            Err(log) => panic!("the server did not start:\n{log}"),
        }
    }

    /// Starts a server on `warehouse` through `bash -c "{setup}; exec …"`:
    /// `setup` may set limits (`ulimit`) or signal dispositions (`trap`)
    /// that the server process then has.
    pub fn start_under(warehouse: &Path, setup: &str) -> Self {
        let mut command = Command::new("bash");
        command
            .args(["-c", &format!("{setup}; exec \"$0\" \"$@\"")])
            .arg(binary())
            .args(["--warehouse", &warehouse.display().to_string()]);
        match Self::try_spawn_command(command, &[], &[]) {
            Ok(mut s) => {
                s.warehouse = warehouse.to_path_buf();
                s
            }
            Err(log) => panic!("the server did not start:\n{log}"),
        }
    }

    /// Starts the binary with `args` (after `--listen 127.0.0.1:0`) and
    /// `env`; `Err` holds what it logged when it exits before listening.
    pub fn try_spawn(args: &[&str], env: &[(&str, &str)]) -> Result<Self, String> {
        Self::try_spawn_command(Command::new(binary()), args, env)
    }

    fn try_spawn_command(
        mut command: Command,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self, String> {
        let mut child = command
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
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
            let mut early = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent {
                    if let Some(addr) = listening_addr(&line) {
                        let _ = tx.send(Ok(addr));
                        sent = true;
                        continue;
                    }
                    early.push_str(&line);
                    early.push('\n');
                }
                if std::env::var_os("LAKEGRES_TEST_LOG").is_some() || line.contains("ERROR") {
                    eprintln!("[server] {line}");
                }
            }
            if !sent {
                let _ = tx.send(Err(early));
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Ok(addr)) => addr,
            Ok(Err(log)) => {
                let _ = child.wait();
                return Err(log);
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server did not report its address: {e}");
            }
        };
        Ok(Self {
            child,
            addr,
            warehouse: PathBuf::new(),
            _tempdir: None,
        })
    }

    /// Starts a server whose warehouse is `s3://BUCKET/prefix` on `moto`;
    /// `extra` are more flags.
    pub fn start_s3(moto: &Moto, prefix: &str, extra: &[&str]) -> Self {
        let warehouse = format!("s3://{}/{prefix}", moto.bucket);
        let flags = moto.warehouse_flags(prefix);
        let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
        args.extend_from_slice(extra);
        match Self::try_spawn(&args, &Moto::credentials()) {
            Ok(s) => s,
            Err(log) => panic!("the server did not start on {warehouse}:\n{log}"),
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

    /// Waits (at most a minute) for the process to end by itself.
    pub fn wait(&mut self) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not end by itself"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The Parquet files directly in a table's folder (an unpartitioned
    /// table's data files, live or not).
    pub fn data_files(&self, schema: &str, table: &str) -> usize {
        std::fs::read_dir(self.warehouse.join(schema).join(table))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
                    .count()
            })
            .unwrap_or_default()
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

/// A moto S3 server (`moto_server` from the test venv) on a free loopback
/// port, with one bucket. moto enforces conditional PUT (If-None-Match), as
/// Delta commits on S3 need.
pub struct Moto {
    child: Child,
    pub port: u16,
    pub bucket: String,
}

impl Moto {
    /// The `moto_server` to use: `LAKEGRES_MOTO_SERVER`, else the repo's
    /// `.venv/bin/moto_server`; `None` when neither exists.
    pub fn binary() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("LAKEGRES_MOTO_SERVER") {
            return Some(PathBuf::from(p));
        }
        let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/moto_server");
        venv.exists().then_some(venv)
    }

    /// The Python of moto's venv (which has `deltalake` too).
    pub fn python() -> Option<PathBuf> {
        Self::binary().map(|m| m.with_file_name("python"))
    }

    /// Whether a missing moto must fail the tests (tests/run sets it).
    pub fn required() -> bool {
        std::env::var_os("LAKEGRES_REQUIRE_MOTO").is_some()
    }

    /// Starts moto with a bucket, or `None` (with a note) when moto is not
    /// installed and not required.
    pub fn start(bucket: &str) -> Option<Self> {
        let Some(binary) = Self::binary() else {
            assert!(
                !Self::required(),
                "LAKEGRES_REQUIRE_MOTO is set but there is no moto_server (.venv/bin or LAKEGRES_MOTO_SERVER)"
            );
            eprintln!(
                "skipped: no moto_server (create .venv from tests/clients/python/requirements.txt)"
            );
            return None;
        };
        let port = free_port();
        // moto_server itself lets two concurrent conditional creates of one
        // key both succeed; the wrapper serializes writes (see the script).
        let python = binary.with_file_name("python");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/moto_atomic.py");
        let mut child = Command::new(python)
            .arg(script)
            .args(["127.0.0.1", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn moto (tests/it/moto_atomic.py)");
        // moto (werkzeug) logs "Running on http://…" once it accepts.
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && line.contains("Running on") {
                    let _ = tx.send(());
                    sent = true;
                }
                if std::env::var_os("LAKEGRES_MOTO_LOG").is_some() {
                    eprintln!("[moto] {line}");
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("moto_server did not start");
        let moto = Self {
            child,
            port,
            bucket: bucket.to_string(),
        };
        let status = moto.request("PUT", &format!("/{bucket}"), b"");
        assert!(status < 300, "creating bucket {bucket}: HTTP {status}");
        Some(moto)
    }

    /// `http://127.0.0.1:PORT`.
    /// The flags of a warehouse at `s3://BUCKET/prefix` on this moto.
    pub fn warehouse_flags(&self, prefix: &str) -> Vec<String> {
        [
            "--warehouse",
            &format!("s3://{}/{prefix}", self.bucket),
            "--storage-endpoint",
            &self.endpoint(),
            "--storage-allow-http",
            "true",
            "--storage-region",
            "us-east-1",
        ]
        .map(String::from)
        .to_vec()
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The (fake) credentials moto accepts.
    pub fn credentials() -> [(&'static str, &'static str); 3] {
        [
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
        ]
    }

    /// Writes an object (moto does not check signatures).
    pub fn put(&self, key: &str, body: &[u8]) {
        let status = self.request("PUT", &format!("/{}/{key}", self.bucket), body);
        assert!(status < 300, "PUT {key}: HTTP {status}");
    }

    /// The keys under a prefix (moto's ListObjectsV2, at most 1000).
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let (_, body) = self.request_body(
            "GET",
            &format!("/{}?list-type=2&prefix={prefix}", self.bucket),
            b"",
        );
        body.split("<Key>")
            .skip(1)
            .filter_map(|s| s.split("</Key>").next())
            .map(str::to_string)
            .collect()
    }

    fn request(&self, method: &str, path: &str, body: &[u8]) -> u16 {
        self.request_body(method, path, body).0
    }

    /// One HTTP/1.0 request (the server closes the connection after it).
    fn request_body(&self, method: &str, path: &str, body: &[u8]) -> (u16, String) {
        use std::io::{Read, Write};
        let mut stream =
            std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect to moto");
        let head = format!(
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\n\r\n",
            self.port,
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("write");
        stream.write_all(body).expect("write");
        let mut response = Vec::new();
        stream.read_to_end(&mut response).expect("read");
        let text = String::from_utf8_lossy(&response).to_string();
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The server binary: `LAKEGRES_BIN` when set (a copy of this build, for
/// when several worktrees share one target folder and its `lakegres`),
/// else the one cargo built for these tests.
pub fn binary() -> PathBuf {
    std::env::var_os("LAKEGRES_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_lakegres")))
}

/// One column of the rows of `sql`.
pub async fn column<T>(db: &tokio_postgres::Client, sql: &str, index: usize) -> Vec<T>
where
    T: for<'a> tokio_postgres::types::FromSql<'a>,
{
    db.query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(index))
        .collect()
}

/// The rows of `sql` (simple protocol) as texts, NULL as `None`.
pub async fn texts(db: &tokio_postgres::Client, sql: &str) -> Vec<Vec<Option<String>>> {
    db.simple_query(sql)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

/// One column of `DESCRIBE DETAIL table`, by name (`numFiles`, …).
pub async fn detail(db: &tokio_postgres::Client, table: &str, column: &str) -> Option<String> {
    db.simple_query(&format!("DESCRIBE DETAIL {table}"))
        .await
        .unwrap()
        .into_iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(column).map(str::to_string),
            _ => None,
        })
}

/// `tests/it/fault_proxy.py` in front of moto: faults at a rate set while
/// it runs, or a store that ignores `If-None-Match`.
pub struct FaultProxy {
    child: Child,
    pub port: u16,
}

impl FaultProxy {
    /// Starts the proxy to moto's `upstream` port with more `args`; `None`
    /// without moto's Python.
    pub fn start(upstream: u16, args: &[&str]) -> Option<Self> {
        let python = Moto::python()?;
        let port = free_port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fault_proxy.py");
        let mut child = Command::new(python)
            .arg(script)
            .args([port.to_string(), upstream.to_string()])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the proxy");
        // The proxy prints one line once it listens.
        let out = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line).unwrap();
        assert!(line.contains("listening"), "{line}");
        Some(Self { child, port })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Sets the share of requests given a fault (`None` leaves it); returns
    /// the faults injected so far.
    pub fn control(&self, rate: Option<f64>) -> serde_json::Value {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let (method, query) = match rate {
            Some(r) => ("POST", format!("?rate={r}")),
            None => ("GET", String::new()),
        };
        write!(
            s,
            "{method} /__faults{query} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("{}");
        serde_json::from_str(body).unwrap()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw socket to `addr` that has sent a protocol 3.0 startup message for
/// `user` and `database` (and read nothing yet).
pub async fn raw_session(addr: SocketAddr, user: &str, database: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let params = format!("user\0{user}\0database\0{database}\0\0");
    let mut startup = Vec::new();
    startup.extend_from_slice(&((8 + params.len()) as i32).to_be_bytes());
    startup.extend_from_slice(&196608i32.to_be_bytes());
    startup.extend_from_slice(params.as_bytes());
    s.write_all(&startup).await.unwrap();
    s
}
