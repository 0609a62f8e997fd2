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
mod tests {
    use super::*;

    fn batch(epoch: i16, first: i32, last: i32) -> BatchIdentity {
        BatchIdentity {
            producer_id: 7,
            epoch,
            first_sequence: first,
            last_sequence: last,
            transactional: false,
            max_timestamp: 0,
        }
    }

    // Apache's ProducerStateManagerTest, the transaction cases (names kept;
    // producer id 1, epoch 0, as its fixture).

    const PID: i64 = 1;

    fn data(epoch: i16, seq: i32, transactional: bool) -> BatchIdentity {
        BatchIdentity {
            producer_id: PID,
            epoch,
            first_sequence: seq,
            last_sequence: seq,
            transactional,
            max_timestamp: 0,
        }
    }

    /// Apache's `appendClientEntry`: checked, then recorded at `offset`.
    fn append(s: &mut ProducerStates, b: BatchIdentity, offset: i64) -> Result<(), i16> {
        match s.check(&b) {
            Verdict::Append => {
                s.record(&b, offset);
                Ok(())
            }
            Verdict::Refuse(code) => Err(code),
            Verdict::Duplicate { .. } => Err(OUT_OF_ORDER),
        }
    }

    fn marker(
        s: &mut ProducerStates,
        epoch: i16,
        commit: bool,
        offset: i64,
        coordinator_epoch: i32,
    ) -> Result<Option<CompletedTxn>, i16> {
        s.check_marker(PID, epoch, coordinator_epoch)?;
        Ok(s.record_marker(PID, epoch, coordinator_epoch, offset, commit, 0))
    }

    const INVALID_PRODUCER_EPOCH: i16 = ResponseError::InvalidProducerEpoch.code();

    #[test]
    fn test_append_txn_marker_with_no_producer_state() {
        let mut s = ProducerStates::default();
        marker(&mut s, 2, true, 27, 0).unwrap();
        assert_eq!(s.producer(PID), Some((2, None)));
        // Fencing goes on with only the marker left.
        assert_eq!(
            append(&mut s, data(0, 0, false), 4),
            Err(INVALID_PRODUCER_EPOCH)
        );
        assert_eq!(append(&mut s, data(2, 17, false), 4), Err(OUT_OF_ORDER));
        append(&mut s, data(2, 0, false), 4).unwrap();
        assert_eq!(s.producer(PID), Some((2, Some(0))));
    }

    #[test]
    fn test_control_record_bumps_producer_epoch() {
        let mut s = ProducerStates::default();
        append(&mut s, data(0, 0, false), 0).unwrap();
        marker(&mut s, 1, false, 1, 0).unwrap();
        assert_eq!(s.producer(PID), Some((1, None)));
        assert_eq!(s.open_transaction(PID), None);
        append(&mut s, data(1, 0, false), 2).unwrap();
    }

    #[test]
    fn update_producer_transaction_state() {
        let mut s = ProducerStates::default();
        append(&mut s, data(0, 0, false), 9).unwrap();
        let mut txn = data(0, 1, true);
        txn.last_sequence = 5;
        append(&mut s, txn, 16).unwrap();
        assert_eq!(s.open_transaction(PID), Some(16));
        let mut more = data(0, 6, true);
        more.last_sequence = 10;
        append(&mut s, more, 26).unwrap();
        assert_eq!(s.open_transaction(PID), Some(16), "the first offset stays");
        let completed = marker(&mut s, 0, true, 40, 15).unwrap().unwrap();
        assert_eq!(
            completed,
            CompletedTxn {
                producer_id: PID,
                first_offset: 16,
                last_offset: 40,
                aborted: false
            }
        );
        assert_eq!(s.open_transaction(PID), None);
        assert_eq!(s.producer(PID), Some((0, Some(10))), "the batches are kept");
    }

    #[test]
    fn test_out_of_sequence_after_control_record_epoch_bump() {
        let mut s = ProducerStates::default();
        append(&mut s, data(0, 0, true), 0).unwrap();
        append(&mut s, data(0, 1, true), 1).unwrap();
        marker(&mut s, 1, false, 1, 0).unwrap();
        assert_eq!(append(&mut s, data(1, 2, true), 2), Err(OUT_OF_ORDER));
        assert_eq!(append(&mut s, data(2, 2, true), 2), Err(OUT_OF_ORDER));
        append(&mut s, data(1, 0, true), 0).unwrap();
        assert_eq!(s.producer(PID), Some((1, Some(0))));
    }

