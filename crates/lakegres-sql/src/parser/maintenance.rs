//! RESTORE, OPTIMIZE and VACUUM (the Delta grammar, DELTA-G4):
//!
//! ```text
//! RESTORE [TABLE] t [TO] { VERSION AS OF n | TIMESTAMP AS OF expr }
//! OPTIMIZE t [FULL] [WHERE predicate] [ZORDER BY (col, …)]
//! REORG TABLE t [WHERE predicate] APPLY (PURGE)
//! VACUUM t [LITE | FULL] [RETAIN n HOURS] [DRY RUN]
//! ```

use sqlparser::ast::{Expr, Ident, ObjectName, TableVersion};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{eat_word, eat_words, is_word, Statement};

/// `RESTORE [TABLE] t [TO] VERSION AS OF n | TIMESTAMP AS OF e`.
#[derive(Debug, Clone, PartialEq)]
pub struct Restore {
    pub name: ObjectName,
    /// The point to restore, as a time travel clause names it.
    pub to: TableVersion,
}

/// `OPTIMIZE t [WHERE predicate] [ZORDER BY (cols)]`, or `REORG TABLE t
/// [WHERE predicate] APPLY (PURGE)` (`purge`).
#[derive(Debug, Clone, PartialEq)]
pub struct Optimize {
    pub name: ObjectName,
    pub predicate: Option<Expr>,
    pub zorder: Vec<Ident>,
    /// REORG … APPLY (PURGE): rewrite the files with deletion vectors.
    pub purge: bool,
    /// `OPTIMIZE t FULL`: recluster every file of a clustered table, not
    /// only those written since the last clustering.
    pub full: bool,
}

/// `VACUUM t [LITE | FULL] [RETAIN n HOURS] [DRY RUN]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Vacuum {
    pub name: ObjectName,
    /// `RETAIN n HOURS`: n, which may have a fraction.
    pub retain_hours: Option<f64>,
    pub dry_run: bool,
    pub lite: bool,
}

/// Parses RESTORE, OPTIMIZE or VACUUM when one comes next.
pub fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let first = parser.peek_token().token;
    let second = parser.peek_nth_token(1).token;
    // A statement word followed by a name (not `RESTORE(`, `VACUUM;` …).
    if !matches!(second, Token::Word(_)) {
        return Ok(None);
    }
    if is_word(&first, "RESTORE") {
        parser.next_token();
        if is_word(&parser.peek_token().token, "TABLE")
            && matches!(parser.peek_nth_token(1).token, Token::Word(_))
            && !is_word(&parser.peek_nth_token(1).token, "TO")
            && !is_word(&parser.peek_nth_token(1).token, "VERSION")
            && !is_word(&parser.peek_nth_token(1).token, "TIMESTAMP")
        {
            parser.next_token();
        }
        let name = parser.parse_object_name(false)?;
        eat_word(parser, "TO");
        let to = if eat_words(parser, &["VERSION", "AS", "OF"]) {
            TableVersion::VersionAsOf(parser.parse_expr()?)
        } else if eat_words(parser, &["TIMESTAMP", "AS", "OF"]) {
            TableVersion::TimestampAsOf(parser.parse_expr()?)
        } else {
            return parser.expected("VERSION AS OF or TIMESTAMP AS OF", parser.peek_token());
        };
        return Ok(Some(Statement::Restore(Box::new(Restore { name, to }))));
    }
    if is_word(&first, "OPTIMIZE") {
        parser.next_token();
        let name = parser.parse_object_name(false)?;
        let full = eat_word(parser, "FULL");
        let predicate = if eat_word(parser, "WHERE") {
            Some(parser.parse_expr()?)
        } else {
            None
        };
        let mut zorder = Vec::new();
        if eat_words(parser, &["ZORDER", "BY"]) {
            let parens = parser.consume_token(&Token::LParen);
            zorder = parser.parse_comma_separated(|p| p.parse_identifier())?;
            if parens {
                parser.expect_token(&Token::RParen)?;
            }
        }
        return Ok(Some(Statement::Optimize(Box::new(Optimize {
            name,
            predicate,
            zorder,
            purge: false,
            full,
        }))));
    }
    if is_word(&first, "REORG") && is_word(&second, "TABLE") {
        parser.next_token();
        parser.next_token();
        let name = parser.parse_object_name(false)?;
        let predicate = if eat_word(parser, "WHERE") {
            Some(parser.parse_expr()?)
        } else {
            None
        };
        if !eat_word(parser, "APPLY") {
            return parser.expected("APPLY (PURGE)", parser.peek_token());
        }
        parser.expect_token(&Token::LParen)?;
        if !eat_word(parser, "PURGE") {
            // APPLY (UPGRADE UNIFORM (…)) converts to Iceberg: not here.
            return parser.expected("PURGE", parser.peek_token());
        }
        parser.expect_token(&Token::RParen)?;
        return Ok(Some(Statement::Optimize(Box::new(Optimize {
            name,
            predicate,
            zorder: Vec::new(),
            purge: true,
            full: false,
        }))));
    }
    if is_word(&first, "VACUUM") {
        parser.next_token();
        let name = parser.parse_object_name(false)?;
        let mut vacuum = Vacuum {
            name,
            retain_hours: None,
            dry_run: false,
            lite: false,
        };
        loop {
            if eat_word(parser, "LITE") {
                vacuum.lite = true;
            } else if eat_word(parser, "FULL") {
                vacuum.lite = false;
            } else if eat_word(parser, "RETAIN") {
                let token = parser.next_token();
                let hours = match &token.token {
                    Token::Number(n, _) => n.parse::<f64>().ok(),
                    _ => None,
                };
                let Some(hours) = hours else {
                    return parser.expected("a number of hours", token);
                };
                if !eat_word(parser, "HOURS") {
                    return parser.expected("HOURS", parser.peek_token());
                }
                vacuum.retain_hours = Some(hours);
            } else if eat_words(parser, &["DRY", "RUN"]) {
                vacuum.dry_run = true;
            } else {
                break;
            }
        }
        return Ok(Some(Statement::Vacuum(Box::new(vacuum))));
    }
    Ok(None)
}
