//! Rewrites of a statement before DataFusion plans it, for Databricks forms
//! DataFusion has no hook for:
//!
//! - result columns without an alias get Databricks' names ([`super::naming`]);
//! - generators in the select list and `LATERAL VIEW [OUTER]` become
//!   DataFusion's `unnest` ([`super::generator`]);
//! - `a RLIKE p` / `a REGEXP p` become `regexp_like(a, p)`;
//! - `count(DISTINCT a, b)` counts the distinct non-NULL tuples;
//! - `listagg|string_agg(x, s) WITHIN GROUP (ORDER BY …)` orders inside;
//! - `first(x, true)` / `last(x, true)` ignore NULLs;
//! - `decode(expr, search, result, …)` is the CASE it abbreviates;
//! - `like(s, p)`, `ilike(s, p)` and `LIKE ANY (…)` are the operators,
//!   `ceil(x, s)` / `floor(x, s)` our scaled rounding, `nvl` / `ifnull`
//!   `coalesce`, `array_agg` `collect_list` (outside catalog queries),
//!   `percentile_disc … WITHIN GROUP` our aggregate.
//!
//! Client catalog queries (they read `pg_catalog` or `information_schema`)
//! keep Postgres' column names: only the expression rewrites apply.

use std::ops::ControlFlow;

use sqlparser::ast::{
    DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArgumentClause,
    FunctionArguments, NullTreatment, Query, SelectItem, SetExpr, Statement, VisitMut, VisitorMut,
};
use sqlparser::parser::Parser;

use crate::LakegresDialect;

/// Scalar call forms planned by rewriting (no function of their name), with
/// what `DESCRIBE FUNCTION` says of them.
pub(crate) const REWRITTEN_SCALARS: &[(&str, &str)] = &[
    ("like", "like(str, pattern) - str LIKE pattern: true if str matches pattern (_ any character, % any characters)."),
    ("ilike", "ilike(str, pattern) - str ILIKE pattern: like, case-insensitively."),
    ("extract", "extract(field FROM source) - Returns the field (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND with its fraction …) of a date or timestamp."),
];

/// Applies the rewrites to a statement about to be planned.
pub fn rewrite(statement: &mut Statement) {
    let catalog = reads_catalog(statement);
    if catalog {
        postgres_subscripts(statement);
    } else {
        // Only a query's own result may repeat a name (the client sees it),
        // or the rows an INSERT writes by position; a table or view made
        // from the query may not.
        let result = matches!(statement, Statement::Query(_) | Statement::Insert(_));
        if let Some(query) = top_query(statement) {
            name_columns(query, result);
        }
    }
    if !catalog {
        fields_after_subscripts(statement);
    }
    let _ = statement.visit(&mut Expressions { catalog });
    let _ = statement.visit(&mut Selects);
}

