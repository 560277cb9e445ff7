//! `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`. Every statement is
//! its own Delta commit, so a transaction block only tracks Postgres' block
//! state (what ReadyForQuery reports) and warns that ROLLBACK undoes nothing.

use sqlparser::ast;

use crate::error::{Error, Result};
use crate::output::{fixed, Output};
use crate::session_state::Transaction;
use crate::statement_context::StatementContext;

/// Runs a transaction-control statement.
pub(crate) fn run(cx: &StatementContext<'_>, statement: &ast::Statement) -> Result<Output> {
    use ast::Statement as S;
    let mut state = cx.state();
    match statement {
        S::StartTransaction { .. } => {
            state.transaction = Transaction::InBlock;
            state.writes_in_block.clear();
            Ok(Output::TransactionStart(fixed("BEGIN")))
        }
        S::Commit { .. } => {
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
        S::Savepoint { .. } => Ok(Output::Done(fixed("SAVEPOINT"))),
        S::ReleaseSavepoint { .. } => Ok(Output::Done(fixed("RELEASE"))),
        S::Rollback {
            savepoint: Some(_), ..
        } => {
            if state.transaction == Transaction::Failed {
                state.transaction = Transaction::InBlock;
            }
            Ok(Output::Done(fixed("ROLLBACK")))
        }
        S::Rollback { .. } => {
            state.transaction = Transaction::Idle;
            let writes = std::mem::take(&mut state.writes_in_block);
            if !writes.is_empty() {
                state.notices.push(format!(
                    "ROLLBACK does not undo the {} write(s) of this block, each committed to Delta when it ran: {}",
                    writes.len(),
                    writes
                        .iter()
                        .map(|w| w.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            Ok(Output::TransactionEnd(fixed("ROLLBACK")))
        }
        other => Err(Error::not_supported(format!(
            "{other} as a transaction statement"
        ))),
    }
}
