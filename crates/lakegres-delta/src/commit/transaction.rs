//! A session's transaction block (issue #59, docs/design/transactions.md):
//! the tables it read and wrote, staged (`crate::commit::staged`), and the
//! catalog changes it made — tables created, dropped and renamed, views
//! stored, dropped and renamed — seen by the block alone until COMMIT
//! applies them, in the order the block made them.

use std::collections::{BTreeSet, HashMap};

use crate::catalog::{Catalog, StoredView, TableName, ViewWrite};
use crate::commit::committed::{Commit, CommitSink};
use crate::commit::staged::{Kept, Staged};
use crate::commit::transaction_record::{self, Step};
use crate::error::{Error, Result};

/// A catalog change a block made, applied at COMMIT.
#[derive(Clone, Debug)]
enum Change {
    CreateSchema(String),
    CreateTable(TableName),
    DropTable(TableName),
    RenameTable(TableName, TableName),
    StoreView(TableName, StoredView, ViewWrite),
    DropView(TableName),
    RenameView(TableName, TableName),
}

/// The names a block changed, over the catalog's.
#[derive(Clone, Debug, Default)]
struct Names {
    /// Catalog tables and views the block dropped or renamed away.
    gone: BTreeSet<TableName>,
    /// Tables the block created or renamed to.
    tables: BTreeSet<TableName>,
    /// Views the block stored or renamed to.
    views: HashMap<TableName, StoredView>,
    /// Schemas the block created.
    schemas: BTreeSet<String>,
    changes: Vec<Change>,
}

/// What a block had when a savepoint was set.
struct Savepoint {
    name: String,
    tables: HashMap<TableName, (Staged, Kept)>,
    names: Names,
}

#[derive(Default)]
struct Block {
    /// By the name the block knows them by.
    tables: HashMap<TableName, Staged>,
    names: Names,
    /// Oldest first.
    savepoints: Vec<Savepoint>,
}

/// A transaction block: what it staged, until [`Transaction::commit`].
#[derive(Default)]
pub struct Transaction {
    block: tokio::sync::Mutex<Block>,
    /// A statement is being described (the extended protocol's Parse and
    /// Describe): its tables' columns are asked for, not their rows, so
    /// rows appended in the block stay pending.
    describing: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction").finish_non_exhaustive()
    }
}

fn not_found(name: &TableName) -> Error {
    Error::TableNotFound {
        schema: name.schema.clone(),
        table: name.table.clone(),
    }
}

impl Transaction {
    pub fn new() -> Self {
        Self::default()
    }

    /// `name` as this transaction sees it: the version it first read with
    /// the transaction's own commits over it. Writes through the handle
    /// (with the session's [`CommitSink`] in a transaction) stage their
    /// commits here.
    pub async fn table(&self, catalog: &Catalog, name: &TableName) -> Result<crate::Table> {
        self.table_read(catalog, name, None).await
    }

    /// [`Self::table`] for a block that has read `reads` so far: a table it
    /// reads first is read at a version consistent with them.
    pub(crate) async fn table_read(
        &self,
        catalog: &Catalog,
        name: &TableName,
        reads: Option<&crate::Reads>,
    ) -> Result<crate::Table> {
        let mut block = self.block.lock().await;
        if let Some(staged) = block.tables.get_mut(name) {
            if self.describing.load(std::sync::atomic::Ordering::Relaxed) {
                return staged.caught_up(name).await;
            }
            return staged.refreshed(name).await;
        }
        if block.names.gone.contains(name) {
            return Err(not_found(name));
        }
        let base = catalog.load_read(name, reads).await?;
        let staged = Staged::new(catalog, name, Some(base))?;
        let handle = crate::Table::new(staged.table.clone());
        block.tables.insert(name.clone(), staged);
        Ok(handle)
    }

    /// Marks whether a statement is being described (see the field).
    pub fn set_describing(&self, describing: bool) {
        self.describing
            .store(describing, std::sync::atomic::Ordering::Relaxed);
    }

    /// [`Self::table`] for an append of plain rows ([`Self::append`]):
    /// rows appended before are not written for it.
    pub async fn table_to_append(
        &self,
        catalog: &Catalog,
        name: &TableName,
    ) -> Result<crate::Table> {
        let mut block = self.block.lock().await;
        if let Some(staged) = block.tables.get_mut(name) {
            return staged.caught_up(name).await;
        }
        drop(block);
        self.table(catalog, name).await
    }

