//! Privileges: who may read, change and create which tables.
//!
//! Grants live in the warehouse, so every server on it agrees: each change
//! writes the whole set as the next numbered object under
//! [`GRANTS_DIR`] with a put-if-absent, the same way Delta commits, so two
//! servers granting at once cannot lose either grant (the loser re-applies
//! its change to the winner's set). Servers notice a newer set by looking
//! for the next number before each statement.
//!
//! The model is Unity Catalog's, reduced to what a warehouse of schemas and
//! tables needs: `SELECT`, `MODIFY`, `CREATE` (tables in a schema),
//! `USE SCHEMA` (recorded for scripts written for Databricks; every schema
//! may be used) and `ALL PRIVILEGES`; a grant on a schema holds for every
//! table in it, now and later. Admins (from the server's configuration) may
//! do everything, including granting. With no admins configured nobody is
//! checked: the server behaves as before privileges existed.

use std::collections::BTreeSet;
use std::path::{Path as FsPath, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use deltalake::logstore::object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use deltalake::logstore::ObjectStoreRef;
use deltalake::Path;
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

use crate::catalog::TableName;
use crate::error::{Error, Result};

/// Where the numbered grant sets live, under the warehouse root. Schema
/// names cannot start with `_`, so no schema can collide with it.
pub const GRANTS_DIR: &str = "_lakegres/grants";

/// On object stores, how long a server trusts its grant set before looking
/// for a newer one (a request per statement would cost more than the
/// statement). On a local disk it looks every time: a `stat` is cheap.
const REMOTE_RECHECK: Duration = Duration::from_secs(1);

pub use lakegres_common::privileges::{Grant, Privilege, Securable};

/// The grant set as stored.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    grants: BTreeSet<Grant>,
}

/// A grant set and the number it was stored under (0: none stored yet).
#[derive(Debug, Default)]
struct Snapshot {
    version: u64,
    grants: Arc<BTreeSet<Grant>>,
}

/// The warehouse's grants and the configured admins; one per server.
pub struct Grants {
    store: ObjectStoreRef,
    /// The warehouse folder when it is on a local disk.
    local_root: Option<PathBuf>,
    admins: BTreeSet<String>,
    current: RwLock<Snapshot>,
    checked: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Grants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grants")
            .field("admins", &self.admins)
            .finish()
    }
}

fn grants_file(version: u64) -> Path {
    Path::from(format!("{GRANTS_DIR}/{version:020}.json"))
}

/// The table whose folder holds a path inside the warehouse (given
/// relative to it: `schema/table/…`), if the path is that deep.
pub fn warehouse_table(inside: &FsPath) -> Option<TableName> {
    let mut parts = inside.components().filter_map(|c| match c {
        std::path::Component::Normal(s) => s.to_str(),
        _ => None,
    });
    match (parts.next(), parts.next()) {
        (Some(schema), Some(table)) => TableName::new(schema, table).ok(),
        _ => None,
    }
}

fn storage(op: &'static str) -> impl Fn(deltalake::ObjectStoreError) -> Error {
    move |source| Error::Storage {
        op,
        source: Box::new(source),
    }
}

impl Grants {
    /// The grants of the warehouse `catalog` serves, read now.
    pub async fn open(
        catalog: &crate::Catalog,
        admins: impl IntoIterator<Item = String>,
    ) -> Result<Arc<Self>> {
        let grants = Arc::new(Self {
            store: catalog.store(),
            local_root: catalog.local_root().map(FsPath::to_path_buf),
            admins: admins.into_iter().map(|a| a.to_lowercase()).collect(),
            current: RwLock::default(),
            checked: Mutex::new(None),
        });
        if grants.enforced() {
            grants.reload().await?;
        }
        Ok(grants)
    }

    /// Whether privileges are checked at all (some admin is configured).
    pub fn enforced(&self) -> bool {
        !self.admins.is_empty()
    }

    /// Whether `user` may do everything.
    pub fn is_admin(&self, user: &str) -> bool {
        !self.enforced() || self.admins.contains(&user.to_lowercase())
    }

    /// The grant set as last read.
    pub fn snapshot(&self) -> Arc<BTreeSet<Grant>> {
        match self.current.read() {
            Ok(current) => Arc::clone(&current.grants),
            Err(poisoned) => Arc::clone(&poisoned.into_inner().grants),
        }
    }

    fn version(&self) -> u64 {
        match self.current.read() {
            Ok(current) => current.version,
            Err(poisoned) => poisoned.into_inner().version,
        }
    }

    fn install(&self, version: u64, grants: BTreeSet<Grant>) {
        let mut current = match self.current.write() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        if version >= current.version {
            *current = Snapshot {
                version,
                grants: Arc::new(grants),
            };
        }
    }

