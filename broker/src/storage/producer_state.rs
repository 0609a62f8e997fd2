//! Idempotent producers: per partition, the last batches of each producer,
//! so a retried batch is acknowledged once and a gap is refused — as
//! Apache's `ProducerStateManager` does.

use std::collections::{HashMap, VecDeque};

use kafka_protocol::ResponseError;

/// Batches remembered per producer (Kafka keeps the last five).
const REMEMBERED: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchIdentity {
    pub producer_id: i64,
    pub epoch: i16,
    pub first_sequence: i32,
    pub last_sequence: i32,
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

#[derive(Debug, Default)]
struct Producer {
    epoch: i16,
    /// (first sequence, last sequence, base offset), oldest first.
    recent: VecDeque<(i32, i32, i64)>,
}

#[derive(Debug, Default)]
pub struct ProducerStates {
    producers: HashMap<i64, Producer>,
}

fn next_sequence(seq: i32) -> i32 {
    if seq == i32::MAX {
        0
    } else {
        seq + 1
    }
}

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
        if b.epoch > p.epoch {
            return if b.first_sequence == 0 {
                Verdict::Append
            } else {
                Verdict::Refuse(ResponseError::OutOfOrderSequenceNumber.code())
            };
        }
        if let Some(&(_, _, base)) = p
            .recent
            .iter()
            .find(|(f, l, _)| *f == b.first_sequence && *l == b.last_sequence)
        {
            return Verdict::Duplicate { base_offset: base };
        }
        match p.recent.back() {
            Some(&(_, last, _)) if b.first_sequence != next_sequence(last) => {
                Verdict::Refuse(ResponseError::OutOfOrderSequenceNumber.code())
            }
            _ => Verdict::Append,
        }
    }

    /// Records an appended batch.
    pub fn record(&mut self, b: &BatchIdentity, base_offset: i64) {
        if b.producer_id < 0 {
            return;
        }
        let p = self.producers.entry(b.producer_id).or_default();
        if b.epoch != p.epoch {
            p.epoch = b.epoch;
            p.recent.clear();
        }
        p.recent
            .push_back((b.first_sequence, b.last_sequence, base_offset));
        while p.recent.len() > REMEMBERED {
            p.recent.pop_front();
        }
    }
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
        }
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
