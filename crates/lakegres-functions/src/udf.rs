//! The shape most of our scalar functions share: a name, the argument types
//! each accepted arity is coerced to (Databricks' implicit casts), a return
//! type, and a kernel over the arguments row by row. What datafusion-spark
//! spells out per function (`ScalarUDFImpl` with `coerce_types`,
//! `return_type`, `invoke_with_args`) is written once here; each family
//! file then gives a table of [`Udf`]s.

use std::any::Any;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Float64Array, Int64Array,
    LargeStringArray, StringArray, StringViewArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::{Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use super::error::{df, FunctionError};

/// What an argument is coerced to before the kernel sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Arg {
    /// Any string type, kept as it is (Utf8, LargeUtf8, Utf8View); other
    /// types are cast to STRING.
    Str,
    /// BIGINT.
    Long,
    /// DOUBLE.
    Double,
    /// BOOLEAN.
    Bool,
    /// Any type, as it is (NULL stays NULL).
    Any,
}

impl Arg {
    fn target(self, given: &DataType) -> DataType {
        match self {
            Arg::Str => match given {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => given.clone(),
                _ => DataType::Utf8,
            },
            Arg::Long => DataType::Int64,
            Arg::Double => DataType::Float64,
            Arg::Bool => DataType::Boolean,
            Arg::Any => given.clone(),
        }
    }
}

/// How a function's return type follows from its arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Returns {
    /// Always this type.
    Fixed(&'static DataType),
    /// The type of argument n (after coercion).
    ArgType(usize),
    /// Computed from the argument types and the literal arguments.
    Computed(fn(&[DataType], &[Option<&ScalarValue>]) -> Result<DataType>),
}

/// The arguments of one call, as the kernel sees them.
pub(crate) struct Call<'a> {
    pub args: &'a [ColumnarValue],
    pub rows: usize,
    pub return_type: &'a DataType,
    pub config: &'a ConfigOptions,
}

impl Call<'_> {
    /// The rows of the result: 1 when every argument is a literal.
    pub fn len(&self) -> usize {
        if self
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)))
            && !self.args.is_empty()
        {
            1
        } else {
            self.rows
        }
    }

    /// Argument `i` as strings.
    pub fn str(&self, i: usize) -> Result<Strs<'_>> {
        strs(self.arg(i)?)
    }

    /// Argument `i` as BIGINTs.
    pub fn long(&self, i: usize) -> Result<Prim<'_, Int64Type>> {
        Prim::new(self.arg(i)?)
    }

    /// Argument `i` as DOUBLEs.
    pub fn double(&self, i: usize) -> Result<Prim<'_, Float64Type>> {
        Prim::new(self.arg(i)?)
    }

    /// Argument `i` as BOOLEANs.
    pub fn bool(&self, i: usize) -> Result<Bools<'_>> {
        Ok(match self.arg(i)? {
            ColumnarValue::Scalar(ScalarValue::Boolean(v)) => Bools::Scalar(*v),
            ColumnarValue::Scalar(s) if s.is_null() => Bools::Scalar(None),
            ColumnarValue::Array(a) => Bools::Array(a.as_boolean_opt().ok_or_else(|| {
                DataFusionError::Internal(format!("expected BOOLEAN, got {}", a.data_type()))
            })?),
            other => {
                return Err(DataFusionError::Internal(format!(
                    "expected BOOLEAN, got {}",
                    other.data_type()
                )))
            }
        })
    }

    /// Argument `i`, whatever it is.
    pub fn arg(&self, i: usize) -> Result<&ColumnarValue> {
        self.args
            .get(i)
            .ok_or_else(|| DataFusionError::Internal(format!("argument {i} missing")))
    }

    /// Argument `i` as an array of [`Self::len`] rows.
    pub fn array(&self, i: usize) -> Result<ArrayRef> {
        self.arg(i)?.to_array(self.len())
    }

    /// The session time zone (`SET TIME ZONE`), UTC by default.
    pub fn time_zone(&self) -> chrono_tz::Tz {
        session_time_zone(self.config)
    }
}

