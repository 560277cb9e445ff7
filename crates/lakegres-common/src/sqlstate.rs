//! SQLSTATE codes, as the SQL standard and PostgreSQL define them, plus the
//! Databricks-only codes the conformance cases check (SEMANTICS.md §11).
//!
//! This type lives in the lowest crate so that every crate's error can name
//! its code; the wire layer turns it into an `ErrorResponse`.

use std::fmt;

/// A five-character SQLSTATE code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SqlState(&'static str);

impl SqlState {
    /// The five characters of the code.
    pub fn code(&self) -> &'static str {
        self.0
    }

    /// Whether an error of this class ends the session (authentication,
    /// unknown database, protocol violations at startup).
    pub fn ends_session(&self) -> bool {
        self.0.starts_with("28") || self.0 == "3D000"
    }

    /// Whether the class is caused by the user's input rather than by a
    /// server bug or an outside system.
    pub fn is_user_error(&self) -> bool {
        matches!(
            &self.0[..2],
            "0A" | "21"
                | "22"
                | "23"
                | "25"
                | "28"
                | "34"
                | "3D"
                | "3F"
                | "42"
                | "44"
                | "KD"
                | "57"
                | "F0"
        )
    }

    pub const SUCCESSFUL_COMPLETION: SqlState = SqlState("00000");
    /// The code of a NoticeResponse with severity WARNING.
    pub const WARNING: SqlState = SqlState("01000");
    pub const FEATURE_NOT_SUPPORTED: SqlState = SqlState("0A000");
    /// Databricks `DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED`,
    /// `DELTA_UNSUPPORTED_SUBQUERY`.
    pub const DELTA_FEATURE_NOT_SUPPORTED: SqlState = SqlState("0AKDC");
    pub const CARDINALITY_VIOLATION: SqlState = SqlState("21000");
    /// Databricks `DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE`.
    pub const MERGE_DUPLICATE_SOURCE: SqlState = SqlState("21506");
    /// `INSERT_COLUMN_ARITY_MISMATCH` (column list or BY NAME).
    pub const INSERT_ARITY_MISMATCH: SqlState = SqlState("21S01");
    pub const DATA_EXCEPTION: SqlState = SqlState("22000");
    pub const NUMERIC_VALUE_OUT_OF_RANGE: SqlState = SqlState("22003");
    pub const INVALID_DATETIME_FORMAT: SqlState = SqlState("22007");
    pub const DATETIME_FIELD_OVERFLOW: SqlState = SqlState("22008");
    pub const DIVISION_BY_ZERO: SqlState = SqlState("22012");
    /// `CAST_INVALID_INPUT`.
    pub const INVALID_CHARACTER_VALUE_FOR_CAST: SqlState = SqlState("22018");
    pub const INVALID_PARAMETER_VALUE: SqlState = SqlState("22023");
    pub const INVALID_TEXT_REPRESENTATION: SqlState = SqlState("22P02");
    /// A binary COPY field that is not its type's binary form.
    pub const INVALID_BINARY_REPRESENTATION: SqlState = SqlState("22P03");
    /// Malformed COPY data (wrong number of fields, bad quoting).
    pub const BAD_COPY_FILE_FORMAT: SqlState = SqlState("22P04");
    pub const NOT_NULL_VIOLATION: SqlState = SqlState("23502");
    pub const CHECK_VIOLATION: SqlState = SqlState("23514");
    pub const ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25001");
    pub const INVALID_SAVEPOINT_SPECIFICATION: SqlState = SqlState("3B001");
    pub const IN_FAILED_SQL_TRANSACTION: SqlState = SqlState("25P02");
    pub const NO_ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25P01");
    pub const INVALID_AUTHORIZATION: SqlState = SqlState("28000");
    pub const INVALID_PASSWORD: SqlState = SqlState("28P01");
    pub const INVALID_CATALOG_NAME: SqlState = SqlState("3D000");
    pub const INVALID_SCHEMA_NAME: SqlState = SqlState("3F000");
    pub const SERIALIZATION_FAILURE: SqlState = SqlState("40001");
    pub const SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION: SqlState = SqlState("42000");
    pub const SYNTAX_ERROR: SqlState = SqlState("42601");
    pub const INSUFFICIENT_PRIVILEGE: SqlState = SqlState("42501");
    pub const DATATYPE_MISMATCH: SqlState = SqlState("42804");
    /// Databricks `DELTA_INSERT_COLUMN_ARITY_MISMATCH`, `INSERT_REPLACE_USING_DISALLOW_MISALIGNED_COLUMNS`.
    pub const COLUMN_ARITY_MISMATCH: SqlState = SqlState("42802");
    pub const WRONG_OBJECT_TYPE: SqlState = SqlState("42809");
    /// Databricks `DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED`,
    /// `…_UPDATE_NOT_SUPPORTED`: a column that cannot take a given value.
    pub const COLUMN_NOT_ASSIGNABLE: SqlState = SqlState("42808");
    pub const UNDEFINED_COLUMN: SqlState = SqlState("42703");
    pub const UNDEFINED_FUNCTION: SqlState = SqlState("42883");
    pub const UNDEFINED_TABLE: SqlState = SqlState("42P01");
    pub const UNDEFINED_OBJECT: SqlState = SqlState("42704");
    pub const UNDEFINED_PARAMETER: SqlState = SqlState("42P02");
    pub const DUPLICATE_COLUMN: SqlState = SqlState("42701");
    pub const AMBIGUOUS_COLUMN: SqlState = SqlState("42702");
    pub const DUPLICATE_SCHEMA: SqlState = SqlState("42P06");
    pub const DUPLICATE_TABLE: SqlState = SqlState("42P07");
    /// Databricks `COLUMN_ALREADY_EXISTS` / `DELTA_DUPLICATE_COLUMNS_FOUND`.
    pub const COLUMN_ALREADY_EXISTS: SqlState = SqlState("42711");
    /// STATIC_PARTITION_COLUMN_IN_INSERT_COLUMN_LIST.
    pub const DUPLICATE_ALIAS: SqlState = SqlState("42713");
    /// Databricks `DELTA_AGGREGATION_NOT_SUPPORTED`.
    pub const AGGREGATE_NOT_ALLOWED: SqlState = SqlState("42903");
    /// Spark `NON_LAST_*_CLAUSE_OMIT_CONDITION` (MERGE clause order).
    pub const NON_LAST_CLAUSE_OMIT_CONDITION: SqlState = SqlState("42613");
    /// Delta `DELTA_TABLE_LOCATION_MISMATCH`: REPLACE with a LOCATION that is
    /// not the existing table's (42613, options that do not go together).
    pub const TABLE_LOCATION_MISMATCH: SqlState = SqlState("42613");
    pub const INVALID_TABLE_DEFINITION: SqlState = SqlState("42P16");
    /// Databricks `DELTA_SCHEMA_NOT_SET`: a table without columns yet.
    pub const SCHEMA_NOT_SET: SqlState = SqlState("KD008");
    /// Databricks' `DELTA_MISSING_CHANGE_DATA`: no change data for a range.
    pub const MISSING_CHANGE_DATA: SqlState = SqlState("KD002");
    /// Databricks `DELTA_SCHEMA_NOT_PROVIDED`.
    pub const SCHEMA_NOT_PROVIDED: SqlState = SqlState("42908");
    /// Databricks `DELTA_CANNOT_USE_ALL_COLUMNS_FOR_PARTITION`.
    pub const ALL_COLUMNS_PARTITIONED: SqlState = SqlState("428FT");
    /// Databricks `DELTA_METADATA_MISMATCH`.
    pub const DELTA_METADATA_MISMATCH: SqlState = SqlState("42KDG");
    /// Databricks `DELTA_CREATE_TABLE_SCHEME_MISMATCH`.
    pub const DELTA_SCHEMA_MISMATCH: SqlState = SqlState("42KD7");
    /// Databricks' INVALID_TEMP_OBJ_REFERENCE: a persistent object reading
    /// a temporary one.
    pub const INVALID_TEMP_OBJECT_REFERENCE: SqlState = SqlState("42K0F");
    /// Databricks' VARIABLE_ALREADY_EXISTS (Postgres' duplicate_function).
    pub const DUPLICATE_VARIABLE: SqlState = SqlState("42723");
    /// Databricks' INVALID_STATEMENT_FOR_EXECUTE_INTO.
    pub const INVALID_STATEMENT_FOR_EXECUTE_INTO: SqlState = SqlState("07501");
    pub const DEPENDENT_OBJECTS_STILL_EXIST: SqlState = SqlState("2BP01");
    /// Databricks `DELTA_REPLACE_WHERE_MISMATCH`.
    pub const WITH_CHECK_OPTION_VIOLATION: SqlState = SqlState("44000");
    pub const QUERY_CANCELED: SqlState = SqlState("57014");
    pub const DUPLICATE_CURSOR: SqlState = SqlState("42P03");
    /// DELTA_TIMESTAMP_GREATER_THAN_COMMIT / …_EARLIER_THAN_COMMIT_RETENTION.
    pub const TIMESTAMP_OUT_OF_HISTORY: SqlState = SqlState("42816");
    pub const INVALID_CURSOR_NAME: SqlState = SqlState("34000");
    /// A write the storage had no room for (ENOSPC, EDQUOT, EFBIG).
    pub const DISK_FULL: SqlState = SqlState("53100");
    pub const OUT_OF_MEMORY: SqlState = SqlState("53200");
    pub const TOO_MANY_CONNECTIONS: SqlState = SqlState("53300");
    /// A client message larger than `max_message_size`.
    pub const PROGRAM_LIMIT_EXCEEDED: SqlState = SqlState("54000");
    pub const STATEMENT_TOO_COMPLEX: SqlState = SqlState("54001");
    /// `EXCEED_LIMIT_LENGTH`: a value longer than its CHAR(n) / VARCHAR(n) column.
    pub const EXCEED_LIMIT_LENGTH: SqlState = SqlState("54006");
    pub const IO_ERROR: SqlState = SqlState("58030");
    pub const SYSTEM_ERROR: SqlState = SqlState("58000");
    /// Databricks `DELTA_FILE_NOT_FOUND_DETAILED`: a data file the log
    /// names is gone (RESTORE to a vacuumed version).
    pub const DELTA_FILE_NOT_FOUND: SqlState = SqlState("42K03");
    /// Databricks `DELTA_NON_PARTITION_COLUMN_REFERENCE`,
    /// `DELTA_ZORDERING_ON_PARTITION_COLUMN`: OPTIMIZE names a column of
    /// the wrong kind.
    pub const INVALID_COLUMN_REFERENCE: SqlState = SqlState("42P10");
    /// Spark `SHOW_COLUMNS_WITH_CONFLICT_NAMESPACE`.
    pub const SHOW_COLUMNS_CONFLICT: SqlState = SqlState("42K05");
    /// Databricks `DELTA_UNKNOWN_CONFIGURATION`.
    pub const CONFIG_FILE_ERROR: SqlState = SqlState("F0000");
    /// Databricks `DELTA_CONSTRAINT_ALREADY_EXISTS`.
    pub const DUPLICATE_OBJECT: SqlState = SqlState("42710");
    /// Databricks `UNSET_NONEXISTENT_PROPERTIES`.
    pub const UNSET_NONEXISTENT_PROPERTIES: SqlState = SqlState("42K0J");
    /// Databricks `DELTA_CANNOT_MODIFY_TABLE_PROPERTY`.
    pub const CANNOT_MODIFY_TABLE_PROPERTY: SqlState = SqlState("42939");
    pub const PROTOCOL_VIOLATION: SqlState = SqlState("08P01");
    /// Databricks `DATATYPE_MISMATCH.*`, `UNEXPECTED_INPUT_TYPE`: an
    /// argument of the wrong type for a function or operator.
    pub const EXPRESSION_TYPE_MISMATCH: SqlState = SqlState("42K09");
    /// Databricks `WRONG_NUM_ARGS`.
    pub const WRONG_NUMBER_OF_ARGUMENTS: SqlState = SqlState("42605");
    /// Databricks `INVALID_LAMBDA_FUNCTION_CALL`.
    pub const INVALID_LAMBDA_FUNCTION_CALL: SqlState = SqlState("42K0D");
    /// Databricks `UNSUPPORTED_GENERATOR`.
    pub const UNSUPPORTED_GENERATOR: SqlState = SqlState("42K0E");
    /// Databricks `NULL_MAP_KEY`.
    pub const NULL_VALUE_NOT_ALLOWED: SqlState = SqlState("2200E");
    /// Databricks `DUPLICATED_MAP_KEY`.
    pub const UNIQUE_VIOLATION: SqlState = SqlState("23505");
    /// Databricks `USER_RAISED_EXCEPTION` (`raise_error`, `assert_true`).
    pub const USER_RAISED_EXCEPTION: SqlState = SqlState("P0001");
    pub const INTERNAL_ERROR: SqlState = SqlState("XX000");
}

impl fmt::Display for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::SqlState;

    #[test]
    fn codes_are_five_characters() {
        for s in [
            SqlState::MERGE_DUPLICATE_SOURCE,
            SqlState::DELTA_METADATA_MISMATCH,
            SqlState::UNDEFINED_TABLE,
            SqlState::INTERNAL_ERROR,
        ] {
            assert_eq!(s.code().len(), 5);
        }
    }

    #[test]
    fn only_auth_and_database_errors_end_the_session() {
        assert!(SqlState::INVALID_PASSWORD.ends_session());
        assert!(SqlState::INVALID_CATALOG_NAME.ends_session());
        assert!(!SqlState::SYNTAX_ERROR.ends_session());
    }
}
