//! lakegres-sql: the language. Parsing Databricks and Postgres statements,
//! the per-connection session with its own DataFusion context, and running
//! each statement: queries through DataFusion, writes into Delta through
//! lakegres-delta.
//!
//! It knows SQL and DataFusion, never pgwire.

mod activity;
mod alter;
mod changes;
mod compat;
mod copy;
mod copy_into;
mod cursors;
mod ddl;
mod describe;
mod error;
mod files;
mod functions;
mod insert;
mod lookup;
mod maintenance;
mod merge;
mod metrics;
pub mod parser;
mod pg_catalog;
mod pg_functions;
mod planner;
mod privileges;
mod session;
pub mod settings;
mod table_info;
mod time_travel;
mod types;

pub use copy::{CopyFormat, CopyIn, CopyOptions};
pub use error::{datafusion_sqlstate, Error, Result};
pub use metrics::Metrics;
pub use parser::{parse_sql, Statement};
pub use session::{
    idle_timeout, Backends, CommandTag, Description, Engine, IdleWatch, Output, Session, SqlConfig,
    Transaction, CATALOG_NAME,
};
