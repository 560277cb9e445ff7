//! The path of one statement through a session: the failed-transaction
//! check, `statement_timeout`, `pg_stat_activity`, privileges, the
//! statement itself, metrics, and after a write its audit line, the table's
//! hand-back to the catalog's cache and its checkpoint.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ParamValues;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use futures::{Stream, StreamExt};
use lakegres_delta::{Commit, TableName};

use crate::cursors::{timed_out, Deadline};
use crate::error::{Error, Result};
use crate::info::{SessionEffect, Write};
use crate::output::{CommandTag, Description, Output};
use crate::parser::Statement;
use crate::session::Session;
use crate::session_state::{lock_state, SessionState, Transaction};
use crate::statement_context::StatementContext;

impl Session {
    /// Runs one statement.
    pub async fn execute(
        &self,
        statement: &Statement,
        params: Option<ParamValues>,
    ) -> Result<Output> {
        self.execute_as(statement, params, None).await
    }

    /// Runs one statement whose text ([`Statement::text`]) the caller kept,
    /// as a prepared statement does: rendering it again for each execution
    /// cost a point lookup a thirtieth of its time.
    pub async fn execute_as(
        &self,
        statement: &Statement,
        params: Option<ParamValues>,
        text: Option<&str>,
    ) -> Result<Output> {
        let cx = self.statement_context();
        // The steps only some statements need are boxed, and entered only
        // for them: each holds the future of a catalog or log read, tens of
        // kilobytes, that this future would otherwise reserve room for, and
        // every layer above it (task-local user, timeout, cancel, the
        // protocol handler's box) copies that room whole for every
        // statement, `SELECT 1` included.
        if matches!(statement, Statement::AlterTable(_)) {
            let rename = Box::pin(crate::statements::views::alter_table_as_view(
                &cx, statement,
            ))
            .await?;
            if let Some(rename) = rename {
                return Box::pin(self.execute(&rename, params)).await;
            }
        }
        // A session's temporary table takes INSERTs in memory; no grant is
        // needed for one's own temporary objects.
        if statement.is_sql_insert() {
            let temporary = Box::pin(crate::statements::views::insert_into_temporary_table(
                &cx, statement, &params,
            ))
            .await?;
            if let Some(output) = temporary {
                return Ok(output);
            }
        }
        cx.committed().new_statement();
        let info = statement.info();
        if info.session == SessionEffect::Changes {
            cx.constant_plans().clear();
        }
        match cx.transaction() {
            Transaction::Failed if !info.ends_block => return Err(Error::InFailedTransaction),
            Transaction::InBlock => {
                if let Some(command) = statement.refused_in_block() {
                    return Err(Error::NotInTransaction { command });
                }
            }
            _ => {}
        }
        let timeout = statement_timeout(&cx);
        let running = cx
            .interrupt
            .start(timeout.map(|t| std::time::Instant::now() + t));
        let text = match text {
            Some(text) => text.to_string(),
            None => info.text.render(),
        };
        let kind = crate::metrics::kind_of(&text);
        // A query whose result the session keeps (`SELECT 1`, a pool's
        // validation query) is found by its text, before anything walks
        // its syntax tree.
        let kept = match (&params, statement) {
            (None, Statement::Sql(_)) => cx.constant_plans().get(&text),
            _ => None,
        };
        cx.engine().activity().update(cx.pid(), |a| {
            a.state = "active";
            a.query = text;
            a.query_start_ms = Some(crate::activity::now_ms());
        });
        let started = tokio::time::Instant::now();
        if let (Some(target), Some(write)) = (&info.target, info.write) {
            if write.needs_a_table()
                && Box::pin(crate::resolve::views::is_any_view(&cx, target)).await?
            {
                return Err(Error::analysis(
                    crate::error::class::EXPECT_TABLE_NOT_VIEW,
                    format!("{target} is a view: a write needs a table"),
                ));
            }
        }
        let enforced = cx.principal().grants().enforced();
        let run = lakegres_delta::as_user(cx.principal().user(), async {
            let authorized = if enforced {
                Box::pin(crate::privileges::authorize(&cx, &info.needs)).await?
            } else {
                Default::default()
            };
            let output = match kept {
                Some(kept) => Output::Rows {
                    stream: kept.execute()?,
                    tag: CommandTag::Counted("SELECT"),
                },
                None => statement.run(&cx, params).await?,
            };
            if enforced {
                Box::pin(crate::privileges::after(&cx, info.objects, authorized)).await?;
            }
            Ok(output)
        });
        let result = match timeout {
            Some(limit) => tokio::time::timeout(limit, run)
                .await
                .unwrap_or_else(|_| Err(timed_out())),
            None => run.await,
        };
        let result = match (result, timeout) {
            (Ok(Output::Rows { stream, tag }), Some(limit)) => Ok(Output::Rows {
                stream: Box::pin(Deadline::new(stream, started + limit)),
                tag,
            }),
            (other, _) => other,
        };
        let result = match result {
            Ok(Output::Rows { stream, tag }) => Ok(Output::Rows {
                stream: Box::pin(FailsBlock {
                    inner: stream,
                    state: Arc::clone(cx.state),
                }),
                tag,
            }),
            other => other,
        };
        let result = match result {
            Ok(Output::Rows {
                tag: CommandTag::Fixed(tag),
                ..
            }) if info.dml && !cx.dml_result_rows() => Ok(Output::Done(CommandTag::Fixed(tag))),
            other => other,
        };
        drop(running);
        // What the statement committed, also when it failed afterwards: a
        // write outside a block, or a block's COMMIT (a write inside a
        // block stages, and commits nothing yet).
        let commits = cx.committed().drain();
        let in_block = cx.transaction() != Transaction::Idle;
        cx.engine().metrics().record(
            &kind,
            result.as_ref().err().map(Error::sqlstate),
            !commits.is_empty() || (info.write.is_some() && !in_block),
            started.elapsed(),
        );
        let idle = if in_block {
            "idle in transaction"
        } else {
            "idle"
        };
        cx.engine().activity().update(cx.pid(), |a| a.state = idle);
        match &result {
            Err(_) => {
                cx.state().fail_block();
                if !commits.is_empty() {
                    record_write(&cx, "failed statement", None, &commits);
                }
            }
            Ok(Output::CopyIn(_)) => {}
            Ok(_) => match info.write {
                Some(kind) => {
                    let table = info
                        .target
                        .as_ref()
                        .and_then(|name| crate::names::table_name(&cx, name).ok());
                    after_write(&cx, kind, table.as_ref(), &commits);
                }
                // A block's COMMIT: a line per table, naming the block's
                // statements on it.
                None if !commits.is_empty() => record_write(&cx, "COMMIT", None, &commits),
                None => {}
            },
        }
        result
    }

