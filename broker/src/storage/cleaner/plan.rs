//! Which compacted log to clean next and over which offsets (Apache's
//! `LogCleanerManager`: `cleanableOffsets`, `maxCompactionDelay`,
//! `grabFilthiestCompactedLog`). Pure: the caller gathers each log's
//! segments and state.

use crate::storage::retention::SegmentInfo;

/// A topic's compaction configs in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionPolicy {
    /// `cleanup.policy` holds `compact`.
    pub compact: bool,
    pub delete_retention_ms: i64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
    pub min_cleanable_dirty_ratio: f64,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        CompactionPolicy {
            compact: false,
            delete_retention_ms: 86_400_000,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.5,
        }
    }
}

/// A log as the planner weighs it.
#[derive(Debug, Clone)]
pub struct LogState {
    /// Oldest first; the last is the active segment.
    pub segments: Vec<SegmentInfo>,
    /// The first batch's largest timestamp of each segment (-1: none).
    pub first_batch_timestamps: Vec<i64>,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// The first offset of the oldest open transaction, else the end.
    pub first_unstable_offset: i64,
    /// Where the last cleaning stopped (the cleaner checkpoint).
    pub checkpoint: Option<i64>,
}

/// What a cleaning of one log covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cleanable {
    pub first_dirty_offset: i64,
    pub first_uncleanable_offset: i64,
    /// Bytes before the dirty section, and in it.
    pub clean_bytes: u64,
    pub cleanable_bytes: u64,
    /// How long past `max.compaction.lag.ms` its oldest dirty record is.
    pub compaction_delay_ms: i64,
}

impl Cleanable {
    pub fn ratio(&self) -> f64 {
        let total = self.clean_bytes + self.cleanable_bytes;
        if total == 0 {
            0.0
        } else {
            self.cleanable_bytes as f64 / total as f64
        }
    }
}

/// The dirty section of `log` at `now_ms` (Apache's `cleanableOffsets`
/// and `maxCompactionDelay`).
pub fn cleanable(log: &LogState, policy: &CompactionPolicy, now_ms: i64) -> Cleanable {
    let start = log.log_start_offset;
    let first_dirty = match log.checkpoint {
        Some(c) if c >= start && c <= log.log_end_offset => c,
        _ => start,
    };
    let active = log.segments.len().saturating_sub(1);
    let active_base = log.segments.get(active).map_or(start, |s| s.base_offset);
    // Sealed segments holding dirty offsets: from the one holding
    // `first_dirty` (whose next segment starts past it).
    let dirty_from = log.segments[..active]
        .iter()
        .enumerate()
        .find(|(i, _)| {
            log.segments
                .get(i + 1)
                .is_some_and(|next| next.base_offset > first_dirty)
        })
        .map_or(active, |(i, _)| i);
    let dirty = dirty_from..active;
    let min_lag = policy.min_compaction_lag_ms.max(0);
    let lag_bound = (min_lag > 0)
        .then(|| {
            log.segments[dirty.clone()]
                .iter()
                .find(|s| s.largest_timestamp > now_ms - min_lag)
                .map(|s| s.base_offset)
        })
        .flatten();
    let first_uncleanable = [
        Some(log.first_unstable_offset),
        Some(active_base),
        lag_bound,
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(active_base)
    .max(first_dirty);
    let bytes_in = |from: i64, to: i64| -> u64 {
        log.segments
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                let next = log
                    .segments
                    .get(i + 1)
                    .map_or(log.log_end_offset, |n| n.base_offset);
                s.base_offset < to && next > from
            })
            .map(|(_, s)| s.size)
            .sum()
    };
    let compaction_delay_ms = if policy.max_compaction_lag_ms == i64::MAX {
        0
    } else {
        let earliest = log.first_batch_timestamps[dirty]
            .iter()
            .copied()
            .filter(|t| *t > 0)
            .min()
            .unwrap_or(i64::MAX);
        let clean_until = now_ms.saturating_sub(policy.max_compaction_lag_ms.max(0));
        if earliest < clean_until {
            clean_until - earliest
        } else {
            0
        }
    };
    Cleanable {
        first_dirty_offset: first_dirty,
        first_uncleanable_offset: first_uncleanable,
        clean_bytes: bytes_in(start, first_dirty),
        cleanable_bytes: if first_uncleanable > first_dirty {
            bytes_in(first_dirty, first_uncleanable)
        } else {
            0
        },
        compaction_delay_ms,
    }
}

/// Whether a log with `c` is due (Apache's filter in
/// `grabFilthiestCompactedLog`): past its max lag with something to
/// clean, or dirtier than its `min.cleanable.dirty.ratio`.
pub fn is_due(c: &Cleanable, policy: &CompactionPolicy) -> bool {
    (c.compaction_delay_ms > 0 && c.cleanable_bytes > 0)
        || c.ratio() > policy.min_cleanable_dirty_ratio
}

/// The one to clean among `candidates` (index, cleanable): the dirtiest
/// of those due, as Apache picks.
pub fn filthiest(candidates: &[(usize, Cleanable, CompactionPolicy)]) -> Option<usize> {
    candidates
        .iter()
        .filter(|(_, c, p)| is_due(c, p))
        .max_by(|a, b| a.1.ratio().total_cmp(&b.1.ratio()))
        .map(|(i, ..)| *i)
}

#[cfg(test)]
mod tests;
