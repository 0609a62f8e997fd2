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
//! The returned future resolves once the write is durable: by default
//! ([`GroupLogSync::Journal`]) when the broker's commit journal round that
//! holds it is; with [`GroupLogSync::Volume`] when one `syncfs` round makes
//! the appends to every group log durable at once ([`super::volume_sync`]);
//! with [`GroupLogSync::PerFile`] when the log is fdatasynced (appends to one
//! group waiting at the same time share one fsync). A snapshot is written
//! when one is due, after the append that made it due is answered.
//!
//! The store's jobs, one module each: the record format ([`records`]), one
//! log as a file (`file`), fencing a second owner (`fencing`), the cache of
//! open logs (`cache`), durability in its three modes (`durability`),
//! snapshots (`snapshot`) and journal replay (`replay`).

use std::collections::HashMap;
use std::fs;
use std::future::Future;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::Mutex;
use tracing::{error, info, warn};

use crate::records::offsets::{GroupOffsets, OffsetAndMetadata};
// The port is implemented by path, not imported: tests and tools that
// glob this module call the inherent methods of `Logs`.
use crate::records::classic::GroupMetadataRecord;
use crate::records::consumer::ConsumerGroupRecord;
use crate::storage::journal::{EntryRef, JournalEntry};
use crate::storage::names::safe_file_name;
use crate::store::StoreError;
use cache::Entry;
use durability::{durable, Durability, Pending, RealIo};
pub use durability::{GroupLogSync, LogIo};
pub use fencing::Owner;
use file::{frame_crc, open_log, read_header, remove_if_exists, LogPaths};
use records::{encode, encode_commit, Record};
pub use records::{PartitionKey, TxnBody, FORMAT_VERSION, STORED_TXN_STATES};
use table::Table;
use writer::Writer;

mod cache;
mod durability;
mod fencing;
mod file;
mod lane;
mod records;
mod replay;
mod snapshot;
mod table;
mod takeover;
mod writer;

/// Delta records between two snapshots, at least.
pub const SNAPSHOT_EVERY: usize = 64;
/// Bytes of delta records between two snapshots, at least, as a multiple
/// of the last snapshot's size: snapshots then add at most 1/4 to what the
/// log writes, and a load reads at most 5 snapshots' worth.
pub(super) const SNAPSHOT_BYTES_FACTOR: u64 = 4;
/// Group logs kept open (file handle and materialised table) at once by
/// default. Beyond it, the least recently used idle ones are closed; they
/// reopen (rescanning the file) on their next use. Without a bound every
/// resident group holds a file descriptor, and 100,000 groups exceed any
/// usual `ulimit -n`.
pub const DEFAULT_MAX_OPEN_LOGS: usize = 4096;

const LOG_SUFFIX: &str = ".log";
/// Largest header record `list_groups` accepts (ids are short).
pub(super) const MAX_HEADER_BYTES: u32 = 1 << 20;

// ---------------------------------------------------------------- public types

/// A group's state as read from its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedGroup {
    pub metadata: Option<GroupMetadataRecord>,
    /// The committed offsets, and a group's transactional offsets pending
    /// by producer id.
    pub offsets: GroupOffsets,
    /// Set when the log had a torn or corrupt tail, now cut off.
    pub damage: Option<LogDamage>,
    /// Snapshot records replayed (0 or 1 for logs this store wrote).
    pub replayed_snapshots: usize,
    /// Delta records replayed (at most [`SNAPSHOT_EVERY`] for logs this store wrote).
    pub replayed_deltas: usize,
    /// A transaction log's state of its transactional id.
    pub txn: Option<TxnBody>,
    /// A KIP-848 consumer group's records, compacted by key, in the order
    /// they were written: the coordinator's replay builds the group.
    pub consumer: Vec<ConsumerGroupRecord>,
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

/// The group logs under `<data>/__cluster/__consumer_offsets`: the
/// [`GroupStore`] port on the shared volume. Writes, loads and closes of one
/// group run in order on the store's own threads ([`writer`]), never on the
/// caller's; the methods of [`Logs`] (through `Deref`) run on the caller's
/// thread, for tools, tests and benchmarks.
pub struct GroupLogStore {
    logs: Arc<Logs>,
    writer: Writer,
}