    /// Appends `batch` (the table's columns, of its types) to `name`, which
    /// the block has read: kept in memory and written with the block's next
    /// write of the table (many INSERTs, one file).
    pub(crate) async fn append(
        &self,
        name: &TableName,
        batch: datafusion::arrow::record_batch::RecordBatch,
    ) -> Result<()> {
        let mut block = self.block.lock().await;
        match block.tables.get_mut(name) {
            Some(staged) => staged.append(name, batch).await,
            None => Err(not_found(name)),
        }
    }

    /// Writes every table's pending rows.
    async fn flush(block: &mut Block) -> Result<()> {
        for (name, staged) in block.tables.iter_mut() {
            staged.flush(name).await?;
        }
        Ok(())
    }

    /// A handle on `name`'s place for CREATE: its first commit is staged.
    pub async fn new_table(&self, catalog: &Catalog, name: &TableName) -> Result<crate::Table> {
        let mut block = self.block.lock().await;
        let staged = Staged::new(catalog, name, None)?;
        let handle = crate::Table::new(staged.table.clone());
        block.tables.insert(name.clone(), staged);
        block.names.tables.insert(name.clone());
        block.names.changes.push(Change::CreateTable(name.clone()));
        Ok(handle)
    }

    /// Whether `schema` exists for the block.
    pub async fn schema_exists(&self, catalog: &Catalog, schema: &str) -> Result<bool> {
        if self.block.lock().await.names.schemas.contains(schema) {
            return Ok(true);
        }
        catalog.schema_exists(schema).await
    }

    /// Whether `schema` exists for the block, by the cached listing.
    pub fn cached_schema_exists(&self, catalog: &Catalog, schema: &str) -> bool {
        let created = self
            .block
            .try_lock()
            .is_ok_and(|b| b.names.schemas.contains(schema));
        created || catalog.cached_schema_exists(schema)
    }

    /// Creates `schema` at COMMIT (dbt creates its schema inside a block);
    /// the block sees it now.
    pub async fn create_schema(
        &self,
        catalog: &Catalog,
        schema: &str,
        if_not_exists: bool,
    ) -> Result<()> {
        let schema = crate::catalog::normalize_schema(schema)?;
        if self.schema_exists(catalog, &schema).await? {
            return if if_not_exists {
                Ok(())
            } else {
                Err(Error::SchemaExists { schema })
            };
        }
        let mut block = self.block.lock().await;
        block.names.schemas.insert(schema.clone());
        block.names.changes.push(Change::CreateSchema(schema));
        Ok(())
    }

    /// Whether `name` is a table for the block.
    pub async fn table_exists(&self, catalog: &Catalog, name: &TableName) -> Result<bool> {
        let block = self.block.lock().await;
        if block.tables.contains_key(name) || block.names.tables.contains(name) {
            return Ok(true);
        }
        if block.names.gone.contains(name) || block.names.views.contains_key(name) {
            return Ok(false);
        }
        catalog.table_exists(name).await
    }

    /// The view `name` is for the block.
    pub async fn view(&self, catalog: &Catalog, name: &TableName) -> Result<Option<StoredView>> {
        let block = self.block.lock().await;
        if let Some(view) = block.names.views.get(name) {
            return Ok(Some(view.clone()));
        }
        if block.names.gone.contains(name) || block.names.tables.contains(name) {
            return Ok(None);
        }
        catalog.view(name).await
    }

    /// Drops the table `name` at COMMIT; the block sees it gone now.
    pub async fn drop_table(&self, catalog: &Catalog, name: &TableName) -> Result<()> {
        if !self.table_exists(catalog, name).await? {
            return Err(not_found(name));
        }
        let mut block = self.block.lock().await;
        block.tables.remove(name);
        block.names.tables.remove(name);
        block.names.gone.insert(name.clone());
        block.names.changes.push(Change::DropTable(name.clone()));
        Ok(())
    }

