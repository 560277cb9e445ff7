//! lakegres-sql: the language. It provides
//!
//! 1. the parser of Databricks and Postgres statements (`parser/`);
//! 2. the [`Engine`] every connection shares and the [`Session`] of one
//!    connection, with its own DataFusion context (`engine.rs`,
//!    `context.rs`, `session.rs`) and its state as plain data
//!    (`session_state.rs`);
//! 3. the path of one statement (`pipeline.rs`), what it needs to know of
//!    each statement (`info.rs`), and one module per statement family
//!    (`statements/`, dispatched in `statement.rs`): queries through
//!    DataFusion, writes into Delta through lakegres-delta;
//! 4. the services statements use, each taking the statement's
//!    `StatementContext` (`statement_context.rs`) and none calling up into
//!    the statements: the planner (`plan.rs`), the resolver of views and
//!    variables (`resolve/`), names, privileges, time travel.
//!
//! Databricks' functions, casts and expression syntax are lakegres-functions'
//! (each session's context installs them, the parser reads with its
//! dialect); the two items of it the wire needs are re-exported here
//! ([`databricks_text`], [`REPEATED_NAME_MARK`]).
//!
//! It knows SQL and DataFusion, never pgwire.

mod activity;
mod changes;
pub mod cluster;
mod compat;
mod conditions;
mod constant_plans;
mod context;
mod copy_in;
mod cursors;
pub mod declared_params;
mod engine;
mod error;
mod files;
mod info;
mod interrupt;
mod lateral_alias;
mod lookup;
mod metrics;
mod names;
mod output;
pub mod parser;
mod pg_catalog;
mod pg_functions;
mod pipeline;
mod pivot;
mod plan;
mod planner;
mod privileges;
mod resolve;
mod row_values;
mod runnable;
mod session;
mod session_state;
pub mod settings;
mod statement;
mod statement_context;
mod statements;
mod time_travel;
mod types;

pub use copy_in::{CopyFormat, CopyIn, CopyOptions};
/// The DataFusion catalog name; `current_database()` answers it.
pub const CATALOG_NAME: &str = "lakegres";

pub use engine::{Backends, Engine, SqlConfig};
pub use error::{datafusion_sqlstate, Error, Result};
pub use lakegres_functions::cast::databricks_text;
pub use lakegres_functions::rewrite::REPEATED_NAME_MARK;
pub use metrics::Metrics;
pub use output::{CommandTag, Description, Output};
pub use parser::{parse_client, parse_shared, parse_sql, Parsed, Statement, StringLiterals};
pub use session::{idle_timeout, Busy, IdleWatch, Session, Transaction};
pub use session_state::Notice;
