//! The Databricks INSERT forms sqlparser does not read (SEMANTICS.md §2.1):
//! `INSERT [WITH SCHEMA EVOLUTION] {INTO | OVERWRITE} [TABLE] t
//! [PARTITION (p [= v], …)] [(cols) | BY NAME] [REPLACE WHERE p | REPLACE
//! USING (cols) | [alias] REPLACE ON cond] query`. A plain `INSERT INTO t
//! [(cols)] query` is left to sqlparser (it takes `$n` parameters there).

use sqlparser::ast::{Expr, Ident, ObjectName, Query, With};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::{eat_word, eat_words, is_word, rewind, LakegresDialect};

/// A parsed Databricks INSERT.
#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    pub schema_evolution: bool,
    pub overwrite: bool,
    pub table: ObjectName,
    /// `PARTITION (p = v, q)`: each column with its static value, if any.
    pub partition: Vec<(Ident, Option<Expr>)>,
    /// `(c1, c2)`.
    pub columns: Option<Vec<Ident>>,
    pub by_name: bool,
    pub replace: Option<Replace>,
    /// The rows; the statement's CTEs are moved into it.
    pub query: Box<Query>,
}

/// How an `INSERT INTO` replaces rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Replace {
    /// `REPLACE WHERE predicate`.
    Where(Expr),
    /// `REPLACE USING (c1, …)`.
    Using(Vec<Ident>),
    /// `[target_alias] REPLACE ON cond (query) [source_alias]`.
    On {
        condition: Expr,
        target_alias: Option<Ident>,
        source_alias: Option<Ident>,
    },
}

/// Words that start the query of an INSERT.
const QUERY_WORDS: &[&str] = &["SELECT", "VALUES", "WITH", "TABLE", "FROM"];

/// Parses an INSERT in Databricks form when one comes next and it uses
/// something sqlparser's INSERT lacks; otherwise leaves the parser where it
/// was.
pub fn try_parse(parser: &mut Parser) -> Result<Option<Insert>, ParserError> {
    let start = parser.index();
    let with = if is_word(&parser.peek_token().token, "WITH") {
        parser.next_token();
        let recursive = parser.parse_keyword(Keyword::RECURSIVE);
        match parser.parse_comma_separated(Parser::parse_cte) {
            Ok(ctes) if is_word(&parser.peek_token().token, "INSERT") => Some(With {
                with_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                recursive,
                cte_tables: ctes,
            }),
            _ => {
                rewind(parser, start);
                return Ok(None);
            }
        }
    } else {
        None
    };
    if !eat_word(parser, "INSERT") {
        rewind(parser, start);
        return Ok(None);
    }
    let schema_evolution = eat_words(parser, &["WITH", "SCHEMA", "EVOLUTION"]);
    let overwrite = if eat_word(parser, "OVERWRITE") {
        true
    } else if eat_word(parser, "INTO") {
        false
    } else {
        rewind(parser, start);
        return Ok(None);
    };
    eat_word(parser, "TABLE");
    let table = parser.parse_object_name(false)?;
    let mut partition = Vec::new();
    if eat_word(parser, "PARTITION") {
        parser.expect_token(&Token::LParen)?;
        partition = parser.parse_comma_separated(|p| {
            let column = p.parse_identifier()?;
            let value = if p.consume_token(&Token::Eq) {
                Some(p.parse_expr()?)
            } else {
                None
            };
            Ok((column, value))
        })?;
        parser.expect_token(&Token::RParen)?;
    }
    let mut target_alias = parse_alias(parser)?;
    let mut columns = None;
    let mut by_name = false;
    if eat_words(parser, &["BY", "NAME"]) {
        by_name = true;
    } else if parser.peek_token().token == Token::LParen && !starts_query(parser, 1) {
        parser.next_token();
        columns = Some(parser.parse_comma_separated(|p| p.parse_identifier())?);
        parser.expect_token(&Token::RParen)?;
    }
    if target_alias.is_none() {
        target_alias = parse_alias(parser)?;
    }
    let mut replace = None;
    if eat_word(parser, "REPLACE") {
        if overwrite {
            return parser.expected("INSERT INTO before REPLACE", parser.peek_token());
        }
        if parser.parse_keyword(Keyword::WHERE) {
            replace = Some(Replace::Where(parser.parse_expr()?));
        } else if parser.parse_keyword(Keyword::USING) {
            parser.expect_token(&Token::LParen)?;
            let cols = parser.parse_comma_separated(|p| p.parse_identifier())?;
            parser.expect_token(&Token::RParen)?;
            replace = Some(Replace::Using(cols));
        } else if parser.parse_keyword(Keyword::ON) {
            let condition = parse_condition(parser)?;
            replace = Some(Replace::On {
                condition,
                target_alias: target_alias.take(),
                source_alias: None,
            });
        } else {
            return parser.expected("WHERE, USING or ON after REPLACE", parser.peek_token());
        }
    }
    if target_alias.is_some() {
        // Postgres' `INSERT INTO t AS a …` (ON CONFLICT's target alias):
        // sqlparser's INSERT.
        if !overwrite && !schema_evolution && partition.is_empty() && !by_name {
            rewind(parser, start);
            return Ok(None);
        }
        return parser.expected("REPLACE ON after a target alias", parser.peek_token());
    }
    let mut query = if parser.peek_token().token == Token::LParen && starts_query(parser, 1) {
        parser.next_token();
        let query = parser.parse_query()?;
        parser.expect_token(&Token::RParen)?;
        if let Some(Replace::On { source_alias, .. }) = &mut replace {
            *source_alias = parse_alias(parser)?;
        }
        query
    } else {
        parser.parse_query()?
    };
    if let Some(with) = with {
        if query.with.is_some() {
            return parser.expected("one WITH clause", parser.peek_token());
        }
        query.with = Some(with);
    }
    let plain = !schema_evolution
        && !overwrite
        && partition.is_empty()
        && !by_name
        && replace.is_none()
        && query.with.is_none();
    if plain {
        rewind(parser, start);
        return Ok(None);
    }
    Ok(Some(Insert {
        schema_evolution,
        overwrite,
        table,
        partition,
        columns,
        by_name,
        replace,
        query,
    }))
}

