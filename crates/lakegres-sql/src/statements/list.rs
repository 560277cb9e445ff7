//! `LIST 'path'`: one row per file or folder right below the path (within
//! the file roots; see `files.rs`).

use crate::error::Result;
use crate::output::{CommandTag, Output};
use crate::statement_context::StatementContext;

/// Lists `path`.
pub(crate) async fn run(cx: &StatementContext<'_>, path: &str) -> Result<Output> {
    let stream = crate::files::listing(cx.file_roots(), path).await?;
    Ok(Output::Rows {
        stream,
        tag: CommandTag::Counted("SELECT"),
    })
}
