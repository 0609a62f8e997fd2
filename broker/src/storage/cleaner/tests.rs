//! The cleaner on real partition logs in a temporary folder: last record
//! per key with its offset, tombstones kept until their horizon, aborted
//! transactions dropped, a crash at each step of the swap, and a property
//! test against a last-write-wins model (Apache's LogCleanerTest is the
//! model for the cases).

use std::collections::BTreeMap;
use std::path::Path;

use kafka_protocol::records::{Compression, Record, RecordBatchDecoder};
use proptest::prelude::*;

use super::plan::{self, CompactionPolicy};
use super::CleanerConfig;
use crate::storage::batch::{self, ControlMarker};
use crate::storage::log::LogConfig;
use crate::storage::partition::{Partition, PartitionRef};
use crate::storage::validator::RecordPolicy;

const NOW: i64 = 1_000_000;

fn policy() -> CompactionPolicy {
    CompactionPolicy {
        compact: true,
        delete_retention_ms: 1_000,
        ..CompactionPolicy::default()
    }
}

/// Each entry: key, value (None: a tombstone).
type Entry<'a> = (&'a str, Option<&'a str>);

fn batch_of(
    entries: &[Entry],
    producer: Option<(i64, i16, i32, bool)>,
    compression: Compression,
) -> Vec<u8> {
    let (pid, epoch, seq, transactional) = producer.unwrap_or((-1, -1, -1, false));
    let records: Vec<Record> = entries
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional,
            producer_id: pid,
            producer_epoch: epoch,
            sequence: seq + i as i32,
            ..batch::tests::record(
                i as i64,
                NOW - 10_000 + i as i64,
                Some(k.as_bytes()),
                v.map(str::as_bytes),
            )
        })
        .collect();
    batch::tests::encode_records(&records, compression)
}

fn open(dir: &Path, segment_bytes: u64) -> PartitionRef {
    let config = LogConfig {
        segment_bytes,
        records: RecordPolicy {
            compact: true,
            ..RecordPolicy::default()
        },
        ..LogConfig::default()
    };
    std::sync::Arc::new(Partition::open("t", 0, dir.to_path_buf(), config).unwrap())
}

/// Every record of the log: offset, key, value.
type Read = Vec<(i64, String, Option<String>)>;

fn read_all(p: &Partition) -> Read {
    let mut out = Vec::new();
    let mut offset = p.log_start_offset();
    loop {
        let bytes = p.read(offset, 1 << 20).unwrap();
        if bytes.is_empty() {
            return out;
        }
        let mut buf = bytes.clone();
        let mut next = offset;
        while !buf.is_empty() {
            let h = batch::parse_header(&buf).unwrap();
            let set = RecordBatchDecoder::decode(&mut buf).unwrap();
            next = h.next_offset();
            if h.is_control() {
                continue;
            }
            for r in set.records {
                out.push((
                    r.offset,
                    String::from_utf8(r.key.unwrap().to_vec()).unwrap(),
                    r.value.map(|v| String::from_utf8(v.to_vec()).unwrap()),
                ));
            }
        }
        offset = next;
    }
}

async fn clean(p: &PartitionRef, now: i64) -> super::CleanStats {
    let c = plan::cleanable(&p.log_state(), &policy(), now);
    p.clean(c, policy(), CleanerConfig::default(), now)
        .await
        .unwrap()
}

/// Rolls to a new segment so everything so far is cleanable.
async fn seal(p: &PartitionRef) {
    p.append(batch_of(&[("seal", Some("s"))], None, Compression::None), 0)
        .await
        .unwrap();
    p.roll_for_tests().await;
}

#[tokio::test]
async fn the_last_record_of_each_key_survives_with_its_offset() {
    for compression in [Compression::None, Compression::Gzip, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let p = open(dir.path(), 300);
        let mut model = BTreeMap::new();
        for round in 0..20 {
            let entries: Vec<(String, String)> = (0..5)
                .map(|k| (format!("k{k}"), format!("v{round}-{k}")))
                .collect();
            let refs: Vec<Entry> = entries
                .iter()
                .map(|(k, v)| (k.as_str(), Some(v.as_str())))
                .collect();
            let a = p
                .append(batch_of(&refs, None, compression), 0)
                .await
                .unwrap();
            for (i, (k, v)) in entries.iter().enumerate() {
                model.insert(k.clone(), (a.base_offset + i as i64, v.clone()));
            }
        }
        seal(&p).await;
        let before = read_all(&p);
        let stats = clean(&p, NOW).await;
        assert!(stats.segments_cleaned > 1, "{stats:?}");
        let after = read_all(&p);
        let mut expected: Vec<(i64, String, Option<String>)> = model
            .iter()
            .map(|(k, (o, v))| (*o, k.clone(), Some(v.clone())))
            .collect();
        expected.push(before.last().unwrap().clone());
        expected.sort();
        assert_eq!(after, expected, "{compression:?}");
        // The end and the next offset are where they were.
        assert_eq!(p.high_watermark(), before.last().unwrap().0 + 1);
        let next = p
            .append(batch_of(&[("k0", Some("later"))], None, compression), 0)
            .await
            .unwrap();
        assert_eq!(next.base_offset, p.high_watermark() - 1);
        // A reopened log reads the same.
        drop(p);
        let p = open(dir.path(), 300);
        assert_eq!(read_all(&p).len(), expected.len() + 1);
    }
}

