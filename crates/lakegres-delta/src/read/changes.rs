//! The change data feed of a table (`delta.enableChangeDataFeed`): the
//! rows each version between two points inserted, deleted or updated, as
//! delta-rs' CDF provider reads them.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use deltalake::delta_datafusion::DeltaCdfTableProvider;

use crate::catalog::{TableAt, TableName};
use crate::error::{Error, Result};

/// The changes of `table` from `start` to `end` (the latest version when
/// `None`), both included; `None` when the table does not record them.
pub fn feed(
    name: &TableName,
    table: crate::Table,
    start: TableAt,
    end: Option<TableAt>,
) -> Result<Option<Arc<dyn TableProvider>>> {
    let table = table.into_delta();
    let enabled = table.snapshot().ok().is_some_and(|s| {
        s.metadata()
            .configuration()
            .get("delta.enableChangeDataFeed")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    });
    if !enabled {
        return Ok(None);
    }
    let mut builder = table.scan_cdf();
    builder = match start {
        TableAt::Version(v) => builder.with_starting_version(v.unsigned_abs()),
        TableAt::Timestamp(t) => builder.with_starting_timestamp(t),
    };
    builder = match end {
        Some(TableAt::Version(v)) => builder.with_ending_version(v.unsigned_abs()),
        Some(TableAt::Timestamp(t)) => builder.with_ending_timestamp(t),
        None => builder,
    };
    let provider = DeltaCdfTableProvider::try_new(builder)
        .map_err(|e| Error::delta("reading the changes of", name.to_string(), e))?;
    Ok(Some(Arc::new(Changes(provider))))
}

/// delta-rs' feed, without the empty branches of its plan: it unions a scan
/// of change files, of added files and of removed files, and a branch with
/// no files has no partitions at all, which DataFusion's sort pushdown
/// turns into an invalid plan (`ORDER BY` failed).
#[derive(Debug)]
struct Changes(DeltaCdfTableProvider);

#[async_trait]
impl TableProvider for Changes {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }

    fn table_type(&self) -> TableType {
        self.0.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        self.0.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let plan = self.0.scan(state, projection, filters, limit).await?;
        without_empty_branches(plan)
    }
}

fn without_empty_branches(
    plan: Arc<dyn ExecutionPlan>,
) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
    if plan.name() == "UnionExec" {
        let branches: Vec<_> = plan
            .children()
            .into_iter()
            .filter(|c| c.output_partitioning().partition_count() > 0)
            .cloned()
            .collect();
        if branches.is_empty() {
            return Ok(Arc::new(EmptyExec::new(plan.schema())));
        }
        return UnionExec::try_new(branches);
    }
    let children = plan
        .children()
        .into_iter()
        .map(|c| without_empty_branches(Arc::clone(c)))
        .collect::<datafusion::error::Result<Vec<_>>>()?;
    if children.is_empty() {
        return Ok(plan);
    }
    datafusion::physical_plan::execution_plan::replace_children_if_necessary(plan, children)
}
