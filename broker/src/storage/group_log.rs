//! The durable state of consumer groups: one log per group on the shared
//! volume, `<data>/__cluster/__consumer_offsets/<safe_file_name(id)>.log`.
//!
//! A log is a sequence of records, each framed as
//! `[u32 BE payload length][u32 BE crc32c of payload][payload]`, where the
//! payload is one kind byte followed by a JSON body:
//!
//! | kind | record          | JSON body                                              |
//! | ---- | --------------- | ------------------------------------------------------ |
//! | 1    | Header          | `{"version":1,"group_id":"…"}`, always first            |
//! | 2    | OffsetCommit    | `[{"topic","partition","offset","leader_epoch","metadata","commit_timestamp_ms","expire_timestamp_ms"}…]` |
//! | 3    | OffsetDelete    | `[{"topic","partition"}…]`                             |
//! | 4    | GroupMetadata   | the whole record (replacing the previous one) or `null` |
//! | 5    | Snapshot        | `{"offsets":[…as in OffsetCommit…],"metadata":…}`     |
//!
//! Byte fields of member records (subscription, assignment) are hex strings.
//!
//! Every [`SNAPSHOT_EVERY`] delta records (commits, deletes, metadata) the
//! store writes a new file holding Header + Snapshot (tmp file, fsync,
//! rename over the log, fsync of the folder), which drops everything below
//! it: a load replays at most one snapshot and [`SNAPSHOT_EVERY`] deltas.
//!
//! A load verifies every record's length and checksum, stops at the first
//! torn or corrupt one, truncates the file there (durably) and reports the
//! damage. The header carries the real group id: a log whose header names
//! another group is refused, and [`GroupLogStore::list_groups`] reads the ids
//! from the headers, since long ids are hashed into file names.
//!
//! Writes are ordered when called: the record is appended (without fsync)
//! before the call returns, so records of one group land in call order.
//! The returned future resolves once the write is durable (fdatasync);
//! appends to one group waiting at the same time share one fsync (group
//! commit), as in [`super::partition`]. The task that holds a group's sync
//! turn also writes the snapshot when one is due.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::future::Future;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tracing::{error, info, warn};

use super::log::sync_dir;
use super::names::safe_file_name;
use crate::group::core::{GroupMetadataRecord, MemberMetadataRecord, OffsetAndMetadata};
use crate::group::manager::{Durable, GroupStore, StoredGroup};

/// Version written in every header; a log with another version is refused.
pub const FORMAT_VERSION: u32 = 1;
/// Delta records between two snapshots.
pub const SNAPSHOT_EVERY: usize = 64;
/// Group logs kept open (file handle and materialised table) at once by
/// default. Beyond it, the least recently used idle ones are closed; they
/// reopen (rescanning the file) on their next use. Without a bound every
/// resident group holds a file descriptor, and 100,000 groups exceed any
/// usual `ulimit -n`.
pub const DEFAULT_MAX_OPEN_LOGS: usize = 4096;

const FRAME_HEADER: usize = 8;
const LOG_SUFFIX: &str = ".log";
/// Largest header record `list_groups` accepts (ids are short).
const MAX_HEADER_BYTES: u32 = 1 << 20;

const KIND_HEADER: u8 = 1;
const KIND_COMMIT: u8 = 2;
const KIND_DELETE: u8 = 3;
const KIND_METADATA: u8 = 4;
const KIND_SNAPSHOT: u8 = 5;
const KIND_CLAIM: u8 = 6;

// ---------------------------------------------------------------- public types

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

// ---------------------------------------------------------------- records

