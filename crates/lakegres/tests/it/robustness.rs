//! Bad input and rude clients do not hurt other sessions.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::TestServer;

/// A raw socket that has sent a protocol 3.0 startup message.
async fn started_session(srv: &TestServer) -> tokio::net::TcpStream {
    crate::common::raw_session(srv.addr, "x", "y").await
}

#[tokio::test]
async fn garbage_on_the_socket_leaves_the_server_serving() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    for garbage in [
        &b"\x00\x00\x00\x08\x04\xd2\x16\x2fGARBAGE"[..],
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &[0xffu8; 64][..],
        &b"\x00\x00\x00\x03"[..],
    ] {
        let mut s = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
        let _ = s.write_all(garbage).await;
        let mut buf = [0u8; 256];
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await;
    }
    // A started session that then sends an unknown message type.
    let mut s = started_session(&srv).await;
    s.write_all(b"Z\x00\x00\x00\x04garbage").await.unwrap();
    let mut buf = [0u8; 1024];
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await;
    drop(s);

    let n: i64 = db
        .query_one("SELECT count(*) FROM (VALUES (1), (2)) t(x)", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
    let other = srv.connect().await;
    other.batch_execute("SELECT 1").await.unwrap();
}

#[tokio::test]
async fn a_client_that_leaves_mid_stream_does_not_hurt_others() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE big AS SELECT value AS v, 'padding padding padding' AS s FROM generate_series(1, 300000)")
        .await
        .unwrap();
    for _ in 0..3 {
        let mut s = started_session(&srv).await;
        let q = b"SELECT * FROM big\0";
        let mut msg = vec![b'Q'];
        msg.extend_from_slice(&((4 + q.len()) as i32).to_be_bytes());
        msg.extend_from_slice(q);
        s.write_all(&msg).await.unwrap();
        let mut buf = vec![0u8; 65536];
        let _ = s.read(&mut buf).await;
        drop(s);
    }
    let n: i64 = db
        .query_one("SELECT count(*) FROM big", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 300000);
}