/// How a [`GroupLogStore`] is opened.
#[derive(Clone, Default)]
pub struct GroupLogOptions {
    /// How appends are made durable.
    pub sync: GroupLogSync,
    /// The broker claiming the logs it writes (fencing); `None` in tools
    /// and tests that only read logs.
    pub owner: Option<Owner>,
    /// Most logs kept open (at least 1); [`DEFAULT_MAX_OPEN_LOGS`] if `None`.
    pub max_open_logs: Option<usize>,
    /// Whose logs: consumer groups' (the default) or transactional ids'.
    pub folder: LogFolder,
}

/// The folder under `<data>/__cluster` a store's logs live in, one log per
/// key: group ids and transactional ids are separate name spaces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFolder {
    #[default]
    ConsumerOffsets,
    TransactionState,
}

impl LogFolder {
    pub fn name(self) -> &'static str {
        match self {
            LogFolder::ConsumerOffsets => "__consumer_offsets",
            LogFolder::TransactionState => "__transaction_state",
        }
    }
}

impl GroupLogStore {
    /// The store under `data_dir/__cluster/__consumer_offsets` (created),
    /// durable by the commit journal, claiming nothing.
    pub fn new(data_dir: &Path) -> io::Result<GroupLogStore> {
        GroupLogStore::open(data_dir, GroupLogOptions::default())
    }

    /// The store under `data_dir/__cluster/__consumer_offsets` (created),
    /// as `options` say. Replays the journals of stopped brokers before it
    /// returns.
    pub fn open(data_dir: &Path, options: GroupLogOptions) -> io::Result<GroupLogStore> {
        GroupLogStore::open_with_io(data_dir, options, Arc::new(RealIo))
    }

    /// [`GroupLogStore::open`] with the log writes going through `io`: for
    /// tests that fail or hold them.
    pub fn open_with_io(
        data_dir: &Path,
        options: GroupLogOptions,
        io: Arc<dyn LogIo>,
    ) -> io::Result<GroupLogStore> {
        Ok(GroupLogStore {
            logs: Arc::new(Logs::open(data_dir, options, io)?),
            writer: Writer::new()?,
        })
    }
}

fn writer_gone() -> io::Error {
    io::Error::other("the group log store's writer stopped")
}

impl std::ops::Deref for GroupLogStore {
    type Target = Logs;

    fn deref(&self) -> &Logs {
        &self.logs
    }
}

/// The group logs themselves, with the open logs of the groups this broker
/// writes. Every method runs on the caller's thread and may block on I/O.
pub struct Logs {
    root: PathBuf,
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    shared: Arc<Durability>,
    /// Use counter: entries remember when they were last used.
    ticks: AtomicU64,
    /// Most entries (open logs) cached before idle ones are closed.
    max_open: usize,
    /// The broker claiming the logs it writes (fencing); `None` in tools
    /// and tests that read logs.
    owner: Option<Owner>,
    /// Makes snapshot tmp files unique to this store: two brokers must
    /// never write one another's.
    tmp_tag: String,
    /// Journals of processes this store fenced, parsed (`takeover`).
    fenced_journals: takeover::FencedJournals,
}

