//! The broker's view of the cluster: the assignment it currently follows,
//! where it comes from, and the controller that writes it.

pub mod assignment_file;
pub mod configmap_source;
pub mod controller;
pub mod file_source;

use std::sync::Arc;

use kaas_shared::{Assignment, Routing};
use tokio::sync::watch;

/// The assignment this broker follows. `None` until the first one arrives.
pub struct ClusterView {
    tx: watch::Sender<Option<Arc<Routing>>>,
}

impl Default for ClusterView {
    fn default() -> Self {
        Self {
            tx: watch::channel(None).0,
        }
    }
}

impl ClusterView {
    pub fn current(&self) -> Option<Arc<Routing>> {
        self.tx.borrow().clone()
    }

    /// Installs `assignment` if its version is newer than the one held.
    /// Returns `Some(previous)` when it was installed.
    pub fn offer(&self, assignment: Assignment) -> Option<Option<Arc<Routing>>> {
        let mut previous = None;
        let installed = self.tx.send_if_modified(|held| {
            if held
                .as_ref()
                .is_some_and(|r| r.version() >= assignment.version)
            {
                return false;
            }
            previous = held.replace(Arc::new(Routing::new(assignment)));
            true
        });
        installed.then_some(previous)
    }

    pub fn subscribe(&self) -> watch::Receiver<Option<Arc<Routing>>> {
        self.tx.subscribe()
    }

    /// How many wait for the next assignment ([`ClusterView::subscribe`]).
    pub fn watchers(&self) -> usize {
        self.tx.receiver_count()
    }
}
