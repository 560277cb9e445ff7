//! Views stored in the warehouse. A view `schema.v` is the object
//! [`VIEW_MARKER`] in the folder `schema/v/`, where a table of that name
//! would be: tables and views share one namespace, as on Databricks, and
//! every server on the warehouse sees the same views. `CREATE VIEW` writes
//! the object with a put-if-absent (two servers creating one view at once
//! cannot both succeed); `CREATE OR REPLACE` overwrites it.

use std::collections::BTreeMap;
use std::sync::Arc;

use deltalake::logstore::object_store::{PutMode, PutPayload};
use serde::{Deserialize, Serialize};

use super::{Catalog, TableName};
use crate::error::{Error, Result};

/// The object that makes `schema/v/` a view.
pub const VIEW_MARKER: &str = "_lakegres_view.json";

/// What a view keeps: its query's text and the columns it had when created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredView {
    /// The query, as SQL text.
    pub sql: String,
    /// The schema unqualified table names in the query resolve in (the
    /// one current when the view was created).
    pub schema: String,
    /// The columns, fixed when the view was created.
    pub columns: Vec<ViewColumn>,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// Who created it.
    #[serde(default)]
    pub owner: String,
    /// When it was created (ms since the epoch).
    #[serde(default)]
    pub created_ms: i64,
}

/// One column of a view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewColumn {
    pub name: String,
    /// The Arrow type, as Arrow writes it (`Int64`, `Utf8`, …).
    pub arrow_type: String,
    #[serde(default)]
    pub comment: Option<String>,
}

/// How `create_view` treats a view already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ViewWrite {
    /// `CREATE VIEW`: a view (or table) of that name is an error.
    Create,
    /// `CREATE OR REPLACE VIEW`: a view of that name is replaced.
    CreateOrReplace,
    /// `ALTER VIEW … AS`: the view must be there.
    Alter,
}

impl Catalog {
    /// Stores a view. A table of that name is an error: TableExists for
    /// [`ViewWrite::Create`], NotAView for the others. A view of that name
    /// is one for `Create` (the put-if-absent tells); `Alter` needs one.
    pub async fn create_view(
        &self,
        name: &TableName,
        view: &StoredView,
        write: ViewWrite,
    ) -> Result<()> {
        if self.table_exists(name).await? {
            return Err(match write {
                ViewWrite::Create => Error::TableExists {
                    schema: name.schema.clone(),
                    table: name.table.clone(),
                },
                ViewWrite::CreateOrReplace | ViewWrite::Alter => Error::NotAView {
                    name: name.to_string(),
                },
            });
        }
        if write == ViewWrite::Alter && self.view(name).await?.is_none() {
            return Err(Error::TableNotFound {
                schema: name.schema.clone(),
                table: name.table.clone(),
            });
        }
        let body = serde_json::to_vec_pretty(view).map_err(|e| Error::Internal(e.to_string()))?;
        let mode = match write {
            ViewWrite::Create => PutMode::Create,
            ViewWrite::CreateOrReplace | ViewWrite::Alter => PutMode::Overwrite,
        };
        let marker = self.path(&[&name.schema, &name.table, VIEW_MARKER]);
        match self
            .store
            .put_opts(&marker, PutPayload::from(body), mode.into())
            .await
        {
            Ok(_) => {}
            Err(deltalake::ObjectStoreError::AlreadyExists { .. }) => {
                return Err(Error::TableExists {
                    schema: name.schema.clone(),
                    table: name.table.clone(),
                })
            }
            Err(source) => {
                return Err(Error::Storage {
                    op: "creating a view",
                    source: Box::new(source),
                })
            }
        }
        self.note_view(name, view);
        Ok(())
    }

