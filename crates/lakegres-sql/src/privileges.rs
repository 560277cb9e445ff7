//! Checking what a statement needs ([`Needs`], from `statement.rs`) before
//! it runs, and what a statement does to the grants after it (a creator
//! owns its table; a dropped or renamed table's grants go or move with it).
//! GRANT, REVOKE and SHOW GRANTS are in `statements/grants.rs`.
//!
//! Reads and writes of table data are also checked where plans reach a
//! Delta table (the table provider), so a table read inside any statement
//! — a MERGE source, a CTAS query, a cursor, time travel — is covered.
//! Here are the checks of statements that do not go through a plan, and
//! of what a statement is allowed to do as a whole.

use lakegres_delta::grants::{Grant, Privilege, Securable};
use lakegres_delta::{normalize_schema, TableName};
use sqlparser::ast::ObjectName;

use crate::error::Result;
use crate::info::{Needs, ObjectChange};
use crate::names::object_leaf;
use crate::names::table_name;
use crate::statement_context::StatementContext;

/// Statements that change a table's data or files need SELECT and MODIFY
/// on it (Databricks asks for SELECT with MODIFY too).
const WRITE: &[Privilege] = &[Privilege::Select, Privilege::Modify];

/// What [`authorize`] found that [`after`] needs.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Authorized {
    /// The table or view a CREATE names existed before it ran: `IF NOT
    /// EXISTS` on it (or a replace) makes nobody its owner.
    existed: bool,
}

/// Refuses (42501) a statement the session's user may not run: what its
/// [`Needs`] say (`statement.rs`). Called before every statement; with no
/// admins configured it does nothing.
pub(crate) async fn authorize(cx: &StatementContext<'_>, needs: &Needs) -> Result<Authorized> {
    let principal = cx.principal();
    let grants = principal.grants();
    let mut authorized = Authorized::default();
    if !grants.enforced() {
        return Ok(authorized);
    }
    grants.refresh().await?;
    if let Needs::Create { table, .. } = needs {
        authorized.existed = exists(cx, &table_name(cx, table)?).await?;
    }
    if principal.is_admin() {
        return Ok(authorized);
    }
    let require = |privileges: &[Privilege], name: &ObjectName| -> Result<()> {
        let name = table_name(cx, name)?;
        for privilege in privileges {
            principal.require(*privilege, &name)?;
        }
        Ok(())
    };
    // A session's temporary view or table is its own.
    let temporary = |name: &ObjectName| cx.state().has_temp_view(name);
    match needs {
        Needs::Nothing => {}
        Needs::Admin(what) => principal.require_admin(what)?,
        Needs::Select(name) => require(&[Privilege::Select], name)?,
        Needs::Write(name) => require(WRITE, name)?,
        Needs::DropExisting(names) => {
            for name in names.iter().filter(|n| !temporary(n)) {
                let name = table_name(cx, name)?;
                if exists(cx, &name).await? {
                    principal.require_owner(&name)?;
                }
            }
        }
        Needs::Create { table, replace } => {
            let name = table_name(cx, table)?;
            principal.require_create(&name.schema)?;
            if *replace && authorized.existed {
                principal.require_owner(&name)?;
            }
        }
        Needs::Alter { table, rename_to } => {
            if !temporary(table) {
                principal.require_owner(&table_name(cx, table)?)?;
            }
            // A rename creates the table under its new name.
            if let Some(to) = rename_to {
                let from = table_name(cx, table)?;
                let to = crate::names::rename_target(cx, &from, to)?;
                principal.require_create(&to.schema)?;
            }
        }
    }
    Ok(authorized)
}

/// Whether the catalog holds a table or a stored view of that name.
async fn exists(cx: &StatementContext<'_>, name: &TableName) -> Result<bool> {
    let catalog = cx.catalog();
    Ok(catalog.table_exists(name).await? || catalog.view(name).await?.is_some())
}

