//! The language layer's error, and the SQLSTATE of DataFusion's errors.

use datafusion::arrow::error::ArrowError;
use datafusion::common::SchemaError;
use datafusion::error::DataFusionError;
use lakegres_delta::SqlState;

/// Result alias for the language layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of parsing, planning and running a statement.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("[PARSE_SYNTAX_ERROR] {message}")]
    Syntax {
        message: String,
        /// 1-based character position in the query string.
        position: Option<usize>,
    },

    #[error("statement is too complex: expressions nested more than {limit} deep")]
    TooDeep { limit: usize },

    #[error("statement is too complex: more than {limit} {what}")]
    TooComplex { what: &'static str, limit: usize },

    #[error("[UNSUPPORTED_FEATURE] {what} is not supported")]
    NotSupported { what: String },

    #[error("[UNSUPPORTED_DATATYPE] type {data_type} is not supported")]
    UnsupportedType { data_type: String },

    #[error("[UNRECOGNIZED_PARAMETER] unrecognized configuration parameter \"{name}\"")]
    UnknownSetting { name: String },

    #[error("[INVALID_PARAMETER_VALUE] invalid value for parameter \"{name}\": {value}")]
    InvalidSetting { name: String, value: String },

    #[error("current transaction is aborted, commands ignored until end of transaction block")]
    InFailedTransaction,

    #[error("{statement} can only be used in transaction blocks")]
    NoActiveTransaction { statement: &'static str },

    #[error("[MULTI_STATEMENT_TRANSACTION_NOT_SUPPORTED.COMMAND] {command} cannot run inside a transaction block: run it outside BEGIN … COMMIT")]
    NotInTransaction { command: &'static str },

    #[error("savepoint \"{name}\" does not exist")]
    NoSuchSavepoint { name: String },

    #[error(
        "[DELTA_SCHEMA_NOT_PROVIDED] table schema is not provided: give a column list or AS query"
    )]
    SchemaNotProvided,

    #[error("[DELTA_CREATE_TABLE_SCHEME_MISMATCH] the columns of {table} differ from those of the Delta table at {location}")]
    LocationSchemaMismatch { table: String, location: String },

    #[error("[DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION] Cannot create table {table}: {location} already holds a Delta table")]
    LocationNotEmpty { table: String, location: String },

    #[error("[DELTA_TABLE_LOCATION_MISMATCH] The location of the existing table {table} is {existing}. It doesn't match the specified location {location}")]
    LocationMismatch {
        table: String,
        existing: String,
        location: String,
    },

    #[error("[UNRESOLVED_COLUMN] column {column} does not exist in table {table}")]
    UnknownColumn { table: String, column: String },

    #[error("[TABLE_OR_VIEW_NOT_FOUND] table {table} does not exist")]
    TableNotFound { table: String },

    #[error("[INVALID_PARAMETER_VALUE] {message}")]
    InvalidParameter { message: String },

    /// An error of a Databricks error class ([`class`]); built with
    /// [`Error::analysis`].
    #[error("[{}] {message}", class.name)]
    Analysis { class: ErrorClass, message: String },

    /// COPY INTO could not load a file (or the files of a folder): the
    /// cause keeps its own code.
    #[error("[COPY_INTO_FAILED] {what}: {source}")]
    CopyIntoFailed { what: String, source: Box<Error> },

    #[error("[INTERNAL_ERROR] {message}")]
    Internal { message: String },

    #[error("{}", delta_message(.0))]
    Delta(#[from] lakegres_delta::Error),

    #[error("{}", datafusion_message(.0))]
    DataFusion(#[from] DataFusionError),
}

impl Error {
    /// The DataFusion error this is, if it is one.
    pub(crate) fn datafusion(&self) -> Option<&DataFusionError> {
        match self {
            Self::DataFusion(e) => Some(e),
            _ => None,
        }
    }

    /// The SQLSTATE a client sees for this error.
    pub fn sqlstate(&self) -> SqlState {
        lakegres_delta::storage_full_or(self.own_sqlstate(), self)
    }

    fn own_sqlstate(&self) -> SqlState {
        match self {
            Self::Syntax { .. } => SqlState::SYNTAX_ERROR,
            Self::TooDeep { .. } | Self::TooComplex { .. } => SqlState::STATEMENT_TOO_COMPLEX,
            Self::NotSupported { .. } => SqlState::FEATURE_NOT_SUPPORTED,
            Self::UnsupportedType { .. } => SqlState::FEATURE_NOT_SUPPORTED,
            Self::UnknownSetting { .. } => SqlState::UNDEFINED_OBJECT,
            Self::InvalidSetting { .. } => SqlState::INVALID_PARAMETER_VALUE,
            Self::InFailedTransaction => SqlState::IN_FAILED_SQL_TRANSACTION,
            Self::NoActiveTransaction { .. } => SqlState::NO_ACTIVE_SQL_TRANSACTION,
            Self::NotInTransaction { .. } => SqlState::FEATURE_NOT_SUPPORTED,
            Self::NoSuchSavepoint { .. } => SqlState::INVALID_SAVEPOINT_SPECIFICATION,
            Self::SchemaNotProvided => SqlState::SCHEMA_NOT_PROVIDED,
            Self::LocationSchemaMismatch { .. } => SqlState::DELTA_SCHEMA_MISMATCH,
            Self::LocationNotEmpty { .. } => SqlState::SYNTAX_ERROR,
            Self::LocationMismatch { .. } => SqlState::TABLE_LOCATION_MISMATCH,
            Self::UnknownColumn { .. } => SqlState::UNDEFINED_COLUMN,
            Self::TableNotFound { .. } => SqlState::UNDEFINED_TABLE,
            Self::InvalidParameter { .. } => SqlState::INVALID_PARAMETER_VALUE,
            Self::Internal { .. } => SqlState::INTERNAL_ERROR,
            Self::Analysis { class, .. } => class.state,
            Self::CopyIntoFailed { source, .. } => source.sqlstate(),
            Self::Delta(e) => delta_sqlstate(e),
            Self::DataFusion(e) => datafusion_sqlstate(e),
        }
    }

    /// The 1-based character position of a syntax error.
    pub fn position(&self) -> Option<usize> {
        match self {
            Self::Syntax { position, .. } => *position,
            _ => None,
        }
    }

    pub(crate) fn not_supported(what: impl Into<String>) -> Self {
        Self::NotSupported { what: what.into() }
    }

    /// A server bug: something that cannot happen did.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::Internal {
            message: message.into(),
        }
    }

    /// An error of `class` (one of [`class`]'s), saying `message`.
    pub(crate) fn analysis(class: ErrorClass, message: impl Into<String>) -> Self {
        Self::Analysis {
            class,
            message: message.into(),
        }
    }
}

