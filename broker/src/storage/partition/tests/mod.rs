//! A partition's appends, rolls, retention, DeleteRecords and epochs.

use super::*;
use crate::storage::batch::tests::{encode_batch, encode_txn_batch as txn_batch};
use kafka_protocol::ResponseError;

fn marker(commit: bool, coordinator_epoch: i32) -> ControlMarker {
    ControlMarker {
        commit,
        coordinator_epoch,
    }
}

/// The base offsets of the partition's segments.
fn segment_bases(part: &Partition) -> Vec<i64> {
    part.log()
        .segment_infos()
        .iter()
        .map(|s| s.base_offset)
        .collect()
}

fn small() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

#[tokio::test]
async fn read_committed_stops_at_an_open_transaction_and_lists_the_aborted_ones() {
    let dir = tempfile::tempdir().unwrap();
    let part = Partition::open("t", 0, dir.path().join("0"), small()).unwrap();
    part.append(encode_batch(2, 0), 0).await.unwrap(); // 0..=1, plain
    let a = part.append(txn_batch(7, 0, 0, 3), 0).await.unwrap(); // 2..=4
    assert_eq!(a.base_offset, 2);
    let b = part.append(txn_batch(8, 0, 0, 2), 0).await.unwrap(); // 5..=6
    assert_eq!(part.high_watermark(), 7);
    assert_eq!(part.last_stable_offset(), 2, "the oldest open transaction");
    let (records, lso, aborted) = part.read_committed(0, 1 << 20).unwrap();
    assert_eq!(lso, 2);
    assert_eq!(
        batch::validate(&records).unwrap().next_offset(),
        2,
        "only the plain batch"
    );
    assert!(aborted.is_empty());

    let abort_at = part
        .append_marker(7, 0, marker(false, 0), 2_000, 0)
        .await
        .unwrap();
    assert_eq!(abort_at, 7);
    assert_eq!(
        part.last_stable_offset(),
        b.base_offset,
        "producer 8's is still open"
    );
    let commit_at = part
        .append_marker(8, 0, marker(true, 0), 2_000, 0)
        .await
        .unwrap();
    assert_eq!(part.last_stable_offset(), commit_at + 1);
    let (_, lso, aborted) = part.read_committed(0, 1 << 20).unwrap();
    assert_eq!(lso, 9);
    assert_eq!(
        aborted,
        [AbortedTxn {
            producer_id: 7,
            first_offset: 2,
            last_offset: 7,
            last_stable_offset: 5
        }]
    );
    let (_, _, after) = part.read_committed(8, 1 << 20).unwrap();
    assert!(
        after.is_empty(),
        "a read past the abort's marker needs none"
    );

    // Reopened (another leader, or a restart): the same answers, from
    // segments the transactions span.
    drop(part);
    let segments = crate::storage::count_segment_files(&dir.path().join("0"));
    assert!(segments > 1, "the transactions span segments");
    let part = Partition::open("t", 0, dir.path().join("0"), small()).unwrap();
    let (_, lso, again) = part.read_committed(0, 1 << 20).unwrap();
    assert_eq!((lso, again), (9, aborted));
}

/// `producer.id.expiration.ms` at the partition: a producer with an
/// open transaction stays; once its marker is old enough it goes.
#[tokio::test]
async fn idle_producers_expire_but_not_inside_a_transaction() {
    const EXPIRATION: i64 = 86_400_000;
    let dir = tempfile::tempdir().unwrap();
    let part = Partition::open("t", 0, dir.path().join("0"), small()).unwrap();
    part.append(txn_batch(7, 0, 0, 2), 0).await.unwrap(); // timestamps 1,000
    assert_eq!(
        part.remove_expired_producers(1_000 + EXPIRATION, EXPIRATION),
        0
    );
    part.append_marker(7, 0, marker(true, 0), 5_000, 0)
        .await
        .unwrap();
    assert_eq!(
        part.remove_expired_producers(4_999 + EXPIRATION, EXPIRATION),
        0
    );
    assert_eq!(part.active_producers().len(), 1);
    assert_eq!(
        part.remove_expired_producers(5_000 + EXPIRATION, EXPIRATION),
        1
    );
    assert!(part.active_producers().is_empty());
}

fn segment_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".log") || n.ends_with(".index"))
        .collect();
    names.sort();
    names
}

