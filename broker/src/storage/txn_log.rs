//! The logs of transactional ids on the shared volume: the group logs'
//! files, folder `__cluster/__transaction_state`, with their fencing claim,
//! journal, snapshots and crash recovery ([`super::group_log`]); a
//! transactional id's state is a kind 9 record. Implements the transaction
//! coordinator's [`TxnStore`] port.

use std::io;
use std::path::Path;

use super::group_log::{GroupLogOptions, GroupLogStore, LogFolder};
use crate::txn::core::TxnTransit;
use crate::txn::store::{Durable, StoreError, TxnStore};

pub struct TxnLogStore(GroupLogStore);

impl TxnLogStore {
    /// The store under `data_dir/__cluster/__transaction_state` (created),
    /// as `options` say but for the folder. Replays the journals of stopped
    /// brokers before it returns.
    pub fn open(data_dir: &Path, options: GroupLogOptions) -> io::Result<TxnLogStore> {
        let options = GroupLogOptions {
            folder: LogFolder::TransactionState,
            ..options
        };
        Ok(TxnLogStore(GroupLogStore::open(data_dir, options)?))
    }

    /// The logs, for tools and tests.
    pub fn logs(&self) -> &GroupLogStore {
        &self.0
    }
}

impl TxnStore for TxnLogStore {
    fn load(&self, transactional_id: &str) -> Result<Option<TxnTransit>, StoreError> {
        Ok(self
            .0
            .load_ordered(transactional_id)?
            .and_then(|loaded| loaded.txn))
    }

    fn write(&self, transactional_id: &str, transit: &TxnTransit) -> Durable {
        let transit = transit.clone();
        self.0.ordered(transactional_id, move |logs, id| {
            logs.write_txn(id, &transit)
        })
    }

    fn remove(&self, transactional_id: &str) -> Durable {
        self.0
            .ordered(transactional_id, |logs, id| logs.delete_group(id))
    }

    fn list(&self) -> io::Result<Vec<String>> {
        self.0.list_groups()
    }

    fn close(&self, transactional_id: &str) {
        self.0.close_ordered(transactional_id)
    }
}

#[cfg(test)]
mod tests;
