//! Databricks' `avg` (and `mean`): a DECIMAL(p, s) argument averages to
//! DECIMAL(p + 4, s + 4), rounded half up; integers, floating point and
//! STRINGs (cast) average as DOUBLE; DURATIONs as themselves. INTERVALs,
//! which Databricks also averages, are refused
//! (<https://docs.databricks.com/sql/language-manual/functions/avg.html>).
//!
//! DataFusion's `Avg` does the accumulating (grouped, distinct and sliding
//! windows included, an i128 sum for DECIMALs); this wraps it for the types
//! and the rounding. DataFusion truncates the quotient at the result scale,
//! Spark rounds it half up, so the inner average is asked for one more
//! digit and rounded here. datafusion-spark's `avg` casts every argument to
//! DOUBLE, which both changes a DECIMAL average's type and costs a cast per
//! row (TPC-H q1's three averages).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray, Decimal128Array};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef};
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::functions_aggregate::average::Avg as DataFusionAvg;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, EmitTo, GroupsAccumulator, ReversedUDAF, Signature, Volatility,
};

use super::math::adjust;

const MAX_PRECISION: u8 = 38;

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Avg {
    inner: DataFusionAvg,
    signature: Signature,
    aliases: Vec<String>,
}

impl Avg {
    pub(crate) fn new() -> Self {
        Self {
            inner: DataFusionAvg::new(),
            signature: Signature::user_defined(Volatility::Immutable),
            aliases: vec!["mean".to_string()],
        }
    }
}

/// The type `avg` accumulates an argument of type `t` as.
fn argument_type(t: &DataType) -> Result<DataType> {
    Ok(match t {
        DataType::Decimal128(..) | DataType::Decimal256(..) | DataType::Duration(_) => t.clone(),
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) => DataType::Decimal128(*p, *s),
        DataType::Dictionary(_, value) => argument_type(value)?,
        t if t.is_numeric() || t.is_null() => DataType::Float64,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DataType::Float64,
        t => return plan_err!("avg takes a number or a STRING, not {t}"),
    })
}

/// The average of DECIMAL(p, s): DECIMAL(p + 4, s + 4), past 38 digits
/// as Spark's `DecimalType.adjustPrecisionScale` gives way.
fn decimal_average(p: u8, s: i8) -> (u8, i8) {
    adjust(p as i32 + 4, s as i32 + 4)
}

/// For a DECIMAL(p, s) argument: the result's precision and scale, and the
/// one-digit-finer type the inner average is computed in (`None` where
/// that digit does not fit in 38, and the inner truncation stands).
fn rounding(input: &DataType) -> Option<((u8, i8), DataType)> {
    let DataType::Decimal128(p, s) = input else {
        return None;
    };
    let (precision, scale) = decimal_average(*p, *s);
    let finer = scale + 1;
    let integer_digits = *p as i32 - *s as i32;
    (integer_digits + finer as i32 <= MAX_PRECISION as i32).then_some((
        (precision, scale),
        DataType::Decimal128(MAX_PRECISION, finer),
    ))
}

impl AggregateUDFImpl for Avg {
    fn name(&self) -> &str {
        "avg"
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] => Ok(vec![argument_type(t)?]),
            _ => plan_err!("avg takes one argument, got {}", arg_types.len()),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(DataType::Decimal128(p, s)) => {
                let (p, s) = decimal_average(*p, *s);
                Ok(DataType::Decimal128(p, s))
            }
            _ => self.inner.return_type(arg_types),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let (args, target) = one_digit_finer(args);
        let inner = self.inner.accumulator(args)?;
        Ok(match target {
            Some((precision, scale)) => Box::new(Rounded {
                inner,
                precision,
                scale,
            }),
            None => inner,
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let (args, target) = one_digit_finer(args);
        let inner = self.inner.create_groups_accumulator(args)?;
        Ok(match target {
            Some((precision, scale)) => Box::new(RoundedGroups {
                inner,
                precision,
                scale,
            }),
            None => inner,
        })
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }
}

/// The arguments of the inner average: for a DECIMAL one digit finer
/// than the result, which is then rounded to its precision and scale.
fn one_digit_finer(args: AccumulatorArgs) -> (AccumulatorArgs, Option<(u8, i8)>) {
    let Some((target, finer)) = rounding(args.expr_fields[0].data_type()) else {
        return (args, None);
    };
    let return_field = Arc::new(Field::new(args.return_field.name(), finer, true));
    (
        AccumulatorArgs {
            return_field,
            ..args
        },
        Some(target),
    )
}

/// Rounds averages one digit finer than the result half up (away from
/// zero) to the result's scale. The inner quotient was truncated toward
/// zero, which leaves the deciding digit as it was.
fn round_off(finer: &ArrayRef, precision: u8, scale: i8) -> Result<ArrayRef> {
    let values = finer.as_primitive::<Decimal128Type>();
    let rounded: Decimal128Array = values.unary(|v| {
        let half = if v < 0 { -5 } else { 5 };
        (v + half) / 10
    });
    Ok(Arc::new(
        rounded.with_precision_and_scale(precision, scale)?,
    ))
}

#[derive(Debug)]
struct Rounded {
    inner: Box<dyn Accumulator>,
    precision: u8,
    scale: i8,
}

impl Accumulator for Rounded {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.update_batch(values)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let finer = self.inner.evaluate()?.to_array()?;
        ScalarValue::try_from_array(&round_off(&finer, self.precision, self.scale)?, 0)
    }

    fn size(&self) -> usize {
        self.inner.size() + std::mem::size_of::<Self>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.retract_batch(values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }
}

struct RoundedGroups {
    inner: Box<dyn GroupsAccumulator>,
    precision: u8,
    scale: i8,
}

impl GroupsAccumulator for RoundedGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .update_batch(values, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let finer = self.inner.evaluate(emit_to)?;
        round_off(&finer, self.precision, self.scale)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .merge_batch(values, group_indices, total_num_groups)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        self.inner.convert_to_state(values, opt_filter)
    }

    fn size(&self) -> usize {
        self.inner.size() + std::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::Array;

    use super::*;

    #[test]
    fn averages_round_half_away_from_zero_at_the_result_scale() -> Result<()> {
        // 1.6666665 and -1.6666665 (scale 7) to scale 6; 0.0000004 to 0.
        let finer: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(16_666_665), Some(-16_666_665), Some(4), None])
                .with_precision_and_scale(38, 7)?,
        );
        let rounded = round_off(&finer, 19, 6)?;
        let rounded = rounded.as_primitive::<Decimal128Type>();
        assert_eq!(rounded.data_type(), &DataType::Decimal128(19, 6));
        assert_eq!(
            rounded.iter().collect::<Vec<_>>(),
            vec![Some(1_666_667), Some(-1_666_667), Some(0), None]
        );
        Ok(())
    }

    #[test]
    fn result_types_follow_spark() {
        assert_eq!(decimal_average(15, 2), (19, 6));
        // Past 38 digits the scale gives way to the integer digits.
        assert_eq!(decimal_average(38, 10), (38, 10));
        assert!(rounding(&DataType::Decimal128(15, 2)).is_some());
        // No room for the extra digit: DataFusion's truncation stands.
        assert!(rounding(&DataType::Decimal128(38, 10)).is_none());
    }
}
