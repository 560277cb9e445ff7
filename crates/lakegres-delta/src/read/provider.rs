//! [`DeltaProvider`]: the DataFusion table behind every Lakegres table.
//!
//! Reads go through delta-rs' scan (`DeltaScanNext`) over the snapshot loaded
//! when the statement was planned, so a statement sees one committed version.
//! Writes planned by DataFusion (`INSERT`) come back here through
//! [`TableProvider::insert_into`], which checks the writer's privileges and
//! hands the rows to a [`DeltaWriteExec`] (`write/insert.rs`): one Delta
//! commit.
//!
//! Column names are case-insensitive in SQL but Delta keeps the declared
//! spelling. DataFusion lower-cases unquoted identifiers, so the provider
//! shows DataFusion lower-case names and renames back to the declared ones
//! on the way to storage.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DataFusionError, Result as DFResult};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::Column as PhysicalColumn;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::ExecutionPlan;
use deltalake::delta_datafusion::{DeltaScanConfig, DeltaScanNext};
use deltalake::kernel::EagerSnapshot;
use deltalake::DeltaTable;

use crate::catalog::grants::{Principal, Privilege};
use crate::catalog::TableName;
use crate::error::{Error, Result};
use crate::read::task_scan::{DeltaTaskScanExec, SentScans};
use crate::write::insert::{DeltaWriteExec, WriteMode};

/// A Delta table at one committed version, as DataFusion sees it.
pub struct DeltaProvider {
    name: TableName,
    table: DeltaTable,
    scan: Arc<DeltaScanNext>,
    /// The configuration `scan` was made with, when it reads the table's
    /// columns alone (no file column, row ordinal or file selection): such
    /// a scan can be named and planned again elsewhere (`task_scan`).
    plain: Option<DeltaScanConfig>,
    /// The schema DataFusion sees: the scan's, with lower-case names.
    schema: SchemaRef,
    /// The declared column names, where some differ from `schema`'s.
    declared_names: Option<Vec<String>>,
    /// Read inside a view the reader may read: its own SELECT is not
    /// asked for (Unity Catalog's rule for views).
    through_view: bool,
    /// Column defaults (`DEFAULT expr`), by lower-case name: what an
    /// INSERT that leaves the column out writes.
    defaults: HashMap<String, Expr>,
}

impl fmt::Debug for DeltaProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaProvider")
            .field("name", &self.name)
            .field("version", &self.table.version())
            .finish()
    }
}

impl DeltaProvider {
    /// Wraps a loaded table.
    pub fn try_new(name: TableName, table: crate::Table) -> Result<Self> {
        Self::build(name, table.into_delta(), None)
    }

    /// Wraps a table loaded inside this crate.
    pub(crate) fn of_delta(name: TableName, table: DeltaTable) -> Result<Self> {
        Self::build(name, table, None)
    }

    /// The table this reads, at the version it reads.
    pub fn handle(&self) -> crate::Table {
        crate::Table::new(self.table.clone())
    }

    /// The same table with one more column, `file_column`, naming each
    /// row's data file (for statements that rewrite the files they touch).
    pub fn with_file_column(&self, file_column: &str) -> Result<Self> {
        Self::build(self.name.clone(), self.table.clone(), Some(file_column))
    }

    /// The table with the file column, reading only the files `ids` (as
    /// the file column names them): the rows a rewrite must carry over.
    pub fn with_files(&self, file_column: &str, ids: Vec<String>) -> Result<Self> {
        let mut provider = self.with_file_column(file_column)?;
        provider.scan = Arc::new(provider.scan.as_ref().clone().with_file_paths(ids));
        Ok(provider)
    }

    /// The table reading only the rows the commit of `version` added (the
    /// files of its `add` actions): what an INSERT … RETURNING returns, when
    /// that commit holds the INSERT alone. The table must be loaded at
    /// `version` or later, and read its columns alone.
    pub async fn added_at(self, version: u64) -> Result<Self> {
        let reading = |e| Error::delta("reading the commit of", self.name.to_string(), e);
        let entry = self
            .table
            .log_store()
            .read_commit_entry(version as _)
            .await
            .map_err(reading)?
            .ok_or_else(|| Error::Internal(format!("{} has no commit {version}", self.name)))?;
        let mut adds = Vec::new();
        for line in entry.split(|b| *b == b'\n') {
            let Ok(action) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            if let Some(add) = action.get("add") {
                let add: deltalake::kernel::Add = serde_json::from_value(add.clone())
                    .map_err(|e| Error::Internal(format!("an add action of {}: {e}", self.name)))?;
                adds.push(add);
            }
        }
        Ok(self.reading_adds(adds))
    }

