//! The record of a transaction that changes more than one table or the
//! catalog (issue #59, docs/design/transactions.md §3).
//!
//! Delta commits one table at a time. Before a block's COMMIT changes its
//! first table it writes `_lakegres_transactions/<id>.json` in the
//! warehouse: every step of the commit — each table's net actions on top
//! of the version the block read, each table created (its first commit),
//! dropped or renamed, each view stored, dropped or renamed — and how many
//! are done. Each step is made, then the record says so; the last one
//! deletes the record. A server that starts finds the records a crash
//! left behind and rolls them forward from where they stopped ([`recover`]):
//! a table's commit carries the transaction's id in its `commitInfo`, so a
//! step made but not yet recorded is not made twice. After a crash, then,
//! a transaction is whole on every table, or (crashed before its record
//! was written) on none.
//!
//! Conflicts are checked for every table before the record is written: a
//! block that rewrote a table another commit changed since its read fails
//! with 40001 and applies nothing anywhere.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use deltalake::kernel::Action;
use deltalake::logstore::object_store::{ObjectStoreExt, PutPayload};
use deltalake::{DeltaTable, Path};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

use crate::catalog::{Catalog, StoredView, TableName, ViewWrite};
use crate::commit::committed::{Commit, CommitSink};
use crate::commit::staged::{self, TableChange, TRANSACTION_KEY};
use crate::error::{Error, Result};

/// Where the records are, under the warehouse's root.
const RECORDS: &str = "_lakegres_transactions";

/// A table's or view's name in a record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Name {
    schema: String,
    table: String,
}

impl Name {
    fn of(name: &TableName) -> Self {
        Self {
            schema: name.schema.clone(),
            table: name.table.clone(),
        }
    }

    fn table_name(&self) -> Result<TableName> {
        TableName::new(&self.schema, &self.table)
            .map_err(|e| Error::Internal(format!("a transaction record names {self:?}: {e}")))
    }
}

/// One step of a transaction's commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub(crate) enum Step {
    /// A schema the block created (if no one else did meanwhile).
    CreateSchema {
        schema: String,
    },
    /// The net actions of a table the block read at `base`.
    Commit {
        table: Name,
        base: u64,
        operations: Vec<String>,
        actions: Vec<Action>,
    },
    /// A table the block created: its first commit.
    Create {
        table: Name,
        info: Option<serde_json::Value>,
        actions: Vec<Action>,
    },
    /// A dropped table: its folder goes but for the files at `keep` (a
    /// table the block created there afterwards wrote them).
    Drop {
        table: Name,
        keep: Vec<String>,
    },
    Rename {
        from: Name,
        to: Name,
    },
    StoreView {
        name: Name,
        view: StoredView,
        write: ViewWrite,
    },
    DropView {
        name: Name,
    },
    RenameView {
        from: Name,
        to: Name,
    },
}

impl Step {
    pub(crate) fn commit(table: &TableName, base: u64, change: TableChange) -> Self {
        Step::Commit {
            table: Name::of(table),
            base,
            operations: change.operations,
            actions: change.actions,
        }
    }

    pub(crate) fn create_schema(schema: &str) -> Self {
        Step::CreateSchema {
            schema: schema.to_string(),
        }
    }

    pub(crate) fn create(
        table: &TableName,
        info: Option<serde_json::Value>,
        actions: Vec<Action>,
    ) -> Self {
        Step::Create {
            table: Name::of(table),
            info,
            actions,
        }
    }

    pub(crate) fn drop(table: &TableName, keep: Vec<String>) -> Self {
        Step::Drop {
            table: Name::of(table),
            keep,
        }
    }

    pub(crate) fn rename(from: &TableName, to: &TableName) -> Self {
        Step::Rename {
            from: Name::of(from),
            to: Name::of(to),
        }
    }

    pub(crate) fn store_view(name: &TableName, view: &StoredView, write: ViewWrite) -> Self {
        Step::StoreView {
            name: Name::of(name),
            view: view.clone(),
            write,
        }
    }

    pub(crate) fn drop_view(name: &TableName) -> Self {
        Step::DropView {
            name: Name::of(name),
        }
    }

    pub(crate) fn rename_view(from: &TableName, to: &TableName) -> Self {
        Step::RenameView {
            from: Name::of(from),
            to: Name::of(to),
        }
    }
}

/// A transaction's commit in progress, as the warehouse keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    id: String,
    steps: Vec<Step>,
    /// How many steps are made.
    done: usize,
}

pub(crate) fn record_path(catalog: &Catalog, id: &str) -> Path {
    catalog.path(&[RECORDS, &format!("{id}.json")])
}

/// The `commitInfo` field listing the tables of the transaction a commit
/// belongs to (`schema.table`).
pub(crate) const TABLES_KEY: &str = "lakegresTransactionTables";

