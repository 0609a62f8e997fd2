//! One partition led by this broker: its log, its high watermark and the
//! group-commit fsync that makes acknowledgements durable.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::watch;
use tracing::{error, info, warn};

use super::batch::{self, ControlMarker};
use super::blocking;
use super::fs::sync_dir;
use super::fs::write_atomic;
use super::generations::{self, Generation, Takeover, Tenure};
use super::incarnation::{self, Fence, Incarnation};
use super::leader_epochs::LeaderEpochCache;
use super::log::{delete_segment_files, wall_clock_ms, AppendError, Appended, Log, LogConfig};
use super::retention::{self, RetentionPolicy};
use super::txn_index::AbortedTxn;
use super::validator::RecordPolicy;

mod cleaning;
pub use cleaning::CLEANER_CHECKPOINT;

/// Segments a partition let go, whose files are still to delete.
#[derive(Debug)]
pub struct Expired {
    topic: String,
    partition: i32,
    dir: PathBuf,
    /// The segments' base offsets and generations.
    pub bases: Vec<(i64, u32)>,
    pub bytes: u64,
    log_start_offset: i64,
    /// Held until the files are deleted: no cleaning swaps segments in
    /// meanwhile.
    _segments: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Expired {
    /// The partition's folder, for a log line.
    pub fn dir_display(&self) -> std::path::Display<'_> {
        self.dir.display()
    }

