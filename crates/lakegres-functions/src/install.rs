//! What a session gets from this crate: Databricks' functions, its
//! expression planner and its analyzer rules, installed over DataFusion's
//! defaults (which they replace where the names clash).

use std::sync::Arc;

use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

use crate::{
    aggregate, ansi_cast, array, average, bounded, cast, catalog, conditional, datetime, generator,
    hash, interval_math, json, lambda, map, math, planner, regex, set_ops, string, struct_, udf,
};

/// Gives a session Databricks' functions and semantics on top of
/// DataFusion's defaults (which they replace where the names clash).
pub fn install(ctx: &SessionContext) {
    let state = ctx.state_ref();
    let mut state = state.write();
    let current = state.clone();
    *state = with_databricks(current);
}

/// A session state with Databricks' functions and semantics.
fn with_databricks(state: SessionState) -> SessionState {
    let mut builder = SessionStateBuilder::new_from_existing(state);
    // Ours first: the planners are asked in order, and DataFusion's own
    // would plan `[]` 1-based and `/` on integers as integer division.
    let planners = builder.expr_planners().get_or_insert_with(Vec::new);
    planners.insert(0, Arc::new(planner::DatabricksPlanner));
    // Higher-order functions of the same name (array_sort with a
    // comparator) are only found when no scalar function has it.
    if let Some(scalars) = builder.scalar_functions() {
        scalars.retain(|f| !SHADOWED_BY_LAMBDAS.contains(&f.name()));
    }
    let higher_order = builder
        .higher_order_functions()
        .get_or_insert_with(Vec::new);
    higher_order.extend(lambda::functions());
    let tables = builder
        .table_functions()
        .get_or_insert_with(Default::default);
    for (name, function) in catalog::table_functions()
        .into_iter()
        .chain(generator::table_functions())
    {
        tables.insert(
            name.to_string(),
            Arc::new(datafusion::catalog::TableFunction::new(
                name.to_string(),
                function,
            )),
        );
    }
    let mut state = builder.build();
    // Registered on the built state, so that ours replace DataFusion's of
    // the same name or alias (`date_format` is an alias of its `to_char`):
    // a function one of ours displaces is removed with all its names, so
    // that no later rebuild of the state (datafusion-pg-catalog's setup
    // makes one) can bring it back over ours.
    use datafusion::execution::FunctionRegistry;
    let ours: Vec<Arc<ScalarUDF>> = spark_scalar_functions()
        .into_iter()
        .chain(scalar_functions().into_iter().map(Arc::new))
        .collect();
    let claimed: std::collections::HashSet<String> = ours
        .iter()
        .flat_map(|f| std::iter::once(f.name().to_string()).chain(f.aliases().iter().cloned()))
        .collect();
    let mut kept = Vec::new();
    for name in &claimed {
        let Some(displaced) = state.scalar_functions().get(name).cloned() else {
            continue;
        };
        let _ = state.deregister_udf(displaced.name());
        // DataFusion's function keeps the names ours do not take
        // (`strpos` stays when `instr` and `position` are ours).
        if !claimed.contains(displaced.name()) {
            let aliases = displaced
                .aliases()
                .iter()
                .filter(|a| !claimed.contains(*a))
                .cloned()
                .collect();
            kept.push(udf::Adapted::realiased(displaced, aliases));
        }
    }
    for function in kept.into_iter().chain(ours) {
        let _ = state.register_udf(function);
    }
    let aggregates: Vec<Arc<AggregateUDF>> = datafusion_spark::all_default_aggregate_functions()
        .into_iter()
        // Ours keeps a DECIMAL average DECIMAL, as Databricks does.
        .filter(|f| f.name() != "avg")
        .chain(std::iter::once(Arc::new(AggregateUDF::new_from_impl(
            average::Avg::new(),
        ))))
        .chain(aggregate_functions().into_iter().map(Arc::new))
        .collect();
    for function in &aggregates {
        for name in
            std::iter::once(function.name()).chain(function.aliases().iter().map(String::as_str))
        {
            let displaced = state
                .aggregate_functions()
                .get(name)
                .map(|f| f.name().to_string());
            if let Some(displaced) = displaced {
                let _ = state.deregister_udaf(&displaced);
            }
        }
    }
    for function in aggregates {
        let _ = state.register_udaf(function);
    }
    for (name, size) in bounded::BOUNDED {
        if let Some(function) = state.scalar_functions().get(*name).cloned() {
            let _ = state.deregister_udf(function.name());
            let _ = state.register_udf(udf::Adapted::bounded(function, *size));
        }
    }
    for name in ["coalesce", "nvl", "ifnull", "greatest", "least"] {
        if let Some(function) = state.scalar_functions().get(name).cloned() {
            if function.name() == name {
                let _ = state.deregister_udf(name);
                let _ = state.register_udf(udf::Adapted::strings_follow(function));
            }
        }
    }
    // `1.5` is DECIMAL(2,1), as in Databricks (DataFusion reads DOUBLE).
    let parser = &mut state.config_mut().options_mut().sql_parser;
    parser.parse_float_as_decimal = true;
    // NULL is the smallest value, as in Databricks: first ascending, last
    // descending (Postgres, DataFusion's default: the largest).
    parser.default_null_ordering = "nulls_min".to_string();
    // After DataFusion's type coercion, which inserts casts of its own.
    state.add_analyzer_rule(Arc::new(string::BinaryPads));
    state.add_analyzer_rule(Arc::new(cast::DatabricksCasts));
    state.add_analyzer_rule(Arc::new(ansi_cast::AnsiCasts));
    state.add_analyzer_rule(Arc::new(set_ops::MultisetSetOperations));
    state.add_analyzer_rule(Arc::new(map::MapGroupKeys));
    state
}