/// The session's time zone.
pub(crate) fn session_time_zone(config: &ConfigOptions) -> chrono_tz::Tz {
    config
        .execution
        .time_zone
        .as_deref()
        .and_then(parse_zone)
        .unwrap_or(chrono_tz::UTC)
}

/// A zone name or offset (`Europe/Paris`, `+02:00`, `UTC`).
pub(crate) fn parse_zone(name: &str) -> Option<chrono_tz::Tz> {
    let name = name.trim();
    if let Ok(tz) = name.parse::<chrono_tz::Tz>() {
        return Some(tz);
    }
    match name.to_ascii_uppercase().as_str() {
        "Z" | "UTC" | "+00:00" | "+00" | "GMT" | "LOCAL" => Some(chrono_tz::UTC),
        _ => {
            // Fixed offsets as Etc/GMT zones (whole hours only; their sign is
            // the POSIX one, inverted).
            let (sign, rest) = match name.as_bytes().first()? {
                b'+' => (-1, &name[1..]),
                b'-' => (1, &name[1..]),
                _ => return None,
            };
            let hours: i32 = rest.split(':').next()?.parse().ok()?;
            if rest.split(':').nth(1).is_some_and(|m| m != "00") {
                return None;
            }
            let zone = if hours == 0 {
                "Etc/GMT".to_string()
            } else {
                format!("Etc/GMT{:+}", sign * hours)
            };
            zone.parse().ok()
        }
    }
}

/// Strings of an argument, a literal or an array of any string type.
pub(crate) enum Strs<'a> {
    Scalar(Option<&'a str>),
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl<'a> Strs<'a> {
    /// Row `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Strs::Scalar(v) => *v,
            Strs::Utf8(a) => a.is_valid(i).then(|| a.value(i)),
            Strs::Large(a) => a.is_valid(i).then(|| a.value(i)),
            Strs::View(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }

    /// The literal, if the argument is one.
    pub fn scalar(&self) -> Option<Option<&'a str>> {
        match self {
            Strs::Scalar(v) => Some(*v),
            _ => None,
        }
    }
}

/// Strings of a value.
pub(crate) fn strs(value: &ColumnarValue) -> Result<Strs<'_>> {
    Ok(match value {
        ColumnarValue::Scalar(
            ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v),
        ) => Strs::Scalar(v.as_deref()),
        ColumnarValue::Scalar(s) if s.is_null() => Strs::Scalar(None),
        ColumnarValue::Array(a) => strs_of(a)?,
        other => {
            return Err(DataFusionError::Internal(format!(
                "expected STRING, got {}",
                other.data_type()
            )))
        }
    })
}

/// Strings of an array of any string type.
pub(crate) fn strs_of(a: &ArrayRef) -> Result<Strs<'_>> {
    Ok(match a.data_type() {
        DataType::Utf8 => Strs::Utf8(a.as_string::<i32>()),
        DataType::LargeUtf8 => Strs::Large(a.as_string::<i64>()),
        DataType::Utf8View => Strs::View(a.as_string_view()),
        DataType::Null => Strs::Scalar(None),
        other => {
            return Err(DataFusionError::Internal(format!(
                "expected STRING, got {other}"
            )))
        }
    })
}

/// Primitive values of an argument, a literal or an array.
pub(crate) enum Prim<'a, T: datafusion::arrow::datatypes::ArrowPrimitiveType> {
    Scalar(Option<T::Native>),
    Array(&'a datafusion::arrow::array::PrimitiveArray<T>),
}

