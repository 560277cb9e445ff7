//! `pg_catalog` as datafusion-pg-catalog builds it, with two things of ours:
//!
//! - OIDs of schemas and tables derived from their names. The crate numbers
//!   them in the order it meets them, per session, so a table's OID changed
//!   between sessions and restarts as other tables came and went; clients
//!   (pgjdbc, DBeaver) cache them.
//! - `pg_description` rows for table and column comments, read from the Delta
//!   tables' metadata, so `\d+`, `\dt+`, SQLAlchemy and JDBC metadata show them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int32Array, RecordBatch, StringArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int32Type, SchemaRef};
use datafusion::catalog::streaming::StreamingTable;
use datafusion::catalog::{CatalogProviderList, SchemaProvider};
use datafusion::common::Result as DFResult;
use datafusion::datasource::TableProvider;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_pg_catalog::pg_catalog::{PgCatalogSchemaProvider, PgCatalogTable};
use futures::TryStreamExt;
use lakegres_delta::{Catalog, TableName};

/// The first OID Postgres hands to user objects; below are system objects.
pub(crate) const FIRST_USER_OID: i32 = 16384;

/// `pg_class`'s own OID, the `classoid` of a relation's description.
const PG_CLASS_OID: i32 = 1259;

/// System catalogs whose OIDs clients know (`'pg_class'::regclass` is 1259
/// in every Postgres).
const SYSTEM_RELATIONS: &[(&str, i32)] = &[
    ("pg_type", 1247),
    ("pg_attribute", 1249),
    ("pg_proc", 1255),
    ("pg_class", PG_CLASS_OID),
    ("pg_database", 1262),
    ("pg_constraint", 2606),
    ("pg_description", 2609),
    ("pg_index", 2610),
    ("pg_namespace", 2615),
];

type Inner = PgCatalogSchemaProvider<Arc<dyn CatalogProviderList>, EmptyContextProvider>;

/// The `pg_catalog` schema of a session.
#[derive(Debug)]
pub(crate) struct LakePgCatalog {
    shared: Arc<Shared>,
}

impl LakePgCatalog {
    pub(crate) fn new(inner: Inner, lake: Arc<Catalog>) -> Self {
        Self {
            shared: Arc::new(Shared { inner, lake }),
        }
    }
}

/// What the tables of a session's pg_catalog are read from.
#[derive(Debug)]
struct Shared {
    inner: Inner,
    lake: Arc<Catalog>,
}

impl Shared {
    /// The rows of one of the tables we change.
    async fn rows(&self, name: &str) -> DFResult<Vec<RecordBatch>> {
        match name {
            "pg_views" => return self.views().await,
            "pg_tables" => return self.tables().await,
            _ => {}
        }
        // pg_namespace's own OIDs need no pg_class (which reads every table).
        let mut relations = self.relations(name != "pg_namespace").await?;
        match name {
            "pg_namespace" => {
                let batches = std::mem::take(&mut relations.namespaces);
                relations.remap(batches, &["oid"])
            }
            "pg_class" => {
                let batches = std::mem::take(&mut relations.classes);
                let batches = relations.remap(batches, &["oid", "relnamespace"])?;
                self.owners(&relations, batches).await
            }
            "pg_attribute" => {
                let (_, batches) = self.collect("pg_attribute").await?;
                let batches = relations.remap(batches, &["attrelid"])?;
                self.column_typmods(&relations, batches).await
            }
            _ => self.descriptions(&relations).await,
        }
    }

    /// pg_views: a row per stored view, from the catalog's listing.
    async fn views(&self) -> DFResult<Vec<RecordBatch>> {
        let (schema, _) = self.collect("pg_views").await?;
        let views = self.lake.cached_view_definitions();
        let column = |f: fn(&(TableName, Arc<lakegres_delta::StoredView>)) -> String| {
            Arc::new(StringArray::from_iter_values(views.iter().map(f))) as ArrayRef
        };
        Ok(vec![RecordBatch::try_new(
            schema,
            vec![
                column(|(n, _)| n.schema.clone()),
                column(|(n, _)| n.table.clone()),
                column(|(_, v)| v.owner.clone()),
                column(|(_, v)| v.sql.clone()),
            ],
        )?])
    }

