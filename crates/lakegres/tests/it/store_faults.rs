//! A flaky object store (issue #26): moto behind `fault_proxy.py`, which
//! answers 500/503, resets connections before and after forwarding (a
//! commit that landed with its response lost among them) and delays
//! answers past the client's timeout, at random with a fixed seed. Writers
//! append, move money between accounts by MERGE, load files by COPY INTO and
//! OPTIMIZE at once; then every acknowledged write is there once, no
//! statement is there in part, the accounts sum to the same total at every
//! version, and the `deltalake` package reads what the server reads.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{FaultProxy, Moto, TestServer};

/// How long the writers run (`LAKEGRES_FAULT_SECONDS`; the soak runs longer).
fn seconds() -> u64 {
    std::env::var("LAKEGRES_FAULT_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

/// The proxy's seed (`LAKEGRES_FAULT_SEED`).
fn seed() -> u64 {
    std::env::var("LAKEGRES_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(26)
}

const ACCOUNTS: i64 = 10;
const BALANCE: i64 = 1_000;
const ROWS: i32 = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_on_a_flaky_store_lose_and_duplicate_nothing() {
    let Some(moto) = Moto::start("faulty") else {
        return;
    };
    let python = Moto::python().expect("moto's python");
    let seed = seed().to_string();
    let proxy = FaultProxy::start(
        moto.port,
        &[
            "--seed",
            &seed,
            "--rate",
            "0",
            "--delay",
            "3",
            "--lose-commit-every",
            "10",
        ],
    )
    .expect("the proxy");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("lakegres.toml");
    // A short client timeout (the proxy's slow answers pass it) and
    // object_store's retries with backoff, bounded.
    std::fs::write(
        &config,
        "[storage.options]\ntimeout = \"2s\"\nmax_retries = \"10\"\nretry_timeout = \"60s\"\n",
    )
    .unwrap();
    let endpoint = proxy.endpoint();
    let srv = TestServer::try_spawn(
        &[
            "--warehouse",
            "s3://faulty/wh",
            "--storage-endpoint",
            &endpoint,
            "--storage-allow-http",
            "true",
            "--storage-region",
            "us-east-1",
            "--config",
            &config.display().to_string(),
        ],
        &Moto::credentials(),
    )
    .unwrap_or_else(|log| panic!("the server did not start:\n{log}"));
    let db = srv.connect().await;
    let values: Vec<String> = (0..ACCOUNTS)
        .map(|id| format!("({id}, {BALANCE})"))
        .collect();
    db.batch_execute(&format!(
        "CREATE SCHEMA b;
         CREATE TABLE b.appends (batch INT, n INT);
         CREATE TABLE b.accounts (id BIGINT, balance BIGINT);
         INSERT INTO b.accounts VALUES {};
         CREATE TABLE b.loaded (id INT, file INT);",
        values.join(", ")
    ))
    .await
    .unwrap();

    proxy.control(Some(0.05));
    let until = Instant::now() + Duration::from_secs(seconds());
    let acked_batches = Arc::new(Mutex::new(Vec::new()));
    let errors = Arc::new(Mutex::new(BTreeMap::<String, usize>::new()));
    let note = |errors: &Arc<Mutex<BTreeMap<String, usize>>>, e: tokio_postgres::Error| {
        let key = match e.as_db_error() {
            Some(db) => format!("{} {}", db.code().code(), db.message()),
            None => format!("(no SQLSTATE) {e}"),
        };
        *errors.lock().unwrap().entry(key).or_default() += 1;
    };
    let mut tasks = Vec::new();
    // Appends, each batch tagged.
    for client in 0..2 {
        let db = srv.connect().await;
        let (acked, errors) = (Arc::clone(&acked_batches), Arc::clone(&errors));
        tasks.push(tokio::spawn(async move {
            let mut i = 0;
            while Instant::now() < until {
                let batch = client * 100_000 + i;
                i += 1;
                let rows: Vec<String> = (0..ROWS).map(|n| format!("({batch}, {n})")).collect();
                match db
                    .simple_query(&format!("INSERT INTO b.appends VALUES {}", rows.join(", ")))
                    .await
                {
                    Ok(_) => acked.lock().unwrap().push(batch),
                    Err(e) => note(&errors, e),
                }
            }
        }));
    }
    // Money moved between two accounts by one MERGE.
    {
        let db = srv.connect().await;
        let errors = Arc::clone(&errors);
        tasks.push(tokio::spawn(async move {
            let mut i: i64 = 0;
            while Instant::now() < until {
                let (from, to, amount) = (i % ACCOUNTS, (i * 7 + 3) % ACCOUNTS, 1 + i % 50);
                i += 1;
                if from == to {
                    continue;
                }
                let merge = format!(
                    "MERGE INTO b.accounts a USING (SELECT {from} AS id, -{amount} AS d \
                     UNION ALL SELECT {to}, {amount}) s ON a.id = s.id \
                     WHEN MATCHED THEN UPDATE SET balance = a.balance + s.d"
                );
                if let Err(e) = db.simple_query(&merge).await {
                    note(&errors, e);
                }
            }
        }));
    }
    // Files landed (straight into moto) and loaded by COPY INTO.
    let landed = Arc::new(Mutex::new(0usize));
    {
        let db = srv.connect().await;
        let (errors, landed) = (Arc::clone(&errors), Arc::clone(&landed));
        let moto_port = moto.port;
        tasks.push(tokio::spawn(async move {
            let mut file = 0;
            while Instant::now() < until {
                let rows: String = (0..5)
                    .map(|i| format!("{},{file}\n", file * 10 + i))
                    .collect();
                let body = format!("id,file\n{rows}");
                put_object(
                    moto_port,
                    &format!("faulty/ingest/land/f{file:05}.csv"),
                    &body,
                );
                file += 1;
                *landed.lock().unwrap() = file as usize;
                let copy = "COPY INTO b.loaded FROM 's3://faulty/ingest/land' FILEFORMAT = CSV \
                            FORMAT_OPTIONS ('header' = 'true', 'inferSchema' = 'true')";
                if let Err(e) = db.simple_query(copy).await {
                    note(&errors, e);
                }
            }
        }));
    }
    // OPTIMIZE now and then, and a reader that must always see the total.
    {
        let db = srv.connect().await;
        let errors = Arc::clone(&errors);
        tasks.push(tokio::spawn(async move {
            let mut wrong = Vec::new();
            while Instant::now() < until {
                if let Err(e) = db.simple_query("OPTIMIZE b.appends").await {
                    note(&errors, e);
                }
                match db
                    .query_one("SELECT sum(balance)::BIGINT FROM b.accounts", &[])
                    .await
                {
                    Ok(row) => {
                        let sum: i64 = row.get(0);
                        if sum != ACCOUNTS * BALANCE {
                            wrong.push(sum);
                        }
                    }
                    Err(e) => note(&errors, e),
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            assert!(wrong.is_empty(), "a reader saw the total as {wrong:?}");
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let injected = proxy.control(Some(0.0));
    let errors = errors.lock().unwrap().clone();
    eprintln!("faults injected: {injected}\nstatement errors: {errors:#?}");
    assert!(
        injected["lost_commit"].as_u64().unwrap_or(0) > 0,
        "{injected}"
    );
    for error in errors.keys() {
        assert!(
            !error.starts_with("XX000"),
            "an internal error reached the client: {error}"
        );
    }

    // A store that fails every request: object_store retries with backoff,
    // and statement_timeout ends the statement (57014), not the retries'
    // own limit (60 s here).
    let db = srv.connect().await;
    proxy.control(Some(1.0));
    db.batch_execute("SET statement_timeout = '3s'")
        .await
        .unwrap();
    let started = Instant::now();
    let err = db
        .query("SELECT count(*) FROM b.appends", &[])
        .await
        .expect_err("a read through a store that always fails");
    assert_eq!(err.code().map(|c| c.code()), Some("57014"), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    proxy.control(Some(0.0));
    db.batch_execute("SET statement_timeout = 0").await.unwrap();

    // The server still serves; the tables are whole.
    let acked = acked_batches.lock().unwrap().clone();
    assert!(!acked.is_empty(), "no append was acknowledged");
    let counts: BTreeMap<i32, i64> = db
        .query("SELECT batch, count(*) FROM b.appends GROUP BY batch", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (batch, n) in &counts {
        assert_eq!(*n, ROWS as i64, "batch {batch} is there in part or twice");
    }
    for batch in &acked {
        assert!(
            counts.contains_key(batch),
            "acknowledged batch {batch} is lost"
        );
    }
    let versions: Vec<i64> = db
        .query("DESCRIBE HISTORY b.accounts", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    // Version 0 is the empty table; from the first INSERT on, the total.
    for v in versions.into_iter().filter(|v| *v > 0) {
        let sum: Option<i64> = db
            .query_one(
                &format!("SELECT sum(balance)::BIGINT FROM b.accounts VERSION AS OF {v}"),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(sum, Some(ACCOUNTS * BALANCE), "version {v}");
    }
    // A last load without faults: every landed file is there once.
    db.simple_query(
        "COPY INTO b.loaded FROM 's3://faulty/ingest/land' FILEFORMAT = CSV \
         FORMAT_OPTIONS ('header' = 'true', 'inferSchema' = 'true')",
    )
    .await
    .unwrap();
    let landed = *landed.lock().unwrap();
    let r = db
        .query_one(
            "SELECT count(*), count(DISTINCT id), count(DISTINCT file) FROM b.loaded",
            &[],
        )
        .await
        .unwrap();
    let (rows, ids, files): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
    assert_eq!(
        (rows, ids, files),
        (landed as i64 * 5, landed as i64 * 5, landed as i64)
    );

    // The deltalake package reads the appends as the server does.
    let total: i64 = db
        .query_one("SELECT count(*) FROM b.appends", &[])
        .await
        .unwrap()
        .get(0);
    let script = format!(
        "import deltalake\n\
         t = deltalake.DeltaTable('s3://faulty/wh/b/appends', storage_options={{\
         'AWS_ENDPOINT_URL': 'http://127.0.0.1:{}', 'AWS_ALLOW_HTTP': 'true', \
         'AWS_ACCESS_KEY_ID': 'testing', 'AWS_SECRET_ACCESS_KEY': 'testing', \
         'AWS_REGION': 'us-east-1', 'AWS_S3_ALLOW_UNSAFE_RENAME': 'true'}})\n\
         q = deltalake.QueryBuilder().register('t', t).execute('SELECT count(*) AS n FROM t')\n\
         print(q.read_all()['n'][0].as_py())",
        moto.port
    );
    // Through deltalake's own DataFusion (its pyarrow reader aborted now
    // and then in a subprocess here), without cargo's library path.
    let out = std::process::Command::new(&python)
        .env_remove("LD_LIBRARY_PATH")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(read, total);
    eprintln!(
        "checked: {} acknowledged appends of {} present once ({} batches in all, none in part), \
         the accounts' total at every version, {landed} landed files loaded once, \
         {total} rows read alike by deltalake",
        acked.len(),
        ROWS,
        counts.len()
    );
}

/// PUT straight into moto (moto does not check signatures).
fn put_object(port: u16, key: &str, body: &str) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "PUT /{key} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(
        out.starts_with("HTTP/1.1 200") || out.starts_with("HTTP/1.0 200"),
        "{out}"
    );
}
