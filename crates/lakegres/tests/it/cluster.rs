//! Queries on a cluster: one server and two `lakegres worker` processes on
//! loopback. With `SET lakegres.distributed = force` a query's plan is cut
//! into stages whose Delta scans run on the workers, and it gives the rows
//! the server gives alone; the workers refuse requests without the
//! cluster's secret; a worker killed fails the statement with a SQLSTATE
//! while the server keeps serving.

use std::path::Path;

use crate::common::{texts, TestServer};

const SECRET: &str = "a-test-secret-of-32-characters!!";

/// A `lakegres worker` with the secret in `token_file`; `extra` are
/// flags before `worker`.
fn worker(token_file: &Path, extra: &[&str]) -> TestServer {
    let token = token_file.display().to_string();
    let mut args = vec!["--cluster-token-file", token.as_str()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["worker", "--listen", "127.0.0.1:0"]);
    TestServer::try_spawn(&args, &[])
        .unwrap_or_else(|log| panic!("the worker did not start:\n{log}"))
}

/// A server on `warehouse` sending tasks to `workers`; `extra` are more
/// flags.
fn coordinator(
    warehouse: &Path,
    workers: &[&TestServer],
    token_file: &Path,
    extra: &[&str],
) -> TestServer {
    let warehouse = warehouse.display().to_string();
    let workers = workers
        .iter()
        .map(|w| w.addr.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let token = token_file.display().to_string();
    let mut args = vec![
        "--warehouse",
        warehouse.as_str(),
        "--workers",
        workers.as_str(),
        "--cluster-token-file",
        token.as_str(),
    ];
    args.extend_from_slice(extra);
    TestServer::try_spawn(&args, &[])
        .unwrap_or_else(|log| panic!("the server did not start:\n{log}"))
}

/// What `COPY … TO STDOUT` sends.
async fn copy_out(db: &tokio_postgres::Client, sql: &str) -> Vec<u8> {
    use futures::TryStreamExt;
    let chunks: Vec<bytes::Bytes> = db.copy_out(sql).await.unwrap().try_collect().await.unwrap();
    chunks.concat()
}

fn secret_file(dir: &Path, name: &str, secret: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    path
}

/// Six files of a partitioned fact table and a small dimension.
async fn load(db: &tokio_postgres::Client) {
    db.batch_execute(
        "CREATE TABLE sales (id BIGINT, region STRING, item INT, amount DECIMAL(10,2))
             PARTITIONED BY (region);
         CREATE TABLE items (item INT, name STRING);
         INSERT INTO items VALUES (1, 'bolt'), (2, 'nut'), (3, 'gear');",
    )
    .await
    .unwrap();
    for (n, region) in ["north", "south", "east", "north", "west", "south"]
        .iter()
        .enumerate()
    {
        db.batch_execute(&format!(
            "INSERT INTO sales SELECT {n} * 100 + r, '{region}', r % 3 + 1, (r % 17) * 1.25
             FROM (SELECT * FROM range(0, 100)) AS t(r)"
        ))
        .await
        .unwrap();
    }
}

/// Queries, and whether their plan is cut into stages. Plans DataFusion
/// makes in one partition have nothing to cut and stay on the server: here
/// the window (its sort over these few rows is not repartitioned). (A
/// global `count(DISTINCT …)` over a filter on the partition column is cut
/// since that filter runs above the scan, issue #56.)
const QUERIES: &[(&str, bool)] = &[
    (
        "SELECT region, count(*), sum(amount), min(id), max(id) FROM sales GROUP BY region ORDER BY region",
        true,
    ),
    (
        "SELECT i.name, count(*), sum(s.amount) FROM sales s JOIN items i ON s.item = i.item \
         WHERE s.amount > 5 GROUP BY i.name ORDER BY i.name",
        true,
    ),
    ("SELECT id, region, amount FROM sales WHERE id % 97 = 3 ORDER BY id", true),
    ("SELECT count(DISTINCT item), count(*) FROM sales WHERE region <> 'west'", true),
    (
        "SELECT region, id, rank() OVER (PARTITION BY region ORDER BY amount DESC, id) AS r \
         FROM sales QUALIFY r <= 2 ORDER BY region, r",
        false,
    ),
];

#[tokio::test]
async fn queries_on_workers_give_the_rows_of_one_server() {
    let dir = tempfile::tempdir().unwrap();
    let token = secret_file(dir.path(), "token", SECRET);
    let first = worker(&token, &[]);
    let mut second = worker(&token, &[]);
    let srv = coordinator(
        &dir.path().join("warehouse"),
        &[&first, &second],
        &token,
        &[],
    );
    let db = srv.connect().await;
    load(&db).await;

    for &(sql, distributed) in QUERIES {
        db.batch_execute("SET lakegres.distributed = off")
            .await
            .unwrap();
        let alone = texts(&db, sql).await;
        db.batch_execute("SET lakegres.distributed = force")
            .await
            .unwrap();
        let spread = texts(&db, sql).await;
        assert!(!alone.is_empty(), "{sql}");
        assert_eq!(alone, spread, "{sql}");
        // What ran had stages on the workers, and its Delta scans were
        // shared among their tasks.
        let plan = format!("{:?}", texts(&db, &format!("EXPLAIN ANALYZE {sql}")).await);
        if !distributed {
            assert!(!plan.contains("DistributedExec"), "{sql}: {plan}");
            continue;
        }
        assert!(plan.contains("DistributedExec"), "{sql}: {plan}");
        assert!(
            plan.contains("NetworkShuffleExec") || plan.contains("NetworkCoalesceExec"),
            "{plan}"
        );
        assert!(plan.contains("t1: DeltaTaskScanExec"), "{sql}: {plan}");
    }

    // A session's time zone travels with its tasks: their functions read
    // it as the server's do.
    let zoned =
        "SELECT region, max(date_format(timestamp_seconds(id * 3600), 'yyyy-MM-dd HH:mm')) \
                 FROM sales GROUP BY region ORDER BY region";
    let in_utc = texts(&db, zoned).await;
    db.batch_execute("SET TIME ZONE 'America/New_York'; SET lakegres.distributed = off")
        .await
        .unwrap();
    let alone = texts(&db, zoned).await;
    assert_ne!(alone, in_utc);
    db.batch_execute("SET lakegres.distributed = force")
        .await
        .unwrap();
    assert_eq!(texts(&db, zoned).await, alone);
    let plan = format!(
        "{:?}",
        texts(&db, &format!("EXPLAIN ANALYZE {zoned}")).await
    );
    assert!(plan.contains("DistributedExec"), "{plan}");
    db.batch_execute("SET TIME ZONE 'UTC'").await.unwrap();

    // A table with deletion vectors is read by one task, with its rows
    // deleted.
    db.batch_execute(
        "CREATE TABLE marked (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableDeletionVectors' = true);
         INSERT INTO marked SELECT r, 'a' FROM range(0, 50) AS t(r);
         INSERT INTO marked SELECT r, 'b' FROM range(50, 100) AS t(r);
         DELETE FROM marked WHERE id % 10 = 0;",
    )
    .await
    .unwrap();
    let marked = "SELECT v, count(*), sum(id) FROM marked GROUP BY v ORDER BY v";
    db.batch_execute("SET lakegres.distributed = off")
        .await
        .unwrap();
    let alone = texts(&db, marked).await;
    db.batch_execute("SET lakegres.distributed = force")
        .await
        .unwrap();
    assert_eq!(texts(&db, marked).await, alone);
    assert_eq!(alone[0][1].as_deref(), Some("45"));

    // Writes stay on the server, reads of them through the workers.
    db.batch_execute(
        "CREATE TABLE north AS SELECT * FROM sales WHERE region = 'north';
         INSERT INTO north SELECT id + 10000, region, item, amount FROM sales WHERE region = 'north'",
    )
    .await
    .unwrap();
    assert_eq!(
        texts(&db, "SELECT count(*) FROM north").await,
        [[Some("400".to_string())]]
    );

    // `auto` leaves a query over less than one task's worth of data
    // (`bytes_per_task`, 128 MiB) here.
    db.batch_execute("SET lakegres.distributed = auto")
        .await
        .unwrap();
    let plan = format!(
        "{:?}",
        texts(&db, &format!("EXPLAIN {}", QUERIES[0].0)).await
    );
    assert!(!plan.contains("DistributedExec"), "{plan}");
    db.batch_execute("SET lakegres.distributed = force")
        .await
        .unwrap();

    // Plain EXPLAIN shows the stages and tasks the query would run in.
    let plan = format!(
        "{:?}",
        texts(&db, &format!("EXPLAIN {}", QUERIES[0].0)).await
    );
    assert!(plan.contains("DistributedExec"), "{plan}");
    assert!(plan.contains("Stage"), "{plan}");
    assert!(plan.contains("DeltaTaskScanExec"), "{plan}");

    // A MERGE's source and COPY … TO read through the workers too.
    db.batch_execute(
        "MERGE INTO north t USING (SELECT id, max(region) AS region, max(item) AS item,
             max(amount) * 2 AS amount FROM sales WHERE region = 'north' AND id % 2 = 0
             GROUP BY id) s ON t.id = s.id
         WHEN MATCHED THEN UPDATE SET amount = s.amount",
    )
    .await
    .unwrap();
    db.batch_execute("SET lakegres.distributed = off")
        .await
        .unwrap();
    let expected = texts(
        &db,
        "SELECT count(*), sum(CASE WHEN id % 2 = 0 THEN amount * 2 ELSE amount END)
         FROM sales WHERE region = 'north'",
    )
    .await;
    let copied = copy_out(
        &db,
        "COPY (SELECT region, sum(amount) FROM sales GROUP BY region ORDER BY region) TO STDOUT",
    )
    .await;
    db.batch_execute("SET lakegres.distributed = force")
        .await
        .unwrap();
    assert_eq!(
        copy_out(
            &db,
            "COPY (SELECT region, sum(amount) FROM sales GROUP BY region ORDER BY region) TO STDOUT"
        )
        .await,
        copied
    );
    // The MERGE doubled the even ids of the 200 rows the CTAS took; the
    // INSERT's copies (ids from 10000) are not in its source.
    let halves = texts(
        &db,
        "SELECT count(*), sum(amount) FROM north WHERE id < 10000",
    )
    .await;
    assert_eq!(halves, expected);

    // A worker gone: the statement fails with a SQLSTATE, the server stays.
    second.kill9();
    let err = db.simple_query(QUERIES[0].0).await.unwrap_err();
    let state = err.code().map(|c| c.code().to_string());
    // An I/O error outside the statement, not an internal error.
    assert_eq!(state.as_deref(), Some("58030"), "{err:?}");
    // Statements whose read side runs on the workers fail the same way,
    // and commit nothing.
    let versions = srv.delta_versions("default", "north");
    // (Sources that aggregate: datafusion-distributed cuts a plan where it
    // shuffles or gathers partitions, and these few rows are scanned in one.)
    for sql in [
        "INSERT INTO north SELECT max(id) + 20000, region, max(item), sum(amount) FROM sales
             GROUP BY region",
        "CREATE TABLE everything AS SELECT region, sum(amount) AS total FROM sales GROUP BY region",
        "MERGE INTO north t USING (SELECT item AS id, sum(amount) AS amount FROM sales
             GROUP BY item) s
             ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, amount) VALUES (s.id, s.amount)",
    ] {
        let err = db.simple_query(sql).await.unwrap_err();
        assert!(err.code().is_some(), "{sql}: {err:?}");
    }
    let copied = async {
        use futures::TryStreamExt;
        let sql = "COPY (SELECT region, sum(amount) FROM sales GROUP BY region) TO STDOUT";
        db.copy_out(sql)
            .await?
            .try_collect::<Vec<bytes::Bytes>>()
            .await
    };
    let err = copied.await.unwrap_err();
    assert!(err.code().is_some(), "{err:?}");
    assert_eq!(srv.delta_versions("default", "north"), versions);
    assert!(db.simple_query("SELECT * FROM everything").await.is_err());
    db.batch_execute("SET lakegres.distributed = off")
        .await
        .unwrap();
    assert_eq!(texts(&db, QUERIES[3].0).await.len(), 1);
}

