//! The delta-rs types the SQL layer still names: the table handle and its
//! state, and the schema types DDL builds (a storage-owned table handle
//! and schema are to replace them). Everything else of delta-rs — write
//! modes, partition filters, metrics, the change feed, errors, and every
//! commit — stays inside this crate.

pub use deltalake::kernel::{
    ArrayType, DataType, MapType, MetadataValue, PrimitiveType, Protocol, StructField, StructType,
};
pub use deltalake::table::state::DeltaTableState;
pub use deltalake::DeltaTable;

#[cfg(test)]
mod tests {
    use deltalake::kernel::executor::InlineTokioExecutor;
    use tokio::runtime::Handle;

    /// The executor the kernel's engine reads the log with (vendored
    /// delta-rs patch 13) runs a future from a worker, from a blocking-pool
    /// thread, and nested inside itself.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_kernel_executor_runs_futures_on_any_runtime_thread() {
        let executor = InlineTokioExecutor::new(Handle::current());
        assert_eq!(executor.run_here(async { 2 + 2 }), 4);
        let inner = executor.clone();
        let nested = tokio::task::spawn_blocking(move || {
            let again = inner.clone();
            inner.run_here(async move {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                tokio::task::spawn_blocking(move || again.run_here(async { 3 }))
                    .await
                    .unwrap_or(0)
            })
        })
        .await;
        assert_eq!(nested.ok(), Some(3));
    }
}
