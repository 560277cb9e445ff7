//! The Databricks INSERT forms (SEMANTICS.md §2): column matching by
//! position, by list or BY NAME; static and dynamic PARTITION clauses;
//! INSERT OVERWRITE of a table or of partitions; REPLACE WHERE, REPLACE
//! USING and REPLACE ON. Each is one Delta commit.
//!
//! Appends and predicate overwrites (whole table, partitions, REPLACE WHERE)
//! stream through delta-rs' `WriteBuilder`; REPLACE USING / ON, which delete
//! by matching the new rows, go through `lakegres_delta::replace_matching`.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::datasource::{provider_as_source, MemTable, TableProvider};
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{
    binary_expr, cast, col, create_udf, lit, ColumnarValue, Expr as DfExpr, LogicalPlan,
    LogicalPlanBuilder, Operator, Volatility,
};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use lakegres_delta::WriteMode;
use lakegres_delta::{DeltaProvider, Replacement, WriteOptions};
use lakegres_functions::ansi_cast::store_assignment;
use sqlparser::ast::{self, Expr, ExprWithAlias, Ident};

use crate::error::class;
use crate::error::{Error, Result};
use crate::names::table_name;
use crate::output::{fixed, insert_result_schema, rows_output, Description, Output};
use crate::parser::{Insert, Replace};
use crate::plan::{bind, bind_expr, parameter_types, parameter_types_of};
use crate::statement_context::StatementContext;
use datafusion::arrow::array::{ArrayRef, Int64Array};
use datafusion::common::ParamValues;

/// The session setting that makes INSERT OVERWRITE dynamic (Spark's name
/// and a short one).
const OVERWRITE_MODE: &[&str] = &[
    "spark.sql.sources.partitionoverwritemode",
    "partitionoverwritemode",
];

/// Runs a Databricks INSERT, `params` its `$n` values.
pub(crate) async fn insert(
    cx: &StatementContext<'_>,
    ins: &Insert,
    params: Option<&ParamValues>,
) -> Result<Output> {
    let name = table_name(cx, &ins.table)?;
    let table = cx.load_table(&name).await?;
    if let Some(rows) =
        crate::statements::append_values::append(cx, &name, &table, ins, params).await?
    {
        return inserted(rows);
    }
    let provider = DeltaProvider::try_new(name.clone(), table)?;
    let Prepared {
        target,
        statics,
        ins,
        shaped,
    } = prepare(cx, &provider, ins, params).await?;
    let ins = &ins;

    if ins.overwrite || ins.replace.is_some() {
        target.refuse_if_append_only(&name.to_string())?;
    }
    let rows = match &ins.replace {
        None if !ins.overwrite => {
            write(cx, &provider, &target, shaped, WriteMode::Append, None).await?
        }
        None => overwrite(cx, &provider, &target, ins, &statics, shaped, params).await?,
        Some(Replace::Where(predicate)) => {
            let text = predicate.to_string();
            let predicate = target_expr(cx, &shaped.plan, predicate, params)?;
            let plan = LogicalPlanBuilder::from(shaped.plan.clone())
                .filter(replace_where_check(&predicate, text))?
                .build()?;
            let shaped = Shaped { plan, ..shaped };
            write(
                cx,
                &provider,
                &target,
                shaped,
                WriteMode::Overwrite,
                Some(predicate),
            )
            .await?
        }
        Some(replace) => {
            replace_matching(cx, &provider, &target, ins, replace, shaped, params).await?
        }
    };
    inserted(rows)
}

/// What the extended protocol's Describe reports of a Databricks INSERT:
/// the types of its `$n` (in its query, PARTITION values and REPLACE
/// condition) and its result row.
pub(crate) async fn describe(cx: &StatementContext<'_>, ins: &Insert) -> Result<Description> {
    let name = table_name(cx, &ins.table)?;
    let table = cx.load_table(&name).await?;
    let provider = DeltaProvider::try_new(name, table)?;
    let Prepared {
        target,
        ins,
        shaped,
        ..
    } = prepare(cx, &provider, ins, None).await?;
    let condition = match &ins.replace {
        // As planned: simplifying could fold a `$n` away.
        Some(Replace::Where(predicate)) => Some(plan_expr(cx, predicate, shaped.plan.schema())?),
        Some(Replace::On {
            condition,
            target_alias,
            source_alias,
        }) => {
            let (condition, _, _) = on_condition(
                &target,
                &ins,
                &shaped,
                condition,
                target_alias,
                source_alias,
            )?;
            Some(replace_condition(cx, &provider, &shaped, condition)?)
        }
        Some(Replace::Using(_)) | None => None,
    };
    Ok(Description {
        params: parameter_types_of(Some(&shaped.plan), &condition.iter().collect::<Vec<_>>())?,
        schema: Some(insert_result_schema()),
    })
}

/// A Databricks INSERT planned against its table: the query's rows shaped
/// as the table's (`$n` bound when `params` are given), the PARTITION
/// clause's static values, and the statement with session variables put
/// into its REPLACE condition.
struct Prepared {
    target: Target,
    statics: Vec<(usize, Expr)>,
    ins: Insert,
    shaped: Shaped,
}

