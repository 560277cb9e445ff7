//! `INSERT … ON CONFLICT (keys) DO NOTHING | DO UPDATE SET … [WHERE …]`,
//! Postgres' upsert, as the MERGE it means: one commit.
//!
//! ```sql
//! MERGE INTO t AS t USING (<the INSERT's rows>) AS excluded (<its columns>)
//! ON t.k1 = excluded.k1 AND …
//! [WHEN MATCHED [AND <where>] THEN UPDATE SET …]
//! WHEN NOT MATCHED THEN INSERT (<columns>) VALUES (excluded.c1, …)
//! ```
//!
//! Keys are compared with `=`, so a NULL key conflicts with nothing, as in
//! Postgres. The conflict target is the columns named, or the key
//! constraint named (`ON CONSTRAINT`), or without one (DO NOTHING only)
//! the table's primary key; a table without keys has nothing to conflict
//! with, and the rows are inserted. Unlike Postgres, rows of one INSERT
//! that share a key with each other but none in the table are all inserted
//! (Postgres' unique index would keep the first); their update of one
//! target row fails as MERGE's multiple-match error does.

use datafusion::common::ParamValues;
use sqlparser::ast::{
    self, ConflictTarget, Expr, Ident, OnConflict, OnConflictAction, VisitMut, VisitorMut,
};

use crate::error::{class, Error, Result};
use crate::output::Output;
use crate::parser::Statement;
use crate::statement_context::StatementContext;
use crate::statements::ddl::KEY_PREFIX;

/// The columns of a key constraint's text (`PRIMARY KEY (a, b)`).
fn key_columns(text: &str) -> Option<Vec<String>> {
    let inside = text.split_once('(')?.1.split_once(')')?.0;
    Some(inside.split(',').map(|c| c.trim().to_string()).collect())
}

