//! `SET`, `SHOW` a setting, `RESET`, `DISCARD`, `USE`: statements that only
//! change the session.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use lakegres_delta::DEFAULT_SCHEMA;
use sqlparser::ast::{self, Expr, Set, Use, Value};

use crate::error::{class, Error, Result};
use crate::output::{fixed, rows_output, CommandTag, Description, Output};
use crate::settings;
use crate::statement_context::StatementContext;
use crate::CATALOG_NAME;

/// Runs a statement that changes or shows the session's settings.
pub(crate) async fn run(cx: &StatementContext<'_>, statement: &ast::Statement) -> Result<Output> {
    use ast::Statement as S;
    match statement {
        S::Set(set) => cx.set(set),
        S::ShowVariable { variable } => cx.show_variable(variable),
        S::Reset(reset) => {
            let mut state = cx.state();
            match &reset.reset {
                ast::Reset::ALL => state.settings.reset_all(),
                ast::Reset::ConfigurationParameter(name) => state.settings.reset(&name.to_string()),
            }
            Ok(Output::Done(fixed("RESET")))
        }
        S::Discard { .. } => {
            cx.state().settings.reset_all();
            cx.state().temp_views.clear();
            cx.state().variables.clear();
            Ok(Output::Done(fixed("DISCARD ALL")))
        }
        S::Deallocate { .. } => Ok(Output::Done(fixed("DEALLOCATE"))),
        S::Use(u) => {
            let name = match u {
                Use::Schema(n) | Use::Database(n) | Use::Object(n) => n.to_string(),
                Use::Default => DEFAULT_SCHEMA.to_string(),
                // The warehouse is the one catalog, by its name or the
                // database the client connected to.
                Use::Catalog(n) => {
                    let name = crate::names::object_leaf(n);
                    let database = cx.database();
                    if name.eq_ignore_ascii_case(CATALOG_NAME)
                        || database.is_some_and(|d| d.eq_ignore_ascii_case(&name))
                    {
                        return Ok(Output::Done(fixed("USE")));
                    }
                    return Err(Error::analysis(
                        class::CATALOG_NOT_FOUND,
                        format!("catalog {name} does not exist: the warehouse is the one catalog, {CATALOG_NAME}"),
                    ));
                }
                other => return Err(Error::not_supported(other.to_string())),
            };
            cx.use_schema(&name).await?;
            Ok(Output::Done(fixed("USE")))
        }
        other => Err(Error::not_supported(format!("{other} as a cx statement"))),
    }
}

/// `SHOW name` answers one column named for the setting; the others none.
pub(crate) fn describe(statement: &ast::Statement) -> Description {
    match statement {
        ast::Statement::ShowVariable { variable } => Description {
            params: vec![],
            schema: Some(show_schema(&variable_name(variable))),
        },
        _ => Description {
            params: vec![],
            schema: None,
        },
    }
}

