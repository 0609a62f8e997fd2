//! One cleaning of one log (Apache's `Cleaner.doClean`): the offset map of
//! the dirty section, then every segment from the log start up to where
//! the map reaches, grouped by size, rewritten with each key's last record
//! into a `.cleaned` file that the log swaps in
//! ([`crate::storage::log::Log::replace_with_cleaned`]).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::offset_map::OffsetMap;
use super::plan::CompactionPolicy;
use super::txn::CleanedTransactions;
use crate::storage::batch::{self, BatchHeader, HEADER_LEN};
use crate::storage::fs::read_at;
use crate::storage::records::{self, delete_horizon};
use crate::storage::txn_index::AbortedTxn;

/// A sealed segment as the cleaner reads it.
#[derive(Clone)]
pub struct SegmentSource {
    pub base_offset: i64,
    /// The generation that wrote it (part of its file name).
    pub gen: u32,
    pub file: Arc<File>,
    pub size: u64,
}

/// What a producer that is still active last wrote (Apache's `LastRecord`):
/// the batch holding it outlives any cleaning, so the producer's sequence
/// and epoch survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastRecord {
    /// The last offset of its last data batch, if one is in the log.
    pub last_data_offset: Option<i64>,
    pub epoch: i16,
}

/// One log's cleaning, as the log stood when it began.
pub struct Cleaning {
    pub dir: PathBuf,
    /// The generation cleaning (the log's own): part of the cleaned file's
    /// name, so that an earlier generation's holder cleaning the same
    /// segments late never writes the same file.
    pub writer_gen: u32,
    /// The sealed segments from the log start, oldest first.
    pub segments: Vec<SegmentSource>,
    /// The active segment's base: what follows the last sealed one.
    pub active_base: i64,
    /// Aborted transactions from the log start to the uncleanable offset.
    pub aborted: Vec<AbortedTxn>,
    pub last_records: HashMap<i64, LastRecord>,
    pub first_dirty_offset: i64,
    pub first_uncleanable_offset: i64,
    pub policy: CompactionPolicy,
    pub segment_bytes: u64,
    pub now_ms: i64,
}

/// Counts of one cleaning (Apache's `CleanerStats`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_read: u64,
    pub records_retained: u64,
    pub segments_cleaned: usize,
}

/// Bytes per second at most over a cleaning
/// (`log.cleaner.io.max.bytes.per.second`).
pub struct Throttle {
    rate: f64,
    start: Instant,
    bytes: u64,
}

impl Throttle {
    pub fn new(bytes_per_second: f64) -> Throttle {
        Throttle {
            rate: bytes_per_second,
            start: Instant::now(),
            bytes: 0,
        }
    }

    /// Counts `n` bytes of I/O and sleeps while ahead of the rate.
    fn pace(&mut self, n: usize) {
        // Apache's default is Double.MaxValue: no limit, no clock reads.
        if self.rate >= f64::MAX || !self.rate.is_finite() || self.rate <= 0.0 {
            return;
        }
        self.bytes += n as u64;
        let due = Duration::from_secs_f64(self.bytes as f64 / self.rate);
        if let Some(ahead) = due.checked_sub(self.start.elapsed()) {
            if ahead > Duration::from_millis(10) {
                std::thread::sleep(ahead);
            }
        }
    }
}

/// Why a cleaning stopped before its end.
pub fn aborted() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "cleaning aborted")
}

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

const CHUNK: usize = 1 << 20;

/// The whole batches of a segment file, read a chunk at a time.
pub struct BatchReader<'f> {
    file: &'f File,
    size: u64,
    /// The file position of `buf[0]`.
    at: u64,
    buf: Vec<u8>,
    cursor: usize,
}

