//! The object stores under the warehouse: their settings and the start-up
//! check (`storage.rs`); the wrapper every store request passes through
//! (`requests.rs`), which counts it for `/metrics`, answers reads of the
//! commit entries this server just wrote (`recent_commits.rs`) and, in the
//! fault tests, stops at crash points (`faults.rs`); and the files
//! statements may name outside tables (`files.rs`).

mod faults;
pub mod files;
mod recent_commits;
pub mod requests;
pub(crate) mod storage;