impl StatementContext<'_> {
    fn set(&self, set: &Set) -> Result<Output> {
        match set {
            Set::SingleAssignment {
                variable, values, ..
            } => {
                let name = variable.to_string();
                let is_default = values.len() == 1
                    && matches!(&values[0], Expr::Identifier(i) if i.value.eq_ignore_ascii_case("default"));
                if is_default {
                    self.state().settings.reset(&name);
                } else {
                    let value = values.iter().map(expr_text).collect::<Vec<_>>().join(", ");
                    self.apply_setting(&name, &value)?;
                }
            }
            Set::SetTimeZone { value, .. } => self.apply_setting("timezone", &expr_text(value))?,
            Set::SetNames { charset_name, .. } => {
                self.apply_setting("client_encoding", &charset_name.value)?
            }
            Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    self.apply_setting(&a.name.to_string(), &expr_text(&a.value))?;
                }
            }
            // Transaction modes and roles are accepted and have no effect:
            // every statement is its own serializable Delta commit.
            _ => {}
        }
        Ok(Output::Done(fixed("SET")))
    }

    pub(crate) fn apply_setting(&self, name: &str, value: &str) -> Result<()> {
        let key = settings::normalize_name(name);
        if key.starts_with("datafusion.") {
            let state = self.context().state_ref();
            let mut state = state.write();
            state
                .config_mut()
                .options_mut()
                .set(&key, value)
                .map_err(Error::DataFusion)?;
            return Ok(());
        }
        if key == "timezone" {
            let state = self.context().state_ref();
            let mut state = state.write();
            state.config_mut().options_mut().execution.time_zone = Some(value.to_string());
        }
        {
            let mut state = self.state();
            state.settings.set(&key, value)?;
            if crate::settings::REPORTED.contains(&key.as_str()) {
                if let Ok(now) = state.settings.get(&key) {
                    let name = crate::settings::display_name(&key).to_string();
                    state.reported.push((name, now));
                }
            }
        }
        if key == "search_path" {
            if let Some(first) = value
                .split(',')
                .map(|s| s.trim().trim_matches('"'))
                .find(|s| !s.is_empty() && *s != "$user" && *s != "pg_catalog")
            {
                let schema = lakegres_delta::normalize_schema(first)?;
                self.set_schema(&schema);
            }
        }
        Ok(())
    }

    async fn use_schema(&self, name: &str) -> Result<()> {
        let schema = lakegres_delta::normalize_schema(name)?;
        if !self.engine().catalog().schema_exists(&schema).await? {
            return Err(lakegres_delta::Error::SchemaNotFound { schema }.into());
        }
        self.set_schema(&schema);
        Ok(())
    }

    fn set_schema(&self, schema: &str) {
        self.state().schema = schema.to_string();
        let state = self.context().state_ref();
        let mut state = state.write();
        state.config_mut().options_mut().catalog.default_schema = schema.to_string();
    }

    fn show_variable(&self, variable: &[ast::Ident]) -> Result<Output> {
        let name = variable_name(variable);
        if name == "all" {
            let settings = self.settings();
            let (names, values): (Vec<String>, Vec<String>) = settings
                .all()
                .into_iter()
                .map(|(k, v)| (settings::display_name(&k).to_string(), v))
                .unzip();
            let schema = Arc::new(Schema::new(vec![
                Field::new("name", DataType::Utf8, false),
                Field::new("setting", DataType::Utf8, false),
            ]));
            let batch = RecordBatch::try_new(
                schema,
                vec![
                    Arc::new(StringArray::from(names)) as ArrayRef,
                    Arc::new(StringArray::from(values)) as ArrayRef,
                ],
            )
            .map_err(datafusion::error::DataFusionError::from)?;
            return Ok(rows_output(batch, CommandTag::Counted("SHOW")));
        }
        let value = self.state().settings.get(&name)?;
        let batch = RecordBatch::try_new(
            show_schema(&name),
            vec![Arc::new(StringArray::from(vec![value])) as ArrayRef],
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        Ok(rows_output(batch, CommandTag::Counted("SHOW")))
    }
}

/// The setting `SHOW` names. sqlparser gives `SHOW TIME ZONE` and `SHOW
/// lakegres.dml_result_rows` alike as a list of words; a list that is not a
/// Postgres parameter of several words is a dotted name.
fn variable_name(variable: &[ast::Ident]) -> String {
    let words: Vec<&str> = variable.iter().map(|i| i.value.as_str()).collect();
    let spaced = settings::normalize_name(&words.join(" "));
    if words.len() > 1 && !settings::is_postgres_parameter(&spaced) {
        settings::normalize_name(&words.join("."))
    } else {
        spaced
    }
}

fn show_schema(name: &str) -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        settings::display_name(name),
        DataType::Utf8,
        false,
    )]))
}

/// The text of a SET value: strings unquoted, names as written.
fn expr_text(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        Expr::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    }
}
