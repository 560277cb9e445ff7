//! What the unit tests of several modules build their tables with.

use std::sync::Arc;

use datafusion::arrow::array::{Int32Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;

/// One `id INT` column of these values.
pub(crate) fn rows(ids: &[i32]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", ArrowType::Int32, true)]));
    RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(ids.to_vec()))]).unwrap()
}

/// The ids of the table at its latest version, in order.
pub(crate) async fn ids(table: &DeltaTable) -> Vec<i32> {
    let mut t = table.clone();
    t.update_state().await.unwrap();
    let ctx = SessionContext::new();
    ctx.register_table("t", t.table_provider().await.unwrap())
        .unwrap();
    let batches = ctx
        .sql("SELECT id FROM t ORDER BY id")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    batches
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect()
}