impl Logs {
    fn open(data_dir: &Path, options: GroupLogOptions, io: Arc<dyn LogIo>) -> io::Result<Logs> {
        let root = data_dir.join("__cluster").join(options.folder.name());
        fs::create_dir_all(&root)?;
        let tmp_tag = format!(
            "{}-{}",
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        // Journals are named after the broker and its process's first
        // incarnation, so a broker taking a log over from a fenced process
        // finds that process's journals (docs/design/volume.md).
        let journal_tag = match options
            .owner
            .as_ref()
            .and_then(|o| Some((o, o.incarnation()?)))
        {
            Some((o, i)) => format!("{}-{}", o.broker, i.id()),
            None => tmp_tag.clone(),
        };
        let logs = Logs {
            shared: Arc::new(Durability::new(
                options.sync,
                &root,
                &journal_tag,
                io,
                options.owner.as_ref(),
            )?),
            root,
            entries: Mutex::new(HashMap::new()),
            ticks: AtomicU64::new(0),
            max_open: options
                .max_open_logs
                .unwrap_or(DEFAULT_MAX_OPEN_LOGS)
                .max(1),
            owner: options.owner,
            tmp_tag,
            fenced_journals: takeover::FencedJournals::default(),
        };
        match logs.replay_journals() {
            // A log's lock kept by a process whose volume stalls: the
            // journals stay, and are replayed at the next takeover or start.
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                warn!(error = %e, "commit journals of stopped brokers not replayed yet")
            }
            other => {
                other?;
            }
        }
        Ok(logs)
    }

    /// Logs currently cached (open or being written), for tests and metrics.
    pub fn open_logs(&self) -> usize {
        self.entries.lock().len()
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
        self.shared.fsync_count()
    }

    /// Snapshots written so far.
    pub fn snapshot_count(&self) -> u64 {
        self.shared.snapshot_count()
    }

    fn paths(&self, group_id: &str) -> LogPaths {
        let name = safe_file_name(group_id.as_bytes());
        LogPaths {
            group_id: group_id.to_string(),
            root: self.root.clone(),
            path: self.root.join(format!("{name}{LOG_SUFFIX}")),
            tmp: self
                .root
                .join(format!("{name}{LOG_SUFFIX}.tmp.{}", self.tmp_owner())),
        }
    }

    /// Whose snapshot tmp files: this process's incarnation (a broker
    /// taking a log over removes the fenced process's, so its rename can
    /// never land), else this store's tag.
    fn tmp_owner(&self) -> String {
        match self.owner.as_ref().and_then(|o| o.incarnation()) {
            Some(i) => i.id().to_string(),
            None => self.tmp_tag.clone(),
        }
    }