/// `arr[i]` in a client's catalog query is Postgres' 1-based subscript
/// (`indkey[1]`), NULL when out of bounds.
fn postgres_subscripts(statement: &mut Statement) {
    let _ = sqlparser::ast::visit_expressions_mut(statement, |expr| {
        if let Expr::CompoundFieldAccess { root, access_chain } = expr {
            let all_indexes = access_chain.iter().all(|a| {
                matches!(
                    a,
                    sqlparser::ast::AccessExpr::Subscript(sqlparser::ast::Subscript::Index { .. })
                )
            });
            if all_indexes {
                let mut text = format!("({root})");
                for access in access_chain.iter() {
                    if let sqlparser::ast::AccessExpr::Subscript(
                        sqlparser::ast::Subscript::Index { index },
                    ) = access
                    {
                        text = format!("array_element({text}, {index})");
                    }
                }
                if let Some(new) = parse_expr(&text) {
                    *expr = new;
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// `m['k'].b`, `a[0].x.y`: a field of a subscripted value, which
/// DataFusion's planner does not take (it reads `.b` after a subscript
/// only as a string key); written as `get_field(m['k'], 'b')`.
fn fields_after_subscripts(statement: &mut Statement) {
    use sqlparser::ast::{AccessExpr, Subscript};
    let _ = sqlparser::ast::visit_expressions_mut(statement, |expr| {
        let Expr::CompoundFieldAccess { root, access_chain } = expr else {
            return ControlFlow::<()>::Continue(());
        };
        let dot_after_subscript = access_chain
            .iter()
            .skip_while(|a| !matches!(a, AccessExpr::Subscript(_)))
            .any(|a| matches!(a, AccessExpr::Dot(_)));
        if !dot_after_subscript {
            return ControlFlow::Continue(());
        }
        let mut text = format!("({root})");
        for access in access_chain.iter() {
            text = match access {
                AccessExpr::Subscript(Subscript::Index { index }) => format!("({text})[{index}]"),
                AccessExpr::Dot(Expr::Identifier(field)) => {
                    format!("get_field({text}, '{}')", field.value.replace('\'', "''"))
                }
                _ => return ControlFlow::Continue(()),
            };
        }
        if let Some(new) = parse_expr(&text) {
            *expr = new;
        }
        ControlFlow::Continue(())
    });
}

fn reads_catalog(statement: &Statement) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_relations(statement, |name| {
        found |= name.0.iter().any(|p| {
            p.as_ident().is_some_and(|i| {
                let v = i.value.to_lowercase();
                v == "pg_catalog" || v == "information_schema" || v.starts_with("pg_")
            })
        });
        ControlFlow::<()>::Continue(())
    });
    found
}

/// The query whose columns the client sees (or a CTAS / INSERT writes).
fn top_query(statement: &mut Statement) -> Option<&mut Query> {
    match statement {
        Statement::Query(q) => Some(q),
        Statement::CreateTable(c) => c.query.as_deref_mut(),
        Statement::Insert(i) => i.source.as_deref_mut(),
        Statement::CreateView(v) => Some(&mut v.query),
        _ => None,
    }
}

/// What follows a repeated result column name (`SELECT 1, 1`): DataFusion
/// refuses two columns of one name, so the second is `1` + this + its
/// position, and the server cuts the name here when it describes the
/// result to the client, which sees `1` twice, as on Databricks.
pub const REPEATED_NAME_MARK: char = '\u{1}';

/// Gives unnamed select items of the outermost SELECT (the first branch of
/// a set operation) their Databricks name; `result`: the statement is a
/// query whose result goes to the client, where a name may repeat.
fn name_columns(query: &mut Query, result: bool) {
    let mut body = query.body.as_mut();
    loop {
        match body {
            SetExpr::SetOperation { left, .. } => body = left.as_mut(),
            SetExpr::Query(q) => body = q.body.as_mut(),
            _ => break,
        }
    }
    let SetExpr::Select(select) = body else {
        return;
    };
    /// A plain column's name.
    fn column_name(expr: &Expr) -> Option<&str> {
        match expr {
            Expr::Identifier(i) => Some(&i.value),
            Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.as_str()),
            _ => None,
        }
    }
    let mut taken: Vec<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            SelectItem::UnnamedExpr(e) => column_name(e).map(str::to_string),
            _ => None,
        })
        .collect();
    let mut columns_seen: Vec<String> = Vec::new();
    // `name` for the item at `position`, marked if it repeats a name.
    let marked = |name: &str, position: usize| format!("{name}{REPEATED_NAME_MARK}{position}");
    for (position, item) in select.projection.iter_mut().enumerate() {
        let SelectItem::UnnamedExpr(expr) = item else {
            continue;
        };
        // Plain columns keep their names, but for a repeat in a result
        // (`SELECT x, x`); generators name theirs.
        if let Some(name) = column_name(expr).map(str::to_lowercase) {
            if result && columns_seen.contains(&name) {
                *item = SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias: sqlparser::ast::Ident::with_quote('"', marked(&name, position)),
                };
            }
            columns_seen.push(name);
            continue;
        }
        if let Expr::Function(f) = expr {
            let name = function_name(f);
            if super::generator::GENERATORS.iter().any(|(g, _)| *g == name) || name == "json_tuple"
            {
                continue;
            }
        }
        let Some(name) = super::naming::pretty(expr) else {
            continue;
        };
        // DataFusion refuses two columns of one name: a repeated one is
        // marked (see REPEATED_NAME_MARK), or left to DataFusion's name.
        let name = if taken.contains(&name) {
            if !result {
                continue;
            }
            marked(&name, position)
        } else {
            name
        };
        taken.push(name.clone());
        *item = SelectItem::ExprWithAlias {
            expr: expr.clone(),
            alias: sqlparser::ast::Ident::with_quote('"', name),
        };
    }
}

/// Parses `sql` as one expression of our dialect; `None` if it is not one.
pub fn parse_expr(sql: &str) -> Option<Expr> {
    let dialect = LakegresDialect::default();
    Parser::new(&dialect)
        .try_with_sql(sql)
        .ok()?
        .parse_expr()
        .ok()
}

/// The unnamed argument expressions of a call, if that is all it has.
pub(crate) fn plain_args(f: &sqlparser::ast::Function) -> Option<Vec<&Expr>> {
    let FunctionArguments::List(list) = &f.args else {
        return if matches!(f.args, FunctionArguments::None) {
            Some(vec![])
        } else {
            None
        };
    };
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect()
}

pub(crate) fn function_name(f: &sqlparser::ast::Function) -> String {
    f.name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_lowercase())
        .unwrap_or_default()
}

/// The expression rewrites; a client's catalog query keeps Postgres'
/// `array_agg`.
struct Expressions {
    catalog: bool,
}

impl VisitorMut for Expressions {
    type Break = ();

