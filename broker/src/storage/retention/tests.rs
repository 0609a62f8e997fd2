use super::*;

const NOW: i64 = 1_000_000;

/// Segments of `size` bytes, 10 offsets each, the i-th last written
/// at `timestamps[i]`.
fn log(size: u64, timestamps: &[i64]) -> Vec<SegmentInfo> {
    timestamps
        .iter()
        .enumerate()
        .map(|(i, &ts)| SegmentInfo {
            base_offset: 10 * i as i64,
            size,
            largest_timestamp: ts,
        })
        .collect()
}

fn end(segments: &[SegmentInfo]) -> i64 {
    segments.last().map_or(0, |s| s.base_offset + 10)
}

fn policy(ms: i64, bytes: i64) -> RetentionPolicy {
    RetentionPolicy {
        ms,
        bytes,
        delete: true,
    }
}

/// UnifiedLogTest.testLogDeletionAfterRetentionMs's rule: segments
/// older than retention.ms go, oldest first, the active one included.
#[test]
fn time_retention_takes_the_old_prefix_and_may_take_the_active_segment() {
    let segments = log(100, &[NOW - 5_000, NOW - 4_000, NOW - 1_000, NOW - 10]);
    let e = end(&segments);
    assert_eq!(
        deletable_segments(&segments, e, e, 0, &policy(3_000, -1), NOW),
        2
    );
    assert_eq!(
        deletable_segments(&segments, e, e, 0, &policy(5, -1), NOW),
        4,
        "everything old: the log rolls and deletes the active segment too"
    );
    assert_eq!(
        deletable_segments(&segments, e, e, 0, &policy(-1, -1), NOW),
        0,
        "-1: no time limit"
    );
    assert_eq!(
        deletable_segments(&segments, e, e, 0, &policy(5_000, -1), NOW),
        0,
        "exactly retention.ms old is not yet past it"
    );
}

/// A newer segment behind an old one does not shield it, but an old
/// one behind a newer one waits (only a prefix goes; timestamps set by
/// producers need not grow).
#[test]
fn time_retention_stops_at_the_first_segment_it_keeps() {
    let segments = log(100, &[NOW - 9_000, NOW - 10, NOW - 9_000, NOW]);
    let e = end(&segments);
    assert_eq!(
        deletable_segments(&segments, e, e, 0, &policy(3_000, -1), NOW),
        1
    );
}

/// UnifiedLogTest.testLogDeletionAfterRetentionSizeBreach's rule: the
/// oldest segments go while what is left stays at least retention.bytes.
#[test]
fn size_retention_keeps_at_least_the_limit() {
    let segments = log(100, &[NOW; 5]);
    let e = end(&segments);
    for (limit, gone) in [(500, 0), (450, 0), (400, 1), (399, 1), (250, 2), (0, 5)] {
        assert_eq!(
            deletable_segments(&segments, e, e, 0, &policy(-1, limit), NOW),
            gone,
            "retention.bytes {limit}"
        );
    }
}

#[test]
fn nothing_at_or_past_the_high_watermark_goes() {
    let segments = log(100, &[0, 0, 0]);
    let e = end(&segments);
    assert_eq!(
        deletable_segments(&segments, e, 15, 0, &policy(1, -1), NOW),
        1,
        "the second segment ends at 20, past the high watermark"
    );
    assert_eq!(
        deletable_segments(&segments, e, 25, 0, &policy(1, 0), NOW),
        2
    );
}

#[test]
fn an_empty_active_segment_stays() {
    let mut segments = log(100, &[0, 0]);
    segments.push(SegmentInfo {
        base_offset: 20,
        size: 0,
        largest_timestamp: 0,
    });
    assert_eq!(
        deletable_segments(&segments, 20, 20, 0, &policy(1, 0), NOW),
        2
    );
}

/// UnifiedLogTest.shouldDeleteStartOffsetBreachedSegmentsWhenPolicyDoesNotIncludeDelete:
/// segments wholly below the log start offset (DeleteRecords) go
/// whatever the policy; with `compact` alone nothing else does.
#[test]
fn segments_below_the_log_start_offset_go_under_any_policy() {
    let segments = log(100, &[0, 0, 0, 0]);
    let e = end(&segments);
    let compact = RetentionPolicy {
        ms: 1,
        bytes: 0,
        delete: false,
    };
    assert_eq!(deletable_segments(&segments, e, e, 25, &compact, NOW), 2);
    assert_eq!(
        deletable_segments(&segments, e, e, 20, &compact, NOW),
        2,
        "a segment ending right below the start goes"
    );
    assert_eq!(deletable_segments(&segments, e, e, 19, &compact, NOW), 1);
    assert_eq!(
        deletable_segments(&segments, e, e, 25, &policy(-1, 100), NOW),
        3,
        "then size over what is left: 200 bytes, 100 allowed"
    );
}
