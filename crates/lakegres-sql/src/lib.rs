//! lakegres-sql: the language. It provides
//!
//! 1. the parser of Databricks and Postgres statements (`parser/`);
//! 2. the [`Engine`] every connection shares and the [`Session`] of one
//!    connection, with its own DataFusion context (`engine.rs`,
//!    `context.rs`, `session.rs`);
//! 3. the path of one statement (`pipeline.rs`), what it needs to know of
//!    each statement (`statement.rs`), and one module per statement family
//!    (`statements/`): queries through DataFusion, writes into Delta through
//!    lakegres-delta.
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
mod cursors;
mod engine;
mod error;
mod files;
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
mod session;
pub mod settings;
mod statement;
mod statements;
mod time_travel;
mod types;

pub use engine::{Backends, Engine, SqlConfig};
pub use error::{datafusion_sqlstate, Error, Result};
pub use lakegres_functions::cast::databricks_text;
pub use lakegres_functions::rewrite::REPEATED_NAME_MARK;
pub use metrics::Metrics;
pub use output::{CommandTag, Description, Output};
pub use parser::{parse_shared, parse_sql, Parsed, Statement};
pub use session::{idle_timeout, Busy, IdleWatch, Session, Transaction, CATALOG_NAME};
pub use statements::copy::{CopyFormat, CopyIn, CopyOptions};