/// Whether the token `n` ahead starts a query (`SELECT`, `VALUES`, `(` …).
fn starts_query(parser: &Parser, n: usize) -> bool {
    let token = parser.peek_nth_token(n).token;
    QUERY_WORDS.iter().any(|w| is_word(&token, w))
        || (token == Token::LParen && starts_query(parser, n + 1))
}

/// `[AS] alias`, if an identifier that is not a keyword of the statement
/// comes next.
fn parse_alias(parser: &mut Parser) -> Result<Option<Ident>, ParserError> {
    if parser.parse_keyword(Keyword::AS) {
        return parser.parse_identifier().map(Some);
    }
    let token = parser.peek_token().token;
    let reserved = ["BY", "REPLACE", "PARTITION"]
        .iter()
        .chain(QUERY_WORDS)
        .any(|w| is_word(&token, w));
    match token {
        Token::Word(_) if !reserved => parser.parse_identifier().map(Some),
        _ => Ok(None),
    }
}

/// The REPLACE ON condition: the tokens up to the query, which starts at a
/// query word or a `(` before one outside any parentheses. (Parsing the
/// expression directly would read `s.c (SELECT …)` as a function call.)
fn parse_condition(parser: &mut Parser) -> Result<Expr, ParserError> {
    let mut tokens: Vec<TokenWithSpan> = Vec::new();
    let mut depth = 0usize;
    loop {
        let next = parser.peek_token();
        let at_query = depth == 0
            && (QUERY_WORDS.iter().any(|w| is_word(&next.token, w))
                || (next.token == Token::LParen && !tokens.is_empty() && starts_query(parser, 1)));
        match next.token {
            Token::EOF | Token::SemiColon => break,
            _ if at_query => break,
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ => {}
        }
        tokens.push(parser.next_token());
    }
    if tokens.is_empty() {
        return parser.expected("a condition after REPLACE ON", parser.peek_token());
    }
    let end = parser.peek_token();
    tokens.push(TokenWithSpan::new(Token::EOF, end.span));
    let dialect = LakegresDialect::default();
    let mut sub = Parser::new(&dialect).with_tokens_with_locations(tokens);
    let condition = sub.parse_expr()?;
    if sub.peek_token().token != Token::EOF {
        return sub.expected("the end of the REPLACE ON condition", sub.peek_token());
    }
    Ok(condition)
}
