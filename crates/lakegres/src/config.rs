//! The server's configuration: one typed struct, filled from defaults, then
//! `config/lakegres.toml` (or `--config FILE`), then `LAKEGRES_*` variables,
//! then flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Parser;
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
    /// Warehouse root: a local folder (created if missing) or a URL.
    pub warehouse: String,
    /// Logging.
    pub log: LogConfig,
    /// The query engine.
    pub sql: SqlConfig,
    /// Files statements may read.
    pub files: FilesConfig,
}

/// Where COPY INTO, read_files and LIST may read files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilesConfig {
    /// Folders files may be read from; empty means an `ingest` folder
    /// beside the warehouse, and the warehouse. Relative paths in
    /// statements start at the first.
    pub roots: Vec<PathBuf>,
}

impl Config {
    /// The file roots: the configured ones, or `ingest` beside a local
    /// warehouse and the warehouse itself.
    pub fn file_roots(&self) -> Vec<PathBuf> {
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
                vec![parent.join("ingest"), absolute]
            }
            None => vec![PathBuf::from("ingest")],
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: lakegres_server::default_listen(),
            warehouse: "./lakegres-data".to_string(),
            log: LogConfig::default(),
            sql: SqlConfig::default(),
            files: FilesConfig::default(),
        }
    }
}

/// Logging settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A tracing filter (`info`, `lakegres=debug,info` …); `RUST_LOG` wins.
    pub filter: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            filter: "info".to_string(),
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
    /// A folder statements may read files from (repeatable; replaces
    /// `files.roots`) [default: ./ingest beside the warehouse, and the warehouse].
    #[arg(long = "file-root", env = "LAKEGRES_FILE_ROOTS", value_delimiter = ',')]
    pub file_roots: Vec<PathBuf>,
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
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.warehouse.is_empty(), "warehouse must not be empty");
        anyhow::ensure!(self.sql.batch_size > 0, "sql.batch_size must be positive");
        Ok(())
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
    fn misspelt_keys_fail() {
        assert!(toml::from_str::<Config>("lisen = \"127.0.0.1:1\"").is_err());
    }
}
