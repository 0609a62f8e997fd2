//! The log's side of compaction: what the cleaner reads of it, and the
//! swap that puts a cleaned segment in place of the ones it replaces.
//!
//! The swap is crash safe (Apache's `.cleaned` / `.swap`): the cleaner
//! writes and fsyncs `<base>.log.cleaned`; renaming it to
//! `<base>.<end>.swap` (and syncing the folder) commits it; then the
//! replaced segments' `.log` files (those based in `[base, end)`) are
//! renamed `.log.deleted`, their indexes and snapshots (but `base`'s
//! snapshot) removed, and the swap file becomes `<base>.log`. The
//! `.deleted` files are unlinked after the log's lock is let go: freeing a
//! large file's blocks is slow on some volumes (a synchronous discard), and
//! appends must not wait for it. Opening a log deletes `.cleaned` and
//! `.deleted` files and finishes any `.swap`, so a crash at any point
//! leaves either the old segments or the cleaned one, never a mix.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{segment_path, Log, LogConfig, Segment};
use crate::storage::cleaner::{LastRecord, SegmentSource};
use crate::storage::fs::sync_dir;
use crate::storage::names::{parse_segment_name, segment_name};
use crate::storage::producer_snapshot;
use crate::storage::txn_index::AbortedTxn;

/// A committed swap of generation `gen`'s segments `[base, end)`, by the
/// generation `writer` (two holders of a partition never share one).
fn swap_path(dir: &Path, base: i64, gen: u32, end: i64, writer: u32) -> PathBuf {
    let stem = segment_name(base, gen, "");
    let stem = stem.trim_end_matches('.');
    match writer {
        0 => dir.join(format!("{stem}.{end:020}.swap")),
        w => dir.join(format!("{stem}.{end:020}.swap-{w}")),
    }
}

/// A swap file's segments' base and generation, end and writer.
fn parse_swap(name: &str) -> Option<(i64, u32, i64, u32)> {
    let (rest, writer) = match name.rsplit_once(".swap-") {
        Some((rest, w)) => (rest, w.parse().ok()?),
        None => (name.strip_suffix(".swap")?, 0),
    };
    let (stem, end) = rest.rsplit_once('.')?;
    let (base, gen) = parse_segment_name(&format!("{stem}.log"), "log")?;
    Some((base, gen, end.parse().ok()?, writer))
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The name a replaced segment file has until it is unlinked.
fn deleted_path(dir: &Path, base: i64, gen: u32) -> PathBuf {
    dir.join(format!("{}.deleted", segment_name(base, gen, "log")))
}

/// Finishes a committed swap: the `.log` files of the segments based in
/// `[base, end)` become `.deleted` (returned, for the caller to unlink),
/// their indexes and later snapshots go, then the swap file becomes
/// `<base>.log`; the folder is synced.
fn finish_swap(
    dir: &Path,
    (base, gen): (i64, u32),
    end: i64,
    writer: u32,
    replaced: &[i64],
) -> io::Result<Vec<PathBuf>> {
    let mut deleted = Vec::new();
    for &b in replaced.iter().filter(|b| **b >= base && **b < end) {
        remove_if_present(&segment_path(dir, b, gen, "index"))?;
        if b > base {
            remove_if_present(&producer_snapshot::path(dir, b, gen))?;
        }
        match fs::rename(segment_path(dir, b, gen, "log"), deleted_path(dir, b, gen)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => deleted.push(deleted_path(dir, b, gen)),
        }
    }
    let target = segment_path(dir, base, gen, "log");
    match fs::rename(swap_path(dir, base, gen, end, writer), &target) {
        // Finished already, by a reopen's recovery racing this one.
        Err(e) if e.kind() == io::ErrorKind::NotFound && target.exists() => {}
        renamed => renamed?,
    }
    sync_dir(dir)?;
    Ok(deleted)
}

/// Unlinks replaced segment files ([`finish_swap`]); one that cannot be
/// is only space, deleted when the log next opens.
pub fn unlink_replaced(paths: &[PathBuf]) {
    for path in paths {
        if let Err(e) = remove_if_present(path) {
            tracing::warn!(path = %path.display(), error = %e,
                           "cannot delete a replaced segment file; the next open will");
        }
    }
}

/// Before a log opens: drops uncommitted cleanings and finishes
/// committed swaps. Returns how many swaps it finished.
pub(super) fn recover(dir: &Path) -> io::Result<usize> {
    let mut segments: Vec<(i64, u32)> = Vec::new();
    let mut swaps = Vec::new();
    let mut cleaned = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(segment) = parse_segment_name(name, "log") {
            segments.push(segment);
        } else if let Some(swap) = parse_swap(name) {
            swaps.push(swap);
        } else if name.contains(".log.cleaned") || name.ends_with(".log.deleted") {
            cleaned.push(dir.join(name));
        }
    }
    for path in &cleaned {
        // Another generation's holder may be removing it too.
        remove_if_present(path)?;
    }
    for &(base, gen, end, writer) in &swaps {
        let bases: Vec<i64> = segments
            .iter()
            .filter(|s| s.1 == gen)
            .map(|s| s.0)
            .collect();
        unlink_replaced(&finish_swap(dir, (base, gen), end, writer, &bases)?);
    }
    if !cleaned.is_empty() && swaps.is_empty() {
        sync_dir(dir)?;
    }
    Ok(swaps.len())
}

