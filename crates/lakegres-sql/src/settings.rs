//! Per-session settings (`SET`/`SHOW`/`RESET`): the parameters Postgres
//! clients read or change, kept per connection and never shared.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// What `SELECT version()` and `SHOW server_version` answer; SQLAlchemy and
/// others parse the leading `PostgreSQL 15.x`.
pub const SERVER_VERSION: &str = "15.6";

/// The full version string.
pub fn version_string() -> String {
    format!(
        "PostgreSQL {SERVER_VERSION} (Lakegres {}) on x86_64-pc-linux-gnu, compiled by rustc, 64-bit",
        env!("CARGO_PKG_VERSION")
    )
}

/// Settings with their defaults; `GUC_REPORT` ones are sent at startup.
const DEFAULTS: &[(&str, &str)] = &[
    ("application_name", ""),
    ("client_encoding", "UTF8"),
    ("client_min_messages", "notice"),
    ("datestyle", "ISO, MDY"),
    ("default_transaction_isolation", "serializable"),
    ("default_transaction_read_only", "off"),
    ("extra_float_digits", "1"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    ("is_superuser", "on"),
    ("lc_messages", "C"),
    ("max_identifier_length", "63"),
    ("search_path", "default"),
    ("server_encoding", "UTF8"),
    ("server_version", SERVER_VERSION),
    ("server_version_num", "150006"),
    ("standard_conforming_strings", "on"),
    ("statement_timeout", "0"),
    ("lock_timeout", "0"),
    ("idle_in_transaction_session_timeout", "0"),
    ("idle_session_timeout", "0"),
    ("timezone", "UTC"),
    ("transaction_isolation", "serializable"),
    ("transaction_read_only", "off"),
    ("bytea_output", "hex"),
    ("geqo", "on"),
    ("jit", "off"),
    ("work_mem", "4MB"),
    // INSERT OVERWRITE of a partitioned table: `static` replaces what the
    // PARTITION clause names, `dynamic` the partitions the rows land in.
    ("partitionoverwritemode", "static"),
    ("spark.sql.sources.partitionoverwritemode", "static"),
];

/// The parameters reported to the client at startup (ParameterStatus).
pub const REPORTED: &[&str] = &[
    "application_name",
    "client_encoding",
    "datestyle",
    "integer_datetimes",
    "intervalstyle",
    "is_superuser",
    "server_encoding",
    "server_version",
    "standard_conforming_strings",
    "timezone",
];

/// The spelling Postgres reports a parameter under.
pub fn display_name(name: &str) -> &str {
    match name {
        "datestyle" => "DateStyle",
        "intervalstyle" => "IntervalStyle",
        "timezone" => "TimeZone",
        other => other,
    }
}

/// One session's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    values: BTreeMap<String, String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            values: DEFAULTS
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}

/// Lower-cases a parameter name and maps the spellings of one parameter to one key.
pub fn normalize_name(name: &str) -> String {
    let name = name.trim().to_lowercase().replace(' ', "_");
    match name.as_str() {
        "time_zone" => "timezone".to_string(),
        "transaction_isolation_level" => "transaction_isolation".to_string(),
        "session_authorization" => "session_authorization".to_string(),
        _ => name,
    }
}

impl Settings {
    /// The current value of a parameter.
    pub fn get(&self, name: &str) -> Result<&str> {
        let key = normalize_name(name);
        self.values
            .get(&key)
            .map(String::as_str)
            .ok_or(Error::UnknownSetting { name: key })
    }

    /// Sets a parameter. Unknown names are kept too (clients set many we do
    /// not act on, and Postgres accepts custom `a.b` names), except that a
    /// bare unknown name is refused like Postgres does.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let key = normalize_name(name);
        if !self.values.contains_key(&key) && !key.contains('.') {
            return Err(Error::UnknownSetting { name: key });
        }
        if matches!(
            key.as_str(),
            "server_version" | "server_version_num" | "server_encoding" | "integer_datetimes"
        ) {
            return Err(Error::InvalidSetting {
                name: key,
                value: "cannot be changed".into(),
            });
        }
        let value = if key == "timezone" {
            value.to_string()
        } else {
            value.trim_matches('\'').to_string()
        };
        self.values.insert(key, value);
        Ok(())
    }

    /// Resets one parameter to its default.
    pub fn reset(&mut self, name: &str) {
        let key = normalize_name(name);
        match DEFAULTS.iter().find(|(k, _)| *k == key) {
            Some((_, v)) => {
                self.values.insert(key, v.to_string());
            }
            None => {
                self.values.remove(&key);
            }
        }
    }

    /// Resets every parameter.
    pub fn reset_all(&mut self) {
        *self = Self::default();
    }

    /// Every parameter, for `SHOW ALL`.
    pub fn all(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_show_reset() {
        let mut s = Settings::default();
        s.set("TimeZone", "Europe/Paris").unwrap();
        assert_eq!(s.get("time zone").unwrap(), "Europe/Paris");
        s.reset("timezone");
        assert_eq!(s.get("TIMEZONE").unwrap(), "UTC");
        assert!(s.set("no_such_thing", "1").is_err());
        s.set("myapp.flag", "x").unwrap();
        assert_eq!(s.get("myapp.flag").unwrap(), "x");
    }
}
