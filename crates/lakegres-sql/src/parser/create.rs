//! `CREATE [OR REPLACE] [EXTERNAL] TABLE` and `REPLACE TABLE` in the
//! Databricks grammar (SEMANTICS.md §1.1): clauses in any order, each once.

use sqlparser::ast::{
    ArrayElemTypeDef, DataType, Expr, Ident, ObjectName, Query, SqlOption, StructBracketKind,
    StructField, TableVersion, Value,
};
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
    /// `GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY [(START WITH n INCREMENT BY m)]`.
    pub identity: Option<IdentitySpec>,
    /// `DEFAULT expr`: the expression's SQL text.
    pub default: Option<String>,
}

/// An identity column's clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdentitySpec {
    pub always: bool,
    pub start: i64,
    pub step: i64,
}

/// A PRIMARY KEY, UNIQUE or FOREIGN KEY constraint of a CREATE TABLE, on a
/// column or on the table: informational, as Databricks' (NOT ENFORCED),
/// kept so that clients listing them find them.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyConstraint {
    /// `CONSTRAINT name`, when given.
    pub name: Option<Ident>,
    pub kind: KeyKind,
    pub columns: Vec<Ident>,
}

/// What a [`KeyConstraint`] says.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyKind {
    PrimaryKey,
    Unique,
    /// `REFERENCES table [(columns)]`.
    ForeignKey {
        table: ObjectName,
        columns: Vec<Ident>,
    },
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
    /// `{SHALLOW | DEEP} CLONE source [VERSION | TIMESTAMP AS OF …]`.
    pub clone: Option<CloneSource>,
    /// PRIMARY KEY, UNIQUE and FOREIGN KEY constraints, of columns and of
    /// the table, in the order written.
    pub constraints: Vec<KeyConstraint>,
}