#[tokio::test]
async fn a_worker_refuses_a_server_without_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let token = secret_file(dir.path(), "token", SECRET);
    let wrong = secret_file(dir.path(), "wrong", "another-secret-of-32-characters!");
    let first = worker(&token, &[]);
    let second = worker(&token, &[]);
    let srv = coordinator(
        &dir.path().join("warehouse"),
        &[&first, &second],
        &wrong,
        &[],
    );
    let db = srv.connect().await;
    load(&db).await;
    db.batch_execute("SET lakegres.distributed = force")
        .await
        .unwrap();
    let err = db.simple_query(QUERIES[0].0).await.unwrap_err();
    let db_err = err.as_db_error().unwrap_or_else(|| panic!("{err:?}"));
    assert!(db_err.message().contains("secret"), "{db_err:?}");
    assert_eq!(db_err.code().code(), "58000", "{db_err:?}");
    // The server still answers, here alone.
    db.batch_execute("SET lakegres.distributed = off")
        .await
        .unwrap();
    assert_eq!(texts(&db, QUERIES[3].0).await.len(), 1);
}

/// Workers of a warehouse in S3 (moto) open its tables with their own
/// settings and credentials (none travel with a plan), give the rows the
/// server gives alone, and write nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_read_an_s3_warehouse_with_their_own_credentials() {
    let Some(moto) = crate::common::Moto::start("lake") else {
        return;
    };
    let storage = moto.warehouse_flags("wh");
    let storage: Vec<&str> = storage.iter().map(String::as_str).collect();
    let workers = crate::common::Workers::start(2, &storage, &crate::common::Moto::credentials());
    let flags = workers.server_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let srv = TestServer::start_s3(&moto, "wh", &flags);
    let db = srv.connect().await;
    load(&db).await;

    let before = moto.keys("wh/");
    for &(sql, distributed) in QUERIES {
        db.batch_execute("SET lakegres.distributed = off")
            .await
            .unwrap();
        let alone = texts(&db, sql).await;
        db.batch_execute("SET lakegres.distributed = force")
            .await
            .unwrap();
        assert_eq!(texts(&db, sql).await, alone, "{sql}");
        let plan = format!("{:?}", texts(&db, &format!("EXPLAIN ANALYZE {sql}")).await);
        assert_eq!(
            plan.contains("DistributedExec"),
            distributed,
            "{sql}: {plan}"
        );
    }
    // Reading through the workers wrote nothing to the warehouse.
    assert_eq!(moto.keys("wh/"), before);

    // A write whose rows the workers read: committed by the server.
    db.batch_execute(
        "CREATE TABLE totals AS SELECT region, sum(amount) AS total FROM sales GROUP BY region",
    )
    .await
    .unwrap();
    db.batch_execute("SET lakegres.distributed = off")
        .await
        .unwrap();
    assert_eq!(
        texts(&db, "SELECT region, total FROM totals ORDER BY region").await,
        texts(
            &db,
            "SELECT region, sum(amount) FROM sales GROUP BY region ORDER BY region"
        )
        .await
    );
}

