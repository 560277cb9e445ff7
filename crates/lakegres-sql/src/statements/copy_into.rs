//! `COPY INTO t FROM 'folder' FILEFORMAT = …` (SEMANTICS.md §5): load the
//! files of a folder that were not loaded before, in one commit.
//!
//! The files loaded are recorded with that commit (see
//! [`lakegres_delta::copy_into`]): the record survives restarts, and two
//! COPY INTO that load the same file at once conflict at commit — the
//! loser retries and finds the file loaded. Files whose columns agree are
//! read in one scan.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{Column, ParamValues};
use datafusion::datasource::{provider_as_source, TableProvider};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{cast, col, lit, Expr, LogicalPlan, LogicalPlanBuilder, Union};
use datafusion::prelude::{SessionConfig, SessionContext};
use lakegres_delta::copy_into::LoadTarget;
use lakegres_delta::files::glob_match;
use lakegres_delta::WriteMode;
use lakegres_delta::{DeltaProvider, FileEntry, SchemalessTable, SqlState, WriteOptions};
use lakegres_functions::ansi_cast::store_assignment;

use crate::error::class;
use crate::error::{Error, Result};
use crate::files::{file_table, file_tables, files_at, FileSpec};
use crate::names::table_name;
use crate::output::{fixed, rows_output, Description, Output};
use crate::parser::{CopyInto, COPY_SOURCE};
use crate::plan::bind;
use crate::statement_context::StatementContext;

/// Tries when a concurrent COPY INTO wins the commit race.
const ATTEMPTS: usize = 3;

/// `num_affected_rows, num_inserted_rows, num_skipped_corrupt_files`.
pub(crate) fn copy_into_schema() -> SchemaRef {
    Arc::new(Schema::new(
        [
            "num_affected_rows",
            "num_inserted_rows",
            "num_skipped_corrupt_files",
        ]
        .into_iter()
        .map(|n| Field::new(n, DataType::Int64, false))
        .collect::<Vec<_>>(),
    ))
}

/// Runs a COPY INTO.
pub(crate) async fn copy_into(
    cx: &StatementContext<'_>,
    c: &CopyInto,
    params: Option<&ParamValues>,
) -> Result<Output> {
    let name = table_name(cx, &c.table)?;
    let roots = Arc::clone(cx.file_roots());
    let (dir, all) = files_at(&roots, &c.path).await?;
    let selected: Vec<FileEntry> = all
        .into_iter()
        .filter(|f| match (&c.files, &c.pattern) {
            (Some(files), _) => files.iter().any(|n| n == &f.name),
            (None, Some(p)) => glob_match(p, &f.name),
            (None, None) => true,
        })
        .collect();
    let copy_option = |key: &str| {
        c.copy_options
            .iter()
            .any(|(k, v)| k == key && v.eq_ignore_ascii_case("true"))
    };
    let force = copy_option("force");
    let merge_schema = copy_option("mergeschema");
    let spec = FileSpec::new(&c.format, c.format_options.clone());

    let catalog = cx.engine().catalog();
    let mut attempt = 0;
    let loaded = loop {
        attempt += 1;
        let target = match cx.load_table(&name).await {
            Ok(table) => Target::existing(DeltaProvider::try_new(name.clone(), table)?)?,
            Err(lakegres_delta::Error::SchemaNotSet { .. }) if cx.catalog().in_transaction() => {
                return Err(Error::NotInTransaction {
                    command: "COPY INTO a table without columns",
                });
            }
            Err(lakegres_delta::Error::SchemaNotSet { .. }) => {
                let Some(create) = catalog.schemaless(&name).await? else {
                    // Created by a concurrent load just now.
                    continue;
                };
                if !merge_schema {
                    return Err(mismatch(format!(
                        "table {name} has no columns yet: \
                         COPY_OPTIONS ('mergeSchema' = 'true') gives it the files' columns"
                    )));
                }
                Target::schemaless(name.clone(), catalog.new_table(&name)?, create)
            }
            Err(e) => return Err(e.into()),
        };
        let todo = target.not_loaded(&selected, force).await?;
        if todo.is_empty() {
            break Loaded {
                rows: 0,
                skipped: 0,
            };
        }
        match load(cx, &target, &todo, c, params, &spec, merge_schema).await {
            Err(e) if e.sqlstate() == SqlState::SERIALIZATION_FAILURE && attempt < ATTEMPTS => {
                tracing::debug!(table = %name, "COPY INTO lost a commit race; retrying");
                continue;
            }
            Ok(loaded) => break loaded,
            Err(e) => {
                return Err(match e {
                    Error::DataFusion(df) => Error::CopyIntoFailed {
                        what: format!("loading files of {dir}"),
                        source: Box::new(Error::DataFusion(df)),
                    },
                    other => other,
                })
            }
        }
    };
    let rows = i64::try_from(loaded.rows).unwrap_or(i64::MAX);
    let skipped = i64::try_from(loaded.skipped).unwrap_or(i64::MAX);
    let batch = RecordBatch::try_new(
        copy_into_schema(),
        vec![
            Arc::new(Int64Array::from(vec![rows])),
            Arc::new(Int64Array::from(vec![rows])),
            Arc::new(Int64Array::from(vec![skipped])),
        ],
    )
    .map_err(datafusion::error::DataFusionError::from)?;
    Ok(rows_output(batch, fixed(&format!("COPY {rows}"))))
}

