//! Idempotent and transactional producers, per partition, as Apache's
//! `ProducerStateManager` keeps them: the last batches of each producer,
//! so a retried batch is acknowledged once and a gap is refused; the open
//! transaction of each transactional producer (its first offset), which
//! the last stable offset waits for; and the checks a transaction marker
//! passes (the producer's epoch, the coordinator's epoch).

use std::collections::{BTreeMap, HashMap, VecDeque};

use kafka_protocol::ResponseError;

/// Batches remembered per producer (Kafka keeps the last five).
const REMEMBERED: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchIdentity {
    pub producer_id: i64,
    pub epoch: i16,
    pub first_sequence: i32,
    pub last_sequence: i32,
    /// The batch belongs to a transaction.
    pub transactional: bool,
    /// The batch's largest timestamp: when the producer was last active
    /// (for `producer.id.expiration.ms`).
    pub max_timestamp: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Append it.
    Append,
    /// Already in the log at this base offset: acknowledge, do not append.
    Duplicate { base_offset: i64 },
    /// Refuse with this error code.
    Refuse(i16),
}

/// A transaction ended by a marker: its data from `first_offset`, its
/// marker at `last_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub aborted: bool,
}

/// A producer as DescribeProducers reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    pub producer_id: i64,
    pub epoch: i16,
    pub last_sequence: i32,
    pub coordinator_epoch: i32,
    pub txn_first_offset: Option<i64>,
}

#[derive(Debug)]
struct Producer {
    epoch: i16,
    /// (first sequence, last sequence, base offset), oldest first.
    recent: VecDeque<(i32, i32, i64)>,
    /// The epoch of the coordinator that wrote the last marker.
    coordinator_epoch: i32,
    /// The first offset of the producer's open transaction.
    txn_first_offset: Option<i64>,
    /// The largest timestamp of its last batch or marker.
    last_timestamp: i64,
}

impl Producer {
    fn new(epoch: i16) -> Producer {
        Producer {
            epoch,
            recent: VecDeque::new(),
            coordinator_epoch: -1,
            txn_first_offset: None,
            last_timestamp: -1,
        }
    }

    /// A new epoch forgets the batches of the old one.
    fn set_epoch(&mut self, epoch: i16) {
        if epoch != self.epoch {
            self.epoch = epoch;
            self.recent.clear();
        }
    }
}

#[derive(Debug, Default)]
pub struct ProducerStates {
    producers: HashMap<i64, Producer>,
    /// Open transactions by first offset: the producer id.
    ongoing: BTreeMap<i64, i64>,
}

fn next_sequence(seq: i32) -> i32 {
    if seq == i32::MAX {
        0
    } else {
        seq + 1
    }
}

const OUT_OF_ORDER: i16 = ResponseError::OutOfOrderSequenceNumber.code();

impl ProducerStates {
    pub fn check(&self, b: &BatchIdentity) -> Verdict {
        if b.producer_id < 0 {
            return Verdict::Append;
        }
        let Some(p) = self.producers.get(&b.producer_id) else {
            // Unknown to this log (new producer, or its batches were in an
            // older segment): accept from wherever it is.
            return Verdict::Append;
        };
        if b.epoch < p.epoch {
            return Verdict::Refuse(ResponseError::InvalidProducerEpoch.code());
        }
        if b.epoch == p.epoch {
            if let Some(&(_, _, base)) = p
                .recent
                .iter()
                .find(|(f, l, _)| *f == b.first_sequence && *l == b.last_sequence)
            {
                return Verdict::Duplicate { base_offset: base };
            }
        }
        let in_sequence = match p.recent.back() {
            // A new epoch, or only a marker of this one left: from 0.
            _ if b.epoch > p.epoch => b.first_sequence == 0,
            None => b.first_sequence == 0,
            Some(&(_, last, _)) => b.first_sequence == next_sequence(last),
        };
        if !in_sequence {
            return Verdict::Refuse(OUT_OF_ORDER);
        }
        if p.txn_first_offset.is_some() && !b.transactional {
            // A plain write while the producer's transaction is open.
            return Verdict::Refuse(ResponseError::InvalidTxnState.code());
        }
        Verdict::Append
    }

