//! The storage layer's error: what went wrong in the catalog or in a Delta
//! commit, each variant with its SQLSTATE.

use std::sync::Arc;

use deltalake::kernel::transaction::TransactionError;
use deltalake::DeltaTableError;

use lakegres_common::SqlState;

impl From<lakegres_common::InvalidName> for Error {
    fn from(e: lakegres_common::InvalidName) -> Self {
        Self::InvalidName {
            what: e.what,
            name: e.name,
        }
    }
}

/// Result alias for the storage layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of the catalog and of Delta reads and writes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("[SCHEMA_NOT_FOUND] schema {schema} does not exist")]
    SchemaNotFound { schema: String },

    #[error("[SCHEMA_ALREADY_EXISTS] schema {schema} already exists")]
    SchemaExists { schema: String },

    #[error("[SCHEMA_NOT_EMPTY] schema {schema} is not empty: it has tables (use CASCADE)")]
    SchemaNotEmpty { schema: String },

    #[error("[TABLE_OR_VIEW_NOT_FOUND] table {schema}.{table} does not exist")]
    TableNotFound { schema: String, table: String },

    #[error("[DELTA_SCHEMA_NOT_SET] table {schema}.{table} has no columns yet: load files into it with COPY INTO … COPY_OPTIONS ('mergeSchema' = 'true'), or give it columns with CREATE OR REPLACE TABLE")]
    SchemaNotSet { schema: String, table: String },

    #[error("[TABLE_OR_VIEW_ALREADY_EXISTS] table {schema}.{table} already exists")]
    TableExists { schema: String, table: String },

    #[error(
        "[EXPECT_VIEW_NOT_TABLE.NO_ALTERNATIVE] {name} is a table: the statement needs a view"
    )]
    NotAView { name: String },

    #[error("[INVALID_IDENTIFIER] {name:?} is not a valid {what} name")]
    InvalidName { what: &'static str, name: String },

    #[error(
        "[DELTA_CANNOT_USE_ALL_COLUMNS_FOR_PARTITION] cannot use all columns for partition columns"
    )]
    AllColumnsPartitioned,

    #[error("[COLUMN_ALREADY_EXISTS] column {column} is declared twice")]
    DuplicateColumn { column: String },

    #[error(
        "[DELTA_PARTITION_COLUMN_NOT_FOUND] partition column {column} is not a column of the table"
    )]
    UnknownPartitionColumn { column: String },

    #[error("[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] cannot perform MERGE into {table}: several source rows matched one target row and tried to change it")]
    MergeDuplicateSourceRows { table: String },

    #[error(
        "[DELTA_CONCURRENT_WRITE] {op} on {table} conflicted with a concurrent commit: {source}"
    )]
    CommitConflict {
        op: &'static str,
        table: String,
        #[source]
        source: Box<DeltaTableError>,
    },

    #[error(
        "[DELTA_CONCURRENT_WRITE] the transaction read {table} at version {read}, and version {latest} was committed since: nothing of the transaction is applied"
    )]
    TransactionConflict {
        table: String,
        read: u64,
        latest: u64,
    },

    #[error("{op} on {table}: {source}")]
    Delta {
        op: &'static str,
        table: String,
        #[source]
        source: Box<DeltaTableError>,
    },

    #[error("{op}: {source}")]
    Storage {
        op: &'static str,
        #[source]
        source: Box<deltalake::ObjectStoreError>,
    },

    #[error("{what}: {source}")]
    DataFusion {
        what: &'static str,
        #[source]
        source: Box<datafusion::error::DataFusionError>,
    },

    #[error("[INVALID_WAREHOUSE] {location}: {reason}")]
    InvalidWarehouse { location: String, reason: String },

    #[error("[INVALID_WAREHOUSE] {location} does not honour conditional PUT (If-None-Match: *): {reason}. Delta commits on object storage rely on it; without it two servers can overwrite each other's commits. Use a store that supports it (AWS S3, MinIO, Cloudflare R2, …) or set storage.options.conditional_put for an S3-compatible one")]
    ConditionalPutUnsupported { location: String, reason: String },

    #[error("[INTERNAL_ERROR] {0}")]
    Internal(String),

    #[error("[DELTA_FILE_NOT_FOUND] COPY INTO cannot tell which files it loaded into {table} before: its record {path} is {reason}. COPY_OPTIONS ('force' = 'true') loads every file again")]
    LoadRecordUnreadable {
        table: String,
        path: String,
        reason: String,
    },

    #[error("[INSUFFICIENT_PERMISSIONS] user {user} does not have {privilege} on {object}")]
    PermissionDenied {
        user: String,
        privilege: &'static str,
        object: String,
    },

    /// A recursive listing (`read_files`, `COPY INTO`, `parquet.\`path\``)
    /// reached into a Delta table folder the user may not read by path:
    /// refused rather than skipped, so a load never takes a silent subset.
    #[error("[INSUFFICIENT_PERMISSIONS] user {user} may not read the files under {listed}: they include the Delta table folder {folder}, {}", folder_needs(.owner.as_deref()))]
    TableFolderInListing {
        user: String,
        listed: String,
        folder: String,
        /// The table registered there, if any.
        owner: Option<String>,
    },

    #[error("[DELTA_VERSION_NOT_FOUND] cannot time travel table {table} to {at}: it has no such version")]
    VersionNotFound { table: String, at: String },

    #[error("[DELTA_TIMESTAMP_OUT_OF_HISTORY] cannot time travel table {table} to {at}: it is before its first or after its latest commit")]
    TimestampOutOfHistory {
        table: String,
        at: String,
        /// After the latest commit (otherwise before the first).
        later: bool,
    },

    #[error("[INSUFFICIENT_PRIVILEGE] cannot read {path}: {reason}")]
    PathNotAllowed { path: String, reason: String },

    #[error("[DELTA_CANNOT_RESTORE_TABLE_VERSION] cannot restore table {table} to version {version}. Available versions: [{first}, {latest}]")]
    RestoreVersionNotFound {
        table: String,
        version: i64,
        first: i64,
        latest: i64,
    },

    #[error("[DELTA_CANNOT_RESTORE_TIMESTAMP_GREATER] cannot restore table {table} to timestamp ({at}) as it is after the latest version available. Please use a timestamp before ({latest})")]
    RestoreTimestampGreater {
        table: String,
        at: String,
        latest: String,
    },

    #[error("[DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER] cannot restore table {table} to timestamp ({at}) as it is before the earliest version available. Please use a timestamp after ({earliest})")]
    RestoreTimestampEarlier {
        table: String,
        at: String,
        earliest: String,
    },

    #[error("[DELTA_FILE_NOT_FOUND_DETAILED] cannot restore table {table} to version {version}: its data file {path} was deleted (by VACUUM)")]
    RestoreMissingFile {
        table: String,
        version: u64,
        path: String,
    },

    #[error("[DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT] Are you sure you would like to vacuum files with such a low retention period ({hours} hours) on {table}? If you have writers that are currently writing to this table, there is a risk that you may corrupt the state of your Delta table. If you are certain that there are no operations being performed on this table, such as insert/upsert/delete/optimize, then you may turn off this check by setting: spark.databricks.delta.retentionDurationCheck.enabled = false. If you are not sure, please use a value not less than \"{minimum_hours} hours\".")]
    VacuumRetentionTooShort {
        table: String,
        hours: f64,
        minimum_hours: i64,
    },

    #[error("[DELTA_CONCURRENT_DELETE_DELETE] another OPTIMIZE of {table} is running; this one would rewrite the same files. Retry when it has finished")]
    ConcurrentOptimize { table: String },

    #[error(
        "[DELTA_VACUUM_NEGATIVE_RETENTION] cannot vacuum {table} with a negative retention period"
    )]
    VacuumNegativeRetention { table: String },

    #[error("[NOT_SUPPORTED_IN_THIS_STORAGE] renaming {table}: tables can be renamed in a warehouse on a local disk only")]
    RenameNotSupported { table: String },

    #[error("[UNRESOLVED_COLUMN] column {column} is not a column of {table}")]
    UnknownColumn { table: String, column: String },

    #[error("[DELTA_CONSTRAINT_ALREADY_EXISTS] constraint '{name}' already exists on {table}: drop it first")]
    ConstraintExists { table: String, name: String },

    #[error("[DELTA_CONSTRAINT_DOES_NOT_EXIST] cannot drop nonexistent constraint {name} from table {table}")]
    ConstraintNotFound { table: String, name: String },

    #[error("[DELTA_CANNOT_MODIFY_TABLE_PROPERTY] the Delta table configuration {key} cannot be specified by the user: use ALTER TABLE … ADD CONSTRAINT / DROP CONSTRAINT")]
    ConstraintProperty { key: String },

    #[error("[UNSET_NONEXISTENT_PROPERTIES] attempted to unset non-existent property {key} in table {table}")]
    UnsetMissingProperty { table: String, key: String },

    /// Databricks refuses these subqueries in DELETE and UPDATE (Databricks
    /// SQL reference, DELETE FROM), and every subquery in MERGE conditions.
    #[error("[DELTA_UNSUPPORTED_SUBQUERY] Subqueries are not supported in the {op} (condition = '{condition}'): {reason}")]
    UnsupportedSubquery {
        op: &'static str,
        condition: String,
        reason: &'static str,
    },

    #[error("[DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED] Non-deterministic functions are not supported in the {op} (condition = '{condition}')")]
    NonDeterministicCondition { op: &'static str, condition: String },

    #[error("[UNSUPPORTED_FEATURE] {op} with {what} is not supported")]
    UnsupportedDml { op: &'static str, what: String },

    #[error("[SCALAR_SUBQUERY_TOO_MANY_ROWS] More than one row returned by a subquery used as an expression")]
    ScalarSubqueryTooManyRows,

    /// A row that breaks a NOT NULL column, a CHECK constraint or a
    /// generated column's expression; nothing was written.
    #[error("{message}")]
    ConstraintViolation { message: String, state: SqlState },

    /// A statement refused before anything was written; `message` starts
    /// with its error class.
    #[error("{message}")]
    Refused { message: String, state: SqlState },

    /// A check of ours that failed inside a delta-rs write (which passes
    /// only the text on); `message` starts with its error class.
    #[error("{message}")]
    WriteCheck { message: String, state: SqlState },
}

impl Error {
    /// The SQLSTATE a client sees for this error.
    pub fn sqlstate(&self) -> SqlState {
        storage_full_or(self.own_sqlstate(), self)
    }

    fn own_sqlstate(&self) -> SqlState {
        match self {
            Self::SchemaNotFound { .. } => SqlState::INVALID_SCHEMA_NAME,
            Self::SchemaExists { .. } => SqlState::DUPLICATE_SCHEMA,
            Self::SchemaNotEmpty { .. } => SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
            Self::TableNotFound { .. } => SqlState::UNDEFINED_TABLE,
            Self::TableExists { .. } => SqlState::DUPLICATE_TABLE,
            Self::NotAView { .. } => SqlState::WRONG_OBJECT_TYPE,
            Self::SchemaNotSet { .. } => SqlState::SCHEMA_NOT_SET,
            Self::InvalidName { .. } => SqlState::SYNTAX_ERROR,
            Self::AllColumnsPartitioned => SqlState::ALL_COLUMNS_PARTITIONED,
            Self::DuplicateColumn { .. } => SqlState::COLUMN_ALREADY_EXISTS,
            Self::UnknownPartitionColumn { .. } => SqlState::UNDEFINED_COLUMN,
            Self::CommitConflict { .. } | Self::TransactionConflict { .. } => {
                SqlState::SERIALIZATION_FAILURE
            }
            Self::MergeDuplicateSourceRows { .. } => SqlState::MERGE_DUPLICATE_SOURCE,
            Self::Delta { source, .. } => delta_sqlstate(source),
            Self::Storage { .. } => SqlState::IO_ERROR,
            Self::DataFusion { .. } => SqlState::INTERNAL_ERROR,
            Self::InvalidWarehouse { .. } | Self::ConditionalPutUnsupported { .. } => {
                SqlState::CONFIG_FILE_ERROR
            }
            Self::Internal(_) => SqlState::INTERNAL_ERROR,
            Self::LoadRecordUnreadable { .. } => SqlState::IO_ERROR,
            Self::PathNotAllowed { .. }
            | Self::PermissionDenied { .. }
            | Self::TableFolderInListing { .. } => SqlState::INSUFFICIENT_PRIVILEGE,
            Self::VersionNotFound { .. } => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            Self::TimestampOutOfHistory { .. } => SqlState::TIMESTAMP_OUT_OF_HISTORY,
            Self::WriteCheck { state, .. } | Self::ConstraintViolation { state, .. } => *state,
            Self::UnknownColumn { .. } => SqlState::UNDEFINED_COLUMN,
            Self::RenameNotSupported { .. } | Self::UnsupportedDml { .. } => {
                SqlState::FEATURE_NOT_SUPPORTED
            }
            Self::UnsupportedSubquery { .. } | Self::NonDeterministicCondition { .. } => {
                SqlState::DELTA_FEATURE_NOT_SUPPORTED
            }
            Self::ScalarSubqueryTooManyRows => SqlState::CARDINALITY_VIOLATION,
            Self::ConstraintExists { .. } => SqlState::DUPLICATE_OBJECT,
            Self::ConstraintNotFound { .. } => SqlState::UNDEFINED_OBJECT,
            Self::ConstraintProperty { .. } => SqlState::CANNOT_MODIFY_TABLE_PROPERTY,
            Self::UnsetMissingProperty { .. } => SqlState::UNSET_NONEXISTENT_PROPERTIES,
            Self::RestoreVersionNotFound { .. }
            | Self::RestoreTimestampGreater { .. }
            | Self::RestoreTimestampEarlier { .. } => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            Self::ConcurrentOptimize { .. } => SqlState::SERIALIZATION_FAILURE,
            Self::RestoreMissingFile { .. } => SqlState::DELTA_FILE_NOT_FOUND,
            Self::Refused { state, .. } => *state,
            Self::VacuumRetentionTooShort { .. } | Self::VacuumNegativeRetention { .. } => {
                SqlState::INVALID_PARAMETER_VALUE
            }
        }
    }

    /// Wraps a delta-rs error raised while doing `op` on `table`, telling a
    /// commit conflict (retryable, 40001) from every other failure.
    pub(crate) fn delta(
        op: &'static str,
        table: impl Into<String>,
        source: DeltaTableError,
    ) -> Self {
        let table = table.into();
        let source = Box::new(source);
        if is_merge_duplicate(&source) {
            return Self::MergeDuplicateSourceRows { table };
        }
        let text = source.to_string();
        for (class, state) in WRITE_CHECK_CLASSES {
            if let Some(at) = text.find(class) {
                return Self::WriteCheck {
                    message: text[at..].to_string(),
                    state: *state,
                };
            }
        }
        if let DeltaTableError::InvalidData { message } = source.as_ref() {
            // delta-rs' own check of constraints (MERGE, UPDATE): it names
            // no constraint, only the rows.
            return Self::ConstraintViolation {
                message: format!("{CHECK_VIOLATED} {}", message.replace('\n', " ")),
                state: SqlState::CHECK_VIOLATION,
            };
        }
        if is_commit_conflict(&source) {
            Self::CommitConflict { op, table, source }
        } else {
            Self::Delta { op, table, source }
        }
    }
}

/// The error class of a REPLACE WHERE row outside its predicate; the check
/// runs inside delta-rs' write, which hands errors on as text.
pub const REPLACE_WHERE_MISMATCH: &str = "[DELTA_REPLACE_WHERE_MISMATCH]";

/// The error class of a row breaking a NOT NULL column.
pub const NOT_NULL_VIOLATED: &str = "[DELTA_NOT_NULL_CONSTRAINT_VIOLATED]";

/// The error class of a row breaking a CHECK constraint or a generated
/// column's expression.
pub const CHECK_VIOLATED: &str = "[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES]";

/// Checks of ours that run inside delta-rs' writes, which hand their errors
/// on as text: the class starting the text tells the SQLSTATE.
const WRITE_CHECK_CLASSES: &[(&str, SqlState)] = &[
    (
        REPLACE_WHERE_MISMATCH,
        SqlState::WITH_CHECK_OPTION_VIOLATION,
    ),
    (NOT_NULL_VIOLATED, SqlState::NOT_NULL_VIOLATION),
    (CHECK_VIOLATED, SqlState::CHECK_VIOLATION),
    (EXCEED_LIMIT_LENGTH, SqlState::EXCEED_LIMIT_LENGTH),
    (EXPLICIT_INSERT, SqlState::COLUMN_NOT_ASSIGNABLE),
    (
        "[DELTA_IDENTITY_COLUMNS_VALUE_OVERFLOW]",
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
    ),
];

/// The error class of a value given for a `GENERATED ALWAYS` identity column.
pub const EXPLICIT_INSERT: &str = "[DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED]";

/// The error class of a value longer than its CHAR(n) / VARCHAR(n) column.
pub const EXCEED_LIMIT_LENGTH: &str = "[EXCEED_LIMIT_LENGTH]";

/// delta-rs reports several source rows matching one target row only in
/// text; this is the one place that text is matched (a reworded upgrade
/// fails the MERGE tests).
/// What reading a Delta table folder by path takes, for
/// [`Error::TableFolderInListing`].
fn folder_needs(owner: Option<&str>) -> String {
    match owner {
        Some(table) => format!("which needs SELECT on table {table}"),
        None => "which no table names: only admins may read it by path".into(),
    }
}

fn is_merge_duplicate(e: &DeltaTableError) -> bool {
    e.to_string()
        .contains("MERGE matched a target row with multiple source rows")
}

/// A concurrent writer won the race for the next version.
fn is_commit_conflict(e: &DeltaTableError) -> bool {
    matches!(
        shared_cause(e),
        DeltaTableError::Transaction {
            source: TransactionError::CommitConflict(_)
                | TransactionError::VersionAlreadyExists(_)
                | TransactionError::MaxCommitAttempts(_)
        } | DeltaTableError::VersionAlreadyExists(_)
    )
}

/// `state`, or 53100 when it is an I/O or internal error and `e` failed
/// for want of room ([`out_of_space`]): a write that ran out of room fails
/// as PostgreSQL's does, however deep in the storage layers the I/O error
/// was.
pub fn storage_full_or(state: SqlState, e: &(dyn std::error::Error + 'static)) -> SqlState {
    if (state == SqlState::IO_ERROR || state == SqlState::INTERNAL_ERROR) && out_of_space(e) {
        SqlState::DISK_FULL
    } else {
        state
    }
}

/// Whether `e` failed because the storage had no room for a write: no
/// space left, a quota or a file-size limit reached. The I/O error is
/// looked for along the chain of sources and, where a layer kept only its
/// text, in the message (`… (os error 28)`).
fn out_of_space(e: &(dyn std::error::Error + 'static)) -> bool {
    /// ENOSPC, EDQUOT, EFBIG on Linux.
    const CODES: [i32; 3] = [28, 122, 27];
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.raw_os_error().is_some_and(|c| CODES.contains(&c))
                || matches!(
                    io.kind(),
                    std::io::ErrorKind::StorageFull
                        | std::io::ErrorKind::QuotaExceeded
                        | std::io::ErrorKind::FileTooLarge
                )
            {
                return true;
            }
        }
        next = e.source();
    }
    let text = e.to_string();
    CODES
        .iter()
        .any(|c| text.contains(&format!("(os error {c})")))
}

/// The SQLSTATE of a bare delta-rs error (one that reached us without our
/// own context, e.g. from inside a DataFusion stream).
pub(crate) fn delta_error_sqlstate(e: &DeltaTableError) -> SqlState {
    if is_commit_conflict(e) {
        SqlState::SERIALIZATION_FAILURE
    } else {
        delta_sqlstate(e)
    }
}

/// What decides the SQLSTATE of an error that may be delta-rs' own: its
/// code, or the error it wraps (Arrow's, or one of ours inside a generic
/// error), which the caller maps as it maps that error anywhere else.
pub enum DeltaCause<'a> {
    State(SqlState),
    Wrapped(&'a (dyn std::error::Error + Send + Sync + 'static)),
}