/// The table a load writes to, with what the SQL side needs of it.
struct Target {
    storage: LoadTarget,
    /// The columns as DataFusion names them, and as Delta declares them.
    schema: SchemaRef,
    declared: Vec<String>,
    /// What `CREATE TABLE t;` said about a table without columns.
    create: Option<SchemalessTable>,
}

impl Target {
    fn existing(provider: DeltaProvider) -> Result<Self> {
        Ok(Self {
            storage: LoadTarget::existing(&provider)?,
            schema: provider.schema(),
            declared: provider.declared_column_names(),
            create: None,
        })
    }

    fn schemaless(
        name: lakegres_delta::TableName,
        table: lakegres_delta::Table,
        create: SchemalessTable,
    ) -> Self {
        Self {
            storage: LoadTarget::without_columns(name, &table),
            schema: Arc::new(Schema::empty()),
            declared: Vec::new(),
            create: Some(create),
        }
    }

    /// The files the table has no record of (all of them with `force`).
    async fn not_loaded(&self, files: &[FileEntry], force: bool) -> Result<Vec<FileEntry>> {
        if force {
            return Ok(files.to_vec());
        }
        let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
        let fresh = self.storage.not_loaded(&paths).await?;
        Ok(files
            .iter()
            .zip(fresh)
            .filter(|(_, fresh)| *fresh)
            .map(|(f, _)| f.clone())
            .collect())
    }
}

/// What one load did.
struct Loaded {
    rows: u64,
    skipped: u64,
}

