//! The errors Databricks functions and operators raise in ANSI mode, each
//! with its Databricks error class and SQLSTATE
//! (<https://docs.databricks.com/error-messages/error-classes.html>).

use datafusion::error::DataFusionError;
use lakegres_common::SqlState;

/// An error of a Databricks function or operator.
#[derive(Debug, thiserror::Error)]
pub enum FunctionError {
    #[error("[DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 and return NULL instead.")]
    DivideByZero,

    #[error("[INVALID_PARAMETER_VALUE.DATETIME_UNIT] The value of parameter(s) `unit` in `{function}` is invalid: expects one of the units without quotes YEAR, QUARTER, MONTH, WEEK, DAY, DAYOFYEAR, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND, but got the string literal '{unit}'.")]
    DatetimeUnitString { function: String, unit: String },

    #[error("[INVALID_NUMERIC_LITERAL_RANGE] Numeric literal {value} is outside the valid range for {type_name}.")]
    NumericLiteralRange { value: String, type_name: String },

    #[error("[INVALID_TYPED_LITERAL] The value of the typed literal \"INTERVAL\" is invalid: '{value}': {reason}.")]
    InvalidIntervalLiteral { value: String, reason: String },

    #[error("[INTERVAL_DIVIDED_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 and return NULL instead.")]
    IntervalDividedByZero,

    #[error("[INTERVAL_ARITHMETIC_OVERFLOW] {operation} caused overflow. Use `try_{hint}` to tolerate overflow and return NULL instead.")]
    IntervalOverflow {
        operation: String,
        hint: &'static str,
    },

    #[error("[ARITHMETIC_OVERFLOW] {operation} caused overflow. Use `try_{hint}` to tolerate overflow and return NULL instead.")]
    ArithmeticOverflow {
        operation: String,
        hint: &'static str,
    },

    #[error("[NUMERIC_VALUE_OUT_OF_RANGE] {value} cannot be represented as DECIMAL({precision}, {scale}).")]
    DecimalOutOfRange {
        value: String,
        precision: u8,
        scale: i8,
    },

    #[error("[CAST_INVALID_INPUT] The value '{value}' of the type \"{from}\" cannot be cast to \"{to}\" because it is malformed. Correct the value as per the syntax, or change its target type. Use `try_cast` to tolerate malformed input and return NULL instead.")]
    CastInvalidInput {
        value: String,
        from: &'static str,
        to: String,
    },

    #[error("[CAST_OVERFLOW] The value {value} of the type \"{from}\" cannot be cast to \"{to}\" due to an overflow. Use `try_cast` to tolerate overflow and return NULL instead.")]
    CastOverflow {
        value: String,
        from: String,
        to: String,
    },

    #[error("[CAST_OVERFLOW_IN_TABLE_INSERT] Fail to assign a value of \"{from}\" type to the \"{to}\" type column or variable `{column}` due to an overflow. Use `try_cast` on the input value to tolerate overflow and return NULL instead.")]
    CastOverflowInTableInsert {
        from: String,
        to: String,
        column: String,
    },

    #[error("[INCOMPATIBLE_DATA_FOR_TABLE.CANNOT_SAFELY_CAST] Cannot write incompatible data for the table: Cannot safely cast `{column}` \"{from}\" to \"{to}\".")]
    CannotSafelyCast {
        from: String,
        to: String,
        column: String,
    },

    #[error("[EXCEED_LIMIT_LENGTH] Exceeds char/varchar type length limitation: {limit}.")]
    ExceedLimitLength { limit: usize },

    #[error("[CANNOT_PARSE_TIMESTAMP] Text '{value}' could not be parsed with the pattern '{pattern}'. Use `try_to_timestamp` to tolerate invalid input string and return NULL instead.")]
    CannotParseTimestamp { value: String, pattern: String },

    #[error("[INVALID_DATETIME_PATTERN] Unrecognized datetime pattern: {pattern}: {reason}.")]
    InvalidDatetimePattern { pattern: String, reason: String },

    #[error("[INVALID_ARRAY_INDEX] The index {index} is out of bounds. The array has {size} elements. Use the SQL function `get()` to tolerate accessing element at invalid index and return NULL instead.")]
    InvalidArrayIndex { index: i64, size: usize },

    #[error("[INVALID_ARRAY_INDEX_IN_ELEMENT_AT] The index {index} is out of bounds. The array has {size} elements. Use `try_element_at` to tolerate accessing element at invalid index and return NULL instead.")]
    InvalidArrayIndexInElementAt { index: i64, size: usize },

    #[error("[INVALID_INDEX_OF_ZERO] The index 0 is invalid. An index shall be either < 0 or > 0 (the first element has index 1).")]
    IndexOfZero,

    #[error("[NULL_MAP_KEY] Cannot use null as map key.")]
    NullMapKey,

