//! SQL type names → Delta column types, accepting Databricks names
//! (`STRING`, `LONG`, `TIMESTAMP_NTZ`) and Postgres ones (`TEXT`, `INT8`,
//! `VARCHAR(n)`, `DOUBLE PRECISION`).
//!
//! `TIMESTAMP` is the Databricks one (an instant, stored UTC-adjusted);
//! `TIMESTAMP WITHOUT TIME ZONE` and `TIMESTAMP_NTZ` are wall-clock values.

use lakegres_delta::kernel::{
    ArrayType, DataType, MapType, PrimitiveType, StructField, StructType,
};
use sqlparser::ast::{self, ArrayElemTypeDef, ExactNumberInfo, TimezoneInfo};

use crate::error::{Error, Result};

/// The Delta type for a declared SQL type.
/// The `CHAR(n)` / `VARCHAR(n)` a column is declared as (Delta stores a
/// STRING and keeps this in the field's metadata).
pub fn char_varchar(sql: &ast::DataType) -> Option<lakegres_delta::types::CharVarchar> {
    use ast::DataType as S;
    let (fixed, length) = match sql {
        S::Varchar(l) | S::Nvarchar(l) | S::CharVarying(l) | S::CharacterVarying(l) => (false, l),
        S::Char(l) | S::Character(l) => (true, l),
        _ => return None,
    };
    match length {
        Some(ast::CharacterLength::IntegerLength { length, .. }) => {
            Some(lakegres_delta::types::CharVarchar {
                fixed,
                length: usize::try_from(*length).ok()?,
            })
        }
        _ => None,
    }
}

pub fn delta_type(sql: &ast::DataType) -> Result<DataType> {
    use ast::DataType as S;
    let unsupported = || Error::UnsupportedType {
        data_type: sql.to_string(),
    };
    let primitive = |p: PrimitiveType| Ok(DataType::Primitive(p));
    match sql {
        S::TinyInt(_) => primitive(PrimitiveType::Byte),
        S::SmallInt(_) | S::Int2(_) | S::Int16 => primitive(PrimitiveType::Short),
        S::Int(_) | S::Integer(_) | S::Int4(_) | S::Int32 => primitive(PrimitiveType::Integer),
        S::BigInt(_) | S::Int8(_) | S::Int64 => primitive(PrimitiveType::Long),
        S::Float4 | S::Float32 | S::Real => primitive(PrimitiveType::Float),
        // Databricks FLOAT is 4 bytes; FLOAT(p) follows the standard's precision.
        S::Float(info) => match info {
            ExactNumberInfo::Precision(p) if *p > 24 => primitive(PrimitiveType::Double),
            _ => primitive(PrimitiveType::Float),
        },
        S::Double(_) | S::DoublePrecision | S::Float8 | S::Float64 => {
            primitive(PrimitiveType::Double)
        }
        S::Decimal(info) | S::Numeric(info) | S::Dec(info) => {
            let (precision, scale) = match info {
                ExactNumberInfo::None => (10, 0),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => {
                    (*p, u64::try_from(*s).unwrap_or(u64::MAX))
                }
            };
            let precision = u8::try_from(precision).map_err(|_| unsupported())?;
            let scale = u8::try_from(scale).map_err(|_| unsupported())?;
            PrimitiveType::decimal(precision, scale)
                .map(DataType::Primitive)
                .map_err(|_| unsupported())
        }
        S::String(_)
        | S::Text
        | S::Varchar(_)
        | S::Nvarchar(_)
        | S::CharVarying(_)
        | S::CharacterVarying(_)
        | S::Char(_)
        | S::Character(_)
        | S::Clob(_)
        | S::TinyText
        | S::MediumText
        | S::LongText => primitive(PrimitiveType::String),
        S::Boolean | S::Bool => primitive(PrimitiveType::Boolean),
        S::Binary(_) | S::Varbinary(_) | S::Blob(_) | S::Bytea | S::Bytes(_) => {
            primitive(PrimitiveType::Binary)
        }
        S::Date => primitive(PrimitiveType::Date),
        S::Timestamp(_, TimezoneInfo::WithoutTimeZone) | S::TimestampNtz(_) | S::Datetime(_) => {
            primitive(PrimitiveType::TimestampNtz)
        }
        S::Timestamp(_, _) => primitive(PrimitiveType::Timestamp),
        S::Array(elem) => match elem {
            ArrayElemTypeDef::AngleBracket(t)
            | ArrayElemTypeDef::SquareBracket(t, _)
            | ArrayElemTypeDef::Parenthesis(t) => Ok(DataType::Array(Box::new(ArrayType::new(
                delta_type(t)?,
                true,
            )))),
            ArrayElemTypeDef::None => Err(unsupported()),
        },
        S::Map(k, v) => Ok(DataType::Map(Box::new(MapType::new(
            delta_type(k)?,
            delta_type(v)?,
            true,
        )))),
        S::Struct(fields, _) => {
            let fields = fields
                .iter()
                .map(struct_field)
                .collect::<Result<Vec<_>>>()?;
            StructType::try_new(fields)
                .map(|s| DataType::Struct(Box::new(s)))
                .map_err(|_| unsupported())
        }
        S::Custom(name, args) if args.is_empty() => {
            match name.to_string().to_uppercase().as_str() {
                "LONG" => primitive(PrimitiveType::Long),
                "SHORT" => primitive(PrimitiveType::Short),
                "BYTE" => primitive(PrimitiveType::Byte),
                "TIMESTAMP_NTZ" => primitive(PrimitiveType::TimestampNtz),
                "TIMESTAMP_LTZ" | "TIMESTAMPTZ" => primitive(PrimitiveType::Timestamp),
                _ => Err(unsupported()),
            }
        }
        _ => Err(unsupported()),
    }
}

