//! The task executor the kernel's default engine runs its IO with
//! (Lakegres patch 13).
//!
//! The kernel's handlers are synchronous and call `block_on` once per item
//! of every listing and file read. The engine's `TokioMultiThreadExecutor`
//! spawns each of those futures as a task and waits on a channel for its
//! result: two thread switches per item, from whichever thread the kernel
//! runs on. delta-rs calls the kernel from blocking-pool threads (or,
//! through `block_in_place`, from workers), so the future can run right
//! there instead, as `Handle::block_on` does.

use std::future::Future;

use delta_kernel::{DeltaResult, Error};
use delta_kernel_default_engine::executor::TaskExecutor;
use futures::TryFutureExt;
use futures::future::BoxFuture;
use tokio::runtime::{EnterGuard, Handle};

/// Runs a kernel `block_on` on the calling thread, within the runtime of
/// `handle` (a multi-threaded one).
#[derive(Debug, Clone)]
pub struct InlineTokioExecutor {
    handle: Handle,
}

impl InlineTokioExecutor {
    /// An executor on the runtime of `handle`.
    pub fn new(handle: Handle) -> Self {
        Self { handle }
    }

    /// Runs `task` to completion on the calling thread: a worker of the
    /// runtime, a thread of its blocking pool, or one outside it.
    pub fn run_here<T>(&self, task: T) -> T::Output
    where
        T: Future,
    {
        // On a worker, `block_in_place` hands the worker's other tasks to
        // a new thread first; elsewhere it simply calls the closure.
        tokio::task::block_in_place(|| self.handle.block_on(task))
    }
}

impl TaskExecutor for InlineTokioExecutor {
    type Guard<'a> = EnterGuard<'a>;

    fn block_on<T>(&self, task: T) -> T::Output
    where
        T: Future + Send + 'static,
        T::Output: Send + 'static,
    {
        self.run_here(task)
    }

    fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.handle.spawn(task);
    }

    fn spawn_blocking<T, R>(&self, task: T) -> BoxFuture<'_, DeltaResult<R>>
    where
        T: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        Box::pin(
            self.handle
                .spawn_blocking(task)
                .map_err(Error::join_failure),
        )
    }

    fn enter(&self) -> EnterGuard<'_> {
        self.handle.enter()
    }
}
