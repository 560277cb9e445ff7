//! Delta column types as Databricks writes them (`int`, `decimal(10,2)`,
//! `array<string>` …), for DESCRIBE and error messages.

use datafusion::arrow::datatypes::{DataType as ArrowType, TimeUnit};
use deltalake::kernel::{
    ArrayType, DataType, MapType, MetadataValue, PrimitiveType, StructField, StructType,
};

use crate::error::{Error, Result};

pub use lakegres_common::char_varchar::{CharVarchar, CHAR_VARCHAR_TYPE};

/// The Spark SQL name of a Delta type.
pub fn spark_type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Primitive(p) => match p {
            PrimitiveType::String => "string".into(),
            PrimitiveType::Long => "bigint".into(),
            PrimitiveType::Integer => "int".into(),
            PrimitiveType::Short => "smallint".into(),
            PrimitiveType::Byte => "tinyint".into(),
            PrimitiveType::Float => "float".into(),
            PrimitiveType::Double => "double".into(),
            PrimitiveType::Boolean => "boolean".into(),
            PrimitiveType::Binary => "binary".into(),
            PrimitiveType::Date => "date".into(),
            PrimitiveType::Timestamp => "timestamp".into(),
            PrimitiveType::TimestampNtz => "timestamp_ntz".into(),
            PrimitiveType::Decimal(d) => format!("decimal({},{})", d.precision(), d.scale()),
            PrimitiveType::Void => "void".into(),
            other => other.to_string(),
        },
        DataType::Array(a) => format!("array<{}>", spark_type_name(a.element_type())),
        DataType::Map(m) => format!(
            "map<{},{}>",
            spark_type_name(m.key_type()),
            spark_type_name(m.value_type())
        ),
        DataType::Struct(s) => {
            let fields: Vec<String> = s
                .fields()
                .map(|f| format!("{}:{}", f.name(), spark_type_name(f.data_type())))
                .collect();
            format!("struct<{}>", fields.join(","))
        }
        DataType::Variant(_) => "variant".into(),
    }
}

