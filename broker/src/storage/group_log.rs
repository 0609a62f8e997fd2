//! The durable state of consumer groups: one log per group on the shared
//! volume, `<data>/__cluster/__consumer_offsets/<safe_file_name(id)>.log`.
//!
//! A log is a sequence of records (format: [`records`]): a header, then
//! commits, offset deletes, group metadata, owner claims and snapshots.
//!
//! Once [`SNAPSHOT_EVERY`] delta records (commits, deletes, metadata,
//! claims) have been appended since the last snapshot, and they take at
//! least four times as many bytes as that snapshot, the store writes a new
//! file holding Header + Snapshot (tmp file, fsync, rename over the log,
//! then a sync of the folder), which drops everything below it: a load
//! replays one snapshot and deltas of about four times its size (for small
//! groups, [`SNAPSHOT_EVERY`]), so replay stays proportional to the group's
//! state and snapshots add at most a quarter to what the log writes.
//!
//! A load verifies every record's length and checksum, stops at the first
//! torn or corrupt one, truncates the file there (durably) and reports the
//! damage. The header carries the real group id: a log whose header names
//! another group is refused, and [`GroupLogStore::list_groups`] reads the ids
//! from the headers, since long ids are hashed into file names.
//!
//! Writes are ordered when called: the record is appended (without fsync)
//! before the call returns, so records of one group land in call order.
//! The returned future resolves once the write is durable. By default
//! ([`GroupLogSync::Volume`]) one `syncfs` round makes the appends to every
//! group log durable at once ([`super::volume_sync`]); with
//! [`GroupLogSync::PerFile`] each log is fdatasynced, and appends to one
//! group waiting at the same time share one fsync. The task that holds a
//! group's sync turn writes the snapshot when one is due, after answering.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::future::Future;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tracing::{error, info, warn};

use super::journal::{self, EntryRef, Journal, JournalEntry, ReplayLock};
use super::log::sync_dir;
use super::names::safe_file_name;
use super::volume_sync::VolumeSync;
use crate::group::core::{GroupMetadataRecord, OffsetAndMetadata};
use crate::group::store::{Durable, GroupStore, StoreError, StoredGroup};
pub use records::FORMAT_VERSION;
use records::{
    check_header, encode, encode_commit, header_record, invalid_data, new_log_id, read_frame,
    ClaimBody, PartitionEntry, Record, Table, FRAME_HEADER,
};

mod records;

/// Delta records between two snapshots, at least.
pub const SNAPSHOT_EVERY: usize = 64;
/// Bytes of delta records between two snapshots, at least, as a multiple
/// of the last snapshot's size: snapshots then add at most 1/4 to what the
/// log writes, and a load reads at most 5 snapshots' worth.
const SNAPSHOT_BYTES_FACTOR: u64 = 4;
/// Group logs kept open (file handle and materialised table) at once by
/// default. Beyond it, the least recently used idle ones are closed; they
/// reopen (rescanning the file) on their next use. Without a bound every
/// resident group holds a file descriptor, and 100,000 groups exceed any
/// usual `ulimit -n`.
pub const DEFAULT_MAX_OPEN_LOGS: usize = 4096;

const LOG_SUFFIX: &str = ".log";
/// Largest header record `list_groups` accepts (ids are short).
const MAX_HEADER_BYTES: u32 = 1 << 20;

// ---------------------------------------------------------------- public types

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

/// A group's state as read from its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedGroup {
    pub metadata: Option<GroupMetadataRecord>,
    /// Sorted by topic, then partition.
    pub offsets: Vec<(String, i32, OffsetAndMetadata)>,
    /// Set when the log had a torn or corrupt tail, now cut off.
    pub damage: Option<LogDamage>,
    /// Snapshot records replayed (0 or 1 for logs this store wrote).
    pub replayed_snapshots: usize,
    /// Delta records replayed (at most [`SNAPSHOT_EVERY`] for logs this store wrote).
    pub replayed_deltas: usize,
}

/// A torn or corrupt tail found (and truncated) when a log was opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogDamage {
    /// Byte position of the first bad record: the new length of the file.
    pub position: u64,
    /// Bytes cut off.
    pub truncated_bytes: u64,
    pub reason: String,
}

/// The group logs under `<data>/__cluster/__consumer_offsets`, with the open
/// logs of the groups this broker writes.
pub struct GroupLogStore {
    root: PathBuf,
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    shared: Arc<Shared>,
    /// Most entries (open logs) cached before idle ones are closed.
    max_open: usize,
    /// The broker claiming the logs it writes (fencing); `None` in tools
    /// and tests that read logs.
    owner: Option<Owner>,
    /// Makes snapshot tmp files unique to this store: two brokers must
    /// never write one another's.
    tmp_tag: String,
}

#[derive(Default)]
struct Scan {
    table: Table,
    /// The header's log id (0 for logs written before it existed).
    log_id: u64,
    /// Checksum of the last intact record.
    last_crc: u32,
    /// End of the last intact record.
    valid_end: u64,
    snapshots: usize,
    deltas: usize,
    since_snapshot: SinceSnapshot,
    damage: Option<(u64, String)>,
}

/// What was appended since the last snapshot, to decide the next one.
#[derive(Clone, Copy, Debug, Default)]
struct SinceSnapshot {
    /// Size of the last snapshot record (0: none yet).
    snapshot_bytes: u64,
    deltas: usize,
    delta_bytes: u64,
}

impl SinceSnapshot {
    fn delta(&mut self, bytes: usize) {
        self.deltas += 1;
        self.delta_bytes += bytes as u64;
    }

    fn due(&self) -> bool {
        self.deltas >= SNAPSHOT_EVERY
            && self.delta_bytes >= SNAPSHOT_BYTES_FACTOR * self.snapshot_bytes
    }
}

/// Replays a whole log. Errors only for a log that is not this group's (or
/// not this format); damage is returned in the scan.
fn scan(data: &[u8], group_id: &str) -> io::Result<Scan> {
    let mut s = Scan::default();
    let mut pos = 0usize;
    while pos < data.len() {
        let (record, size) = match read_frame(&data[pos..]) {
            Ok(r) => r,
            Err(reason) => {
                s.damage = Some((pos as u64, reason));
                break;
            }
        };
        match (&record, pos) {
            (Record::Header(h), 0) => {
                check_header(h, group_id)?;
                s.log_id = h.log_id;
            }
            (_, 0) => {
                return Err(invalid_data(format!(
                    "group log of {group_id:?} does not start with a header"
                )))
            }
            (Record::Header(_), _) => {
                s.damage = Some((pos as u64, "header record inside the log".to_string()));
                break;
            }
            (Record::Snapshot(_), _) => {
                s.snapshots += 1;
                s.since_snapshot = SinceSnapshot {
                    snapshot_bytes: size as u64,
                    ..SinceSnapshot::default()
                };
            }
            _ => {
                s.deltas += 1;
                s.since_snapshot.delta(size);
            }
        }
        s.table.apply(record);
        s.last_crc = frame_crc(&data[pos..]);
        pos += size;
    }
    s.valid_end = pos as u64;
    Ok(s)
}

