//! A key's lane: the writes, loads and closes of one group's (or
//! transactional id's) log run in call order on one writer thread, so a
//! load sees every write ordered before it.

use std::future::Future;

use super::{writer_gone, GroupLogStore, LoadedGroup, Logs};
use crate::storage::group_commit;
use crate::store::{Durable, StoreError};

impl GroupLogStore {
    /// Waits for the key's earlier writes, then reads its log, on the key's
    /// lane (the caller is a blocking thread).
    pub(crate) fn load_ordered(&self, key: &str) -> Result<Option<LoadedGroup>, StoreError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let logs = self.logs.clone();
        let owned = key.to_string();
        self.writer.submit(
            key,
            Box::new(move || {
                let _ = tx.send(logs.load(&owned));
            }),
        );
        rx.recv().map_err(|_| StoreError::Io(writer_gone()))?
    }

    /// Forgets a key's open log after its earlier writes, on its lane.
    pub(crate) fn close_ordered(&self, key: &str) {
        let logs = self.logs.clone();
        let owned = key.to_string();
        self.writer
            .submit(key, Box::new(move || logs.close(&owned)));
    }

    /// Runs the ordering half of a write (`write`: encode, append, journal)
    /// on the key's lane, and hands back its durability.
    pub(crate) fn ordered<F>(
        &self,
        group_id: &str,
        write: impl FnOnce(&Logs, &str) -> F + Send + 'static,
    ) -> Durable
    where
        F: Future<Output = Result<(), StoreError>> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let logs = self.logs.clone();
        let group = group_id.to_string();
        self.writer.submit(
            group_id,
            Box::new(move || {
                // This thread runs the journal round itself when none is
                // running, and answers after it: the caller then wakes
                // once, to a durable write, instead of once for the write
                // and again for its round.
                let durable = group_commit::leading(|| write(&logs, &group));
                let _ = tx.send(durable);
            }),
        );
        Box::pin(async move {
            match rx.await {
                Ok(durable) => durable.await,
                Err(_) => Err(StoreError::Io(writer_gone())),
            }
        })
    }
}