async fn prepare(
    cx: &StatementContext<'_>,
    provider: &DeltaProvider,
    ins: &Insert,
    params: Option<&ParamValues>,
) -> Result<Prepared> {
    let target = Target::new(provider)?;
    let statics = target.partition_spec(ins)?;
    let query = bind(
        cx.plan(&ast::Statement::Query(ins.query.clone())).await?,
        params.cloned(),
    )?;
    let mut ins = ins.clone();
    let is_where = matches!(ins.replace, Some(Replace::Where(_)));
    if let Some(Replace::Where(condition) | Replace::On { condition, .. }) = &mut ins.replace {
        // Databricks refuses a subquery here: it is checked against every
        // new row and handed to the storage layer.
        if is_where {
            crate::conditions::refuse_subqueries(
                "REPLACE WHERE",
                "its condition is checked against every new row and the table's files",
                condition,
            )?;
        }
        // A name no target or source column has may be a session variable.
        let columns: Vec<String> = provider
            .schema()
            .fields()
            .iter()
            .chain(query.schema().fields().iter())
            .map(|f| f.name().clone())
            .collect();
        crate::resolve::variables::inline_in_condition(cx, condition, &columns)?;
    }
    let shaped = shape(cx, &target, &ins, &statics, query, params)?;
    Ok(Prepared {
        target,
        statics,
        ins,
        shaped,
    })
}

/// The answer to an INSERT that wrote `rows`.
pub(crate) fn inserted(rows: u64) -> Result<Output> {
    let rows = i64::try_from(rows).unwrap_or(i64::MAX);
    let batch = RecordBatch::try_new(
        insert_result_schema(),
        vec![
            Arc::new(datafusion::arrow::array::Int64Array::from(vec![rows])),
            Arc::new(datafusion::arrow::array::Int64Array::from(vec![rows])),
        ],
    )
    .map_err(datafusion::error::DataFusionError::from)?;
    Ok(rows_output(batch, fixed(&format!("INSERT 0 {rows}"))))
}

/// The table written to, as the statement sees it.
struct Target {
    /// Lower-case column names, in table order.
    names: Vec<String>,
    /// Declared column names, in table order.
    declared: Vec<String>,
    types: Vec<DataType>,
    /// Indices of the partition columns.
    partitions: Vec<usize>,
    append_only: bool,
}

impl Target {
    fn new(provider: &DeltaProvider) -> Result<Self> {
        let schema = provider.schema();
        let declared = provider.declared_column_names();
        let partition_names = provider.partition_columns()?;
        let partitions = declared
            .iter()
            .enumerate()
            .filter(|(_, d)| partition_names.contains(d))
            .map(|(i, _)| i)
            .collect();
        let append_only = provider
            .property("delta.appendOnly")?
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        Ok(Self {
            names: schema.fields().iter().map(|f| f.name().clone()).collect(),
            declared,
            types: schema
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect(),
            partitions,
            append_only,
        })
    }

    fn index(&self, name: &str) -> Option<usize> {
        let lower = name.to_lowercase();
        self.names.iter().position(|n| *n == lower)
    }

    fn is_partitioned(&self) -> bool {
        !self.partitions.is_empty()
    }

    /// The PARTITION clause checked: each static value by column index.
    fn partition_spec(&self, ins: &Insert) -> Result<Vec<(usize, Expr)>> {
        let mut statics = Vec::new();
        for (column, value) in &ins.partition {
            let Some(i) = self
                .index(&column.value)
                .filter(|i| self.partitions.contains(i))
            else {
                return Err(Error::analysis(
                    class::NON_PARTITION_COLUMN,
                    format!(
                        "PARTITION clause cannot contain the non-partition column {}",
                        column.value
                    ),
                ));
            };
            if let Some(value) = value {
                statics.push((i, value.clone()));
            }
        }
        Ok(statics)
    }

    fn refuse_if_append_only(&self, table: &str) -> Result<()> {
        if self.append_only {
            return Err(Error::analysis(class::DELTA_CANNOT_MODIFY_APPEND_ONLY, format!(
                    "table {table} is append-only (delta.appendOnly = true): rows cannot be replaced"
                )));
        }
        Ok(())
    }
}

/// The new rows shaped as the table: one column per table column (then any
/// new ones, with schema evolution), lower-case names, the table's types.
struct Shaped {
    plan: LogicalPlan,
    /// For each query output column, the table column it feeds.
    assigned: Vec<Option<usize>>,
    /// The query's output column names.
    query_names: Vec<String>,
    evolved: bool,
}

