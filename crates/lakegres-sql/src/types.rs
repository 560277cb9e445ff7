//! SQL type names → column types (as Arrow writes them; storage maps them
//! to Delta's), accepting Databricks names
//! (`STRING`, `LONG`, `TIMESTAMP_NTZ`) and Postgres ones (`TEXT`, `INT8`,
//! `VARCHAR(n)`, `DOUBLE PRECISION`).
//!
//! `TIMESTAMP` is the Databricks one (an instant, stored UTC-adjusted);
//! `TIMESTAMP WITHOUT TIME ZONE` and `TIMESTAMP_NTZ` are wall-clock values.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Fields, TimeUnit};
use sqlparser::ast::{self, ArrayElemTypeDef, ExactNumberInfo, TimezoneInfo};

use crate::error::{Error, Result};

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

/// The column type of a declared SQL type: Databricks' TIMESTAMP (an
/// instant) is `Timestamp(µs, UTC)`, TIMESTAMP_NTZ `Timestamp(µs, None)`,
/// DECIMAL up to 38 digits.
pub fn column_type(sql: &ast::DataType) -> Result<DataType> {
    use ast::DataType as S;
    let unsupported = || Error::UnsupportedType {
        data_type: sql.to_string(),
    };
    let instant = || {
        Ok(DataType::Timestamp(
            TimeUnit::Microsecond,
            Some("UTC".into()),
        ))
    };
    let wall_clock = || Ok(DataType::Timestamp(TimeUnit::Microsecond, None));
    match sql {
        S::TinyInt(_) => Ok(DataType::Int8),
        S::SmallInt(_) | S::Int2(_) | S::Int16 => Ok(DataType::Int16),
        S::Int(_) | S::Integer(_) | S::Int4(_) | S::Int32 => Ok(DataType::Int32),
        S::BigInt(_) | S::Int8(_) | S::Int64 => Ok(DataType::Int64),
        S::Float4 | S::Float32 | S::Real => Ok(DataType::Float32),
        // FLOAT(p) follows the standard's precision. A bare FLOAT is 8
        // bytes, as in Postgres (Databricks: 4), so that no value a
        // Postgres tool writes loses digits; REAL is the 4-byte type.
        S::Float(info) => match info {
            ExactNumberInfo::Precision(p) if *p <= 24 => Ok(DataType::Float32),
            _ => Ok(DataType::Float64),
        },
        S::Double(_) | S::DoublePrecision | S::Float8 | S::Float64 => Ok(DataType::Float64),
        S::Decimal(info) | S::Numeric(info) | S::Dec(info) => {
            let (precision, scale) = match info {
                // Postgres' NUMERIC has any precision: the widest DECIMAL
                // with 18 decimals, so that a value a Postgres tool writes
                // keeps its fraction (or fails, 22003, beyond 20 digits)
                // rather than rounding to Databricks' DECIMAL(10,0).
                ExactNumberInfo::None if matches!(sql, S::Numeric(_)) => (38, 18),
                ExactNumberInfo::None => (10, 0),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => {
                    (*p, u64::try_from(*s).unwrap_or(u64::MAX))
                }
            };
            let precision = u8::try_from(precision).map_err(|_| unsupported())?;
            let scale = i8::try_from(scale).map_err(|_| unsupported())?;
            if precision == 0 || precision > 38 || scale > precision as i8 {
                return Err(unsupported());
            }
            Ok(DataType::Decimal128(precision, scale))
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
        | S::LongText => Ok(DataType::Utf8),
        S::Boolean | S::Bool => Ok(DataType::Boolean),
        // Postgres' JSON and UUID types are kept as their text (Databricks
        // STRING; `from_json`, `:` paths and `->>` read it).
        S::JSON | S::JSONB | S::Uuid => Ok(DataType::Utf8),
        S::Binary(_) | S::Varbinary(_) | S::Blob(_) | S::Bytea | S::Bytes(_) => {
            Ok(DataType::Binary)
        }
        S::Date => Ok(DataType::Date32),
        S::Timestamp(_, TimezoneInfo::WithoutTimeZone) | S::TimestampNtz(_) | S::Datetime(_) => {
            wall_clock()
        }
        S::Timestamp(_, _) => instant(),
        S::Array(elem) => match elem {
            ArrayElemTypeDef::AngleBracket(t)
            | ArrayElemTypeDef::SquareBracket(t, _)
            | ArrayElemTypeDef::Parenthesis(t) => Ok(DataType::List(Arc::new(Field::new(
                "element",
                column_type(t)?,
                true,
            )))),
            ArrayElemTypeDef::None => Err(unsupported()),
        },
        S::Map(k, v) => {
            let entries = Fields::from(vec![
                Field::new("key", column_type(k)?, false),
                Field::new("value", column_type(v)?, true),
            ]);
            Ok(DataType::Map(
                Arc::new(Field::new("key_value", DataType::Struct(entries), false)),
                false,
            ))
        }
        S::Struct(fields, _) => {
            let fields = fields
                .iter()
                .map(struct_field)
                .collect::<Result<Vec<_>>>()?;
            let mut seen: Vec<String> = Vec::new();
            for f in &fields {
                if seen.contains(f.name()) {
                    return Err(unsupported());
                }
                seen.push(f.name().clone());
            }
            Ok(DataType::Struct(Fields::from(fields)))
        }
        S::Custom(name, args) if args.is_empty() => {
            match name.to_string().to_uppercase().as_str() {
                "LONG" => Ok(DataType::Int64),
                "SHORT" => Ok(DataType::Int16),
                "BYTE" => Ok(DataType::Int8),
                "TIMESTAMP_NTZ" => wall_clock(),
                "TIMESTAMP_LTZ" | "TIMESTAMPTZ" => instant(),
                "JSON" | "JSONB" | "UUID" => Ok(DataType::Utf8),
                _ => Err(unsupported()),
            }
        }
        _ => Err(unsupported()),
    }
}

/// A field of a declared `STRUCT<…>`: its name, type, `NOT NULL` and
/// `COMMENT` (kept as the field's comment metadata, as Spark does).
fn struct_field(field: &ast::StructField) -> Result<Field> {
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
    let mut out = Field::new(name, column_type(&field.field_type)?, nullable);
    if let Some(comment) = comment {
        out = out.with_metadata(HashMap::from([("comment".to_string(), comment)]));
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
            .map(|c| column_type(&c.data_type).unwrap())
            .collect()
    }

    #[test]
    fn databricks_and_postgres_names() {
        let types = column_types(
            "CREATE TABLE t (a STRING, b INT, c BIGINT, d DOUBLE, e DECIMAL(12,2), f DATE, \
             g TIMESTAMP, h BOOLEAN, i BINARY, j TEXT, k VARCHAR(10), l LONG, m DOUBLE PRECISION, \
             n TIMESTAMP_NTZ)",
        );
        let names: Vec<String> = types.iter().map(lakegres_delta::types::type_name).collect();
        assert_eq!(
            names,
            [
                "string",
                "int",
                "bigint",
                "double",
                "decimal(12,2)",
                "date",
                "timestamp",
                "boolean",
                "binary",
                "string",
                "string",
                "bigint",
                "double",
                "timestamp_ntz",
            ]
        );
    }

    #[test]
    fn decimals_past_38_digits_are_refused() {
        assert!(column_types("CREATE TABLE t (a DECIMAL(38,38))").len() == 1);
        let Statement::CreateTable(c) = parse_sql("CREATE TABLE t (a DECIMAL(39,2))")
            .unwrap()
            .remove(0)
        else {
            panic!("not a CREATE TABLE");
        };
        assert!(column_type(&c.columns[0].data_type).is_err());
    }

    #[test]
    fn nested_types_to_any_depth() {
        let types = column_types(
            "CREATE TABLE t (a ARRAY<INT>, m MAP<STRING, ARRAY<BIGINT>>, \
             s STRUCT<x: INT NOT NULL COMMENT 'the x', y STRUCT<z: ARRAY<STRING>>>, \
             l ARRAY<MAP<STRING,STRUCT<q DECIMAL(10,2)>>>)",
        );
        let names: Vec<String> = types.iter().map(lakegres_delta::types::type_name).collect();
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
        let x = &s[0];
        assert!(!x.is_nullable());
        assert_eq!(
            x.metadata().get("comment").map(String::as_str),
            Some("the x")
        );
    }
}
