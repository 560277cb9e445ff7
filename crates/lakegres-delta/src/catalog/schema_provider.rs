//! The warehouse as a DataFusion catalog: one catalog, a schema per schema
//! folder, a [`DeltaProvider`] per table, loaded at its latest version each
//! time a statement is planned.
//!
//! DataFusion asks for names synchronously; those answers come from the
//! catalog's cached listing, while table lookups read storage.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{CatalogProvider, SchemaProvider, Session};
use datafusion::common::{DataFusionError, Result as DFResult};
use datafusion::datasource::empty::EmptyTable;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use crate::catalog::{normalize_schema, Catalog, StoredView, TableName};
use crate::commit::committed::CommitSink;
use crate::error::Error;
use crate::read::provider::DeltaProvider;

/// The DataFusion catalog over a [`Catalog`], plus the in-memory schemas a
/// session registers (`pg_catalog`), which belong to that session only.
#[derive(Debug)]
pub struct LakeCatalogProvider {
    catalog: Arc<Catalog>,
    /// The session's commit sink: tables are read through its open
    /// transaction, if any.
    session: Arc<CommitSink>,
    virtual_schemas: RwLock<HashMap<String, Arc<dyn SchemaProvider>>>,
    /// Schemas that resolve but are not listed (`csv`, `json`, `parquet`:
    /// `SELECT * FROM csv.\`path\``).
    hidden_schemas: RwLock<HashMap<String, Arc<dyn SchemaProvider>>>,
}

impl LakeCatalogProvider {
    /// Wraps the warehouse catalog for the session whose commits go to
    /// `session`.
    pub fn new(catalog: Arc<Catalog>, session: Arc<CommitSink>) -> Self {
        Self {
            catalog,
            session,
            virtual_schemas: RwLock::new(HashMap::new()),
            hidden_schemas: RwLock::new(HashMap::new()),
        }
    }

    /// Registers a schema that resolves by name but is not listed.
    pub fn register_hidden_schema(&self, name: &str, schema: Arc<dyn SchemaProvider>) {
        if let Ok(mut h) = self.hidden_schemas.write() {
            h.insert(name.to_string(), schema);
        }
    }
}

impl CatalogProvider for LakeCatalogProvider {
    fn schema_names(&self) -> Vec<String> {
        // `public` resolves too (see `schema`), but is not listed: it names the
        // same schema as `default`, and listing both would show every table twice.
        let mut names = self.catalog.cached_schemas();
        if let Ok(v) = self.virtual_schemas.read() {
            names.extend(v.keys().cloned());
        }
        names
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> DFResult<Option<Arc<dyn SchemaProvider>>> {
        let mut v = self
            .virtual_schemas
            .write()
            .map_err(|_| DataFusionError::Internal("schema registry lock poisoned".into()))?;
        Ok(v.insert(name.to_string(), schema))
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if let Some(s) = self.virtual_schemas.read().ok()?.get(name) {
            return Some(Arc::clone(s));
        }
        if let Some(s) = self.hidden_schemas.read().ok()?.get(name) {
            return Some(Arc::clone(s));
        }
        let schema = normalize_schema(name).ok()?;
        Some(Arc::new(LakeSchemaProvider {
            session: Arc::clone(&self.session),
            schema,
        }))
    }
}

/// One schema of the warehouse.
#[derive(Debug)]
pub struct LakeSchemaProvider {
    session: Arc<CommitSink>,
    schema: String,
}

#[async_trait]
impl SchemaProvider for LakeSchemaProvider {
    fn table_names(&self) -> Vec<String> {
        let catalog = self.session.session_catalog();
        let mut names = catalog.cached_tables(&self.schema);
        names.extend(catalog.cached_views(&self.schema));
        names
    }

    async fn table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        let Ok(name) = TableName::new(&self.schema, name) else {
            return Ok(None);
        };
        match self.session.load_table(&name).await {
            Ok(table) => {
                let provider = DeltaProvider::try_new(name, table)
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                Ok(Some(Arc::new(provider)))
            }
            Err(Error::TableNotFound { .. }) => {
                match self.session.session_catalog().view(&name).await {
                    Ok(Some(view)) => Ok(Some(Arc::new(ViewEntry::try_new(name, &view)?))),
                    Ok(None) => Ok(None),
                    Err(e) => Err(DataFusionError::External(Box::new(e))),
                }
            }
            // `CREATE TABLE t;` before its first load: no columns, no rows.
            Err(Error::SchemaNotSet { .. }) => {
                Ok(Some(Arc::new(EmptyTable::new(Arc::new(Schema::empty())))))
            }
            Err(e) => Err(DataFusionError::External(Box::new(e))),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        let name = name.to_lowercase();
        let catalog = self.session.session_catalog();
        catalog.cached_tables(&self.schema).contains(&name)
            || catalog.cached_views(&self.schema).contains(&name)
    }
}

/// A stored view as the catalog lists it (`pg_class` relkind `v`,
/// `information_schema.views`): its name and columns. Statements read a
/// view through its query, expanded where they name it, so a scan of this
/// entry means a reference the expansion did not reach.
#[derive(Debug)]
pub struct ViewEntry {
    name: TableName,
    schema: SchemaRef,
    definition: String,
}

impl ViewEntry {
    /// The entry of `view`, with the columns it was created with.
    pub fn try_new(name: TableName, view: &StoredView) -> DFResult<Self> {
        let fields = view
            .columns
            .iter()
            .map(|c| {
                let data_type = DataType::from_str(&c.arrow_type).unwrap_or(DataType::Utf8);
                let mut field = Field::new(&c.name, data_type, true);
                if let Some(comment) = &c.comment {
                    field = field
                        .with_metadata(HashMap::from([("comment".to_string(), comment.clone())]));
                }
                field
            })
            .collect::<Vec<_>>();
        Ok(Self {
            name,
            schema: Arc::new(Schema::new(fields)),
            definition: view.sql.clone(),
        })
    }
}

#[async_trait]
impl TableProvider for ViewEntry {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn get_table_definition(&self) -> Option<&str> {
        Some(&self.definition)
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::Plan(format!(
            "[UNSUPPORTED_FEATURE] the view {} cannot be read in this statement",
            self.name
        )))
    }
}
