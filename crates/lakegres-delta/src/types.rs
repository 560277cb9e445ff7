//! Delta column types as Databricks writes them (`int`, `decimal(10,2)`,
//! `array<string>` …), for DESCRIBE and error messages.

use deltalake::kernel::{DataType, MetadataValue, PrimitiveType, StructField};

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

/// The comment of a column, where one was declared.
pub fn column_comment(field: &StructField) -> Option<String> {
    match field.metadata().get("comment") {
        Some(MetadataValue::String(s)) => Some(s.clone()),
        _ => None,
    }
}
