//! `ALTER TABLE` in the Databricks grammar (DB-ALTER) and `COMMENT ON TABLE`:
//!
//! ```text
//! ALTER TABLE t ADD COLUMN[S] [(] col type [NOT NULL] [COMMENT 'c'], … [)]
//! ALTER TABLE t RENAME TO t2
//! ALTER TABLE t { ALTER | CHANGE } [COLUMN] c { COMMENT 'c' | SET NOT NULL | DROP NOT NULL }
//! ALTER TABLE t SET TBLPROPERTIES ('k' = 'v', …)
//! ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] ('k', …)
//! ALTER TABLE t ADD CONSTRAINT name CHECK (expr)
//! ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name
//! COMMENT ON { TABLE | VIEW } t IS 'c' | NULL
//! COMMENT ON COLUMN t.c IS 'c' | NULL
//! ```

use sqlparser::ast::{Expr, Ident, ObjectName};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::create::{parse_column, parse_properties, ColumnDef};
use super::{eat_word, eat_words, rewind, Statement};

/// A parsed `ALTER TABLE` (or `COMMENT ON TABLE`).
#[derive(Debug, Clone, PartialEq)]
pub struct AlterTable {
    pub name: ObjectName,
    pub change: AlterChange,
}

/// What an `ALTER TABLE` changes.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterChange {
    AddColumns(Vec<ColumnDef>),
    RenameTo(ObjectName),
    /// `ALTER COLUMN c COMMENT 'x'`.
    ColumnComment {
        column: Ident,
        comment: String,
    },
    /// `ALTER COLUMN c SET NOT NULL` (true) / `DROP NOT NULL` (false).
    ColumnNotNull {
        column: Ident,
        not_null: bool,
    },
    SetProperties(Vec<(String, String)>),
    UnsetProperties {
        keys: Vec<String>,
        if_exists: bool,
    },
    AddConstraint {
        name: Ident,
        check: Box<Expr>,
    },
    DropConstraint {
        name: Ident,
        if_exists: bool,
    },
    /// `COMMENT ON TABLE t IS …` (`None` for `IS NULL`).
    TableComment(Option<String>),
    RenameColumn {
        from: Ident,
        to: Ident,
    },
    DropColumns {
        columns: Vec<Ident>,
        if_exists: bool,
    },
    /// `CLUSTER BY (cols)`; `CLUSTER BY NONE` is an empty list.
    ClusterBy(Vec<Ident>),
    /// `ALTER COLUMN c SET DEFAULT expr` / `DROP DEFAULT`.
    ColumnDefault {
        column: Ident,
        default: Option<String>,
    },
    /// `ALTER COLUMN c TYPE t`: widening a column's type.
    ColumnType {
        column: Ident,
        data_type: sqlparser::ast::DataType,
    },
}

/// `IS 'text' | IS NULL` of a COMMENT ON; the text may be dollar-quoted,
/// as dbt writes it.
fn parse_comment_is(parser: &mut Parser) -> Result<Option<String>, ParserError> {
    if !parser.parse_keyword(Keyword::IS) {
        return parser.expected("IS", parser.peek_token());
    }
    if parser.parse_keyword(Keyword::NULL) {
        return Ok(None);
    }
    if let Token::DollarQuotedString(s) = &parser.peek_token().token {
        let text = s.value.clone();
        parser.next_token();
        return Ok(Some(text));
    }
    parser.parse_literal_string().map(Some)
}

