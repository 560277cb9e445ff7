//! Listings of a table's log shared by the statements that wait for one.
//!
//! Every statement on an object store lists its table's log once to see
//! whether another server committed (`Catalog::load_known`). With several
//! sessions writing one table, those listings were most of the store's
//! requests (issue #25). A statement may use a listing only if it started
//! after the statement arrived: one started earlier can miss a commit the
//! client saw acknowledged before sending it. So listings of one log run
//! one at a time, numbered as they start; a statement takes the number of
//! listings started when it arrives, and when its turn comes uses the last
//! listing's result if that one started later, or else lists itself. The
//! statements that arrive during one listing share the next.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use deltalake::Path;

/// What one listing of a log told: the identities of the commit files of
/// the version a statement has and of the next one (see `both_listed`).
pub(super) type Listed = (Option<Option<String>>, Option<Option<String>>);

/// The logs' listings, by the log's path.
#[derive(Default)]
pub(super) struct SharedListings {
    logs: Mutex<HashMap<Path, Arc<LogListings>>>,
}

#[derive(Default)]
struct LogListings {
    /// Listings started so far.
    started: AtomicU64,
    /// Held while a listing runs: the last one's number, the version it
    /// listed from and what it found.
    last: tokio::sync::Mutex<Option<(u64, u64, Listed)>>,
}

impl SharedListings {
    /// What `list` finds for `log` from `version`, from a listing that
    /// started after this call: `list`'s own, or a later one's of the same
    /// version another statement ran while this one waited.
    pub(super) async fn list<F>(&self, log: &Path, version: u64, list: F) -> Listed
    where
        F: Future<Output = Listed>,
    {
        let Some(listings) = self
            .logs
            .lock()
            .ok()
            .map(|mut logs| Arc::clone(logs.entry(log.clone()).or_default()))
        else {
            return list.await;
        };
        let arrived = listings.started.load(Ordering::SeqCst);
        let mut last = listings.last.lock().await;
        if let Some((number, listed_from, listed)) = last.as_ref() {
            if *number > arrived && *listed_from == version {
                return listed.clone();
            }
        }
        let number = listings.started.fetch_add(1, Ordering::SeqCst) + 1;
        let listed = list.await;
        // A listing that failed is not shared: the next statement lists.
        *last = match &listed {
            (Some(_), Some(_)) => Some((number, version, listed.clone())),
            _ => None,
        };
        listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[tokio::test]
    async fn statements_arriving_during_a_listing_share_the_next() {
        let shared = Arc::new(SharedListings::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let log = Path::from("wh/s/t/_delta_log");
        let listing = |runs: Arc<AtomicUsize>| async move {
            let n = runs.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            (Some(Some(format!("etag-{n}"))), Some(None))
        };
        // One listing under way; eight statements arrive during it.
        let first = {
            let (shared, runs, log) = (Arc::clone(&shared), Arc::clone(&runs), log.clone());
            tokio::spawn(async move { shared.list(&log, 3, listing(runs)).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        let later: Vec<_> = (0..8)
            .map(|_| {
                let (shared, runs, log) = (Arc::clone(&shared), Arc::clone(&runs), log.clone());
                tokio::spawn(async move { shared.list(&log, 3, listing(runs)).await })
            })
            .collect();
        assert_eq!(first.await.unwrap().0, Some(Some("etag-0".to_string())));
        for statement in later {
            // None uses the listing that was under way when it arrived.
            assert_eq!(statement.await.unwrap().0, Some(Some("etag-1".to_string())));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        // A statement arriving after both lists again.
        let next = shared.list(&log, 3, listing(Arc::clone(&runs))).await;
        assert_eq!(next.0, Some(Some("etag-2".to_string())));
    }
}