#[derive(Debug, Serialize, Deserialize)]
struct HeaderBody {
    version: u32,
    group_id: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct OffsetEntry {
    topic: String,
    partition: i32,
    offset: i64,
    leader_epoch: Option<i32>,
    metadata: String,
    commit_timestamp_ms: u64,
    expire_timestamp_ms: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct PartitionEntry {
    topic: String,
    partition: i32,
}

#[derive(Debug, Serialize, Deserialize)]
struct GroupMeta {
    group_id: String,
    protocol_type: Option<String>,
    generation: i32,
    protocol: Option<String>,
    leader: Option<String>,
    current_state_timestamp_ms: Option<u64>,
    members: Vec<MemberMeta>,
}

#[derive(Debug, Serialize, Deserialize)]
struct MemberMeta {
    member_id: String,
    group_instance_id: Option<String>,
    client_id: String,
    client_host: String,
    rebalance_timeout_ms: i32,
    session_timeout_ms: i32,
    #[serde(with = "hex_bytes")]
    subscription: Bytes,
    #[serde(with = "hex_bytes")]
    assignment: Bytes,
}

#[derive(Debug, Serialize, Deserialize)]
struct SnapshotBody {
    offsets: Vec<OffsetEntry>,
    metadata: Option<GroupMeta>,
    /// The owner's claim, carried over by compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    claim: Option<ClaimBody>,
}

/// Who writes this log: the broker that loaded the group, and the
/// assignment version under which it did (see docs/design/fencing.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ClaimBody {
    broker: i32,
    assignment_version: u64,
}

#[derive(Debug)]
enum Record {
    Header(HeaderBody),
    Commit(Vec<OffsetEntry>),
    Delete(Vec<PartitionEntry>),
    Metadata(Option<GroupMeta>),
    Snapshot(SnapshotBody),
    Claim(ClaimBody),
}

impl OffsetEntry {
    fn new(topic: &str, partition: i32, o: &OffsetAndMetadata) -> Self {
        OffsetEntry {
            topic: topic.to_string(),
            partition,
            offset: o.offset,
            leader_epoch: o.leader_epoch,
            metadata: o.metadata.clone(),
            commit_timestamp_ms: o.commit_timestamp_ms,
            expire_timestamp_ms: o.expire_timestamp_ms,
        }
    }

    fn into_parts(self) -> ((String, i32), OffsetAndMetadata) {
        let value = OffsetAndMetadata {
            offset: self.offset,
            leader_epoch: self.leader_epoch,
            metadata: self.metadata,
            commit_timestamp_ms: self.commit_timestamp_ms,
            expire_timestamp_ms: self.expire_timestamp_ms,
        };
        ((self.topic, self.partition), value)
    }
}

impl From<&GroupMetadataRecord> for GroupMeta {
    fn from(r: &GroupMetadataRecord) -> Self {
        GroupMeta {
            group_id: r.group_id.clone(),
            protocol_type: r.protocol_type.clone(),
            generation: r.generation,
            protocol: r.protocol.clone(),
            leader: r.leader.clone(),
            current_state_timestamp_ms: r.current_state_timestamp_ms,
            members: r
                .members
                .iter()
                .map(|m| MemberMeta {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.subscription.clone(),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }
}

impl From<GroupMeta> for GroupMetadataRecord {
    fn from(r: GroupMeta) -> Self {
        GroupMetadataRecord {
            group_id: r.group_id,
            protocol_type: r.protocol_type,
            generation: r.generation,
            protocol: r.protocol,
            leader: r.leader,
            current_state_timestamp_ms: r.current_state_timestamp_ms,
            members: r
                .members
                .into_iter()
                .map(|m| MemberMetadataRecord {
                    member_id: m.member_id,
                    group_instance_id: m.group_instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.subscription,
                    assignment: m.assignment,
                })
                .collect(),
        }
    }
}

mod hex_bytes {
    use bytes::Bytes;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(b.len() * 2);
        for &x in b.iter() {
            out.push(DIGITS[usize::from(x >> 4)] as char);
            out.push(DIGITS[usize::from(x & 15)] as char);
        }
        s.serialize_str(&out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let s = String::deserialize(d)?;
        if s.len() % 2 != 0 || !s.is_ascii() {
            return Err(D::Error::custom("malformed hex string"));
        }
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map(Bytes::from)
            .map_err(D::Error::custom)
    }
}

fn header_record(group_id: &str) -> Record {
    Record::Header(HeaderBody {
        version: FORMAT_VERSION,
        group_id: group_id.to_string(),
    })
}

/// Frames a record: `[len][crc32c][kind byte + JSON body]`.
fn encode(record: &Record) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; FRAME_HEADER];
    let written = match record {
        Record::Header(b) => {
            buf.push(KIND_HEADER);
            serde_json::to_writer(&mut buf, b)
        }
        Record::Commit(b) => {
            buf.push(KIND_COMMIT);
            serde_json::to_writer(&mut buf, b)
        }
        Record::Delete(b) => {
            buf.push(KIND_DELETE);
            serde_json::to_writer(&mut buf, b)
        }
        Record::Metadata(b) => {
            buf.push(KIND_METADATA);
            serde_json::to_writer(&mut buf, b)
        }
        Record::Snapshot(b) => {
            buf.push(KIND_SNAPSHOT);
            serde_json::to_writer(&mut buf, b)
        }
        Record::Claim(b) => {
            buf.push(KIND_CLAIM);
            serde_json::to_writer(&mut buf, b)
        }
    };
    written.map_err(io::Error::other)?;
    let len = u32::try_from(buf.len() - FRAME_HEADER).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "group log record exceeds 4 GiB",
        )
    })?;
    let crc = crc32c::crc32c(&buf[FRAME_HEADER..]);
    buf[0..4].copy_from_slice(&len.to_be_bytes());
    buf[4..8].copy_from_slice(&crc.to_be_bytes());
    Ok(buf)
}