/// Matches the query's columns to the table's (SEMANTICS.md §2.2).
fn shape(
    cx: &StatementContext<'_>,
    target: &Target,
    ins: &Insert,
    statics: &[(usize, Expr)],
    query: LogicalPlan,
    params: Option<&ParamValues>,
) -> Result<Shaped> {
    let static_columns: HashSet<usize> = statics.iter().map(|(i, _)| *i).collect();
    let data_columns: Vec<usize> = (0..target.names.len())
        .filter(|i| !static_columns.contains(i))
        .collect();
    let query_columns: Vec<Column> = query.schema().columns();
    let query_names: Vec<String> = query_columns.iter().map(|c| c.name.clone()).collect();
    let n = query_columns.len();
    let mut assigned: Vec<Option<usize>> = vec![None; n];
    let mut extra: Vec<usize> = Vec::new();

    if let Some(list) = &ins.columns {
        let mut seen = HashSet::new();
        for (q, ident) in list.iter().enumerate() {
            let Some(i) = target.index(&ident.value) else {
                return Err(Error::analysis(
                    class::UNRESOLVED_COLUMN,
                    format!("column {} is not a column of the table", ident.value),
                ));
            };
            if static_columns.contains(&i) {
                return Err(Error::analysis(
                    class::STATIC_PARTITION_COLUMN_IN_INSERT_COLUMN_LIST,
                    format!(
                        "static partition column {} is also in the column list",
                        ident.value
                    ),
                ));
            }
            if !seen.insert(i) {
                return Err(Error::analysis(
                    class::COLUMN_ALREADY_EXISTS,
                    format!("column {} is listed twice", ident.value),
                ));
            }
            if q < n {
                assigned[q] = Some(i);
            }
        }
        if n != list.len() {
            let which = if n < list.len() {
                "NOT_ENOUGH"
            } else {
                "TOO_MANY"
            };
            return Err(Error::analysis(
                class::INSERT_COLUMN_ARITY_MISMATCH,
                format!(
                    "{which}_DATA_COLUMNS: the column list has {} column(s), the data {n}",
                    list.len()
                ),
            ));
        }
    } else if ins.by_name {
        for (q, name) in query_names.iter().enumerate() {
            match target.index(name) {
                Some(i) if !static_columns.contains(&i) => {
                    if assigned.contains(&Some(i)) {
                        return Err(Error::analysis(
                            class::COLUMN_ALREADY_EXISTS,
                            format!("the data has column {name} twice"),
                        ));
                    }
                    assigned[q] = Some(i);
                }
                _ if ins.schema_evolution => extra.push(q),
                _ if n > data_columns.len() => {
                    return Err(Error::analysis(
                        class::INSERT_COLUMN_ARITY_MISMATCH,
                        format!(
                            "TOO_MANY_DATA_COLUMNS: the table has {} column(s), the data {n}",
                            data_columns.len()
                        ),
                    ))
                }
                _ => {
                    return Err(Error::analysis(
                        class::DELTA_MISSING_COLUMN,
                        format!("cannot find {name} in the table's columns"),
                    ))
                }
            }
        }
    } else {
        if n < data_columns.len() {
            return Err(Error::analysis(
                class::DELTA_INSERT_COLUMN_ARITY_MISMATCH,
                format!(
                    "not enough data columns: the table has {} column(s), the data {n}",
                    data_columns.len()
                ),
            ));
        }
        if n > data_columns.len() && !ins.schema_evolution {
            return Err(Error::analysis(
                class::DELTA_METADATA_MISMATCH,
                format!(
                    "too many data columns: the table has {} column(s), the data {n} \
                     (WITH SCHEMA EVOLUTION adds the new ones)",
                    data_columns.len()
                ),
            ));
        }
        for (q, slot) in assigned.iter_mut().enumerate() {
            match data_columns.get(q) {
                Some(i) => *slot = Some(*i),
                None => extra.push(q),
            }
        }
    }

    let mut exprs: Vec<DfExpr> = Vec::with_capacity(target.names.len() + extra.len());
    for (i, name) in target.names.iter().enumerate() {
        let data_type = &target.types[i];
        let value = if let Some((_, value)) = statics.iter().find(|(j, _)| *j == i) {
            static_value(cx, value, data_type, params)?
        } else if let Some(q) = assigned.iter().position(|a| *a == Some(i)) {
            DfExpr::Column(query_columns[q].clone())
        } else {
            lit(ScalarValue::Null)
        };
        exprs.push(store_assignment(value, data_type, name).alias(name));
    }
    for &q in &extra {
        exprs.push(DfExpr::Column(query_columns[q].clone()).alias(query_names[q].clone()));
    }
    let plan = LogicalPlanBuilder::from(query).project(exprs)?.build()?;
    Ok(Shaped {
        plan,
        assigned,
        query_names,
        evolved: !extra.is_empty(),
    })
}

/// A PARTITION clause's static value, typed as its column (a bare `$n`
/// too), `$n` bound when `params` are given.
fn static_value(
    cx: &StatementContext<'_>,
    value: &Expr,
    data_type: &DataType,
    params: Option<&ParamValues>,
) -> Result<DfExpr> {
    let value = plan_expr(cx, value, &DFSchema::empty())?;
    let value = match value {
        DfExpr::Placeholder(p) if p.field.is_none() => {
            DfExpr::Placeholder(Placeholder::new_with_field(
                p.id,
                Some(Arc::new(Field::new("", data_type.clone(), true))),
            ))
        }
        other => other,
    };
    bind_expr(value, params)
}

/// `e` planned over `schema`'s columns with the session's functions.
fn plan_expr(cx: &StatementContext<'_>, e: &Expr, schema: &DFSchema) -> Result<DfExpr> {
    Ok(cx.context().state().create_logical_expr_from_sql_expr(
        ExprWithAlias {
            expr: e.clone(),
            alias: None,
        },
        schema,
    )?)
}

/// A REPLACE WHERE condition over the table's (lower-case) columns, its
/// `$n` bound, typed as DataFusion's analyzer types a filter (`a <=> 3`
/// compares INTs, as the storage layer's file pruning needs) and
/// simplified; a condition that is NULL is a BOOLEAN NULL.
fn target_expr(
    cx: &StatementContext<'_>,
    plan: &LogicalPlan,
    e: &Expr,
    params: Option<&ParamValues>,
) -> Result<DfExpr> {
    let expr = bind_expr(plan_expr(cx, e, plan.schema())?, params)?;
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::clone(plan.schema()))
            .build(),
    );
    let expr = simplifier.simplify(simplifier.coerce(expr, plan.schema())?)?;
    Ok(match expr {
        DfExpr::Literal(ScalarValue::Null, _) => lit(ScalarValue::Boolean(None)),
        other => other,
    })
}

