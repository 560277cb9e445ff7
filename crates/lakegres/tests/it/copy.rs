//! Postgres COPY over the wire (tokio-postgres uses the extended protocol;
//! psql and psycopg are tested from Python): one version per COPY, bad rows
//! named by line, and a COPY cut off mid-stream commits nothing.

use bytes::Bytes;
use futures::{SinkExt, TryStreamExt};

use crate::common::TestServer;

fn csv_rows(from: usize, to: usize) -> String {
    (from..to)
        .map(|i| format!("{i},name {i},{}.5\n", i % 100))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_from_stdin_is_one_commit_and_copy_to_returns_the_rows() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE c (id BIGINT, name STRING, v DOUBLE)")
        .await
        .unwrap();
    let sink = db
        .copy_in("COPY c FROM STDIN WITH (FORMAT csv)")
        .await
        .unwrap();
    let mut sink = Box::pin(sink);
    // 200k rows in uneven chunks that cut lines in two.
    let data = csv_rows(0, 200_000);
    for chunk in data.as_bytes().chunks(65_521) {
        sink.send(Bytes::copy_from_slice(chunk)).await.unwrap();
    }
    let rows = sink.as_mut().finish().await.unwrap();
    assert_eq!(rows, 200_000);
    assert_eq!(srv.delta_versions("default", "c"), vec![0, 1]);
    let row = db
        .query_one("SELECT count(*), sum(id), max(name) FROM c", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 200_000);
    assert_eq!(row.get::<_, i64>(1), (0..200_000i64).sum::<i64>());
    assert_eq!(row.get::<_, String>(2), "name 99999");

    let out = db
        .copy_out("COPY (SELECT id, name, v FROM c WHERE id < 3 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)")
        .await
        .unwrap();
    let chunks: Vec<Bytes> = out.try_collect().await.unwrap();
    let text: String = chunks
        .iter()
        .map(|c| String::from_utf8_lossy(c).to_string())
        .collect();
    assert_eq!(
        text,
        "id,name,v\n0,name 0,0.5\n1,name 1,1.5\n2,name 2,2.5\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_row_names_its_line_and_nothing_is_committed() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE bad (id BIGINT, name STRING, v DOUBLE)")
        .await
        .unwrap();
    let sink = db
        .copy_in("COPY bad FROM STDIN WITH (FORMAT csv, HEADER)")
        .await
        .unwrap();
    let mut sink = Box::pin(sink);
    let mut data = String::from("id,name,v\n");
    data.push_str(&csv_rows(0, 30_000));
    data.push_str("oops,name,1\n");
    data.push_str(&csv_rows(30_000, 40_000));
    sink.send(Bytes::from(data)).await.unwrap();
    let err = sink.as_mut().finish().await.unwrap_err();
    let db_err = err.as_db_error().unwrap();
    assert_eq!(db_err.code().code(), "22P02");
    assert!(
        db_err.message().contains("line 30002") && db_err.message().contains("\"id\""),
        "{}",
        db_err.message()
    );
    assert_eq!(srv.delta_versions("default", "bad"), vec![0]);
    let n: i64 = db
        .query_one("SELECT count(*) FROM bad", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_copy_commits_nothing() {
    let srv = TestServer::start();
    let setup = srv.connect().await;
    setup
        .batch_execute("CREATE TABLE cut (id BIGINT, name STRING, v DOUBLE)")
        .await
        .unwrap();
    let (client, connection) = tokio_postgres::connect(&srv.conn_str(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let conn_task = tokio::spawn(connection);
    let sink = client
        .copy_in("COPY cut FROM STDIN WITH (FORMAT csv)")
        .await
        .unwrap();
    let mut sink = Box::pin(sink);
    sink.send(Bytes::from(csv_rows(0, 50_000))).await.unwrap();
    sink.flush().await.unwrap();
    // The socket goes away without CopyDone or CopyFail.
    conn_task.abort();
    drop(sink);
    drop(client);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(srv.delta_versions("default", "cut"), vec![0]);
    let n: i64 = setup
        .query_one("SELECT count(*) FROM cut", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}

#[tokio::test]
async fn server_files_and_programs_are_refused() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE f (id INT)").await.unwrap();
    for sql in [
        "COPY f FROM '/etc/passwd'",
        "COPY f TO '/tmp/out.csv'",
        "COPY f FROM PROGRAM 'cat /etc/passwd'",
    ] {
        let err = db.batch_execute(sql).await.unwrap_err();
        assert_eq!(err.code().unwrap().code(), "42501", "{sql}");
    }
    // Text format with escapes, and the end-of-data marker.
    let sink = db.copy_in("COPY f FROM STDIN").await.unwrap();
    let mut sink = Box::pin(sink);
    sink.send(Bytes::from_static(b"1\n\\N\n2\n\\.\n"))
        .await
        .unwrap();
    assert_eq!(sink.as_mut().finish().await.unwrap(), 3);
    let out = db.copy_out("COPY f TO STDOUT").await.unwrap();
    let text: Vec<Bytes> = out.try_collect().await.unwrap();
    let mut lines: Vec<String> = String::from_utf8_lossy(&text.concat())
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(lines, vec!["1", "2", "\\N"]);
}