/// Reads `files`, shapes their rows as the table, and writes them with the
/// files' records: one commit. With `ignoreCorruptFiles`, a file that
/// cannot be read whole is left out (and not recorded as loaded).
async fn load(
    cx: &StatementContext<'_>,
    target: &Target,
    files: &[FileEntry],
    c: &CopyInto,
    params: Option<&ParamValues>,
    spec: &FileSpec,
    merge_schema: bool,
) -> Result<Loaded> {
    let ignore_corrupt = c
        .format_options
        .iter()
        .any(|(k, v)| k == "ignorecorruptfiles" && v.eq_ignore_ascii_case("true"));
    let ctx = private_context(cx);
    let declared = &target.declared;
    let mut skipped = 0u64;
    // The rows to load: a plan per group of files read together, with the
    // files it reads.
    let mut kept: Vec<(Vec<&FileEntry>, LogicalPlan)> = Vec::new();
    let mut new_columns: Vec<(String, DataType)> = Vec::new();
    let mut add_columns = |added: Vec<(String, DataType)>| {
        for a in added {
            if !new_columns
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(&a.0))
            {
                new_columns.push(a);
            }
        }
    };
    if ignore_corrupt {
        // Each file on its own, so that one that cannot be read whole is
        // left out.
        for (i, file) in files.iter().enumerate() {
            let Ok(plan) = file_plan(&ctx, file, i, c, params, spec).await else {
                skipped += 1;
                continue;
            };
            let (plan, added) = shape(plan, &target.schema, declared, c, merge_schema)?;
            if read_through(&ctx, &plan).await.is_err() {
                skipped += 1;
                continue;
            }
            add_columns(added);
            kept.push((vec![file], plan));
        }
    } else {
        let tables = file_tables(&ctx.state(), files, spec)
            .await
            .map_err(|(i, e)| in_file(&files[i], e))?;
        for (g, (members, table)) in tables.into_iter().enumerate() {
            let plan = source_plan(&ctx, table, g, c, params).await?;
            let (plan, added) = shape(plan, &target.schema, declared, c, merge_schema)?;
            add_columns(added);
            kept.push((members.into_iter().map(|i| &files[i]).collect(), plan));
        }
    }
    if kept.is_empty() {
        return Ok(Loaded { rows: 0, skipped });
    }
    // Every group's rows get the same columns, new ones included, in one
    // union (nested two-way unions cost the optimizer quadratic time).
    let inputs = kept
        .iter()
        .map(|(_, plan)| pad(plan.clone(), declared, &new_columns).map(Arc::new))
        .collect::<Result<Vec<_>>>()?;
    let mut plan = match <[_; 1]>::try_from(inputs) {
        Ok([one]) => Arc::unwrap_or_clone(one),
        Err(inputs) => LogicalPlan::Union(Union::try_new_with_loose_types(inputs)?),
    };
    if !new_columns.is_empty() {
        plan = narrow_new_ints(&ctx, plan, declared.len()).await?;
    }
    let input = ctx.state().create_physical_plan(&plan).await?;
    let mut options = WriteOptions::new(WriteMode::Append);
    options.merge_schema = target.storage.has_columns() && !new_columns.is_empty();
    if let Some(create) = &target.create {
        // The first commit of a table created without columns.
        options.description = create.comment.clone();
        options.configuration = create.configuration.clone();
    }
    let loaded: Vec<String> = kept
        .iter()
        .flat_map(|(group, _)| group.iter().map(|f| f.path.clone()))
        .collect();
    let written = target
        .storage
        .write(input, Arc::new(cx.context().state()), options, &loaded)
        .await;
    match written {
        Ok(rows) => {
            if target.create.is_some() {
                cx.engine()
                    .catalog()
                    .clear_schemaless(target.storage.name())
                    .await?;
            }
            Ok(Loaded { rows, skipped })
        }
        Err(e) if e.sqlstate() == SqlState::SERIALIZATION_FAILURE => Err(e.into()),
        Err(e) => {
            // Name the file: read them one by one until one fails.
            for (i, file) in kept.iter().flat_map(|(group, _)| group).enumerate() {
                let read = match file_plan(&ctx, file, i, c, params, spec).await {
                    Ok(plan) => match shape(plan, &target.schema, declared, c, merge_schema) {
                        Ok((plan, _)) => read_through(&ctx, &plan).await,
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                };
                if let Err(file_error) = read {
                    return Err(in_file(file, file_error));
                }
            }
            Err(e.into())
        }
    }
}

/// The rows of one file, through the COPY INTO's SELECT if it has one.
async fn file_plan(
    ctx: &SessionContext,
    file: &FileEntry,
    i: usize,
    c: &CopyInto,
    params: Option<&ParamValues>,
    spec: &FileSpec,
) -> Result<LogicalPlan> {
    let source = file_table(&ctx.state(), std::slice::from_ref(file), spec).await?;
    source_plan(ctx, source, i, c, params).await
}

