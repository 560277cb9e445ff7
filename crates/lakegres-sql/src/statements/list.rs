//! `LIST 'path'`: one row per file or folder right below the path (within
//! the file roots; see `files.rs`).

use crate::error::Result;
use crate::output::{batches_output, CommandTag, Output};
use crate::session::Session;

/// Lists `path`.
pub(crate) async fn run(session: &Session, path: &str) -> Result<Output> {
    let batches = crate::files::listing(session.file_roots(), path).await?;
    Ok(batches_output(
        crate::files::listing_schema(),
        batches,
        CommandTag::Counted("SELECT"),
    ))
}