/// A filter that passes every row and fails the statement at the first new
/// row the REPLACE WHERE predicate does not hold for (false or NULL):
/// `DELTA_REPLACE_WHERE_MISMATCH`, before anything is committed.
fn replace_where_check(predicate: &DfExpr, text: String) -> DfExpr {
    let check = create_udf(
        "lakegres_replace_where_check",
        vec![DataType::Boolean],
        DataType::Boolean,
        Volatility::Volatile,
        Arc::new(move |args: &[ColumnarValue]| {
            let holds = match &args[0] {
                ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))) => true,
                ColumnarValue::Scalar(_) => false,
                ColumnarValue::Array(a) => {
                    let a: &BooleanArray = a.as_boolean();
                    a.null_count() == 0 && a.true_count() == a.len()
                }
            };
            if !holds {
                return Err(datafusion::error::DataFusionError::Execution(format!(
                    "{} Written data does not conform to partial table overwrite condition \
                     or constraint '{text}'",
                    lakegres_delta::REPLACE_WHERE_MISMATCH
                )));
            }
            Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))))
        }),
    );
    check.call(vec![predicate.clone()])
}

/// Streams `shaped` into the table through `WriteBuilder`: one commit.
async fn write(
    cx: &StatementContext<'_>,
    provider: &DeltaProvider,
    target: &Target,
    shaped: Shaped,
    mode: WriteMode,
    replace_where: Option<DfExpr>,
) -> Result<u64> {
    let renames: Vec<DfExpr> = shaped
        .plan
        .schema()
        .columns()
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let name = target
                .declared
                .get(i)
                .cloned()
                .unwrap_or_else(|| c.name.clone());
            DfExpr::Column(c).alias(name)
        })
        .collect();
    let plan = LogicalPlanBuilder::from(shaped.plan)
        .project(renames)?
        .build()?;
    let input = cx.physical(&plan).await?.into_input();
    let state = cx.context().state();
    let mut options = WriteOptions::new(mode);
    options.merge_schema = shaped.evolved;
    options.replace_where = replace_where
        .map(|p| provider.to_declared_expr(&p))
        .transpose()?;
    Ok(lakegres_delta::write_plan(
        provider.name(),
        &provider.handle(),
        input,
        Arc::new(state),
        options,
    )
    .await?)
}