    /// Transaction version 2 (UnifiedLogTest's
    /// testTransactionIsOngoingAndVerificationGuard): a transaction is
    /// ongoing for its producer's epoch only; the next transaction comes at
    /// the epoch its marker bumped to, starts at sequence 0, and is new to
    /// the partition until its first batch lands.
    #[test]
    fn test_transaction_is_ongoing_for_its_epoch_only() {
        let mut s = ProducerStates::default();
        assert!(!s.has_ongoing_transaction(PID, 0));
        append(&mut s, data(0, 0, true), 0).unwrap();
        assert!(s.has_ongoing_transaction(PID, 0));
        assert!(!s.has_ongoing_transaction(PID, 1));
        marker(&mut s, 1, true, 1, 0).unwrap();
        assert!(!s.has_ongoing_transaction(PID, 1));
        append(&mut s, data(1, 0, true), 2).unwrap();
        assert!(s.has_ongoing_transaction(PID, 1));
        marker(&mut s, 2, false, 3, 0).unwrap();
        // The transaction at epoch 3 left this partition out: the one at
        // epoch 4 starts here at sequence 0 too.
        assert_eq!(append(&mut s, data(4, 1, true), 4), Err(OUT_OF_ORDER));
        append(&mut s, data(4, 0, true), 4).unwrap();
        assert!(s.has_ongoing_transaction(PID, 4));
    }

    #[test]
    fn test_non_transactional_append_with_ongoing_transaction() {
        let mut s = ProducerStates::default();
        append(&mut s, data(0, 0, true), 0).unwrap();
        assert_eq!(
            append(&mut s, data(0, 1, false), 1),
            Err(ResponseError::InvalidTxnState.code())
        );
    }

    const EXPIRATION_MS: i64 = 86_400_000;

    /// Apache's `testPidExpirationTimeout`: an idempotent producer idle past
    /// `producer.id.expiration.ms` is forgotten, so its next batch starts
    /// it afresh from whatever sequence it sends.
    #[test]
    fn test_pid_expiration_timeout() {
        let mut s = ProducerStates::default();
        let at = |b: BatchIdentity, ts: i64| BatchIdentity {
            max_timestamp: ts,
            ..b
        };
        append(&mut s, at(data(5, 37, false), 1_000), 1).unwrap();
        assert_eq!(
            s.remove_expired(1_000 + EXPIRATION_MS - 1, EXPIRATION_MS),
            0
        );
        assert_eq!(
            append(&mut s, at(data(5, 40, false), 1_000), 2),
            Err(OUT_OF_ORDER),
            "a gap while it is remembered"
        );
        assert_eq!(s.remove_expired(1_000 + EXPIRATION_MS, EXPIRATION_MS), 1);
        append(&mut s, at(data(5, 40, false), 90_000_000), 2).unwrap();
        assert_eq!(s.active().len(), 1);
        assert_eq!(s.producer(PID), Some((5, Some(40))));
    }

    /// Apache's `testProducersWithOngoingTransactionsDontExpire`.
    #[test]
    fn test_producers_with_ongoing_transactions_dont_expire() {
        let mut s = ProducerStates::default();
        append(&mut s, data(0, 0, true), 99).unwrap();
        assert_eq!(s.first_undecided_offset(), Some(99));
        assert_eq!(s.remove_expired(EXPIRATION_MS + 1, EXPIRATION_MS), 0);
        assert_eq!(s.open_transaction(PID), Some(99));
        assert_eq!(s.first_undecided_offset(), Some(99));
        // Once its transaction ends it expires from the marker's time.
        s.record_marker(PID, 0, 0, 100, true, 5_000);
        assert_eq!(
            s.remove_expired(5_000 + EXPIRATION_MS - 1, EXPIRATION_MS),
            0
        );
        assert_eq!(s.remove_expired(5_000 + EXPIRATION_MS, EXPIRATION_MS), 1);
        assert!(s.producer(PID).is_none());
    }

    #[test]
    fn test_producer_state_after_fencing_abort_marker() {
        let mut s = ProducerStates::default();
        append(&mut s, data(0, 0, true), 0).unwrap();
        marker(&mut s, 1, false, 1, 0).unwrap();
        assert_eq!(s.open_transaction(PID), None);
        assert_eq!(s.producer(PID), Some((1, None)));
    }

