//! The table a group log's records add up to: what a load returns and
//! what a snapshot writes. (It replays the records' domain meaning, the
//! offsets, the pending transactional offsets, the consumer group, beside
//! the coordinators' own replay: issue #34 makes that one path.)

use std::io;

use bytes::BufMut;

use super::records::{
    offsets_capacity, put_offsets, ClaimBody, FrameBuf, GroupMeta, Offsets, PendingTxnOffsets,
    Record, TxnBody, KIND_SNAPSHOT, SECTION_CLAIM_INCARNATION, SECTION_CONSUMER, SECTION_PENDING,
    SECTION_TXN,
};
use crate::group::consumer::group::{replay_change, ConsumerGroup};
use crate::group::core::vecmap::VecMap;
use crate::group::core::{GroupMetadataRecord, OffsetAndMetadata};
use crate::txn::core::TxnTransit;

/// The materialised state: what the records so far add up to. Offsets are
/// nested by topic, so updating a known partition allocates nothing.
#[derive(Debug, Default)]
pub(super) struct Table {
    offsets: VecMap<String, VecMap<i32, OffsetAndMetadata>>,
    pub metadata: Option<GroupMetadataRecord>,
    /// The last owner claim.
    pub claim: Option<ClaimBody>,
    /// A transaction log's transactional id state.
    pub txn: Option<TxnTransit>,
    /// A group's transactional offsets, pending by producer.
    pub pending: PendingTxnOffsets,
    /// A KIP-848 consumer group's state.
    pub consumer: Option<ConsumerGroup>,
    /// The group id, from the header (named in replay errors).
    group_id: String,
}

impl Table {
    /// Sets one committed offset.
    pub fn commit(&mut self, topic: &str, partition: i32, o: OffsetAndMetadata) {
        match self.offsets.get_mut(topic) {
            Some(partitions) => {
                partitions.insert(partition, o);
            }
            None => {
                self.offsets
                    .get_or_default(topic.to_string())
                    .insert(partition, o);
            }
        }
    }

    pub fn apply(&mut self, record: Record) {
        match record {
            Record::Header(h) => self.group_id = h.group_id,
            Record::Commit(offsets) => {
                for (t, p, o) in offsets {
                    self.commit(&t, p, o);
                }
            }
            Record::Delete(keys) => {
                for k in keys {
                    if let Some(partitions) = self.offsets.get_mut(k.topic.as_str()) {
                        partitions.remove(&k.partition);
                        if partitions.is_empty() {
                            self.offsets.remove(k.topic.as_str());
                        }
                    }
                }
            }
            Record::Metadata(m) => self.metadata = m.map(Into::into),
            Record::Claim(c) => self.claim = Some(c),
            Record::Txn(t) => self.txn = t,
            Record::TxnOffsets {
                producer_id,
                offsets,
            } => {
                let pending = self.pending.entry(producer_id).or_default();
                for (t, p, o) in offsets {
                    match pending.iter_mut().find(|(pt, pp, _)| *pt == t && *pp == p) {
                        Some(entry) => entry.2 = o,
                        None => pending.push((t, p, o)),
                    }
                }
            }
            Record::TxnEnd {
                producer_id,
                commit,
            } => {
                if let Some(offsets) = self.pending.remove(&producer_id) {
                    if commit {
                        self.apply(Record::Commit(offsets));
                    }
                }
            }
            Record::Consumer(records) => {
                replay_change(&mut self.consumer, &self.group_id, &records)
            }
            Record::Conversion(c) => {
                self.metadata = c.metadata.map(Into::into);
                replay_change(&mut self.consumer, &self.group_id, &c.consumer);
            }
            Record::Snapshot(s) => {
                self.offsets = VecMap::default();
                self.metadata = s.metadata;
                self.claim = s.claim;
                self.txn = s.txn;
                self.pending = s.pending;
                self.consumer = None;
                if let Some(records) = s.consumer {
                    replay_change(&mut self.consumer, &self.group_id, &records);
                }
                self.apply(Record::Commit(s.offsets));
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&str, i32, &OffsetAndMetadata)> {
        self.offsets
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |(p, o)| (t.as_str(), *p, o)))
    }

    /// Every offset, sorted by topic, then partition.
    pub fn offsets(&self) -> Offsets {
        self.iter()
            .map(|(t, p, o)| (t.to_string(), p, o.clone()))
            .collect()
    }

    /// The framed snapshot record of the table.
    pub fn encode_snapshot(&self) -> io::Result<Vec<u8>> {
        let count = self.offsets.iter().map(|(_, ps)| ps.len()).sum();
        let capacity = offsets_capacity(self.iter().map(|(t, _, o)| (t, o)));
        let mut f = FrameBuf::new(KIND_SNAPSHOT, capacity + 32);
        put_offsets(&mut f.0, count, self.iter())?;
        match &self.metadata {
            None => f.0.put_u8(0),
            Some(m) => {
                let json = serde_json::to_vec(&GroupMeta::from(m)).map_err(io::Error::other)?;
                f.0.put_u8(1);
                f.0.put_u32(u32::try_from(json.len()).map_err(io::Error::other)?);
                f.0.put_slice(&json);
            }
        }
        match &self.claim {
            None => f.0.put_u8(0),
            Some(c) => {
                f.0.put_u8(1);
                f.0.put_i32(c.broker);
                f.0.put_u64(c.assignment_version);
            }
        }
        if let Some(c) = self.claim.as_ref().filter(|c| !c.incarnation.is_empty()) {
            f.0.put_u8(SECTION_CLAIM_INCARNATION);
            f.0.put_u16(u16::try_from(c.incarnation.len()).map_err(io::Error::other)?);
            f.0.put_slice(c.incarnation.as_bytes());
        }
        if let Some(t) = &self.txn {
            let json = serde_json::to_vec(&TxnBody::from(t)).map_err(io::Error::other)?;
            f.0.put_u8(SECTION_TXN);
            f.0.put_u32(u32::try_from(json.len()).map_err(io::Error::other)?);
            f.0.put_slice(&json);
        }
        if !self.pending.is_empty() {
            f.0.put_u8(SECTION_PENDING);
            f.0.put_u32(u32::try_from(self.pending.len()).map_err(io::Error::other)?);
            for (producer_id, offsets) in &self.pending {
                f.0.put_i64(*producer_id);
                put_offsets(
                    &mut f.0,
                    offsets.len(),
                    offsets.iter().map(|(t, p, o)| (t.as_str(), *p, o)),
                )?;
            }
        }
        if let Some(group) = &self.consumer {
            let json = serde_json::to_vec(&group.to_records()).map_err(io::Error::other)?;
            f.0.put_u8(SECTION_CONSUMER);
            f.0.put_u32(u32::try_from(json.len()).map_err(io::Error::other)?);
            f.0.put_slice(&json);
        }
        f.finish()
    }
}