/// The rows of `source`, through the COPY INTO's SELECT if it has one
/// (`i` tells the sources of one load apart), its `$n` bound to `params`.
async fn source_plan(
    ctx: &SessionContext,
    source: Arc<dyn TableProvider>,
    i: usize,
    c: &CopyInto,
    params: Option<&ParamValues>,
) -> Result<LogicalPlan> {
    Ok(match &c.select {
        Some(select) => {
            let table = format!("{COPY_SOURCE}_{i}");
            ctx.register_table(table.as_str(), source)?;
            let sql = select.replace(COPY_SOURCE, &table);
            bind(
                ctx.sql(&sql).await?.into_unoptimized_plan(),
                params.cloned(),
            )?
        }
        None => LogicalPlanBuilder::scan(COPY_SOURCE, provider_as_source(source), None)?.build()?,
    })
}

/// Reads a plan to its end, keeping nothing: whether the file is whole.
async fn read_through(ctx: &SessionContext, plan: &LogicalPlan) -> Result<()> {
    use futures::StreamExt;
    let mut stream = ctx
        .execute_logical_plan(plan.clone())
        .await?
        .execute_stream()
        .await?;
    while let Some(batch) = stream.next().await {
        batch?;
    }
    Ok(())
}

/// An error reading `file`, naming it.
fn in_file(file: &FileEntry, e: Error) -> Error {
    Error::CopyIntoFailed {
        what: format!("file {}", file.path),
        source: Box::new(e),
    }
}

fn private_context(cx: &StatementContext<'_>) -> SessionContext {
    let state = SessionStateBuilder::new()
        .with_config(SessionConfig::new())
        .with_runtime_env(Arc::clone(cx.engine().runtime()))
        .with_default_features()
        .build();
    SessionContext::new_with_state(state)
}

/// The file's columns as the table's: by name (case-insensitive) or, with
/// BY POSITION / a column list, by position; cast to the column types.
/// Returns the plan (table columns, then new ones) and the new columns.
fn shape(
    plan: LogicalPlan,
    target: &SchemaRef,
    declared: &[String],
    c: &CopyInto,
    merge_schema: bool,
) -> Result<(LogicalPlan, Vec<(String, DataType)>)> {
    let source: Vec<Column> = plan.schema().columns();
    let source_types: Vec<DataType> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    let mut assigned: HashMap<usize, usize> = HashMap::new();
    let mut added = Vec::new();
    if c.by_position || !c.columns.is_empty() {
        let targets: Vec<usize> = if c.columns.is_empty() {
            (0..declared.len()).collect()
        } else {
            c.columns
                .iter()
                .map(|ident| {
                    declared
                        .iter()
                        .position(|d| d.eq_ignore_ascii_case(&ident.value))
                        .ok_or_else(|| {
                            Error::analysis(
                                class::UNRESOLVED_COLUMN,
                                format!("column {} is not in the table", ident.value),
                            )
                        })
                })
                .collect::<Result<_>>()?
        };
        if source.len() > targets.len() {
            return Err(mismatch(format!(
                "the files have {} columns, the target {}",
                source.len(),
                targets.len()
            )));
        }
        for (s, t) in targets.iter().enumerate().take(source.len()) {
            assigned.insert(*t, s);
        }
    } else {
        for (s, column) in source.iter().enumerate() {
            match declared
                .iter()
                .position(|d| d.eq_ignore_ascii_case(&column.name))
            {
                Some(t) => {
                    assigned.insert(t, s);
                }
                None if merge_schema => added.push((column.name.clone(), source_types[s].clone())),
                None => {
                    return Err(mismatch(format!(
                        "the files have a column {} that the table does not \
                         (COPY_OPTIONS ('mergeSchema' = 'true') adds it)",
                        column.name
                    )))
                }
            }
        }
    }
    let mut exprs: Vec<Expr> = Vec::new();
    for (t, name) in declared.iter().enumerate() {
        let data_type = target.field(t).data_type().clone();
        let value = match assigned.get(&t) {
            Some(s) => Expr::Column(source[*s].clone()),
            None => lit(datafusion::common::ScalarValue::Null),
        };
        exprs.push(store_assignment(value, &data_type, name).alias(name));
    }
    for (name, _) in &added {
        let s = source
            .iter()
            .position(|c| &c.name == name)
            .ok_or_else(|| Error::Internal {
                message: format!("lost column {name}"),
            })?;
        exprs.push(Expr::Column(source[s].clone()).alias(name));
    }
    Ok((
        LogicalPlanBuilder::from(plan).project(exprs)?.build()?,
        added,
    ))
}