    /// The view `name`, `None` when there is none (reads storage).
    pub async fn view(&self, name: &TableName) -> Result<Option<StoredView>> {
        let marker = self.path(&[&name.schema, &name.table, VIEW_MARKER]);
        let Some(bytes) = self.read_marker(&marker).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::InvalidWarehouse {
                location: marker.to_string(),
                reason: e.to_string(),
            })
    }

    /// Removes a view; `false` when there was none.
    pub async fn drop_view(&self, name: &TableName) -> Result<bool> {
        if self.view(name).await?.is_none() {
            return Ok(false);
        }
        self.delete_prefix(&self.path(&[&name.schema, &name.table]))
            .await?;
        if let Ok(mut listing) = self.listing.write() {
            if let Some(views) = listing.views.get_mut(&name.schema) {
                views.remove(&name.table);
            }
        }
        Ok(true)
    }

    /// Renames a view: stored under the new name (put-if-absent), then
    /// removed from the old one.
    pub async fn rename_view(&self, from: &TableName, to: &TableName) -> Result<()> {
        let Some(view) = self.view(from).await? else {
            return Err(Error::TableNotFound {
                schema: from.schema.clone(),
                table: from.table.clone(),
            });
        };
        if !self.schema_exists(&to.schema).await? {
            return Err(Error::SchemaNotFound {
                schema: to.schema.clone(),
            });
        }
        self.create_view(to, &view, ViewWrite::Create).await?;
        self.drop_view(from).await?;
        Ok(())
    }

    /// Whether the folder at `prefix` holds a view.
    pub(super) async fn is_view_folder(&self, prefix: &deltalake::Path) -> Result<bool> {
        self.has_marker(prefix, VIEW_MARKER).await
    }

    /// View names of a schema from the cached listing.
    pub fn cached_views(&self, schema: &str) -> Vec<String> {
        self.listing
            .read()
            .ok()
            .and_then(|l| l.views.get(schema).map(|t| t.keys().cloned().collect()))
            .unwrap_or_default()
    }

    /// Every view of the cached listing, with what it stores.
    pub fn cached_view_definitions(&self) -> Vec<(TableName, Arc<StoredView>)> {
        let Ok(listing) = self.listing.read() else {
            return Vec::new();
        };
        listing
            .views
            .iter()
            .flat_map(|(schema, views)| {
                views.iter().map(|(view, stored)| {
                    (
                        TableName {
                            schema: schema.clone(),
                            table: view.clone(),
                        },
                        Arc::clone(stored),
                    )
                })
            })
            .collect()
    }

    /// Whether the cached listing holds `name` as a table.
    pub fn cached_table_exists(&self, name: &TableName) -> bool {
        self.listing
            .read()
            .ok()
            .and_then(|l| l.schemas.get(&name.schema).map(|t| t.contains(&name.table)))
            .unwrap_or(false)
    }

    fn note_view(&self, name: &TableName, view: &StoredView) {
        if let Ok(mut listing) = self.listing.write() {
            listing
                .views
                .entry(name.schema.clone())
                .or_default()
                .insert(name.table.clone(), Arc::new(view.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn view(sql: &str) -> StoredView {
        StoredView {
            sql: sql.into(),
            schema: "default".into(),
            columns: vec![ViewColumn {
                name: "a".into(),
                arrow_type: "Int64".into(),
                comment: None,
            }],
            comment: None,
            properties: BTreeMap::new(),
            owner: "u".into(),
            created_ms: 0,
        }
    }

    #[tokio::test]
    async fn views_share_the_table_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path().to_str().unwrap(), HashMap::new())
            .await
            .unwrap();
        let v = TableName::new("default", "v").unwrap();
        cat.create_view(&v, &view("SELECT 1 AS a"), ViewWrite::Create)
            .await
            .unwrap();
        assert!(matches!(
            cat.create_view(&v, &view("SELECT 2 AS a"), ViewWrite::Create)
                .await,
            Err(Error::TableExists { .. })
        ));
        cat.create_view(&v, &view("SELECT 2 AS a"), ViewWrite::CreateOrReplace)
            .await
            .unwrap();
        assert_eq!(cat.view(&v).await.unwrap().unwrap().sql, "SELECT 2 AS a");
        // A view is no table, and the listing tells them apart.
        assert!(!cat.table_exists(&v).await.unwrap());
        cat.refresh().await.unwrap();
        assert_eq!(cat.cached_views("default"), vec!["v"]);
        assert!(cat.cached_tables("default").is_empty());
        let w = TableName::new("default", "w").unwrap();
        cat.rename_view(&v, &w).await.unwrap();
        assert!(cat.view(&v).await.unwrap().is_none());
        assert!(cat.drop_view(&w).await.unwrap());
        assert!(!cat.drop_view(&w).await.unwrap());
    }
}
