//! The delta-rs types the SQL layer names: the table handle and its state,
//! the schema types DDL builds, the save modes, the partition filters of
//! OPTIMIZE and its metrics, the change data feed's provider. Everything
//! else of delta-rs — and every commit — stays inside this crate.

pub use deltalake::delta_datafusion::DeltaCdfTableProvider;
pub use deltalake::kernel::{
    ArrayType, DataType, MapType, MetadataValue, PrimitiveType, Protocol, StructField, StructType,
};
pub use deltalake::operations::optimize::MetricDetails;
pub use deltalake::protocol::SaveMode;
pub use deltalake::table::state::DeltaTableState;
pub use deltalake::{DeltaTable, DeltaTableError, FilterOp};
