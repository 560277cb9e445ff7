//! Object-store settings (the `[storage]` section) and the start-up check
//! that a store can hold Delta commits.
//!
//! Credentials are not settings: delta-rs reads them the AWS way
//! (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`, instance
//! roles; `GOOGLE_*`, `AZURE_*` for the other stores), so they never sit in
//! our configuration file or logs.

use std::collections::{BTreeMap, HashMap};

use deltalake::logstore::object_store::{ObjectStoreExt, PutMode, PutPayload};
use deltalake::logstore::ObjectStoreRef;
use deltalake::Path;

use crate::error::{Error, Result};

/// Settings for object stores (S3 and S3-compatible stores first).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Endpoint of an S3-compatible store (`http://minio:9000`); empty
    /// means AWS (or `AWS_ENDPOINT_URL`).
    pub endpoint: String,
    /// Region; empty means `AWS_REGION` or the SDK's default.
    pub region: String,
    /// Address buckets by path (`endpoint/bucket/key`), as MinIO and most
    /// S3-compatible stores want; false means virtual-hosted style
    /// (`bucket.endpoint/key`).
    pub path_style: bool,
    /// Allow `http://` endpoints (MinIO or moto on a private network).
    pub allow_http: bool,
    /// Further object_store / delta-rs options, passed as they are
    /// (`aws_conditional_put`, `google_service_account`, …).
    pub options: BTreeMap<String, String>,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            region: String::new(),
            path_style: true,
            allow_http: false,
            options: BTreeMap::new(),
        }
    }
}

impl StorageConfig {
    /// The options handed to delta-rs and object_store.
    pub fn storage_options(&self) -> HashMap<String, String> {
        let mut out: HashMap<String, String> = self
            .options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !self.endpoint.is_empty() {
            out.insert("aws_endpoint".into(), self.endpoint.clone());
        }
        if !self.region.is_empty() {
            out.insert("aws_region".into(), self.region.clone());
        }
        if !self.path_style {
            out.insert("aws_virtual_hosted_style_request".into(), "true".into());
        }
        if self.allow_http {
            out.insert("allow_http".into(), "true".into());
        }
        out
    }
}

/// Where the start-up probe writes (deleted again after the check).
const PROBE_DIR: &str = "_lakegres";

/// Checks that the store refuses to create an object that already exists
/// (conditional PUT, `If-None-Match: *`). delta-rs 1.1 commits a version by
/// creating its log file that way and has no lock any more, so a store that
/// ignores the condition lets two writers both "win" the same version and
/// one commit silently disappears.
pub(crate) async fn check_conditional_put(store: &ObjectStoreRef, location: &str) -> Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let probe = Path::from(PROBE_DIR).join(format!(
        "conditional-put-probe-{}-{nanos}",
        std::process::id()
    ));
    let unsupported = |reason: String| Error::ConditionalPutUnsupported {
        location: location.to_string(),
        reason,
    };
    let create = || {
        store.put_opts(
            &probe,
            PutPayload::from_static(b"probe"),
            PutMode::Create.into(),
        )
    };
    create().await.map_err(|e| match e {
        deltalake::ObjectStoreError::NotImplemented { .. }
        | deltalake::ObjectStoreError::NotSupported { .. } => {
            unsupported(format!("creating an object if absent failed: {e}"))
        }
        other => Error::Storage {
            op: "checking conditional PUT",
            source: Box::new(other),
        },
    })?;
    let second = create().await;
    // Best effort: a left-over probe object harms nothing.
    let _ = store.delete(&probe).await;
    match second {
        Err(deltalake::ObjectStoreError::AlreadyExists { .. }) => Ok(()),
        Ok(_) => Err(unsupported(
            "a second create of the same object succeeded".into(),
        )),
        Err(
            e @ (deltalake::ObjectStoreError::NotImplemented { .. }
            | deltalake::ObjectStoreError::NotSupported { .. }),
        ) => Err(unsupported(e.to_string())),
        Err(other) => Err(Error::Storage {
            op: "checking conditional PUT",
            source: Box::new(other),
        }),
    }
}
