//! Databricks expression syntax the Postgres dialect lacks, for
//! [`crate::LakegresDialect`] to call:
//!
//! - `a div b`, integral division
//!   (<https://docs.databricks.com/sql/language-manual/functions/div.html>);
//! - `raw:a.b[0]`, a JSON path into a string
//!   (<https://docs.databricks.com/sql/language-manual/sql-ref-json-path-expression.html>);
//! - lambdas, `x -> x + 1` and `(acc, x) -> acc + x`
//!   (<https://docs.databricks.com/sql/language-manual/sql-ref-lambda-functions.html>).
//!   Postgres' JSON operators `->`/`->>` after a bare name read as a lambda
//!   instead (Databricks wins; README "Choices").

use sqlparser::ast::{BinaryOperator, Expr};
use sqlparser::dialect::{Dialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// The precedence of the next token where ours differs, as
/// [`Dialect::get_next_precedence`] answers.
pub(crate) fn next_precedence(
    dialect: &dyn Dialect,
    parser: &Parser,
) -> Option<Result<u8, ParserError>> {
    match &parser.peek_token_ref().token {
        Token::Word(w) if w.keyword == Keyword::DIV => {
            Some(Ok(dialect.prec_value(Precedence::MulDivModOp)))
        }
        // `s:key` and `s:['key']`; not `arr[1:2]` (a number follows).
        Token::Colon
            if matches!(
                parser.peek_nth_token_ref(1).token,
                Token::Word(_) | Token::LBracket
            ) =>
        {
            Some(Ok(dialect.prec_value(Precedence::DoubleColon)))
        }
        _ => None,
    }
}

/// `exists(array, x -> …)`: the function, not `EXISTS (subquery)`.
pub(crate) fn parse_prefix(parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
    let is_exists =
        matches!(&parser.peek_token_ref().token, Token::Word(w) if w.keyword == Keyword::EXISTS);
    if !is_exists || parser.peek_nth_token_ref(1).token != Token::LParen {
        return None;
    }
    let subquery = matches!(
        &parser.peek_nth_token_ref(2).token,
        Token::Word(w) if matches!(w.keyword, Keyword::SELECT | Keyword::WITH | Keyword::VALUES)
    ) || parser.peek_nth_token_ref(2).token == Token::LParen;
    if subquery {
        return None;
    }
    let name = match parser.next_token().token {
        Token::Word(w) => w.value,
        _ => return None,
    };
    Some(parser.parse_function(sqlparser::ast::ObjectName::from(vec![
        sqlparser::ast::Ident::new(name),
    ])))
}

/// Parses `div` as an infix operator, as [`Dialect::parse_infix`] does.
pub(crate) fn parse_infix(
    dialect: &dyn Dialect,
    parser: &mut Parser,
    expr: &Expr,
) -> Option<Result<Expr, ParserError>> {
    if !parser.parse_keyword(Keyword::DIV) {
        return None;
    }
    let right = match parser.parse_subexpr(dialect.prec_value(Precedence::MulDivModOp)) {
        Ok(right) => right,
        Err(e) => return Some(Err(e)),
    };
    Some(Ok(Expr::BinaryOp {
        left: Box::new(expr.clone()),
        op: BinaryOperator::MyIntegerDivide,
        right: Box::new(right),
    }))
}

#[cfg(test)]
mod tests {
    use crate::LakegresDialect;
    use sqlparser::parser::Parser;

    fn round_trip(sql: &str) -> String {
        let dialect = LakegresDialect::default();
        Parser::new(&dialect)
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap()
            .to_string()
    }

    #[test]
    fn div_binds_like_multiplication() {
        assert_eq!(round_trip("7 div 2 + 1"), "7 DIV 2 + 1");
    }

    #[test]
    fn colon_paths_and_lambdas_parse() {
        assert_eq!(round_trip("raw:a.b[0]::int"), "raw:a.b[0]::INT");
        assert_eq!(
            round_trip("transform(a, x -> x + 1)"),
            "transform(a, x -> x + 1)"
        );
        assert_eq!(round_trip("arr[1:2]"), "arr[1:2]");
    }
}