    /// Renames the table `from` to `to` at COMMIT; the block sees the new
    /// name now, with what it staged under the old one.
    pub async fn rename_table(
        &self,
        catalog: &Catalog,
        from: &TableName,
        to: &TableName,
    ) -> Result<()> {
        if catalog.local_root().is_none() {
            return Err(Error::RenameNotSupported {
                table: from.to_string(),
            });
        }
        // Staged under its old name first: the block reads it as it was.
        self.table(catalog, from).await?;
        if !self.schema_exists(catalog, &to.schema).await? {
            return Err(Error::SchemaNotFound {
                schema: to.schema.clone(),
            });
        }
        if self.table_exists(catalog, to).await? || self.view(catalog, to).await?.is_some() {
            return Err(Error::TableExists {
                schema: to.schema.clone(),
                table: to.table.clone(),
            });
        }
        let mut block = self.block.lock().await;
        let Some(staged) = block.tables.remove(from) else {
            return Err(not_found(from));
        };
        block.tables.insert(to.clone(), staged);
        block.names.tables.remove(from);
        block.names.gone.insert(from.clone());
        block.names.tables.insert(to.clone());
        block
            .names
            .changes
            .push(Change::RenameTable(from.clone(), to.clone()));
        Ok(())
    }

    /// Stores the view `name` at COMMIT (as [`Catalog::create_view`] does
    /// with `write`), checked against what the block sees now.
    pub async fn store_view(
        &self,
        catalog: &Catalog,
        name: &TableName,
        view: &StoredView,
        write: ViewWrite,
    ) -> Result<()> {
        let table = self.table_exists(catalog, name).await?;
        let existing = self.view(catalog, name).await?;
        match write {
            ViewWrite::Create | ViewWrite::CreateOrReplace if table => {
                return Err(Error::TableExists {
                    schema: name.schema.clone(),
                    table: name.table.clone(),
                })
            }
            ViewWrite::Create if existing.is_some() => {
                return Err(Error::TableExists {
                    schema: name.schema.clone(),
                    table: name.table.clone(),
                })
            }
            ViewWrite::Alter if existing.is_none() => return Err(not_found(name)),
            _ => {}
        }
        let mut block = self.block.lock().await;
        block.names.views.insert(name.clone(), view.clone());
        block
            .names
            .changes
            .push(Change::StoreView(name.clone(), view.clone(), write));
        Ok(())
    }

    /// Drops the view `name` at COMMIT; whether there was one.
    pub async fn drop_view(&self, catalog: &Catalog, name: &TableName) -> Result<bool> {
        if self.view(catalog, name).await?.is_none() {
            return Ok(false);
        }
        let mut block = self.block.lock().await;
        block.names.views.remove(name);
        block.names.gone.insert(name.clone());
        block.names.changes.push(Change::DropView(name.clone()));
        Ok(true)
    }

    /// Renames the view `from` to `to` at COMMIT.
    pub async fn rename_view(
        &self,
        catalog: &Catalog,
        from: &TableName,
        to: &TableName,
    ) -> Result<()> {
        let Some(view) = self.view(catalog, from).await? else {
            return Err(not_found(from));
        };
        if self.table_exists(catalog, to).await? || self.view(catalog, to).await?.is_some() {
            return Err(Error::TableExists {
                schema: to.schema.clone(),
                table: to.table.clone(),
            });
        }
        let mut block = self.block.lock().await;
        block.names.views.remove(from);
        block.names.gone.insert(from.clone());
        block.names.views.insert(to.clone(), view);
        block
            .names
            .changes
            .push(Change::RenameView(from.clone(), to.clone()));
        Ok(())
    }

    /// The names of `schema`'s tables and views as the block sees them,
    /// over the catalog's listing of `tables` and `views`.
    pub fn listed(&self, schema: &str, tables: Vec<String>, views: Vec<String>) -> Listed {
        let Ok(block) = self.block.try_lock() else {
            return Listed { tables, views };
        };
        let names = &block.names;
        let gone = |n: &String| {
            names.gone.contains(&TableName {
                schema: schema.to_string(),
                table: n.clone(),
            })
        };
        let mut tables: BTreeSet<String> = tables.into_iter().filter(|n| !gone(n)).collect();
        let mut views: BTreeSet<String> = views.into_iter().filter(|n| !gone(n)).collect();
        tables.extend(
            names
                .tables
                .iter()
                .filter(|n| n.schema == schema)
                .map(|n| n.table.clone()),
        );
        views.extend(
            names
                .views
                .keys()
                .filter(|n| n.schema == schema)
                .map(|n| n.table.clone()),
        );
        Listed {
            tables: tables.into_iter().collect(),
            views: views.into_iter().collect(),
        }
    }

