//! Selective overwrite as Delta commits (issue #4): what the log records,
//! readers that only ever see the old or the new rows, failed and cancelled
//! statements that leave no version, and two replaces of one partition.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::TestServer;

fn commit_info(entry: &[serde_json::Value]) -> &serde_json::Value {
    entry.iter().find_map(|a| a.get("commitInfo")).unwrap()
}

fn count(entry: &[serde_json::Value], action: &str) -> usize {
    entry.iter().filter(|a| a.get(action).is_some()).count()
}

#[tokio::test]
async fn each_replace_is_one_write_that_touches_only_its_partitions() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    // Ten daily partitions of 100 rows, one file each.
    db.batch_execute(
        "CREATE TABLE days (id BIGINT, day DATE) PARTITIONED BY (day);
         INSERT INTO days SELECT value AS id, DATE '2026-01-01' + CAST(value % 10 AS INT) AS day
         FROM generate_series(0, 999);",
    )
    .await
    .unwrap();

    db.batch_execute(
        "INSERT INTO days REPLACE WHERE day = DATE '2026-01-03'
         SELECT id + 10000, day FROM days WHERE day = DATE '2026-01-03'",
    )
    .await
    .unwrap();
    let entry = srv.log_entry("days", 2);
    let info = commit_info(&entry);
    assert_eq!(info["operation"], "WRITE");
    assert_eq!(info["operationParameters"]["mode"], "Overwrite");
    let predicate = info["operationParameters"]["predicate"].as_str().unwrap();
    assert!(predicate.contains("day"), "{predicate}");
    // The partition's one file goes whole; nothing else is rewritten.
    assert_eq!(count(&entry, "remove"), 1);
    assert_eq!(count(&entry, "add"), 1);

    db.batch_execute(
        "INSERT INTO days REPLACE USING (day)
         SELECT id, day FROM (VALUES (1, DATE '2026-01-05'), (2, DATE '2026-01-06')) AS v(id, day)",
    )
    .await
    .unwrap();
    let entry = srv.log_entry("days", 3);
    let info = commit_info(&entry);
    assert_eq!(info["operation"], "WRITE");
    assert_eq!(info["operationParameters"]["mode"], "Overwrite");
    assert_eq!(info["replaceUsingCols"], "(day)");
    assert_eq!(count(&entry, "remove"), 2);
    assert_eq!(count(&entry, "add"), 2);

    let rows = db
        .query(
            "SELECT CAST(day AS STRING) AS d, count(*), min(id) FROM days GROUP BY 1 ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    let got: Vec<(String, i64, i64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(got.len(), 10);
    assert_eq!(got[2], ("2026-01-03".to_string(), 100, 10002));
    assert_eq!(got[4], ("2026-01-05".to_string(), 1, 1));
    assert_eq!(got[5], ("2026-01-06".to_string(), 1, 2));
    assert_eq!(got[0], ("2026-01-01".to_string(), 100, 0));
    assert_eq!(srv.delta_versions("default", "days"), vec![0, 1, 2, 3]);
}

/// A reader polling during a long REPLACE sees either all the old rows or
/// all the new ones, never a table with the old gone and the new missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reader_sees_the_old_or_the_new_rows_only() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE atomic (id BIGINT, v BIGINT, p INT) PARTITIONED BY (p);
         INSERT INTO atomic SELECT value, 1, CAST(value % 2 AS INT) FROM generate_series(1, 200000);",
    )
    .await
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = Arc::clone(&stop);
        let reader = srv.connect().await;
        tokio::spawn(async move {
            let mut seen = std::collections::BTreeSet::new();
            while !stop.load(Ordering::Relaxed) {
                let row = reader
                    .query_one("SELECT count(*), sum(v) FROM atomic WHERE p = 0", &[])
                    .await
                    .unwrap();
                let (n, sum): (i64, i64) = (row.get(0), row.get(1));
                seen.insert((n, sum));
            }
            seen
        })
    };
    // Replace partition 0 (100000 rows of v = 1) with 300000 rows of v = 2,
    // then the whole partition again by REPLACE USING.
    tokio::time::sleep(Duration::from_millis(200)).await;
    db.batch_execute(
        "INSERT INTO atomic REPLACE WHERE p = 0 SELECT value, 2, 0 FROM generate_series(1, 300000)",
    )
    .await
    .unwrap();
    db.batch_execute(
        "INSERT INTO atomic REPLACE USING (p) SELECT value AS id, 3 AS v, 0 AS p FROM generate_series(1, 50000)",
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    let seen = reader.await.unwrap();
    let allowed = [(100000, 100000), (300000, 600000), (50000, 150000)];
    assert!(
        seen.iter().all(|s| allowed.contains(s)),
        "a reader saw a partial table: {seen:?}"
    );
    assert!(seen.contains(&(50000, 150000)), "{seen:?}");
}