    /// The table reading no rows at all (an INSERT … RETURNING that wrote
    /// none).
    pub fn with_no_rows(self) -> Self {
        self.reading_adds(Vec::new())
    }

    /// The table reading only the files of `adds`.
    fn reading_adds(mut self, adds: Vec<deltalake::kernel::Add>) -> Self {
        self.plain = None;
        self.scan = Arc::new(self.scan.as_ref().clone().with_adds(adds));
        self
    }

    /// The table with the file column and `ordinal_column`: each row's
    /// one-based ordinal among the rows of its file that are not deleted,
    /// in the file's order (what a deletion vector is written from).
    pub fn with_row_ordinal(&self, file_column: &str, ordinal_column: &str) -> Result<Self> {
        let mut provider = self.with_file_column(file_column)?;
        let scan = provider
            .scan
            .as_ref()
            .clone()
            .with_row_index_column(ordinal_column)
            .map_err(|source| Error::DataFusion {
                what: "planning a Delta scan",
                source: Box::new(source),
            })?;
        let mut fields: Vec<Field> = provider
            .schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new(
            ordinal_column,
            datafusion::arrow::datatypes::DataType::UInt64,
            false,
        ));
        provider.schema = Arc::new(Schema::new_with_metadata(
            fields,
            provider.schema.metadata().clone(),
        ));
        if let Some(names) = &mut provider.declared_names {
            names.push(ordinal_column.to_string());
        }
        provider.scan = Arc::new(scan);
        Ok(provider)
    }

    fn build(name: TableName, table: DeltaTable, file_column: Option<&str>) -> Result<Self> {
        let snapshot = Arc::new(
            table
                .snapshot()
                .map_err(|e| Error::delta("reading", name.to_string(), e))?
                .snapshot()
                .clone(),
        );
        // Plain (not dictionary) partition values: the types a user declared.
        let config = DeltaScanConfig {
            wrap_partition_values: false,
            file_column_name: file_column.map(str::to_string),
            ..DeltaScanConfig::new()
        };
        let snapshot_for_defaults = Arc::clone(&snapshot);
        let plain = file_column.is_none().then(|| config.clone());
        let scan = DeltaScanNext::new(snapshot, config).map_err(|source| Error::DataFusion {
            what: "planning a Delta scan",
            source: Box::new(source),
        })?;
        let scan_schema = scan.schema();
        let lower: Vec<Field> = scan_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_name(f.name().to_lowercase()))
            .collect();
        let renamed = scan_schema
            .fields()
            .iter()
            .any(|f| f.name() != &f.name().to_lowercase());
        let (schema, declared_names) = if renamed {
            (
                Arc::new(Schema::new_with_metadata(
                    lower,
                    scan_schema.metadata().clone(),
                )),
                Some(
                    scan_schema
                        .fields()
                        .iter()
                        .map(|f| f.name().clone())
                        .collect(),
                ),
            )
        } else {
            (scan_schema, None)
        };
        let defaults = column_defaults(&snapshot_for_defaults, &schema);
        Ok(Self {
            name,
            table,
            scan: Arc::new(scan),
            plain,
            schema,
            declared_names,
            through_view: false,
            defaults,
        })
    }

    /// The table as read by a view the reader may read: reads of it are
    /// not checked against the reader's grants.
    pub fn read_through_view(mut self) -> Self {
        self.through_view = true;
        self
    }

    /// The table's name.
    pub fn name(&self) -> &TableName {
        &self.name
    }

    /// The loaded table (its snapshot is the version this statement reads).
    pub(crate) fn table(&self) -> &DeltaTable {
        &self.table
    }

    /// The loaded snapshot.
    pub(crate) fn snapshot(&self) -> Result<&EagerSnapshot> {
        self.table
            .snapshot()
            .map(|s| s.snapshot())
            .map_err(|e| Error::delta("reading", self.name.to_string(), e))
    }

    /// A table property (`delta.appendOnly` …) at the version it reads.
    pub fn property(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .snapshot()?
            .metadata()
            .configuration()
            .get(key)
            .cloned())
    }

    /// The bytes of the data files of the version it reads.
    pub fn data_bytes(&self) -> Result<u64> {
        Ok(self
            .snapshot()?
            .log_data()
            .iter()
            .map(|f| u64::try_from(f.size()).unwrap_or(0))
            .sum())
    }

    /// The declared spelling of each column, in table order.
    pub fn declared_column_names(&self) -> Vec<String> {
        match &self.declared_names {
            Some(names) => names.clone(),
            None => self
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect(),
        }
    }

    /// The partition columns, as declared.
    pub fn partition_columns(&self) -> Result<Vec<String>> {
        Ok(self.snapshot()?.metadata().partition_columns().to_vec())
    }

    /// A filter over lower-case names, over the declared ones instead.
    pub fn to_declared_expr(&self, expr: &Expr) -> Result<Expr> {
        self.declared_expr(expr)
            .map_err(|source| Error::DataFusion {
                what: "naming columns",
                source: Box::new(source),
            })
    }

    /// Maps a lower-case column reference to the declared spelling.
    fn declared_expr(&self, expr: &Expr) -> DFResult<Expr> {
        let Some(declared) = &self.declared_names else {
            return Ok(expr.clone());
        };
        expr.clone()
            .transform(|e| match e {
                Expr::Column(c) => {
                    let found = declared.iter().find(|d| d.to_lowercase() == c.name);
                    match found {
                        Some(d) => Ok(Transformed::yes(Expr::Column(Column::new(
                            c.relation.clone(),
                            d.clone(),
                        )))),
                        None => Ok(Transformed::no(Expr::Column(c))),
                    }
                }
                other => Ok(Transformed::no(other)),
            })
            .map(|t| t.data)
    }
}

