//! Rewrites that let DataFusion plan what Postgres clients and Databricks
//! scripts send. Each is one [`Rule`] of [`RULES`]: what it rewrites, the
//! client that sends it, and when it can apply, found for all of them in
//! one walk of the statement ([`Seen`]); each has its test below.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName, SelectItem,
    SetExpr, Statement, TableFactor, Value, Visit, VisitMut, Visitor, VisitorMut,
};
use sqlparser::parser::Parser;

use crate::parser::LakegresDialect;

/// The hidden schema of Lakegres' own system views (`pg_stat_activity`).
pub(crate) const SYSTEM_SCHEMA: &str = "lakegres_system";

/// Catalog relations that are always empty here (no indexes, policies, triggers,
/// rules, inheritance, publications, extended statistics …): a client
/// query over them that DataFusion cannot plan has no rows anyway.
const EMPTY_CATALOG_TABLES: &[&str] = &[
    "pg_index",
    "pg_policy",
    "pg_trigger",
    "pg_rewrite",
    "pg_inherits",
    "pg_publication",
    "pg_publication_rel",
    "pg_publication_namespace",
    "pg_statistic_ext",
    "pg_statistic_ext_data",
    "pg_partitioned_table",
    "pg_foreign_table",
    "pg_foreign_server",
    "pg_user_mapping",
    "pg_event_trigger",
    "pg_extension",
    "pg_depend",
    "pg_shdescription",
];

/// For a query that reads one of [`EMPTY_CATALOG_TABLES`] and cannot be
/// planned: its answer, no rows, with a text column per select item.
pub(crate) fn empty_catalog_answer(statement: &Statement) -> Option<RecordBatch> {
    let Statement::Query(query) = statement else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    if !reads_empty_catalog(&statement.to_string()) {
        return None;
    }
    let mut fields = Vec::new();
    for item in &select.projection {
        let name = match item {
            SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
            SelectItem::UnnamedExpr(Expr::Identifier(i)) => i.value.clone(),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                parts.last().map(|i| i.value.clone()).unwrap_or_default()
            }
            SelectItem::UnnamedExpr(_) => "?column?".to_string(),
            _ => return None,
        };
        fields.push(Field::new(name, DataType::Utf8, true));
    }
    Some(RecordBatch::new_empty(Arc::new(Schema::new(fields))))
}

/// Whether a query's text reads one of [`EMPTY_CATALOG_TABLES`].
pub(crate) fn reads_empty_catalog(sql: &str) -> bool {
    let text = sql.to_lowercase();
    text.trim_start().starts_with("select")
        && EMPTY_CATALOG_TABLES.iter().any(|t| {
            text.contains(&format!("pg_catalog.{t} ")) || text.contains(&format!("from {t} "))
        })
}

/// One rewrite of what a client sends that DataFusion would not plan (or
/// would plan otherwise than the client expects), and when it can apply.
struct Rule {
    /// What it rewrites, and the client that sends it.
    what: &'static str,
    /// Whether the statement holds what the rewrite looks for; a superset
    /// of the rewrite's own test, so that skipping it changes nothing.
    applies: fn(&Seen) -> bool,
    rewrite: fn(&mut Statement),
}

/// The rewrites, in the order they run (a later one may read what an
/// earlier one wrote: `col_description` becomes a scalar subquery over
/// the catalog, which then aggregates).
const RULES: &[Rule] = &[
    Rule {
        what: "unqualified pg_* catalog tables (SQLAlchemy, pgjdbc, psql)",
        applies: |s| s.pg_relation,
        rewrite: catalog_search_path,
    },
    Rule {
        what: "joins on regproc columns (Npgsql's type catalog)",
        applies: |s| REGPROC.iter().any(|c| s.has(c)),
        rewrite: regproc_joins,
    },
    Rule {
        what: "boolean catalog columns compared with 't'/'f' (SQLAlchemy 1.4's get_indexes)",
        applies: |s| s.pg_relation && BOOLEAN_COLUMNS.iter().any(|c| s.has(c)),
        rewrite: boolean_literals,
    },
    Rule {
        what: "LIKE … ESCAPE '/' (SQLAlchemy)",
        applies: |s| s.like_escape,
        rewrite: like_escapes,
    },
    Rule {
        what: "generate_series in a select list (Postgres' set-returning call)",
        applies: |s| s.has("generate_series"),
        rewrite: set_returning_series,
    },
    Rule {
        what: "SIMILAR TO (Postgres' SQL-standard patterns)",
        applies: |s| s.similar_to,
        rewrite: similar_to,
    },
    Rule {
        what: "named table function arguments (Databricks' read_files(p, format => 'csv'))",
        applies: |s| s.named_table_args,
        rewrite: named_table_function_args,
    },
    Rule {
        what: "pg_class.reloptions (psql \\d+)",
        applies: |s| s.has("reloptions"),
        rewrite: no_storage_options,
    },
    Rule {
        what: "ARRAY(subquery) (psql \\d, \\du)",
        applies: |s| s.has("array"),
        rewrite: array_subqueries,
    },
    Rule {
        what: "col_description / obj_description (psql \\dt+, DBeaver)",
        applies: |s| s.has("col_description") || s.has("obj_description"),
        rewrite: descriptions,
    },
    Rule {
        what: "scalar subqueries over the catalog (SQLAlchemy's reflection, pgjdbc's type info)",
        applies: |s| s.pg_relation,
        rewrite: catalog_scalar_subqueries,
    },
    Rule {
        what: "Databricks' function syntax and result column names (every statement)",
        applies: |_| true,
        rewrite: lakegres_functions::rewrite::rewrite,
    },
];

/// Applies the rewrites that can apply to a statement about to be planned.
/// Most statements hold nothing a client-compatibility rewrite looks for,
/// and walk the tree once to find that out instead of once per rewrite.
pub(crate) fn rewrite(statement: &mut Statement) {
    let mut seen = Seen::of(statement);
    for (i, rule) in RULES.iter().enumerate() {
        if (rule.applies)(&seen) {
            tracing::trace!(rule = rule.what, "client-compatibility rewrite");
            (rule.rewrite)(statement);
            if i + 1 < RULES.len() {
                seen = Seen::of(statement);
            }
        }
    }
}

/// What a statement holds that a rewrite looks for, found in one walk.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// Every name part of its identifiers, functions and relations,
    /// lower-cased.
    names: HashSet<String>,
    /// It reads a relation named `pg_*` or one in `pg_catalog`.
    pg_relation: bool,
    /// A LIKE or ILIKE with an ESCAPE character.
    like_escape: bool,
    /// A table function called with a named argument.
    named_table_args: bool,
    /// A SIMILAR TO.
    similar_to: bool,
}

