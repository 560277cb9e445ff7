//! Crash points (issue #26): the server aborts at a chosen step of the
//! write path (the `fail` crate's points in the object-store wrapper, set
//! through `FAILPOINTS`; built with the `failpoints` feature, as `tests/run`
//! builds), is restarted, and the table must hold every acknowledged write
//! once, the write in doubt wholly or not at all, every version readable,
//! and orphan files only until VACUUM's retention allows their removal.

use std::collections::BTreeSet;
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

/// Eight clients append one row per statement to one table, so their
/// statements share commits, until the server aborts at `point` of a
/// commit in the middle of the stream. Returns the restarted server, each
/// client's acknowledged values and its value in doubt (sent, never
/// answered).
async fn crash_in_a_group(point: &str) -> (tempfile::TempDir, TestServer, Vec<(Vec<i32>, i32)>) {
    const CLIENTS: i32 = 8;
    let (dir, wh) = warehouse(TABLE).await;
    // The first 40 commits pass; the 41st crashes the server.
    let failpoints = format!("{point}=40*off->return(abort)");
    let mut srv = TestServer::start_in_with_env(&wh, &[("FAILPOINTS", &failpoints)]);
    let mut connections = Vec::new();
    for _ in 0..CLIENTS {
        connections.push(srv.connect().await);
    }
    let mut tasks = Vec::new();
    for (client, db) in (0..CLIENTS).zip(connections) {
        tasks.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            for n in 0.. {
                let value = client * 100_000 + n;
                match db
                    .execute(format!("INSERT INTO s.t VALUES ({value})").as_str(), &[])
                    .await
                {
                    Ok(1) => acknowledged.push(value),
                    Ok(other) => panic!("{other} rows for one VALUES row"),
                    // The connection ends with the server: no SQLSTATE.
                    Err(e) => {
                        assert!(e.code().is_none(), "{e:?}");
                        return (acknowledged, value);
                    }
                }
            }
            unreachable!()
        }));
    }
    let mut clients = Vec::new();
    for t in tasks {
        clients.push(t.await.unwrap());
    }
    let status = srv.wait();
    assert_eq!(status.signal(), Some(6), "{point}: {status:?}");
    (dir, TestServer::start_in(&wh), clients)
}

/// The rows of `s.t`, once it is checked that no row appears twice, that
/// the clients got past the first commits, that some commit held several
/// statements and that every version reads.
async fn rows_after(srv: &TestServer, clients: &[(Vec<i32>, i32)]) -> BTreeSet<i32> {
    let db = srv.connect().await;
    let rows = ids(&db, "SELECT id FROM s.t").await;
    let distinct: BTreeSet<i32> = rows.iter().copied().collect();
    assert_eq!(rows.len(), distinct.len(), "a row twice");
    let acknowledged: usize = clients.iter().map(|(a, _)| a.len()).sum();
    assert!(
        acknowledged >= 40,
        "only {acknowledged} statements answered"
    );
    // Several statements shared a commit before the crash.
    let log = srv.warehouse.join("s/t/_delta_log");
    let grouped = srv.delta_versions("s", "t").into_iter().any(|v| {
        std::fs::read_to_string(log.join(format!("{v:020}.json")))
            .unwrap()
            .contains("statementsInCommit")
    });
    assert!(grouped, "no commit held several statements");
    every_version_reads(srv, &db).await;
    distinct
}

/// A crash before a group's commit file is written: every acknowledged
/// row is there once, and no row of the group. (A statement of the commit
/// before it may be there unanswered: its commit was written, its answer
/// not yet sent when the server died — in doubt, as in PostgreSQL.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_in_a_group_before_its_commit_loses_nothing_acknowledged() {
    let (_dir, srv, clients) = crash_in_a_group("put.commit.before").await;
    let (rows, in_doubt) = bounded_by_answers(&srv, &clients).await;
    // The group being committed held a statement; its row is nowhere.
    assert!(
        !in_doubt.is_subset(&rows),
        "a row of the crashed commit is there"
    );
}

/// A crash right after a group's commit file is written, before any of
/// its statements is answered: every acknowledged row is there once, and
/// the group's rows are there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_in_a_group_after_its_commit_keeps_it_whole() {
    let (_dir, srv, clients) = crash_in_a_group("put.commit.after").await;
    let (rows, in_doubt) = bounded_by_answers(&srv, &clients).await;
    assert!(
        !rows.is_disjoint(&in_doubt),
        "the commit written before the crash is not read"
    );
}

