//! [`SessionState`]: what statements change in a session, as plain data —
//! settings, the transaction block, the current schema, the user, the
//! session's temporary views and tables and its variables. Statements reach
//! it through their [`crate::statement_context::StatementContext`].

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use datafusion::common::ScalarValue;
use sqlparser::ast::{self, ObjectName, ObjectNamePart};

use crate::settings::Settings;

/// The transaction block state, as Postgres reports it in ReadyForQuery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transaction {
    Idle,
    InBlock,
    Failed,
}

/// A warning for the client (a NoticeResponse of severity WARNING).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub code: lakegres_delta::SqlState,
    pub message: String,
}

/// What statements change in a session.
pub(crate) struct SessionState {
    pub(crate) settings: Settings,
    pub(crate) transaction: Transaction,
    pub(crate) schema: String,
    /// The grants on objects the open block's statements created, renamed
    /// or dropped, as they were before each (ROLLBACK puts them back).
    pub(crate) grants_before_block: crate::privileges::GrantsBefore,
    /// Warnings for the client, sent before the statement completes.
    pub(crate) notices: Vec<Notice>,
    /// The user the client logged in as.
    pub(crate) user: String,
    /// The database the client connected to (any name: there is one
    /// warehouse), which three-part names may use as their catalog.
    pub(crate) database: Option<String>,
    /// The session's temporary views, by lower-case name.
    pub(crate) temp_views: BTreeMap<String, TempView>,
    /// The session's variables, by lower-case name.
    pub(crate) variables: BTreeMap<String, Variable>,
    /// The types the client declared for the parameters of the statement
    /// being described or run (`None` where it left one to the server):
    /// [`crate::declared_params`].
    pub(crate) declared_params: Vec<Option<datafusion::arrow::datatypes::DataType>>,
    /// Reported settings (`TimeZone` …) a statement changed, by the name
    /// clients know, with their new values: sent as ParameterStatus after
    /// it, as Postgres does (drivers read the zone of results from it).
    pub(crate) reported: Vec<(String, String)>,
}

impl SessionState {
    /// Whether `name` names one of the session's temporary views (or
    /// tables): `v`, `session.v` or `pg_temp.v`.
    pub(crate) fn has_temp_view(&self, name: &ObjectName) -> bool {
        view_name(name).is_some_and(|n| self.temp_views.contains_key(&n))
    }

    /// [`Self::has_temp_view`] of a name's parts.
    pub(crate) fn has_temp_view_parts(&self, parts: &[String]) -> bool {
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        view_key(&parts).is_some_and(|n| self.temp_views.contains_key(&n))
    }

    /// A statement failed: an open transaction block fails with it.
    pub(crate) fn fail_block(&mut self) {
        if self.transaction == Transaction::InBlock {
            self.transaction = Transaction::Failed;
        }
    }
}

/// The session state's lock. A panic while holding it cannot leave the
/// settings torn (every update is one assignment), so a poisoned lock is
/// usable.
pub(crate) fn lock_state(state: &Mutex<SessionState>) -> MutexGuard<'_, SessionState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// The schema name that qualifies a temporary view (`session.v`).
pub(crate) const SESSION_SCHEMA: &str = "session";

/// One temporary view.
#[derive(Debug, Clone)]
pub(crate) struct TempView {
    pub(crate) query: ast::Query,
    /// The names of its columns, fixed when it was created.
    pub(crate) columns: Vec<String>,
    /// For a temporary table, where its rows are.
    pub(crate) rows: Option<TempRows>,
}

/// The rows of a temporary table.
#[derive(Debug, Clone)]
pub(crate) struct TempRows {
    /// The private name they are registered under (the query reads them
    /// from there).
    pub(crate) private: String,
    /// Their columns.
    pub(crate) schema: datafusion::arrow::datatypes::SchemaRef,
}

/// The view a name can be: `v` or `session.v`, lower case.
pub(crate) fn view_name(name: &ObjectName) -> Option<String> {
    let parts: Vec<&str> = name
        .0
        .iter()
        .filter_map(ObjectNamePart::as_ident)
        .map(|i| i.value.as_str())
        .collect();
    view_key(&parts)
}

pub(crate) fn view_key(parts: &[&str]) -> Option<String> {
    match parts {
        [view] => Some(view.to_lowercase()),
        // `session.v` (Databricks), `pg_temp.t` (Postgres).
        [schema, view]
            if schema.eq_ignore_ascii_case(SESSION_SCHEMA)
                || schema.eq_ignore_ascii_case("pg_temp") =>
        {
            Some(view.to_lowercase())
        }
        _ => None,
    }
}

/// A session variable.
#[derive(Debug, Clone)]
pub(crate) struct Variable {
    /// Its value, of the variable's type.
    pub(crate) value: ScalarValue,
    /// Its DEFAULT expression (cast to its type), evaluated again by
    /// `SET VAR v = DEFAULT`.
    pub(crate) default: String,
}
