//! The table a group log's records add up to: what a load returns and
//! what a snapshot writes. Offset records are replayed by
//! [`GroupOffsets`] (the code the coordinator applies its writes with);
//! consumer group records are compacted by key ([`CompactedRecords`]), to
//! be replayed by the coordinator when it loads the group.

use std::io;
use std::sync::Arc;

use bytes::BufMut;

use super::records::{
    offsets_capacity, put_offsets, ClaimBody, FrameBuf, Offsets, Record, TxnBody, KIND_SNAPSHOT,
    SECTION_CLAIM_INCARNATION, SECTION_CONSUMER, SECTION_PENDING, SECTION_TXN,
};
use crate::records::classic::GroupMetadataRecord;
use crate::records::consumer::CompactedRecords;
use crate::records::offsets::GroupOffsets;

/// The materialised state: what the records so far add up to.
#[derive(Debug, Default)]
pub(super) struct Table {
    /// Committed offsets, and a group's transactional offsets pending by
    /// producer.
    pub offsets: GroupOffsets,
    pub metadata: Option<GroupMetadataRecord>,
    /// The last owner claim.
    pub claim: Option<ClaimBody>,
    /// A transaction log's transactional id state.
    pub txn: Option<TxnBody>,
    /// A KIP-848 consumer group's records, compacted by key.
    pub consumer: CompactedRecords,
}

impl Table {
    pub fn apply(&mut self, record: Record) {
        match record {
            Record::Header(_) => {}
            Record::Commit(offsets) => self.commit(offsets),
            Record::Delete(keys) => {
                for k in keys {
                    self.offsets.delete(&k.topic, k.partition);
                }
            }
            Record::Metadata(m) => self.metadata = m,
            Record::Claim(c) => self.claim = Some(c),
            Record::Txn(t) => self.txn = t,
            Record::TxnOffsets {
                producer_id,
                offsets,
            } => self.stage(producer_id, offsets),
            Record::TxnEnd {
                producer_id,
                commit,
            } => {
                self.offsets.end_txn(producer_id, commit);
            }
            Record::Consumer(records) => records.iter().for_each(|r| self.consumer.apply(r)),
            Record::Conversion(c) => {
                self.metadata = c.metadata;
                c.consumer.iter().for_each(|r| self.consumer.apply(r));
            }
            Record::Snapshot(s) => {
                self.offsets = GroupOffsets::default();
                self.metadata = s.metadata;
                self.claim = s.claim;
                self.txn = s.txn;
                self.consumer = s.consumer.iter().flatten().collect();
                self.commit(s.offsets);
                for (producer_id, offsets) in s.pending {
                    self.stage(producer_id, offsets);
                }
            }
        }
    }

    fn commit(&mut self, offsets: Offsets) {
        for (t, p, o) in offsets {
            self.offsets.commit(&t, p, o);
        }
    }

    fn stage(&mut self, producer_id: i64, offsets: Offsets) {
        let offsets = offsets.into_iter().map(|(t, p, o)| (Arc::from(t), p, o));
        self.offsets.stage(producer_id, offsets);
    }

    /// The framed snapshot record of the table.
    pub fn encode_snapshot(&self) -> io::Result<Vec<u8>> {
        let count = self.offsets.committed_len();
        let capacity = offsets_capacity(self.offsets.committed().map(|(t, _, o)| (t, o)));
        let mut f = FrameBuf::new(KIND_SNAPSHOT, capacity + 32);
        put_offsets(&mut f.0, count, self.offsets.committed())?;
        match &self.metadata {
            None => f.0.put_u8(0),
            Some(m) => {
                let json = serde_json::to_vec(m).map_err(io::Error::other)?;
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
            let json = serde_json::to_vec(t).map_err(io::Error::other)?;
            f.0.put_u8(SECTION_TXN);
            f.0.put_u32(u32::try_from(json.len()).map_err(io::Error::other)?);
            f.0.put_slice(&json);
        }
        let pending = self.offsets.pending();
        if !pending.is_empty() {
            f.0.put_u8(SECTION_PENDING);
            f.0.put_u32(u32::try_from(pending.len()).map_err(io::Error::other)?);
            for (producer_id, offsets) in pending {
                f.0.put_i64(*producer_id);
                put_offsets(
                    &mut f.0,
                    offsets.len(),
                    offsets.iter().map(|(t, p, o)| (&**t, *p, o)),
                )?;
            }
        }
        if !self.consumer.is_empty() {
            let records: Vec<_> = self.consumer.records().collect();
            let json = serde_json::to_vec(&records).map_err(io::Error::other)?;
            f.0.put_u8(SECTION_CONSUMER);
            f.0.put_u32(u32::try_from(json.len()).map_err(io::Error::other)?);
            f.0.put_slice(&json);
        }
        f.finish()
    }
}
