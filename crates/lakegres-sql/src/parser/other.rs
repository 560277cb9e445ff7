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

/// A Databricks statement about caching or statistics, which has nothing
/// to do here: Delta keeps each file's statistics as it is written (and
/// DataFusion prunes files with them), and every read goes to the table's
/// files through the server's own caches. It answers its command tag once
/// the table is found.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub tag: &'static str,
    pub table: Option<ObjectName>,
    /// `UNCACHE TABLE IF EXISTS`: a missing table is no error.
    pub if_exists: bool,
    /// A notice for the client: why the statement does nothing.
    pub notice: Option<&'static str>,
}

/// Why CREATE INDEX does nothing.
const NO_INDEXES: &str = "Delta tables have no indexes: reads skip files by their column \
statistics (CLUSTER BY or OPTIMIZE … ZORDER BY lays the data out for them); the index was not made";

/// `CACHE [LAZY] TABLE t [OPTIONS (…)]`, `UNCACHE TABLE [IF EXISTS] t`,
/// `CLEAR CACHE`, `ANALYZE TABLE t [PARTITION (…)] COMPUTE [DELTA]
/// STATISTICS [NOSCAN | FOR COLUMNS … | FOR ALL COLUMNS]`.
fn try_parse_accepted(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let first = parser.peek_token().token;
    let skip_rest = |parser: &mut Parser| {
        while !matches!(parser.peek_token().token, Token::SemiColon | Token::EOF) {
            parser.next_token();
        }
    };
    let accepted = |tag, table, if_exists| {
        Ok(Some(Statement::Accepted(Accepted {
            tag,
            table,
            if_exists,
            notice: None,
        })))
    };
    // `CREATE [UNIQUE] INDEX [CONCURRENTLY] [[IF NOT EXISTS] name] ON
    // [ONLY] t …` (ORMs and migration tools emit it; Postgres dumps too)
    // and `DROP INDEX …`: accepted, with a notice.
    let unique = is_word(&parser.peek_nth_token(1).token, "UNIQUE");
    if is_word(&first, "CREATE")
        && is_word(
            &parser.peek_nth_token(if unique { 2 } else { 1 }).token,
            "INDEX",
        )
    {
        while !eat_word(parser, "ON") {
            if matches!(parser.next_token().token, Token::SemiColon | Token::EOF) {
                return parser.expected("ON table", parser.peek_token());
            }
        }
        eat_word(parser, "ONLY");
        let name = parser.parse_object_name(false)?;
        skip_rest(parser);
        return Ok(Some(Statement::Accepted(Accepted {
            tag: "CREATE INDEX",
            table: Some(name),
            if_exists: false,
            notice: Some(NO_INDEXES),
        })));
    }
    if is_word(&first, "DROP") && is_word(&parser.peek_nth_token(1).token, "INDEX") {
        skip_rest(parser);
        return Ok(Some(Statement::Accepted(Accepted {
            tag: "DROP INDEX",
            table: None,
            if_exists: false,
            notice: Some("Delta tables have no indexes: there was no index to drop"),
        })));
    }
    if is_word(&first, "CLEAR") && is_word(&parser.peek_nth_token(1).token, "CACHE") {
        parser.next_token();
        parser.next_token();
        return accepted("CLEAR CACHE", None, false);
    }
    if is_word(&first, "UNCACHE") {
        parser.next_token();
        eat_word(parser, "TABLE");
        let if_exists = eat_word(parser, "IF") && eat_word(parser, "EXISTS");
        let name = parser.parse_object_name(false)?;
        return accepted("UNCACHE TABLE", Some(name), if_exists);
    }
    if is_word(&first, "CACHE") {
        parser.next_token();
        eat_word(parser, "LAZY");
        if !eat_word(parser, "TABLE") {
            return parser.expected("TABLE after CACHE", parser.peek_token());
        }
        let name = parser.parse_object_name(false)?;
        if eat_word(parser, "OPTIONS") {
            parser.expect_token(&Token::LParen)?;
            let mut depth = 1;
            while depth > 0 {
                match parser.next_token().token {
                    Token::LParen => depth += 1,
                    Token::RParen => depth -= 1,
                    Token::EOF => return parser.expected(")", parser.peek_token()),
                    _ => {}
                }
            }
        }
        if !matches!(parser.peek_token().token, Token::SemiColon | Token::EOF) {
            return Err(ParserError::ParserError(
                "CACHE TABLE … AS query is not supported: CREATE TEMPORARY VIEW … AS query names a query".into(),
            ));
        }
        return accepted("CACHE TABLE", Some(name), false);
    }
    if is_word(&first, "ANALYZE") && is_word(&parser.peek_nth_token(1).token, "TABLE") {
        parser.next_token();
        parser.next_token();
        let name = parser.parse_object_name(false)?;
        skip_rest(parser);
        return accepted("ANALYZE TABLE", Some(name), false);
    }
    Ok(None)
}

/// `DESCRIBE HISTORY t [LIMIT n]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribeHistory {
    pub name: ObjectName,
    pub limit: Option<u64>,
}

