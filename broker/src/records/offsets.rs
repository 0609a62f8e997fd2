//! A group's offsets and the one replay of the records that change them
//! (Apache's `OffsetMetadataManager.replay`): a commit, its tombstone, a
//! transaction's offsets staged for its producer, and the transaction's
//! end that makes them the group's or drops them. The group coordinator
//! applies its writes through it once they are durable, the group log
//! replays its records through it at load and to write a snapshot, and the
//! in-memory store of the coordinator's tests keeps its state in it: the
//! same code decides what every record kind means, live and at load.
//!
//! Plain values, no I/O: below the coordinators and storage alike.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::vecmap::VecMap;

/// One committed offset (Apache's `OffsetAndMetadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    pub offset: i64,
    pub leader_epoch: Option<i32>,
    pub metadata: String,
    pub commit_timestamp_ms: u64,
    /// Explicit expiry from a v2–v4 `retention_time_ms`; None uses the broker
    /// retention.
    pub expire_timestamp_ms: Option<u64>,
}

/// One producer's staged offsets, by (topic, partition), in arrival order.
pub type PendingOffsets = Vec<(Arc<str>, i32, OffsetAndMetadata)>;

/// Committed offsets by topic, then partition.
pub type CommittedTable = VecMap<String, VecMap<i32, OffsetAndMetadata>>;

/// What a group's offset records add up to: the committed offsets, and the
/// offsets of open transactions by producer id, which are not the group's
/// (OffsetFetch does not show them) until their transaction commits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupOffsets {
    /// Nested by topic, so updating a known partition allocates nothing.
    committed: CommittedTable,
    pending: BTreeMap<i64, PendingOffsets>,
}

impl GroupOffsets {
    /// An offset commit record: the partition's offset is `o`.
    pub fn commit(&mut self, topic: &str, partition: i32, o: OffsetAndMetadata) {
        match self.committed.get_mut(topic) {
            Some(partitions) => {
                partitions.insert(partition, o);
            }
            None => {
                self.committed
                    .get_or_default(topic.to_string())
                    .insert(partition, o);
            }
        }
    }

    /// An offset's tombstone: the partition has no committed offset, and
    /// no open transaction's offset for it is left to commit (Apache
    /// removes those with the tombstone; the transactions stay open).
    pub fn delete(&mut self, topic: &str, partition: i32) {
        if let Some(partitions) = self.committed.get_mut(topic) {
            partitions.remove(&partition);
            if partitions.is_empty() {
                self.committed.remove(topic);
            }
        }
        for staged in self.pending.values_mut() {
            staged.retain(|(t, p, _)| !(&**t == topic && *p == partition));
        }
    }

    /// A transactional offset commit record: the offsets are staged for
    /// `producer_id`, a later one for a partition replacing the earlier.
    pub fn stage(
        &mut self,
        producer_id: i64,
        offsets: impl IntoIterator<Item = (Arc<str>, i32, OffsetAndMetadata)>,
    ) {
        let pending = self.pending.entry(producer_id).or_default();
        for (topic, partition, o) in offsets {
            match pending
                .iter_mut()
                .find(|(t, p, _)| *t == topic && *p == partition)
            {
                Some(entry) => entry.2 = o,
                None => pending.push((topic, partition, o)),
            }
        }
    }

    /// A transaction's end for the group: the producer's staged offsets
    /// become committed ones (`commit`) or are dropped. False when nothing
    /// was staged.
    pub fn end_txn(&mut self, producer_id: i64, commit: bool) -> bool {
        let Some(offsets) = self.pending.remove(&producer_id) else {
            return false;
        };
        if commit {
            for (topic, partition, o) in offsets {
                self.commit(&topic, partition, o);
            }
        }
        true
    }

    /// The committed offset of a partition.
    pub fn get(&self, topic: &str, partition: i32) -> Option<&OffsetAndMetadata> {
        self.committed.get(topic)?.get(&partition)
    }

    /// The committed offsets by topic, then partition.
    pub fn by_topic(&self) -> &CommittedTable {
        &self.committed
    }

    /// Every committed offset, sorted by topic, then partition.
    pub fn committed(&self) -> impl Iterator<Item = (&str, i32, &OffsetAndMetadata)> {
        self.committed
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |(p, o)| (t.as_str(), *p, o)))
    }

    /// How many partitions have a committed offset.
    pub fn committed_len(&self) -> usize {
        self.committed.iter().map(|(_, ps)| ps.len()).sum()
    }

    /// Every committed offset, owned (sorted by topic, then partition).
    pub fn committed_vec(&self) -> Vec<(String, i32, OffsetAndMetadata)> {
        self.committed()
            .map(|(t, p, o)| (t.to_string(), p, o.clone()))
            .collect()
    }

    /// The staged offsets of open transactions, by producer id.
    pub fn pending(&self) -> &BTreeMap<i64, PendingOffsets> {
        &self.pending
    }

    /// Whether an open transaction staged an offset for the partition.
    pub fn has_pending(&self, topic: &str, partition: i32) -> bool {
        self.pending
            .values()
            .flatten()
            .any(|(t, p, _)| &**t == topic && *p == partition)
    }

    /// Neither committed nor staged offsets.
    pub fn is_empty(&self) -> bool {
        self.committed.is_empty() && self.pending.is_empty()
    }

    /// Returns spare capacity (a group just loaded keeps what it holds).
    pub fn shrink_to_fit(&mut self) {
        self.committed
            .values_mut()
            .for_each(|partitions| partitions.shrink_to_fit());
        self.committed.shrink_to_fit();
    }
}

/// Committed offsets, each replayed as a commit record.
impl FromIterator<(String, i32, OffsetAndMetadata)> for GroupOffsets {
    fn from_iter<I: IntoIterator<Item = (String, i32, OffsetAndMetadata)>>(iter: I) -> Self {
        let mut offsets = GroupOffsets::default();
        for (topic, partition, o) in iter {
            offsets.commit(&topic, partition, o);
        }
        offsets
    }
}

impl From<Vec<(String, i32, OffsetAndMetadata)>> for GroupOffsets {
    fn from(offsets: Vec<(String, i32, OffsetAndMetadata)>) -> Self {
        offsets.into_iter().collect()
    }
}

#[cfg(test)]
mod tests;
