//! How analytic scans read Delta tables: files skipped by the log's
//! statistics and row groups by Parquet's, a filter kept above the scan
//! unless the session pushes it into the decoder, the statistics join
//! planning sees, and aggregates never answered from the log's (possibly
//! truncated) bounds.

use crate::common::{detail, texts, TestServer};

/// The rows of `sql`, a line each, columns joined by `|`.
async fn text(db: &tokio_postgres::Client, sql: &str) -> String {
    texts(db, sql)
        .await
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".to_string()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What follows the first `marker` in `plan` (nothing when it is absent).
fn after<'a>(plan: &'a str, marker: &str) -> &'a str {
    plan.split_once(marker).map_or("", |(_, rest)| rest)
}

/// Three files of 100 rows each, ids 0..300 in order.
async fn three_files(db: &tokio_postgres::Client) {
    db.batch_execute("CREATE TABLE ev (id BIGINT, name STRING, amount DECIMAL(12,2))")
        .await
        .unwrap();
    for start in [0, 100, 200] {
        db.batch_execute(&format!(
            "INSERT INTO ev SELECT n, concat('name_', n), n * 1.5 \
             FROM (SELECT * FROM range({start}, {})) AS r(n)",
            start + 100
        ))
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn a_filter_prunes_files_and_stays_above_the_scan() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    three_files(&db).await;
    let query = "SELECT count(*), sum(amount) FROM ev WHERE id BETWEEN 150 AND 160";
    assert_eq!(text(&db, query).await, "11|2557.50");

    let plan = text(&db, &format!("EXPLAIN ANALYZE {query}")).await;
    // The log's min/max leave one file of three.
    assert!(plan.contains("count_files_scanned=1"), "{plan}");
    // Row filtering is DataFusion's FilterExec (pushdown_filters is off by
    // default); the predicate still reaches the Parquet reader for pruning.
    assert!(plan.contains("FilterExec: id@"), "{plan}");
    assert!(plan.contains("pruning_predicate="), "{plan}");
    // Each conjunct once in the scan's predicate: the provider put it there,
    // and DataFusion's own pushdown through the Delta scan does not add it
    // again.
    let predicate = after(&plan, ", predicate=");
    let predicate = predicate
        .split(", pruning_predicate=")
        .next()
        .unwrap_or_default();
    assert_eq!(predicate, "id@0 >= 150 AND id@0 <= 160", "{plan}");

    // Pushed into the decoder when the session asks: no FilterExec, the
    // Parquet reader counts the rows it dropped, same answer.
    db.batch_execute("SET datafusion.execution.parquet.pushdown_filters = true")
        .await
        .unwrap();
    assert_eq!(text(&db, query).await, "11|2557.50");
    let plan = text(&db, &format!("EXPLAIN ANALYZE {query}")).await;
    assert!(!plan.contains("FilterExec"), "{plan}");
    assert!(plan.contains("pushdown_rows_pruned=89"), "{plan}");
}

#[tokio::test]
async fn scans_carry_row_counts_widths_and_column_bounds() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    three_files(&db).await;
    db.batch_execute(
        "SET datafusion.explain.show_statistics = true; \
         SET datafusion.explain.physical_plan_only = true",
    )
    .await
    .unwrap();
    let plan = text(&db, "EXPLAIN SELECT id FROM ev").await;
    let scan = plan
        .lines()
        .find(|l| l.contains("DeltaScanExec"))
        .unwrap_or_else(|| panic!("{plan}"));
    // 300 BIGINTs: 2,400 bytes, not the files' size; the bounds from the
    // log, inexact.
    assert!(scan.contains("Rows=Exact(300)"), "{scan}");
    assert!(scan.contains("Bytes=Exact(2400)"), "{scan}");
    assert!(scan.contains("Min=Inexact(Int64(0))"), "{scan}");
    assert!(scan.contains("Max=Inexact(Int64(299))"), "{scan}");

    // A string column has no fixed width: no byte figure (as DataFusion's
    // own Parquet scan), so join planning compares rows.
    let plan = text(&db, "EXPLAIN SELECT id, name FROM ev").await;
    let scan = plan.lines().find(|l| l.contains("DeltaScanExec")).unwrap();
    assert!(scan.contains("Bytes=Absent"), "{scan}");
}

