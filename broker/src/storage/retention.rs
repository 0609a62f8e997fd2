//! Retention: which of a partition log's oldest segments may go, by
//! Apache's `UnifiedLog.deleteOldSegments` (pure; the log deletes them).
//!
//! Three passes in Apache's order, each over what the previous one left:
//! segments wholly below the log start offset; then, with
//! `cleanup.policy` including `delete`, the oldest segments while the log
//! stays at least `retention.bytes` without them; then segments whose
//! largest timestamp is more than `retention.ms` old. Each pass stops at
//! the first segment it keeps (only a prefix of the log ever goes), never
//! takes a segment holding offsets at or past the high watermark, and
//! never the last segment while it is empty. A pass may take the active
//! segment: the log then rolls a new, empty one first, as Apache does.

/// A topic's retention settings in force (its configs over the broker's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// `retention.ms`; negative: no time limit.
    pub ms: i64,
    /// `retention.bytes` per partition; negative: no size limit.
    pub bytes: i64,
    /// `cleanup.policy` includes `delete` (without it only segments below
    /// the log start offset go).
    pub delete: bool,
}

impl Default for RetentionPolicy {
    /// Apache's defaults: a week, no size limit, `delete`.
    fn default() -> Self {
        Self {
            ms: 7 * 24 * 60 * 60 * 1000,
            bytes: -1,
            delete: true,
        }
    }
}

/// The broker's `log.retention.*` settings as given (a topic's configs
/// default to them: `ms` over `minutes` over `hours`, Apache's order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerRetention {
    pub ms: Option<i64>,
    pub minutes: Option<i64>,
    pub hours: Option<i64>,
    pub bytes: Option<i64>,
    /// `log.retention.check.interval.ms`: how often the leader looks.
    pub check_interval_ms: u64,
}

impl Default for BrokerRetention {
    fn default() -> Self {
        Self {
            ms: None,
            minutes: None,
            hours: None,
            bytes: None,
            check_interval_ms: 300_000,
        }
    }
}

/// What retention needs of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentInfo {
    pub base_offset: i64,
    pub size: u64,
    /// The largest record timestamp in it (Apache's `largestTimestamp`:
    /// the file's modification time when no record has one).
    pub largest_timestamp: i64,
}

/// How many of the oldest `segments` (in offset order, the active one
/// last) retention deletes at `now_ms`. `log_end` is the log end offset,
/// `high_watermark` the durable end, `log_start` the log start offset.
pub fn deletable_segments(
    segments: &[SegmentInfo],
    log_end: i64,
    high_watermark: i64,
    log_start: i64,
    policy: &RetentionPolicy,
    now_ms: i64,
) -> usize {
    let mut gone = prefix(segments, log_end, high_watermark, |_, next| {
        next.is_some_and(|n| n.base_offset <= log_start)
    });
    if !policy.delete {
        return gone;
    }
    let total: u64 = segments[gone..].iter().map(|s| s.size).sum();
    if policy.bytes >= 0 && total >= policy.bytes as u64 {
        let mut excess = total - policy.bytes as u64;
        gone += prefix(&segments[gone..], log_end, high_watermark, |s, _| {
            let delete = excess >= s.size;
            if delete {
                excess -= s.size;
            }
            delete
        });
    }
    if policy.ms >= 0 {
        gone += prefix(&segments[gone..], log_end, high_watermark, |s, _| {
            now_ms - s.largest_timestamp > policy.ms
        });
    }
    gone
}

/// Apache's `deletableSegments` under `deleteOldSegments`' guard: the
/// longest prefix whose segments all pass `predicate` (given the segment
/// and the next one), end below the high watermark, and are not the last
/// segment while it is empty.
fn prefix(
    segments: &[SegmentInfo],
    log_end: i64,
    high_watermark: i64,
    mut predicate: impl FnMut(&SegmentInfo, Option<&SegmentInfo>) -> bool,
) -> usize {
    let mut n = 0;
    while let Some(segment) = segments.get(n) {
        let next = segments.get(n + 1);
        let upper_bound = next.map_or(log_end, |s| s.base_offset);
        let last_and_empty = next.is_none() && segment.size == 0;
        if last_and_empty || high_watermark < upper_bound || !predicate(segment, next) {
            break;
        }
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests;
