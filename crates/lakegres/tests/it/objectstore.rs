//! A warehouse on S3 (issue #9), against moto (`.venv/bin/moto_server`):
//! statements on an `s3://` warehouse, files read from `s3://` roots and
//! refused outside them, several servers sharing one warehouse, and the
//! start-up refusal of a store that ignores conditional PUT.
//!
//! Each test skips (with a note) when moto is not installed, unless
//! `LAKEGRES_REQUIRE_MOTO` is set, as `tests/run` does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{column, FaultProxy, Moto, TestServer};

fn code(e: &tokio_postgres::Error) -> String {
    e.code().map(|c| c.code().to_string()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_warehouse_holds_tables_and_reads_files_inside_its_roots() {
    let Some(moto) = Moto::start("lake") else {
        return;
    };
    moto.put("ingest/d/a.csv", b"id,name\n1,one\n2,two\n");
    moto.put("ingest/d/sub/b.csv", b"id,name\n3,three\n");
    moto.put("ingest/d/_SUCCESS", b"");
    moto.put("secret/s.csv", b"id,name\n9,nine\n");
    // Default roots: s3://lake/ingest/ (beside the warehouse) and the warehouse.
    let srv = TestServer::start_s3(&moto, "wh", &[]);
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE SCHEMA sales;
         CREATE TABLE sales.t (id INT, name STRING) PARTITIONED BY (name);
         INSERT INTO sales.t VALUES (0, 'zero');",
    )
    .await
    .unwrap();
    let loaded = db
        .query_one(
            "COPY INTO sales.t FROM 's3://lake/ingest/d' FILEFORMAT = CSV \
             FORMAT_OPTIONS ('header' = 'true', 'inferSchema' = 'true')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(loaded.get::<_, i64>(0), 3);
    // The record of loaded files is in the table's log: a re-run loads nothing.
    let again = db
        .query_one(
            "COPY INTO sales.t FROM 's3://lake/ingest/d' FILEFORMAT = CSV \
             FORMAT_OPTIONS ('header' = 'true')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(again.get::<_, i64>(0), 0);
    // A prefix with nothing under it does not exist (42704), for LIST and
    // COPY INTO alike.
    for missing in [
        "LIST 's3://lake/ingest/nothing'",
        "COPY INTO sales.t FROM 's3://lake/ingest/nothing' FILEFORMAT = CSV",
    ] {
        let err = db.batch_execute(missing).await.unwrap_err();
        assert_eq!(
            err.code().map(|c| c.code()),
            Some("42704"),
            "{missing}: {err:?}"
        );
    }
    let sum: i64 = db
        .query_one("SELECT sum(id)::BIGINT FROM sales.t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(sum, 6);
    // Relative paths start at the first root (s3://lake/ingest/).
    let rows = db
        .query(
            "SELECT name FROM read_files('d/sub', format => 'csv', header => true)",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let listed: Vec<(String, String)> = db
        .simple_query("LIST 's3://lake/ingest/d'")
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((r.get(0)?.to_string(), r.get(1)?.to_string()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            ("s3://lake/ingest/d/a.csv".to_string(), "a.csv".to_string()),
            ("s3://lake/ingest/d/sub/".to_string(), "sub/".to_string()),
        ]
    );
    for outside in [
        "s3://lake/secret/s.csv",
        "s3://lake/ingest/../secret/s.csv",
        "s3://other/ingest/d/a.csv",
        "/etc/passwd",
    ] {
        let err = db
            .query(
                &format!("SELECT * FROM read_files('{outside}', format => 'csv')"),
                &[],
            )
            .await
            .unwrap_err();
        assert_eq!(code(&err), "42501", "{outside}: {err:?}");
    }
    // The table is a Delta table in the bucket, its commits in _delta_log.
    let log = moto.keys("wh/sales/t/_delta_log/");
    assert!(
        log.iter().any(|k| k.ends_with("00000000000000000002.json")),
        "{log:?}"
    );
    // A second server on the same warehouse sees everything.
    let other = TestServer::start_s3(&moto, "wh", &[]);
    let db2 = other.connect().await;
    let n: i64 = db2
        .query_one("SELECT count(*) FROM sales.t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 4);
}

/// LIST of a prefix longer than one S3 LIST page (1,000 keys) is read a
/// page at a time: every entry once, folders and files in name order across
/// the pages, hidden names and the folder's own marker object left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_of_many_pages_is_listed_in_name_order() {
    let Some(moto) = Moto::start("lake") else {
        return;
    };
    let mut expected = Vec::new();
    for f in 0..2_100 {
        // Folders between the files, one on each page.
        if f % 700 == 350 {
            moto.put(&format!("ingest/many/{f:05}-dir/x.csv"), b"n\n1\n");
            expected.push(format!("{f:05}-dir/"));
        }
        moto.put(&format!("ingest/many/{f:05}.csv"), b"n\n1\n");
        expected.push(format!("{f:05}.csv"));
    }
    moto.put("ingest/many/", b"");
    moto.put("ingest/many/_SUCCESS", b"");
    moto.put("ingest/many/_delta_log/0.json", b"{}");
    expected.sort();
    let srv = TestServer::start_s3(&moto, "wh", &[]);
    let db = srv.connect().await;
    let names: Vec<String> = column(&db, "LIST 's3://lake/ingest/many'", 1).await;
    assert_eq!(names, expected);
    let row = db
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE name LIKE '%/') \
             FROM list_files('s3://lake/ingest/many')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (2_103, 3));
    // A path naming one object lists that object.
    let one = db
        .query_one("LIST 's3://lake/ingest/many/00007.csv'", &[])
        .await
        .unwrap();
    assert_eq!(
        (one.get::<_, String>(0), one.get::<_, String>(1)),
        (
            "s3://lake/ingest/many/00007.csv".to_string(),
            "00007.csv".to_string()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_on_one_server_is_seen_by_the_others_at_their_next_statement() {
    let Some(moto) = Moto::start("ddl") else {
        return;
    };
    let servers: Vec<TestServer> = (0..3)
        .map(|_| TestServer::start_s3(&moto, "wh", &[]))
        .collect();
    let mut dbs = Vec::new();
    for s in &servers {
        dbs.push(s.connect().await);
    }
    dbs[0]
        .batch_execute(
            "CREATE SCHEMA shared; CREATE TABLE shared.t (id INT); INSERT INTO shared.t VALUES (1)",
        )
        .await
        .unwrap();
    for db in &dbs[1..] {
        let n: i64 = db
            .query_one("SELECT count(*) FROM shared.t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 1);
    }
    dbs[1]
        .batch_execute("INSERT INTO shared.t VALUES (2)")
        .await
        .unwrap();
    let n: i64 = dbs[2]
        .query_one("SELECT count(*) FROM shared.t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
    // Dropped on one, gone on the others; created again with other columns,
    // the others read the new table, not a cached one.
    dbs[1].batch_execute("DROP TABLE shared.t").await.unwrap();
    let err = dbs[2]
        .query("SELECT * FROM shared.t", &[])
        .await
        .unwrap_err();
    assert_eq!(code(&err), "42P01", "{err:?}");
    dbs[2]
        .batch_execute("CREATE TABLE shared.t (name STRING); INSERT INTO shared.t VALUES ('x')")
        .await
        .unwrap();
    let name: String = dbs[0]
        .query_one("SELECT name FROM shared.t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(name, "x");
    dbs[0]
        .batch_execute("DROP SCHEMA shared CASCADE")
        .await
        .unwrap();
    let err = dbs[1]
        .batch_execute("CREATE TABLE shared.u (id INT)")
        .await
        .unwrap_err();
    assert_eq!(code(&err), "3F000", "{err:?}");
}

/// What the writers of the concurrency test had acknowledged.
#[derive(Default)]
struct Acked {
    /// (writer, seq) of every acknowledged append.
    appends: BTreeSet<(i64, i64)>,
    /// Acknowledged merges per key.
    merges: BTreeMap<i64, i64>,
    conflicts: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_on_three_servers_lose_and_duplicate_nothing() {
    let Some(moto) = Moto::start("multi") else {
        return;
    };
    let servers: Vec<TestServer> = (0..3)
        .map(|_| TestServer::start_s3(&moto, "wh", &[]))
        .collect();
    let setup = servers[0].connect().await;
    setup
        .batch_execute(
            "CREATE TABLE events (writer BIGINT, seq BIGINT);
             CREATE TABLE counters (k BIGINT, v BIGINT);",
        )
        .await
        .unwrap();
    let acked = Arc::new(Mutex::new(Acked::default()));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut tasks = Vec::new();
    for writer in 0..8i64 {
        let db = servers[writer as usize % 3].connect().await;
        let acked = Arc::clone(&acked);
        tasks.push(tokio::spawn(async move {
            let mut seq = 0i64;
            while Instant::now() < deadline {
                seq += 1;
                if writer % 2 == 0 {
                    // Blind appends: never a conflict.
                    let sql = format!("INSERT INTO events VALUES ({writer}, {seq})");
                    match db.batch_execute(&sql).await {
                        Ok(()) => {
                            acked.lock().unwrap().appends.insert((writer, seq));
                        }
                        Err(e) => panic!("append {writer}/{seq} failed: {e:?}"),
                    }
                } else {
                    // Read-modify-write of a few hot keys: conflicts are 40001.
                    let k = seq % 3;
                    let sql = format!(
                        "MERGE INTO counters c USING (SELECT {k} AS k) s ON c.k = s.k \
                         WHEN MATCHED THEN UPDATE SET v = c.v + 1 \
                         WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, 1)"
                    );
                    match db.batch_execute(&sql).await {
                        Ok(()) => {
                            *acked.lock().unwrap().merges.entry(k).or_default() += 1;
                        }
                        Err(e) if code(&e) == "40001" => {
                            acked.lock().unwrap().conflicts += 1;
                        }
                        Err(e) => panic!("merge on key {k} failed: {e:?}"),
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    // Read back through a server that did not write last, and a new one.
    let fresh = TestServer::start_s3(&moto, "wh", &[]);
    for db in [servers[2].connect().await, fresh.connect().await] {
        let rows = db
            .query("SELECT writer, seq FROM events", &[])
            .await
            .unwrap();
        let got: Vec<(i64, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let unique: BTreeSet<(i64, i64)> = got.iter().copied().collect();
        assert_eq!(got.len(), unique.len(), "an append landed twice");
        assert_eq!(
            unique, acked.appends,
            "appends lost or unacknowledged ones present"
        );
        let rows = db
            .query("SELECT k, v FROM counters ORDER BY k", &[])
            .await
            .unwrap();
        let got: Vec<(i64, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let keys: BTreeSet<i64> = got.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys.len(),
            got.len(),
            "a MERGE inserted a key twice: {got:?}"
        );
        let counted: BTreeMap<i64, i64> = got.into_iter().collect();
        assert_eq!(
            counted, acked.merges,
            "acknowledged merges and counters differ"
        );
    }
    assert!(!acked.appends.is_empty() && !acked.merges.is_empty());
    eprintln!(
        "three servers, 20 s: {} appends, {} merges, {} merge conflicts (40001)",
        acked.appends.len(),
        acked.merges.values().sum::<i64>(),
        acked.conflicts
    );
}

/// A store that accepts `If-None-Match: *` and ignores it (a proxy in front
/// of moto that drops the header) must not become a warehouse: two servers
/// would both write the same version and one commit would vanish.
#[test]
fn a_store_that_ignores_conditional_put_is_refused_at_startup() {
    let Some(moto) = Moto::start("nocond") else {
        return;
    };
    let Some(proxy) = FaultProxy::start(moto.port, &["--ignore-if-none-match"]) else {
        return;
    };
    let endpoint = proxy.endpoint();
    let started = TestServer::try_spawn(
        &[
            "--warehouse",
            "s3://nocond/wh",
            "--storage-endpoint",
            &endpoint,
            "--storage-allow-http",
            "true",
        ],
        &Moto::credentials(),
    );
    drop(proxy);
    let log = match started {
        Ok(_) => panic!("a server started on a store without conditional PUT"),
        Err(log) => log,
    };
    assert!(log.contains("conditional PUT"), "{log}");
    // Straight to moto, the same warehouse is fine.
    drop(TestServer::start_s3(&moto, "wh", &[]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_tables_live_in_a_root_and_outlive_drop_table() {
    let Some(moto) = Moto::start("ext") else {
        return;
    };
    let srv = TestServer::start_s3(&moto, "wh", &[]);
    let other = TestServer::start_s3(&moto, "wh", &[]);
    let (db, db2) = (srv.connect().await, other.connect().await);
    db.batch_execute(
        "CREATE TABLE landing (id INT) LOCATION 's3://ext/ingest/landing';
         INSERT INTO landing VALUES (1), (2);",
    )
    .await
    .unwrap();
    // The Delta table is at the location; the warehouse holds only a marker.
    let log = moto.keys("ingest/landing/_delta_log/");
    assert!(
        log.iter().any(|k| k.ends_with("00000000000000000001.json")),
        "{log:?}"
    );
    assert_eq!(
        moto.keys("wh/default/landing/"),
        vec!["wh/default/landing/_lakegres_external.json"]
    );
    let n: i64 = db2
        .query_one("SELECT count(*) FROM landing", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
    db2.batch_execute("DROP TABLE landing").await.unwrap();
    assert!(!moto.keys("ingest/landing/_delta_log/").is_empty());
    for (location, state) in [
        ("s3://ext/elsewhere/t", "42501"),
        ("s3://ext/wh/default/t2", "42501"),
    ] {
        let err = db
            .batch_execute(&format!("CREATE TABLE t2 (id INT) LOCATION '{location}'"))
            .await
            .unwrap_err();
        assert_eq!(code(&err), state, "{location}: {err:?}");
    }
}

/// The server's object-store requests so far, by kind, from `/metrics` on
/// its HTTP port.
async fn store_requests(http: u16) -> BTreeMap<String, u64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", http))
        .await
        .unwrap();
    conn.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).await.unwrap();
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("lakegres_object_store_requests_total{op=\"")?;
            let (op, n) = rest.split_once("\"} ")?;
            Some((op.to_string(), n.trim().parse().ok()?))
        })
        .collect()
}

/// A single-row INSERT on S3 is its table's freshness listing, its data
/// file, its commit entry and the listing that brings the table to the new
/// version: the entry it wrote is not read back (the kernel's reads of it
/// are answered from memory), and no listing comes before its commit.
#[tokio::test]
async fn a_single_row_insert_on_s3_reads_back_nothing_it_wrote() {
    let Some(moto) = Moto::start("requests") else {
        return;
    };
    let http = crate::common::free_port();
    let http_listen = format!("127.0.0.1:{http}");
    let srv = TestServer::start_s3(&moto, "wh", &["--http-listen", &http_listen]);
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE t (id INT, name STRING); INSERT INTO t VALUES (1, 'a')")
        .await
        .unwrap();
    let before = store_requests(http).await;
    db.batch_execute("INSERT INTO t VALUES (2, 'b')")
        .await
        .unwrap();
    let after = store_requests(http).await;
    let made =
        |op: &str| after.get(op).copied().unwrap_or(0) - before.get(op).copied().unwrap_or(0);
    assert_eq!(
        (made("get"), made("head"), made("put"), made("list")),
        (0, 0, 2, 2),
        "{before:?} -> {after:?}"
    );
    // What it wrote reads back whole, here and on another server.
    let other = TestServer::start_s3(&moto, "wh", &[]);
    for db in [&db, &other.connect().await] {
        let ids: Vec<i32> = column(db, "SELECT id FROM t ORDER BY id", 0).await;
        assert_eq!(ids, vec![1, 2]);
    }
}
