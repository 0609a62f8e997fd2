//! Cleaning a partition's log ([`crate::storage::cleaner`]): the state the
//! planner weighs, and one cleaning run on a blocking thread, each cleaned
//! group swapped in under the append lock, then the cleaner checkpoint.

use std::io;
use std::sync::atomic::Ordering;

use tracing::info;

use super::{Partition, PartitionRef};
use crate::storage::cleaner::clean::{
    aborted, build_offset_map, clean_segments, CleanedGroup, Cleaning, Throttle,
};
use crate::storage::cleaner::offset_map::OffsetMap;
use crate::storage::cleaner::{CleanStats, Cleanable, CleanerConfig, CompactionPolicy, LogState};
use crate::storage::fs::write_atomic;
use crate::storage::log::{swap_in_cleaned, unlink_replaced};

/// Where the last cleaning stopped (decimal), in the partition's folder
/// (Apache's `cleaner-offset-checkpoint`, one per partition here).
pub const CLEANER_CHECKPOINT: &str = "cleaner-offset-checkpoint";

/// The checkpoint in `dir`, if one was written.
pub(super) fn read_checkpoint(dir: &std::path::Path) -> Option<i64> {
    std::fs::read_to_string(dir.join(CLEANER_CHECKPOINT))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Runs the calling thread at nice 10: a cleaning is background work, and
/// on a busy machine the threads serving requests go first (the produce
/// p99 during cleaning, `kaas-bench compaction`).
fn lower_priority() {
    // SAFETY: gettid and setpriority on the calling thread only.
    let failed = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10) != 0
    };
    if failed {
        tracing::debug!(error = %io::Error::last_os_error(), "cannot lower the cleaner's priority");
    }
}

/// A cleaner thread's hold on a log ([`Partition::claim_cleaning`]).
pub struct CleaningClaim<'p>(&'p Partition);

impl Drop for CleaningClaim<'_> {
    fn drop(&mut self) {
        self.0.being_cleaned.store(false, Ordering::Release);
    }
}

impl Partition {
    /// The log as the cleaning planner weighs it.
    pub fn log_state(&self) -> LogState {
        let log = self.log();
        let checkpoint = self.cleaner_checkpoint.load(Ordering::Acquire);
        LogState {
            segments: log.segment_infos(),
            first_batch_timestamps: log.first_batch_timestamps(),
            log_start_offset: log.log_start_offset(),
            log_end_offset: log.next_offset(),
            first_unstable_offset: log.first_unstable_offset().min(self.high_watermark()),
            checkpoint: (checkpoint >= 0).then_some(checkpoint),
        }
    }

    /// This broker let the partition go: a cleaning under way stops.
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Whether a cleaning failed on this log's data since it was opened.
    pub fn is_uncleanable(&self) -> bool {
        self.uncleanable.load(Ordering::Acquire)
    }

    /// The cleaner passes over this log from now on, until it is reopened
    /// (when the data may have been repaired, or the leader changed).
    pub fn mark_uncleanable(&self) {
        self.uncleanable.store(true, Ordering::Release);
    }

    /// Whether a cleaner thread is cleaning this log.
    pub fn is_being_cleaned(&self) -> bool {
        self.being_cleaned.load(Ordering::Acquire)
    }

    /// This log for one cleaner thread, until the claim drops; `None` when
    /// another thread has it (`log.cleaner.threads` clean different logs).
    pub fn claim_cleaning(&self) -> Option<CleaningClaim<'_>> {
        self.being_cleaned
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| CleaningClaim(self))
    }

    /// Cleans the log over `cleanable` at `now_ms`: the offset map of the
    /// dirty section, then each group of segments from the log start
    /// rewritten and swapped in; the checkpoint moves to where the map
    /// reached. Stops with `Interrupted` when the partition is let go or
    /// its segments changed under the cleaning.
    pub async fn clean(
        self: &PartitionRef,
        cleanable: Cleanable,
        policy: CompactionPolicy,
        config: CleanerConfig,
        now_ms: i64,
    ) -> io::Result<CleanStats> {
        let cleaning = {
            let log = self.log();
            Cleaning {
                dir: self.dir.clone(),
                writer_gen: log.generation(),
                segments: log.sealed_segments(),
                active_base: log.active_base(),
                aborted: log
                    .aborted_between(log.log_start_offset(), cleanable.first_uncleanable_offset),
                last_records: log.last_records(),
                first_dirty_offset: cleanable.first_dirty_offset,
                first_uncleanable_offset: cleanable.first_uncleanable_offset,
                policy,
                segment_bytes: log.config().segment_bytes,
                now_ms,
            }
        };
        let this = self.clone();
        let (done, result) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("kaas-cleaner".into())
            .spawn(move || {
                lower_priority();
                let result = this.clean_blocking(&cleaning, &config);
                // Let go of the partition before saying so: whoever reopens
                // it next must find its lock free.
                drop((this, cleaning));
                let _ = done.send(result);
            })?;
        result.await.map_err(io::Error::other)?
    }

    fn clean_blocking(&self, c: &Cleaning, config: &CleanerConfig) -> io::Result<CleanStats> {
        let go_on = || !self.is_closing();
        let mut throttle = Throttle::new(config.io_max_bytes_per_second_per_thread());
        let mut map = OffsetMap::new(config.map_capacity());
        let end = build_offset_map(c, &mut map, &mut throttle, &go_on)?;
        let mut stats = CleanStats::default();
        let mut commit = |group: CleanedGroup| {
            // Retention waits meanwhile; appends and fetches go on.
            let _segments = self.segments_lock.blocking_lock();
            let (bases, next) = (group.bases, group.next_base);
            let Some((dir, config)) = self.log().swap_target(bases, next) else {
                let _ = std::fs::remove_file(group.path);
                return Err(aborted());
            };
            let writer = c.writer_gen;
            match swap_in_cleaned(&dir, &config, bases, group.gen, next, writer, group.path) {
                Ok((segment, replaced)) => {
                    self.log().splice_cleaned(bases, next, segment);
                    unlink_replaced(&replaced);
                    Ok(())
                }
                Err(e) => {
                    // The swap may be half done on disk: reopen (which
                    // finishes it) before the next append.
                    self.failed.store(true, Ordering::Release);
                    Err(e)
                }
            }
        };
        clean_segments(c, end, &map, &mut stats, &mut throttle, &go_on, &mut commit)?;
        write_atomic(
            &self.dir.join(CLEANER_CHECKPOINT),
            end.to_string().as_bytes(),
        )?;
        self.cleaner_checkpoint.store(end, Ordering::Release);
        info!(topic = %self.topic, partition = self.index, cleaned_to = end,
              segments = stats.segments_cleaned, bytes_read = stats.bytes_read,
              bytes_written = stats.bytes_written, records_read = stats.records_read,
              records_retained = stats.records_retained, "cleaned log");
        Ok(stats)
    }
}

#[cfg(test)]
impl Partition {
    /// Seals the active segment (when it holds anything).
    pub async fn roll_for_tests(&self) {
        let _appending = self.append_lock.lock().await;
        let roll = self.log().roll().unwrap();
        if let Some(roll) = roll {
            let segment = roll.run().unwrap();
            self.log().push_segment(segment);
        }
    }
}
