//! [`Runnable`]: a physical plan with the task context it runs in, as the
//! planner hands it out (to run now, to keep for the next execution of a
//! constant query, or as the input of a write).

use std::sync::Arc;

use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{execute_stream, ExecutionPlan};

use crate::error::Result;

/// A physical plan with the task context to run it in; it may run again
/// ([`crate::constant_plans`]).
#[derive(Clone)]
pub(crate) struct Runnable {
    pub(crate) plan: Arc<dyn ExecutionPlan>,
    pub(crate) task: Arc<TaskContext>,
    /// Cut into stages for the cluster's workers.
    pub(crate) distributed: bool,
}

impl Runnable {
    /// The plan as the input of another (a write's rows): a distributed
    /// plan keeps its own task context, which holds the cluster's channels.
    pub(crate) fn into_input(self) -> Arc<dyn ExecutionPlan> {
        if self.distributed {
            Arc::new(crate::cluster::DistributedInput::new(self.plan, self.task))
        } else {
            self.plan
        }
    }

    pub(crate) fn execute(&self) -> Result<SendableRecordBatchStream> {
        Ok(execute_stream(
            Arc::clone(&self.plan),
            Arc::clone(&self.task),
        )?)
    }
}