    /// pg_tables without the stored views, which the crate's listing (every
    /// name a schema holds) includes: dbt, for one, takes a relation listed
    /// there for a table and drops it with DROP TABLE.
    async fn tables(&self) -> DFResult<Vec<RecordBatch>> {
        let (_, batches) = self.collect("pg_tables").await?;
        let views: HashSet<(String, String)> = self
            .lake
            .cached_view_definitions()
            .into_iter()
            .map(|(n, _)| (n.schema, n.table))
            .collect();
        let no_views = HashMap::new();
        let mut owned = Vec::with_capacity(batches.len());
        for batch in batches {
            let (Some(schemas), Some(tables), Ok(at)) = (
                text(&batch, "schemaname"),
                text(&batch, "tablename"),
                batch.schema().index_of("tableowner"),
            ) else {
                owned.push(batch);
                continue;
            };
            let mut owners = Vec::with_capacity(batch.num_rows());
            for (schema, table) in schemas.iter().zip(tables.iter()) {
                let owner = match (schema, table) {
                    (Some(schema), Some(table)) => self.owner_of(schema, table, &no_views).await,
                    _ => None,
                };
                owners.push(owner.unwrap_or_else(|| BOOTSTRAP_USER.to_string()));
            }
            let mut columns = batch.columns().to_vec();
            columns[at] = Arc::new(StringArray::from(owners));
            owned.push(RecordBatch::try_new(batch.schema(), columns)?);
        }
        if views.is_empty() {
            return Ok(owned);
        }
        owned
            .iter()
            .map(|batch| {
                let (Some(schemas), Some(tables)) = (
                    batch.column(0).as_any().downcast_ref::<StringArray>(),
                    batch.column(1).as_any().downcast_ref::<StringArray>(),
                ) else {
                    return Ok(batch.clone());
                };
                let keep: BooleanArray = schemas
                    .iter()
                    .zip(tables.iter())
                    .map(|(s, t)| {
                        let key = (
                            s.unwrap_or_default().to_string(),
                            t.unwrap_or_default().to_string(),
                        );
                        Some(!views.contains(&key))
                    })
                    .collect();
                Ok(datafusion::arrow::compute::filter_record_batch(
                    batch, &keep,
                )?)
            })
            .collect()
    }

    /// The stored views by (schema, name), from the catalog's listing.
    fn views_by_name(&self) -> HashMap<(String, String), Arc<lakegres_delta::StoredView>> {
        self.lake
            .cached_view_definitions()
            .into_iter()
            .map(|(n, v)| ((n.schema, n.table), v))
            .collect()
    }

    /// The rows of one of the crate's tables.
    async fn collect(&self, name: &str) -> DFResult<(SchemaRef, Vec<RecordBatch>)> {
        let table = self.inner.build_table_by_name(name)?.ok_or_else(|| {
            datafusion::error::DataFusionError::Internal(format!("no pg_catalog.{name}"))
        })?;
        Ok(match table {
            PgCatalogTable::Dynamic(stream) => {
                let batches = stream
                    .execute(Arc::new(TaskContext::default()))
                    .try_collect()
                    .await?;
                (Arc::clone(stream.schema()), batches)
            }
            PgCatalogTable::Static(t) => (t.schema(), t.data().to_vec()),
            PgCatalogTable::Empty(t) => (t.schema(), Vec::new()),
        })
    }

    /// The tables' rows as pg_namespace and (with `classes`) pg_class have
    /// them: each user schema and relation with the crate's OID and ours.
    async fn relations(&self, classes: bool) -> DFResult<Relations> {
        let (_, namespaces) = self.collect("pg_namespace").await?;
        let mut relations = Relations::default();
        let mut schema_names: HashMap<i32, String> = HashMap::new();
        for batch in &namespaces {
            let (Some(oids), Some(names)) = (int32(batch, "oid"), text(batch, "nspname")) else {
                continue;
            };
            for i in 0..batch.num_rows() {
                let oid = oids.value(i);
                let name = names.value(i).to_string();
                if oid >= FIRST_USER_OID {
                    relations
                        .oids
                        .insert(oid, stable_oid(&format!("namespace {name}")));
                }
                schema_names.insert(oid, name);
            }
        }
        relations.namespaces = namespaces;
        if !classes {
            return Ok(relations);
        }
        let (_, classes) = self.collect("pg_class").await?;
        for batch in &classes {
            let (Some(oids), Some(names), Some(spaces)) = (
                int32(batch, "oid"),
                text(batch, "relname"),
                int32(batch, "relnamespace"),
            ) else {
                continue;
            };
            for i in 0..batch.num_rows() {
                let oid = oids.value(i);
                if oid < FIRST_USER_OID {
                    continue;
                }
                let schema = schema_names
                    .get(&spaces.value(i))
                    .cloned()
                    .unwrap_or_default();
                let table = names.value(i).to_string();
                let ours = SYSTEM_RELATIONS
                    .iter()
                    .find(|(name, _)| schema == "pg_catalog" && *name == table)
                    .map(|(_, oid)| *oid)
                    .unwrap_or_else(|| stable_oid(&format!("relation {schema}.{table}")));
                relations.oids.insert(oid, ours);
                relations.tables.push((ours, schema, table));
            }
        }
        relations.classes = classes;
        Ok(relations)
    }

