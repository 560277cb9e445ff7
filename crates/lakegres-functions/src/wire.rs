//! Functions in plans sent to workers. A plan names each function it calls,
//! and the worker finds it by that name in its registry. The functions the
//! planner makes for operators are not there, and some share a name (`/` on
//! decimals and on doubles, `[]` on arrays and on maps). So a plan on its
//! way to workers calls them under a name of their own
//! ([`for_workers`]), which every worker registers ([`install`]); they
//! show under their usual names.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::functions_nested as nested;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;

use super::math::DecimalOp;
use super::udf::Udf;

/// The planner's functions, each with the name it travels under; built
/// once, looked through for every plan sent.
static MADE_BY_PLANNER: LazyLock<Vec<(&'static str, ScalarUDF)>> = LazyLock::new(made_by_planner);

fn made_by_planner() -> Vec<(&'static str, ScalarUDF)> {
    vec![
        ("lakegres_wire_double_divide", super::math::double_divide()),
        (
            "lakegres_wire_decimal_divide",
            super::math::decimal_divide(),
        ),
        (
            "lakegres_wire_integral_divide",
            super::math::integral_divide(),
        ),
        (
            "lakegres_wire_decimal_add",
            super::math::decimal_arithmetic(DecimalOp::Add),
        ),
        (
            "lakegres_wire_decimal_subtract",
            super::math::decimal_arithmetic(DecimalOp::Subtract),
        ),
        (
            "lakegres_wire_decimal_multiply",
            super::math::decimal_arithmetic(DecimalOp::Multiply),
        ),
        (
            "lakegres_wire_get_json_object",
            super::json::get_json_object(),
        ),
        ("lakegres_wire_map", super::map::map_udf()),
        ("lakegres_wire_map_subscript", super::map::map_subscript()),
        ("lakegres_wire_array_subscript", super::array::subscript()),
        ("lakegres_wire_substring", super::string::substring_udf()),
        ("lakegres_wire_to_text", super::cast::to_text()),
        ("lakegres_wire_cast", super::ansi_cast::udf()),
        // DataFusion's own, which its SQL planner calls directly (`EXTRACT`,
        // `POSITION`, `SUBSTRING … FROM`, `OVERLAY`, struct and array
        // literals, `.field`, `[i]`, `||` on arrays, `= ANY`): where ours
        // take the name in the registry, a worker would find ours.
        (
            "lakegres_wire_df_date_part",
            own(datafusion::functions::datetime::date_part()),
        ),
        (
            "lakegres_wire_df_strpos",
            own(datafusion::functions::unicode::strpos()),
        ),
        (
            "lakegres_wire_df_substr",
            own(datafusion::functions::unicode::substr()),
        ),
        (
            "lakegres_wire_df_overlay",
            own(datafusion::functions::core::overlay()),
        ),
        (
            "lakegres_wire_df_get_field",
            own(datafusion::functions::core::get_field()),
        ),
        (
            "lakegres_wire_df_named_struct",
            own(datafusion::functions::core::named_struct()),
        ),
        (
            "lakegres_wire_df_struct",
            own(datafusion::functions::core::r#struct()),
        ),
        (
            "lakegres_wire_df_make_array",
            own(nested::make_array::make_array_udf()),
        ),
        (
            "lakegres_wire_df_array_has",
            own(nested::array_has::array_has_udf()),
        ),
        (
            "lakegres_wire_df_array_has_all",
            own(nested::array_has::array_has_all_udf()),
        ),
        (
            "lakegres_wire_df_array_concat",
            own(nested::concat::array_concat_udf()),
        ),
        (
            "lakegres_wire_df_array_append",
            own(nested::concat::array_append_udf()),
        ),
        (
            "lakegres_wire_df_array_prepend",
            own(nested::concat::array_prepend_udf()),
        ),
        (
            "lakegres_wire_df_array_element",
            own(nested::extract::array_element_udf()),
        ),
        (
            "lakegres_wire_df_array_slice",
            own(nested::extract::array_slice_udf()),
        ),
        ("lakegres_wire_df_map", own(nested::map::map_udf())),
    ]
}

/// One of DataFusion's own functions (shared by its registry).
fn own(function: Arc<ScalarUDF>) -> ScalarUDF {
    Arc::unwrap_or_clone(function)
}

/// Whether `a` and `b` are one function: for ours, the same name and the
/// same kernel.
fn same(a: &ScalarUDF, b: &ScalarUDF) -> bool {
    match (
        a.inner().downcast_ref::<Udf>(),
        b.inner().downcast_ref::<Udf>(),
    ) {
        (Some(a), Some(b)) => a.is_same(b),
        _ => a == b,
    }
}

/// What [`for_workers`] makes of a plan.
#[derive(Debug)]
pub enum ForWorkers {
    /// The plan, every function in it under a name workers know.
    Sent(LogicalPlan),
    /// The plan calls `function`, which is neither in the registry nor
    /// one the planner makes: workers would not find it, so the plan runs
    /// here.
    Stays { function: String },
}

/// `plan` with every function a worker would not find by its name called
/// under its travelling name, or the function that keeps it here.
pub fn for_workers(plan: LogicalPlan, registry: &dyn FunctionRegistry) -> Result<ForWorkers> {
    let mut unknown = None;
    let sent = plan.transform_up_with_subqueries(|node| {
        node.map_expressions(|e| {
            e.transform_up(|e| {
                let Expr::ScalarFunction(call) = &e else {
                    return Ok(Transformed::no(e));
                };
                let found = registry.udf(call.func.name()).ok();
                if found.is_some_and(|f| same(&f, &call.func)) {
                    return Ok(Transformed::no(e));
                }
                match MADE_BY_PLANNER.iter().find(|(_, f)| same(f, &call.func)) {
                    Some((wire, _)) => {
                        let renamed = Sent::new(wire, Arc::clone(&call.func));
                        Ok(Transformed::yes(Expr::ScalarFunction(
                            ScalarFunction::new_udf(
                                Arc::new(ScalarUDF::new_from_impl(renamed)),
                                call.args.clone(),
                            ),
                        )))
                    }
                    None => {
                        unknown = Some(call.func.name().to_string());
                        Ok(Transformed::no(e))
                    }
                }
            })
        })
    })?;
    Ok(match unknown {
        Some(function) => ForWorkers::Stays { function },
        None => ForWorkers::Sent(sent.data),
    })
}

/// Registers the planner's functions under their travelling names (on a
/// worker's session).
pub fn install(ctx: &SessionContext) {
    for (wire, function) in MADE_BY_PLANNER.iter() {
        ctx.register_udf(ScalarUDF::new_from_impl(Sent::new(
            wire,
            Arc::new(function.clone()),
        )));
    }
}

/// A function under its travelling name, otherwise itself.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Sent {
    name: &'static str,
    inner: Arc<ScalarUDF>,
}

impl Sent {
    fn new(name: &'static str, inner: Arc<ScalarUDF>) -> Self {
        Self { name, inner }
    }
}

impl ScalarUDFImpl for Sent {
    fn name(&self) -> &str {
        self.name
    }

    fn display_name(&self, args: &[Expr]) -> Result<String> {
        #[allow(deprecated)]
        self.inner.inner().display_name(args)
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.inner().schema_name(args)
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every function DataFusion's planner calls for syntax travels: by
    /// its own name when the registry holds it, else by its wire name.
    #[tokio::test]
    async fn functions_the_planner_makes_travel() {
        let ctx = SessionContext::new();
        crate::install(&ctx);
        let state = ctx.state();
        for sql in [
            "SELECT extract(YEAR FROM DATE '2024-03-01')",
            "SELECT position('b' IN 'abc')",
            "SELECT substring('abcd' FROM 2 FOR 2)",
            "SELECT overlay('abc' PLACING 'x' FROM 1)",
            "SELECT struct(1, 'a'), named_struct('a', 1)",
            "SELECT s['a'] FROM (SELECT named_struct('a', 1) AS s)",
            "SELECT [1, 2][1], [1, 2, 3][1:2]",
            "SELECT [1] || [2], 1 = ANY([1, 2])",
            "SELECT map(['a'], [1])",
        ] {
            let plan = state
                .create_logical_plan(sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert!(
                matches!(for_workers(plan, &state).unwrap(), ForWorkers::Sent(_)),
                "{sql} calls a function workers would not find"
            );
        }
    }
}