    /// Deletes the files ([`delete_segment_files`]) and logs what went.
    pub fn delete(&self) -> io::Result<()> {
        delete_segment_files(&self.dir, &self.bases)?;
        info!(topic = %self.topic, partition = self.partition, segments = self.bases.len(),
              bytes = self.bytes, log_start_offset = self.log_start_offset,
              "deleted old segments");
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DeleteRecordsError {
    #[error("offset {offset} is negative or past the high watermark {high_watermark}")]
    OutOfRange { offset: i64, high_watermark: i64 },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Batches in a partition's log that are not durable yet: what an append
/// waits on before its acknowledgement ([`Partition::append_unsynced`]).
#[must_use = "an append is acknowledged only once it is durable"]
pub struct Durable {
    /// The log's end after the append.
    end: i64,
}

pub struct Partition {
    pub topic: String,
    pub index: i32,
    dir: PathBuf,
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
    /// Where the last cleaning stopped (-1: never cleaned).
    cleaner_checkpoint: AtomicI64,
    /// Set when this broker lets the partition go: a cleaning stops.
    closing: AtomicBool,
    /// Set when a cleaning failed on the log's data: the cleaner passes
    /// over it until it is reopened (Apache's uncleanable partitions).
    uncleanable: AtomicBool,
    /// Held by the cleaner thread cleaning it ([`Partition::claim_cleaning`]).
    being_cleaned: AtomicBool,
    /// Serializes what changes the sealed segments on disk: a retention
    /// pass (until its files are deleted) and a cleaning's swap. Taken
    /// before the append lock, never while holding it.
    segments_lock: Arc<tokio::sync::Mutex<()>>,
    /// Which epoch wrote from which offset, as on the volume; changed
    /// under the append lock.
    leader_epochs: Mutex<LeaderEpochCache>,
    /// This process on the volume: every acknowledgement waits for its
    /// fence check ([`Incarnation::check_fence`]). `None`: never fenced.
    incarnation: Option<Arc<Incarnation>>,
    /// Set once this process learned it no longer leads the partition
    /// (it was fenced): nothing more is appended or acknowledged.
    deposed: AtomicBool,
    /// The generation this process began; `None` when it began none (a
    /// read-only volume): then it only reads, and an append makes the next
    /// request open the partition anew.
    generation: Option<u32>,
}

impl Partition {
    /// Opens the log as a process with no incarnation (tools, tests):
    /// [`Partition::open_as`] with [`Tenure::standalone`].
    pub fn open(topic: &str, index: i32, dir: PathBuf, config: LogConfig) -> io::Result<Partition> {
        let tenure = Tenure::standalone(dir.clone());
        Partition::open_as(topic, index, dir, config, &tenure)
    }

    /// Begins leading the partition as `tenure` says: a new generation
    /// ([`super::generations`]) starting where the durable records of the
    /// latest one end. Fails with `WouldBlock` (NOT_LEADER_OR_FOLLOWER)
    /// while the previous leader still has it open and may yet let go, or
    /// when a broker on a newer assignment leads it; a previous leader that
    /// cannot be waited for (dead in the assignment, or an earlier process
    /// of this broker) is fenced first (docs/design/volume.md).
    pub fn open_as(
        topic: &str,
        index: i32,
        dir: PathBuf,
        config: LogConfig,
        tenure: &Tenure,
    ) -> io::Result<Partition> {
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
        let locked = match lock.try_lock() {
            Ok(()) => true,
            Err(std::fs::TryLockError::WouldBlock) => false,
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        };
        // A read-only volume: the log is served for reads as its latest
        // generation left it; produce fails until the volume is writable.
        let read_only = |mut epochs: LeaderEpochCache| {
            let (log, report) = Log::open_read_only(&dir, config)?;
            epochs.truncate_from_end(log.next_offset());
            warn!(
                topic,
                partition = index,
                "the data volume is read-only: serving the partition for reads; \
                 produce fails until it is writable"
            );
            io::Result::Ok((log, report, None, epochs))
        };
        let (log, report, generation, epochs) = loop {
            let gens = generations::read(&dir)?;
            let latest = gens.last();
            let released = latest.is_some_and(|g| generations::is_released(&dir, g.generation));
            match generations::decide(latest, locked, released, tenure) {
                Takeover::Proceed => {}
                Takeover::Fence {
                    broker,
                    incarnation: id,
                } => {
                    let fence = Fence {
                        by_broker: tenure.broker,
                        at_version: tenure.assignment_version,
                    };
                    incarnation::fence(&tenure.cluster_dir, broker, &id, fence)?;
                    warn!(
                        topic,
                        partition = index,
                        from_broker = broker,
                        "taking the partition over without its previous leader's lock \
                           (that process is fenced)"
                    );
                }
                Takeover::Wait(why) => return Err(io::Error::new(io::ErrorKind::WouldBlock, why)),
                Takeover::Stale {
                    broker,
                    assignment_version,
                } => {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!(
                            "broker {broker} leads the partition under assignment version \
                             {assignment_version}, newer than this broker's {}",
                            tenure.assignment_version
                        ),
                    ))
                }
            }
            let mut epochs = generations::epochs_of(&dir, latest)?;
            let (mut log, report) = match Log::open_for_takeover(&dir, config, &gens) {
                Err(e) if super::is_read_only(&e) => break read_only(epochs)?,
                opened => opened?,
            };
            let end = log.next_offset();
            // Epochs recorded before a crash lost their records start past the end.
            epochs.truncate_from_end(end);
            let next = Generation {
                generation: latest.map_or(1, |g| g.generation + 1),
                broker: tenure.broker,
                incarnation: tenure.incarnation_id().to_string(),
                assignment_version: tenure.assignment_version,
                leader_epoch: tenure.leader_epoch,
                start_offset: end,
                log_start_offset: log.log_start_offset(),
                holds_lock: locked,
                epochs: epochs
                    .entries()
                    .iter()
                    .map(|e| (e.epoch, e.start_offset))
                    .collect(),
            };
            match generations::create(&dir, &next) {
                Ok(true) => {}
                // Another broker opened that generation first: look again.
                Ok(false) => continue,
                Err(e) if super::is_read_only(&e) => break read_only(epochs)?,
                Err(e) => return Err(e),
            }
            log.begin_generation(next.generation)?;
            break (log, report, Some(next.generation), epochs);
        };
        let end = log.next_offset();
        if report.truncated_bytes > 0 {
            info!(topic, partition = index, end, "partition log recovered");
        }
        let checkpoint = cleaning::read_checkpoint(&dir).unwrap_or(-1);
        Ok(Partition {
            topic: topic.to_string(),
            index,
            dir,
            log: Mutex::new(log),
            high_watermark: watch::channel(end).0,
            _leader_lock: lock,
            sync_lock: tokio::sync::Mutex::new(()),
            append_lock: tokio::sync::Mutex::new(()),
            failed: AtomicBool::new(false),
            cleaner_checkpoint: AtomicI64::new(checkpoint),
            closing: AtomicBool::new(false),
            uncleanable: AtomicBool::new(false),
            being_cleaned: AtomicBool::new(false),
            segments_lock: Arc::default(),
            leader_epochs: Mutex::new(epochs),
            incarnation: tenure.incarnation.clone(),
            deposed: AtomicBool::new(false),
            generation,
        })
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock()
    }

    /// What the topic's configs ask of a producer's records.
    pub fn record_policy(&self) -> RecordPolicy {
        self.log().config().records
    }

    /// The topic's configs changed: the next roll follows them.
    pub fn set_config(&self, config: LogConfig) {
        self.log().set_config(config);
    }

    /// Deletes the oldest segments `policy` lets go at `now_ms`
    /// ([`super::retention`]): [`Partition::expire_segments`], then their
    /// files, durably (the folder fsynced). The segments deleted and their
    /// bytes.
    pub async fn enforce_retention(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> io::Result<(usize, u64)> {
        let expired = self.expire_segments(policy, now_ms).await?;
        let counts = (expired.bases.len(), expired.bytes);
        if counts.0 > 0 {
            blocking(move || {
                expired.delete()?;
                sync_dir(&expired.dir)
            })
            .await?;
        }
        Ok(counts)
    }

    /// Forgets the oldest segments `policy` lets go at `now_ms`
    /// ([`super::retention`]), rolling first when the active segment goes
    /// too; readers holding one keep reading it. Their files are the
    /// caller's to delete ([`Expired::delete`], which a retention pass runs
    /// for all its partitions in one blocking job). Only the leader has
    /// the log open, so only the leader deletes.
    pub async fn expire_segments(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> io::Result<Expired> {
        let mut expired = Expired {
            topic: self.topic.clone(),
            partition: self.index,
            dir: self.dir.clone(),
            bases: Vec::new(),
            bytes: 0,
            log_start_offset: 0,
            _segments: Some(self.segments_lock.clone().lock_owned().await),
        };
        let _appending = self.append_lock.lock().await;
        if self.failed.load(Ordering::Acquire) {
            // Reopened before the next append; retention waits for it.
            return Ok(expired);
        }
        let (n, all) = {
            let log = self.log();
            let segments = log.segment_infos();
            let n = retention::deletable_segments(
                &segments,
                log.next_offset(),
                self.high_watermark(),
                log.log_start_offset(),
                policy,
                now_ms,
            );
            (n, segments.len())
        };
        if n == 0 {
            return Ok(expired);
        }
        if n == all {
            // A log always has a segment: an empty one at the end first.
            let roll = self.log().roll()?;
            if let Some(roll) = roll {
                let segment = blocking(move || roll.run()).await?;
                self.log().push_segment(segment);
            }
        }
        let mut log = self.log();
        let sizes: Vec<u64> = log.segment_infos().iter().map(|s| s.size).collect();
        expired.bases = log.remove_oldest(n);
        expired.bytes = sizes[..expired.bases.len()].iter().sum();
        expired.log_start_offset = log.log_start_offset();
        Ok(expired)
    }

    /// DeleteRecords: moves the log start offset up to `offset` (-1: the
    /// high watermark) durably before answering, then deletes the
    /// segments wholly below it. The new log start offset.
    pub async fn delete_records(&self, offset: i64) -> Result<i64, DeleteRecordsError> {
        let appending = self.append_lock.lock().await;
        let high_watermark = self.high_watermark();
        let offset = if offset == -1 { high_watermark } else { offset };
        if !(0..=high_watermark).contains(&offset) {
            return Err(DeleteRecordsError::OutOfRange {
                offset,
                high_watermark,
            });
        }
        if offset > self.log_start_offset() {
            let path = self.log().log_start_path();
            blocking(move || write_atomic(&path, offset.to_string().as_bytes())).await?;
            self.log().delete_below(offset);
        }
        drop(appending);
        // Retention's first pass, whatever the topic's policy.
        let below_start_only = RetentionPolicy {
            ms: -1,
            bytes: -1,
            delete: false,
        };
        // The start moved durably: a segment left behind is only space,
        // deleted by the next pass.
        if let Err(e) = self.enforce_retention(&below_start_only, 0).await {
            warn!(topic = %self.topic, partition = self.index, error = %e,
                  "cannot delete the segments below the new log start offset yet");
        }
        Ok(self.log_start_offset())
    }

    /// See [`Log::remove_expired_producers`].
    pub fn remove_expired_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        self.log().remove_expired_producers(now_ms, expiration_ms)
    }

    pub fn high_watermark(&self) -> i64 {
        *self.high_watermark.borrow()
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log().log_start_offset()
    }

    /// Bytes of the log's segments.
    pub fn size(&self) -> u64 {
        self.log().segment_infos().iter().map(|s| s.size).sum()
    }

    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.high_watermark.subscribe()
    }

    /// Appends validated batches and returns once they are fsynced. The
    /// append itself is a write to the page cache under the log's lock;
    /// what can wait on the disk (reopening after a failure, a segment
    /// roll's fsyncs and file creation, the fsync) runs on blocking
    /// threads, without the lock, so fetches of the log go on meanwhile.
    /// `leader_epoch` is the partition's ([`kaas_shared::Routing::leader_epoch`]).
    pub async fn append(&self, data: Vec<u8>, leader_epoch: i32) -> Result<Appended, AppendError> {
        let (appended, durable) = self.append_unsynced(data, leader_epoch).await?;
        self.made_durable(durable).await?;
        Ok(appended)
    }

    /// [`Self::append`] in its two steps: returns once the batches are in
    /// the log (offsets given, producer state updated: the next append
    /// sees them), with what to wait on before acknowledging them. Readers
    /// see them only once they are durable.
    pub async fn append_unsynced(
        &self,
        mut data: Vec<u8>,
        leader_epoch: i32,
    ) -> Result<(Appended, Durable), AppendError> {
        let appending = self.append_lock.lock().await;
        let epoch = self.prepare_append(&data, leader_epoch).await?;
        let (appended, end) = {
            let mut log = self.log();
            let appended = log.append(&mut data, epoch)?;
            (appended, log.next_offset())
        };
        drop(appending);
        // A duplicate's original may still be waiting for its fsync: the
        // wait is up to the log's end, not the batch's.
        Ok((appended, Durable { end }))
    }

    /// Returns once an append [`Self::append_unsynced`] made is durable.
    pub async fn made_durable(&self, append: Durable) -> io::Result<()> {
        self.sync_until(append.end).await
    }

    /// Appends a transaction marker for the producer (WriteTxnMarkers) and
    /// returns its offset once it is fsynced.
    pub async fn append_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        marker: ControlMarker,
        timestamp: i64,
        leader_epoch: i32,
    ) -> Result<i64, AppendError> {
        let mut data = batch::encode_marker(producer_id, producer_epoch, marker, timestamp);
        let appending = self.append_lock.lock().await;
        let epoch = self.prepare_append(&data, leader_epoch).await?;
        let (offset, end) = {
            let mut log = self.log();
            let offset = log.append_marker(&mut data, epoch)?;
            (offset, log.next_offset())
        };
        drop(appending);
        self.sync_until(end).await?;
        Ok(offset)
    }

