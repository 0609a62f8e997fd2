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
/// generation's segment there ([`crate::storage::names::segment_name`]).
pub fn path(dir: &Path, offset: i64, gen: u32) -> PathBuf {
    dir.join(crate::storage::names::segment_name(offset, gen, EXTENSION))
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
        .filter_map(|e| {
            crate::storage::names::parse_segment_name(e.file_name().to_str()?, EXTENSION)
        })
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
mod tests;
