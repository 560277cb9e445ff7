//! What the pipeline knows of each statement, answered in one place next to
//! the parsed [`Statement`]: its text, the kind of write it is and the table
//! it writes, whether it answers with Databricks' DML result row, the
//! privileges it needs and what it does to the session's state and the
//! catalog's objects ([`Info`]). Every `match` here is exhaustive over the
//! statements (sqlparser's own are sorted once into [`SqlKind`]), so a new
//! statement does not compile until each question has its answer. Which
//! module runs each statement is in `statement.rs`.

use sqlparser::ast::{self, ObjectName, ObjectType};

use crate::parser::{AlterChange, Statement, VariableStatement, ViewStatement};

/// The families of the statements sqlparser reads, each run by one module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SqlKind {
    /// SELECT, VALUES, EXPLAIN, and any other statement DataFusion plans
    /// (or refuses).
    Query,
    /// INSERT in Postgres' form.
    Insert,
    /// UPDATE, DELETE, TRUNCATE.
    UpdateDelete,
    /// COPY … FROM STDIN / TO STDOUT.
    Copy,
    /// CREATE SCHEMA / DATABASE.
    CreateSchema,
    /// DROP TABLE / SCHEMA / DATABASE.
    Drop,
    /// BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE.
    Transaction,
    /// DECLARE, FETCH, CLOSE.
    Cursor,
    /// SET, SHOW a setting, RESET, DISCARD, DEALLOCATE, USE.
    Setting,
    /// A CREATE TABLE our parser did not take: refused.
    CreateTable,
    /// CREATE VIEW.
    CreateView,
}

impl SqlKind {
    /// The family of a sqlparser statement.
    pub(crate) fn of(statement: &ast::Statement) -> Self {
        use ast::Statement as S;
        match statement {
            S::Insert(_) => Self::Insert,
            S::Update(_) | S::Delete(_) | S::Truncate(_) => Self::UpdateDelete,
            S::Copy { .. } => Self::Copy,
            S::CreateSchema { .. } | S::CreateDatabase { .. } => Self::CreateSchema,
            S::Drop { .. } => Self::Drop,
            S::StartTransaction { .. }
            | S::Commit { .. }
            | S::Rollback { .. }
            | S::Savepoint { .. }
            | S::ReleaseSavepoint { .. } => Self::Transaction,
            S::Declare { .. } | S::Fetch { .. } | S::Close { .. } => Self::Cursor,
            S::Set(_)
            | S::ShowVariable { .. }
            | S::Reset(_)
            | S::Discard { .. }
            | S::Deallocate { .. }
            | S::Use(_) => Self::Setting,
            S::CreateTable(_) => Self::CreateTable,
            S::CreateView(_) => Self::CreateView,
            _ => Self::Query,
        }
    }
}

/// What a statement needs the session's user to hold (checked by
/// `privileges::authorize` before it runs; with no admins configured,
/// nothing is checked).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Needs {
    Nothing,
    /// Only admins may.
    Admin(&'static str),
    /// SELECT on the table.
    Select(ObjectName),
    /// SELECT and MODIFY on the table.
    Write(ObjectName),
    /// Ownership of those of the tables and stored views that exist (DROP
    /// TABLE, DROP VIEW: a missing one gets its own error; a session's
    /// temporary view is its own).
    DropExisting(Vec<ObjectName>),
    /// CREATE in the table's (or view's) schema; replacing an existing one
    /// also its ownership.
    Create {
        table: ObjectName,
        replace: bool,
    },
    /// Ownership of the table or view; a rename also CREATE in the new
    /// name's schema.
    Alter {
        table: ObjectName,
        rename_to: Option<ObjectName>,
    },
}

/// A statement's text, rendered only when asked: sqlparser's rendering of
/// a long `INSERT … VALUES` is not free, and a Describe never needs it.
#[derive(Debug, Clone)]
pub(crate) enum Text<'a> {
    Named(String),
    Sql(&'a ast::Statement),
}

impl Text<'_> {
    pub(crate) fn render(&self) -> String {
        match self {
            Text::Named(text) => text.clone(),
            Text::Sql(statement) => statement.to_string(),
        }
    }
}