    #[error(
        "[DUPLICATED_MAP_KEY] Duplicate map key {key} was found, please check the input data."
    )]
    DuplicatedMapKey { key: String },

    #[error(
        "[MALFORMED_RECORD_IN_PARSING] Malformed records are detected in record parsing: {record}."
    )]
    MalformedRecord { record: String },

    #[error("[INVALID_PARAMETER_VALUE] The value of parameter {parameter} in {function} is invalid: {reason}.")]
    InvalidParameter {
        function: &'static str,
        parameter: &'static str,
        reason: String,
    },

    #[error("[DATATYPE_MISMATCH] Cannot resolve {function} due to data type mismatch: {reason}.")]
    TypeMismatch { function: String, reason: String },

    #[error("[WRONG_NUM_ARGS] The `{function}` requires {expected} parameters but the actual number is {actual}.")]
    WrongNumArgs {
        function: String,
        expected: String,
        actual: usize,
    },

    #[error("[INVALID_SCHEMA] The input schema {schema} is not a valid schema string: {reason}.")]
    InvalidSchema { schema: String, reason: String },

    #[error("[UNSUPPORTED_GENERATOR] {message}.")]
    UnsupportedGenerator { message: String },

    #[error("[INVALID_LAMBDA_FUNCTION_CALL] {message}.")]
    InvalidLambda { message: String },

    #[error("[INVALID_FORMAT] The format is invalid: '{format}'. {reason}.")]
    InvalidFormat { format: String, reason: String },

    #[error("[INVALID_FORMAT.MISMATCH_INPUT] The format is invalid: '{format}'. The input {input_type} '{input}' does not match the format. Use `try_to_number` to tolerate it and return NULL instead.")]
    FormatMismatch {
        format: String,
        input_type: &'static str,
        input: String,
    },

    #[error("[USER_RAISED_EXCEPTION] {message}")]
    UserRaised { message: String },

    #[error(
        "[UNRESOLVED_ROUTINE] Cannot resolve routine `{name}` on search path [`system`.`builtin`]."
    )]
    UnresolvedRoutine { name: String },

    #[error("[PROGRAM_LIMIT_EXCEEDED] {function} would build {bytes} bytes, more than the {limit} one call may build.")]
    ResultTooLarge {
        function: String,
        bytes: u64,
        limit: u64,
    },
}

impl FunctionError {
    /// The SQLSTATE a client sees for this error.
    pub fn sqlstate(&self) -> SqlState {
        match self {
            Self::DivideByZero | Self::IntervalDividedByZero => SqlState::DIVISION_BY_ZERO,
            Self::IntervalOverflow { .. } => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            Self::DatetimeUnitString { .. } => SqlState::INVALID_PARAMETER_VALUE,
            Self::InvalidIntervalLiteral { .. } => SqlState::SYNTAX_ERROR,
            Self::NumericLiteralRange { .. } => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            Self::ArithmeticOverflow { .. } => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            Self::DecimalOutOfRange { .. } => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            Self::CastInvalidInput { .. } => SqlState::INVALID_CHARACTER_VALUE_FOR_CAST,
            Self::CannotSafelyCast { .. } => SqlState::DATATYPE_MISMATCH,
            Self::ExceedLimitLength { .. } => SqlState::EXCEED_LIMIT_LENGTH,
            Self::CastOverflow { .. } | Self::CastOverflowInTableInsert { .. } => {
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE
            }
            Self::CannotParseTimestamp { .. } => SqlState::INVALID_DATETIME_FORMAT,
            Self::InvalidDatetimePattern { .. } => SqlState::INVALID_DATETIME_FORMAT,
            Self::InvalidArrayIndex { .. } => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            Self::InvalidArrayIndexInElementAt { .. } => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            Self::IndexOfZero => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            Self::NullMapKey => SqlState::NULL_VALUE_NOT_ALLOWED,
            Self::DuplicatedMapKey { .. } => SqlState::UNIQUE_VIOLATION,
            Self::MalformedRecord { .. } => SqlState::INVALID_PARAMETER_VALUE,
            Self::InvalidParameter { .. } => SqlState::INVALID_PARAMETER_VALUE,
            Self::TypeMismatch { .. } => SqlState::EXPRESSION_TYPE_MISMATCH,
            Self::WrongNumArgs { .. } => SqlState::WRONG_NUMBER_OF_ARGUMENTS,
            Self::InvalidSchema { .. } => SqlState::SYNTAX_ERROR,
            Self::UnsupportedGenerator { .. } => SqlState::UNSUPPORTED_GENERATOR,
            Self::InvalidLambda { .. } => SqlState::INVALID_LAMBDA_FUNCTION_CALL,
            Self::InvalidFormat { .. } | Self::FormatMismatch { .. } => SqlState::SYNTAX_ERROR,
            Self::UserRaised { .. } => SqlState::USER_RAISED_EXCEPTION,
            Self::ResultTooLarge { .. } => SqlState::PROGRAM_LIMIT_EXCEEDED,
            Self::UnresolvedRoutine { .. } => SqlState::UNDEFINED_FUNCTION,
        }
    }

