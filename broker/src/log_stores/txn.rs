//! The transaction coordinator's port ([`TxnStore`]) on the transactional
//! ids' logs (`storage::txn_log`), and the conversion of a transaction's
//! state to and from the form the log stores (Apache's
//! `TransactionLogValue`).

use std::io;

use crate::storage::group_log::{PartitionKey, TxnBody};
use crate::storage::txn_log::TxnLogStore;
use crate::txn::core::{TopicPartition, TxnState, TxnTransit, TxnVersion};
use crate::txn::store::{Durable, StoreError, TxnStore};

impl TxnStore for TxnLogStore {
    fn load(&self, transactional_id: &str) -> Result<Option<TxnTransit>, StoreError> {
        let Some(body) = self
            .logs()
            .load_ordered(transactional_id)?
            .and_then(|loaded| loaded.txn)
        else {
            return Ok(None);
        };
        let transit = TxnTransit::try_from(body)
            .map_err(|e| StoreError::Io(io::Error::new(io::ErrorKind::InvalidData, e)))?;
        Ok(Some(transit))
    }

    fn write(&self, transactional_id: &str, transit: &TxnTransit) -> Durable {
        let body = TxnBody::from(transit);
        self.logs()
            .ordered(transactional_id, move |logs, id| logs.write_txn(id, &body))
    }

    fn remove(&self, transactional_id: &str) -> Durable {
        self.logs()
            .ordered(transactional_id, |logs, id| logs.delete_group(id))
    }

    fn list(&self) -> io::Result<Vec<String>> {
        self.logs().list_groups()
    }

    fn close(&self, transactional_id: &str) {
        self.logs().close_ordered(transactional_id)
    }
}

impl From<&TxnTransit> for TxnBody {
    fn from(t: &TxnTransit) -> Self {
        TxnBody {
            producer_id: t.producer_id,
            prev_producer_id: t.prev_producer_id,
            next_producer_id: t.next_producer_id,
            producer_epoch: t.producer_epoch,
            timeout_ms: t.timeout_ms,
            state: t.state.id(),
            partitions: t
                .partitions
                .iter()
                .map(|p| PartitionKey {
                    topic: p.topic.clone(),
                    partition: p.partition,
                })
                .collect(),
            start_ms: t.start_ms,
            last_update_ms: t.last_update_ms,
            client_version: t.client_version.level(),
        }
    }
}

impl TryFrom<TxnBody> for TxnTransit {
    type Error = String;

    fn try_from(b: TxnBody) -> Result<Self, String> {
        let state = TxnState::from_id(b.state)
            .filter(|s| !matches!(s, TxnState::Dead | TxnState::PrepareEpochFence))
            .ok_or_else(|| format!("transaction state {} is never stored", b.state))?;
        Ok(TxnTransit {
            producer_id: b.producer_id,
            prev_producer_id: b.prev_producer_id,
            next_producer_id: b.next_producer_id,
            producer_epoch: b.producer_epoch,
            last_producer_epoch: -1,
            timeout_ms: b.timeout_ms,
            state,
            partitions: b
                .partitions
                .into_iter()
                .map(|p| TopicPartition::new(p.topic, p.partition))
                .collect(),
            start_ms: b.start_ms,
            last_update_ms: b.last_update_ms,
            client_version: TxnVersion::from_level(b.client_version),
        })
    }
}

#[cfg(test)]
mod tests;