    /// pg_class's `relowner`: the user who created each table or view (the
    /// crate writes 0), so `\dt` and dbt's catalog name the owner.
    async fn owners(
        &self,
        relations: &Relations,
        batches: Vec<RecordBatch>,
    ) -> DFResult<Vec<RecordBatch>> {
        let names: HashMap<i32, (&str, &str)> = relations
            .tables
            .iter()
            .map(|(oid, schema, table)| (*oid, (schema.as_str(), table.as_str())))
            .collect();
        let views = self.views_by_name();
        let mut out = Vec::with_capacity(batches.len());
        for batch in batches {
            let (Some(oids), Ok(at)) = (int32(&batch, "oid"), batch.schema().index_of("relowner"))
            else {
                out.push(batch);
                continue;
            };
            let mut owners = Vec::with_capacity(batch.num_rows());
            for oid in oids.values() {
                let owner = match names.get(oid) {
                    Some((schema, table)) => self.owner_of(schema, table, &views).await,
                    None => None,
                };
                owners.push(user_oid(owner.as_deref()));
            }
            let mut columns = batch.columns().to_vec();
            columns[at] = cast(
                &(Arc::new(Int32Array::from(owners)) as ArrayRef),
                columns[at].data_type(),
            )?;
            out.push(RecordBatch::try_new(batch.schema(), columns)?);
        }
        Ok(out)
    }

    /// The user who created a table or view of the warehouse.
    async fn owner_of(
        &self,
        schema: &str,
        table: &str,
        views: &HashMap<(String, String), Arc<lakegres_delta::StoredView>>,
    ) -> Option<String> {
        if let Some(view) = views.get(&(schema.to_string(), table.to_string())) {
            return Some(view.owner.clone());
        }
        // pg_catalog's and information_schema's own tables are no Delta tables.
        if !self.lake.cached_schema_exists(schema) {
            return None;
        }
        self.lake
            .table_owner(&TableName::new(schema, table).ok()?)
            .await
    }