    /// A cast of an interval literal to a number counts its last field
    /// (`CAST(INTERVAL '1-2' YEAR TO MONTH AS INT)` is 14), read before the
    /// literal loses its fields below.
    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Cast {
            expr: inner,
            data_type,
            ..
        } = expr
        {
            let numeric = matches!(
                data_type,
                sqlparser::ast::DataType::TinyInt(_)
                    | sqlparser::ast::DataType::SmallInt(_)
                    | sqlparser::ast::DataType::Int(_)
                    | sqlparser::ast::DataType::Integer(_)
                    | sqlparser::ast::DataType::BigInt(_)
                    | sqlparser::ast::DataType::Decimal(_)
                    | sqlparser::ast::DataType::Dec(_)
                    | sqlparser::ast::DataType::Numeric(_)
            );
            if let (true, Expr::Interval(interval)) = (numeric, inner.as_ref()) {
                let unit = interval
                    .last_field
                    .as_ref()
                    .or(interval.leading_field.as_ref())
                    .map(|f| f.to_string());
                if let Some(unit) = unit {
                    if let Some(counted) = parse_expr(&format!(
                        "{}({inner}, '{unit}')",
                        super::interval_math::IN_UNITS
                    )) {
                        **inner = counted;
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = expr {
            if self.catalog && function_name(f) == "array_agg" {
                return ControlFlow::Continue(());
            }
        }
        if let Some(new) = rewrite_expr(expr) {
            *expr = new;
        }
        ControlFlow::Continue(())
    }
}

fn rewrite_expr(expr: &mut Expr) -> Option<Expr> {
    match expr {
        // `INTERVAL 1 DAY` is `INTERVAL '1' DAY`: DataFusion takes the
        // bare number in expressions but not in a window frame's bounds
        // (`RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND CURRENT ROW`).
        Expr::Interval(interval) => {
            // `INTERVAL -'-1' YEAR`: the sign joins the text.
            if let Expr::UnaryOp {
                op: sqlparser::ast::UnaryOperator::Minus,
                expr: inner,
            } = interval.value.as_ref()
            {
                if let Expr::Value(v) = inner.as_ref() {
                    if let sqlparser::ast::Value::SingleQuotedString(text) = &v.value {
                        let text = text.trim();
                        let negated = match text.strip_prefix('-') {
                            Some(positive) => positive.to_string(),
                            None => format!("-{text}"),
                        };
                        *interval.value =
                            Expr::value(sqlparser::ast::Value::SingleQuotedString(negated));
                    }
                }
            }
            if let Expr::Value(v) = interval.value.as_mut() {
                match &v.value {
                    sqlparser::ast::Value::Number(n, _) => {
                        v.value = sqlparser::ast::Value::SingleQuotedString(n.clone());
                    }
                    // Spark's blanks, signs and `interval` word (a range's
                    // text is only trimmed).
                    sqlparser::ast::Value::SingleQuotedString(text)
                        if interval.last_field.is_some() =>
                    {
                        v.value = sqlparser::ast::Value::SingleQuotedString(text.trim().into());
                    }
                    sqlparser::ast::Value::SingleQuotedString(text) => {
                        let with_units = interval.leading_field.is_none();
                        if let Some(normal) = super::interval_text::normalized(text, with_units) {
                            if with_units {
                                if let Some(reason) = super::interval_text::refused(&normal) {
                                    return refused("interval_literal", text, reason);
                                }
                            }
                            v.value = sqlparser::ast::Value::SingleQuotedString(normal);
                        }
                    }
                    _ => {}
                }
            }
            interval_with_range(interval);
            None
        }
        // `- INTERVAL '2 years 2 months'`: DataFusion negates only the
        // first unit; the text with each unit negated.
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Minus,
            expr: inner,
        } => {
            let Expr::Interval(interval) = inner.as_ref() else {
                return None;
            };
            let Expr::Value(v) = interval.value.as_ref() else {
                return None;
            };
            let sqlparser::ast::Value::SingleQuotedString(text) = &v.value else {
                return None;
            };
            if interval.leading_field.is_some() {
                return None;
            }
            let words: Vec<&str> = text.split_whitespace().collect();
            if words.len() < 4 || !words.len().is_multiple_of(2) {
                return None;
            }
            let mut negated = Vec::with_capacity(words.len());
            for pair in words.chunks(2) {
                let n = pair[0];
                if n.parse::<f64>().is_err() {
                    return None;
                }
                negated.push(match n.strip_prefix('-') {
                    Some(positive) => positive.to_string(),
                    None => format!("-{}", n.strip_prefix('+').unwrap_or(n)),
                });
                negated.push(pair[1].to_string());
            }
            let mut interval = interval.clone();
            interval.value = Box::new(Expr::value(sqlparser::ast::Value::SingleQuotedString(
                negated.join(" "),
            )));
            Some(Expr::Interval(interval))
        }
        // `CAST(x AS INTERVAL DAY TO SECOND)` (a type the parser reads as
        // `lakegres_interval_day_second`, see lakegres-sql's literals).
        Expr::Cast {
            expr: value,
            data_type: sqlparser::ast::DataType::Custom(name, modifiers),
            ..
        } if modifiers.is_empty()
            && name.0.len() == 1
            && name.0[0]
                .as_ident()
                .is_some_and(|i| i.value.starts_with(INTERVAL_TYPE)) =>
        {
            let ident = name.0[0].as_ident()?;
            let fields = ident.value.strip_prefix(INTERVAL_TYPE)?;
            let (from, to) = fields.split_once('_').unwrap_or((fields, fields));
            parse_expr(&format!(
                "{}({value}, '{from}', '{to}')",
                super::interval_math::TO_INTERVAL
            ))
        }
        // A number in scientific notation is a DOUBLE in Spark (`2.35E10`;
        // the parser read it as a DECIMAL of negative scale).
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(n, _) if n.contains(['e', 'E']) => {
                if n.parse::<f64>().is_ok_and(f64::is_infinite) {
                    return refused("numeric_literal", n, "DOUBLE");
                }
                parse_expr(&format!("CAST('{n}' AS DOUBLE)"))
            }
            _ => None,
        },
        // Spark's type names: `CAST(x AS LONG)`.
        Expr::Cast { data_type, .. } => {
            spark_type_name(data_type);
            None
        }
        // `acc.sum` in a lambda: a field of the parameter's struct.
        Expr::Lambda(lambda) => {
            let params: Vec<String> = match &lambda.params {
                sqlparser::ast::OneOrManyWithParens::One(p) => vec![p.name.value.to_lowercase()],
                sqlparser::ast::OneOrManyWithParens::Many(ps) => {
                    ps.iter().map(|p| p.name.value.to_lowercase()).collect()
                }
            };
            let _ = sqlparser::ast::visit_expressions_mut(lambda.body.as_mut(), |e| {
                if let Expr::CompoundIdentifier(parts) = e {
                    if parts.len() >= 2 && params.contains(&parts[0].value.to_lowercase()) {
                        let mut text = parts[0].value.clone();
                        for field in &parts[1..] {
                            text.push_str(&format!("['{}']", field.value.replace('\'', "''")));
                        }
                        if let Some(new) = parse_expr(&text) {
                            *e = new;
                        }
                    }
                }
                ControlFlow::<()>::Continue(())
            });
            None
        }
        // `from_json(…).a`: a field of a function's struct.
        Expr::CompoundFieldAccess { root, access_chain }
            if !matches!(
                root.as_ref(),
                Expr::Identifier(_) | Expr::CompoundIdentifier(_)
            ) =>
        {
            for access in access_chain.iter_mut() {
                if let sqlparser::ast::AccessExpr::Dot(Expr::Identifier(field)) = access {
                    *access =
                        sqlparser::ast::AccessExpr::Subscript(sqlparser::ast::Subscript::Index {
                            index: Expr::value(sqlparser::ast::Value::SingleQuotedString(
                                field.value.clone(),
                            )),
                        });
                }
            }
            None
        }
        // `ceil(x, 1)`: sqlparser reads a scale, DataFusion plans none.
        Expr::Ceil {
            expr,
            field: sqlparser::ast::CeilFloorKind::Scale(scale),
        } => parse_expr(&format!("lakegres_ceil({expr}, {scale})")),
        Expr::Floor {
            expr,
            field: sqlparser::ast::CeilFloorKind::Scale(scale),
        } => parse_expr(&format!("lakegres_floor({expr}, {scale})")),
        // The seconds with their fraction, as Databricks extracts them.
        Expr::Extract {
            field: sqlparser::ast::DateTimeField::Second | sqlparser::ast::DateTimeField::Seconds,
            expr,
            ..
        } => parse_expr(&format!("lakegres_seconds({expr})")),
        // `s LIKE ANY ('a%', 'b%')`: any of the patterns matches.
        Expr::Like {
            negated,
            any: true,
            expr,
            pattern,
            escape_char: None,
        } => like_any(expr, pattern, "LIKE", *negated),
        Expr::ILike {
            negated,
            any: true,
            expr,
            pattern,
            escape_char: None,
        } => like_any(expr, pattern, "ILIKE", *negated),
        Expr::RLike {
            negated,
            expr,
            pattern,
            ..
        } => parse_expr(&format!(
            "{}regexp_like({expr}, {pattern})",
            if *negated { "NOT " } else { "" }
        )),
        Expr::Function(f) => {
            let name = function_name(f);
            match name.as_str() {
                "count" => count_distinct_tuples(f),
                // `date_trunc(unit, d)` of a DATE (or a string): Databricks
                // and Postgres take it as a TIMESTAMP; DataFusion's
                // date_trunc takes timestamps only (Superset's time grains
                // send `DATE_TRUNC('day', day)` over DATE columns).
                "date_trunc" => {
                    let args = plain_args(f)?;
                    let [unit, value] = args.as_slice() else {
                        return None;
                    };
                    // Already a timestamp by a cast (ours, on a second pass).
                    if matches!(
                        value,
                        Expr::Cast {
                            data_type: sqlparser::ast::DataType::Timestamp(..),
                            ..
                        }
                    ) {
                        return None;
                    }
                    parse_expr(&format!("date_trunc({unit}, CAST({value} AS TIMESTAMP))"))
                }
                // `listagg(x)`: no delimiter.
                "listagg" | "string_agg" if f.within_group.is_empty() => {
                    let FunctionArguments::List(list) = &mut f.args else {
                        return None;
                    };
                    if list.args.len() == 1 {
                        list.args
                            .push(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(
                                sqlparser::ast::Value::SingleQuotedString(String::new()),
                            ))));
                    }
                    f.name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(
                        "string_agg",
                    )]);
                    None
                }
                "percentile_disc" if f.within_group.len() == 1 => {
                    let args = plain_args(f)?;
                    let [p] = args.as_slice() else {
                        return None;
                    };
                    let order = &f.within_group[0];
                    let descending = order.options.asc == Some(false);
                    let call = format!(
                        "lakegres_percentile_disc({}, {p}, {descending})",
                        order.expr
                    );
                    let Expr::Function(mut new) = parse_expr(&call)? else {
                        return None;
                    };
                    new.filter = f.filter.clone();
                    new.over = f.over.clone();
                    Some(Expr::Function(new))
                }
                "listagg" | "string_agg" if !f.within_group.is_empty() => {
                    let FunctionArguments::List(list) = &mut f.args else {
                        return None;
                    };
                    let order = std::mem::take(&mut f.within_group);
                    list.clauses.push(FunctionArgumentClause::OrderBy(order));
                    f.name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(
                        "string_agg",
                    )]);
                    if list.args.len() == 1 {
                        list.args
                            .push(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(
                                sqlparser::ast::Value::SingleQuotedString(String::new()),
                            ))));
                    }
                    None
                }
                "first" | "last" | "first_value" | "last_value" | "any_value" => {
                    ignore_nulls_argument(f);
                    let renamed = match name.as_str() {
                        "first" => "first_value",
                        "last" => "last_value",
                        _ => return None,
                    };
                    f.name =
                        sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(renamed)]);
                    None
                }
                _ if super::aggregate::REWRITTEN.iter().any(|(n, _)| *n == name) => {
                    super::aggregate::rewrite_call(&name, f)
                }
                "decode" => decode_case(f),
                // `floor(x, 1)`, as sqlparser reads it when not `Expr::Floor`.
                "ceil" | "ceiling" | "floor" if plain_args(f).is_some_and(|a| a.len() == 2) => {
                    let args = plain_args(f)?;
                    let helper = if name == "floor" {
                        "lakegres_floor"
                    } else {
                        "lakegres_ceil"
                    };
                    parse_expr(&format!("{helper}({}, {})", args[0], args[1]))
                }
                "date_part" | "datepart" => {
                    let args = plain_args(f)?;
                    let [Expr::Value(field), source] = args.as_slice() else {
                        return None;
                    };
                    let sqlparser::ast::Value::SingleQuotedString(field) = &field.value else {
                        return None;
                    };
                    matches!(
                        field.to_uppercase().as_str(),
                        "SECOND" | "SECONDS" | "S" | "SEC" | "SECS"
                    )
                    .then(|| parse_expr(&format!("lakegres_seconds({source})")))?
                }
                // The zipped structs' fields are named after the arguments.
                "arrays_zip" => {
                    let args = plain_args(f)?;
                    if args.is_empty() {
                        return None;
                    }
                    let names: Vec<String> = args
                        .iter()
                        .enumerate()
                        .map(|(k, a)| {
                            let name =
                                super::struct_::argument_name(a).unwrap_or_else(|| k.to_string());
                            format!("'{}'", name.replace('\'', "''"))
                        })
                        .collect();
                    let values: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                    parse_expr(&format!(
                        "lakegres_arrays_zip({}, {})",
                        names.join(", "),
                        values.join(", ")
                    ))
                }
                // Databricks' array_agg is collect_list (NULLs left out).
                "array_agg" => {
                    if let FunctionArguments::List(list) = &f.args {
                        if list.duplicate_treatment.is_none() && list.clauses.is_empty() {
                            f.name =
                                sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(
                                    "collect_list",
                                )]);
                            return None;
                        }
                    }
                    let args = plain_args(f)?;
                    let [x] = args.as_slice() else {
                        return None;
                    };
                    let keep = parse_expr(&format!("({x}) IS NOT NULL"))?;
                    f.filter = Some(Box::new(match f.filter.take() {
                        Some(old) => parse_expr(&format!("({old}) AND {keep}"))?,
                        None => keep,
                    }));
                    None
                }
                // `like(s, p)` / `ilike(s, p)`: the operators.
                "like" | "ilike" => {
                    let args = plain_args(f)?;
                    let [s, p] = args.as_slice() else {
                        return None;
                    };
                    let op = if name == "like" { "LIKE" } else { "ILIKE" };
                    parse_expr(&format!("(({s}) {op} ({p}))"))
                }
                // Databricks' nvl keeps the type of its arguments (DataFusion's
                // makes an ARRAY a STRING).
                "nvl" | "ifnull" if plain_args(f).is_some_and(|a| a.len() == 2) => {
                    f.name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(
                        "coalesce",
                    )]);
                    None
                }
                "struct" => super::struct_::named_fields(f),
                "map" if plain_args(f).is_some_and(|a| a.is_empty()) => {
                    f.name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(
                        "lakegres_map",
                    )]);
                    if let FunctionArguments::None = f.args {
                        f.args = FunctionArguments::List(sqlparser::ast::FunctionArgumentList {
                            duplicate_treatment: None,
                            args: vec![],
                            clauses: vec![],
                        });
                    }
                    None
                }
                "timestampadd" | "dateadd" | "date_add" | "timestampdiff" | "datediff"
                | "date_diff" | "timediff" => unit_as_string(f),
                // `grouping_id(a, b)`: the bits of `grouping(a)`, `grouping(b)`
                // (the first the highest), a BIGINT.
                "grouping_id" => {
                    let args = plain_args(f)?;
                    if args.is_empty() || f.over.is_some() {
                        return None;
                    }
                    let list: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                    parse_expr(&format!("CAST(grouping({}) AS BIGINT)", list.join(", ")))
                }
                // Spark's cast functions: `double(x)` is `CAST(x AS DOUBLE)`.
                _ if CAST_FUNCTIONS.iter().any(|(n, _)| *n == name) => {
                    let args = plain_args(f)?;
                    let [value] = args.as_slice() else {
                        return None;
                    };
                    let (_, type_name) = CAST_FUNCTIONS.iter().find(|(n, _)| *n == name)?;
                    parse_expr(&format!("CAST({value} AS {type_name})"))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The prefix of the type name an interval type with fields is read as
/// (`INTERVAL DAY TO SECOND`: `lakegres_interval_day_second`).
const INTERVAL_TYPE: &str = "lakegres_interval_";

/// Spark's functions named after a type, each a cast to it.
const CAST_FUNCTIONS: &[(&str, &str)] = &[
    ("boolean", "BOOLEAN"),
    ("tinyint", "TINYINT"),
    ("smallint", "SMALLINT"),
    ("int", "INT"),
    ("bigint", "BIGINT"),
    ("float", "FLOAT"),
    ("double", "DOUBLE"),
    ("decimal", "DECIMAL(10, 0)"),
    ("string", "STRING"),
    ("binary", "BINARY"),
];

/// `s [NOT] LIKE ANY (p1, p2 …)`: `s [NOT] LIKE p1 OR s [NOT] LIKE p2 …`.
fn like_any(expr: &Expr, pattern: &Expr, op: &str, negated: bool) -> Option<Expr> {
    let patterns: Vec<&Expr> = match pattern {
        Expr::Tuple(items) => items.iter().collect(),
        Expr::Nested(inner) => vec![inner.as_ref()],
        other => vec![other],
    };
    let not = if negated { "NOT " } else { "" };
    let tests: Vec<String> = patterns
        .iter()
        .map(|p| format!("({expr}) {not}{op} ({p})"))
        .collect();
    parse_expr(&format!("({})", tests.join(" OR ")))
}

/// The call raising the error Databricks raises on reading `kind` (see
/// `conditional.rs`' `lakegres_refuse`).
fn refused(kind: &str, a: &str, b: &str) -> Option<Expr> {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    parse_expr(&format!(
        "{}({}, {}, {})",
        super::conditional::REFUSE,
        quote(kind),
        quote(a),
        quote(b)
    ))
}

/// `dateadd(MONTH, 1, ts)`: the unit is a word, not a column; a string
/// (`dateadd('MONTH', …)`) is refused, as Databricks refuses it.
fn unit_as_string(f: &mut sqlparser::ast::Function) -> Option<Expr> {
    let name = function_name(f);
    let FunctionArguments::List(list) = &mut f.args else {
        return None;
    };
    if list.args.len() != 3 {
        return None;
    }
    if let FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) = &list.args[0] {
        if let sqlparser::ast::Value::SingleQuotedString(unit) = &v.value {
            return refused("datetime_unit", &name, unit);
        }
    }
    if let FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(unit))) = &list.args[0] {
        let text = unit.value.to_uppercase();
        list.args[0] = FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(
            sqlparser::ast::Value::SingleQuotedString(text),
        )));
    }
    None
}

