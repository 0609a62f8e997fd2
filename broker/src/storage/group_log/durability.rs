//! How appends to group logs become durable: the three modes of
//! [`GroupLogSync`] behind one type, so the store's paths ask it rather
//! than branch on which mode is on. The file operations that tests make
//! fail go through [`LogIo`], whose production implementation is the plain
//! call.

use std::fs::File;
use std::future::Future;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tracing::{error, info};

use super::cache::Entry;
use super::fencing::Owner;
use super::snapshot::snapshot_if_due;
use crate::storage::blocking;
use crate::storage::fs::sync_dir;
use crate::storage::incarnation::{fence_of, Incarnation};
use crate::storage::journal::{self, AfterFlush, EntryRef, Journal};
use crate::storage::volume_sync::VolumeSync;
use crate::store::StoreError;

/// How the store makes appends durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroupLogSync {
    /// Appends are made durable by the broker's commit journal
    /// ([`super::journal`]): one write and one `fdatasync` of one
    /// preallocated file per round, whatever the groups; the logs follow
    /// by `syncfs` each time a journal file fills.
    #[default]
    Journal,
    /// One `syncfs` of the volume per round covers the appends to every
    /// group log made before it (group commit across groups).
    Volume,
    /// One `fdatasync` per log file (group commit within one group only).
    PerFile,
}

/// The group-log writes a test can make fail or hold
/// ([`GroupLogStore::open_with_io`](super::GroupLogStore::open_with_io)).
/// Production uses the plain calls, which are the defaults.
pub trait LogIo: Send + Sync + 'static {
    /// Writes a whole record at `at`.
    fn write_at(&self, file: &File, at: u64, bytes: &[u8]) -> io::Result<()> {
        file.write_all_at(bytes, at)
    }

    /// The outcome of a sync (a journal round, a volume round or fsyncs),
    /// as reported to the appends it covers.
    fn synced(&self, result: io::Result<()>) -> io::Result<()> {
        result
    }

    /// A snapshot's tmp file is written and synced; it replaces the log next.
    fn snapshot_written(&self) {}
}

pub(super) struct RealIo;

impl LogIo for RealIo {}

enum Mode {
    /// One journal round per batch of appends, whatever their groups;
    /// volume rounds for what the journal does not cover (new files,
    /// renames, removals).
    Journal {
        journal: Journal,
        volume: VolumeSync,
    },
    /// One `syncfs` round covers the appends to every log made before it.
    Volume(VolumeSync),
    /// One `fdatasync` per log file.
    PerFile,
}

/// The store's durability: its mode, its file operations, its counters.
pub(super) struct Durability {
    mode: Mode,
    pub(super) io: Arc<dyn LogIo>,
    /// The owning process's fence check, run after every sync and before
    /// what it covers is acknowledged, and before a snapshot replaces a log.
    fence: Option<AfterFlush>,
    fsyncs: AtomicU64,
    snapshots: AtomicU64,
}

impl Durability {
    /// The durability of the logs under `root`; `journal_tag` names this
    /// store's journal files; `owner`'s fence is checked after every sync. Creates no file: the journal makes its files
    /// on its first append.
    pub(super) fn new(
        sync: GroupLogSync,
        root: &Path,
        journal_tag: &str,
        io: Arc<dyn LogIo>,
        owner: Option<&Owner>,
    ) -> io::Result<Durability> {
        let fence: Option<AfterFlush> = owner.map(|o| {
            let o = o.clone();
            Arc::new(move || o.check_fence()) as AfterFlush
        });
        let mode = match sync {
            GroupLogSync::Journal => Mode::Journal {
                journal: Journal::checked(
                    root,
                    journal_tag,
                    journal::DEFAULT_CAPACITY,
                    fence.clone(),
                )?,
                volume: VolumeSync::checked(root, fence.clone())?,
            },
            GroupLogSync::Volume => Mode::Volume(VolumeSync::checked(root, fence.clone())?),
            GroupLogSync::PerFile => Mode::PerFile,
        };
        Ok(Durability {
            mode,
            io,
            fence,
            fsyncs: AtomicU64::new(0),
            snapshots: AtomicU64::new(0),
        })
    }

