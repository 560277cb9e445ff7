//! The table as a statement's own commit left it.
//!
//! delta-rs' builders return the table at the version they committed. The
//! write hands it to the statement through the session's DataFusion config
//! (an extension, as [`crate::grants::Principal`] is), and the statement
//! hands it to the catalog's cache ([`crate::Catalog::adopt`]). Without this
//! the statement's audit line and the next statement each brought the cached
//! table up to date from the log again: on an object store, a LIST and two
//! GETs of the commit the server had just written.

use std::sync::{Arc, Mutex};

use datafusion::prelude::SessionConfig;
use deltalake::DeltaTable;

use crate::catalog::TableName;

/// One session's slot for the table its running statement committed.
#[derive(Default)]
pub struct Committed(Mutex<Option<(TableName, DeltaTable)>>);

impl Committed {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// The slot of the session whose statement runs with `config`.
    pub fn of(config: &SessionConfig) -> Option<Arc<Self>> {
        config.get_extension::<Committed>()
    }

    /// Notes `table` as the statement's commit left it. A statement that
    /// commits twice leaves the later version.
    pub fn set(&self, name: &TableName, table: DeltaTable) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some((name.clone(), table));
        }
    }

    /// The table the statement committed, if it committed `name`; empties
    /// the slot either way.
    pub fn take(&self, name: &TableName) -> Option<DeltaTable> {
        let taken = self.0.lock().ok()?.take()?;
        (&taken.0 == name).then_some(taken.1)
    }

    /// Empties the slot (before a statement, so a failed one that committed
    /// leaves nothing for the next).
    pub fn clear(&self) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = None;
        }
    }
}
