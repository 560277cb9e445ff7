//! Postgres functions client catalog queries call that
//! datafusion-pg-catalog does not provide (psql's `\df`, `\dn+`, `\dt+`;
//! pools' advisory-lock resets). Objects here have no descriptions, locks
//! or separate storage sizes, so most answer a constant.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Int32Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{
    create_udf, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The functions, to register in each session.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    let constant = |name: &str, args: Vec<DataType>, value: ScalarValue| {
        let ret = value.data_type();
        create_udf(
            name,
            args,
            ret,
            Volatility::Stable,
            Arc::new(move |_| Ok(ColumnarValue::Scalar(value.clone()))),
        )
    };
    let null_text = ScalarValue::Utf8(None);
    let yes = ScalarValue::Boolean(Some(true));
    vec![
        TextFunction::udf(
            "json_build_object",
            Signature::variadic_any(Volatility::Immutable),
            json_build_object,
        ),
        TextFunction::udf(
            "pg_typeof",
            Signature::any(1, Volatility::Immutable),
            pg_typeof,
        ),
        // Postgres' name for a random (version 4) UUID, as text.
        datafusion::functions::string::uuid()
            .as_ref()
            .clone()
            .with_aliases(["gen_random_uuid"]),
        // Pools call these when they hand a connection back.
        constant(
            "pg_advisory_unlock_all",
            vec![],
            ScalarValue::Utf8(Some(String::new())),
        ),
        constant(
            "pg_advisory_lock",
            vec![DataType::Int64],
            ScalarValue::Utf8(Some(String::new())),
        ),
        constant("pg_advisory_unlock", vec![DataType::Int64], yes.clone()),
        constant("pg_try_advisory_lock", vec![DataType::Int64], yes.clone()),
        constant("pg_function_is_visible", vec![DataType::Int32], yes.clone()),
        // No session's temporary objects live in a schema (dbt's catalog
        // query asks).
        constant(
            "pg_is_other_temp_schema",
            vec![DataType::Int32],
            ScalarValue::Boolean(Some(false)),
        ),
        // The OID of the session's temporary schema: none (0), as in a
        // Postgres session before its first temporary table.
        constant("pg_my_temp_schema", vec![], ScalarValue::Int32(Some(0))),
        constant("pg_type_is_visible", vec![DataType::Int32], yes.clone()),
        constant(
            "pg_collation_is_visible",
            vec![DataType::Int32],
            yes.clone(),
        ),
        constant(
            "pg_get_serial_sequence",
            vec![DataType::Utf8, DataType::Utf8],
            ScalarValue::Utf8(None),
        ),
        constant(
            "obj_description",
            vec![DataType::Int32, DataType::Utf8],
            null_text.clone(),
        ),
        constant(
            "shobj_description",
            vec![DataType::Int32, DataType::Utf8],
            null_text.clone(),
        ),
        constant(
            "col_description",
            vec![DataType::Int32, DataType::Int32],
            null_text,
        ),
        constant(
            "pg_table_size",
            vec![DataType::Int32],
            ScalarValue::Int64(Some(0)),
        ),
        constant(
            "pg_database_size",
            vec![DataType::Utf8],
            ScalarValue::Int64(Some(0)),
        ),
        constant(
            "pg_get_function_result",
            vec![DataType::Int32],
            ScalarValue::Utf8(None),
        ),
        constant(
            "pg_get_function_arguments",
            vec![DataType::Int32],
            ScalarValue::Utf8(None),
        ),
        constant(
            "pg_indexes_size",
            vec![DataType::Int32],
            ScalarValue::Int64(Some(0)),
        ),
        create_udf(
            "to_regtype",
            vec![DataType::Utf8],
            DataType::Int32,
            Volatility::Stable,
            Arc::new(|args: &[ColumnarValue]| {
                let arrays = ColumnarValue::values_to_arrays(args)?;
                let names = arrays[0].as_string::<i32>();
                let out: Int32Array = names.iter().map(|n| n.and_then(type_oid)).collect();
                Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
            }),
        ),
        create_udf(
            "pg_size_pretty",
            vec![DataType::Int64],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(|args: &[ColumnarValue]| {
                let arrays = ColumnarValue::values_to_arrays(args)?;
                let sizes = arrays[0].as_primitive::<Int64Type>();
                let out: StringArray = sizes.iter().map(|v| v.map(size_pretty)).collect();
                Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
            }),
        ),
    ]
}

/// `pg_typeof(x)`: the Postgres name of the type `x` goes to the client
/// as (`integer`, `numeric`, `timestamp with time zone` …).
fn pg_typeof(args: ScalarFunctionArgs) -> datafusion::error::Result<ColumnarValue> {
    let name = args
        .arg_fields
        .first()
        .map(|f| pg_type_name(f.data_type()))
        .unwrap_or("unknown");
    Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(
        name.to_string(),
    ))))
}

