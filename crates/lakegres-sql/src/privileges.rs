//! Which statements need which privileges, and GRANT, REVOKE and SHOW
//! GRANTS (the grants themselves are kept by lakegres-delta's `grants`).
//!
//! Reads and writes of table data are also checked where plans reach a
//! Delta table (the table provider), so a table read inside any statement
//! — a MERGE source, a CTAS query, a cursor, time travel — is covered.
//! Here are the checks of statements that do not go through a plan, and
//! of what a statement is allowed to do as a whole.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use lakegres_delta::grants::{Grant, Privilege, Securable};
use lakegres_delta::{normalize_schema, SqlState, TableName};
use sqlparser::ast::{self, ObjectName, ObjectType};

use crate::ddl::table_name;
use crate::error::{Error, Result};
use crate::parser::{AlterChange, GrantObject, GrantStatement, ShowGrants, Statement};
use crate::session::{fixed, object_leaf, rows_output, CommandTag, Output, Session};

/// Statements that change a table's data or files need SELECT and MODIFY
/// on it (Databricks asks for SELECT with MODIFY too).
const WRITE: &[Privilege] = &[Privilege::Select, Privilege::Modify];

/// Refuses (42501) a statement the session's user may not run. Called
/// before every statement; with no admins configured it does nothing.
pub(crate) async fn authorize(session: &Session, statement: &Statement) -> Result<()> {
    let principal = session.principal();
    let grants = principal.grants();
    if !grants.enforced() {
        return Ok(());
    }
    grants.refresh().await?;
    if principal.is_admin() {
        return Ok(());
    }
    let require = |privileges: &[Privilege], name: &ObjectName| -> Result<()> {
        let name = table_name(session, name)?;
        for privilege in privileges {
            principal.require(*privilege, &name)?;
        }
        Ok(())
    };
    use ast::Statement as S;
    match statement {
        Statement::Grant(_) => principal.require_admin("GRANT and REVOKE")?,
        Statement::CreateTable(create) => {
            let name = table_name(session, &create.name)?;
            principal.require_create(&name.schema)?;
            if create.or_replace && session.engine().catalog().table_exists(&name).await? {
                require(WRITE, &create.name)?;
            }
        }
        Statement::AlterTable(alter) => {
            require(WRITE, &alter.name)?;
            // A rename creates the table under its new name.
            if let AlterChange::RenameTo(to) = &alter.change {
                principal.require_create(&table_name(session, to)?.schema)?;
            }
        }
        Statement::DescribeHistory(h) => require(&[Privilege::Select], &h.name)?,
        Statement::DescribeDetail(name) => require(&[Privilege::Select], name)?,
        Statement::Merge(m) => require(WRITE, &m.target)?,
        Statement::Insert(i) => require(WRITE, &i.table)?,
        Statement::CopyInto(c) => require(WRITE, &c.table)?,
        Statement::Restore(r) => require(WRITE, &r.name)?,
        Statement::Optimize(o) => require(WRITE, &o.name)?,
        // Even a dry run: it lists the table's files.
        Statement::Vacuum(v) => require(WRITE, &v.name)?,
        Statement::Sql(ast) => match ast.as_ref() {
            S::CreateSchema { .. } | S::CreateDatabase { .. } => {
                principal.require_admin("CREATE SCHEMA")?
            }
            S::Drop {
                object_type: ObjectType::Schema | ObjectType::Database,
                ..
            } => principal.require_admin("DROP SCHEMA")?,
            S::Drop {
                object_type: ObjectType::Table,
                names,
                ..
            } => {
                for name in names {
                    // A table that does not exist gets its own error.
                    let table = table_name(session, name)?;
                    if session.engine().catalog().table_exists(&table).await? {
                        require(WRITE, name)?;
                    }
                }
            }
            // COPY t TO reads t, which its plan checks.
            S::Copy {
                source: ast::CopySource::Table { table_name, .. },
                to: false,
                ..
            } => require(WRITE, table_name)?,
            S::Insert(_) | S::Update(_) | S::Delete(_) | S::Truncate(_) => {
                if let Some(name) = crate::session::written_table(session, statement) {
                    for privilege in WRITE {
                        principal.require(*privilege, &name)?;
                    }
                }
            }
            _ => {}
        },
        _ => {}
    }
    Ok(())
}

