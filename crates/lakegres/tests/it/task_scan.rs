//! The Delta scan that travels to other processes (`lakegres_delta::task_scan`):
//! planned by a session that sends its scans, encoded, decoded by a session
//! that only has the table's location (as a worker would), and executed, it
//! gives exactly the rows of the local scan — partition values (NULL and
//! ones that need escaping), column mapping with renamed columns, an added
//! column, time travel — and a task's share of the files reads those files.
//!
//! Tables are made through the server, as users make them; the scans run in
//! this process.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::{collect, ExecutionPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};
use lakegres_delta::task_scan::{DeltaTaskScanExec, SentScans, TaskScanCodec, TaskTables};
use lakegres_delta::{Catalog, DeltaProvider, TableAt, TableName};

use crate::common::TestServer;

/// A session whose Delta scans can be sent elsewhere, reading `table` at
/// `version` (the latest when `None`) under the name `t`.
async fn planning_session(srv: &TestServer, table: &str, version: Option<u64>) -> SessionContext {
    let warehouse = srv.warehouse.to_str().unwrap();
    let catalog = Catalog::open(warehouse, Default::default()).await.unwrap();
    let name = TableName::new("default", table).unwrap();
    let loaded = match version {
        Some(v) => {
            catalog
                .load_table_at(&name, &TableAt::Version(v as i64))
                .await
        }
        None => catalog.load_table(&name).await,
    }
    .unwrap();
    let provider = DeltaProvider::try_new(name, loaded).unwrap();
    let config = SessionConfig::new()
        .with_target_partitions(3)
        .with_option_extension(SentScans::on());
    let ctx = SessionContext::new_with_config(config);
    ctx.register_table("t", Arc::new(provider)).unwrap();
    ctx
}

/// A session that has nothing but the storage options: what runs a sent
/// plan.
fn receiving_session() -> SessionContext {
    let config = SessionConfig::new().with_option_extension(TaskTables::new(HashMap::new()));
    SessionContext::new_with_config(config)
}

/// The plan sent and received: encoded and decoded by the codec.
fn sent(plan: &Arc<dyn ExecutionPlan>, receiver: &SessionContext) -> Arc<dyn ExecutionPlan> {
    let bytes =
        physical_plan_to_bytes_with_extension_codec(Arc::clone(plan), &TaskScanCodec).unwrap();
    physical_plan_from_bytes_with_extension_codec(&bytes, &receiver.task_ctx(), &TaskScanCodec)
        .unwrap()
}

/// The rows `plan` gives, one line each, sorted.
async fn rows(plan: Arc<dyn ExecutionPlan>, ctx: &SessionContext) -> Vec<String> {
    let batches = collect(plan, ctx.task_ctx()).await.unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1) // the header
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// The Delta scans in `plan`.
fn task_scans(plan: &Arc<dyn ExecutionPlan>) -> Vec<&DeltaTaskScanExec> {
    let mut found = Vec::new();
    let mut stack = vec![plan];
    while let Some(node) = stack.pop() {
        if let Some(scan) = node.downcast_ref::<DeltaTaskScanExec>() {
            found.push(scan);
        }
        stack.extend(node.children());
    }
    found
}

/// Plans `sql` over `table`, runs it here and after sending it; both give
/// the same rows, which are returned.
async fn same_rows_sent(
    srv: &TestServer,
    table: &str,
    version: Option<u64>,
    sql: &str,
) -> Vec<String> {
    let planner = planning_session(srv, table, version).await;
    let plan = planner
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    assert_eq!(task_scans(&plan).len(), 1, "{sql}: {plan:?}");
    let local = rows(Arc::clone(&plan), &planner).await;
    let receiver = receiving_session();
    let remote = rows(sent(&plan, &receiver), &receiver).await;
    assert_eq!(local, remote, "{sql}");
    local
}

#[tokio::test]
async fn a_sent_scan_reads_what_the_local_scan_reads() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE parts (id BIGINT, region STRING, amount DOUBLE) PARTITIONED BY (region);
         INSERT INTO parts VALUES (1, 'north', 1.5), (2, 'south', 2.5);
         INSERT INTO parts VALUES (3, NULL, 3.5), (4, 'a b:c/d', 4.5);
         INSERT INTO parts VALUES (5, 'north', 5.5), (6, 'a b:c/d', 6.5);",
    )
    .await
    .unwrap();

    let all = same_rows_sent(&srv, "parts", None, "SELECT * FROM t").await;
    assert_eq!(
        all,
        [
            "| 1  | north   | 1.5    |",
            "| 2  | south   | 2.5    |",
            "| 3  |         | 3.5    |",
            "| 4  | a b:c/d | 4.5    |",
            "| 5  | north   | 5.5    |",
            "| 6  | a b:c/d | 6.5    |",
        ]
    );
    // Projection and filters (on data and partition columns) travel.
    let some = same_rows_sent(
        &srv,
        "parts",
        None,
        "SELECT region, id FROM t WHERE amount > 2 AND region <> 'south'",
    )
    .await;
    assert_eq!(
        some,
        ["| a b:c/d | 4  |", "| a b:c/d | 6  |", "| north   | 5  |"]
    );
    // The version travels: version 2 had the first INSERT only.
    let first = same_rows_sent(&srv, "parts", Some(1), "SELECT id FROM t").await;
    assert_eq!(first, ["| 1  |", "| 2  |"]);
}