/// Checks that the rows after the crash hold every acknowledged value and
/// otherwise only values in doubt; the rows and the values in doubt.
async fn bounded_by_answers(
    srv: &TestServer,
    clients: &[(Vec<i32>, i32)],
) -> (BTreeSet<i32>, BTreeSet<i32>) {
    let rows = rows_after(srv, clients).await;
    let acknowledged: BTreeSet<i32> = clients.iter().flat_map(|(a, _)| a.clone()).collect();
    let in_doubt: BTreeSet<i32> = clients.iter().map(|(_, d)| *d).collect();
    let lost: Vec<&i32> = acknowledged.difference(&rows).collect();
    assert!(lost.is_empty(), "acknowledged rows lost: {lost:?}");
    let others: BTreeSet<i32> = rows.difference(&acknowledged).copied().collect();
    assert!(others.is_subset(&in_doubt), "rows nobody sent: {others:?}");
    (rows, in_doubt)
}

const TWO_TABLES: &str = "CREATE SCHEMA s; CREATE TABLE s.a (id INT); CREATE TABLE s.b (id INT); \
    INSERT INTO s.a VALUES (1); INSERT INTO s.b VALUES (1);";
const TRANSFER: &str =
    "BEGIN; INSERT INTO s.a VALUES (2); DELETE FROM s.b WHERE id = 1; INSERT INTO s.b VALUES (3); COMMIT;";

/// A block that writes two tables, crashed at `point` of its COMMIT: after
/// the restart each table holds all of it (`whole`) or none of it, with one
/// version for the block.
async fn crash_in_a_transaction(point: &str, whole: bool) {
    let (_dir, wh) = warehouse(TWO_TABLES).await;
    let srv = crash(&wh, point, TRANSFER).await;
    let db = srv.connect().await;
    let (a, b) = (
        ids(&db, "SELECT id FROM s.a ORDER BY id").await,
        ids(&db, "SELECT id FROM s.b ORDER BY id").await,
    );
    if whole {
        assert_eq!((a, b), (vec![1, 2], vec![3]), "{point}");
        assert_eq!(srv.delta_versions("s", "a"), [0, 1, 2], "{point}");
        assert_eq!(srv.delta_versions("s", "b"), [0, 1, 2], "{point}");
    } else {
        assert_eq!((a, b), (vec![1], vec![1]), "{point}");
        assert_eq!(srv.delta_versions("s", "a"), [0, 1], "{point}");
    }
    // No record left behind, and the tables take the next block.
    assert!(!wh
        .join("_lakegres_transactions")
        .read_dir()
        .is_ok_and(|mut d| d.next().is_some()));
    db.batch_execute("BEGIN; INSERT INTO s.a VALUES (9); INSERT INTO s.b VALUES (9); COMMIT;")
        .await
        .unwrap();
    assert!(ids(&db, "SELECT id FROM s.b").await.contains(&9));
}

/// Before its record is written, a transaction has applied nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_a_transactions_record_applies_nothing() {
    crash_in_a_transaction("put.transaction.before", false).await;
}

/// With its record written and no table committed, the restart commits
/// both tables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_a_transactions_record_rolls_it_forward() {
    crash_in_a_transaction("put.transaction.after", true).await;
}

/// One table committed, the other not: the restart commits the other, and
/// not the first again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_a_transactions_tables_rolls_it_forward() {
    crash_in_a_transaction("put.commit.after", true).await;
}

/// The second table's commit fails (an injected store error) after the
/// first's: the COMMIT fails, and while its record is there no session
/// sees the first table's new version either; the next start rolls the
/// transaction forward and both tables show it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_half_committed_is_seen_by_no_one_until_it_is_whole() {
    let (_dir, wh) = warehouse(TWO_TABLES).await;
    let mut srv = TestServer::start_in_with_env(
        &wh,
        &[("FAILPOINTS", "put.commit.before=1*off->return(error)")],
    );
    let db = srv.connect().await;
    db.simple_query(TRANSFER)
        .await
        .expect_err("the second table's commit fails");
    assert_eq!(
        srv.delta_versions("s", "a"),
        [0, 1, 2],
        "the first table's commit is made"
    );
    let other = srv.connect().await;
    assert_eq!(ids(&other, "SELECT id FROM s.a ORDER BY id").await, [1]);
    assert_eq!(ids(&other, "SELECT id FROM s.b ORDER BY id").await, [1]);
    srv.stop();
    let srv = TestServer::start_in(&wh);
    let db = srv.connect().await;
    assert_eq!(ids(&db, "SELECT id FROM s.a ORDER BY id").await, [1, 2]);
    assert_eq!(ids(&db, "SELECT id FROM s.b ORDER BY id").await, [3]);
    assert_eq!(srv.delta_versions("s", "b"), [0, 1, 2]);
}
