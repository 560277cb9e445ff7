//! Operation names in the log as Databricks records them
//! (`CREATE TABLE AS SELECT`, `CREATE OR REPLACE TABLE AS SELECT`,
//! `REPLACE TABLE AS SELECT`, `COPY INTO`) for writes delta-rs commits as
//! `WRITE`: delta-rs names a commit after its own operation and takes no
//! other name. The writer asks for the name in its commit's metadata
//! ([`KEY`]); as the commit entry is written, the store wrapper
//! (`store/requests.rs`) moves it to `commitInfo.operation`. Readers of the
//! log — delta-rs, Spark, DESCRIBE HISTORY — see an ordinary commit entry;
//! none of them acts on the name.

use bytes::Bytes;
use deltalake::logstore::object_store::PutPayload;
use deltalake::Path;
use serde_json::Value;

/// The commit metadata key naming the operation to record.
pub(crate) const KEY: &str = "lakegres.operation";

/// The commit metadata key holding the operation's parameters to record
/// (with [`KEY`]): a transaction's statements.
pub(crate) const PARAMETERS: &str = "lakegres.operationParameters";

/// The commit entry `payload` written at `location` with its operation
/// renamed as its writer asked; `None` when it is no commit entry or asks
/// for nothing.
pub(crate) fn renamed(location: &Path, payload: &PutPayload) -> Option<PutPayload> {
    let name = location.as_ref();
    if !name.contains("_delta_log/") || !name.ends_with(".json") {
        return None;
    }
    // The commitInfo is the entry's first action: only an entry whose first
    // line asks for a name is copied and rewritten.
    let first = payload.iter().next()?;
    let first_line = match first.iter().position(|b| *b == b'\n') {
        Some(end) => &first[..end],
        None => &first[..],
    };
    let marker = format!("\"{KEY}\"");
    if !first_line
        .windows(marker.len())
        .any(|w| w == marker.as_bytes())
    {
        return None;
    }
    let bytes: Vec<u8> = payload.iter().flat_map(|b| b.iter().copied()).collect();
    let text = std::str::from_utf8(&bytes).ok()?;
    let mut lines: Vec<String> = Vec::new();
    let mut done = false;
    for line in text.lines() {
        if !done {
            if let Some(line) = rename_line(line) {
                lines.push(line);
                done = true;
                continue;
            }
        }
        lines.push(line.to_string());
    }
    if !done {
        return None;
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Some(PutPayload::from(Bytes::from(out)))
}

/// A `commitInfo` line with the requested operation moved into place.
fn rename_line(line: &str) -> Option<String> {
    let mut action: Value = serde_json::from_str(line).ok()?;
    let info = action.get_mut("commitInfo")?.as_object_mut()?;
    let Value::String(operation) = info.remove(KEY)? else {
        return None;
    };
    info.insert("operation".into(), Value::String(operation));
    if let Some(parameters) = info.remove(PARAMETERS) {
        info.insert("operationParameters".into(), parameters);
    }
    serde_json::to_string(&action).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_parameters_replace_the_operations() {
        let entry = concat!(
            r#"{"commitInfo":{"operation":"WRITE","operationParameters":{"mode":"Append"},"lakegres.operation":"TRANSACTION","lakegres.operationParameters":{"statements":"[\"INSERT\",\"DELETE\"]"}}}"#,
            "\n",
        );
        let path = Path::from("t/_delta_log/00000000000000000001.json");
        let out = renamed(&path, &PutPayload::from(entry.to_string())).unwrap();
        let out: Vec<u8> = out.iter().flat_map(|b| b.iter().copied()).collect();
        let info: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(info["commitInfo"]["operation"], "TRANSACTION");
        assert_eq!(
            info["commitInfo"]["operationParameters"]["statements"],
            r#"["INSERT","DELETE"]"#
        );
        assert!(info["commitInfo"].get(PARAMETERS).is_none());
    }

    #[test]
    fn the_requested_name_replaces_write() {
        let entry = concat!(
            r#"{"commitInfo":{"timestamp":1,"operation":"WRITE","operationParameters":{"mode":"ErrorIfExists"},"lakegres.operation":"CREATE TABLE AS SELECT"}}"#,
            "\n",
            r#"{"add":{"path":"a.parquet"}}"#,
            "\n"
        );
        let path = Path::from("t/_delta_log/00000000000000000000.json");
        let out = renamed(&path, &PutPayload::from(entry.to_string())).unwrap();
        let out: Vec<u8> = out.iter().flat_map(|b| b.iter().copied()).collect();
        let out = String::from_utf8(out).unwrap();
        let first: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        assert_eq!(first["commitInfo"]["operation"], "CREATE TABLE AS SELECT");
        assert!(first["commitInfo"].get(KEY).is_none());
        assert_eq!(
            first["commitInfo"]["operationParameters"]["mode"],
            "ErrorIfExists"
        );
        assert_eq!(out.lines().nth(1), Some(r#"{"add":{"path":"a.parquet"}}"#));
        assert!(out.ends_with('\n'));
    }

    #[test]
    fn other_files_and_plain_commits_are_left_alone() {
        let plain = PutPayload::from(r#"{"commitInfo":{"operation":"WRITE"}}"#.to_string());
        let log = Path::from("t/_delta_log/00000000000000000001.json");
        assert!(renamed(&log, &plain).is_none());
        let data = Path::from("t/part-0.parquet");
        let marked = PutPayload::from(format!(r#"{{"commitInfo":{{"{KEY}":"COPY INTO"}}}}"#));
        assert!(renamed(&data, &marked).is_none());
    }
}
