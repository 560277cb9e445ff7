//! Loading and reading files (issue #5): COPY INTO's record of loaded files
//! across restarts and between concurrent loads, malformed files, reading
//! files in SQL, and the file roots every path must stay inside.

use crate::common::TestServer;

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
    write(&ingest.join("d/b.csv"), "id,v\n3,z\n");
    let srv = TestServer::start_in(&warehouse);
    let db = srv.connect().await;
    assert_eq!(copy_into(&db, copy).await, (1, 1, 0));
    assert_eq!(copy_into(&db, copy).await, (0, 0, 0));
    assert_eq!(count(&db, "t").await, 3);
    // Loaded-file records are Delta `txn` actions in the table's own log.
    let log =
        std::fs::read_to_string(warehouse.join("default/t/_delta_log/00000000000000000002.json"))
            .unwrap();
    assert!(
        log.contains("\"txn\"") && log.contains("lakegres.copy_into:"),
        "{log}"
    );
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
    let sizes: Vec<i64> = db
        .query("SELECT size FROM present ORDER BY name", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
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