impl<'f> BatchReader<'f> {
    pub fn new(file: &'f File, size: u64) -> BatchReader<'f> {
        BatchReader {
            file,
            size,
            at: 0,
            buf: Vec::new(),
            cursor: 0,
        }
    }

    /// The next batch and its bytes, `None` at the end.
    pub fn next_batch(&mut self) -> io::Result<Option<(BatchHeader, &[u8])>> {
        loop {
            let avail = &self.buf[self.cursor..];
            let mut need = CHUNK;
            if avail.len() >= HEADER_LEN {
                let h = batch::parse_header(avail).map_err(invalid)?;
                if avail.len() >= h.size {
                    let start = self.cursor;
                    self.cursor += h.size;
                    return Ok(Some((h, &self.buf[start..start + h.size])));
                }
                need = need.max(h.size);
            }
            let pos = self.at + self.cursor as u64;
            if pos >= self.size {
                return Ok(None);
            }
            let len = (need as u64).min(self.size - pos) as usize;
            if len <= avail.len() {
                return Err(invalid(format!(
                    "a batch at byte {pos} runs past the segment's end"
                )));
            }
            self.buf = read_at(self.file, pos, len)?;
            self.at = pos;
            self.cursor = 0;
        }
    }
}

/// Maps the last offset of every key in the dirty section (Apache's
/// `buildOffsetMap`), stopping at the uncleanable offset or when the map
/// is full; returns the first offset the map does not cover.
pub fn build_offset_map(
    c: &Cleaning,
    map: &mut OffsetMap,
    throttle: &mut Throttle,
    go_on: &dyn Fn() -> bool,
) -> io::Result<i64> {
    let mut txns = CleanedTransactions::default();
    txns.add_aborted(
        c.aborted
            .iter()
            .filter(|t| t.last_offset >= c.first_dirty_offset)
            .copied(),
    );
    let end = c.first_uncleanable_offset;
    for (i, seg) in c.segments.iter().enumerate() {
        let next = c
            .segments
            .get(i + 1)
            .map_or(c.active_base, |s| s.base_offset);
        if next <= c.first_dirty_offset || seg.base_offset >= end {
            continue;
        }
        if !go_on() {
            return Err(aborted());
        }
        let mut reader = BatchReader::new(&seg.file, seg.size);
        while let Some((h, bytes)) = reader.next_batch()? {
            throttle.pace(h.size);
            if h.base_offset >= end {
                break;
            }
            if h.last_offset() < c.first_dirty_offset {
                continue;
            }
            if h.is_control() {
                txns.on_control_batch(&h, batch::control_marker(bytes).ok().flatten());
            } else if !txns.on_batch(&h) {
                let section = records::records_section(bytes, &h)?;
                let mut full = false;
                records::for_each_record(&section, &h, |r| {
                    let Some(key) = r.key.filter(|_| !full && r.offset >= c.first_dirty_offset)
                    else {
                        return;
                    };
                    if map.is_full() && map.get(key).is_none() {
                        full = true;
                    } else {
                        map.put(key, r.offset);
                    }
                })?;
                if full {
                    return Ok(map.latest_offset() + 1);
                }
            }
            map.update_latest_offset(h.last_offset());
        }
        map.update_latest_offset(next.min(end) - 1);
    }
    Ok(map.latest_offset() + 1)
}

/// The path a group starting at segment `base` of generation `gen` is
/// cleaned into by generation `writer`.
pub fn cleaned_path(dir: &Path, base: i64, gen: u32, writer: u32) -> PathBuf {
    let segment = crate::storage::names::segment_name(base, gen, "log");
    match writer {
        0 => dir.join(format!("{segment}.cleaned")),
        w => dir.join(format!("{segment}.cleaned-{w}")),
    }
}

/// What happens to a batch (Apache's `BatchRetention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchRetention {
    Delete,
    DeleteEmpty,
    RetainEmpty,
}

/// A group of consecutive segments being cleaned into one file.
struct Group {
    bases: Vec<i64>,
    /// The generation of its segments (a group never spans two).
    gen: u32,
    path: PathBuf,
    out: BufWriter<File>,
    written: u64,
}

impl Group {
    fn start(dir: &Path, base: i64, gen: u32, writer: u32) -> io::Result<Group> {
        let path = cleaned_path(dir, base, gen, writer);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)?;
        Ok(Group {
            bases: Vec::new(),
            gen,
            path,
            out: BufWriter::with_capacity(CHUNK, file),
            written: 0,
        })
    }
}

/// A cleaned group, written and fsynced, for the log to swap in: the
/// segments it replaces and the base of the one after them.
pub struct CleanedGroup<'p> {
    pub bases: &'p [i64],
    /// The generation of the segments it replaces, and its own.
    pub gen: u32,
    pub next_base: i64,
    pub path: &'p Path,
}

