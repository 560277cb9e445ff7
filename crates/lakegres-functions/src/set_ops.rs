//! `INTERSECT ALL` and `EXCEPT ALL` with their multiset meaning (Spark's
//! and the standard's): a row that is m times on the left and n times on
//! the right is min(m, n) times in the intersection and max(m - n, 0) times
//! in the difference. DataFusion plans both as a semi / anti join on every
//! column, which keeps all m copies (or none); each side's copies are
//! numbered here, and the join matches copy k with copy k.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, NullEquality, Result};
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{Expr, ExprFunctionExt, JoinType, LogicalPlan, LogicalPlanBuilder};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (before the optimizer, whose own semi and anti joins
/// from IN and EXISTS do not exist yet).
#[derive(Debug)]
pub(crate) struct MultisetSetOperations;

const LEFT_COPY: &str = "__lakegres_left_copy";
const RIGHT_COPY: &str = "__lakegres_right_copy";

impl AnalyzerRule for MultisetSetOperations {
    fn name(&self) -> &str {
        "multiset_intersect_except_all"
    }

    fn analyze(&self, plan: LogicalPlan, _: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            let LogicalPlan::Join(join) = &plan else {
                return Ok(Transformed::no(plan));
            };
            // The join `LogicalPlanBuilder::intersect_or_except` builds for
            // ALL: NULLs equal, no filter, every column a key, and a left
            // side without the DISTINCT it adds for the set forms.
            let width = join.left.schema().fields().len();
            let from_set_operation =
                matches!(join.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
                    && join.null_equality == NullEquality::NullEqualsNull
                    && join.filter.is_none()
                    && join.on.len() == width
                    && join.right.schema().fields().len() == width
                    && !matches!(join.left.as_ref(), LogicalPlan::Distinct(_));
            if !from_set_operation {
                return Ok(Transformed::no(plan));
            }
            let keys: Option<Vec<(Column, Column)>> = join
                .on
                .iter()
                .map(|(l, r)| Some((l.try_as_col()?.clone(), r.try_as_col()?.clone())))
                .collect();
            let Some(keys) = keys else {
                return Ok(Transformed::no(plan));
            };
            let numbered = |side: &Arc<LogicalPlan>, name: &str| -> Result<LogicalPlan> {
                let columns: Vec<Expr> = side
                    .schema()
                    .columns()
                    .into_iter()
                    .map(Expr::Column)
                    .collect();
                let copy = row_number().partition_by(columns).build()?.alias(name);
                LogicalPlanBuilder::from(side.as_ref().clone())
                    .window(vec![copy])?
                    .build()
            };
            let output: Vec<Expr> = join
                .left
                .schema()
                .columns()
                .into_iter()
                .map(Expr::Column)
                .collect();
            let (mut left_keys, mut right_keys): (Vec<Column>, Vec<Column>) =
                keys.into_iter().unzip();
            left_keys.push(Column::from_name(LEFT_COPY));
            right_keys.push(Column::from_name(RIGHT_COPY));
            let rewritten = LogicalPlanBuilder::from(numbered(&join.left, LEFT_COPY)?)
                .join_detailed(
                    numbered(&join.right, RIGHT_COPY)?,
                    join.join_type,
                    (left_keys, right_keys),
                    None,
                    NullEquality::NullEqualsNull,
                )?
                .project(output)?
                .build()?;
            Ok(Transformed::yes(rewritten))
        })
        .map(|t| t.data)
    }
}