/// `SHOW SCHEMAS|DATABASES [LIKE p]`, `SHOW TABLES [IN|FROM s] [LIKE p]`,
/// and what SHOW tells of one table.
#[derive(Debug, Clone, PartialEq)]
pub enum ShowObjects {
    Schemas {
        pattern: Option<String>,
    },
    Tables {
        schema: Option<Ident>,
        pattern: Option<String>,
    },
    /// `SHOW PARTITIONS t [PARTITION (c = v, …)]`.
    Partitions {
        name: ObjectName,
        spec: Vec<(Ident, sqlparser::ast::Expr)>,
    },
    /// `SHOW TABLE EXTENDED [IN|FROM s] LIKE p`.
    TablesExtended {
        schema: Option<Ident>,
        pattern: String,
    },
    /// `SHOW VIEWS [IN|FROM s] [LIKE p]`.
    Views {
        schema: Option<Ident>,
        pattern: Option<String>,
    },
    /// `SHOW CREATE TABLE t`.
    CreateTable {
        name: ObjectName,
    },
    /// `SHOW TBLPROPERTIES t [('key')]`.
    TblProperties {
        name: ObjectName,
        key: Option<String>,
    },
    /// `SHOW COLUMNS {IN|FROM} t [{IN|FROM} schema]`.
    Columns {
        name: ObjectName,
        schema: Option<Ident>,
    },
}

/// Parses a DESCRIBE or SHOW of a catalog object, or a Databricks `USE`,
/// when one comes next.
pub fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    if let Some(statement) = try_parse_accepted(parser)? {
        return Ok(Some(statement));
    }
    let first = parser.peek_token().token;
    // `USE SCHEMA s`, `USE DATABASE s`, `USE CATALOG c` (sqlparser reads
    // these keywords in its Databricks dialect only).
    if is_word(&first, "USE") {
        let second = parser.peek_nth_token(1).token;
        let kind = ["SCHEMA", "DATABASE", "CATALOG"]
            .into_iter()
            .find(|k| is_word(&second, k));
        if let (Some(kind), Token::Word(_)) = (kind, parser.peek_nth_token(2).token) {
            parser.next_token();
            parser.next_token();
            let name = parser.parse_object_name(false)?;
            let used = match kind {
                "CATALOG" => sqlparser::ast::Use::Catalog(name),
                _ => sqlparser::ast::Use::Schema(name),
            };
            return Ok(Some(Statement::Sql(Box::new(
                sqlparser::ast::Statement::Use(used),
            ))));
        }
    }
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
        if is_word(&second, "DETAIL") {
            parser.next_token();
            parser.next_token();
            let name = parser.parse_object_name(false)?;
            return Ok(Some(Statement::DescribeDetail(name)));
        }
        if ["QUERY", "SELECT", "WITH"]
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
        if is_word(&second, "CREATE") && is_word(&parser.peek_nth_token(2).token, "TABLE") {
            for _ in 0..3 {
                parser.next_token();
            }
            let name = parser.parse_object_name(false)?;
            return Ok(Some(Statement::Show(ShowObjects::CreateTable { name })));
        }
        if is_word(&second, "TBLPROPERTIES") {
            parser.next_token();
            parser.next_token();
            let name = parser.parse_object_name(false)?;
            let key = if parser.consume_token(&Token::LParen) {
                let token = parser.next_token();
                let key = match token.token.clone() {
                    Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => s,
                    Token::Word(w) => {
                        // An unquoted dotted key: `delta.appendOnly`.
                        let mut key = w.value;
                        while parser.consume_token(&Token::Period) {
                            key.push('.');
                            key.push_str(&parser.parse_identifier()?.value);
                        }
                        key
                    }
                    _ => return parser.expected("a property key", token),
                };
                parser.expect_token(&Token::RParen)?;
                Some(key)
            } else {
                None
            };
            return Ok(Some(Statement::Show(ShowObjects::TblProperties {
                name,
                key,
            })));
        }
        if is_word(&second, "COLUMNS") {
            parser.next_token();
            parser.next_token();
            if !(eat_word(parser, "IN") || eat_word(parser, "FROM")) {
                return parser.expected("IN or FROM", parser.peek_token());
            }
            let name = parser.parse_object_name(false)?;
            let schema = if eat_word(parser, "IN") || eat_word(parser, "FROM") {
                Some(parser.parse_identifier()?)
            } else {
                None
            };
            return Ok(Some(Statement::Show(ShowObjects::Columns { name, schema })));
        }
        if is_word(&second, "PARTITIONS") {
            parser.next_token();
            parser.next_token();
            let name = parser.parse_object_name(false)?;
            let mut spec = Vec::new();
            if eat_word(parser, "PARTITION") {
                parser.expect_token(&Token::LParen)?;
                loop {
                    let column = parser.parse_identifier()?;
                    parser.expect_token(&Token::Eq)?;
                    spec.push((column, parser.parse_expr()?));
                    if !parser.consume_token(&Token::Comma) {
                        break;
                    }
                }
                parser.expect_token(&Token::RParen)?;
            }
            return Ok(Some(Statement::Show(ShowObjects::Partitions {
                name,
                spec,
            })));
        }
        if is_word(&second, "TABLE") && is_word(&parser.peek_nth_token(2).token, "EXTENDED") {
            for _ in 0..3 {
                parser.next_token();
            }
            let schema = if eat_word(parser, "IN") || eat_word(parser, "FROM") {
                Some(parser.parse_identifier()?)
            } else {
                None
            };
            let Some(pattern) = parse_like(parser)? else {
                let found = parser.peek_token();
                return parser.expected("LIKE 'pattern'", found);
            };
            return Ok(Some(Statement::Show(ShowObjects::TablesExtended {
                schema,
                pattern,
            })));
        }
        if is_word(&second, "TABLES") || is_word(&second, "VIEWS") {
            parser.next_token();
            parser.next_token();
            let schema = if eat_word(parser, "IN") || eat_word(parser, "FROM") {
                Some(parser.parse_identifier()?)
            } else {
                None
            };
            let pattern = parse_like(parser)?;
            return Ok(Some(Statement::Show(if is_word(&second, "VIEWS") {
                ShowObjects::Views { schema, pattern }
            } else {
                ShowObjects::Tables { schema, pattern }
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