/// Time retention deletes the old segments' files, the log start
/// offset moves to the first kept one and stays there across a
/// reopen; reads below it find nothing, reads above it everything.
#[tokio::test]
async fn retention_by_time_deletes_old_segments_durably() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0");
    let part = Partition::open("t", 0, path.clone(), small()).unwrap();
    for i in 0..6 {
        part.append(encode_batch(3, 1_000 * i), 0).await.unwrap();
    }
    let before = part.log().segment_infos();
    assert!(before.len() >= 3, "{before:?}");
    let policy = RetentionPolicy {
        ms: 500,
        bytes: -1,
        delete: true,
    };
    // Only the first segment's records are more than 500 ms old.
    let now = before[0].largest_timestamp + 501;
    assert!(before[1].largest_timestamp >= now - 500);
    assert_eq!(part.enforce_retention(&policy, now).await.unwrap().0, 1);
    let start = before[1].base_offset;
    assert_eq!(part.log_start_offset(), start);
    assert_eq!(part.enforce_retention(&policy, now).await.unwrap().0, 0);
    assert_eq!(
        segment_files(&path).len(),
        2 * (before.len() - 1),
        "each with its index"
    );
    let first = batch::validate(&part.read(0, 1 << 20).unwrap()).unwrap();
    assert_eq!(first.base_offset, start, "nothing below the start is left");
    drop(part);
    let part = Partition::open("t", 0, path.clone(), small()).unwrap();
    assert_eq!(part.log_start_offset(), start, "durable");
    assert_eq!(part.high_watermark(), 18);
}

/// When every segment is past retention the log rolls a new, empty
/// one at its end and deletes the rest (Apache's
/// UnifiedLogTest.shouldDeleteSegmentsReadyToBeDeletedWhenAllSegmentsAreReadyToBeDeleted's
/// rule); appends go on at the same offsets.
#[tokio::test]
async fn retention_of_every_segment_rolls_first_and_appends_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0");
    let part = Partition::open("t", 0, path.clone(), small()).unwrap();
    for i in 0..3 {
        part.append(encode_batch(3, i), 0).await.unwrap();
    }
    let policy = RetentionPolicy {
        ms: 10,
        bytes: -1,
        delete: true,
    };
    let (segments, bytes) = part.enforce_retention(&policy, 1_000).await.unwrap();
    assert_eq!(segments, 2);
    assert!(bytes > 0);
    assert_eq!(part.log_start_offset(), 9);
    assert_eq!(
        segment_files(&path),
        ["00000000000000000009-1.index", "00000000000000000009-1.log"]
    );
    let next = part.append(encode_batch(2, 2_000), 0).await.unwrap();
    assert_eq!(next.base_offset, 9);
    drop(part);
    let part = Partition::open("t", 0, path, small()).unwrap();
    assert_eq!((part.log_start_offset(), part.high_watermark()), (9, 11));
}

/// Size retention keeps at least retention.bytes, whole segments only;
/// a new segment size takes effect at the next roll.
#[tokio::test]
async fn retention_by_size_keeps_at_least_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0");
    let part = Partition::open("t", 0, path.clone(), small()).unwrap();
    for i in 0..8 {
        part.append(encode_batch(3, i), 0).await.unwrap();
    }
    let sizes: Vec<u64> = part.log().segment_infos().iter().map(|s| s.size).collect();
    let total: u64 = sizes.iter().sum();
    let policy = RetentionPolicy {
        ms: -1,
        bytes: (total - sizes[0]) as i64,
        delete: true,
    };
    assert_eq!(
        part.enforce_retention(&policy, 0).await.unwrap(),
        (1, sizes[0])
    );
    let kept: u64 = part.log().segment_infos().iter().map(|s| s.size).sum();
    assert!(kept >= policy.bytes as u64);
    assert_eq!(part.enforce_retention(&policy, 0).await.unwrap(), (0, 0));
    // Not `delete`: nothing goes however small the limit.
    let compact = RetentionPolicy {
        bytes: 0,
        delete: false,
        ..policy
    };
    assert_eq!(part.enforce_retention(&compact, 0).await.unwrap(), (0, 0));

    part.set_config(LogConfig {
        segment_bytes: 10_000,
        ..small()
    });
    let count = part.log().segment_infos().len();
    for i in 0..8 {
        part.append(encode_batch(3, i), 0).await.unwrap();
    }
    assert_eq!(
        part.log().segment_infos().len(),
        count,
        "the active segment grows to the new size"
    );
}

