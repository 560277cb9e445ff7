//! Group commit: concurrent appends to one table share Delta commits, and
//! each statement still lands exactly once and sees its own rows.

use std::collections::BTreeSet;

use crate::common::{column, detail, TestServer};

const CLIENTS: i32 = 8;
const STATEMENTS: i32 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_share_commits_and_each_lands_once() {
    // Each commit entry takes 20 ms longer to write (a crash point set to
    // sleep, in builds with them), so that statements queue behind a
    // commit as they do under load: in a debug build a commit could end
    // before the next INSERT came, each alone in its commit.
    let warehouse = tempfile::tempdir().unwrap();
    let srv = TestServer::start_in_with_env(
        warehouse.path(),
        &[("FAILPOINTS", "put.commit.before=sleep(20)")],
    );
    let setup = srv.connect().await;
    setup
        .batch_execute("CREATE TABLE gc (client INT, n INT)")
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let db = srv.connect().await;
        tasks.push(tokio::spawn(async move {
            for n in 0..STATEMENTS {
                // Half the clients append with VALUES, half with a query.
                let sql = if client % 2 == 0 {
                    format!("INSERT INTO gc VALUES ({client}, {n})")
                } else {
                    format!("INSERT INTO gc SELECT {client}, {n}")
                };
                let done = db.execute(sql.as_str(), &[]).await.unwrap();
                assert_eq!(done, 1);
                // Acknowledged means visible to the next statement.
                let mine: i64 = db
                    .query_one("SELECT count(*) FROM gc WHERE client = $1", &[&client])
                    .await
                    .unwrap()
                    .get(0);
                assert_eq!(
                    mine,
                    i64::from(n) + 1,
                    "client {client} after statement {n}"
                );
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }

    let rows: Vec<(i32, i32)> = setup
        .query("SELECT client, n FROM gc", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let distinct: BTreeSet<(i32, i32)> = rows.iter().copied().collect();
    assert_eq!(rows.len(), (CLIENTS * STATEMENTS) as usize, "a row twice");
    assert_eq!(
        distinct,
        (0..CLIENTS)
            .flat_map(|c| (0..STATEMENTS).map(move |n| (c, n)))
            .collect()
    );

    // Every statement is in exactly one commit, and its row in one of the
    // commit's files: an INSERT … SELECT writes a file of its own, the
    // VALUES statements of a commit share one.
    let versions = srv.delta_versions("default", "gc");
    let mut statements = 0;
    let mut grouped = 0;
    let mut files = 0;
    for &version in versions.iter().filter(|v| **v > 0) {
        let entry = srv.log_entry("gc", version);
        let info = srv.commit_info("gc", version);
        assert_eq!(info["operation"], "WRITE");
        let held = info
            .get("statementsInCommit")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(1);
        let adds = added_rows(&entry);
        assert!(
            !adds.is_empty() && adds.len() as u64 <= held,
            "{} files for {held} statements in version {version}",
            adds.len()
        );
        assert_eq!(adds.iter().sum::<u64>(), held, "rows of version {version}");
        assert_eq!(
            info["operationMetrics"]["num_added_rows"].as_u64(),
            Some(held),
            "{info}"
        );
        assert_eq!(
            info["operationMetrics"]["num_added_files"].as_u64(),
            Some(adds.len() as u64),
            "{info}"
        );
        statements += held;
        files += adds.len() as u64;
        if held > 1 {
            grouped += 1;
        }
    }
    assert!(
        files < statements,
        "the VALUES statements of a commit share its file ({files} files, {grouped} of {} commits grouped)",
        versions.len()
    );
    assert_eq!(statements, (CLIENTS * STATEMENTS) as u64);
    assert!(
        grouped > 0 && versions.len() < (CLIENTS * STATEMENTS) as usize,
        "{CLIENTS} clients appending at once never shared a commit ({} versions)",
        versions.len()
    );
    // DESCRIBE HISTORY shows the grouped commits as the log has them.
    let history = setup.query("DESCRIBE HISTORY gc", &[]).await.unwrap();
    assert_eq!(history.len(), versions.len());
}

/// The rows of each file a commit entry adds (its statistics' count).
fn added_rows(entry: &[serde_json::Value]) -> Vec<u64> {
    entry
        .iter()
        .filter_map(|a| a.get("add"))
        .map(|add| {
            let stats: serde_json::Value =
                serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
            stats["numRecords"].as_u64().unwrap()
        })
        .collect()
}

/// INSERT … VALUES of literals into a table whose rows need nothing but
/// their values is appended without a plan: the values read back exactly as
/// the planned path writes them, one statement is one version, a value the
/// column cannot take fails with the planned path's error and commits
/// nothing, and the rows of a partitioned table go to one file per
/// partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn literal_values_are_appended_as_the_planned_path_appends_them() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE lit (id BIGINT, s STRING, d DOUBLE, m DECIMAL(10,2), b BOOLEAN, \
         i INT, t TIMESTAMP)",
    )
    .await
    .unwrap();
    let version = |srv: &TestServer| *srv.delta_versions("default", "lit").last().unwrap();
    let statements = [
        "INSERT INTO lit VALUES (1, 'a', 1.5, 2.25, true, 7, NULL)",
        "INSERT INTO lit VALUES (2, 'it''s', 3, -1.5, false, NULL, NULL), \
         (3, NULL, NULL, NULL, NULL, -2, NULL)",
        "INSERT INTO lit (s, id, d, m, b, i, t) VALUES ('z', 4, 0.1, 3, TRUE, 1, NULL)",
        // Planned: a decimal rounded to the column's scale, an exponent,
        // a timestamp, an expression.
        "INSERT INTO lit VALUES (5, 'p', 1e3, 1.235, true, 1 + 1, TIMESTAMP '2024-01-02 03:04:05')",
    ];
    for (n, sql) in statements.iter().enumerate() {
        let before = version(&srv);
        db.execute(*sql, &[]).await.unwrap();
        assert_eq!(version(&srv), before + 1, "statement {n}: one version");
    }
    let rows: Vec<String> = db
        .query(
            "SELECT concat_ws('|', id, coalesce(s, '-'), coalesce(CAST(d AS STRING), '-'), \
             coalesce(CAST(m AS STRING), '-'), coalesce(CAST(b AS STRING), '-'), \
             coalesce(CAST(i AS STRING), '-'), coalesce(CAST(t AS STRING), '-')) FROM lit ORDER BY id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        rows,
        vec![
            "1|a|1.5|2.25|true|7|-",
            "2|it's|3.0|-1.50|false|-|-",
            "3|-|-|-|-|-2|-",
            "4|z|0.1|3.00|true|1|-",
            "5|p|1000.0|1.24|true|2|2024-01-02 03:04:05",
        ]
    );

    // Bound parameters, as drivers send them.
    let before = version(&srv);
    db.execute(
        "INSERT INTO lit VALUES ($1, $2, $3, NULL, $4, $5, NULL)",
        &[&7i64, &"q", &2.5f64, &true, &-3i32],
    )
    .await
    .unwrap();
    assert_eq!(version(&srv), before + 1);
    let row = db
        .query_one("SELECT s, d, b, i FROM lit WHERE id = 7", &[])
        .await
        .unwrap();
    assert_eq!(
        (
            row.get::<_, String>(0),
            row.get::<_, f64>(1),
            row.get::<_, bool>(2),
            row.get::<_, i32>(3)
        ),
        ("q".to_string(), 2.5, true, -3)
    );

    // A value the column cannot take: the planned path's error, no commit.
    let before = version(&srv);
    let e = db
        .execute(
            "INSERT INTO lit VALUES (6, 'x', 1, 1, true, 3000000000, NULL)",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.code(),
        Some(&tokio_postgres::error::SqlState::NUMERIC_VALUE_OUT_OF_RANGE),
        "{e:?}"
    );
    let e = db
        .execute("INSERT INTO lit VALUES (6, 'x')", &[])
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("42802"), "{e:?}");
    assert_eq!(version(&srv), before);

    // A partitioned table: one file per partition, in one commit.
    db.batch_execute(
        "CREATE TABLE litp (k STRING, v INT) PARTITIONED BY (k); \
         INSERT INTO litp VALUES ('a', 1), ('b', 2), ('a', 3)",
    )
    .await
    .unwrap();
    let entry = srv.log_entry("litp", 1);
    let mut partitions: Vec<(String, u64)> = entry
        .iter()
        .filter_map(|a| a.get("add"))
        .map(|add| {
            let stats: serde_json::Value =
                serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
            (
                add["partitionValues"]["k"].as_str().unwrap().to_string(),
                stats["numRecords"].as_u64().unwrap(),
            )
        })
        .collect();
    partitions.sort();
    assert_eq!(partitions, vec![("a".to_string(), 2), ("b".to_string(), 1)]);
    let sums: Vec<String> = column(
        &db,
        "SELECT concat(k, ':', CAST(sum(v) AS STRING)) FROM litp GROUP BY k ORDER BY k",
        0,
    )
    .await;
    assert_eq!(sums, vec!["a:4", "b:2"]);
}

