//! `CREATE [OR REPLACE] [EXTERNAL] TABLE` and `REPLACE TABLE` in the
//! Databricks grammar (SEMANTICS.md §1.1): clauses in any order, each once.

use sqlparser::ast::{DataType, Ident, ObjectName, Query};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{eat_word, eat_words, is_word};

/// A column of a CREATE TABLE.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub name: Ident,
    pub data_type: DataType,
    pub not_null: bool,
    pub comment: Option<String>,
    /// `GENERATED ALWAYS AS (expr)`: the expression's SQL text.
    pub generated: Option<String>,
}

/// A PARTITIONED BY entry: a column of the list, or a new typed column
/// (Hive form).
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionColumn {
    pub name: Ident,
    pub data_type: Option<DataType>,
}

/// A parsed CREATE TABLE.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    pub name: ObjectName,
    /// `CREATE OR REPLACE` or `REPLACE`.
    pub or_replace: bool,
    /// `REPLACE TABLE` without `CREATE OR`: the table must exist.
    pub replace_only: bool,
    pub if_not_exists: bool,
    pub external: bool,
    pub columns: Vec<ColumnDef>,
    pub using: Option<String>,
    pub partitioned_by: Vec<PartitionColumn>,
    pub cluster_by: Vec<Ident>,
    pub comment: Option<String>,
    pub properties: Vec<(String, String)>,
    pub location: Option<String>,
    pub query: Option<Box<Query>>,
}

/// Parses a CREATE/REPLACE TABLE when one comes next.
pub fn try_parse(parser: &mut Parser) -> Result<Option<CreateTable>, ParserError> {
    let (or_replace, replace_only, external) =
        if eat_words(parser, &["CREATE", "OR", "REPLACE", "TABLE"]) {
            (true, false, false)
        } else if eat_words(parser, &["CREATE", "TABLE"]) {
            (false, false, false)
        } else if eat_words(parser, &["CREATE", "EXTERNAL", "TABLE"]) {
            (false, false, true)
        } else if eat_words(parser, &["REPLACE", "TABLE"]) {
            (true, true, false)
        } else {
            return Ok(None);
        };
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    if if_not_exists && or_replace {
        // DB-CREATE: "CREATE OR REPLACE TABLE IF NOT EXISTS is not allowed".
        return parser.expected(
            "a table name (IF NOT EXISTS cannot go with REPLACE)",
            parser.peek_token(),
        );
    }
    let name = parser.parse_object_name(false)?;
    let mut create = CreateTable {
        name,
        or_replace,
        replace_only,
        if_not_exists,
        external,
        columns: vec![],
        using: None,
        partitioned_by: vec![],
        cluster_by: vec![],
        comment: None,
        properties: vec![],
        location: None,
        query: None,
    };
    if parser.peek_token().token == Token::LParen && !starts_query(parser, 1) {
        parser.next_token();
        create.columns = parser.parse_comma_separated(parse_column)?;
        parser.expect_token(&Token::RParen)?;
    }
    let mut seen: Vec<&'static str> = Vec::new();
    let mut once = |parser: &Parser, clause: &'static str| -> Result<(), ParserError> {
        if seen.contains(&clause) {
            return parser.expected(&format!("{clause} at most once"), parser.peek_token());
        }
        seen.push(clause);
        Ok(())
    };
    loop {
        if parser.parse_keyword(Keyword::USING) {
            once(parser, "USING")?;
            create.using = Some(parser.parse_identifier()?.value);
        } else if eat_words(parser, &["PARTITIONED", "BY"]) {
            once(parser, "PARTITIONED BY")?;
            parser.expect_token(&Token::LParen)?;
            create.partitioned_by = parser.parse_comma_separated(|p| {
                let name = p.parse_identifier()?;
                let data_type = match p.peek_token().token {
                    Token::Comma | Token::RParen => None,
                    _ => Some(p.parse_data_type()?),
                };
                Ok(PartitionColumn { name, data_type })
            })?;
            parser.expect_token(&Token::RParen)?;
        } else if eat_words(parser, &["CLUSTER", "BY"]) {
            once(parser, "CLUSTER BY")?;
            parser.expect_token(&Token::LParen)?;
            create.cluster_by = parser.parse_comma_separated(|p| p.parse_identifier())?;
            parser.expect_token(&Token::RParen)?;
        } else if parser.parse_keyword(Keyword::COMMENT) {
            once(parser, "COMMENT")?;
            create.comment = Some(parser.parse_literal_string()?);
        } else if eat_word(parser, "TBLPROPERTIES") {
            once(parser, "TBLPROPERTIES")?;
            create.properties = parse_properties(parser)?;
        } else if eat_word(parser, "OPTIONS") {
            once(parser, "OPTIONS")?;
            create.properties.extend(parse_properties(parser)?);
        } else if parser.parse_keyword(Keyword::LOCATION) {
            once(parser, "LOCATION")?;
            create.location = Some(parser.parse_literal_string()?);
        } else {
            break;
        }
    }
    let as_query = parser.parse_keyword(Keyword::AS);
    if as_query || starts_query(parser, 0) {
        create.query = Some(parser.parse_query()?);
    }
    Ok(Some(create))
}

/// Whether the token `n` ahead starts a query (`SELECT`, `WITH`, `VALUES`,
/// `(SELECT …`).
fn starts_query(parser: &Parser, n: usize) -> bool {
    let t = parser.peek_nth_token(n).token;
    ["SELECT", "WITH", "VALUES", "FROM", "TABLE"]
        .iter()
        .any(|w| is_word(&t, w))
        || (t == Token::LParen && starts_query(parser, n + 1))
}

pub(super) fn parse_column(parser: &mut Parser) -> Result<ColumnDef, ParserError> {
    let name = parser.parse_identifier()?;
    let data_type = parser.parse_data_type()?;
    let mut column = ColumnDef {
        name,
        data_type,
        not_null: false,
        comment: None,
        generated: None,
    };
    loop {
        if parser.parse_keywords(&[Keyword::NOT, Keyword::NULL]) {
            column.not_null = true;
        } else if parser.parse_keyword(Keyword::NULL) {
            column.not_null = false;
        } else if parser.parse_keyword(Keyword::COMMENT) {
            column.comment = Some(parser.parse_literal_string()?);
        } else if eat_words(parser, &["GENERATED", "ALWAYS", "AS"]) {
            parser.expect_token(&Token::LParen)?;
            column.generated = Some(parser.parse_expr()?.to_string());
            parser.expect_token(&Token::RParen)?;
        } else {
            break;
        }
    }
    Ok(column)
}

/// `( key [=] value, … )`: keys are strings or dotted names, values literals.
pub(super) fn parse_properties(parser: &mut Parser) -> Result<Vec<(String, String)>, ParserError> {
    parser.expect_token(&Token::LParen)?;
    let properties = parser.parse_comma_separated(|p| {
        let key = super::alter::parse_key(p)?;
        let _ = p.consume_token(&Token::Eq);
        let next = p.next_token();
        let value = match next.token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => s,
            Token::Number(n, _) => n,
            Token::Word(w) => w.value,
            _ => return p.expected("a property value", next),
        };
        Ok((key, value))
    })?;
    parser.expect_token(&Token::RParen)?;
    Ok(properties)
}