/// Whether the session's plans may run elsewhere, so plain Delta scans are
/// planned as [`DeltaTaskScanExec`]s (see `task_scan`).
fn sends_scans(state: &dyn Session) -> bool {
    state
        .config_options()
        .extensions
        .get::<SentScans>()
        .is_some_and(|sent| sent.enabled)
}

/// Renames the output columns of `input` to `names`, without copying data.
fn rename_columns(
    input: Arc<dyn ExecutionPlan>,
    names: &[String],
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let exprs: Vec<(Arc<dyn PhysicalExpr>, String)> = input
        .schema()
        .fields()
        .iter()
        .enumerate()
        .zip(names)
        .map(|((i, f), name)| {
            (
                Arc::new(PhysicalColumn::new(f.name(), i)) as Arc<dyn PhysicalExpr>,
                name.clone(),
            )
        })
        .collect();
    Ok(Arc::new(ProjectionExec::try_new(exprs, input)?))
}

#[async_trait]
impl TableProvider for DeltaProvider {
    fn get_column_default(&self, column: &str) -> Option<&Expr> {
        self.defaults.get(&column.to_lowercase())
    }

    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        if !self.through_view {
            self.require(state, &[Privilege::Select])?;
        }
        self.table
            .update_datafusion_session(state)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let filters = filters
            .iter()
            .map(|f| self.declared_expr(f))
            .collect::<DFResult<Vec<_>>>()?;
        let mut plan = self.scan.scan(state, projection, &filters, limit).await?;
        if let Some(config) = self.plain.as_ref().filter(|_| sends_scans(state)) {
            plan = Arc::new(
                DeltaTaskScanExec::planned(
                    &self.table,
                    config.clone(),
                    projection.cloned(),
                    filters,
                    limit,
                    plan,
                )
                .map_err(|e| DataFusionError::External(Box::new(e)))?,
            );
        }
        match &self.declared_names {
            None => Ok(plan),
            Some(_) => {
                let names: Vec<String> = plan
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().to_lowercase())
                    .collect();
                rename_columns(plan, &names)
            }
        }
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DFResult<Vec<TableProviderFilterPushDown>> {
        let declared = filters
            .iter()
            .map(|f| self.declared_expr(f))
            .collect::<DFResult<Vec<_>>>()?;
        let refs: Vec<&Expr> = declared.iter().collect();
        self.scan.supports_filters_pushdown(&refs)
    }

    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        self.require(state, WRITE)?;
        let mode = match insert_op {
            InsertOp::Append => WriteMode::Append,
            InsertOp::Overwrite => WriteMode::Overwrite,
            InsertOp::Replace => {
                return Err(DataFusionError::NotImplemented(
                    "INSERT OR REPLACE is not supported on Delta tables".into(),
                ))
            }
        };
        let input = match &self.declared_names {
            Some(names) => rename_columns(input, names)?,
            None => input,
        };
        Ok(Arc::new(DeltaWriteExec::new(
            self.name.clone(),
            self.table.clone(),
            input,
            mode,
            Self::session_state(state)?,
        )))
    }

    /// Refused: DELETE reaches a Delta table only as a [`crate::write::dml::DmlNode`],
    /// which holds the statement's condition as written. What DataFusion
    /// would hand this hook are the filters it still finds in an optimized
    /// plan, which lack any condition it turned into a join (a subquery) —
    /// run with those, a DELETE would remove rows the statement spares.
    async fn delete_from(
        &self,
        _state: &dyn Session,
        _filters: Vec<Expr>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::External(Box::new(Error::Internal(
            format!("DELETE on {} reached the table without Lakegres' DML rule; refused rather than run with the filters DataFusion extracted", self.name),
        ))))
    }

    /// Refused, as [`Self::delete_from`] is.
    async fn update(
        &self,
        _state: &dyn Session,
        _assignments: Vec<(String, Expr)>,
        _filters: Vec<Expr>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::External(Box::new(Error::Internal(
            format!("UPDATE on {} reached the table without Lakegres' DML rule; refused rather than run with the filters DataFusion extracted", self.name),
        ))))
    }

    async fn truncate(&self, state: &dyn Session) -> DFResult<Arc<dyn ExecutionPlan>> {
        self.require(state, WRITE)?;
        Ok(Arc::new(crate::write::dml::TruncateExec::new(
            self.name.clone(),
            self.table.clone(),
            Self::session_state(state)?,
        )))
    }
}