    /// Records an appended batch.
    pub fn record(&mut self, b: &BatchIdentity, base_offset: i64) {
        if b.producer_id < 0 {
            return;
        }
        let p = self
            .producers
            .entry(b.producer_id)
            .or_insert_with(|| Producer::new(b.epoch));
        p.set_epoch(b.epoch);
        p.last_timestamp = b.max_timestamp;
        p.recent
            .push_back((b.first_sequence, b.last_sequence, base_offset));
        while p.recent.len() > REMEMBERED {
            p.recent.pop_front();
        }
        if b.transactional && p.txn_first_offset.is_none() {
            p.txn_first_offset = Some(base_offset);
            self.ongoing.insert(base_offset, b.producer_id);
        }
    }

    /// Whether a marker of this producer and coordinator epoch may be
    /// appended: not from an older producer epoch, nor from a coordinator
    /// older than the last marker's.
    pub fn check_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
    ) -> Result<(), i16> {
        let Some(p) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        if epoch < p.epoch {
            return Err(ResponseError::InvalidProducerEpoch.code());
        }
        if coordinator_epoch < p.coordinator_epoch {
            return Err(ResponseError::TransactionCoordinatorFenced.code());
        }
        Ok(())
    }

    /// Records an appended marker at `offset`: the producer's open
    /// transaction, if any, ends with it. A marker from a bumped epoch (a
    /// fence, or transaction version 2) moves the producer to that epoch.
    pub fn record_marker(
        &mut self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        offset: i64,
        commit: bool,
        timestamp: i64,
    ) -> Option<CompletedTxn> {
        let p = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| Producer::new(epoch));
        p.last_timestamp = timestamp;
        let completed = p.txn_first_offset.take().map(|first_offset| CompletedTxn {
            producer_id,
            first_offset,
            last_offset: offset,
            aborted: !commit,
        });
        p.set_epoch(epoch);
        p.coordinator_epoch = coordinator_epoch;
        if let Some(c) = &completed {
            self.ongoing.remove(&c.first_offset);
        }
        completed
    }

    /// Forgets producers with no open transaction whose last batch or
    /// marker is `expiration_ms` old at `now_ms` (Apache's
    /// `removeExpiredProducers`, `producer.id.expiration.ms`); how many.
    /// A forgotten idempotent producer's next batch is accepted from any
    /// sequence, as a new producer's.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, p| {
            p.txn_first_offset.is_some() || now_ms - p.last_timestamp < expiration_ms
        });
        before - self.producers.len()
    }

    /// The first offset of the oldest open transaction: reads of committed
    /// data stop before it.
    pub fn first_undecided_offset(&self) -> Option<i64> {
        self.ongoing.keys().next().copied()
    }

    /// Where reads of committed data could stop once `completed` (already
    /// recorded) is: the next open transaction's first offset, or just past
    /// its marker (Apache's `lastStableOffset(completedTxn)`).
    pub fn last_stable_offset_after(&self, completed: &CompletedTxn) -> i64 {
        self.first_undecided_offset()
            .unwrap_or(completed.last_offset + 1)
    }

    /// The first offset of the producer's open transaction.
    pub fn open_transaction(&self, producer_id: i64) -> Option<i64> {
        self.producers
            .get(&producer_id)
            .and_then(|p| p.txn_first_offset)
    }

    /// The producer has a transaction open here at this epoch (Apache's
    /// `hasOngoingTransaction`): its next batch needs no verification.
    pub fn has_ongoing_transaction(&self, producer_id: i64, epoch: i16) -> bool {
        self.producers
            .get(&producer_id)
            .is_some_and(|p| p.epoch == epoch && p.txn_first_offset.is_some())
    }

    /// Every producer the log knows, by id (DescribeProducers).
    pub fn active(&self) -> Vec<ActiveProducer> {
        let mut out: Vec<ActiveProducer> = self
            .producers
            .iter()
            .map(|(&producer_id, p)| ActiveProducer {
                producer_id,
                epoch: p.epoch,
                last_sequence: p.recent.back().map_or(-1, |r| r.1),
                coordinator_epoch: p.coordinator_epoch,
                txn_first_offset: p.txn_first_offset,
            })
            .collect();
        out.sort_by_key(|p| p.producer_id);
        out
    }

    /// Per producer, the last offset of its last data batch (if the log
    /// still holds one) and its epoch: the batches the cleaner keeps.
    pub fn last_records(&self) -> HashMap<i64, (Option<i64>, i16)> {
        self.producers
            .iter()
            .map(|(&id, p)| {
                let last = p.recent.back().map(|&(first, last, base)| {
                    let span = (i64::from(last) - i64::from(first)).rem_euclid(1 << 31);
                    base + span
                });
                (id, (last, p.epoch))
            })
            .collect()
    }

    /// The producer's epoch and last sequence, if the log knows it.
    pub fn producer(&self, producer_id: i64) -> Option<(i16, Option<i32>)> {
        self.producers
            .get(&producer_id)
            .map(|p| (p.epoch, p.recent.back().map(|r| r.1)))
    }
}

