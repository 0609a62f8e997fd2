//! Log compaction (`cleanup.policy=compact`), Apache's `LogCleaner`: each
//! key's last record kept, offsets unchanged, tombstones and transaction
//! markers dropped once past their delete horizon, aborted transactions'
//! records dropped. The partition's leader cleans, one log at a time, off
//! the append path: the cleaner reads sealed segments through its own
//! handles and only the swap takes the log's lock.
//!
//! - [`plan`]: which log is dirtiest and over which offsets (pure).
//! - [`offset_map`]: the bounded key → last offset map.
//! - [`crate::storage::records`] (shared with produce validation): the
//!   records of a batch, and a batch rebuilt from some.
//! - [`txn`]: aborted transactions and markers while walking a log.
//! - [`clean`]: one cleaning into `.cleaned` files.

pub mod clean;
pub mod offset_map;
pub mod plan;
pub mod txn;

#[cfg(test)]
mod tests;

pub use clean::{CleanStats, LastRecord, SegmentSource};
pub use plan::{Cleanable, CompactionPolicy, LogState};

/// The broker's `log.cleaner.*` settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.enable`.
    pub enable: bool,
    /// `log.cleaner.backoff.ms`: the wait when no log needs cleaning.
    pub backoff_ms: u64,
    /// `log.cleaner.dedupe.buffer.size`: bytes of the offset map.
    pub dedupe_buffer_size: u64,
    /// `log.cleaner.io.buffer.load.factor`: how full the map may get.
    pub load_factor: f64,
    /// `log.cleaner.io.max.bytes.per.second`: reads and writes together,
    /// over all the cleaner threads.
    pub io_max_bytes_per_second: f64,
    /// `log.cleaner.threads`: logs cleaned at once (each its own log).
    pub threads: usize,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            enable: true,
            backoff_ms: 15_000,
            dedupe_buffer_size: 128 * 1024 * 1024,
            load_factor: 0.9,
            io_max_bytes_per_second: f64::MAX,
            threads: 1,
        }
    }
}

impl CleanerConfig {
    /// Keys one cleaning's offset map holds at most: the dedupe buffer is
    /// shared by the threads, as in Apache.
    pub fn map_capacity(&self) -> usize {
        let per_thread = self.dedupe_buffer_size / self.threads.max(1) as u64;
        offset_map::OffsetMap::capacity_for(per_thread, self.load_factor)
    }

    /// One cleaning's share of the I/O limit.
    pub fn io_max_bytes_per_second_per_thread(&self) -> f64 {
        self.io_max_bytes_per_second / self.threads.max(1) as f64
    }
}
