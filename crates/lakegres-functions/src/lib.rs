//! lakegres-functions: Databricks SQL expressions (ANSI mode). It provides
//!
//! 1. the built-in functions by family, and the operator semantics that
//!    differ from DataFusion's: what `datafusion-spark` implements with
//!    Spark semantics is registered from it, the rest is here, one file per
//!    family, in the style of that crate; [`install()`] gives a session all of
//!    them, the expression planner (`planner.rs`: `/`, `div`, `%`, decimal
//!    precision, `[]`, `:`, `||`) and the analyzer rules that give
//!    `CAST(x AS STRING)` Databricks' text ([`cast`]) and make casts ANSI
//!    ([`ansi_cast`]);
//! 2. the SQL dialect, [`LakegresDialect`]: Postgres with the Databricks
//!    expression syntax (`syntax.rs`: lambdas, `div`, `s:a.b` paths);
//! 3. the rewrites of a statement before planning ([`rewrite`]: result
//!    column names, generators and `LATERAL VIEW`, Databricks call forms
//!    DataFusion cannot plan as they are);
//! 4. the table functions behind `SHOW FUNCTIONS` and `DESCRIBE FUNCTION`
//!    ([`catalog`]), reading the registry that plans the calls, and the
//!    names functions travel under to workers ([`wire`]);
//! 5. [`FunctionError`]: the Databricks error classes the functions raise,
//!    each with its SQLSTATE.
//!
//! It knows DataFusion and SQL expressions (sqlparser), never the wire
//! (pgwire), Delta (delta-rs, `lakegres-delta`) or the statements around
//! the expressions (`lakegres-sql`, which depends on it).

mod aggregate;
pub mod ansi_cast;
mod array;
mod average;
pub mod bounded;
pub mod cast;
pub mod catalog;
mod conditional;
mod datetime;
mod dialect;
mod error;
mod generator;
mod hash;
mod histogram;
mod install;
mod interval_math;
mod interval_text;
mod json;
mod lambda;
mod map;
mod math;
mod naming;
mod planner;
mod regex;
pub mod rewrite;
mod set_ops;
mod string;
mod struct_;
mod syntax;
mod udf;
pub mod wire;

pub use dialect::LakegresDialect;
pub use error::FunctionError;
pub use install::install;