/// The functions of `datafusion-spark` whose semantics are Databricks'
/// (each checked against the Databricks reference in
/// `tests/slt/functions/`); the others are left to DataFusion or to ours.
fn spark_scalar_functions() -> Vec<Arc<ScalarUDF>> {
    datafusion_spark::all_default_scalar_functions()
        .into_iter()
        .filter(|f| !SPARK_LEFT_OUT.contains(&f.name()))
        .map(|f| match f.name() {
            // Databricks' other names for them.
            "if" => Arc::new(f.as_ref().clone().with_aliases(["iff"])),
            // Databricks casts a STRING argument to the DATE they take.
            "add_months" | "last_day" | "next_day" | "factorial" | "space" => {
                udf::Adapted::widened(f)
            }
            "concat" => udf::Concat::wrapping(f),
            // A STRING source is read as a TIMESTAMP.
            "date_part" => udf::Adapted::strings_as(f, &[1], datetime::timestamp()),
            _ => f,
        })
        .collect()
}

/// datafusion-spark functions not registered: ours replace them (Databricks
/// differs from Spark's default non-ANSI mode), or they would shadow
/// DataFusion functions Postgres clients' catalog queries call.
const SPARK_LEFT_OUT: &[&str] = &[
    // DataFusion's serve pg clients (`LIKE` is planned as an operator).
    "like",
    "ilike",
    // Ours rounds DECIMALs to Databricks' result scale.
    "round",
    // Ours counts a negative position from the end, as Databricks does.
    "substring",
];

/// DataFusion scalar functions that our higher-order ones replace.
const SHADOWED_BY_LAMBDAS: &[&str] = &["array_sort"];

/// Our scalar functions, every family.
fn scalar_functions() -> Vec<ScalarUDF> {
    [
        array::functions(),
        vec![ansi_cast::udf()],
        cast::functions(),
        conditional::functions(),
        datetime::functions(),
        hash::functions(),
        json::functions(),
        map::functions(),
        math::functions(),
        regex::functions(),
        string::functions(),
        string::binary_pad_udfs(),
        interval_math::functions(),
        struct_::functions(),
        generator::functions(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Our aggregate functions.
fn aggregate_functions() -> Vec<AggregateUDF> {
    aggregate::functions()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ours_replace_datafusions_of_the_same_name() {
        for _ in 0..8 {
            let state = SessionStateBuilder::new().with_default_features().build();
            let state = with_databricks(state);
            let f = state.scalar_functions().get("date_format").unwrap();
            assert_eq!(f.name(), "date_format");
            // A rebuild (as datafusion-pg-catalog's setup makes) keeps ours.
            let state = SessionStateBuilder::new_from_existing(state).build();
            let f = state.scalar_functions().get("date_format").unwrap();
            assert_eq!(f.name(), "date_format");
            assert!(state.aggregate_functions().contains_key("mean"));
        }
    }
}

#[cfg(test)]
mod sql_tests {
    use super::*;
    use datafusion::arrow::util::pretty::pretty_format_batches;

    async fn run(sql: &str) -> String {
        let ctx = SessionContext::new();
        install(&ctx);
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        pretty_format_batches(&batches).unwrap().to_string()
    }

    #[tokio::test]
    async fn substr_counts_negative_positions_from_the_end() {
        let out =
            run("SELECT substr('Spark SQL', -3) AS s, substring('Spark SQL' FROM -3 FOR 2) AS t")
                .await;
        assert!(out.contains("| SQL | SQ |"), "{out}");
    }
}
