//! Delta column types as Databricks writes them (`int`, `decimal(10,2)`,
//! `array<string>` …), for DESCRIBE and error messages.

use deltalake::kernel::{DataType, MetadataValue, PrimitiveType, StructField};

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
pub fn column_comment(field: &StructField) -> Option<String> {
    match field.metadata().get("comment") {
        Some(MetadataValue::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The `DEFAULT` of a column (SQL text), where one was declared.
pub fn column_default(field: &StructField) -> Option<String> {
    match field
        .metadata()
        .get(crate::table::features::CURRENT_DEFAULT)
    {
        Some(MetadataValue::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The `CHAR(n)` / `VARCHAR(n)` a STRING column was declared as.
pub fn char_varchar(field: &StructField) -> Option<CharVarchar> {
    match field.metadata().get(CHAR_VARCHAR_TYPE) {
        Some(MetadataValue::String(s)) => CharVarchar::parse(s),
        _ => None,
    }
}

/// The precision and scale of a DECIMAL column.
pub fn decimal_digits(field: &StructField) -> Option<(u8, u8)> {
    match field.data_type() {
        DataType::Primitive(PrimitiveType::Decimal(d)) => Some((d.precision(), d.scale())),
        _ => None,
    }
}

/// The column's type as declared: `varchar(20)` for a VARCHAR column, else
/// [`spark_type_name`].
pub fn column_type_name(field: &StructField) -> String {
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