/// segment.ms: a segment rolls once an incoming batch is more than
/// segment.ms newer than its first batch, whatever its size (the
/// timestamped half of Apache's UnifiedLogTest.testTimeBasedLogRollDuringAppend).
#[tokio::test]
async fn a_segment_rolls_when_its_first_batch_is_older_than_segment_ms() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1 << 20,
        segment_ms: 1_000,
        ..LogConfig::default()
    };
    let part = Partition::open("t", 0, dir.path().join("0"), config).unwrap();
    part.append(encode_batch(1, 10_000), 0).await.unwrap();
    part.append(encode_batch(1, 10_500), 0).await.unwrap();
    part.append(encode_batch(1, 11_000), 0).await.unwrap();
    assert_eq!(
        part.log().segment_infos().len(),
        1,
        "1,000 ms is not more than segment.ms"
    );
    part.append(encode_batch(1, 11_001), 0).await.unwrap();
    let bases = segment_bases(&part);
    assert_eq!(bases, [0, 3], "rolled before the batch 1,001 ms newer");
    part.append(encode_batch(1, 11_500), 0).await.unwrap();
    assert_eq!(
        part.log().segment_infos().len(),
        2,
        "counted from the new segment's first batch"
    );
    drop(part);
    let part = Partition::open("t", 0, dir.path().join("0"), config).unwrap();
    part.append(encode_batch(1, 12_002), 0).await.unwrap();
    assert_eq!(
        part.log().segment_infos().len(),
        3,
        "a reopened segment's first batch is read back"
    );
}

/// segment.jitter.ms: each segment rolls up to that much earlier, by
/// an amount below min(jitter, segment.ms) that differs between
/// partitions and segments (Apache's randomSegmentJitter).
#[tokio::test]
async fn segment_jitter_brings_each_segments_roll_forward_by_its_own_amount() {
    use crate::storage::log::roll_jitter_ms;
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1 << 20,
        segment_ms: 1_000,
        segment_jitter_ms: 600,
        ..LogConfig::default()
    };
    let jitters: Vec<i64> = (0..20)
        .map(|p| roll_jitter_ms(&dir.path().join(p.to_string()), 0, 600, 1_000))
        .collect();
    assert!(jitters.iter().all(|j| (0..600).contains(j)), "{jitters:?}");
    let distinct: std::collections::BTreeSet<_> = jitters.iter().collect();
    assert!(distinct.len() > 10, "spread across partitions: {jitters:?}");
    assert_eq!(
        roll_jitter_ms(dir.path(), 0, 0, 1_000),
        0,
        "none by default"
    );
    assert!(
        (0..100).all(|b| roll_jitter_ms(dir.path(), b, 5_000, 100) < 100),
        "never more than segment.ms"
    );
    let path = dir.path().join("0");
    let jitter = roll_jitter_ms(&path, 0, 600, 1_000);
    let part = Partition::open("t", 0, path.clone(), config).unwrap();
    part.append(encode_batch(1, 10_000), 0).await.unwrap();
    part.append(encode_batch(1, 10_000 + 1_000 - jitter), 0)
        .await
        .unwrap();
    assert_eq!(part.log().segment_infos().len(), 1, "not yet due");
    part.append(encode_batch(1, 10_000 + 1_001 - jitter), 0)
        .await
        .unwrap();
    let bases = segment_bases(&part);
    assert_eq!(bases, [0, 2], "rolled {jitter} ms before segment.ms");
    let next = roll_jitter_ms(&path, 2, 600, 1_000);
    part.append(encode_batch(1, 11_001 - jitter + 1_000 - next), 0)
        .await
        .unwrap();
    assert_eq!(
        part.log().segment_infos().len(),
        2,
        "the new segment has its own jitter ({next} ms)"
    );
}

