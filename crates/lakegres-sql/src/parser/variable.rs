//! Session variables and `EXECUTE IMMEDIATE` in the Databricks grammar
//! (DB-DECLARE-VARIABLE, DB-SET-VARIABLE, DB-DROP-VARIABLE,
//! DB-EXECUTE-IMMEDIATE):
//!
//! ```text
//! DECLARE [OR REPLACE] [VARIABLE] name [type] [{DEFAULT | =} expr]
//! SET {VAR | VARIABLE} name = expr [, …]
//! SET {VAR | VARIABLE} (name [, …]) = (query)
//! DROP TEMP[ORARY] VARIABLE [IF EXISTS] name
//! EXECUTE IMMEDIATE sql [INTO name [, …]] [USING expr [AS name] [, …]]
//! ```
//!
//! `DECLARE c CURSOR …` stays Postgres' cursor.

use sqlparser::ast::{self, ObjectName};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{eat_word, eat_words, is_word, rewind, Statement};

/// A parsed variable statement.
#[derive(Debug, Clone, PartialEq)]
pub enum VariableStatement {
    Declare {
        or_replace: bool,
        name: String,
        data_type: Option<ast::DataType>,
        default: Option<ast::Expr>,
    },
    Set {
        names: Vec<String>,
        values: SetValues,
    },
    Drop {
        name: String,
        if_exists: bool,
    },
    ExecuteImmediate {
        sql: ast::Expr,
        into: Vec<String>,
        using: Vec<(ast::Expr, Option<String>)>,
    },
}

/// What `SET VAR` assigns.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValues {
    /// `a = 1, b = 2`: one expression per name.
    Exprs(Vec<ast::Expr>),
    /// `(a, b) = (SELECT …)`: the query's one row.
    Query(Box<ast::Query>),
}

/// Words after `DECLARE name` that make it a cursor.
const CURSOR_WORDS: &[&str] = &[
    "CURSOR",
    "BINARY",
    "INSENSITIVE",
    "ASENSITIVE",
    "SCROLL",
    "NO",
];

/// Reads a variable statement at the parser's position, if there is one.
pub(super) fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let start = parser.index();
    let statement = if eat_word(parser, "DECLARE") {
        let or_replace = eat_words(parser, &["OR", "REPLACE"]);
        let explicit = eat_word(parser, "VARIABLE");
        if !or_replace
            && !explicit
            && CURSOR_WORDS
                .iter()
                .any(|w| is_word(&parser.peek_nth_token(1).token, w))
        {
            rewind(parser, start);
            return Ok(None);
        }
        let name = variable_name(parser)?;
        let data_type = match parser.peek_token().token {
            Token::Eq | Token::SemiColon | Token::EOF => None,
            ref t if is_word(t, "DEFAULT") => None,
            _ => Some(super::create::parse_type(parser)?),
        };
        let default = if eat_word(parser, "DEFAULT") || parser.consume_token(&Token::Eq) {
            Some(parser.parse_expr()?)
        } else {
            None
        };
        VariableStatement::Declare {
            or_replace,
            name,
            data_type,
            default,
        }
    } else if is_word(&parser.peek_token().token, "SET")
        && ["VAR", "VARIABLE"]
            .iter()
            .any(|w| is_word(&parser.peek_nth_token(1).token, w))
    {
        parser.next_token();
        parser.next_token();
        if parser.consume_token(&Token::LParen) {
            let names = parser.parse_comma_separated(variable_name)?;
            parser.expect_token(&Token::RParen)?;
            parser.expect_token(&Token::Eq)?;
            parser.expect_token(&Token::LParen)?;
            let is_query = parser.peek_keyword(Keyword::SELECT)
                || parser.peek_keyword(Keyword::WITH)
                || parser.peek_keyword(Keyword::VALUES);
            let values = if is_query {
                SetValues::Query(parser.parse_query()?)
            } else {
                SetValues::Exprs(parser.parse_comma_separated(Parser::parse_expr)?)
            };
            parser.expect_token(&Token::RParen)?;
            VariableStatement::Set { names, values }
        } else {
            let pairs = parser.parse_comma_separated(|p| {
                let name = variable_name(p)?;
                p.expect_token(&Token::Eq)?;
                Ok((name, p.parse_expr()?))
            })?;
            let (names, exprs) = pairs.into_iter().unzip();
            VariableStatement::Set {
                names,
                values: SetValues::Exprs(exprs),
            }
        }
    } else if eat_words(parser, &["DROP", "TEMPORARY", "VARIABLE"])
        || eat_words(parser, &["DROP", "TEMP", "VARIABLE"])
    {
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        VariableStatement::Drop {
            name: variable_name(parser)?,
            if_exists,
        }
    } else if eat_words(parser, &["EXECUTE", "IMMEDIATE"]) {
        let sql = parser.parse_expr()?;
        let into = if parser.parse_keyword(Keyword::INTO) {
            parser.parse_comma_separated(variable_name)?
        } else {
            Vec::new()
        };
        let using = if parser.parse_keyword(Keyword::USING) {
            parser.parse_comma_separated(|p| {
                let value = p.parse_expr()?;
                let name = if p.parse_keyword(Keyword::AS) {
                    Some(p.parse_identifier()?.value.to_lowercase())
                } else {
                    None
                };
                Ok((value, name))
            })?
        } else {
            Vec::new()
        };
        VariableStatement::ExecuteImmediate { sql, into, using }
    } else {
        return Ok(None);
    };
    Ok(Some(Statement::Variable(Box::new(statement))))
}

/// `name`, `session.name` or `system.session.name`, lower case.
fn variable_name(parser: &mut Parser) -> Result<String, ParserError> {
    let name: ObjectName = parser.parse_object_name(false)?;
    Ok(name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_lowercase())
        .unwrap_or_default())
}