/// INSERT OVERWRITE: the whole table, the static partitions, or (dynamic
/// mode) the partitions the new rows land in.
async fn overwrite(
    cx: &StatementContext<'_>,
    provider: &DeltaProvider,
    target: &Target,
    ins: &Insert,
    statics: &[(usize, Expr)],
    shaped: Shaped,
    params: Option<&ParamValues>,
) -> Result<u64> {
    let dynamic_mode = OVERWRITE_MODE.iter().any(|k| {
        cx.settings()
            .get(k)
            .is_ok_and(|v| v.eq_ignore_ascii_case("dynamic"))
    });
    let has_dynamic = ins.partition.iter().any(|(_, v)| v.is_none())
        || (ins.partition.is_empty() && target.is_partitioned());
    if dynamic_mode && has_dynamic && target.is_partitioned() {
        // The partitions come from the rows, so the rows are read first.
        let rows = collect(cx, &shaped.plan).await?;
        let predicate = partitions_of(
            cx,
            target,
            &shaped.plan.schema().as_arrow().clone().into(),
            &rows,
        )
        .await?;
        let plan = mem_plan(&shaped.plan, rows)?;
        let shaped = Shaped { plan, ..shaped };
        return match predicate {
            // No rows: no partition is replaced.
            None => write(cx, provider, target, shaped, WriteMode::Append, None).await,
            Some(p) => write(cx, provider, target, shaped, WriteMode::Overwrite, Some(p)).await,
        };
    }
    // `p <=> v`, as Spark's static partition overwrite has it: PARTITION
    // (p = NULL) replaces the rows whose p is NULL.
    let predicate = statics
        .iter()
        .map(|(i, value)| {
            let value = static_value(cx, value, &target.types[*i], params)?;
            Ok(binary_expr(
                col(Column::new_unqualified(target.names[*i].clone())),
                Operator::IsNotDistinctFrom,
                cast(value, target.types[*i].clone()),
            ))
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .reduce(DfExpr::and);
    write(
        cx,
        provider,
        target,
        shaped,
        WriteMode::Overwrite,
        predicate,
    )
    .await
}

/// The rows of a source read ahead of its write (through the cluster
/// when the session lets it go there).
async fn collect(cx: &StatementContext<'_>, plan: &LogicalPlan) -> Result<Vec<RecordBatch>> {
    use futures::TryStreamExt;
    Ok(cx.physical(plan).await?.execute()?.try_collect().await?)
}

/// A plan that scans rows already read, with `like`'s schema.
fn mem_plan(like: &LogicalPlan, rows: Vec<RecordBatch>) -> Result<LogicalPlan> {
    let schema: SchemaRef = Arc::new(like.schema().as_arrow().clone());
    let table = MemTable::try_new(schema, vec![rows])?;
    Ok(LogicalPlanBuilder::scan(
        "lakegres_insert_rows",
        provider_as_source(Arc::new(table)),
        None,
    )?
    .build()?)
}

/// `(p1 = v1 AND p2 IS NULL) OR …` over the partition values the rows
/// hold (NULL-safe, as Databricks' dynamic overwrite is); `None` without rows.
async fn partitions_of(
    cx: &StatementContext<'_>,
    target: &Target,
    schema: &SchemaRef,
    rows: &[RecordBatch],
) -> Result<Option<DfExpr>> {
    let table = MemTable::try_new(Arc::clone(schema), vec![rows.to_vec()])?;
    let keys: Vec<DfExpr> = target
        .partitions
        .iter()
        .map(|i| col(Column::new_unqualified(target.names[*i].clone())))
        .collect();
    let plan =
        LogicalPlanBuilder::scan("lakegres_rows", provider_as_source(Arc::new(table)), None)?
            .aggregate(keys, Vec::<DfExpr>::new())?
            .build()?;
    let distinct = collect(cx, &plan).await?;
    let mut terms = Vec::new();
    for batch in &distinct {
        for row in 0..batch.num_rows() {
            let mut term: Option<DfExpr> = None;
            for (k, i) in target.partitions.iter().enumerate() {
                let value = ScalarValue::try_from_array(batch.column(k), row)?;
                let column = col(Column::new_unqualified(target.names[*i].clone()));
                let test = if value.is_null() {
                    column.is_null()
                } else {
                    column.eq(lit(value))
                };
                term = Some(match term {
                    Some(t) => t.and(test),
                    None => test,
                });
            }
            terms.extend(term);
        }
    }
    Ok(terms.into_iter().reduce(DfExpr::or))
}

/// REPLACE USING / REPLACE ON: the rows are read first (they decide what is
/// deleted, and are then inserted).
async fn replace_matching(
    cx: &StatementContext<'_>,
    provider: &DeltaProvider,
    target: &Target,
    ins: &Insert,
    replace: &Replace,
    shaped: Shaped,
    params: Option<&ParamValues>,
) -> Result<u64> {
    let (condition, target_columns, parameter) = match replace {
        Replace::Using(columns) => using_condition(target, ins, &shaped, columns)?,
        Replace::On {
            condition,
            target_alias,
            source_alias,
        } => on_condition(target, ins, &shaped, condition, target_alias, source_alias)?,
        Replace::Where(_) => {
            return Err(Error::Internal {
                message: "REPLACE WHERE is not a matching replace".into(),
            })
        }
    };
    if shaped.evolved {
        return Err(Error::not_supported(
            "WITH SCHEMA EVOLUTION adding columns in REPLACE USING or REPLACE ON",
        ));
    }
    let condition = bind_expr(replace_condition(cx, provider, &shaped, condition)?, params)?;
    let rows = collect(cx, &shaped.plan).await?;
    let partition_only = target_columns.iter().all(|i| target.partitions.contains(i));
    let metrics = lakegres_delta::replace_matching(
        provider,
        cx.context().state(),
        Replacement {
            rows,
            condition,
            partition_only,
            parameter,
        },
        cx.committed(),
    )
    .await?;
    Ok(metrics.inserted_rows)
}

fn unresolved_using(column: &str, relation: &str) -> Error {
    Error::analysis(
        class::UNRESOLVED_INSERT_REPLACE_USING_COLUMN,
        format!("REPLACE USING column {column} cannot be resolved in the {relation}"),
    )
}

/// A REPLACE USING / ON condition over `t.c` (the target) and `s.c` (the
/// new rows), the target columns it reads, and what the commit info
/// records of it.
type Condition = (Expr, Vec<usize>, (&'static str, String));

/// `condition` (over `t.c` and `s.c`) planned over the table's columns and
/// the new rows'.
fn replace_condition(
    cx: &StatementContext<'_>,
    provider: &DeltaProvider,
    shaped: &Shaped,
    condition: Expr,
) -> Result<DfExpr> {
    let mut both = DFSchema::try_from_qualified_schema("t", &provider.schema())?;
    both.merge(&DFSchema::try_from_qualified_schema(
        "s",
        shaped.plan.schema().as_arrow(),
    )?);
    plan_expr(cx, &condition, &both)
}

/// `t.c1 = s.c1 AND …`: plain equality, so NULL keys never match.
fn using_condition(
    target: &Target,
    ins: &Insert,
    shaped: &Shaped,
    columns: &[Ident],
) -> Result<Condition> {
    let mut used: Vec<usize> = Vec::new();
    for ident in columns {
        let Some(i) = target.index(&ident.value) else {
            return Err(unresolved_using(&ident.value, "table"));
        };
        let lower = ident.value.to_lowercase();
        let Some(q) = shaped
            .query_names
            .iter()
            .position(|n| n.to_lowercase() == lower)
        else {
            return Err(unresolved_using(&ident.value, "query"));
        };
        if !ins.by_name && ins.columns.is_none() && shaped.assigned.get(q) != Some(&Some(i)) {
            return Err(Error::analysis(class::INSERT_REPLACE_USING_DISALLOW_MISALIGNED_COLUMNS, format!(
                    "REPLACE USING column {} is not at the same position in the table and the query \
                     (use BY NAME)",
                    ident.value
                )));
        }
        if !used.contains(&i) {
            used.push(i);
        }
    }
    let column = |side: &str, i: usize| {
        Expr::CompoundIdentifier(vec![
            Ident::new(side),
            Ident::with_quote('"', target.names[i].clone()),
        ])
    };
    let condition = used
        .iter()
        .map(|i| Expr::BinaryOp {
            left: Box::new(column("t", *i)),
            op: ast::BinaryOperator::Eq,
            right: Box::new(column("s", *i)),
        })
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: ast::BinaryOperator::And,
            right: Box::new(b),
        })
        .ok_or_else(|| Error::Internal {
            message: "REPLACE USING without columns".into(),
        })?;
    let names: Vec<String> = used.iter().map(|i| target.declared[*i].clone()).collect();
    Ok((
        condition,
        used,
        ("replaceUsingCols", format!("({})", names.join(", "))),
    ))
}

/// The REPLACE ON condition with every column named `t.c` (target) or
/// `s.c` (the new rows, under the table column each feeds).
fn on_condition(
    target: &Target,
    ins: &Insert,
    shaped: &Shaped,
    condition: &Expr,
    target_alias: &Option<Ident>,
    source_alias: &Option<Ident>,
) -> Result<Condition> {
    use sqlparser::ast::visit_expressions_mut;
    use std::ops::ControlFlow;

    let table_leaf = ins
        .table
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_lowercase());
    let is_target = |q: &str| {
        let q = q.to_lowercase();
        target_alias.as_ref().map(|a| a.value.to_lowercase()) == Some(q.clone())
            || (target_alias.is_none()
                && (table_leaf.as_deref() == Some(q.as_str()) || q == "target"))
    };
    if let Some(source) = source_alias {
        if is_target(&source.value) {
            return Err(Error::analysis(
                class::DELTA_INSERT_REPLACE_ON_AMBIGUOUS_COLUMNS_IN_CONDITION,
                format!(
                    "the table and the query of REPLACE ON are both named {}: give them different aliases",
                    source.value
                ),
            ));
        }
    }
    let is_source = |q: &str| {
        let q = q.to_lowercase();
        source_alias.as_ref().map(|a| a.value.to_lowercase()) == Some(q.clone())
            || (source_alias.is_none() && q == "source")
            || (source_alias.is_none()
                && !is_target(&q)
                && query_alias(ins).as_deref() == Some(q.as_str()))
    };
    let source_column = |name: &str| -> Option<usize> {
        let lower = name.to_lowercase();
        let q = shaped
            .query_names
            .iter()
            .position(|n| n.to_lowercase() == lower)?;
        shaped.assigned.get(q).copied().flatten()
    };
    let unresolved = |name: String| {
        Error::analysis(
            class::DELTA_INSERT_REPLACE_ON_UNRESOLVED_COLUMNS_IN_CONDITION,
            format!("column {name} of the REPLACE ON condition cannot be resolved"),
        )
    };
    let mut error: Option<Error> = None;
    let mut target_columns: Vec<usize> = Vec::new();
    let mut condition = condition.clone();
    let _ = visit_expressions_mut(&mut condition, |e| {
        let resolved = match e {
            Expr::Identifier(ident) => {
                let in_target = target.index(&ident.value);
                let in_source = source_column(&ident.value);
                match (in_target, in_source) {
                    (Some(_), Some(_)) => Err(Error::analysis(class::DELTA_INSERT_REPLACE_ON_AMBIGUOUS_COLUMNS_IN_CONDITION, format!(
                            "column {} of the REPLACE ON condition is in the table and the query: qualify it",
                            ident.value
                        ))),
                    (Some(i), None) => Ok(Some(("t", i))),
                    (None, Some(i)) => Ok(Some(("s", i))),
                    (None, None) => Err(unresolved(ident.value.clone())),
                }
            }
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let q = &parts[parts.len() - 2].value;
                let c = &parts[parts.len() - 1].value;
                if is_target(q) {
                    target
                        .index(c)
                        .map(|i| Some(("t", i)))
                        .ok_or_else(|| unresolved(format!("{q}.{c}")))
                } else if is_source(q) {
                    source_column(c)
                        .map(|i| Some(("s", i)))
                        .ok_or_else(|| unresolved(format!("{q}.{c}")))
                } else {
                    Err(unresolved(format!("{q}.{c}")))
                }
            }
            _ => Ok(None),
        };
        match resolved {
            Ok(Some((side, i))) => {
                if side == "t" {
                    target_columns.push(i);
                }
                *e = Expr::CompoundIdentifier(vec![
                    Ident::new(side),
                    Ident::with_quote('"', target.names[i].clone()),
                ]);
                ControlFlow::Continue(())
            }
            Ok(None) => ControlFlow::Continue(()),
            Err(err) => {
                error = Some(err);
                ControlFlow::Break(())
            }
        }
    });
    if let Some(err) = error {
        return Err(err);
    }
    let text = condition.to_string();
    Ok((condition, target_columns, ("replaceOnCond", text)))
}

