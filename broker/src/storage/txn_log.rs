//! The logs of transactional ids on the shared volume: the group logs'
//! files, folder `__cluster/__transaction_state`, with their fencing claim,
//! journal, snapshots and crash recovery ([`super::group_log`]); a
//! transactional id's state is a kind 9 record. The transaction
//! coordinator's port on them is `log_stores::txn`.

use std::io;
use std::path::Path;

use super::group_log::{GroupLogOptions, GroupLogStore, LogFolder};

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

    /// The logs: the port `log_stores::txn` writes through them.
    pub fn logs(&self) -> &GroupLogStore {
        &self.0
    }
}
