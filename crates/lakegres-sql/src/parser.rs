//! Text → [`Statement`]s.
//!
//! sqlparser reads the standard and Postgres forms; the Databricks forms it
//! cannot read (`CREATE TABLE … USING DELTA PARTITIONED BY …`, `DESCRIBE
//! TABLE`, `SHOW SCHEMAS` …) are read here first, on sqlparser's tokens, so
//! one statement string may mix both. The dialect ([`LakegresDialect`], from
//! lakegres-functions) is PostgreSQL's, as clients and BI tools send
//! Postgres SQL, with backtick identifiers, `VERSION AS OF` and Databricks'
//! expression syntax added for Databricks scripts.

mod alter;
mod copy_into;
mod create;
mod functions;
mod grants;
mod insert;
mod literals;
mod maintenance;
mod merge;
mod other;
mod variable;
mod view;

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};

pub use alter::{AlterChange, AlterTable};
pub use copy_into::{CopyInto, COPY_SOURCE};
pub use create::{
    CloneSource, ColumnDef, CreateTable, IdentitySpec, KeyConstraint, KeyKind, PartitionColumn,
    FIELD_COMMENT, FIELD_NOT_NULL,
};
pub use grants::{GrantObject, GrantStatement, ShowGrants};
pub use insert::{Insert, Replace};
pub use lakegres_functions::LakegresDialect;
pub(crate) use literals::tokenize;
pub use literals::StringLiterals;
pub use maintenance::{Optimize, Restore, Vacuum};
pub use merge::{Merge, MergeAction, MergeClause, MergeClauseKind};
pub use other::{DescribeHistory, DescribeTable, ShowObjects};
pub use variable::{SetValues, VariableStatement};
pub use view::{CreateView, ViewStatement};

use crate::error::{Error, Result};
use crate::info::SqlKind;

/// One statement, as the planner receives it.
#[derive(Debug, Clone)]
pub enum Statement {
    /// A statement sqlparser reads (SELECT, INSERT, SET, …).
    Sql(Box<ast::Statement>),
    /// Databricks' `BEGIN ATOMIC stmt; … END`: the statements as one
    /// transaction. Without `end` the text stopped before END (psql sends
    /// each statement on its own): the block stays open for the next
    /// statements, and END (COMMIT) closes it.
    Atomic {
        statements: Vec<Statement>,
        end: bool,
    },
    /// `ALTER TABLE …` and `COMMENT ON TABLE` in Databricks form.
    AlterTable(Box<AlterTable>),
    /// `CREATE [OR REPLACE] TABLE …` in Databricks form.
    CreateTable(Box<CreateTable>),
    /// `CREATE [TEMPORARY] VIEW …`, `ALTER VIEW …`.
    View(Box<ViewStatement>),
    /// `DECLARE VARIABLE`, `SET VAR`, `DROP TEMPORARY VARIABLE`,
    /// `EXECUTE IMMEDIATE`.
    Variable(Box<VariableStatement>),
    /// `DESCRIBE [TABLE] [EXTENDED] t [col]`.
    Describe(DescribeTable),
    /// `SHOW SCHEMAS|DATABASES`, `SHOW TABLES [IN s]`.
    Show(ShowObjects),
    /// `DESCRIBE HISTORY t [LIMIT n]`.
    DescribeHistory(DescribeHistory),
    /// `DESCRIBE DETAIL t`.
    DescribeDetail(ast::ObjectName),
    /// `RESTORE [TABLE] t [TO] VERSION|TIMESTAMP AS OF …`.
    Restore(Box<Restore>),
    /// `OPTIMIZE t [WHERE …] [ZORDER BY (…)]`.
    Optimize(Box<Optimize>),
    /// `VACUUM t [LITE|FULL] [RETAIN n HOURS] [DRY RUN]`.
    Vacuum(Box<Vacuum>),
    /// `MERGE INTO …` in Databricks form.
    Merge(Box<Merge>),
    /// `EXPLAIN MERGE …`.
    ExplainMerge(Box<Merge>),
    /// An INSERT in a Databricks form sqlparser lacks (OVERWRITE,
    /// PARTITION, BY NAME, REPLACE …).
    Insert(Box<Insert>),
    /// `COPY INTO t FROM 'path' FILEFORMAT = …`.
    CopyInto(Box<CopyInto>),
    /// `LIST 'path'`.
    List(String),
    /// `GRANT …` or `REVOKE …`.
    Grant(Box<GrantStatement>),
    /// `SHOW GRANTS [user] [ON …]`.
    ShowGrants(ShowGrants),
    /// A catalog query whose answer is known to be empty.
    NoRows,
    /// Accepted and ignored (`LISTEN`, `UNLISTEN *`, `NOTIFY`: there are no
    /// notifications); the command tag to answer.
    NoOp(String),
    /// A statement with nothing to do here on an existing table: `CACHE
    /// TABLE`, `UNCACHE TABLE`, `ANALYZE TABLE … COMPUTE STATISTICS` (see
    /// [`other::Accepted`]).
    Accepted(other::Accepted),
}

/// A query of Lakegres' own, parsed from the constant `sql`, for its syntax
/// tree to be filled in with a statement's parts: what a user wrote is
/// never rendered to text and parsed again.
pub(crate) fn query_template(sql: &str) -> Result<Box<ast::Query>> {
    match parse_sql(sql)?.pop() {
        Some(Statement::Sql(statement)) => match *statement {
            ast::Statement::Query(query) => Ok(query),
            _ => Err(Error::internal(format!(
                "the template {sql:?} is not a query"
            ))),
        },
        _ => Err(Error::internal(format!(
            "the template {sql:?} is not a query"
        ))),
    }
}

/// Parses every statement of `sql` (separated by `;`): Lakegres' own SQL
/// and stored view text, whose literals are Postgres' (a backslash is a
/// backslash).
pub fn parse_sql(sql: &str) -> Result<Vec<Statement>> {
    parse_client(sql, StringLiterals::Standard)
}

