//! What the server's statements did, counted for `/metrics` (Prometheus
//! text format): statements by kind and outcome, their latency, commits,
//! commit conflicts, files and bytes written, object-store requests.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use lakegres_delta::SqlState;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 10] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 10.0];

/// Counters shared by all sessions of an engine.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Statements by kind: [ok, error].
    statements: Mutex<BTreeMap<String, [u64; 2]>>,
    /// Statements at or under each bucket's bound (cumulative on output).
    buckets: [AtomicU64; BUCKETS.len()],
    latency_micros: AtomicU64,
    latency_count: AtomicU64,
    commits: AtomicU64,
    conflicts: AtomicU64,
    /// Point queries answered without planning (lookup.rs).
    lookups: AtomicU64,
    /// Data files and bytes added by the commits of writes.
    files_written: AtomicU64,
    bytes_written: AtomicU64,
}

impl Metrics {
    /// Counts one statement. `kind` is its first keyword; `write` whether it
    /// commits to a table when it succeeds.
    pub(crate) fn record(
        &self,
        kind: &str,
        failed: Option<SqlState>,
        write: bool,
        elapsed: Duration,
    ) {
        let outcome = usize::from(failed.is_some());
        if let Ok(mut statements) = self.statements.lock() {
            // A kind seen before is counted without allocating its key.
            match statements.get_mut(kind) {
                Some(counts) => counts[outcome] += 1,
                None => {
                    let mut counts = [0; 2];
                    counts[outcome] = 1;
                    statements.insert(kind.to_string(), counts);
                }
            }
        }
        let seconds = elapsed.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.latency_micros.fetch_add(
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        match failed {
            None if write => {
                self.commits.fetch_add(1, Ordering::Relaxed);
            }
            Some(state) if state == SqlState::SERIALIZATION_FAILURE => {
                self.conflicts.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// Counts the data files and bytes a write's commit added.
    pub(crate) fn written(&self, files: u64, bytes: u64) {
        self.files_written.fetch_add(files, Ordering::Relaxed);
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts a point query answered by a lookup.
    pub(crate) fn lookup(&self) {
        self.lookups.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters in Prometheus' text format.
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP lakegres_statements_total Statements run, by first keyword and outcome."
        );
        let _ = writeln!(out, "# TYPE lakegres_statements_total counter");
        if let Ok(statements) = self.statements.lock() {
            for (kind, [ok, error]) in statements.iter() {
                for (outcome, n) in [("error", error), ("ok", ok)] {
                    if *n > 0 {
                        let _ = writeln!(
                            out,
                            "lakegres_statements_total{{kind=\"{kind}\",outcome=\"{outcome}\"}} {n}"
                        );
                    }
                }
            }
        }
        let _ = writeln!(
            out,
            "# HELP lakegres_statement_seconds Time from a statement's arrival to its result \
             (a write's commit; a query's first batch ready)."
        );
        let _ = writeln!(out, "# TYPE lakegres_statement_seconds histogram");
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(&self.buckets) {
            cumulative += count.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "lakegres_statement_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "lakegres_statement_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "lakegres_statement_seconds_sum {}",
            self.latency_micros.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(out, "lakegres_statement_seconds_count {count}");
        for (name, help, value) in [
            (
                "lakegres_commits_total",
                "Delta commits made by statements.",
                &self.commits,
            ),
            (
                "lakegres_commit_conflicts_total",
                "Statements that lost a commit race (40001).",
                &self.conflicts,
            ),
            (
                "lakegres_point_lookups_total",
                "Point queries (key = value) answered without planning, from the lookup cache or the table's files.",
                &self.lookups,
            ),
            (
                "lakegres_files_written_total",
                "Data files added to tables by the commits of writes.",
                &self.files_written,
            ),
            (
                "lakegres_bytes_written_total",
                "Bytes of the data files added to tables by the commits of writes.",
                &self.bytes_written,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        let name = "lakegres_object_store_requests_total";
        let _ = writeln!(
            out,
            "# HELP {name} Requests to object stores (S3, and the local disk through the same \
             interface), by kind: a listing counts once per 1,000 objects, a batch delete once \
             per object."
        );
        let _ = writeln!(out, "# TYPE {name} counter");
        for (op, n) in lakegres_delta::requests::requests() {
            let _ = writeln!(out, "{name}{{op=\"{op}\"}} {n}");
        }
    }
}

/// A statement's kind for the metrics: its first keyword, lower case.
pub(crate) fn kind_of(text: &str) -> String {
    let word: String = text
        .trim_start_matches(|c: char| c.is_whitespace() || c == '(')
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .take(24)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if word.is_empty() {
        "other".to_string()
    } else {
        word
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_counted_by_kind_outcome_and_latency() {
        let m = Metrics::default();
        m.record("insert", None, true, Duration::from_millis(3));
        m.record(
            "merge",
            Some(SqlState::SERIALIZATION_FAILURE),
            true,
            Duration::from_millis(30),
        );
        let mut out = String::new();
        m.render(&mut out);
        assert!(out.contains("lakegres_statements_total{kind=\"insert\",outcome=\"ok\"} 1"));
        assert!(out.contains("lakegres_statements_total{kind=\"merge\",outcome=\"error\"} 1"));
        assert!(out.contains("lakegres_statement_seconds_bucket{le=\"0.005\"} 1"));
        assert!(out.contains("lakegres_statement_seconds_bucket{le=\"0.05\"} 2"));
        assert!(out.contains("lakegres_commits_total 1"));
        assert!(out.contains("lakegres_commit_conflicts_total 1"));
        assert_eq!(kind_of("  (SELECT 1)"), "select");
        assert_eq!(kind_of("123"), "other");
    }
}
