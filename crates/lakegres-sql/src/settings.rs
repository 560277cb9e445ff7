//! Per-session settings (`SET`/`SHOW`/`RESET`): the parameters Postgres
//! clients read or change, kept per connection and never shared, and
//! Lakegres' own (`lakegres.*`), typed in [`LakegresOptions`].

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use datafusion::config::{ConfigExtension, ConfigField, ExtensionOptions, Visit};

use crate::cursors::parse_duration;
use crate::error::{Error, Result};

/// A boolean setting as Postgres reads one: `on`/`off`, `true`/`false`,
/// `yes`/`no`, `1`/`0`, any case.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PgBool(pub bool);

impl fmt::Display for PgBool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0 { "on" } else { "off" })
    }
}

impl ConfigField for PgBool {
    fn visit<V: Visit>(&self, v: &mut V, key: &str, description: &'static str) {
        v.some(key, self, description)
    }

    fn set(&mut self, _: &str, value: &str) -> datafusion::error::Result<()> {
        self.0 = match value.trim().to_lowercase().as_str() {
            "on" | "true" | "yes" | "1" | "t" | "y" => true,
            "off" | "false" | "no" | "0" | "f" | "n" => false,
            _ => {
                return Err(datafusion::error::DataFusionError::Configuration(format!(
                    "\"{value}\" is not a boolean (on or off)"
                )))
            }
        };
        Ok(())
    }
}

datafusion::common::extensions_options! {
    /// Lakegres' own settings, `SET lakegres.<name> = …`: each a typed
    /// field, parsed when it is set (a wrong value is refused then, with
    /// 22023), read by the code as that type, and listed by `SHOW ALL`.
    pub struct LakegresOptions {
        /// INSERT, UPDATE, DELETE and MERGE answer with Databricks' result
        /// row (on) or, as in Postgres, with the command tag alone (off; the
        /// default for pgjdbc, whose executeUpdate refuses a row).
        pub dml_result_rows: PgBool, default = PgBool(true)
        /// Whether a query's reads may run on the cluster's workers: off,
        /// auto (when its files hold more than one task's worth of bytes)
        /// or force (whenever the plan can be cut into stages).
        pub distributed: Distribution, default = Distribution::Auto
    }
}

/// `lakegres.distributed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Distribution {
    Off,
    #[default]
    Auto,
    Force,
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Distribution::Off => "off",
            Distribution::Auto => "auto",
            Distribution::Force => "force",
        })
    }
}

impl ConfigField for Distribution {
    fn visit<V: Visit>(&self, v: &mut V, key: &str, description: &'static str) {
        v.some(key, self, description)
    }

    fn set(&mut self, _: &str, value: &str) -> datafusion::error::Result<()> {
        *self = match value.trim().to_lowercase().as_str() {
            "off" | "false" | "no" | "0" => Distribution::Off,
            "auto" => Distribution::Auto,
            "force" | "on" | "true" | "yes" | "1" => Distribution::Force,
            _ => {
                return Err(datafusion::error::DataFusionError::Configuration(format!(
                    "\"{value}\" is not one of off, auto, force"
                )))
            }
        };
        Ok(())
    }
}

impl ConfigExtension for LakegresOptions {
    const PREFIX: &'static str = "lakegres";
}

impl LakegresOptions {
    /// The value of one option as `SHOW` prints it, if there is such an option.
    fn value(&self, name: &str) -> Option<String> {
        self.entries()
            .into_iter()
            .find(|e| e.key == name)
            .map(|e| e.value.unwrap_or_default())
    }
}

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
    ("default_transaction_isolation", "repeatable read"),
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
    // Off: `'\\d'` is `\d` as in Databricks; drivers double backslashes.
    ("standard_conforming_strings", "off"),
    ("statement_timeout", "0"),
    ("lock_timeout", "0"),
    ("idle_in_transaction_session_timeout", "0"),
    ("idle_session_timeout", "0"),
    ("timezone", "UTC"),
    ("transaction_isolation", "repeatable read"),
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
    lakegres: LakegresOptions,
    /// What `RESET` returns Lakegres' own to: the defaults, or this
    /// client's ([`Settings::set_client_default`]).
    lakegres_defaults: LakegresOptions,
    /// The timeouts, read from `values` whenever one changes: every
    /// statement reads two of them, and looking a name up and parsing its
    /// value each time was a tenth of `SELECT 1`'s statement path.
    timeouts: Timeouts,
    /// `standard_conforming_strings`, read whenever it changes: every
    /// statement's text is parsed by it.
    strings: crate::parser::StringLiterals,
}