/// The multi-table transaction a commit entry belongs to: its id and its
/// tables.
pub(crate) fn made_by(entry: &[u8]) -> Option<crate::catalog::Made> {
    let id = transaction_of(entry)?;
    let text = std::str::from_utf8(entry).ok()?;
    let line = text.lines().find(|l| l.contains(TABLES_KEY))?;
    let action: serde_json::Value = serde_json::from_str(line).ok()?;
    let tables = action
        .get("commitInfo")?
        .get(TABLES_KEY)?
        .as_array()?
        .iter()
        .filter_map(|t| {
            let (schema, table) = t.as_str()?.split_once('.')?;
            TableName::new(schema, table).ok()
        })
        .collect();
    Some(crate::catalog::Made { id, tables })
}

/// The transaction a commit entry names in its `commitInfo`, if any.
pub(crate) fn transaction_of(entry: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(entry).ok()?;
    let key = format!("\"{TRANSACTION_KEY}\":\"");
    let start = text.find(&key)? + key.len();
    let end = text[start..].find('"')? + start;
    Some(text[start..end].to_string())
}

async fn write_record(catalog: &Catalog, record: &Record) -> Result<()> {
    let body = serde_json::to_vec(record)
        .map_err(|e| Error::Internal(format!("writing a transaction record: {e}")))?;
    catalog
        .store()
        .put(&record_path(catalog, &record.id), PutPayload::from(body))
        .await
        .map_err(|source| Error::Storage {
            op: "writing a transaction record",
            source: Box::new(source),
        })?;
    Ok(())
}

/// Makes `steps`, the commit of one transaction. `bases` holds the tables
/// the block read, by the index of their `Commit` step. A single table's
/// commit is atomic by itself and needs no record.
pub(crate) async fn commit(
    catalog: &Catalog,
    committed: &CommitSink,
    steps: Vec<Step>,
    mut bases: HashMap<usize, DeltaTable>,
) -> Result<Vec<Commit>> {
    if let [Step::Commit { .. }] = steps.as_slice() {
        let Some(Step::Commit {
            table,
            operations,
            actions,
            ..
        }) = steps.into_iter().next()
        else {
            return Ok(Vec::new());
        };
        let name = table.table_name()?;
        let Some(base) = bases.remove(&0) else {
            return Err(Error::Internal(format!("{name}: no version read")));
        };
        let change = TableChange {
            operations,
            actions,
        };
        return Ok(change
            .commit(&name, &base, None, committed)
            .await?
            .into_iter()
            .collect());
    }
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    check_conflicts(catalog, &steps).await?;
    let mut record = Record {
        id: uuid::Uuid::new_v4().to_string(),
        steps,
        done: 0,
    };
    write_record(catalog, &record).await?;
    let tables = tables_of(&record.steps);
    let mut commits = Vec::new();
    for at in 0..record.steps.len() {
        let step = record.steps[at].clone();
        let base = bases.remove(&at);
        commits.extend(make(catalog, committed, &record.id, &tables, step, base).await?);
        record.done = at + 1;
        if record.done < record.steps.len() {
            write_record(catalog, &record).await?;
        }
    }
    let _ = catalog
        .store()
        .delete(&record_path(catalog, &record.id))
        .await;
    Ok(commits)
}

/// The tables a transaction's steps commit to, as its commits list them.
fn tables_of(steps: &[Step]) -> Vec<String> {
    steps
        .iter()
        .filter_map(|step| match step {
            Step::Commit { table, .. } | Step::Create { table, .. } => {
                Some(format!("{}.{}", table.schema, table.table))
            }
            _ => None,
        })
        .collect()
}

/// 40001 before anything is written when a table the block rewrote (not
/// only appended to) has a newer version than the one it read.
async fn check_conflicts(catalog: &Catalog, steps: &[Step]) -> Result<()> {
    for step in steps {
        let Step::Commit {
            table,
            base,
            actions,
            ..
        } = step
        else {
            continue;
        };
        if staged::blind_append(actions) {
            continue;
        }
        let name = table.table_name()?;
        let latest = catalog.load_latest(&name).await?.version().unwrap_or(0);
        if latest != *base {
            return Err(Error::TransactionConflict {
                table: name.to_string(),
                read: *base,
                latest,
            });
        }
    }
    Ok(())
}

