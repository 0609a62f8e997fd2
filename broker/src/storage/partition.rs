//! One partition led by this broker: its log, its high watermark and the
//! group-commit fsync that makes acknowledgements durable.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::watch;
use tracing::{error, info, warn};

use super::blocking;
use super::log::{AppendError, Appended, Log, LogConfig};

pub struct Partition {
    pub topic: String,
    pub index: i32,
    dir: PathBuf,
    config: LogConfig,
    log: Mutex<Log>,
    /// Durable end of the log (the high watermark): every offset below it
    /// has been fsynced. Readers wait on it for long polls.
    high_watermark: watch::Sender<i64>,
    /// One fsync at a time; concurrent appends ride the same fsync.
    sync_lock: tokio::sync::Mutex<()>,
    /// One append at a time, across the awaits of a reopen or a roll (so
    /// the log is not appended to between preparing a roll and making its
    /// segment the active one).
    append_lock: tokio::sync::Mutex<()>,
    /// Exclusive lock on `leader.lock` while this broker has the log open:
    /// a broker gaining leadership cannot open the log until the previous
    /// leader closed it (or died, which releases the lock).
    _leader_lock: std::fs::File,
    /// Set when an fsync failed: the page cache can no longer be trusted,
    /// so the log is reopened from disk before the next append.
    failed: AtomicBool,
}

impl Partition {
    /// Opens the log for this broker. Fails with `WouldBlock` while another
    /// broker (or an earlier handle) still has it open.
    pub fn open(topic: &str, index: i32, dir: PathBuf, config: LogConfig) -> io::Result<Partition> {
        let lock_path = dir.join("leader.lock");
        let lock = std::fs::create_dir_all(&dir).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)
        });
        // On a read-only volume the log can still be served: `flock` works
        // on a descriptor opened for reading.
        let lock = match lock {
            Err(e) if super::is_read_only(&e) => std::fs::File::open(&lock_path).map_err(|_| e)?,
            lock => lock?,
        };
        lock.try_lock().map_err(|e| match e {
            std::fs::TryLockError::WouldBlock => io::Error::new(
                io::ErrorKind::WouldBlock,
                "the previous leader still has the partition open",
            ),
            std::fs::TryLockError::Error(e) => e,
        })?;
        let (log, report, read_only) = match Log::open(&dir, config) {
            Err(e) if super::is_read_only(&e) => {
                let (log, report) = Log::open_read_only(&dir, config)?;
                warn!(
                    topic,
                    partition = index,
                    "the data volume is read-only: serving the \
                      partition for reads; produce fails until it is writable"
                );
                (log, report, true)
            }
            opened => {
                let (log, report) = opened?;
                (log, report, false)
            }
        };
        let end = log.next_offset();
        if report.truncated_bytes > 0 {
            info!(topic, partition = index, end, "partition log recovered");
        }
        Ok(Partition {
            topic: topic.to_string(),
            index,
            dir,
            config,
            log: Mutex::new(log),
            high_watermark: watch::channel(end).0,
            _leader_lock: lock,
            sync_lock: tokio::sync::Mutex::new(()),
            append_lock: tokio::sync::Mutex::new(()),
            // A read-only log is reopened (read-write) before any append.
            failed: AtomicBool::new(read_only),
        })
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock()
    }

    pub fn high_watermark(&self) -> i64 {
        *self.high_watermark.borrow()
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log().log_start_offset()
    }

    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.high_watermark.subscribe()
    }

    /// Appends validated batches and returns once they are fsynced. The
    /// append itself is a write to the page cache under the log's lock;
    /// what can wait on the disk (reopening after a failure, a segment
    /// roll's fsyncs and file creation, the fsync) runs on blocking
    /// threads, without the lock, so fetches of the log go on meanwhile.
    pub async fn append(&self, mut data: Vec<u8>) -> Result<Appended, AppendError> {
        let appending = self.append_lock.lock().await;
        if self.failed.load(Ordering::Acquire) {
            let (dir, config) = (self.dir.clone(), self.config);
            let (reopened, _) = blocking(move || Log::open(&dir, config)).await?;
            let mut log = self.log();
            *log = reopened;
            self.failed.store(false, Ordering::Release);
            let end = log.next_offset();
            self.high_watermark.send_if_modified(|hw| {
                let changed = *hw != end;
                *hw = end;
                changed
            });
        }
        let roll = self.log().roll_due(data.len() as u64)?;
        if let Some(roll) = roll {
            let segment = blocking(move || roll.run()).await?;
            self.log().push_segment(segment);
        }
        let (appended, end) = {
            let mut log = self.log();
            let appended = log.append(&mut data, 0)?;
            (appended, log.next_offset())
        };
        drop(appending);
        // A duplicate's original may still be waiting for its fsync.
        self.sync_until(end).await?;
        Ok(appended)
    }

    /// Makes every offset below `end` durable, sharing one fsync among all
    /// callers that wait at the same time (group commit).
    async fn sync_until(&self, end: i64) -> io::Result<()> {
        if self.high_watermark() >= end {
            return Ok(());
        }
        let _guard = self.sync_lock.lock().await;
        if self.high_watermark() >= end {
            return Ok(());
        }
        let (target, file) = {
            let log = self.log();
            (log.next_offset(), log.active_file())
        };
        let result = blocking(move || file.sync_data()).await;
        match result {
            Ok(()) => {
                self.high_watermark.send_if_modified(|hw| {
                    let changed = *hw < target;
                    *hw = (*hw).max(target);
                    changed
                });
                Ok(())
            }
            Err(e) => {
                error!(topic = %self.topic, partition = self.index, error = %e,
                       "fsync of partition log failed; the log will be reopened");
                self.failed.store(true, Ordering::Release);
                Err(e)
            }
        }
    }

    /// Whole batches from `offset` below the high watermark.
    pub fn read(&self, offset: i64, max_bytes: usize) -> io::Result<Bytes> {
        let hw = self.high_watermark();
        self.log().read(offset, hw, max_bytes)
    }

    pub fn batch_for_timestamp(&self, ts: i64) -> io::Result<Option<Bytes>> {
        let hw = self.high_watermark();
        self.log().batch_for_timestamp(ts, hw)
    }

    pub fn batch_with_max_timestamp(&self) -> io::Result<Option<Bytes>> {
        let hw = self.high_watermark();
        self.log().batch_with_max_timestamp(hw)
    }
}

