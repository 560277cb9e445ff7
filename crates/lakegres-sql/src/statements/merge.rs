//! MERGE INTO with Databricks semantics (SEMANTICS.md §3), run by delta-rs'
//! MergeBuilder as one commit. `UPDATE SET *` / `INSERT *` are expanded here
//! by name, case-insensitively, against the source's columns.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use std::ops::ControlFlow;

use sqlparser::ast::{self, visit_expressions_mut, Expr, Ident, ObjectName, TableFactor};

use datafusion::common::{DFSchema, ParamValues, TableReference};
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr as DfExpr, LogicalPlan};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use lakegres_delta::merge::{MergeClause, MergeClauseAction};
use lakegres_delta::TableName;
use lakegres_functions::ansi_cast::store_assignment_into;
use sqlparser::ast::ExprWithAlias;

use crate::error::{class, ErrorClass};
use crate::error::{Error, Result};
use crate::names::table_name;
use crate::output::{fixed, rows_output, Description, Output};
use crate::parser::{Merge, MergeAction, MergeClauseKind};
use crate::plan::{bind, bind_expr, parameter_types_of};
use crate::statement_context::StatementContext;

/// The Databricks result of a MERGE.
pub(crate) fn merge_result_schema() -> SchemaRef {
    Arc::new(Schema::new(
        [
            "num_affected_rows",
            "num_updated_rows",
            "num_deleted_rows",
            "num_inserted_rows",
        ]
        .into_iter()
        .map(|n| Field::new(n, DataType::Int64, false))
        .collect::<Vec<_>>(),
    ))
}

/// The columns of EXPLAIN MERGE, DataFusion's EXPLAIN shape.
pub(crate) fn explain_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("plan_type", DataType::Utf8, false),
        Field::new("plan", DataType::Utf8, false),
    ]))
}