    /// Reads a newer grant set if another server (or session) stored one.
    /// Called before each statement when privileges are enforced.
    pub async fn refresh(&self) -> Result<()> {
        if !self.enforced() {
            return Ok(());
        }
        if self.local_root.is_none() {
            let mut checked = match self.checked.lock() {
                Ok(c) => c,
                Err(poisoned) => poisoned.into_inner(),
            };
            if checked.is_some_and(|at| at.elapsed() < REMOTE_RECHECK) {
                return Ok(());
            }
            *checked = Some(Instant::now());
        }
        if self.exists(self.version() + 1).await? {
            self.reload().await?;
        }
        Ok(())
    }

    async fn exists(&self, version: u64) -> Result<bool> {
        let path = grants_file(version);
        if let Some(root) = &self.local_root {
            return Ok(root.join(path.as_ref()).exists());
        }
        match self.store.head(&path).await {
            Ok(_) => Ok(true),
            Err(deltalake::ObjectStoreError::NotFound { .. }) => Ok(false),
            Err(e) => Err(storage("looking for newer grants")(e)),
        }
    }

    /// Reads the newest stored grant set.
    async fn reload(&self) -> Result<()> {
        let prefix = Path::from(GRANTS_DIR);
        let listed: Vec<_> = self
            .store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(storage("listing the grants"))?;
        let latest = listed
            .iter()
            .filter_map(|meta| {
                let name = meta.location.filename()?;
                name.strip_suffix(".json")?.parse::<u64>().ok()
            })
            .max();
        let Some(version) = latest else {
            return Ok(());
        };
        let bytes = self
            .store
            .get(&grants_file(version))
            .await
            .map_err(storage("reading the grants"))?
            .bytes()
            .await
            .map_err(storage("reading the grants"))?;
        let stored: Stored = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Internal(format!("the grants file {version} cannot be read: {e}"))
        })?;
        self.install(version, stored.grants);
        Ok(())
    }

    /// Changes the grant set with `change` and stores it as the next
    /// version; a concurrent change by another server is re-read and
    /// `change` applied to it. A change that changes nothing stores nothing.
    pub async fn change(&self, change: impl Fn(&mut BTreeSet<Grant>)) -> Result<()> {
        for _ in 0..100 {
            self.reload().await?;
            let version = self.version();
            let mut grants = (*self.snapshot()).clone();
            change(&mut grants);
            if grants == *self.snapshot() {
                return Ok(());
            }
            let body = serde_json::to_vec_pretty(&Stored { grants })
                .map_err(|e| Error::Internal(format!("cannot write the grants: {e}")))?;
            let put = self
                .store
                .put_opts(
                    &grants_file(version + 1),
                    PutPayload::from(body),
                    PutOptions::from(PutMode::Create),
                )
                .await;
            match put {
                Ok(_) => {
                    self.reload().await?;
                    return Ok(());
                }
                Err(deltalake::ObjectStoreError::AlreadyExists { .. }) => continue,
                Err(e) => return Err(storage("storing the grants")(e)),
            }
        }
        Err(Error::Internal(
            "the grants kept changing under this change; try again".into(),
        ))
    }

    /// Whether `user` holds `privilege` on the table `name`.
    pub fn allows(&self, user: &str, privilege: Privilege, name: &TableName) -> bool {
        if self.is_admin(user) {
            return true;
        }
        let user = user.to_lowercase();
        self.snapshot().iter().any(|g| {
            g.principal == user && g.privilege.covers(privilege) && g.object.holds_for(name)
        })
    }

    /// Whether `user` may create tables in `schema`.
    pub fn allows_create(&self, user: &str, schema: &str) -> bool {
        if self.is_admin(user) {
            return true;
        }
        let user = user.to_lowercase();
        self.snapshot().iter().any(|g| {
            g.principal == user
                && g.privilege.covers(Privilege::Create)
                && matches!(&g.object, Securable::Schema { schema: s } if s == schema)
        })
    }
}

/// The user a session runs as, with the server's grants: kept in each
/// session's DataFusion config, so every scan and write of a Delta table
/// can check it whichever statement planned it.
#[derive(Debug)]
pub struct Principal {
    grants: Arc<Grants>,
    user: RwLock<String>,
}

impl Principal {
    pub fn new(grants: Arc<Grants>) -> Self {
        Self {
            grants,
            user: RwLock::new(String::new()),
        }
    }

    /// Sets the login user (from the startup message, once authenticated).
    pub fn set_user(&self, user: &str) {
        match self.user.write() {
            Ok(mut u) => *u = user.to_string(),
            Err(poisoned) => *poisoned.into_inner() = user.to_string(),
        }
    }

