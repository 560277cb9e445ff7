//! Crash points for the fault tests (issue #26). With the `failpoints`
//! feature (test builds only) every object-store request passes a point
//! named for what it does and what it touches, before and after the store
//! answers — `put.commit.before`, `put.commit.after`,
//! `put.checkpoint.after`, `put.load_record.after`, `delete.log.after`,
//! `delete.data.after` … (see [`kind`]) — and the `fail` crate's
//! `FAILPOINTS` environment variable sets them when the process starts:
//! `FAILPOINTS='put.commit.after=return(abort)'` aborts the server right
//! after a commit file is written, before anyone hears of it;
//! `1*off->return(abort)` lets the first pass go. `return(error)` fails the
//! request instead, `return(partial)` (on a put) writes half the object,
//! then aborts. Without the feature the points are nothing.

use deltalake::Path;

/// What a crash point does when it is hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
pub(crate) enum Fault {
    /// The process aborts (as a crash or `kill -9` would end it).
    Abort,
    /// The request fails as a store error.
    Error,
    /// A put writes the first half of the object, then the process aborts.
    Partial,
}

/// Sets the points from `FAILPOINTS`, once per process.
pub(crate) fn setup() {
    #[cfg(feature = "failpoints")]
    std::mem::forget(fail::FailScenario::setup());
}

/// The fault set for the point `{op}.{kind of path}.{when}`, if any. An
/// abort is carried out here; the caller carries out the others. Without
/// the feature nothing is looked at.
pub(crate) fn at(op: &'static str, path: &Path, when: &'static str) -> Option<Fault> {
    #[cfg(feature = "failpoints")]
    {
        let name = format!("{op}.{}.{when}", kind(path));
        let fault = fail::eval(&name, |arg| match arg.as_deref() {
            Some("error") => Fault::Error,
            Some("partial") => Fault::Partial,
            _ => Fault::Abort,
        })?;
        if fault == Fault::Abort {
            tracing::error!(point = %name, "crash point reached");
            abort_now();
        }
        Some(fault)
    }
    #[cfg(not(feature = "failpoints"))]
    {
        let _ = (op, path, when);
        None
    }
}

/// Ends the process at once, as a crash would: no destructor, no flush.
pub(crate) fn abort_now() -> ! {
    std::process::abort()
}

/// The error a point set to `return(error)` fails its request with.
pub(crate) fn injected(path: &Path) -> deltalake::ObjectStoreError {
    deltalake::ObjectStoreError::Generic {
        store: "fault",
        source: format!("injected fault at {path}").into(),
    }
}

/// What an object path is, for the names of the points: `commit` (a log
/// entry `_delta_log/N.json`), `checkpoint` (its parts),
/// `last_checkpoint`, `log` (other log files), `load_record` (COPY INTO's
/// record of loaded files), `transaction` (a transaction's record), `data` (a Parquet data file) or `other`.
#[cfg_attr(not(any(feature = "failpoints", test)), allow(dead_code))]
fn kind(path: &Path) -> &'static str {
    let key = path.as_ref();
    let name = key.rsplit('/').next().unwrap_or(key);
    let in_log = key.starts_with("_delta_log/") || key.contains("/_delta_log/");
    if in_log {
        if name == "_last_checkpoint" {
            "last_checkpoint"
        } else if name.contains(".checkpoint") {
            "checkpoint"
        } else if crate::store::requests::is_commit_entry(path) {
            "commit"
        } else {
            "log"
        }
    } else if key.starts_with("_lakegres_copy_into/") || key.contains("/_lakegres_copy_into/") {
        "load_record"
    } else if key.starts_with("_lakegres_transactions/") || key.contains("/_lakegres_transactions/")
    {
        "transaction"
    } else if name.ends_with(".parquet") {
        "data"
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_named_for_what_they_hold() {
        for (path, expected) in [
            ("wh/s/t/_delta_log/00000000000000000003.json", "commit"),
            ("_delta_log/00000000000000000000.json", "commit"),
            (
                "wh/s/t/_delta_log/00000000000000000009.checkpoint.parquet",
                "checkpoint",
            ),
            ("wh/s/t/_delta_log/_last_checkpoint", "last_checkpoint"),
            ("wh/s/t/_delta_log/00000000000000000003.crc", "log"),
            ("wh/s/t/_lakegres_copy_into/00000001-ab.json", "load_record"),
            ("wh/s/t/part-00000-x.snappy.parquet", "data"),
            ("wh/s/t/day=2026-01-01/part-1.parquet", "data"),
            ("wh/_lakegres/probe", "other"),
        ] {
            assert_eq!(kind(&Path::from(path)), expected, "{path}");
        }
    }
}
