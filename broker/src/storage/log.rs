//! A partition log: segment files of record batches plus a sparse offset
//! index, on the shared volume.
//!
//! Layout of a partition folder:
//! `<base offset, 20 digits>.log` holds batches back to back, exactly as
//! Kafka lays them out; `<base offset>.index` holds fixed 20-byte entries
//! (offset i64, position u32, max timestamp before position i64) written
//! every `index_interval_bytes`. The index of the active segment is rebuilt
//! on open, so it is never trusted past a crash. `<base offset>.snapshot`
//! holds the producer state as of a segment's base, written when it was
//! rolled to ([`super::producer_snapshot`]).
//!
//! Over 800 lines: one type, the partition log, whose append, read, roll and
//! recovery share its segment list and lock; its side of compaction and its
//! segments are in `log/`.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use tracing::warn;

use super::batch::{self, BatchHeader};
use super::fs::{read_at, sync_dir};
use super::generations::{self, Generation};
use super::producer_snapshot;
use super::producer_state::{BatchIdentity, CompletedTxn, ProducerStates, Verdict};
use super::retention::SegmentInfo;
use super::txn_index::{AbortedTxn, AbortedTxns};
use super::validator::RecordPolicy;

/// Present in a log folder once the log holds a transactional batch or a
/// marker: without a producer-state snapshot, its open transactions and
/// aborted ones are then rebuilt from every segment when it opens, not only
/// from the active one.
pub const TRANSACTIONS_FLAG: &str = "transactions";

/// The log start offset DeleteRecords moved into a segment, durable
/// (decimal); absent, the first segment's base is the start.
pub const LOG_START_FILE: &str = "log-start-offset";

mod cleaning;
mod segment;
pub use cleaning::{swap_in_cleaned, unlink_replaced};
use segment::{read_header_at, segment_path};
pub use segment::{Roll, Segment};

#[derive(Debug, Clone, Copy)]
pub struct LogConfig {
    /// A new segment starts once the active one reaches this size.
    pub segment_bytes: u64,
    /// Bytes of log between two index entries.
    pub index_interval_bytes: u64,
    /// A larger record batch is refused (`max.message.bytes`).
    pub max_message_bytes: usize,
    /// A segment rolls once its first batch is this much older than an
    /// incoming one (`segment.ms`).
    pub segment_ms: i64,
    /// At most this much is taken off `segment_ms` for each segment
    /// (`segment.jitter.ms`), so partitions created together do not all
    /// roll at once.
    pub segment_jitter_ms: i64,
    /// What a producer's records are checked against
    /// ([`super::validator`]).
    pub records: RecordPolicy,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 256 * 1024 * 1024,
            index_interval_bytes: 4096,
            max_message_bytes: 1_048_588,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            segment_jitter_ms: 0,
            records: RecordPolicy::default(),
        }
    }
}

/// Milliseconds since the epoch, as record timestamps count.
pub fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What recovery found when a log was opened.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Bytes cut from the tail of the active segment (torn or corrupt).
    pub truncated_bytes: u64,
    /// Why the tail was cut, if it was.
    pub reason: Option<String>,
    /// The offset producer state was replayed from: a snapshot's, or the
    /// first replayed segment's base when no snapshot served.
    pub producers_replayed_from: i64,
    /// A producer-state snapshot was loaded.
    pub from_snapshot: bool,
}

/// The result of an append: offsets assigned to the first and last record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub base_offset: i64,
    pub last_offset: i64,
    /// A retried idempotent batch already in the log: nothing was written.
    pub duplicate: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("{0}")]
    Io(#[from] io::Error),
    /// Refused by the idempotent-producer checks, with the Kafka error code.
    #[error("refused with error code {0}")]
    Refused(i16),
    /// A batch larger than `max.message.bytes` (MESSAGE_TOO_LARGE).
    #[error("the record batch size is {size} bytes, above max.message.bytes ({max})")]
    TooLarge { size: usize, max: usize },
}

