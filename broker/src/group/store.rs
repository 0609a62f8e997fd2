//! The coordinator's port to durable storage: what the group manager needs
//! of a store, and the errors a store may answer. `storage::group_log`
//! implements it on the shared volume; [`MemoryStore`] in memory, for the
//! manager's tests and for benchmarks of the coordinator alone.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;

use super::consumer::group::{replay_change, ConsumerGroup};
use super::consumer::records::ConsumerGroupRecord;
use super::core::{CommittedOffsets, Conversion, GroupMetadataRecord};
use crate::records::offsets::GroupOffsets;
pub use crate::store::{Durable, StoreError};

/// What a group's log holds when it is loaded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredGroup {
    pub metadata: Option<GroupMetadataRecord>,
    /// The committed offsets, and the offsets of open transactions (not the
    /// group's until their transaction commits).
    pub offsets: GroupOffsets,
    /// A KIP-848 consumer group's state.
    pub consumer: Option<ConsumerGroup>,
}

/// Where group state lives. Every write method orders the write when
/// called (writes of one group become durable in call order, and a load
/// sees every write ordered before it) and returns a future that resolves
/// once it is durable. The call itself must not block on I/O: the manager
/// calls it under its lock.
pub trait GroupStore: Send + Sync + 'static {
    /// Reads a group's log (blocking: called on a blocking thread); `None`
    /// when the group has none.
    fn load(&self, group_id: &str) -> Result<Option<StoredGroup>, StoreError>;
    /// Reads a group's log as it is on disk without taking it (blocking):
    /// no claim, no repair of a torn tail, nothing kept open. For a look at
    /// a group this broker does not hold in memory.
    fn peek(&self, group_id: &str) -> Result<Option<StoredGroup>, StoreError>;
    fn commit_offsets(&self, group_id: &str, offsets: &CommittedOffsets) -> Durable;
    fn delete_offsets(&self, group_id: &str, partitions: &[(String, i32)]) -> Durable;
    /// Offsets a transaction of `producer_id` committed (TxnOffsetCommit),
    /// pending until it ends.
    fn write_txn_offsets(
        &self,
        group_id: &str,
        producer_id: i64,
        offsets: &CommittedOffsets,
    ) -> Durable;
    /// The producer's transaction ended: its pending offsets become the
    /// group's (commit) or are dropped.
    fn end_txn_offsets(&self, group_id: &str, producer_id: i64, commit: bool) -> Durable;
    fn write_metadata(&self, group_id: &str, record: Option<&GroupMetadataRecord>) -> Durable;
    /// One change of the group's consumer group state, its records in
    /// order, durable all together or not at all.
    fn write_consumer_records(&self, group_id: &str, records: &[ConsumerGroupRecord]) -> Durable;
    /// An online migration: the consumer group's records and the classic
    /// metadata's change, durable together or not at all.
    fn convert_group(
        &self,
        group_id: &str,
        conversion: &Conversion,
        records: &[ConsumerGroupRecord],
    ) -> Durable;
    fn delete_group(&self, group_id: &str) -> Durable;
    /// Ids of every group with a log (blocking I/O).
    fn list_groups(&self) -> io::Result<Vec<String>>;
    /// Forget any cached handle: the group was unloaded or moved.
    fn close(&self, group_id: &str);
    /// Whether another broker wrote the group's log since this one last
    /// read or wrote it, as far as the store can tell cheaply: one fstat at
    /// most, called on the request's thread.
    fn written_elsewhere(&self, _group_id: &str) -> bool {
        false
    }
}

/// A store in memory: every write is durable at once unless a test holds
/// it back ([`MemoryStore::park`]).
#[derive(Default)]
pub struct MemoryStore {
    groups: Mutex<HashMap<String, StoredGroup>>,
    /// Groups whose next writes wait until the test opens the gate.
    parked: Mutex<HashMap<String, Gate>>,
    /// Logs read by [`GroupStore::peek`] so far.
    peeks: std::sync::atomic::AtomicUsize,
}

/// Held writes of one group: each waits for the gate to open.
#[derive(Clone)]
pub struct Gate(Arc<tokio::sync::Semaphore>);