    /// CopyDone of a COPY FROM STDIN: the last rows, then the commit,
    /// recorded as every write is (audit line, metrics, the transaction
    /// block); a failure fails an open block. Returns the rows written.
    pub async fn finish_copy(&self, copy: Box<crate::CopyIn>) -> Result<u64> {
        let cx = self.statement_context();
        let table = copy.table().clone();
        let result = copy.finish().await;
        let commits = cx.committed().drain();
        match &result {
            Ok(_) => after_write(&cx, Write::Copy, Some(&table), &commits),
            Err(_) => cx.state().fail_block(),
        }
        result
    }

    /// Describes a statement for the extended protocol without running it.
    /// Planning a statement may read its tables, so `statement_timeout`
    /// bounds it too, as Postgres' covers Parse and Bind.
    pub async fn describe(&self, statement: &Statement) -> Result<Description> {
        let cx = self.statement_context();
        // Describing needs the columns of a block's tables, not their
        // pending rows (a driver describes every INSERT of a loop).
        let transaction = cx.committed().open_transaction();
        if let Some(t) = &transaction {
            t.set_describing(true);
        }
        let describe = statement.describe(&cx);
        let described = match statement_timeout(&cx) {
            Some(limit) => tokio::time::timeout(limit, describe)
                .await
                .unwrap_or_else(|_| Err(timed_out())),
            None => describe.await,
        };
        if let Some(t) = &transaction {
            t.set_describing(false);
        }
        let mut description = described?;
        if statement.info().dml && !cx.dml_result_rows() {
            description.schema = None;
        }
        Ok(description)
    }
}

/// After a write: its audit line and metrics ([`record_write`]).
fn after_write(
    cx: &StatementContext<'_>,
    kind: Write,
    table: Option<&TableName>,
    commits: &[Commit],
) {
    record_write(cx, kind.name(), table, commits);
}

/// A write's audit lines — user, kind, and for each commit the statement
/// made (the records its commit sink received) the table, the version, the
/// data files and bytes it added and how many statements that commit holds
/// — and the files and bytes written in the metrics. A write without a
/// commit (DROP, CREATE SCHEMA, one that changed nothing) logs its target
/// and no version.
fn record_write(
    cx: &StatementContext<'_>,
    kind: &str,
    table: Option<&TableName>,
    commits: &[Commit],
) {
    let user = cx.state().user.clone();
    if commits.is_empty() {
        match table {
            Some(table) => {
                tracing::info!(target: "lakegres::audit", user, kind, table = %table, version = None::<u64>, files_added = 0, bytes_added = 0, statements_in_commit = 0, "write")
            }
            None => tracing::info!(target: "lakegres::audit", user, kind, "write"),
        }
        return;
    }
    for commit in commits {
        cx.engine()
            .metrics()
            .written(commit.files_added, commit.bytes_added);
        tracing::info!(
            target: "lakegres::audit",
            user,
            kind,
            table = %commit.table,
            version = Some(commit.version),
            files_added = commit.files_added,
            bytes_added = commit.bytes_added,
            statements_in_commit = commit.statements_in_commit,
            statements = commit.statements.join(", "),
            "write"
        );
    }
}

/// `statement_timeout`, when set (0 is none).
fn statement_timeout(cx: &StatementContext<'_>) -> Option<std::time::Duration> {
    cx.state().settings.timeouts().statement
}

impl crate::statement_context::Nested for Session {
    fn execute<'a>(
        &'a self,
        statement: &'a Statement,
        params: Option<ParamValues>,
    ) -> futures::future::BoxFuture<'a, Result<Output>> {
        Box::pin(Session::execute(self, statement, params))
    }

    fn describe<'a>(
        &'a self,
        statement: &'a Statement,
    ) -> futures::future::BoxFuture<'a, Result<Description>> {
        Box::pin(Session::describe(self, statement))
    }
}

/// A statement's rows: a row that fails — an error while they stream, the
/// statement's timeout — fails the session's open transaction block, as the
/// statement's own error would have.
struct FailsBlock {
    inner: SendableRecordBatchStream,
    state: Arc<Mutex<SessionState>>,
}

impl Stream for FailsBlock {
    type Item = datafusion::error::Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        if let Poll::Ready(Some(Err(_))) = &next {
            lock_state(&self.state).fail_block();
        }
        next
    }
}

impl RecordBatchStream for FailsBlock {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}
