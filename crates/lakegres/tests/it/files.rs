//! Loading and reading files (issue #5): COPY INTO's record of loaded files
//! across restarts and between concurrent loads, malformed files, reading
//! files in SQL, and the file roots every path must stay inside.

use futures::StreamExt;

use crate::common::{column, TestServer};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

async fn count(db: &tokio_postgres::Client, table: &str) -> i64 {
    db.query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .unwrap()
        .get(0)
}

async fn copy_into(db: &tokio_postgres::Client, sql: &str) -> (i64, i64, i64) {
    let row = db.query_one(sql, &[]).await.unwrap();
    (row.get(0), row.get(1), row.get(2))
}

#[tokio::test]
async fn copy_into_remembers_loaded_files_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("warehouse");
    let ingest = dir.path().join("ingest");
    write(&ingest.join("d/a.csv"), "id,v\n1,x\n2,y\n");
    let copy = "COPY INTO t FROM 'd' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')";
    {
        let mut srv = TestServer::start_in(&warehouse);
        let db = srv.connect().await;
        db.batch_execute("CREATE TABLE t (id INT, v STRING)")
            .await
            .unwrap();
        assert_eq!(copy_into(&db, copy).await, (2, 2, 0));
        srv.stop();
    }
    // A name that needs encoding in a URL.
    write(&ingest.join("d/b c+%.csv"), "id,v\n3,z\n");
    let srv = TestServer::start_in(&warehouse);
    let db = srv.connect().await;
    assert_eq!(copy_into(&db, copy).await, (1, 1, 0));
    assert_eq!(copy_into(&db, copy).await, (0, 0, 0));
    assert_eq!(count(&db, "t").await, 3);
    // Each load commits one `txn` naming its record of the files it loaded.
    let log =
        std::fs::read_to_string(warehouse.join("default/t/_delta_log/00000000000000000002.json"))
            .unwrap();
    assert_eq!(log.matches("\"txn\"").count(), 1, "{log}");
    assert!(log.contains("\"appId\":\"lakegres.copy_into\""), "{log}");
    assert_eq!(records(&warehouse.join("default/t")).len(), 2);
}