/// The Postgres type name of an Arrow type, as `pg_typeof` shows it.
fn pg_type_name(data_type: &DataType) -> &'static str {
    match data_type {
        DataType::Boolean => "boolean",
        DataType::Int8 | DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        DataType::Int64 => "bigint",
        DataType::Float16 | DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => "numeric",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text",
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "bytea",
        DataType::Date32 | DataType::Date64 => "date",
        DataType::Time32(_) | DataType::Time64(_) => "time without time zone",
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone",
        DataType::Timestamp(_, None) => "timestamp without time zone",
        DataType::Interval(_) | DataType::Duration(_) => "interval",
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => "anyarray",
        DataType::Struct(_) => "record",
        DataType::Null => "unknown",
        _ => "text",
    }
}

/// A function of any arguments whose result is text (one per name: the
/// name is its identity).
#[derive(Debug)]
struct TextFunction {
    name: &'static str,
    signature: Signature,
    invoke: fn(ScalarFunctionArgs) -> datafusion::error::Result<ColumnarValue>,
}

impl PartialEq for TextFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for TextFunction {}

impl std::hash::Hash for TextFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl TextFunction {
    fn udf(
        name: &'static str,
        signature: Signature,
        invoke: fn(ScalarFunctionArgs) -> datafusion::error::Result<ColumnarValue>,
    ) -> ScalarUDF {
        ScalarUDF::new_from_impl(Self {
            name,
            signature,
            invoke,
        })
    }
}

impl ScalarUDFImpl for TextFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        (self.invoke)(args)
    }
}

/// `json_build_object(k1, v1, …)`: a JSON object as text (SQLAlchemy's
/// column inspection builds one).
fn json_build_object(args: ScalarFunctionArgs) -> datafusion::error::Result<ColumnarValue> {
    let rows = args.number_rows;
    let arrays = ColumnarValue::values_to_arrays(&args.args)?;
    let mut out = Vec::with_capacity(rows);
    for row in 0..rows {
        let mut object = serde_json::Map::new();
        for pair in arrays.chunks(2) {
            let key = ScalarValue::try_from_array(&pair[0], row)?;
            let value = match pair.get(1) {
                Some(a) => ScalarValue::try_from_array(a, row)?,
                None => ScalarValue::Null,
            };
            object.insert(scalar_text(&key).unwrap_or_default(), json_value(&value));
        }
        out.push(Some(serde_json::Value::Object(object).to_string()));
    }
    Ok(ColumnarValue::Array(Arc::new(StringArray::from(out))))
}

fn scalar_text(v: &ScalarValue) -> Option<String> {
    match v {
        ScalarValue::Utf8(s) | ScalarValue::Utf8View(s) | ScalarValue::LargeUtf8(s) => s.clone(),
        other if other.is_null() => None,
        other => Some(other.to_string()),
    }
}

fn json_value(v: &ScalarValue) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        v if v.is_null() => J::Null,
        ScalarValue::Boolean(Some(b)) => J::Bool(*b),
        ScalarValue::Int8(Some(i)) => J::from(*i),
        ScalarValue::Int16(Some(i)) => J::from(*i),
        ScalarValue::Int32(Some(i)) => J::from(*i),
        ScalarValue::Int64(Some(i)) => J::from(*i),
        ScalarValue::Float64(Some(f)) => J::from(*f),
        other => J::String(scalar_text(other).unwrap_or_default()),
    }
}

/// The OID of a built-in type name (`to_regtype`); NULL for others (such
/// as extension types like `hstore`, which drivers probe for).
fn type_oid(name: &str) -> Option<i32> {
    let name = name.trim().trim_start_matches("pg_catalog.").to_lowercase();
    Some(match name.as_str() {
        "bool" | "boolean" => 16,
        "bytea" => 17,
        "int8" | "bigint" => 20,
        "int2" | "smallint" => 21,
        "int4" | "integer" | "int" => 23,
        "text" => 25,
        "oid" => 26,
        "json" => 114,
        "float4" | "real" => 700,
        "float8" | "double precision" => 701,
        "varchar" | "character varying" => 1043,
        "date" => 1082,
        "timestamp" | "timestamp without time zone" => 1114,
        "timestamptz" | "timestamp with time zone" => 1184,
        "numeric" | "decimal" => 1700,
        "uuid" => 2950,
        "jsonb" => 3802,
        _ => return None,
    })
}

/// Postgres' `pg_size_pretty`: bytes, then kB, MB, GB, TB, rounded.
fn size_pretty(bytes: i64) -> String {
    let units = ["bytes", "kB", "MB", "GB", "TB", "PB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value.abs() >= 10.0 * 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{} {}", value.round() as i64, units[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_postgres_prints_them() {
        assert_eq!(size_pretty(8192), "8192 bytes");
        assert_eq!(size_pretty(20 * 1024), "20 kB");
        assert_eq!(size_pretty(300 * 1024 * 1024), "300 MB");
    }
}