/// `count(DISTINCT a, b)`: the distinct tuples with no NULL member.
fn count_distinct_tuples(f: &sqlparser::ast::Function) -> Option<Expr> {
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if !matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct))
        || list.args.len() < 2
    {
        return None;
    }
    let args = plain_args(f)?;
    let all_set = args
        .iter()
        .map(|a| format!("({a}) IS NOT NULL"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let fields = args
        .iter()
        .enumerate()
        .map(|(i, a)| format!("'c{i}', {a}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut call = f.clone();
    let inner = parse_expr(&format!(
        "CASE WHEN {all_set} THEN named_struct({fields}) END"
    ))?;
    if let FunctionArguments::List(list) = &mut call.args {
        list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(inner))];
    }
    Some(Expr::Function(call))
}

/// `first(x, true)`: `first_value(x) IGNORE NULLS`.
fn ignore_nulls_argument(f: &mut sqlparser::ast::Function) -> Option<()> {
    let FunctionArguments::List(list) = &mut f.args else {
        return None;
    };
    if list.args.len() != 2 {
        return None;
    }
    let ignore = match &list.args[1] {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) => {
            matches!(v.value, sqlparser::ast::Value::Boolean(true))
        }
        _ => return None,
    };
    list.args.truncate(1);
    if ignore {
        f.null_treatment = Some(NullTreatment::IgnoreNulls);
    }
    None
}