/// `EXPLAIN MERGE …`: the merge node (target, condition, clauses in order)
/// and the logical plan of its source.
pub(crate) async fn explain(cx: &StatementContext<'_>, m: &Merge) -> Result<Output> {
    check_clause_conditions(m)?;
    let name = table_name(cx, &m.target)?;
    let (source_alias, source) = source_query(m)?;
    let source_plan = cx.plan(&ast::Statement::Query(source)).await?;
    let mut merge = format!(
        "MergeInto: target={name} AS {} source={source_alias} on={}{}",
        m.target_alias
            .as_ref()
            .map(|a| a.value.as_str())
            .unwrap_or(name.table.as_str()),
        m.on,
        if m.schema_evolution {
            " schema_evolution"
        } else {
            ""
        }
    );
    for (i, c) in m.clauses.iter().enumerate() {
        let kind = match c.kind {
            MergeClauseKind::Matched => "WHEN MATCHED",
            MergeClauseKind::NotMatchedByTarget => "WHEN NOT MATCHED",
            MergeClauseKind::NotMatchedBySource => "WHEN NOT MATCHED BY SOURCE",
        };
        let condition = c
            .condition
            .as_ref()
            .map(|e| format!(" AND {e}"))
            .unwrap_or_default();
        let action = match &c.action {
            MergeAction::Update(sets) => format!(
                "UPDATE SET {}",
                sets.iter()
                    .map(|(c, e)| format!("{c} = {e}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            MergeAction::UpdateAll => "UPDATE SET *".to_string(),
            MergeAction::Delete => "DELETE".to_string(),
            MergeAction::Insert { columns, values } => format!(
                "INSERT ({}) VALUES ({})",
                columns
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                values
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            MergeAction::InsertAll => "INSERT *".to_string(),
        };
        merge.push_str(&format!("\n  {}: {kind}{condition} THEN {action}", i + 1));
    }
    let batch = RecordBatch::try_new(
        explain_schema(),
        vec![
            Arc::new(datafusion::arrow::array::StringArray::from(vec![
                "merge_plan".to_string(),
                "source_plan".to_string(),
            ])) as ArrayRef,
            Arc::new(datafusion::arrow::array::StringArray::from(vec![
                merge,
                source_plan.display_indent().to_string(),
            ])) as ArrayRef,
        ],
    )
    .map_err(datafusion::error::DataFusionError::from)?;
    Ok(rows_output(
        batch,
        crate::output::CommandTag::Counted("EXPLAIN"),
    ))
}

/// Runs a MERGE, `params` its `$n` values.
pub(crate) async fn merge(
    cx: &StatementContext<'_>,
    m: &Merge,
    params: Option<&ParamValues>,
) -> Result<Output> {
    let (updated, deleted, inserted) = merge_counts(cx, m, params).await?;
    let affected = updated + deleted + inserted;
    let column = |v: i64| Arc::new(Int64Array::from(vec![v])) as ArrayRef;
    let batch = RecordBatch::try_new(
        merge_result_schema(),
        vec![
            column(affected),
            column(updated),
            column(deleted),
            column(inserted),
        ],
    )
    .map_err(datafusion::error::DataFusionError::from)?;
    Ok(rows_output(batch, fixed(&format!("MERGE {affected}"))))
}

/// What the extended protocol's Describe reports of a MERGE: the types of
/// its `$n` (from its source query, its conditions and its values) and its
/// result row.
pub(crate) async fn describe(cx: &StatementContext<'_>, m: &Merge) -> Result<Description> {
    let resolved = resolve(cx, m).await?;
    let mut exprs: Vec<&DfExpr> = vec![&resolved.on];
    for clause in &resolved.clauses {
        exprs.extend(clause.condition.iter());
        match &clause.action {
            MergeClauseAction::Update(sets) | MergeClauseAction::Insert(sets) => {
                exprs.extend(sets.iter().map(|(_, e)| e));
            }
            MergeClauseAction::Delete => {}
        }
    }
    Ok(Description {
        params: parameter_types_of(Some(&resolved.source_plan), &exprs)?,
        schema: Some(merge_result_schema()),
    })
}

/// A MERGE resolved against its target and its source: the source's plan
/// and every condition and value as an expression over the two aliases,
/// `$n` still unbound.
struct Resolved {
    name: TableName,
    table: lakegres_delta::Table,
    target_alias: String,
    source_alias: String,
    source_plan: LogicalPlan,
    /// The target's and the source's columns, as the expressions read them.
    both: Arc<DFSchema>,
    on: DfExpr,
    clauses: Vec<MergeClause>,
}

/// Runs a MERGE as one commit: the rows it updated, deleted and inserted.
pub(crate) async fn merge_counts(
    cx: &StatementContext<'_>,
    m: &Merge,
    params: Option<&ParamValues>,
) -> Result<(i64, i64, i64)> {
    let Resolved {
        name,
        table,
        target_alias,
        source_alias,
        source_plan,
        both,
        on,
        clauses,
    } = resolve(cx, m).await?;
    // The route that marks rows checks every match in its own join.
    if needs_duplicate_check(m) && !lakegres_delta::merge::marks_rows(&table, m.schema_evolution) {
        check_duplicate_matches(cx, m, params, &name, &target_alias, &source_alias).await?;
    }
    let source_plan = bind(source_plan, params.cloned())?;
    // A source the cluster may read is planned again for each read.
    let source_df = match crate::cluster::ClusterSource::of(
        cx.engine(),
        cx.distribution(),
        cx.context().state(),
        &source_plan,
    )? {
        Some(source) => cx.context().read_table(Arc::new(source))?,
        None => cx.context().execute_logical_plan(source_plan).await?,
    };
    // Typed as DataFusion's analyzer types a join condition: the target's
    // file pruning reads the condition before any analyzer has run. (Not
    // simplified: `t.k = s.k AND 1 = 0` would lose its join key.)
    let on = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::clone(&both))
            .build(),
    )
    .coerce(bind_expr(on, params)?, &both)?;
    let clauses = clauses
        .into_iter()
        .map(|clause| {
            let bind_sets = |sets: Vec<(String, DfExpr)>| {
                sets.into_iter()
                    .map(|(c, e)| Ok((c, bind_expr(e, params)?)))
                    .collect::<Result<Vec<_>>>()
            };
            Ok(MergeClause {
                kind: clause.kind,
                condition: clause.condition.map(|c| bind_expr(c, params)).transpose()?,
                action: match clause.action {
                    MergeClauseAction::Update(sets) => MergeClauseAction::Update(bind_sets(sets)?),
                    MergeClauseAction::Insert(sets) => MergeClauseAction::Insert(bind_sets(sets)?),
                    MergeClauseAction::Delete => MergeClauseAction::Delete,
                },
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let counts = lakegres_delta::merge::merge(
        lakegres_delta::merge::MergeSpec {
            name,
            table,
            target_alias,
            source: source_df,
            source_alias,
            on,
            clauses,
            schema_evolution: m.schema_evolution,
        },
        cx.context().state(),
    )
    .await?;
    let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    Ok((
        as_i64(counts.updated),
        as_i64(counts.deleted),
        as_i64(counts.inserted),
    ))
}

/// Resolves `m`: names (case-insensitively, as Databricks does), `*`,
/// generated columns and store assignment, Databricks' checks.
async fn resolve(cx: &StatementContext<'_>, m: &Merge) -> Result<Resolved> {
    check_clause_conditions(m)?;
    let name = table_name(cx, &m.target)?;
    let table = cx.load_table(&name).await?;
    let columns = table.info(&name)?.columns;
    let target_columns: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    let target_types = table.arrow_schema(&name)?;
    let generated: Vec<(String, String)> = columns
        .iter()
        .filter_map(|c| Some((c.name.clone(), c.generated.clone()?)))
        .collect();
    // Columns `INSERT *` may find missing from the source: the table
    // fills them itself.
    let filled: Vec<String> = columns
        .iter()
        .filter(|c| c.generated.is_some() || c.identity.is_some())
        .map(|c| c.name.clone())
        .collect();
    let target_alias = m
        .target_alias
        .as_ref()
        .map(|a| a.value.clone())
        .unwrap_or_else(|| name.table.clone());

    let (source_alias, source) = source_query(m)?;
    let source_plan = cx.plan(&ast::Statement::Query(source)).await?;
    let source_columns: Vec<String> = source_plan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();

    let variables = crate::resolve::variables::values(cx)?;
    let names = Names {
        target_alias: &target_alias,
        target_columns: &target_columns,
        source_alias: &source_alias,
        source_columns: &source_columns,
        filled: &filled,
        variables: &variables,
    };
    if let Some(f) = first_function(&m.on, NON_DETERMINISTIC) {
        return Err(Error::analysis(
            class::DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED,
            format!("non-deterministic function {f} is not supported in the MERGE condition"),
        ));
    }
    // Conditions and values become expressions over both sides' columns,
    // qualified by the aliases as written.
    // (`TableReference::bare`: an alias as written, `T` not folded to `t`,
    // as the storage layer aliases the two sides.)
    let mut both = DFSchema::try_from_qualified_schema(
        TableReference::bare(target_alias.as_str()),
        &target_types,
    )?;
    both.merge(&DFSchema::try_from_qualified_schema(
        TableReference::bare(source_alias.as_str()),
        source_plan.schema().as_arrow(),
    )?);
    let state = cx.context().state();
    let plan_expr = |e: Expr| -> Result<DfExpr> {
        Ok(state.create_logical_expr_from_sql_expr(
            ExprWithAlias {
                expr: e,
                alias: None,
            },
            &both,
        )?)
    };
    let on = plan_expr(names.resolve(&m.on, Sides::Both)?)?;
    let mut clauses = Vec::with_capacity(m.clauses.len());
    for clause in &m.clauses {
        let sides = match clause.kind {
            MergeClauseKind::Matched => Sides::Both,
            MergeClauseKind::NotMatchedByTarget => Sides::Source,
            MergeClauseKind::NotMatchedBySource => Sides::Target,
        };
        let condition = clause
            .condition
            .as_ref()
            .map(|c| plan_expr(names.resolve(c, sides)?))
            .transpose()?;
        // The clause's assignments, then what it does.
        let sets = match &clause.action {
            MergeAction::Update(assignments) => explicit_assignments(
                &names,
                assignments.iter().map(|(c, v)| (c, v)),
                sides,
                "UPDATE",
                class::DELTA_CONFLICT_SET_COLUMN,
            )?,
            MergeAction::Insert { columns, values } => {
                if columns.len() != values.len() {
                    return Err(Error::analysis(
                        class::DELTA_INSERT_COLUMN_ARITY_MISMATCH,
                        format!(
                            "INSERT names {} columns but gives {} values",
                            columns.len(),
                            values.len()
                        ),
                    ));
                }
                explicit_assignments(
                    &names,
                    columns.iter().zip(values),
                    sides,
                    "INSERT",
                    class::DELTA_DUPLICATE_COLUMNS_ON_INSERT,
                )?
            }
            MergeAction::UpdateAll => star_assignments(&names, m.schema_evolution, "UPDATE")?,
            MergeAction::InsertAll => star_assignments(&names, m.schema_evolution, "INSERT")?,
            MergeAction::Delete => Vec::new(),
        };
        let action = match &clause.action {
            // delta-rs does not recompute generated columns on update.
            MergeAction::Update(_) | MergeAction::UpdateAll => MergeClauseAction::Update(assigned(
                with_generated(&names, &generated, sets)?,
                &target_types,
                &plan_expr,
            )?),
            MergeAction::Delete => MergeClauseAction::Delete,
            MergeAction::Insert { .. } | MergeAction::InsertAll => {
                MergeClauseAction::Insert(assigned(sets, &target_types, &plan_expr)?)
            }
        };
        clauses.push(MergeClause {
            kind: clause.kind,
            condition,
            action,
        });
    }
    Ok(Resolved {
        name,
        table,
        target_alias,
        source_alias,
        source_plan,
        both: Arc::new(both),
        on,
        clauses,
    })
}

/// Each value planned and cast to its column's type as Databricks' store
/// assignment casts it (a column new to the table, by schema evolution,
/// keeps its value's type). A bare `$n` takes its column's type, as
/// Postgres types an INSERT's or UPDATE's parameter.
fn assigned(
    sets: Vec<(String, Expr)>,
    target: &datafusion::arrow::datatypes::Schema,
    plan_expr: &dyn Fn(Expr) -> Result<DfExpr>,
) -> Result<Vec<(String, DfExpr)>> {
    sets.into_iter()
        .map(|(column, value)| {
            let value = plan_expr(value)?;
            Ok(match target.field_with_name(&column) {
                Ok(field) => {
                    let value = match value {
                        DfExpr::Placeholder(p) if p.field.is_none() => DfExpr::Placeholder(
                            Placeholder::new_with_field(p.id, Some(Arc::new(field.clone()))),
                        ),
                        other => other,
                    };
                    let value = store_assignment_into(value, field, &column);
                    (column, value)
                }
                Err(_) => (column, value),
            })
        })
        .collect()
}

/// `SET c = e, …` / `INSERT (c, …) VALUES (e, …)`: declared target names,
/// each at most once (`dup_class` otherwise), values resolved for delta-rs.
fn explicit_assignments<'e>(
    names: &Names,
    pairs: impl Iterator<Item = (&'e ObjectName, &'e Expr)>,
    sides: Sides,
    clause: &str,
    dup_class: ErrorClass,
) -> Result<Vec<(String, Expr)>> {
    let mut sets: Vec<(String, Expr)> = Vec::new();
    for (column, value) in pairs {
        let column = target_column(names.target_columns, column, clause)?;
        if sets.iter().any(|(c, _)| *c == column) {
            return Err(Error::analysis(
                dup_class,
                format!("column {column} is assigned more than once in {clause}"),
            ));
        }
        sets.push((column, names.resolve(value, sides)?));
    }
    Ok(sets)
}

/// `SET *` / `INSERT *`: every target column from the source column of the
/// same name (SEMANTICS.md §3.5); with schema evolution, source columns the
/// target lacks are added and target columns the source lacks are left out.
fn star_assignments(names: &Names, evolution: bool, clause: &str) -> Result<Vec<(String, Expr)>> {
    let source_ref = |column: &str| Names::column(names.source_alias, column);
    let mut sets = Vec::new();
    for t in names.target_columns {
        match find(names.source_columns, t) {
            Some(s) => sets.push((t.clone(), source_ref(s))),
            None if evolution || names.filled.contains(t) => {}
            None => return Err(unresolved(t, clause)),
        }
    }
    if evolution {
        for s in names.source_columns {
            if find(names.target_columns, s).is_none() {
                sets.push((s.clone(), source_ref(s)));
            }
        }
    }
    Ok(sets)
}

/// The assignments of an update clause plus one per generated column whose
/// expression reads an assigned column: the expression over the new values
/// (Databricks recomputes generated columns on update).
fn with_generated(
    names: &Names,
    generated: &[(String, String)],
    mut sets: Vec<(String, Expr)>,
) -> Result<Vec<(String, Expr)>> {
    let dialect = crate::parser::LakegresDialect::default();
    let parse = |sql: &str| -> Result<Expr> {
        sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| Error::Internal {
                message: format!("reading a generated column's expression {sql}: {e}"),
            })
    };
    let mut added = Vec::new();
    for (column, text) in generated {
        if sets.iter().any(|(c, _)| c.eq_ignore_ascii_case(column)) {
            continue;
        }
        let mut expr = parse(text)?;
        let mut reads_assigned = false;
        let _ = visit_expressions_mut(&mut expr, |e| {
            let Expr::Identifier(ident) = e else {
                return ControlFlow::<()>::Continue(());
            };
            match sets
                .iter()
                .find(|(c, _)| c.eq_ignore_ascii_case(&ident.value))
            {
                Some((_, value)) => {
                    reads_assigned = true;
                    *e = Expr::Nested(Box::new(value.clone()));
                }
                None => {
                    if let Some(c) = find(names.target_columns, &ident.value) {
                        *e = Names::column(names.target_alias, c);
                    }
                }
            }
            ControlFlow::Continue(())
        });
        if reads_assigned {
            added.push((column.clone(), expr));
        }
    }
    sets.extend(added);
    Ok(sets)
}

/// Which side's columns an expression may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sides {
    Both,
    Source,
    Target,
}

/// Resolves column references case-insensitively, as Databricks does, and
/// writes them quoted and qualified by their side's alias, so the planner
/// finds declared mixed-case names.
struct Names<'a> {
    target_alias: &'a str,
    target_columns: &'a [String],
    source_alias: &'a str,
    source_columns: &'a [String],
    /// Target columns the table fills (generated, identity).
    filled: &'a [String],
    /// The session's variables: a name no column has may be one
    /// (`session.v` always is).
    variables: &'a std::collections::HashMap<String, Expr>,
}

impl Names<'_> {
    fn resolve(&self, expr: &Expr, sides: Sides) -> Result<Expr> {
        if let Some(f) = first_function(expr, AGGREGATES) {
            return Err(Error::analysis(
                class::DELTA_AGGREGATION_NOT_SUPPORTED,
                format!("aggregate function {f} is not supported in MERGE"),
            ));
        }
        let mut expr = expr.clone();
        let mut failure = None;
        let _ = visit_expressions_mut(&mut expr, |e| {
            let resolved = match e {
                Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                    self.qualified(&parts[0].value, &parts[1].value, sides)
                }
                Expr::Identifier(ident) => self.unqualified(&ident.value, sides),
                _ => return ControlFlow::<()>::Continue(()),
            };
            match resolved {
                Ok(Some(r)) => *e = r,
                Ok(None) => {}
                Err(err) => {
                    failure = Some(err);
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
        match failure {
            Some(err) => Err(err),
            None => Ok(expr),
        }
    }

    fn column(alias: &str, column: &str) -> Expr {
        Expr::CompoundIdentifier(vec![
            Ident::with_quote('"', alias),
            Ident::with_quote('"', column),
        ])
    }

    fn qualified(&self, qualifier: &str, name: &str, sides: Sides) -> Result<Option<Expr>> {
        if qualifier.eq_ignore_ascii_case(self.target_alias) {
            if sides == Sides::Source {
                return Err(unresolved(&format!("{qualifier}.{name}"), "INSERT"));
            }
            return match find(self.target_columns, name) {
                Some(c) => Ok(Some(Self::column(self.target_alias, c))),
                None => Err(unresolved(&format!("{qualifier}.{name}"), "MERGE")),
            };
        }
        if qualifier.eq_ignore_ascii_case(self.source_alias) {
            if sides == Sides::Target {
                return Err(unresolved(
                    &format!("{qualifier}.{name}"),
                    "NOT MATCHED BY SOURCE",
                ));
            }
            return match find(self.source_columns, name) {
                Some(c) => Ok(Some(Self::column(self.source_alias, c))),
                None => Err(unresolved(&format!("{qualifier}.{name}"), "MERGE")),
            };
        }
        if qualifier.eq_ignore_ascii_case("session") {
            if let Some(value) = self.variables.get(&name.to_lowercase()) {
                return Ok(Some(value.clone()));
            }
        }
        Err(unresolved(&format!("{qualifier}.{name}"), "MERGE"))
    }

    fn unqualified(&self, name: &str, sides: Sides) -> Result<Option<Expr>> {
        let in_target = (sides != Sides::Source)
            .then(|| find(self.target_columns, name))
            .flatten();
        let in_source = (sides != Sides::Target)
            .then(|| find(self.source_columns, name))
            .flatten();
        match (in_target, in_source) {
            (Some(_), Some(_)) => Err(Error::analysis(
                class::AMBIGUOUS_REFERENCE,
                format!("reference {name} is ambiguous: both the source and the target have it"),
            )),
            (Some(t), None) => Ok(Some(Self::column(self.target_alias, t))),
            (None, Some(s)) => Ok(Some(Self::column(self.source_alias, s))),
            (None, None) => match self.variables.get(&name.to_lowercase()) {
                Some(value) => Ok(Some(value.clone())),
                None => Err(unresolved(name, "MERGE")),
            },
        }
    }
}

const AGGREGATES: &[&str] = &[
    "avg",
    "count",
    "max",
    "min",
    "sum",
    "first",
    "last",
    "collect_list",
    "collect_set",
    "stddev",
    "variance",
    "any_value",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
];

const NON_DETERMINISTIC: &[&str] = &["rand", "random", "randn", "uuid", "shuffle"];

/// The first call of one of `names` inside `expr`.
fn first_function(expr: &Expr, names: &[&str]) -> Option<String> {
    let mut found = None;
    let _ = sqlparser::ast::visit_expressions(expr, |e| {
        if let Expr::Function(f) = e {
            let name = f.name.to_string().to_lowercase();
            if names.contains(&name.as_str()) {
                found = Some(name);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    found
}

/// Databricks fails a MERGE when a target row matches several source rows,
/// whatever the clause conditions say, unless the only MATCHED clause is an
/// unconditional DELETE (SEMANTICS.md §3.3). delta-rs checks this itself for
/// unconditional clauses; with conditional MATCHED clauses it only counts
/// source rows whose condition holds, so those MERGEs are checked here first.
fn needs_duplicate_check(m: &Merge) -> bool {
    let matched: Vec<_> = m
        .clauses
        .iter()
        .filter(|c| c.kind == MergeClauseKind::Matched)
        .collect();
    let only_unconditional_delete = matched.len() == 1
        && matched[0].condition.is_none()
        && matched[0].action == MergeAction::Delete;
    !matched.is_empty()
        && !only_unconditional_delete
        && matched.iter().any(|c| c.condition.is_some())
}

async fn check_duplicate_matches(
    cx: &StatementContext<'_>,
    m: &Merge,
    params: Option<&ParamValues>,
    name: &lakegres_delta::TableName,
    target_alias: &str,
    source_alias: &str,
) -> Result<()> {
    let (_, source) = source_query(m)?;
    // The target's rows numbered, joined to the source by the merge
    // condition: a target row joined twice is the error.
    let mut check = crate::parser::query_template(
        "SELECT 1 FROM (SELECT *, row_number() OVER () AS lakegres_row_id FROM lakegres_target) \
         AS lakegres_t JOIN (SELECT 1) AS lakegres_s ON true \
         GROUP BY lakegres_t.lakegres_row_id HAVING count(*) > 1 LIMIT 1",
    )?;
    let ident = |name: &str| ast::Ident::with_quote('"', name);
    let ast::SetExpr::Select(select) = check.body.as_mut() else {
        return Err(Error::internal("the MERGE duplicate check is not a SELECT"));
    };
    let [from] = select.from.as_mut_slice() else {
        return Err(Error::internal(
            "the MERGE duplicate check reads one relation",
        ));
    };
    if let TableFactor::Derived {
        subquery, alias, ..
    } = &mut from.relation
    {
        if let ast::SetExpr::Select(inner) = subquery.body.as_mut() {
            if let [inner] = inner.from.as_mut_slice() {
                if let TableFactor::Table { name: table, .. } = &mut inner.relation {
                    *table = ObjectName::from(vec![ident(&name.schema), ident(&name.table)]);
                }
            }
        }
        if let Some(alias) = alias {
            alias.name = ident(target_alias);
        }
    }
    let [join] = from.joins.as_mut_slice() else {
        return Err(Error::internal(
            "the MERGE duplicate check joins one relation",
        ));
    };
    if let TableFactor::Derived {
        subquery, alias, ..
    } = &mut join.relation
    {
        *subquery = source;
        if let Some(alias) = alias {
            alias.name = ident(source_alias);
        }
    }
    if let ast::JoinOperator::Join(ast::JoinConstraint::On(on))
    | ast::JoinOperator::Inner(ast::JoinConstraint::On(on)) = &mut join.join_operator
    {
        *on = m.on.clone();
    }
    if let ast::GroupByExpr::Expressions(exprs, _) = &mut select.group_by {
        if let [ast::Expr::CompoundIdentifier(parts)] = exprs.as_mut_slice() {
            parts[0] = ident(target_alias);
        }
    }
    let ast = ast::Statement::Query(check);
    let plan = bind(cx.plan(&ast).await?, params.cloned())?;
    let batches = cx
        .context()
        .execute_logical_plan(plan)
        .await?
        .collect()
        .await?;
    if batches.iter().any(|b| b.num_rows() > 0) {
        return Err(lakegres_delta::Error::MergeDuplicateSourceRows {
            table: name.to_string(),
        }
        .into());
    }
    Ok(())
}

/// Within each kind of clause, every clause but the last needs a condition
/// (`NON_LAST_*_CLAUSE_OMIT_CONDITION`, 42613).
fn check_clause_conditions(m: &Merge) -> Result<()> {
    check_no_subqueries(m)?;
    for (kind, class) in [
        (
            MergeClauseKind::Matched,
            class::NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION,
        ),
        (
            MergeClauseKind::NotMatchedByTarget,
            class::NON_LAST_NOT_MATCHED_BY_TARGET_CLAUSE_OMIT_CONDITION,
        ),
        (
            MergeClauseKind::NotMatchedBySource,
            class::NON_LAST_NOT_MATCHED_BY_SOURCE_CLAUSE_OMIT_CONDITION,
        ),
    ] {
        let of_kind: Vec<_> = m.clauses.iter().filter(|c| c.kind == kind).collect();
        if of_kind
            .iter()
            .take(of_kind.len().saturating_sub(1))
            .any(|c| c.condition.is_none())
        {
            return Err(Error::analysis(
                class,
                "only the last clause of a kind may omit its condition",
            ));
        }
    }
    Ok(())
}

/// Databricks refuses a subquery in the merge condition, a clause's
/// condition or its actions (`DELTA_UNSUPPORTED_SUBQUERY`); the source may
/// be any query.
fn check_no_subqueries(m: &Merge) -> Result<()> {
    let mut exprs: Vec<&Expr> = vec![&m.on];
    for clause in &m.clauses {
        exprs.extend(clause.condition.iter());
        match &clause.action {
            MergeAction::Update(sets) => exprs.extend(sets.iter().map(|(_, e)| e)),
            MergeAction::Insert { values, .. } => exprs.extend(values.iter()),
            MergeAction::UpdateAll | MergeAction::Delete | MergeAction::InsertAll => {}
        }
    }
    for expr in exprs {
        crate::conditions::refuse_subqueries(
            "MERGE",
            "MERGE takes subqueries only as its source",
            expr,
        )?;
    }
    Ok(())
}

/// The source as a query of its own (`[WITH …] SELECT * FROM <source>`)
/// and the name it is referred to by. Built on the syntax tree: nothing
/// the user wrote is rendered to text and read again.
fn source_query(m: &Merge) -> Result<(String, Box<ast::Query>)> {
    let alias = match &m.source {
        TableFactor::Table { name, alias, .. } => {
            alias.as_ref().map(|a| a.name.value.clone()).or_else(|| {
                name.0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.clone())
            })
        }
        TableFactor::Derived { alias, .. } => alias.as_ref().map(|a| a.name.value.clone()),
        _ => None,
    }
    .unwrap_or_else(|| "source".to_string());
    if !matches!(
        m.source,
        TableFactor::Table { .. } | TableFactor::Derived { .. }
    ) {
        return Err(Error::not_supported(format!("MERGE source {}", m.source)));
    }
    let mut query = crate::parser::query_template("SELECT * FROM lakegres_source")?;
    query.with = m.with.clone();
    let ast::SetExpr::Select(select) = query.body.as_mut() else {
        return Err(Error::internal("the MERGE source template is not a SELECT"));
    };
    select.from = vec![ast::TableWithJoins {
        relation: m.source.clone(),
        joins: vec![],
    }];
    Ok((alias, query))
}

fn find<'a>(columns: &'a [String], name: &str) -> Option<&'a String> {
    columns.iter().find(|c| c.eq_ignore_ascii_case(name))
}

/// The declared name of a SET/INSERT target column (qualifiers dropped).
fn target_column(target_columns: &[String], column: &ObjectName, clause: &str) -> Result<String> {
    let name = column
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default();
    find(target_columns, &name)
        .cloned()
        .ok_or_else(|| unresolved(&name, clause))
}

fn unresolved(column: &str, clause: &str) -> Error {
    Error::analysis(
        class::DELTA_MERGE_UNRESOLVED_EXPRESSION,
        format!("cannot resolve {column} in {clause} clause"),
    )
}