    /// Whether appends are made durable by the commit journal (and so must
    /// be journaled when written).
    pub(super) fn journals(&self) -> bool {
        matches!(self.mode, Mode::Journal { .. })
    }

    /// Journals appends to logs (journal mode only: `None` otherwise).
    pub(super) fn journal_append<'a>(
        &self,
        entries: impl IntoIterator<Item = EntryRef<'a>>,
    ) -> Option<crate::storage::group_commit::Committed> {
        match &self.mode {
            Mode::Journal { journal, .. } => Some(journal.append(entries)),
            _ => None,
        }
    }

    /// Volume rounds, where the mode has them.
    pub(super) fn volume(&self) -> Option<&VolumeSync> {
        match &self.mode {
            Mode::Journal { volume, .. } | Mode::Volume(volume) => Some(volume),
            Mode::PerFile => None,
        }
    }

    #[cfg(test)]
    pub(super) fn journal(&self) -> Option<&Journal> {
        match &self.mode {
            Mode::Journal { journal, .. } => Some(journal),
            _ => None,
        }
    }

    /// Waiters of one log share a sync turn (volume rounds cover every
    /// log) rather than take turns (one fsync of the file at a time).
    pub(super) fn shares_turns(&self) -> bool {
        self.volume().is_some()
    }

    /// The owning process's fence, read fresh: an error once it was fenced.
    pub(super) fn check_fence(&self) -> io::Result<()> {
        match &self.fence {
            Some(check) => check(),
            None => Ok(()),
        }
    }

    /// Counts one fsync issued by the store itself.
    pub(super) fn synced(&self) {
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot_done(&self) {
        self.snapshots.fetch_add(1, Ordering::Relaxed);
    }

    /// Fsyncs issued so far: by the store, by volume rounds, by journal rounds.
    pub(super) fn fsync_count(&self) -> u64 {
        let rounds = match &self.mode {
            Mode::Journal { journal, volume } => journal.rounds() + volume.syncs(),
            Mode::Volume(volume) => volume.syncs(),
            Mode::PerFile => 0,
        };
        self.fsyncs.load(Ordering::Relaxed) + rounds
    }

    pub(super) fn snapshot_count(&self) -> u64 {
        self.snapshots.load(Ordering::Relaxed)
    }

    /// Makes `files` (and with `dir`, the folder `root`) durable: one
    /// volume round, or an fsync of each.
    fn sync_files(
        self: &Arc<Self>,
        files: Vec<Arc<File>>,
        root: PathBuf,
        dir: bool,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let round = self.volume().map(VolumeSync::sync);
        let me = self.clone();
        async move {
            match round {
                // One round covers every file, and the folder, at once.
                Some(round) => round.await,
                None => {
                    blocking(move || {
                        for f in &files {
                            f.sync_data()?;
                            me.synced();
                        }
                        if dir {
                            sync_dir(&root)?;
                            me.synced();
                        }
                        me.check_fence()
                    })
                    .await
                }
            }
        }
    }

    /// Makes a removal from the folder `root` durable.
    pub(super) fn sync_folder(
        self: &Arc<Self>,
        root: PathBuf,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        self.sync_files(Vec::new(), root, true)
    }

    /// Makes every append made so far to `entry` durable (or failed): one
    /// sync turn. The caller holds the entry's sync lock.
    pub(super) async fn sync_turn(self: &Arc<Self>, entry: &Entry) {
        let (files, current, target, dir) = {
            let mut inner = entry.inner();
            let mut files = std::mem::take(&mut inner.retired);
            let (current, dir) = match &inner.log {
                Some(log) => (Some(log.file.clone()), log.dir_dirty),
                None => (None, false),
            };
            files.extend(current.clone());
            // Every append up to `target` is in one of `files`.
            (files, current, inner.appended, dir)
        };
        let result = self.sync_files(files, entry.paths.root.clone(), dir).await;
        let result = self.io.synced(result);
        let mut inner = entry.inner();
        match result {
            Ok(()) => {
                inner.durable = inner.durable.max(target);
                if let (Some(log), Some(current)) = (inner.log.as_mut(), current) {
                    if dir && Arc::ptr_eq(&log.file, &current) {
                        log.dir_dirty = false;
                    }
                }
            }
            Err(e) => {
                error!(group_id = %entry.paths.group_id, error = %e,
                       "fsync of group log failed; the log will be reopened");
                inner.fail_upto(target);
            }
        }
    }
}