/// The statement an INSERT … ON CONFLICT runs as: the MERGE, or (nothing
/// to conflict with) the INSERT alone.
async fn rewritten(
    cx: &StatementContext<'_>,
    insert: &ast::Insert,
    on: &OnConflict,
) -> Result<Statement> {
    if insert.returning.is_some() {
        return Err(Error::not_supported("RETURNING with ON CONFLICT"));
    }
    let ast::TableObject::TableName(object) = &insert.table else {
        return Err(Error::not_supported("ON CONFLICT into a table function"));
    };
    let Some(source) = &insert.source else {
        return Err(Error::not_supported("ON CONFLICT without rows"));
    };
    let name = crate::names::table_name(cx, object)?;
    let info = cx.load_table(&name).await?.info(&name)?;
    let keys: Option<Vec<String>> = match &on.conflict_target {
        Some(ConflictTarget::Columns(columns)) => {
            Some(columns.iter().map(|c| c.value.clone()).collect())
        }
        Some(ConflictTarget::OnConstraint(constraint)) => {
            let wanted = format!("{KEY_PREFIX}{}", object_leaf(constraint));
            let text = info
                .properties
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(&wanted))
                .map(|(_, v)| v.clone())
                .ok_or_else(|| {
                    Error::analysis(
                        class::UNRESOLVED_COLUMN,
                        format!("constraint {constraint} of {name} does not exist"),
                    )
                })?;
            key_columns(&text)
        }
        None => {
            if matches!(on.action, OnConflictAction::DoUpdate(_)) {
                return Err(Error::Syntax {
                    message: "ON CONFLICT DO UPDATE requires a conflict target (columns or ON CONSTRAINT)"
                        .into(),
                    position: None,
                });
            }
            info.properties
                .iter()
                .find(|(k, v)| k.starts_with(KEY_PREFIX) && v.starts_with("PRIMARY KEY"))
                .and_then(|(_, v)| key_columns(v))
        }
    };
    let mut plain = insert.clone();
    plain.on = None;
    let Some(keys) = keys else {
        return Ok(Statement::Sql(Box::new(ast::Statement::Insert(plain))));
    };
    let columns: Vec<String> = if insert.columns.is_empty() {
        info.columns.iter().map(|c| c.name.clone()).collect()
    } else {
        insert.columns.iter().map(object_leaf).collect()
    };
    let listed = |key: &String| columns.iter().any(|c| c.eq_ignore_ascii_case(key));
    if let Some(missing) = keys.iter().find(|k| !listed(k)) {
        return Err(Error::analysis(
            class::UNRESOLVED_COLUMN,
            format!("the conflict key {missing} is not a column the INSERT gives"),
        ));
    }
    let (_, alias) = super::returning::target(insert)?;
    // DataFusion sees the table's columns in lower case.
    let quoted = |c: &str| Ident::with_quote('"', c.to_lowercase()).to_string();
    let on_keys = keys
        .iter()
        .map(|k| format!("{alias}.{k} = excluded.{k}", k = quoted(k)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let column_list = columns.iter().map(|c| quoted(c)).collect::<Vec<_>>();
    let mut merge = format!(
        "MERGE INTO {object} AS {alias} USING ({source}) AS excluded ({}) ON {on_keys}",
        column_list.join(", ")
    );
    if let OnConflictAction::DoUpdate(update) = &on.action {
        let mut assignments = update.assignments.clone();
        let mut selection = update.selection.clone();
        let mut qualify = QualifyBare(alias.clone());
        for a in &mut assignments {
            let _ = a.value.visit(&mut qualify);
        }
        if let Some(s) = &mut selection {
            let _ = s.visit(&mut qualify);
        }
        merge.push_str(" WHEN MATCHED");
        if let Some(s) = selection {
            merge.push_str(&format!(" AND ({s})"));
        }
        let set = assignments
            .iter()
            .map(|a| format!("{} = {}", a.target, a.value))
            .collect::<Vec<_>>()
            .join(", ");
        merge.push_str(&format!(" THEN UPDATE SET {set}"));
    }
    merge.push_str(&format!(
        " WHEN NOT MATCHED THEN INSERT ({}) VALUES ({})",
        column_list.join(", "),
        column_list
            .iter()
            .map(|c| format!("excluded.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut statements = crate::parser::parse_sql(&merge)?;
    match (statements.pop(), statements.is_empty()) {
        (Some(statement), true) => Ok(statement),
        _ => Err(Error::internal("ON CONFLICT did not make one MERGE")),
    }
}

/// The last part of a name.
fn object_leaf(name: &ast::ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}

/// Bare column names in DO UPDATE's expressions name the target's columns
/// (Postgres' rule; `excluded.c` names the proposed row's).
struct QualifyBare(Ident);

impl VisitorMut for QualifyBare {
    type Break = ();
    fn post_visit_expr(&mut self, expr: &mut Expr) -> std::ops::ControlFlow<()> {
        if let Expr::Identifier(column) = expr {
            *expr = Expr::CompoundIdentifier(vec![self.0.clone(), column.clone()]);
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// Runs an INSERT … ON CONFLICT; answers as an INSERT does, counting the
/// rows inserted and updated (Postgres' count).
pub(crate) async fn insert_on_conflict(
    cx: &StatementContext<'_>,
    insert: &ast::Insert,
    on: &OnConflict,
    params: Option<ParamValues>,
) -> Result<Output> {
    use datafusion::arrow::array::{AsArray, RecordBatch};
    use datafusion::arrow::datatypes::Int64Type;
    use futures::TryStreamExt;
    let statement = rewritten(cx, insert, on).await?;
    let is_merge = matches!(statement, Statement::Merge(_));
    let output = cx.nested.execute(&statement, params).await?;
    if !is_merge {
        return Ok(output);
    }
    let Output::Rows { stream, .. } = output else {
        return Ok(output);
    };
    let batches: Vec<RecordBatch> = stream.try_collect().await?;
    let affected = batches
        .first()
        .filter(|b| b.num_rows() > 0 && b.num_columns() > 0)
        .and_then(|b| {
            datafusion::arrow::compute::cast(
                b.column(0),
                &datafusion::arrow::datatypes::DataType::Int64,
            )
            .ok()
            .map(|c| c.as_primitive::<Int64Type>().value(0))
        })
        .unwrap_or(0);
    super::insert::inserted(u64::try_from(affected).unwrap_or(0))
}
