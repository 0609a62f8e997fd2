//! What the cleaner knows of transactions while it walks a log (Apache's
//! `CleanedTransactionMetadata`): which batches belong to an aborted
//! transaction (dropped), and which markers may go (an abort marker once
//! none of its transaction's batches are left, a commit marker once none
//! were seen in this pass).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::storage::batch::{BatchHeader, ControlMarker};
use crate::storage::txn_index::AbortedTxn;

#[derive(Debug, Default)]
pub struct CleanedTransactions {
    ongoing_committed: HashSet<i64>,
    /// Aborted transactions reached: producer → whether a batch of it was
    /// seen in this pass.
    ongoing_aborted: HashMap<i64, bool>,
    /// Aborted transactions not reached yet, by first offset.
    aborted: BTreeMap<(i64, i64), AbortedTxn>,
}

impl CleanedTransactions {
    pub fn add_aborted(&mut self, txns: impl IntoIterator<Item = AbortedTxn>) {
        for t in txns {
            self.aborted.insert((t.first_offset, t.producer_id), t);
        }
    }

    fn reach(&mut self, offset: i64) {
        while let Some(entry) = self.aborted.first_entry() {
            if entry.key().0 > offset {
                break;
            }
            let t = entry.remove();
            self.ongoing_aborted.entry(t.producer_id).or_insert(false);
        }
    }

    /// A control batch was read: whether it may be discarded. `marker` is
    /// its transaction marker (None: empty, or another control type).
    pub fn on_control_batch(&mut self, h: &BatchHeader, marker: Option<ControlMarker>) -> bool {
        self.reach(h.last_offset());
        if h.record_count == 0 {
            // Emptied by an earlier cleaning: safe to drop.
            return true;
        }
        match marker {
            // Kept while batches of the transaction are still in the log.
            Some(ControlMarker { commit: false, .. }) => {
                !self.ongoing_aborted.remove(&h.producer_id).unwrap_or(false)
            }
            Some(ControlMarker { commit: true, .. }) => {
                !self.ongoing_committed.remove(&h.producer_id)
            }
            None => false,
        }
    }

    /// A data batch was read: whether it belongs to an aborted transaction.
    pub fn on_batch(&mut self, h: &BatchHeader) -> bool {
        self.reach(h.last_offset());
        if !h.is_transactional() {
            return false;
        }
        match self.ongoing_aborted.get_mut(&h.producer_id) {
            Some(seen) => {
                *seen = true;
                true
            }
            None => {
                self.ongoing_committed.insert(h.producer_id);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(base: i64, last_delta: i32, pid: i64, attributes: i16, count: i32) -> BatchHeader {
        BatchHeader {
            base_offset: base,
            size: 61,
            last_offset_delta: last_delta,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: 0,
            record_count: count,
            attributes,
        }
    }
    const TXN: i16 = 0x10;
    const CONTROL: i16 = 0x30;
    fn marker(commit: bool) -> Option<ControlMarker> {
        Some(ControlMarker {
            commit,
            coordinator_epoch: 0,
        })
    }

    #[test]
    fn aborted_batches_go_and_their_marker_stays_while_they_were_there() {
        let mut t = CleanedTransactions::default();
        t.add_aborted([AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 2,
            last_stable_offset: 3,
        }]);
        assert!(t.on_batch(&header(0, 1, 1, TXN, 2)), "aborted data");
        assert!(!t.on_batch(&header(2, 0, 2, TXN, 1)), "another producer's");
        // The abort marker stays: its transaction's data was in this pass.
        assert!(!t.on_control_batch(&header(3, 0, 1, CONTROL, 1), marker(false)));
        // The commit marker of producer 2 stays too: its data was seen.
        assert!(!t.on_control_batch(&header(4, 0, 2, CONTROL, 1), marker(true)));
        // A later pass, the data gone: both markers may go.
        let mut t = CleanedTransactions::default();
        t.add_aborted([AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 2,
            last_stable_offset: 3,
        }]);
        assert!(t.on_control_batch(&header(3, 0, 1, CONTROL, 1), marker(false)));
        assert!(t.on_control_batch(&header(4, 0, 2, CONTROL, 1), marker(true)));
        assert!(
            t.on_control_batch(&header(5, 0, 2, CONTROL, 0), None),
            "empty"
        );
    }
}