impl Gate {
    /// Lets every held write (and every later one) through.
    pub fn open(&self) {
        self.0.add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
    }
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Holds every write of `group_id` made from now on until the returned
    /// gate opens, as a slow disk or a stuck lock on a network volume
    /// would. The writes are applied when they are made (ordered), only
    /// their durability waits.
    pub fn park(&self, group_id: &str) -> Gate {
        let gate = Gate(Arc::new(tokio::sync::Semaphore::new(0)));
        self.parked
            .lock()
            .insert(group_id.to_string(), gate.clone());
        gate
    }

    /// How many logs [`GroupStore::peek`] has read.
    pub fn peeks(&self) -> usize {
        self.peeks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The group as it is stored now.
    pub fn stored(&self, group_id: &str) -> Option<StoredGroup> {
        self.groups.lock().get(group_id).cloned()
    }

    fn write(
        &self,
        group_id: &str,
        apply: impl FnOnce(&mut HashMap<String, StoredGroup>),
    ) -> Durable {
        apply(&mut self.groups.lock());
        let gate = self.parked.lock().get(group_id).cloned();
        Box::pin(async move {
            if let Some(Gate(sem)) = gate {
                let _ = sem.acquire().await;
            }
            Ok(())
        })
    }
}

impl GroupStore for MemoryStore {
    fn load(&self, group_id: &str) -> Result<Option<StoredGroup>, StoreError> {
        Ok(self.stored(group_id))
    }

    fn peek(&self, group_id: &str) -> Result<Option<StoredGroup>, StoreError> {
        self.peeks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.stored(group_id))
    }

    fn commit_offsets(&self, group_id: &str, offsets: &CommittedOffsets) -> Durable {
        self.write(group_id, |groups| {
            let group = groups.entry(group_id.to_string()).or_default();
            for (topic, partition, offset) in offsets.iter() {
                group.offsets.commit(topic, *partition, offset.clone());
            }
        })
    }

    fn delete_offsets(&self, group_id: &str, partitions: &[(String, i32)]) -> Durable {
        self.write(group_id, |groups| {
            if let Some(group) = groups.get_mut(group_id) {
                for (topic, partition) in partitions {
                    group.offsets.delete(topic, *partition);
                }
            }
        })
    }

    fn write_txn_offsets(
        &self,
        group_id: &str,
        producer_id: i64,
        offsets: &CommittedOffsets,
    ) -> Durable {
        self.write(group_id, |groups| {
            let group = groups.entry(group_id.to_string()).or_default();
            group.offsets.stage(
                producer_id,
                offsets.iter().map(|(t, p, o)| (t.clone(), *p, o.clone())),
            );
        })
    }

    fn end_txn_offsets(&self, group_id: &str, producer_id: i64, commit: bool) -> Durable {
        self.write(group_id, |groups| {
            if let Some(group) = groups.get_mut(group_id) {
                group.offsets.end_txn(producer_id, commit);
            }
        })
    }

    fn write_metadata(&self, group_id: &str, record: Option<&GroupMetadataRecord>) -> Durable {
        self.write(group_id, |groups| match record {
            Some(record) => {
                groups.entry(group_id.to_string()).or_default().metadata = Some(record.clone())
            }
            None => {
                if let Some(group) = groups.get_mut(group_id) {
                    group.metadata = None;
                }
            }
        })
    }

    fn write_consumer_records(&self, group_id: &str, records: &[ConsumerGroupRecord]) -> Durable {
        self.write(group_id, |groups| {
            let stored = groups.entry(group_id.to_string()).or_default();
            replay_change(&mut stored.consumer, group_id, records);
        })
    }

    fn convert_group(
        &self,
        group_id: &str,
        conversion: &Conversion,
        records: &[ConsumerGroupRecord],
    ) -> Durable {
        self.write(group_id, |groups| {
            let stored = groups.entry(group_id.to_string()).or_default();
            stored.metadata = conversion.classic_metadata().cloned();
            replay_change(&mut stored.consumer, group_id, records);
        })
    }

    fn delete_group(&self, group_id: &str) -> Durable {
        self.write(group_id, |groups| {
            groups.remove(group_id);
        })
    }

    fn list_groups(&self) -> io::Result<Vec<String>> {
        let mut ids: Vec<String> = self.groups.lock().keys().cloned().collect();
        ids.sort();
        Ok(ids)
    }

    fn close(&self, _group_id: &str) {}
}