    /// What must reach the disk before an append of `data`, run on
    /// blocking threads without the log's lock: a reopen after a failure, a
    /// segment roll, the log's transactions flag, a new leader epoch. The
    /// caller holds the append lock. The epoch the append is stamped with.
    async fn prepare_append(&self, data: &[u8], leader_epoch: i32) -> Result<i32, AppendError> {
        if self.deposed.load(Ordering::Acquire) {
            return Err(deposed().into());
        }
        if self.generation.is_none() {
            // Opened on a read-only volume: opened anew (beginning a
            // generation) by the next request, if the volume is writable.
            self.deposed.store(true, Ordering::Release);
            return Err(io::Error::from_raw_os_error(libc::EROFS).into());
        }
        if self.failed.load(Ordering::Acquire) {
            let (dir, config) = (self.dir.clone(), self.log().config());
            let gen = self.log().generation();
            let reopened = blocking(move || Log::reopen(&dir, config, gen)).await;
            let reopened = match reopened {
                Ok((log, _)) => log,
                Err(e) => {
                    if e.kind() == io::ErrorKind::WouldBlock {
                        // Another generation began meanwhile, or this one
                        // never did (a read-only volume): the partition is
                        // opened anew by the next request.
                        self.deposed.store(true, Ordering::Release);
                    }
                    return Err(e.into());
                }
            };
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
        let incoming_ts = batch::split_verified(data)
            .ok()
            .and_then(|parts| parts.iter().map(|(_, h)| h.max_timestamp).max())
            .unwrap_or(-1);
        let roll = self
            .log()
            .roll_due(data.len() as u64, incoming_ts, wall_clock_ms())?;
        if let Some(roll) = roll {
            let segment = blocking(move || roll.run()).await?;
            self.log().push_segment(segment);
        }
        let flag = {
            let log = self.log();
            log.needs_transactions_flag(data)
                .then(|| log.transactions_flag_path())
        };
        if let Some(path) = flag {
            blocking(move || super::fs::write_atomic(&path, b"")).await?;
            self.log().transactions_flagged();
        }
        Ok(self.enter_epoch(leader_epoch).await?)
    }

    /// The epoch appends are stamped with from now: `epoch`, recorded
    /// first (durably, as Apache's `assign`) when it is new here, so an
    /// acknowledged record's epoch is always in the checkpoint. Never below
    /// the latest recorded epoch (an assignment whose version went back).
    /// The caller holds the append lock.
    async fn enter_epoch(&self, epoch: i32) -> io::Result<i32> {
        let next = {
            let end = self.log().next_offset();
            let cache = self.leader_epochs.lock();
            let epoch = epoch.max(cache.latest_epoch().unwrap_or(0));
            if !cache.needs(epoch, end) {
                return Ok(epoch);
            }
            let mut next = cache.clone();
            next.assign(epoch, end);
            next
        };
        let (dir, written, gen) = (self.dir.clone(), next.clone(), self.log().generation());
        blocking(move || written.write(&dir, gen)).await?;
        let epoch = next.latest_epoch().unwrap_or(0);
        *self.leader_epochs.lock() = next;
        Ok(epoch)
    }

    /// OffsetForLeaderEpoch: the epoch at or below `epoch` this log knows
    /// and its end offset ([`LeaderEpochCache::end_offset_for`]) over the
    /// log as it is now: from its start offset, up to its high watermark.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        let (start, end) = (self.log_start_offset(), self.high_watermark());
        let mut epochs = self.leader_epochs.lock().clone();
        epochs.truncate_from_start(start);
        epochs.end_offset_for(epoch, end)
    }