/// Parses an ALTER TABLE or COMMENT ON TABLE when one comes next.
pub fn try_parse(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let start = parser.index();
    // COMMENT ON VIEW is read as COMMENT ON TABLE: a view's own ALTER
    // TABLE forms are told apart when the name is looked up.
    if eat_words(parser, &["COMMENT", "ON", "TABLE"])
        || eat_words(parser, &["COMMENT", "ON", "VIEW"])
    {
        let name = parser.parse_object_name(false)?;
        let comment = parse_comment_is(parser)?;
        return Ok(Some(alter(name, AlterChange::TableComment(comment))));
    }
    if eat_words(parser, &["COMMENT", "ON", "COLUMN"]) {
        let mut name = parser.parse_object_name(false)?;
        let column = match name.0.pop().map(|part| part.as_ident().cloned()) {
            Some(Some(column)) if !name.0.is_empty() => column,
            _ => {
                return Err(ParserError::ParserError(
                    "COMMENT ON COLUMN needs table.column".into(),
                ))
            }
        };
        let comment = parse_comment_is(parser)?.unwrap_or_default();
        return Ok(Some(alter(
            name,
            AlterChange::ColumnComment { column, comment },
        )));
    }
    if !eat_words(parser, &["ALTER", "TABLE"]) {
        return Ok(None);
    }
    let name = parser.parse_object_name(false)?;
    let change = if eat_word(parser, "ADD") {
        if eat_word(parser, "CONSTRAINT") {
            let constraint = parser.parse_identifier()?;
            if !parser.parse_keyword(Keyword::CHECK) {
                return parser.expected("CHECK", parser.peek_token());
            }
            parser.expect_token(&Token::LParen)?;
            let check = Box::new(parser.parse_expr()?);
            parser.expect_token(&Token::RParen)?;
            AlterChange::AddConstraint {
                name: constraint,
                check,
            }
        } else {
            if !eat_word(parser, "COLUMNS") {
                eat_word(parser, "COLUMN");
            }
            let parens = parser.consume_token(&Token::LParen);
            let columns = if parens {
                let columns = parser.parse_comma_separated(parse_column)?;
                parser.expect_token(&Token::RParen)?;
                columns
            } else {
                // Postgres repeats the action: `ADD COLUMN a INT, ADD COLUMN
                // b TEXT` (dbt's on_schema_change); Databricks lists the
                // columns after one ADD COLUMNS.
                let mut columns = vec![parse_column(parser)?];
                while parser.consume_token(&Token::Comma) {
                    if eat_word(parser, "ADD") && !eat_word(parser, "COLUMNS") {
                        eat_word(parser, "COLUMN");
                    }
                    columns.push(parse_column(parser)?);
                }
                columns
            };
            AlterChange::AddColumns(columns)
        }
    } else if eat_words(parser, &["RENAME", "TO"]) {
        AlterChange::RenameTo(parser.parse_object_name(false)?)
    } else if eat_words(parser, &["CLUSTER", "BY"]) {
        if eat_word(parser, "NONE") {
            AlterChange::ClusterBy(vec![])
        } else {
            parser.expect_token(&Token::LParen)?;
            let columns = parser.parse_comma_separated(|p| p.parse_identifier())?;
            parser.expect_token(&Token::RParen)?;
            AlterChange::ClusterBy(columns)
        }
    } else if eat_words(parser, &["RENAME", "COLUMN"]) {
        let from = parser.parse_identifier()?;
        if !parser.parse_keyword(Keyword::TO) {
            return parser.expected("TO", parser.peek_token());
        }
        AlterChange::RenameColumn {
            from,
            to: parser.parse_identifier()?,
        }
    } else if eat_words(parser, &["DROP", "COLUMNS"]) || eat_words(parser, &["DROP", "COLUMN"]) {
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let columns = if parser.consume_token(&Token::LParen) {
            let columns = parser.parse_comma_separated(|p| p.parse_identifier())?;
            parser.expect_token(&Token::RParen)?;
            columns
        } else {
            parser.parse_comma_separated(|p| p.parse_identifier())?
        };
        AlterChange::DropColumns { columns, if_exists }
    } else if eat_word(parser, "ALTER") || eat_word(parser, "CHANGE") {
        eat_word(parser, "COLUMN");
        let column = parser.parse_identifier()?;
        if parser.parse_keyword(Keyword::COMMENT) {
            AlterChange::ColumnComment {
                column,
                comment: parser.parse_literal_string()?,
            }
        } else if eat_words(parser, &["SET", "DEFAULT"]) {
            AlterChange::ColumnDefault {
                column,
                default: Some(parser.parse_expr()?.to_string()),
            }
        } else if eat_words(parser, &["DROP", "DEFAULT"]) {
            AlterChange::ColumnDefault {
                column,
                default: None,
            }
        } else if eat_word(parser, "TYPE") {
            AlterChange::ColumnType {
                column,
                data_type: super::create::parse_type(parser)?,
            }
        } else if eat_words(parser, &["SET", "NOT", "NULL"]) {
            AlterChange::ColumnNotNull {
                column,
                not_null: true,
            }
        } else if eat_words(parser, &["DROP", "NOT", "NULL"]) {
            AlterChange::ColumnNotNull {
                column,
                not_null: false,
            }
        } else {
            return parser.expected(
                "COMMENT, TYPE, SET NOT NULL or DROP NOT NULL",
                parser.peek_token(),
            );
        }
    } else if eat_words(parser, &["SET", "TBLPROPERTIES"]) {
        AlterChange::SetProperties(parse_properties(parser)?)
    } else if eat_words(parser, &["UNSET", "TBLPROPERTIES"]) {
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        parser.expect_token(&Token::LParen)?;
        let keys = parser.parse_comma_separated(parse_key)?;
        parser.expect_token(&Token::RParen)?;
        AlterChange::UnsetProperties { keys, if_exists }
    } else if eat_words(parser, &["DROP", "CONSTRAINT"]) {
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        AlterChange::DropConstraint {
            name: parser.parse_identifier()?,
            if_exists,
        }
    } else {
        // Another ALTER TABLE form: sqlparser's, which the planner refuses.
        rewind(parser, start);
        return Ok(None);
    };
    Ok(Some(alter(name, change)))
}