/// The Delta type of a column the SQL layer declares with the Arrow type
/// `t`: `Timestamp(_, Some(_))` is Delta's TIMESTAMP (an instant),
/// `Timestamp(_, None)` TIMESTAMP_NTZ; a struct field's `comment` metadata
/// is kept. Types Delta has no column type for are refused.
pub(crate) fn delta_type(t: &ArrowType) -> Result<DataType> {
    let unsupported = || Error::Internal(format!("no Delta column type for {t}"));
    let primitive = |p: PrimitiveType| Ok(DataType::Primitive(p));
    match t {
        ArrowType::Int8 => primitive(PrimitiveType::Byte),
        ArrowType::Int16 => primitive(PrimitiveType::Short),
        ArrowType::Int32 => primitive(PrimitiveType::Integer),
        ArrowType::Int64 => primitive(PrimitiveType::Long),
        ArrowType::Float32 => primitive(PrimitiveType::Float),
        ArrowType::Float64 => primitive(PrimitiveType::Double),
        ArrowType::Boolean => primitive(PrimitiveType::Boolean),
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => {
            primitive(PrimitiveType::String)
        }
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => {
            primitive(PrimitiveType::Binary)
        }
        ArrowType::Date32 => primitive(PrimitiveType::Date),
        ArrowType::Timestamp(TimeUnit::Microsecond, Some(_)) => primitive(PrimitiveType::Timestamp),
        ArrowType::Timestamp(TimeUnit::Microsecond, None) => primitive(PrimitiveType::TimestampNtz),
        ArrowType::Decimal128(p, s) => {
            let scale = u8::try_from(*s).map_err(|_| unsupported())?;
            PrimitiveType::decimal(*p, scale)
                .map(DataType::Primitive)
                .map_err(|_| unsupported())
        }
        ArrowType::List(element) | ArrowType::LargeList(element) => Ok(DataType::Array(Box::new(
            ArrayType::new(delta_type(element.data_type())?, element.is_nullable()),
        ))),
        ArrowType::Map(entries, _) => {
            let ArrowType::Struct(kv) = entries.data_type() else {
                return Err(unsupported());
            };
            let (Some(key), Some(value)) = (kv.first(), kv.get(1)) else {
                return Err(unsupported());
            };
            Ok(DataType::Map(Box::new(MapType::new(
                delta_type(key.data_type())?,
                delta_type(value.data_type())?,
                value.is_nullable(),
            ))))
        }
        ArrowType::Struct(fields) => {
            let fields = fields
                .iter()
                .map(|f| {
                    let field = StructField::new(
                        f.name().clone(),
                        delta_type(f.data_type())?,
                        f.is_nullable(),
                    );
                    Ok(match f.metadata().get("comment") {
                        Some(comment) => {
                            field.with_metadata([("comment".to_string(), comment.clone())])
                        }
                        None => field,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            StructType::try_new(fields)
                .map(|s| DataType::Struct(Box::new(s)))
                .map_err(|_| unsupported())
        }
        _ => Err(unsupported()),
    }
}

/// Databricks' name of the column type the SQL layer declares as `t`.
pub fn type_name(t: &ArrowType) -> String {
    match delta_type(t) {
        Ok(delta) => spark_type_name(&delta),
        Err(_) => t.to_string().to_lowercase(),
    }
}

/// The field metadata key of a column's type changes (Delta protocol,
/// "Type Widening").
pub const TYPE_CHANGES: &str = "delta.typeChanges";

/// Whether Delta's type widening allows changing a column from `from` to
/// `to`: a wider integer, an integer or FLOAT to DOUBLE, a DECIMAL that
/// keeps every value (precision and scale up, integer digits not fewer),
/// an integer to a DECIMAL with room for it, DATE to TIMESTAMP_NTZ.
pub fn widens(from: &DataType, to: &DataType) -> bool {
    use PrimitiveType as P;
    let (DataType::Primitive(from), DataType::Primitive(to)) = (from, to) else {
        return false;
    };
    let integer_digits = |p: &P| match p {
        P::Byte => Some(3),
        P::Short => Some(5),
        P::Integer => Some(10),
        P::Long => Some(20),
        _ => None,
    };
    let rank = |p: &P| match p {
        P::Byte => 1,
        P::Short => 2,
        P::Integer => 3,
        P::Long => 4,
        _ => 0,
    };
    match (from, to) {
        (a, b) if rank(a) > 0 && rank(b) > rank(a) => true,
        (P::Byte | P::Short | P::Integer | P::Float, P::Double) => true,
        (P::Decimal(a), P::Decimal(b)) => {
            b.precision() >= a.precision()
                && b.scale() >= a.scale()
                && b.precision() - b.scale() >= a.precision() - a.scale()
        }
        (a, P::Decimal(b)) => integer_digits(a).is_some_and(|digits| {
            u8::try_from(digits).is_ok_and(|d| b.precision() - b.scale() >= d)
        }),
        (P::Date, P::TimestampNtz) => true,
        _ => false,
    }
}

/// The comment of a column, where one was declared.
pub(crate) fn column_comment(field: &StructField) -> Option<String> {
    match field.metadata().get("comment") {
        Some(MetadataValue::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The `DEFAULT` of a column (SQL text), where one was declared.
pub(crate) fn column_default(field: &StructField) -> Option<String> {
    match field
        .metadata()
        .get(crate::table::features::CURRENT_DEFAULT)
    {
        Some(MetadataValue::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The `CHAR(n)` / `VARCHAR(n)` a STRING column was declared as.
pub(crate) fn char_varchar(field: &StructField) -> Option<CharVarchar> {
    match field.metadata().get(CHAR_VARCHAR_TYPE) {
        Some(MetadataValue::String(s)) => CharVarchar::parse(s),
        _ => None,
    }
}

/// The precision and scale of a DECIMAL column.
pub(crate) fn decimal_digits(field: &StructField) -> Option<(u8, u8)> {
    match field.data_type() {
        DataType::Primitive(PrimitiveType::Decimal(d)) => Some((d.precision(), d.scale())),
        _ => None,
    }
}

/// The column's type as declared: `varchar(20)` for a VARCHAR column, else
/// [`spark_type_name`].
pub(crate) fn column_type_name(field: &StructField) -> String {
    match char_varchar(field) {
        Some(declared) => declared.to_string(),
        None => spark_type_name(field.data_type()),
    }
}

#[cfg(test)]
mod tests {
    use super::{widens, PrimitiveType};

    #[test]
    fn widenings_delta_allows() {
        use deltalake::kernel::DataType as T;
        let dec = |p, s| T::Primitive(PrimitiveType::decimal(p, s).unwrap());
        assert!(widens(&T::INTEGER, &T::LONG));
        assert!(widens(&T::BYTE, &T::SHORT));
        assert!(widens(&T::FLOAT, &T::DOUBLE));
        assert!(widens(&T::INTEGER, &T::DOUBLE));
        assert!(widens(&dec(10, 2), &dec(14, 4)));
        assert!(widens(&T::INTEGER, &dec(12, 2)));
        assert!(widens(&T::DATE, &T::TIMESTAMP_NTZ));
        assert!(!widens(&T::LONG, &T::INTEGER));
        assert!(!widens(&dec(10, 2), &dec(11, 4)));
        assert!(!widens(&T::LONG, &T::DOUBLE));
        assert!(!widens(&T::INTEGER, &dec(10, 2)));
        assert!(!widens(&T::STRING, &T::LONG));
    }
}
