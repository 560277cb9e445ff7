//! SHOW CREATE TABLE run again, OPTIMIZE beside concurrent writers, and
//! VACUUM beside a reader, over the wire.

use crate::common::{texts, TestServer};

#[tokio::test]
async fn show_create_table_recreates_the_same_table() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE sct (id BIGINT NOT NULL COMMENT 'the key', `my name` STRING COMMENT 'it''s',
                           amount DECIMAL(12,2), tags ARRAY<STRING>, day DATE)
         USING DELTA PARTITIONED BY (day) COMMENT 'a ''quoted'' table'
         TBLPROPERTIES ('delta.appendOnly' = 'true', 'team' = 'data')",
    )
    .await
    .unwrap();
    let create = texts(&db, "SHOW CREATE TABLE sct").await;
    let statement = create[0][0].clone().unwrap();
    assert_eq!(
        statement,
        "CREATE TABLE lakegres.default.sct (\n  id BIGINT NOT NULL COMMENT 'the key',\n  \
         `my name` STRING COMMENT 'it''s',\n  amount DECIMAL(12,2),\n  tags ARRAY<STRING>,\n  \
         day DATE)\nUSING delta\nPARTITIONED BY (day)\nCOMMENT 'a ''quoted'' table'\n\
         TBLPROPERTIES (\n  'delta.appendOnly' = 'true',\n  'team' = 'data')\n"
    );
    let describe = texts(&db, "DESCRIBE TABLE sct").await;
    let properties = texts(&db, "SHOW TBLPROPERTIES sct").await;
    let detail = texts(&db, "DESCRIBE DETAIL sct").await;
    db.batch_execute("DROP TABLE sct").await.unwrap();
    db.batch_execute(&statement).await.unwrap();
    assert_eq!(texts(&db, "DESCRIBE TABLE sct").await, describe);
    assert_eq!(texts(&db, "SHOW TBLPROPERTIES sct").await, properties);
    assert_eq!(texts(&db, "SHOW CREATE TABLE sct").await, create);
    let again = texts(&db, "DESCRIBE DETAIL sct").await;
    // Same description, partitioning, properties, protocol; a new id.
    for column in [3, 7, 11, 12, 13, 14] {
        assert_eq!(again[0][column], detail[0][column], "column {column}");
    }
    assert_ne!(again[0][1], detail[0][1]);
}

#[tokio::test]
async fn optimize_beside_concurrent_appends_loses_no_row() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE oc (id INT)").await.unwrap();
    for i in 0..30 {
        db.batch_execute(&format!("INSERT INTO oc VALUES ({i})"))
            .await
            .unwrap();
    }
    let writer = srv.connect().await;
    let appends = async {
        for i in 30..50 {
            writer
                .batch_execute(&format!("INSERT INTO oc VALUES ({i})"))
                .await
                .unwrap();
        }
    };
    let optimize = async { texts(&db, "OPTIMIZE oc").await };
    let ((), optimized) = tokio::join!(appends, optimize);
    // It compacts the 30 files there before it, and any append that
    // committed before it read the table (the two race).
    let metrics = optimized[0][1].as_deref().unwrap();
    let removed: u64 = metrics
        .split_once("\"numFilesRemoved\":")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!((30..=50).contains(&removed), "{metrics}");
    let count = texts(&db, "SELECT count(*), sum(id) FROM oc").await;
    assert_eq!(
        count,
        vec![vec![Some("50".to_string()), Some("1225".to_string())]]
    );
    // 1 CREATE + 50 INSERTs + 1 OPTIMIZE, none lost.
    assert_eq!(srv.delta_versions("default", "oc").len(), 52);
}

#[tokio::test]
async fn vacuum_while_another_connection_reads() {
    let srv = TestServer::start();
    let reader = srv.connect().await;
    let admin = srv.connect().await;
    admin
        .batch_execute("CREATE TABLE vr (id INT)")
        .await
        .unwrap();
    for i in 1..=5 {
        admin
            .batch_execute(&format!("INSERT INTO vr VALUES ({i})"))
            .await
            .unwrap();
    }
    // The reader has a cursor open over the five small files …
    reader
        .batch_execute("BEGIN; DECLARE c CURSOR FOR SELECT id FROM vr ORDER BY id")
        .await
        .unwrap();
    let first = texts(&reader, "FETCH 1 FROM c").await;
    assert_eq!(first, vec![vec![Some("1".to_string())]]);
    // … when they are compacted away and VACUUM runs with the table's
    // retention: they are younger than it, so nothing is deleted.
    admin.batch_execute("OPTIMIZE vr").await.unwrap();
    assert_eq!(srv.data_files("default", "vr"), 6);
    let vacuumed = texts(&admin, "VACUUM vr").await;
    assert_eq!(vacuumed.len(), 1);
    assert_eq!(srv.data_files("default", "vr"), 6);
    // A retention shorter than the table's is refused (22023) while the
    // check is on, and deletes nothing.
    let err = admin
        .batch_execute("VACUUM vr RETAIN 0 HOURS")
        .await
        .unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("22023"));
    assert_eq!(srv.data_files("default", "vr"), 6);
    let rest = texts(&reader, "FETCH ALL FROM c").await;
    assert_eq!(
        rest,
        (2..=5)
            .map(|i| vec![Some(i.to_string())])
            .collect::<Vec<_>>()
    );
    reader.batch_execute("COMMIT").await.unwrap();
    // No VACUUM commit: it deleted nothing.
    assert_eq!(srv.delta_versions("default", "vr").len(), 7);
}
