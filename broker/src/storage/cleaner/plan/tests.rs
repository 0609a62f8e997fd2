use super::*;

fn seg(base: i64, size: u64, ts: i64) -> SegmentInfo {
    SegmentInfo {
        base_offset: base,
        size,
        largest_timestamp: ts,
    }
}

/// Four sealed segments of 100 bytes (offsets 0, 10, 20, 30) and an
/// active one at 40, their records at 1_000, 2_000, … ms.
fn log(checkpoint: Option<i64>) -> LogState {
    LogState {
        segments: (0..5).map(|i| seg(i * 10, 100, (i + 1) * 1_000)).collect(),
        first_batch_timestamps: (0..5).map(|i| (i + 1) * 1_000 - 500).collect(),
        log_start_offset: 0,
        log_end_offset: 45,
        first_unstable_offset: 45,
        checkpoint,
    }
}

fn compact() -> CompactionPolicy {
    CompactionPolicy {
        compact: true,
        ..CompactionPolicy::default()
    }
}

#[test]
fn a_never_cleaned_log_is_dirty_up_to_its_active_segment() {
    let c = cleanable(&log(None), &compact(), 10_000);
    assert_eq!((c.first_dirty_offset, c.first_uncleanable_offset), (0, 40));
    assert_eq!((c.clean_bytes, c.cleanable_bytes), (0, 400));
    assert_eq!(c.ratio(), 1.0);
    assert!(is_due(&c, &compact()));
}

#[test]
fn the_checkpoint_splits_clean_from_dirty() {
    let c = cleanable(&log(Some(30)), &compact(), 10_000);
    assert_eq!((c.clean_bytes, c.cleanable_bytes), (300, 100));
    assert!(!is_due(&c, &compact()), "0.25 is below 0.5");
    // A checkpoint below the log start or past the end starts over.
    for bad in [-1, 46] {
        let mut l = log(Some(bad));
        l.log_start_offset = 0;
        assert_eq!(cleanable(&l, &compact(), 10_000).first_dirty_offset, 0);
    }
}

#[test]
fn open_transactions_and_the_min_lag_bound_the_dirty_section() {
    let mut l = log(None);
    l.first_unstable_offset = 25;
    assert_eq!(
        cleanable(&l, &compact(), 10_000).first_uncleanable_offset,
        25
    );
    // Segments with records newer than now - min lag are not cleanable:
    // at 4_500 ms with a 2_000 ms lag, the segment at 30 (ts 4_000)
    // and the one at 20 (3_000) are too new.
    let p = CompactionPolicy {
        min_compaction_lag_ms: 2_000,
        ..compact()
    };
    let c = cleanable(&log(None), &p, 4_500);
    assert_eq!((c.first_uncleanable_offset, c.cleanable_bytes), (20, 200));
}

#[test]
fn the_max_lag_makes_a_barely_dirty_log_due() {
    let p = CompactionPolicy {
        max_compaction_lag_ms: 5_000,
        ..compact()
    };
    // Dirty from 30 (first batch at 3_500): at 10_000, 1_500 ms late.
    let c = cleanable(&log(Some(30)), &p, 10_000);
    assert_eq!(c.compaction_delay_ms, 1_500);
    assert!(is_due(&c, &p));
    assert_eq!(cleanable(&log(Some(30)), &p, 8_000).compaction_delay_ms, 0);
}

#[test]
fn the_filthiest_due_log_is_chosen() {
    let p = compact();
    let a = cleanable(&log(Some(30)), &p, 10_000); // 0.25
    let b = cleanable(&log(Some(10)), &p, 10_000); // 0.75
    let c = cleanable(&log(None), &p, 10_000); // 1.0
    assert_eq!(filthiest(&[(0, a, p), (1, b, p)]), Some(1));
    assert_eq!(filthiest(&[(0, a, p), (1, b, p), (2, c, p)]), Some(2));
    assert_eq!(filthiest(&[(0, a, p)]), None);
}
