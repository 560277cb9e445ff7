//! The one place errors become pgwire `ErrorInfo`s: each error's SQLSTATE,
//! a one-line message, the position of a syntax error. Statement errors are
//! logged here, once: server bugs (XX000) at `error`, user mistakes at
//! `debug`. Notices (warnings) and the FATAL refusals of a connection take
//! the same shape.

use lakegres_common::SqlState;
use pgwire::error::{ErrorInfo, PgWireError};

/// The ErrorResponse for a statement's error.
pub fn error_info(err: &lakegres_sql::Error) -> ErrorInfo {
    let state = err.sqlstate();
    let message = one_line(&err.to_string());
    if state.is_user_error() {
        tracing::debug!(sqlstate = %state, %message, "statement failed");
    } else {
        tracing::error!(sqlstate = %state, %message, "statement failed");
    }
    info(state, message, err.position())
}

/// An ErrorResponse with a given code.
pub fn info(state: SqlState, message: String, position: Option<usize>) -> ErrorInfo {
    let severity = if state.ends_session() {
        "FATAL"
    } else {
        "ERROR"
    };
    let mut info = ErrorInfo::new(severity.into(), state.code().into(), message);
    info.position = position.map(|p| p.to_string());
    info
}

/// A refusal that ends the connection (FATAL, whatever the class): a
/// refused login, a message too large or unreadable.
pub fn fatal(state: SqlState, message: String) -> ErrorInfo {
    ErrorInfo::new("FATAL".into(), state.code().into(), message)
}

/// A warning for a NoticeResponse.
pub fn warning(code: SqlState, message: String) -> ErrorInfo {
    ErrorInfo::new("WARNING".into(), code.code().into(), message)
}

/// A statement error as the pgwire error the handler traits return; pgwire
/// sends it as it is.
pub fn user_error(err: &lakegres_sql::Error) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(err)))
}

/// Messages are one line; a cause chain is joined by `: `.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_carry_their_position() {
        let err = lakegres_sql::parse_sql("SELEC 1").unwrap_err();
        let info = error_info(&err);
        assert_eq!(info.code, "42601");
        assert_eq!(info.severity, "ERROR");
        assert_eq!(info.position.as_deref(), Some("1"));
    }

    #[test]
    fn messages_are_one_line() {
        assert_eq!(one_line("a\n  b\n\nc"), "a b c");
    }
}
