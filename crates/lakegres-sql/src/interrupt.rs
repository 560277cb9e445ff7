//! Stopping a statement while it is planned. `statement_timeout`, a cancel
//! request and `pg_terminate_backend` stop a statement by dropping its
//! future, which takes effect at its next await; DataFusion's optimizer
//! runs its rules without one, for seconds on a plan of a hundred joins.
//! So every session's optimizer passes through a [`Checkpoint`] between
//! any two of its rules (logical and physical), which fails the statement
//! (57014) once its deadline has passed or it was interrupted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use datafusion::common::tree_node::Transformed;
use datafusion::common::Result as DFResult;
use datafusion::config::ConfigOptions;
use datafusion::error::DataFusionError;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;

use crate::error::{class, Error};

/// One session's statement: when it must end, and whether it was
/// interrupted (cancelled, or its connection terminated). Between
/// statements nothing is checked and an interruption is ignored, as a
/// cancel request between statements cancels nothing in Postgres.
#[derive(Debug, Default)]
pub(crate) struct Interrupt {
    running: AtomicBool,
    interrupted: AtomicBool,
    deadline: Mutex<Option<Instant>>,
}

impl Interrupt {
    /// A statement starts, to end by `deadline` if there is one; it is
    /// running until the guard drops, however the statement ends (an
    /// early error, or its future dropped by a cancel or a timeout).
    /// Its rows, if any, have their own deadline.
    pub fn start(&self, deadline: Option<Instant>) -> Running<'_> {
        self.interrupted.store(false, Ordering::Relaxed);
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = deadline;
        self.running.store(true, Ordering::Relaxed);
        Running(self)
    }

    /// Stops the statement running now at its next checkpoint.
    pub fn interrupt(&self) {
        if self.running.load(Ordering::Relaxed) {
            self.interrupted.store(true, Ordering::Relaxed);
        }
    }

    fn check(&self) -> DFResult<()> {
        if !self.running.load(Ordering::Relaxed) {
            return Ok(());
        }
        let message = if self.interrupted.load(Ordering::Relaxed) {
            "canceling statement due to user request"
        } else if self
            .deadline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|d| Instant::now() >= d)
        {
            "canceling statement due to statement timeout"
        } else {
            return Ok(());
        };
        Err(DataFusionError::External(Box::new(Error::analysis(
            class::QUERY_CANCELED,
            message,
        ))))
    }
}

/// A statement running ([`Interrupt::start`]) while alive.
pub(crate) struct Running<'a>(&'a Interrupt);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.store(false, Ordering::Relaxed);
        self.0.interrupted.store(false, Ordering::Relaxed);
    }
}

/// The rule put between any two of the optimizer's: fails once the
/// session's statement is to stop, changes nothing otherwise.
#[derive(Debug)]
struct Checkpoint(Arc<Interrupt>);

impl OptimizerRule for Checkpoint {
    fn name(&self) -> &str {
        "lakegres_checkpoint"
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> DFResult<Transformed<LogicalPlan>> {
        self.0.check()?;
        Ok(Transformed::no(plan))
    }
}

impl PhysicalOptimizerRule for Checkpoint {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        self.0.check()?;
        Ok(plan)
    }

    fn name(&self) -> &str {
        "lakegres_checkpoint"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `state` with a [`Checkpoint`] of `interrupt` before each of its
/// optimizer rules, logical and physical, and after the last logical one.
pub(crate) fn with_checkpoints(state: SessionState, interrupt: &Arc<Interrupt>) -> SessionState {
    let checkpoint = Arc::new(Checkpoint(Arc::clone(interrupt)));
    let logical_checkpoint: Arc<dyn OptimizerRule + Send + Sync> =
        Arc::<Checkpoint>::clone(&checkpoint);
    let mut logical = interleaved(state.optimizers(), &logical_checkpoint);
    logical.push(logical_checkpoint);
    let physical_checkpoint: Arc<dyn PhysicalOptimizerRule + Send + Sync> = checkpoint;
    let physical = interleaved(state.physical_optimizers(), &physical_checkpoint);
    SessionStateBuilder::new_from_existing(state)
        .with_optimizer_rules(logical)
        .with_physical_optimizer_rules(physical)
        .build()
}

/// `rules` with `checkpoint` before each.
fn interleaved<R: ?Sized>(rules: &[Arc<R>], checkpoint: &Arc<R>) -> Vec<Arc<R>> {
    rules
        .iter()
        .flat_map(|rule| [Arc::clone(checkpoint), Arc::clone(rule)])
        .collect()
}