/// Failed and cancelled replaces commit nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_cancelled_replaces_leave_no_version() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE keep (id BIGINT, p INT) PARTITIONED BY (p);
         INSERT INTO keep VALUES (1, 0), (2, 1);",
    )
    .await
    .unwrap();
    let before = srv.delta_versions("default", "keep");

    let err = db
        .batch_execute("INSERT INTO keep REPLACE WHERE p = 0 VALUES (3, 0), (4, 7)")
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "44000");
    let err = db
        .batch_execute(
            "INSERT INTO keep REPLACE USING (p) SELECT CAST('x' AS BIGINT) AS id, 0 AS p",
        )
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "22018");
    let err = db
        .batch_execute("INSERT OVERWRITE keep PARTITION (nope = 1) SELECT 1")
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "42000");

    // A replace of a huge generated batch, cancelled while it runs.
    let cancel = db.cancel_token();
    let done = Arc::new(AtomicBool::new(false));
    let canceller = {
        let done = Arc::clone(&done);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(300)).await;
                if done.load(Ordering::Relaxed) {
                    break;
                }
                cancel.cancel_query(tokio_postgres::NoTls).await.unwrap();
            }
        })
    };
    let err = db
        .batch_execute(
            "INSERT INTO keep REPLACE WHERE p = 0 SELECT value, 0 FROM generate_series(1, 100000000000)",
        )
        .await
        .unwrap_err();
    done.store(true, Ordering::Relaxed);
    canceller.await.unwrap();
    assert_eq!(err.code().unwrap().code(), "57014");

    assert_eq!(srv.delta_versions("default", "keep"), before);
    // A cancel request still in flight may hit the next statement; ask again.
    let mut rows = db.query("SELECT id, p FROM keep ORDER BY id", &[]).await;
    if rows.is_err() {
        rows = db.query("SELECT id, p FROM keep ORDER BY id", &[]).await;
    }
    let rows = rows.unwrap();
    let got: Vec<(i64, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![(1, 0), (2, 1)]);
}

/// Two replaces of one partition at once: one commits, the other gets
/// 40001 and leaves nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_replaces_of_one_partition_conflict() {
    let srv = TestServer::start();
    let setup = srv.connect().await;
    setup
        .batch_execute(
            "CREATE TABLE race2 (id BIGINT, p INT) PARTITIONED BY (p);
             INSERT INTO race2 SELECT value, CAST(value % 2 AS INT) FROM generate_series(1, 20000);",
        )
        .await
        .unwrap();
    let replace = |tag: i64| {
        format!(
            "INSERT INTO race2 REPLACE WHERE p = 1
             SELECT value * 10 + {tag}, 1 FROM generate_series(1, 200000)"
        )
    };
    let mut conflicts = 0;
    for round in 0..5 {
        let a = srv.connect().await;
        let b = srv.connect().await;
        let (qa, qb) = (replace(round * 2), replace(round * 2 + 1));
        let (ra, rb) = tokio::join!(a.batch_execute(&qa), b.batch_execute(&qb));
        let results = [ra, rb];
        assert!(results.iter().any(|r| r.is_ok()), "{results:?}");
        for r in results {
            if let Err(e) = r {
                assert_eq!(e.code().unwrap().code(), "40001", "{e:?}");
                conflicts += 1;
            }
        }
        // Whoever won, the partition holds exactly one replace's rows.
        let row = setup
            .query_one(
                "SELECT count(*), count(DISTINCT id % 10) FROM race2 WHERE p = 1",
                &[],
            )
            .await
            .unwrap();
        let (n, tags): (i64, i64) = (row.get(0), row.get(1));
        assert_eq!((n, tags), (200000, 1));
    }
    assert!(conflicts >= 1, "no conflict in 5 rounds of racing replaces");
}
