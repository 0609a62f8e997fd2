//! The broker's ACLs: Apache's StandardAuthorizer ([`crate::auth::standard`])
//! kept in step with the cluster's ACL file on the shared volume
//! ([`crate::storage::acls`]). A change made here is installed at once;
//! one made through another broker within [`REFRESH_INTERVAL`], when the
//! next look at the file's version sees it.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::auth::acl::{AclBinding, AclFilter};
use crate::auth::standard::{AuthorizerSettings, StandardAuthorizer};
use crate::storage::acls::{AclFile, AclSnapshot};

/// How often a broker looks for ACL changes made through other brokers:
/// the longest a change takes to apply everywhere.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);

pub struct Acls {
    pub authorizer: Arc<StandardAuthorizer>,
    file: AclFile,
    /// The version installed in the authorizer.
    version: AtomicU64,
}

impl Acls {
    /// The authorizer with the volume's ACLs installed. Blocking I/O.
    pub fn open(cluster_dir: &Path, settings: AuthorizerSettings) -> io::Result<Acls> {
        let acls = Acls {
            authorizer: Arc::new(StandardAuthorizer::new(settings)),
            file: AclFile::new(cluster_dir),
            version: AtomicU64::new(0),
        };
        acls.install(acls.file.load()?);
        Ok(acls)
    }

    fn install(&self, snapshot: AclSnapshot) {
        // Never back to an older version than one installed already.
        if self.version.fetch_max(snapshot.version, Ordering::SeqCst) <= snapshot.version {
            let count = snapshot.acls.len();
            self.authorizer.replace(snapshot.acls);
            info!(version = snapshot.version, acls = count, "ACLs installed");
        }
    }

    /// Loads the file when its version moved. Blocking I/O.
    pub fn refresh(&self) -> io::Result<()> {
        if self.file.version()? != self.version.load(Ordering::SeqCst) {
            self.install(self.file.load()?);
        }
        Ok(())
    }

    /// Adds the bindings (those present already are kept as they are).
    /// Blocking I/O.
    pub fn create(&self, bindings: &[AclBinding]) -> io::Result<()> {
        let ((), snapshot) = self
            .file
            .update(|acls| acls.extend(bindings.iter().cloned()))?;
        self.install(snapshot);
        Ok(())
    }

    /// Removes every ACL each filter matches: per filter, what it matched.
    /// Blocking I/O.
    pub fn delete(&self, filters: &[AclFilter]) -> io::Result<Vec<Vec<AclBinding>>> {
        let (matched, snapshot) = self.file.update(|acls| {
            let matched: Vec<Vec<AclBinding>> = filters
                .iter()
                .map(|f| acls.iter().filter(|a| f.matches(a)).cloned().collect())
                .collect();
            let gone: BTreeSet<&AclBinding> = matched.iter().flatten().collect();
            acls.retain(|a| !gone.contains(a));
            matched
        })?;
        self.install(snapshot);
        Ok(matched)
    }

    /// The installed ACLs a filter matches.
    pub fn describe(&self, filter: &AclFilter) -> Vec<AclBinding> {
        self.authorizer
            .acls()
            .into_iter()
            .filter(|a| filter.matches(a))
            .collect()
    }

    /// Follows changes made through other brokers until shutdown.
    pub async fn follow(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(REFRESH_INTERVAL) => {}
            }
            let acls = self.clone();
            if let Err(e) = crate::storage::blocking(move || acls.refresh()).await {
                warn!(error = %e, "cannot read the ACLs; keeping those installed");
            }
        }
    }
}