impl Log {
    /// The sealed segments, oldest first, as the cleaner reads them.
    pub fn sealed_segments(&self) -> Vec<SegmentSource> {
        let sealed = self.segments.len() - 1;
        self.segments[..sealed]
            .iter()
            .map(|s| SegmentSource {
                base_offset: s.base_offset,
                gen: s.gen,
                file: s.file.clone(),
                size: s.size,
            })
            .collect()
    }

    pub fn active_base(&self) -> i64 {
        self.segments
            .last()
            .expect("a log has a segment")
            .base_offset
    }

    /// Every segment's first batch's largest timestamp (-1: none), for
    /// `max.compaction.lag.ms`.
    pub fn first_batch_timestamps(&self) -> Vec<i64> {
        self.segments.iter().map(|s| s.first_batch_ts).collect()
    }

    /// The first offset of the oldest open transaction, else the end.
    pub fn first_unstable_offset(&self) -> i64 {
        self.producers
            .first_undecided_offset()
            .unwrap_or_else(|| self.next_offset())
    }

    /// What each known producer last wrote (the batches cleaning keeps).
    pub fn last_records(&self) -> HashMap<i64, LastRecord> {
        self.producers
            .last_records()
            .into_iter()
            .map(|(id, (last_data_offset, epoch))| {
                (
                    id,
                    LastRecord {
                        last_data_offset,
                        epoch,
                    },
                )
            })
            .collect()
    }

    /// The aborted transactions overlapping `[from, to)`.
    pub fn aborted_between(&self, from: i64, to: i64) -> Vec<AbortedTxn> {
        self.aborted.overlapping(from, to)
    }

    /// Where the sealed segments based at `bases` (consecutive, followed
    /// by the one based at `end`) are in the log, if it still has exactly
    /// them (retention or DeleteRecords may have taken some).
    fn group_at(&self, bases: &[i64], end: i64) -> Option<usize> {
        let i = self
            .segments
            .iter()
            .position(|s| s.base_offset == bases[0])?;
        let group = &self.segments[i..];
        let unchanged = group.len() > bases.len()
            && group.iter().zip(bases).all(|(s, b)| s.base_offset == *b)
            && group[bases.len()].base_offset == end;
        (unchanged && self.writable).then_some(i)
    }

    /// What [`swap_in_cleaned`] needs of the log, if it still has the
    /// segments based at `bases` followed by `end`.
    pub fn swap_target(&self, bases: &[i64], end: i64) -> Option<(PathBuf, LogConfig)> {
        self.group_at(bases, end)
            .map(|_| (self.dir.clone(), self.config))
    }

    /// Puts `segment` (from [`swap_in_cleaned`]) in place of the segments
    /// based at `bases`; false when the log no longer has them (it was
    /// reopened from disk meanwhile, and holds the cleaned segment
    /// already).
    pub fn splice_cleaned(&mut self, bases: &[i64], end: i64, segment: Segment) -> bool {
        match self.group_at(bases, end) {
            Some(i) => {
                self.segments.splice(i..i + bases.len(), [segment]);
                true
            }
            None => false,
        }
    }
}

/// Swaps the cleaned file at `cleaned` in for the segments of `dir` based
/// at `bases` (followed by `end`) on disk: the commit, then the replaced
/// files renamed away. The new segment, for [`Log::splice_cleaned`], and
/// the replaced files to unlink ([`unlink_replaced`]). Run without the
/// log's lock (its fsyncs take milliseconds), by the one cleaner of the
/// partition; an error after the commit leaves the swap for the next open
/// to finish: the caller reopens the log.
#[allow(clippy::too_many_arguments)]
pub fn swap_in_cleaned(
    dir: &Path,
    config: &LogConfig,
    bases: &[i64],
    gen: u32,
    end: i64,
    writer: u32,
    cleaned: &Path,
) -> io::Result<(Segment, Vec<PathBuf>)> {
    let base = bases[0];
    fs::rename(cleaned, swap_path(dir, base, gen, end, writer))?;
    sync_dir(dir)?;
    let replaced = finish_swap(dir, (base, gen), end, writer, bases)?;
    // Its index is written only for this generation's own segments: an
    // earlier one's holder may still write that name.
    let segment = Segment::open_sealed(dir, base, gen, config, gen == writer, i64::MAX)?;
    Ok((segment, replaced))
}
