//! One segment of a partition log: its `.log` file of batches and its
//! sparse `.index` (fixed 20-byte entries: offset i64, position u32, max
//! timestamp before position i64), how it is created, opened, recovered,
//! appended to and searched, and a roll to the next one.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracing::warn;

use super::{wall_clock_ms, LogConfig, RecoveryReport};
use crate::storage::batch::{self, BatchHeader, HEADER_LEN};
use crate::storage::fs::sync_dir;
use crate::storage::producer_snapshot;

pub(super) const INDEX_ENTRY_LEN: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct IndexEntry {
    pub(super) offset: i64,
    pub(super) position: u32,
    /// Largest batch timestamp in the segment before `position`.
    pub(super) max_ts_before: i64,
}

impl IndexEntry {
    fn encode(&self) -> [u8; INDEX_ENTRY_LEN] {
        let mut out = [0u8; INDEX_ENTRY_LEN];
        out[0..8].copy_from_slice(&self.offset.to_be_bytes());
        out[8..12].copy_from_slice(&self.position.to_be_bytes());
        out[12..20].copy_from_slice(&self.max_ts_before.to_be_bytes());
        out
    }
    fn decode(b: &[u8]) -> Self {
        Self {
            offset: i64::from_be_bytes(b[0..8].try_into().expect("8")),
            position: u32::from_be_bytes(b[8..12].try_into().expect("4")),
            max_ts_before: i64::from_be_bytes(b[12..20].try_into().expect("8")),
        }
    }
}

pub struct Segment {
    pub(super) base_offset: i64,
    /// The leadership generation that wrote it (0: before generations),
    /// part of its file names ([`crate::storage::generations`]).
    pub(super) gen: u32,
    pub(super) file: Arc<File>,
    /// `None` for a log opened read-only: its index lives in memory only.
    pub(super) index_file: Option<File>,
    pub(super) size: u64,
    pub(super) next_offset: i64,
    pub(super) index: Vec<IndexEntry>,
    pub(super) bytes_since_index: u64,
    pub(super) max_ts: i64,
    /// The first batch's largest timestamp, -1 before one (Apache's
    /// `rollingBasedTimestamp`), and when this handle was made (ms): what
    /// `segment.ms` counts from.
    pub(super) first_batch_ts: i64,
    pub(super) created_ms: i64,
    /// The first offset not part of this segment: the start of the next
    /// generation for an earlier generation's segment, else `i64::MAX`.
    pub(super) limit: i64,
}

/// A segment file's path: `<base>.<ext>` before generations,
/// `<base>-<generation>.<ext>` since.
pub(super) fn segment_path(dir: &Path, base: i64, gen: u32, ext: &str) -> PathBuf {
    dir.join(crate::storage::names::segment_name(base, gen, ext))
}

pub(super) fn read_header_at(file: &File, pos: u64, file_len: u64) -> Option<BatchHeader> {
    if pos + HEADER_LEN as u64 > file_len {
        return None;
    }
    let mut buf = [0u8; HEADER_LEN];
    file.read_exact_at(&mut buf, pos).ok()?;
    let h = batch::parse_header(&buf).ok()?;
    (pos + h.size as u64 <= file_len).then_some(h)
}

/// A segment roll, prepared under the log and run without it.
pub struct Roll {
    pub(super) dir: PathBuf,
    pub(super) sealed: Arc<File>,
    pub(super) sealed_index: Option<File>,
    pub(super) base_offset: i64,
    /// The generation writing the log (the new segment's).
    pub(super) gen: u32,
    /// The producer state as of `base_offset`, encoded.
    pub(super) snapshot: Vec<u8>,
}

impl Roll {
    /// Seals the old segment durably before anything lands in the new one,
    /// writes the producer-state snapshot at the new one's base, then
    /// creates the new one (durably named in the folder).
    pub fn run(self) -> io::Result<Segment> {
        self.sealed.sync_data()?;
        if let Some(index_file) = &self.sealed_index {
            index_file.sync_data()?;
        }
        // Only a speed-up for the next open: a failure costs a longer
        // replay then, never the append.
        if let Err(e) =
            producer_snapshot::write(&self.dir, self.base_offset, self.gen, &self.snapshot)
        {
            warn!(dir = %self.dir.display(), offset = self.base_offset, error = %e,
                  "cannot write the producer-state snapshot");
        }
        let segment = Segment::create(&self.dir, self.base_offset, self.gen)?;
        sync_dir(&self.dir)?;
        Ok(segment)
    }
}

