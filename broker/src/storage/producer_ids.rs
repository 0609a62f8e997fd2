//! Producer ids for idempotent producers, unique across the cluster: each
//! broker takes blocks from a counter on the shared volume, under an
//! exclusive lock on a lock file beside it, and makes the new high mark
//! durable before use. The counter is replaced atomically (tmp + fsync +
//! rename), so a crash leaves the old mark or the new one, never an empty
//! file that would hand out ids again from 0.

use std::io;
use std::path::PathBuf;

use parking_lot::Mutex;

use super::fs::SharedCounter;

/// Ids taken from the shared counter at a time.
const BLOCK: i64 = 1000;

pub struct ProducerIdAllocator {
    counter: SharedCounter,
    /// Next id to hand out and the end of the block this broker holds.
    block: Mutex<(i64, i64)>,
}

impl ProducerIdAllocator {
    pub fn new(cluster_dir: PathBuf) -> Self {
        Self {
            counter: SharedCounter::new(cluster_dir.join("producer_ids")),
            block: Mutex::new((0, 0)),
        }
    }

    /// A fresh producer id from the block at hand, without I/O; `None` when
    /// the block is used up ([`Self::refill`] first).
    pub fn take(&self) -> Option<i64> {
        let mut block = self.block.lock();
        (block.0 < block.1).then(|| {
            block.0 += 1;
            block.0 - 1
        })
    }

    /// Takes a new block (blocking I/O) unless `at_least` ids are at hand.
    pub fn refill(&self, at_least: i64) -> io::Result<()> {
        let mut block = self.block.lock();
        if block.1 - block.0 < at_least {
            let start = self.counter.advance(BLOCK)?;
            *block = (start, start + BLOCK);
        }
        Ok(())
    }

    /// Ids at hand without I/O.
    pub fn at_hand(&self) -> i64 {
        let block = self.block.lock();
        block.1 - block.0
    }

    /// A fresh producer id (blocking I/O when a new block is needed).
    pub fn allocate(&self) -> io::Result<i64> {
        let mut block = self.block.lock();
        if block.0 >= block.1 {
            let start = self.counter.advance(BLOCK)?;
            *block = (start, start + BLOCK);
        }
        let id = block.0;
        block.0 += 1;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_brokers_never_hand_out_the_same_id() {
        let dir = tempfile::tempdir().unwrap();
        let a = ProducerIdAllocator::new(dir.path().to_path_buf());
        let b = ProducerIdAllocator::new(dir.path().to_path_buf());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2500 {
            assert!(seen.insert(a.allocate().unwrap()));
            assert!(seen.insert(b.allocate().unwrap()));
        }
        // A restarted broker continues past every block handed out.
        let c = ProducerIdAllocator::new(dir.path().to_path_buf());
        assert!(seen.insert(c.allocate().unwrap()));
    }

    #[test]
    fn the_counter_is_replaced_whole_never_rewritten_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let a = ProducerIdAllocator::new(dir.path().to_path_buf());
        a.allocate().unwrap();
        let counter = dir.path().join("producer_ids");
        let first = std::fs::metadata(&counter).unwrap();
        // A second block: the counter is a new file (renamed into place),
        // so a crash mid-write cannot leave it empty or half written.
        let b = ProducerIdAllocator::new(dir.path().to_path_buf());
        assert_eq!(b.allocate().unwrap(), BLOCK);
        let second = std::fs::metadata(&counter).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_ne!(first.ino(), second.ino());
        assert_eq!(
            std::fs::read_to_string(&counter).unwrap(),
            (2 * BLOCK).to_string()
        );
    }
}