#[tokio::test]
async fn a_scan_planned_again_reads_what_its_snapshot_holds() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    three_files(&db).await;
    let query = "SELECT count(*), sum(amount) FROM ev WHERE id BETWEEN 150 AND 160";
    // The second plan of the same scan comes from the first's replay of
    // the log: same rows, and metrics of its own (not added to the first's).
    for _ in 0..2 {
        assert_eq!(text(&db, query).await, "11|2557.50");
        let plan = text(&db, &format!("EXPLAIN ANALYZE {query}")).await;
        let scanned: String = after(&plan, "count_files_scanned=")
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        assert_eq!(scanned, "1", "{plan}");
    }
    // A new version is a new snapshot: its file is read.
    db.batch_execute("INSERT INTO ev VALUES (155, 'new', 1.00)")
        .await
        .unwrap();
    assert_eq!(text(&db, query).await, "12|2558.50");
    let before = "SELECT count(*), sum(amount) FROM ev VERSION AS OF 3 \
                  WHERE id BETWEEN 150 AND 160";
    assert_eq!(text(&db, before).await, "11|2557.50");
    // The same name at version 0 again, other rows.
    db.batch_execute(
        "DROP TABLE ev; CREATE TABLE ev (id BIGINT, name STRING, amount DECIMAL(12,2)); \
         INSERT INTO ev VALUES (150, 'again', 7.00)",
    )
    .await
    .unwrap();
    assert_eq!(text(&db, query).await, "1|7.00");
}

#[tokio::test]
async fn min_and_max_are_never_answered_from_the_log() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    // The log keeps timestamps to the millisecond: the answer must come
    // from the data.
    db.batch_execute(
        "CREATE TABLE ts (t TIMESTAMP); \
         INSERT INTO ts VALUES (TIMESTAMP '2026-01-01 10:00:00.123456'), \
                               (TIMESTAMP '2026-01-01 09:00:00.000001')",
    )
    .await
    .unwrap();
    assert_eq!(
        text(&db, "SELECT min(t), max(t) FROM ts").await,
        "2026-01-01 09:00:00.000001+00|2026-01-01 10:00:00.123456+00"
    );
}

#[tokio::test]
async fn not_in_over_keys_the_log_proves_null_free_is_a_plain_anti_join() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE orders_ni AS SELECT id, id % 7 AS cust FROM range(0, 50) AS r(id); \
         CREATE TABLE banned (cust BIGINT); \
         INSERT INTO banned VALUES (1), (2)",
    )
    .await
    .unwrap();
    let query = "SELECT count(*) FROM orders_ni WHERE cust NOT IN (SELECT cust FROM banned)";
    let plan = "EXPLAIN SELECT count(*) FROM orders_ni WHERE cust NOT IN (SELECT cust FROM banned)";
    db.batch_execute("SET datafusion.explain.physical_plan_only = true")
        .await
        .unwrap();
    // Nullable columns (CTAS makes every column nullable), no NULL in any
    // file: the join runs without NOT IN's null handling.
    assert_eq!(text(&db, query).await, "36");
    let explained = text(&db, plan).await;
    // (Then free to build on the small side: RightAnti.)
    assert!(explained.contains("Anti"), "{explained}");
    assert!(!explained.contains("null_aware"), "{explained}");

    // A NULL in the subquery's file: no row can be NOT IN it.
    db.batch_execute("INSERT INTO banned VALUES (NULL)")
        .await
        .unwrap();
    assert_eq!(text(&db, query).await, "0");
    let explained = text(&db, plan).await;
    assert!(explained.contains("null_aware"), "{explained}");

    // A NULL on the outer side only: that row is not NOT IN a non-empty set.
    db.batch_execute(
        "DELETE FROM banned WHERE cust IS NULL; INSERT INTO orders_ni VALUES (100, NULL)",
    )
    .await
    .unwrap();
    assert_eq!(text(&db, query).await, "36");
    let explained = text(&db, plan).await;
    assert!(explained.contains("null_aware"), "{explained}");
    // ... and NOT IN an empty set it is.
    db.batch_execute("DELETE FROM banned").await.unwrap();
    assert_eq!(text(&db, query).await, "51");
}

/// The `row_groups_pruned_statistics=N total → M matched` figures of the
/// one Parquet scan in an `EXPLAIN ANALYZE`.
fn row_groups(plan: &str) -> (u64, u64) {
    let at = plan
        .find("row_groups_pruned_statistics=")
        .unwrap_or_else(|| panic!("no row group metric in {plan}"));
    let figures: Vec<u64> = plan[at + "row_groups_pruned_statistics=".len()..]
        .split(" matched")
        .next()
        .unwrap()
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    (figures[0], figures[1])
}

