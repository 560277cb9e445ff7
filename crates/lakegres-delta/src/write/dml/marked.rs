//! UPDATE and DELETE on a table with deletion vectors enabled, merge-on-read
//! as Databricks runs them: the rows the condition matches are marked in
//! deletion vectors and the data files stay as they are; an UPDATE writes
//! only the new versions of the rows it changes.
//!
//! One query — `SELECT file, ordinal[, new values] FROM t WHERE condition`,
//! the plan DataFusion runs for the statement's own condition, subqueries
//! included — names the matched rows ([`crate::write::deletion_vectors`]); no
//! other row is read twice or written. One commit: each touched file
//! removed and added again with its new vector (or only removed, when no
//! row of it is left), and an UPDATE's new files.

use std::sync::Arc;

use datafusion::common::Column;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;
use futures::StreamExt;

use super::matched::{planning, read_predicate, running, Update};
use super::{DmlNode, DmlOp};
use crate::error::{Error, Result};
use crate::read::provider::DeltaProvider;
use crate::write::deletion_vectors::{Marks, ORDINAL_COLUMN};
use crate::write::files::FileWriter;
use crate::write::rewrite::{self, FILE_COLUMN};

/// Runs `node` by marking its rows: the affected rows, and the table at the
/// version committed (`None` when no row matched and nothing was committed).
pub(super) async fn run(
    node: &DmlNode,
    table: DeltaTable,
    state: Arc<SessionState>,
) -> Result<(u64, Option<DeltaTable>)> {
    let name = node.name.to_string();
    let provider = DeltaProvider::of_delta(node.name.clone(), table)?;
    let snapshot = provider.snapshot()?.clone();
    let log_store = provider.table().log_store();
    let state = crate::write::deletion_vectors::ordinal_state(state.as_ref().clone());
    let ctx = SessionContext::new_with_state(state.clone());

    let rows = Arc::new(provider.with_row_ordinal(FILE_COLUMN, ORDINAL_COLUMN)?);
    let column = |name: &str| Expr::Column(Column::new(Some(node.qualifier().clone()), name));
    let mut outputs = vec![column(FILE_COLUMN), column(ORDINAL_COLUMN)];
    if let DmlOp::Update { values } = &node.op {
        outputs.extend(values.iter().cloned());
    }
    let plan = node
        .matching(rows)
        .and_then(|p| p.project(outputs))
        .and_then(|p| p.build())
        .map_err(planning)?;
    let update = match &node.op {
        DmlOp::Update { values } => Some(Update::new(&provider, values, &state)?),
        DmlOp::Delete => None,
    };

    let mut marks = Marks::default();
    let mut writer = FileWriter::new(&name, &snapshot, &log_store);
    let mut stream = ctx
        .execute_logical_plan(plan)
        .await
        .map_err(running)?
        .execute_stream()
        .await
        .map_err(running)?;
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(running)?;
        marks.add(batch.column(0), batch.column(1))?;
        if let Some(update) = &update {
            // Update::row takes (row key, new values…): the ordinal is the key.
            let values = batch
                .project(&(1..batch.num_columns()).collect::<Vec<_>>())
                .map_err(|e| Error::DataFusion {
                    what: "updating rows",
                    source: Box::new(e.into()),
                })?;
            writer.write(&update.row(&values)?).await?;
        }
    }
    if marks.is_empty() {
        return Ok((0, None));
    }
    let too_many = || Error::ScalarSubqueryTooManyRows;
    let marked = marks
        .into_changes(
            &name,
            &snapshot,
            log_store.as_ref(),
            update.is_some().then_some(&too_many),
        )
        .await?;
    let mut added = writer.finish().await?;
    let new_files = added.len();
    added.extend(marked.added);

    let predicate = read_predicate(node, &provider);
    let (operation, changed_key) = node.op.operation(predicate);
    let properties = crate::commit_properties_with([(
        "operationMetrics".to_string(),
        serde_json::json!({
            "num_added_files": new_files,
            "num_removed_files": marked.files_removed,
            changed_key: marked.rows,
            "num_copied_rows": 0,
            "num_deletion_vectors_added": marked.vectors_added,
            "num_deletion_vectors_updated": marked.vectors_updated,
        }),
    )]);
    let table = rewrite::commit(
        node.op.doing(),
        &name,
        provider.table(),
        &snapshot,
        rewrite::Changes {
            removed: marked.removed,
            added,
        },
        operation,
        properties,
    )
    .await?;
    Ok((marked.rows, Some(table)))
}
