//! The aborted transactions of a partition (Apache's `TransactionIndex`):
//! a `read_committed` fetch returns those its range overlaps, so the
//! consumer drops their records.

/// A transaction ended by an ABORT marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    /// The last stable offset once it was aborted: no transaction aborted
    /// after it starts below this.
    pub last_stable_offset: i64,
}

/// Aborted transactions in the order of their markers.
#[derive(Debug, Default)]
pub struct AbortedTxns {
    entries: Vec<AbortedTxn>,
}

impl AbortedTxns {
    /// Adds a transaction whose marker follows every marker added before.
    pub fn push(&mut self, txn: AbortedTxn) {
        debug_assert!(self
            .entries
            .last()
            .is_none_or(|last| last.last_offset < txn.last_offset));
        self.entries.push(txn);
    }

    /// The aborted transactions a read of `[fetch_offset, upper_bound)`
    /// must skip: those ending at or after `fetch_offset` and starting
    /// before `upper_bound` (Apache's `collectAbortedTxns`).
    pub fn overlapping(&self, fetch_offset: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        let start = self
            .entries
            .partition_point(|t| t.last_offset < fetch_offset);
        let mut out = Vec::new();
        for t in &self.entries[start..] {
            if t.first_offset < upper_bound {
                out.push(*t);
            }
            // Everything aborted later started at or past this one's last
            // stable offset.
            if t.last_stable_offset >= upper_bound {
                break;
            }
        }
        out
    }

    /// Forgets transactions whose marker is at or past `offset` (the log
    /// was cut there).
    pub fn truncate_to(&mut self, offset: i64) {
        let keep = self.entries.partition_point(|t| t.last_offset < offset);
        self.entries.truncate(keep);
    }

    /// Forgets transactions wholly before `log_start` (retention removed
    /// their records).
    pub fn drop_before(&mut self, log_start: i64) {
        let drop = self.entries.partition_point(|t| t.last_offset < log_start);
        self.entries.drain(..drop);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Every aborted transaction, in marker order.
    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests;