    /// Sets a savepoint named `name` (a later one of the same name hides
    /// the earlier, as in Postgres).
    pub async fn savepoint(&self, name: &str) -> Result<()> {
        let mut block = self.block.lock().await;
        Self::flush(&mut block).await?;
        let tables = block
            .tables
            .iter()
            .map(|(table, staged)| (table.clone(), (staged.clone(), staged.kept())))
            .collect();
        let names = block.names.clone();
        block.savepoints.push(Savepoint {
            name: name.to_string(),
            tables,
            names,
        });
        Ok(())
    }

    /// Undoes what was staged since the savepoint `name`, which stays set
    /// (later ones go); `false` when there is no such savepoint.
    pub async fn rollback_to(&self, name: &str) -> bool {
        let mut block = self.block.lock().await;
        let Some(at) = block.savepoints.iter().rposition(|s| s.name == name) else {
            return false;
        };
        block.savepoints.truncate(at + 1);
        let saved_tables: Vec<(TableName, Staged, Kept)> = block.savepoints[at]
            .tables
            .iter()
            .map(|(n, (s, k))| (n.clone(), s.clone(), k.clone()))
            .collect();
        let names = block.savepoints[at].names.clone();
        let mut tables: HashMap<TableName, Staged> = HashMap::new();
        for (name, mut staged, kept) in saved_tables {
            let handle = staged.table.clone();
            staged.restore(kept, &handle);
            tables.insert(name, staged);
        }
        // Tables first read after the savepoint: back to the version read.
        for (name, mut staged) in std::mem::take(&mut block.tables) {
            let first_read_since = staged.base.is_some()
                && staged.folder == name
                && !tables.contains_key(&name)
                && !names.gone.contains(&name);
            if first_read_since {
                staged.reset();
                tables.insert(name, staged);
            }
        }
        block.tables = tables;
        block.names = names;
        true
    }

    /// Forgets the savepoint `name` and those set after it, keeping what
    /// was staged; `false` when there is no such savepoint.
    pub async fn release(&self, name: &str) -> bool {
        let mut block = self.block.lock().await;
        let Some(at) = block.savepoints.iter().rposition(|s| s.name == name) else {
            return false;
        };
        block.savepoints.truncate(at);
        true
    }

    /// Applies the block: each table it read and wrote gets its staged
    /// versions as one version (first, in name order), then the catalog
    /// changes in the order the block made them — under a transaction
    /// record when there is more than one table's commit
    /// (`crate::commit::transaction_record`). The commits made.
    pub async fn commit(&self, catalog: &Catalog, committed: &CommitSink) -> Result<Vec<Commit>> {
        let mut block = std::mem::take(&mut *self.block.lock().await);
        Self::flush(&mut block).await?;
        let mut names: Vec<&TableName> = block.tables.keys().collect();
        names.sort_by_key(|n| n.to_string());
        let mut steps = Vec::new();
        let mut bases = HashMap::new();
        for name in names {
            let staged = &block.tables[name];
            // A renamed table commits at its folder (moved afterwards).
            let (Some(change), Some(base)) = (staged.change(&staged.folder)?, &staged.base) else {
                continue;
            };
            bases.insert(steps.len(), base.clone());
            steps.push(Step::commit(
                &staged.folder,
                base.version().unwrap_or(0),
                change,
            ));
        }
        let created = |folder: &TableName| {
            block
                .tables
                .values()
                .find(|s| s.base.is_none() && &s.folder == folder)
        };
        for change in &block.names.changes {
            steps.push(match change {
                Change::CreateSchema(schema) => Step::create_schema(schema),
                Change::CreateTable(name) => match created(name) {
                    Some(staged) => {
                        let (info, actions) = staged.first_commit(name)?;
                        Step::create(name, info, actions)
                    }
                    // Dropped again in the block.
                    None => continue,
                },
                // A table the block created there afterwards keeps its
                // files.
                Change::DropTable(name) => Step::drop(
                    name,
                    match created(name) {
                        Some(staged) => staged.added_paths()?,
                        None => Vec::new(),
                    },
                ),
                Change::RenameTable(from, to) => Step::rename(from, to),
                Change::StoreView(name, view, write) => Step::store_view(name, view, *write),
                Change::DropView(name) => Step::drop_view(name),
                Change::RenameView(from, to) => Step::rename_view(from, to),
            });
        }
        transaction_record::commit(catalog, committed, steps, bases).await
    }
}

