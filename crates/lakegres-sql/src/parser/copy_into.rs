//! `COPY INTO t [BY POSITION | (cols)] FROM 'path' | (SELECT … FROM 'path')
//! FILEFORMAT = fmt [FILES = (…) | PATTERN = '…'] [FORMAT_OPTIONS (…)]
//! [COPY_OPTIONS (…)]` (SEMANTICS.md §5.1) and `LIST 'path'`.

use sqlparser::ast::{Ident, ObjectName};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::{eat_word, is_word, Statement};

/// A parsed COPY INTO.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyInto {
    pub table: ObjectName,
    pub by_position: bool,
    pub columns: Vec<Ident>,
    /// The folder or file.
    pub path: String,
    /// `FROM (SELECT … FROM 'path' …)`: the query's text with the path
    /// replaced by the table name [`COPY_SOURCE`].
    pub select: Option<String>,
    pub format: String,
    pub files: Option<Vec<String>>,
    pub pattern: Option<String>,
    /// Keys lower-cased.
    pub format_options: Vec<(String, String)>,
    pub copy_options: Vec<(String, String)>,
}

/// The name the files have in a COPY INTO's SELECT.
pub const COPY_SOURCE: &str = "lakegres_copy_source";

/// Parses `COPY INTO …` or `LIST 'path'` when one comes next.
pub fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let first = parser.peek_token().token;
    if is_word(&first, "LIST") {
        if let Token::SingleQuotedString(path) = parser.peek_nth_token(1).token {
            parser.next_token();
            parser.next_token();
            return Ok(Some(Statement::List(path)));
        }
        return Ok(None);
    }
    if !(is_word(&first, "COPY") && is_word(&parser.peek_nth_token(1).token, "INTO")) {
        return Ok(None);
    }
    parser.next_token();
    parser.next_token();
    let table = parser.parse_object_name(false)?;
    let mut by_position = false;
    let mut columns = Vec::new();
    if eat_word(parser, "BY") {
        if !eat_word(parser, "POSITION") {
            return parser.expected("POSITION", parser.peek_token());
        }
        by_position = true;
    } else if parser.peek_token().token == Token::LParen {
        parser.next_token();
        columns = parser.parse_comma_separated(|p| p.parse_identifier())?;
        parser.expect_token(&Token::RParen)?;
    }
    parser.expect_keyword(Keyword::FROM)?;
    let (path, select) = if parser.consume_token(&Token::LParen) {
        parse_select(parser)?
    } else {
        (parse_string(parser)?, None)
    };
    let mut format = None;
    let mut files = None;
    let mut pattern = None;
    let mut format_options = Vec::new();
    let mut copy_options = Vec::new();
    loop {
        if eat_word(parser, "FILEFORMAT") {
            parser.expect_token(&Token::Eq)?;
            format = Some(parser.parse_identifier()?.value.to_lowercase());
        } else if eat_word(parser, "FILES") {
            parser.expect_token(&Token::Eq)?;
            parser.expect_token(&Token::LParen)?;
            files = Some(parser.parse_comma_separated(parse_string)?);
            parser.expect_token(&Token::RParen)?;
        } else if eat_word(parser, "PATTERN") {
            parser.expect_token(&Token::Eq)?;
            pattern = Some(parse_string(parser)?);
        } else if eat_word(parser, "FORMAT_OPTIONS") {
            format_options = parse_options(parser)?;
        } else if eat_word(parser, "COPY_OPTIONS") {
            copy_options = parse_options(parser)?;
        } else if eat_word(parser, "VALIDATE") {
            return parser.expected("no VALIDATE (not supported)", parser.peek_token());
        } else {
            break;
        }
    }
    let Some(format) = format else {
        return parser.expected("FILEFORMAT = CSV | JSON | PARQUET", parser.peek_token());
    };
    if files.is_some() && pattern.is_some() {
        return parser.expected("FILES or PATTERN, not both", parser.peek_token());
    }
    Ok(Some(Statement::CopyInto(Box::new(CopyInto {
        table,
        by_position,
        columns,
        path,
        select,
        format,
        files,
        pattern,
        format_options,
        copy_options,
    }))))
}

fn parse_string(parser: &mut Parser) -> Result<String, ParserError> {
    match parser.next_token().token {
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Ok(s),
        _ => {
            parser.prev_token();
            parser.expected("a quoted string", parser.peek_token())
        }
    }
}

/// `( 'key' = 'value', … )`; keys may also be bare words.
fn parse_options(parser: &mut Parser) -> Result<Vec<(String, String)>, ParserError> {
    parser.expect_token(&Token::LParen)?;
    let options = parser.parse_comma_separated(|p| {
        let key = match p.next_token().token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => s,
            Token::Word(w) => w.value,
            _ => {
                p.prev_token();
                return p.expected("an option name", p.peek_token());
            }
        };
        p.expect_token(&Token::Eq)?;
        let value = match p.next_token().token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => s,
            Token::Word(w) => w.value,
            Token::Number(n, _) => n,
            _ => {
                p.prev_token();
                return p.expected("an option value", p.peek_token());
            }
        };
        Ok((key.to_lowercase(), value))
    })?;
    parser.expect_token(&Token::RParen)?;
    Ok(options)
}

/// `SELECT … FROM 'path' …)`: the text of the query with the path replaced
/// by [`COPY_SOURCE`], and the path.
fn parse_select(parser: &mut Parser) -> Result<(String, Option<String>), ParserError> {
    let mut depth = 0usize;
    let mut tokens: Vec<TokenWithSpan> = Vec::new();
    let mut path = None;
    loop {
        // Whitespace is kept: the tokens are joined back into text.
        let Some(token) = parser.next_token_no_skip().cloned() else {
            return parser.expected(")", parser.peek_token());
        };
        match &token.token {
            Token::EOF => return parser.expected(")", token),
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => break,
            Token::RParen => depth -= 1,
            Token::SingleQuotedString(s) if path.is_none() && follows_from(&tokens) => {
                path = Some(s.clone());
                tokens.push(TokenWithSpan::wrap(Token::make_word(COPY_SOURCE, None)));
                continue;
            }
            _ => {}
        }
        tokens.push(token);
    }
    let Some(path) = path else {
        return parser.expected("FROM 'path' in the COPY INTO query", parser.peek_token());
    };
    let text: String = tokens.iter().map(|t| t.token.to_string()).collect();
    Ok((path, Some(text)))
}

/// Whether the last non-whitespace token is FROM.
fn follows_from(tokens: &[TokenWithSpan]) -> bool {
    tokens
        .iter()
        .rev()
        .find(|t| !matches!(t.token, Token::Whitespace(_)))
        .is_some_and(|t| is_word(&t.token, "FROM"))
}