/// The [`DeltaCause`] of `e`, or `None` when `e` is not a delta-rs error.
pub fn delta_cause<'a>(
    e: &'a (dyn std::error::Error + Send + Sync + 'static),
) -> Option<DeltaCause<'a>> {
    let e = e.downcast_ref::<DeltaTableError>()?;
    Some(match e {
        DeltaTableError::Arrow { source } => DeltaCause::Wrapped(source),
        DeltaTableError::GenericError { source } => DeltaCause::Wrapped(source.as_ref()),
        other => DeltaCause::State(delta_error_sqlstate(other)),
    })
}

/// The code for a delta-rs error that is not a conflict.
fn delta_sqlstate(e: &DeltaTableError) -> SqlState {
    match shared_cause(e) {
        DeltaTableError::Transaction {
            source: TransactionError::DeltaTableAppendOnly,
        } => SqlState::WRONG_OBJECT_TYPE,
        DeltaTableError::SchemaMismatch { .. } => SqlState::DELTA_METADATA_MISMATCH,
        DeltaTableError::InvalidData { .. } => SqlState::CHECK_VIOLATION,
        DeltaTableError::InvalidVersion(_) => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        DeltaTableError::NotATable(_) => SqlState::UNDEFINED_TABLE,
        DeltaTableError::ObjectStore { .. } | DeltaTableError::Io { .. } => SqlState::IO_ERROR,
        other => text_sqlstate(&other.to_string()),
    }
}

