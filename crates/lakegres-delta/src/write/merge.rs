//! MERGE INTO as one commit: the SQL layer resolves the statement (names,
//! `*`, generated columns, Databricks' checks) into a [`MergeSpec`]; this
//! module runs it and reports the counts Databricks returns. It is run by
//! marking the target rows it changes ([`marked`]), except a MERGE WITH
//! SCHEMA EVOLUTION or one into a table that records its change data feed
//! (without deletion vectors), which delta-rs' `MergeBuilder` runs.

use std::sync::Arc;

use datafusion::common::DFSchema;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::Expr;
use datafusion::prelude::DataFrame;
use deltalake::operations::merge::{DeleteBuilder, InsertBuilder, MergeBuilder, UpdateBuilder};
use deltalake::table::config::TablePropertiesExt;

use crate::catalog::TableName;
use crate::error::{Error, Result};

mod marked;

/// Which rows a clause applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeClauseKind {
    Matched,
    NotMatchedByTarget,
    NotMatchedBySource,
}

/// What a clause does: expressions over the target's and the source's
/// columns (qualified by their aliases), keyed by the target's declared
/// column names.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeClauseAction {
    Update(Vec<(String, Expr)>),
    Delete,
    Insert(Vec<(String, Expr)>),
}

/// One `WHEN …` clause, in statement order (the first that matches wins).
#[derive(Debug, Clone, PartialEq)]
pub struct MergeClause {
    pub kind: MergeClauseKind,
    pub condition: Option<Expr>,
    pub action: MergeClauseAction,
}

/// A resolved MERGE.
pub struct MergeSpec {
    pub name: TableName,
    /// The target, at the version the statement read.
    pub table: crate::Table,
    pub target_alias: String,
    pub source: DataFrame,
    pub source_alias: String,
    /// The merge condition, over both aliases' columns.
    pub on: Expr,
    pub clauses: Vec<MergeClause>,
    /// `MERGE WITH SCHEMA EVOLUTION`.
    pub schema_evolution: bool,
}

/// What a MERGE did, as Databricks reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeCounts {
    pub updated: u64,
    pub deleted: u64,
    pub inserted: u64,
}