impl From<String> for Text<'_> {
    fn from(text: String) -> Self {
        Text::Named(text)
    }
}

/// The kind of write a statement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    CreateTable,
    CreateSchema,
    AlterTable,
    Drop,
    Insert,
    Update,
    Delete,
    Truncate,
    Merge,
    CopyInto,
    /// COPY … FROM STDIN.
    Copy,
    Restore,
    Optimize,
    Reorg,
    Vacuum,
}

impl Write {
    /// Its name in the audit line, the metrics and ROLLBACK's warning.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::CreateTable => "CREATE TABLE",
            Self::CreateSchema => "CREATE SCHEMA",
            Self::AlterTable => "ALTER TABLE",
            Self::Drop => "DROP",
            Self::Insert => "INSERT",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Truncate => "TRUNCATE",
            Self::Merge => "MERGE",
            Self::CopyInto => "COPY INTO",
            Self::Copy => "COPY",
            Self::Restore => "RESTORE",
            Self::Optimize => "OPTIMIZE",
            Self::Reorg => "REORG",
            Self::Vacuum => "VACUUM",
        }
    }

    /// Whether a view at its target is refused before it runs (42809):
    /// DROP and CREATE TABLE say themselves what a view there means, and
    /// CREATE SCHEMA names no table.
    pub(crate) fn needs_a_table(self) -> bool {
        match self {
            Self::CreateTable | Self::CreateSchema | Self::Drop => false,
            Self::AlterTable
            | Self::Insert
            | Self::Update
            | Self::Delete
            | Self::Truncate
            | Self::Merge
            | Self::CopyInto
            | Self::Copy
            | Self::Restore
            | Self::Optimize
            | Self::Reorg
            | Self::Vacuum => true,
        }
    }
}

/// What a statement does to the session's own state (settings, variables,
/// temporary objects, the search path): the session's kept query plans
/// ([`crate::constant_plans`]) survive only a statement that keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionEffect {
    Keeps,
    Changes,
}