/// The record files of a table, oldest first.
fn records(table: &std::path::Path) -> Vec<serde_json::Value> {
    let mut names: Vec<_> = std::fs::read_dir(table.join("_lakegres_copy_into"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

/// The record of loaded files (issue #27): one `txn` per load however many
/// files it loaded, a chain of record files that one in 16 ends, read
/// again after a restart; a file loaded once is skipped even when it
/// changed since, RESTORE does not make loaded files new, and a record
/// that went missing is an error, not a reload of everything.
#[tokio::test]
async fn the_record_of_loaded_files_is_a_chain_one_txn_per_load() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("warehouse");
    let ingest = dir.path().join("ingest");
    let table = warehouse.join("default/chain");
    let copy = "COPY INTO chain FROM 'c' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')";
    {
        let mut srv = TestServer::start_in(&warehouse);
        let db = srv.connect().await;
        db.batch_execute("CREATE TABLE chain (id INT, v STRING)")
            .await
            .unwrap();
        // 18 loads: the 17th record starts the chain again.
        for load in 0..18 {
            for f in 0..3 {
                let id = load * 3 + f;
                write(
                    &ingest.join(format!("c/{load:02}/{f}.csv")),
                    &format!("id,v\n{id},x\n"),
                );
            }
            assert_eq!(copy_into(&db, copy).await, (3, 3, 0), "load {load}");
        }
        assert_eq!(copy_into(&db, copy).await, (0, 0, 0));
        srv.stop();
    }
    let chain = records(&table);
    assert_eq!(chain.len(), 18);
    let depths: Vec<u64> = chain.iter().map(|r| r["depth"].as_u64().unwrap()).collect();
    assert_eq!(depths, (0..16).chain(0..2).collect::<Vec<u64>>());
    assert_eq!(chain[16]["files"].as_array().unwrap().len(), 51);
    assert!(chain[16]["previous"].is_null());
    assert_eq!(chain[17]["files"].as_array().unwrap().len(), 3);
    for version in 1..=18u64 {
        let log =
            std::fs::read_to_string(table.join(format!("_delta_log/{version:020}.json"))).unwrap();
        assert_eq!(log.matches("\"txn\"").count(), 1, "version {version}");
    }

    // Cold: the record is read back from its files.
    let mut srv = TestServer::start_in(&warehouse);
    let db = srv.connect().await;
    // Changed since it was loaded: still loaded (Databricks skips it too).
    write(&ingest.join("c/00/0.csv"), "id,v\n1000,changed\n");
    write(&ingest.join("c/new.csv"), "id,v\n2000,new\n");
    assert_eq!(copy_into(&db, copy).await, (1, 1, 0));
    assert_eq!(count(&db, "chain").await, 55);
    // RESTORE to before the last load: its file stays loaded.
    db.batch_execute("RESTORE TABLE chain TO VERSION AS OF 18")
        .await
        .unwrap();
    assert_eq!(count(&db, "chain").await, 54);
    assert_eq!(copy_into(&db, copy).await, (0, 0, 0));
    // VACUUM deletes the restored-away data file, not the records.
    db.batch_execute(
        "SET spark.databricks.delta.retentionDurationCheck.enabled = false; \
         VACUUM chain RETAIN 0 HOURS",
    )
    .await
    .unwrap();
    assert_eq!(records(&table).len(), 19);
    assert_eq!(copy_into(&db, copy).await, (0, 0, 0));
    let forced = "COPY INTO chain FROM 'c' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true') \
                  FILES = ('new.csv') COPY_OPTIONS ('force' = 'true')";
    assert_eq!(copy_into(&db, forced).await, (1, 1, 0));
    srv.stop();

    // The newest record gone missing: COPY INTO cannot tell what is new, and says so.
    let first = std::fs::read_dir(table.join("_lakegres_copy_into"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    std::fs::remove_file(&first).unwrap();
    let srv = TestServer::start_in(&warehouse);
    let db = srv.connect().await;
    let versions = srv.delta_versions("default", "chain");
    let err = db.query_one(copy, &[]).await.unwrap_err();
    let db_err = err.as_db_error().unwrap();
    assert_eq!(db_err.code().code(), "58030", "{err:?}");
    assert!(
        db_err.message().contains("_lakegres_copy_into/"),
        "{}",
        db_err.message()
    );
    assert_eq!(srv.delta_versions("default", "chain"), versions);
}

/// Tables loaded by earlier versions recorded one `txn` per file (app id
/// `lakegres.copy_into:<path>`): those files stay loaded.
#[tokio::test]
async fn files_recorded_one_txn_each_stay_loaded() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE old (id INT, v STRING)")
        .await
        .unwrap();
    let dir = srv.ingest().join("old");
    write(&dir.join("a.csv"), "id,v\n1,a\n");
    write(&dir.join("b.csv"), "id,v\n2,b\n");
    // Version 1 as an earlier Lakegres wrote it: a.csv recorded, no rows
    // (enough to tell whether the record is honoured).
    let a: String = db
        .query_one(
            "SELECT path FROM list_files('old') WHERE name = 'a.csv'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let commit = format!(
        "{{\"commitInfo\":{{\"timestamp\":1,\"operation\":\"COPY INTO\"}}}}\n\
         {{\"txn\":{{\"appId\":\"lakegres.copy_into:{}\",\"version\":1}}}}\n",
        a
    );
    std::fs::write(
        srv.warehouse
            .join("default/old/_delta_log/00000000000000000001.json"),
        commit,
    )
    .unwrap();
    let copy = "COPY INTO old FROM 'old' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')";
    assert_eq!(copy_into(&db, copy).await, (1, 1, 0));
    let rows = db.query("SELECT id FROM old", &[]).await.unwrap();
    assert_eq!(
        rows.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>(),
        vec![2]
    );
    assert_eq!(copy_into(&db, copy).await, (0, 0, 0));
}

/// Two servers on one warehouse load the same folder at once: each file
/// is loaded by exactly one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn copy_into_on_two_servers_loads_each_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("warehouse");
    let one = TestServer::start_in(&warehouse);
    let two = TestServer::start_in(&warehouse);
    let (a, b) = (one.connect().await, two.connect().await);
    a.batch_execute("CREATE TABLE both_ (id BIGINT, v STRING)")
        .await
        .unwrap();
    let copy = "COPY INTO both_ FROM 'both' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')";
    let mut expected = 0;
    for round in 0..4 {
        for f in 0..5 {
            let rows: String = (0..2_000)
                .map(|i| format!("{},r{round}\n", (round * 10 + f) * 100_000 + i))
                .collect();
            write(
                &dir.path().join(format!("ingest/both/{round}-{f}.csv")),
                &format!("id,v\n{rows}"),
            );
        }
        expected += 10_000;
        let (ra, rb) = tokio::join!(a.query_one(copy, &[]), b.query_one(copy, &[]));
        let loaded: i64 = [ra.unwrap(), rb.unwrap()]
            .iter()
            .map(|r| r.get::<_, i64>(1))
            .sum();
        assert_eq!(loaded, 10_000, "round {round}");
        assert_eq!(count(&a, "both_").await, expected);
        assert_eq!(count(&b, "both_").await, expected);
    }
    // A load that lost the race took its record back.
    assert_eq!(records(&warehouse.join("default/both_")).len(), 4);
}

/// At scale: deciding that 5,000 loaded files are not new takes a small
/// part of loading them, and the files land in a few data files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_over_many_loaded_files_is_cheap() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE many (id BIGINT, name STRING)")
        .await
        .unwrap();
    let dir = srv.ingest().join("many");
    for f in 0..5_000 {
        write(
            &dir.join(format!("{:02}/{f:05}.csv", f / 500)),
            &format!("id,name\n{},n{f}\n{},m{f}\n", f * 2, f * 2 + 1),
        );
    }
    let copy = "COPY INTO many FROM 'many' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')";
    let start = std::time::Instant::now();
    assert_eq!(copy_into(&db, copy).await, (10_000, 10_000, 0));
    let load = start.elapsed();
    let start = std::time::Instant::now();
    assert_eq!(copy_into(&db, copy).await, (0, 0, 0));
    let rerun = start.elapsed();
    assert!(
        rerun * 10 < load,
        "the re-run took {rerun:?}, the load {load:?}"
    );
    let files = srv.data_files("default", "many");
    assert!(files <= 4, "{files} data files");
    let row = db
        .query_one("SELECT count(DISTINCT id), sum(id) FROM many", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 10_000);
    assert_eq!(row.get::<_, i64>(1), 49_995_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_copy_into_loads_each_file_once() {
    let srv = TestServer::start();
    let setup = srv.connect().await;
    setup
        .batch_execute("CREATE TABLE race (id BIGINT, v STRING)")
        .await
        .unwrap();
    let mut expected = 0;
    for round in 0..4 {
        let rows: String = (0..20_000)
            .map(|i| format!("{},r{round}\n", round * 100_000 + i))
            .collect();
        write(
            &srv.ingest().join(format!("race/f{round}.csv")),
            &format!("id,v\n{rows}"),
        );
        expected += 20_000;
        let copy = "COPY INTO race FROM 'race' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')";
        let a = srv.connect().await;
        let b = srv.connect().await;
        let (ra, rb) = tokio::join!(a.query_one(copy, &[]), b.query_one(copy, &[]));
        let loaded: i64 = [ra.unwrap(), rb.unwrap()]
            .iter()
            .map(|r| r.get::<_, i64>(1))
            .sum();
        assert_eq!(
            loaded, 20_000,
            "round {round}: the file was loaded {loaded} rows' worth"
        );
        assert_eq!(count(&setup, "race").await, expected);
    }
    assert_eq!(records(&srv.warehouse.join("default/race")).len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_loads_of_a_table_without_columns_load_once() {
    let srv = TestServer::start();
    let setup = srv.connect().await;
    setup.batch_execute("CREATE TABLE bare").await.unwrap();
    let rows: String = (0..20_000).map(|i| format!("{i},v{i}\n")).collect();
    write(&srv.ingest().join("bare/f.csv"), &format!("id,v\n{rows}"));
    let copy = "COPY INTO bare FROM 'bare' FILEFORMAT = CSV \
                FORMAT_OPTIONS ('header' = 'true', 'inferSchema' = 'true') \
                COPY_OPTIONS ('mergeSchema' = 'true')";
    let a = srv.connect().await;
    let b = srv.connect().await;
    let (ra, rb) = tokio::join!(a.query_one(copy, &[]), b.query_one(copy, &[]));
    let mut loaded: Vec<i64> = [ra.unwrap(), rb.unwrap()]
        .iter()
        .map(|r| r.get::<_, i64>(1))
        .collect();
    loaded.sort();
    assert_eq!(loaded, vec![0, 20_000]);
    assert_eq!(count(&setup, "bare").await, 20_000);
    // One Delta table, created by the first load, with the files' columns;
    // the stand-in for the table without columns is gone.
    let table = srv.warehouse.join("default/bare");
    assert!(table.join("_delta_log/00000000000000000000.json").exists());
    assert!(!table.join("_delta_log/00000000000000000001.json").exists());
    assert!(!table.join(lakegres_delta::SCHEMALESS_MARKER).exists());
    let row = setup
        .query_one("SELECT sum(id) FROM bare WHERE v = 'v7'", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 7);
}

#[tokio::test]
async fn malformed_files_fail_the_load_and_mark_nothing_loaded() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE m (id INT, v STRING)")
        .await
        .unwrap();
    write(&srv.ingest().join("m/good.csv"), "id,v\n1,a\n");
    write(&srv.ingest().join("m/bad.csv"), "id,v\n2,b\nthree,c\n");
    let copy = "COPY INTO m FROM 'm' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')";
    let err = db.query_one(copy, &[]).await.unwrap_err();
    let db_err = err.as_db_error().unwrap();
    let code = db_err.code().code();
    assert!(code == "22018" || code == "22P02", "{err:?}");
    assert!(db_err.message().contains("bad.csv"), "{}", db_err.message());
    assert_eq!(count(&db, "m").await, 0);
    assert_eq!(srv.delta_versions("default", "m"), vec![0]);
    // Asked to, the load skips the bad file, counts it, and does not
    // record it as loaded.
    let skip = "COPY INTO m FROM 'm' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true', 'ignoreCorruptFiles' = 'true')";
    assert_eq!(copy_into(&db, skip).await, (1, 1, 1));
    assert_eq!(count(&db, "m").await, 1);
    // Fixed, it loads on the next run.
    write(&srv.ingest().join("m/bad.csv"), "id,v\n2,b\n3,c\n");
    assert_eq!(copy_into(&db, copy).await, (2, 2, 0));
    // A truncated line: error, nothing loaded.
    write(&srv.ingest().join("m/cut.csv"), "id,v\n4\n");
    let err = db.query_one(copy, &[]).await.unwrap_err();
    assert!(err.code().is_some(), "{err:?}");
    assert_eq!(count(&db, "m").await, 3);
}

/// Files whose columns are not in lower case (`ID`, `OrderId`): SQL finds
/// them by any case, as Databricks does, in read_files, `json.\`path\``
/// and COPY INTO's SELECT; they show in lower case.
#[tokio::test]
async fn mixed_case_file_columns_are_found_in_any_case() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    write(&srv.ingest().join("mc/a.csv"), "ID,Name\n1,ann\n2,ben\n");
    write(
        &srv.ingest().join("mj/x.json"),
        "{\"OrderId\": 7, \"Amount\": 2}\n{\"OrderId\": 8, \"Amount\": 3}\n",
    );
    let read = "read_files('mc', format => 'csv', header => true, inferSchema => true)";
    let names: Vec<String> = column(
        &db,
        &format!("SELECT name FROM {read} WHERE id = 2 AND ID = 2 AND Id = 2"),
        0,
    )
    .await;
    assert_eq!(names, ["ben"]);
    let columns: Vec<String> = db
        .prepare(&format!("SELECT * FROM {read}"))
        .await
        .unwrap()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    assert_eq!(columns, ["id", "name"]);
    let row = db
        .query_one("SELECT sum(orderid), sum(AMOUNT) FROM json.`mj`", &[])
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (15, 5));
    db.batch_execute("CREATE TABLE people (id INT, name STRING)")
        .await
        .unwrap();
    let loaded = copy_into(
        &db,
        "COPY INTO people FROM (SELECT CAST(Id AS INT) AS id, upper(NAME) AS name FROM 'mc') \
         FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')",
    )
    .await;
    assert_eq!(loaded.0, 2);
    let people: Vec<String> = column(&db, "SELECT name FROM people ORDER BY id", 0).await;
    assert_eq!(people, ["ANN", "BEN"]);
}

#[tokio::test]
async fn files_can_be_read_in_sql() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    let dir = srv.ingest().join("r");
    write(&dir.join("a.csv"), "id,name\n1,ann\n2,ben\n");
    write(&dir.join("b.csv"), "id,name\n3,cat\n");
    write(&dir.join("_SUCCESS"), "");
    write(
        &srv.ingest().join("j/x.json"),
        "{\"k\": 1, \"s\": \"one\"}\n{\"k\": 2, \"s\": \"two\"}\n",
    );

    let rows = db
        .query(
            &format!(
                "SELECT CAST(id AS INT), name FROM read_files('{}', format => 'csv', header => true) ORDER BY 1",
                dir.display()
            ),
            &[],
        )
        .await
        .unwrap();
    let got: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        got,
        vec![(1, "ann".into()), (2, "ben".into()), (3, "cat".into())]
    );

    // Without a header Spark names the columns _c0, _c1 …
    let first: String = db
        .query_one("SELECT _c1 FROM csv.`r/a.csv` WHERE _c0 = '1'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(first, "ann");
    let sum: i64 = db
        .query_one("SELECT sum(k) FROM json.`j`", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(sum, 3);

    let listed = db.query("LIST 'r'", &[]).await.unwrap();
    let names: Vec<String> = listed.iter().map(|r| r.get("name")).collect();
    assert_eq!(names, vec!["a.csv", "b.csv"]);
    db.batch_execute("CREATE TABLE present AS SELECT name, size FROM list_files('r')")
        .await
        .unwrap();
    let sizes: Vec<i64> = column(&db, "SELECT size FROM present ORDER BY name", 0).await;
    assert_eq!(sizes, vec![20, 14]);
}

#[tokio::test]
async fn paths_outside_the_file_roots_are_refused() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE s (id INT)").await.unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(&outside.path().join("secret.csv"), "id\n1\n");
    std::fs::create_dir_all(srv.ingest()).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), srv.ingest().join("link")).unwrap();
    let secret = outside.path().join("secret.csv");
    for sql in [
        format!(
            "COPY INTO s FROM '{}' FILEFORMAT = CSV",
            outside.path().display()
        ),
        "COPY INTO s FROM '../../' FILEFORMAT = CSV".to_string(),
        "COPY INTO s FROM 'link' FILEFORMAT = CSV".to_string(),
        format!(
            "SELECT * FROM read_files('{}', format => 'csv')",
            secret.display()
        ),
        "SELECT * FROM read_files('/etc/passwd', format => 'csv')".to_string(),
        format!("SELECT * FROM csv.`{}`", secret.display()),
        "SELECT * FROM csv.`link/secret.csv`".to_string(),
        "LIST '/etc'".to_string(),
        "SELECT * FROM list_files('..')".to_string(),
    ] {
        let err = db.batch_execute(&sql).await.unwrap_err();
        assert_eq!(err.code().unwrap().code(), "42501", "{sql}: {err:?}");
    }
    assert_eq!(count(&db, "s").await, 0);
}