    #[test]
    fn test_first_unstable_offset() {
        let mut s = ProducerStates::default();
        assert_eq!(s.first_undecided_offset(), None);
        append(&mut s, data(5, 0, true), 99).unwrap();
        assert_eq!(s.first_undecided_offset(), Some(99));
        let other = BatchIdentity {
            producer_id: 2,
            ..data(5, 0, true)
        };
        append(&mut s, other, 105).unwrap();
        assert_eq!(s.first_undecided_offset(), Some(99));
        let done = marker(&mut s, 5, true, 109, 0).unwrap().unwrap();
        assert_eq!(s.first_undecided_offset(), Some(105));
        assert_eq!(s.last_stable_offset_after(&done), 105);
        s.check_marker(2, 5, 0).unwrap();
        let done = s.record_marker(2, 5, 0, 112, false, 0).unwrap();
        assert_eq!(s.first_undecided_offset(), None);
        assert_eq!(s.last_stable_offset_after(&done), 113);
    }

    #[test]
    fn test_old_epoch_for_control_record() {
        let mut s = ProducerStates::default();
        append(&mut s, data(5, 0, true), 99).unwrap();
        assert_eq!(marker(&mut s, 3, true, 100, 0), Err(INVALID_PRODUCER_EPOCH));
    }

    #[test]
    fn test_coordinator_fencing() {
        let mut s = ProducerStates::default();
        append(&mut s, data(5, 0, true), 99).unwrap();
        marker(&mut s, 5, true, 100, 1).unwrap();
        marker(&mut s, 5, true, 101, 1).unwrap();
        marker(&mut s, 5, true, 102, 2).unwrap();
        assert_eq!(
            marker(&mut s, 5, true, 103, 1),
            Err(ResponseError::TransactionCoordinatorFenced.code())
        );
    }

    #[test]
    fn test_append_empty_control_batch() {
        // A marker for a producer with nothing open ends no transaction and
        // starts none.
        let mut s = ProducerStates::default();
        assert_eq!(marker(&mut s, 0, false, 15, 0).unwrap(), None);
        assert_eq!(s.open_transaction(PID), None);
        assert_eq!(s.first_undecided_offset(), None);
    }

    #[test]
    fn retries_are_duplicates_and_gaps_are_refused() {
        let mut s = ProducerStates::default();
        assert_eq!(s.check(&batch(0, 0, 9)), Verdict::Append);
        s.record(&batch(0, 0, 9), 100);
        assert_eq!(
            s.check(&batch(0, 0, 9)),
            Verdict::Duplicate { base_offset: 100 }
        );
        assert_eq!(s.check(&batch(0, 10, 19)), Verdict::Append);
        s.record(&batch(0, 10, 19), 110);
        assert_eq!(
            s.check(&batch(0, 0, 9)),
            Verdict::Duplicate { base_offset: 100 }
        );
        assert_eq!(
            s.check(&batch(0, 25, 30)),
            Verdict::Refuse(ResponseError::OutOfOrderSequenceNumber.code())
        );
        // A fenced (older) epoch is refused; a new epoch starts at 0.
        s.record(&batch(1, 0, 0), 120);
        assert_eq!(
            s.check(&batch(0, 20, 20)),
            Verdict::Refuse(ResponseError::InvalidProducerEpoch.code())
        );
        assert_eq!(
            s.check(&batch(2, 5, 5)),
            Verdict::Refuse(ResponseError::OutOfOrderSequenceNumber.code())
        );
        assert_eq!(s.check(&batch(2, 0, 3)), Verdict::Append);
    }

    #[test]
    fn only_the_last_five_batches_are_remembered_and_sequences_wrap() {
        let mut s = ProducerStates::default();
        for i in 0..6 {
            s.record(&batch(0, i, i), i64::from(i));
        }
        assert_eq!(
            s.check(&batch(0, 0, 0)),
            Verdict::Refuse(ResponseError::OutOfOrderSequenceNumber.code())
        );
        assert_eq!(
            s.check(&batch(0, 1, 1)),
            Verdict::Duplicate { base_offset: 1 }
        );
        let mut s = ProducerStates::default();
        s.record(&batch(0, i32::MAX - 1, i32::MAX), 0);
        assert_eq!(s.check(&batch(0, 0, 4)), Verdict::Append);
        assert_eq!(
            s.check(&BatchIdentity {
                producer_id: -1,
                ..batch(0, 9, 9)
            }),
            Verdict::Append
        );
    }
}
