//! Producer ids for idempotent producers, unique across the cluster: each
//! broker takes blocks from a counter on the shared volume, under an
//! exclusive file lock, and makes the new high mark durable before use.

use std::fs::OpenOptions;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Mutex;

/// Ids taken from the shared counter at a time.
const BLOCK: i64 = 1000;

pub struct ProducerIdAllocator {
    path: PathBuf,
    /// Next id to hand out and the end of the block this broker holds.
    block: Mutex<(i64, i64)>,
}

impl ProducerIdAllocator {
    pub fn new(cluster_dir: PathBuf) -> Self {
        Self {
            path: cluster_dir.join("producer_ids"),
            block: Mutex::new((0, 0)),
        }
    }

    /// A fresh producer id (blocking I/O when a new block is needed).
    pub fn allocate(&self) -> io::Result<i64> {
        let mut block = self.block.lock().unwrap_or_else(|p| p.into_inner());
        if block.0 >= block.1 {
            let start = self.take_block()?;
            *block = (start, start + BLOCK);
        }
        let id = block.0;
        block.0 += 1;
        Ok(id)
    }

    fn take_block(&self) -> io::Result<i64> {
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&self.path)?;
        f.lock()?;
        let mut raw = String::new();
        f.read_to_string(&mut raw)?;
        let start: i64 = match raw.trim() {
            "" => 0,
            s => s.parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad producer id counter '{s}'"),
                )
            })?,
        };
        f.set_len(0)?;
        f.seek(SeekFrom::Start(0))?;
        f.write_all((start + BLOCK).to_string().as_bytes())?;
        f.sync_all()?;
        // Dropping the file releases the lock.
        Ok(start)
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
}
