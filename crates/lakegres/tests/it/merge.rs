//! MERGE, UPDATE and DELETE as Delta commits: one version each with its
//! operation and metrics, file pruning, and conflicts between writers.

use crate::common::TestServer;

#[tokio::test]
async fn each_dml_statement_is_one_version_with_its_operation() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE ops (id INT, v STRING);
         INSERT INTO ops VALUES (1, 'a'), (2, 'b');
         CREATE TABLE ops_src (id INT, v STRING);
         INSERT INTO ops_src VALUES (2, 'B'), (3, 'C');",
    )
    .await
    .unwrap();
    db.batch_execute("UPDATE ops SET v = 'x' WHERE id = 1")
        .await
        .unwrap();
    db.batch_execute("DELETE FROM ops WHERE id = 1")
        .await
        .unwrap();
    db.batch_execute(
        "MERGE INTO ops t USING ops_src s ON t.id = s.id
         WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    )
    .await
    .unwrap();
    assert_eq!(srv.delta_versions("default", "ops"), vec![0, 1, 2, 3, 4]);
    let ops: Vec<String> = (1..=4)
        .map(|v| {
            srv.commit_info("ops", v)["operation"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ops, vec!["WRITE", "UPDATE", "DELETE", "MERGE"]);
    let merge = srv.commit_info("ops", 4);
    assert_eq!(merge["operationMetrics"]["num_target_rows_updated"], 1);
    assert_eq!(merge["operationMetrics"]["num_target_rows_inserted"], 1);

    // A failing MERGE leaves no version behind.
    let err = db
        .batch_execute(
            "MERGE INTO ops t USING (SELECT 2 AS id, 'dup' AS v UNION ALL SELECT 2, 'dup2') s ON t.id = s.id
             WHEN MATCHED THEN UPDATE SET v = s.v",
        )
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "21506");
    assert_eq!(srv.delta_versions("default", "ops"), vec![0, 1, 2, 3, 4]);
    let rows = db
        .query("SELECT id, v FROM ops ORDER BY id", &[])
        .await
        .unwrap();
    let got: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![(2, "B".to_string()), (3, "C".to_string())]);
}

#[tokio::test]
async fn a_merge_into_one_partition_rewrites_only_its_files() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE parts (id BIGINT, p BIGINT, v STRING) PARTITIONED BY (p);
         INSERT INTO parts SELECT value AS id, value % 100 AS p, 'v' AS v FROM generate_series(0, 9999);
         CREATE TABLE parts_src AS SELECT id, p, 'new' AS v FROM parts WHERE p = 7 AND id < 500;",
    )
    .await
    .unwrap();
    let files_before = std::fs::read_dir(srv.warehouse.join("default/parts"))
        .unwrap()
        .count();
    assert!(files_before >= 100);
    db.batch_execute(
        "MERGE INTO parts t USING parts_src s ON t.p = s.p AND t.id = s.id
         WHEN MATCHED THEN UPDATE SET v = s.v",
    )
    .await
    .unwrap();
    let merge = srv.commit_info("parts", 2);
    assert_eq!(merge["operation"], "MERGE");
    assert_eq!(merge["operationMetrics"]["num_target_files_removed"], 1);
    let n: i64 = db
        .query_one("SELECT count(*) FROM parts WHERE v = 'new'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 5);

    // DELETE on the partition column only drops that partition's file.
    db.batch_execute("DELETE FROM parts WHERE p = 3")
        .await
        .unwrap();
    let delete = srv.commit_info("parts", 3);
    assert_eq!(delete["operation"], "DELETE");
    assert_eq!(delete["operationMetrics"]["num_removed_files"], 1);
    assert_eq!(delete["operationMetrics"]["num_added_files"], 0);
}

/// Two writers race on the same rows: one commits, the other gets 40001 and
/// a retry succeeds. Writers on different partitions both commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_merges_conflict_only_on_overlapping_data() {
    let srv = TestServer::start();
    let setup = srv.connect().await;
    setup
        .batch_execute(
            "CREATE TABLE race (id BIGINT, p BIGINT, v BIGINT) PARTITIONED BY (p);
             INSERT INTO race SELECT value AS id, value % 4 AS p, 0 AS v FROM generate_series(0, 39999);",
        )
        .await
        .unwrap();
    let merge = |p: i64, v: i64| {
        format!(
            "MERGE INTO race t USING (SELECT id, p, {v} AS v FROM race WHERE p = {p}) s
             ON t.p = {p} AND t.p = s.p AND t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v"
        )
    };
    // Same partition, many tries at once: at least one conflict must show.
    let mut conflicts = 0;
    let mut successes = 0;
    for round in 0..5 {
        let a = srv.connect().await;
        let b = srv.connect().await;
        let (qa, qb) = (merge(1, 10 + round), merge(1, 20 + round));
        let (ra, rb) = tokio::join!(a.batch_execute(&qa), b.batch_execute(&qb));
        for r in [ra, rb] {
            match r {
                Ok(()) => successes += 1,
                Err(e) => {
                    assert_eq!(e.code().unwrap().code(), "40001", "{e:?}");
                    conflicts += 1;
                    // A retry succeeds.
                    a.batch_execute(&merge(1, 99)).await.unwrap();
                }
            }
        }
    }
    assert!(successes >= 5);
    assert!(conflicts >= 1, "no conflict in 5 rounds of racing merges");

    // Different partitions: both commit.
    let a = srv.connect().await;
    let b = srv.connect().await;
    let (qa, qb) = (merge(2, 7), merge(3, 8));
    let (ra, rb) = tokio::join!(a.batch_execute(&qa), b.batch_execute(&qb));
    ra.unwrap();
    rb.unwrap();
    let rows = setup
        .query(
            "SELECT p, min(v), max(v) FROM race WHERE p IN (2, 3) GROUP BY p ORDER BY p",
            &[],
        )
        .await
        .unwrap();
    let got: Vec<(i64, i64, i64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(got, vec![(2, 7, 7), (3, 8, 8)]);
}