#[tokio::test]
async fn written_files_are_laid_out_for_scanning() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    // CTAS of 300,000 rows: one file of three row groups (at most 131,072
    // rows each), so a scan splits between threads and a key range reads one.
    db.batch_execute(
        "CREATE TABLE big AS SELECT id, id * 2 AS v, concat('n', id) AS s \
         FROM range(300000)",
    )
    .await
    .unwrap();
    assert_eq!(srv.data_files("default", "big"), 1);
    let query = "SELECT count(*) FROM big WHERE id >= 0";
    assert_eq!(text(&db, query).await, "300000");
    let plan = text(&db, &format!("EXPLAIN ANALYZE {query}")).await;
    assert_eq!(row_groups(&plan), (3, 3), "{plan}");
    let query = "SELECT count(*) FROM big WHERE id < 1000";
    assert_eq!(text(&db, query).await, "1000");
    let plan = text(&db, &format!("EXPLAIN ANALYZE {query}")).await;
    assert_eq!(row_groups(&plan), (3, 1), "{plan}");

    // Five appends, then OPTIMIZE: one file, again in row groups of at most
    // 131,072 rows (500,000 rows: four), and the same answers.
    db.batch_execute("CREATE TABLE parts (id BIGINT, s STRING)")
        .await
        .unwrap();
    for i in 0..5 {
        db.batch_execute(&format!(
            "INSERT INTO parts SELECT id, concat('n', id) \
             FROM range({}, {})",
            i * 100_000,
            (i + 1) * 100_000
        ))
        .await
        .unwrap();
    }
    db.batch_execute("OPTIMIZE parts").await.unwrap();
    assert_eq!(detail(&db, "parts", "numFiles").await.as_deref(), Some("1"));
    let query = "SELECT count(*), sum(id) FROM parts WHERE id >= 0";
    assert_eq!(text(&db, query).await, "500000|124999750000");
    let plan = text(&db, &format!("EXPLAIN ANALYZE {query}")).await;
    assert_eq!(row_groups(&plan), (4, 4), "{plan}");

    // Statistics in the log for the first delta.dataSkippingNumIndexedCols
    // columns only.
    db.batch_execute(
        "CREATE TABLE narrow TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '1') \
         AS SELECT id, concat('n', id) AS s FROM range(10)",
    )
    .await
    .unwrap();
    let stats: Vec<serde_json::Value> = srv
        .log_entry("narrow", 0)
        .into_iter()
        .filter_map(|a| a.get("add").and_then(|add| add.get("stats")).cloned())
        .map(|s| serde_json::from_str(s.as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(stats.len(), 1, "{stats:?}");
    assert_eq!(stats[0]["numRecords"], 10);
    assert_eq!(stats[0]["minValues"], serde_json::json!({"id": 0}));
    assert_eq!(stats[0]["maxValues"], serde_json::json!({"id": 9}));
}

/// The byte ranges of the one Parquet scan in an `EXPLAIN`, in the order
/// its streams queue them (the file groups one after another).
fn range_sizes(plan: &str) -> Vec<u64> {
    let at = plan
        .find("file_groups={")
        .unwrap_or_else(|| panic!("no file groups in {plan}"));
    let groups = &plan[at..];
    let groups = &groups[..groups.find('}').unwrap()];
    groups
        .split(", ")
        .filter_map(|entry| {
            let range = entry.trim_end_matches(']').rsplit(':').next()?;
            let (start, end) = range.split_once("..")?;
            Some(end.parse::<u64>().ok()? - start.parse::<u64>().ok()?)
        })
        .collect()
}

#[tokio::test]
async fn streams_that_share_a_scan_queue_its_largest_ranges_first() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    // Three files of different sizes, cut into byte ranges for two streams.
    db.batch_execute("CREATE TABLE sized (id BIGINT, s STRING)")
        .await
        .unwrap();
    for rows in [20_000, 20_000, 10_000] {
        db.batch_execute(&format!(
            "INSERT INTO sized SELECT id, concat('row number ', id) FROM range({rows})"
        ))
        .await
        .unwrap();
    }
    db.batch_execute(
        "SET datafusion.execution.target_partitions = 2; \
         SET datafusion.optimizer.repartition_file_min_size = 0; \
         SET datafusion.explain.physical_plan_only = true",
    )
    .await
    .unwrap();
    let query = "SELECT count(*) FROM sized WHERE s LIKE 'row%'";
    let ranges = range_sizes(&text(&db, &format!("EXPLAIN {query}")).await);
    assert!(ranges.len() > 3, "{ranges:?}");
    // Largest first: the streams, taking ranges from one queue, end
    // together (in file order the smallest file's range came last).
    assert!(ranges.windows(2).all(|w| w[0] >= w[1]), "{ranges:?}");
    assert_eq!(text(&db, query).await, "50000");

    // Each stream reading its own group: DataFusion's cut, in file order,
    // the groups equal in bytes.
    db.batch_execute("SET datafusion.execution.enable_file_stream_work_stealing = false")
        .await
        .unwrap();
    let ranges = range_sizes(&text(&db, &format!("EXPLAIN {query}")).await);
    assert!(!ranges.windows(2).all(|w| w[0] >= w[1]), "{ranges:?}");
    assert_eq!(text(&db, query).await, "50000");
}
