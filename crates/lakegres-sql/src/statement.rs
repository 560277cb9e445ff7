//! Which module of `statements/` describes and runs each statement (the
//! pipeline asks [`crate::info`] what a statement is first). Every `match`
//! here is exhaustive, so a new statement does not compile until it has
//! its module.
//!
//! Adding a statement: its parser (`parser/`), its module (`statements/`,
//! with a `describe` and a `run`), its arms here and in `info.rs`.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ParamValues;
use sqlparser::ast::{self};

use crate::error::{Error, Result};
use crate::info::SqlKind;
use crate::output::{fixed, rows_output, CommandTag, Description, Output};
use crate::parser::Statement;
use crate::statement_context::StatementContext;
use crate::statements::{
    alter, copy, copy_into, cursor, ddl, describe, detail, insert, list, maintenance, merge, query,
    set, transaction, update_delete,
};

impl Statement {
    /// What the extended protocol's Describe reports, without running it.
    pub(crate) async fn describe(&self, cx: &StatementContext<'_>) -> Result<Description> {
        let rows = Description::rows;
        let none = Description {
            params: vec![],
            schema: None,
        };
        Ok(match self {
            Statement::Sql(statement) => match SqlKind::of(statement) {
                SqlKind::Query => query::describe(cx, statement).await?,
                SqlKind::Insert => insert::describe_sql(cx, statement).await?,
                SqlKind::UpdateDelete => update_delete::describe(cx, statement).await?,
                SqlKind::Setting => set::describe(statement),
                SqlKind::Copy
                | SqlKind::CreateSchema
                | SqlKind::Drop
                | SqlKind::Transaction
                | SqlKind::Cursor
                | SqlKind::CreateTable
                | SqlKind::CreateView => none,
            },
            Statement::Describe(d) => rows(describe::describe_schema(d)),
            Statement::Show(crate::parser::ShowObjects::Partitions { name, spec }) => {
                let plan = describe::partitions_plan(cx, name, spec).await?;
                rows(Arc::new(plan.schema().as_arrow().clone()))
            }
            Statement::Show(s) => rows(describe::show_schema(s)),
            Statement::Variable(v) => crate::statements::variables::describe(cx, v)
                .await?
                .unwrap_or(none),
            Statement::CreateTable(create) => ddl::describe_create_table(cx, create).await?,
            Statement::View(_) | Statement::AlterTable(_) | Statement::Grant(_) => none,
            Statement::DescribeHistory(_) => rows(describe::history_schema()),
            Statement::DescribeDetail(_) => rows(detail::detail_schema()),
            Statement::Restore(_) => rows(maintenance::restore_schema()),
            Statement::Optimize(_) => rows(maintenance::optimize_schema()),
            Statement::Vacuum(_) => rows(maintenance::vacuum_schema()),
            Statement::ShowGrants(_) => rows(crate::statements::grants::show_grants_schema()),
            Statement::ExplainMerge(_) => rows(merge::explain_schema()),
            Statement::Merge(m) => merge::describe(cx, m).await?,
            Statement::Insert(i) => insert::describe(cx, i).await?,
            Statement::CopyInto(c) => copy_into::describe(c)?,
            Statement::NoRows => rows(Arc::new(Schema::empty())),
            Statement::NoOp(_) | Statement::Accepted(_) | Statement::Atomic { .. } => none,
            Statement::List(_) => rows(crate::files::listing_schema()),
        })
    }

    /// The statement's text as `pg_stat_activity` shows it and metrics
    /// name its kind.
    pub fn text(&self) -> String {
        self.info().text.render()
    }