/// The session's timeouts (none when 0 or not a duration).
#[derive(Debug, Clone, Copy, Default)]
pub struct Timeouts {
    /// `statement_timeout`.
    pub statement: Option<Duration>,
    /// `idle_session_timeout`.
    pub idle_session: Option<Duration>,
    /// `idle_in_transaction_session_timeout`.
    pub idle_in_transaction: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        let mut settings = Self {
            values: DEFAULTS
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            lakegres: LakegresOptions::default(),
            lakegres_defaults: LakegresOptions::default(),
            timeouts: Timeouts::default(),
            strings: Default::default(),
        };
        settings.read_derived();
        settings
    }
}

/// The name of one of Lakegres' own settings without its prefix.
fn own_name(key: &str) -> Option<&str> {
    key.strip_prefix(LakegresOptions::PREFIX)?.strip_prefix('.')
}

/// Whether `key` (normalized) is one of Postgres' parameters.
pub fn is_postgres_parameter(key: &str) -> bool {
    key == "session_authorization" || DEFAULTS.iter().any(|(k, _)| *k == key)
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
    /// Lakegres' own settings, typed.
    pub fn lakegres(&self) -> &LakegresOptions {
        &self.lakegres
    }

    /// The session's timeouts.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// How the session's statements read string literals.
    pub fn string_literals(&self) -> crate::parser::StringLiterals {
        self.strings
    }

    /// Reads again what is kept parsed from `values` (the literal rule, the
    /// timeouts).
    fn read_derived(&mut self) {
        self.strings = crate::parser::StringLiterals::from_setting(
            self.values
                .get("standard_conforming_strings")
                .map_or("off", String::as_str),
        );
        let read = |key: &str| self.values.get(key).and_then(|v| parse_duration(v));
        self.timeouts = Timeouts {
            statement: read("statement_timeout"),
            idle_session: read("idle_session_timeout"),
            idle_in_transaction: read("idle_in_transaction_session_timeout"),
        };
    }

    /// The settings whose (normalized) name starts with `prefix`, by the
    /// rest of their name.
    pub fn with_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        self.values
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?.to_string(), v.clone())))
            .collect()
    }

    /// The current value of a parameter.
    pub fn get(&self, name: &str) -> Result<String> {
        let key = normalize_name(name);
        let value = match own_name(&key) {
            Some(own) => self.lakegres.value(own),
            None => self.values.get(&key).cloned(),
        };
        value.ok_or(Error::UnknownSetting { name: key })
    }

    /// Sets a parameter. Unknown names are kept too (clients set many we do
    /// not act on, and Postgres accepts custom `a.b` names), except that a
    /// bare unknown name, and an unknown `lakegres.` one, is refused like
    /// Postgres does.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let key = normalize_name(name);
        if let Some(own) = own_name(&key) {
            return set_own(&mut self.lakegres, own, value);
        }
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
        self.read_derived();
        Ok(())
    }

    /// Sets one of Lakegres' own settings and the value `RESET` returns it
    /// to, for this client (pgjdbc answers DML with the tag alone).
    pub fn set_client_default(&mut self, name: &str, value: &str) -> Result<()> {
        let key = normalize_name(name);
        let own = own_name(&key).ok_or(Error::UnknownSetting { name: key.clone() })?;
        set_own(&mut self.lakegres_defaults, own, value)?;
        set_own(&mut self.lakegres, own, value)
    }

    /// Resets one parameter to its default.
    pub fn reset(&mut self, name: &str) {
        let key = normalize_name(name);
        if let Some(own) = own_name(&key) {
            if let Some(value) = self.lakegres_defaults.value(own) {
                let _ = set_own(&mut self.lakegres, own, &value);
            }
            return;
        }
        match DEFAULTS.iter().find(|(k, _)| *k == key) {
            Some((_, v)) => {
                self.values.insert(key, v.to_string());
            }
            None => {
                self.values.remove(&key);
            }
        }
        self.read_derived();
    }

    /// Resets every parameter.
    pub fn reset_all(&mut self) {
        let lakegres = self.lakegres_defaults.clone();
        *self = Self::default();
        self.lakegres = lakegres.clone();
        self.lakegres_defaults = lakegres;
    }

    /// Every parameter, for `SHOW ALL`, by name.
    pub fn all(&self) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = self
            .values
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .chain(self.lakegres.entries().into_iter().map(|e| {
                (
                    format!("{}.{}", LakegresOptions::PREFIX, e.key),
                    e.value.unwrap_or_default(),
                )
            }))
            .collect();
        all.sort();
        all
    }
}

