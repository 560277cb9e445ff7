//! Crash points (issue #26): the server aborts at a chosen step of the
//! write path (the `fail` crate's points in the object-store wrapper, set
//! through `FAILPOINTS`; built with the `failpoints` feature, as `tests/run`
//! builds), is restarted, and the table must hold every acknowledged write
//! once, the write in doubt wholly or not at all, every version readable,
//! and orphan files only until VACUUM's retention allows their removal.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use crate::common::{column, TestServer};

/// A warehouse set up by `setup` on a well-behaved server.
async fn warehouse(setup: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("wh");
    let mut srv = TestServer::start_in(&warehouse);
    srv.connect().await.batch_execute(setup).await.unwrap();
    srv.stop();
    (dir, warehouse)
}

/// Runs `sql` on a server whose crash point `point` is set: the server
/// aborts there (SIGABRT), and the client is never answered. Returns a
/// restarted server on the same warehouse.
async fn crash(warehouse: &Path, point: &str, sql: &str) -> TestServer {
    let failpoints = format!("{point}=return(abort)");
    let mut srv = TestServer::start_in_with_env(warehouse, &[("FAILPOINTS", &failpoints)]);
    let err = srv
        .connect()
        .await
        .simple_query(sql)
        .await
        .expect_err("the statement was answered");
    assert!(err.code().is_none(), "{point}: {err:?}");
    let status = srv.wait();
    assert_eq!(status.signal(), Some(6), "{point}: {status:?}");
    TestServer::start_in(warehouse)
}

async fn ids(db: &tokio_postgres::Client, sql: &str) -> Vec<i32> {
    column(db, sql, 0).await
}

/// Every version of `s.t` still in the log reads.
async fn every_version_reads(srv: &TestServer, db: &tokio_postgres::Client) {
    for v in srv.delta_versions("s", "t") {
        db.query(&format!("SELECT * FROM s.t VERSION AS OF {v}"), &[])
            .await
            .unwrap_or_else(|e| panic!("version {v}: {e:?}"));
    }
}

const TABLE: &str = "CREATE SCHEMA s; CREATE TABLE s.t (id INT);";

/// Data files written, commit file not: no new version, no row; the
/// orphan file stays through a VACUUM within the retention and goes with
/// one past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_the_commit_file_leaves_no_version() {
    let (_dir, wh) = warehouse(&format!("{TABLE} INSERT INTO s.t VALUES (1);")).await;
    let srv = TestServer::start_in(&wh);
    let (versions, files) = (srv.delta_versions("s", "t"), srv.data_files("s", "t"));
    drop(srv);
    let srv = crash(&wh, "put.commit.before", "INSERT INTO s.t VALUES (2)").await;
    let db = srv.connect().await;
    assert_eq!(ids(&db, "SELECT id FROM s.t").await, [1]);
    assert_eq!(srv.delta_versions("s", "t"), versions);
    assert_eq!(srv.data_files("s", "t"), files + 1, "the orphan data file");
    every_version_reads(&srv, &db).await;
    db.batch_execute("VACUUM s.t").await.unwrap();
    assert_eq!(srv.data_files("s", "t"), files + 1, "within the retention");
    db.batch_execute(
        "SET spark.databricks.delta.retentionDurationCheck.enabled = false;
         VACUUM s.t RETAIN 0 HOURS",
    )
    .await
    .unwrap();
    assert_eq!(srv.data_files("s", "t"), files);
    db.batch_execute("INSERT INTO s.t VALUES (3)")
        .await
        .unwrap();
    assert_eq!(ids(&db, "SELECT id FROM s.t ORDER BY id").await, [1, 3]);
}

/// The commit file written, the client not answered: the write is in the
/// table, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_the_commit_file_keeps_the_write_once() {
    let (_dir, wh) = warehouse(&format!("{TABLE} INSERT INTO s.t VALUES (1);")).await;
    let srv = crash(&wh, "put.commit.after", "INSERT INTO s.t VALUES (2)").await;
    let db = srv.connect().await;
    assert_eq!(ids(&db, "SELECT id FROM s.t ORDER BY id").await, [1, 2]);
    assert_eq!(srv.delta_versions("s", "t"), [0, 1, 2]);
    every_version_reads(&srv, &db).await;
    db.batch_execute("INSERT INTO s.t VALUES (3)")
        .await
        .unwrap();
    assert_eq!(ids(&db, "SELECT id FROM s.t ORDER BY id").await, [1, 2, 3]);
}