fn decode(payload: &[u8]) -> Result<Record, String> {
    let (&kind, body) = payload.split_first().ok_or("empty record")?;
    let record = match kind {
        KIND_HEADER => serde_json::from_slice(body).map(Record::Header),
        KIND_COMMIT => serde_json::from_slice(body).map(Record::Commit),
        KIND_DELETE => serde_json::from_slice(body).map(Record::Delete),
        KIND_METADATA => serde_json::from_slice(body).map(Record::Metadata),
        KIND_SNAPSHOT => serde_json::from_slice(body).map(Record::Snapshot),
        KIND_CLAIM => serde_json::from_slice(body).map(Record::Claim),
        other => return Err(format!("unknown record kind {other}")),
    };
    record.map_err(|e| format!("undecodable record of kind {kind}: {e}"))
}

/// The record at the start of `buf` and its framed size, or why there is none.
fn read_frame(buf: &[u8]) -> Result<(Record, usize), String> {
    if buf.len() < FRAME_HEADER {
        return Err(format!("torn frame header ({} of 8 bytes)", buf.len()));
    }
    let len = u32::from_be_bytes(buf[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_be_bytes(buf[4..8].try_into().expect("4 bytes"));
    let rest = &buf[FRAME_HEADER..];
    if len > rest.len() {
        return Err(format!(
            "torn record ({len} byte payload, {} bytes present)",
            rest.len()
        ));
    }
    let payload = &rest[..len];
    if crc32c::crc32c(payload) != crc {
        return Err("checksum mismatch".to_string());
    }
    Ok((decode(payload)?, FRAME_HEADER + len))
}

fn invalid_data(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn check_header(h: &HeaderBody, group_id: &str) -> io::Result<()> {
    if h.version != FORMAT_VERSION {
        return Err(invalid_data(format!(
            "group log of {group_id:?} has format version {}, this broker reads {FORMAT_VERSION}",
            h.version
        )));
    }
    if h.group_id != group_id {
        return Err(invalid_data(format!(
            "group log at the path of {group_id:?} belongs to group {:?}",
            h.group_id
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------- table

/// The materialised state: what the records so far add up to.
#[derive(Debug, Default)]
struct Table {
    offsets: BTreeMap<(String, i32), OffsetAndMetadata>,
    metadata: Option<GroupMetadataRecord>,
    /// The last owner claim.
    claim: Option<ClaimBody>,
}

impl Table {
    fn apply(&mut self, record: Record) {
        match record {
            Record::Header(_) => {}
            Record::Commit(entries) => {
                for e in entries {
                    let (key, value) = e.into_parts();
                    self.offsets.insert(key, value);
                }
            }
            Record::Delete(keys) => {
                for k in keys {
                    self.offsets.remove(&(k.topic, k.partition));
                }
            }
            Record::Metadata(m) => self.metadata = m.map(Into::into),
            Record::Claim(c) => self.claim = Some(c),
            Record::Snapshot(s) => {
                self.offsets.clear();
                self.metadata = s.metadata.map(Into::into);
                self.claim = s.claim;
                self.apply(Record::Commit(s.offsets));
            }
        }
    }

    fn snapshot(&self) -> Record {
        Record::Snapshot(SnapshotBody {
            offsets: self
                .offsets
                .iter()
                .map(|((t, p), o)| OffsetEntry::new(t, *p, o))
                .collect(),
            metadata: self.metadata.as_ref().map(Into::into),
            claim: self.claim,
        })
    }
}

#[derive(Default)]
struct Scan {
    table: Table,
    /// End of the last intact record.
    valid_end: u64,
    snapshots: usize,
    deltas: usize,
    deltas_since_snapshot: usize,
    damage: Option<(u64, String)>,
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
            (Record::Header(h), 0) => check_header(h, group_id)?,
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
                s.deltas_since_snapshot = 0;
            }
            _ => {
                s.deltas += 1;
                s.deltas_since_snapshot += 1;
            }
        }
        s.table.apply(record);
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
    /// End of the last complete record: where the next one goes.
    len: u64,
    /// (device, inode) of the file, to notice a log replaced underneath us.
    identity: (u64, u64),
    deltas_since_snapshot: usize,
    table: Table,
    /// The file was created or renamed into place: the folder must be
    /// fsynced before anything in it counts as durable.
    dir_dirty: bool,
}

impl OpenLog {
    /// Whether the file at `path` is still the one we write, as we left it.
    fn is_current(&self, paths: &LogPaths) -> io::Result<bool> {
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

/// A load or write refused: another broker claimed the group's log under an
/// assignment at least as new as the one this broker follows.
#[derive(Debug)]
pub struct Fenced {
    pub group_id: String,
    pub by_broker: i32,
    pub by_version: u64,
    pub ours: u64,
}

impl std::fmt::Display for Fenced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "group log of {:?} is claimed by broker {} under assignment version {} (this broker follows {})",
            self.group_id, self.by_broker, self.by_version, self.ours
        )
    }
}

impl std::error::Error for Fenced {}

/// A write refused because another broker wrote the log since this broker
/// loaded the group: the log is claimed back, and the group must be
/// reloaded before it is written again.
#[derive(Debug)]
pub struct Reclaimed {
    pub group_id: String,
    pub from_broker: i32,
}

impl std::fmt::Display for Reclaimed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "group log of {:?} was written by broker {} since this broker loaded it; reload needed",
            self.group_id, self.from_broker
        )
    }
}

impl std::error::Error for Reclaimed {}

/// Whether `e` is a [`Fenced`] refusal.
pub fn is_fenced(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|x| x.is::<Fenced>())
}

/// Whether `e` is a [`Reclaimed`] refusal.
pub fn is_reclaimed(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|x| x.is::<Reclaimed>())
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
    let (file, guard) = loop {
        let file = match OpenOptions::new().read(true).write(true).open(&p.path) {
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
    let mut len = scan.valid_end;
    let damage = match scan.damage {
        None => None,
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
    if len == 0 {
        // Not even the header was intact: start the log again (made durable
        // by the next group commit, like any append).
        let header = encode(&header_record(&p.group_id))?;
        file.write_all_at(&header, 0)?;
        len = header.len() as u64;
    }
    let log = OpenLog {
        identity: identity(&file)?,
        file,
        len,
        deltas_since_snapshot: scan.deltas_since_snapshot,
        table: scan.table,
        dir_dirty: false,
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
    let header = encode(&header_record(&p.group_id))?;
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
                deltas_since_snapshot: 0,
                table: Table::default(),
                dir_dirty: true,
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
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
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
        (Record::Header(h), _) if h.version == FORMAT_VERSION => Ok(Some(h.group_id)),
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
    /// One fsync (or snapshot) at a time; appends waiting meanwhile share
    /// the next one.
    sync_lock: tokio::sync::Mutex<()>,
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
        if std::mem::take(&mut inner.reopen) || failed {
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
}

impl Pending {
    /// Returns once the append is durable. One fsync covers every append
    /// written before it started (group commit); the task that holds the
    /// sync lock also writes the snapshot when one is due.
    async fn wait(self) -> io::Result<()> {
        let Pending { entry, shared, seq } = self;
        if let Some(r) = entry.inner().settled(seq) {
            return r;
        }
        let _sync = entry.sync_lock.lock().await;
        if let Some(r) = entry.inner().settled(seq) {
            return r;
        }
        compact_if_due(&entry, &shared).await;
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
        if shared.faults.fsync.swap(false, Ordering::AcqRel) {
            let e = io::Error::other("injected fsync failure");
            entry.inner().fail_upto(target);
            return Err(e);
        }
        let root = entry.paths.root.clone();
        let shared2 = shared.clone();
        let result = blocking(move || {
            for f in &files {
                f.sync_data()?;
                shared2.synced();
            }
            if dir {
                sync_dir(&root)?;
                shared2.synced();
            }
            Ok(())
        })
        .await;
        let mut inner = entry.inner();
        match result {
            Ok(()) => {
                inner.durable = inner.durable.max(target);
                if let (Some(log), Some(current)) = (inner.log.as_mut(), current) {
                    if dir && Arc::ptr_eq(&log.file, &current) {
                        log.dir_dirty = false;
                    }
                }
                inner.settled(seq).expect("durable")
            }
            Err(e) => {
                error!(group_id = %entry.paths.group_id, error = %e,
                       "fsync of group log failed; the log will be reopened");
                inner.fail_upto(target);
                Err(e)
            }
        }
    }
}

/// Rewrites the log as Header + Snapshot once enough deltas piled up: the
/// snapshot is encoded and written to a tmp file (fsynced) on a blocking
/// thread, without holding the log; then, under the log's lock (also on a
/// blocking thread, so no async worker waits on the rename), records
/// appended meanwhile are copied after it and it is renamed over the log.
/// Only the copy of the table is taken under the log's lock. The folder
/// fsync is left to the group commit that follows (`dir_dirty`). A failure
/// leaves the old log in place.
async fn compact_if_due(entry: &Arc<Entry>, shared: &Arc<Shared>) {
    let (snapshot, snap_end, old) = {
        let inner = entry.inner();
        let Some(log) = inner.log.as_ref() else {
            return;
        };
        if log.deltas_since_snapshot < SNAPSHOT_EVERY {
            return;
        }
        (log.table.snapshot(), log.len, log.file.clone())
    };
    let paths = entry.paths.clone();
    let sh = shared.clone();
    let written = blocking(move || {
        let mut bytes = encode(&header_record(&paths.group_id))?;
        bytes.extend_from_slice(&encode(&snapshot)?);
        let tmp = write_tmp(&paths, &bytes, &sh)?;
        Ok((tmp, bytes.len() as u64))
    })
    .await;
    let (tmp, base) = match written {
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
    let swapped = blocking(move || Ok(swap_in_snapshot(&e, &sh, tmp, base, snap_end, &old))).await;
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
    base: u64,
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
    let (tail, id) = {
        let _guard = FileLock::acquire(old)?;
        if !log.is_current(&entry.paths)? {
            return Err(io::Error::other(
                "the log changed on disk (another owner?); snapshot dropped",
            ));
        }
        let mut tail = vec![0u8; (log.len - snap_end) as usize];
        old.read_exact_at(&mut tail, snap_end)?;
        tmp.write_all_at(&tail, base)?;
        let id = identity(&tmp)?;
        fs::rename(&entry.paths.tmp, &entry.paths.path)?;
        (tail, id)
    };
    log.deltas_since_snapshot = count_frames(&tail);
    log.len = base + tail.len() as u64;
    log.identity = id;
    log.file = Arc::new(tmp);
    log.dir_dirty = true;
    shared.snapshots.fetch_add(1, Ordering::Relaxed);
    Ok(true)
}

// ---------------------------------------------------------------- the store

impl GroupLogStore {
    /// The store under `data_dir/__cluster/__consumer_offsets` (created).
    pub fn new(data_dir: &Path) -> io::Result<GroupLogStore> {
        let root = data_dir.join("__cluster").join("__consumer_offsets");
        fs::create_dir_all(&root)?;
        Ok(GroupLogStore {
            root,
            entries: Mutex::new(HashMap::new()),
            shared: Arc::default(),
            max_open: DEFAULT_MAX_OPEN_LOGS,
            owner: None,
            tmp_tag: format!(
                "{}-{}",
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            ),
        })
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
        self.shared.fsyncs.load(Ordering::Relaxed)
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
                            sync_lock: tokio::sync::Mutex::new(()),
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
    pub fn load(&self, group_id: &str) -> io::Result<Option<LoadedGroup>> {
        let loaded = self.with_entry(group_id, |entry, inner| {
            inner.retire_log();
            inner.reopen = false;
            let failed = std::mem::take(&mut inner.failed);
            let opened = match open_log(&entry.paths, false, &self.shared) {
                Ok(opened) => opened,
                Err(e) => {
                    inner.failed |= failed;
                    return Err(e);
                }
            };
            let opened = match opened {
                Some((mut log, replay, guard)) => {
                    if let Err(e) = self.claim(group_id, &mut log) {
                        inner.failed |= failed;
                        return Err(e);
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
                    offsets: log
                        .table
                        .offsets
                        .iter()
                        .map(|((t, p), o)| (t.clone(), *p, o.clone()))
                        .collect(),
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
    pub fn commit_offsets(
        &self,
        group_id: &str,
        offsets: &[(String, i32, OffsetAndMetadata)],
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let ordered = if offsets.is_empty() {
            Ok(None)
        } else {
            let record = Record::Commit(
                offsets
                    .iter()
                    .map(|(t, p, o)| OffsetEntry::new(t, *p, o))
                    .collect(),
            );
            self.append(group_id, record, true)
        };
        durable(ordered)
    }

    /// Appends the removal of offsets now (nothing to do without a log);
    /// the future resolves once it is durable.
    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
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
            self.append(group_id, record, false)
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
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let create = record.is_some();
        let ordered = self.append(group_id, Record::Metadata(record.map(Into::into)), create);
        durable(ordered)
    }

    /// Removes the group's log now (`Ok` if there is none); the future
    /// resolves once the removal is durable.
    pub fn delete_group(
        &self,
        group_id: &str,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
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
        async move {
            removed?;
            blocking(move || {
                sync_dir(&root)?;
                shared.synced();
                Ok(())
            })
            .await
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
    /// appends our claim if the log's last claim is not ours. Returns the
    /// broker the claim was taken from, if any. No-op without an owner.
    fn claim(&self, group_id: &str, log: &mut OpenLog) -> io::Result<Option<i32>> {
        let Some(owner) = &self.owner else {
            return Ok(None);
        };
        let ours = (owner.version)();
        let previous = log.table.claim;
        match previous {
            Some(c) if c.broker == owner.broker => return Ok(None),
            Some(c) if c.assignment_version >= ours => {
                return Err(io::Error::other(Fenced {
                    group_id: group_id.to_string(),
                    by_broker: c.broker,
                    by_version: c.assignment_version,
                    ours,
                }))
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
            return Err(e);
        }
        log.len += frame.len() as u64;
        log.deltas_since_snapshot += 1;
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

    /// Writes one delta record at the end of the log (no fsync). `None`:
    /// there is no log and `create` is false.
    fn append(&self, group_id: &str, record: Record, create: bool) -> io::Result<Option<Pending>> {
        let frame = encode(&record)?;
        self.with_entry(group_id, |entry, inner| {
            let _guard = entry.ensure_open(inner, create, &self.shared)?;
            let Some(log) = inner.log.as_mut() else {
                return Ok(None);
            };
            if let Some(from_broker) = self.claim(group_id, log)? {
                // Another broker wrote the log since we loaded the group:
                // what we hold in memory may miss its records.
                return Err(io::Error::other(Reclaimed {
                    group_id: group_id.to_string(),
                    from_broker,
                }));
            }
            if let Err(e) = self.write_frame(&log.file, log.len, &frame) {
                // Leave no partial record behind; if even that fails, the
                // next use rescans the file, which cuts the torn tail.
                if let Err(te) = log.file.set_len(log.len) {
                    error!(group_id, error = %te, "cannot cut a failed write off the group log");
                    inner.reopen = true;
                }
                return Err(e);
            }
            log.len += frame.len() as u64;
            log.deltas_since_snapshot += 1;
            log.table.apply(record);
            inner.appended += 1;
            Ok(Some(Pending {
                entry: entry.clone(),
                shared: self.shared.clone(),
                seq: inner.appended,
            }))
        })
    }
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
async fn durable(ordered: io::Result<Option<Pending>>) -> io::Result<()> {
    match ordered? {
        Some(pending) => pending.wait().await,
        None => Ok(()),
    }
}

impl GroupStore for GroupLogStore {
    fn load(&self, group_id: &str) -> io::Result<Option<StoredGroup>> {
        Ok(GroupLogStore::load(self, group_id)?.map(|g| StoredGroup {
            metadata: g.metadata,
            offsets: g.offsets,
        }))
    }

    fn commit_offsets(
        &self,
        group_id: &str,
        offsets: &[(String, i32, OffsetAndMetadata)],
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
}

#[cfg(test)]
mod tests;