#[tokio::test]
async fn a_sent_scan_maps_renamed_and_added_columns() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute(
        "CREATE TABLE mapped (id BIGINT, name STRING, day DATE) PARTITIONED BY (day)
             TBLPROPERTIES ('delta.columnMapping.mode' = 'name');
         INSERT INTO mapped VALUES (1, 'ann', DATE'2024-01-01'), (2, 'bob', DATE'2024-01-02');
         ALTER TABLE mapped RENAME COLUMN name TO `given name`;
         ALTER TABLE mapped RENAME COLUMN day TO d;
         ALTER TABLE mapped ADD COLUMN score INT;
         INSERT INTO mapped VALUES (3, 'cy', DATE'2024-01-03', 7);",
    )
    .await
    .unwrap();
    let now = same_rows_sent(
        &srv,
        "mapped",
        None,
        "SELECT id, \"given name\", d, score FROM t",
    )
    .await;
    assert_eq!(
        now,
        [
            "| 1  | ann        | 2024-01-01 |       |",
            "| 2  | bob        | 2024-01-02 |       |",
            "| 3  | cy         | 2024-01-03 | 7     |",
        ]
    );
    // Before the renames, under the old names.
    let before = same_rows_sent(
        &srv,
        "mapped",
        Some(1),
        "SELECT id, name, day FROM t WHERE id = 2",
    )
    .await;
    assert_eq!(before, ["| 2  | bob  | 2024-01-02 |"]);
}

#[tokio::test]
async fn each_task_reads_its_share_of_the_files() {
    let srv = TestServer::start();
    let db = srv.connect().await;
    db.batch_execute("CREATE TABLE shared (id BIGINT, tag STRING)")
        .await
        .unwrap();
    for n in 0..4 {
        db.batch_execute(&format!(
            "INSERT INTO shared VALUES ({}, 'a'), ({}, 'b')",
            2 * n,
            2 * n + 1
        ))
        .await
        .unwrap();
    }
    let planner = planning_session(&srv, "shared", None).await;
    let plan = planner
        .sql("SELECT id, tag FROM t")
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let scan = *task_scans(&plan).first().unwrap();
    let files: Vec<String> = scan.files().iter().map(|f| f.location.clone()).collect();
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(scan.files().iter().all(|f| f.bytes > 0));

    let receiver = receiving_session();
    let mut union = Vec::new();
    for share in files.chunks(3) {
        let task: Arc<dyn ExecutionPlan> = Arc::new(scan.for_files(share.to_vec()).unwrap());
        let got = rows(sent(&task, &receiver), &receiver).await;
        // Each file holds two rows.
        assert_eq!(got.len(), 2 * share.len(), "{share:?}: {got:?}");
        union.extend(got);
    }
    union.sort();
    assert_eq!(union, rows(Arc::clone(&plan), &planner).await);
    assert_eq!(union.len(), 8);

    // A file that is not the scan's is refused where the share is made,
    assert!(scan.for_files(vec!["elsewhere.parquet".into()]).is_err());
    // and one gone by the time the task runs fails the task (never fewer
    // rows).
    let task: Arc<dyn ExecutionPlan> = Arc::new(scan.for_files(vec![files[0].clone()]).unwrap());
    let converter = DefaultPhysicalProtoConverter {};
    let mut wire = Vec::new();
    TaskScanCodec
        .try_encode(task, &mut wire, &converter)
        .unwrap();
    let wire = String::from_utf8(wire)
        .unwrap()
        .replace(&files[0], "part-gone.parquet");
    let decoded = TaskScanCodec
        .try_decode(wire.as_bytes(), &[], &receiver.task_ctx(), &converter)
        .unwrap();
    let err = collect(decoded, receiver.task_ctx()).await.unwrap_err();
    assert!(err.to_string().contains("part-gone.parquet"), "{err}");
}

#[test]
fn the_codec_refuses_other_nodes_without_writing() {
    use datafusion::physical_plan::empty::EmptyExec;
    let empty: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(Arc::new(
        datafusion::arrow::datatypes::Schema::empty(),
    )));
    let mut buf = Vec::new();
    assert!(TaskScanCodec
        .try_encode(empty, &mut buf, &DefaultPhysicalProtoConverter {})
        .is_err());
    assert!(buf.is_empty());
}