/// delta-rs wraps cast failures, constraint violations and planning errors
/// of its builders in generic errors; their text is all that tells them
/// apart.
fn text_sqlstate(message: &str) -> SqlState {
    let m = message.to_lowercase();
    if m.contains("failed validation check") || m.contains("non-nullable") {
        SqlState::NOT_NULL_VIOLATION
    } else if m.contains("cast error") || m.contains("cannot cast") {
        if m.contains("overflow") {
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE
        } else {
            SqlState::INVALID_CHARACTER_VALUE_FOR_CAST
        }
    } else if m.contains("failed to coerce") || m.contains("type_coercion") {
        SqlState::DATATYPE_MISMATCH
    } else if m.contains("no field named") || m.contains("schema error") {
        SqlState::UNDEFINED_COLUMN
    } else if m.contains("divide by zero") {
        SqlState::DIVISION_BY_ZERO
    } else {
        SqlState::INTERNAL_ERROR
    }
}

/// One commit's error, handed to each statement it held.
#[derive(Debug)]
pub struct SharedError(pub Arc<DeltaTableError>);

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedError {}

/// The commit error a statement's error stands for when a group commit
/// failed (see [`SharedError`]), else the error itself.
pub(crate) fn shared_cause(e: &DeltaTableError) -> &DeltaTableError {
    match e {
        DeltaTableError::GenericError { source } => source
            .downcast_ref::<SharedError>()
            .map(|shared| shared.0.as_ref())
            .unwrap_or(e),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_room_is_found_along_the_sources_and_in_kept_text() {
        let full = std::io::Error::from_raw_os_error(28);
        let wrapped = Error::Storage {
            op: "writing",
            source: Box::new(deltalake::ObjectStoreError::Generic {
                store: "LocalFileSystem",
                source: Box::new(full),
            }),
        };
        assert!(out_of_space(&wrapped));
        assert_eq!(wrapped.sqlstate(), SqlState::DISK_FULL);
        let flattened =
            Error::Internal("Unable to copy data to file: File too large (os error 27)".into());
        assert!(out_of_space(&flattened));
        assert_eq!(flattened.sqlstate(), SqlState::DISK_FULL);
        let other = Error::Internal("Permission denied (os error 13)".into());
        assert!(!out_of_space(&other));
        assert_eq!(other.sqlstate(), SqlState::INTERNAL_ERROR);
    }
}