    /// Runs the statement. Each kind's future is boxed, so this one holds a
    /// pointer rather than the largest statement's state, which every layer
    /// above (timeout, task-local user, cancel, catch_unwind) would copy
    /// again for each statement, a point lookup included.
    pub(crate) async fn run(
        &self,
        cx: &StatementContext<'_>,
        params: Option<ParamValues>,
    ) -> Result<Output> {
        match self {
            Statement::CreateTable(create) => {
                Box::pin(ddl::create_table(cx, create, params.as_ref())).await
            }
            Statement::AlterTable(a) => Box::pin(alter::alter_table(cx, a)).await,
            Statement::View(v) => Box::pin(crate::statements::views::run(cx, v)).await,
            Statement::Variable(v) => Box::pin(crate::statements::variables::run(cx, v)).await,
            Statement::Describe(d) => Box::pin(describe::describe_table(cx, d)).await,
            Statement::Show(s) => Box::pin(describe::show(cx, s)).await,
            Statement::Merge(m) => Box::pin(merge::merge(cx, m, params.as_ref())).await,
            Statement::ExplainMerge(m) => Box::pin(merge::explain(cx, m)).await,
            Statement::Insert(i) => Box::pin(insert::insert(cx, i, params.as_ref())).await,
            Statement::CopyInto(c) => Box::pin(copy_into::copy_into(cx, c, params.as_ref())).await,
            Statement::NoOp(tag) => Ok(Output::Done(fixed(tag))),
            Statement::Atomic { statements, end } => {
                Box::pin(transaction::atomic(cx, statements, *end)).await
            }
            Statement::Accepted(a) => {
                if let Some(table) = &a.table {
                    let name = crate::names::table_name(cx, table)?;
                    let exists =
                        cx.catalog().table_exists(&name).await? || cx.state().has_temp_view(table);
                    if !exists && !a.if_exists {
                        return Err(lakegres_delta::Error::TableNotFound {
                            schema: name.schema,
                            table: name.table,
                        }
                        .into());
                    }
                    if exists && !cx.state().has_temp_view(table) {
                        crate::privileges::require_select(cx, &name)?;
                    }
                }
                if let Some(notice) = a.notice {
                    cx.state().notices.push(crate::session_state::Notice {
                        code: lakegres_delta::SqlState::WARNING,
                        message: notice.to_string(),
                    });
                }
                Ok(Output::Done(fixed(a.tag)))
            }
            Statement::NoRows => Ok(rows_output(
                RecordBatch::new_empty(Arc::new(Schema::empty())),
                CommandTag::Counted("SELECT"),
            )),
            Statement::Grant(g) => Box::pin(crate::statements::grants::grant(cx, g)).await,
            Statement::ShowGrants(s) => {
                Box::pin(crate::statements::grants::show_grants(cx, s)).await
            }
            Statement::List(path) => Box::pin(list::run(cx, path)).await,
            Statement::DescribeHistory(h) => Box::pin(describe::history(cx, h)).await,
            Statement::DescribeDetail(name) => Box::pin(detail::describe_detail(cx, name)).await,
            Statement::Restore(r) => Box::pin(maintenance::restore(cx, r)).await,
            Statement::Optimize(o) => Box::pin(maintenance::optimize(cx, o)).await,
            Statement::Vacuum(v) => Box::pin(maintenance::vacuum(cx, v)).await,
            Statement::Sql(statement) => match SqlKind::of(statement) {
                SqlKind::Query => Box::pin(query::run(cx, statement, params)).await,
                SqlKind::Insert => Box::pin(insert::run_sql(cx, statement, params)).await,
                SqlKind::UpdateDelete => Box::pin(update_delete::run(cx, statement, params)).await,
                SqlKind::Copy => Box::pin(copy::copy(cx, statement)).await,
                SqlKind::CreateSchema => Box::pin(ddl::create_schema(cx, statement)).await,
                SqlKind::Drop => Box::pin(ddl::drop_statement(cx, statement)).await,
                SqlKind::Transaction => Box::pin(transaction::run(cx, statement)).await,
                SqlKind::Cursor => Box::pin(cursor::run(cx, statement)).await,
                SqlKind::Setting => Box::pin(set::run(cx, statement)).await,
                SqlKind::CreateTable => match statement.as_ref() {
                    ast::Statement::CreateTable(create) if create.temporary => {
                        Box::pin(crate::statements::views::create_temporary_table(cx, create)).await
                    }
                    _ => Err(Error::not_supported("this form of CREATE TABLE")),
                },
                SqlKind::CreateView => Err(Error::not_supported("this form of CREATE VIEW")),
            },
        }
    }
}