/// What a statement does to the catalog's tables and views, for their
/// grants (`privileges::after`): a creator owns what it creates, grants
/// move with a rename and go with a drop.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ObjectChange<'a> {
    None,
    /// CREATE TABLE, CREATE VIEW (a temporary view is no catalog object).
    Creates(&'a ObjectName),
    /// ALTER TABLE | VIEW … RENAME TO.
    Renames {
        from: &'a ObjectName,
        to: &'a ObjectName,
    },
    /// DROP TABLE, DROP VIEW.
    DropsTables(&'a [ObjectName]),
    /// DROP SCHEMA | DATABASE, with every grant on its tables.
    DropsSchemas(&'a [ObjectName]),
}

/// What the pipeline needs to know of a statement.
#[derive(Debug, Clone)]
pub(crate) struct Info<'a> {
    /// Its text for `pg_stat_activity` and the metrics' kind.
    pub(crate) text: Text<'a>,
    /// The kind of write it is (audit line, metrics, ROLLBACK's warning).
    pub(crate) write: Option<Write>,
    /// The table it writes, when it writes one.
    pub(crate) target: Option<ObjectName>,
    /// INSERT, UPDATE, DELETE, MERGE: answered with Databricks' result row,
    /// or the command tag alone where the client wants that (pgjdbc).
    pub(crate) dml: bool,
    /// May run in a failed transaction block (COMMIT, ROLLBACK, RELEASE).
    pub(crate) ends_block: bool,
    pub(crate) needs: Needs,
    pub(crate) session: SessionEffect,
    pub(crate) objects: ObjectChange<'a>,
}

impl<'a> Info<'a> {
    fn reads(text: impl Into<Text<'a>>) -> Self {
        Self {
            text: text.into(),
            write: None,
            target: None,
            dml: false,
            ends_block: false,
            needs: Needs::Nothing,
            session: SessionEffect::Changes,
            objects: ObjectChange::None,
        }
    }

    fn needs(mut self, needs: Needs) -> Self {
        self.needs = needs;
        self
    }

    /// A write of `kind` to `table` that needs SELECT and MODIFY on it.
    fn writes(text: impl Into<Text<'a>>, kind: Write, table: &ObjectName) -> Self {
        Self {
            text: text.into(),
            write: Some(kind),
            target: Some(table.clone()),
            dml: false,
            ends_block: false,
            needs: Needs::Write(table.clone()),
            session: SessionEffect::Changes,
            objects: ObjectChange::None,
        }
    }

    /// A query or a write of rows, after which the session's kept plans
    /// still hold.
    fn keeps_session(mut self) -> Self {
        self.session = SessionEffect::Keeps;
        self
    }

    fn dml(mut self) -> Self {
        self.dml = true;
        self
    }
}

impl Statement {
    /// Whether this is a plain SQL `INSERT` (one that may name a session's
    /// temporary table).
    pub(crate) fn is_sql_insert(&self) -> bool {
        matches!(self, Statement::Sql(sql) if matches!(sql.as_ref(), ast::Statement::Insert(_)))
    }

    /// What the pipeline needs to know of this statement.
    pub(crate) fn info(&self) -> Info<'_> {
        match self {
            Statement::CreateTable(c) => Info {
                text: format!("CREATE TABLE {}", c.name).into(),
                write: Some(Write::CreateTable),
                target: Some(c.name.clone()),
                dml: false,
                ends_block: false,
                needs: Needs::Create {
                    table: c.name.clone(),
                    replace: c.or_replace,
                },
                session: SessionEffect::Changes,
                objects: ObjectChange::Creates(&c.name),
            },
            Statement::View(v) => view_info(v),
            // What EXECUTE IMMEDIATE runs goes through the pipeline itself.
            Statement::Variable(v) => Info::reads(match v.as_ref() {
                VariableStatement::Declare { name, .. } => format!("DECLARE VARIABLE {name}"),
                VariableStatement::Set { names, .. } => format!("SET VAR {}", names.join(", ")),
                VariableStatement::Drop { name, .. } => format!("DROP TEMPORARY VARIABLE {name}"),
                VariableStatement::ExecuteImmediate { .. } => "EXECUTE IMMEDIATE".to_string(),
            }),
            Statement::AlterTable(a) => {
                let rename_to = match &a.change {
                    AlterChange::RenameTo(to) => Some(to),
                    AlterChange::AddColumns(_)
                    | AlterChange::ColumnComment { .. }
                    | AlterChange::ColumnNotNull { .. }
                    | AlterChange::SetProperties(_)
                    | AlterChange::UnsetProperties { .. }
                    | AlterChange::AddConstraint { .. }
                    | AlterChange::DropConstraint { .. }
                    | AlterChange::TableComment(_)
                    | AlterChange::RenameColumn { .. }
                    | AlterChange::DropColumns { .. }
                    | AlterChange::ClusterBy(_)
                    | AlterChange::ColumnDefault { .. }
                    | AlterChange::ColumnType { .. } => None,
                };
                let mut info = Info::writes(
                    format!("ALTER TABLE {}", a.name),
                    Write::AlterTable,
                    &a.name,
                )
                .needs(Needs::Alter {
                    table: a.name.clone(),
                    rename_to: rename_to.cloned(),
                });
                if let Some(to) = rename_to {
                    info.objects = ObjectChange::Renames { from: &a.name, to };
                }
                info
            }
            Statement::Merge(m) => {
                Info::writes(format!("MERGE INTO {}", m.target), Write::Merge, &m.target)
                    .dml()
                    .keeps_session()
            }
            Statement::ExplainMerge(m) => Info::reads(format!("EXPLAIN MERGE INTO {}", m.target)),
            Statement::Insert(i) => {
                Info::writes(format!("INSERT INTO {}", i.table), Write::Insert, &i.table)
                    .dml()
                    .keeps_session()
            }
            Statement::CopyInto(c) => Info::writes(
                format!("COPY INTO {} FROM '{}'", c.table, c.path),
                Write::CopyInto,
                &c.table,
            )
            .keeps_session(),
            Statement::Describe(d) => Info::reads(format!("DESCRIBE {}", d.name)),
            Statement::DescribeHistory(h) => Info::reads(format!("DESCRIBE HISTORY {}", h.name))
                .needs(Needs::Select(h.name.clone())),
            Statement::DescribeDetail(name) => {
                Info::reads(format!("DESCRIBE DETAIL {name}")).needs(Needs::Select(name.clone()))
            }
            Statement::Restore(r) => {
                Info::writes(format!("RESTORE TABLE {}", r.name), Write::Restore, &r.name)
            }
            Statement::Optimize(o) if o.purge => {
                Info::writes(format!("REORG TABLE {}", o.name), Write::Reorg, &o.name)
            }
            Statement::Optimize(o) => {
                Info::writes(format!("OPTIMIZE {}", o.name), Write::Optimize, &o.name)
            }
            // Even a dry run needs write privileges: it lists the files.
            Statement::Vacuum(v) => {
                let mut info = Info::writes(format!("VACUUM {}", v.name), Write::Vacuum, &v.name);
                if v.dry_run {
                    info.write = None;
                }
                info
            }
            Statement::Show(_) => Info::reads("SHOW".to_string()),
            Statement::List(p) => Info::reads(format!("LIST '{p}'")),
            Statement::Grant(g) => {
                Info::reads(format!("{} ON …", if g.grant { "GRANT" } else { "REVOKE" }))
                    .needs(Needs::Admin("GRANT and REVOKE"))
            }
            Statement::ShowGrants(_) => Info::reads("SHOW GRANTS".to_string()),
            Statement::NoOp(tag) => Info::reads(tag.clone()),
            Statement::Accepted(a) => {
                let info = Info::reads(a.tag.to_string());
                match &a.table {
                    Some(table) => info.needs(Needs::Select(table.clone())),
                    None => info,
                }
            }
            Statement::NoRows => Info::reads(String::new()),
            // Each statement it holds goes through the pipeline itself.
            Statement::Atomic { .. } => Info::reads("BEGIN ATOMIC … END".to_string()),
            Statement::Sql(statement) => sql_info(statement),
        }
    }
}

