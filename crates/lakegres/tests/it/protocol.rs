//! The extended protocol as tokio-postgres speaks it: parameters, binary
//! results, prepared statements, portals with row limits.

use crate::common::TestServer;

#[tokio::test]
async fn parameters_are_typed_from_the_plan_and_results_are_binary() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE p1 (id INT, name STRING, salary DOUBLE, day DATE);
         INSERT INTO p1 VALUES (1, 'a', 1.5, '2026-01-01'), (2, 'b', 2.5, '2026-01-02'), (3, 'c', 3.5, '2026-01-03');",
    )
    .await
    .unwrap();
    let rows = db
        .query(
            "SELECT id, name, salary FROM p1 WHERE id >= $1 ORDER BY id",
            &[&2i32],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].get::<_, i32>(0), 2);
    assert_eq!(rows[0].get::<_, String>(1), "b");
    assert_eq!(rows[1].get::<_, f64>(2), 3.5);

    // A prepared statement runs many times and re-reads the table each time.
    let stmt = db
        .prepare("SELECT count(*) FROM p1 WHERE name <> $1")
        .await
        .unwrap();
    let n: i64 = db.query_one(&stmt, &[&"a"]).await.unwrap().get(0);
    assert_eq!(n, 2);
    db.execute("INSERT INTO p1 VALUES (4, 'd', 4.5, '2026-01-04')", &[])
        .await
        .unwrap();
    let n: i64 = db.query_one(&stmt, &[&"a"]).await.unwrap().get(0);
    assert_eq!(n, 3);

    // INSERT with parameters; the command tag carries the row count.
    let inserted = db
        .execute("INSERT INTO p1 (id, name) VALUES ($1, $2)", &[&5i32, &"e"])
        .await
        .unwrap();
    assert_eq!(inserted, 1);
    let row = db
        .query_one("SELECT name FROM p1 WHERE id = $1", &[&5i32])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "e");
}

#[tokio::test]
async fn portals_return_rows_in_pieces() {
    let srv = TestServer::start();
    let mut db = srv.connect().await;
    db.batch_execute("CREATE TABLE p2 AS SELECT value AS v FROM generate_series(1, 1000)")
        .await
        .unwrap();
    let tx = db.transaction().await.unwrap();
    let portal = tx.bind("SELECT v FROM p2 ORDER BY v", &[]).await.unwrap();
    let first = tx.query_portal(&portal, 300).await.unwrap();
    assert_eq!(first.len(), 300);
    assert_eq!(first[0].get::<_, i64>(0), 1);
    let second = tx.query_portal(&portal, 800).await.unwrap();
    assert_eq!(second.len(), 700);
    assert_eq!(second[0].get::<_, i64>(0), 301);
    assert_eq!(second[699].get::<_, i64>(0), 1000);
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn errors_have_sqlstates_in_both_protocols() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    let err = db.query("SELECT * FROM nowhere", &[]).await.unwrap_err();
    assert_eq!(err.code().unwrap().code(), "42P01");
    let err = db.batch_execute("SELECT * FROM nowhere").await.unwrap_err();
    assert_eq!(err.code().unwrap().code(), "42P01");
    let err = db.query("SELEC 1", &[]).await.unwrap_err();
    assert_eq!(err.code().unwrap().code(), "42601");
    let db_err = err.as_db_error().unwrap();
    assert_eq!(
        db_err.position(),
        Some(&tokio_postgres::error::ErrorPosition::Original(1))
    );
    // The connection is still good.
    let one: i32 = db.query_one("SELECT 1::INT", &[]).await.unwrap().get(0);
    assert_eq!(one, 1);
}

#[tokio::test]
async fn settings_belong_to_one_session() {
    let srv = TestServer::start();
    let a = srv.connect().await;
    let b = srv.connect().await;
    a.batch_execute("SET TimeZone = 'Asia/Tokyo'")
        .await
        .unwrap();
    let tz = |rows: Vec<tokio_postgres::SimpleQueryMessage>| {
        rows.into_iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        tz(a.simple_query("SHOW TimeZone").await.unwrap()),
        "Asia/Tokyo"
    );
    assert_eq!(tz(b.simple_query("SHOW TimeZone").await.unwrap()), "UTC");
}

#[tokio::test]
async fn several_statements_in_one_query_stop_at_the_first_error() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    let err = db
        .batch_execute(
            "CREATE TABLE m1 (a INT); INSERT INTO m1 VALUES (1); SELECT * FROM nope; INSERT INTO m1 VALUES (2);",
        )
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "42P01");
    let n: i64 = db
        .query_one("SELECT count(*) FROM m1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    assert_eq!(srv.delta_versions("default", "m1"), vec![0, 1]);
}

