//! Parameters of the types the client declared, as Postgres types them.
//!
//! A driver that sends a Python float, a `BigDecimal` or a JavaScript number
//! declares its type (float8, numeric) in Parse; Postgres gives `$n` that
//! type and casts it where it goes: into a DECIMAL column by assignment
//! (rounding to the scale, 22003 when it does not fit), into a comparison
//! by the usual promotion (`i = $1` with 1.5 compares 1.5, it does not
//! round). DataFusion types a placeholder by its place instead (`i = $1`
//! makes `$1` an INT), so a declared float either failed to coerce or, cast
//! to the place's type, would change the value and the rows a statement
//! touches. Where a declared type differs from the place's, the statement
//! is planned again with `$n` of the declared type (DataFusion's PREPARE
//! parameter types), so the plan's own casts and coercions apply.
//!
//! A declared integer in an integer place keeps the place's type: the
//! value is range-checked into it when it is read (arrow-pg), which is
//! Postgres' assignment rule for integers and keeps `LIMIT $1` an integer
//! literal.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::LogicalPlan;
use sqlparser::ast;

use crate::error::{Error, Result};

/// Whether a parameter declared `declared` and placed where the plan wants
/// `inferred` must be planned again with its declared type.
fn differs(declared: &DataType, inferred: &DataType) -> bool {
    declared != inferred && !(declared.is_integer() && inferred.is_integer())
}

/// The parameter types to plan `plan`'s statement again with (one per
/// `$n`, in order), when a declared type differs from the one the plan
/// inferred; `None` when the plan stands as it is.
pub(crate) fn retyped(
    plan: &LogicalPlan,
    declared: &[Option<DataType>],
) -> Result<Option<Vec<ast::DataType>>> {
    if declared.iter().all(Option::is_none) {
        return Ok(None);
    }
    let inferred = plan.get_parameter_types()?;
    let at = |i: usize| inferred.get(&format!("${}", i + 1)).cloned().flatten();
    let count = inferred
        .keys()
        .filter_map(|k| k.strip_prefix('$')?.parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    let mut any = false;
    let mut types = Vec::with_capacity(count);
    for i in 0..count {
        let declared = declared.get(i).cloned().flatten();
        let chosen = match (declared, at(i)) {
            (Some(d), Some(t)) if differs(&d, &t) => {
                any = true;
                d
            }
            (_, Some(t)) => t,
            (Some(d), None) => d,
            // A parameter neither declared nor typed by its place: the
            // PREPARE types cannot leave it open.
            (None, None) => return Ok(None),
        };
        let Some(sql) = sql_type(&chosen) else {
            return Ok(None);
        };
        types.push(sql);
    }
    Ok(any.then_some(types))
}

/// The SQL type DataFusion plans back into `data_type` (`None` for a type
/// this does not name, which leaves the statement as first planned).
fn sql_type(data_type: &DataType) -> Option<ast::DataType> {
    use ast::{DataType as T, ExactNumberInfo};
    Some(match data_type {
        DataType::Boolean => T::Boolean,
        DataType::Int8 => T::TinyInt(None),
        DataType::Int16 => T::SmallInt(None),
        DataType::Int32 => T::Int(None),
        DataType::Int64 => T::BigInt(None),
        DataType::Float32 => T::Real,
        DataType::Float64 => T::Double(ExactNumberInfo::None),
        DataType::Decimal128(p, s) if *s >= 0 => T::Decimal(ExactNumberInfo::PrecisionAndScale(
            u64::from(*p),
            i64::from(*s),
        )),
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => T::String(None),
        DataType::Date32 => T::Date,
        _ => return None,
    })
}

/// The plan of a `PREPARE` of the statement: its input, planned with the
/// parameter types the PREPARE names.
pub(crate) fn prepared_input(plan: LogicalPlan) -> Result<LogicalPlan> {
    match plan {
        LogicalPlan::Statement(datafusion::logical_expr::Statement::Prepare(prepare)) => {
            Ok(std::sync::Arc::unwrap_or_clone(prepare.input))
        }
        _ => Err(Error::internal(
            "a statement with declared parameter types did not plan as PREPARE",
        )),
    }
}

/// `statement` as a PREPARE with parameter `types`.
pub(crate) fn as_prepare(statement: ast::Statement, types: Vec<ast::DataType>) -> ast::Statement {
    ast::Statement::Prepare {
        name: ast::Ident::new("lakegres_declared_parameters"),
        data_types: types,
        statement: Box::new(statement),
    }
}

/// The type a client declared for a parameter it sent as `value`: the
/// value's own type where it was read as declared (a NUMERIC keeps its
/// digits), else `declared`.
pub fn declared_type(declared: Option<DataType>, value: &ScalarValue) -> Option<DataType> {
    match (declared, value) {
        (Some(DataType::Decimal128(..)), ScalarValue::Decimal128(Some(_), p, s)) => {
            Some(DataType::Decimal128(*p, *s))
        }
        (declared, _) => declared,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_keep_their_place_and_other_numbers_do_not() {
        assert!(!differs(&DataType::Int64, &DataType::Int32));
        assert!(differs(&DataType::Float64, &DataType::Int32));
        assert!(differs(&DataType::Int64, &DataType::Decimal128(10, 2)));
        assert!(differs(
            &DataType::Decimal128(4, 3),
            &DataType::Decimal128(10, 2)
        ));
        assert!(!differs(&DataType::Float64, &DataType::Float64));
    }
}