impl Statement {
    /// The command named in MULTI_STATEMENT_TRANSACTION_NOT_SUPPORTED when
    /// this statement cannot take part in a transaction block; `None` when
    /// it can (or touches no table). CREATE TABLE decides by its form
    /// (`statements::ddl`).
    pub(crate) fn refused_in_block(&self) -> Option<&'static str> {
        match self {
            Statement::Restore(_) => Some("RESTORE"),
            Statement::Optimize(o) if o.purge => Some("REORG TABLE"),
            Statement::Optimize(_) => Some("OPTIMIZE"),
            Statement::Vacuum(_) => Some("VACUUM"),
            Statement::Grant(g) if g.grant => Some("GRANT"),
            Statement::Grant(_) => Some("REVOKE"),
            Statement::Sql(statement) => match SqlKind::of(statement) {
                SqlKind::Drop => match statement.as_ref() {
                    ast::Statement::Drop {
                        object_type: ObjectType::Schema | ObjectType::Database,
                        ..
                    } => Some("DROP SCHEMA"),
                    _ => None,
                },
                SqlKind::Query
                | SqlKind::CreateSchema
                | SqlKind::Insert
                | SqlKind::UpdateDelete
                | SqlKind::Copy
                | SqlKind::Transaction
                | SqlKind::Cursor
                | SqlKind::Setting
                | SqlKind::CreateTable
                | SqlKind::CreateView => None,
            },
            Statement::CreateTable(_)
            | Statement::View(_)
            | Statement::Variable(_)
            | Statement::AlterTable(_)
            | Statement::Merge(_)
            | Statement::ExplainMerge(_)
            | Statement::Insert(_)
            | Statement::CopyInto(_)
            | Statement::Describe(_)
            | Statement::DescribeHistory(_)
            | Statement::DescribeDetail(_)
            | Statement::Show(_)
            | Statement::List(_)
            | Statement::ShowGrants(_)
            | Statement::NoOp(_)
            | Statement::Accepted(_)
            | Statement::NoRows
            | Statement::Atomic { .. } => None,
        }
    }
}