/// The source of a CREATE TABLE … CLONE.
#[derive(Debug, Clone, PartialEq)]
pub struct CloneSource {
    pub shallow: bool,
    pub source: ObjectName,
    pub at: Option<TableVersion>,
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
        clone: None,
        constraints: vec![],
    };
    let shallow = eat_words(parser, &["SHALLOW", "CLONE"]);
    if shallow || eat_words(parser, &["DEEP", "CLONE"]) || eat_word(parser, "CLONE") {
        let source = parser.parse_object_name(false)?;
        let at = if eat_words(parser, &["VERSION", "AS", "OF"]) {
            Some(TableVersion::VersionAsOf(parser.parse_expr()?))
        } else if eat_words(parser, &["TIMESTAMP", "AS", "OF"]) {
            Some(TableVersion::TimestampAsOf(parser.parse_expr()?))
        } else {
            None
        };
        create.clone = Some(CloneSource {
            shallow,
            source,
            at,
        });
    }
    if create.clone.is_none()
        && parser.peek_token().token == Token::LParen
        && !starts_query(parser, 1)
    {
        parser.next_token();
        let elements = parser.parse_comma_separated(parse_element)?;
        parser.expect_token(&Token::RParen)?;
        for element in elements {
            match element {
                Element::Column(column, constraints) => {
                    create.columns.push(column);
                    create.constraints.extend(constraints);
                }
                Element::Constraint(constraint) => create.constraints.push(constraint),
            }
        }
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
                    _ => Some(parse_type(p)?),
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
    let as_query = create.clone.is_none() && parser.parse_keyword(Keyword::AS);
    if as_query || (create.clone.is_none() && starts_query(parser, 0)) {
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

/// An element of a CREATE TABLE's list: a column (with the constraints
/// written on it) or a table constraint.
enum Element {
    Column(ColumnDef, Vec<KeyConstraint>),
    Constraint(KeyConstraint),
}

fn parse_element(parser: &mut Parser) -> Result<Element, ParserError> {
    let constraint_next = |parser: &Parser| {
        let (t0, t1) = (parser.peek_token().token, parser.peek_nth_token(1).token);
        (is_word(&t0, "CONSTRAINT") && matches!(t1, Token::Word(_)))
            || (is_word(&t0, "PRIMARY") && is_word(&t1, "KEY"))
            || (is_word(&t0, "FOREIGN") && is_word(&t1, "KEY"))
            || (is_word(&t0, "UNIQUE") && t1 == Token::LParen)
            || (is_word(&t0, "CHECK") && t1 == Token::LParen)
    };
    if !constraint_next(parser) {
        let mut constraints = Vec::new();
        let column = parse_column_with(parser, &mut constraints)?;
        return Ok(Element::Column(column, constraints));
    }
    let name = if eat_word(parser, "CONSTRAINT") {
        Some(parser.parse_identifier()?)
    } else {
        None
    };
    let kind = if eat_words(parser, &["PRIMARY", "KEY"]) {
        KeyKind::PrimaryKey
    } else if eat_word(parser, "UNIQUE") {
        KeyKind::Unique
    } else if eat_words(parser, &["FOREIGN", "KEY"]) {
        let columns = parse_column_list(parser)?;
        if !eat_word(parser, "REFERENCES") {
            return parser.expected("REFERENCES", parser.peek_token());
        }
        let kind = parse_references(parser)?;
        skip_characteristics(parser)?;
        return Ok(Element::Constraint(KeyConstraint {
            name,
            kind,
            columns,
        }));
    } else {
        return check_refused(parser);
    };
    let columns = parse_column_list(parser)?;
    skip_characteristics(parser)?;
    Ok(Element::Constraint(KeyConstraint {
        name,
        kind,
        columns,
    }))
}

/// `(a, b, …)`.
fn parse_column_list(parser: &mut Parser) -> Result<Vec<Ident>, ParserError> {
    parser.expect_token(&Token::LParen)?;
    let columns = parser.parse_comma_separated(|p| p.parse_identifier())?;
    parser.expect_token(&Token::RParen)?;
    Ok(columns)
}

/// `table [(columns)]` after REFERENCES, and the referential actions and
/// MATCH clause that may follow (informational constraints take no
/// action).
fn parse_references(parser: &mut Parser) -> Result<KeyKind, ParserError> {
    let table = parser.parse_object_name(false)?;
    let columns = if parser.peek_token().token == Token::LParen {
        parse_column_list(parser)?
    } else {
        Vec::new()
    };
    loop {
        if eat_words(parser, &["ON", "DELETE"]) || eat_words(parser, &["ON", "UPDATE"]) {
            let _ = eat_word(parser, "CASCADE")
                || eat_word(parser, "RESTRICT")
                || eat_words(parser, &["NO", "ACTION"])
                || eat_words(parser, &["SET", "NULL"])
                || eat_words(parser, &["SET", "DEFAULT"]);
        } else if eat_word(parser, "MATCH") {
            let _ = eat_word(parser, "FULL")
                || eat_word(parser, "SIMPLE")
                || eat_word(parser, "PARTIAL");
        } else {
            break;
        }
    }
    Ok(KeyKind::ForeignKey { table, columns })
}

/// A constraint's characteristics, which change nothing for an
/// informational constraint: `[NOT] ENFORCED`, `[NO]RELY`, `[NOT]
/// DEFERRABLE`, `INITIALLY {DEFERRED | IMMEDIATE}`, `NOT VALID`. An
/// ENFORCED key is refused: nothing here would enforce it.
fn skip_characteristics(parser: &mut Parser) -> Result<(), ParserError> {
    loop {
        if eat_words(parser, &["NOT", "ENFORCED"])
            || eat_word(parser, "RELY")
            || eat_word(parser, "NORELY")
            || eat_word(parser, "DEFERRABLE")
            || eat_words(parser, &["NOT", "DEFERRABLE"])
            || eat_words(parser, &["INITIALLY", "DEFERRED"])
            || eat_words(parser, &["INITIALLY", "IMMEDIATE"])
            || eat_words(parser, &["NOT", "VALID"])
        {
            continue;
        }
        if is_word(&parser.peek_token().token, "ENFORCED") {
            return parser.expected(
                "NOT ENFORCED (keys are informational: nothing would enforce them)",
                parser.peek_token(),
            );
        }
        return Ok(());
    }
}

/// A CHECK in CREATE TABLE: refused with where to write it instead.
fn check_refused<T>(parser: &mut Parser) -> Result<T, ParserError> {
    parser.expected(
        "PRIMARY KEY, UNIQUE or FOREIGN KEY (add a CHECK with ALTER TABLE … ADD CONSTRAINT … CHECK)",
        parser.peek_token(),
    )
}

/// Postgres' serial types: a BIGINT identity column (Delta's identity
/// columns are BIGINT), NOT NULL, `GENERATED BY DEFAULT` so that explicit
/// values are taken as a sequence's would be.
fn serial(data_type: &DataType) -> bool {
    let DataType::Custom(name, modifiers) = data_type else {
        return false;
    };
    modifiers.is_empty()
        && name.0.len() == 1
        && name.0[0].as_ident().is_some_and(|i| {
            [
                "serial",
                "bigserial",
                "smallserial",
                "serial2",
                "serial4",
                "serial8",
            ]
            .iter()
            .any(|s| i.value.eq_ignore_ascii_case(s))
        })
}

pub(super) fn parse_column(parser: &mut Parser) -> Result<ColumnDef, ParserError> {
    let mut constraints = Vec::new();
    let column = parse_column_with(parser, &mut constraints)?;
    if !constraints.is_empty() {
        return parser.expected("a column without key constraints here", parser.peek_token());
    }
    Ok(column)
}

/// A column and the key constraints written on it, added to
/// `constraints`.
fn parse_column_with(
    parser: &mut Parser,
    constraints: &mut Vec<KeyConstraint>,
) -> Result<ColumnDef, ParserError> {
    let name = parser.parse_identifier()?;
    let mut data_type = parse_type(parser)?;
    let mut identity = None;
    let mut not_null = false;
    if serial(&data_type) {
        data_type = DataType::BigInt(None);
        identity = Some(IdentitySpec {
            always: false,
            start: 1,
            step: 1,
        });
        not_null = true;
    }
    let mut column = ColumnDef {
        name,
        data_type,
        not_null,
        comment: None,
        generated: None,
        identity,
        default: None,
    };
    let mut constraint_name = None;
    loop {
        if eat_word(parser, "CONSTRAINT") {
            constraint_name = Some(parser.parse_identifier()?);
            continue;
        }
        let kind = if eat_words(parser, &["PRIMARY", "KEY"]) {
            column.not_null = true;
            Some(KeyKind::PrimaryKey)
        } else if eat_word(parser, "UNIQUE") {
            Some(KeyKind::Unique)
        } else if eat_word(parser, "REFERENCES") {
            Some(parse_references(parser)?)
        } else if is_word(&parser.peek_token().token, "CHECK") {
            return check_refused(parser);
        } else {
            None
        };
        if let Some(kind) = kind {
            skip_characteristics(parser)?;
            constraints.push(KeyConstraint {
                name: constraint_name.take(),
                kind,
                columns: vec![column.name.clone()],
            });
            continue;
        }
        if parser.parse_keywords(&[Keyword::NOT, Keyword::NULL]) {
            column.not_null = true;
        } else if parser.parse_keyword(Keyword::NULL) {
            column.not_null = false;
        } else if parser.parse_keyword(Keyword::COMMENT) {
            column.comment = Some(parser.parse_literal_string()?);
        } else if parser.parse_keyword(Keyword::DEFAULT) {
            column.default = Some(parser.parse_expr()?.to_string());
        } else if eat_words(parser, &["GENERATED", "ALWAYS", "AS", "IDENTITY"]) {
            column.identity = Some(parse_identity(parser, true)?);
        } else if eat_words(parser, &["GENERATED", "BY", "DEFAULT", "AS", "IDENTITY"]) {
            column.identity = Some(parse_identity(parser, false)?);
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

/// `[( [START WITH n] [INCREMENT BY m] )]` after `AS IDENTITY`, either
/// order; both default to 1.
fn parse_identity(parser: &mut Parser, always: bool) -> Result<IdentitySpec, ParserError> {
    let mut spec = IdentitySpec {
        always,
        start: 1,
        step: 1,
    };
    if !parser.consume_token(&Token::LParen) {
        return Ok(spec);
    }
    loop {
        if eat_words(parser, &["START", "WITH"]) {
            spec.start = parse_signed(parser)?;
        } else if eat_words(parser, &["INCREMENT", "BY"]) {
            spec.step = parse_signed(parser)?;
        } else {
            break;
        }
    }
    parser.expect_token(&Token::RParen)?;
    Ok(spec)
}

/// A whole number, with its sign.
fn parse_signed(parser: &mut Parser) -> Result<i64, ParserError> {
    let negative = parser.consume_token(&Token::Minus);
    let next = parser.next_token();
    match &next.token {
        Token::Number(n, _) => {
            let text = if negative { format!("-{n}") } else { n.clone() };
            text.parse()
                .map_err(|_| ParserError::ParserError(format!("{text} is not a BIGINT")))
        }
        _ => parser.expected("a whole number", next),
    }
}

/// The option key a STRUCT field's `COMMENT 'c'` is kept under.
pub const FIELD_COMMENT: &str = "comment";
/// The option key a STRUCT field's `NOT NULL` is kept under.
pub const FIELD_NOT_NULL: &str = "not_null";

/// A column type: Databricks' nested types — `ARRAY<T>`, `MAP<K, V>`,
/// `STRUCT<a: T [NOT NULL] [COMMENT 'c'], …>`, nested to any depth — or any
/// type sqlparser reads. sqlparser reads these only in dialects whose
/// other rules would change how Postgres clients' SQL parses.
pub fn parse_type(parser: &mut Parser) -> Result<DataType, ParserError> {
    let mut pending = 0;
    let mut data_type = nested_type(parser, &mut pending)?;
    if pending > 0 {
        return parser.expected("the end of the type", parser.peek_token());
    }
    // Postgres' arrays: `int[]`, `text[][]`, `int[3]` (the size is not
    // kept, as in Postgres).
    while parser.peek_token().token == Token::LBracket {
        parser.next_token();
        let size = match parser.peek_token().token {
            Token::Number(n, _) => {
                parser.next_token();
                n.parse().ok()
            }
            _ => None,
        };
        parser.expect_token(&Token::RBracket)?;
        data_type = DataType::Array(ArrayElemTypeDef::SquareBracket(Box::new(data_type), size));
    }
    Ok(data_type)
}

/// One type inside a nested type; `pending` counts the `>` of a `>>` the
/// tokenizer read as one token that is still to close a type.
fn nested_type(parser: &mut Parser, pending: &mut usize) -> Result<DataType, ParserError> {
    let opens = |parser: &Parser, word: &str| {
        is_word(&parser.peek_token().token, word) && parser.peek_nth_token(1).token == Token::Lt
    };
    if opens(parser, "ARRAY") {
        parser.next_token();
        parser.next_token();
        let element = nested_type(parser, pending)?;
        close_angle(parser, pending)?;
        return Ok(DataType::Array(ArrayElemTypeDef::AngleBracket(Box::new(
            element,
        ))));
    }
    if opens(parser, "MAP") {
        parser.next_token();
        parser.next_token();
        let key = nested_type(parser, pending)?;
        parser.expect_token(&Token::Comma)?;
        let value = nested_type(parser, pending)?;
        close_angle(parser, pending)?;
        return Ok(DataType::Map(Box::new(key), Box::new(value)));
    }
    if opens(parser, "STRUCT") {
        parser.next_token();
        parser.next_token();
        let mut fields = Vec::new();
        loop {
            let name = parser.parse_identifier()?;
            let _ = parser.consume_token(&Token::Colon);
            let field_type = nested_type(parser, pending)?;
            let mut options = Vec::new();
            loop {
                if *pending > 0 {
                    break;
                }
                if parser.parse_keywords(&[Keyword::NOT, Keyword::NULL]) {
                    options.push(SqlOption::KeyValue {
                        key: Ident::new(FIELD_NOT_NULL),
                        value: Expr::Value(Value::Boolean(true).into()),
                    });
                } else if parser.parse_keyword(Keyword::COMMENT) {
                    let comment = parser.parse_literal_string()?;
                    options.push(SqlOption::KeyValue {
                        key: Ident::new(FIELD_COMMENT),
                        value: Expr::Value(Value::SingleQuotedString(comment).into()),
                    });
                } else {
                    break;
                }
            }
            fields.push(StructField {
                field_name: Some(name),
                field_type,
                options: (!options.is_empty()).then_some(options),
            });
            if *pending > 0 {
                *pending -= 1;
                break;
            }
            if !parser.consume_token(&Token::Comma) {
                close_angle(parser, pending)?;
                break;
            }
        }
        return Ok(DataType::Struct(fields, StructBracketKind::AngleBrackets));
    }
    parser.parse_data_type()
}

/// Reads the `>` that closes a nested type (one half of a `>>`).
fn close_angle(parser: &mut Parser, pending: &mut usize) -> Result<(), ParserError> {
    if *pending > 0 {
        *pending -= 1;
        return Ok(());
    }
    // `>`, or `>>` / `>>>` read as one token, each `>` closing a type.
    let text = parser.peek_token().token.to_string();
    if !text.is_empty() && text.chars().all(|c| c == '>') {
        parser.next_token();
        *pending += text.len() - 1;
        return Ok(());
    }
    parser.expected(">", parser.peek_token())
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