/// Crashes while a checkpoint is written (after its file, before
/// `_last_checkpoint`; or with half of its file): the commit it follows
/// stands, and the table reads and takes writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_inside_a_checkpoint_leaves_a_readable_table() {
    for (point, fault) in [
        ("put.checkpoint.after", "abort"),
        ("put.checkpoint.before", "partial"),
    ] {
        let (_dir, wh) = warehouse(
            "CREATE SCHEMA s; CREATE TABLE s.t (id INT) \
             TBLPROPERTIES ('delta.checkpointInterval' = '2');",
        )
        .await;
        let failpoints = format!("{point}=return({fault})");
        let mut srv = TestServer::start_in_with_env(&wh, &[("FAILPOINTS", &failpoints)]);
        let err = srv
            .connect()
            .await
            .simple_query("INSERT INTO s.t VALUES (1)")
            .await;
        // The checkpoint may be written after the client heard back.
        let status = srv.wait();
        assert_eq!(status.signal(), Some(6), "{point}: {status:?} {err:?}");
        let log = wh.join("s/t/_delta_log");
        assert!(
            log.join("00000000000000000001.checkpoint.parquet").exists(),
            "{point}"
        );
        assert!(!log.join("_last_checkpoint").exists(), "{point}");

        let srv = TestServer::start_in(&wh);
        let db = srv.connect().await;
        assert_eq!(ids(&db, "SELECT id FROM s.t").await, [1], "{point}");
        // Written again whole, for every reader.
        let checkpoint =
            std::fs::read(log.join("00000000000000000001.checkpoint.parquet")).unwrap();
        assert!(checkpoint.ends_with(b"PAR1"), "{point}");
        every_version_reads(&srv, &db).await;
        db.batch_execute("INSERT INTO s.t VALUES (2); INSERT INTO s.t VALUES (3)")
            .await
            .unwrap();
        assert_eq!(
            ids(&db, "SELECT id FROM s.t ORDER BY id").await,
            [1, 2, 3],
            "{point}"
        );
        drop(srv);
        // A fresh process reads it too (no cached snapshot).
        let srv = TestServer::start_in(&wh);
        let db = srv.connect().await;
        assert_eq!(ids(&db, "SELECT count(*)::INT FROM s.t").await, [3]);
    }
}

/// A crash after the first expired log file is deleted: the table reads
/// at its latest version, and the next clean-up finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_during_log_clean_up_leaves_a_readable_table() {
    let (_dir, wh) = warehouse(
        "CREATE SCHEMA s; CREATE TABLE s.t (id INT) TBLPROPERTIES (\
           'delta.checkpointInterval' = '2', \
           'delta.logRetentionDuration' = 'interval 0 seconds'); \
         INSERT INTO s.t VALUES (1); INSERT INTO s.t VALUES (2);",
    )
    .await;
    let mut srv =
        TestServer::start_in_with_env(&wh, &[("FAILPOINTS", "delete.commit.after=return(abort)")]);
    let _ = srv
        .connect()
        .await
        .simple_query("INSERT INTO s.t VALUES (3)")
        .await;
    assert_eq!(srv.wait().signal(), Some(6));

    let srv = TestServer::start_in(&wh);
    let db = srv.connect().await;
    assert_eq!(ids(&db, "SELECT id FROM s.t ORDER BY id").await, [1, 2, 3]);
    db.batch_execute("INSERT INTO s.t VALUES (4); INSERT INTO s.t VALUES (5)")
        .await
        .unwrap();
    assert_eq!(
        ids(&db, "SELECT id FROM s.t ORDER BY id").await,
        [1, 2, 3, 4, 5]
    );
    // The clean-up after version 5's checkpoint may follow the answer.
    for _ in 0..250 {
        if !srv.delta_versions("s", "t").contains(&2) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let versions = srv.delta_versions("s", "t");
    assert!(!versions.contains(&2), "cleaned up: {versions:?}");
}

/// A crash after VACUUM deleted its first file: the table reads, and the
/// next VACUUM deletes the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_during_vacuum_leaves_a_readable_table() {
    let (_dir, wh) = warehouse(&format!(
        "{TABLE} INSERT INTO s.t VALUES (1); INSERT INTO s.t VALUES (2); \
         INSERT OVERWRITE s.t VALUES (3);"
    ))
    .await;
    let srv = crash(
        &wh,
        "delete.data.after",
        "SET spark.databricks.delta.retentionDurationCheck.enabled = false; \
         VACUUM s.t RETAIN 0 HOURS",
    )
    .await;
    // The crash came after a delete; the other may have run beside it
    // (deletes go out several at a time).
    let left = srv.data_files("s", "t");
    assert!((1..=2).contains(&left), "{left} data files");
    let db = srv.connect().await;
    assert_eq!(ids(&db, "SELECT id FROM s.t").await, [3]);
    db.batch_execute(
        "SET spark.databricks.delta.retentionDurationCheck.enabled = false;
         VACUUM s.t RETAIN 0 HOURS",
    )
    .await
    .unwrap();
    assert_eq!(srv.data_files("s", "t"), 1);
    assert_eq!(ids(&db, "SELECT id FROM s.t").await, [3]);
}

/// COPY INTO crashes after its files are loaded and its record written,
/// before the commit: nothing loaded, and the next COPY INTO loads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_copy_into_commits_loads_nothing() {
    let (dir, wh) = warehouse(TABLE).await;
    let ingest = dir.path().join("ingest/in");
    std::fs::create_dir_all(&ingest).unwrap();
    std::fs::write(ingest.join("a.csv"), "id\n1\n2\n").unwrap();
    std::fs::write(ingest.join("b.csv"), "id\n3\n").unwrap();
    let copy = format!(
        "COPY INTO s.t FROM '{}' FILEFORMAT = CSV \
         FORMAT_OPTIONS ('header' = 'true', 'inferSchema' = 'true')",
        ingest.display()
    );
    let srv = crash(&wh, "put.load_record.after", &copy).await;
    let db = srv.connect().await;
    assert_eq!(ids(&db, "SELECT count(*)::INT FROM s.t").await, [0]);
    assert_eq!(srv.delta_versions("s", "t"), [0]);
    let loaded: Vec<i64> = column(&db, &copy, 0).await;
    assert_eq!(loaded, [3]);
    let again: Vec<i64> = column(&db, &copy, 0).await;
    assert_eq!(again, [0]);
    assert_eq!(ids(&db, "SELECT id FROM s.t ORDER BY id").await, [1, 2, 3]);
}