/// After a statement succeeded: a user who created a table holds all
/// privileges on it (as its owner would on Databricks); a dropped table's
/// grants go with it, so a new table of that name starts without them.
pub(crate) async fn after(session: &Session, statement: &Statement) -> Result<()> {
    let principal = session.principal();
    let grants = principal.grants();
    if !grants.enforced() {
        return Ok(());
    }
    match statement {
        Statement::CreateTable(create) if !principal.is_admin() => {
            let name = table_name(session, &create.name)?;
            let user = principal.user().to_lowercase();
            grants
                .change(|set| {
                    set.insert(Grant {
                        principal: user.clone(),
                        privilege: Privilege::All,
                        object: Securable::table(&name),
                    });
                })
                .await?;
        }
        Statement::AlterTable(alter) => {
            if let AlterChange::RenameTo(to) = &alter.change {
                let from = Securable::table(&table_name(session, &alter.name)?);
                let to = Securable::table(&table_name(session, to)?);
                grants
                    .change(|set| {
                        let moved: Vec<Grant> =
                            set.iter().filter(|g| g.object == from).cloned().collect();
                        for g in moved {
                            set.remove(&g);
                            set.insert(Grant {
                                object: to.clone(),
                                ..g
                            });
                        }
                    })
                    .await?;
            }
        }
        Statement::Sql(ast) => {
            if let ast::Statement::Drop {
                object_type, names, ..
            } = ast.as_ref()
            {
                let gone: Vec<Securable> = match object_type {
                    ObjectType::Table => names
                        .iter()
                        .filter_map(|n| table_name(session, n).ok())
                        .map(|n| Securable::table(&n))
                        .collect(),
                    ObjectType::Schema | ObjectType::Database => names
                        .iter()
                        .filter_map(|n| normalize_schema(&object_leaf(n)).ok())
                        .map(|schema| Securable::Schema { schema })
                        .collect(),
                    _ => return Ok(()),
                };
                grants
                    .change(|set| {
                        set.retain(|g| {
                            !gone.iter().any(|o| {
                                *o == g.object
                                    || matches!((o, &g.object),
                                        (Securable::Schema { schema }, Securable::Table { schema: s, .. })
                                            if schema == s)
                            })
                        })
                    })
                    .await?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// What a GRANT or REVOKE names, checked to exist.
async fn securable(session: &Session, object: &GrantObject) -> Result<Securable> {
    let catalog = session.engine().catalog();
    match object {
        GrantObject::Schema(name) => {
            let schema = normalize_schema(&object_leaf(name))?;
            if !catalog.schema_exists(&schema).await? {
                return Err(lakegres_delta::Error::SchemaNotFound { schema }.into());
            }
            Ok(Securable::Schema { schema })
        }
        GrantObject::Table(name) => {
            let table = table_name(session, name)?;
            if !catalog.table_exists(&table).await? {
                return Err(lakegres_delta::Error::TableNotFound {
                    schema: table.schema,
                    table: table.table,
                }
                .into());
            }
            Ok(Securable::table(&table))
        }
    }
}

/// `GRANT …` / `REVOKE …`: one new version of the warehouse's grants.
pub(crate) async fn grant(session: &Session, statement: &GrantStatement) -> Result<Output> {
    let object = securable(session, &statement.object).await?;
    for privilege in &statement.privileges {
        let fits = match privilege {
            Privilege::Create | Privilege::UseSchema => {
                matches!(object, Securable::Schema { .. })
            }
            _ => true,
        };
        if !fits {
            return Err(Error::Analysis {
                class: "INVALID_PRIVILEGE",
                state: SqlState::WRONG_OBJECT_TYPE,
                message: format!(
                    "{} is not a privilege of a {}",
                    privilege.name(),
                    object.kind().to_lowercase()
                ),
            });
        }
    }
    let changed: Vec<Grant> = statement
        .principals
        .iter()
        .flat_map(|principal| {
            statement.privileges.iter().map(|privilege| Grant {
                principal: principal.clone(),
                privilege: *privilege,
                object: object.clone(),
            })
        })
        .collect();
    let grant = statement.grant;
    session
        .principal()
        .grants()
        .change(|set| {
            for g in &changed {
                if grant {
                    set.insert(g.clone());
                } else {
                    set.remove(g);
                }
            }
        })
        .await?;
    Ok(Output::Done(fixed(if grant { "GRANT" } else { "REVOKE" })))
}

/// The columns of SHOW GRANTS, as Databricks names them.
pub(crate) fn show_grants_schema() -> SchemaRef {
    Arc::new(Schema::new(
        ["principal", "action_type", "object_type", "object_key"]
            .map(|name| Field::new(name, DataType::Utf8, false))
            .to_vec(),
    ))
}

/// `SHOW GRANTS [user] [ON …]`: grants on the object (for a table, also
/// those on its schema, which hold for it). Users who are not admins see
/// only their own.
pub(crate) async fn show_grants(session: &Session, show: &ShowGrants) -> Result<Output> {
    let principal = session.principal();
    principal.grants().refresh().await?;
    let object = match &show.object {
        Some(object) => Some(securable(session, object).await?),
        None => None,
    };
    let me = principal.user().to_lowercase();
    let admin = principal.is_admin();
    let applies = |g: &Grant| match &object {
        None => true,
        Some(o) if *o == g.object => true,
        Some(Securable::Table { schema, .. }) => {
            matches!(&g.object, Securable::Schema { schema: s } if s == schema)
        }
        Some(Securable::Schema { .. }) => false,
    };
    let snapshot = principal.grants().snapshot();
    let rows = snapshot
        .iter()
        .filter(|g| admin || g.principal == me)
        .filter(|g| show.principal.as_ref().is_none_or(|p| *p == g.principal))
        .filter(|g| applies(g));
    let (mut who, mut action, mut kind, mut key) = (vec![], vec![], vec![], vec![]);
    for g in rows {
        who.push(g.principal.clone());
        action.push(g.privilege.name().to_string());
        kind.push(g.object.kind().to_string());
        key.push(g.object.key());
    }
    let columns: Vec<ArrayRef> = [who, action, kind, key]
        .into_iter()
        .map(|c| Arc::new(StringArray::from(c)) as ArrayRef)
        .collect();
    let batch = RecordBatch::try_new(show_grants_schema(), columns)
        .map_err(|e| Error::DataFusion(e.into()))?;
    Ok(rows_output(batch, CommandTag::Counted("SELECT")))
}

/// 42501 unless the session may read `name` (for paths that read a table
/// without a plan, such as point lookups).
pub(crate) fn require_select(session: &Session, name: &TableName) -> Result<()> {
    Ok(session.principal().require(Privilege::Select, name)?)
}
