//! Planning a sqlparser statement with DataFusion, after the rewrites every
//! statement goes through (Postgres clients' catalog queries, time travel,
//! the change data feed, session functions), and running plans.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::format::ExplainFormat;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::datasource::source_as_provider;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::expr::{Cast, TryCast};
use datafusion::logical_expr::{
    Explain, Expr as DfExpr, LogicalPlan, PlanType, StringifiedPlan, ToStringifiedPlan, WriteOp,
};
use datafusion::physical_plan::explain::ExplainExec;
use datafusion::sql::parser::Statement as DFStatement;
use futures::TryStreamExt;
use sqlparser::ast;

use crate::error::{Error, Result};
use crate::output::{CommandTag, Output};
use crate::runnable::Runnable;
use crate::statement_context::StatementContext;

impl StatementContext<'_> {
    /// Plans a sqlparser statement with DataFusion.
    pub(crate) async fn plan(&self, ast: &ast::Statement) -> Result<LogicalPlan> {
        refuse_table_sample(ast)?;
        let mut statement = ast.clone();
        if mentions_catalog_tables(ast) {
            self.engine().catalog().refresh_if_stale().await?;
            crate::compat::catalog_regclass_names(&mut statement);
            let catalog = self.engine().catalog();
            crate::compat::user_regclass(&mut statement, |name| {
                let parts: Vec<String> = name
                    .split('.')
                    .map(
                        |p| match p.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
                            Some(quoted) => quoted.to_string(),
                            None => p.to_lowercase(),
                        },
                    )
                    .collect();
                let table = crate::names::resolve(self, &parts)?.ok()?;
                let known = catalog.cached_table_exists(&table)
                    || catalog
                        .cached_view_definitions()
                        .iter()
                        .any(|(n, _)| *n == table);
                known.then(|| crate::pg_catalog::relation_oid(&table))
            });
            if let Ok(mut rewritten) = self.engine().compat.parse(&statement.to_string()) {
                if rewritten.len() == 1 {
                    statement = rewritten.remove(0);
                }
            }
            crate::compat::information_schema_relations(&mut statement, || {
                crate::resolve::views::temporary_columns_sql(self)
            });
        }
        crate::resolve::variables::resolve_identifiers(self, &mut statement)?;
        crate::resolve::variables::inline_qualified(self, &mut statement)?;
        // Views first: their queries take the same rewrites as the statement.
        crate::resolve::views::expand(self, &mut statement).await?;
        crate::names::client_catalog_names(self, &mut statement);
        crate::compat::rewrite(&mut statement);
        crate::row_values::rewrite(&mut statement);
        crate::time_travel::rewrite(self, self.time_travel(), &mut statement).await?;
        crate::changes::rewrite(self, self.time_travel(), &mut statement).await?;
        let seen = crate::compat::Seen::of(&statement);
        if seen.has("current_setting") {
            let settings = self.settings();
            crate::compat::current_settings(&mut statement, |name| settings.get(name).ok());
        }
        if seen.has("pg_table_is_visible") {
            let schema = self.state().schema.clone();
            let catalog = self.engine().catalog();
            catalog.refresh_if_stale().await?;
            let visible: Vec<i32> = catalog
                .cached_tables(&schema)
                .into_iter()
                .chain(catalog.cached_views(&schema))
                .map(|table| {
                    crate::pg_catalog::relation_oid(&lakegres_delta::TableName {
                        schema: schema.clone(),
                        table,
                    })
                })
                .collect();
            crate::compat::table_is_visible(
                &mut statement,
                &visible,
                crate::pg_catalog::FIRST_USER_OID,
            );
        }
        if crate::compat::SESSION_FUNCTIONS.iter().any(|f| seen.has(f)) {
            let (user, schema) = {
                let state = self.state();
                (state.user.clone(), state.schema.clone())
            };
            let database = self
                .database()
                .unwrap_or_else(|| crate::CATALOG_NAME.to_string());
            crate::compat::session_functions(&mut statement, |name| match name {
                "current_schema" => schema.clone(),
                "current_database" | "current_catalog" => database.clone(),
                _ => user.clone(),
            });
        }
        if let ast::Statement::Update(update) = &mut statement {
            normalize_set_columns(update);
        }
        let state = self.context().state();
        // PIVOT plans its source first: a name it cannot find there is
        // read as below.
        let mut attempts = 0;
        loop {
            match crate::pivot::rewrite(&state, &mut statement).await {
                Err(e) if attempts < MAX_LATERAL_ALIASES => {
                    if !self.inline_missing(&mut statement, &e)? {
                        return Err(e);
                    }
                    attempts += 1;
                }
                other => break other?,
            }
        }
        let mut attempts = 0;
        let mut plan = loop {
            let planned = match &statement {
                ast::Statement::Delete(delete) => delete_plan(&state, delete, None).await,
                _ => state
                    .statement_to_plan(DFStatement::Statement(Box::new(statement.clone())))
                    .await
                    .map_err(Error::from),
            };
            match planned {
                Err(e) if attempts < MAX_LATERAL_ALIASES => {
                    if !self.inline_missing(&mut statement, &e)? {
                        return Err(e);
                    }
                    attempts += 1;
                }
                other => break other?,
            }
        };
        let declared = self.state().declared_params.clone();
        if let Some(types) = crate::declared_params::retyped(&plan, &declared)? {
            plan = match &statement {
                ast::Statement::Delete(delete) => delete_plan(&state, delete, Some(types)).await?,
                _ => crate::declared_params::prepared_input(
                    state
                        .statement_to_plan(DFStatement::Statement(Box::new(
                            crate::declared_params::as_prepare(statement, types),
                        )))
                        .await?,
                )?,
            };
        }
        int_literals_as_int(store_assignment(plan)?)
    }

    /// A name the planner could not find (`e`) may be a lateral column
    /// alias (`SELECT a + 1 AS b, b * 2 AS c`), a session variable (in a
    /// DELETE's condition too) or a double-quoted string: inlined in
    /// `statement`, for it to be planned again; false when it is none.
    fn inline_missing(&self, statement: &mut ast::Statement, e: &Error) -> Result<bool> {
        let Some((name, columns)) = e.datafusion().and_then(missing_field) else {
            return Ok(false);
        };
        Ok(crate::lateral_alias::inline(statement, &name)
            || crate::resolve::variables::inline(self, statement, &name)?
            || crate::resolve::quoted_strings::inline(statement, &name, &columns))
    }

    /// Runs a plan and streams its rows.
    pub(crate) async fn run(&self, plan: LogicalPlan, tag: CommandTag) -> Result<Output> {
        let stream = match plan {
            // DataFusion's own DDL and statements (PREPARE, SET of its
            // options) change its context: the context runs them.
            LogicalPlan::Ddl(_) | LogicalPlan::Statement(_) => {
                self.context()
                    .execute_logical_plan(plan)
                    .await?
                    .execute_stream()
                    .await?
            }
            plan => self.physical(&plan).await?.execute()?,
        };
        Ok(Output::Rows { stream, tag })
    }

    /// The physical plan of a query or DML plan, and the task context to
    /// run it in: from one copy of the session's DataFusion state (each
    /// copy clones its function registries).
    pub(crate) async fn physical(&self, plan: &LogicalPlan) -> Result<Runnable> {
        let state = self.context().state();
        if let Some(cluster) = self.engine().cluster.get() {
            let force = match self.distribution() {
                crate::settings::Distribution::Off => None,
                crate::settings::Distribution::Auto => Some(false),
                crate::settings::Distribution::Force => Some(true),
            };
            if let Some(force) = force {
                if let LogicalPlan::Explain(_) = plan {
                    // Optimizing an EXPLAIN optimizes its query and
                    // records the plans it shows.
                    if let LogicalPlan::Explain(explain) = state.optimize(plan)? {
                        if let Some(runnable) =
                            explain_stages(cluster, &state, &explain, force).await?
                        {
                            return Ok(runnable);
                        }
                    }
                }
                // INSERT … SELECT: its rows are read through the cluster,
                // written here.
                if let LogicalPlan::Dml(dml) = plan {
                    if let WriteOp::Insert(op) = dml.op {
                        if let Some((input, sent)) = cluster.plan(&state, &dml.input, force).await?
                        {
                            let input =
                                Arc::new(crate::cluster::DistributedInput::planned(input, &sent));
                            let write = source_as_provider(&dml.target)?
                                .insert_into(&state, input, op)
                                .await?;
                            return Ok(Runnable {
                                plan: write,
                                task: Arc::new(TaskContext::from(&state)),
                                distributed: false,
                            });
                        }
                    }
                }
                if let Some((physical, state)) = cluster.plan(&state, plan, force).await? {
                    return Ok(Runnable {
                        plan: physical,
                        task: Arc::new(TaskContext::from(&state)),
                        distributed: true,
                    });
                }
            }
        }
        // What `create_physical_plan` does, with a look at the optimized
        // plan's constants in between.
        let plan = state.optimize(plan)?;
        let mut state = state;
        let batch_size = state.config().batch_size();
        if let Some(rows) = lakegres_functions::bounded::rows_per_batch(&plan, batch_size) {
            state.config_mut().options_mut().execution.batch_size =
                datafusion::common::config::ConfigNonZeroUsize::try_new(rows)?;
        }
        let physical = state
            .query_planner()
            .create_physical_plan(&plan, &state)
            .await?;
        Ok(Runnable {
            plan: physical,
            task: Arc::new(TaskContext::from(&state)),
            distributed: false,
        })
    }

    /// Runs a DML plan to the end and returns its `count`.
    pub(crate) async fn run_count(&self, plan: LogicalPlan) -> Result<i64> {
        let batches: Vec<RecordBatch> =
            self.physical(&plan).await?.execute()?.try_collect().await?;
        let count = batches
            .iter()
            .filter_map(|b| b.column(0).as_any().downcast_ref::<UInt64Array>())
            .flat_map(|a| a.iter().flatten())
            .sum::<u64>();
        Ok(i64::try_from(count).unwrap_or(i64::MAX))
    }
}

