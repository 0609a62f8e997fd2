//! A shared document ([`SharedDoc`]) as one broker holds it: changes made
//! through this broker are installed at once, those made through others
//! within [`REFRESH_INTERVAL`], when the next look at the file's version
//! sees them ([`follow_all`], one task for every document). The ACLs, the
//! SCRAM credentials, the dynamic configs, the group configs and the
//! client quotas are followed this way.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::storage::shared_doc::{SharedDoc, Versioned};

/// How often a broker looks for changes made through other brokers: the
/// longest a change takes to apply everywhere.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);

type OnInstall<T> = Box<dyn Fn(&T) + Send + Sync>;

pub struct Followed<T> {
    name: &'static str,
    doc: SharedDoc<T>,
    current: RwLock<Arc<T>>,
    /// The version installed.
    version: AtomicU64,
    on_install: OnInstall<T>,
}

impl<T> Followed<T>
where
    T: Serialize + DeserializeOwned + Default + PartialEq + Clone + Send + Sync + 'static,
{
    /// The document `__cluster/<name>` as the volume holds it now; each
    /// value installed is also handed to `on_install`. Blocking I/O.
    pub fn open(
        cluster_dir: &Path,
        name: &'static str,
        on_install: impl Fn(&T) + Send + Sync + 'static,
    ) -> io::Result<Followed<T>> {
        let followed = Followed {
            name,
            doc: SharedDoc::new(cluster_dir, name),
            current: RwLock::default(),
            version: AtomicU64::new(0),
            on_install: Box::new(on_install),
        };
        followed.install(followed.doc.load()?);
        Ok(followed)
    }

    /// The value installed.
    pub fn current(&self) -> Arc<T> {
        self.current.read().clone()
    }

    fn install(&self, v: Versioned<T>) {
        // Under the lock: a refresh and a change racing must not leave the
        // older value installed under the newer version.
        let mut current = self.current.write();
        if self.version.load(Ordering::SeqCst) > v.version {
            return;
        }
        (self.on_install)(&v.value);
        *current = Arc::new(v.value);
        self.version.store(v.version, Ordering::SeqCst);
        info!(document = self.name, version = v.version, "installed");
    }

    /// Loads the document when its version moved. Blocking I/O.
    pub fn refresh(&self) -> io::Result<()> {
        if self.doc.version()? != self.version.load(Ordering::SeqCst) {
            self.install(self.doc.load()?);
        }
        Ok(())
    }

    /// Changes the document (durably, under the cluster-wide lock) and
    /// installs the result. Blocking I/O.
    pub fn update<R>(&self, change: impl FnOnce(&mut T) -> R) -> io::Result<R> {
        let (out, v) = self.doc.update(change)?;
        self.install(v);
        Ok(out)
    }
}

/// A followed document, whatever its value's type.
pub trait Refresh: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    /// Loads the document when its version moved. Blocking I/O.
    fn refresh(&self) -> io::Result<()>;
}

impl<T> Refresh for Followed<T>
where
    T: Serialize + DeserializeOwned + Default + PartialEq + Clone + Send + Sync + 'static,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn refresh(&self) -> io::Result<()> {
        Followed::refresh(self)
    }
}

/// Follows changes made through other brokers to every one of `docs`
/// until shutdown: one task, one look at each document's version every
/// [`REFRESH_INTERVAL`], all in one hop to a blocking thread.
pub async fn follow_all(docs: Vec<Arc<dyn Refresh>>, shutdown: CancellationToken) {
    let docs = Arc::new(docs);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(REFRESH_INTERVAL) => {}
        }
        let all = docs.clone();
        let failed = crate::storage::blocking(move || {
            Ok(all
                .iter()
                .filter_map(|d| d.refresh().err().map(|e| (d.name(), e)))
                .collect::<Vec<_>>())
        })
        .await;
        match failed {
            Ok(failed) => {
                for (document, e) in failed {
                    warn!(document, error = %e, "cannot read; keeping what is installed");
                }
            }
            Err(e) => warn!(error = %e, "cannot read the followed documents"),
        }
    }
}