/// A Databricks error class and the SQLSTATE it has everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorClass {
    pub name: &'static str,
    pub state: SqlState,
}

/// Declares error classes: `NAME => SQLSTATE constant`.
macro_rules! error_classes {
    ($($(#[$doc:meta])* $name:ident => $state:ident,)*) => {
        $(
            $(#[$doc])*
            pub(crate) const $name: ErrorClass = ErrorClass {
                name: stringify!($name),
                state: SqlState::$state,
            };
        )*
        /// Every class, for the table's own test.
        #[cfg(test)]
        pub(crate) const ALL: &[ErrorClass] = &[$($name),*];
    };
}

/// The one table from the error classes this crate raises to their
/// SQLSTATEs (Databricks' codes where Databricks has the class, Postgres'
/// where a Postgres client expects one). Adding a class: one line here,
/// then `Error::analysis(class::NAME, message)` where it is raised.
pub(crate) mod class {
    use super::{ErrorClass, SqlState};

    error_classes! {
        AMBIGUOUS_REFERENCE => UNDEFINED_OBJECT,
        ASSIGNMENT_ARITY_MISMATCH => COLUMN_ARITY_MISMATCH,
        BAD_COPY_FILE_FORMAT => BAD_COPY_FILE_FORMAT,
        CAST_INVALID_INPUT => INVALID_CHARACTER_VALUE_FOR_CAST,
        CATALOG_NOT_FOUND => UNDEFINED_OBJECT,
        COLUMN_ALREADY_EXISTS => COLUMN_ALREADY_EXISTS,
        CREATE_VIEW_COLUMN_ARITY_MISMATCH => INSERT_ARITY_MISMATCH,
        DELTA_AGGREGATION_NOT_SUPPORTED => AGGREGATE_NOT_ALLOWED,
        DELTA_CANNOT_MODIFY_APPEND_ONLY => WRONG_OBJECT_TYPE,
        DELTA_CONFLICT_SET_COLUMN => DUPLICATE_COLUMN,
        DELTA_DUPLICATE_COLUMNS_ON_INSERT => DUPLICATE_COLUMN,
        DELTA_IDENTITY_COLUMNS_ALTER_NOT_SUPPORTED => FEATURE_NOT_SUPPORTED,
        DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP => INVALID_PARAMETER_VALUE,
        DELTA_IDENTITY_COLUMNS_PARTITION_NOT_SUPPORTED => SYNTAX_ERROR,
        DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE => DATATYPE_MISMATCH,
        DELTA_INSERT_COLUMN_ARITY_MISMATCH => COLUMN_ARITY_MISMATCH,
        DELTA_INSERT_REPLACE_ON_AMBIGUOUS_COLUMNS_IN_CONDITION => AMBIGUOUS_COLUMN,
        DELTA_INSERT_REPLACE_ON_UNRESOLVED_COLUMNS_IN_CONDITION => UNDEFINED_COLUMN,
        DELTA_INVALID_TIME_TRAVEL_SPEC => SYNTAX_ERROR,
        DELTA_MERGE_UNRESOLVED_EXPRESSION => SYNTAX_ERROR,
        DELTA_METADATA_MISMATCH => DELTA_METADATA_MISMATCH,
        DELTA_MISSING_CHANGE_DATA => MISSING_CHANGE_DATA,
        DELTA_MISSING_COLUMN => UNDEFINED_COLUMN,
        DELTA_NEW_CHECK_CONSTRAINT_VIOLATION => CHECK_VIOLATION,
        DELTA_NEW_NOT_NULL_VIOLATION => NOT_NULL_VIOLATION,
        DELTA_NON_BOOLEAN_CHECK_CONSTRAINT => DATATYPE_MISMATCH,
        DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED => DELTA_FEATURE_NOT_SUPPORTED,
        DELTA_NON_PARTITION_COLUMN_REFERENCE => INVALID_COLUMN_REFERENCE,
        DELTA_OPERATION_NOT_ALLOWED => FEATURE_NOT_SUPPORTED,
        DELTA_SHOW_PARTITION_IN_NON_PARTITIONED_TABLE => WRONG_OBJECT_TYPE,
        DELTA_UNKNOWN_CONFIGURATION => CONFIG_FILE_ERROR,
        DELTA_UNSUPPORTED_TIME_TRAVEL_VIEWS => DELTA_FEATURE_NOT_SUPPORTED,
        DELTA_ZORDERING_ON_PARTITION_COLUMN => INVALID_COLUMN_REFERENCE,
        DUPLICATE_ASSIGNMENTS => DUPLICATE_COLUMN,
        DUPLICATE_CURSOR => DUPLICATE_CURSOR,
        EXPECT_TABLE_NOT_VIEW => WRONG_OBJECT_TYPE,
        EXPECT_VIEW_NOT_TABLE => WRONG_OBJECT_TYPE,
        INSERT_COLUMN_ARITY_MISMATCH => INSERT_ARITY_MISMATCH,
        INSERT_REPLACE_USING_DISALLOW_MISALIGNED_COLUMNS => COLUMN_ARITY_MISMATCH,
        INSUFFICIENT_PRIVILEGE => INSUFFICIENT_PRIVILEGE,
        INVALID_BINARY_REPRESENTATION => INVALID_BINARY_REPRESENTATION,
        INVALID_COPY_OPTION => FEATURE_NOT_SUPPORTED,
        INVALID_CURSOR_NAME => INVALID_CURSOR_NAME,
        INVALID_PRIVILEGE => WRONG_OBJECT_TYPE,
        INVALID_SQL_SYNTAX => SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION,
        INVALID_STATEMENT_FOR_EXECUTE_INTO => INVALID_STATEMENT_FOR_EXECUTE_INTO,
        INVALID_TABLE_CHANGES_ARGUMENTS => INVALID_PARAMETER_VALUE,
        INVALID_TEMP_OBJ_REFERENCE => INVALID_TEMP_OBJECT_REFERENCE,
        INVALID_TEXT_REPRESENTATION => INVALID_TEXT_REPRESENTATION,
        NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION => NON_LAST_CLAUSE_OMIT_CONDITION,
        NON_LAST_NOT_MATCHED_BY_SOURCE_CLAUSE_OMIT_CONDITION => NON_LAST_CLAUSE_OMIT_CONDITION,
        NON_LAST_NOT_MATCHED_BY_TARGET_CLAUSE_OMIT_CONDITION => NON_LAST_CLAUSE_OMIT_CONDITION,
        NON_PARTITION_COLUMN => SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION,
        PATH_NOT_FOUND => UNDEFINED_OBJECT,
        PIVOT_VALUE_DATA_TYPE_MISMATCH => DATATYPE_MISMATCH,
        QUERY_CANCELED => QUERY_CANCELED,
        RECURSIVE_VIEW => SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION,
        ROW_SUBQUERY_TOO_MANY_ROWS => CARDINALITY_VIOLATION,
        SHOW_COLUMNS_WITH_CONFLICT_NAMESPACE => SHOW_COLUMNS_CONFLICT,
        STATIC_PARTITION_COLUMN_IN_INSERT_COLUMN_LIST => DUPLICATE_ALIAS,
        TABLE_OR_VIEW_ALREADY_EXISTS => DUPLICATE_TABLE,
        TABLE_OR_VIEW_NOT_FOUND => UNDEFINED_TABLE,
        TEMP_VIEW_NAME_TOO_MANY_NAME_PARTS => SYNTAX_ERROR,
        UNBOUND_SQL_PARAMETER => UNDEFINED_PARAMETER,
        UNPIVOT_ARITY_MISMATCH => COLUMN_ARITY_MISMATCH,
        UNRESOLVED_COLUMN => UNDEFINED_COLUMN,
        UNRESOLVED_INSERT_REPLACE_USING_COLUMN => UNDEFINED_COLUMN,
        UNRESOLVED_VARIABLE => UNDEFINED_FUNCTION,
        VARIABLE_ALREADY_EXISTS => DUPLICATE_VARIABLE,
        WRONG_COMMAND_FOR_OBJECT_TYPE => WRONG_OBJECT_TYPE,
    }
}

/// The error of a Databricks function or cast that failed inside another
/// error: a value a write's store assignment could not cast comes back
/// wrapped by delta-rs' writer and by the table provider.
fn function_cause<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a lakegres_functions::FunctionError> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(f) = e.downcast_ref::<lakegres_functions::FunctionError>() {
            return Some(f);
        }
        if let Some(DataFusionError::External(inner)) = e.downcast_ref::<DataFusionError>() {
            next = Some(inner.as_ref());
            continue;
        }
        next = e.source();
    }
    None
}

fn delta_message(e: &lakegres_delta::Error) -> String {
    if let Some(f) = function_cause(e) {
        return f.to_string();
    }
    let text = e.to_string();
    match recovered(e, &text) {
        Some((message, _)) => message.to_string(),
        None => text,
    }
}

/// A function error in `text`, the text of a write's error (see
/// [`lakegres_functions::FunctionError::recover`]).
fn recovered<'t>(e: &lakegres_delta::Error, text: &'t str) -> Option<(&'t str, SqlState)> {
    match e {
        lakegres_delta::Error::Delta { .. } | lakegres_delta::Error::DataFusion { .. } => {
            lakegres_functions::FunctionError::recover(text)
        }
        _ => None,
    }
}