/// `decode(expr, s1, r1 [, s2, r2 …] [, default])`: NULL matches NULL.
fn decode_case(f: &sqlparser::ast::Function) -> Option<Expr> {
    let args = plain_args(f)?;
    if args.len() < 3 {
        return None;
    }
    let (key, rest) = args.split_first()?;
    let mut text = String::from("CASE");
    let mut pairs = rest.chunks_exact(2);
    for pair in pairs.by_ref() {
        text.push_str(&format!(
            " WHEN ({key}) IS NOT DISTINCT FROM ({}) THEN {}",
            pair[0], pair[1]
        ));
    }
    if let [default] = pairs.remainder() {
        text.push_str(&format!(" ELSE {default}"));
    }
    text.push_str(" END");
    parse_expr(&text)
}

struct Selects;

impl VisitorMut for Selects {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_mut() {
            group_by_modifiers(&mut select.group_by);
            named_windows_in_specs(select);
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        super::generator::rewrite_query(query);
        ControlFlow::Continue(())
    }
}

/// Spark's names of types sqlparser reads as unknown ones.
fn spark_type_name(data_type: &mut sqlparser::ast::DataType) {
    use sqlparser::ast::DataType;
    if let DataType::TimestampNtz(precision) = data_type {
        *data_type = DataType::Timestamp(*precision, sqlparser::ast::TimezoneInfo::WithoutTimeZone);
        return;
    }
    if let DataType::Binary(_) = data_type {
        *data_type = DataType::Bytea;
        return;
    }
    // `DECIMAL` alone is DECIMAL(10, 0) (DataFusion: (38, 10)).
    if let DataType::Dec(info) | DataType::Decimal(info) = data_type {
        *data_type = DataType::Decimal(match info {
            sqlparser::ast::ExactNumberInfo::None => {
                sqlparser::ast::ExactNumberInfo::PrecisionAndScale(10, 0)
            }
            other => *other,
        });
        return;
    }
    let DataType::Custom(name, modifiers) = data_type else {
        return;
    };
    if !modifiers.is_empty() || name.0.len() != 1 {
        return;
    }
    let Some(ident) = name.0[0].as_ident() else {
        return;
    };
    *data_type = match ident.value.to_ascii_lowercase().as_str() {
        "long" => DataType::BigInt(None),
        "short" => DataType::SmallInt(None),
        "byte" => DataType::TinyInt(None),
        "timestamp_ntz" => DataType::Timestamp(None, sqlparser::ast::TimezoneInfo::WithoutTimeZone),
        _ => return,
    };
}