/// Parses every statement of a client's `sql`, its literals read as the
/// session's `standard_conforming_strings` says.
pub fn parse_client(sql: &str, strings: StringLiterals) -> Result<Vec<Statement>> {
    if sql.len() > MAX_KEPT_TEXT {
        // Not kept: its statements are the caller's without a copy.
        return parse_uncached(sql, strings);
    }
    Ok(parse_shared(sql, strings)?
        .iter()
        .map(|parsed| parsed.statement.clone())
        .collect())
}

/// A statement parsed from a client's text, shared by every session that
/// sends the same text.
#[derive(Debug)]
pub struct Parsed {
    pub statement: Statement,
    /// [`Statement::text`], rendered on first use.
    text: std::sync::OnceLock<String>,
}

impl Parsed {
    /// The statement's text as `pg_stat_activity` shows it: rendered once
    /// per text, not once per execution.
    pub fn text(&self) -> &str {
        self.text.get_or_init(|| self.statement.text())
    }
}

/// The statements of `sql` (separated by `;`), parsed once per server for
/// a text sent again and again: a pool's validation query (`SELECT 1`
/// before each checkout), an application's few queries over the simple
/// protocol. Parsing is a function of the text alone; it, copying the
/// statements and rendering their text were a fifth of the server's time
/// for `SELECT 1`.
pub fn parse_shared(sql: &str, strings: StringLiterals) -> Result<std::sync::Arc<[Parsed]>> {
    let keep = sql.len() <= MAX_KEPT_TEXT;
    let kept = strings as usize;
    if keep {
        // The lock is held for the lookup only.
        if let Some(statements) = parsed()[kept].get(sql) {
            return Ok(std::sync::Arc::clone(statements));
        }
    }
    let statements: std::sync::Arc<[Parsed]> = parse_uncached(sql, strings)?
        .into_iter()
        .map(|statement| Parsed {
            statement,
            text: std::sync::OnceLock::new(),
        })
        .collect();
    if keep {
        let mut parsed = parsed();
        let parsed = &mut parsed[kept];
        if parsed.len() >= MAX_KEPT {
            parsed.clear();
        }
        parsed.insert(sql.into(), std::sync::Arc::clone(&statements));
    }
    Ok(statements)
}

type ParsedTexts = datafusion::common::HashMap<Box<str>, std::sync::Arc<[Parsed]>>;

/// How many parsed texts the server keeps, and how long a kept text may be.
const MAX_KEPT: usize = 256;
const MAX_KEPT_TEXT: usize = 1024;

/// Statements parsed before, by how literals were read and their text
/// ([`parse_shared`]). Failures are not kept; when full, a map starts over.
fn parsed() -> std::sync::MutexGuard<'static, [ParsedTexts; 2]> {
    static PARSED: std::sync::LazyLock<std::sync::Mutex<[ParsedTexts; 2]>> =
        std::sync::LazyLock::new(Default::default);
    // The map is whole after any panic: get, insert and clear are single steps.
    PARSED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Texts longer than this are parsed off the runtime's worker (see
/// [`parse_uncached`]).
const LONG_TEXT: usize = 64 * 1024;

fn parse_uncached(sql: &str, strings: StringLiterals) -> Result<Vec<Statement>> {
    // A long text takes the parser seconds (a 100,000-branch UNION, 2 s in
    // a debug build); meanwhile the sessions queued on this worker thread
    // would wait. `block_in_place` hands them to another thread first.
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if sql.len() > LONG_TEXT && multi_thread {
        return tokio::task::block_in_place(|| parse_caught(sql, strings));
    }
    parse_caught(sql, strings)
}

fn parse_caught(sql: &str, strings: StringLiterals) -> Result<Vec<Statement>> {
    // A parser bug must fail the statement, not the connection.
    let parsed = std::panic::catch_unwind(|| parse_all(sql, strings)).unwrap_or_else(|_| {
        Err(Error::Internal {
            message: "the SQL parser failed on this statement".into(),
        })
    });
    match parsed {
        // psql's catalog queries over relations that are always empty here
        // (publications …) use syntax sqlparser lacks; they have no rows.
        Err(_) if crate::compat::reads_empty_catalog(sql) => Ok(vec![Statement::NoRows]),
        other => other,
    }
}

fn parse_all(sql: &str, strings: StringLiterals) -> Result<Vec<Statement>> {
    let dialect = LakegresDialect::default();
    let tokens = literals::tokenize(sql, strings)
        .map_err(|e| syntax_error(sql, ParserError::TokenizerError(e.to_string())))?;
    let mut parser = Parser::new(&dialect).with_tokens_with_locations(databricks_tokens(tokens));
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parser.peek_token().token == Token::EOF {
            break;
        }
        let statement = match parse_atomic(&mut parser).map_err(|e| syntax_error(sql, e))? {
            Some(atomic) => atomic,
            None => parse_one(&mut parser).map_err(|e| syntax_error(sql, e))?,
        };
        check_limits(&statement)?;
        statements.push(statement);
        let next = parser.peek_token();
        match next.token {
            Token::SemiColon | Token::EOF => {}
            _ => {
                return Err(syntax_error(
                    sql,
                    ParserError::ParserError(format!(
                        "Expected: end of statement, found: {}{}",
                        next.token, next.span.start
                    )),
                ))
            }
        }
    }
    Ok(statements)
}

/// `BEGIN ATOMIC stmt; … END`, when the parser stands on one.
fn parse_atomic(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    let begins = matches!(
        (parser.peek_nth_token(0).token, parser.peek_nth_token(1).token),
        (Token::Word(b), Token::Word(a))
            if b.keyword == Keyword::BEGIN && a.value.eq_ignore_ascii_case("atomic")
    );
    if !begins {
        return Ok(None);
    }
    parser.next_token();
    parser.next_token();
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parser.parse_keyword(Keyword::END) {
            return Ok(Some(Statement::Atomic {
                statements,
                end: true,
            }));
        }
        if parser.peek_token().token == Token::EOF {
            return Ok(Some(Statement::Atomic {
                statements,
                end: false,
            }));
        }
        let statement = parse_one(parser)?;
        if matches!(&statement, Statement::Sql(s) if SqlKind::of(s) == SqlKind::Transaction) {
            return Err(ParserError::ParserError(
                "a transaction statement inside BEGIN ATOMIC … END".into(),
            ));
        }
        statements.push(statement);
        match parser.peek_token().token {
            Token::SemiColon => {}
            _ if parser.parse_keyword(Keyword::END) => {
                return Ok(Some(Statement::Atomic {
                    statements,
                    end: true,
                }))
            }
            other => {
                return Err(ParserError::ParserError(format!(
                    "Expected: ; or END, found: {other}"
                )))
            }
        }
    }
}

