//! The Delta log around a commit: what ends every write's commit path
//! (`committed.rs`), appends of concurrent statements sharing one commit
//! (`group_commit.rs`; each table's queue in `queues.rs`), the operation names Databricks records
//! (`operation_name.rs`), checkpoints and log clean-up after commits
//! (`upkeep.rs`), loading past a checkpoint that cannot be read
//! (`damaged_checkpoint.rs`), and a transaction's staged commits, made one
//! version per table when it commits (`staged.rs`).

pub(crate) mod committed;
pub(crate) mod damaged_checkpoint;
pub(crate) mod group_commit;
pub(crate) mod operation_name;
pub(crate) mod queues;
pub(crate) mod staged;
pub(crate) mod transaction;
pub(crate) mod transaction_record;
pub(crate) mod upkeep;
