//! A partition's leader epochs (KIP-101, KIP-320): which epoch wrote from
//! which offset, so OffsetForLeaderEpoch can tell a consumer where an
//! epoch it read from ended. Apache's `LeaderEpochFileCache`, with its
//! checkpoint file's format (`leader-epoch-checkpoint`: a version line
//! `0`, a count line, then `epoch start_offset` per line).
//!
//! A partition's leader epoch is the assignment's partitions version
//! ([`kaas_shared::Routing::leader_epoch`]): it rises with every change of
//! leadership, and every broker knows it without asking the leader. The
//! leader records an epoch here at the first append in it.

use std::io;
use std::path::Path;

/// The checkpoint's name in the partition's folder, as Apache's.
pub const CHECKPOINT: &str = "leader-epoch-checkpoint";

/// Generation `gen`'s checkpoint ([`CHECKPOINT`] before generations): each
/// generation writes its own, so an earlier holder's late write is never
/// read ([`super::generations`]).
pub fn checkpoint_path(dir: &Path, gen: u32) -> std::path::PathBuf {
    match gen {
        0 => dir.join(CHECKPOINT),
        g => dir.join(format!("{CHECKPOINT}.{g}")),
    }
}

/// No epoch (Apache's `UNDEFINED_EPOCH`).
pub const UNDEFINED_EPOCH: i32 = -1;
/// No offset (Apache's `UNDEFINED_EPOCH_OFFSET`).
pub const UNDEFINED_OFFSET: i64 = -1;

/// One epoch and the first offset it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

/// The epochs of one partition, ascending in both epoch and start offset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderEpochCache {
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.latest_entry().map(|e| e.epoch)
    }

    /// Whether [`LeaderEpochCache::assign`] of this would change anything.
    pub fn needs(&self, epoch: i32, start_offset: i64) -> bool {
        self.latest_entry()
            .is_none_or(|e| e.epoch != epoch || start_offset < e.start_offset)
    }

    /// Records that `epoch` starts at `start_offset`; an epoch once
    /// assigned keeps its offset. Entries an assignment contradicts (a
    /// later or equal epoch, or a start at or after it) are dropped, so
    /// both stay ascending, as Apache's `assign`. Whether it changed.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if epoch < 0 || start_offset < 0 || !self.needs(epoch, start_offset) {
            return false;
        }
        while self
            .entries
            .last()
            .is_some_and(|e| e.epoch >= epoch || e.start_offset >= start_offset)
        {
            self.entries.pop();
        }
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        true
    }

    /// The epoch at or below `requested` the cache knows and where it
    /// ended: the start of the next epoch, or `log_end` for the latest.
    /// Below the first epoch, `requested` and the first epoch's start;
    /// unknown (above every epoch, or no epochs) `(-1, -1)`. Apache's
    /// `endOffsetFor`.
    pub fn end_offset_for(&self, requested: i32, log_end: i64) -> (i32, i64) {
        const UNDEFINED: (i32, i64) = (UNDEFINED_EPOCH, UNDEFINED_OFFSET);
        if requested == UNDEFINED_EPOCH {
            return UNDEFINED;
        }
        if self.latest_epoch() == Some(requested) {
            return (requested, log_end);
        }
        let higher = self.entries.iter().position(|e| e.epoch > requested);
        match higher {
            None => UNDEFINED,
            Some(0) => (requested, self.entries[0].start_offset),
            Some(i) => (self.entries[i - 1].epoch, self.entries[i].start_offset),
        }
    }

    /// The epoch that wrote `offset`: the latest starting at or before it.
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.start_offset <= offset)
            .map(|e| e.epoch)
    }

    /// Drops the epochs starting at or after `end` (the log was cut
    /// there). Apache's `truncateFromEnd`.
    pub fn truncate_from_end(&mut self, end: i64) {
        if end < 0 {
            return;
        }
        while self.entries.last().is_some_and(|e| e.start_offset >= end) {
            self.entries.pop();
        }
    }

    /// The log now starts at `start`: epochs wholly below it go, and the
    /// one it falls in starts there. Apache's `truncateFromStart`.
    pub fn truncate_from_start(&mut self, start: i64) {
        if start < 0 {
            return;
        }
        let below = self
            .entries
            .iter()
            .take_while(|e| e.start_offset <= start)
            .count();
        if below == 0 {
            return;
        }
        let epoch = self.entries[below - 1].epoch;
        self.entries.drain(..below);
        self.entries.insert(
            0,
            EpochEntry {
                epoch,
                start_offset: start,
            },
        );
    }

    /// The checkpoint file's text.
    pub fn encode(&self) -> String {
        let mut out = format!("0\n{}\n", self.entries.len());
        for e in &self.entries {
            out.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
        }
        out
    }

    /// A checkpoint file's entries; anything not in its format is an
    /// `InvalidData` error naming what.
    pub fn decode(text: &str) -> io::Result<LeaderEpochCache> {
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let mut lines = text.lines();
        match lines.next().map(str::trim) {
            Some("0") => {}
            other => return Err(bad(format!("unknown checkpoint version {other:?}"))),
        }
        let count: usize = lines
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| bad("no entry count".into()))?;
        let mut cache = LeaderEpochCache::default();
        for _ in 0..count {
            let line = lines
                .next()
                .ok_or_else(|| bad("fewer entries than counted".into()))?;
            let mut fields = line.split_whitespace();
            let (Some(epoch), Some(start), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(bad(format!("malformed entry {line:?}")));
            };
            let (Ok(epoch), Ok(start)) = (epoch.parse(), start.parse()) else {
                return Err(bad(format!("malformed entry {line:?}")));
            };
            cache.assign(epoch, start);
        }
        Ok(cache)
    }

    /// The checkpoint in `dir`: empty when there is none.
    pub fn read(dir: &Path, gen: u32) -> io::Result<Option<LeaderEpochCache>> {
        match std::fs::read_to_string(checkpoint_path(dir, gen)) {
            Ok(text) => LeaderEpochCache::decode(&text).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes generation `gen`'s checkpoint into `dir`, whole and fsynced.
    pub fn write(&self, dir: &Path, gen: u32) -> io::Result<()> {
        super::fs::write_atomic(&checkpoint_path(dir, gen), self.encode().as_bytes())
    }

    /// The cache of the entries given (ascending, as a cache holds them).
    pub fn from_entries(entries: impl IntoIterator<Item = (i32, i64)>) -> LeaderEpochCache {
        let mut cache = LeaderEpochCache::default();
        for (epoch, start_offset) in entries {
            cache.assign(epoch, start_offset);
        }
        cache
    }
}

#[cfg(test)]
mod tests;