/// `INTERVAL '2-3' YEAR TO MONTH`, `INTERVAL '1 2:03:04.5' DAY TO SECOND`
/// and the other ANSI ranges, as the interval text DataFusion reads
/// (`'2 years 3 months'`); a text that does not fit its range is left for
/// the planner to refuse.
fn interval_with_range(interval: &mut sqlparser::ast::Interval) {
    use sqlparser::ast::DateTimeField as F;
    let Some(leading) = &interval.leading_field else {
        return;
    };
    // One field of days to seconds (`INTERVAL '2562047788' HOUR`) as a
    // range of one, whose days and time are counted here.
    let last = interval.last_field.as_ref().unwrap_or(leading);
    let unit = |f: &F| -> Option<usize> {
        Some(match f {
            F::Year | F::Years => 0,
            F::Month | F::Months => 1,
            F::Day | F::Days => 2,
            F::Hour | F::Hours => 3,
            F::Minute | F::Minutes => 4,
            F::Second | F::Seconds => 5,
            _ => return None,
        })
    };
    let (Some(from), Some(to)) = (unit(leading), unit(last)) else {
        return;
    };
    // Year-month ranges stay within years and months, day-time ones within days to seconds.
    if from > to || (from == to && from < 2) || (from < 2) != (to < 2) {
        return;
    }
    let Expr::Value(v) = interval.value.as_ref() else {
        return;
    };
    let sqlparser::ast::Value::SingleQuotedString(text) = &v.value else {
        return;
    };
    let Some((negative, parts)) = super::interval_text::range_fields(text, from, to) else {
        return;
    };
    let sign = if negative { "-" } else { "" };
    let text = if from >= 2 {
        // Days and time in microseconds (DataFusion multiplies each field
        // into nanoseconds and overflows past 106751 days).
        let Some(micros) = day_time_micros(&parts, from) else {
            return;
        };
        let bound = if negative {
            i128::from(i64::MAX) + 1
        } else {
            i128::from(i64::MAX)
        };
        if micros > bound {
            return;
        }
        let (days, rest) = (micros / 86_400_000_000, micros % 86_400_000_000);
        format!("{sign}{days} days {sign}{rest} microseconds")
    } else {
        super::interval_text::named_fields(negative, &parts, from)
    };
    *interval.value = Expr::value(sqlparser::ast::Value::SingleQuotedString(text));
    interval.leading_field = None;
    interval.last_field = None;
    interval.leading_precision = None;
    interval.fractional_seconds_precision = None;
}