impl<'a, T: datafusion::arrow::datatypes::ArrowPrimitiveType> Prim<'a, T> {
    /// The values of an argument of type `T`.
    pub(crate) fn new(value: &'a ColumnarValue) -> Result<Self> {
        match value {
            ColumnarValue::Scalar(s) => {
                if s.is_null() {
                    return Ok(Prim::Scalar(None));
                }
                let a = s.to_array_of_size(1)?;
                let a = a.as_primitive_opt::<T>().ok_or_else(|| {
                    DataFusionError::Internal(format!("unexpected type {}", s.data_type()))
                })?;
                Ok(Prim::Scalar(Some(a.value(0))))
            }
            ColumnarValue::Array(a) => {
                if a.data_type() == &DataType::Null {
                    return Ok(Prim::Scalar(None));
                }
                Ok(Prim::Array(a.as_primitive_opt::<T>().ok_or_else(|| {
                    DataFusionError::Internal(format!("unexpected type {}", a.data_type()))
                })?))
            }
        }
    }

    /// Row `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<T::Native> {
        match self {
            Prim::Scalar(v) => *v,
            Prim::Array(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// Booleans of an argument.
pub(crate) enum Bools<'a> {
    Scalar(Option<bool>),
    Array(&'a BooleanArray),
}

impl Bools<'_> {
    /// Row `i`.
    pub fn get(&self, i: usize) -> Option<bool> {
        match self {
            Bools::Scalar(v) => *v,
            Bools::Array(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// A string result built row by row.
pub(crate) fn string_rows(
    n: usize,
    row: impl FnMut(usize, &mut String) -> Result<bool>,
) -> Result<ColumnarValue> {
    byte_rows::<datafusion::arrow::datatypes::Utf8Type, String>(n, row, String::clear)
}

/// A BINARY result built row by row.
pub(crate) fn binary_rows(
    n: usize,
    row: impl FnMut(usize, &mut Vec<u8>) -> Result<bool>,
) -> Result<ColumnarValue> {
    byte_rows::<datafusion::arrow::datatypes::BinaryType, Vec<u8>>(n, row, Vec::clear)
}

/// A string or binary result: each row written into one reused buffer.
fn byte_rows<T, B>(
    n: usize,
    mut row: impl FnMut(usize, &mut B) -> Result<bool>,
    clear: fn(&mut B),
) -> Result<ColumnarValue>
where
    T: datafusion::arrow::datatypes::ByteArrayType,
    B: Default + AsRef<T::Native>,
{
    let mut out = datafusion::arrow::array::GenericByteBuilder::<T>::with_capacity(n, n * 8);
    let mut buf = B::default();
    for i in 0..n {
        clear(&mut buf);
        if row(i, &mut buf)? {
            out.append_value(&buf);
        } else {
            out.append_null();
        }
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

/// A BIGINT result built row by row.
pub(crate) fn long_rows(
    n: usize,
    row: impl FnMut(usize) -> Result<Option<i64>>,
) -> Result<ColumnarValue> {
    let values: Int64Array = (0..n).map(row).collect::<Result<_>>()?;
    Ok(ColumnarValue::Array(Arc::new(values)))
}

/// An INT result built row by row.
pub(crate) fn int_rows(
    n: usize,
    row: impl FnMut(usize) -> Result<Option<i32>>,
) -> Result<ColumnarValue> {
    let values: datafusion::arrow::array::Int32Array = (0..n).map(row).collect::<Result<_>>()?;
    Ok(ColumnarValue::Array(Arc::new(values)))
}

/// A DOUBLE result built row by row.
pub(crate) fn double_rows(
    n: usize,
    row: impl FnMut(usize) -> Result<Option<f64>>,
) -> Result<ColumnarValue> {
    let values: Float64Array = (0..n).map(row).collect::<Result<_>>()?;
    Ok(ColumnarValue::Array(Arc::new(values)))
}

/// A BOOLEAN result built row by row.
pub(crate) fn bool_rows(
    n: usize,
    row: impl FnMut(usize) -> Result<Option<bool>>,
) -> Result<ColumnarValue> {
    let values: BooleanArray = (0..n).map(row).collect::<Result<_>>()?;
    Ok(ColumnarValue::Array(Arc::new(values)))
}

/// A DATE result built row by row.
pub(crate) fn date_rows(
    n: usize,
    row: impl FnMut(usize) -> Result<Option<i32>>,
) -> Result<ColumnarValue> {
    let values: Date32Array = (0..n).map(row).collect::<Result<_>>()?;
    Ok(ColumnarValue::Array(Arc::new(values)))
}

/// A TIMESTAMP (microseconds, in `zone`) result built row by row.
pub(crate) fn timestamp_rows(
    n: usize,
    zone: Option<Arc<str>>,
    row: impl FnMut(usize) -> Result<Option<i64>>,
) -> Result<ColumnarValue> {
    let values: TimestampMicrosecondArray = (0..n).map(row).collect::<Result<_>>()?;
    Ok(ColumnarValue::Array(Arc::new(
        values.with_timezone_opt(zone),
    )))
}

/// A kernel: the call's arguments in, a value of the return type out.
pub(crate) type Kernel = fn(&Call) -> Result<ColumnarValue>;

/// A scalar function given by a table row: see the module comment.
#[derive(Debug)]
pub(crate) struct Udf {
    name: &'static str,
    aliases: Vec<String>,
    /// The accepted arities, each with what its arguments are coerced to.
    arities: &'static [&'static [Arg]],
    /// Any number of arguments, each coerced to this (`concat_ws`).
    variadic: Option<Arg>,
    returns: Returns,
    kernel: Kernel,
    signature: Signature,
    description: &'static str,
}

impl PartialEq for Udf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.arities == other.arities
    }
}

impl Eq for Udf {}

impl Hash for Udf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl Udf {
    /// The same function: its name and kernel (two functions may share a
    /// name and arities, as `/` on decimals and on doubles do).
    pub(crate) fn is_same(&self, other: &Udf) -> bool {
        self.name == other.name && std::ptr::fn_addr_eq(self.kernel, other.kernel)
    }

    /// A deterministic function.
    pub fn new(
        name: &'static str,
        arities: &'static [&'static [Arg]],
        returns: Returns,
        kernel: Kernel,
    ) -> Self {
        Self {
            name,
            aliases: vec![],
            arities,
            variadic: None,
            returns,
            kernel,
            signature: Signature::user_defined(Volatility::Immutable),
            description: "",
        }
    }

    /// Other names it answers to.
    pub fn aliases(mut self, aliases: &[&str]) -> Self {
        self.aliases = aliases.iter().map(|a| a.to_string()).collect();
        self
    }

    /// Takes any number of arguments (at least the arities' shortest).
    pub fn variadic(mut self, each: Arg) -> Self {
        self.variadic = Some(each);
        self
    }

    /// A different answer for the same arguments each time (`rand`, `uuid`).
    pub fn volatile(mut self) -> Self {
        self.signature = Signature::user_defined(Volatility::Volatile);
        self
    }

    /// The same answer within a statement (`current_timezone`).
    pub fn stable(mut self) -> Self {
        self.signature = Signature::user_defined(Volatility::Stable);
        self
    }

    /// What `DESCRIBE FUNCTION` says it does.
    pub fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// The DataFusion function.
    pub fn build(mut self) -> ScalarUDF {
        // DataFusion refuses a call without arguments to a user-defined
        // signature unless it says it takes none.
        if self.arities.iter().any(|a| a.is_empty()) {
            self.signature = Signature::one_of(
                vec![
                    datafusion::logical_expr::TypeSignature::Nullary,
                    datafusion::logical_expr::TypeSignature::UserDefined,
                ],
                self.signature.volatility,
            );
        }
        ScalarUDF::new_from_impl(self)
    }

    fn expected(&self) -> String {
        let mut counts: Vec<String> = self.arities.iter().map(|a| a.len().to_string()).collect();
        if self.variadic.is_some() {
            counts.push("more".to_string());
        }
        counts.join(" or ")
    }
}

impl ScalarUDFImpl for Udf {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if let Some(shape) = self.arities.iter().find(|a| a.len() == arg_types.len()) {
            return Ok(shape
                .iter()
                .zip(arg_types)
                .map(|(arg, given)| arg.target(given))
                .collect());
        }
        let shortest = self.arities.iter().map(|a| a.len()).min().unwrap_or(0);
        match self.variadic {
            Some(each) if arg_types.len() >= shortest => {
                let first = self.arities.iter().find(|a| a.len() == shortest);
                Ok(arg_types
                    .iter()
                    .enumerate()
                    .map(|(i, given)| {
                        first
                            .and_then(|a| a.get(i))
                            .copied()
                            .unwrap_or(each)
                            .target(given)
                    })
                    .collect())
            }
            _ => Err(df(FunctionError::WrongNumArgs {
                function: self.name.to_string(),
                expected: self.expected(),
                actual: arg_types.len(),
            })),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match self.returns {
            Returns::Fixed(t) => Ok(t.clone()),
            Returns::ArgType(i) => arg_types.get(i).cloned().ok_or_else(|| {
                DataFusionError::Internal(format!("{}: no argument {i}", self.name))
            }),
            Returns::Computed(f) => f(arg_types, &[]),
        }
    }

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let data_type = match self.returns {
            Returns::Computed(f) => f(&types, args.scalar_arguments)?,
            _ => self.return_type(&types)?,
        };
        Ok(Arc::new(datafusion::arrow::datatypes::Field::new(
            self.name, data_type, true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = Call {
            args: &args.args,
            rows: args.number_rows,
            return_type: args.return_field.data_type(),
            config: &args.config_options,
        };
        (self.kernel)(&call)
    }

    fn documentation(&self) -> Option<&Documentation> {
        None
    }
}

impl Udf {
    /// What `DESCRIBE FUNCTION` says of it.
    pub fn description(&self) -> &'static str {
        self.description
    }
}

/// The description of one of our functions, if it is one.
pub(crate) fn description_of(udf: &ScalarUDF) -> Option<&'static str> {
    let inner: &dyn Any = udf.inner().as_ref();
    inner
        .downcast_ref::<Udf>()
        .map(Udf::description)
        .filter(|d| !d.is_empty())
}

/// `Returns::Fixed` targets.
pub(crate) static UTF8: DataType = DataType::Utf8;
pub(crate) static INT64: DataType = DataType::Int64;
pub(crate) static INT32: DataType = DataType::Int32;
pub(crate) static FLOAT64: DataType = DataType::Float64;
pub(crate) static BOOLEAN: DataType = DataType::Boolean;
pub(crate) static DATE32: DataType = DataType::Date32;
pub(crate) static BINARY: DataType = DataType::Binary;

/// A DataFusion or datafusion-spark function adapted to Databricks:
/// answering to fewer aliases (ours take the others), with its exact
/// signature widened to Databricks' implicit casts (its arguments are cast
/// to the types it declares: a STRING to the DATE `add_months` takes), or
/// with its result's size bounded ([`super::bounded`]).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Adapted {
    inner: Arc<ScalarUDF>,
    aliases: Vec<String>,
    /// The user-defined signature of a widened function.
    widened: Option<Signature>,
    /// Arguments read from a STRING when given one (`date_part`'s source):
    /// their position and the type a string is cast to.
    from_strings: Option<(&'static [usize], DataType)>,
    /// How the result's size follows from the arguments, checked before
    /// each call.
    bound: Option<super::bounded::Size>,
    /// STRING arguments take the type the other arguments share.
    strings_follow: bool,
}

impl Adapted {
    /// `inner` as it is, under its own name and aliases.
    fn of(inner: Arc<ScalarUDF>) -> Self {
        let aliases = inner.aliases().to_vec();
        Self {
            inner,
            aliases,
            widened: None,
            from_strings: None,
            bound: None,
            strings_follow: false,
        }
    }

    /// `inner` refusing a call whose result would pass
    /// [`super::bounded::MAX_RESULT_BYTES`].
    pub fn bounded(inner: Arc<ScalarUDF>, size: super::bounded::Size) -> Arc<ScalarUDF> {
        Arc::new(ScalarUDF::new_from_impl(Self {
            bound: Some(size),
            ..Self::of(inner)
        }))
    }

    /// `inner` with user-defined coercion to its exact argument types.
    pub fn widened(inner: Arc<ScalarUDF>) -> Arc<ScalarUDF> {
        Self::user_defined(inner, None)
    }

    /// `inner` (`coalesce`, `greatest` …) with its STRING arguments cast to
    /// the type its other arguments share, when that is a number, a date
    /// or a timestamp: `coalesce(max(updated_at), '1900-01-01')` is a
    /// TIMESTAMP, as Postgres types an unknown literal by the other side
    /// and Databricks casts the string (an ANSI cast: a malformed string
    /// fails).
    pub fn strings_follow(inner: Arc<ScalarUDF>) -> Arc<ScalarUDF> {
        Arc::new(ScalarUDF::new_from_impl(Self {
            strings_follow: true,
            ..Self::of(inner)
        }))
    }

    /// `inner` with the STRING arguments at `positions` cast to `to` (other
    /// arguments as they are), as Databricks casts a string to the DATE or
    /// TIMESTAMP a function takes.
    pub fn strings_as(
        inner: Arc<ScalarUDF>,
        positions: &'static [usize],
        to: DataType,
    ) -> Arc<ScalarUDF> {
        Self::user_defined(inner, Some((positions, to)))
    }

    fn user_defined(
        inner: Arc<ScalarUDF>,
        from_strings: Option<(&'static [usize], DataType)>,
    ) -> Arc<ScalarUDF> {
        let volatility = inner.signature().volatility;
        Arc::new(ScalarUDF::new_from_impl(Self {
            widened: Some(Signature::user_defined(volatility)),
            from_strings,
            ..Self::of(inner)
        }))
    }

    /// `inner` answering to `aliases` only (besides its name).
    pub fn realiased(inner: Arc<ScalarUDF>, aliases: Vec<String>) -> Arc<ScalarUDF> {
        Arc::new(ScalarUDF::new_from_impl(Self {
            aliases,
            ..Self::of(inner)
        }))
    }

    fn exact(&self) -> Vec<Vec<DataType>> {
        use datafusion::logical_expr::TypeSignature as T;
        match &self.inner.signature().type_signature {
            T::Exact(types) => vec![types.clone()],
            T::Uniform(n, types) => types
                .first()
                .map(|t| vec![vec![t.clone(); *n]])
                .unwrap_or_default(),
            T::OneOf(options) => options
                .iter()
                .filter_map(|o| match o {
                    T::Exact(types) => Some(types.clone()),
                    _ => None,
                })
                .collect(),
            _ => vec![],
        }
    }
}

/// `types` with each STRING as the one type the others (NULLs aside)
/// share, when there are strings and that type is a number, a date or a
/// timestamp; `None` otherwise.
fn strings_follow(types: &[DataType]) -> Option<Vec<DataType>> {
    let is_string =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let mut others = types
        .iter()
        .filter(|t| !is_string(t) && **t != DataType::Null);
    let shared = others.next()?;
    if others.any(|t| t != shared) || !types.iter().any(is_string) {
        return None;
    }
    if !(shared.is_numeric() || shared.is_temporal()) {
        return None;
    }
    Some(
        types
            .iter()
            .map(|t| {
                if is_string(t) {
                    shared.clone()
                } else {
                    t.clone()
                }
            })
            .collect(),
    )
}

impl ScalarUDFImpl for Adapted {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        self.widened.as_ref().unwrap_or(self.inner.signature())
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if self.strings_follow {
            if let Some(types) = strings_follow(arg_types) {
                return Ok(types);
            }
        }
        if self.widened.is_none() {
            return self.inner.coerce_types(arg_types);
        }
        if let Some((positions, to)) = &self.from_strings {
            return Ok(arg_types
                .iter()
                .enumerate()
                .map(|(i, t)| match t {
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
                        if positions.contains(&i) =>
                    {
                        to.clone()
                    }
                    // The field name of `date_part`.
                    DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
                    other => other.clone(),
                })
                .collect());
        }
        let exact = self.exact();
        exact
            .iter()
            .find(|types| types.len() == arg_types.len())
            .cloned()
            .ok_or_else(|| {
                df(FunctionError::WrongNumArgs {
                    function: self.name().to_string(),
                    expected: exact
                        .iter()
                        .map(|t| t.len().to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                    actual: arg_types.len(),
                })
            })
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if let Some(size) = self.bound {
            super::bounded::check(size, self.name(), &args)?;
        }
        self.inner.invoke_with_args(args)
    }

    fn simplify(
        &self,
        args: Vec<datafusion::logical_expr::Expr>,
        info: &datafusion::logical_expr::simplify::SimplifyContext,
    ) -> Result<datafusion::logical_expr::simplify::ExprSimplifyResult> {
        self.inner.inner().simplify(args, info)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// `concat`: datafusion-spark's for strings, arrays concatenated when the
/// arguments are arrays (Databricks' `concat` does both).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Concat {
    strings: Arc<ScalarUDF>,
    signature: Signature,
}

impl Concat {
    /// Wraps the string `concat`.
    pub fn wrapping(strings: Arc<ScalarUDF>) -> Arc<ScalarUDF> {
        Arc::new(ScalarUDF::new_from_impl(Self {
            strings,
            signature: Signature::user_defined(Volatility::Immutable),
        }))
    }

    fn arrays(types: &[DataType]) -> Option<DataType> {
        let lists: Vec<&DataType> = types.iter().filter(|t| **t != DataType::Null).collect();
        if lists.is_empty()
            || !lists.iter().all(|t| {
                matches!(
                    t,
                    DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
                )
            })
        {
            return None;
        }
        lists
            .into_iter()
            .try_fold(None::<DataType>, |acc, t| {
                let element = match t {
                    DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
                        f.data_type().clone()
                    }
                    _ => return None,
                };
                Some(Some(match acc {
                    None => element,
                    Some(DataType::List(f)) => {
                        datafusion::logical_expr::type_coercion::binary::comparison_coercion(
                            f.data_type(),
                            &element,
                        )
                        .unwrap_or_else(|| f.data_type().clone())
                    }
                    Some(other) => other,
                }))
            })?
            .map(|e| match e {
                DataType::List(_) => e,
                e => DataType::List(Arc::new(
                    datafusion::arrow::datatypes::Field::new_list_field(e, true),
                )),
            })
    }
}

impl ScalarUDFImpl for Concat {
    fn name(&self) -> &str {
        "concat"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if Self::arrays(arg_types).is_some() {
            return Ok(arg_types.to_vec());
        }
        Ok(arg_types
            .iter()
            .map(|t| match t {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Binary => {
                    t.clone()
                }
                _ => DataType::Utf8,
            })
            .collect())
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match Self::arrays(arg_types) {
            Some(t) => Ok(t),
            None => self.strings.return_type(arg_types),
        }
    }

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        match Self::arrays(&types) {
            Some(t) => Ok(Arc::new(datafusion::arrow::datatypes::Field::new(
                "concat", t, true,
            ))),
            None => self.strings.return_field_from_args(args),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if matches!(args.return_field.data_type(), DataType::List(_)) {
            let call = Call {
                args: &args.args,
                rows: args.number_rows,
                return_type: args.return_field.data_type(),
                config: &args.config_options,
            };
            return super::array::concat_arrays(&call);
        }
        self.strings.invoke_with_args(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.strings.documentation()
    }
}