/// The alias of the query's only FROM table (`SELECT * FROM s AS source`),
/// which a REPLACE ON condition may use for the new rows.
fn query_alias(ins: &Insert) -> Option<String> {
    let ast::SetExpr::Select(select) = ins.query.body.as_ref() else {
        return None;
    };
    let [from] = select.from.as_slice() else {
        return None;
    };
    match &from.relation {
        ast::TableFactor::Table { alias: Some(a), .. } => Some(a.name.value.to_lowercase()),
        _ => None,
    }
}

/// How many times an INSERT into a table with identity columns runs again
/// after losing its commit to another identity write.
const IDENTITY_RETRIES: u64 = 50;

/// The parameters and the INSERT result row of a Postgres-form INSERT.
pub(crate) async fn describe_sql(
    cx: &StatementContext<'_>,
    statement: &ast::Statement,
) -> Result<Description> {
    if let ast::Statement::Insert(insert) = statement {
        if insert.on.is_some() {
            // Described as the INSERT it is: its parameters and count.
            let mut plain = insert.clone();
            plain.on = None;
            return Box::pin(describe_sql(cx, &ast::Statement::Insert(plain))).await;
        }
        if insert.returning.is_some() {
            return Box::pin(super::returning::describe(cx, insert)).await;
        }
    }
    if let Some(ins) = with_nested_values(statement) {
        return Box::pin(describe(cx, &ins)).await;
    }
    let with_defaults = cx.values_defaults(statement).await?;
    let plan = cx.plan(with_defaults.as_ref().unwrap_or(statement)).await?;
    Ok(Description {
        params: parameter_types(&plan)?,
        schema: Some(insert_result_schema()),
    })
}

