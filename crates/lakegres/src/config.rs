//! The server's configuration: one typed struct, filled from defaults, then
//! `config/lakegres.toml` (or `--config FILE`), then `LAKEGRES_*` variables,
//! then flags.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Parser;
use lakegres_delta::StorageConfig;
use lakegres_server::auth::{Method, Verifier};
use lakegres_sql::cluster::ClusterConfig;
use lakegres_sql::SqlConfig;
use serde::{Deserialize, Serialize};

/// The file read when `--config` is not given (if it exists).
pub const DEFAULT_CONFIG_FILE: &str = "config/lakegres.toml";

/// Every setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Warehouse root: a local folder (created if missing) or an
    /// object-store URL (`s3://bucket/prefix`, `gs://…`, `az://…`).
    pub warehouse: String,
    /// Connections past this many are refused with 53300.
    pub max_connections: usize,
    /// A client message (a statement, a bound row, a COPY chunk) longer
    /// than this many bytes ends its connection with FATAL 54000.
    pub max_message_size: u64,
    /// Address of the HTTP port with /metrics and /health; empty means none.
    pub http_listen: String,
    /// Logging.
    pub log: LogConfig,
    /// The query engine.
    pub sql: SqlConfig,
    /// Files statements may read.
    pub files: FilesConfig,
    /// Object stores.
    pub storage: StorageConfig,
    /// Who may log in.
    pub auth: AuthConfig,
    /// Encrypted connections.
    pub tls: TlsConfig,
    /// Workers that run the reads of large queries.
    pub cluster: ClusterConfig,
}

/// Authentication.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// `trust`, `password` or `scram-sha-256`; empty means trust when the
    /// server listens on a loopback address, scram-sha-256 otherwise.
    pub method: String,
    /// A TOML file of `name = "SCRAM-SHA-256$…"` lines (`lakegres user add`
    /// writes it); empty means none.
    pub users_file: String,
    /// Users given here, as name = SCRAM verifier.
    pub users: BTreeMap<String, String>,
    /// Users who may do everything, including GRANT and REVOKE. Empty means
    /// privileges are not checked: every user may do everything.
    pub admins: Vec<String>,
}

/// TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain; empty means no TLS.
    pub cert: String,
    /// PEM private key.
    pub key: String,
    /// Refuse connections that do not use TLS.
    pub required: bool,
}

/// Where COPY INTO, read_files and LIST may read files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilesConfig {
    /// Folders or object-store prefixes files may be read from; empty
    /// means an `ingest` folder beside the warehouse, and the warehouse.
    /// Relative paths in statements start at the first.
    pub roots: Vec<String>,
}

impl Config {
    /// The file roots: the configured ones, or `ingest` beside the
    /// warehouse (`s3://bucket/ingest/` for `s3://bucket/wh`; a local
    /// `ingest` folder for a warehouse at a bucket's top) and the warehouse
    /// itself.
    pub fn file_roots(&self) -> Vec<String> {
        if !self.files.roots.is_empty() {
            return self.files.roots.clone();
        }
        let local = match self.warehouse.strip_prefix("file://") {
            Some(path) => Some(PathBuf::from(path)),
            None if !self.warehouse.contains("://") => Some(PathBuf::from(&self.warehouse)),
            None => None,
        };
        match local {
            Some(warehouse) => {
                let absolute = std::path::absolute(&warehouse).unwrap_or(warehouse);
                let parent = absolute
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from("."));
                vec![
                    parent.join("ingest").display().to_string(),
                    absolute.display().to_string(),
                ]
            }
            None => {
                let warehouse = self.warehouse.trim_end_matches('/');
                let (bucket, prefix) = match warehouse.split_once("://") {
                    Some((scheme, rest)) => match rest.split_once('/') {
                        Some((bucket, prefix)) => (format!("{scheme}://{bucket}"), prefix),
                        None => (format!("{scheme}://{rest}"), ""),
                    },
                    None => (String::new(), ""),
                };
                let ingest = match prefix.rsplit_once('/') {
                    Some((parent, _)) => format!("{bucket}/{parent}/ingest/"),
                    None if !prefix.is_empty() => format!("{bucket}/ingest/"),
                    None => "ingest".to_string(),
                };
                vec![ingest, format!("{warehouse}/")]
            }
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: lakegres_server::default_listen(),
            warehouse: "./lakegres-data".to_string(),
            max_connections: 100,
            max_message_size: lakegres_server::DEFAULT_MAX_MESSAGE_SIZE,
            http_listen: String::new(),
            log: LogConfig::default(),
            sql: SqlConfig::default(),
            files: FilesConfig::default(),
            storage: StorageConfig::default(),
            auth: AuthConfig::default(),
            tls: TlsConfig::default(),
            cluster: ClusterConfig::default(),
        }
    }
}

/// Logging settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A tracing filter (`info`, `lakegres=debug,info` …); `RUST_LOG` wins.
    pub filter: String,
    /// `text` (for people) or `json` (one object per line, for collectors).
    pub format: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            filter: "info".to_string(),
            format: "text".to_string(),
        }
    }
}