/// With `[tls]` set, workers serve tasks over TLS with its certificate and
/// servers check theirs against it; a server without TLS is not served.
#[tokio::test]
async fn with_tls_set_servers_and_workers_talk_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        // Not a CA: the certificate is checked as the worker's own.
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(made.status.success(), "{made:?}");
    let config = dir.path().join("lakegres.toml");
    std::fs::write(
        &config,
        format!(
            "[tls]\ncert = \"{}\"\nkey = \"{}\"\n",
            cert.display(),
            key.display()
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let token = secret_file(dir.path(), "token", SECRET);
    let tls = ["--config", config.as_str()];
    let (first, second) = (worker(&token, &tls), worker(&token, &tls));
    let warehouse = dir.path().join("warehouse");
    let server = |tls: bool| {
        let extra: &[&str] = if tls { &["--config", &config] } else { &[] };
        coordinator(&warehouse, &[&first, &second], &token, extra)
    };
    let srv = server(true);
    let db = srv.connect().await;
    load(&db).await;
    let (sql, _) = QUERIES[0];
    let alone = texts(&db, sql).await;
    db.batch_execute("SET lakegres.distributed = force")
        .await
        .unwrap();
    assert_eq!(texts(&db, sql).await, alone);
    let plan = format!("{:?}", texts(&db, &format!("EXPLAIN ANALYZE {sql}")).await);
    assert!(plan.contains("DistributedExec"), "{plan}");
    drop(db);
    drop(srv);

    // A server that talks plain TCP to them gets an error, not rows.
    let plain = server(false);
    let db = plain.connect().await;
    db.batch_execute("SET lakegres.distributed = force")
        .await
        .unwrap();
    let err = db.simple_query(sql).await.unwrap_err();
    assert!(err.code().is_some(), "{err:?}");
}

/// Connects to `srv` as `user` (trust logins on loopback).
async fn connect_as(srv: &TestServer, user: &str) -> tokio_postgres::Client {
    let dsn = format!(
        "host=127.0.0.1 port={} user={user} dbname=lakegres",
        srv.port()
    );
    let (client, connection) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// With privileges on, a view read on the workers (`distributed = force`)
/// reads with its owner's rights as on the server alone: its reader gets
/// its rows without SELECT on the table, not the table itself, and
/// nothing once the owner's SELECT is revoked (issue #57).
#[tokio::test]
async fn a_view_on_workers_reads_with_its_owners_rights() {
    let dir = tempfile::tempdir().unwrap();
    let token = secret_file(dir.path(), "token", SECRET);
    let (first, second) = (worker(&token, &[]), worker(&token, &[]));
    let config = dir.path().join("lakegres.toml");
    std::fs::write(&config, "[auth]\nadmins = [\"admin\"]\n").unwrap();
    let config = config.display().to_string();
    let srv = coordinator(
        &dir.path().join("warehouse"),
        &[&first, &second],
        &token,
        &["--config", config.as_str()],
    );
    let admin = connect_as(&srv, "admin").await;
    admin
        .batch_execute(
            "CREATE SCHEMA secret; CREATE SCHEMA shared;
             CREATE TABLE secret.salaries (id INT, salary INT);
             INSERT INTO secret.salaries SELECT CAST(r AS INT), CAST(r * 10 AS INT) FROM range(0, 50) AS t(r);
             INSERT INTO secret.salaries SELECT CAST(r AS INT), CAST(r * 10 AS INT) FROM range(50, 100) AS t(r);
             GRANT SELECT ON TABLE secret.salaries TO alice;
             GRANT CREATE ON SCHEMA shared TO alice;
             GRANT CREATE ON SCHEMA shared TO bob;",
        )
        .await
        .unwrap();
    let alice = connect_as(&srv, "alice").await;
    alice
        .batch_execute("CREATE VIEW shared.ids AS SELECT id FROM secret.salaries WHERE id % 10 = 0")
        .await
        .unwrap();
    admin
        .batch_execute("GRANT SELECT ON VIEW shared.ids TO bob")
        .await
        .unwrap();
    let bob = connect_as(&srv, "bob").await;
    bob.batch_execute("SET lakegres.distributed = force")
        .await
        .unwrap();
    let code = |e: tokio_postgres::Error| e.code().map(|c| c.code().to_string());
    let ids = "SELECT count(*), sum(id) FROM shared.ids";
    let rows = |r: &[&str]| vec![r.iter().map(|v| Some(v.to_string())).collect::<Vec<_>>()];
    assert_eq!(texts(&bob, ids).await, rows(&["10", "450"]));
    // The view's plan is cut into stages on the workers.
    alice
        .batch_execute("SET lakegres.distributed = force")
        .await
        .unwrap();
    let plan = format!(
        "{:?}",
        texts(&alice, &format!("EXPLAIN ANALYZE {ids}")).await
    );
    assert!(plan.contains("DistributedExec"), "{plan}");
    for sql in [
        "SELECT count(*) FROM secret.salaries",
        "CREATE VIEW shared.mine AS SELECT * FROM secret.salaries",
        "EXPLAIN SELECT * FROM shared.ids",
    ] {
        let refused = bob.simple_query(sql).await.unwrap_err();
        assert_eq!(code(refused), Some("42501".to_string()), "{sql}");
    }
    admin
        .batch_execute("REVOKE SELECT ON TABLE secret.salaries FROM alice")
        .await
        .unwrap();
    let refused = bob.simple_query(ids).await.unwrap_err();
    assert_eq!(code(refused), Some("42501".to_string()));
}
