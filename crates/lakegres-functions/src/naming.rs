//! Result column names as Databricks gives them to expressions without an
//! alias (Spark's `toPrettySQL`): `1`, `a`, `(1 + 1)`, `count(1)`,
//! `date_format(d, yyyy-MM-dd)`, `CAST(x AS INT)`, `(a IS NULL)` — instead of
//! DataFusion's `Int64(1)`, `Utf8("a")`, `Int64(1) + Int64(1)`.

use sqlparser::ast::{
    BinaryOperator, CastKind, DataType, DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, UnaryOperator, Value,
};

/// The name Databricks gives `expr`, where we know it.
pub(crate) fn pretty(expr: &Expr) -> Option<String> {
    Some(match expr {
        Expr::Identifier(i) => i.value.clone(),
        Expr::CompoundIdentifier(parts) => parts.last()?.value.clone(),
        Expr::Value(v) => literal(&v.value)?,
        Expr::Nested(inner) => pretty(inner)?,
        Expr::UnaryOp { op, expr } => {
            let inner = pretty(expr)?;
            match (op, expr.as_ref()) {
                (UnaryOperator::Minus, Expr::Value(_)) => format!("-{inner}"),
                (UnaryOperator::Minus, _) => format!("(- {inner})"),
                (UnaryOperator::Plus, _) => format!("(+ {inner})"),
                (UnaryOperator::Not, _) => format!("(NOT {inner})"),
                _ => return None,
            }
        }
        Expr::BinaryOp { left, op, right } => {
            let (l, r) = (pretty(left)?, pretty(right)?);
            let op = match op {
                BinaryOperator::Plus => "+",
                BinaryOperator::Minus => "-",
                BinaryOperator::Multiply => "*",
                BinaryOperator::Divide => "/",
                BinaryOperator::Modulo => "%",
                BinaryOperator::MyIntegerDivide => "div",
                BinaryOperator::Eq => "=",
                BinaryOperator::Gt => ">",
                BinaryOperator::Lt => "<",
                BinaryOperator::GtEq => ">=",
                BinaryOperator::LtEq => "<=",
                BinaryOperator::Spaceship => "<=>",
                BinaryOperator::And => "AND",
                BinaryOperator::Or => "OR",
                BinaryOperator::NotEq => return Some(format!("(NOT ({l} = {r}))")),
                BinaryOperator::StringConcat => return Some(format!("concat({l}, {r})")),
                _ => return None,
            };
            format!("({l} {op} {r})")
        }
        // `INTERVAL '2-2' YEAR TO MONTH`, as written (upper-cased words).
        Expr::Interval(_) => expr.to_string(),
        Expr::IsNull(e) => format!("({} IS NULL)", pretty(e)?),
        Expr::IsNotNull(e) => format!("({} IS NOT NULL)", pretty(e)?),
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let items: Option<Vec<String>> = list.iter().map(pretty).collect();
            let text = format!("({} IN ({}))", pretty(expr)?, items?.join(", "));
            if *negated {
                format!("(NOT {text})")
            } else {
                text
            }
        }
        Expr::Cast {
            kind,
            expr,
            data_type,
            ..
        } => {
            let word = match kind {
                CastKind::TryCast | CastKind::SafeCast => "TRY_CAST",
                _ => "CAST",
            };
            format!("{word}({} AS {})", pretty(expr)?, type_name(data_type)?)
        }
        Expr::Function(f) => {
            let name = f.name.0.last()?.as_ident()?.value.to_lowercase();
            // A typed literal (`10L`) is named by its digits.
            if name == super::ansi_cast::NAME {
                if let FunctionArguments::List(list) = &f.args {
                    if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(e))) = list.args.first()
                    {
                        return pretty(e);
                    }
                }
            }
            if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() {
                return None;
            }
            let args = match &f.args {
                FunctionArguments::None => return Some(format!("{name}()")),
                FunctionArguments::List(list) => {
                    if !list.clauses.is_empty() {
                        return None;
                    }
                    let mut args = Vec::new();
                    for arg in &list.args {
                        match arg {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => args.push(pretty(e)?),
                            FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if name == "count" => {
                                args.push("1".to_string())
                            }
                            _ => return None,
                        }
                    }
                    let distinct =
                        matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
                    format!(
                        "{}{}",
                        if distinct { "DISTINCT " } else { "" },
                        args.join(", ")
                    )
                }
                FunctionArguments::Subquery(_) => return None,
            };
            format!("{name}({args})")
        }
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            let mut text = String::from("CASE");
            if let Some(o) = operand {
                text.push(' ');
                text.push_str(&pretty(o)?);
            }
            for when in conditions {
                text.push_str(&format!(
                    " WHEN {} THEN {}",
                    pretty(&when.condition)?,
                    pretty(&when.result)?
                ));
            }
            if let Some(e) = else_result {
                text.push_str(&format!(" ELSE {}", pretty(e)?));
            }
            text.push_str(" END");
            text
        }
        Expr::Like {
            negated,
            expr,
            pattern,
            ..
        } => {
            let text = format!("{} LIKE {}", pretty(expr)?, pretty(pattern)?);
            if *negated {
                format!("(NOT {text})")
            } else {
                text
            }
        }
        Expr::RLike {
            negated,
            expr,
            pattern,
            ..
        } => {
            let text = format!("RLIKE({}, {})", pretty(expr)?, pretty(pattern)?);
            if *negated {
                format!("(NOT {text})")
            } else {
                text
            }
        }
        Expr::JsonAccess { path, .. } => {
            let text = path.to_string();
            text.trim_start_matches(':').to_string()
        }
        Expr::CompoundFieldAccess { root, access_chain } => {
            let plain_root = matches!(
                root.as_ref(),
                Expr::Identifier(_) | Expr::CompoundIdentifier(_)
            );
            let mut text = pretty(root)?;
            for access in access_chain {
                match access {
                    sqlparser::ast::AccessExpr::Dot(e) if plain_root => {
                        text = pretty(e)?;
                    }
                    sqlparser::ast::AccessExpr::Dot(e) => {
                        text = format!("{text}.{}", pretty(e)?);
                    }
                    sqlparser::ast::AccessExpr::Subscript(sqlparser::ast::Subscript::Index {
                        index,
                    }) => {
                        text = format!("{text}[{}]", pretty(index)?);
                    }
                    _ => return None,
                }
            }
            text
        }
        Expr::TypedString(t) => t.value.value.clone().into_string()?,
        _ => return None,
    })
}