fn parse_one(parser: &mut Parser) -> Result<Statement, ParserError> {
    // Stand on the statement's first token (not the whitespace before it),
    // so that `rewind` to this index lands exactly here.
    parser.next_token();
    parser.prev_token();
    if let Some(statement) = copy_into::try_parse(parser)? {
        return Ok(statement);
    }
    if let Some(statement) = functions::try_parse(parser)? {
        return Ok(statement);
    }
    for word in ["LISTEN", "UNLISTEN", "NOTIFY"] {
        if is_word(&parser.peek_token().token, word) {
            // The rest of the statement does not matter.
            while !matches!(parser.peek_token().token, Token::SemiColon | Token::EOF) {
                parser.next_token();
            }
            return Ok(Statement::NoOp(word.to_string()));
        }
    }
    if let Some(statement) = view::try_parse(parser)? {
        return Ok(statement);
    }
    if let Some(statement) = variable::try_parse(parser)? {
        return Ok(statement);
    }
    if let Some(create) = create::try_parse(parser)? {
        return Ok(Statement::CreateTable(Box::new(create)));
    }
    if let Some(merge) = merge::try_parse(parser)? {
        return Ok(Statement::Merge(Box::new(merge)));
    }
    if let Some(insert) = insert::try_parse(parser)? {
        return Ok(Statement::Insert(Box::new(insert)));
    }
    if is_word(&parser.peek_token().token, "EXPLAIN")
        && (is_word(&parser.peek_nth_token(1).token, "MERGE")
            || is_word(&parser.peek_nth_token(1).token, "WITH"))
    {
        let start = parser.index();
        parser.next_token();
        if let Some(merge) = merge::try_parse(parser)? {
            return Ok(Statement::ExplainMerge(Box::new(merge)));
        }
        rewind(parser, start);
    }
    if let Some(statement) = grants::try_parse(parser)? {
        return Ok(statement);
    }
    if let Some(statement) = alter::try_parse(parser)? {
        return Ok(statement);
    }
    if let Some(statement) = maintenance::try_parse(parser)? {
        return Ok(statement);
    }
    if let Some(statement) = other::try_parse(parser)? {
        return Ok(statement);
    }
    Ok(Statement::Sql(Box::new(parser.parse_statement()?)))
}

/// How deep expressions may nest. sqlparser reads `a + b + c …` in a loop
/// into a left-deep tree, but cloning, planning and dropping such a tree
/// recurse once per level; past some thousands of levels that overflows a
/// thread's stack, which aborts the whole server (the wire fuzzer found it).
/// Postgres answers such statements with 54001 too.
pub const MAX_EXPRESSION_DEPTH: usize = 1000;

/// How many set operations (`UNION`, `INTERSECT`, `EXCEPT`) one statement
/// may hold. Their chain is a left-deep tree like the expressions above,
/// and a debug build's clone of it needs 14 KiB of stack per branch.
pub const MAX_SET_OPERATIONS: usize = 500;

/// How many tables, subqueries and table functions one SELECT may join.
/// The join planner's time grows faster than the square of it: a hundred
/// take two seconds in a debug build, two hundred eighteen, a thousand
/// took minutes.
pub const MAX_JOINED: usize = 100;

/// How many relations one statement may name in all (each CTE's, each
/// subquery's).
pub const MAX_RELATIONS: usize = 1000;

/// How many common table expressions one statement may define. Each is
/// planned again where it is read, nested in those before it.
pub const MAX_CTES: usize = 500;