/// A folder of more files than one batch of a listing holds: LIST and
/// `list_files` return every entry once, in name order, and `read_files`
/// reads them all. The listing streams: its first batch reaches the client
/// before the second is read, and a LIMIT stops it.
#[tokio::test]
async fn many_files_are_listed_and_read() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    let dir = srv.ingest().join("wide");
    std::fs::create_dir_all(&dir).unwrap();
    for f in 0..10_000 {
        std::fs::write(dir.join(format!("{f:05}.csv")), format!("n\n{f}\n")).unwrap();
    }
    std::fs::create_dir(dir.join("sub")).unwrap();
    let names: Vec<String> = column(&db, "LIST 'wide'", 1).await;
    let mut expected: Vec<String> = (0..10_000).map(|f| format!("{f:05}.csv")).collect();
    expected.push("sub/".into());
    assert_eq!(names, expected);
    let row = db
        .query_one(
            "SELECT count(*), count(DISTINCT name) FROM list_files('wide')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, i64>(0), row.get::<_, i64>(1)),
        (10_001, 10_001)
    );
    let row = db
        .query_one(
            "SELECT count(*), sum(n) FROM read_files('wide', format => 'csv', header => true, \
             inferSchema => true)",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, i64>(0), row.get::<_, i64>(1)),
        (10_000, 49_995_000)
    );

    // A link out of the roots, listed last: the rows of the first batch
    // arrive, then 42501 when the batch holding the link is read.
    std::os::unix::fs::symlink("/etc", dir.join("zz-out")).unwrap();
    let mut rows = std::pin::pin!(db
        .query_raw("LIST 'wide'", std::iter::empty::<i32>())
        .await
        .unwrap());
    let mut received = 0;
    let err = loop {
        match rows.next().await {
            Some(Ok(row)) => {
                assert_eq!(row.get::<_, String>(1), format!("{received:05}.csv"));
                received += 1;
            }
            Some(Err(e)) => break e,
            None => panic!("LIST of a link out of the roots succeeded"),
        }
    };
    assert_eq!(received, 8_192);
    assert_eq!(err.code().unwrap().code(), "42501", "{err:?}");
    // A LIMIT takes its rows from the first batch and never reads the link.
    let first: Vec<String> = column(&db, "SELECT name FROM list_files('wide') LIMIT 2", 0).await;
    assert_eq!(first, ["00000.csv", "00001.csv"]);
}