/// DeleteRecords moves the log start offset into a segment durably,
/// deletes the segments wholly below it, never goes back, never past
/// the high watermark; -1 is the high watermark.
#[tokio::test]
async fn delete_records_moves_the_log_start_offset_durably() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0");
    let part = Partition::open("t", 0, path.clone(), small()).unwrap();
    for i in 0..6 {
        part.append(encode_batch(3, i), 0).await.unwrap();
    }
    let segments = part.log().segment_infos();
    let inside_second = segments[1].base_offset + 1;
    assert_eq!(
        part.delete_records(inside_second).await.unwrap(),
        inside_second
    );
    assert_eq!(
        part.log().segment_infos().first().unwrap().base_offset,
        segments[1].base_offset,
        "the first segment went, the one holding the new start stays"
    );
    assert_eq!(
        part.delete_records(1).await.unwrap(),
        inside_second,
        "never backwards"
    );
    assert!(matches!(
        part.delete_records(19).await,
        Err(DeleteRecordsError::OutOfRange {
            offset: 19,
            high_watermark: 18
        })
    ));
    assert!(matches!(
        part.delete_records(-2).await,
        Err(DeleteRecordsError::OutOfRange { .. })
    ));
    drop(part);
    let part = Partition::open("t", 0, path.clone(), small()).unwrap();
    assert_eq!(part.log_start_offset(), inside_second, "durable");
    assert_eq!(part.delete_records(-1).await.unwrap(), 18);
    assert_eq!(
        part.append(encode_batch(1, 0), 0)
            .await
            .unwrap()
            .base_offset,
        18
    );
    assert_eq!(part.log_start_offset(), 18);
}

#[tokio::test]
async fn an_open_transaction_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let part = Partition::open("t", 0, dir.path().join("0"), small()).unwrap();
    part.append(txn_batch(7, 0, 0, 2), 0).await.unwrap();
    for i in 0..6 {
        part.append(encode_batch(3, i), 0).await.unwrap();
    }
    drop(part);
    let part = Partition::open("t", 0, dir.path().join("0"), small()).unwrap();
    assert_eq!(part.last_stable_offset(), 0);
    part.append_marker(7, 0, marker(true, 0), 0, 0)
        .await
        .unwrap();
    assert_eq!(part.last_stable_offset(), part.high_watermark());
}

#[tokio::test]
async fn clients_cannot_write_markers_nor_plain_records_inside_their_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let part = Partition::open("t", 0, dir.path().join("0"), small()).unwrap();
    let refused = |r: Result<Appended, AppendError>| match r {
        Err(AppendError::Refused(code)) => code,
        other => panic!("not refused: {other:?}"),
    };
    let forged = batch::encode_marker(7, 0, marker(true, 0), 0);
    assert_eq!(
        refused(part.append(forged, 0).await),
        ResponseError::InvalidRecord.code()
    );
    part.append(txn_batch(7, 0, 0, 1), 0).await.unwrap();
    let mut plain = txn_batch(7, 0, 1, 1);
    // The same producer and sequence, without the transactional bit.
    let attributes = i16::from_be_bytes([plain[21], plain[22]]) & !0x10;
    plain[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&plain[21..]);
    plain[17..21].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(
        refused(part.append(plain, 0).await),
        ResponseError::InvalidTxnState.code()
    );
    part.append_marker(7, 0, marker(true, 3), 0, 0)
        .await
        .unwrap();
    match part.append_marker(7, 0, marker(false, 2), 0, 0).await {
        Err(AppendError::Refused(code)) => {
            assert_eq!(code, ResponseError::TransactionCoordinatorFenced.code())
        }
        other => panic!("an older coordinator's marker: {other:?}"),
    }
}

#[tokio::test]
async fn appends_across_segment_rolls_are_durable_in_order_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 100,
        ..LogConfig::default()
    };
    let part = Arc::new(Partition::open("t", 0, dir.path().join("0"), config).unwrap());
    // Concurrent producers: rolls happen between their appends.
    let appends = (0..40).map(|i| {
        let part = part.clone();
        async move { part.append(encode_batch(3, i * 10), 0).await.unwrap() }
    });
    let mut bases: Vec<i64> = futures::future::join_all(appends)
        .await
        .iter()
        .map(|a| a.base_offset)
        .collect();
    bases.sort();
    assert_eq!(bases, (0..40).map(|i| i * 3).collect::<Vec<_>>());
    assert_eq!(part.high_watermark(), 120);
    let segments = crate::storage::count_segment_files(&dir.path().join("0"));
    assert!(segments > 1, "small segments roll");
    drop(part);
    let reopened = Partition::open("t", 0, dir.path().join("0"), config).unwrap();
    assert_eq!(reopened.high_watermark(), 120);
    for off in 0..120 {
        let data = reopened.read(off, 1).unwrap();
        let h = batch::validate(&data).unwrap();
        assert!(h.base_offset <= off && off <= h.last_offset());
    }
}

mod takeover;