/// The producers as a snapshot stores them ([`super::producer_snapshot`]):
/// per producer its id, epoch, coordinator epoch, open transaction's first
/// offset (-1: none), last timestamp and remembered batches, big-endian.
impl ProducerStates {
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let mut ids: Vec<&i64> = self.producers.keys().collect();
        ids.sort_unstable();
        out.extend_from_slice(&(ids.len() as u32).to_be_bytes());
        for id in ids {
            let p = &self.producers[id];
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&p.epoch.to_be_bytes());
            out.extend_from_slice(&p.coordinator_epoch.to_be_bytes());
            out.extend_from_slice(&p.txn_first_offset.unwrap_or(-1).to_be_bytes());
            out.extend_from_slice(&p.last_timestamp.to_be_bytes());
            out.push(p.recent.len() as u8);
            for (first, last, base) in &p.recent {
                out.extend_from_slice(&first.to_be_bytes());
                out.extend_from_slice(&last.to_be_bytes());
                out.extend_from_slice(&base.to_be_bytes());
            }
        }
    }

    /// The inverse of [`ProducerStates::encode_into`]; `None` when `buf`
    /// is short.
    pub fn decode_from(buf: &mut &[u8]) -> Option<ProducerStates> {
        let mut states = ProducerStates::default();
        let count = take_u32(buf)?;
        for _ in 0..count {
            let id = take_i64(buf)?;
            let mut p = Producer::new(i16::from_be_bytes(take(buf)?));
            p.coordinator_epoch = i32::from_be_bytes(take(buf)?);
            let first_offset = take_i64(buf)?;
            p.last_timestamp = take_i64(buf)?;
            let [recent] = take::<1>(buf)?;
            for _ in 0..recent {
                let first = i32::from_be_bytes(take(buf)?);
                let last = i32::from_be_bytes(take(buf)?);
                p.recent.push_back((first, last, take_i64(buf)?));
            }
            if first_offset >= 0 {
                p.txn_first_offset = Some(first_offset);
                states.ongoing.insert(first_offset, id);
            }
            states.producers.insert(id, p);
        }
        Some(states)
    }
}

fn take<const N: usize>(buf: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = buf.split_first_chunk::<N>()?;
    *buf = rest;
    Some(*head)
}

pub(super) fn take_i64(buf: &mut &[u8]) -> Option<i64> {
    take(buf).map(i64::from_be_bytes)
}

pub(super) fn take_u32(buf: &mut &[u8]) -> Option<u32> {
    take(buf).map(u32::from_be_bytes)
}

#[cfg(test)]
mod tests;
