//! `x NOT IN (SELECT y …)` over keys the Delta log proves free of NULLs,
//! planned as a plain anti join.
//!
//! DataFusion plans `NOT IN` as a null-aware anti join unless both keys are
//! declared NOT NULL; a null-aware join must collect its whole left side
//! (usually the large one) in one partition. Tables made by CTAS, as on
//! Spark, have only nullable columns, yet their log's `nullCount` for each
//! file often says no NULL is there. When it says so for both keys at the
//! versions the statement reads, the two joins return the same rows, and
//! the plain one runs partitioned.

use datafusion::arrow::array::{Array, UInt64Array};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, JoinType, Result as DFResult};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{Distinct, Expr, Join, LogicalPlan};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};
use datafusion::physical_optimizer::pruning::PruningStatistics;

use crate::read::provider::DeltaProvider;

/// Clears `null_aware` on anti joins whose keys hold no NULLs.
#[derive(Debug, Default)]
pub struct NullFreeNotIn;

impl OptimizerRule for NullFreeNotIn {
    fn name(&self) -> &str {
        "lakegres_null_free_not_in"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> DFResult<Transformed<LogicalPlan>> {
        let LogicalPlan::Join(join) = plan else {
            return Ok(Transformed::no(plan));
        };
        if !join.null_aware || !keys_never_null(&join) {
            return Ok(Transformed::no(LogicalPlan::Join(join)));
        }
        Ok(Transformed::yes(LogicalPlan::Join(Join {
            null_aware: false,
            ..join
        })))
    }
}

/// Every column of the join's keys and filter is a column of one side
/// that holds no NULL.
fn keys_never_null(join: &Join) -> bool {
    let mut exprs: Vec<&Expr> = join.on.iter().flat_map(|(l, r)| [l, r]).collect();
    exprs.extend(join.filter.as_ref());
    let columns: Vec<&Column> = exprs.iter().flat_map(|e| e.column_refs()).collect();
    !columns.is_empty()
        && columns.into_iter().all(|column| {
            [&join.left, &join.right].into_iter().any(|side| {
                side.schema()
                    .maybe_index_of_column(column)
                    .is_some_and(|i| never_null(side, i))
            })
        })
}

/// Whether output column `index` of `plan` can hold no NULL: declared NOT
/// NULL, or traced through plain column references to a Delta table whose
/// every file's statistics count no NULL in it.
fn never_null(plan: &LogicalPlan, index: usize) -> bool {
    let schema = plan.schema();
    if index >= schema.fields().len() {
        return false;
    }
    if !schema.field(index).is_nullable() {
        return true;
    }
    match plan {
        LogicalPlan::Projection(p) => p.expr.get(index).is_some_and(|e| {
            let e = match e {
                Expr::Alias(a) => a.expr.as_ref(),
                e => e,
            };
            match e {
                Expr::Column(c) => p
                    .input
                    .schema()
                    .maybe_index_of_column(c)
                    .is_some_and(|i| never_null(&p.input, i)),
                _ => false,
            }
        }),
        // The same columns as their input, in the same order.
        LogicalPlan::Filter(_)
        | LogicalPlan::Sort(_)
        | LogicalPlan::Limit(_)
        | LogicalPlan::Repartition(_)
        | LogicalPlan::SubqueryAlias(_)
        | LogicalPlan::Distinct(Distinct::All(_)) => plan
            .inputs()
            .first()
            .is_some_and(|input| never_null(input, index)),
        LogicalPlan::Aggregate(a) => match a.group_expr.get(index) {
            // Grouping sets put NULLs in the columns a set leaves out.
            _ if a
                .group_expr
                .iter()
                .any(|e| matches!(e, Expr::GroupingSet(_))) =>
            {
                false
            }
            Some(Expr::Column(c)) => a
                .input
                .schema()
                .maybe_index_of_column(c)
                .is_some_and(|i| never_null(&a.input, i)),
            _ => false,
        },
        LogicalPlan::Join(j) => {
            let left = j.left.schema().fields().len();
            match j.join_type {
                // Each output row holds a row of each side.
                JoinType::Inner if index < left => never_null(&j.left, index),
                JoinType::Inner => never_null(&j.right, index - left),
                JoinType::Left if index < left => never_null(&j.left, index),
                JoinType::Right if index >= left => never_null(&j.right, index - left),
                JoinType::LeftSemi | JoinType::LeftAnti => never_null(&j.left, index),
                JoinType::RightSemi | JoinType::RightAnti => never_null(&j.right, index),
                _ => false,
            }
        }
        LogicalPlan::TableScan(scan) => {
            let Ok(provider) = source_as_provider(&scan.source) else {
                return false;
            };
            let Some(delta) = provider.downcast_ref::<DeltaProvider>() else {
                return false;
            };
            let source_index = match &scan.projection {
                Some(projection) => match projection.get(index) {
                    Some(i) => *i,
                    None => return false,
                },
                None => index,
            };
            let table_schema = provider.schema();
            let Some(field) = table_schema.fields().get(source_index) else {
                return false;
            };
            delta.holds_no_null(field.name())
        }
        _ => false,
    }
}

impl DeltaProvider {
    /// Whether every file of the version this provider reads counts no NULL
    /// in `column` (a lower-case name) in the log's statistics; false when
    /// any file has none.
    pub(crate) fn holds_no_null(&self, column: &str) -> bool {
        let Ok(snapshot) = self.snapshot() else {
            return false;
        };
        let name = self.declared_name(column);
        let Some(counts) = snapshot.null_counts(&Column::new_unqualified(name)) else {
            return false;
        };
        let Some(counts) = counts.as_any().downcast_ref::<UInt64Array>() else {
            return false;
        };
        counts.len() == snapshot.num_containers()
            && counts.null_count() == 0
            && counts.values().iter().all(|n| *n == 0)
    }
}
