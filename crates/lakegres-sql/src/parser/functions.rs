//! `SHOW [ALL|SYSTEM|USER] FUNCTIONS [[LIKE] 'pattern']` and
//! `DESCRIBE FUNCTION [EXTENDED] name`
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-syntax-aux-show-functions.html>,
//! <https://docs.databricks.com/sql/language-manual/sql-ref-syntax-aux-describe-function.html>),
//! read as queries over the function library's table functions
//! ([`lakegres_functions::catalog`]), which list what the session can call.

use lakegres_functions::catalog::{DESCRIBE, SHOW};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{eat_word, is_word, rewind, LakegresDialect, Statement};

/// Reads `SHOW FUNCTIONS …` or `DESCRIBE FUNCTION …` at the parser's
/// position, as the query that answers it.
pub(super) fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let start = parser.index();
    let query = if eat_word(parser, "SHOW") {
        for scope in ["ALL", "SYSTEM", "USER"] {
            if is_word(&parser.peek_token().token, scope)
                && is_word(&parser.peek_nth_token(1).token, "FUNCTIONS")
            {
                parser.next_token();
            }
        }
        if !eat_word(parser, "FUNCTIONS") {
            rewind(parser, start);
            return Ok(None);
        }
        // `IN schema`: every function is built in, in every schema.
        if eat_word(parser, "IN") || eat_word(parser, "FROM") {
            parser.next_token();
        }
        let _ = eat_word(parser, "LIKE");
        let pattern = match parser.peek_token().token {
            Token::SingleQuotedString(p) => {
                parser.next_token();
                p
            }
            Token::Word(w) => {
                parser.next_token();
                w.value
            }
            _ => "*".to_string(),
        };
        format!(
            "SELECT function FROM {SHOW}('{}')",
            pattern.replace('\'', "''")
        )
    } else if eat_word(parser, "DESCRIBE") || eat_word(parser, "DESC") {
        if !eat_word(parser, "FUNCTION") {
            rewind(parser, start);
            return Ok(None);
        }
        let extended = eat_word(parser, "EXTENDED");
        let name = match parser.next_token().token {
            Token::Word(w) => w.value,
            Token::SingleQuotedString(s) => s,
            other => other.to_string(),
        };
        format!(
            "SELECT function_desc FROM {DESCRIBE}('{}', {extended})",
            name.replace('\'', "''")
        )
    } else {
        return Ok(None);
    };
    let dialect = LakegresDialect::default();
    let statement = Parser::new(&dialect)
        .try_with_sql(&query)?
        .parse_statement()?;
    Ok(Some(Statement::Sql(Box::new(statement))))
}