#[tokio::test]
async fn a_tombstone_stays_until_its_delete_horizon_then_goes() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path(), 200);
    p.append(
        batch_of(
            &[("a", Some("1")), ("b", Some("1"))],
            None,
            Compression::None,
        ),
        0,
    )
    .await
    .unwrap();
    p.append(batch_of(&[("a", None)], None, Compression::None), 0)
        .await
        .unwrap();
    seal(&p).await;
    clean(&p, NOW).await;
    let keys: Vec<(String, Option<String>)> =
        read_all(&p).into_iter().map(|(_, k, v)| (k, v)).collect();
    assert!(
        keys.contains(&("a".into(), None)),
        "the tombstone stays: {keys:?}"
    );
    assert!(!keys.contains(&("a".into(), Some("1".into()))), "{keys:?}");
    // Later, past the horizon (NOW + delete.retention.ms), with new dirty
    // data to clean: the tombstone goes.
    p.append(batch_of(&[("b", Some("2"))], None, Compression::None), 0)
        .await
        .unwrap();
    seal(&p).await;
    clean(&p, NOW + 1_001).await;
    let keys: Vec<String> = read_all(&p).into_iter().map(|(_, k, _)| k).collect();
    assert!(!keys.contains(&"a".to_string()), "{keys:?}");
    assert!(keys.contains(&"b".to_string()));
}

#[tokio::test]
async fn aborted_transactions_are_dropped_and_committed_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path(), 1 << 20);
    // Producer 7 aborts, producer 8 commits.
    p.append(
        batch_of(
            &[("x", Some("aborted"))],
            Some((7, 0, 0, true)),
            Compression::None,
        ),
        0,
    )
    .await
    .unwrap();
    p.append(
        batch_of(
            &[("y", Some("committed"))],
            Some((8, 0, 0, true)),
            Compression::None,
        ),
        0,
    )
    .await
    .unwrap();
    let marker = |commit| ControlMarker {
        commit,
        coordinator_epoch: 0,
    };
    p.append_marker(7, 0, marker(false), NOW, 0).await.unwrap();
    p.append_marker(8, 0, marker(true), NOW, 0).await.unwrap();
    seal(&p).await;
    clean(&p, NOW).await;
    let values: Vec<Option<String>> = read_all(&p).into_iter().map(|(_, _, v)| v).collect();
    assert!(!values.contains(&Some("aborted".into())), "{values:?}");
    assert!(values.contains(&Some("committed".into())), "{values:?}");
    // A read_committed reader sees the committed record.
    let (bytes, ..) = p.read_committed(0, 1 << 20).unwrap();
    assert!(!bytes.is_empty());
}