/// `OVER (w)` and `OVER (w ORDER BY …)`: a window specification that names
/// a `WINDOW w AS (…)` of the select, which DataFusion's planner would
/// drop (it reads only a bare `OVER w`); the named window's partitioning,
/// ordering and frame, with what the specification adds.
fn named_windows_in_specs(select: &mut sqlparser::ast::Select) {
    use sqlparser::ast::{NamedWindowExpr, WindowSpec, WindowType};
    if select.named_window.is_empty() {
        return;
    }
    let definitions: Vec<(String, WindowSpec)> = select
        .named_window
        .iter()
        .filter_map(|d| match &d.1 {
            NamedWindowExpr::WindowSpec(spec) => Some((d.0.value.to_lowercase(), spec.clone())),
            NamedWindowExpr::NamedWindow(_) => None,
        })
        .collect();
    let resolve = |spec: &WindowSpec| -> Option<WindowSpec> {
        let name = spec.window_name.as_ref()?.value.to_lowercase();
        let (_, named) = definitions.iter().find(|(n, _)| *n == name)?;
        Some(WindowSpec {
            window_name: None,
            partition_by: if spec.partition_by.is_empty() {
                named.partition_by.clone()
            } else {
                spec.partition_by.clone()
            },
            order_by: if spec.order_by.is_empty() {
                named.order_by.clone()
            } else {
                spec.order_by.clone()
            },
            window_frame: spec
                .window_frame
                .clone()
                .or_else(|| named.window_frame.clone()),
        })
    };
    for item in select.projection.iter_mut() {
        let _ = sqlparser::ast::visit_expressions_mut(item, |expr| {
            if let Expr::Function(f) = expr {
                if let Some(WindowType::WindowSpec(spec)) = &f.over {
                    if let Some(resolved) = resolve(spec) {
                        f.over = Some(WindowType::WindowSpec(resolved));
                    }
                }
            }
            ControlFlow::<()>::Continue(())
        });
    }
}