/// After a statement succeeded: a user who created a table holds all
/// privileges on it (as its owner would on Databricks); a dropped table's
/// grants go with it, so a new table of that name starts without them.
pub(crate) async fn after(
    cx: &StatementContext<'_>,
    objects: ObjectChange<'_>,
    authorized: Authorized,
) -> Result<()> {
    let principal = cx.principal();
    let grants = principal.grants();
    if !grants.enforced() {
        return Ok(());
    }
    if cx.transaction() == crate::session_state::Transaction::InBlock {
        remember_for_rollback(cx, objects)?;
    }
    match objects {
        ObjectChange::None => {}
        // A new object starts with no grant of its own, whatever happened
        // to an earlier object of its name (dropped by another server, its
        // folder deleted by hand): grants are the object's, not the name's.
        ObjectChange::Creates(_) if authorized.existed => {}
        ObjectChange::Creates(created) => {
            let object = Securable::table(&table_name(cx, created)?);
            let owner = (!principal.is_admin()).then(|| principal.user().to_lowercase());
            grants
                .change(|set| {
                    set.retain(|g| g.object != object);
                    if let Some(owner) = &owner {
                        set.insert(Grant {
                            principal: owner.clone(),
                            privilege: Privilege::All,
                            object: object.clone(),
                        });
                    }
                })
                .await?;
        }
        ObjectChange::Renames { from, to } => {
            let from = table_name(cx, from)?;
            let to = Securable::table(&crate::names::rename_target(cx, &from, to)?);
            let from = Securable::table(&from);
            grants
                .change(|set| {
                    // Whatever the new name held belonged to an object gone.
                    set.retain(|g| g.object != to);
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
        // Only names that are gone now: DROP VIEW of a temporary view, or
        // DROP … IF EXISTS of nothing, leaves the grants on a catalog
        // object of the same name.
        ObjectChange::DropsTables(names) => {
            let mut gone = vec![];
            for name in names.iter().filter_map(|n| table_name(cx, n).ok()) {
                if !exists(cx, &name).await? {
                    gone.push(Securable::table(&name));
                }
            }
            grants
                .change(|set| set.retain(|g| !gone.contains(&g.object)))
                .await?;
        }
        ObjectChange::DropsSchemas(names) => {
            let gone: Vec<String> = names
                .iter()
                .filter_map(|n| normalize_schema(&object_leaf(n)).ok())
                .collect();
            grants
                .change(|set| {
                    set.retain(|g| match &g.object {
                        Securable::Schema { schema } | Securable::Table { schema, .. } => {
                            !gone.contains(schema)
                        }
                    })
                })
                .await?;
        }
    }
    Ok(())
}

/// Inside a transaction block: the grants on the tables and views a
/// statement creates, renames or drops, as they are before it changes
/// them, for ROLLBACK to put back ([`undo_in_block`]).
fn remember_for_rollback(cx: &StatementContext<'_>, objects: ObjectChange<'_>) -> Result<()> {
    let touched: Vec<Securable> = match objects {
        ObjectChange::None | ObjectChange::DropsSchemas(_) => return Ok(()),
        ObjectChange::Creates(created) => vec![Securable::table(&table_name(cx, created)?)],
        ObjectChange::Renames { from, to } => {
            let from = table_name(cx, from)?;
            let to = crate::names::rename_target(cx, &from, to)?;
            vec![Securable::table(&from), Securable::table(&to)]
        }
        ObjectChange::DropsTables(names) => names
            .iter()
            .filter_map(|n| table_name(cx, n).ok())
            .map(|n| Securable::table(&n))
            .collect(),
    };
    let before: Vec<Grant> = cx
        .principal()
        .grants()
        .snapshot()
        .iter()
        .filter(|g| touched.contains(&g.object))
        .cloned()
        .collect();
    cx.state().grants_before_block.push((touched, before));
    Ok(())
}

/// ROLLBACK of a block: the grants on the objects its statements created,
/// renamed or dropped go back to what they were, last change first.
pub(crate) async fn undo_in_block(cx: &StatementContext<'_>) -> Result<()> {
    let changes = std::mem::take(&mut cx.state().grants_before_block);
    restore_grants(cx.principal().grants(), changes).await
}

/// Puts back the grants [`remember_for_rollback`] kept, last change first
/// (also when a client disconnects inside a block).
pub(crate) async fn restore_grants(
    grants: &lakegres_delta::grants::Grants,
    changes: GrantsBefore,
) -> Result<()> {
    for (touched, before) in changes.into_iter().rev() {
        grants
            .change(|set| {
                set.retain(|g| !touched.contains(&g.object));
                set.extend(before.iter().cloned());
            })
            .await?;
    }
    Ok(())
}

/// The grants on some objects before a block's statement changed them.
pub(crate) type GrantsBefore = Vec<(Vec<Securable>, Vec<Grant>)>;

/// 42501 unless the session may read `name` (for paths that read a table
/// without a plan, such as point lookups).
pub(crate) fn require_select(cx: &StatementContext<'_>, name: &TableName) -> Result<()> {
    Ok(cx.principal().require(Privilege::Select, name)?)
}