/// Runs a Postgres-form INSERT (the forms sqlparser reads) through
/// DataFusion's INSERT planning into the table provider: one commit.
pub(crate) async fn run_sql(
    cx: &StatementContext<'_>,
    statement: &ast::Statement,
    params: Option<ParamValues>,
) -> Result<Output> {
    if let ast::Statement::Insert(insert) = statement {
        if let Some(ast::OnInsert::OnConflict(on)) = &insert.on {
            return Box::pin(super::on_conflict::insert_on_conflict(
                cx, insert, on, params,
            ))
            .await;
        }
        if insert.returning.is_some() {
            return Box::pin(super::returning::insert_returning(cx, insert, params)).await;
        }
    }
    if let Some(ins) = with_nested_values(statement) {
        return Box::pin(self::insert(cx, &ins, params.as_ref())).await;
    }
    cx.insert(statement, params).await
}

/// A plain `INSERT INTO t [(cols)] query` whose query holds a VALUES list
/// below its top (`SELECT … FROM (VALUES …) AS v(a, b)`, SQLAlchemy's
/// ordered multi-row insert), as the INSERT this module plans: DataFusion's
/// INSERT planning types every VALUES of the query by the table's columns
/// and refuses a nested one of another width.
fn with_nested_values(statement: &ast::Statement) -> Option<Insert> {
    use sqlparser::ast::{Visit, Visitor};
    use std::ops::ControlFlow;
    struct NestedValues(usize);
    impl Visitor for NestedValues {
        type Break = ();
        fn pre_visit_query(&mut self, query: &ast::Query) -> ControlFlow<()> {
            if matches!(query.body.as_ref(), ast::SetExpr::Values(_)) {
                self.0 += 1;
            }
            ControlFlow::Continue(())
        }
    }
    let ast::Statement::Insert(insert) = statement else {
        return None;
    };
    let source = insert.source.as_ref()?;
    let ast::TableObject::TableName(table) = &insert.table else {
        return None;
    };
    let plain = !insert.overwrite
        && insert.partitioned.is_none()
        && insert.after_columns.is_empty()
        && insert.on.is_none()
        && insert.returning.is_none()
        && insert.table_alias.is_none()
        && !matches!(source.body.as_ref(), ast::SetExpr::Values(_));
    if !plain {
        return None;
    }
    let mut nested = NestedValues(0);
    let _ = source.visit(&mut nested);
    if nested.0 == 0 {
        return None;
    }
    let columns = insert
        .columns
        .iter()
        .map(|c| match c.0.as_slice() {
            [part] => part.as_ident().cloned(),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Insert {
        schema_evolution: false,
        overwrite: false,
        table: table.clone(),
        partition: Vec::new(),
        columns: (!columns.is_empty()).then_some(columns),
        by_name: false,
        replace: None,
        query: source.clone(),
    })
}

impl StatementContext<'_> {
    async fn insert(&self, ast: &ast::Statement, params: Option<ParamValues>) -> Result<Output> {
        if let ast::Statement::Insert(insert) = ast {
            if let Some(rows) =
                crate::statements::append_values::append_sql(self, insert, params.as_ref()).await?
            {
                return inserted(rows);
            }
            let mut seen = std::collections::HashSet::new();
            for column in &insert.columns {
                let name = column.to_string().to_lowercase();
                if !seen.insert(name) {
                    return Err(Error::analysis(
                        class::COLUMN_ALREADY_EXISTS,
                        format!("column {column} is listed twice"),
                    ));
                }
            }
        }
        let with_defaults = self.values_defaults(ast).await?;
        let ast = with_defaults.as_ref().unwrap_or(ast);
        // An INSERT into a table with identity columns that lost its
        // commit to another identity write (40001) runs again over the
        // new version, with new values, as Databricks retries it; nothing
        // of the lost attempt was committed.
        let mut attempts = 0;
        let rows = loop {
            let plan = match self.plan(ast).await {
                Ok(plan) => plan,
                Err(e)
                    if e.to_string()
                        .contains("Column count doesn't match insert query") =>
                {
                    return Err(self.insert_arity_error(ast).await.unwrap_or(e));
                }
                Err(e) => return Err(e),
            };
            let plan = bind(plan, params.clone())?;
            match self.run_count(plan).await {
                Ok(rows) => break rows,
                Err(e)
                    if e.sqlstate() == lakegres_delta::SqlState::SERIALIZATION_FAILURE
                        && attempts < IDENTITY_RETRIES
                        && self.writes_identity(ast).await =>
                {
                    attempts += 1;
                    // Backoff with jitter, so that writers that lost together
                    // do not collide again.
                    let jitter = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| u64::from(d.subsec_nanos()) % 20)
                        .unwrap_or(0);
                    tokio::time::sleep(std::time::Duration::from_millis(
                        5 * attempts.min(10) + jitter,
                    ))
                    .await;
                }
                Err(e) => return Err(self.insert_not_null_error(ast, &e).await.unwrap_or(e)),
            }
        };
        let batch = RecordBatch::try_new(
            insert_result_schema(),
            vec![
                Arc::new(Int64Array::from(vec![rows])) as ArrayRef,
                Arc::new(Int64Array::from(vec![rows])) as ArrayRef,
            ],
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        Ok(rows_output(batch, fixed(&format!("INSERT 0 {rows}"))))
    }

    /// DataFusion reports a positional INSERT of the wrong width without
    /// numbers; Databricks tells too few (42802) from too many (42KDG).
    async fn insert_arity_error(&self, ast: &ast::Statement) -> Option<Error> {
        let ast::Statement::Insert(insert) = ast else {
            return None;
        };
        let source = insert.source.as_ref()?;
        let got = self
            .plan(&ast::Statement::Query(source.clone()))
            .await
            .ok()?
            .schema()
            .fields()
            .len();
        let expected = if insert.columns.is_empty() {
            let ast::TableObject::TableName(name) = &insert.table else {
                return None;
            };
            let name = crate::names::table_name(self, name).ok()?;
            let table = self.load_table(&name).await.ok()?;
            table.info(&name).ok()?.columns.len()
        } else {
            insert.columns.len()
        };
        Some(if got < expected {
            Error::analysis(
                class::DELTA_INSERT_COLUMN_ARITY_MISMATCH,
                format!("not enough data columns: the table has {expected}, the data {got}"),
            )
        } else {
            Error::analysis(
                class::DELTA_METADATA_MISMATCH,
                format!("too many data columns: the table has {expected}, the data {got}"),
            )
        })
    }

    /// Whether the INSERT's table has identity columns.
    async fn writes_identity(&self, ast: &ast::Statement) -> bool {
        let ast::Statement::Insert(insert) = ast else {
            return false;
        };
        let ast::TableObject::TableName(name) = &insert.table else {
            return false;
        };
        let Ok(name) = crate::names::table_name(self, name) else {
            return false;
        };
        match self.load_table(&name).await {
            Ok(table) => table
                .info(&name)
                .is_ok_and(|info| info.columns.iter().any(|c| c.identity.is_some())),
            Err(_) => false,
        }
    }

    /// `INSERT … VALUES (…, DEFAULT, …)`: each `DEFAULT` becomes its
    /// column's default expression (NULL for a column without one), as
    /// Databricks and Postgres read it; `None` when no row has one.
    async fn values_defaults(&self, ast: &ast::Statement) -> Result<Option<ast::Statement>> {
        let is_default = |e: &ast::Expr| matches!(e, ast::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"));
        let ast::Statement::Insert(insert) = ast else {
            return Ok(None);
        };
        let Some(ast::SetExpr::Values(values)) = insert.source.as_ref().map(|q| q.body.as_ref())
        else {
            return Ok(None);
        };
        if !values
            .rows
            .iter()
            .flat_map(|r| r.content.iter())
            .any(is_default)
        {
            return Ok(None);
        }
        let ast::TableObject::TableName(name) = &insert.table else {
            return Ok(None);
        };
        let name = crate::names::table_name(self, name)?;
        let table = self.load_table(&name).await?;
        let fields = table.info(&name)?.columns;
        let columns: Vec<String> = if insert.columns.is_empty() {
            fields.iter().map(|f| f.name.clone()).collect()
        } else {
            insert.columns.iter().map(|c| c.to_string()).collect()
        };
        let default_of = |column: &str| -> ast::Expr {
            let text = fields
                .iter()
                .find(|f| f.name.eq_ignore_ascii_case(column.trim_matches('"')))
                .and_then(|f| f.default.clone());
            text.and_then(|t| lakegres_functions::rewrite::parse_expr(&t))
                .unwrap_or(ast::Expr::Value(ast::Value::Null.into()))
        };
        let mut rewritten = ast.clone();
        if let ast::Statement::Insert(insert) = &mut rewritten {
            if let Some(query) = insert.source.as_mut() {
                if let ast::SetExpr::Values(values) = query.body.as_mut() {
                    for row in &mut values.rows {
                        for (i, expr) in row.content.iter_mut().enumerate() {
                            if is_default(expr) {
                                *expr = columns
                                    .get(i)
                                    .map(|c| default_of(c))
                                    .unwrap_or(ast::Expr::Value(ast::Value::Null.into()));
                            }
                        }
                    }
                }
            }
        }
        Ok(Some(rewritten))
    }

    /// DataFusion types a VALUES list by the table's columns, NOT NULL
    /// included, and Arrow refuses its batch before our checks see it, with
    /// the VALUES column's name (`column2`). Databricks names the table's.
    async fn insert_not_null_error(&self, ast: &ast::Statement, e: &Error) -> Option<Error> {
        let text = e.to_string();
        let (_, rest) = text.split_once("Column '")?;
        let (column, _) = rest.split_once("' is declared as non-nullable")?;
        let ast::Statement::Insert(insert) = ast else {
            return None;
        };
        let mut name = column.to_string();
        if let Some(n) = column
            .strip_prefix("column")
            .and_then(|n| n.parse::<usize>().ok())
        {
            let columns: Vec<String> = if insert.columns.is_empty() {
                let ast::TableObject::TableName(table) = &insert.table else {
                    return None;
                };
                let table = crate::names::table_name(self, table).ok()?;
                let loaded = self.load_table(&table).await.ok()?;
                let info = loaded.info(&table).ok()?;
                info.columns.into_iter().map(|c| c.name).collect()
            } else {
                insert.columns.iter().map(|c| c.to_string()).collect()
            };
            name = columns.get(n.checked_sub(1)?)?.clone();
        }
        Some(
            lakegres_delta::Error::ConstraintViolation {
                message: format!(
                    "{} NOT NULL constraint violated for column: {name}.",
                    lakegres_delta::NOT_NULL_VIOLATED
                ),
                state: lakegres_delta::SqlState::NOT_NULL_VIOLATION,
            }
            .into(),
        )
    }
}