/// DataFusion's message without its "Error during planning:" style prefix
/// where our own error is inside.
fn datafusion_message(e: &DataFusionError) -> String {
    if let Some(f) = function_cause(e) {
        return f.to_string();
    }
    match e {
        DataFusionError::External(inner) => match inner.downcast_ref::<lakegres_delta::Error>() {
            Some(delta) => delta_message(delta),
            None => inner.to_string(),
        },
        DataFusionError::Context(_, inner) => datafusion_message(inner),
        DataFusionError::Shared(inner) => datafusion_message(inner),
        other => other.to_string(),
    }
}

/// The SQLSTATE of a DataFusion error, looking through the errors it wraps
/// (our storage errors come back from the table provider inside it).
pub fn datafusion_sqlstate(e: &DataFusionError) -> SqlState {
    if let Some(f) = function_cause(e) {
        return f.sqlstate();
    }
    match e {
        DataFusionError::SQL(..) => SqlState::SYNTAX_ERROR,
        DataFusionError::NotImplemented(_) => SqlState::FEATURE_NOT_SUPPORTED,
        DataFusionError::SchemaError(se, _) => match se.as_ref() {
            SchemaError::FieldNotFound { .. } => SqlState::UNDEFINED_COLUMN,
            SchemaError::AmbiguousReference { .. } => SqlState::AMBIGUOUS_COLUMN,
            SchemaError::DuplicateQualifiedField { .. }
            | SchemaError::DuplicateUnqualifiedField { .. } => SqlState::DUPLICATE_COLUMN,
        },
        DataFusionError::Plan(message) => plan_sqlstate(message),
        DataFusionError::ArrowError(arrow, _) => arrow_sqlstate(arrow),
        DataFusionError::Execution(message) => execution_sqlstate(message),
        DataFusionError::ResourcesExhausted(_) => SqlState::OUT_OF_MEMORY,
        DataFusionError::Context(_, inner) => datafusion_sqlstate(inner),
        DataFusionError::Shared(inner) => datafusion_sqlstate(inner),
        DataFusionError::Diagnostic(_, inner) => datafusion_sqlstate(inner),
        DataFusionError::Collection(errors) => errors
            .first()
            .map(datafusion_sqlstate)
            .unwrap_or(SqlState::INTERNAL_ERROR),
        DataFusionError::External(inner) => external_sqlstate(inner.as_ref()),
        DataFusionError::ObjectStore(_) | DataFusionError::IoError(_) => SqlState::IO_ERROR,
        DataFusionError::ParquetError(_) => SqlState::IO_ERROR,
        DataFusionError::Configuration(_) => SqlState::INVALID_PARAMETER_VALUE,
        DataFusionError::Substrait(_) | DataFusionError::Ffi(_) | DataFusionError::Internal(_) => {
            SqlState::INTERNAL_ERROR
        }
        #[allow(unreachable_patterns)]
        _ => SqlState::INTERNAL_ERROR,
    }
}

