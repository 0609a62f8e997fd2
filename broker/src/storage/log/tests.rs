//! The partition log's tests.

use std::fs::OpenOptions;

use super::super::batch::tests::encode_batch;
use super::*;

fn small() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

#[test]
fn append_assigns_offsets_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(dir.path(), small()).unwrap();
    for i in 0..50 {
        let mut b = encode_batch(3, i * 10);
        let a = log.append(&mut b, 0).unwrap();
        assert_eq!(a.base_offset, i * 3);
        assert_eq!(a.last_offset, i * 3 + 2);
    }
    assert_eq!(log.next_offset(), 150);
    assert!(log.segments.len() > 1, "small segments roll");
    // Every offset is readable, from the batch that holds it.
    for off in 0..150 {
        let data = log.read(off, 150, 1).unwrap();
        let h = batch::validate(&data).unwrap();
        assert!(h.base_offset <= off && off <= h.last_offset());
    }
    assert!(log.read(150, 150, 1000).unwrap().is_empty());
    // The limit (high watermark) hides what lies at or beyond it.
    let data = log.read(0, 6, 1 << 20).unwrap();
    let parts = batch::split_batches(&data).unwrap();
    assert_eq!(parts.last().unwrap().1.next_offset(), 6);
}

#[test]
fn reopen_recovers_every_segment() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut log, _) = Log::open(dir.path(), small()).unwrap();
        for _ in 0..40 {
            log.append(&mut encode_batch(2, 0), 0).unwrap();
        }
    }
    let (log, report) = Log::open(dir.path(), small()).unwrap();
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(log.next_offset(), 80);
    assert_eq!(
        batch::validate(&log.read(41, 80, 1).unwrap())
            .unwrap()
            .base_offset,
        40
    );
}

#[test]
fn torn_tail_is_cut_and_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let path;
    {
        let (mut log, _) = Log::open(dir.path(), LogConfig::default()).unwrap();
        for _ in 0..5 {
            log.append(&mut encode_batch(2, 0), 0).unwrap();
        }
        path = segment_path(dir.path(), 0, 0, "log");
    }
    let len = fs::metadata(&path).unwrap().len();
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 7).unwrap();
    let (log, report) = Log::open(dir.path(), LogConfig::default()).unwrap();
    assert!(report.truncated_bytes > 0);
    assert_eq!(log.next_offset(), 8);
}

#[test]
fn bit_flip_in_the_tail_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = segment_path(dir.path(), 0, 0, "log");
    {
        let (mut log, _) = Log::open(dir.path(), LogConfig::default()).unwrap();
        for _ in 0..5 {
            log.append(&mut encode_batch(2, 0), 0).unwrap();
        }
    }
    let mut raw = fs::read(&path).unwrap();
    let one = raw.len() / 5;
    raw[one * 3 + 40] ^= 0x55;
    fs::write(&path, &raw).unwrap();
    let (log, report) = Log::open(dir.path(), LogConfig::default()).unwrap();
    assert!(report.reason.unwrap().contains("corrupt"));
    assert_eq!(log.next_offset(), 6, "batches before the damage stay");
}

/// Found by fuzzing: with the index missing, the first open cut the
/// damage in memory only and reported nothing; a second open then cut
/// it again.
#[test]
fn damage_is_cut_and_reported_when_the_index_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = segment_path(dir.path(), 0, 0, "log");
    {
        let (mut log, _) = Log::open(dir.path(), LogConfig::default()).unwrap();
        for _ in 0..5 {
            log.append(&mut encode_batch(2, 0), 0).unwrap();
        }
    }
    fs::remove_file(segment_path(dir.path(), 0, 0, "index")).unwrap();
    let mut raw = fs::read(&path).unwrap();
    let one = raw.len() / 5;
    raw[one * 3 + 40] ^= 0x55;
    fs::write(&path, &raw).unwrap();
    let (log, report) = Log::open(dir.path(), LogConfig::default()).unwrap();
    assert!(report.reason.unwrap().contains("corrupt"));
    assert_eq!(report.truncated_bytes, (one * 2) as u64);
    assert_eq!(fs::metadata(&path).unwrap().len(), (one * 3) as u64);
    assert_eq!(log.next_offset(), 6);
    drop(log);
    let (_, again) = Log::open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!(again.truncated_bytes, 0);
}

#[test]
fn timestamp_lookup_finds_the_first_batch_at_or_after() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(dir.path(), small()).unwrap();
    for i in 0..30 {
        log.append(&mut encode_batch(1, 1000 + i * 10), 0).unwrap();
    }
    let b = log.batch_for_timestamp(1095, 30).unwrap().unwrap();
    assert_eq!(batch::validate(&b).unwrap().base_offset, 10);
    assert!(log.batch_for_timestamp(5000, 30).unwrap().is_none());
    let b = log.batch_with_max_timestamp(30).unwrap().unwrap();
    assert_eq!(batch::validate(&b).unwrap().base_offset, 29);
}

/// ProducerStateManagerTest `testRecoverFromSnapshotUnfinishedTransaction`
/// at the log: a transaction open across segment rolls, and one aborted,
/// are recovered from the snapshot at the active segment's base, replaying
/// that segment only; with the snapshots gone, from every segment, to the
/// same state.
#[test]
fn producer_state_is_recovered_from_the_snapshot_at_the_active_segment() {
    use super::super::batch::tests::encode_txn_batch;
    use super::super::batch::ControlMarker;
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(dir.path(), small()).unwrap();
    std::fs::write(log.transactions_flag_path(), b"").unwrap();
    log.transactions_flagged();
    let open_at = log
        .append(&mut encode_txn_batch(7, 0, 0, 2), 0)
        .unwrap()
        .base_offset;
    log.append(&mut encode_txn_batch(8, 0, 0, 2), 0).unwrap();
    let abort = ControlMarker {
        commit: false,
        coordinator_epoch: 3,
    };
    log.append_marker(&mut batch::encode_marker(8, 0, abort, 5), 0)
        .unwrap();
    for i in 0..40 {
        log.append(&mut encode_batch(3, i), 0).unwrap();
    }
    assert!(log.segments.len() > 2, "small segments roll");
    let hw = log.next_offset();
    let state = |log: &Log| {
        (
            log.last_stable_offset(hw),
            log.aborted_transactions(0, hw),
            log.open_transaction(7),
            log.active_producers(),
        )
    };
    let before = state(&log);
    assert_eq!(before.0, open_at, "producer 7's transaction holds the LSO");
    assert_eq!(before.1.len(), 1, "producer 8's aborted");
    let active_base = log.segments.last().unwrap().base_offset;
    drop(log);

    let (log, report) = Log::open(dir.path(), small()).unwrap();
    assert!(report.from_snapshot);
    assert_eq!(report.producers_replayed_from, active_base);
    assert_eq!(state(&log), before);
    drop(log);

    for e in std::fs::read_dir(dir.path()).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "snapshot") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let (log, report) = Log::open(dir.path(), small()).unwrap();
    assert!(!report.from_snapshot);
    assert_eq!(report.producers_replayed_from, 0, "every segment");
    assert_eq!(state(&log), before);
}