/// A copy of the partition folder `from` in `to` (segment files only).
fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "leader.lock" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[tokio::test]
async fn a_crash_at_any_step_of_the_swap_leaves_the_old_or_the_cleaned_log() {
    // Build a log, keep a copy of it before cleaning.
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path(), 1 << 20);
    for round in 0..5 {
        let v = format!("v{round}");
        p.append(
            batch_of(
                &[("k", Some(v.as_str())), ("j", Some(v.as_str()))],
                None,
                Compression::None,
            ),
            0,
        )
        .await
        .unwrap();
    }
    seal(&p).await;
    let before = read_all(&p);
    let pristine = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), pristine.path());
    clean(&p, NOW).await;
    let cleaned = read_all(&p);
    assert!(cleaned.len() < before.len());
    let cleaned_log = std::fs::read(dir.path().join(format!("{:020}-1.log", 0))).unwrap();
    let end = p.log_state().segments[1].base_offset;
    drop(p);

    // Crash before the commit: a `.cleaned` file beside the old segments.
    let crash = tempfile::tempdir().unwrap();
    copy_dir(pristine.path(), crash.path());
    std::fs::write(
        crash.path().join(format!("{:020}-1.log.cleaned-1", 0)),
        &cleaned_log,
    )
    .unwrap();
    let p = open(crash.path(), 1 << 20);
    assert_eq!(read_all(&p), before, "the old log, the cleaning dropped");
    drop(p);
    assert!(!crash
        .path()
        .join(format!("{:020}-1.log.cleaned-1", 0))
        .exists());

    // Crash after the commit, before any old file went (and again with
    // the old index already gone): the swap is finished on open.
    for index_gone in [false, true] {
        let crash = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), crash.path());
        if index_gone {
            std::fs::remove_file(crash.path().join(format!("{:020}-1.index", 0))).unwrap();
        }
        std::fs::write(
            crash.path().join(format!("{:020}-1.{end:020}.swap-1", 0)),
            &cleaned_log,
        )
        .unwrap();
        let p = open(crash.path(), 1 << 20);
        assert_eq!(
            read_all(&p),
            cleaned,
            "the cleaned log (index gone: {index_gone})"
        );
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// A batch of (key index, value or tombstone).
    Append(Vec<(u8, Option<u16>)>),
    Roll,
    Clean {
        later_ms: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec((0u8..12, prop::option::weighted(0.85, any::<u16>())), 1..6)
            .prop_map(Op::Append),
        2 => Just(Op::Roll),
        2 => (0i64..3_000).prop_map(|later_ms| Op::Clean { later_ms }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Against a last-write-wins model: after any appends, rolls and
    /// cleanings, every key's last record is in the log at its offset
    /// (a tombstone only until its horizon passed), nothing a later record
    /// of the same key replaced is left in the cleaned part, and offsets
    /// only grow.
    #[test]
    fn the_cleaner_keeps_what_last_write_wins_keeps(
        ops in prop::collection::vec(op(), 1..40),
        map_keys in prop::option::of(1usize..8),
    ) {
        // A key map too small for the 12 keys (None: the default) cleans
        // in several passes.
        let config = match map_keys {
            Some(keys) => CleanerConfig {
                dedupe_buffer_size: (keys * super::offset_map::ENTRY_BYTES) as u64,
                load_factor: 1.0,
                ..CleanerConfig::default()
            },
            None => CleanerConfig::default(),
        };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let p = open(dir.path(), 250);
            // key → (offset, value) of its last record.
            let mut last: BTreeMap<String, (i64, Option<String>)> = BTreeMap::new();
            let mut now = NOW;
            // A tombstone may go once a cleaning ran later than this.
            let mut tombstone_horizon: BTreeMap<String, i64> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Append(entries) => {
                        let owned: Vec<(String, Option<String>)> = entries
                            .iter()
                            .map(|(k, v)| (format!("key-{k}"), v.map(|v| v.to_string())))
                            .collect();
                        let refs: Vec<Entry> =
                            owned.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect();
                        let a = p.append(batch_of(&refs, None, Compression::None), 0).await.unwrap();
                        for (i, (k, v)) in owned.into_iter().enumerate() {
                            tombstone_horizon.remove(&k);
                            last.insert(k, (a.base_offset + i as i64, v));
                        }
                    }
                    Op::Roll => p.roll_for_tests().await,
                    Op::Clean { later_ms } => {
                        now += later_ms;
                        let c = plan::cleanable(&p.log_state(), &policy(), now);
                        p.clean(c, policy(), config, now).await.unwrap();
                        // The cleaning rewrote the segments below its
                        // checkpoint, and the one holding it: the
                        // tombstones it kept there have their horizon.
                        let state = p.log_state();
                        let checkpoint = state.checkpoint.unwrap_or(0);
                        let covered = state
                            .segments
                            .iter()
                            .map(|s| s.base_offset)
                            .find(|b| *b >= checkpoint)
                            .unwrap_or(checkpoint);
                        for (k, (o, v)) in &last {
                            if v.is_none() && *o < covered {
                                tombstone_horizon.entry(k.clone()).or_insert(now + 1_000);
                            }
                        }
                    }
                }
            }
            let log = read_all(&p);
            prop_assert!(log.windows(2).all(|w| w[0].0 < w[1].0), "offsets grow: {:?}", log);
            for (k, (offset, value)) in &last {
                let found = log.iter().find(|(o, key, _)| o == offset && key == k);
                match (value, found) {
                    (Some(v), Some((_, _, got))) => prop_assert_eq!(got.as_ref(), Some(v)),
                    (Some(_), None) => prop_assert!(false, "{} lost its last value at {}", k, offset),
                    // A tombstone may be gone only past its horizon.
                    (None, None) => prop_assert!(
                        tombstone_horizon.get(k).is_some_and(|h| *h <= now),
                        "{} lost its tombstone before the horizon", k
                    ),
                    (None, Some(_)) => {}
                }
            }
            // Below the cleaner checkpoint, no record outlives a later
            // record of its key there.
            let checkpoint = p.log_state().checkpoint.unwrap_or(0);
            for (o, k, _) in log.iter().filter(|(o, ..)| *o < checkpoint) {
                let replaced = log
                    .iter()
                    .any(|(lo, lk, _)| lk == k && lo > o && *lo < checkpoint);
                prop_assert!(!replaced, "{} at {} survived a cleaning below {}", k, o, checkpoint);
            }
            Ok(())
        })?;
    }
}