/// Runs `spec` as one commit; the counts, and the table at the version
/// committed, which is left in the session's [`crate::CommitSink`] slot.
pub async fn merge(spec: MergeSpec, state: SessionState) -> Result<MergeCounts> {
    let MergeSpec {
        name,
        table,
        target_alias,
        source,
        source_alias,
        on,
        clauses,
        schema_evolution,
    } = spec;
    let table = table.into_delta();
    let snapshot = table
        .snapshot()
        .map_err(|e| Error::delta("merging into", name.to_string(), e))?
        .snapshot()
        .clone();
    let read = Some(snapshot.version());
    let committed = crate::CommitSink::of(state.config());
    let clauses = with_defaults(&snapshot, clauses, &state)?;
    let (clauses, state, identity) = with_identity(&name, &snapshot, clauses, state)?;
    let dv = crate::write::deletion_vectors::enabled(&snapshot);
    if !dv {
        refuse_shallow("MERGE", &snapshot, &name.to_string())?;
    }
    if marks_rows_at(&snapshot, schema_evolution) {
        let files = if dv {
            marked::MarkedFiles::DeletionVectors
        } else {
            marked::MarkedFiles::Rewritten
        };
        let (counts, merged) = marked::run(
            marked::MarkedMerge {
                name: &name,
                table: &table,
                snapshot: &snapshot,
                target_alias: &target_alias,
                source,
                source_alias: &source_alias,
                on: &on,
                clauses: &clauses,
                identity,
                files,
            },
            state,
        )
        .await?;
        if let (Some(committed), Some(merged)) = (committed, merged) {
            committed.finish(&name, read, merged).await;
        }
        return Ok(counts);
    }
    let checked = snapshot.clone();
    let check_state = state.clone();
    let delta = |e| Error::delta("merging into", name.to_string(), e);
    let properties = match identity {
        Some(identity) => crate::commit_properties().with_actions_at_commit(identity),
        None => crate::commit_properties(),
    };
    let mut builder = MergeBuilder::new(table.log_store(), Some(snapshot), on, source)
        .with_source_alias(&source_alias)
        .with_target_alias(&target_alias)
        .with_session_state(Arc::new(state))
        .with_commit_properties(properties)
        .with_writer_properties(crate::writer_properties())
        .with_merge_schema(schema_evolution);
    for clause in clauses {
        let condition = clause.condition;
        let sets = match &clause.action {
            MergeClauseAction::Update(sets) | MergeClauseAction::Insert(sets) => sets.clone(),
            MergeClauseAction::Delete => Vec::new(),
        };
        let update = |mut u: UpdateBuilder| {
            if let Some(c) = &condition {
                u = u.predicate(c.clone());
            }
            for (c, v) in &sets {
                u = u.update(c.as_str(), v.clone());
            }
            u
        };
        let delete = |mut d: DeleteBuilder| {
            if let Some(c) = &condition {
                d = d.predicate(c.clone());
            }
            d
        };
        let insert = |mut i: InsertBuilder| {
            if let Some(c) = &condition {
                i = i.predicate(c.clone());
            }
            for (c, v) in &sets {
                i = i.set(c.as_str(), v.clone());
            }
            i
        };
        use MergeClauseAction as A;
        use MergeClauseKind as K;
        builder = match (clause.kind, &clause.action) {
            (K::Matched, A::Delete) => builder.when_matched_delete(delete),
            (K::Matched, _) => builder.when_matched_update(update),
            (K::NotMatchedBySource, A::Delete) => builder.when_not_matched_by_source_delete(delete),
            (K::NotMatchedBySource, _) => builder.when_not_matched_by_source_update(update),
            (K::NotMatchedByTarget, _) => builder.when_not_matched_insert(insert),
        }
        .map_err(delta)?;
    }
    let (merged, metrics) = builder.await.map_err(|e| {
        // delta-rs' constraint check names no constraint: tell which.
        // (It arrives as InvalidData or wrapped in a generic error.)
        let message = e.to_string();
        if message.contains("Invalid data found") {
            if let Some(explained) =
                crate::table::checks::explain_invalid_data(&checked, &message, &check_state)
            {
                return explained;
            }
        }
        delta(e)
    })?;
    if let Some(committed) = committed {
        committed.finish(&name, read, merged).await;
    }
    Ok(MergeCounts {
        updated: metrics.num_target_rows_updated as u64,
        deleted: metrics.num_target_rows_deleted as u64,
        inserted: metrics.num_target_rows_inserted as u64,
    })
}

/// Whether a MERGE into the table at `snapshot` runs by marking the rows it
/// changes ([`marked`]): every MERGE but one that changes the schema, or
/// one that writes the change data feed on a table without deletion
/// vectors (delta-rs' MERGE writes its `_change_data` files). That route
/// fails a target row matched by two source rows whatever the clause
/// conditions, as Databricks does; delta-rs' counts only the source rows a
/// clause's condition takes.
pub fn marks_rows(table: &crate::Table, schema_evolution: bool) -> bool {
    table
        .delta()
        .snapshot()
        .is_ok_and(|state| marks_rows_at(state.snapshot(), schema_evolution))
}

pub(crate) fn marks_rows_at(
    snapshot: &deltalake::kernel::EagerSnapshot,
    schema_evolution: bool,
) -> bool {
    let dv = crate::write::deletion_vectors::enabled(snapshot);
    !schema_evolution && (dv || !snapshot.table_properties().enable_change_data_feed())
}

