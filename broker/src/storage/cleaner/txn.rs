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
mod tests;