    /// pg_attribute's `atttypid` and `atttypmod` of the columns whose type
    /// has a modifier, as Postgres keeps them, so `\d` and pgjdbc's
    /// `getColumns` (COLUMN_SIZE, DECIMAL_DIGITS) show `numeric(12,2)` and
    /// `character varying(20)`: NUMERIC's typmod is `((precision << 16) |
    /// scale) + 4`, a VARCHAR(n) / CHAR(n) column (a STRING to Arrow, TEXT
    /// to the crate) is `varchar` / `bpchar` with typmod `n + 4`. The crate
    /// writes -1 for every column.
    async fn column_typmods(
        &self,
        relations: &Relations,
        batches: Vec<RecordBatch>,
    ) -> DFResult<Vec<RecordBatch>> {
        const NUMERIC_OID: i32 = 1700;
        const TEXT_OID: i32 = 25;
        let names: HashMap<i32, (&str, &str)> = relations
            .tables
            .iter()
            .map(|(oid, schema, table)| (*oid, (schema.as_str(), table.as_str())))
            .collect();
        // Each table's columns with a modifier, read once.
        let mut modified: HashMap<i32, HashMap<String, Modifier>> = HashMap::new();
        let mut out = Vec::with_capacity(batches.len());
        for batch in batches {
            let (Some(relids), Some(types), Some(attnames)) = (
                int32(&batch, "attrelid"),
                int32(&batch, "atttypid"),
                text(&batch, "attname"),
            ) else {
                out.push(batch);
                continue;
            };
            let (Ok(type_at), Ok(at)) = (
                batch.schema().index_of("atttypid"),
                batch.schema().index_of("atttypmod"),
            ) else {
                out.push(batch);
                continue;
            };
            let mut typids: Vec<i32> = types.values().to_vec();
            let mut typmods: Vec<i32> = batch
                .column(at)
                .as_primitive::<Int32Type>()
                .values()
                .to_vec();
            for i in 0..typmods.len() {
                if !matches!(typids[i], NUMERIC_OID | TEXT_OID) {
                    continue;
                }
                let relid = relids.value(i);
                let columns = match modified.entry(relid) {
                    std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                    std::collections::hash_map::Entry::Vacant(new) => {
                        let read = match names.get(&relid) {
                            Some((schema, table)) => self.modified_columns(schema, table).await,
                            None => HashMap::new(),
                        };
                        new.insert(read)
                    }
                };
                match columns.get(attnames.value(i)) {
                    Some(Modifier::Numeric(p, s)) => {
                        typmods[i] = ((i32::from(*p) << 16) | i32::from(*s)) + 4;
                    }
                    Some(Modifier::Chars(declared)) => {
                        typids[i] = if declared.fixed { 1042 } else { 1043 };
                        typmods[i] = i32::try_from(declared.length)
                            .unwrap_or(i32::MAX - 4)
                            .saturating_add(4);
                    }
                    None => {}
                }
            }
            let mut columns = batch.columns().to_vec();
            columns[type_at] = cast(
                &(Arc::new(Int32Array::from(typids)) as ArrayRef),
                columns[type_at].data_type(),
            )?;
            columns[at] = Arc::new(Int32Array::from(typmods));
            out.push(RecordBatch::try_new(batch.schema(), columns)?);
        }
        Ok(out)
    }

    /// A table's or view's columns whose type has a modifier, by lower-case
    /// name (none for a missing table).
    async fn modified_columns(&self, schema: &str, table: &str) -> HashMap<String, Modifier> {
        let Ok(name) = TableName::new(schema, table) else {
            return HashMap::new();
        };
        if let Some(view) = self
            .views_by_name()
            .remove(&(name.schema.clone(), name.table.clone()))
        {
            return view
                .columns
                .iter()
                .filter_map(|c| match c.arrow_type.parse::<DataType>() {
                    Ok(DataType::Decimal128(p, s)) => Some((
                        c.name.to_lowercase(),
                        Modifier::Numeric(p, u8::try_from(s).unwrap_or(0)),
                    )),
                    _ => None,
                })
                .collect();
        }
        let Ok(table) = self.lake.load_table(&name).await else {
            return HashMap::new();
        };
        let Ok(info) = table.info(&name) else {
            return HashMap::new();
        };
        info.columns
            .into_iter()
            .filter_map(|f| {
                let modifier = match f.decimal_digits {
                    Some((precision, scale)) => Modifier::Numeric(precision, scale),
                    None => Modifier::Chars(f.char_varchar?),
                };
                Some((f.name.to_lowercase(), modifier))
            })
            .collect()
    }

    /// pg_description: the crate's rows for built-in objects, then a row per
    /// table comment (objsubid 0) and column comment (objsubid = attnum).
    async fn descriptions(&self, relations: &Relations) -> DFResult<Vec<RecordBatch>> {
        let (schema, mut batches) = self.collect("pg_description").await?;
        let mut objoid = Vec::new();
        let mut objsubid = Vec::new();
        let mut description = Vec::new();
        let views = self.views_by_name();
        for (oid, schema_name, table) in &relations.tables {
            if let Some(view) = views.get(&(schema_name.clone(), table.clone())) {
                let columns = view.columns.iter().map(|c| c.comment.as_ref());
                for (i, comment) in std::iter::once(view.comment.as_ref())
                    .chain(columns)
                    .enumerate()
                {
                    if let Some(comment) = comment {
                        objoid.push(*oid);
                        objsubid.push(i32::try_from(i).unwrap_or(i32::MAX));
                        description.push(comment.clone());
                    }
                }
                continue;
            }
            let Ok(name) = TableName::new(schema_name, table) else {
                continue;
            };
            // Views of the catalog itself and tables without columns have
            // no Delta metadata to read.
            let Ok(table) = self.lake.load_table(&name).await else {
                continue;
            };
            let Ok(info) = table.info(&name) else {
                continue;
            };
            if let Some(comment) = info.description {
                objoid.push(*oid);
                objsubid.push(0);
                description.push(comment);
            }
            for (i, field) in info.columns.into_iter().enumerate() {
                if let Some(comment) = field.comment {
                    objoid.push(*oid);
                    objsubid.push(i32::try_from(i + 1).unwrap_or(i32::MAX));
                    description.push(comment);
                }
            }
        }
        if objoid.is_empty() {
            return Ok(batches);
        }
        let rows = objoid.len();
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| {
                let array: ArrayRef = match f.name().as_str() {
                    "objoid" => Arc::new(Int32Array::from(objoid.clone())),
                    "classoid" => Arc::new(Int32Array::from(vec![PG_CLASS_OID; rows])),
                    "objsubid" => Arc::new(Int32Array::from(objsubid.clone())),
                    _ => Arc::new(StringArray::from(description.clone())),
                };
                cast(&array, f.data_type())
            })
            .collect::<Result<_, _>>()?;
        batches.push(RecordBatch::try_new(schema, columns)?);
        Ok(batches)
    }
}

