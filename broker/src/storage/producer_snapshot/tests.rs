use super::*;
use crate::storage::producer_state::BatchIdentity;

fn batch(pid: i64, epoch: i16, first: i32, last: i32, txn: bool) -> BatchIdentity {
    BatchIdentity {
        producer_id: pid,
        epoch,
        first_sequence: first,
        last_sequence: last,
        transactional: txn,
        max_timestamp: 0,
    }
}

/// The producers of Apache's ProducerStateManagerTest `testTakeSnapshot`
/// shape: an idempotent producer, one with an open transaction, one
/// whose transaction aborted.
fn states() -> (ProducerStates, AbortedTxns) {
    let mut p = ProducerStates::default();
    p.record(&batch(1, 0, 0, 4, false), 0);
    p.record(&batch(1, 0, 5, 9, false), 5);
    p.record(&batch(2, 3, 0, 0, true), 10);
    p.record(&batch(3, 1, 0, 1, true), 11);
    let done = p.record_marker(3, 1, 7, 13, false, 0).unwrap();
    let mut aborted = AbortedTxns::default();
    aborted.push(AbortedTxn {
        producer_id: 3,
        first_offset: done.first_offset,
        last_offset: done.last_offset,
        last_stable_offset: p.last_stable_offset_after(&done),
    });
    (p, aborted)
}

/// ProducerStateManagerTest `testRecoverFromSnapshotUnfinishedTransaction`
/// and `testRecoverFromSnapshotFinishedTransaction`: what a snapshot
/// restores checks the next batches as the live state did.
#[test]
fn test_recover_from_snapshot_unfinished_and_finished_transactions() {
    let (live, aborted) = states();
    let restored = decode(&encode(14, &live, &aborted)).unwrap();
    assert_eq!(restored.offset, 14);
    assert_eq!(restored.producers.active(), live.active());
    assert_eq!(restored.aborted.entries(), aborted.entries());
    let p = &restored.producers;
    // The open transaction still holds the last stable offset.
    assert_eq!(p.first_undecided_offset(), Some(10));
    assert_eq!(p.open_transaction(2), Some(10));
    assert_eq!(p.open_transaction(3), None);
    // A retried batch is still a duplicate, a gap still refused.
    let next = batch(1, 0, 5, 9, false);
    assert_eq!(p.check(&next), live.check(&next));
    let gap = batch(1, 0, 12, 12, false);
    assert_eq!(p.check(&gap), live.check(&gap));
    // The coordinator epoch of the last marker is kept.
    assert_eq!(p.check_marker(3, 1, 6), live.check_marker(3, 1, 6));
}

/// ProducerStateManagerTest `testLoadFromCorruptSnapshotFile` and
/// `testLoadFromTruncatedSnapshotFile`: a damaged snapshot is skipped
/// and the next older one loads.
#[test]
fn test_load_from_corrupt_or_truncated_snapshot_file() {
    let dir = tempfile::tempdir().unwrap();
    let (live, aborted) = states();
    write(dir.path(), 5, 0, &encode(5, &live, &aborted)).unwrap();
    let newest = encode(14, &live, &aborted);
    write(dir.path(), 14, 0, &newest[..newest.len() - 3]).unwrap();
    assert_eq!(load_newest(dir.path(), |_, _| true).unwrap().offset, 5);
    let mut flipped = newest.clone();
    flipped[20] ^= 1;
    write(dir.path(), 14, 0, &flipped).unwrap();
    assert_eq!(load_newest(dir.path(), |_, _| true).unwrap().offset, 5);
    write(dir.path(), 14, 0, &newest).unwrap();
    assert_eq!(load_newest(dir.path(), |_, _| true).unwrap().offset, 14);
    // Only offsets the log accepts (a segment's base) are used.
    assert_eq!(load_newest(dir.path(), |o, _| o < 14).unwrap().offset, 5);
    assert!(load_newest(dir.path(), |o, _| o < 5).is_none());
}

#[test]
fn only_the_newest_two_snapshots_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (live, aborted) = states();
    for offset in [10, 20, 30] {
        write(dir.path(), offset, 1, &encode(offset, &live, &aborted)).unwrap();
    }
    assert_eq!(taken(dir.path()).unwrap(), [(20, 1), (30, 1)]);
}