pub type PartitionRef = Arc<Partition>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::batch::{self, tests::encode_batch};

    #[tokio::test]
    async fn appends_across_segment_rolls_are_durable_in_order_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 1024,
            index_interval_bytes: 100,
        };
        let part = Arc::new(Partition::open("t", 0, dir.path().join("0"), config).unwrap());
        // Concurrent producers: rolls happen between their appends.
        let appends = (0..40).map(|i| {
            let part = part.clone();
            async move { part.append(encode_batch(3, i * 10)).await.unwrap() }
        });
        let mut bases: Vec<i64> = futures::future::join_all(appends)
            .await
            .iter()
            .map(|a| a.base_offset)
            .collect();
        bases.sort();
        assert_eq!(bases, (0..40).map(|i| i * 3).collect::<Vec<_>>());
        assert_eq!(part.high_watermark(), 120);
        let segments = std::fs::read_dir(dir.path().join("0"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().unwrap() == "log")
            .count();
        assert!(segments > 1, "small segments roll");
        drop(part);
        let reopened = Partition::open("t", 0, dir.path().join("0"), config).unwrap();
        assert_eq!(reopened.high_watermark(), 120);
        for off in 0..120 {
            let data = reopened.read(off, 1).unwrap();
            let h = batch::validate(&data).unwrap();
            assert!(h.base_offset <= off && off <= h.last_offset());
        }
    }
}
