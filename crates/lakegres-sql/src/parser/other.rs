//! DESCRIBE and SHOW statements in their Databricks forms.

use sqlparser::ast::{Ident, ObjectName};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{eat_word, is_word, Statement};

/// `DESCRIBE [TABLE] [EXTENDED|FORMATTED] name [column]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribeTable {
    pub name: ObjectName,
    pub extended: bool,
    pub column: Option<Ident>,
}

/// `DESCRIBE HISTORY t [LIMIT n]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribeHistory {
    pub name: ObjectName,
    pub limit: Option<u64>,
}

/// `SHOW SCHEMAS|DATABASES [LIKE p]`, `SHOW TABLES [IN|FROM s] [LIKE p]`.
#[derive(Debug, Clone, PartialEq)]
pub enum ShowObjects {
    Schemas {
        pattern: Option<String>,
    },
    Tables {
        schema: Option<Ident>,
        pattern: Option<String>,
    },
}

/// Parses a DESCRIBE or SHOW of a catalog object when one comes next.
pub fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let first = parser.peek_token().token;
    if is_word(&first, "DESCRIBE") || is_word(&first, "DESC") {
        let second = parser.peek_nth_token(1).token;
        if is_word(&second, "HISTORY") {
            parser.next_token();
            parser.next_token();
            let name = parser.parse_object_name(false)?;
            let limit = if eat_word(parser, "LIMIT") {
                Some(parser.parse_literal_uint()?)
            } else {
                None
            };
            return Ok(Some(Statement::DescribeHistory(DescribeHistory {
                name,
                limit,
            })));
        }
        // DESCRIBE DETAIL belongs to the table life cycle (issue #8).
        if ["QUERY", "SELECT", "WITH", "DETAIL"]
            .iter()
            .any(|w| is_word(&second, w))
        {
            return Ok(None);
        }
        parser.next_token();
        eat_word(parser, "TABLE");
        let extended = eat_word(parser, "EXTENDED") || eat_word(parser, "FORMATTED");
        let name = parser.parse_object_name(false)?;
        let column = match parser.peek_token().token {
            Token::Word(_) => Some(parser.parse_identifier()?),
            _ => None,
        };
        return Ok(Some(Statement::Describe(DescribeTable {
            name,
            extended,
            column,
        })));
    }
    if is_word(&first, "SHOW") {
        let second = parser.peek_nth_token(1).token;
        if is_word(&second, "SCHEMAS") || is_word(&second, "DATABASES") {
            parser.next_token();
            parser.next_token();
            let pattern = parse_like(parser)?;
            return Ok(Some(Statement::Show(ShowObjects::Schemas { pattern })));
        }
        if is_word(&second, "TABLES") {
            parser.next_token();
            parser.next_token();
            let schema = if eat_word(parser, "IN") || eat_word(parser, "FROM") {
                Some(parser.parse_identifier()?)
            } else {
                None
            };
            let pattern = parse_like(parser)?;
            return Ok(Some(Statement::Show(ShowObjects::Tables {
                schema,
                pattern,
            })));
        }
    }
    Ok(None)
}

fn parse_like(parser: &mut Parser) -> Result<Option<String>, ParserError> {
    eat_word(parser, "LIKE");
    match parser.peek_token().token {
        Token::SingleQuotedString(s) => {
            parser.next_token();
            Ok(Some(s))
        }
        _ => Ok(None),
    }
}