    /// The epoch that wrote `offset`, -1 if none is known (ListOffsets).
    pub fn epoch_of_offset(&self, offset: i64) -> i32 {
        self.leader_epochs
            .lock()
            .epoch_for_offset(offset)
            .unwrap_or(super::leader_epochs::UNDEFINED_EPOCH)
    }

    /// The latest epoch that wrote, -1 if none (ListOffsets latest).
    pub fn latest_epoch(&self) -> i32 {
        self.leader_epochs
            .lock()
            .latest_epoch()
            .unwrap_or(super::leader_epochs::UNDEFINED_EPOCH)
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
        let incarnation = self.incarnation.clone();
        // The fence is read after the write is durable, on the same thread
        // ([`Incarnation::check_fence`]).
        let result = blocking(move || {
            file.sync_data()?;
            Ok(incarnation.as_ref().map(|i| i.check_fence()))
        })
        .await;
        match result {
            Ok(checked) => {
                self.confirm_tenure(checked)?;
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

    /// What this process's fence read after a durable write
    /// ([`Incarnation::check_fence`]) says of acknowledging it: fenced, the
    /// partition is deposed and the write never acknowledged.
    fn confirm_tenure(&self, checked: Option<io::Result<()>>) -> io::Result<()> {
        let (Some(incarnation), Some(checked)) = (&self.incarnation, checked) else {
            return Ok(());
        };
        match checked {
            Ok(()) => Ok(()),
            Err(_) if incarnation.fenced().is_some() => {
                self.deposed.store(true, Ordering::Release);
                Err(deposed())
            }
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("cannot check that this broker still leads the partition: {e}"),
            )),
        }
    }

    /// This process no longer leads the partition (its generation was
    /// taken over): it is opened anew, or not at all, by the next request.
    pub fn is_deposed(&self) -> bool {
        self.deposed.load(Ordering::Acquire)
    }

    /// Whole batches from `offset` below the high watermark.
    pub fn read(&self, offset: i64, max_bytes: usize) -> io::Result<Bytes> {
        let hw = self.high_watermark();
        self.log().read(offset, hw, max_bytes)
    }

    /// The producers this partition's log knows.
    pub fn active_producers(&self) -> Vec<super::producer_state::ActiveProducer> {
        self.log().active_producers()
    }

    /// The producer has a transaction open here at this epoch.
    pub fn has_ongoing_transaction(&self, producer_id: i64, epoch: i16) -> bool {
        self.log().has_ongoing_transaction(producer_id, epoch)
    }

    /// The end of what `read_committed` readers see.
    pub fn last_stable_offset(&self) -> i64 {
        let hw = self.high_watermark();
        self.log().last_stable_offset(hw)
    }

    /// Whole batches from `offset` below the last stable offset, that
    /// offset, and the aborted transactions the batches may hold records
    /// of (a `read_committed` fetch).
    pub fn read_committed(
        &self,
        offset: i64,
        max_bytes: usize,
    ) -> io::Result<(Bytes, i64, Vec<AbortedTxn>)> {
        let hw = self.high_watermark();
        let log = self.log();
        let lso = log.last_stable_offset(hw);
        let records = log.read(offset, lso, max_bytes)?;
        let aborted = match records.is_empty() {
            true => Vec::new(),
            false => log.aborted_transactions(offset, lso),
        };
        Ok((records, lso, aborted))
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

/// The error of an append by a process that no longer leads the partition
/// (NOT_LEADER_OR_FOLLOWER on the wire).
fn deposed() -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        "this broker no longer leads the partition: another took it over",
    )
}

impl Drop for Partition {
    /// Says on the volume that this generation wrote its last (every
    /// append has returned: they hold the partition), so the next leader
    /// need neither the lock nor a fence. Best effort: without it the next
    /// leader fences this process instead, or waits for its lock.
    fn drop(&mut self) {
        let Some(gen) = self.generation else { return };
        if self.deposed.load(Ordering::Acquire) {
            return;
        }
        if let Err(e) = generations::release(&self.dir, gen) {
            warn!(topic = %self.topic, partition = self.index, error = %e,
                  "cannot record that this broker let the partition go");
        }
    }
}

pub type PartitionRef = Arc<Partition>;

#[cfg(test)]
mod tests;