/// Sets one of Lakegres' own settings: 42704 for a name there is no such
/// setting of, 22023 for a value of the wrong type.
fn set_own(options: &mut LakegresOptions, own: &str, value: &str) -> Result<()> {
    if options.value(own).is_none() {
        return Err(Error::UnknownSetting {
            name: format!("{}.{own}", LakegresOptions::PREFIX),
        });
    }
    ExtensionOptions::set(options, own, value.trim_matches('\'')).map_err(|e| {
        Error::InvalidSetting {
            name: format!("{}.{own}", LakegresOptions::PREFIX),
            value: e.strip_backtrace(),
        }
    })
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

    #[test]
    fn lakegres_settings_are_typed() {
        let mut s = Settings::default();
        assert!(s.lakegres().dml_result_rows.0);
        assert_eq!(s.get("lakegres.dml_result_rows").unwrap(), "on");
        s.set("Lakegres.DML_Result_Rows", "false").unwrap();
        assert!(!s.lakegres().dml_result_rows.0);
        assert_eq!(s.get("lakegres.dml_result_rows").unwrap(), "off");
        let wrong = s.set("lakegres.dml_result_rows", "sometimes").unwrap_err();
        assert_eq!(
            wrong.sqlstate(),
            lakegres_delta::SqlState::INVALID_PARAMETER_VALUE
        );
        let unknown = s.set("lakegres.no_such_thing", "1").unwrap_err();
        assert_eq!(
            unknown.sqlstate(),
            lakegres_delta::SqlState::UNDEFINED_OBJECT
        );
        s.reset("lakegres.dml_result_rows");
        assert!(s.lakegres().dml_result_rows.0);
        assert!(s
            .all()
            .contains(&("lakegres.dml_result_rows".to_string(), "on".to_string())));
    }

    #[test]
    fn timeouts_follow_set_reset_and_reset_all() {
        let mut s = Settings::default();
        assert!(s.timeouts().statement.is_none());
        s.set("statement_timeout", "'1.5s'").unwrap();
        s.set("IDLE_SESSION_TIMEOUT", "2min").unwrap();
        assert_eq!(s.timeouts().statement, Some(Duration::from_millis(1500)));
        assert_eq!(s.timeouts().idle_session, Some(Duration::from_secs(120)));
        s.set("statement_timeout", "0").unwrap();
        assert!(s.timeouts().statement.is_none());
        s.set("idle_in_transaction_session_timeout", "250").unwrap();
        s.reset("idle_session_timeout");
        assert!(s.timeouts().idle_session.is_none());
        assert_eq!(
            s.timeouts().idle_in_transaction,
            Some(Duration::from_millis(250))
        );
        s.reset_all();
        assert!(s.timeouts().idle_in_transaction.is_none());
    }

    #[test]
    fn a_client_default_survives_reset() {
        let mut s = Settings::default();
        s.set_client_default("lakegres.dml_result_rows", "off")
            .unwrap();
        s.set("lakegres.dml_result_rows", "on").unwrap();
        s.reset("lakegres.dml_result_rows");
        assert!(!s.lakegres().dml_result_rows.0);
        s.set("lakegres.dml_result_rows", "on").unwrap();
        s.reset_all();
        assert!(!s.lakegres().dml_result_rows.0);
    }
}
