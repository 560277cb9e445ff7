//! `histogram_numeric(expr, nb)`: an approximate histogram of `nb` bins,
//! as an `ARRAY<STRUCT<x, y DOUBLE>>` of bin centres (in `expr`'s type)
//! and heights. Built as Spark builds it (`NumericHistogram`, after Hive:
//! the streaming algorithm of Ben-Haim and Tom-Tov, merging the two
//! closest bins, ties broken by `java.util.Random(31183)`), so that the
//! bins are Spark's to the last digit.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, ListArray, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Float64Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

use super::error::{df, FunctionError};

/// The function.
pub(crate) fn histogram_numeric() -> AggregateUDF {
    AggregateUDF::new_from_impl(HistogramNumeric {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HistogramNumeric {
    signature: Signature,
}

/// The type of a bin's centre: the argument's (a DOUBLE for NULL).
fn centre_type(t: &DataType) -> Result<DataType> {
    match t {
        DataType::Null => Ok(DataType::Float64),
        t if t.is_numeric() || matches!(t, DataType::Timestamp(..) | DataType::Date32) => {
            Ok(t.clone())
        }
        other => Err(df(FunctionError::mismatch(
            "histogram_numeric",
            format!("the first argument must be numeric, a date or a timestamp, not {other}"),
        ))),
    }
}

fn bin_fields(x: DataType) -> Fields {
    Fields::from(vec![
        Field::new("x", x, true),
        Field::new("y", DataType::Float64, true),
    ])
}

impl AggregateUDFImpl for HistogramNumeric {
    fn name(&self) -> &str {
        "histogram_numeric"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let x = centre_type(arg_types.first().unwrap_or(&DataType::Null))?;
        Ok(DataType::List(Arc::new(Field::new_list_field(
            DataType::Struct(bin_fields(x)),
            true,
        ))))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let bins = args
            .exprs
            .get(1)
            .and_then(|e| e.downcast_ref::<datafusion::physical_expr::expressions::Literal>())
            .and_then(|l| l.value().cast_to(&DataType::Int64).ok());
        let bins = match bins {
            Some(ScalarValue::Int64(Some(n))) if n >= 2 => n as usize,
            other => {
                return Err(df(FunctionError::InvalidParameter {
                    function: "histogram_numeric",
                    parameter: "nb",
                    reason: format!(
                        "must be a literal of at least 2, but got {}",
                        other
                            .map(|v| v.to_string())
                            .unwrap_or_else(|| "an expression".into())
                    ),
                }))
            }
        };
        let x = match args.return_field.data_type() {
            DataType::List(item) => match item.data_type() {
                DataType::Struct(fields) if !fields.is_empty() => fields[0].data_type().clone(),
                _ => DataType::Float64,
            },
            _ => DataType::Float64,
        };
        Ok(Box::new(Histogram::new(bins, x)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let list = |name: &str| {
            Arc::new(Field::new_list(
                format!("{}[{name}]", args.name),
                Field::new_list_field(DataType::Float64, true),
                true,
            ))
        };
        Ok(vec![list("x"), list("y")])
    }
}

/// `java.util.Random`, for Spark's tie-breaking.
#[derive(Debug)]
struct JavaRandom(u64);

impl JavaRandom {
    const MASK: u64 = (1 << 48) - 1;

    fn new(seed: u64) -> Self {
        Self((seed ^ 0x5DEE_CE66D) & Self::MASK)
    }

    fn next(&mut self, bits: u32) -> u64 {
        self.0 = (self.0.wrapping_mul(0x5DEE_CE66D).wrapping_add(0xB)) & Self::MASK;
        self.0 >> (48 - bits)
    }

    fn next_double(&mut self) -> f64 {
        let high = self.next(26) << 27;
        (high + self.next(27)) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[derive(Debug)]
struct Histogram {
    bins: usize,
    /// (centre, height), by centre.
    coords: Vec<(f64, f64)>,
    random: JavaRandom,
    x: DataType,
}

impl Histogram {
    fn new(bins: usize, x: DataType) -> Self {
        Self {
            bins,
            coords: Vec::new(),
            random: JavaRandom::new(31183),
            x,
        }
    }

    fn add(&mut self, v: f64) {
        let (mut bin, mut l, mut r) = (0, 0, self.coords.len());
        while l < r {
            bin = (l + r) / 2;
            if self.coords[bin].0 > v {
                r = bin;
            } else if self.coords[bin].0 < v {
                bin += 1;
                l = bin;
            } else {
                break;
            }
        }
        if bin < self.coords.len() && self.coords[bin].0 == v {
            self.coords[bin].1 += 1.0;
        } else {
            self.coords.insert(bin, (v, 1.0));
            self.trim();
        }
    }

    /// Merges the closest two bins until `bins` are left.
    fn trim(&mut self) {
        while self.coords.len() > self.bins {
            let mut smallest = self.coords[1].0 - self.coords[0].0;
            let (mut at, mut ties) = (0, 1u32);
            for i in 1..self.coords.len() - 1 {
                let diff = self.coords[i + 1].0 - self.coords[i].0;
                if diff < smallest {
                    smallest = diff;
                    at = i;
                    ties = 1;
                } else if diff == smallest {
                    ties += 1;
                    if self.random.next_double() <= 1.0 / f64::from(ties) {
                        at = i;
                    }
                }
            }
            let (a, b) = (self.coords[at], self.coords[at + 1]);
            let d = a.1 + b.1;
            let mut x = a.0 * (a.1 / d);
            x += b.0 / d * b.1;
            self.coords[at] = (x, d);
            self.coords.remove(at + 1);
        }
    }

    /// Values of the argument's type as DOUBLEs (timestamps by their count).
    fn doubles(&self, values: &ArrayRef) -> Result<ArrayRef> {
        Ok(match values.data_type() {
            DataType::Timestamp(..) | DataType::Date32 => {
                let counts = cast(values, &DataType::Int64)?;
                cast(&counts, &DataType::Float64)?
            }
            _ => cast(values, &DataType::Float64)?,
        })
    }
}

impl Accumulator for Histogram {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(values) = values.first() {
            let doubles = self.doubles(values)?;
            for v in doubles.as_primitive::<Float64Type>().iter().flatten() {
                self.add(v);
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(xs), Some(ys)) = (states.first(), states.get(1)) else {
            return Ok(());
        };
        let (xs, ys): (&ListArray, &ListArray) = (xs.as_list(), ys.as_list());
        for row in 0..xs.len() {
            if xs.is_null(row) || ys.is_null(row) {
                continue;
            }
            let (x, y) = (xs.value(row), ys.value(row));
            let other: Vec<(f64, f64)> = x
                .as_primitive::<Float64Type>()
                .iter()
                .zip(y.as_primitive::<Float64Type>().iter())
                .filter_map(|(x, y)| Some((x?, y?)))
                .collect();
            if other.is_empty() {
                continue;
            }
            if self.coords.is_empty() {
                self.coords = other;
            } else {
                self.coords.extend(other);
                self.coords.sort_by(|a, b| a.0.total_cmp(&b.0));
                self.trim();
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let list = |values: Vec<f64>| {
            ScalarValue::List(Arc::new(ListArray::new(
                Arc::new(Field::new_list_field(DataType::Float64, true)),
                OffsetBuffer::from_lengths([values.len()]),
                Arc::new(Float64Array::from(values)),
                None,
            )))
        };
        Ok(vec![
            list(self.coords.iter().map(|c| c.0).collect()),
            list(self.coords.iter().map(|c| c.1).collect()),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let fields = bin_fields(self.x.clone());
        let item = Arc::new(Field::new_list_field(
            DataType::Struct(fields.clone()),
            true,
        ));
        if self.coords.is_empty() {
            return ScalarValue::try_from(DataType::List(item));
        }
        let xs: ArrayRef = Arc::new(Float64Array::from(
            self.coords.iter().map(|c| c.0).collect::<Vec<_>>(),
        ));
        let xs = match &self.x {
            DataType::Timestamp(..) | DataType::Date32 => {
                cast(&cast(&xs, &DataType::Int64)?, &self.x)?
            }
            x => cast(&xs, x)?,
        };
        let ys: ArrayRef = Arc::new(Float64Array::from(
            self.coords.iter().map(|c| c.1).collect::<Vec<_>>(),
        ));
        let bins = StructArray::try_new(fields, vec![xs, ys], None)?;
        Ok(ScalarValue::List(Arc::new(ListArray::new(
            item,
            OffsetBuffer::from_lengths([bins.len()]),
            Arc::new(bins),
            None,
        ))))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.coords.capacity() * std::mem::size_of::<(f64, f64)>()
    }
}
