//! The 22 TPC-H queries (bench/tpch's SQLBench-H texts) on a cluster: one
//! server and two `lakegres worker` processes give, row for row, what one
//! server gives alone, on a local warehouse and on S3 (moto). The data is
//! made in process by tpchgen (the generator behind `tpchgen-cli`) as
//! Parquet files and loaded by CTAS, all but the two tiny tables in three
//! parts so that their scans are shared among tasks.
//!
//! `LAKEGRES_TPCH_SCALE` sets the scale factor (default 0.01, a few seconds
//! per query set in a debug build); `LAKEGRES_TPCH_SCALE=1` is the SF1
//! check of issue #28.

use std::path::{Path, PathBuf};

use datafusion::arrow::record_batch::RecordBatchReader;
use datafusion::parquet::arrow::ArrowWriter;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

use crate::common::{texts, Moto, TestServer, Workers};

const TABLES: [&str; 8] = [
    "nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

fn scale() -> f64 {
    std::env::var("LAKEGRES_TPCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.01)
}

fn write(reader: impl RecordBatchReader, path: &Path) {
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, reader.schema(), None).unwrap();
    for batch in reader {
        writer.write(&batch.unwrap()).unwrap();
    }
    writer.close().unwrap();
}

/// `<table>.parquet` for every table in `dir`, as `tpchgen-cli parquet`
/// makes them.
fn generate(dir: &Path, sf: f64) {
    let tables: [(&str, Box<dyn RecordBatchReader>); 8] = [
        (
            "nation",
            Box::new(NationArrow::new(NationGenerator::new(sf, 1, 1))),
        ),
        (
            "region",
            Box::new(RegionArrow::new(RegionGenerator::new(sf, 1, 1))),
        ),
        (
            "part",
            Box::new(PartArrow::new(PartGenerator::new(sf, 1, 1))),
        ),
        (
            "supplier",
            Box::new(SupplierArrow::new(SupplierGenerator::new(sf, 1, 1))),
        ),
        (
            "partsupp",
            Box::new(PartSuppArrow::new(PartSuppGenerator::new(sf, 1, 1))),
        ),
        (
            "customer",
            Box::new(CustomerArrow::new(CustomerGenerator::new(sf, 1, 1))),
        ),
        (
            "orders",
            Box::new(OrderArrow::new(OrderGenerator::new(sf, 1, 1))),
        ),
        (
            "lineitem",
            Box::new(LineItemArrow::new(LineItemGenerator::new(sf, 1, 1))),
        ),
    ];
    for (table, reader) in tables {
        write(reader, &dir.join(format!("{table}.parquet")));
    }
}

/// A query's statements (q15 makes and drops a view around its SELECT).
fn statements(n: usize) -> Vec<String> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/tpch/queries")
        .join(format!("q{n}.sql"));
    let text = std::fs::read_to_string(&file).unwrap();
    let text: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect();
    text.join("\n")
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

async fn load(db: &tokio_postgres::Client, data: &Path) {
    for t in TABLES {
        let source = format!("parquet.`{}`", data.join(format!("{t}.parquet")).display());
        // All but the two tiny tables in three parts by key: three files
        // each, so that their scans are cut into tasks.
        let key = match t {
            "part" => Some("p_partkey"),
            "supplier" => Some("s_suppkey"),
            "partsupp" => Some("ps_partkey"),
            "customer" => Some("c_custkey"),
            "orders" => Some("o_orderkey"),
            "lineitem" => Some("l_orderkey"),
            _ => None,
        };
        match key {
            None => db
                .batch_execute(&format!("CREATE TABLE {t} AS SELECT * FROM {source}"))
                .await
                .unwrap(),
            Some(key) => {
                for part in 0..3 {
                    let rows = format!("SELECT * FROM {source} WHERE {key} % 3 = {part}");
                    let sql = if part == 0 {
                        format!("CREATE TABLE {t} AS {rows}")
                    } else {
                        format!("INSERT INTO {t} {rows}")
                    };
                    db.batch_execute(&sql).await.unwrap();
                }
            }
        }
    }
}

/// Runs a query's statements; the rows are its SELECT's.
async fn run(db: &tokio_postgres::Client, n: usize) -> Vec<Vec<Option<String>>> {
    let mut rows = Vec::new();
    for stmt in statements(n) {
        let out = texts(db, &stmt).await;
        if stmt.to_lowercase().starts_with("select") {
            rows = out;
        }
    }
    rows
}

/// Every query on one server, then cut into stages on the workers: the
/// same rows, in the same order (each query's ORDER BY has no ties at this
/// scale; a tie would show as a difference here and needs a look).
async fn same_rows_on_the_cluster(db: &tokio_postgres::Client) {
    let mut kept_local = Vec::new();
    for n in 1..=22 {
        db.batch_execute("SET lakegres.distributed = off")
            .await
            .unwrap();
        let alone = run(db, n).await;
        db.batch_execute("SET lakegres.distributed = force")
            .await
            .unwrap();
        let spread = run(db, n).await;
        assert_eq!(alone, spread, "q{n}: the cluster's rows differ");
        let select = statements(n)
            .into_iter()
            .find(|s| s.to_lowercase().starts_with("select"))
            .unwrap();
        // q15's view is gone after its run; EXPLAIN of the others.
        if n != 15 {
            let plan = format!("{:?}", texts(db, &format!("EXPLAIN {select}")).await);
            if !plan.contains("DistributedExec") {
                kept_local.push(n);
            }
        }
    }
    // Every query but q15 (not explained) was cut into stages.
    assert!(
        kept_local.is_empty(),
        "stayed on the server: {kept_local:?}"
    );
}

#[tokio::test]
async fn tpch_on_a_cluster_gives_the_rows_of_one_server() {
    let data = tempfile::tempdir().unwrap();
    generate(data.path(), scale());
    let workers = Workers::start(2, &[], &[]);
    let warehouse = tempfile::tempdir().unwrap();
    let mut flags = vec![
        "--warehouse".to_string(),
        warehouse.path().display().to_string(),
        "--file-root".to_string(),
        data.path().display().to_string(),
        // Small tasks, so that each table's files are shared among them.
        "--bytes-per-task".to_string(),
        "65536".to_string(),
    ];
    flags.extend(workers.server_flags());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let srv = TestServer::try_spawn(&flags, &[]).unwrap();
    let db = srv.connect().await;
    load(&db, data.path()).await;
    same_rows_on_the_cluster(&db).await;
}

#[tokio::test]
async fn tpch_on_an_s3_cluster_gives_the_rows_of_one_server() {
    let Some(moto) = Moto::start("tpch") else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    generate(data.path(), scale());
    let storage = moto.warehouse_flags("wh");
    let storage: Vec<&str> = storage.iter().map(String::as_str).collect();
    let workers = Workers::start(2, &storage, &Moto::credentials());
    let mut flags = vec![
        "--file-root".to_string(),
        data.path().display().to_string(),
        "--bytes-per-task".to_string(),
        "65536".to_string(),
    ];
    flags.extend(workers.server_flags());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let srv = TestServer::start_s3(&moto, "wh", &flags);
    let db = srv.connect().await;
    load(&db, data.path()).await;
    let before = moto.keys("wh/");
    same_rows_on_the_cluster(&db).await;
    // The workers (and the queries) wrote nothing to the bucket.
    assert_eq!(moto.keys("wh/"), before);
}