/// Cleans the sealed segments below `end_offset` (Apache's
/// `cleanSegments` for each group): consecutive segments go into one
/// cleaned file while what it holds and the next segment fit in
/// `segment_bytes` (Apache groups by the originals' sizes; grouping by
/// the cleaned size swaps a well-compacted log in once), each group
/// fsynced and handed to `commit` before the next begins.
#[allow(clippy::too_many_arguments)]
pub fn clean_segments(
    c: &Cleaning,
    end_offset: i64,
    map: &OffsetMap,
    stats: &mut CleanStats,
    throttle: &mut Throttle,
    go_on: &dyn Fn() -> bool,
    commit: &mut dyn FnMut(CleanedGroup) -> io::Result<()>,
) -> io::Result<()> {
    let mut txns = CleanedTransactions::default();
    let mut group: Option<Group> = None;
    let result = (|| {
        for (i, seg) in c.segments.iter().enumerate() {
            if seg.base_offset >= end_offset {
                break;
            }
            if !go_on() {
                return Err(aborted());
            }
            if let Some(g) =
                group.take_if(|g| g.written + seg.size > c.segment_bytes || g.gen != seg.gen)
            {
                finish(g, seg.base_offset, commit)?;
            }
            let g = match &mut group {
                Some(g) => g,
                None => group.insert(Group::start(
                    &c.dir,
                    seg.base_offset,
                    seg.gen,
                    c.writer_gen,
                )?),
            };
            g.bases.push(seg.base_offset);
            let next = c
                .segments
                .get(i + 1)
                .map_or(c.active_base, |s| s.base_offset);
            txns.add_aborted(
                c.aborted
                    .iter()
                    .filter(|t| t.first_offset >= seg.base_offset && t.first_offset < next)
                    .copied(),
            );
            let mut reader = BatchReader::new(&seg.file, seg.size);
            while let Some((h, bytes)) = reader.next_batch()? {
                throttle.pace(h.size);
                stats.bytes_read += h.size as u64;
                if let Some(kept) = clean_batch(c, map, &mut txns, stats, &h, bytes)? {
                    throttle.pace(kept.len());
                    stats.bytes_written += kept.len() as u64;
                    g.written += kept.len() as u64;
                    g.out.write_all(&kept)?;
                }
            }
            stats.segments_cleaned += 1;
            if next >= end_offset {
                let g = group.take().expect("a group under way");
                finish(g, next, commit)?;
            }
        }
        Ok(())
    })();
    if let Some(g) = group {
        let _ = std::fs::remove_file(&g.path);
    }
    result
}

/// Fsyncs a group's file and hands it to `commit`; the file is gone
/// when either fails.
fn finish(
    g: Group,
    next_base: i64,
    commit: &mut dyn FnMut(CleanedGroup) -> io::Result<()>,
) -> io::Result<()> {
    let synced = g
        .out
        .into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all());
    let result = synced.and_then(|()| {
        commit(CleanedGroup {
            bases: &g.bases,
            gen: g.gen,
            next_base,
            path: &g.path,
        })
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&g.path);
    }
    result
}

/// The bytes a batch leaves in the cleaned segment, if any (Apache's
/// `cleanInto` filter: `checkBatchRetention`, `shouldRetainRecord`).
fn clean_batch(
    c: &Cleaning,
    map: &OffsetMap,
    txns: &mut CleanedTransactions,
    stats: &mut CleanStats,
    h: &BatchHeader,
    bytes: &[u8],
) -> io::Result<Option<Vec<u8>>> {
    let now = c.now_ms;
    let control = h.is_control();
    let can_discard = if control {
        txns.on_control_batch(h, batch::control_marker(bytes).ok().flatten())
    } else {
        txns.on_batch(h)
    };
    // Markers are kept until their delete horizon, as tombstones are.
    let discard_records = if control {
        can_discard && delete_horizon(h).is_some_and(|t| t <= now)
    } else {
        can_discard
    };
    let last_of_producer = h.producer_id >= 0
        && c.last_records
            .get(&h.producer_id)
            .is_some_and(|last| match last.last_data_offset {
                Some(o) => h.last_offset() == o,
                None => control && h.producer_epoch == last.epoch,
            });
    let retention = if last_of_producer || h.next_offset() == c.first_uncleanable_offset {
        BatchRetention::RetainEmpty
    } else if discard_records {
        BatchRetention::Delete
    } else {
        BatchRetention::DeleteEmpty
    };
    if retention == BatchRetention::Delete {
        stats.records_read += h.record_count.max(0) as u64;
        return Ok(None);
    }
    let section = records::records_section(bytes, h)?;
    let keep_deletes = delete_horizon(h).is_none_or(|t| now < t);
    let mut read = 0usize;
    let mut kept = Vec::new();
    records::for_each_record(&section, h, |r| {
        read += 1;
        let keep = !discard_records
            && (control
                || r.offset > map.latest_offset()
                || r.key.is_some_and(|key| {
                    let latest = map.get(key).is_none_or(|found| r.offset >= found);
                    latest && (!r.is_tombstone() || keep_deletes)
                }));
        if keep {
            kept.push(r);
        }
    })?;
    stats.records_read += read as u64;
    stats.records_retained += kept.len() as u64;
    if kept.is_empty() {
        return Ok((retention == BatchRetention::RetainEmpty).then(|| records::empty(bytes, h)));
    }
    let tombstones = kept.iter().any(|r| r.is_tombstone());
    let set_horizon = (tombstones || (can_discard && control)) && delete_horizon(h).is_none();
    if kept.len() == read && !set_horizon {
        return Ok(Some(bytes.to_vec()));
    }
    let horizon = set_horizon.then(|| now.saturating_add(c.policy.delete_retention_ms));
    records::rebuild(bytes, h, &kept, horizon).map(Some)
}