    pub fn user(&self) -> String {
        match self.user.read() {
            Ok(u) => u.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn grants(&self) -> &Arc<Grants> {
        &self.grants
    }

    pub fn is_admin(&self) -> bool {
        self.grants.is_admin(&self.user())
    }

    /// 42501 unless the user holds `privilege` on table `name`.
    pub fn require(&self, privilege: Privilege, name: &TableName) -> Result<()> {
        let user = self.user();
        if self.grants.allows(&user, privilege, name) {
            return Ok(());
        }
        Err(Error::PermissionDenied {
            user,
            privilege: privilege.name(),
            object: format!("table {name}"),
        })
    }

    /// 42501 unless the user owns the table or view `name`: holds ALL
    /// PRIVILEGES on it (its creator does), or on its schema, or is an
    /// admin. Replacing, altering and dropping an object need it.
    pub fn require_owner(&self, name: &TableName) -> Result<()> {
        let user = self.user();
        if self.grants.allows(&user, Privilege::All, name) {
            return Ok(());
        }
        Err(Error::PermissionDenied {
            user,
            privilege: "ownership (ALL PRIVILEGES)",
            object: format!("{name}"),
        })
    }

    /// 42501 unless the user may create tables in `schema`.
    pub fn require_create(&self, schema: &str) -> Result<()> {
        let user = self.user();
        if self.grants.allows_create(&user, schema) {
            return Ok(());
        }
        Err(Error::PermissionDenied {
            user,
            privilege: Privilege::Create.name(),
            object: format!("schema {schema}"),
        })
    }

    /// 42501 unless the user is an admin; `what` names the action.
    pub fn require_admin(&self, what: &str) -> Result<()> {
        if self.is_admin() {
            return Ok(());
        }
        Err(Error::PermissionDenied {
            user: self.user(),
            privilege: "admin",
            object: what.to_string(),
        })
    }

    /// For a file a statement reads (`read_files`, `LIST`, `COPY INTO`),
    /// given as its path inside the warehouse (`None` when outside it): only
    /// a table's own folder, and only with SELECT on that table; the
    /// warehouse's other files (schemas as a whole, the grants) are for
    /// admins. `shown` names the file in the error.
    pub fn require_warehouse_path(&self, inside: Option<&FsPath>, shown: &str) -> Result<()> {
        let Some(inside) = inside else {
            return Ok(());
        };
        if self.is_admin() {
            return Ok(());
        }
        self.require_in_warehouse(inside, shown)
    }

    /// Outside the warehouse, a folder that is (or is inside) a Delta
    /// table: readable by path with SELECT on the external table `owner`
    /// registered there, as a managed table's folder is with SELECT on it;
    /// a Delta table no table names is for admins.
    pub fn require_table_folder(&self, owner: Option<&TableName>, shown: &str) -> Result<()> {
        if self.is_admin() {
            return Ok(());
        }
        match owner {
            Some(name) => self.require(Privilege::Select, name),
            None => Err(Error::PermissionDenied {
                user: self.user(),
                privilege: "admin",
                object: format!("the Delta table folder {shown} (read the table by name)"),
            }),
        }
    }

    /// A Delta table folder that listing the folder `listed` reached below
    /// it (see [`crate::store::files::Access::TableBelow`]): readable as the folder
    /// itself would be — with SELECT on `owner`, the table there (a managed
    /// table's, or an external table's registered at it), else by admins.
    pub fn require_table_folder_below(
        &self,
        owner: Option<&TableName>,
        folder: &str,
        listed: &str,
    ) -> Result<()> {
        if self.is_admin() {
            return Ok(());
        }
        let user = self.user();
        if let Some(name) = owner {
            if self.grants.allows(&user, Privilege::Select, name) {
                return Ok(());
            }
        }
        Err(Error::TableFolderInListing {
            user,
            listed: listed.to_string(),
            folder: folder.to_string(),
            owner: owner.map(ToString::to_string),
        })
    }

    fn require_in_warehouse(&self, inside: &FsPath, shown: &str) -> Result<()> {
        match warehouse_table(inside) {
            Some(name) => self.require(Privilege::Select, &name),
            None => Err(Error::PermissionDenied {
                user: self.user(),
                privilege: "admin",
                object: format!("the warehouse folder {shown}"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warehouse_paths_name_the_table_whose_folder_holds_them() {
        let table = |p: &str| warehouse_table(FsPath::new(p)).map(|t| t.to_string());
        assert_eq!(table("sales/orders"), Some("sales.orders".into()));
        assert_eq!(
            table("sales/orders/part-0.parquet"),
            Some("sales.orders".into())
        );
        assert_eq!(
            table("sales/orders/nested/_delta_log"),
            Some("sales.orders".into())
        );
        assert_eq!(table("sales"), None);
        assert_eq!(table(""), None);
        assert_eq!(table("_lakegres/grants"), None);
    }
}