impl Seen {
    pub(crate) fn of(statement: &Statement) -> Self {
        struct Walk(Seen);
        impl Visitor for Walk {
            type Break = ();
            fn pre_visit_relation(&mut self, name: &ObjectName) -> ControlFlow<()> {
                for part in &name.0 {
                    if let Some(i) = part.as_ident() {
                        let lower = i.value.to_lowercase();
                        self.0.pg_relation |= lower.starts_with("pg_");
                        self.0.names.insert(lower);
                    }
                }
                ControlFlow::Continue(())
            }
            fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
                if let TableFactor::Table {
                    args: Some(args), ..
                } = factor
                {
                    self.0.named_table_args |= args.args.iter().any(|a| {
                        matches!(a, FunctionArg::Named { .. } | FunctionArg::ExprNamed { .. })
                    });
                }
                ControlFlow::Continue(())
            }
            fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
                let mut name = |i: &sqlparser::ast::Ident| {
                    self.0.names.insert(i.value.to_lowercase());
                };
                match expr {
                    Expr::Identifier(i) => name(i),
                    Expr::CompoundIdentifier(parts) => parts.iter().for_each(name),
                    Expr::Function(f) => {
                        f.name.0.iter().filter_map(|p| p.as_ident()).for_each(name)
                    }
                    Expr::Like {
                        escape_char: Some(_),
                        ..
                    }
                    | Expr::ILike {
                        escape_char: Some(_),
                        ..
                    } => self.0.like_escape = true,
                    Expr::SimilarTo { .. } => self.0.similar_to = true,
                    _ => {}
                }
                ControlFlow::Continue(())
            }
        }
        let mut walk = Walk(Seen::default());
        let _ = statement.visit(&mut walk);
        walk.0
    }

    /// Whether a name part (any case) occurs in the statement.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// What `information_schema.views` reads instead of DataFusion's (which
/// lists every table, with a `definition` column): the stored views, with
/// the standard's columns.
const VIEWS_QUERY: &str = "SELECT current_database() AS table_catalog, \
     schemaname AS table_schema, viewname AS table_name, definition AS view_definition, \
     'NONE' AS check_option, 'NO' AS is_updatable, 'NO' AS is_insertable_into, \
     'NO' AS is_trigger_updatable, 'NO' AS is_trigger_deletable, \
     'NO' AS is_trigger_insertable_into FROM pg_catalog.pg_views \
     WHERE lakegres_visible(schemaname, viewname)";

/// What `information_schema.tables` reads instead of DataFusion's own (the
/// alias keeps it from being rewritten again): the tables the user holds a
/// privilege on, as Postgres and Databricks list them.
const TABLES_QUERY: &str = "SELECT * FROM information_schema.tables AS lakegres_tables \
     WHERE lakegres_visible(table_schema, table_name)";

/// The alias of [`TABLES_QUERY`]'s read of DataFusion's listing.
const TABLES_ALIAS: &str = "lakegres_tables";

/// What `information_schema.columns` reads instead of DataFusion's (whose
/// `data_type` holds Arrow names such as `Int64` or `Decimal128(12, 2)`):
/// pg_attribute's columns with Postgres' type names and sizes, as dbt's
/// `get_columns_in_relation` and SQLAlchemy read them back into DDL. The
/// columns come from [`COLUMNS_SOURCE`] (and rows of its shape for the
/// session's temporary tables); the names and sizes follow from their type
/// OIDs and modifiers here, once.
const COLUMNS_SELECT: &str = "SELECT current_database() AS table_catalog, \
     a.nspname AS table_schema, a.relname AS table_name, a.attname AS column_name, \
     CAST(a.attnum AS INT) AS ordinal_position, CAST(NULL AS STRING) AS column_default, \
     CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END AS is_nullable, \
     CASE WHEN t.typcategory = 'A' THEN 'ARRAY' \
          ELSE format_type(a.atttypid, CAST(NULL AS INT)) END AS data_type, \
     CASE WHEN a.atttypid IN (1042, 1043) AND a.atttypmod > 4 \
          THEN CAST(a.atttypmod - 4 AS INT) END AS character_maximum_length, \
     CASE WHEN a.atttypid IN (1042, 1043) AND a.atttypmod > 4 \
          THEN CAST((a.atttypmod - 4) * 4 AS INT) \
          WHEN a.atttypid IN (25, 1042, 1043) THEN 1073741824 END AS character_octet_length, \
     CASE WHEN a.atttypid = 21 THEN 16 WHEN a.atttypid = 23 THEN 32 \
          WHEN a.atttypid = 20 THEN 64 WHEN a.atttypid = 700 THEN 24 \
          WHEN a.atttypid = 701 THEN 53 \
          WHEN a.atttypid = 1700 AND a.atttypmod >= 4 \
          THEN CAST((a.atttypmod - 4) div 65536 AS INT) END AS numeric_precision, \
     CASE WHEN a.atttypid IN (20, 21, 23, 700, 701) THEN 2 \
          WHEN a.atttypid = 1700 THEN 10 END AS numeric_precision_radix, \
     CASE WHEN a.atttypid IN (20, 21, 23) THEN 0 \
          WHEN a.atttypid = 1700 AND a.atttypmod >= 4 \
          THEN CAST((a.atttypmod - 4) % 65536 AS INT) END AS numeric_scale, \
     CASE WHEN a.atttypid = 1082 THEN 0 \
          WHEN a.atttypid IN (1083, 1114, 1184) THEN 6 END AS datetime_precision, \
     CAST(NULL AS STRING) AS interval_type, \
     current_database() AS udt_catalog, 'pg_catalog' AS udt_schema, \
     t.typname AS udt_name, 'NO' AS is_identity, 'NEVER' AS is_generated, \
     'YES' AS is_updatable";

/// The warehouse's columns as pg_attribute lists them: schema, relation,
/// name, position, NOT NULL, type OID, type modifier.
const COLUMNS_SOURCE: &str = "SELECT n.nspname, c.relname, a.attname, a.attnum, \
     a.attnotnull, a.atttypid, a.atttypmod \
     FROM pg_catalog.pg_attribute a \
     JOIN pg_catalog.pg_class c ON a.attrelid = c.oid \
     JOIN pg_catalog.pg_namespace n ON c.relnamespace = n.oid \
     WHERE a.attnum > 0 AND c.relkind IN ('r', 'v', 'p')";