/// The user relations of the catalog, read once per table lookup.
#[derive(Default)]
struct Relations {
    /// The crate's OID → ours, for schemas and relations.
    oids: HashMap<i32, i32>,
    /// Our OID, schema and name of each user relation.
    tables: Vec<(i32, String, String)>,
    /// The crate's pg_namespace and pg_class rows they were read from.
    namespaces: Vec<RecordBatch>,
    classes: Vec<RecordBatch>,
}

impl Relations {
    /// `columns` of `batches` with the crate's OIDs replaced by ours.
    fn remap(&self, batches: Vec<RecordBatch>, columns: &[&str]) -> DFResult<Vec<RecordBatch>> {
        batches
            .into_iter()
            .map(|batch| {
                let schema = batch.schema();
                let arrays: Vec<ArrayRef> = schema
                    .fields()
                    .iter()
                    .zip(batch.columns())
                    .map(|(field, array)| {
                        if !columns.contains(&field.name().as_str())
                            || field.data_type() != &DataType::Int32
                        {
                            return Arc::clone(array);
                        }
                        let values: Int32Array = array
                            .as_primitive::<Int32Type>()
                            .iter()
                            .map(|v| v.map(|v| self.oids.get(&v).copied().unwrap_or(v)))
                            .collect();
                        Arc::new(values) as ArrayRef
                    })
                    .collect();
                Ok(RecordBatch::try_new(schema, arrays)?)
            })
            .collect()
    }
}

fn int32<'a>(
    batch: &'a RecordBatch,
    name: &str,
) -> Option<&'a datafusion::arrow::array::PrimitiveArray<Int32Type>> {
    batch.column_by_name(name)?.as_primitive_opt::<Int32Type>()
}

fn text<'a>(batch: &'a RecordBatch, name: &str) -> Option<&'a StringArray> {
    batch
        .column_by_name(name)?
        .as_any()
        .downcast_ref::<StringArray>()
}

/// The bootstrap superuser: owner of the catalog's own relations and of
/// tables whose first commit names no user.
const BOOTSTRAP_USER_OID: i32 = 10;
const BOOTSTRAP_USER: &str = "postgres";

/// The users the catalog has given an OID (as some relation's owner), for
/// `pg_get_userbyid`.
static USERS: std::sync::LazyLock<std::sync::RwLock<HashMap<i32, String>>> =
    std::sync::LazyLock::new(Default::default);

/// A user's OID, stable as relation OIDs are.
fn user_oid(user: Option<&str>) -> i32 {
    let Some(user) = user else {
        return BOOTSTRAP_USER_OID;
    };
    let oid = stable_oid(&format!("role {user}"));
    if let Ok(mut users) = USERS.write() {
        users.entry(oid).or_insert_with(|| user.to_string());
    }
    oid
}

/// `pg_get_userbyid(oid)`: the name of a relation's owner (the crate's
/// answers `postgres` for every OID).
pub(crate) fn user_by_id() -> datafusion::logical_expr::ScalarUDF {
    use datafusion::logical_expr::{create_udf, ColumnarValue, Volatility};
    create_udf(
        "pg_get_userbyid",
        vec![DataType::Int32],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(|args: &[ColumnarValue]| {
            let oids = ColumnarValue::values_to_arrays(args)?;
            let Some(oids) = oids.first() else {
                return Ok(ColumnarValue::Scalar(
                    datafusion::common::ScalarValue::Utf8(None),
                ));
            };
            let oids = cast(oids, &DataType::Int32)?;
            let users = USERS.read().map(|u| u.clone()).unwrap_or_default();
            let names: StringArray = oids
                .as_primitive::<Int32Type>()
                .iter()
                .map(|oid| {
                    oid.map(|oid| {
                        users
                            .get(&oid)
                            .cloned()
                            .unwrap_or_else(|| BOOTSTRAP_USER.to_string())
                    })
                })
                .collect();
            Ok(ColumnarValue::Array(Arc::new(names)))
        }),
    )
}