/// Plain `EXPLAIN` of a query the cluster would run: its logical plans as
/// DataFusion shows them, and the physical plan cut into stages and tasks
/// (DataFusion's own EXPLAIN plans without the cluster's planner).
async fn explain_stages(
    cluster: &crate::cluster::Cluster,
    state: &datafusion::execution::SessionState,
    explain: &Explain,
    force: bool,
) -> Result<Option<Runnable>> {
    if explain.verbose
        || !explain.logical_optimization_succeeded
        || !matches!(explain.explain_format, ExplainFormat::Indent)
    {
        return Ok(None);
    }
    let Some((physical, distributed)) = cluster.plan(state, &explain.plan, force).await? else {
        return Ok(None);
    };
    let mut plans = explain.stringified_plans.clone();
    plans.push(explain.plan.to_stringified(PlanType::FinalLogicalPlan));
    plans.push(StringifiedPlan::new(
        PlanType::FinalPhysicalPlan,
        datafusion_distributed::display_plan_ascii(physical.as_ref(), false),
    ));
    Ok(Some(Runnable {
        plan: Arc::new(ExplainExec::new(
            Arc::clone(explain.schema.inner()),
            plans,
            false,
        )),
        task: Arc::new(TaskContext::from(&distributed)),
        distributed: false,
    }))
}

