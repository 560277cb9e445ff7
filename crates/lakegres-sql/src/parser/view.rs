//! Views in the Databricks grammar (DB-CREATE-VIEW, DB-ALTER-VIEW):
//!
//! ```text
//! CREATE [OR REPLACE] [TEMP | TEMPORARY] VIEW [IF NOT EXISTS] v
//!     [(col [COMMENT 'c'], …)] [COMMENT 'c'] [TBLPROPERTIES (…)] AS query
//! CREATE [OR REPLACE] TEMP[ORARY] VIEW [IF NOT EXISTS] v
//!     USING csv | json | parquet OPTIONS (path '…', …)
//! ALTER VIEW v AS query
//! ALTER VIEW v RENAME TO w
//! ALTER VIEW v SET TBLPROPERTIES (…)
//! ```

use sqlparser::ast::{self, Ident, ObjectName};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::create::parse_properties;
use super::{eat_word, eat_words, is_word, rewind, Statement};

/// A parsed view statement.
#[derive(Debug, Clone, PartialEq)]
pub enum ViewStatement {
    Create(CreateView),
    /// `ALTER VIEW v AS query`.
    AlterQuery {
        name: ObjectName,
        query: Box<ast::Query>,
    },
    /// `ALTER VIEW v RENAME TO w`.
    Rename {
        name: ObjectName,
        to: ObjectName,
    },
    /// `ALTER VIEW v SET TBLPROPERTIES (…)`.
    SetProperties {
        name: ObjectName,
        properties: Vec<(String, String)>,
    },
    /// `COMMENT ON VIEW v IS …` (no column) or `COMMENT ON COLUMN v.c IS …`;
    /// `None` removes the comment.
    Comment {
        name: ObjectName,
        column: Option<Ident>,
        comment: Option<String>,
    },
}

impl ViewStatement {
    /// The view the statement is about.
    pub fn name(&self) -> &ObjectName {
        match self {
            Self::Create(c) => &c.name,
            Self::AlterQuery { name, .. }
            | Self::Rename { name, .. }
            | Self::SetProperties { name, .. }
            | Self::Comment { name, .. } => name,
        }
    }
}

/// `CREATE VIEW …`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateView {
    pub or_replace: bool,
    pub temporary: bool,
    pub if_not_exists: bool,
    pub name: ObjectName,
    /// The column list: names, with comments.
    pub columns: Vec<(Ident, Option<String>)>,
    pub comment: Option<String>,
    pub properties: Vec<(String, String)>,
    pub query: Box<ast::Query>,
}

/// Reads a view statement at the parser's position, if there is one.
pub(super) fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let start = parser.index();
    if eat_words(parser, &["ALTER", "VIEW"]) {
        let name = parser.parse_object_name(false)?;
        let statement = if parser.parse_keyword(Keyword::AS) {
            ViewStatement::AlterQuery {
                name,
                query: parser.parse_query()?,
            }
        } else if eat_words(parser, &["RENAME", "TO"]) {
            ViewStatement::Rename {
                name,
                to: parser.parse_object_name(false)?,
            }
        } else if eat_words(parser, &["SET", "TBLPROPERTIES"]) {
            ViewStatement::SetProperties {
                name,
                properties: parse_properties(parser)?,
            }
        } else {
            let found = parser.peek_token();
            return parser.expected("AS, RENAME TO or SET TBLPROPERTIES", found);
        };
        return Ok(Some(Statement::View(Box::new(statement))));
    }
    if !eat_word(parser, "CREATE") {
        return Ok(None);
    }
    let or_replace = eat_words(parser, &["OR", "REPLACE"]);
    let temporary = eat_word(parser, "TEMP") || eat_word(parser, "TEMPORARY");
    // Any other CREATE is another parser's.
    if !eat_word(parser, "VIEW") {
        rewind(parser, start);
        return Ok(None);
    }
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let mut columns = Vec::new();
    if parser.consume_token(&Token::LParen) {
        columns = parser.parse_comma_separated(|p| {
            let column = p.parse_identifier()?;
            let comment = if p.parse_keyword(Keyword::COMMENT) {
                Some(p.parse_literal_string()?)
            } else {
                None
            };
            Ok((column, comment))
        })?;
        parser.expect_token(&Token::RParen)?;
    }
    let (mut comment, mut properties) = (None, Vec::new());
    let query = if temporary && eat_word(parser, "USING") {
        files_query(parser)?
    } else {
        loop {
            if parser.parse_keyword(Keyword::COMMENT) {
                comment = Some(parser.parse_literal_string()?);
            } else if eat_word(parser, "TBLPROPERTIES") {
                properties = parse_properties(parser)?;
            } else if is_word(&parser.peek_token().token, "WITH")
                && is_word(&parser.peek_nth_token(1).token, "SCHEMA")
            {
                // `WITH SCHEMA BINDING | COMPENSATION | [TYPE] EVOLUTION`: the
                // columns are fixed at creation here, as with BINDING.
                parser.next_token();
                parser.next_token();
                let _ = eat_word(parser, "TYPE");
                parser.next_token();
            } else {
                break;
            }
        }
        parser.expect_keyword(Keyword::AS)?;
        parser.parse_query()?
    };
    Ok(Some(Statement::View(Box::new(ViewStatement::Create(
        CreateView {
            or_replace,
            temporary,
            if_not_exists,
            name,
            columns,
            comment,
            properties,
            query,
        },
    )))))
}

/// `USING format OPTIONS (path '…', k 'v', …)` of a temporary view over
/// files: the query `SELECT * FROM read_files('…', format => 'format', k =>
/// 'v', …)`, read through the file roots like any `read_files`.
fn files_query(parser: &mut Parser) -> Result<Box<ast::Query>, ParserError> {
    let format = parser.parse_identifier()?.value.to_lowercase();
    let options = if eat_word(parser, "OPTIONS") {
        parse_properties(parser)?
    } else {
        Vec::new()
    };
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let Some((_, path)) = options.iter().find(|(k, _)| k.eq_ignore_ascii_case("path")) else {
        return Err(ParserError::ParserError(
            "CREATE TEMPORARY VIEW … USING needs OPTIONS (path '…')".into(),
        ));
    };
    let mut args = vec![quote(path), format!("format => {}", quote(&format))];
    for (key, value) in options
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("path"))
    {
        if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ParserError::ParserError(format!(
                "{key:?} is not an option name"
            )));
        }
        args.push(format!("{key} => {}", quote(value)));
    }
    let sql = format!("SELECT * FROM read_files({})", args.join(", "));
    // Through the whole parser, as a user's `read_files` call is read.
    match super::parse_sql(&sql).map(|mut s| s.pop()) {
        Ok(Some(Statement::Sql(statement))) => match *statement {
            ast::Statement::Query(query) => Ok(query),
            _ => Err(ParserError::ParserError(format!("not a query: {sql}"))),
        },
        Ok(_) => Err(ParserError::ParserError(format!("not a query: {sql}"))),
        Err(e) => Err(ParserError::ParserError(e.to_string())),
    }
}