impl Segment {
    pub(super) fn create(dir: &Path, base_offset: i64, gen: u32) -> io::Result<Segment> {
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .write(true)
            .truncate(false)
            .open(segment_path(dir, base_offset, gen, "log"))?;
        let index_file = OpenOptions::new()
            .create(true)
            .read(true)
            .write(true)
            .truncate(true)
            .open(segment_path(dir, base_offset, gen, "index"))?;
        Ok(Segment {
            base_offset,
            gen,
            file: Arc::new(file),
            index_file: Some(index_file),
            size: 0,
            next_offset: base_offset,
            index: Vec::new(),
            bytes_since_index: 0,
            max_ts: -1,
            first_batch_ts: -1,
            created_ms: wall_clock_ms(),
            limit: i64::MAX,
        })
    }

    /// Opens a sealed segment, trusting its index when it is consistent.
    /// Without `writable`, nothing on disk is created or changed. Batches
    /// from `limit` on are not part of it (another generation's, or what an
    /// earlier holder wrote late).
    pub(super) fn open_sealed(
        dir: &Path,
        base_offset: i64,
        gen: u32,
        config: &LogConfig,
        writable: bool,
        limit: i64,
    ) -> io::Result<Segment> {
        let file = OpenOptions::new()
            .read(true)
            .write(writable)
            .open(segment_path(dir, base_offset, gen, "log"))?;
        let size = file.metadata()?.len();
        let index_path = segment_path(dir, base_offset, gen, "index");
        let raw = fs::read(&index_path).unwrap_or_default();
        let mut index: Vec<IndexEntry> = raw
            .chunks_exact(INDEX_ENTRY_LEN)
            .map(IndexEntry::decode)
            .take_while(|e| e.offset < limit)
            .collect();
        let consistent = raw.len().is_multiple_of(INDEX_ENTRY_LEN)
            && index
                .windows(2)
                .all(|w| w[0].offset < w[1].offset && w[0].position < w[1].position)
            && index
                .iter()
                .all(|e| e.offset >= base_offset && u64::from(e.position) < size);
        if !consistent {
            index.clear();
        }
        let index_file = if writable {
            Some(
                OpenOptions::new()
                    .create(true)
                    .read(true)
                    .write(true)
                    .truncate(false)
                    .open(&index_path)?,
            )
        } else {
            None
        };
        let mut seg = Segment {
            base_offset,
            gen,
            file: Arc::new(file),
            index_file,
            size,
            next_offset: base_offset,
            index,
            bytes_since_index: 0,
            max_ts: -1,
            first_batch_ts: -1,
            created_ms: wall_clock_ms(),
            limit,
        };
        seg.first_batch_ts = read_header_at(&seg.file, 0, size)
            .filter(|h| h.base_offset < limit)
            .map_or(-1, |h| h.max_timestamp);
        if consistent && !seg.index.is_empty() {
            // Walk only from the last indexed batch to find the end.
            let last = *seg.index.last().expect("non-empty");
            seg.max_ts = last.max_ts_before;
            // A scan that reaches `limit` ends the segment there.
            seg.scan_from(u64::from(last.position), last.offset, config, false);
        } else {
            seg.rebuild(config, false)?;
        }
        Ok(seg)
    }

    /// Scans batch headers from `pos`, updating end, timestamps and (when
    /// `write_index`) the index. Returns where the valid data ends and why
    /// it stopped early, if it did.
    pub(super) fn scan_from(
        &mut self,
        mut pos: u64,
        expected: i64,
        config: &LogConfig,
        verify_crc: bool,
    ) -> (u64, Option<String>) {
        let mut expected = expected;
        let file_len = self.size;
        let mut since_index = 0u64;
        while pos < file_len {
            let Some(h) = read_header_at(&self.file, pos, file_len) else {
                return (pos, Some(format!("incomplete batch at byte {pos}")));
            };
            if h.base_offset >= self.limit {
                // Past the generation's end: not part of this segment.
                self.size = pos;
                break;
            }
            if verify_crc {
                let mut buf = vec![0u8; h.size];
                if let Err(e) = self.file.read_exact_at(&mut buf, pos) {
                    return (pos, Some(format!("unreadable batch at byte {pos}: {e}")));
                }
                if let Err(e) = batch::validate(&buf) {
                    return (pos, Some(format!("corrupt batch at byte {pos}: {e}")));
                }
            }
            // Offsets only grow; a cleaned segment has gaps.
            if h.base_offset < expected {
                return (
                    pos,
                    Some(format!(
                        "batch at byte {pos} has offset {} where {expected} or more was expected",
                        h.base_offset
                    )),
                );
            }
            if verify_crc && (pos == 0 || since_index >= config.index_interval_bytes) {
                self.index.push(IndexEntry {
                    offset: h.base_offset,
                    position: pos as u32,
                    max_ts_before: self.max_ts,
                });
                since_index = 0;
            }
            since_index += h.size as u64;
            self.max_ts = self.max_ts.max(h.max_timestamp);
            expected = h.next_offset();
            self.next_offset = expected;
            pos += h.size as u64;
        }
        self.bytes_since_index = since_index;
        (pos, None)
    }