/// The OID pg_class gives a table or view of the warehouse.
pub(crate) fn relation_oid(name: &TableName) -> i32 {
    stable_oid(&format!("relation {}.{}", name.schema, name.table))
}

/// An OID from a name: the same for the same object in every session and
/// after restarts (FNV-1a, folded into the user range).
fn stable_oid(key: &str) -> i32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in key.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    let span = (i32::MAX - FIRST_USER_OID) as u32;
    FIRST_USER_OID + (hash % span) as i32
}

/// A column type's modifier, as pg_attribute's `atttypmod` shows it.
enum Modifier {
    /// NUMERIC(precision, scale).
    Numeric(u8, u8),
    /// VARCHAR(n) or CHAR(n).
    Chars(lakegres_delta::types::CharVarchar),
}

/// Tables whose rows we change.
const OURS: &[&str] = &[
    "pg_namespace",
    "pg_class",
    "pg_attribute",
    "pg_description",
    "pg_views",
    "pg_tables",
];

/// pg_attribute's `atttypid` and `atttypmod` for a column of an Arrow type
/// that the crate's pg_attribute does not list (a session's temporary
/// table's): the type OID it would give (arrow-pg's mapping, TEXT for the
/// rest) and NUMERIC's modifier.
pub(crate) fn attribute_type(data_type: &DataType) -> (u32, i32) {
    const TEXT_OID: u32 = 25;
    let typid = arrow_pg::datatypes::into_pg_type(data_type)
        .map(|t| t.oid())
        .unwrap_or(TEXT_OID);
    let typmod = match data_type {
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => {
            ((i32::from(*p) << 16) | i32::from(*s)) + 4
        }
        _ => -1,
    };
    (typid, typmod)
}

/// Catalogs whose `int2vector`/`oidvector` columns the crate keeps as text,
/// with the element type each needs: SQLAlchemy's `get_indexes` and
/// `get_unique_constraints` plan `a.attnum = ANY(ix.indkey)`, which a text
/// column refuses. Warehouse tables have neither indexes nor key
/// constraints, so these catalogs have no rows (the crate's rows describe
/// Postgres' own system catalogs, which are not here).
const VECTOR_COLUMNS: &[(&str, &[(&str, DataType)])] = &[
    (
        "pg_index",
        &[
            ("indkey", DataType::Int16),
            ("indoption", DataType::Int16),
            ("indcollation", DataType::Int32),
            ("indclass", DataType::Int32),
        ],
    ),
    (
        "pg_constraint",
        &[
            ("conkey", DataType::Int16),
            ("confkey", DataType::Int16),
            ("confdelsetcols", DataType::Int16),
            ("conpfeqop", DataType::Int32),
            ("conppeqop", DataType::Int32),
            ("conffeqop", DataType::Int32),
            ("conexclop", DataType::Int32),
        ],
    ),
];