#[tokio::test]
async fn a_cancel_request_stops_a_running_statement() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    let cancel = db.cancel_token();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let canceller_done = std::sync::Arc::clone(&done);
    // A cancel that arrives before the statement runs is dropped (as in
    // Postgres), so keep asking until the statement has ended.
    let canceller = tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            if canceller_done.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            cancel.cancel_query(tokio_postgres::NoTls).await.unwrap();
        }
    });
    let started = std::time::Instant::now();
    // Counting 10^11 generated rows would run for many minutes.
    let err = db
        .query("SELECT count(*) FROM generate_series(1, 100000000000)", &[])
        .await
        .unwrap_err();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    canceller.await.unwrap();
    assert_eq!(err.code().unwrap().code(), "57014");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    // A cancel request still in flight may hit the next statement; ask again.
    let mut one = db.query_one("SELECT 1", &[]).await;
    if one.is_err() {
        one = db.query_one("SELECT 1", &[]).await;
    }
    assert_eq!(one.unwrap().get::<_, i32>(0), 1);
}

#[tokio::test]
async fn a_cancel_request_between_statements_cancels_nothing() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    // Statements over both protocols before the request: the connection
    // keeps its cancel receiver from one statement to the next.
    let one: i32 = db.query_one("SELECT 1", &[]).await.unwrap().get(0);
    assert_eq!(one, 1);
    db.simple_query("SELECT 1").await.unwrap();
    db.cancel_token()
        .cancel_query(tokio_postgres::NoTls)
        .await
        .unwrap();
    // The request is served on a connection of its own; let it land.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    for n in 2..5 {
        let got: i32 = db
            .query_one(&format!("SELECT {n}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(got, n);
        db.simple_query("SELECT 1").await.unwrap();
    }
}

/// A frontend message: its type byte, then its length and body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// The type bytes of the backend messages in `bytes`.
fn kinds(bytes: &[u8]) -> Vec<char> {
    let mut kinds = Vec::new();
    let mut at = 0;
    while at + 5 <= bytes.len() {
        kinds.push(bytes[at] as char);
        let len = i32::from_be_bytes([bytes[at + 1], bytes[at + 2], bytes[at + 3], bytes[at + 4]]);
        at += 1 + len as usize;
    }
    kinds
}

/// Reads until a ReadyForQuery ends what was read.
async fn read_until_ready(s: &mut tokio::net::TcpStream) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    while kinds(&got).last() != Some(&'Z') {
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), s.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        assert!(n > 0, "the server closed the connection");
        got.extend_from_slice(&buf[..n]);
    }
    got
}

#[tokio::test]
async fn an_extended_query_is_answered_at_its_sync() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let srv = TestServer::start();
    let mut s = crate::common::raw_session(srv.addr, "tester", "lakegres").await;
    read_until_ready(&mut s).await;

    let mut prepare = message(b'P', b"q\0SELECT 41 + 1 AS x\0\0\0");
    prepare.extend(message(b'D', b"Sq\0"));
    prepare.extend(message(b'S', b""));
    s.write_all(&prepare).await.unwrap();
    assert_eq!(kinds(&read_until_ready(&mut s).await), ['1', 't', 'T', 'Z']);

    // Bind, Describe and Execute of a portal: nothing is sent before the
    // Sync (as Postgres buffers its answers), then all of it at once.
    let mut run = message(b'B', b"\0q\0\0\0\0\0\0\0");
    run.extend(message(b'D', b"P\0"));
    run.extend(message(b'E', b"\0\0\0\0\0"));
    s.write_all(&run).await.unwrap();
    let mut buf = [0u8; 64];
    let early = tokio::time::timeout(std::time::Duration::from_millis(300), s.read(&mut buf)).await;
    assert!(early.is_err(), "answered before the Sync: {early:?}");
    s.write_all(&message(b'S', b"")).await.unwrap();
    assert_eq!(
        kinds(&read_until_ready(&mut s).await),
        ['2', 'T', 'D', 'C', 'Z']
    );
}

/// A query that reads nothing is answered again from what the session
/// kept: its rows when few, its plan when many (all of them each time),
/// and neither once the session's state changes.
#[tokio::test]
async fn a_query_that_reads_nothing_gives_the_same_rows_each_time() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    for _ in 0..3 {
        let v: i32 = db.query_one("SELECT 1 + 2", &[]).await.unwrap().get(0);
        assert_eq!(v, 3);
    }
    // About 240 KiB of Arrow memory: more than a session keeps of a result.
    for _ in 0..3 {
        let rows = db
            .query("SELECT explode(sequence(1, 30000)) AS x", &[])
            .await
            .unwrap();
        let xs: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(xs.len(), 30_000);
        assert_eq!((xs[0], xs[29_999]), (1, 30_000));
    }
    db.batch_execute("DECLARE VARIABLE kept_v INT DEFAULT 1")
        .await
        .unwrap();
    assert_eq!(kept_v(&db).await, "1");
    assert_eq!(kept_v(&db).await, "1");
    db.batch_execute("SET VAR kept_v = 2").await.unwrap();
    assert_eq!(kept_v(&db).await, "2");
}

/// `SELECT kept_v` over the simple protocol, as text.
async fn kept_v(db: &tokio_postgres::Client) -> String {
    let messages = db.simple_query("SELECT kept_v").await.unwrap();
    let rows: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(rows.len(), 1, "{messages:?}");
    rows[0].clone()
}
