//! [`SessionCatalog`]: the catalog as one session's statements see it —
//! through the session's open transaction block, if any, whose tables are
//! staged and whose catalog changes wait for COMMIT
//! (`crate::commit::transaction`).

use std::sync::Arc;

use crate::catalog::{Catalog, StoredView, TableName, ViewWrite};
use crate::commit::transaction::Transaction;
use crate::error::Result;

/// The warehouse's catalog with a session's open transaction over it.
pub struct SessionCatalog {
    catalog: Arc<Catalog>,
    transaction: Option<Arc<Transaction>>,
    reads: Arc<Reads>,
}

/// What the running statement (or the open block) has read: the version of
/// each table, and the multi-table transactions it reads as not made, so
/// that it sees such a transaction on all of its tables or on none
/// (`Catalog::load_read`).
#[derive(Debug, Default)]
pub struct Reads {
    inner: std::sync::Mutex<ReadsInner>,
}

#[derive(Debug, Default)]
struct ReadsInner {
    loaded: std::collections::HashMap<TableName, u64>,
    before: std::collections::HashSet<String>,
}

impl Reads {
    fn with<T>(&self, f: impl FnOnce(&mut ReadsInner) -> T) -> T {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut inner)
    }

    /// Forgets what was read (a new statement, a new block).
    pub fn clear(&self) {
        self.with(|r| {
            r.loaded.clear();
            r.before.clear();
        })
    }

    pub(crate) fn loaded(&self, name: &TableName, version: u64) {
        self.with(|r| r.loaded.insert(name.clone(), version));
    }

    pub(crate) fn version_of(&self, name: &TableName) -> Option<u64> {
        self.with(|r| r.loaded.get(name).copied())
    }

    pub(crate) fn read_before(&self, transaction: &str) {
        self.with(|r| r.before.insert(transaction.to_string()));
    }

    pub(crate) fn reads_before(&self, transaction: &str) -> bool {
        self.with(|r| r.before.contains(transaction))
    }
}

impl SessionCatalog {
    pub(crate) fn new(
        catalog: Arc<Catalog>,
        transaction: Option<Arc<Transaction>>,
        reads: Arc<Reads>,
    ) -> Self {
        Self {
            catalog,
            transaction,
            reads,
        }
    }

    /// Whether a transaction block is open.
    pub fn in_transaction(&self) -> bool {
        self.transaction.is_some()
    }

    /// Whether the schema exists.
    pub async fn schema_exists(&self, schema: &str) -> Result<bool> {
        match &self.transaction {
            Some(t) => t.schema_exists(&self.catalog, schema).await,
            None => self.catalog.schema_exists(schema).await,
        }
    }

    /// Whether the schema exists, by the cached listing.
    pub fn cached_schema_exists(&self, schema: &str) -> bool {
        match &self.transaction {
            Some(t) => t.cached_schema_exists(&self.catalog, schema),
            None => self.catalog.cached_schema_exists(schema),
        }
    }

    /// Creates a schema; an existing one is an error unless
    /// `if_not_exists`.
    pub async fn create_schema(&self, schema: &str, if_not_exists: bool) -> Result<()> {
        match &self.transaction {
            Some(t) => t.create_schema(&self.catalog, schema, if_not_exists).await,
            None => self.catalog.create_schema(schema, if_not_exists).await,
        }
    }

    /// The table `name` as the session reads and writes it.
    pub async fn load_table(&self, name: &TableName) -> Result<crate::Table> {
        match &self.transaction {
            Some(t) => t.table_read(&self.catalog, name, Some(&self.reads)).await,
            None => self
                .catalog
                .load_read(name, Some(&self.reads))
                .await
                .map(crate::Table::new),
        }
    }

    /// The table `name` for an append of plain rows
    /// (`crate::append::appendable`): in a block, the rows the block
    /// appended before are not written for it.
    pub async fn table_to_append(&self, name: &TableName) -> Result<crate::Table> {
        match &self.transaction {
            Some(t) => t.table_to_append(&self.catalog, name).await,
            None => self.catalog.load_table(name).await,
        }
    }

    /// A handle on `name`'s place, where CREATE writes a table.
    pub async fn new_table(&self, name: &TableName) -> Result<crate::Table> {
        match &self.transaction {
            Some(t) => t.new_table(&self.catalog, name).await,
            None => self.catalog.new_table(name),
        }
    }

    /// Whether `name` is a table (with or without columns).
    pub async fn table_exists(&self, name: &TableName) -> Result<bool> {
        match &self.transaction {
            Some(t) => t.table_exists(&self.catalog, name).await,
            None => self.catalog.table_exists(name).await,
        }
    }

    /// The stored view `name`, if it is one.
    pub async fn view(&self, name: &TableName) -> Result<Option<StoredView>> {
        match &self.transaction {
            Some(t) => t.view(&self.catalog, name).await,
            None => self.catalog.view(name).await,
        }
    }

    /// Records a table this session created (outside a block; a block's
    /// are recorded at COMMIT).
    pub fn note_table(&self, name: &TableName) {
        if self.transaction.is_none() {
            self.catalog.note_table(name);
        }
    }

    pub async fn drop_table(&self, name: &TableName) -> Result<()> {
        match &self.transaction {
            Some(t) => t.drop_table(&self.catalog, name).await,
            None => self.catalog.drop_table(name).await,
        }
    }

    pub async fn rename_table(&self, from: &TableName, to: &TableName) -> Result<()> {
        match &self.transaction {
            Some(t) => t.rename_table(&self.catalog, from, to).await,
            None => self.catalog.rename_table(from, to).await,
        }
    }

    /// Stores a view (see [`Catalog::create_view`]).
    pub async fn create_view(
        &self,
        name: &TableName,
        view: &StoredView,
        write: ViewWrite,
    ) -> Result<()> {
        match &self.transaction {
            Some(t) => t.store_view(&self.catalog, name, view, write).await,
            None => self.catalog.create_view(name, view, write).await,
        }
    }

    /// Drops a view; whether there was one.
    pub async fn drop_view(&self, name: &TableName) -> Result<bool> {
        match &self.transaction {
            Some(t) => t.drop_view(&self.catalog, name).await,
            None => self.catalog.drop_view(name).await,
        }
    }

    pub async fn rename_view(&self, from: &TableName, to: &TableName) -> Result<()> {
        match &self.transaction {
            Some(t) => t.rename_view(&self.catalog, from, to).await,
            None => self.catalog.rename_view(from, to).await,
        }
    }

    /// The names of `schema`'s tables, from the cached listing.
    pub fn cached_tables(&self, schema: &str) -> Vec<String> {
        self.listed(schema).tables
    }

    /// The names of `schema`'s views, from the cached listing.
    pub fn cached_views(&self, schema: &str) -> Vec<String> {
        self.listed(schema).views
    }

    /// Whether `name` is a table, by the cached listing.
    pub fn cached_table_exists(&self, name: &TableName) -> bool {
        match &self.transaction {
            Some(_) => self.cached_tables(&name.schema).contains(&name.table),
            None => self.catalog.cached_table_exists(name),
        }
    }

    fn listed(&self, schema: &str) -> crate::Listed {
        let tables = self.catalog.cached_tables(schema);
        let views = self.catalog.cached_views(schema);
        match &self.transaction {
            Some(t) => t.listed(schema, tables, views),
            None => crate::Listed { tables, views },
        }
    }
}