/// A MERGE into a table without deletion vectors rewrites the files that
/// hold a row it changes, without those rows, and leaves the others; a
/// matched row no clause takes is copied as it was, and the commit names
/// the key range it read.
#[tokio::test]
async fn a_merge_rewrites_only_the_files_holding_rows_it_changes() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE cow (id BIGINT, v STRING);
         INSERT INTO cow SELECT value AS id, 'a' AS v FROM generate_series(1, 100);
         INSERT INTO cow SELECT value AS id, 'b' AS v FROM generate_series(101, 200);
         INSERT INTO cow SELECT value AS id, 'c' AS v FROM generate_series(201, 300);
         CREATE TABLE cow_src (id BIGINT, v STRING, take BOOLEAN);
         INSERT INTO cow_src VALUES (150, 'B150', true), (160, 'no', false),
                                    (170, NULL, true), (400, 'new', true);",
    )
    .await
    .unwrap();
    let before = srv.log_entry("cow", 2);
    let file_b = before
        .iter()
        .find_map(|a| a["add"]["path"].as_str())
        .unwrap()
        .to_string();
    db.batch_execute(
        "MERGE INTO cow t USING cow_src s ON t.id = s.id
         WHEN MATCHED AND s.take AND s.v IS NULL THEN DELETE
         WHEN MATCHED AND s.take THEN UPDATE SET v = s.v
         WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
    )
    .await
    .unwrap();
    assert_eq!(srv.delta_versions("default", "cow"), vec![0, 1, 2, 3, 4]);
    let log = srv.log_entry("cow", 4);
    let removed: Vec<&str> = log
        .iter()
        .filter_map(|a| a["remove"]["path"].as_str())
        .collect();
    assert_eq!(
        removed,
        vec![file_b.as_str()],
        "only the file of ids 101-200"
    );
    let info = srv.commit_info("cow", 4);
    assert_eq!(info["operation"], "MERGE");
    let metrics = &info["operationMetrics"];
    assert_eq!(metrics["num_target_rows_updated"], 1);
    assert_eq!(metrics["num_target_rows_deleted"], 1);
    assert_eq!(metrics["num_target_rows_inserted"], 1);
    assert_eq!(metrics["num_target_rows_copied"], 98);
    assert_eq!(metrics["num_target_files_removed"], 1);
    // The source's key range, as delta-rs' MERGE records it.
    let predicate = info["operationParameters"]["predicate"].as_str().unwrap();
    assert!(
        predicate.contains("150") && predicate.contains("400"),
        "{predicate}"
    );

    let rows = db
        .query(
            "SELECT v, count(*), min(id), max(id) FROM cow GROUP BY v ORDER BY v",
            &[],
        )
        .await
        .unwrap();
    let got: Vec<(String, i64, i64, i64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(
        got,
        vec![
            ("B150".to_string(), 1, 150, 150),
            ("a".to_string(), 100, 1, 100),
            ("b".to_string(), 98, 101, 200),
            ("c".to_string(), 100, 201, 300),
            ("new".to_string(), 1, 400, 400),
        ]
    );
    let gone: i64 = db
        .query_one("SELECT count(*) FROM cow WHERE id IN (150, 170)", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(gone, 1, "170 deleted, 150 updated in place of its old row");

    // Two source rows updating one target row fail the statement whole.
    let err = db
        .batch_execute(
            "MERGE INTO cow t USING (SELECT 250 AS id, 'x' AS v UNION ALL SELECT 250, 'y') s
             ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
        )
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "21506");
    // So do two that match it with no clause taking it, as Databricks has it.
    let err = db
        .batch_execute(
            "MERGE INTO cow t USING (SELECT 250 AS id, false AS take UNION ALL SELECT 250, false) s
             ON t.id = s.id WHEN MATCHED AND s.take THEN DELETE",
        )
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "21506");
    assert_eq!(srv.delta_versions("default", "cow"), vec![0, 1, 2, 3, 4]);

    // NOT MATCHED BY SOURCE reads every file and rewrites those it changes.
    db.batch_execute(
        "MERGE INTO cow t USING (SELECT 1 AS id) s ON t.id = s.id
         WHEN NOT MATCHED BY SOURCE AND t.id > 290 THEN DELETE",
    )
    .await
    .unwrap();
    let info = srv.commit_info("cow", 5);
    // 291-300 and 400: ids 201-300's file and the one the first MERGE wrote.
    assert_eq!(info["operationMetrics"]["num_target_rows_deleted"], 11);
    assert_eq!(info["operationMetrics"]["num_target_files_removed"], 2);
    let (n, max): (i64, i64) = db
        .query_one("SELECT count(*), max(id) FROM cow", &[])
        .await
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    assert_eq!((n, max), (289, 290));
}