/// Command-line flags; each also reads its `LAKEGRES_*` variable.
#[derive(Debug, Parser)]
#[command(
    name = "lakegres",
    version,
    about = "A PostgreSQL-wire SQL server over Delta Lake tables"
)]
pub struct Cli {
    /// Address to listen on [default: 127.0.0.1:5433].
    #[arg(long, env = "LAKEGRES_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Warehouse root folder or URL [default: ./lakegres-data].
    #[arg(long, env = "LAKEGRES_WAREHOUSE")]
    pub warehouse: Option<String>,
    /// Configuration file [default: config/lakegres.toml if it exists].
    #[arg(long, env = "LAKEGRES_CONFIG")]
    pub config: Option<PathBuf>,
    /// A folder or object-store prefix statements may read files from
    /// (repeatable; replaces `files.roots`) [default: ./ingest beside the
    /// warehouse, and the warehouse].
    #[arg(long = "file-root", env = "LAKEGRES_FILE_ROOTS", value_delimiter = ',')]
    pub file_roots: Vec<String>,
    /// Endpoint of an S3-compatible store (replaces `storage.endpoint`).
    #[arg(long = "storage-endpoint", env = "LAKEGRES_STORAGE_ENDPOINT")]
    pub storage_endpoint: Option<String>,
    /// Object-store region (replaces `storage.region`).
    #[arg(long = "storage-region", env = "LAKEGRES_STORAGE_REGION")]
    pub storage_region: Option<String>,
    /// Path-style bucket addressing, true or false (replaces `storage.path_style`).
    #[arg(long = "storage-path-style", env = "LAKEGRES_STORAGE_PATH_STYLE")]
    pub storage_path_style: Option<bool>,
    /// Allow http:// endpoints, true or false (replaces `storage.allow_http`).
    #[arg(long = "storage-allow-http", env = "LAKEGRES_STORAGE_ALLOW_HTTP")]
    pub storage_allow_http: Option<bool>,
    /// Address of the HTTP port with /metrics and /health [default: none].
    #[arg(long = "http-listen", env = "LAKEGRES_HTTP_LISTEN")]
    pub http_listen: Option<String>,
    /// Connections past this many are refused [default: 100].
    #[arg(long = "max-connections", env = "LAKEGRES_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Largest client message in bytes [default: 67108864].
    #[arg(long = "max-message-size", env = "LAKEGRES_MAX_MESSAGE_SIZE")]
    pub max_message_size: Option<u64>,
    /// Bytes of decoded rows kept for point queries; 0 turns the cache off
    /// (replaces `sql.lookup_cache_size`) [default: 268435456].
    #[arg(long = "lookup-cache-size", env = "LAKEGRES_LOOKUP_CACHE_SIZE")]
    pub lookup_cache_size: Option<u64>,
    /// `trust`, `password` or `scram-sha-256` (replaces `auth.method`).
    #[arg(long = "auth", env = "LAKEGRES_AUTH")]
    pub auth_method: Option<String>,
    /// The users file (replaces `auth.users_file`).
    #[arg(long = "users-file", env = "LAKEGRES_USERS_FILE")]
    pub users_file: Option<String>,
    /// `text` or `json` log lines (replaces `log.format`).
    #[arg(long = "log-format", env = "LAKEGRES_LOG_FORMAT")]
    pub log_format: Option<String>,
    /// Workers to send the reads of large queries to, `host:port`
    /// (replaces `cluster.workers`).
    #[arg(long = "workers", env = "LAKEGRES_WORKERS", value_delimiter = ',')]
    pub workers: Vec<String>,
    /// Address to serve tasks on as a worker (replaces `cluster.worker_listen`).
    #[arg(long = "worker-listen", env = "LAKEGRES_WORKER_LISTEN")]
    pub worker_listen: Option<String>,
    /// The cluster's shared-secret file (replaces `cluster.token_file`).
    #[arg(long = "cluster-token-file", env = "LAKEGRES_CLUSTER_TOKEN_FILE")]
    pub cluster_token_file: Option<String>,
    /// Bytes of data one task reads (replaces `cluster.bytes_per_task`).
    #[arg(long = "bytes-per-task", env = "LAKEGRES_BYTES_PER_TASK")]
    pub bytes_per_task: Option<u64>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What to do instead of serving.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Serve tasks of other servers' queries (no SQL port): a worker of the
    /// warehouse, with its object-store settings and the cluster's secret.
    Worker {
        /// Address to serve tasks on (replaces `cluster.worker_listen`).
        #[arg(long)]
        listen: Option<String>,
    },
    /// Manage the users who log in with a password.
    User {
        #[command(subcommand)]
        action: UserAction,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum UserAction {
    /// Asks for a password (twice on a terminal; one line from standard
    /// input otherwise) and writes the user's SCRAM verifier to the users
    /// file, replacing an earlier one.
    Add {
        /// The user name.
        name: String,
    },
}

impl Config {
    /// Reads a configuration file; unknown keys are errors.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// Layers file, environment and flags.
    pub fn load(cli: &Cli) -> anyhow::Result<Self> {
        let mut config = match &cli.config {
            Some(path) => Self::from_file(path)?,
            None if Path::new(DEFAULT_CONFIG_FILE).exists() => {
                Self::from_file(Path::new(DEFAULT_CONFIG_FILE))?
            }
            None => Self::default(),
        };
        if let Some(listen) = cli.listen {
            config.listen = listen;
        }
        if let Some(warehouse) = &cli.warehouse {
            config.warehouse = warehouse.clone();
        }
        if !cli.file_roots.is_empty() {
            config.files.roots = cli.file_roots.clone();
        }
        if let Some(endpoint) = &cli.storage_endpoint {
            config.storage.endpoint = endpoint.clone();
        }
        if let Some(region) = &cli.storage_region {
            config.storage.region = region.clone();
        }
        if let Some(path_style) = cli.storage_path_style {
            config.storage.path_style = path_style;
        }
        if let Some(allow_http) = cli.storage_allow_http {
            config.storage.allow_http = allow_http;
        }
        if let Some(http) = &cli.http_listen {
            config.http_listen = http.clone();
        }
        if let Some(max) = cli.max_message_size {
            config.max_message_size = max;
        }
        if let Some(size) = cli.lookup_cache_size {
            config.sql.lookup_cache_size = size;
        }
        if let Some(max) = cli.max_connections {
            config.max_connections = max;
        }
        if let Some(format) = &cli.log_format {
            config.log.format = format.clone();
        }
        if let Some(method) = &cli.auth_method {
            config.auth.method = method.clone();
        }
        if let Some(file) = &cli.users_file {
            config.auth.users_file = file.clone();
        }
        if !cli.workers.is_empty() {
            config.cluster.workers = cli.workers.clone();
        }
        if let Some(listen) = &cli.worker_listen {
            config.cluster.worker_listen = listen.clone();
        }
        if let Some(Command::Worker {
            listen: Some(listen),
        }) = &cli.command
        {
            config.cluster.worker_listen = listen.clone();
        }
        if let Some(file) = &cli.cluster_token_file {
            config.cluster.token_file = file.clone();
        }
        if let Some(bytes) = cli.bytes_per_task {
            config.cluster.bytes_per_task = bytes;
        }
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.warehouse.is_empty(), "warehouse must not be empty");
        anyhow::ensure!(self.sql.batch_size > 0, "sql.batch_size must be positive");
        let method = self.auth_method()?;
        anyhow::ensure!(
            method != Method::Trust || self.listen.ip().is_loopback(),
            "auth.method = \"trust\" is allowed only on a loopback listen address, not {}",
            self.listen
        );
        anyhow::ensure!(
            !self.tls.required || !self.tls.cert.is_empty(),
            "tls.required needs tls.cert and tls.key"
        );
        Ok(())
    }

    /// The authentication method: the configured one, or trust on loopback
    /// and scram-sha-256 otherwise.
    pub fn auth_method(&self) -> anyhow::Result<Method> {
        if self.auth.method.is_empty() {
            return Ok(if self.listen.ip().is_loopback() {
                Method::Trust
            } else {
                Method::ScramSha256
            });
        }
        self.auth
            .method
            .parse()
            .map_err(|e: String| anyhow::anyhow!("auth.method: {e}"))
    }

    /// The users of `auth.users` and of the users file.
    pub fn users(&self) -> anyhow::Result<HashMap<String, Verifier>> {
        let mut users = HashMap::new();
        let mut add = |name: &str, text: &str, source: &str| -> anyhow::Result<()> {
            let verifier = Verifier::parse(text).with_context(|| {
                format!("{source}: user {name}: not a SCRAM-SHA-256 verifier (lakegres user add writes them)")
            })?;
            users.insert(name.to_string(), verifier);
            Ok(())
        };
        for (name, text) in &self.auth.users {
            add(name, text, "auth.users")?;
        }
        if !self.auth.users_file.is_empty() {
            for (name, text) in read_users_file(Path::new(&self.auth.users_file))? {
                add(&name, &text, &self.auth.users_file)?;
            }
        }
        Ok(users)
    }
}

/// The users file: `name = "SCRAM-SHA-256$…"` lines; a missing file has no users.
pub fn read_users_file(path: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text).with_context(|| format!("parsing {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_file_lists_every_key_at_its_default() {
        let file: toml::Value =
            toml::from_str(include_str!("../../../config/lakegres.toml")).unwrap();
        assert_eq!(file, toml::Value::try_from(Config::default()).unwrap());
    }

    #[test]
    fn ingest_sits_beside_an_object_store_warehouse() {
        let at = |warehouse: &str| {
            Config {
                warehouse: warehouse.to_string(),
                ..Config::default()
            }
            .file_roots()
        };
        assert_eq!(
            at("s3://b/lake/wh"),
            vec!["s3://b/lake/ingest/", "s3://b/lake/wh/"]
        );
        assert_eq!(at("s3://b/wh/"), vec!["s3://b/ingest/", "s3://b/wh/"]);
        assert_eq!(at("s3://b"), vec!["ingest", "s3://b/"]);
    }

    #[test]
    fn misspelt_keys_fail() {
        assert!(toml::from_str::<Config>("lisen = \"127.0.0.1:1\"").is_err());
    }
}