/// Refuses (54001) a statement past one of the limits above. The walk
/// stops at the first limit passed: it counts a query's set operations
/// before it descends into them, and stops descending into expressions at
/// the depth limit, so it needs little stack itself.
fn check_limits(statement: &Statement) -> Result<()> {
    use sqlparser::ast::{Visit, Visitor};
    use std::ops::ControlFlow;

    #[derive(Default)]
    struct Limits {
        depth: usize,
        set_operations: usize,
        relations: usize,
        ctes: usize,
    }
    impl Visitor for Limits {
        type Break = Error;
        fn pre_visit_query(&mut self, query: &ast::Query) -> ControlFlow<Error> {
            if let Some(with) = &query.with {
                self.ctes += with.cte_tables.len();
                if self.ctes > MAX_CTES {
                    return ControlFlow::Break(too_complex("common table expressions", MAX_CTES));
                }
            }
            // Without recursion: the tree may be thousands deep.
            let mut pending = vec![query.body.as_ref()];
            while let Some(body) = pending.pop() {
                if let ast::SetExpr::SetOperation { left, right, .. } = body {
                    self.set_operations += 1;
                    if self.set_operations > MAX_SET_OPERATIONS {
                        return ControlFlow::Break(too_complex(
                            "set operations (UNION, INTERSECT, EXCEPT)",
                            MAX_SET_OPERATIONS,
                        ));
                    }
                    pending.push(left.as_ref());
                    pending.push(right.as_ref());
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_select(&mut self, select: &ast::Select) -> ControlFlow<Error> {
            let joined: usize = select.from.iter().map(|t| 1 + t.joins.len()).sum();
            if joined > MAX_JOINED {
                return ControlFlow::Break(too_complex(
                    "relations joined in one SELECT",
                    MAX_JOINED,
                ));
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, _: &ast::TableFactor) -> ControlFlow<Error> {
            self.relations += 1;
            if self.relations > MAX_RELATIONS {
                return ControlFlow::Break(too_complex("relations", MAX_RELATIONS));
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, _: &ast::Expr) -> ControlFlow<Error> {
            self.depth += 1;
            if self.depth > MAX_EXPRESSION_DEPTH {
                return ControlFlow::Break(Error::TooDeep {
                    limit: MAX_EXPRESSION_DEPTH,
                });
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, _: &ast::Expr) -> ControlFlow<Error> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
    }
    fn too_complex(what: &'static str, limit: usize) -> Error {
        Error::TooComplex { what, limit }
    }
    let mut limits = Limits::default();
    let visited = match statement {
        Statement::Sql(ast) => ast.visit(&mut limits),
        Statement::Insert(insert) => insert.query.visit(&mut limits),
        Statement::Merge(merge) | Statement::ExplainMerge(merge) => {
            match merge.source.visit(&mut limits) {
                ControlFlow::Continue(()) => merge.on.visit(&mut limits),
                done => done,
            }
        }
        Statement::CreateTable(create) => create.query.visit(&mut limits),
        Statement::View(view) => match view.as_ref() {
            ViewStatement::Create(create) => create.query.visit(&mut limits),
            ViewStatement::AlterQuery { query, .. } => query.visit(&mut limits),
            _ => ControlFlow::Continue(()),
        },
        _ => ControlFlow::Continue(()),
    };
    match visited {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Moves the parser back to `index`, a position `Parser::index` gave.
/// `prev_token` steps over whitespace, so it can land on the token before
/// `index` (the `;` ending the previous statement); step forward again.
pub(crate) fn rewind(parser: &mut Parser, index: usize) {
    while parser.index() > index {
        parser.prev_token();
    }
    while parser.index() < index {
        parser.next_token();
    }
}

/// The function a variable names (`IDENTIFIER(v)(args)`), as the parser
/// leaves it: `IDENTIFIER_CALL(v, args)`.
pub(crate) const IDENTIFIER_CALL: &str = "lakegres_identifier_call";

/// What names the function of `IDENTIFIER(…)(args)`.
enum NamedBy {
    Text(String),
    Variable(String),
}

/// At `tokens[at]` = IDENTIFIER: `( 'name' ) (` or `( variable ) (`
/// follows. What names the function, and the index of the `)` after it,
/// plus one.
fn identifier_function(tokens: &[TokenWithSpan], at: usize) -> Option<(NamedBy, usize)> {
    let mut rest = tokens
        .iter()
        .enumerate()
        .skip(at + 1)
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_)));
    let (_, open) = rest.next()?;
    let (_, name) = rest.next()?;
    let (close_at, close) = rest.next()?;
    let (_, call) = rest.next()?;
    match (&open.token, &name.token, &close.token, &call.token) {
        (Token::LParen, Token::SingleQuotedString(name), Token::RParen, Token::LParen)
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') =>
        {
            Some((NamedBy::Text(name.clone()), close_at + 1))
        }
        (Token::LParen, Token::Word(w), Token::RParen, Token::LParen)
            if w.quote_style.is_none() =>
        {
            Some((NamedBy::Variable(w.value.clone()), close_at + 1))
        }
        _ => None,
    }
}

/// Databricks spellings sqlparser lacks, as tokens it reads: the time
/// travel forms `VERSION AS OF '2'` and `t@v2` (as `VERSION AS OF n`),
/// `current_user()`, typed numeric literals (`10L`, `2.5D`, `1.5BD`),
/// `FROM VALUES … AS t(cols)`, `INSERT INTO t TABLE src` and
/// `IDENTIFIER(…)(args)`.
fn databricks_tokens(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    // The first word of the statement being read.
    let mut first_word: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        match &t.token {
            Token::SemiColon => first_word = None,
            Token::Word(w) if first_word.is_none() => first_word = Some(w.value.to_uppercase()),
            _ => {}
        }
        // `INSERT INTO t TABLE src`: Spark's `TABLE src` query, as
        // `SELECT * FROM src` (not `INSERT INTO TABLE t`).
        if is_word(&t.token, "TABLE") && first_word.as_deref() == Some("INSERT") {
            let previous = out
                .iter()
                .rev()
                .find(|p| !matches!(p.token, Token::Whitespace(_)))
                .map(|p| &p.token);
            let after_target = matches!(previous, Some(Token::Word(_)) | Some(Token::RParen))
                && !previous.is_some_and(|p| is_word(p, "INTO") || is_word(p, "OVERWRITE"));
            if after_target {
                let space = || {
                    TokenWithSpan::new(
                        Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
                        t.span,
                    )
                };
                out.push(TokenWithSpan::new(Token::make_keyword("SELECT"), t.span));
                out.push(space());
                out.push(TokenWithSpan::new(Token::Mul, t.span));
                out.push(space());
                out.push(TokenWithSpan::new(Token::make_keyword("FROM"), t.span));
                i += 1;
                continue;
            }
        }
        // `IDENTIFIER('s.f')(args)`: a function named by a string, as the
        // name itself; named by a variable, as `IDENTIFIER_CALL(v, args)`,
        // which the session resolves (`variables::resolve_identifiers`).
        if is_word(&t.token, "IDENTIFIER") {
            match identifier_function(&tokens, i) {
                Some((NamedBy::Text(name), next)) => {
                    for (n, part) in name.split('.').enumerate() {
                        if n > 0 {
                            out.push(TokenWithSpan::new(Token::Period, t.span));
                        }
                        out.push(TokenWithSpan::new(
                            Token::make_word(part.trim(), None),
                            t.span,
                        ));
                    }
                    i = next;
                    continue;
                }
                Some((NamedBy::Variable(variable), next)) => {
                    out.push(TokenWithSpan::new(
                        Token::make_word(IDENTIFIER_CALL, None),
                        t.span,
                    ));
                    out.push(TokenWithSpan::new(Token::LParen, t.span));
                    out.push(TokenWithSpan::new(
                        Token::make_word(&variable, None),
                        t.span,
                    ));
                    // Past the call's `(`: a `,` before its first argument.
                    let skip_blanks = |mut j: usize| {
                        while matches!(tokens.get(j).map(|t| &t.token), Some(Token::Whitespace(_)))
                        {
                            j += 1;
                        }
                        j
                    };
                    let after_open = skip_blanks(skip_blanks(next) + 1);
                    if !matches!(
                        tokens.get(after_open).map(|t| &t.token),
                        Some(Token::RParen)
                    ) {
                        out.push(TokenWithSpan::new(Token::Comma, t.span));
                    }
                    i = after_open;
                    continue;
                }
                None => {}
            }
        }
        // `… VERSION AS OF '2'`: the version as a number.
        if let Token::SingleQuotedString(s) = &t.token {
            let words: Vec<&Token> = out
                .iter()
                .rev()
                .filter(|t| !matches!(t.token, Token::Whitespace(_)))
                .take(3)
                .map(|t| &t.token)
                .collect();
            let after_version_as_of = words.len() == 3
                && is_word(words[0], "OF")
                && is_word(words[1], "AS")
                && is_word(words[2], "VERSION");
            if after_version_as_of && !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
                out.push(TokenWithSpan::new(Token::Number(s.clone(), false), t.span));
                i += 1;
                continue;
            }
        }
        // Databricks' `current_user()`, `current_catalog()`: Postgres'
        // `current_user` takes no parentheses, and sqlparser reads only that.
        if let Token::Word(w) = &t.token {
            let user_function = w.quote_style.is_none()
                && crate::compat::BARE_FUNCTIONS
                    .iter()
                    .any(|f| w.value.eq_ignore_ascii_case(f));
            if user_function
                && tokens.get(i + 1).map(|n| &n.token) == Some(&Token::LParen)
                && tokens.get(i + 2).map(|n| &n.token) == Some(&Token::RParen)
            {
                out.push(t.clone());
                i += 3;
                continue;
            }
        }
        // `10L`, `2.5D` …: a number with a type suffix, as
        // `lakegres_cast(n, 'Int64')` (which names its column `n`, as
        // Databricks does; a CAST would be folded into a literal whose type
        // later planning narrows).
        if let Token::Number(n, long) = &t.token {
            // sqlparser reads `10L` itself, as a number marked long.
            let (typed, width) = match tokens.get(i + 1).map(|n| &n.token) {
                _ if *long => (literal_type(n, "L"), 1),
                Some(Token::Word(w)) if w.quote_style.is_none() => (literal_type(n, &w.value), 2),
                _ => (None, 1),
            };
            if let Some(arrow_type) = typed {
                let span = t.span;
                let token = |token: Token| TokenWithSpan::new(token, span);
                out.push(token(Token::make_word(
                    lakegres_functions::ansi_cast::NAME,
                    None,
                )));
                out.push(token(Token::LParen));
                out.push(token(Token::Number(n.clone(), false)));
                out.push(token(Token::Comma));
                out.push(token(Token::SingleQuotedString(arrow_type)));
                out.push(token(Token::RParen));
                i += width;
                continue;
            }
        }
        // `FROM VALUES (1, 'a'), (2, 'b') AS t(a, b)`: the rows as a
        // parenthesized table, which sqlparser reads.
        if is_word(&t.token, "FROM") || is_word(&t.token, "JOIN") {
            if let Some((rows, next)) = values_table(&tokens, i + 1) {
                out.push(t.clone());
                let span = t.span;
                out.push(TokenWithSpan::new(
                    Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
                    span,
                ));
                out.push(TokenWithSpan::new(Token::LParen, span));
                out.extend(databricks_tokens(rows));
                out.push(TokenWithSpan::new(Token::RParen, span));
                i = next;
                continue;
            }
        }
        // `VALUES (1, 'a'), (2, 'b') [AS] t(a, b)` as a query of its own
        // (Spark's inline table): `SELECT * FROM (VALUES …) AS t(a, b)`.
        if is_word(&t.token, "VALUES") {
            if let Some((rows, next)) = values_table(&tokens, i) {
                if let Some(alias) = inline_table_alias(&tokens, next) {
                    let span = t.span;
                    let space = || {
                        TokenWithSpan::new(
                            Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
                            span,
                        )
                    };
                    out.push(TokenWithSpan::new(Token::make_keyword("SELECT"), span));
                    out.push(space());
                    out.push(TokenWithSpan::new(Token::Mul, span));
                    out.push(space());
                    out.push(TokenWithSpan::new(Token::make_keyword("FROM"), span));
                    out.push(space());
                    out.push(TokenWithSpan::new(Token::LParen, span));
                    out.extend(databricks_tokens(rows));
                    out.push(TokenWithSpan::new(Token::RParen, span));
                    out.push(space());
                    out.push(TokenWithSpan::new(Token::make_keyword("AS"), span));
                    i = alias;
                    continue;
                }
            }
        }
        // `t@v2`: a word, `@`, then `v` and digits.
        if t.token == Token::AtSign {
            let next = tokens.get(i + 1).map(|n| &n.token);
            let prev_is_name = matches!(out.last().map(|p| &p.token), Some(Token::Word(_)));
            if let (true, Some(Token::Word(w))) = (prev_is_name, next) {
                let lower = w.value.to_lowercase();
                if let Some(v) = lower.strip_prefix('v') {
                    if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) {
                        let span = t.span;
                        let space = || {
                            TokenWithSpan::new(
                                Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
                                span,
                            )
                        };
                        out.push(space());
                        for word in ["VERSION", "AS", "OF"] {
                            out.push(TokenWithSpan::new(Token::make_keyword(word), span));
                            out.push(space());
                        }
                        out.push(TokenWithSpan::new(
                            Token::Number(v.to_string(), false),
                            span,
                        ));
                        i += 2;
                        continue;
                    }
                }
            }
        }
        out.push(t.clone());
        i += 1;
    }
    out
}

/// `VALUES row, …` starting at the first non-blank token from `start`:
/// its tokens (a bare value as a one-column row, `VALUES 1, 2`), and the
/// index after the last row.
fn values_table(tokens: &[TokenWithSpan], start: usize) -> Option<(Vec<TokenWithSpan>, usize)> {
    let blank = |i: usize| matches!(tokens.get(i).map(|t| &t.token), Some(Token::Whitespace(_)));
    let mut i = start;
    while blank(i) {
        i += 1;
    }
    if !is_word(&tokens.get(i)?.token, "VALUES") {
        return None;
    }
    let mut out = vec![tokens[i].clone()];
    i += 1;
    loop {
        while blank(i) {
            out.push(tokens[i].clone());
            i += 1;
        }
        let first = tokens.get(i)?;
        match &first.token {
            Token::LParen => {
                let mut depth = 0usize;
                loop {
                    let t = tokens.get(i)?;
                    match t.token {
                        Token::LParen => depth += 1,
                        Token::RParen => depth -= 1,
                        _ => {}
                    }
                    out.push(t.clone());
                    i += 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            Token::Word(w)
                if !["TRUE", "FALSE", "NULL"]
                    .iter()
                    .any(|k| w.value.eq_ignore_ascii_case(k)) =>
            {
                return None
            }
            Token::Number(..) | Token::SingleQuotedString(_) | Token::Minus | Token::Word(_) => {
                out.push(TokenWithSpan::new(Token::LParen, first.span));
                if first.token == Token::Minus {
                    out.push(first.clone());
                    i += 1;
                }
                out.push(tokens.get(i)?.clone());
                out.push(TokenWithSpan::new(Token::RParen, first.span));
                i += 1;
            }
            _ => return None,
        }
        let mut j = i;
        while blank(j) {
            j += 1;
        }
        if tokens.get(j).map(|t| &t.token) == Some(&Token::Comma) {
            out.extend(tokens[i..=j].iter().cloned());
            i = j + 1;
        } else {
            return Some((out, i));
        }
    }
}

/// Where the name of an inline table's alias starts, when the rows ending
/// at `start` are followed by `AS t`, or by `t(cols)` (Spark's `VALUES 1
/// T(c)`).
fn inline_table_alias(tokens: &[TokenWithSpan], start: usize) -> Option<usize> {
    let blank = |i: usize| matches!(tokens.get(i).map(|t| &t.token), Some(Token::Whitespace(_)));
    let mut i = start;
    while blank(i) {
        i += 1;
    }
    if is_word(&tokens.get(i)?.token, "AS") {
        i += 1;
        while blank(i) {
            i += 1;
        }
        return matches!(tokens.get(i)?.token, Token::Word(_)).then_some(i);
    }
    let Token::Word(w) = &tokens.get(i)?.token else {
        return None;
    };
    let reserved = w.quote_style.is_none() && w.keyword != Keyword::NoKeyword;
    let columns = tokens.get(i + 1).map(|t| &t.token) == Some(&Token::LParen);
    (columns && !reserved).then_some(i)
}

/// The (Arrow) type a numeric literal's suffix gives it
/// (<https://docs.databricks.com/sql/language-manual/sql-ref-literals.html>);
/// `1.5BD` is DECIMAL(2,1), the precision and scale of its digits.
fn literal_type(number: &str, suffix: &str) -> Option<String> {
    Some(match suffix.to_ascii_uppercase().as_str() {
        "Y" => "Int8".into(),
        "S" => "Int16".into(),
        "L" => "Int64".into(),
        "F" => "Float32".into(),
        "D" => "Float64".into(),
        "BD" => {
            let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
            if !whole
                .chars()
                .chain(fraction.chars())
                .all(|c| c.is_ascii_digit())
            {
                return None;
            }
            let digits = whole.trim_start_matches('0').len() + fraction.len();
            format!("Decimal128({}, {})", digits.max(1), fraction.len())
        }
        _ => return None,
    })
}

/// Whether the token is the unquoted word `word` (any case).
pub(crate) fn is_word(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// Consumes the next token if it is the unquoted word `word`.
pub(crate) fn eat_word(parser: &mut Parser, word: &str) -> bool {
    if is_word(&parser.peek_token().token, word) {
        parser.next_token();
        true
    } else {
        false
    }
}

/// Consumes the words in order if all of them come next.
pub(crate) fn eat_words(parser: &mut Parser, words: &[&str]) -> bool {
    let all = words
        .iter()
        .enumerate()
        .all(|(i, w)| is_word(&parser.peek_nth_token(i).token, w));
    if all {
        for _ in words {
            parser.next_token();
        }
    }
    all
}

/// A syntax error with the 1-based character position PostgreSQL reports,
/// computed from sqlparser's "Line: l, Column: c".
fn syntax_error(sql: &str, e: ParserError) -> Error {
    let message = match &e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m.clone(),
        ParserError::RecursionLimitExceeded => "statement is nested too deeply".to_string(),
    };
    let position = line_column(&message).and_then(|(l, c)| char_position(sql, l, c));
    let message = match message.find(" at Line: ") {
        Some(i) => message[..i].to_string(),
        None => message,
    };
    Error::Syntax { message, position }
}

fn line_column(message: &str) -> Option<(usize, usize)> {
    let after_line = &message[message.rfind("Line: ")? + 6..];
    let line: usize = after_line.split(',').next()?.trim().parse().ok()?;
    let after_col = &after_line[after_line.find("Column: ")? + 8..];
    let digits: String = after_col
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    Some((line, digits.parse().ok()?))
}

fn char_position(sql: &str, line: usize, column: usize) -> Option<usize> {
    if line == 0 {
        return None;
    }
    let before: usize = sql
        .split('\n')
        .take(line - 1)
        .map(|l| l.chars().count() + 1)
        .sum();
    Some(before + column)
}

/// Calls `f` on every table reference of `statement` (FROM and JOIN
/// items, in subqueries too), in order.
pub(crate) fn each_table_factor(
    statement: &mut sqlparser::ast::Statement,
    f: impl FnMut(&mut sqlparser::ast::TableFactor),
) {
    struct Each<F>(F);
    impl<F: FnMut(&mut sqlparser::ast::TableFactor)> sqlparser::ast::VisitorMut for Each<F> {
        type Break = ();
        fn pre_visit_table_factor(
            &mut self,
            factor: &mut sqlparser::ast::TableFactor,
        ) -> std::ops::ControlFlow<Self::Break> {
            (self.0)(factor);
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = sqlparser::ast::VisitMut::visit(statement, &mut Each(f));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_sent_again_shares_its_statements_and_their_text() {
        let sql = "select  1 AS one; VALUES (2)";
        let first = parse_shared(sql, StringLiterals::Escaped).unwrap();
        let again = parse_shared(sql, StringLiterals::Escaped).unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &again));
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].text(), "SELECT 1 AS one");
        assert_eq!(first[0].text(), first[0].statement.text());
        assert_eq!(parse_sql(sql).unwrap().len(), 2);
    }

    #[test]
    fn several_statements_and_empty_ones() {
        let s = parse_sql("SELECT 1; ;SELECT 2;").unwrap();
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn syntax_error_has_its_position() {
        let Err(Error::Syntax { position, .. }) = parse_sql("SELECT 1;\nSELEC 2") else {
            panic!("expected a syntax error");
        };
        assert_eq!(position, Some(11));
    }

    #[test]
    fn databricks_create_table() {
        let s = parse_sql(
            "CREATE TABLE IF NOT EXISTS s.t (a INT COMMENT 'x', b STRING NOT NULL, p INT) \
             USING DELTA PARTITIONED BY (p) COMMENT 'c' TBLPROPERTIES ('delta.appendOnly' = 'false', k = 1)",
        )
        .unwrap();
        let Statement::CreateTable(c) = &s[0] else {
            panic!("not a CREATE TABLE");
        };
        assert!(c.if_not_exists);
        assert_eq!(c.columns.len(), 3);
        assert!(c.columns[1].not_null);
        assert_eq!(c.columns[0].comment.as_deref(), Some("x"));
        assert_eq!(c.partitioned_by.len(), 1);
        assert_eq!(c.comment.as_deref(), Some("c"));
        assert_eq!(
            c.properties,
            vec![
                ("delta.appendOnly".to_string(), "false".to_string()),
                ("k".to_string(), "1".to_string())
            ]
        );
    }

    #[test]
    fn ctas_and_replace() {
        let s = parse_sql("CREATE OR REPLACE TABLE t PARTITIONED BY (p) AS SELECT 1 AS p, 2 AS q")
            .unwrap();
        let Statement::CreateTable(c) = &s[0] else {
            panic!("not a CREATE TABLE");
        };
        assert!(c.or_replace && c.query.is_some());
        assert!(parse_sql("CREATE OR REPLACE TABLE IF NOT EXISTS t (a INT)").is_err());
    }

    #[test]
    fn describe_and_show() {
        assert!(matches!(
            parse_sql("DESCRIBE TABLE t").unwrap()[0],
            Statement::Describe(_)
        ));
        assert!(matches!(
            parse_sql("DESC t").unwrap()[0],
            Statement::Describe(_)
        ));
        assert!(matches!(
            parse_sql("SHOW TABLES IN s").unwrap()[0],
            Statement::Show(ShowObjects::Tables { .. })
        ));
        assert!(matches!(
            parse_sql("show databases").unwrap()[0],
            Statement::Show(ShowObjects::Schemas { .. })
        ));
    }

    #[test]
    fn merge_with_stars_cte_and_by_source() {
        let s = parse_sql(
            "WITH cte1 AS (SELECT key1 + 2 AS key3, value FROM src) \
             MERGE INTO tgt AS target USING cte1 src ON src.key3 = target.key2 \
             WHEN MATCHED AND src.value > 1 THEN UPDATE SET * \
             WHEN MATCHED THEN DELETE \
             WHEN NOT MATCHED THEN INSERT * \
             WHEN NOT MATCHED BY SOURCE AND target.key2 > 4 THEN UPDATE SET target.value = 0",
        )
        .unwrap();
        let Statement::Merge(m) = &s[0] else {
            panic!("not a MERGE");
        };
        assert!(m.with.is_some());
        assert_eq!(m.target_alias.as_ref().unwrap().value, "target");
        assert_eq!(m.clauses.len(), 4);
        assert_eq!(m.clauses[0].action, MergeAction::UpdateAll);
        assert_eq!(m.clauses[2].action, MergeAction::InsertAll);
        assert_eq!(m.clauses[3].kind, MergeClauseKind::NotMatchedBySource);
        // A CTE before a query is still a query.
        assert!(matches!(
            parse_sql("WITH a AS (SELECT 1) SELECT * FROM a").unwrap()[0],
            Statement::Sql(_)
        ));
    }

    #[test]
    fn statements_after_a_semicolon_that_look_like_databricks_forms() {
        let s = parse_sql("\n  INSERT INTO t (a) SELECT 1").unwrap();
        assert!(matches!(s[0], Statement::Sql(_)));
        let s = parse_sql(
            "CREATE TABLE t (a INT);\nINSERT INTO t SELECT 1;\nWITH x AS (SELECT 1) SELECT * FROM x",
        )
        .unwrap();
        assert!(matches!(s[1], Statement::Sql(_)));
        assert!(matches!(s[2], Statement::Sql(_)));
    }

    #[test]
    fn databricks_inserts() {
        let s = parse_sql(
            "INSERT INTO t tgt REPLACE ON tgt.a = s.a AND tgt.b <=> s.b (SELECT * FROM x) s; \
             INSERT OVERWRITE TABLE t PARTITION (p = 1, q) (a, b) SELECT 1, 2, 3; \
             INSERT INTO t BY NAME REPLACE USING (a) SELECT 1 AS a; \
             INSERT INTO t REPLACE ON (target.id = source.id) SELECT * FROM s AS source",
        )
        .unwrap();
        let Statement::Insert(on) = &s[0] else {
            panic!("not a Databricks INSERT");
        };
        let Some(Replace::On {
            target_alias,
            source_alias,
            ..
        }) = &on.replace
        else {
            panic!("not REPLACE ON");
        };
        assert_eq!(target_alias.as_ref().unwrap().value, "tgt");
        assert_eq!(source_alias.as_ref().unwrap().value, "s");
        let Statement::Insert(ow) = &s[1] else {
            panic!("not a Databricks INSERT");
        };
        assert!(ow.overwrite && ow.partition.len() == 2 && ow.columns.as_ref().unwrap().len() == 2);
        assert!(ow.partition[1].1.is_none());
        let Statement::Insert(using) = &s[2] else {
            panic!("not a Databricks INSERT");
        };
        assert!(using.by_name && matches!(using.replace, Some(Replace::Using(_))));
        assert!(matches!(s[3], Statement::Insert(_)));
    }

    #[test]
    fn copy_into_and_list() {
        let s = parse_sql(
            "COPY INTO t FROM (SELECT id * 10 AS id, upper(name) AS name FROM '/x/y') \
             FILEFORMAT = JSON FORMAT_OPTIONS ('header' = 'true') COPY_OPTIONS ('force' = 'true'); \
             COPY INTO s.t BY POSITION FROM 'p' FILEFORMAT = CSV PATTERN = 'a*.csv'; LIST 'folder'",
        )
        .unwrap();
        let Statement::CopyInto(c) = &s[0] else {
            panic!("not COPY INTO");
        };
        assert_eq!(c.path, "/x/y");
        assert_eq!(
            c.select.as_deref(),
            Some("SELECT id * 10 AS id, upper(name) AS name FROM lakegres_copy_source")
        );
        assert_eq!(c.format, "json");
        assert_eq!(
            c.copy_options,
            vec![("force".to_string(), "true".to_string())]
        );
        let Statement::CopyInto(c) = &s[1] else {
            panic!("not COPY INTO");
        };
        assert!(c.by_position && c.pattern.as_deref() == Some("a*.csv"));
        assert!(matches!(&s[2], Statement::List(p) if p == "folder"));
        assert!(
            parse_sql("COPY INTO t FROM 'p' FILEFORMAT = CSV FILES = ('a') PATTERN = 'b'").is_err()
        );
        // Postgres COPY is still sqlparser's.
        assert!(matches!(
            parse_sql("COPY t FROM STDIN").unwrap()[0],
            Statement::Sql(_)
        ));
    }

    #[test]
    fn maintenance_statements() {
        let s = parse_sql(
            "RESTORE TABLE s.t TO VERSION AS OF 3; RESTORE t VERSION AS OF '2'; \
             RESTORE t TO TIMESTAMP AS OF '2024-01-01'; \
             OPTIMIZE t WHERE p = 'a' AND q IN (1, 2) ZORDER BY (a, b); OPTIMIZE t; \
             VACUUM t RETAIN 0.5 HOURS DRY RUN; VACUUM t LITE; DESCRIBE DETAIL s.t",
        )
        .unwrap();
        let Statement::Restore(r) = &s[0] else {
            panic!("not RESTORE");
        };
        assert_eq!(r.name.to_string(), "s.t");
        assert!(matches!(r.to, ast::TableVersion::VersionAsOf(_)));
        assert!(matches!(&s[1], Statement::Restore(r) if r.to.to_string().contains('2')));
        assert!(
            matches!(&s[2], Statement::Restore(r) if matches!(r.to, ast::TableVersion::TimestampAsOf(_)))
        );
        let Statement::Optimize(o) = &s[3] else {
            panic!("not OPTIMIZE");
        };
        assert!(o.predicate.is_some() && o.zorder.len() == 2);
        assert!(matches!(&s[4], Statement::Optimize(o) if o.predicate.is_none()));
        let Statement::Vacuum(v) = &s[5] else {
            panic!("not VACUUM");
        };
        assert_eq!(v.retain_hours, Some(0.5));
        assert!(v.dry_run && !v.lite);
        assert!(matches!(&s[6], Statement::Vacuum(v) if v.lite && !v.dry_run));
        assert!(matches!(&s[7], Statement::DescribeDetail(_)));
        assert!(parse_sql("RESTORE TABLE t TO 3").is_err());
        assert!(parse_sql("VACUUM t RETAIN x HOURS").is_err());
        let s =
            parse_sql("SHOW CREATE TABLE t; SHOW TBLPROPERTIES t ('a.b'); SHOW COLUMNS IN t IN s")
                .unwrap();
        assert!(matches!(
            &s[0],
            Statement::Show(ShowObjects::CreateTable { .. })
        ));
        assert!(
            matches!(&s[1], Statement::Show(ShowObjects::TblProperties { key: Some(k), .. }) if k == "a.b")
        );
        assert!(matches!(
            &s[2],
            Statement::Show(ShowObjects::Columns {
                schema: Some(_),
                ..
            })
        ));
    }

    #[test]
    fn backticks_and_double_quotes_are_identifiers() {
        let s = parse_sql("SELECT `a b`, \"c\" FROM `s`.t").unwrap();
        assert!(matches!(s[0], Statement::Sql(_)));
    }

    #[test]
    fn grant_revoke_and_show_grants() {
        use lakegres_delta::grants::Privilege;
        let s = parse_sql(
            "GRANT SELECT, MODIFY ON TABLE s.t TO ann, `Bob@Example.com`; \
             REVOKE ALL PRIVILEGES ON SCHEMA s FROM ann; \
             GRANT USE SCHEMA, CREATE ON DATABASE s TO ann; \
             SHOW GRANTS; SHOW GRANTS ann ON t",
        )
        .unwrap();
        let Statement::Grant(g) = &s[0] else {
            panic!("{:?}", s[0])
        };
        assert!(g.grant);
        assert_eq!(g.privileges, vec![Privilege::Select, Privilege::Modify]);
        assert_eq!(g.principals, vec!["ann", "bob@example.com"]);
        assert!(matches!(&g.object, GrantObject::Table(n) if n.to_string() == "s.t"));
        let Statement::Grant(r) = &s[1] else {
            panic!("{:?}", s[1])
        };
        assert!(!r.grant && r.privileges == vec![Privilege::All]);
        assert!(matches!(&r.object, GrantObject::Schema(_)));
        let Statement::Grant(u) = &s[2] else {
            panic!("{:?}", s[2])
        };
        assert_eq!(u.privileges, vec![Privilege::UseSchema, Privilege::Create]);
        assert!(matches!(
            &s[3],
            Statement::ShowGrants(ShowGrants {
                principal: None,
                object: None
            })
        ));
        assert!(matches!(
            &s[4],
            Statement::ShowGrants(ShowGrants { principal: Some(p), object: Some(GrantObject::Table(_)) }) if p == "ann"
        ));
        assert!(parse_sql("GRANT FLY ON t TO ann").is_err());
        assert!(parse_sql("GRANT SELECT ON t ann").is_err());
    }
}
