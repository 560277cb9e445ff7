//! The physical planner of every session: DataFusion's, with the extension
//! planners of delta-rs' own logical nodes (the metric and validation nodes
//! its builders put into write plans) and, later, Lakegres' statement nodes.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};

/// Plans logical plans that may contain delta-rs extension nodes.
#[derive(Debug, Default)]
pub struct LakegresPlanner;

#[async_trait]
impl QueryPlanner for LakegresPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let planner =
            DefaultPhysicalPlanner::with_extension_planners(lakegres_delta::extension_planners());
        planner.create_physical_plan(logical_plan, session).await
    }
}
