//! Snapshots: once enough deltas piled up, a log is rewritten as Header +
//! Snapshot (tmp file, fsync, rename, folder fsync), carrying over records
//! appended while the snapshot was written.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tracing::warn;

use super::cache::Entry;
use super::durability::Durability;
use super::fencing::LogLock;
use super::file::{count_frames, frame_crc, identity, write_tmp, SinceSnapshot};
use super::records::{encode, header_record, new_log_id};
use crate::storage::blocking;
use crate::storage::fs::sync_dir;

/// Starts a snapshot of the log if one is due and none is running. It holds
/// the log's sync turn exclusively (`turn`, when the caller holds it
/// already) until the new file is in place; the swap fsyncs the new file
/// and the folder itself, so no sync round has to follow it.
pub(super) fn snapshot_if_due(
    entry: Arc<Entry>,
    shared: Arc<Durability>,
    turn: Option<tokio::sync::OwnedRwLockWriteGuard<()>>,
) {
    if !compaction_due(&entry) || entry.compacting.swap(true, Ordering::AcqRel) {
        return;
    }
    tokio::spawn(async move {
        let _turn = match turn {
            Some(turn) => turn,
            None => entry.sync_lock.clone().write_owned().await,
        };
        compact_if_due(&entry, &shared).await;
        entry.compacting.store(false, Ordering::Release);
    });
}

pub(super) fn compaction_due(entry: &Entry) -> bool {
    entry
        .inner()
        .log
        .as_ref()
        .is_some_and(|log| log.since_snapshot.due())
}

/// Rewrites the log as Header + Snapshot once enough deltas piled up: the
/// snapshot is encoded and written to a tmp file (fsynced) on a blocking
/// thread, without holding the log; then, under the log's lock (also on a
/// blocking thread, so no async worker waits on the rename), records
/// appended meanwhile are copied after it and it is renamed over the log.
/// Only the copy of the table is taken under the log's lock. The new file
/// and the folder are fsynced before the swap completes, so appends to the
/// new file can be journaled at once. A failure leaves the old log in place.
pub(super) async fn compact_if_due(entry: &Arc<Entry>, shared: &Arc<Durability>) {
    let (snapshot, snap_end, old) = {
        let inner = entry.inner();
        let Some(log) = inner.log.as_ref() else {
            return;
        };
        if !log.since_snapshot.due() {
            return;
        }
        (log.table.encode_snapshot(), log.len, log.file.clone())
    };
    let paths = entry.paths.clone();
    let sh = shared.clone();
    let log_id = new_log_id();
    let written = blocking(move || {
        let mut bytes = encode(&header_record(&paths.group_id, log_id))?;
        let header_len = bytes.len();
        bytes.extend_from_slice(&snapshot?);
        let snapshot_crc = frame_crc(&bytes[header_len..]);
        let tmp = write_tmp(&paths, &bytes, &sh)?;
        Ok((
            tmp,
            bytes.len() as u64,
            (bytes.len() - header_len) as u64,
            snapshot_crc,
        ))
    })
    .await;
    let (tmp, base, snapshot_bytes, snapshot_crc) = match written {
        Ok(w) => w,
        Err(e) => {
            warn!(group_id = %entry.paths.group_id, error = %e,
                  "writing a group log snapshot failed; keeping the deltas");
            return;
        }
    };
    shared.io.snapshot_written();
    let (e, sh) = (entry.clone(), shared.clone());
    let swapped = blocking(move || {
        Ok(swap_in_snapshot(
            &e,
            &sh,
            tmp,
            (base, snapshot_bytes, log_id, snapshot_crc),
            snap_end,
            &old,
        ))
    })
    .await;
    let swapped = swapped.and_then(|r| r);
    if !matches!(swapped, Ok(true)) {
        let _ = fs::remove_file(&entry.paths.tmp);
    }
    if let Err(e) = swapped {
        warn!(group_id = %entry.paths.group_id, error = %e,
              "replacing the group log by a snapshot failed; keeping the deltas");
    }
}

/// The second half of [`compact_if_due`]: under the log's lock, copies the
/// records appended since the snapshot was taken after it and renames the
/// tmp file over the log. `Ok(false)`: the log was closed or reopened
/// meanwhile, so the snapshot may be stale and is dropped.
pub(super) fn swap_in_snapshot(
    entry: &Entry,
    shared: &Durability,
    tmp: File,
    (base, snapshot_bytes, log_id, snapshot_crc): (u64, u64, u64, u32),
    snap_end: u64,
    old: &Arc<File>,
) -> io::Result<bool> {
    let mut inner = entry.inner();
    let Some(log) = inner.log.as_mut() else {
        return Ok(false);
    };
    if !Arc::ptr_eq(&log.file, old) {
        return Ok(false);
    }
    let (tail, id, dir_synced) = {
        let _guard = LogLock::acquire(old)?;
        if !log.is_current(&entry.paths)? {
            return Err(io::Error::other(
                "the log changed on disk (another owner?); snapshot dropped",
            ));
        }
        let mut tail = vec![0u8; (log.len - snap_end) as usize];
        old.read_exact_at(&mut tail, snap_end)?;
        tmp.write_all_at(&tail, base)?;
        // The records copied over may be acknowledged already (through
        // the journal, as writes to the old file): the new file holds them
        // durably before it can replace the old one, and the rename is
        // durable before anything is appended to the new file, so journal
        // entries always name a file that is in place after a crash.
        if !tail.is_empty() {
            tmp.sync_data()?;
            shared.synced();
        }
        let id = identity(&tmp)?;
        // The tmp file is durable: a fenced process renames nothing (a
        // broker that took the log over removed this process's tmp file
        // after fencing it, so a rename already under way finds nothing).
        shared.check_fence()?;
        fs::rename(&entry.paths.tmp, &entry.paths.path)?;
        // If this fails, the next append waits for a volume round instead,
        // which syncs the folder again.
        let dir_synced = match sync_dir(&entry.paths.root) {
            Ok(()) => {
                shared.synced();
                true
            }
            Err(e) => {
                warn!(group_id = %entry.paths.group_id, error = %e,
                      "fsync of the group logs' folder after a snapshot failed");
                false
            }
        };
        (tail, id, dir_synced)
    };
    log.since_snapshot = SinceSnapshot {
        snapshot_bytes,
        deltas: count_frames(&tail),
        delta_bytes: tail.len() as u64,
    };
    log.len = base + tail.len() as u64;
    log.identity = id;
    log.file = Arc::new(tmp);
    log.log_id = log_id;
    if tail.is_empty() {
        log.last_crc = snapshot_crc;
    }
    log.dir_dirty = !dir_synced;
    shared.snapshot_done();
    Ok(true)
}