/// A schema's names as a block sees them.
pub struct Listed {
    pub tables: Vec<String>,
    pub views: Vec<String>,
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use deltalake::kernel::{DataType, PrimitiveType, StructField};
    use deltalake::DeltaTable;
    use futures::TryStreamExt;

    use super::*;
    use crate::test_support::{ids, rows};

    fn name() -> TableName {
        TableName::new("default", "t").unwrap()
    }

    fn id_column() -> StructField {
        StructField::new("id", DataType::Primitive(PrimitiveType::Integer), true)
    }

    /// A warehouse with `default.t` holding id 1 (versions 0 and 1).
    async fn warehouse(dir: &std::path::Path) -> Arc<Catalog> {
        let catalog = Catalog::open(dir.to_str().unwrap(), HashMap::new())
            .await
            .unwrap();
        std::fs::create_dir_all(dir.join("default").join("t")).unwrap();
        let url = catalog.table_url(&name()).unwrap();
        let table = DeltaTable::try_from_url(url)
            .await
            .unwrap()
            .create()
            .with_columns([id_column()])
            .await
            .unwrap();
        table.write([rows(&[1])]).await.unwrap();
        catalog
    }

    /// `name` as everyone else reads it: its log, read anew.
    async fn loaded_at(catalog: &Catalog, name: &TableName) -> DeltaTable {
        let mut table = DeltaTable::try_from_url(catalog.table_url(name).unwrap())
            .await
            .unwrap();
        table.load().await.unwrap();
        table
    }

    async fn loaded(catalog: &Catalog) -> DeltaTable {
        loaded_at(catalog, &name()).await
    }

    /// A warehouse ([`warehouse`]) in a temporary folder, and a transaction.
    async fn setup() -> (tempfile::TempDir, Arc<Catalog>, Transaction) {
        let dir = tempfile::tempdir().unwrap();
        let catalog = warehouse(dir.path()).await;
        (dir, catalog, Transaction::new())
    }

    async fn staged(txn: &Transaction, catalog: &Catalog) -> DeltaTable {
        txn.table(catalog, &name()).await.unwrap().into_delta()
    }