/// The microseconds of day-time fields from unit `from` (2 days … 5
/// seconds), the seconds with up to 6 digits of fraction (more are cut).
fn day_time_micros(parts: &[&str], from: usize) -> Option<i128> {
    const MICROS: [i128; 6] = [0, 0, 86_400_000_000, 3_600_000_000, 60_000_000, 1_000_000];
    let mut total: i128 = 0;
    for (k, part) in parts.iter().enumerate() {
        let unit = from + k;
        let micros = match part.split_once('.') {
            Some((whole, fraction)) if unit == 5 && !fraction.contains('.') => {
                let whole: i128 = if whole.is_empty() {
                    0
                } else {
                    whole.parse().ok()?
                };
                let digits: String = fraction.chars().chain("000000".chars()).take(6).collect();
                whole.checked_mul(MICROS[unit])? + digits.parse::<i128>().ok()?
            }
            Some(_) => return None,
            None => part.parse::<i128>().ok()?.checked_mul(MICROS[unit])?,
        };
        total = total.checked_add(micros)?;
    }
    Some(total)
}

/// Hive's forms of grouping, which DataFusion's planner would ignore:
/// `GROUP BY a, b GROUPING SETS (…)` groups by the sets alone (`a, b` name
/// the grouped columns), `GROUP BY a, b WITH ROLLUP | WITH CUBE` is
/// `ROLLUP (a, b)` / `CUBE (a, b)`.
fn group_by_modifiers(group_by: &mut sqlparser::ast::GroupByExpr) {
    use sqlparser::ast::{GroupByExpr, GroupByWithModifier};
    let GroupByExpr::Expressions(exprs, modifiers) = group_by else {
        return;
    };
    let mut rest = Vec::new();
    for modifier in std::mem::take(modifiers) {
        match modifier {
            GroupByWithModifier::GroupingSets(sets) => *exprs = vec![sets],
            GroupByWithModifier::Rollup => {
                *exprs = vec![Expr::Rollup(exprs.drain(..).map(|e| vec![e]).collect())]
            }
            GroupByWithModifier::Cube => {
                *exprs = vec![Expr::Cube(exprs.drain(..).map(|e| vec![e]).collect())]
            }
            other => rest.push(other),
        }
    }
    *modifiers = rest;
}
