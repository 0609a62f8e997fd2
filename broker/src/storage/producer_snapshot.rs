//! Producer-state snapshots, Apache's `<offset>.snapshot` files: at every
//! segment roll a partition's producers (their recent batches, epochs,
//! coordinator epochs, open transactions) and its aborted transactions, as
//! of the new segment's base offset, are written beside the segments. A log
//! then opens by loading the newest snapshot and replaying only the
//! segments from its offset, not every segment.
//!
//! Format: `KPS1`, a CRC-32C of the rest, the offset (i64), the producers
//! ([`ProducerStates::encode_into`]), the aborted transactions (count, then
//! producer id, first offset, last offset, last stable offset), big-endian.
//! A snapshot that does not check out is skipped with a warning; the log
//! then replays from an older one, or from its segments alone.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use tracing::warn;

use super::fs::write_atomic;
use super::producer_state::{take_i64, take_u32, ProducerStates};
use super::txn_index::{AbortedTxn, AbortedTxns};

const MAGIC: &[u8; 4] = b"KPS1";
const EXTENSION: &str = "snapshot";
/// Snapshots kept per partition: the newest, and one to fall back on.
const KEEP: usize = 2;

/// The producer state of a partition as of `offset`.
pub struct Snapshot {
    pub offset: i64,
    pub producers: ProducerStates,
    pub aborted: AbortedTxns,
}

/// The snapshot taken at `offset` by generation `gen`, named as that
/// generation's segment there ([`crate::storage::log::segment_name`]).
pub fn path(dir: &Path, offset: i64, gen: u32) -> PathBuf {
    dir.join(crate::storage::log::segment_name(offset, gen, EXTENSION))
}

pub fn encode(offset: i64, producers: &ProducerStates, aborted: &AbortedTxns) -> Vec<u8> {
    let mut body = offset.to_be_bytes().to_vec();
    producers.encode_into(&mut body);
    body.extend_from_slice(&(aborted.len() as u32).to_be_bytes());
    for t in aborted.entries() {
        for v in [
            t.producer_id,
            t.first_offset,
            t.last_offset,
            t.last_stable_offset,
        ] {
            body.extend_from_slice(&v.to_be_bytes());
        }
    }
    let mut out = Vec::with_capacity(8 + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

pub fn decode(bytes: &[u8]) -> Result<Snapshot, String> {
    let rest = bytes
        .strip_prefix(MAGIC)
        .ok_or("not a producer-state snapshot")?;
    let mut rest = rest;
    let crc = take_u32(&mut rest).ok_or("truncated")?;
    if crc32c::crc32c(rest) != crc {
        return Err("checksum mismatch".into());
    }
    let short = || "truncated".to_string();
    let offset = take_i64(&mut rest).ok_or_else(short)?;
    let producers = ProducerStates::decode_from(&mut rest).ok_or_else(short)?;
    let mut aborted = AbortedTxns::default();
    for _ in 0..take_u32(&mut rest).ok_or_else(short)? {
        let mut v = [0i64; 4];
        for x in &mut v {
            *x = take_i64(&mut rest).ok_or_else(short)?;
        }
        aborted.push(AbortedTxn {
            producer_id: v[0],
            first_offset: v[1],
            last_offset: v[2],
            last_stable_offset: v[3],
        });
    }
    if !rest.is_empty() {
        return Err(format!("{} trailing bytes", rest.len()));
    }
    Ok(Snapshot {
        offset,
        producers,
        aborted,
    })
}

/// Writes the snapshot taken at `offset` durably (all or nothing), then
/// removes all but the newest [`KEEP`].
pub fn write(dir: &Path, offset: i64, gen: u32, encoded: &[u8]) -> io::Result<()> {
    write_atomic(&path(dir, offset, gen), encoded)?;
    let taken = taken(dir)?;
    for &(offset, gen) in taken.iter().rev().skip(KEEP) {
        // Best effort: a leftover only costs its bytes.
        let _ = fs::remove_file(path(dir, offset, gen));
    }
    Ok(())
}

/// The offsets and generations of the snapshots in `dir`, ascending.
fn taken(dir: &Path) -> io::Result<Vec<(i64, u32)>> {
    let mut out: Vec<(i64, u32)> = fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| crate::storage::log::parse_segment_name(e.file_name().to_str()?, EXTENSION))
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// The newest snapshot in `dir` whose offset and generation `usable`
/// accepts (a segment's), skipping any that does not decode.
pub fn load_newest(dir: &Path, usable: impl Fn(i64, u32) -> bool) -> Option<Snapshot> {
    for (offset, gen) in taken(dir).ok()?.into_iter().rev() {
        if !usable(offset, gen) {
            continue;
        }
        let file = path(dir, offset, gen);
        match fs::read(&file)
            .map_err(|e| e.to_string())
            .and_then(|b| decode(&b))
        {
            Ok(s) if s.offset == offset => return Some(s),
            Ok(s) => warn!(file = %file.display(), inner = s.offset,
                           "producer-state snapshot names another offset; skipped"),
            Err(e) => warn!(file = %file.display(), error = %e,
                            "producer-state snapshot unreadable; skipped"),
        }
    }
    None
}

#[cfg(test)]
mod tests {
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
}
