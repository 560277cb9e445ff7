//! `[WITH …] MERGE [WITH SCHEMA EVOLUTION] INTO t [[AS] a] USING src ON cond
//! WHEN …` in the Databricks grammar (SEMANTICS.md §3.1), `UPDATE SET *` and
//! `INSERT *` included, which sqlparser does not read.

use sqlparser::ast::{Expr, Ident, ObjectName, TableFactor, With};

use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{eat_word, eat_words, is_word, rewind};

/// A parsed MERGE.
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    pub with: Option<With>,
    pub schema_evolution: bool,
    pub target: ObjectName,
    pub target_alias: Option<Ident>,
    pub source: TableFactor,
    pub on: Expr,
    pub clauses: Vec<MergeClause>,
}

/// One `WHEN …` clause.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeClause {
    pub kind: MergeClauseKind,
    pub condition: Option<Expr>,
    pub action: MergeAction,
}

/// Which rows a clause applies to (the storage layer's own kind).
pub use lakegres_delta::merge::MergeClauseKind;

/// What a clause does.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeAction {
    /// `UPDATE SET c = e, …` (targets may be qualified).
    Update(Vec<(ObjectName, Expr)>),
    /// `UPDATE SET *`.
    UpdateAll,
    Delete,
    /// `INSERT (c, …) VALUES (e, …)` (columns may be qualified).
    Insert {
        columns: Vec<ObjectName>,
        values: Vec<Expr>,
    },
    /// `INSERT *`.
    InsertAll,
}

/// Parses a MERGE (with its CTEs) when one comes next; otherwise leaves the
/// parser where it was.
pub fn try_parse(parser: &mut Parser) -> Result<Option<Merge>, ParserError> {
    let start = parser.index();
    let with = if is_word(&parser.peek_token().token, "WITH") {
        parser.next_token();
        let recursive = parser.parse_keyword(Keyword::RECURSIVE);
        let ctes = match parser.parse_comma_separated(Parser::parse_cte) {
            Ok(ctes) => ctes,
            Err(_) => {
                rewind(parser, start);
                return Ok(None);
            }
        };
        if !is_word(&parser.peek_token().token, "MERGE") {
            rewind(parser, start);
            return Ok(None);
        }
        Some(With {
            with_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
            recursive,
            cte_tables: ctes,
        })
    } else {
        None
    };
    if !eat_word(parser, "MERGE") {
        return Ok(None);
    }
    let schema_evolution = eat_words(parser, &["WITH", "SCHEMA", "EVOLUTION"]);
    parser.expect_keyword(Keyword::INTO)?;
    let target = parser.parse_object_name(false)?;
    let has_alias = parser.parse_keyword(Keyword::AS)
        || (matches!(parser.peek_token().token, Token::Word(_))
            && !is_word(&parser.peek_token().token, "USING"));
    let target_alias = if has_alias {
        Some(parser.parse_identifier()?)
    } else {
        None
    };
    parser.expect_keyword(Keyword::USING)?;
    let source = parser.parse_table_factor()?;
    parser.expect_keyword(Keyword::ON)?;
    let on = parser.parse_expr()?;
    let mut clauses = Vec::new();
    while eat_word(parser, "WHEN") {
        clauses.push(parse_clause(parser)?);
    }
    if clauses.is_empty() {
        return parser.expected(
            "WHEN (a MERGE needs at least one WHEN clause)",
            parser.peek_token(),
        );
    }
    Ok(Some(Merge {
        with,
        schema_evolution,
        target,
        target_alias,
        source,
        on,
        clauses,
    }))
}

fn parse_clause(parser: &mut Parser) -> Result<MergeClause, ParserError> {
    let kind = if eat_word(parser, "MATCHED") {
        MergeClauseKind::Matched
    } else if eat_words(parser, &["NOT", "MATCHED"]) {
        if eat_words(parser, &["BY", "SOURCE"]) {
            MergeClauseKind::NotMatchedBySource
        } else {
            eat_words(parser, &["BY", "TARGET"]);
            MergeClauseKind::NotMatchedByTarget
        }
    } else {
        return parser.expected("MATCHED or NOT MATCHED", parser.peek_token());
    };
    let condition = if parser.parse_keyword(Keyword::AND) {
        Some(parser.parse_expr()?)
    } else {
        None
    };
    parser.expect_keyword(Keyword::THEN)?;
    let action = if eat_word(parser, "UPDATE") {
        parser.expect_keyword(Keyword::SET)?;
        if parser.consume_token(&Token::Mul) {
            MergeAction::UpdateAll
        } else {
            MergeAction::Update(parser.parse_comma_separated(|p| {
                let column = p.parse_object_name(false)?;
                p.expect_token(&Token::Eq)?;
                Ok((column, p.parse_expr()?))
            })?)
        }
    } else if eat_word(parser, "DELETE") {
        MergeAction::Delete
    } else if eat_word(parser, "INSERT") {
        if parser.consume_token(&Token::Mul) {
            MergeAction::InsertAll
        } else {
            parser.expect_token(&Token::LParen)?;
            let columns = parser.parse_comma_separated(|p| p.parse_object_name(false))?;
            parser.expect_token(&Token::RParen)?;
            parser.expect_keyword(Keyword::VALUES)?;
            parser.expect_token(&Token::LParen)?;
            let values = parser.parse_comma_separated(Parser::parse_expr)?;
            parser.expect_token(&Token::RParen)?;
            MergeAction::Insert { columns, values }
        }
    } else {
        return parser.expected("UPDATE, DELETE or INSERT", parser.peek_token());
    };
    let allowed = match kind {
        MergeClauseKind::Matched => {
            !matches!(action, MergeAction::Insert { .. } | MergeAction::InsertAll)
        }
        MergeClauseKind::NotMatchedByTarget => {
            matches!(action, MergeAction::Insert { .. } | MergeAction::InsertAll)
        }
        MergeClauseKind::NotMatchedBySource => {
            matches!(action, MergeAction::Update(_) | MergeAction::Delete)
        }
    };
    if !allowed {
        return parser.expected("an action this WHEN clause allows", parser.peek_token());
    }
    Ok(MergeClause {
        kind,
        condition,
        action,
    })
}