/// `table` with no rows, its vector columns as arrays of their elements.
fn no_rows_with_vectors(
    table: Option<Arc<dyn TableProvider>>,
    columns: &[(&str, DataType)],
) -> DFResult<Option<Arc<dyn TableProvider>>> {
    use datafusion::arrow::datatypes::{Field, Schema};
    let Some(table) = table else {
        return Ok(None);
    };
    let fields: Vec<Field> = table
        .schema()
        .fields()
        .iter()
        .map(|f| match columns.iter().find(|(c, _)| c == f.name()) {
            Some((_, element)) => Field::new(
                f.name(),
                DataType::List(Arc::new(Field::new("item", element.clone(), true))),
                true,
            ),
            None => f.as_ref().clone(),
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    Ok(Some(Arc::new(datafusion::datasource::MemTable::try_new(
        schema,
        vec![vec![]],
    )?)))
}

/// `pg_get_viewdef(oid [, pretty])`: a stored view's query (psql's `\d+ v`,
/// SQLAlchemy's `get_view_definition`), from the catalog's listing.
pub(crate) fn view_definition(lake: Arc<Catalog>) -> datafusion::logical_expr::ScalarUDF {
    use datafusion::logical_expr::{ColumnarValue, SimpleScalarUDF, TypeSignature, Volatility};
    let signature = datafusion::logical_expr::Signature::one_of(
        vec![
            TypeSignature::Exact(vec![DataType::Int64]),
            TypeSignature::Exact(vec![DataType::Int64, DataType::Boolean]),
        ],
        Volatility::Stable,
    );
    let definition = move |args: &[ColumnarValue]| {
        let definitions: HashMap<i64, String> = lake
            .cached_view_definitions()
            .into_iter()
            .map(|(name, view)| {
                let oid = stable_oid(&format!("relation {}.{}", name.schema, name.table));
                (i64::from(oid), view.sql.clone())
            })
            .collect();
        let oids = ColumnarValue::values_to_arrays(&args[..1])?;
        let oids = cast(&oids[0], &DataType::Int64)?;
        let sql: StringArray = oids
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .iter()
            .map(|oid| oid.and_then(|oid| definitions.get(&oid).cloned()))
            .collect();
        Ok(ColumnarValue::Array(Arc::new(sql)))
    };
    datafusion::logical_expr::ScalarUDF::from(SimpleScalarUDF::new_with_signature(
        "pg_get_viewdef",
        signature,
        DataType::Utf8,
        Arc::new(definition),
    ))
}

#[async_trait]
impl SchemaProvider for LakePgCatalog {
    fn table_names(&self) -> Vec<String> {
        self.shared.inner.table_names()
    }

    async fn table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        let lower = name.to_ascii_lowercase();
        if let Some((_, columns)) = VECTOR_COLUMNS.iter().find(|(t, _)| *t == lower) {
            return no_rows_with_vectors(self.shared.inner.table(name).await?, columns);
        }
        let Some(ours) = OURS.iter().find(|t| **t == lower) else {
            return self.shared.inner.table(name).await;
        };
        // Rows are read when the table is scanned, not here: the crate's
        // pg_class looks up every table of every schema, these included.
        let Some(table) = self.shared.inner.build_table_by_name(ours)? else {
            return Ok(None);
        };
        let partition = Arc::new(Remapped {
            shared: Arc::clone(&self.shared),
            name: ours,
            schema: table.schema(),
        });
        Ok(Some(Arc::new(StreamingTable::try_new(
            table.schema(),
            vec![partition],
        )?)))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.shared.inner.table_exist(name)
    }
}

/// One of [`OURS`], read when scanned.
#[derive(Debug)]
struct Remapped {
    shared: Arc<Shared>,
    name: &'static str,
    schema: SchemaRef,
}

impl PartitionStream for Remapped {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let shared = Arc::clone(&self.shared);
        let name = self.name;
        let rows = futures::stream::once(async move { shared.rows(name).await })
            .map_ok(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
            .try_flatten();
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            rows,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oids_are_in_the_user_range_and_depend_on_the_name_only() {
        let a = stable_oid("relation default.t");
        assert_eq!(a, stable_oid("relation default.t"));
        assert_ne!(a, stable_oid("relation default.u"));
        assert!(a >= FIRST_USER_OID);
    }
}

/// A session's catalog list, held weakly. pg_catalog's provider lists the
/// session's catalogs, and is itself a schema of one of them: holding the
/// list strongly made a cycle that kept every session's catalogs alive
/// after its connection closed (about 5 KiB per connection; found by the
/// wire fuzzer).
#[derive(Debug)]
pub(crate) struct WeakCatalogList(
    pub std::sync::Weak<dyn datafusion::catalog::CatalogProviderList>,
);

impl datafusion::catalog::CatalogProviderList for WeakCatalogList {
    fn register_catalog(
        &self,
        name: String,
        catalog: Arc<dyn datafusion::catalog::CatalogProvider>,
    ) -> Option<Arc<dyn datafusion::catalog::CatalogProvider>> {
        self.0.upgrade()?.register_catalog(name, catalog)
    }

    fn catalog_names(&self) -> Vec<String> {
        self.0
            .upgrade()
            .map(|list| list.catalog_names())
            .unwrap_or_default()
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn datafusion::catalog::CatalogProvider>> {
        self.0.upgrade()?.catalog(name)
    }
}
