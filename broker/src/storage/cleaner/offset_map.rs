//! The cleaner's key → last offset map (Apache's `SkimpyOffsetMap`): keys
//! are stored as 128-bit hashes under keys drawn at random for each map,
//! so memory is bounded by the entry count whatever the keys' sizes, and
//! no producer can choose two keys that collide.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

/// Bytes an entry costs: a 16-byte hash and an 8-byte offset (Apache's
/// sizing; the table's own overhead is within the load factor).
pub const ENTRY_BYTES: usize = 24;

/// The map's own keys are uniform hashes already: their low bits serve.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u128 keys are hashed")
    }
    fn write_u128(&mut self, n: u128) {
        self.0 = n as u64;
    }
}

pub struct OffsetMap {
    entries: HashMap<u128, i64, BuildHasherDefault<Prehashed>>,
    /// At most this many keys (`log.cleaner.dedupe.buffer.size` over
    /// [`ENTRY_BYTES`], times `log.cleaner.io.buffer.load.factor`).
    capacity: usize,
    hashers: (RandomState, RandomState),
    latest_offset: i64,
}

impl OffsetMap {
    /// A map holding at most `capacity` keys (at least one).
    pub fn new(capacity: usize) -> OffsetMap {
        OffsetMap {
            entries: HashMap::default(),
            capacity: capacity.max(1),
            hashers: (RandomState::new(), RandomState::new()),
            latest_offset: -1,
        }
    }

    /// The capacity a buffer of `bytes` at `load_factor` gives.
    pub fn capacity_for(bytes: u64, load_factor: f64) -> usize {
        ((bytes / ENTRY_BYTES as u64) as f64 * load_factor) as usize
    }

    fn hash(&self, key: &[u8]) -> u128 {
        let high = self.hashers.0.hash_one(key);
        let low = self.hashers.1.hash_one(key);
        (u128::from(high) << 64) | u128::from(low)
    }

    /// Whether another key would pass the capacity.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.capacity
    }

    /// Records `offset` as `key`'s latest (the caller checks
    /// [`OffsetMap::is_full`] first; a known key always fits).
    pub fn put(&mut self, key: &[u8], offset: i64) {
        let h = self.hash(key);
        self.entries.insert(h, offset);
        self.latest_offset = self.latest_offset.max(offset);
    }

    /// `key`'s latest offset, if mapped.
    pub fn get(&self, key: &[u8]) -> Option<i64> {
        self.entries.get(&self.hash(key)).copied()
    }

    /// The last offset the map covers (-1: none).
    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    pub fn update_latest_offset(&mut self, offset: i64) {
        self.latest_offset = self.latest_offset.max(offset);
    }
}

#[cfg(test)]
mod tests;