/// A statement that fails before its commit (a NOT NULL column) fails
/// alone; the appends beside it commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_append_fails_alone() {
    let srv = TestServer::start();
    let setup = srv.connect().await;
    setup
        .batch_execute("CREATE TABLE gcn (client INT NOT NULL, n INT)")
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for client in 0..4 {
        let db = srv.connect().await;
        tasks.push(tokio::spawn(async move {
            let mut failed = 0;
            for n in 0..10 {
                let value = if client == 0 && n % 2 == 1 {
                    "NULL".to_string()
                } else {
                    client.to_string()
                };
                match db
                    .execute(
                        format!("INSERT INTO gcn VALUES ({value}, {n})").as_str(),
                        &[],
                    )
                    .await
                {
                    Ok(1) => {}
                    Ok(other) => panic!("{other} rows"),
                    Err(e) => {
                        assert_eq!(
                            e.code(),
                            Some(&tokio_postgres::error::SqlState::NOT_NULL_VIOLATION),
                            "{e:?}"
                        );
                        failed += 1;
                    }
                }
            }
            failed
        }));
    }
    let mut failed = 0;
    for t in tasks {
        failed += t.await.unwrap();
    }
    assert_eq!(failed, 5);
    let count: i64 = setup
        .query_one("SELECT count(*) FROM gcn", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 35);
    let client0: Vec<i32> =
        column(&setup, "SELECT n FROM gcn WHERE client = 0 ORDER BY n", 0).await;
    assert_eq!(client0, vec![0, 2, 4, 6, 8]);
}