/// Adds the new columns another file brought (as NULL) so every file's
/// rows have the same columns.
fn pad(plan: LogicalPlan, declared: &[String], new: &[(String, DataType)]) -> Result<LogicalPlan> {
    let have: Vec<String> = plan
        .schema()
        .columns()
        .into_iter()
        .map(|c| c.name)
        .collect();
    let mut exprs: Vec<Expr> = declared
        .iter()
        .map(|n| col(Column::new_unqualified(n.clone())))
        .collect();
    for (name, data_type) in new {
        if have.contains(name) {
            exprs.push(
                cast(
                    col(Column::new_unqualified(name.clone())),
                    data_type.clone(),
                )
                .alias(name),
            );
        } else {
            exprs.push(
                cast(
                    lit(datafusion::common::ScalarValue::Null),
                    data_type.clone(),
                )
                .alias(name),
            );
        }
    }
    Ok(LogicalPlanBuilder::from(plan).project(exprs)?.build()?)
}

/// New BIGINT columns whose values all fit an INT become INT, as Spark's
/// CSV schema inference types small integers.
async fn narrow_new_ints(
    ctx: &SessionContext,
    plan: LogicalPlan,
    existing: usize,
) -> Result<LogicalPlan> {
    let columns = plan.schema().columns();
    let ints: Vec<usize> = (existing..columns.len())
        .filter(|i| plan.schema().field(*i).data_type() == &DataType::Int64)
        .collect();
    if ints.is_empty() {
        return Ok(plan);
    }
    let aggregates: Vec<Expr> = ints
        .iter()
        .flat_map(|i| {
            let c = col(columns[*i].clone());
            [
                datafusion::functions_aggregate::expr_fn::min(c.clone()),
                datafusion::functions_aggregate::expr_fn::max(c),
            ]
        })
        .collect();
    let stats = LogicalPlanBuilder::from(plan.clone())
        .aggregate(Vec::<Expr>::new(), aggregates)?
        .build()?;
    let batches = ctx.execute_logical_plan(stats).await?.collect().await?;
    let Some(batch) = batches.first() else {
        return Ok(plan);
    };
    let fits = |k: usize| -> bool {
        let value = |j: usize| {
            let a = batch.column(j);
            a.as_primitive_opt::<datafusion::arrow::datatypes::Int64Type>()
                .and_then(|p| (p.is_valid(0)).then(|| p.value(0)))
        };
        match (value(2 * k), value(2 * k + 1)) {
            (Some(lo), Some(hi)) => i32::try_from(lo).is_ok() && i32::try_from(hi).is_ok(),
            _ => true,
        }
    };
    let exprs: Vec<Expr> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| match ints.iter().position(|j| *j == i) {
            Some(k) if fits(k) => cast(col(c.clone()), DataType::Int32).alias(&c.name),
            _ => col(c.clone()),
        })
        .collect();
    Ok(LogicalPlanBuilder::from(plan).project(exprs)?.build()?)
}

fn mismatch(message: String) -> Error {
    Error::analysis(class::DELTA_METADATA_MISMATCH, message)
}

/// What the extended protocol's Describe reports of a COPY INTO: as many
/// `$n` as its SELECT holds, untyped (their types come from files not yet
/// read), and its result row.
pub(crate) fn describe(c: &CopyInto) -> Result<Description> {
    let mut count = 0;
    if let Some(select) = &c.select {
        let dialect = crate::parser::LakegresDialect::default();
        let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, select)
            .tokenize()
            .map_err(|e| Error::Internal {
                message: format!("the COPY INTO query does not tokenize: {e}"),
            })?;
        for token in tokens {
            if let sqlparser::tokenizer::Token::Placeholder(p) = token {
                if let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                    count = count.max(n);
                }
            }
        }
    }
    Ok(Description {
        params: vec![None; count],
        schema: Some(copy_into_schema()),
    })
}
