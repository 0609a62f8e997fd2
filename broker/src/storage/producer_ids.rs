//! Producer ids for idempotent and transactional producers, unique across
//! the cluster without a lock any broker could keep from the others.
//!
//! Each broker process claims ranges of ids: range `n` is ids
//! `BASE + n * RANGE ..` `BASE + (n + 1) * RANGE`, and it is claimed by
//! creating the file `__cluster/producer_id_ranges/<n>` (written whole and
//! linked into place: the link fails if the file exists, on every volume
//! kaas supports). Claims are never removed, so no two processes ever hold
//! one range, whatever they listed: a process that paused for a minute and
//! probes from an old listing finds the ranges claimed since taken and goes
//! on past them. A process hands its range out from memory; it claims
//! another only when it is used up, so the volume is touched once per
//! process start and once per `RANGE` ids.
//!
//! Earlier releases took blocks of 1000 from a counter under a lock file
//! (`__cluster/producer_ids`): a broker whose node stalled or vanished
//! inside that lock kept every other broker from a new block until the
//! volume released it (a minute or more on a network file system). The
//! ranges start at `BASE`, far above anything that counter handed out.

use std::fs;
use std::io;
use std::path::PathBuf;

use parking_lot::Mutex;
use tracing::info;

use super::fs::create_atomic;

/// The folder of range claims under `__cluster`.
pub const FOLDER: &str = "producer_id_ranges";

/// Ids in one range.
const RANGE: i64 = 1 << 20;

/// The first id of range 0: above every id the old shared counter could
/// have handed out (2^40 producers, a thousand a second for 35 years).
const BASE: i64 = 1 << 40;

pub struct ProducerIdAllocator {
    folder: PathBuf,
    broker: i32,
    /// Next id to hand out and the end of the range this process holds.
    block: Mutex<(i64, i64)>,
}

impl ProducerIdAllocator {
    pub fn new(cluster_dir: PathBuf, broker: i32) -> Self {
        Self {
            folder: cluster_dir.join(FOLDER),
            broker,
            block: Mutex::new((0, 0)),
        }
    }

    /// A fresh producer id from the range at hand, without I/O; `None`
    /// when the range is used up ([`Self::refill`] first).
    pub fn take(&self) -> Option<i64> {
        let mut block = self.block.lock();
        (block.0 < block.1).then(|| {
            block.0 += 1;
            block.0 - 1
        })
    }

    /// Claims a new range (blocking I/O) unless `at_least` ids are at hand.
    pub fn refill(&self, at_least: i64) -> io::Result<()> {
        let mut block = self.block.lock();
        if block.1 - block.0 < at_least {
            *block = self.claim()?;
        }
        Ok(())
    }

    /// Ids at hand without I/O.
    pub fn at_hand(&self) -> i64 {
        let block = self.block.lock();
        block.1 - block.0
    }

    /// A fresh producer id (blocking I/O when a new range is needed).
    pub fn allocate(&self) -> io::Result<i64> {
        let mut block = self.block.lock();
        if block.0 >= block.1 {
            *block = self.claim()?;
        }
        let id = block.0;
        block.0 += 1;
        Ok(id)
    }

    /// Claims the first free range past the highest one listed, and
    /// returns its ids.
    fn claim(&self) -> io::Result<(i64, i64)> {
        fs::create_dir_all(&self.folder)?;
        self.claim_from(highest_claimed(&self.folder)?.map_or(0, |n| n + 1))
    }

    /// Claims the first free range from `n` on (`n` from a listing that
    /// may be old by now).
    fn claim_from(&self, mut n: i64) -> io::Result<(i64, i64)> {
        let note = format!("broker {} process {}\n", self.broker, std::process::id());
        loop {
            if n >= (i64::MAX - BASE) / RANGE {
                return Err(io::Error::other(format!(
                    "every producer id range is claimed ({})",
                    self.folder.display()
                )));
            }
            if create_atomic(&self.folder.join(n.to_string()), note.as_bytes())? {
                info!(range = n, "claimed a range of producer ids");
                let start = BASE + n * RANGE;
                return Ok((start, start + RANGE));
            }
            n += 1;
        }
    }
}

/// The highest range claimed in `folder` (its files named by number; any
/// other name, such as a temporary file of a claim under way, is skipped).
fn highest_claimed(folder: &std::path::Path) -> io::Result<Option<i64>> {
    let mut highest = None;
    for entry in fs::read_dir(folder)? {
        let name = entry?.file_name();
        if let Some(n) = name.to_str().and_then(|s| s.parse::<i64>().ok()) {
            highest = highest.max(Some(n));
        }
    }
    Ok(highest)
}

#[cfg(test)]
mod tests;