/// Makes one step. `base` is the table the block read, for its commit;
/// `None` when rolling forward, where the step may have been made already.
async fn make(
    catalog: &Catalog,
    committed: &CommitSink,
    id: &str,
    tables: &[String],
    step: Step,
    base: Option<DeltaTable>,
) -> Result<Option<Commit>> {
    let recovering = base.is_none();
    match step {
        Step::CreateSchema { schema } => {
            catalog.create_schema(&schema, true).await?;
            Ok(None)
        }
        Step::Commit {
            table,
            base: version,
            operations,
            actions,
        } => {
            let name = table.table_name()?;
            let base = match base {
                Some(base) => base,
                None => {
                    let latest = catalog.load_latest(&name).await?;
                    if made_since(&latest, version, id).await? {
                        return Ok(None);
                    }
                    let mut at = latest;
                    at.load_version(version)
                        .await
                        .map_err(|e| Error::delta("rolling forward", name.to_string(), e))?;
                    at
                }
            };
            let change = TableChange {
                operations,
                actions,
            };
            change
                .commit(&name, &base, Some((id, tables)), committed)
                .await
        }
        Step::Create {
            table,
            info,
            actions,
        } => {
            let name = table.table_name()?;
            staged::create_table(catalog, &name, info, &actions, id).await?;
            catalog.note_table(&name);
            Ok(None)
        }
        Step::Drop { table, keep } => {
            let keep: HashSet<String> = keep.into_iter().collect();
            catalog
                .drop_table_keeping(&table.table_name()?, &keep)
                .await?;
            Ok(None)
        }
        Step::Rename { from, to } => {
            let (from, to) = (from.table_name()?, to.table_name()?);
            let done = recovering
                && !catalog.table_exists(&from).await?
                && catalog.table_exists(&to).await?;
            if !done {
                catalog.rename_table(&from, &to).await?;
            }
            Ok(None)
        }
        Step::StoreView { name, view, write } => {
            let write = if recovering {
                ViewWrite::CreateOrReplace
            } else {
                write
            };
            catalog
                .create_view(&name.table_name()?, &view, write)
                .await?;
            Ok(None)
        }
        Step::DropView { name } => {
            catalog.drop_view(&name.table_name()?).await?;
            Ok(None)
        }
        Step::RenameView { from, to } => {
            let (from, to) = (from.table_name()?, to.table_name()?);
            let done = recovering
                && catalog.view(&from).await?.is_none()
                && catalog.view(&to).await?.is_some();
            if !done {
                catalog.rename_view(&from, &to).await?;
            }
            Ok(None)
        }
    }
}

/// Whether a version of `table` after `base` belongs to the transaction
/// `id`.
async fn made_since(table: &DeltaTable, base: u64, id: &str) -> Result<bool> {
    let Some(latest) = table.version() else {
        return Ok(false);
    };
    for version in base + 1..=latest {
        let entry = table
            .log_store()
            .read_commit_entry(version)
            .await
            .map_err(|e| Error::delta("rolling forward", "a table".to_string(), e))?;
        if entry.is_some_and(|bytes| transaction_of(&bytes).as_deref() == Some(id)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Rolls forward every transaction a crash left half made (see the
/// module's comment); run when a server starts. A record that cannot be
/// rolled forward stays, and is reported.
pub async fn recover(catalog: &Arc<Catalog>) -> Result<usize> {
    let store = catalog.store();
    let listed: Vec<_> = store
        .list(Some(&catalog.path(&[RECORDS])))
        .try_collect()
        .await
        .map_err(|source| Error::Storage {
            op: "listing transaction records",
            source: Box::new(source),
        })?;
    let committed = CommitSink::new(Arc::clone(catalog));
    let mut recovered = 0;
    for meta in listed {
        let bytes = store
            .get(&meta.location)
            .await
            .map_err(|source| Error::Storage {
                op: "reading a transaction record",
                source: Box::new(source),
            })?
            .bytes()
            .await
            .map_err(|source| Error::Storage {
                op: "reading a transaction record",
                source: Box::new(source),
            })?;
        let mut record: Record = match serde_json::from_slice(&bytes) {
            Ok(record) => record,
            Err(e) => {
                tracing::error!(record = %meta.location, error = %e, "an unreadable transaction record");
                continue;
            }
        };
        match roll_forward(catalog, &committed, &mut record).await {
            Ok(()) => {
                let _ = store.delete(&meta.location).await;
                tracing::info!(transaction = %record.id, steps = record.steps.len(), "rolled a transaction forward");
                recovered += 1;
            }
            // The server serves all the same; the record is tried again at
            // the next start.
            Err(e) => tracing::error!(
                transaction = %record.id,
                step = record.done,
                error = %e,
                "a transaction could not be rolled forward"
            ),
        }
    }
    Ok(recovered)
}

/// Makes the steps of `record` not yet done.
async fn roll_forward(
    catalog: &Catalog,
    committed: &CommitSink,
    record: &mut Record,
) -> Result<()> {
    let tables = tables_of(&record.steps);
    for at in record.done..record.steps.len() {
        let step = record.steps[at].clone();
        make(catalog, committed, &record.id, &tables, step, None).await?;
        record.done = at + 1;
        write_record(catalog, record).await?;
    }
    Ok(())
}