/// A write needs both, as on Databricks (MODIFY alone does not let a user
/// read what it changes).
const WRITE: &[Privilege] = &[Privilege::Select, Privilege::Modify];

impl DeltaProvider {
    /// 42501 unless the session's user (see [`Principal`]) holds each of
    /// `privileges` on this table. Checked here, where every plan reaches
    /// the table, whichever statement planned it.
    fn require(&self, state: &dyn Session, privileges: &[Privilege]) -> DFResult<()> {
        let Some(principal) = state.config().get_extension::<Principal>() else {
            return Ok(());
        };
        for privilege in privileges {
            principal
                .require(*privilege, &self.name)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
        }
        Ok(())
    }

    /// What an UPDATE or DELETE needs (42501 otherwise).
    pub(crate) fn require_write(&self, state: &dyn Session) -> DFResult<()> {
        self.require(state, WRITE)
    }

    fn session_state(state: &dyn Session) -> DFResult<Arc<SessionState>> {
        state
            .as_any()
            .downcast_ref::<SessionState>()
            .cloned()
            .map(Arc::new)
            .ok_or_else(|| DataFusionError::Internal("DML needs a SessionState".into()))
    }

    /// A filter or value over the table's columns, with the declared names
    /// and no table qualifiers, as delta-rs resolves them.
    pub(crate) fn storage_expr(&self, expr: &Expr) -> DFResult<Expr> {
        self.declared_expr(expr)?
            .transform(|e| match e {
                Expr::Column(c) if c.relation.is_some() => Ok(Transformed::yes(Expr::Column(
                    Column::new_unqualified(c.name),
                ))),
                other => Ok(Transformed::no(other)),
            })
            .map(|t| t.data)
    }

    pub(crate) fn declared_name(&self, column: &str) -> String {
        match &self.declared_names {
            Some(names) => names
                .iter()
                .find(|d| d.to_lowercase() == column)
                .cloned()
                .unwrap_or_else(|| column.to_string()),
            None => column.to_string(),
        }
    }
}

/// The columns' `DEFAULT` expressions (field metadata `CURRENT_DEFAULT`),
/// planned over the table's columns. One that does not plan (a function
/// DataFusion lacks) is left out: the column then gets NULL, as before it
/// had a default.
fn column_defaults(snapshot: &EagerSnapshot, schema: &SchemaRef) -> HashMap<String, Expr> {
    static PLANNER: std::sync::LazyLock<datafusion::prelude::SessionContext> =
        std::sync::LazyLock::new(datafusion::prelude::SessionContext::new);
    let mut defaults = HashMap::new();
    let fields: Vec<_> = snapshot
        .schema()
        .fields()
        .filter_map(|f| {
            Some((
                f.name().to_lowercase(),
                crate::table::types::column_default(f)?,
            ))
        })
        .collect();
    if fields.is_empty() {
        return defaults;
    }
    let Ok(df_schema) = datafusion::common::DFSchema::try_from(schema.as_ref().clone()) else {
        return defaults;
    };
    for (name, text) in fields {
        match PLANNER.parse_sql_expr(&text, &df_schema) {
            Ok(expr) => {
                defaults.insert(name, expr);
            }
            Err(e) => {
                tracing::warn!(column = %name, default = %text, error = %e, "a column default that does not plan")
            }
        }
    }
    defaults
}
