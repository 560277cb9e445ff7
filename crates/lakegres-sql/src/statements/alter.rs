//! `ALTER TABLE` and `COMMENT ON TABLE`: each change is one Delta commit
//! made by lakegres-delta; what needs the SQL engine is done here — the
//! check of the existing rows against a new CHECK constraint or NOT NULL
//! (Databricks refuses a constraint the table's rows break) and the column
//! types.

use std::sync::Arc;

use datafusion::datasource::TableProvider;

use datafusion::logical_expr::{col, lit, Expr};
use datafusion::prelude::coalesce;
use lakegres_delta::create::NewColumn;
use lakegres_delta::{DeltaProvider, MetadataChange, TableName};

use crate::error::class;
use crate::error::{Error, Result};
use crate::names::table_name;
use crate::output::{fixed, Output};
use crate::parser::{AlterChange, AlterTable};
use crate::statement_context::StatementContext;
use crate::statements::ddl::table_properties;
use crate::types::column_type;

/// Runs one `ALTER TABLE` / `COMMENT ON TABLE`.
pub(crate) async fn alter_table(cx: &StatementContext<'_>, alter: &AlterTable) -> Result<Output> {
    let name = table_name(cx, &alter.name)?;
    let catalog = cx.catalog();
    let tag = match alter.change {
        AlterChange::TableComment(_) => "COMMENT",
        _ => "ALTER TABLE",
    };
    if let AlterChange::RenameTo(to) = &alter.change {
        let to = crate::names::rename_target(cx, &name, to)?;
        catalog.rename_table(&name, &to).await?;
        return Ok(Output::Done(fixed(tag)));
    }
    let table = cx.load_table(&name).await?;
    let change = match &alter.change {
        AlterChange::RenameTo(_) => return Ok(Output::Done(fixed(tag))),
        AlterChange::AddColumns(columns) => {
            let mut fields = Vec::with_capacity(columns.len());
            for column in columns {
                if column.identity.is_some() {
                    return Err(Error::analysis(
                        class::DELTA_IDENTITY_COLUMNS_ALTER_NOT_SUPPORTED,
                        format!(
                            "ADD COLUMN {} GENERATED AS IDENTITY: identity columns are \
                             declared when the table is created",
                            column.name.value
                        ),
                    ));
                }
                if column.not_null || column.generated.is_some() {
                    // Delta: existing rows have no value for the new column.
                    return Err(Error::analysis(
                        class::DELTA_OPERATION_NOT_ALLOWED,
                        format!(
                            "ADD COLUMN {} with NOT NULL or GENERATED ALWAYS AS: the table's \
                             rows have no value for it",
                            column.name.value
                        ),
                    ));
                }
                fields.push(NewColumn {
                    name: column.name.value.clone(),
                    data_type: column_type(&column.data_type)?,
                    nullable: true,
                    comment: column.comment.clone(),
                    generated: None,
                    char_varchar: crate::types::char_varchar(&column.data_type),
                    identity: None,
                    default: None,
                });
            }
            MetadataChange::AddColumns(fields)
        }
        AlterChange::ColumnComment { column, comment } => MetadataChange::ColumnComment {
            column: column.value.clone(),
            comment: comment.clone(),
        },
        AlterChange::ColumnNotNull { column, not_null } => {
            if *not_null {
                let provider = DeltaProvider::try_new(name.clone(), table.clone())?;
                let lower = column.value.to_lowercase();
                if provider.schema().field_with_name(&lower).is_err() {
                    return Err(lakegres_delta::Error::UnknownColumn {
                        table: name.to_string(),
                        column: column.value.clone(),
                    }
                    .into());
                }
                let broken =
                    count_rows(cx, provider, col(format!("\"{lower}\"")).is_null()).await?;
                if broken > 0 {
                    return Err(Error::analysis(
                        class::DELTA_NEW_NOT_NULL_VIOLATION,
                        format!(
                            "{broken} rows in {name} violate the new NOT NULL constraint on {}",
                            column.value
                        ),
                    ));
                }
            }
            MetadataChange::ColumnNotNull {
                column: column.value.clone(),
                not_null: *not_null,
            }
        }
        AlterChange::SetProperties(properties) => MetadataChange::SetProperties(
            table_properties(properties)?
                .into_iter()
                .map(|(k, v)| (k, v.unwrap_or_default()))
                .collect(),
        ),
        AlterChange::UnsetProperties { keys, if_exists } => MetadataChange::UnsetProperties {
            keys: keys.clone(),
            if_exists: *if_exists,
        },
        AlterChange::AddConstraint {
            name: constraint,
            check,
        } => {
            let text = check.to_string();
            let provider = DeltaProvider::try_new(name.clone(), table.clone())?;
            let broken = violations(cx, &name, provider, &text).await?;
            if broken > 0 {
                return Err(Error::analysis(
                    class::DELTA_NEW_CHECK_CONSTRAINT_VIOLATION,
                    format!("{broken} rows in {name} violate the new CHECK constraint ({text})"),
                ));
            }
            MetadataChange::AddConstraint {
                name: constraint.value.clone(),
                expr: text,
            }
        }
        AlterChange::DropConstraint {
            name: constraint,
            if_exists,
        } => MetadataChange::DropConstraint {
            name: constraint.value.clone(),
            if_exists: *if_exists,
        },
        AlterChange::TableComment(comment) => MetadataChange::TableComment(comment.clone()),
        AlterChange::RenameColumn { from, to } => MetadataChange::RenameColumn {
            from: from.value.clone(),
            to: to.value.clone(),
        },
        AlterChange::ColumnDefault { column, default } => MetadataChange::ColumnDefault {
            column: column.value.clone(),
            default: default.clone(),
        },
        AlterChange::ColumnType { column, data_type } => MetadataChange::ColumnType {
            column: column.value.clone(),
            data_type: column_type(data_type)?,
        },
        AlterChange::ClusterBy(columns) => {
            MetadataChange::ClusterBy(columns.iter().map(|c| c.value.clone()).collect())
        }
        AlterChange::DropColumns { columns, if_exists } => MetadataChange::DropColumns {
            columns: columns.iter().map(|c| c.value.clone()).collect(),
            if_exists: *if_exists,
        },
    };
    lakegres_delta::alter_metadata(&name, &table, change, cx.committed()).await?;
    Ok(Output::Done(fixed(tag)))
}

/// The rows of the table's loaded version for which `check` is false or
/// NULL (Delta counts both as breaking a constraint).
async fn violations(
    cx: &StatementContext<'_>,
    name: &TableName,
    provider: DeltaProvider,
    check: &str,
) -> Result<usize> {
    let df = cx.context().read_table(Arc::new(provider))?;
    let expr = df.parse_sql_expr(check)?;
    let schema = df.schema().clone();
    let data_type = datafusion::logical_expr::ExprSchemable::get_type(&expr, &schema)?;
    if data_type != datafusion::arrow::datatypes::DataType::Boolean {
        return Err(Error::analysis(
            class::DELTA_NON_BOOLEAN_CHECK_CONSTRAINT,
            format!("CHECK constraint ({check}) on {name} is not a boolean expression"),
        ));
    }
    Ok(df
        .filter(Expr::Not(Box::new(coalesce(vec![expr, lit(false)]))))?
        .count()
        .await?)
}

async fn count_rows(
    cx: &StatementContext<'_>,
    provider: DeltaProvider,
    filter: Expr,
) -> Result<usize> {
    Ok(cx
        .context()
        .read_table(Arc::new(provider))?
        .filter(filter)?
        .count()
        .await?)
}
