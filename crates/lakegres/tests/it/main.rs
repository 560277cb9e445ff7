//! Integration tests over the wire against a spawned server: the extended
//! protocol, restarts, crashes and bad input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod cluster;
mod copy;
// Built with the crash points only (`tests/run` builds with them).
#[cfg(feature = "failpoints")]
mod crash_points;
mod durability;
mod files;
mod group_commit;
mod maintenance;
mod merge;
mod objectstore;
mod protocol;
mod replace;
mod robustness;
mod scan;
mod store_faults;
mod task_scan;
mod tpch;
mod write_conditions;