/// How many lateral column aliases one statement may use.
const MAX_LATERAL_ALIASES: usize = 16;

/// The unqualified name of the column a planning error could not find.
fn missing_field(e: &datafusion::error::DataFusionError) -> Option<(String, Vec<String>)> {
    use datafusion::common::SchemaError;
    use datafusion::error::DataFusionError as E;
    match e {
        E::SchemaError(se, _) => match se.as_ref() {
            SchemaError::FieldNotFound {
                field,
                valid_fields,
            } if field.relation.is_none() => Some((
                field.name.clone(),
                valid_fields.iter().map(|c| c.name.clone()).collect(),
            )),
            _ => None,
        },
        E::Context(_, inner) => missing_field(inner),
        E::Diagnostic(_, inner) => missing_field(inner),
        // The planner collects the errors of a select list's items.
        E::Collection(errors) => errors.iter().find_map(missing_field),
        _ => None,
    }
}

/// `TABLESAMPLE` is refused rather than ignored (DataFusion's planner
/// would read every row).
fn refuse_table_sample(ast: &ast::Statement) -> Result<()> {
    use sqlparser::ast::{TableFactor, Visit, Visitor};
    use std::ops::ControlFlow;
    struct Sampled;
    impl Visitor for Sampled {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            match factor {
                TableFactor::Table {
                    sample: Some(_), ..
                } => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    match ast.visit(&mut Sampled) {
        ControlFlow::Break(()) => Err(crate::error::Error::not_supported(
            "TABLESAMPLE (read a sample with ORDER BY rand() LIMIT n, or WHERE rand() < p)",
        )),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Statements naming pg_catalog or information_schema enumerate tables from
/// the cached listing; refresh it first so they see recent DDL of other servers.
fn mentions_catalog_tables(ast: &ast::Statement) -> bool {
    let text = ast.to_string().to_lowercase();
    text.contains("pg_catalog")
        || text.contains("information_schema")
        || text.contains("pg_class")
        || text.contains("pg_namespace")
        || text.contains("pg_tables")
        || text.contains("pg_attribute")
        || text.contains("pg_database")
        || text.contains("regclass")
}

/// `UPDATE t SET Name = …` as `SET name = …`: DataFusion folds unquoted
/// names to lower case everywhere but in UPDATE's SET targets, so a
/// column written as declared would not be found (Databricks' names are
/// case-insensitive).
fn normalize_set_columns(update: &mut ast::Update) {
    for assignment in &mut update.assignments {
        let columns = match &mut assignment.target {
            ast::AssignmentTarget::ColumnName(name) => std::slice::from_mut(name),
            ast::AssignmentTarget::Tuple(names) => names.as_mut_slice(),
        };
        for part in columns.iter_mut().flat_map(|n| n.0.iter_mut()) {
            if let ast::ObjectNamePart::Identifier(ident) = part {
                if ident.quote_style.is_none() {
                    ident.value = ident.value.to_lowercase();
                }
            }
        }
    }
}

/// The values of an UPDATE or INSERT that DataFusion plans, cast to their
/// columns' types as Databricks' store assignment casts them (DataFusion's
/// planner casts each with a plain cast, whose overflow would not name the
/// column).
fn store_assignment(plan: LogicalPlan) -> Result<LogicalPlan> {
    use datafusion::logical_expr::expr::{Alias, Cast};
    use datafusion::logical_expr::{DmlStatement, Expr, Projection, Values, WriteOp};
    use std::sync::Arc;

    /// `CAST(value AS type)` written to `column`, as store assignment (an
    /// integer literal typed INT, as Databricks types it, for the message).
    fn assign(e: &Expr, column: &str) -> Option<Expr> {
        // A parameter in the column's place was typed as the column; the
        // value bound to it may be of the type its client declared (a
        // float for a DECIMAL or INT column), which assignment casts.
        if let Expr::Placeholder(placeholder) = e {
            let field = placeholder.field.as_ref()?;
            return Some(lakegres_functions::ansi_cast::store_assignment(
                e.clone(),
                field.data_type(),
                column,
            ));
        }
        let Expr::Cast(Cast { expr, field }) = e else {
            return None;
        };
        let value = match expr.as_ref() {
            Expr::Literal(ScalarValue::Int64(Some(v)), meta) => match i32::try_from(*v) {
                Ok(v) => Expr::Literal(ScalarValue::Int32(Some(v)), meta.clone()),
                Err(_) => expr.as_ref().clone(),
            },
            other => other.clone(),
        };
        Some(lakegres_functions::ansi_cast::store_assignment(
            value,
            field.data_type(),
            column,
        ))
    }

    let LogicalPlan::Dml(dml) = &plan else {
        return Ok(plan);
    };
    let (WriteOp::Update | WriteOp::Insert(_), LogicalPlan::Projection(projection)) =
        (&dml.op, dml.input.as_ref())
    else {
        return Ok(plan);
    };
    let exprs: Vec<Expr> = projection
        .expr
        .iter()
        .map(|e| match e {
            Expr::Alias(Alias { expr, name, .. }) => assign(expr, name)
                .map(|v| v.alias(name.clone()))
                .unwrap_or_else(|| e.clone()),
            _ => e.clone(),
        })
        .collect();
    // `INSERT … VALUES`: the casts are in the rows, under the projection
    // that names them.
    let source = match projection.input.as_ref() {
        LogicalPlan::Values(values) => {
            let column_of = |i: usize| -> Option<String> {
                let field = values.schema.field(i).name();
                exprs.iter().find_map(|e| match e {
                    Expr::Alias(Alias { expr, name, .. })
                        if matches!(expr.as_ref(), Expr::Column(c) if c.name == *field) =>
                    {
                        Some(name.clone())
                    }
                    _ => None,
                })
            };
            let rows = values
                .values
                .iter()
                .map(|row| {
                    row.iter()
                        .enumerate()
                        .map(|(i, e)| {
                            column_of(i)
                                .and_then(|column| assign(e, &column))
                                .unwrap_or_else(|| e.clone())
                        })
                        .collect()
                })
                .collect();
            Arc::new(LogicalPlan::Values(Values {
                schema: Arc::clone(&values.schema),
                values: rows,
            }))
        }
        _ => Arc::clone(&projection.input),
    };
    let input = Projection::try_new(exprs, source)?;
    Ok(LogicalPlan::Dml(DmlStatement::new(
        dml.table_name.clone(),
        Arc::clone(&dml.target),
        dml.op.clone(),
        Arc::new(LogicalPlan::Projection(input)),
    )))
}

pub(crate) fn bind(plan: LogicalPlan, params: Option<ParamValues>) -> Result<LogicalPlan> {
    match params {
        Some(p) => {
            let p = text_as_typed(p, &plan)?;
            Ok(plan.with_param_values(p)?)
        }
        None => Ok(plan),
    }
}

/// Each parameter that came as text of no type, read as its `$n`'s type in
/// `plan` — Postgres' rule for an `unknown` parameter. It comes as text
/// only where the statement's Describe could not type it (the SELECT of a
/// COPY INTO is typed by files it has not read yet); a text that does not
/// read as the type stays text, for the plan's own coercion to judge.
fn text_as_typed(params: ParamValues, plan: &LogicalPlan) -> Result<ParamValues> {
    let ParamValues::List(mut values) = params else {
        return Ok(params);
    };
    let is_text = |v: &ScalarValue| {
        matches!(
            v,
            ScalarValue::Utf8(Some(_))
                | ScalarValue::Utf8View(Some(_))
                | ScalarValue::LargeUtf8(Some(_))
        )
    };
    if !values.iter().any(|v| is_text(&v.value)) {
        return Ok(ParamValues::List(values));
    }
    let types = plan.get_parameter_types()?;
    for (i, value) in values.iter_mut().enumerate() {
        let Some(Some(to)) = types.get(&format!("${}", i + 1)) else {
            continue;
        };
        if is_text(&value.value)
            && !matches!(
                to,
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            )
        {
            if let Ok(typed) = value.value.cast_to(to) {
                value.value = typed;
            }
        }
    }
    Ok(ParamValues::List(values))
}

/// Integer literals that fit in 32 bits are `INT` in Postgres and in
/// Databricks (`SELECT 1` is int4; `CREATE TABLE t AS SELECT 1 AS a` makes an
/// `int` column); DataFusion types them `BIGINT`. Literals in projections and
/// VALUES lists are narrowed before type coercion runs; other places
/// (LIMIT, positions in ORDER BY) are left as they are.
fn int_literals_as_int(plan: LogicalPlan) -> Result<LogicalPlan> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::logical_expr::Expr as DfExpr;
    fn narrow(e: DfExpr) -> datafusion::error::Result<Transformed<DfExpr>> {
        e.transform_down(|e| match e {
            // A lambda's parameters were typed from the literals it sees.
            DfExpr::HigherOrderFunction(_) => Ok(Transformed::new(
                e,
                false,
                datafusion::common::tree_node::TreeNodeRecursion::Jump,
            )),
            DfExpr::Literal(ScalarValue::Int64(Some(v)), meta) => match i32::try_from(v) {
                Ok(v) => Ok(Transformed::yes(DfExpr::Literal(
                    ScalarValue::Int32(Some(v)),
                    meta,
                ))),
                Err(_) => Ok(Transformed::no(DfExpr::Literal(
                    ScalarValue::Int64(Some(v)),
                    meta,
                ))),
            },
            other => Ok(Transformed::no(other)),
        })
    }
    // Set operations coerce their branches when planned; leave them alone.
    let mut has_set_operation = false;
    plan.apply(|node| {
        has_set_operation |= matches!(node, LogicalPlan::Union(_) | LogicalPlan::RecursiveQuery(_));
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    })?;
    if has_set_operation
        || !matches!(
            plan,
            LogicalPlan::Projection(_)
                | LogicalPlan::Sort(_)
                | LogicalPlan::Limit(_)
                | LogicalPlan::Distinct(_)
        )
    {
        return Ok(plan);
    }
    // A narrowed column keeps its name (`Int64(1)`), which the plan above
    // (a CTE's `t(x)`, a subquery's alias) refers to.
    fn narrow_named(e: DfExpr) -> datafusion::error::Result<Transformed<DfExpr>> {
        let before = e.schema_name().to_string();
        let narrowed = narrow(e)?;
        if !narrowed.transformed || narrowed.data.schema_name().to_string() == before {
            return Ok(narrowed);
        }
        Ok(Transformed::yes(narrowed.data.alias(before)))
    }
    // Every node above a narrowed projection derives its schema again.
    let plan = plan.transform_up(|node| match node {
        LogicalPlan::Projection(_) => node
            .map_expressions(narrow_named)?
            .map_data(|p| p.recompute_schema()),
        other => Ok(Transformed::yes(other.recompute_schema()?)),
    })?;
    Ok(plan.data)
}

/// `$1 … $n` types in order.
pub(crate) fn parameter_types(plan: &LogicalPlan) -> Result<Vec<Option<DataType>>> {
    parameter_types_of(Some(plan), &[])
}

/// `$1 … $n` types in order, over a plan and expressions planned apart
/// from it (a MERGE's conditions, a REPLACE's predicate): the type of each
/// `$n` where some use of it has one.
pub(crate) fn parameter_types_of(
    plan: Option<&LogicalPlan>,
    exprs: &[&DfExpr],
) -> Result<Vec<Option<DataType>>> {
    let mut types: HashMap<String, Option<DataType>> = match plan {
        Some(plan) => plan.get_parameter_types()?,
        None => HashMap::new(),
    };
    for expr in exprs {
        expr.apply(|e| {
            if let DfExpr::Placeholder(p) = e {
                note_type(&mut types, &p.id, p.field.as_ref().map(|f| f.data_type()));
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
    }
    // A `$n` no use of it types takes the type of a cast of it (`$1::INT`),
    // as Postgres types it.
    let mut casts = |e: &DfExpr| {
        e.apply(|e| {
            if let DfExpr::Cast(Cast { expr, field }) | DfExpr::TryCast(TryCast { expr, field }) = e
            {
                if let DfExpr::Placeholder(p) = expr.as_ref() {
                    note_type(&mut types, &p.id, Some(field.data_type()));
                }
            }
            Ok(TreeNodeRecursion::Continue)
        })
    };
    if let Some(plan) = plan {
        plan.apply_with_subqueries(|node| node.apply_expressions(&mut casts))?;
    }
    for expr in exprs {
        casts(expr)?;
    }
    let count = types
        .keys()
        .filter_map(|k| k.trim_start_matches('$').parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    Ok((1..=count)
        .map(|i| types.get(&format!("${i}")).cloned().flatten())
        .collect())
}

/// Records `data_type` for `$n` unless a type is known for it already.
fn note_type(
    types: &mut HashMap<String, Option<DataType>>,
    id: &str,
    data_type: Option<&DataType>,
) {
    let slot = types.entry(id.to_string()).or_default();
    if slot.is_none() {
        *slot = data_type.cloned();
    }
}

/// `expr` with each `$n` replaced by its value, as [`bind`] does for a plan.
pub(crate) fn bind_expr(expr: DfExpr, params: Option<&ParamValues>) -> Result<DfExpr> {
    let Some(params) = params else {
        return Ok(expr);
    };
    Ok(expr
        .transform_up(|e| match e {
            DfExpr::Placeholder(p) => {
                let (value, metadata) = params.get_placeholders_with_values(&p.id)?.into_inner();
                Ok(Transformed::yes(DfExpr::Literal(value, metadata)))
            }
            other => Ok(Transformed::no(other)),
        })?
        .data)
}

/// The `Dml` plan of `delete`.
async fn delete_plan(
    state: &datafusion::execution::context::SessionState,
    delete: &ast::Delete,
    parameter_types: Option<Vec<ast::DataType>>,
) -> Result<LogicalPlan> {
    let unsupported = |what: &str| Err(Error::not_supported(format!("DELETE with {what}")));
    if !delete.tables.is_empty() {
        return unsupported("several tables");
    }
    if delete.using.is_some() {
        return unsupported("USING (write it as MERGE INTO … WHEN MATCHED THEN DELETE)");
    }
    if delete.returning.is_some() || delete.output.is_some() {
        return unsupported("RETURNING");
    }
    if !delete.order_by.is_empty() || delete.limit.is_some() {
        return unsupported("ORDER BY or LIMIT");
    }
    let from = match &delete.from {
        ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => from,
    };
    let [target] = from.as_slice() else {
        return unsupported("several tables");
    };
    if !target.joins.is_empty() || !matches!(target.relation, ast::TableFactor::Table { .. }) {
        return unsupported("a join or a subquery as its target");
    }

    let mut query = crate::parser::query_template("SELECT * FROM lakegres_target")?;
    let ast::SetExpr::Select(select) = query.body.as_mut() else {
        return Err(Error::internal("the DELETE template is not a SELECT"));
    };
    select.from = vec![target.clone()];
    select.selection = delete.selection.clone();

    let query = ast::Statement::Query(query);
    let plan = match parameter_types {
        None => {
            state
                .statement_to_plan(DFStatement::Statement(Box::new(query)))
                .await?
        }
        Some(types) => crate::declared_params::prepared_input(
            state
                .statement_to_plan(DFStatement::Statement(Box::new(
                    crate::declared_params::as_prepare(query, types),
                )))
                .await?,
        )?,
    };
    // SELECT * → Projection over [Filter →] [SubqueryAlias →] TableScan.
    let LogicalPlan::Projection(projection) = plan else {
        return Err(Error::internal(
            "a DELETE target did not plan as a projection",
        ));
    };
    let input = projection.input;
    let mut scan = input.as_ref();
    loop {
        scan = match scan {
            LogicalPlan::Filter(f) => f.input.as_ref(),
            LogicalPlan::SubqueryAlias(a) => a.input.as_ref(),
            _ => break,
        };
    }
    let LogicalPlan::TableScan(scan) = scan else {
        return unsupported("this target");
    };
    Ok(LogicalPlan::Dml(
        datafusion::logical_expr::DmlStatement::new(
            scan.table_name.clone(),
            Arc::clone(&scan.source),
            WriteOp::Delete,
            input,
        ),
    ))
}