/// [`COLUMNS_SELECT`] over [`COLUMNS_SOURCE`] and `more_columns` (`UNION
/// ALL SELECT …` of the source's shape).
fn columns_query(more_columns: &str) -> String {
    format!(
        "{COLUMNS_SELECT} FROM ({COLUMNS_SOURCE}{more_columns}) \
         AS a (nspname, relname, attname, attnum, attnotnull, atttypid, atttypmod) \
         LEFT JOIN pg_catalog.pg_type t ON a.atttypid = t.oid \
         WHERE lakegres_visible(a.nspname, a.relname)"
    )
}

/// What `pg_database` reads instead of datafusion-pg-catalog's (which lists
/// the catalog `lakegres` and `postgres`): this warehouse under the name the
/// client connected with, as psql's `\l` and Superset show it. Its own
/// read of pg_database carries the alias [`DATABASE_ALIAS`], which the
/// rewrite leaves alone.
const DATABASE_QUERY: &str = "SELECT oid, \
     CASE WHEN datname = 'lakegres' THEN current_database() ELSE datname END AS datname, \
     datdba, encoding, datlocprovider, datcollate, datctype, datistemplate, datallowconn, \
     datconnlimit, datlastsysoid, datfrozenxid, datminmxid, dattablespace, daticulocale, \
     daticurules, datacl FROM pg_catalog.pg_database AS lakegres_pg_database \
     WHERE datname = 'lakegres' OR datname <> current_database()";

const DATABASE_ALIAS: &str = "lakegres_pg_database";

/// A name's parts, lower case.
fn lower_parts(name: &sqlparser::ast::ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(|i| i.value.to_lowercase())
                .unwrap_or_default()
        })
        .collect()
}

/// `information_schema.tables` as [`TABLES_QUERY`], `information_schema.views` as [`VIEWS_QUERY`] (SQLAlchemy's and dbt's
/// view listings read it), `information_schema.columns` as
/// [`columns_query`] (dbt's column listing, BI tools' field lists) and
/// `pg_database` as [`DATABASE_QUERY`]. The derived queries read
/// `pg_catalog.*` by full name, so they are not rewritten again.
/// `more_columns` gives rows to add to the columns listing (the session's
/// temporary tables), asked for only when the statement reads it.
pub(crate) fn information_schema_relations(
    statement: &mut Statement,
    more_columns: impl Fn() -> String,
) {
    let which = |name: &sqlparser::ast::ObjectName| {
        let words = lower_parts(name);
        let (schema, relation) = match words.as_slice() {
            [r] => ("", r.as_str()),
            [s, r] | [_, s, r] => (s.as_str(), r.as_str()),
            _ => return None,
        };
        match (schema, relation) {
            ("information_schema", "views") => Some(("views", Some(VIEWS_QUERY))),
            ("information_schema", "tables") => Some(("tables", Some(TABLES_QUERY))),
            ("information_schema", "columns") => Some(("columns", None)),
            ("" | "pg_catalog", "pg_database") => Some(("pg_database", Some(DATABASE_QUERY))),
            _ => None,
        }
    };
    crate::parser::each_table_factor(statement, |factor| {
        let sqlparser::ast::TableFactor::Table { name, alias, .. } = factor else {
            return;
        };
        if alias
            .as_ref()
            .is_some_and(|a| a.name.value == DATABASE_ALIAS || a.name.value == TABLES_ALIAS)
        {
            return;
        }
        let Some((relation, sql)) = which(name) else {
            return;
        };
        let sql = match sql {
            Some(fixed) => std::borrow::Cow::Borrowed(fixed),
            None => std::borrow::Cow::Owned(columns_query(&more_columns())),
        };
        let Ok(Some(crate::parser::Statement::Sql(query))) =
            crate::parser::parse_sql(&sql).map(|mut s| s.pop())
        else {
            return;
        };
        let Statement::Query(query) = *query else {
            return;
        };
        let alias = alias.take().or_else(|| {
            Some(sqlparser::ast::TableAlias {
                explicit: true,
                name: sqlparser::ast::Ident::new(relation),
                columns: vec![],
                at: None,
            })
        });
        *factor = sqlparser::ast::TableFactor::Derived {
            lateral: false,
            subquery: query,
            alias,
            sample: None,
        };
    });
}