pub struct Log {
    dir: PathBuf,
    config: LogConfig,
    segments: Vec<Segment>,
    producers: ProducerStates,
    aborted: AbortedTxns,
    /// [`TRANSACTIONS_FLAG`] is durable in the folder.
    transactional: bool,
    /// False when opened by [`Log::open_read_only`].
    writable: bool,
    /// Set by DeleteRecords ([`LOG_START_FILE`]); the start is the larger
    /// of this and the first segment's base.
    deleted_below: i64,
    /// The generation this log writes as (new segments' names).
    gen: u32,
    /// Where the log starts while it has no segment (opened for a
    /// takeover of a partition that has none).
    empty_start: i64,
}

/// How [`Log::open_as`] opens a log.
enum OpenAs<'g> {
    /// Go on writing as the latest generation (or only read); with `gen`,
    /// only if that is still the latest.
    Continue { writable: bool, gen: Option<u32> },
    /// Read everything as it is, to begin the generation after `gens`.
    Takeover { gens: &'g [Generation] },
}

/// The file that holds the log start offset DeleteRecords moved to, for
/// the generation `gen` ([`LOG_START_FILE`] before generations): each
/// generation writes its own, so a late write of an earlier holder is
/// never read.
pub fn log_start_path(dir: &Path, gen: u32) -> PathBuf {
    match gen {
        0 => dir.join(LOG_START_FILE),
        g => dir.join(format!("{LOG_START_FILE}.{g}")),
    }
}

fn read_log_start(path: &Path) -> io::Result<Option<i64>> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(s.trim().parse::<i64>().ok()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The log start offset as the latest generation knows it: the one it
/// began with, moved on by its own DeleteRecords.
fn log_start_of(dir: &Path, gens: &[Generation]) -> io::Result<i64> {
    let (begun, gen) = gens
        .last()
        .map_or((0, 0), |g| (g.log_start_offset, g.generation));
    Ok(read_log_start(&log_start_path(dir, gen))?
        .unwrap_or(0)
        .max(begun))
}

fn identity(h: &BatchHeader) -> BatchIdentity {
    BatchIdentity {
        producer_id: h.producer_id,
        epoch: h.producer_epoch,
        first_sequence: h.base_sequence,
        last_sequence: h.last_sequence(),
        transactional: h.is_transactional(),
        max_timestamp: h.max_timestamp,
    }
}

/// Indexes a transaction a marker ended, if it aborted.
fn index_completed(
    producers: &ProducerStates,
    aborted: &mut AbortedTxns,
    completed: Option<CompletedTxn>,
) {
    if let Some(c) = completed.filter(|c| c.aborted) {
        aborted.push(AbortedTxn {
            producer_id: c.producer_id,
            first_offset: c.first_offset,
            last_offset: c.last_offset,
            last_stable_offset: producers.last_stable_offset_after(&c),
        });
    }
}

/// What a segment's time-based roll comes early by (Apache's
/// `LogConfig.randomSegmentJitter`: below `min(jitter, segment.ms)`).
/// Apache draws it at random when the segment is made; here it is a hash
/// of the partition's folder and the segment's base offset, as spread
/// across partitions and segments and the same after a restart.
pub(super) fn roll_jitter_ms(dir: &Path, base_offset: i64, jitter_ms: i64, segment_ms: i64) -> i64 {
    let bound = jitter_ms.min(segment_ms);
    if bound <= 0 {
        return 0;
    }
    let mut key = dir.as_os_str().as_encoded_bytes().to_vec();
    key.extend_from_slice(&base_offset.to_be_bytes());
    i64::from(kaas_shared::fnv1a32(&key)) % bound
}

/// The bytes of the log in `dir` (its segments' `.log` files, Apache's
/// `UnifiedLog.size`), read from the folder: the log need not be open.
pub fn size_on_disk(dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.path().extension().is_some_and(|e| e == "log") {
            total += entry.metadata()?.len();
        }
    }
    Ok(total)
}