// ---------------------------------------------------------------- files

#[derive(Clone, Debug)]
struct LogPaths {
    group_id: String,
    root: PathBuf,
    path: PathBuf,
    tmp: PathBuf,
}

/// A log open for appends, with its materialised state (used to write snapshots).
#[derive(Debug)]
struct OpenLog {
    file: Arc<File>,
    /// The id in the file's header, named by journal entries.
    log_id: u64,
    /// Checksum of the last record written: a journal entry names the
    /// record it follows, so replay never puts it after another one.
    last_crc: u32,
    /// End of the last complete record: where the next one goes.
    len: u64,
    /// (device, inode) of the file, to notice a log replaced underneath us.
    identity: (u64, u64),
    since_snapshot: SinceSnapshot,
    table: Table,
    /// The file was created or renamed into place: the folder must be
    /// fsynced before anything in it counts as durable.
    dir_dirty: bool,
    /// Opened for reads only (the volume is read-only): served, never
    /// appended to; the next write reopens it read-write.
    read_only: bool,
}

impl OpenLog {
    /// Whether the file at `path` is still the one we write, as we left it.
    fn is_current(&self, paths: &LogPaths) -> io::Result<bool> {
        // Our file, still linked (a log replaced or removed by anyone is
        // unlinked) and as long as we left it: no path lookup needed.
        if let Ok(m) = self.file.metadata() {
            if m.nlink() > 0 && m.len() == self.len {
                return Ok(true);
            }
        }
        match fs::metadata(&paths.path) {
            Ok(m) if (m.dev(), m.ino()) == self.identity && m.len() == self.len => Ok(true),
            Ok(m) => {
                warn!(group_id = %paths.group_id, expected_len = self.len, len = m.len(),
                      "group log changed on disk since this broker opened it; reopening");
                Ok(false)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                warn!(group_id = %paths.group_id,
                      "group log was removed since this broker opened it; reopening");
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

/// The checksum in a frame's header: journal entries name the record
/// before them by it.
fn frame_crc(frame: &[u8]) -> u32 {
    u32::from_be_bytes(frame[4..8].try_into().expect("a whole frame"))
}

fn identity(file: &File) -> io::Result<(u64, u64)> {
    let m = file.metadata()?;
    Ok((m.dev(), m.ino()))
}

// ---------------------------------------------------------------- fencing

/// The broker writing through a store, for owner claims (see
/// docs/design/fencing.md).
#[derive(Clone)]
pub struct Owner {
    pub broker: i32,
    /// The assignment version the broker follows now.
    pub version: Arc<dyn Fn() -> u64 + Send + Sync>,
}

/// An exclusive `flock` on an open log, held while its length is checked
/// and written; released on drop. On a file system without working locks
/// it degrades (once warned) to the claim check alone.
struct FileLock(Option<Arc<File>>);

impl FileLock {
    fn acquire(file: &Arc<File>) -> io::Result<FileLock> {
        match file.lock() {
            Ok(()) => Ok(FileLock(Some(file.clone()))),
            Err(e) if e.kind() == io::ErrorKind::Unsupported || e.raw_os_error() == Some(37) => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    warn!(error = %e, "file locks do not work on the data volume; group logs are \
                          fenced by owner claims alone (see docs/design/fencing.md)")
                });
                Ok(FileLock(None))
            }
            Err(e) => Err(e),
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if let Some(f) = &self.0 {
            let _ = f.unlock();
        }
    }
}

/// What an open replayed.
#[derive(Debug, Default)]
struct Replay {
    damage: Option<LogDamage>,
    snapshots: usize,
    deltas: usize,
}

/// An opened log, its replay, and the file lock held on it.
type Opened = (OpenLog, Replay, FileLock);

/// Opens (recovering) the log; with `create`, creates a missing one.
/// `None`: no log and `create` is false. Creating does not fsync: the new
/// log is marked `dir_dirty` and the next group commit makes it durable.
/// Returns with the log's file lock held, taken before the file is read.
fn open_log(p: &LogPaths, create: bool, shared: &Shared) -> io::Result<Option<Opened>> {
    let mut attempts = 0;
    let mut read_only = false;
    let (file, guard) = loop {
        let opened = match OpenOptions::new().read(true).write(true).open(&p.path) {
            // A read-only volume still serves reads (`flock` works on a
            // descriptor opened for reading).
            Err(e) if super::is_read_only(&e) => {
                read_only = true;
                File::open(&p.path)
            }
            opened => opened,
        };
        let file = match opened {
            Ok(f) => Arc::new(f),
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                match create_log(p) {
                    Ok(opened) => return Ok(Some(opened)),
                    // Created by someone else meanwhile: open theirs.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let guard = FileLock::acquire(&file)?;
        // Replaced by a snapshot (or removed) between the open and the lock:
        // open whatever is at the path now.
        let here = fs::metadata(&p.path).map(|m| (m.dev(), m.ino())).ok();
        if here == Some(identity(&file)?) {
            break (file, guard);
        }
        attempts += 1;
        if attempts > 100 {
            return Err(io::Error::other(
                "group log keeps being replaced while opened",
            ));
        }
    };
    let mut data = Vec::new();
    (&*file).read_to_end(&mut data)?;
    let scan = scan(&data, &p.group_id)?;
    // A read-only log is never appended to: its `len` is the file's, so
    // a damaged tail left in place does not read as written elsewhere.
    let mut len = if read_only {
        data.len() as u64
    } else {
        scan.valid_end
    };
    let damage = match scan.damage {
        None => None,
        Some((position, reason)) if read_only => {
            let truncated_bytes = data.len() as u64 - position;
            warn!(group_id = %p.group_id, position, damaged_bytes = truncated_bytes, %reason,
                  "group log damaged; the volume is read-only, so the damage stays in place \
                   and only the records before it are served");
            Some(LogDamage {
                position,
                truncated_bytes,
                reason,
            })
        }
        Some((position, reason)) => {
            let truncated_bytes = data.len() as u64 - position;
            warn!(group_id = %p.group_id, position, truncated_bytes, %reason,
                  "group log damaged: truncated after the last intact record");
            file.set_len(position)?;
            file.sync_all()?;
            shared.synced();
            Some(LogDamage {
                position,
                truncated_bytes,
                reason,
            })
        }
    };
    let mut log_id = scan.log_id;
    let mut last_crc = scan.last_crc;
    let mut rewritten = false;
    if len == 0 && !read_only {
        // Not even the header was intact: start the log again (made durable
        // by the next sync round, like a new log).
        log_id = new_log_id();
        let header = encode(&header_record(&p.group_id, log_id))?;
        file.write_all_at(&header, 0)?;
        len = header.len() as u64;
        last_crc = frame_crc(&header);
        rewritten = true;
    }
    let log = OpenLog {
        identity: identity(&file)?,
        file,
        len,
        since_snapshot: scan.since_snapshot,
        table: scan.table,
        dir_dirty: rewritten,
        read_only,
        log_id,
        last_crc,
    };
    let replay = Replay {
        damage,
        snapshots: scan.snapshots,
        deltas: scan.deltas,
    };
    Ok(Some((log, replay, guard)))
}

/// Creates a log holding only its header. A crash before the header is
/// complete leaves a torn header, which the next open starts over.
fn create_log(p: &LogPaths) -> io::Result<Opened> {
    let file = Arc::new(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&p.path)?,
    );
    let log_id = new_log_id();
    let header = encode(&header_record(&p.group_id, log_id))?;
    let written = FileLock::acquire(&file).and_then(|guard| {
        file.write_all_at(&header, 0)?;
        Ok((identity(&file)?, guard))
    });
    match written {
        Ok((identity, guard)) => Ok((
            OpenLog {
                file,
                len: header.len() as u64,
                identity,
                since_snapshot: SinceSnapshot::default(),
                table: Table::default(),
                dir_dirty: true,
                read_only: false,
                log_id,
                last_crc: frame_crc(&header),
            },
            Replay::default(),
            guard,
        )),
        Err(e) => {
            let _ = fs::remove_file(&p.path);
            Err(e)
        }
    }
}

/// Writes and fsyncs the tmp file of a snapshot.
fn write_tmp(p: &LogPaths, bytes: &[u8], shared: &Shared) -> io::Result<File> {
    let written = (|| {
        let tmp = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p.tmp)?;
        tmp.write_all_at(bytes, 0)?;
        tmp.sync_data()?;
        shared.synced();
        Ok(tmp)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&p.tmp);
    }
    written
}

/// Number of whole frames in `buf` (records appended while a snapshot was
/// being written).
fn count_frames(mut buf: &[u8]) -> usize {
    let mut n = 0;
    while buf.len() >= FRAME_HEADER {
        let len = u32::from_be_bytes(buf[0..4].try_into().expect("4 bytes")) as usize;
        buf = &buf[(FRAME_HEADER + len).min(buf.len())..];
        n += 1;
    }
    n
}

/// The group id in a log's header; `None` if the file is gone.
fn read_header(path: &Path) -> io::Result<Option<String>> {
    match File::open(path) {
        Ok(f) => Ok(Some(read_header_of(&f)?.0)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The group id and log id in the header of an open log.
fn read_header_of(mut file: &File) -> io::Result<(String, u64)> {
    let mut frame = [0u8; FRAME_HEADER];
    file.read_exact(&mut frame)?;
    let len = u32::from_be_bytes(frame[0..4].try_into().expect("4 bytes"));
    if len > MAX_HEADER_BYTES {
        return Err(invalid_data(format!("header record of {len} bytes")));
    }
    let mut buf = frame.to_vec();
    buf.resize(FRAME_HEADER + len as usize, 0);
    file.read_exact(&mut buf[FRAME_HEADER..])?;
    match read_frame(&buf).map_err(invalid_data)? {
        (Record::Header(h), _) if h.version == FORMAT_VERSION => Ok((h.group_id, h.log_id)),
        (Record::Header(h), _) => Err(invalid_data(format!("format version {}", h.version))),
        _ => Err(invalid_data("no header record".to_string())),
    }
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(io::Error::other)?
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent, so a panic while
    // holding the lock does not make the data unusable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

// ---------------------------------------------------------------- entries

/// State shared by the store and the durability futures it hands out.
#[derive(Default)]
struct Shared {
    /// Sync rounds over the whole volume ([`GroupLogSync::Volume`]); `None`
    /// syncs each log file by itself. The journal mode keeps them for what
    /// the journal does not cover: new files, renames, removals.
    volume: Option<VolumeSync>,
    /// The commit journal ([`GroupLogSync::Journal`]).
    journal: Option<Journal>,
    fsyncs: AtomicU64,
    snapshots: AtomicU64,
    /// Use counter: entries remember when they were last used.
    ticks: AtomicU64,
    #[cfg(test)]
    faults: Faults,
}

impl Shared {
    fn synced(&self) {
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
    }

    /// Makes every append made so far to `entry` durable (or failed): one
    /// sync turn. The caller holds the entry's sync lock.
    async fn sync_turn(self: &Arc<Self>, entry: &Entry) {
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
        #[cfg(test)]
        if self.faults.fsync.swap(false, Ordering::AcqRel) {
            entry.inner().fail_upto(target);
            return;
        }
        let result = match &self.volume {
            // One round covers every file, and the folder, at once.
            Some(volume) => volume.sync().await,
            None => {
                let root = entry.paths.root.clone();
                let shared = self.clone();
                blocking(move || {
                    for f in &files {
                        f.sync_data()?;
                        shared.synced();
                    }
                    if dir {
                        sync_dir(&root)?;
                        shared.synced();
                    }
                    Ok(())
                })
                .await
            }
        };
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

#[cfg(test)]
#[derive(Default)]
struct Faults {
    /// The next record write stops halfway and fails.
    short_write: std::sync::atomic::AtomicBool,
    /// The next group-commit fsync fails.
    fsync: std::sync::atomic::AtomicBool,
    /// Runs once a snapshot's tmp file is written, before it replaces the log.
    #[allow(clippy::type_complexity)]
    after_snapshot_tmp: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

/// One group's log as this process sees it. The store caches at most one
/// live entry per group, so every write to a log goes through one `inner`.
struct Entry {
    paths: LogPaths,
    inner: Mutex<Inner>,
    /// Sync turns. With volume rounds, waiters share it (each joins the
    /// rounds, which cover every log); with per-file syncs, one fsync at a
    /// time, and appends waiting meanwhile share the next one. A snapshot
    /// takes it exclusively, from before it is taken until it is synced.
    sync_lock: Arc<tokio::sync::RwLock<()>>,
    /// A snapshot task is spawned or running.
    compacting: AtomicBool,
    /// `Shared::ticks` at the last use, for closing idle logs.
    last_used: AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    /// The open log; `None` when closed (reopened from disk on next use).
    log: Option<OpenLog>,
    /// Files replaced by a reopen while appends to them were not yet
    /// durable: the next group commit fsyncs them too.
    retired: Vec<Arc<File>>,
    /// Sequence numbers of appends: the last one, the last durable one, and
    /// the last one a failed fsync may have lost (those fail even if a
    /// later fsync succeeds).
    appended: u64,
    durable: u64,
    failed_upto: u64,
    /// A write could not be undone: reopen (rescanning) before the next use.
    reopen: bool,
    /// An fsync failed: the page cache can no longer be trusted, so reopen
    /// (and fsync the folder again) before the next use.
    failed: bool,
    /// Dropped from the cache: users look the group up again.
    closed: bool,
}

impl Inner {
    fn settled(&self, seq: u64) -> Option<io::Result<()>> {
        if seq <= self.failed_upto {
            Some(Err(io::Error::other(
                "an fsync of the group log failed; the write may be lost",
            )))
        } else if seq <= self.durable {
            Some(Ok(()))
        } else {
            None
        }
    }

    /// Closes the open log, keeping its file for the next fsync if appends
    /// to it are still waiting.
    fn retire_log(&mut self) {
        if let Some(log) = self.log.take() {
            if self.appended > self.durable {
                self.retired.push(log.file);
            }
        }
    }

    fn fail_upto(&mut self, seq: u64) {
        self.failed_upto = self.failed_upto.max(seq);
        self.failed = true;
    }
}

impl Entry {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Makes sure `inner.log` is the current log (opening or reopening it),
    /// and returns with its file lock held (`None` when there is no log).
    fn ensure_open(
        &self,
        inner: &mut Inner,
        create: bool,
        shared: &Shared,
    ) -> io::Result<Option<FileLock>> {
        let failed = std::mem::take(&mut inner.failed);
        let read_only = inner.log.as_ref().is_some_and(|log| log.read_only);
        if std::mem::take(&mut inner.reopen) || failed || read_only {
            inner.retire_log();
        }
        if let Some(log) = &inner.log {
            // Checked under the lock: nobody can append between the check
            // and our write.
            let guard = FileLock::acquire(&log.file)?;
            if log.is_current(&self.paths)? {
                return Ok(Some(guard));
            }
            drop(guard);
            inner.retire_log();
        }
        match open_log(&self.paths, create, shared) {
            Ok(opened) => {
                let mut held = None;
                inner.log = opened.map(|(mut log, _, guard)| {
                    log.dir_dirty |= failed;
                    held = Some(guard);
                    log
                });
                Ok(held)
            }
            Err(e) => {
                inner.failed |= failed;
                Err(e)
            }
        }
    }
}

/// An append that has been written and waits to be made durable.
struct Pending {
    entry: Arc<Entry>,
    shared: Arc<Shared>,
    seq: u64,
    /// The append's journal round, when the journal makes it durable.
    journaled: Option<journal::Durable>,
}

impl Pending {
    /// Returns once the append is durable. One sync turn covers every
    /// append written before it started (group commit). When a snapshot is
    /// due, the turn is kept past the answer: the snapshot is written and
    /// synced before any later append to this log becomes durable, so no
    /// record is acknowledged while it exists only in an unsynced copy.
    async fn wait(self) -> io::Result<()> {
        let Pending {
            entry,
            shared,
            seq,
            journaled,
        } = self;
        if let Some(journaled) = journaled {
            let journaled = journaled.await;
            #[cfg(test)]
            let journaled = match shared.faults.fsync.swap(false, Ordering::AcqRel) {
                true => Err(io::Error::other("injected journal failure")),
                false => journaled,
            };
            let result = {
                let mut inner = entry.inner();
                match journaled {
                    // Journal rounds complete in order, so every earlier
                    // append of this log is durable too.
                    Ok(()) => inner.durable = inner.durable.max(seq),
                    Err(e) => {
                        error!(group_id = %entry.paths.group_id, error = %e,
                               "the commit journal failed; the log will be reopened");
                        inner.fail_upto(seq);
                    }
                }
                inner.settled(seq).expect("settled by the journal round")
            };
            if result.is_ok() {
                snapshot_if_due(entry, shared, None);
            }
            return result;
        }
        if let Some(r) = entry.inner().settled(seq) {
            return r;
        }
        // Per-file syncs keep the exclusive turn into the snapshot task:
        // no other fsync of this log may run before the snapshot is in.
        let (_shared_turn, exclusive_turn) = if shared.volume.is_some() {
            (Some(entry.sync_lock.clone().read_owned().await), None)
        } else {
            (None, Some(entry.sync_lock.clone().write_owned().await))
        };
        if let Some(r) = entry.inner().settled(seq) {
            return r;
        }
        shared.sync_turn(&entry).await;
        let result = entry
            .inner()
            .settled(seq)
            .expect("settled by the sync turn");
        if result.is_ok() {
            snapshot_if_due(entry, shared, exclusive_turn);
        }
        result
    }
}

/// Starts a snapshot of the log if one is due and none is running. It holds
/// the log's sync turn exclusively (`turn`, when the caller holds it
/// already) until the new file is in place; the swap fsyncs the new file
/// and the folder itself, so no sync round has to follow it.
fn snapshot_if_due(
    entry: Arc<Entry>,
    shared: Arc<Shared>,
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

fn compaction_due(entry: &Entry) -> bool {
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
async fn compact_if_due(entry: &Arc<Entry>, shared: &Arc<Shared>) {
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
    #[cfg(test)]
    if let Some(hook) = lock(&shared.faults.after_snapshot_tmp).take() {
        hook();
    }
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
fn swap_in_snapshot(
    entry: &Entry,
    shared: &Shared,
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
        let _guard = FileLock::acquire(old)?;
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
    shared.snapshots.fetch_add(1, Ordering::Relaxed);
    Ok(true)
}

// ---------------------------------------------------------------- the store

impl GroupLogStore {
    /// The store under `data_dir/__cluster/__consumer_offsets` (created).
    pub fn new(data_dir: &Path) -> io::Result<GroupLogStore> {
        let root = data_dir.join("__cluster").join("__consumer_offsets");
        fs::create_dir_all(&root)?;
        let tmp_tag = format!(
            "{}-{}",
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let shared = Shared {
            volume: Some(VolumeSync::new(&root)?),
            journal: Some(Journal::new(&root, &tmp_tag, journal::DEFAULT_CAPACITY)?),
            ..Shared::default()
        };
        let store = GroupLogStore {
            root,
            entries: Mutex::new(HashMap::new()),
            shared: Arc::new(shared),
            max_open: DEFAULT_MAX_OPEN_LOGS,
            owner: None,
            tmp_tag,
        };
        store.replay_journals()?;
        Ok(store)
    }

    /// How appends are made durable; [`GroupLogSync::Volume`] by default.
    pub fn with_sync(mut self, sync: GroupLogSync) -> io::Result<Self> {
        let shared = Arc::get_mut(&mut self.shared).expect("configured before use");
        if sync != GroupLogSync::PerFile && shared.volume.is_none() {
            shared.volume = Some(VolumeSync::new(&self.root)?);
        }
        match sync {
            GroupLogSync::Journal if shared.journal.is_none() => {
                shared.journal = Some(Journal::new(
                    &self.root,
                    &self.tmp_tag,
                    journal::DEFAULT_CAPACITY,
                )?);
            }
            GroupLogSync::Journal => {}
            GroupLogSync::Volume => shared.journal = None,
            GroupLogSync::PerFile => {
                shared.volume = None;
                shared.journal = None;
            }
        }
        Ok(self)
    }

    /// Keeps at most about `n` logs open (at least 1); see [`DEFAULT_MAX_OPEN_LOGS`].
    pub fn with_max_open_logs(mut self, n: usize) -> Self {
        self.max_open = n.max(1);
        self
    }

    /// Logs currently cached (open or being written), for tests and metrics.
    pub fn open_logs(&self) -> usize {
        lock(&self.entries).len()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the log of `group_id` lives (whether or not it exists).
    pub fn log_path(&self, group_id: &str) -> PathBuf {
        self.paths(group_id).path
    }

    /// Fsyncs issued so far (files and folder), for tests and metrics.
    pub fn fsync_count(&self) -> u64 {
        let rounds = self.shared.volume.as_ref().map_or(0, VolumeSync::syncs)
            + self.shared.journal.as_ref().map_or(0, Journal::rounds);
        self.shared.fsyncs.load(Ordering::Relaxed) + rounds
    }

    /// Snapshots written so far.
    pub fn snapshot_count(&self) -> u64 {
        self.shared.snapshots.load(Ordering::Relaxed)
    }

    fn paths(&self, group_id: &str) -> LogPaths {
        let name = safe_file_name(group_id.as_bytes());
        LogPaths {
            group_id: group_id.to_string(),
            root: self.root.clone(),
            path: self.root.join(format!("{name}{LOG_SUFFIX}")),
            tmp: self
                .root
                .join(format!("{name}{LOG_SUFFIX}.tmp.{}", self.tmp_tag)),
        }
    }

    /// Runs `f` on the group's live entry, locked.
    fn with_entry<R>(&self, group_id: &str, f: impl FnOnce(&Arc<Entry>, &mut Inner) -> R) -> R {
        loop {
            let entry = {
                let mut entries = lock(&self.entries);
                let entry = match entries.get(group_id) {
                    Some(e) => e.clone(),
                    None => {
                        if entries.len() >= self.max_open {
                            evict_idle(&mut entries, self.max_open - self.max_open / 4);
                        }
                        let e = Arc::new(Entry {
                            paths: self.paths(group_id),
                            inner: Mutex::new(Inner::default()),
                            sync_lock: Arc::default(),
                            compacting: AtomicBool::new(false),
                            last_used: AtomicU64::new(0),
                        });
                        entries.insert(group_id.to_string(), e.clone());
                        e
                    }
                };
                let tick = self.shared.ticks.fetch_add(1, Ordering::Relaxed);
                entry.last_used.store(tick, Ordering::Relaxed);
                entry
            };
            let mut inner = entry.inner();
            if !inner.closed {
                return f(&entry, &mut inner);
            }
            // Closed between the lookup and the lock: look it up again.
        }
    }

    /// Reads the group's log from disk (blocking; closing any cached handle
    /// first), recovering a damaged tail. `None` when the group has no log.
    pub fn load(&self, group_id: &str) -> Result<Option<LoadedGroup>, StoreError> {
        let loaded = self.with_entry(group_id, |entry, inner| {
            inner.retire_log();
            inner.reopen = false;
            let failed = std::mem::take(&mut inner.failed);
            let opened = match open_log(&entry.paths, false, &self.shared) {
                Ok(opened) => opened,
                Err(e) => {
                    inner.failed |= failed;
                    return Err(e.into());
                }
            };
            let opened = match opened {
                Some(opened) if self.taken_over(&opened.0) => {
                    // Another broker wrote this log last: if it stopped
                    // before its writes reached the log, its journal holds
                    // them. Put them back before anything of ours follows
                    // (read after the log, which on a shared file system
                    // waits for the other writer to be gone or flushed).
                    drop(opened);
                    let touched = self.replay_journals()?;
                    if touched.contains(group_id) {
                        info!(
                            group_id,
                            "group log completed from another broker's journal"
                        );
                    }
                    open_log(&entry.paths, false, &self.shared).inspect_err(|_| {
                        inner.failed |= failed;
                    })?
                }
                opened => opened,
            };
            let opened = match opened {
                Some((mut log, replay, guard)) => {
                    let mut journal = Vec::new();
                    if let Err(e) = self.claim(group_id, &mut log, &mut journal) {
                        inner.failed |= failed;
                        return Err(e);
                    }
                    if !journal.is_empty() && !log.dir_dirty && !failed {
                        // Nobody waits on the claim: the appends after it
                        // are journaled after it, in the same or a later
                        // round.
                        drop(self.journal_append(journal.iter().map(JournalEntry::as_ref)));
                    }
                    drop(guard);
                    Some((log, replay))
                }
                None => None,
            };
            Ok(opened.map(|(mut log, replay)| {
                log.dir_dirty |= failed;
                let loaded = LoadedGroup {
                    metadata: log.table.metadata.clone(),
                    offsets: log.table.offsets(),
                    damage: replay.damage,
                    replayed_snapshots: replay.snapshots,
                    replayed_deltas: replay.deltas,
                };
                inner.log = Some(log);
                loaded
            }))
        })?;
        if loaded.is_none() {
            self.close(group_id);
        }
        Ok(loaded)
    }

    /// Appends committed offsets now (creating the log if needed); the
    /// future resolves once they are durable.
    pub fn commit_offsets<T: AsRef<str>>(
        &self,
        group_id: &str,
        offsets: &[(T, i32, OffsetAndMetadata)],
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let ordered = if offsets.is_empty() {
            Ok(None)
        } else {
            encode_commit(offsets)
                .map_err(StoreError::from)
                .and_then(|frame| {
                    self.append(group_id, &frame, true, |table| {
                        for (t, p, o) in offsets {
                            table.commit(t.as_ref(), *p, o.clone());
                        }
                    })
                })
        };
        durable(ordered)
    }

    /// Appends the removal of offsets now (nothing to do without a log);
    /// the future resolves once it is durable.
    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let ordered = if partitions.is_empty() {
            Ok(None)
        } else {
            let record = Record::Delete(
                partitions
                    .iter()
                    .map(|(topic, partition)| PartitionEntry {
                        topic: topic.clone(),
                        partition: *partition,
                    })
                    .collect(),
            );
            self.append_record(group_id, record, false)
        };
        durable(ordered)
    }

    /// Appends the group's metadata record now, replacing the previous one
    /// (`None` clears it; clearing a group without a log does nothing); the
    /// future resolves once it is durable.
    pub fn write_metadata(
        &self,
        group_id: &str,
        record: Option<&GroupMetadataRecord>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let create = record.is_some();
        let ordered =
            self.append_record(group_id, Record::Metadata(record.map(Into::into)), create);
        durable(ordered)
    }

    /// Removes the group's log now (`Ok` if there is none); the future
    /// resolves once the removal is durable.
    pub fn delete_group(
        &self,
        group_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let removed = self.with_entry(group_id, |entry, inner| {
            inner.log = None;
            inner.retired.clear();
            inner.reopen = false;
            inner.failed = false;
            // Appends still waiting went to a log that no longer exists.
            inner.durable = inner.appended;
            remove_if_exists(&entry.paths.tmp)?;
            remove_if_exists(&entry.paths.path)
        });
        self.close(group_id);
        let root = self.root.clone();
        let shared = self.shared.clone();
        let round = shared.volume.as_ref().map(VolumeSync::sync);
        async move {
            removed?;
            match round {
                Some(round) => round.await?,
                None => {
                    blocking(move || {
                        sync_dir(&root)?;
                        shared.synced();
                        Ok(())
                    })
                    .await?
                }
            }
            Ok(())
        }
    }

    /// The real ids of every group with a log, sorted (blocking). Reads each
    /// log's header; logs that cannot be read or whose header does not
    /// match their file name are skipped with a warning.
    pub fn list_groups(&self) -> io::Result<Vec<String>> {
        let mut groups = Vec::new();
        for dirent in fs::read_dir(&self.root)? {
            let dirent = dirent?;
            let file_name = dirent.file_name();
            let Some(name) = file_name.to_str() else {
                continue;
            };
            let Some(stem) = name.strip_suffix(LOG_SUFFIX) else {
                continue;
            };
            match read_header(&dirent.path()) {
                Ok(Some(id)) if safe_file_name(id.as_bytes()) == stem => groups.push(id),
                Ok(Some(id)) => warn!(file = name, group_id = %id,
                                      "group log names another group in its header; ignored"),
                Ok(None) => {}
                Err(e) => warn!(file = name, error = %e, "unreadable group log header; ignored"),
            }
        }
        groups.sort();
        Ok(groups)
    }

    /// Whether the group's open log was appended to, replaced or removed
    /// by another writer since this store last read or wrote it (one
    /// `fstat`). A log that is not open here (never used, or closed as
    /// least recently used) reads as unchanged.
    pub fn written_elsewhere(&self, group_id: &str) -> bool {
        let Some(entry) = lock(&self.entries).get(group_id).cloned() else {
            return false;
        };
        let inner = entry.inner();
        inner.log.as_ref().is_some_and(
            |log| !matches!(log.file.metadata(), Ok(m) if m.nlink() > 0 && m.len() == log.len),
        )
    }

    /// Drops the cached handle of a group (unloaded or moved away): the next
    /// use reopens the log from disk. Appends already made still become
    /// durable.
    pub fn close(&self, group_id: &str) {
        let mut entries = lock(&self.entries);
        if let Some(entry) = entries.remove(group_id) {
            let mut inner = entry.inner();
            inner.retire_log();
            inner.closed = true;
        }
    }

    /// Under the log's file lock: refuses ([`Fenced`]) when another broker
    /// claimed the log under an assignment at least as new as ours, else
    /// appends our claim if the log's last claim is not ours (and adds the
    /// write to `journal`). Returns the broker the claim was taken from, if
    /// any. No-op without an owner.
    fn claim(
        &self,
        group_id: &str,
        log: &mut OpenLog,
        journal: &mut Vec<JournalEntry>,
    ) -> Result<Option<i32>, StoreError> {
        let Some(owner) = &self.owner else {
            return Ok(None);
        };
        if log.read_only {
            // Nothing can be written, so there is nothing to fence; the
            // first write reopens the log read-write and claims it then.
            return Ok(None);
        }
        let ours = (owner.version)();
        let previous = log.table.claim;
        match previous {
            Some(c) if c.broker == owner.broker => return Ok(None),
            Some(c) if c.assignment_version >= ours => {
                return Err(StoreError::Fenced {
                    group_id: group_id.to_string(),
                    by_broker: c.broker,
                    by_version: c.assignment_version,
                    ours,
                })
            }
            _ => {}
        }
        let claim = ClaimBody {
            broker: owner.broker,
            assignment_version: ours,
        };
        let frame = encode(&Record::Claim(claim))?;
        if let Err(e) = log.file.write_all_at(&frame, log.len) {
            let _ = log.file.set_len(log.len);
            return Err(e.into());
        }
        if self.shared.journal.is_some() {
            journal.push(JournalEntry {
                group_id: group_id.to_string(),
                log_id: log.log_id,
                position: log.len,
                prev_crc: log.last_crc,
                bytes: frame.clone(),
            });
        }
        log.last_crc = frame_crc(&frame);
        log.len += frame.len() as u64;
        log.since_snapshot.delta(frame.len());
        log.table.apply(Record::Claim(claim));
        if let Some(c) = previous {
            info!(
                group_id,
                from = c.broker,
                from_version = c.assignment_version,
                to = owner.broker,
                to_version = ours,
                "claimed the group log"
            );
        }
        Ok(previous.map(|c| c.broker))
    }

    /// Claims every log this store loads or writes for `broker`, under the
    /// assignment version `version()` returns at the time (fencing).
    pub fn with_owner(
        mut self,
        broker: i32,
        version: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> Self {
        self.owner = Some(Owner {
            broker,
            version: Arc::new(version),
        });
        self
    }

    fn write_frame(&self, file: &File, at: u64, frame: &[u8]) -> io::Result<()> {
        #[cfg(test)]
        if self.shared.faults.short_write.swap(false, Ordering::AcqRel) {
            file.write_all_at(&frame[..frame.len() / 2], at)?;
            return Err(io::Error::other("injected short write"));
        }
        file.write_all_at(frame, at)
    }

    /// [`Self::append`] of a JSON-bodied record.
    fn append_record(
        &self,
        group_id: &str,
        record: Record,
        create: bool,
    ) -> Result<Option<Pending>, StoreError> {
        let frame = encode(&record)?;
        self.append(group_id, &frame, create, |table| table.apply(record))
    }

    /// Writes one framed delta record at the end of the log (no fsync) and
    /// applies it to the log's table. `None`: there is no log and `create`
    /// is false.
    fn append(
        &self,
        group_id: &str,
        frame: &[u8],
        create: bool,
        apply: impl FnOnce(&mut Table),
    ) -> Result<Option<Pending>, StoreError> {
        self.with_entry(group_id, |entry, inner| -> Result<_, StoreError> {
            let _guard = entry.ensure_open(inner, create, &self.shared)?;
            let Some(log) = inner.log.as_mut() else {
                return Ok(None);
            };
            if log.read_only {
                return Err(io::Error::from_raw_os_error(libc::EROFS).into());
            }
            let mut journal = Vec::new();
            if let Some(from_broker) = self.claim(group_id, log, &mut journal)? {
                // Another broker wrote the log since we loaded the group:
                // what we hold in memory may miss its records.
                return Err(StoreError::Reclaimed {
                    group_id: group_id.to_string(),
                    from_broker,
                });
            }
            if let Err(e) = self.write_frame(&log.file, log.len, frame) {
                // Leave no partial record behind; if even that fails, the
                // next use rescans the file, which cuts the torn tail.
                if let Err(te) = log.file.set_len(log.len) {
                    error!(group_id, error = %te, "cannot cut a failed write off the group log");
                    inner.reopen = true;
                }
                return Err(e.into());
            }
            // A log not yet durable as a file (new, renamed into place,
            // reopened after a failure) waits for a volume round instead:
            // the journal holds writes, not files.
            let journaled = (self.shared.journal.is_some() && !log.dir_dirty).then(|| {
                let this = EntryRef {
                    group_id,
                    log_id: log.log_id,
                    position: log.len,
                    prev_crc: log.last_crc,
                    bytes: frame,
                };
                self.journal_append(journal.iter().map(JournalEntry::as_ref).chain([this]))
            });
            log.last_crc = frame_crc(frame);
            log.len += frame.len() as u64;
            log.since_snapshot.delta(frame.len());
            apply(&mut log.table);
            inner.appended += 1;
            Ok(Some(Pending {
                entry: entry.clone(),
                shared: self.shared.clone(),
                seq: inner.appended,
                journaled,
            }))
        })
    }
}

/// What replaying one journal entry did.
#[derive(Debug, PartialEq, Eq)]
enum Replayed {
    /// The log lacked the write; it is there now.
    Applied,
    /// The log holds it already (the usual case: the page cache survived).
    Present,
    /// The log it was written to is gone (removed, or replaced by a
    /// snapshot that holds it), or another record stands in its place.
    Skipped,
    /// Writes before it are missing: maybe another journal holds them.
    NotYet,
}

impl GroupLogStore {
    fn journal_append<'a>(
        &self,
        entries: impl IntoIterator<Item = EntryRef<'a>>,
    ) -> journal::Durable {
        self.shared
            .journal
            .as_ref()
            .expect("only called in journal mode")
            .append(entries)
    }

    /// Replays the journals of broker processes that are gone into the
    /// group logs, then removes them (blocking; run before serving). Writes
    /// missing from a log (the machine crashed before the page cache was
    /// written back) are put back at their position; entries of several
    /// journals about one log are applied in position order, whichever
    /// journal holds them.
    fn replay_journals(&self) -> io::Result<HashSet<String>> {
        let mut touched = HashSet::new();
        let held = match ReplayLock::acquire(&self.root) {
            Ok(Some(held)) => held,
            Ok(None) => return Ok(touched),
            Err(e) if super::is_read_only(&e) => {
                warn!(
                    "the data volume is read-only: commit journals of stopped brokers \
                       cannot be replayed; logs are served as they are on disk"
                );
                return Ok(touched);
            }
            Err(e) => return Err(e),
        };
        let orphans = journal::orphaned(&self.root, &held)?;
        if orphans.is_empty() {
            return Ok(touched);
        }
        let mut pending: Vec<&JournalEntry> =
            orphans.iter().flat_map(|o| o.entries.iter()).collect();
        let (mut applied, mut present, mut skipped) = (0usize, 0usize, 0usize);
        let mut known = HashMap::new();
        loop {
            let before = applied + present;
            let mut not_yet = Vec::new();
            for e in pending {
                match self.replay_entry(e, &mut known)? {
                    Replayed::Applied => {
                        applied += 1;
                        touched.insert(e.group_id.clone());
                    }
                    Replayed::Present => present += 1,
                    Replayed::Skipped => skipped += 1,
                    Replayed::NotYet => not_yet.push(e),
                }
            }
            pending = not_yet;
            if pending.is_empty() || applied + present == before {
                break;
            }
        }
        // The logs now hold every journaled write: durably, before the
        // journals go.
        // SAFETY: the descriptor is open for the call.
        let volume = File::open(&self.root)?;
        if unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&volume)) } != 0 {
            return Err(io::Error::last_os_error());
        }
        for o in &orphans {
            fs::remove_file(&o.path)?;
        }
        if !pending.is_empty() {
            error!(
                unplaced = pending.len(),
                applied,
                present,
                skipped,
                "commit journal entries found no place in their group logs (writes \
                    before them are missing from every journal)"
            );
        } else if applied > 0 {
            warn!(
                applied,
                present,
                skipped,
                journals = orphans.len(),
                "replayed commit journals: writes the group logs had lost are back"
            );
        } else {
            info!(
                present,
                skipped,
                journals = orphans.len(),
                "commit journals of stopped brokers checked: every write was in place"
            );
        }
        Ok(touched)
    }

    /// Whether the log's last claim is another broker's.
    fn taken_over(&self, log: &OpenLog) -> bool {
        let ours = self.owner.as_ref().map(|o| o.broker);
        self.shared.journal.is_some() && log.table.claim.is_some_and(|c| Some(c.broker) != ours)
    }

    /// Puts one journaled write back if its log lacks it. Only ever at the
    /// end of the log's valid records, never over a valid record (which
    /// may be another broker's, written after it took the group over).
    fn replay_entry(
        &self,
        e: &JournalEntry,
        known: &mut HashMap<String, KnownLog>,
    ) -> io::Result<Replayed> {
        // Only a whole, valid record goes back into a log. A journal holds
        // nothing else unless it was damaged in a way its checksums missed.
        if !matches!(read_frame(&e.bytes), Ok((_, size)) if size == e.bytes.len()) {
            warn!(group_id = %e.group_id, position = e.position,
                  "a commit journal entry is not one whole group-log record; skipped");
            return Ok(Replayed::Skipped);
        }
        let paths = self.paths(&e.group_id);
        let file = match OpenOptions::new().read(true).write(true).open(&paths.path) {
            Ok(f) => Arc::new(f),
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Replayed::Skipped),
            Err(err) => return Err(err),
        };
        let _guard = FileLock::acquire(&file)?;
        let m = file.metadata()?;
        let identity = (m.dev(), m.ino());
        let k = match known.get(&e.group_id) {
            // Unchanged since we last scanned or wrote it.
            Some(k) if k.identity == identity && k.len == m.len() => k.clone(),
            _ => {
                let mut data = Vec::new();
                (&*file).read_to_end(&mut data)?;
                let Ok(scanned) = scan(&data, &e.group_id) else {
                    return Ok(Replayed::Skipped);
                };
                KnownLog {
                    identity,
                    len: m.len(),
                    log_id: scanned.log_id,
                    valid_end: scanned.valid_end,
                    last_crc: scanned.last_crc,
                }
            }
        };
        let end = e.position + e.bytes.len() as u64;
        let mut here =
            vec![0u8; (k.len.max(e.position) - e.position).min(e.bytes.len() as u64) as usize];
        file.read_exact_at(&mut here, e.position)?;
        let outcome = if k.log_id != e.log_id {
            Replayed::Skipped
        } else if e.position > k.valid_end {
            Replayed::NotYet
        } else if here == e.bytes {
            Replayed::Present
        } else if e.position < k.valid_end {
            warn!(group_id = %e.group_id, position = e.position,
                  "a journaled write's place in its log holds another record; skipped");
            Replayed::Skipped
        } else if k.last_crc != e.prev_crc {
            warn!(group_id = %e.group_id, position = e.position,
                  "a journaled write followed another record than the log's last; skipped");
            Replayed::Skipped
        } else {
            // The valid records end exactly where this write belongs.
            file.write_all_at(&e.bytes, e.position)?;
            warn!(group_id = %e.group_id, position = e.position,
                  "restored a write the group log had lost, from a commit journal");
            Replayed::Applied
        };
        let mut k = k;
        if matches!(outcome, Replayed::Applied | Replayed::Present) && e.position == k.valid_end {
            k.valid_end = end;
            k.len = k.len.max(end);
            k.last_crc = frame_crc(&e.bytes);
        }
        known.insert(e.group_id.clone(), k);
        Ok(outcome)
    }
}

/// A group log as replay last saw it.
#[derive(Clone, Debug)]
struct KnownLog {
    identity: (u64, u64),
    len: u64,
    log_id: u64,
    /// End of its valid records.
    valid_end: u64,
    /// Checksum of the record that ends there.
    last_crc: u32,
}

/// Closes least recently used idle entries until at most `keep` remain (or
/// no idle one is left). Idle: nobody else holds the entry (no write in
/// flight, no waiter, no sync), every append is durable, and no failure is
/// pending a reopen. A closed entry's log reopens from disk on next use.
fn evict_idle(entries: &mut HashMap<String, Arc<Entry>>, keep: usize) {
    let excess = entries.len().saturating_sub(keep);
    if excess == 0 {
        return;
    }
    let mut idle: Vec<(u64, &String)> = entries
        .iter()
        .filter(|(_, e)| Arc::strong_count(e) == 1)
        .filter(|(_, e)| {
            e.inner.try_lock().is_ok_and(|i| {
                i.appended == i.durable && i.retired.is_empty() && !i.failed && !i.reopen
            })
        })
        .map(|(k, e)| (e.last_used.load(Ordering::Relaxed), k))
        .collect();
    if idle.len() > excess {
        idle.select_nth_unstable(excess);
        idle.truncate(excess);
    }
    let victims: Vec<String> = idle.into_iter().map(|(_, k)| k.clone()).collect();
    for k in victims {
        if let Some(entry) = entries.remove(&k) {
            let mut inner = entry.inner();
            inner.retire_log();
            inner.closed = true;
        }
    }
}

/// Waits for an append that was ordered (or reports why it was not).
async fn durable(ordered: Result<Option<Pending>, StoreError>) -> Result<(), StoreError> {
    match ordered? {
        Some(pending) => Ok(pending.wait().await?),
        None => Ok(()),
    }
}

impl GroupStore for GroupLogStore {
    fn load(&self, group_id: &str) -> Result<Option<StoredGroup>, StoreError> {
        Ok(GroupLogStore::load(self, group_id)?.map(|g| StoredGroup {
            metadata: g.metadata,
            offsets: g.offsets,
        }))
    }

    fn commit_offsets(
        &self,
        group_id: &str,
        offsets: &[(std::sync::Arc<str>, i32, OffsetAndMetadata)],
    ) -> Durable {
        Box::pin(GroupLogStore::commit_offsets(self, group_id, offsets))
    }

    fn delete_offsets(&self, group_id: &str, partitions: &[(String, i32)]) -> Durable {
        Box::pin(GroupLogStore::delete_offsets(self, group_id, partitions))
    }

    fn write_metadata(&self, group_id: &str, record: Option<&GroupMetadataRecord>) -> Durable {
        Box::pin(GroupLogStore::write_metadata(self, group_id, record))
    }

    fn delete_group(&self, group_id: &str) -> Durable {
        Box::pin(GroupLogStore::delete_group(self, group_id))
    }

    fn list_groups(&self) -> io::Result<Vec<String>> {
        GroupLogStore::list_groups(self)
    }

    fn close(&self, group_id: &str) {
        GroupLogStore::close(self, group_id)
    }

    fn written_elsewhere(&self, group_id: &str) -> bool {
        GroupLogStore::written_elsewhere(self, group_id)
    }
}

#[cfg(test)]
impl GroupLogStore {
    /// Waits until no snapshot of the group is pending or running: one
    /// started after an awaited commit is then in place.
    async fn turn_free(&self, group_id: &str) {
        let entry = lock(&self.entries).get(group_id).cloned();
        if let Some(entry) = entry {
            while entry.compacting.load(Ordering::Acquire) {
                tokio::task::yield_now().await;
            }
        }
    }
}

#[cfg(test)]
mod tests;
