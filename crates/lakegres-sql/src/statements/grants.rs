//! `GRANT …`, `REVOKE …` and `SHOW GRANTS`: the warehouse's grants
//! (kept by lakegres-delta's `grants`) as statements change and show them.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use lakegres_delta::grants::{Grant, Privilege, Securable};
use lakegres_delta::normalize_schema;

use crate::error::class;
use crate::error::{Error, Result};
use crate::names::{object_leaf, table_name};
use crate::output::{fixed, rows_output, CommandTag, Output};
use crate::parser::{GrantObject, GrantStatement, ShowGrants};
use crate::statement_context::StatementContext;

/// What a GRANT or REVOKE names, checked to exist.
async fn securable(cx: &StatementContext<'_>, object: &GrantObject) -> Result<Securable> {
    let catalog = cx.engine().catalog();
    match object {
        GrantObject::Schema(name) => {
            let schema = normalize_schema(&object_leaf(name))?;
            if !catalog.schema_exists(&schema).await? {
                return Err(lakegres_delta::Error::SchemaNotFound { schema }.into());
            }
            Ok(Securable::Schema { schema })
        }
        GrantObject::Table(name) => {
            let table = table_name(cx, name)?;
            if !catalog.table_exists(&table).await? && catalog.view(&table).await?.is_none() {
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
pub(crate) async fn grant(cx: &StatementContext<'_>, statement: &GrantStatement) -> Result<Output> {
    let object = securable(cx, &statement.object).await?;
    for privilege in &statement.privileges {
        let fits = match privilege {
            Privilege::Create | Privilege::UseSchema => {
                matches!(object, Securable::Schema { .. })
            }
            _ => true,
        };
        if !fits {
            return Err(Error::analysis(
                class::INVALID_PRIVILEGE,
                format!(
                    "{} is not a privilege of a {}",
                    privilege.name(),
                    object.kind().to_lowercase()
                ),
            ));
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
    cx.principal()
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
pub(crate) async fn show_grants(cx: &StatementContext<'_>, show: &ShowGrants) -> Result<Output> {
    let principal = cx.principal();
    principal.grants().refresh().await?;
    let object = match &show.object {
        Some(object) => Some(securable(cx, object).await?),
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
