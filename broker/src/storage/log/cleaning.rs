//! The log's side of compaction: what the cleaner reads of it, and the
//! swap that puts a cleaned segment in place of the ones it replaces.
//!
//! The swap is crash safe (Apache's `.cleaned` / `.swap`): the cleaner
//! writes and fsyncs `<base>.log.cleaned`; renaming it to
//! `<base>.<end>.swap` (and syncing the folder) commits it; then the
//! replaced segments' files go (those based in `(base, end)`, and the
//! index of `base`) and the swap file becomes `<base>.log`. Opening a log
//! deletes a `.cleaned` file (an uncommitted cleaning) and finishes any
//! `.swap` (a committed one), so a crash at any point leaves either the
//! old segments or the cleaned one, never a mix.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{segment_path, Log, Segment};
use crate::storage::cleaner::{LastRecord, SegmentSource};
use crate::storage::fs::sync_dir;
use crate::storage::producer_snapshot;
use crate::storage::txn_index::AbortedTxn;

fn swap_path(dir: &Path, base: i64, end: i64) -> PathBuf {
    dir.join(format!("{base:020}.{end:020}.swap"))
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Finishes a committed swap: the files of the segments based in
/// `(base, end)` and the index of `base` go, then the swap file becomes
/// `<base>.log`; the folder is synced.
fn finish_swap(dir: &Path, base: i64, end: i64, replaced: &[i64]) -> io::Result<()> {
    for &b in replaced.iter().filter(|b| **b > base && **b < end) {
        remove_if_present(&segment_path(dir, b, "index"))?;
        remove_if_present(&producer_snapshot::path(dir, b))?;
        remove_if_present(&segment_path(dir, b, "log"))?;
    }
    remove_if_present(&segment_path(dir, base, "index"))?;
    fs::rename(swap_path(dir, base, end), segment_path(dir, base, "log"))?;
    sync_dir(dir)
}

/// Before a log opens: drops uncommitted cleanings and finishes
/// committed swaps. Returns how many swaps it finished.
pub(super) fn recover(dir: &Path) -> io::Result<usize> {
    let mut bases = Vec::new();
    let mut swaps = Vec::new();
    let mut cleaned = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(base) = name
            .strip_suffix(".log")
            .and_then(|b| b.parse::<i64>().ok())
        {
            bases.push(base);
        } else if let Some(range) = name.strip_suffix(".swap") {
            let parsed = range
                .split_once('.')
                .and_then(|(b, e)| Some((b.parse::<i64>().ok()?, e.parse::<i64>().ok()?)));
            if let Some(range) = parsed {
                swaps.push(range);
            }
        } else if name.ends_with(".log.cleaned") {
            cleaned.push(dir.join(name));
        }
    }
    for path in &cleaned {
        fs::remove_file(path)?;
    }
    for &(base, end) in &swaps {
        finish_swap(dir, base, end, &bases)?;
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

    /// Puts the cleaned file at `cleaned` in place of the sealed segments
    /// based at `bases` (consecutive, followed by the one based at `end`).
    /// `Ok(false)`, with the cleaned file deleted, when the log no longer
    /// has exactly those segments (retention or DeleteRecords took some).
    /// An error after the commit leaves the swap for the next open to
    /// finish: the caller reopens the log.
    pub fn replace_with_cleaned(
        &mut self,
        bases: &[i64],
        end: i64,
        cleaned: &Path,
    ) -> io::Result<bool> {
        let at = self.segments.iter().position(|s| s.base_offset == bases[0]);
        let unchanged = at.is_some_and(|i| {
            let group = &self.segments[i..];
            group.len() > bases.len()
                && group.iter().zip(bases).all(|(s, b)| s.base_offset == *b)
                && group[bases.len()].base_offset == end
        });
        let Some(i) = at.filter(|_| unchanged && self.writable) else {
            remove_if_present(cleaned)?;
            return Ok(false);
        };
        let base = bases[0];
        fs::rename(cleaned, swap_path(&self.dir, base, end))?;
        sync_dir(&self.dir)?;
        finish_swap(&self.dir, base, end, bases)?;
        let segment = Segment::open_sealed(&self.dir, base, &self.config, true)?;
        self.segments.splice(i..i + bases.len(), [segment]);
        Ok(true)
    }
}