    /// Reads the group's log from disk (blocking; closing any cached handle
    /// first), recovering a damaged tail. `None` when the group has no log.
    pub fn load(&self, group_id: &str) -> Result<Option<LoadedGroup>, StoreError> {
        let loaded = self.with_entry(group_id, |entry, inner| {
            inner.retire_log();
            inner.reopen = false;
            let failed = std::mem::take(&mut inner.failed);
            if let Err(e) = self.take_over_if_needed(&entry.paths) {
                inner.failed |= failed;
                return Err(e);
            }
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
                        drop(
                            self.shared
                                .journal_append(journal.iter().map(JournalEntry::as_ref)),
                        );
                    }
                    drop(guard);
                    Some((log, replay))
                }
                None => None,
            };
            Ok(opened.map(|(mut log, replay)| {
                log.dir_dirty |= failed;
                let loaded = LoadedGroup {
                    txn: log.table.txn.clone(),
                    metadata: log.table.metadata.clone(),
                    consumer: log.table.consumer.records().cloned().collect(),
                    offsets: log.table.offsets.clone(),
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

    /// Reads the group's log as it is on disk, taking nothing: no lock, no
    /// claim, no journal replay, a torn tail left as it is (the replay
    /// stops before it), no handle kept. `None` when the group has no log.
    /// What another broker appended and has not yet written back from its
    /// journal is not seen.
    pub fn peek(&self, group_id: &str) -> Result<Option<LoadedGroup>, StoreError> {
        let data = match fs::read(self.log_path(group_id)) {
            Ok(data) if data.is_empty() => return Ok(None),
            Ok(data) => data,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let scan = file::scan(&data, group_id)?;
        let table = scan.table;
        Ok(Some(LoadedGroup {
            consumer: table.consumer.records().cloned().collect(),
            offsets: table.offsets,
            metadata: table.metadata,
            txn: table.txn,
            damage: None,
            replayed_snapshots: scan.snapshots,
            replayed_deltas: scan.deltas,
        }))
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
                            table.offsets.commit(t.as_ref(), *p, o.clone());
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
                    .map(|(topic, partition)| PartitionKey {
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
        let ordered = self.append_record(group_id, Record::Metadata(record.cloned()), create);
        durable(ordered)
    }

    /// Appends one change of the group's consumer group state (its records,
    /// in one frame: all of them or none survive a crash), creating the log
    /// if needed; the future resolves once it is durable.
    pub fn write_consumer_records(
        &self,
        group_id: &str,
        records: &[ConsumerGroupRecord],
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let ordered = self.append_record(group_id, Record::Consumer(records.to_vec()), true);
        durable(ordered)
    }

    /// Appends an online migration between a classic and a consumer group:
    /// the classic metadata (`None`: its tombstone) and the consumer group's
    /// records in one frame.
    pub fn convert_group(
        &self,
        group_id: &str,
        metadata: Option<&GroupMetadataRecord>,
        records: &[ConsumerGroupRecord],
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let body = records::ConversionBody {
            metadata: metadata.cloned(),
            consumer: records.to_vec(),
        };
        let ordered = self.append_record(group_id, Record::Conversion(body), true);
        durable(ordered)
    }

    /// Appends offsets a transaction committed for the group, pending until
    /// it ends (creating the log if needed); the future resolves once they
    /// are durable.
    pub fn write_txn_offsets<T: AsRef<str>>(
        &self,
        group_id: &str,
        producer_id: i64,
        offsets: &[(T, i32, OffsetAndMetadata)],
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let ordered = records::encode_txn_offsets(producer_id, offsets)
            .map_err(StoreError::from)
            .and_then(|frame| {
                self.append(group_id, &frame, true, |table| {
                    table.apply(Record::TxnOffsets {
                        producer_id,
                        offsets: offsets
                            .iter()
                            .map(|(t, p, o)| (t.as_ref().to_string(), *p, o.clone()))
                            .collect(),
                    })
                })
            });
        durable(ordered)
    }

    /// Appends the end of a producer's transaction for the group (nothing
    /// to do without a log): its pending offsets become the group's, or are
    /// dropped; the future resolves once it is durable.
    pub fn end_txn_offsets(
        &self,
        group_id: &str,
        producer_id: i64,
        commit: bool,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let ordered = self.append_record(
            group_id,
            Record::TxnEnd {
                producer_id,
                commit,
            },
            false,
        );
        durable(ordered)
    }

    /// Appends a transactional id's state now (creating the log if
    /// needed); the future resolves once it is durable.
    pub fn write_txn(
        &self,
        transactional_id: &str,
        transit: &TxnBody,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let ordered =
            self.append_record(transactional_id, Record::Txn(Some(transit.clone())), true);
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
        let removal = self.shared.sync_folder(self.root.clone());
        async move {
            removed?;
            Ok(removal.await?)
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
        let Some(entry) = self.entries.lock().get(group_id).cloned() else {
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
        let mut entries = self.entries.lock();
        if let Some(entry) = entries.remove(group_id) {
            let mut inner = entry.inner();
            inner.retire_log();
            inner.closed = true;
        }
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
                    key: group_id.to_string(),
                    from_broker,
                });
            }
            if let Err(e) = self.shared.io.write_at(&log.file, log.len, frame) {
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
            let journaled = if log.dir_dirty {
                None
            } else {
                let this = EntryRef {
                    group_id,
                    log_id: log.log_id,
                    position: log.len,
                    prev_crc: log.last_crc,
                    bytes: frame,
                };
                self.shared
                    .journal_append(journal.iter().map(JournalEntry::as_ref).chain([this]))
            };
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
                written_under: self.owner.as_ref().and_then(|o| o.incarnation()),
            }))
        })
    }
}

#[cfg(test)]
impl GroupLogStore {
    /// Waits until no snapshot of the group is pending or running: one
    /// started after an awaited commit is then in place.
    async fn turn_free(&self, group_id: &str) {
        let entry = self.entries.lock().get(group_id).cloned();
        if let Some(entry) = entry {
            while entry.compacting.load(std::sync::atomic::Ordering::Acquire) {
                tokio::task::yield_now().await;
            }
        }
    }
}

#[cfg(test)]
mod tests;