/// A storage error's code; one that wraps a DataFusion error (a query the
/// write ran, such as an UPDATE's own condition) has that error's code.
fn delta_sqlstate(e: &lakegres_delta::Error) -> SqlState {
    if let Some(f) = function_cause(e) {
        return f.sqlstate();
    }
    if let Some((_, code)) = recovered(e, &e.to_string()) {
        return code;
    }
    match e {
        lakegres_delta::Error::DataFusion { source, .. } => datafusion_sqlstate(source),
        other => other.sqlstate(),
    }
}

fn external_sqlstate(e: &(dyn std::error::Error + Send + Sync + 'static)) -> SqlState {
    if let Some(e) = e.downcast_ref::<lakegres_delta::Error>() {
        return delta_sqlstate(e);
    }
    if let Some(e) = e.downcast_ref::<Error>() {
        return e.sqlstate();
    }
    if let Some(e) = e.downcast_ref::<lakegres_functions::FunctionError>() {
        return e.sqlstate();
    }
    if let Some(e) = e.downcast_ref::<DataFusionError>() {
        return datafusion_sqlstate(e);
    }
    if let Some(e) = e.downcast_ref::<ArrowError>() {
        return arrow_sqlstate(e);
    }
    match lakegres_delta::delta_cause(e) {
        Some(lakegres_delta::DeltaCause::State(state)) => return state,
        Some(lakegres_delta::DeltaCause::Wrapped(inner)) => return external_sqlstate(inner),
        None => {}
    }
    if let Some(status) = e.downcast_ref::<tonic::Status>() {
        return worker_sqlstate(status);
    }
    SqlState::INTERNAL_ERROR
}

/// A worker's answer (`[cluster]`): one that is gone, unreachable or
/// refused the server is a system error outside the statement (58030,
/// 58000); an error of the task itself keeps the class its message names.
fn worker_sqlstate(status: &tonic::Status) -> SqlState {
    use tonic::Code;
    match status.code() {
        Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Aborted => {
            SqlState::IO_ERROR
        }
        Code::Unauthenticated | Code::PermissionDenied => SqlState::SYSTEM_ERROR,
        _ => execution_sqlstate(status.message()),
    }
}

/// Planning errors DataFusion reports only as text.
fn plan_sqlstate(message: &str) -> SqlState {
    let m = message.to_lowercase();
    if m.contains("table '") && m.contains("not found") {
        SqlState::UNDEFINED_TABLE
    } else if m.contains("failed to resolve schema") {
        SqlState::INVALID_SCHEMA_NAME
    } else if m.contains("invalid function") || m.contains("function") && m.contains("not found") {
        SqlState::UNDEFINED_FUNCTION
    } else if let Some((got, expected)) = insert_arity(&m) {
        // Databricks: too few columns is DELTA_INSERT_COLUMN_ARITY_MISMATCH,
        // too many is DELTA_METADATA_MISMATCH (no schema evolution).
        if got < expected {
            SqlState::COLUMN_ARITY_MISMATCH
        } else {
            SqlState::DELTA_METADATA_MISMATCH
        }
    } else if m.contains("cannot cast") || m.contains("can't cast") || m.contains("cannot coerce") {
        SqlState::DATATYPE_MISMATCH
    } else if m.contains("no value found for placeholder") || m.contains("placeholder") {
        SqlState::UNDEFINED_PARAMETER
    } else {
        SqlState::SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION
    }
}

/// (got, expected) from DataFusion's INSERT arity messages.
fn insert_arity(m: &str) -> Option<(u64, u64)> {
    let number_after = |key: &str| -> Option<u64> {
        let rest = &m[m.find(key)? + key.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    };
    if m.contains("inconsistent data length across values list") {
        Some((number_after("got ")?, number_after("but expected ")?))
    } else if m.contains("inserting query must have the same schema length") {
        Some((number_after("got:")?, number_after("schema length:")?))
    } else {
        None
    }
}

fn execution_sqlstate(message: &str) -> SqlState {
    let m = message.to_lowercase();
    if m.contains("divide by zero") || m.contains("division by zero") {
        SqlState::DIVISION_BY_ZERO
    } else if m.contains("overflow") {
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE
    } else if m.contains("non-nullable") || m.contains("null value") {
        SqlState::NOT_NULL_VIOLATION
    } else if m.contains("cast") || m.contains("parse") {
        SqlState::INVALID_CHARACTER_VALUE_FOR_CAST
    } else if m.contains("scalar subquery returned more than one row") {
        // Databricks' SCALAR_SUBQUERY_TOO_MANY_ROWS.
        SqlState::CARDINALITY_VIOLATION
    } else if m.contains("placeholder") && m.contains("not provided a value") {
        // `$1` in a statement sent without parameters (the simple
        // protocol): Postgres' "there is no parameter $1".
        SqlState::UNDEFINED_PARAMETER
    } else {
        SqlState::INTERNAL_ERROR
    }
}

fn arrow_sqlstate(e: &ArrowError) -> SqlState {
    match e {
        ArrowError::CastError(m) | ArrowError::ParseError(m) => {
            if m.to_lowercase().contains("overflow") {
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE
            } else {
                SqlState::INVALID_CHARACTER_VALUE_FOR_CAST
            }
        }
        ArrowError::DivideByZero => SqlState::DIVISION_BY_ZERO,
        ArrowError::ArithmeticOverflow(_) => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        ArrowError::ComputeError(m) if m.to_lowercase().contains("overflow") => {
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE
        }
        ArrowError::InvalidArgumentError(m) if m.contains("non-nullable") => {
            SqlState::NOT_NULL_VIOLATION
        }
        ArrowError::ExternalError(inner) => external_sqlstate(inner.as_ref()),
        _ => SqlState::INTERNAL_ERROR,
    }
}

/// A name the warehouse cannot keep is the storage layer's error, as when
/// the catalog finds it.
impl From<lakegres_common::InvalidName> for Error {
    fn from(e: lakegres_common::InvalidName) -> Self {
        Self::Delta(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_errors_keep_their_codes() {
        let err = Error::from(lakegres_delta::Error::TableNotFound {
            schema: "default".into(),
            table: "t".into(),
        });
        assert_eq!(err.sqlstate().code(), "42P01");
        let err = Error::from(lakegres_delta::Error::SchemaNotFound {
            schema: "nope".into(),
        });
        assert_eq!(err.sqlstate().code(), "3F000");
    }

    #[test]
    fn each_error_class_is_named_once_and_shown_in_its_message() {
        let mut names: Vec<&str> = class::ALL.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), class::ALL.len());
        let e = Error::analysis(class::COLUMN_ALREADY_EXISTS, "column a already exists");
        assert_eq!(
            e.to_string(),
            "[COLUMN_ALREADY_EXISTS] column a already exists"
        );
        assert_eq!(e.sqlstate(), SqlState::COLUMN_ALREADY_EXISTS);
    }

    #[test]
    fn a_failed_copy_into_keeps_its_cause_code() {
        let cause = Error::analysis(class::BAD_COPY_FILE_FORMAT, "bad row");
        let e = Error::CopyIntoFailed {
            what: "file a.csv".into(),
            source: Box::new(cause),
        };
        assert_eq!(e.sqlstate(), SqlState::BAD_COPY_FILE_FORMAT);
        assert!(e
            .to_string()
            .starts_with("[COPY_INTO_FAILED] file a.csv: [BAD_COPY_FILE_FORMAT]"));
    }

    #[test]
    fn storage_errors_keep_their_code_inside_datafusion() {
        let inner = lakegres_delta::Error::TableNotFound {
            schema: "default".into(),
            table: "t".into(),
        };
        let e = DataFusionError::Context(
            "planning".into(),
            Box::new(DataFusionError::External(Box::new(inner))),
        );
        assert_eq!(datafusion_sqlstate(&e), SqlState::UNDEFINED_TABLE);
    }

    #[test]
    fn cast_errors_are_22018() {
        let e = DataFusionError::ArrowError(
            Box::new(ArrowError::CastError(
                "Cannot cast string 'x' to value of Int32 type".into(),
            )),
            None,
        );
        assert_eq!(
            datafusion_sqlstate(&e),
            SqlState::INVALID_CHARACTER_VALUE_FOR_CAST
        );
    }
}