/// A field of a declared `STRUCT<…>`: its name, type, `NOT NULL` and
/// `COMMENT` (kept as the field's comment metadata, as Spark does).
fn struct_field(field: &ast::StructField) -> Result<StructField> {
    use crate::parser::{FIELD_COMMENT, FIELD_NOT_NULL};
    let name = field
        .field_name
        .as_ref()
        .map(|n| n.value.clone())
        .ok_or_else(|| Error::UnsupportedType {
            data_type: format!("a STRUCT field without a name ({})", field.field_type),
        })?;
    let mut nullable = true;
    let mut comment = None;
    for option in field.options.iter().flatten() {
        if let ast::SqlOption::KeyValue { key, value } = option {
            if key.value == FIELD_NOT_NULL {
                nullable = false;
            } else if key.value == FIELD_COMMENT {
                if let ast::Expr::Value(v) = value {
                    if let ast::Value::SingleQuotedString(text) = &v.value {
                        comment = Some(text.clone());
                    }
                }
            }
        }
    }
    let mut out = StructField::new(name, delta_type(&field.field_type)?, nullable);
    if let Some(comment) = comment {
        out = out.with_metadata([("comment".to_string(), comment)]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{parse_sql, Statement};

    fn column_types(sql: &str) -> Vec<DataType> {
        let Statement::CreateTable(c) = parse_sql(sql).unwrap().remove(0) else {
            panic!("not a CREATE TABLE");
        };
        c.columns
            .iter()
            .map(|c| delta_type(&c.data_type).unwrap())
            .collect()
    }

    #[test]
    fn databricks_and_postgres_names() {
        let types = column_types(
            "CREATE TABLE t (a STRING, b INT, c BIGINT, d DOUBLE, e DECIMAL(12,2), f DATE, \
             g TIMESTAMP, h BOOLEAN, i BINARY, j TEXT, k VARCHAR(10), l LONG, m DOUBLE PRECISION)",
        );
        let p = |p| DataType::Primitive(p);
        assert_eq!(
            types,
            vec![
                p(PrimitiveType::String),
                p(PrimitiveType::Integer),
                p(PrimitiveType::Long),
                p(PrimitiveType::Double),
                DataType::Primitive(PrimitiveType::decimal(12, 2).unwrap()),
                p(PrimitiveType::Date),
                p(PrimitiveType::Timestamp),
                p(PrimitiveType::Boolean),
                p(PrimitiveType::Binary),
                p(PrimitiveType::String),
                p(PrimitiveType::String),
                p(PrimitiveType::Long),
                p(PrimitiveType::Double),
            ]
        );
    }

    #[test]
    fn nested_types_to_any_depth() {
        let types = column_types(
            "CREATE TABLE t (a ARRAY<INT>, m MAP<STRING, ARRAY<BIGINT>>, \
             s STRUCT<x: INT NOT NULL COMMENT 'the x', y STRUCT<z: ARRAY<STRING>>>, \
             l ARRAY<MAP<STRING,STRUCT<q DECIMAL(10,2)>>>)",
        );
        let names: Vec<String> = types
            .iter()
            .map(lakegres_delta::types::spark_type_name)
            .collect();
        assert_eq!(
            names,
            [
                "array<int>",
                "map<string,array<bigint>>",
                "struct<x:int,y:struct<z:array<string>>>",
                "array<map<string,struct<q:decimal(10,2)>>>",
            ]
        );
        let DataType::Struct(s) = &types[2] else {
            panic!()
        };
        let x = s.field("x").unwrap();
        assert!(!x.is_nullable());
        assert_eq!(
            lakegres_delta::types::column_comment(x).as_deref(),
            Some("the x")
        );
    }
}