    /// Appends `id` through the transaction.
    async fn write(txn: &Transaction, catalog: &Catalog, id: i32) {
        staged(txn, catalog)
            .await
            .write([rows(&[id])])
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn staged_writes_are_seen_by_the_transaction_alone_and_commit_as_one_version() {
        let (_dir, catalog, txn) = setup().await;
        write(&txn, &catalog, 2).await;
        let table = staged(&txn, &catalog).await;
        assert_eq!(table.version(), Some(2));
        assert_eq!(ids(&table).await, [1, 2]);
        let (table, _) = table.delete().with_predicate("id = 1").await.unwrap();
        assert_eq!(table.version(), Some(3));
        assert_eq!(ids(&staged(&txn, &catalog).await).await, [2]);

        // Nobody else sees any of it: not the log, not a new reader.
        let outside = loaded(&catalog).await;
        assert_eq!(outside.version(), Some(1));
        assert_eq!(ids(&outside).await, [1]);

        let sink = CommitSink::new(Arc::clone(&catalog));
        let commits = txn.commit(&catalog, &sink).await.unwrap();
        assert_eq!(commits.len(), 1);
        assert_eq!(commits[0].version, 2);
        let after = loaded(&catalog).await;
        assert_eq!(after.version(), Some(2), "one version for the transaction");
        assert_eq!(ids(&after).await, [2]);
        let history: Vec<_> = after.history(None).try_collect().await.unwrap();
        assert!(history
            .iter()
            .any(|c| c.operation.as_deref() == Some("TRANSACTION")));
    }

    #[tokio::test]
    async fn a_transaction_reads_its_snapshot_and_loses_to_a_commit_that_changed_what_it_rewrote() {
        let (_dir, catalog, txn) = setup().await;
        let table = staged(&txn, &catalog).await;
        // Another writer commits after the transaction's read.
        loaded(&catalog).await.write([rows(&[5])]).await.unwrap();
        assert_eq!(
            ids(&staged(&txn, &catalog).await).await,
            [1],
            "its snapshot"
        );
        table.delete().with_predicate("id = 1").await.unwrap();
        assert_eq!(ids(&staged(&txn, &catalog).await).await, Vec::<i32>::new());
        let sink = CommitSink::new(Arc::clone(&catalog));
        let err = txn.commit(&catalog, &sink).await.unwrap_err();
        assert_eq!(
            err.sqlstate(),
            crate::SqlState::SERIALIZATION_FAILURE,
            "{err}"
        );
        let after = loaded(&catalog).await;
        assert_eq!(after.version(), Some(2));
        assert_eq!(
            ids(&after).await,
            [1, 5],
            "nothing of the transaction applied"
        );
    }

    #[tokio::test]
    async fn a_blind_append_commits_beside_a_concurrent_one_and_a_dropped_transaction_leaves_nothing(
    ) {
        let (_dir, catalog, txn) = setup().await;
        write(&txn, &catalog, 3).await;
        loaded(&catalog).await.write([rows(&[4])]).await.unwrap();
        let sink = CommitSink::new(Arc::clone(&catalog));
        txn.commit(&catalog, &sink).await.unwrap();
        let after = loaded(&catalog).await;
        assert_eq!(after.version(), Some(3));
        assert_eq!(ids(&after).await, [1, 3, 4]);

        let txn = Transaction::new();
        write(&txn, &catalog, 9).await;
        drop(txn);
        let after = loaded(&catalog).await;
        assert_eq!(after.version(), Some(3));
        assert_eq!(ids(&after).await, [1, 3, 4]);
    }

    #[tokio::test]
    async fn rollback_to_a_savepoint_undoes_what_came_after_it() {
        let (_dir, catalog, txn) = setup().await;
        write(&txn, &catalog, 2).await;
        txn.savepoint("s").await.unwrap();
        write(&txn, &catalog, 3).await;
        assert_eq!(ids(&staged(&txn, &catalog).await).await, [1, 2, 3]);
        assert!(txn.rollback_to("s").await);
        assert_eq!(ids(&staged(&txn, &catalog).await).await, [1, 2]);
        assert!(txn.release("s").await);
        assert!(!txn.rollback_to("s").await, "released");
        let sink = CommitSink::new(Arc::clone(&catalog));
        txn.commit(&catalog, &sink).await.unwrap();
        assert_eq!(ids(&loaded(&catalog).await).await, [1, 2]);
    }

    #[tokio::test]
    async fn a_table_created_dropped_and_renamed_in_a_transaction_changes_the_catalog_at_commit() {
        let (_dir, catalog, txn) = setup().await;
        let created = TableName::new("default", "n").unwrap();
        let table = txn
            .new_table(&catalog, &created)
            .await
            .unwrap()
            .into_delta()
            .create()
            .with_columns([id_column()])
            .await
            .unwrap();
        table.write([rows(&[7])]).await.unwrap();
        assert!(txn.table_exists(&catalog, &created).await.unwrap());
        assert!(!catalog.table_exists(&created).await.unwrap(), "not yet");
        // DROP t, then the new table takes t's name.
        txn.drop_table(&catalog, &name()).await.unwrap();
        txn.rename_table(&catalog, &created, &name()).await.unwrap();
        assert_eq!(ids(&staged(&txn, &catalog).await).await, [7]);
        assert_eq!(ids(&loaded(&catalog).await).await, [1], "not yet");

        let sink = CommitSink::new(Arc::clone(&catalog));
        txn.commit(&catalog, &sink).await.unwrap();
        assert!(!catalog.table_exists(&created).await.unwrap());
        let after = loaded(&catalog).await;
        assert_eq!(after.version(), Some(0), "a new table: one version");
        assert_eq!(ids(&after).await, [7]);
    }
}
