//! The SQL dialect: PostgreSQL's, which clients and BI tools speak, plus the
//! Databricks habits that do not clash with it.
//!
//! It lives with the functions because the two are one language: its
//! Databricks expression syntax (lambdas, `div`, `s:a.b`) is theirs
//! ([`crate::syntax`]), and their rewrites parse the expressions they build
//! in it ([`crate::rewrite::parse_expr`]). lakegres-sql's parser reads every
//! statement with it.

use std::any::TypeId;

use sqlparser::ast::Statement;
use sqlparser::dialect::{Dialect, PostgreSqlDialect};
use sqlparser::parser::{Parser, ParserError};

/// PostgreSQL with backtick identifiers and `VERSION|TIMESTAMP AS OF`.
///
/// `"x"` stays an identifier (Postgres) rather than a string (Databricks):
/// clients quote identifiers that way, and Databricks scripts use `'…'` for
/// strings.
#[derive(Debug, Default)]
pub struct LakegresDialect {
    postgres: PostgreSqlDialect,
    /// A backslash inside `'…'` escapes the next character (Databricks;
    /// Postgres with `standard_conforming_strings` off). The tokenizer then
    /// only finds where a string ends: lakegres-sql's parser reads the
    /// escapes with Spark's rules.
    backslash_escapes: bool,
}

impl LakegresDialect {
    /// The dialect with Databricks' backslash escapes in string literals.
    pub fn with_backslash_escapes() -> Self {
        Self {
            backslash_escapes: true,
            ..Self::default()
        }
    }
}

impl Dialect for LakegresDialect {
    /// sqlparser switches many Postgres forms on the dialect's type; this
    /// dialect is Postgres in all of them.
    fn dialect(&self) -> TypeId {
        TypeId::of::<PostgreSqlDialect>()
    }

    /// `IDENTIFIER('s.t')` as (the first part of) a name, Databricks' name
    /// from a string or variable: resolved when the statement runs
    /// (lakegres-sql's `names::name_parts`).
    fn is_identifier_generating_function_name(
        &self,
        ident: &sqlparser::ast::Ident,
        name_parts: &[sqlparser::ast::ObjectNamePart],
    ) -> bool {
        name_parts.is_empty()
            && ident.quote_style.is_none()
            && ident.value.eq_ignore_ascii_case("identifier")
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '"' || ch == '`'
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.postgres.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.postgres.is_identifier_part(ch)
    }

    fn supports_table_versioning(&self) -> bool {
        true
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }

    fn supports_group_by_expr(&self) -> bool {
        true
    }

    fn supports_nested_comments(&self) -> bool {
        true
    }

    fn supports_string_escape_constant(&self) -> bool {
        true
    }

    /// `GROUP BY a, b WITH ROLLUP | WITH CUBE` (Hive's; see `rewrite.rs`).
    fn supports_group_by_with_modifier(&self) -> bool {
        true
    }

    fn supports_string_literal_backslash_escape(&self) -> bool {
        self.backslash_escapes
    }

    fn supports_unicode_string_literal(&self) -> bool {
        true
    }

    fn supports_select_wildcard_except(&self) -> bool {
        true
    }

    fn allow_extract_custom(&self) -> bool {
        true
    }

    fn allow_extract_single_quotes(&self) -> bool {
        true
    }

    fn supports_create_index_with_clause(&self) -> bool {
        true
    }

    fn supports_explain_with_utility_options(&self) -> bool {
        true
    }

    fn supports_factorial_operator(&self) -> bool {
        true
    }

    fn supports_empty_projections(&self) -> bool {
        true
    }

    fn supports_numeric_literal_underscores(&self) -> bool {
        true
    }

    fn supports_set_names(&self) -> bool {
        true
    }

    fn supports_notnull_operator(&self) -> bool {
        true
    }

    fn supports_insert_table_alias(&self) -> bool {
        true
    }

    fn is_custom_operator_part(&self, ch: char) -> bool {
        self.postgres.is_custom_operator_part(ch)
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        crate::syntax::next_precedence(self, parser)
            .or_else(|| self.postgres.get_next_precedence(parser))
    }

    /// Databricks' `a div b` (see `syntax.rs`).
    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &sqlparser::ast::Expr,
        _precedence: u8,
    ) -> Option<Result<sqlparser::ast::Expr, ParserError>> {
        crate::syntax::parse_infix(self, parser, expr)
    }

    /// `exists(array, x -> …)` (see `syntax.rs`).
    fn parse_prefix(
        &self,
        parser: &mut Parser,
    ) -> Option<Result<sqlparser::ast::Expr, ParserError>> {
        crate::syntax::parse_prefix(parser)
    }

    /// `transform(a, x -> x + 1)`: Databricks' lambdas.
    fn supports_lambda_functions(&self) -> bool {
        true
    }

    /// `MAP<STRING, INT>` as a type (DDL, casts).
    fn supports_map_literal_with_angle_brackets(&self) -> bool {
        true
    }

    /// `SELECT posexplode(a) AS (pos, value)`.
    fn supports_select_item_multi_column_alias(&self) -> bool {
        true
    }

    fn prec_value(&self, prec: sqlparser::dialect::Precedence) -> u8 {
        self.postgres.prec_value(prec)
    }

    fn is_reserved_for_identifier(&self, kw: sqlparser::keywords::Keyword) -> bool {
        self.postgres.is_reserved_for_identifier(kw)
    }

    fn parse_statement(&self, _parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        None
    }
}
