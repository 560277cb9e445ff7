//! `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`, `ROLLBACK TO`.
//!
//! A block opens a transaction in the session's commit sink: its statements
//! read each table as of their first read of it and stage their writes
//! (`lakegres_delta::Transaction`); COMMIT makes them one version per
//! table, ROLLBACK drops them. The block state (what ReadyForQuery reports)
//! lives in the session state.

use sqlparser::ast;

use lakegres_delta::SqlState;

use crate::error::{Error, Result};
use crate::output::{fixed, Output};
use crate::parser::Statement;
use crate::session_state::{Notice, SessionState, Transaction};
use crate::statement_context::StatementContext;

/// COMMIT or ROLLBACK outside a block: a warning, as Postgres gives
/// (Databricks' COMMIT raises NO_ACTIVE_TRANSACTION; a driver's ROLLBACK of
/// an idle connection must not fail, so both warn).
fn warn_outside_block(state: &mut SessionState) {
    if state.transaction == Transaction::Idle {
        state.notices.push(Notice {
            code: SqlState::NO_ACTIVE_SQL_TRANSACTION,
            message: "[NO_ACTIVE_TRANSACTION] there is no transaction in progress".into(),
        });
    }
}

/// SAVEPOINT, RELEASE and ROLLBACK TO need a block (25P01, as in Postgres).
fn require_block(cx: &StatementContext<'_>, statement: &'static str) -> Result<()> {
    if cx.transaction() == Transaction::Idle {
        return Err(Error::NoActiveTransaction { statement });
    }
    Ok(())
}

/// Opens a block: the session's statements run in one transaction until
/// COMMIT or ROLLBACK.
pub(crate) fn begin(cx: &StatementContext<'_>) -> Output {
    let mut state = cx.state();
    if state.transaction != Transaction::Idle {
        state.notices.push(Notice {
            code: SqlState::ACTIVE_SQL_TRANSACTION,
            message: "there is already a transaction in progress".into(),
        });
        return Output::TransactionStart(fixed("BEGIN"));
    }
    state.transaction = Transaction::InBlock;
    drop(state);
    cx.committed().begin_transaction();
    Output::TransactionStart(fixed("BEGIN"))
}

/// Ends the block: COMMIT applies what it staged (a failed block rolls
/// back, as Postgres' COMMIT of one does); ROLLBACK drops it.
pub(crate) async fn end(cx: &StatementContext<'_>, commit: bool) -> Result<Output> {
    let was = {
        let mut state = cx.state();
        warn_outside_block(&mut state);
        std::mem::replace(&mut state.transaction, Transaction::Idle)
    };
    if commit && was == Transaction::InBlock {
        // A COMMIT that fails ends the block too, applying nothing.
        if let Err(e) = cx.committed().commit_transaction().await {
            crate::privileges::undo_in_block(cx).await?;
            return Err(e.into());
        }
        cx.state().grants_before_block.clear();
        return Ok(Output::TransactionEnd(fixed("COMMIT")));
    }
    cx.committed().rollback_transaction();
    crate::privileges::undo_in_block(cx).await?;
    let tag = if commit && was == Transaction::Idle {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    Ok(Output::TransactionEnd(fixed(tag)))
}

/// `BEGIN ATOMIC stmt; … END`: the statements in one transaction, committed
/// when the last succeeds and rolled back at the first that fails (inside
/// an open block they are part of it). Without `end` (psql sends `BEGIN
/// ATOMIC stmt;`, each statement and `END;` apart), the block stays open as
/// any block does: a statement that fails aborts it, and END — COMMIT —
/// then rolls it back.
pub(crate) async fn atomic(
    cx: &StatementContext<'_>,
    statements: &[Statement],
    end_block: bool,
) -> Result<Output> {
    let opened = cx.transaction() == Transaction::Idle;
    if opened {
        begin(cx);
    }
    for statement in statements {
        let ran = match cx.nested.execute(statement, None).await {
            // A query's rows are computed (and dropped): its failure fails
            // the block.
            Ok(Output::Rows { stream, .. }) => futures::TryStreamExt::try_collect::<Vec<_>>(stream)
                .await
                .map(|_| ())
                .map_err(Error::from),
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = ran {
            if opened && end_block {
                end(cx, false).await?;
                cx.state().notices.clear();
            }
            return Err(e);
        }
    }
    if !(opened && end_block) {
        return Ok(Output::TransactionStart(fixed("BEGIN")));
    }
    end(cx, true).await?;
    Ok(Output::TransactionEnd(fixed("COMMIT")))
}

/// ROLLBACK TO (`undo`) or RELEASE the savepoint `name`; 3B001 when the
/// block has none of that name.
async fn to_savepoint(cx: &StatementContext<'_>, name: &str, undo: bool) -> Result<()> {
    let found = match cx.committed().open_transaction() {
        Some(transaction) if undo => transaction.rollback_to(name).await,
        Some(transaction) => transaction.release(name).await,
        None => false,
    };
    if !found {
        return Err(Error::NoSuchSavepoint {
            name: name.to_string(),
        });
    }
    Ok(())
}

/// Runs a transaction-control statement.
pub(crate) async fn run(cx: &StatementContext<'_>, statement: &ast::Statement) -> Result<Output> {
    use ast::Statement as S;
    match statement {
        S::StartTransaction { .. } => Ok(begin(cx)),
        S::Commit { .. } => end(cx, true).await,
        S::Rollback {
            savepoint: None, ..
        } => end(cx, false).await,
        S::Savepoint { name } => {
            require_block(cx, "SAVEPOINT")?;
            if let Some(transaction) = cx.committed().open_transaction() {
                transaction.savepoint(&name.value).await?;
            }
            Ok(Output::Done(fixed("SAVEPOINT")))
        }
        S::ReleaseSavepoint { name } => {
            require_block(cx, "RELEASE SAVEPOINT")?;
            to_savepoint(cx, &name.value, false).await?;
            Ok(Output::Done(fixed("RELEASE")))
        }
        // Undoes what the block staged since the savepoint; a failed block
        // is usable again.
        S::Rollback {
            savepoint: Some(name),
            ..
        } => {
            require_block(cx, "ROLLBACK TO SAVEPOINT")?;
            to_savepoint(cx, &name.value, true).await?;
            let mut state = cx.state();
            if state.transaction == Transaction::Failed {
                state.transaction = Transaction::InBlock;
            }
            Ok(Output::Done(fixed("ROLLBACK")))
        }
        other => Err(Error::not_supported(format!(
            "{other} as a transaction statement"
        ))),
    }
}