/// Deletes the files of segments [`Log::remove_oldest`] let go, oldest
/// first and each segment's `.log` last (so a crash leaves a suffix of
/// the log, whose segments open as they are). The caller makes the
/// deletion durable (the log start offset is the first remaining
/// segment's base): one partition's folder fsynced, or a whole retention
/// pass's deletions with one `syncfs`.
pub fn delete_segment_files(dir: &Path, segments: &[(i64, u32)]) -> io::Result<()> {
    for &(base, gen) in segments {
        for path in [
            segment_path(dir, base, gen, "index"),
            producer_snapshot::path(dir, base, gen),
            segment_path(dir, base, gen, "log"),
        ] {
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

impl Log {
    /// Opens (or creates) the log in `dir`, recovering the active segment:
    /// a torn or corrupt tail is cut off so no corrupt batch is ever served.
    pub fn open(dir: &Path, config: LogConfig) -> io::Result<(Log, RecoveryReport)> {
        Log::open_mode(dir, config, true)
    }

    /// Opens the log in `dir` for reads only (a read-only volume): nothing
    /// on disk is created or changed, a damaged tail is left in place but
    /// never served, and appends fail (EROFS).
    pub fn open_read_only(dir: &Path, config: LogConfig) -> io::Result<(Log, RecoveryReport)> {
        Log::open_mode(dir, config, false)
    }

    fn open_mode(
        dir: &Path,
        config: LogConfig,
        writable: bool,
    ) -> io::Result<(Log, RecoveryReport)> {
        Log::open_as(
            dir,
            config,
            OpenAs::Continue {
                writable,
                gen: None,
            },
        )
    }

    /// Opens the log in `dir` again as generation `gen` (after a failed
    /// write: the page cache is not trusted), unless a later generation
    /// began meanwhile: `WouldBlock` then, this process no longer leads it.
    pub fn reopen(dir: &Path, config: LogConfig, gen: u32) -> io::Result<(Log, RecoveryReport)> {
        Log::open_as(
            dir,
            config,
            OpenAs::Continue {
                writable: true,
                gen: Some(gen),
            },
        )
    }

    /// Opens the log in `dir` to begin a new generation after the latest
    /// recorded in `gens` ([`super::generations`]): every segment is read
    /// as it is and none is changed (an earlier holder may still write to
    /// its files); the latest generation's records end where its valid
    /// ones end (checksums verified), which is the log's end. Appends fail
    /// until [`Log::begin_generation`].
    pub fn open_for_takeover(
        dir: &Path,
        config: LogConfig,
        gens: &[Generation],
    ) -> io::Result<(Log, RecoveryReport)> {
        Log::open_as(dir, config, OpenAs::Takeover { gens })
    }

    fn open_as(
        dir: &Path,
        config: LogConfig,
        how: OpenAs<'_>,
    ) -> io::Result<(Log, RecoveryReport)> {
        let (writable, read_gens);
        let gens = match how {
            OpenAs::Continue { writable: w, gen } => {
                writable = w;
                read_gens = generations::read(dir)?;
                let latest = read_gens.last().map_or(0, |g| g.generation);
                if gen.is_some_and(|gen| gen != latest) {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!(
                            "generation {latest} of the partition began after this broker's {}",
                            gen.unwrap_or(0)
                        ),
                    ));
                }
                &read_gens[..]
            }
            OpenAs::Takeover { gens } => {
                writable = false;
                gens
            }
        };
        let takeover = matches!(how, OpenAs::Takeover { .. });
        // A swap an earlier holder committed is finished, and its
        // unfinished cleanings dropped, by whoever writes the log next.
        if writable || takeover {
            fs::create_dir_all(dir)?;
            let swaps = cleaning::recover(dir)?;
            if swaps > 0 {
                warn!(dir = %dir.display(), swaps, "finished cleaned-segment swaps a crash interrupted");
            }
        }
        let tail_gen = gens.last().map_or(0, |g| g.generation);
        let mut files: Vec<(i64, u32)> = fs::read_dir(dir)?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                crate::storage::names::parse_segment_name(e.file_name().to_str()?, "log")
            })
            // A file of a generation with no record, or wholly past its
            // generation's end, is what a process wrote that never led
            // or no longer did: not part of the log.
            .filter(|&(base, gen)| {
                gen <= tail_gen && generations::limit_of(gens, gen).is_none_or(|end| base < end)
            })
            .collect();
        files.sort_unstable();
        let mut segments: Vec<Segment> = Vec::with_capacity(files.len() + 1);
        let mut report = RecoveryReport::default();
        // The latest generation's last file is the one that may have a torn
        // or damaged tail (the others were sealed by their own roll, or end
        // at a later generation's start).
        let last_of_tail = files.iter().rposition(|&(_, gen)| gen == tail_gen);
        for (i, &(base, gen)) in files.iter().enumerate() {
            let limit = generations::limit_of(gens, gen).unwrap_or(i64::MAX);
            // Only this generation's own files are written; an earlier
            // generation's may still be written by its holder.
            let own = writable && gen == tail_gen;
            let mut seg = Segment::open_sealed(dir, base, gen, &config, own, limit)?;
            if Some(i) == last_of_tail {
                // open_sealed may have rebuilt without cutting (missing or
                // inconsistent index) and shrunk `size` to the valid end:
                // verify against the whole file, so a damaged tail is cut
                // (own files) and reported.
                seg.size = seg.file.metadata()?.len();
                report = seg.rebuild(&config, true)?;
                if report.truncated_bytes > 0 && !own {
                    warn!(
                        dir = %dir.display(),
                        damaged_bytes = report.truncated_bytes,
                        reason = report.reason.as_deref().unwrap_or(""),
                        "partition log has a damaged tail; it is left in place (the volume is \
                         read-only, or another generation wrote it) and only the batches \
                         before it are served"
                    );
                } else if report.truncated_bytes > 0 {
                    warn!(
                        dir = %dir.display(),
                        truncated_bytes = report.truncated_bytes,
                        reason = report.reason.as_deref().unwrap_or(""),
                        "recovered partition log: cut a damaged tail"
                    );
                }
            }
            segments.push(seg);
        }
        if segments.is_empty() && !writable && !takeover {
            return Err(io::Error::from_raw_os_error(libc::EROFS));
        }
        // The latest generation has no file yet (its holder stopped before
        // its first segment): it starts one where the log ends.
        let needs_own = writable && segments.last().is_none_or(|s| s.gen != tail_gen);
        if needs_own {
            let start = segments.last().map_or_else(
                || gens.last().map_or(0, |g| g.start_offset),
                |s| s.next_offset,
            );
            segments.push(Segment::create(dir, start, tail_gen)?);
            sync_dir(dir)?;
        }
        let transactional = dir.join(TRANSACTIONS_FLAG).exists();
        let deleted_below = log_start_of(dir, gens)?;
        let mut log = Log {
            dir: dir.to_path_buf(),
            config,
            segments,
            producers: ProducerStates::default(),
            aborted: AbortedTxns::default(),
            transactional,
            writable,
            deleted_below,
            gen: tail_gen,
            empty_start: gens.last().map_or(0, |g| g.start_offset),
        };
        log.rebuild_producers(&mut report)?;
        Ok((log, report))
    }

    /// Producer state from the newest snapshot at a segment's base, then
    /// the segments from there. Without one: in a transactional log, open
    /// and aborted transactions from every segment (a transaction may span
    /// them); otherwise idempotent producers from the active segment.
    fn rebuild_producers(&mut self, report: &mut RecoveryReport) -> io::Result<()> {
        if self.segments.is_empty() {
            return Ok(());
        }
        let bases: Vec<i64> = self.segments.iter().map(|s| s.base_offset).collect();
        let ids: Vec<(i64, u32)> = self
            .segments
            .iter()
            .map(|s| (s.base_offset, s.gen))
            .collect();
        let snapshot =
            producer_snapshot::load_newest(&self.dir, |o, g| ids.binary_search(&(o, g)).is_ok());
        let from = match snapshot {
            Some(s) => {
                self.producers = s.producers;
                self.aborted = s.aborted;
                report.from_snapshot = true;
                bases.binary_search(&s.offset).expect("a segment's base")
            }
            None if self.transactional => 0,
            None => self.segments.len() - 1,
        };
        report.producers_replayed_from = bases[from];
        let Log {
            segments,
            producers,
            aborted,
            ..
        } = self;
        for seg in &segments[from..] {
            let mut pos = 0;
            while let Some(h) = read_header_at(&seg.file, pos, seg.size) {
                if h.is_control() {
                    let mut buf = vec![0u8; h.size];
                    seg.file.read_exact_at(&mut buf, pos)?;
                    // A control batch that does not decode ends nothing
                    // (its checksum held: a control type of a later version).
                    if let Ok(Some(marker)) = batch::control_marker(&buf) {
                        let completed = producers.record_marker(
                            h.producer_id,
                            h.producer_epoch,
                            marker.coordinator_epoch,
                            h.base_offset,
                            marker.commit,
                            h.max_timestamp,
                        );
                        index_completed(producers, aborted, completed);
                    }
                } else {
                    producers.record(&identity(&h), h.base_offset);
                }
                pos += h.size as u64;
            }
        }
        Ok(())
    }

    /// Whether appending `data` needs [`TRANSACTIONS_FLAG`] made durable
    /// first.
    pub fn needs_transactions_flag(&self, data: &[u8]) -> bool {
        !self.transactional
            && batch::split_verified(data)
                .is_ok_and(|parts| parts.iter().any(|(_, h)| h.is_transactional()))
    }

    /// The flag's file, to be made durable (blocking) before
    /// [`Log::transactions_flagged`].
    pub fn transactions_flag_path(&self) -> PathBuf {
        self.dir.join(TRANSACTIONS_FLAG)
    }

    /// [`TRANSACTIONS_FLAG`] is durable.
    pub fn transactions_flagged(&mut self) {
        self.transactional = true;
    }

    /// The end of what `read_committed` readers see, given the high
    /// watermark: the first offset of the oldest open transaction, if
    /// lower.
    pub fn last_stable_offset(&self, high_watermark: i64) -> i64 {
        self.producers
            .first_undecided_offset()
            .map_or(high_watermark, |first| first.min(high_watermark))
    }

    /// The producers this log knows (DescribeProducers).
    pub fn active_producers(&self) -> Vec<super::producer_state::ActiveProducer> {
        self.producers.active()
    }

    /// The first offset of the producer's open transaction, if any.
    pub fn open_transaction(&self, producer_id: i64) -> Option<i64> {
        self.producers.open_transaction(producer_id)
    }

    pub fn has_ongoing_transaction(&self, producer_id: i64, epoch: i16) -> bool {
        self.producers.has_ongoing_transaction(producer_id, epoch)
    }

    /// The aborted transactions a read of `[fetch_offset, upper_bound)`
    /// overlaps.
    pub fn aborted_transactions(&self, fetch_offset: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        self.aborted.overlapping(fetch_offset, upper_bound)
    }

    /// Appends a marker batch ([`batch::encode_marker`]; the leader's half
    /// of WriteTxnMarkers) and returns its offset. Refused, with Apache's
    /// error, from an older producer epoch or an older coordinator.
    pub fn append_marker(
        &mut self,
        data: &mut [u8],
        leader_epoch: i32,
    ) -> Result<i64, AppendError> {
        if !self.writable {
            return Err(io::Error::from_raw_os_error(libc::EROFS).into());
        }
        let bad = |e: String| AppendError::Io(io::Error::new(io::ErrorKind::InvalidData, e));
        let mut h = batch::parse_header(data).map_err(|e| bad(e.to_string()))?;
        let marker = match batch::control_marker(data) {
            Ok(Some(marker)) if h.is_control() && h.is_transactional() => marker,
            _ => return Err(bad("not a marker batch".into())),
        };
        if !self.transactional {
            return Err(io::Error::other("marker before the log's transactions flag").into());
        }
        self.producers
            .check_marker(h.producer_id, h.producer_epoch, marker.coordinator_epoch)
            .map_err(AppendError::Refused)?;
        self.maybe_roll(data.len() as u64, h.max_timestamp)?;
        let offset = self.next_offset();
        batch::assign_offset(data, offset, leader_epoch);
        h.base_offset = offset;
        let active = self.segments.last_mut().expect("a log has a segment");
        active.append(data, &[h], &self.config)?;
        let completed = self.producers.record_marker(
            h.producer_id,
            h.producer_epoch,
            marker.coordinator_epoch,
            offset,
            marker.commit,
            h.max_timestamp,
        );
        index_completed(&self.producers, &mut self.aborted, completed);
        Ok(offset)
    }

    /// Forgets producers idle for `expiration_ms` at `now_ms` that have no
    /// open transaction (`producer.id.expiration.ms`); how many.
    pub fn remove_expired_producers(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        self.producers.remove_expired(now_ms, expiration_ms)
    }

    /// The first offset a reader may ask for: the first segment's base, or
    /// later where DeleteRecords moved it (never past the log's end).
    pub fn log_start_offset(&self) -> i64 {
        self.segments
            .first()
            .map_or(self.empty_start, |s| s.base_offset)
            .max(self.deleted_below.min(self.next_offset()))
    }

    /// The log start offset moves to `offset` (made durable by the caller
    /// in [`LOG_START_FILE`] first).
    pub fn delete_below(&mut self, offset: i64) {
        self.deleted_below = self.deleted_below.max(offset);
    }

    pub fn config(&self) -> LogConfig {
        self.config
    }

    /// The topic's configs changed: the next roll follows them.
    pub fn set_config(&mut self, config: LogConfig) {
        self.config = config;
    }

    /// The segments as retention weighs them, oldest first.
    pub fn segment_infos(&self) -> Vec<SegmentInfo> {
        self.segments
            .iter()
            .map(|s| SegmentInfo {
                base_offset: s.base_offset,
                size: s.size,
                largest_timestamp: s.largest_timestamp(),
            })
            .collect()
    }

    /// Forgets the `n` oldest segments (never the last); readers holding
    /// one keep reading it. Their files go with [`delete_segment_files`].
    pub fn remove_oldest(&mut self, n: usize) -> Vec<(i64, u32)> {
        let n = n.min(self.segments.len() - 1);
        self.segments
            .drain(..n)
            .map(|s| (s.base_offset, s.gen))
            .collect()
    }

    pub fn next_offset(&self) -> i64 {
        self.segments
            .last()
            .map_or(self.empty_start, |s| s.next_offset)
    }

    /// The generation this log writes as.
    pub fn generation(&self) -> u32 {
        self.gen
    }

    /// Where DeleteRecords records this generation's log start offset.
    pub fn log_start_path(&self) -> PathBuf {
        log_start_path(&self.dir, self.gen)
    }

    /// Begins generation `gen` (its record already created): its first
    /// segment, durably named, where the log ends; appends go there from
    /// now on.
    pub fn begin_generation(&mut self, gen: u32) -> io::Result<()> {
        let segment = Segment::create(&self.dir, self.next_offset(), gen)?;
        sync_dir(&self.dir)?;
        self.segments.push(segment);
        self.gen = gen;
        self.writable = true;
        Ok(())
    }

    /// The file an fsync must reach to make everything appended durable.
    pub fn active_file(&self) -> Arc<File> {
        self.segments
            .last()
            .expect("a log has a segment")
            .file
            .clone()
    }

    /// Appends batches whose checksums were verified already
    /// ([`batch::split_batches`]), assigning offsets in place. A retried
    /// idempotent batch is answered with its original offsets.
    pub fn append(&mut self, data: &mut [u8], leader_epoch: i32) -> Result<Appended, AppendError> {
        if !self.writable {
            return Err(io::Error::from_raw_os_error(libc::EROFS).into());
        }
        let parts = batch::split_verified(data)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        if parts.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "no record batch").into());
        }
        let max = self.config.max_message_bytes;
        if let Some((_, h)) = parts.iter().find(|(_, h)| h.size > max) {
            return Err(AppendError::TooLarge { size: h.size, max });
        }
        for (_, h) in &parts {
            // Markers are the coordinator's (append_marker), never a client's.
            if h.is_control() || (h.is_transactional() && h.producer_id < 0) {
                return Err(AppendError::Refused(
                    kafka_protocol::ResponseError::InvalidRecord.code(),
                ));
            }
        }
        if parts.iter().any(|(_, h)| h.is_transactional()) && !self.transactional {
            return Err(
                io::Error::other("transactional batch before the log's transactions flag").into(),
            );
        }
        let ids: Vec<BatchIdentity> = parts.iter().map(|(_, h)| identity(h)).collect();
        match self.producers.check(&ids[0]) {
            Verdict::Append => {}
            Verdict::Duplicate { base_offset } => {
                let last = base_offset + i64::from(parts[0].1.last_offset_delta);
                return Ok(Appended {
                    base_offset,
                    last_offset: last,
                    duplicate: true,
                });
            }
            Verdict::Refuse(code) => return Err(AppendError::Refused(code)),
        }
        // Later batches of the same request must follow the earlier ones.
        for w in ids.windows(2) {
            let (a, b) = (w[0], w[1]);
            let follows = a.producer_id != b.producer_id
                || (a.epoch == b.epoch
                    && b.first_sequence == a.last_sequence.wrapping_add(1).max(0));
            if b.producer_id >= 0 && !follows {
                return Err(AppendError::Refused(
                    kafka_protocol::ResponseError::OutOfOrderSequenceNumber.code(),
                ));
            }
        }
        let incoming_ts = parts
            .iter()
            .map(|(_, h)| h.max_timestamp)
            .max()
            .unwrap_or(-1);
        self.maybe_roll(data.len() as u64, incoming_ts)?;
        let base_offset = self.next_offset();
        let mut next = base_offset;
        let mut headers = Vec::with_capacity(parts.len());
        for (range, h) in &parts {
            batch::assign_offset(&mut data[range.clone()], next, leader_epoch);
            let mut h = *h;
            h.base_offset = next;
            next = h.next_offset();
            headers.push(h);
        }
        let active = self.segments.last_mut().expect("a log has a segment");
        active.append(data, &headers, &self.config)?;
        for (id, h) in ids.iter().zip(&headers) {
            self.producers.record(id, h.base_offset);
        }
        Ok(Appended {
            base_offset,
            last_offset: next - 1,
            duplicate: false,
        })
    }

    fn maybe_roll(&mut self, incoming: u64, incoming_ts: i64) -> io::Result<()> {
        if let Some(roll) = self.roll_due(incoming, incoming_ts, wall_clock_ms())? {
            let segment = roll.run()?;
            self.push_segment(segment);
        }
        Ok(())
    }

    /// The roll an append of `incoming` bytes whose largest timestamp is
    /// `incoming_ts` needs first, at `now_ms`, if any (Apache's
    /// `LogSegment.shouldRoll`: the segment would pass `segment.bytes`, or
    /// its first batch is more than `segment.ms` older than the incoming
    /// one, or, with no timestamp, the segment is that old): its I/O
    /// (fsyncs, file creation) can then run without the log, on a
    /// blocking thread ([`Roll::run`]), before [`Log::push_segment`].
    pub fn roll_due(
        &self,
        incoming: u64,
        incoming_ts: i64,
        now_ms: i64,
    ) -> io::Result<Option<Roll>> {
        let active = self.segments.last().expect("a log has a segment");
        let waited = if active.first_batch_ts >= 0 {
            incoming_ts - active.first_batch_ts
        } else {
            now_ms - active.created_ms
        };
        let jitter = roll_jitter_ms(
            &self.dir,
            active.base_offset,
            self.config.segment_jitter_ms,
            self.config.segment_ms,
        );
        let by_time = active.size > 0 && waited > self.config.segment_ms - jitter;
        if active.size + incoming <= self.config.segment_bytes && !by_time {
            return Ok(None);
        }
        self.roll()
    }

    /// A roll of the active segment whatever its size (retention is about
    /// to delete it), unless it is empty or the log is read-only.
    pub fn roll(&self) -> io::Result<Option<Roll>> {
        let active = self.segments.last().expect("a log has a segment");
        if !self.writable || active.size == 0 {
            return Ok(None);
        }
        Ok(Some(Roll {
            dir: self.dir.clone(),
            sealed: active.file.clone(),
            sealed_index: active
                .index_file
                .as_ref()
                .map(File::try_clone)
                .transpose()?,
            base_offset: active.next_offset,
            gen: self.gen,
            snapshot: producer_snapshot::encode(active.next_offset, &self.producers, &self.aborted),
        }))
    }

    /// Makes the segment a [`Roll`] created the active one. The log must
    /// not have been appended to since [`Log::roll_due`].
    pub fn push_segment(&mut self, segment: Segment) {
        debug_assert_eq!(segment.base_offset, self.next_offset());
        self.segments.push(segment);
    }

    /// Whole batches starting at the one holding `offset`, below `limit`
    /// (the high watermark), up to `max_bytes` but always at least one batch.
    pub fn read(&self, offset: i64, limit: i64, max_bytes: usize) -> io::Result<Bytes> {
        if offset >= limit {
            return Ok(Bytes::new());
        }
        let i = self
            .segments
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1);
        for seg in &self.segments[i..] {
            let Some((start, first)) = seg.find_position(offset) else {
                continue;
            };
            if first.base_offset >= limit {
                return Ok(Bytes::new());
            }
            let mut end = start + first.size as u64;
            while let Some(h) = read_header_at(&seg.file, end, seg.size) {
                if h.base_offset >= limit || (end - start) as usize + h.size > max_bytes {
                    break;
                }
                end += h.size as u64;
            }
            return Ok(Bytes::from(read_at(
                &seg.file,
                start,
                (end - start) as usize,
            )?));
        }
        Ok(Bytes::new())
    }

    /// The first batch, below `limit`, whose max timestamp is at least `ts`:
    /// its bytes, so the caller can find the exact record.
    pub fn batch_for_timestamp(&self, ts: i64, limit: i64) -> io::Result<Option<Bytes>> {
        for seg in &self.segments {
            if seg.max_ts < ts {
                continue;
            }
            let i = seg.index.partition_point(|e| e.max_ts_before < ts);
            let mut pos = if i == 0 {
                0
            } else {
                u64::from(seg.index[i - 1].position)
            };
            while let Some(h) = read_header_at(&seg.file, pos, seg.size) {
                if h.base_offset >= limit {
                    return Ok(None);
                }
                if h.max_timestamp >= ts {
                    let mut buf = vec![0u8; h.size];
                    seg.file.read_exact_at(&mut buf, pos)?;
                    return Ok(Some(Bytes::from(buf)));
                }
                pos += h.size as u64;
            }
        }
        Ok(None)
    }

    /// The batch holding the largest timestamp below `limit`.
    pub fn batch_with_max_timestamp(&self, limit: i64) -> io::Result<Option<Bytes>> {
        let mut best: Option<(i64, &Segment, u64, usize)> = None;
        for seg in &self.segments {
            if best.is_some_and(|(ts, ..)| seg.max_ts <= ts) {
                continue;
            }
            let mut pos = 0;
            while let Some(h) = read_header_at(&seg.file, pos, seg.size) {
                if h.base_offset >= limit {
                    break;
                }
                if best.is_none_or(|(ts, ..)| h.max_timestamp > ts) {
                    best = Some((h.max_timestamp, seg, pos, h.size));
                }
                pos += h.size as u64;
            }
        }
        match best {
            None => Ok(None),
            Some((_, seg, pos, size)) => {
                let mut buf = vec![0u8; size];
                seg.file.read_exact_at(&mut buf, pos)?;
                Ok(Some(Bytes::from(buf)))
            }
        }
    }
}

#[cfg(test)]
mod tests;
