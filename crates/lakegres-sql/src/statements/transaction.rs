//! `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`. Every statement is
//! its own Delta commit, so a transaction block only tracks Postgres' block
//! state (what ReadyForQuery reports) and warns that ROLLBACK undoes nothing.

use sqlparser::ast;

use lakegres_delta::SqlState;

use crate::error::{Error, Result};
use crate::output::{fixed, Output};
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
fn require_block(state: &SessionState, statement: &'static str) -> Result<()> {
    if state.transaction == Transaction::Idle {
        return Err(Error::NoActiveTransaction { statement });
    }
    Ok(())
}

/// Runs a transaction-control statement.
pub(crate) fn run(cx: &StatementContext<'_>, statement: &ast::Statement) -> Result<Output> {
    use ast::Statement as S;
    let mut state = cx.state();
    match statement {
        S::StartTransaction { .. } => {
            if state.transaction != Transaction::Idle {
                state.notices.push(Notice {
                    code: SqlState::ACTIVE_SQL_TRANSACTION,
                    message: "there is already a transaction in progress".into(),
                });
                return Ok(Output::TransactionStart(fixed("BEGIN")));
            }
            state.transaction = Transaction::InBlock;
            state.writes_in_block.clear();
            Ok(Output::TransactionStart(fixed("BEGIN")))
        }
        S::Commit { .. } => {
            warn_outside_block(&mut state);
            let tag = if state.transaction == Transaction::Failed {
                "ROLLBACK"
            } else {
                "COMMIT"
            };
            state.transaction = Transaction::Idle;
            state.writes_in_block.clear();
            Ok(Output::TransactionEnd(fixed(tag)))
        }
        // Savepoints mark nothing (each statement is its own commit);
        // ROLLBACK TO one leaves the block open, and usable again.
        S::Savepoint { .. } => {
            require_block(&state, "SAVEPOINT")?;
            Ok(Output::Done(fixed("SAVEPOINT")))
        }
        S::ReleaseSavepoint { .. } => {
            require_block(&state, "RELEASE SAVEPOINT")?;
            Ok(Output::Done(fixed("RELEASE")))
        }
        S::Rollback {
            savepoint: Some(_), ..
        } => {
            require_block(&state, "ROLLBACK TO SAVEPOINT")?;
            if state.transaction == Transaction::Failed {
                state.transaction = Transaction::InBlock;
            }
            Ok(Output::Done(fixed("ROLLBACK")))
        }
        S::Rollback { .. } => {
            warn_outside_block(&mut state);
            state.transaction = Transaction::Idle;
            let writes = std::mem::take(&mut state.writes_in_block);
            if !writes.is_empty() {
                state.notices.push(Notice {
                    code: SqlState::WARNING,
                    message: format!(
                        "ROLLBACK does not undo the {} write(s) of this block, each committed to Delta when it ran: {}",
                        writes.len(),
                        writes
                            .iter()
                            .map(|w| w.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            Ok(Output::TransactionEnd(fixed("ROLLBACK")))
        }
        other => Err(Error::not_supported(format!(
            "{other} as a transaction statement"
        ))),
    }
}