    /// Rebuilds index and end from the data; with `verify` a damaged tail
    /// is cut off the file (on a writable log; a read-only one stops
    /// serving at the damage). Returns what was cut.
    pub(super) fn rebuild(
        &mut self,
        config: &LogConfig,
        verify: bool,
    ) -> io::Result<RecoveryReport> {
        self.index.clear();
        self.max_ts = -1;
        self.next_offset = self.base_offset;
        let (valid_end, reason) = self.scan_from(0, self.base_offset, config, true);
        let mut report = RecoveryReport::default();
        if valid_end < self.size {
            report.truncated_bytes = self.size - valid_end;
            report.reason = reason;
            if verify && self.index_file.is_some() {
                self.file.set_len(valid_end)?;
                self.file.sync_all()?;
            }
            self.size = valid_end;
        }
        if let Some(index_file) = &self.index_file {
            let mut raw = Vec::with_capacity(self.index.len() * INDEX_ENTRY_LEN);
            for e in &self.index {
                raw.extend_from_slice(&e.encode());
            }
            index_file.set_len(0)?;
            index_file.write_all_at(&raw, 0)?;
        }
        Ok(report)
    }

    pub(super) fn append(
        &mut self,
        data: &[u8],
        headers: &[BatchHeader],
        config: &LogConfig,
    ) -> io::Result<()> {
        if let Err(e) = self.file.write_all_at(data, self.size) {
            // Leave no partial batch behind for readers or recovery.
            let _ = self.file.set_len(self.size);
            return Err(e);
        }
        if self.size == 0 {
            self.first_batch_ts = headers.first().map_or(-1, |h| h.max_timestamp);
        }
        let mut pos = self.size;
        for h in headers {
            if self.size == 0 && pos == 0 || self.bytes_since_index >= config.index_interval_bytes {
                let entry = IndexEntry {
                    offset: h.base_offset,
                    position: pos as u32,
                    max_ts_before: self.max_ts,
                };
                // The index is advisory until the segment is sealed: a lost
                // entry only costs a longer scan, so a failed write is not
                // an error for the producer.
                let at = (self.index.len() * INDEX_ENTRY_LEN) as u64;
                let written = self
                    .index_file
                    .as_ref()
                    .is_some_and(|f| f.write_all_at(&entry.encode(), at).is_ok());
                if written {
                    self.index.push(entry);
                }
                self.bytes_since_index = 0;
            }
            self.bytes_since_index += h.size as u64;
            self.max_ts = self.max_ts.max(h.max_timestamp);
            pos += h.size as u64;
        }
        self.size = pos;
        self.next_offset = headers.last().map_or(self.next_offset, |h| h.next_offset());
        Ok(())
    }

    /// Apache's `largestTimestamp`: the largest record timestamp, else
    /// the file's modification time.
    pub(super) fn largest_timestamp(&self) -> i64 {
        if self.max_ts >= 0 {
            return self.max_ts;
        }
        self.file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(self.max_ts, |d| d.as_millis() as i64)
    }

    /// Byte position of the batch containing `offset` or the first after it.
    pub(super) fn find_position(&self, offset: i64) -> Option<(u64, BatchHeader)> {
        let i = self.index.partition_point(|e| e.offset <= offset);
        let mut pos = if i == 0 {
            0
        } else {
            u64::from(self.index[i - 1].position)
        };
        while let Some(h) = read_header_at(&self.file, pos, self.size) {
            if h.next_offset() > offset {
                return Some((pos, h));
            }
            pos += h.size as u64;
        }
        None
    }
}