    /// A function error of which only the text is left — delta-rs keeps
    /// just the message of an error raised while it writes — as the error
    /// the client sees: its message from the class on, and its code.
    pub fn recover(text: &str) -> Option<(&str, SqlState)> {
        let start = text.find('[')?;
        let message = &text[start..];
        let class = &message[1..message.find(']')?];
        let code = CLASSES.iter().find(|(c, _)| *c == class)?.1;
        Some((message, code))
    }

    /// `function`'s argument `reason` is of the wrong type.
    pub fn mismatch(function: &str, reason: impl Into<String>) -> Self {
        Self::TypeMismatch {
            function: function.to_string(),
            reason: reason.into(),
        }
    }
}

/// The classes of [`FunctionError`], for [`FunctionError::recover`].
const CLASSES: &[(&str, SqlState)] = &[
    ("DIVIDE_BY_ZERO", SqlState::DIVISION_BY_ZERO),
    ("ARITHMETIC_OVERFLOW", SqlState::NUMERIC_VALUE_OUT_OF_RANGE),
    ("INTERVAL_DIVIDED_BY_ZERO", SqlState::DIVISION_BY_ZERO),
    (
        "INTERVAL_ARITHMETIC_OVERFLOW",
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
    ),
    (
        "NUMERIC_VALUE_OUT_OF_RANGE",
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
    ),
    (
        "CAST_INVALID_INPUT",
        SqlState::INVALID_CHARACTER_VALUE_FOR_CAST,
    ),
    ("CAST_OVERFLOW", SqlState::NUMERIC_VALUE_OUT_OF_RANGE),
    (
        "CAST_OVERFLOW_IN_TABLE_INSERT",
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
    ),
    (
        "INCOMPATIBLE_DATA_FOR_TABLE.CANNOT_SAFELY_CAST",
        SqlState::DATATYPE_MISMATCH,
    ),
    ("CANNOT_PARSE_TIMESTAMP", SqlState::INVALID_DATETIME_FORMAT),
    ("INVALID_ARRAY_INDEX", SqlState::NUMERIC_VALUE_OUT_OF_RANGE),
    (
        "INVALID_ARRAY_INDEX_IN_ELEMENT_AT",
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
    ),
    (
        "INVALID_INDEX_OF_ZERO",
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
    ),
    ("NULL_MAP_KEY", SqlState::NULL_VALUE_NOT_ALLOWED),
    ("DUPLICATED_MAP_KEY", SqlState::UNIQUE_VIOLATION),
    ("INVALID_FORMAT.MISMATCH_INPUT", SqlState::SYNTAX_ERROR),
    ("USER_RAISED_EXCEPTION", SqlState::USER_RAISED_EXCEPTION),
    ("PROGRAM_LIMIT_EXCEEDED", SqlState::PROGRAM_LIMIT_EXCEEDED),
];

impl From<FunctionError> for DataFusionError {
    fn from(e: FunctionError) -> Self {
        DataFusionError::External(Box::new(e))
    }
}

/// The DataFusion error for a Databricks error, for `?` and `map_err`.
pub fn df(e: FunctionError) -> DataFusionError {
    e.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_its_databricks_code() {
        assert_eq!(FunctionError::DivideByZero.sqlstate().code(), "22012");
        assert_eq!(
            FunctionError::CastInvalidInput {
                value: "a".into(),
                from: "STRING",
                to: "INT".into()
            }
            .sqlstate()
            .code(),
            "22018"
        );
        assert_eq!(
            FunctionError::InvalidArrayIndex { index: 5, size: 3 }
                .sqlstate()
                .code(),
            "22003"
        );
        assert_eq!(FunctionError::mismatch("f", "x").sqlstate().code(), "42K09");
    }

    #[test]
    fn a_function_error_is_recovered_from_its_text() {
        for e in [
            FunctionError::DivideByZero,
            FunctionError::CastOverflowInTableInsert {
                from: "BIGINT".into(),
                to: "INT".into(),
                column: "v".into(),
            },
            FunctionError::CastOverflow {
                value: "1".into(),
                from: "BIGINT".into(),
                to: "INT".into(),
            },
            FunctionError::CastInvalidInput {
                value: "x".into(),
                from: "STRING",
                to: "INT".into(),
            },
            FunctionError::InvalidArrayIndexInElementAt { index: 5, size: 1 },
        ] {
            let text = format!("writing on t: Generic DeltaTable error: External error: {e}");
            let expected = e.to_string();
            assert_eq!(
                FunctionError::recover(&text),
                Some((expected.as_str(), e.sqlstate()))
            );
        }
        assert_eq!(FunctionError::recover("[TABLE_OR_VIEW_NOT_FOUND] t"), None);
    }
}