/// An append that has been written and waits to be made durable.
pub(super) struct Pending {
    pub(super) entry: Arc<Entry>,
    pub(super) shared: Arc<Durability>,
    pub(super) seq: u64,
    /// The append's journal round, when the journal makes it durable.
    pub(super) journaled: Option<crate::storage::group_commit::Committed>,
    /// The process incarnation the append was written under: if it was
    /// fenced by the time the append is durable, the append is not
    /// acknowledged (the sync's fence check reads the incarnation current
    /// then, which a fenced process may have renewed).
    pub(super) written_under: Option<Arc<Incarnation>>,
}

impl Pending {
    /// Returns once the append is durable. One sync turn covers every
    /// append written before it started (group commit). When a snapshot is
    /// due, the turn is kept past the answer: the snapshot is written and
    /// synced before any later append to this log becomes durable, so no
    /// record is acknowledged while it exists only in an unsynced copy.
    pub(super) async fn wait(self) -> io::Result<()> {
        let Pending {
            entry,
            shared,
            seq,
            journaled,
            written_under,
        } = self;
        // Whatever the sync said, an append of a process fenced meanwhile
        // is refused as such.
        let judged =
            move |result: io::Result<()>| match written_under.as_ref().and_then(|i| i.fenced()) {
                Some(fence) => Err(crate::storage::incarnation::fenced_error(fence)),
                None => result,
            };
        if let Some(journaled) = journaled {
            let journaled = shared.io.synced(journaled.await);
            let result = {
                let mut inner = entry.inner();
                match journaled {
                    // Journal rounds complete in order, so every earlier
                    // append of this log is durable too.
                    Ok(()) => inner.durable = inner.durable.max(seq),
                    Err(e) if fence_of(&e).is_some() => {
                        info!(group_id = %entry.paths.group_id, error = %e,
                              "a write durable after this process was fenced is not acknowledged");
                        inner.fail_upto(seq);
                    }
                    Err(e) => {
                        error!(group_id = %entry.paths.group_id, error = %e,
                               "the commit journal failed; the log will be reopened");
                        inner.fail_upto(seq);
                    }
                }
                judged(inner.settled(seq).expect("settled by the journal round"))
            };
            if result.is_ok() {
                snapshot_if_due(entry, shared, None);
            }
            return result;
        }
        if let Some(r) = entry.inner().settled(seq) {
            return judged(r);
        }
        // Per-file syncs keep the exclusive turn into the snapshot task:
        // no other fsync of this log may run before the snapshot is in.
        let (_shared_turn, exclusive_turn) = if shared.shares_turns() {
            (Some(entry.sync_lock.clone().read_owned().await), None)
        } else {
            (None, Some(entry.sync_lock.clone().write_owned().await))
        };
        if let Some(r) = entry.inner().settled(seq) {
            return judged(r);
        }
        shared.sync_turn(&entry).await;
        let result = judged(
            entry
                .inner()
                .settled(seq)
                .expect("settled by the sync turn"),
        );
        if result.is_ok() {
            snapshot_if_due(entry, shared, exclusive_turn);
        }
        result
    }
}

/// Waits for an append that was ordered (or reports why it was not). An
/// append this process made after it was fenced is refused as written by
/// a broker that no longer owns the log.
pub(super) async fn durable(
    ordered: Result<Option<Pending>, StoreError>,
) -> Result<(), StoreError> {
    let Some(pending) = ordered? else {
        return Ok(());
    };
    let key = pending.entry.paths.group_id.clone();
    pending.wait().await.map_err(|e| match fence_of(&e) {
        Some(fence) => StoreError::Fenced {
            key,
            by_broker: fence.by_broker,
            by_version: fence.at_version,
            ours: 0,
        },
        None => StoreError::Io(e),
    })
}
