//! Restarts and crashes: acknowledged writes survive, nothing partial is seen.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{texts, TestServer};

#[tokio::test]
async fn everything_is_back_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("wh");
    let oids;
    {
        let mut srv = TestServer::start_in(&warehouse);
        let db = srv.connect().await;
        db.batch_execute(
            "CREATE SCHEMA sales;
             CREATE TABLE sales.orders (id INT, region STRING) PARTITIONED BY (region);
             INSERT INTO sales.orders VALUES (1, 'eu'), (2, 'us');",
        )
        .await
        .unwrap();
        oids = catalog_oids(&db).await;
        assert!(srv.stop().success());
    }
    let srv = TestServer::start_in(&warehouse);
    let db = srv.connect().await;
    // Another table sorting first does not move the others' OIDs.
    db.batch_execute("CREATE TABLE sales.aaa (x INT)")
        .await
        .unwrap();
    let after: Vec<(String, u32)> = catalog_oids(&db)
        .await
        .into_iter()
        .filter(|(name, _)| name != "aaa")
        .collect();
    assert_eq!(after, oids, "schema and table OIDs survive a restart");
    let rows = db
        .query("SELECT id, region FROM sales.orders ORDER BY id", &[])
        .await
        .unwrap();
    let got: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![(1, "eu".to_string()), (2, "us".to_string())]);
}

/// The OIDs of the `sales` schema and its tables, as clients read them.
async fn catalog_oids(db: &tokio_postgres::Client) -> Vec<(String, u32)> {
    db.query(
        "SELECT c.relname, c.oid FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'sales' \
         UNION ALL SELECT nspname, oid FROM pg_catalog.pg_namespace WHERE nspname = 'sales' \
         ORDER BY 1",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

/// Several clients insert batches of 10 rows, each batch tagged; the server
/// is killed with SIGKILL mid-stream. After a restart every acknowledged
/// batch is there exactly once and no batch is there in part.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_keeps_every_acknowledged_insert_and_no_partial_one() {
    const CLIENTS: i32 = 4;
    const ROWS: i32 = 10;
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("wh");
    let mut srv = TestServer::start_in(&warehouse);
    let setup = srv.connect().await;
    setup
        .batch_execute("CREATE TABLE k9 (batch INT, n INT, client INT)")
        .await
        .unwrap();
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let db = srv.connect().await;
        let acked = Arc::clone(&acked);
        tasks.push(tokio::spawn(async move {
            for i in 0.. {
                let batch = client * 1_000_000 + i;
                let values: Vec<String> = (0..ROWS)
                    .map(|n| format!("({batch}, {n}, {client})"))
                    .collect();
                let sql = format!("INSERT INTO k9 VALUES {}", values.join(", "));
                match db.simple_query(&sql).await {
                    Ok(_) => acked.lock().unwrap().push(batch),
                    Err(_) => break,
                }
            }
        }));
    }
    // Let the clients commit a good number of batches, then crash the server.
    for _ in 0..600 {
        if acked.lock().unwrap().len() >= 40 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    srv.kill9();
    for t in tasks {
        let _ = t.await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 40,
        "only {} batches were acknowledged",
        acked.len()
    );

    let srv = TestServer::start_in(&warehouse);
    let db = srv.connect().await;
    let rows = db
        .query("SELECT batch, count(*) FROM k9 GROUP BY batch", &[])
        .await
        .unwrap();
    let mut present = std::collections::HashMap::new();
    for r in &rows {
        let batch: i32 = r.get(0);
        let n: i64 = r.get(1);
        assert_eq!(n, ROWS as i64, "batch {batch} is there in part or twice");
        present.insert(batch, n);
    }
    for b in &acked {
        assert!(present.contains_key(b), "acknowledged batch {b} is lost");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_sessions_creating_one_table_make_one_table() {
    let srv = TestServer::start();
    for round in 0..3 {
        let sql = format!(
            "CREATE TABLE race{round} AS SELECT CAST(value AS INT) AS id FROM generate_series(1, 50000)"
        );
        let a = srv.connect().await;
        let b = srv.connect().await;
        let (ra, rb) = tokio::join!(a.batch_execute(&sql), b.batch_execute(&sql));
        let failures: Vec<String> = [ra, rb]
            .into_iter()
            .filter_map(|r| r.err())
            .map(|e| e.code().map(|c| c.code().to_string()).unwrap_or_default())
            .collect();
        assert_eq!(failures, vec!["42P07".to_string()], "round {round}");
        let row = a
            .query_one(&format!("SELECT count(*) FROM race{round}"), &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 50_000);
        // One version: the loser did not commit on top of the winner.
        assert!(!srv
            .warehouse
            .join(format!(
                "default/race{round}/_delta_log/00000000000000000001.json"
            ))
            .exists());
    }
}

/// A write the storage has no room for fails with 53100 and leaves no new
/// version; the server goes on answering reads, and a write that fits
/// succeeds afterwards. A file-size limit (`ulimit -f`, with SIGXFSZ
/// ignored so the write fails with EFBIG) stands in for a full disk:
/// mounting a small filesystem needs privileges a test cannot count on.
#[tokio::test]
async fn a_write_with_no_room_fails_with_disk_full_and_leaves_no_version() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("warehouse");
    let server = TestServer::start_under(&warehouse, "trap '' XFSZ; ulimit -f 256");
    let db = server.connect().await;
    db.batch_execute("CREATE TABLE roomy (id BIGINT, s STRING)")
        .await
        .unwrap();
    db.batch_execute("INSERT INTO roomy VALUES (1, 'a')")
        .await
        .unwrap();
    let before = server.delta_versions("default", "roomy");

    // Some megabytes of Parquet: past the 256 KiB limit.
    let err = db
        .batch_execute(
            "INSERT INTO roomy SELECT id, sha2(CAST(id AS STRING), 256) FROM range(0, 300000) r(id)",
        )
        .await
        .unwrap_err();
    let db_err = err.as_db_error().expect("an ErrorResponse");
    assert_eq!(db_err.code().code(), "53100", "{db_err:?}");
    assert_eq!(server.delta_versions("default", "roomy"), before);

    let rows = texts(&db, "SELECT id, s FROM roomy ORDER BY id").await;
    assert_eq!(rows, vec![vec![Some("1".into()), Some("a".into())]]);
    db.batch_execute("INSERT INTO roomy VALUES (2, 'b')")
        .await
        .unwrap();
    assert_eq!(
        texts(&db, "SELECT count(*) FROM roomy").await,
        vec![vec![Some("2".into())]]
    );
}