/// The INSERT clauses of a MERGE with each column they leave out that has
/// a DEFAULT set to it (the table's metadata keeps the default as SQL).
fn with_defaults(
    snapshot: &deltalake::kernel::EagerSnapshot,
    mut clauses: Vec<MergeClause>,
    state: &SessionState,
) -> Result<Vec<MergeClause>> {
    for field in snapshot.schema().fields() {
        let Some(text) = crate::table::types::column_default(field) else {
            continue;
        };
        let default = state
            .create_logical_expr(&text, &DFSchema::empty())
            .map_err(|e| Error::DataFusion {
                what: "reading a column's default",
                source: Box::new(e),
            })?;
        for clause in &mut clauses {
            if let MergeClauseAction::Insert(sets) = &mut clause.action {
                if !sets
                    .iter()
                    .any(|(c, _)| c.eq_ignore_ascii_case(field.name()))
                {
                    sets.push((field.name().clone(), default.clone()));
                }
            }
        }
    }
    Ok(clauses)
}

/// A MERGE into a table with identity columns: an UPDATE clause may not set
/// one, an INSERT clause may not give a `GENERATED ALWAYS` one a value and
/// gets new values for one it leaves out (functions registered in the
/// MERGE's session), and the commit carries the new high-water marks (the
/// actions returned).
fn with_identity(
    name: &TableName,
    snapshot: &deltalake::kernel::EagerSnapshot,
    mut clauses: Vec<MergeClause>,
    mut state: SessionState,
) -> Result<(
    Vec<MergeClause>,
    SessionState,
    Option<deltalake::kernel::transaction::ActionsAtCommit>,
)> {
    let names: Vec<String> = snapshot
        .schema()
        .fields()
        .map(|f| f.name().clone())
        .collect();
    let Some(allocator) =
        crate::table::identity::Allocator::new(&name.to_string(), snapshot, &names)
    else {
        return Ok((clauses, state, None));
    };
    let udfs = allocator.udfs();
    for clause in &mut clauses {
        match &mut clause.action {
            MergeClauseAction::Update(sets) => {
                if let Some((column, _)) = sets
                    .iter()
                    .find(|(c, _)| udfs.iter().any(|(n, _)| n.eq_ignore_ascii_case(c)))
                {
                    return Err(crate::table::identity::update_refused(column));
                }
            }
            MergeClauseAction::Insert(sets) => {
                for (column, udf) in &udfs {
                    let given = sets
                        .iter()
                        .find(|(c, _)| c.eq_ignore_ascii_case(column))
                        .is_some_and(|(_, value)| !is_null_literal(value));
                    if given && allocator.always(column) {
                        return Err(crate::table::identity::explicit_value_refused(column));
                    }
                    if !given {
                        sets.retain(|(c, _)| !c.eq_ignore_ascii_case(column));
                        sets.push((column.clone(), udf.call(vec![])));
                    }
                }
            }
            MergeClauseAction::Delete => {}
        }
    }
    for (_, udf) in udfs {
        datafusion::execution::FunctionRegistry::register_udf(&mut state, Arc::new(udf)).map_err(
            |e| Error::DataFusion {
                what: "registering identity functions",
                source: Box::new(e),
            },
        )?;
    }
    Ok((clauses, state, Some(allocator.actions_at_commit())))
}

/// A bare `NULL` literal.
fn is_null_literal(value: &Expr) -> bool {
    matches!(value, Expr::Literal(v, _) if v.is_null())
}

/// MERGE on a shallow clone is refused: delta-rs' MERGE cannot rewrite
/// files outside the table's folder. (UPDATE and DELETE take Lakegres'
/// own rewrite.)
fn refuse_shallow(op: &str, snapshot: &deltalake::kernel::EagerSnapshot, name: &str) -> Result<()> {
    if crate::write::rewrite::references_other_files(snapshot) {
        return Err(Error::Refused {
            message: format!(
                "[UNSUPPORTED_FEATURE] {op} into {name}, a shallow clone whose files are its \
                 source's, is not supported yet; make it a DEEP CLONE (CREATE OR REPLACE \
                 TABLE {name} DEEP CLONE …) first"
            ),
            state: crate::SqlState::FEATURE_NOT_SUPPORTED,
        });
    }
    Ok(())
}