/// A server whose table is cached brings it up to date over another
/// server's commits: appends extend its file list, and a DELETE or an
/// OPTIMIZE (which remove files) is read as it is, never as an append.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cached_table_follows_another_servers_appends_and_removes() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("warehouse");
    let one = TestServer::start_in(&warehouse);
    let two = TestServer::start_in(&warehouse);
    let (a, b) = (one.connect().await, two.connect().await);
    a.batch_execute("CREATE TABLE follow (n INT); INSERT INTO follow VALUES (1)")
        .await
        .unwrap();
    let sum = |rows: Vec<tokio_postgres::Row>| -> (i64, i64) {
        (
            rows[0].get(0),
            rows[0].get::<_, Option<i64>>(1).unwrap_or(0),
        )
    };
    let read = "SELECT count(*), sum(n) FROM follow";
    // Both servers have the table cached.
    assert_eq!(sum(b.query(read, &[]).await.unwrap()), (1, 1));

    for n in 2..=4 {
        a.execute(format!("INSERT INTO follow VALUES ({n})").as_str(), &[])
            .await
            .unwrap();
    }
    assert_eq!(sum(b.query(read, &[]).await.unwrap()), (4, 10));

    // Appends, then a DELETE among them: no longer only additions.
    a.batch_execute(
        "INSERT INTO follow VALUES (5); DELETE FROM follow WHERE n <= 2; INSERT INTO follow VALUES (6)",
    )
    .await
    .unwrap();
    assert_eq!(sum(b.query(read, &[]).await.unwrap()), (4, 18));

    // OPTIMIZE rewrites every file; an append after it.
    a.batch_execute("OPTIMIZE follow; INSERT INTO follow VALUES (7)")
        .await
        .unwrap();
    assert_eq!(sum(b.query(read, &[]).await.unwrap()), (5, 25));

    // And back: the first server follows the second's appends.
    b.execute("INSERT INTO follow VALUES (8)", &[])
        .await
        .unwrap();
    assert_eq!(sum(a.query(read, &[]).await.unwrap()), (6, 33));
    assert_eq!(
        detail(&a, "follow", "numFiles").await.as_deref(),
        Some("3"),
        "the optimized file and the two appends after it"
    );
}