fn literal(v: &Value) -> Option<String> {
    Some(match v {
        Value::Number(n, _) => n.clone(),
        Value::SingleQuotedString(s)
        | Value::EscapedStringLiteral(s)
        | Value::NationalStringLiteral(s)
        | Value::DoubleQuotedString(s) => s.clone(),
        Value::Boolean(b) => b.to_string(),
        Value::Null => "NULL".to_string(),
        _ => return None,
    })
}

/// A type as Databricks names it in `CAST(… AS …)`.
fn type_name(t: &DataType) -> Option<String> {
    let text = t.to_string().to_uppercase();
    Some(match text.as_str() {
        "INT" | "INTEGER" | "INT4" => "INT".to_string(),
        "BIGINT" | "INT8" | "LONG" => "BIGINT".to_string(),
        "SMALLINT" | "INT2" | "SHORT" => "SMALLINT".to_string(),
        "TINYINT" | "BYTE" => "TINYINT".to_string(),
        "TEXT" | "STRING" | "VARCHAR" | "CHARACTER VARYING" => "STRING".to_string(),
        "DOUBLE" | "DOUBLE PRECISION" | "FLOAT8" => "DOUBLE".to_string(),
        "FLOAT" | "REAL" | "FLOAT4" => "FLOAT".to_string(),
        "BOOL" | "BOOLEAN" => "BOOLEAN".to_string(),
        "BYTEA" | "BINARY" => "BINARY".to_string(),
        other => other.replace("NUMERIC", "DECIMAL"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LakegresDialect;
    use sqlparser::parser::Parser;

    fn name(sql: &str) -> Option<String> {
        let dialect = LakegresDialect::default();
        let expr = Parser::new(&dialect)
            .try_with_sql(sql)
            .ok()?
            .parse_expr()
            .ok()?;
        pretty(&expr)
    }

    #[test]
    fn names_are_databricks() {
        assert_eq!(name("1").as_deref(), Some("1"));
        assert_eq!(name("'a'").as_deref(), Some("a"));
        assert_eq!(name("1 + 1").as_deref(), Some("(1 + 1)"));
        assert_eq!(name("count(*)").as_deref(), Some("count(1)"));
        assert_eq!(
            name("date_format(d, 'yyyy-MM-dd')").as_deref(),
            Some("date_format(d, yyyy-MM-dd)")
        );
        assert_eq!(name("CAST(x AS INT)").as_deref(), Some("CAST(x AS INT)"));
        assert_eq!(name("t.a").as_deref(), Some("a"));
        assert_eq!(name("-1").as_deref(), Some("-1"));
        assert_eq!(name("Upper(a)").as_deref(), Some("upper(a)"));
    }
}
