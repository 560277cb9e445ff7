//! GRANT, REVOKE and SHOW GRANTS in Databricks' form:
//!
//! ```text
//! GRANT privilege [, …] ON { SCHEMA | DATABASE } s | [TABLE | VIEW] t TO user [, …]
//! REVOKE privilege [, …] ON … FROM user [, …]
//! SHOW GRANTS [user] [ON { SCHEMA | DATABASE } s | ON [TABLE] t]
//! privilege: SELECT | MODIFY | CREATE [TABLE] | USE SCHEMA | USAGE | ALL [PRIVILEGES]
//! ```

use lakegres_delta::grants::Privilege;
use sqlparser::ast::ObjectName;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{eat_word, eat_words, is_word, Statement};

/// What a grant is on, as written.
#[derive(Debug, Clone, PartialEq)]
pub enum GrantObject {
    Schema(ObjectName),
    Table(ObjectName),
}

/// `GRANT …` (`grant` true) or `REVOKE …`.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantStatement {
    pub grant: bool,
    pub privileges: Vec<Privilege>,
    pub object: GrantObject,
    pub principals: Vec<String>,
}

/// `SHOW GRANTS [user] [ON …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShowGrants {
    pub principal: Option<String>,
    pub object: Option<GrantObject>,
}

/// Parses GRANT, REVOKE or SHOW GRANTS when one comes next.
pub fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let first = parser.peek_token().token;
    if is_word(&first, "SHOW") && is_word(&parser.peek_nth_token(1).token, "GRANTS") {
        parser.next_token();
        parser.next_token();
        let principal = if is_word(&parser.peek_token().token, "ON")
            || matches!(parser.peek_token().token, Token::SemiColon | Token::EOF)
        {
            None
        } else {
            Some(principal(parser)?)
        };
        let object = if eat_word(parser, "ON") {
            Some(object(parser)?)
        } else {
            None
        };
        return Ok(Some(Statement::ShowGrants(ShowGrants {
            principal,
            object,
        })));
    }
    let grant = if is_word(&first, "GRANT") {
        true
    } else if is_word(&first, "REVOKE") {
        false
    } else {
        return Ok(None);
    };
    parser.next_token();
    let mut privileges = vec![privilege(parser)?];
    while parser.consume_token(&Token::Comma) {
        privileges.push(privilege(parser)?);
    }
    if !eat_word(parser, "ON") {
        return parser.expected("ON", parser.peek_token());
    }
    let object = object(parser)?;
    let to = if grant { "TO" } else { "FROM" };
    if !eat_word(parser, to) {
        return parser.expected(to, parser.peek_token());
    }
    let mut principals = vec![principal(parser)?];
    while parser.consume_token(&Token::Comma) {
        principals.push(principal(parser)?);
    }
    Ok(Some(Statement::Grant(Box::new(GrantStatement {
        grant,
        privileges,
        object,
        principals,
    }))))
}

fn privilege(parser: &mut Parser) -> Result<Privilege, ParserError> {
    if eat_word(parser, "SELECT") {
        Ok(Privilege::Select)
    } else if eat_word(parser, "MODIFY") {
        Ok(Privilege::Modify)
    } else if eat_word(parser, "CREATE") {
        // Databricks' older spelling `CREATE TABLE` means the same.
        if is_word(&parser.peek_token().token, "TABLE")
            && !is_word(&parser.peek_nth_token(1).token, "ON")
        {
            return parser.expected("ON", parser.peek_nth_token(1));
        }
        eat_word(parser, "TABLE");
        Ok(Privilege::Create)
    } else if eat_words(parser, &["USE", "SCHEMA"]) || eat_word(parser, "USAGE") {
        Ok(Privilege::UseSchema)
    } else if eat_word(parser, "ALL") {
        eat_word(parser, "PRIVILEGES");
        Ok(Privilege::All)
    } else {
        parser.expected(
            "SELECT, MODIFY, CREATE, USE SCHEMA or ALL PRIVILEGES",
            parser.peek_token(),
        )
    }
}

fn object(parser: &mut Parser) -> Result<GrantObject, ParserError> {
    if eat_word(parser, "SCHEMA") || eat_word(parser, "DATABASE") {
        return Ok(GrantObject::Schema(parser.parse_object_name(false)?));
    }
    let _ = eat_word(parser, "TABLE") || eat_word(parser, "VIEW");
    Ok(GrantObject::Table(parser.parse_object_name(false)?))
}

/// A user name: a word, or quoted (`"Ann"`, `` `ann@example.com` ``,
/// `'ann'`); compared without case.
fn principal(parser: &mut Parser) -> Result<String, ParserError> {
    let token = parser.next_token();
    match token.token {
        Token::Word(w) => Ok(w.value.to_lowercase()),
        Token::SingleQuotedString(s) => Ok(s.to_lowercase()),
        _ => parser.expected("a user name", token),
    }
}