fn alter(name: ObjectName, change: AlterChange) -> Statement {
    Statement::AlterTable(Box::new(AlterTable { name, change }))
}

/// A property key: a string or a dotted name.
pub(super) fn parse_key(p: &mut Parser) -> Result<String, ParserError> {
    if let Token::SingleQuotedString(s) = p.peek_token().token {
        p.next_token();
        return Ok(s);
    }
    let mut parts = vec![p.parse_identifier()?.value];
    while p.consume_token(&Token::Period) {
        parts.push(p.parse_identifier()?.value);
    }
    Ok(parts.join("."))
}

#[cfg(test)]
mod tests {
    use super::{AlterChange, Statement};
    use crate::parser::parse_sql;

    fn change(sql: &str) -> AlterChange {
        match parse_sql(sql).unwrap().remove(0) {
            Statement::AlterTable(a) => a.change,
            other => panic!("not an ALTER TABLE: {other:?}"),
        }
    }

    #[test]
    fn databricks_alter_forms_parse() {
        let AlterChange::AddColumns(c) =
            change("ALTER TABLE t ADD COLUMNS (a INT COMMENT 'x', b STRING)")
        else {
            panic!()
        };
        assert_eq!((c.len(), c[0].comment.as_deref()), (2, Some("x")));
        assert!(
            matches!(change("ALTER TABLE t ADD COLUMN a INT"), AlterChange::AddColumns(c) if c.len() == 1)
        );
        assert!(
            matches!(change("ALTER TABLE t ADD COLUMN a TEXT, ADD COLUMN b NUMERIC(10,2)"), AlterChange::AddColumns(c) if c.len() == 2)
        );
        assert!(
            matches!(change("ALTER TABLE t ADD COLUMN a INT, b STRING"), AlterChange::AddColumns(c) if c.len() == 2)
        );
        assert!(matches!(
            change("ALTER TABLE s.t ALTER COLUMN a SET NOT NULL"),
            AlterChange::ColumnNotNull { not_null: true, .. }
        ));
        assert!(matches!(
            change("ALTER TABLE t CHANGE a DROP NOT NULL"),
            AlterChange::ColumnNotNull {
                not_null: false,
                ..
            }
        ));
        assert!(matches!(
            change("ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('k', delta.appendOnly)"),
            AlterChange::UnsetProperties { if_exists: true, keys } if keys == ["k", "delta.appendOnly"]
        ));
        assert!(matches!(
            change("ALTER TABLE t ADD CONSTRAINT c CHECK (x > 0 AND y IS NOT NULL)"),
            AlterChange::AddConstraint { check, .. } if check.to_string() == "x > 0 AND y IS NOT NULL"
        ));
        assert!(matches!(
            change("ALTER TABLE t DROP CONSTRAINT IF EXISTS c"),
            AlterChange::DropConstraint {
                if_exists: true,
                ..
            }
        ));
        assert!(matches!(
            change("ALTER TABLE t RENAME TO u"),
            AlterChange::RenameTo(_)
        ));
        assert!(matches!(
            change("ALTER TABLE t RENAME COLUMN `a b` TO c"),
            AlterChange::RenameColumn { from, to } if from.value == "a b" && to.value == "c"
        ));
        assert!(matches!(
            change("ALTER TABLE t DROP COLUMNS IF EXISTS (a, b)"),
            AlterChange::DropColumns { columns, if_exists: true } if columns.len() == 2
        ));
        assert!(matches!(
            change("ALTER TABLE t DROP COLUMN a"),
            AlterChange::DropColumns { columns, if_exists: false } if columns.len() == 1
        ));
        assert!(matches!(
            change("COMMENT ON TABLE t IS NULL"),
            AlterChange::TableComment(None)
        ));
    }
}