/// [`Statement::info`] of a view statement: creating a stored view needs
/// CREATE in its schema, replacing or changing one its ownership.
fn view_info(view: &ViewStatement) -> Info<'_> {
    let name = view.name().clone();
    match view {
        ViewStatement::Create(c) if c.temporary => {
            Info::reads(format!("CREATE TEMPORARY VIEW {name}"))
        }
        ViewStatement::Create(c) => {
            let mut info = Info::reads(format!("CREATE VIEW {name}")).needs(Needs::Create {
                table: name,
                replace: c.or_replace,
            });
            info.objects = ObjectChange::Creates(&c.name);
            info
        }
        ViewStatement::Rename { name: from, to } => {
            let mut info = Info::reads(format!("ALTER VIEW {name}")).needs(Needs::Alter {
                table: name,
                rename_to: Some(to.clone()),
            });
            info.objects = ObjectChange::Renames { from, to };
            info
        }
        ViewStatement::AlterQuery { .. }
        | ViewStatement::SetProperties { .. }
        | ViewStatement::Comment { .. } => {
            Info::reads(format!("ALTER VIEW {name}")).needs(Needs::Alter {
                table: name,
                rename_to: None,
            })
        }
    }
}

/// [`Statement::info`] of a statement sqlparser reads.
fn sql_info(statement: &ast::Statement) -> Info<'_> {
    use ast::Statement as S;
    let text = Text::Sql(statement);
    match SqlKind::of(statement) {
        SqlKind::Query
        | SqlKind::Cursor
        | SqlKind::Setting
        | SqlKind::CreateTable
        | SqlKind::CreateView
        | SqlKind::Transaction => {
            let mut info = Info::reads(text);
            info.ends_block = ends_block(statement);
            if matches!(statement, S::Query(_)) {
                info.session = SessionEffect::Keeps;
            }
            info
        }
        SqlKind::Insert | SqlKind::UpdateDelete => {
            let kind = match statement {
                S::Insert(_) => Write::Insert,
                S::Update(_) => Write::Update,
                S::Delete(_) => Write::Delete,
                _ => Write::Truncate,
            };
            let info = match first_relation(statement) {
                Some(table) => Info::writes(text, kind, &table).dml(),
                None => Info::reads(text).dml(),
            };
            match kind {
                Write::Truncate => info,
                _ => info.keeps_session(),
            }
        }
        SqlKind::Copy => match statement {
            // COPY t TO reads t, which its plan checks.
            S::Copy {
                source: ast::CopySource::Table { table_name, .. },
                to: false,
                ..
            } => Info::writes(text, Write::Copy, table_name),
            _ => Info::reads(text),
        },
        SqlKind::CreateSchema => {
            let mut info = Info::reads(text).needs(Needs::Admin("CREATE SCHEMA"));
            info.write = Some(Write::CreateSchema);
            info
        }
        SqlKind::Drop => {
            let S::Drop {
                object_type, names, ..
            } = statement
            else {
                return Info::reads(text);
            };
            let (needs, objects) = match object_type {
                ObjectType::Schema | ObjectType::Database => (
                    Needs::Admin("DROP SCHEMA"),
                    ObjectChange::DropsSchemas(names),
                ),
                ObjectType::Table | ObjectType::View => (
                    Needs::DropExisting(names.clone()),
                    ObjectChange::DropsTables(names),
                ),
                _ => (Needs::Nothing, ObjectChange::None),
            };
            let mut info = Info::reads(text).needs(needs);
            info.objects = objects;
            info.write = Some(Write::Drop);
            info.target = first_relation(statement);
            info
        }
    }
}

/// INSERT INTO t, UPDATE t, DELETE FROM t, TRUNCATE t: the first relation
/// the statement names.
fn first_relation(statement: &ast::Statement) -> Option<ObjectName> {
    let mut first = None;
    let _ = ast::visit_relations(statement, |name| {
        first = Some(name.clone());
        std::ops::ControlFlow::Break(())
    });
    first
}

/// COMMIT, ROLLBACK and RELEASE may run in a failed transaction block.
fn ends_block(statement: &ast::Statement) -> bool {
    matches!(
        statement,
        ast::Statement::Commit { .. }
            | ast::Statement::Rollback { .. }
            | ast::Statement::ReleaseSavepoint { .. }
    )
}
