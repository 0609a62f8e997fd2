//! The transaction coordinator's port to durable storage: one log per
//! transactional id, holding its latest state. `storage::txn_log`
//! implements it on the shared volume; [`MemoryTxnStore`] in memory, for
//! tests of the coordinator's shell.

use std::collections::HashMap;
use std::io;

use parking_lot::Mutex;

use super::core::TxnTransit;
pub use crate::store::{Durable, StoreError};

/// Where transactional ids' states live. Writes of one id become durable
/// in call order, and a load sees every write ordered before it; the write
/// methods order the write when called and must not block on I/O (the
/// coordinator calls them under its lock).
pub trait TxnStore: Send + Sync + 'static {
    /// Reads an id's log (blocking: called on a blocking thread); `None`
    /// when it has none.
    fn load(&self, transactional_id: &str) -> Result<Option<TxnTransit>, StoreError>;
    /// Stores the id's new state.
    fn write(&self, transactional_id: &str, transit: &TxnTransit) -> Durable;
    /// Removes the id's log (the id expired).
    fn remove(&self, transactional_id: &str) -> Durable;
    /// Ids with a log (blocking I/O).
    fn list(&self) -> io::Result<Vec<String>>;
    /// Forget any cached handle: the id was unloaded or moved.
    fn close(&self, transactional_id: &str);
}

/// A store in memory: every write is durable at once.
#[derive(Default)]
pub struct MemoryTxnStore {
    txns: Mutex<HashMap<String, TxnTransit>>,
}

impl MemoryTxnStore {
    pub fn new() -> MemoryTxnStore {
        MemoryTxnStore::default()
    }
}

impl TxnStore for MemoryTxnStore {
    fn load(&self, transactional_id: &str) -> Result<Option<TxnTransit>, StoreError> {
        Ok(self.txns.lock().get(transactional_id).cloned())
    }

    fn write(&self, transactional_id: &str, transit: &TxnTransit) -> Durable {
        self.txns
            .lock()
            .insert(transactional_id.to_string(), transit.clone());
        Box::pin(async { Ok(()) })
    }

    fn remove(&self, transactional_id: &str) -> Durable {
        self.txns.lock().remove(transactional_id);
        Box::pin(async { Ok(()) })
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut ids: Vec<String> = self.txns.lock().keys().cloned().collect();
        ids.sort();
        Ok(ids)
    }

    fn close(&self, _transactional_id: &str) {}
}