/// `'pg_class'::regclass` as `'pg_catalog.pg_class'::regclass`: Postgres
/// searches pg_catalog first, datafusion-pg-catalog only the current schema
/// (pgjdbc's `getTables` joins table comments on `'pg_class'::regclass`).
pub(crate) fn catalog_regclass_names(statement: &mut Statement) {
    let _ = sqlparser::ast::visit_expressions_mut(statement, |expr| {
        regproc_as_name(expr);
        if let Some((name, "regclass")) = reg_cast_literal(expr) {
            if name.starts_with("pg_") && !name.contains('.') {
                *name = format!("pg_catalog.{name}");
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// `'s.t'::regclass` of a table or view of the warehouse as its OID
/// (`oid_of` knows it), which the crate cannot find: clients write
/// `WHERE attrelid = 't'::regclass`.
pub(crate) fn user_regclass(statement: &mut Statement, oid_of: impl Fn(&str) -> Option<i32>) {
    let _ = sqlparser::ast::visit_expressions_mut(statement, |expr| {
        let oid = match reg_cast_literal(expr) {
            Some((name, "regclass")) if !name.starts_with("pg_") => oid_of(name),
            _ => None,
        };
        if let Some(oid) = oid {
            *expr = Expr::Value(Value::Number(oid.to_string(), false).into());
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// `typinput = 'pg_catalog.array_in'::regproc` as `typinput = 'array_in'`:
/// pg_type holds function names there (pgjdbc's type cache compares them).
fn regproc_as_name(expr: &mut Expr) {
    let Expr::BinaryOp { left, op, right } = expr else {
        return;
    };
    let column = match left.as_ref() {
        Expr::Identifier(i) => &i.value,
        Expr::CompoundIdentifier(parts) => match parts.last() {
            Some(i) => &i.value,
            None => return,
        },
        _ => return,
    };
    if !matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq)
        || !column.to_lowercase().starts_with("typ")
    {
        return;
    }
    if let Some((name, "regproc")) = reg_cast_literal(right) {
        let bare = name.rsplit('.').next().unwrap_or(name).to_string();
        **right = Expr::Value(Value::SingleQuotedString(bare).into());
    }
}

/// The string of `'name'::regclass` / `'name'::regproc`, and which of the two.
fn reg_cast_literal(expr: &mut Expr) -> Option<(&mut String, &'static str)> {
    let Expr::Cast {
        expr: inner,
        data_type,
        ..
    } = expr
    else {
        return None;
    };
    let type_name = data_type.to_string().to_lowercase();
    let kind = ["regclass", "regproc"]
        .into_iter()
        .find(|k| type_name.ends_with(k))?;
    match inner.as_mut() {
        Expr::Value(v) => match &mut v.value {
            Value::SingleQuotedString(name) => Some((name, kind)),
            _ => None,
        },
        _ => None,
    }
}

/// `col_description(rel, n)` and `obj_description(oid[, catalog])` as
/// lookups in pg_description, which holds our tables' comments (a scalar
/// function cannot read the catalog).
fn descriptions(statement: &mut Statement) {
    let _ = sqlparser::ast::visit_expressions_mut(statement, |expr| {
        if let Some(lookup) = description_lookup(expr) {
            *expr = lookup;
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

fn description_lookup(expr: &Expr) -> Option<Expr> {
    let (f, column) = match call_of(expr, "col_description") {
        Some(f) => (f, true),
        None => (call_of(expr, "obj_description")?, false),
    };
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let args: Vec<String> = list.args.iter().map(ToString::to_string).collect();
    let sub = match (column, args.as_slice()) {
        (true, [object, number]) => format!("({object}) AND objsubid = ({number})"),
        (false, [object] | [object, _]) => format!("({object}) AND objsubid = 0"),
        _ => return None,
    };
    parse_expr(&format!(
        "(SELECT description FROM pg_catalog.pg_description WHERE objoid = {sub})"
    ))
}

/// Catalog tables that have no rows in this server (no column defaults,
/// sequences, inheritance).
const NEVER_ROWS: &[&str] = &[
    "pg_attrdef",
    "pg_sequence",
    "pg_inherits",
    "pg_partitioned_table",
];

/// Aggregates DataFusion knows; a scalar subquery that calls one already
/// returns one row.
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
    "first_value",
    "last_value",
    "json_agg",
];

/// In catalog queries, `(SELECT x FROM … WHERE <correlated>)` as
/// `(SELECT first_value(x) FROM …)`: DataFusion decorrelates a scalar
/// subquery only when it aggregates, and drivers' catalog queries
/// (SQLAlchemy's column reflection, pgjdbc's type info) rely on Postgres'
/// "at most one row" instead. Over the catalog the subqueries do return at
/// most one row, so the answer is the same.
fn catalog_scalar_subqueries(statement: &mut Statement) {
    let mut reads_catalog = false;
    let _ = sqlparser::ast::visit_relations(statement, |name| {
        reads_catalog |= name.0.len() > 1
            && name.0[0]
                .as_ident()
                .is_some_and(|i| i.value.eq_ignore_ascii_case("pg_catalog"));
        std::ops::ControlFlow::<()>::Continue(())
    });
    if !reads_catalog {
        return;
    }
    let _ = sqlparser::ast::visit_expressions_mut(statement, |expr| {
        if let Expr::Subquery(query) = expr {
            if let Some(answer) = one_row_subquery(query) {
                *expr = answer;
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// Makes a plain scalar subquery aggregate its one value; returns NULL for
/// one over a table that never has rows, which DataFusion cannot always
/// plan (SQLAlchemy's column defaults and identity options, inside CASE
/// next to outer joins).
fn one_row_subquery(query: &mut sqlparser::ast::Query) -> Option<Expr> {
    if query.order_by.is_some() || query.limit_clause.is_some() {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let plain = select.projection.len() == 1
        && select.having.is_none()
        && matches!(select.group_by, sqlparser::ast::GroupByExpr::Expressions(ref e, _) if e.is_empty());
    if !plain {
        return None;
    }
    let (value, alias) = match &select.projection[0] {
        SelectItem::UnnamedExpr(e) => (e, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.clone())),
        _ => return None,
    };
    let text = value.to_string().to_lowercase();
    if AGGREGATES.iter().any(|a| text.contains(&format!("{a}("))) {
        return None;
    }
    let reads_only_empty = !select.from.is_empty()
        && select.from.iter().all(|t| {
            t.joins.is_empty()
                && matches!(&t.relation, TableFactor::Table { name, .. }
                if name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| {
                    NEVER_ROWS.contains(&i.value.to_lowercase().as_str())
                }))
        });
    if reads_only_empty {
        return Some(Expr::Value(Value::Null.into()));
    }
    let first = parse_expr(&format!("first_value({value})"))?;
    select.projection[0] = match alias {
        Some(alias) => SelectItem::ExprWithAlias { expr: first, alias },
        None => SelectItem::UnnamedExpr(first),
    };
    None
}

/// `pg_type` as `pg_catalog.pg_type`: Postgres searches pg_catalog first
/// for unqualified names, and drivers (SQLAlchemy …) rely on it. Table
/// functions go the other way: DataFusion knows `pg_get_keywords()`, not
/// `pg_catalog.pg_get_keywords()`.
fn catalog_search_path(statement: &mut Statement) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn pre_visit_table_factor(
            &mut self,
            factor: &mut TableFactor,
        ) -> std::ops::ControlFlow<Self::Break> {
            if let TableFactor::Table { name, args, .. } = factor {
                let parts = lower_parts(name);
                let activity = matches!(parts.as_slice(), [v] | [_, v] if v == "pg_stat_activity")
                    && matches!(
                        parts.first().map(String::as_str),
                        Some("pg_catalog") | Some("pg_stat_activity")
                    );
                if activity && args.is_none() {
                    *name = sqlparser::ast::ObjectName::from(vec![
                        sqlparser::ast::Ident::new(SYSTEM_SCHEMA),
                        sqlparser::ast::Ident::new("pg_stat_activity"),
                    ]);
                    return std::ops::ControlFlow::Continue(());
                }
                match (parts.as_slice(), args.is_some()) {
                    ([schema, _], true) if schema == "pg_catalog" => {
                        name.0.remove(0);
                    }
                    ([only], false) if only.starts_with("pg_") => {
                        let quoted = name.0[0]
                            .as_ident()
                            .is_some_and(|i| i.quote_style.is_some());
                        if !quoted {
                            name.0.insert(
                                0,
                                sqlparser::ast::ObjectNamePart::Identifier("pg_catalog".into()),
                            );
                        }
                    }
                    _ => {}
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite);
}

/// pg_type's columns of type `regproc`.
const REGPROC: &[&str] = &[
    "typreceive",
    "typinput",
    "typoutput",
    "typsend",
    "typmodin",
    "typmodout",
];

/// `proc.oid = typ.typreceive`: datafusion-pg-catalog keeps `regproc`
/// columns (`typreceive`, `typinput` …) as function names, so such joins
/// compare the name (Npgsql loads its type catalog with one).
fn regproc_joins(statement: &mut Statement) {
    fn last(e: &Expr) -> Option<String> {
        match e {
            Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.to_lowercase()),
            Expr::Identifier(i) => Some(i.value.to_lowercase()),
            _ => None,
        }
    }
    fn to_proname(e: &mut Expr) {
        if let Expr::CompoundIdentifier(parts) = e {
            if let Some(l) = parts.last_mut() {
                l.value = "proname".into();
            }
        }
    }
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> std::ops::ControlFlow<Self::Break> {
            if let Expr::BinaryOp {
                left,
                op: sqlparser::ast::BinaryOperator::Eq,
                right,
            } = expr
            {
                let (l, r) = (last(left), last(right));
                let is_regproc =
                    |c: &Option<String>| c.as_deref().is_some_and(|c| REGPROC.contains(&c));
                if l.as_deref() == Some("oid") && is_regproc(&r) {
                    to_proname(left);
                } else if r.as_deref() == Some("oid") && is_regproc(&l) {
                    to_proname(right);
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite);
}

/// Boolean columns of pg_catalog that clients compare with a string
/// literal (`ix.indisprimary = 'f'`), which Postgres reads as a boolean
/// and DataFusion refuses to compare.
const BOOLEAN_COLUMNS: &[&str] = &[
    "indisprimary",
    "indisunique",
    "indisclustered",
    "indisvalid",
    "indisexclusion",
    "indimmediate",
    "attnotnull",
    "attisdropped",
    "atthasdef",
    "attislocal",
    "relhasindex",
    "relisshared",
    "relhasrules",
    "relhastriggers",
    "relhassubclass",
    "relrowsecurity",
    "relispartition",
    "condeferrable",
    "condeferred",
    "convalidated",
    "datistemplate",
    "datallowconn",
    "rolsuper",
    "rolcanlogin",
    "typisdefined",
    "typnotnull",
    "proisstrict",
    "proretset",
];

/// `col = 'f'` as `col = false` where `col` is one of [`BOOLEAN_COLUMNS`]
/// and the literal one Postgres reads as a boolean.
fn boolean_literals(statement: &mut Statement) {
    fn boolean(e: &Expr) -> Option<bool> {
        let Expr::Value(v) = e else { return None };
        let Value::SingleQuotedString(text) = &v.value else {
            return None;
        };
        match text.to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => Some(true),
            "f" | "false" | "n" | "no" | "off" | "0" => Some(false),
            _ => None,
        }
    }
    fn is_boolean_column(e: &Expr) -> bool {
        let name = match e {
            Expr::Identifier(i) => &i.value,
            Expr::CompoundIdentifier(parts) => match parts.last() {
                Some(i) => &i.value,
                None => return false,
            },
            _ => return false,
        };
        BOOLEAN_COLUMNS.contains(&name.to_ascii_lowercase().as_str())
    }
    let _ = sqlparser::ast::visit_expressions_mut(statement, |expr| {
        if let Expr::BinaryOp {
            left,
            op: sqlparser::ast::BinaryOperator::Eq | sqlparser::ast::BinaryOperator::NotEq,
            right,
        } = expr
        {
            if is_boolean_column(left) {
                if let Some(b) = boolean(right) {
                    **right = Expr::Value(Value::Boolean(b).into());
                }
            } else if is_boolean_column(right) {
                if let Some(b) = boolean(left) {
                    **left = Expr::Value(Value::Boolean(b).into());
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// `x LIKE p ESCAPE '/'`: DataFusion knows only the backslash, so the
/// pattern's escape character becomes one (SQLAlchemy escapes with `/`).
fn like_escapes(statement: &mut Statement) {
    let _ = sqlparser::ast::visit_expressions_mut(statement, |expr| {
        if let Expr::Like {
            pattern,
            escape_char: escape @ Some(_),
            ..
        }
        | Expr::ILike {
            pattern,
            escape_char: escape @ Some(_),
            ..
        } = expr
        {
            let c = match escape.as_ref().map(|v| &v.value) {
                Some(Value::SingleQuotedString(c)) if c != "\\" && c.chars().count() == 1 => {
                    c.clone()
                }
                _ => return std::ops::ControlFlow::<()>::Continue(()),
            };
            let text = format!(
                "replace(replace(({pattern}), '\\', '\\\\'), '{}', '\\')",
                c.replace('\'', "''")
            );
            if let Some(rewritten) = parse_expr(&text) {
                **pattern = rewritten;
                *escape = None;
            }
        }
        std::ops::ControlFlow::Continue(())
    });
}

/// `pg_class.reloptions` (storage parameters, which Delta tables do not
/// have here; datafusion-pg-catalog lacks the column): psql `\d+` reads it.
fn no_storage_options(statement: &mut Statement) {
    let typed_null = parse_expr("CAST(NULL AS TEXT[])").unwrap_or(Expr::value(Value::Null));
    struct Rewrite(Expr);
    impl VisitorMut for Rewrite {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> std::ops::ControlFlow<Self::Break> {
            let named = match expr {
                Expr::CompoundIdentifier(parts) => parts.last(),
                Expr::Identifier(i) => Some(&*i),
                _ => None,
            };
            if named.is_some_and(|i| i.value.eq_ignore_ascii_case("reloptions")) {
                *expr = self.0.clone();
            }
            std::ops::ControlFlow::Continue(())
        }

        /// `unnest(t.reloptions) x` in FROM: no rows.
        fn pre_visit_table_factor(
            &mut self,
            factor: &mut TableFactor,
        ) -> std::ops::ControlFlow<Self::Break> {
            let TableFactor::Table {
                name,
                args: Some(args),
                alias,
                ..
            } = factor
            else {
                return std::ops::ControlFlow::Continue(());
            };
            let is_unnest = name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .is_some_and(|i| i.value.eq_ignore_ascii_case("unnest"));
            let of_options = args
                .args
                .iter()
                .any(|a| a.to_string().to_lowercase().contains("reloptions"));
            if is_unnest && of_options {
                let column = alias
                    .as_ref()
                    .map(|a| a.name.value.clone())
                    .unwrap_or_else(|| "unnest".into());
                let dialect = LakegresDialect::default();
                let sql = format!("SELECT * FROM (SELECT CAST(NULL AS TEXT) AS \"{column}\" WHERE false) AS \"{column}\"");
                if let Ok(Statement::Query(q)) = Parser::new(&dialect)
                    .try_with_sql(&sql)
                    .and_then(|mut p| p.parse_statement())
                {
                    if let SetExpr::Select(select) = q.body.as_ref() {
                        if let Some(from) = select.from.first() {
                            *factor = from.relation.clone();
                        }
                    }
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite(typed_null));
}

/// An SQL expression written as text, parsed in our dialect.
fn parse_expr(text: &str) -> Option<Expr> {
    let dialect = LakegresDialect::default();
    Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .ok()
}

/// The function call `expr` is, if it calls `name` (in any schema, any case).
fn call_of<'a>(expr: &'a Expr, name: &str) -> Option<&'a sqlparser::ast::Function> {
    let Expr::Function(f) = expr else {
        return None;
    };
    f.name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .is_some_and(|i| i.value.eq_ignore_ascii_case(name))
        .then_some(f)
}

/// `current_setting('name')` as the session's value, a literal (NULL for
/// an unknown name, which Postgres reports as an error).
pub(crate) fn current_settings(statement: &mut Statement, get: impl Fn(&str) -> Option<String>) {
    struct Rewrite<F>(F);
    impl<F: Fn(&str) -> Option<String>> VisitorMut for Rewrite<F> {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> std::ops::ControlFlow<Self::Break> {
            let Some(f) = call_of(expr, "current_setting") else {
                return std::ops::ControlFlow::Continue(());
            };
            let FunctionArguments::List(list) = &f.args else {
                return std::ops::ControlFlow::Continue(());
            };
            let name = match list.args.first() {
                Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) => match &v.value
                {
                    Value::SingleQuotedString(s) => Some(s.clone()),
                    _ => None,
                },
                _ => None,
            };
            if let Some(name) = name {
                *expr = match (self.0)(&name) {
                    Some(value) => Expr::value(Value::SingleQuotedString(value)),
                    None => Expr::value(Value::Null),
                };
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite(get));
}

/// The SQL functions whose answer is the session's: its user, schema and
/// database.
pub(crate) const SESSION_FUNCTIONS: [&str; 6] = [
    "current_user",
    "session_user",
    "current_role",
    "current_schema",
    "current_database",
    "current_catalog",
];

/// Those of [`SESSION_FUNCTIONS`] Postgres spells without parentheses and
/// Databricks with (`current_user()`).
pub(crate) const BARE_FUNCTIONS: [&str; 4] = [
    "current_user",
    "session_user",
    "current_role",
    "current_catalog",
];

/// Each of [`SESSION_FUNCTIONS`] (`current_user`, `current_schema()` …) as
/// the session's answer, a literal `value_of` gives; in a select list the
/// column keeps the function's name, as in Postgres.
pub(crate) fn session_functions(statement: &mut Statement, value_of: impl Fn(&str) -> String) {
    fn session_function(expr: &Expr) -> Option<String> {
        let name = match expr {
            Expr::Identifier(i) if i.quote_style.is_none() => i.value.to_lowercase(),
            Expr::Function(f) => match (&f.args, f.name.0.as_slice()) {
                (FunctionArguments::None, [part]) => part.as_ident()?.value.to_lowercase(),
                (FunctionArguments::List(list), [part]) if list.args.is_empty() => {
                    part.as_ident()?.value.to_lowercase()
                }
                (FunctionArguments::List(list), [schema, part])
                    if list.args.is_empty()
                        && schema.as_ident()?.value.eq_ignore_ascii_case("pg_catalog") =>
                {
                    part.as_ident()?.value.to_lowercase()
                }
                _ => return None,
            },
            _ => return None,
        };
        SESSION_FUNCTIONS.contains(&name.as_str()).then_some(name)
    }
    struct Rewrite<F>(F);
    impl<F: Fn(&str) -> String> VisitorMut for Rewrite<F> {
        type Break = ();
        fn pre_visit_query(
            &mut self,
            query: &mut sqlparser::ast::Query,
        ) -> std::ops::ControlFlow<Self::Break> {
            keep_item_names(query, |expr| {
                let name = session_function(expr)?;
                Some((
                    Expr::value(Value::SingleQuotedString((self.0)(&name))),
                    name,
                ))
            });
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, expr: &mut Expr) -> std::ops::ControlFlow<Self::Break> {
            if let Some(name) = session_function(expr) {
                *expr = Expr::value(Value::SingleQuotedString((self.0)(&name)));
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite(value_of));
}

/// Each unnamed select-list item of `query` that `named` answers for, as
/// the expression it gives named as it says: in a select list a rewritten
/// function's column keeps the function's name, as in Postgres.
fn keep_item_names(
    query: &mut sqlparser::ast::Query,
    mut named: impl FnMut(&Expr) -> Option<(Expr, String)>,
) {
    if let SetExpr::Select(select) = query.body.as_mut() {
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(expr) = item {
                if let Some((expr, name)) = named(expr) {
                    *item = SelectItem::ExprWithAlias {
                        expr,
                        alias: sqlparser::ast::Ident::with_quote('"', name),
                    };
                }
            }
        }
    }
}

/// `pg_table_is_visible(oid)` as whether `oid` is one of `visible` (the
/// tables and views of the session's schema, the one schema its
/// search_path names) or a system catalog's (pg_catalog is always on the
/// path, and its OIDs are below the first user OID). datafusion-pg-catalog
/// answers true for every relation, which made SQLAlchemy's `has_table`
/// find a table of another schema, and psql's `\dt` list every schema.
pub(crate) fn table_is_visible(statement: &mut Statement, visible: &[i32], first_user_oid: i32) {
    fn argument(expr: &Expr) -> Option<Expr> {
        let Expr::Function(f) = expr else {
            return None;
        };
        let name = match f.name.0.as_slice() {
            [part] => part.as_ident()?,
            [schema, part] if schema.as_ident()?.value.eq_ignore_ascii_case("pg_catalog") => {
                part.as_ident()?
            }
            _ => return None,
        };
        if !name.value.eq_ignore_ascii_case("pg_table_is_visible") {
            return None;
        }
        let FunctionArguments::List(list) = &f.args else {
            return None;
        };
        match list.args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] => Some(arg.clone()),
            _ => None,
        }
    }
    struct Rewrite<'a>(&'a [i32], i32);
    impl VisitorMut for Rewrite<'_> {
        type Break = ();
        fn pre_visit_query(
            &mut self,
            query: &mut sqlparser::ast::Query,
        ) -> std::ops::ControlFlow<Self::Break> {
            keep_item_names(query, |expr| {
                argument(expr).map(|_| (expr.clone(), "pg_table_is_visible".to_string()))
            });
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, expr: &mut Expr) -> std::ops::ControlFlow<Self::Break> {
            if let Some(oid) = argument(expr) {
                let number = |n: i32| Expr::value(Value::Number(n.to_string(), false));
                let system = Expr::BinaryOp {
                    left: Box::new(Expr::Nested(Box::new(oid.clone()))),
                    op: sqlparser::ast::BinaryOperator::Lt,
                    right: Box::new(number(self.1)),
                };
                *expr = Expr::Nested(Box::new(if self.0.is_empty() {
                    system
                } else {
                    Expr::BinaryOp {
                        left: Box::new(system),
                        op: sqlparser::ast::BinaryOperator::Or,
                        right: Box::new(Expr::InList {
                            expr: Box::new(Expr::Nested(Box::new(oid))),
                            list: self.0.iter().map(|&n| number(n)).collect(),
                            negated: false,
                        }),
                    }
                }));
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite(visible, first_user_oid));
}

/// `SELECT generate_series(a, b [, step])`: a row per value, as Postgres'
/// set-returning function gives them in a select list (DataFusion's
/// function returns the values as one array), in a column named
/// `generate_series`. Only a call that is a whole select-list item.
fn set_returning_series(statement: &mut Statement) {
    fn series(expr: &Expr) -> bool {
        let Expr::Function(f) = expr else {
            return false;
        };
        match f.name.0.as_slice() {
            [part] => part
                .as_ident()
                .is_some_and(|i| i.value.eq_ignore_ascii_case("generate_series")),
            _ => false,
        }
    }
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn pre_visit_query(
            &mut self,
            query: &mut sqlparser::ast::Query,
        ) -> ControlFlow<Self::Break> {
            keep_item_names(query, |expr| {
                series(expr).then(|| (unnest(expr.clone()), "generate_series".to_string()))
            });
            if let SetExpr::Select(select) = query.body.as_mut() {
                for item in &mut select.projection {
                    if let SelectItem::ExprWithAlias { expr, .. } = item {
                        if series(expr) {
                            *expr = unnest(expr.clone());
                        }
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    fn unnest(expr: Expr) -> Expr {
        Expr::Function(sqlparser::ast::Function {
            name: ObjectName::from(vec![sqlparser::ast::Ident::new("unnest")]),
            uses_odbc_syntax: false,
            parameters: FunctionArguments::None,
            args: FunctionArguments::List(sqlparser::ast::FunctionArgumentList {
                duplicate_treatment: None,
                args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(expr))],
                clauses: vec![],
            }),
            filter: None,
            null_treatment: None,
            over: None,
            within_group: vec![],
        })
    }
    let _ = statement.visit(&mut Rewrite);
}

/// `x SIMILAR TO 'pattern'` as the regular expression match it means in
/// Postgres: the whole string, `%` any text, `_` any character, `.` a dot
/// (DataFusion read the pattern as a regular expression as it is, so
/// `'abc' SIMILAR TO 'a%'` was false). A pattern that is not a literal is
/// left as it is.
fn similar_to(statement: &mut Statement) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<Self::Break> {
            let Expr::SimilarTo {
                negated,
                expr: value,
                pattern,
                escape_char,
            } = expr
            else {
                return ControlFlow::Continue(());
            };
            let Expr::Value(v) = pattern.as_ref() else {
                return ControlFlow::Continue(());
            };
            let Value::SingleQuotedString(text) = &v.value else {
                return ControlFlow::Continue(());
            };
            let escape = match escape_char.as_ref().map(|v| &v.value) {
                None => Some('\\'),
                Some(Value::SingleQuotedString(e)) => {
                    let mut chars = e.chars();
                    match (chars.next(), chars.next()) {
                        (first, None) => first,
                        _ => return ControlFlow::Continue(()),
                    }
                }
                Some(_) => return ControlFlow::Continue(()),
            };
            let regex = similar_to_regex(text, escape);
            *expr = Expr::BinaryOp {
                left: Box::new(Expr::Nested(value.clone())),
                op: if *negated {
                    BinaryOperator::PGRegexNotMatch
                } else {
                    BinaryOperator::PGRegexMatch
                },
                right: Box::new(Expr::value(Value::SingleQuotedString(regex))),
            };
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite);
}

/// The regular expression of a SIMILAR TO pattern (Postgres'
/// `similar_to_escape`): anchored, `%` `.*`, `_` `.`, the escape character
/// making the next one literal, `.` `^` `$` literal; `| * + ? { } ( ) [ ]`
/// keep their meaning.
fn similar_to_regex(pattern: &str, escape: Option<char>) -> String {
    let mut regex = String::from("^(?:");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            if let Some(next) = chars.next() {
                regex.push_str(&regex_syntax_escape(next));
            }
            continue;
        }
        match c {
            '%' => regex.push_str(".*"),
            '_' => regex.push('.'),
            '.' | '^' | '$' | '\\' => {
                regex.push('\\');
                regex.push(c);
            }
            other => regex.push(other),
        }
    }
    regex.push_str(")$");
    regex
}

/// A character as a regular expression that matches only it.
fn regex_syntax_escape(c: char) -> String {
    if c.is_ascii_punctuation() {
        format!("\\{c}")
    } else {
        c.to_string()
    }
}

/// `read_files(p, format => 'csv')` as `read_files(p, 'format', 'csv')`:
/// DataFusion's table functions take positional arguments only.
fn named_table_function_args(statement: &mut Statement) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn pre_visit_table_factor(
            &mut self,
            factor: &mut TableFactor,
        ) -> std::ops::ControlFlow<Self::Break> {
            if let TableFactor::Table {
                args: Some(args), ..
            } = factor
            {
                let mut positional = Vec::with_capacity(args.args.len());
                for arg in args.args.drain(..) {
                    match arg {
                        FunctionArg::Named { name, arg, .. }
                        | FunctionArg::ExprNamed {
                            name: Expr::Identifier(name),
                            arg,
                            ..
                        } => {
                            positional.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(
                                Expr::value(Value::SingleQuotedString(name.value)),
                            )));
                            positional.push(FunctionArg::Unnamed(arg));
                        }
                        other => positional.push(other),
                    }
                }
                args.args = positional;
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite);
}

/// `ARRAY(SELECT x …)` as `(SELECT array_agg(v) FROM (SELECT x …) AS a(v))`.
fn array_subqueries(statement: &mut Statement) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> std::ops::ControlFlow<Self::Break> {
            let Some(f) = call_of(expr, "array") else {
                return std::ops::ControlFlow::Continue(());
            };
            let FunctionArguments::Subquery(query) = &f.args else {
                return std::ops::ControlFlow::Continue(());
            };
            // A plain one-column SELECT aggregates in place, which keeps any
            // reference to the outer query working; anything else becomes a
            // derived table.
            let simple = match query.body.as_ref() {
                SetExpr::Select(select)
                    if select.projection.len() == 1
                        && query.order_by.is_none()
                        && query.limit_clause.is_none()
                        && matches!(select.group_by, sqlparser::ast::GroupByExpr::Expressions(ref e, _) if e.is_empty()) =>
                {
                    match &select.projection[0] {
                        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                            let mut select = select.clone();
                            select.projection = vec![SelectItem::UnnamedExpr(Expr::Identifier(
                                "lakegres_value".into(),
                            ))];
                            Some((e.clone(), select))
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            let text = match simple {
                Some((value, select)) => format!("({})", select)
                    .replace("lakegres_value", &format!("array_agg({value})")),
                None => format!(
                    "(SELECT array_agg(lakegres_v) FROM ({query}) AS lakegres_array(lakegres_v))"
                ),
            };
            if let Some(parsed) = parse_expr(&text) {
                *expr = parsed;
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite);
}

#[cfg(test)]
mod tests {
    #[test]
    fn similar_to_patterns_are_anchored_regular_expressions() {
        use super::similar_to_regex;
        assert_eq!(similar_to_regex("a%", Some('\\')), "^(?:a.*)$");
        assert_eq!(similar_to_regex("a_c.d", Some('\\')), "^(?:a.c\\.d)$");
        assert_eq!(similar_to_regex("(b|c)%", None), "^(?:(b|c).*)$");
        assert_eq!(similar_to_regex("100#%", Some('#')), "^(?:100\\%)$");
    }
    use super::*;

    fn parse(sql: &str) -> Statement {
        crate::parser::parse_sql(sql)
            .ok()
            .and_then(|mut s| match s.pop() {
                Some(crate::parser::Statement::Sql(s)) => Some(*s),
                _ => None,
            })
            .unwrap_or_else(|| panic!("not a sqlparser statement: {sql}"))
    }

    fn rewritten(sql: &str) -> String {
        let mut statement = parse(sql);
        rewrite(&mut statement);
        statement.to_string()
    }

    /// Each rule on what its client sends, exactly.
    const CASES: &[(&str, &str)] = &[
        // SQLAlchemy, pgjdbc, psql: unqualified catalog tables.
        (
            "SELECT typname FROM pg_type WHERE oid = 23",
            "SELECT typname FROM pg_catalog.pg_type WHERE oid = 23",
        ),
        // Npgsql: a join on a regproc column compares the function's name.
        (
            "SELECT p.proname FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_type t ON p.oid = t.typreceive",
            "SELECT p.proname FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_type t ON p.proname = t.typreceive",
        ),
        // SQLAlchemy: LIKE … ESCAPE '/'.
        (
            "SELECT name FROM t WHERE name LIKE 'a/_%' ESCAPE '/'",
            r"SELECT name FROM t WHERE name LIKE replace(replace(('a/_%'), '\', '\\'), '/', '\')",
        ),
        // Databricks: read_files with named options.
        (
            "SELECT * FROM read_files('/x', format => 'csv')",
            "SELECT * FROM read_files('/x', 'format', 'csv')",
        ),
        // psql \d+: storage options.
        (
            "SELECT c.reloptions FROM pg_catalog.pg_class c",
            "SELECT NULL FROM pg_catalog.pg_class c",
        ),
        // psql \du: ARRAY(subquery).
        (
            "SELECT ARRAY(SELECT rolname FROM pg_catalog.pg_roles) AS r",
            "SELECT (SELECT array_agg(rolname) FROM pg_catalog.pg_roles) AS r",
        ),
        // psql \dt+: a comment, then the subquery rule on what it wrote.
        (
            "SELECT col_description(16384, 1)",
            "SELECT (SELECT first_value(description) FROM pg_catalog.pg_description WHERE objoid = (16384) AND objsubid = (1))",
        ),
        // SQLAlchemy's column reflection: a correlated scalar subquery.
        (
            "SELECT (SELECT typname FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid) FROM pg_catalog.pg_attribute a",
            "SELECT (SELECT first_value(typname) FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid) FROM pg_catalog.pg_attribute a",
        ),
        // Any statement: Databricks' result column names.
        (
            "SELECT a + 1 FROM sales.orders WHERE region = 'eu'",
            r#"SELECT a + 1 AS "(a + 1)" FROM sales.orders WHERE region = 'eu'"#,
        ),
    ];

    #[test]
    fn each_rule_rewrites_what_its_client_sends() {
        for (sql, expected) in CASES {
            assert_eq!(&rewritten(sql), expected, "{sql}");
        }
    }

    #[test]
    fn skipping_the_rules_that_cannot_apply_changes_nothing() {
        for (sql, _) in CASES {
            let mut every_rule = parse(sql);
            for rule in RULES {
                (rule.rewrite)(&mut every_rule);
            }
            assert_eq!(rewritten(sql), every_rule.to_string(), "{sql}");
        }
    }

    #[test]
    fn a_users_statement_runs_only_the_databricks_rule() {
        let seen = Seen::of(&parse(
            "INSERT INTO sales.orders SELECT id, upper(region) FROM staging WHERE note LIKE 'a%'",
        ));
        let applying: Vec<&str> = RULES
            .iter()
            .filter(|r| (r.applies)(&seen))
            .map(|r| r.what)
            .collect();
        assert_eq!(applying, [RULES[RULES.len() - 1].what]);
    }

    #[test]
    fn seen_finds_names_in_table_function_arguments_and_relations() {
        let seen = Seen::of(&parse(
            "SELECT x FROM pg_catalog.pg_class c, unnest(c.reloptions) AS x",
        ));
        assert!(seen.pg_relation, "{seen:?}");
        assert!(seen.has("reloptions"), "{seen:?}");
        assert!(!seen.like_escape && !seen.named_table_args);
    }
}
