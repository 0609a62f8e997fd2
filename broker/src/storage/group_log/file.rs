//! One group log as a file: its scan (replay), opening it (recovering a
//! torn tail), creating it, and reading its header.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracing::warn;

use super::durability::Durability;
use super::fencing::LogLock;
use super::records::{
    check_header, encode, header_record, invalid_data, new_log_id, read_frame, Record, FRAME_HEADER,
};
use super::table::Table;
use super::{LogDamage, FORMAT_VERSION, MAX_HEADER_BYTES, SNAPSHOT_BYTES_FACTOR, SNAPSHOT_EVERY};

#[derive(Default)]
pub(super) struct Scan {
    pub(super) table: Table,
    /// The header's log id (0 for logs written before it existed).
    pub(super) log_id: u64,
    /// Checksum of the last intact record.
    pub(super) last_crc: u32,
    /// End of the last intact record.
    pub(super) valid_end: u64,
    pub(super) snapshots: usize,
    pub(super) deltas: usize,
    pub(super) since_snapshot: SinceSnapshot,
    pub(super) damage: Option<(u64, String)>,
}

/// What was appended since the last snapshot, to decide the next one.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SinceSnapshot {
    /// Size of the last snapshot record (0: none yet).
    pub(super) snapshot_bytes: u64,
    pub(super) deltas: usize,
    pub(super) delta_bytes: u64,
}

impl SinceSnapshot {
    pub(super) fn delta(&mut self, bytes: usize) {
        self.deltas += 1;
        self.delta_bytes += bytes as u64;
    }

    pub(super) fn due(&self) -> bool {
        self.deltas >= SNAPSHOT_EVERY
            && self.delta_bytes >= SNAPSHOT_BYTES_FACTOR * self.snapshot_bytes
    }
}

/// Replays a whole log. Errors only for a log that is not this group's (or
/// not this format); damage is returned in the scan.
pub(super) fn scan(data: &[u8], group_id: &str) -> io::Result<Scan> {
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

#[derive(Clone, Debug)]
pub(super) struct LogPaths {
    pub(super) group_id: String,
    pub(super) root: PathBuf,
    pub(super) path: PathBuf,
    pub(super) tmp: PathBuf,
}

/// A log open for appends, with its materialised state (used to write snapshots).
#[derive(Debug)]
pub(super) struct OpenLog {
    pub(super) file: Arc<File>,
    /// The id in the file's header, named by journal entries.
    pub(super) log_id: u64,
    /// Checksum of the last record written: a journal entry names the
    /// record it follows, so replay never puts it after another one.
    pub(super) last_crc: u32,
    /// End of the last complete record: where the next one goes.
    pub(super) len: u64,
    /// (device, inode) of the file, to notice a log replaced underneath us.
    pub(super) identity: (u64, u64),
    pub(super) since_snapshot: SinceSnapshot,
    pub(super) table: Table,
    /// The file was created or renamed into place: the folder must be
    /// fsynced before anything in it counts as durable.
    pub(super) dir_dirty: bool,
    /// Opened for reads only (the volume is read-only): served, never
    /// appended to; the next write reopens it read-write.
    pub(super) read_only: bool,
}

impl OpenLog {
    /// Whether the file at `path` is still the one we write, as we left it.
    pub(super) fn is_current(&self, paths: &LogPaths) -> io::Result<bool> {
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
pub(super) fn frame_crc(frame: &[u8]) -> u32 {
    u32::from_be_bytes(frame[4..8].try_into().expect("a whole frame"))
}

pub(super) fn identity(file: &File) -> io::Result<(u64, u64)> {
    let m = file.metadata()?;
    Ok((m.dev(), m.ino()))
}

/// What an open replayed.
#[derive(Debug, Default)]
pub(super) struct Replay {
    pub(super) damage: Option<LogDamage>,
    pub(super) snapshots: usize,
    pub(super) deltas: usize,
}

/// An opened log, its replay, and the file lock held on it.
pub(super) type Opened = (OpenLog, Replay, LogLock);

/// Opens (recovering) the log; with `create`, creates a missing one.
/// `None`: no log and `create` is false. Creating does not fsync: the new
/// log is marked `dir_dirty` and the next group commit makes it durable.
/// Returns with the log's file lock held, taken before the file is read.
pub(super) fn open_log(
    p: &LogPaths,
    create: bool,
    shared: &Durability,
) -> io::Result<Option<Opened>> {
    let mut attempts = 0;
    let mut read_only = false;
    let (file, guard) = loop {
        let opened = match OpenOptions::new().read(true).write(true).open(&p.path) {
            // A read-only volume still serves reads (`flock` works on a
            // descriptor opened for reading).
            Err(e) if crate::storage::is_read_only(&e) => {
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
        let guard = LogLock::acquire(&file)?;
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
pub(super) fn create_log(p: &LogPaths) -> io::Result<Opened> {
    let file = Arc::new(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&p.path)?,
    );
    let log_id = new_log_id();
    let header = encode(&header_record(&p.group_id, log_id))?;
    let written = LogLock::acquire(&file).and_then(|guard| {
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
pub(super) fn write_tmp(p: &LogPaths, bytes: &[u8], shared: &Durability) -> io::Result<File> {
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
pub(super) fn count_frames(mut buf: &[u8]) -> usize {
    let mut n = 0;
    while buf.len() >= FRAME_HEADER {
        let len = u32::from_be_bytes(buf[0..4].try_into().expect("4 bytes")) as usize;
        buf = &buf[(FRAME_HEADER + len).min(buf.len())..];
        n += 1;
    }
    n
}

/// The group id in a log's header; `None` if the file is gone.
pub(super) fn read_header(path: &Path) -> io::Result<Option<String>> {
    match File::open(path) {
        Ok(f) => Ok(Some(read_header_of(&f)?.0)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The group id and log id in the header of an open log.
pub(super) fn read_header_of(mut file: &File) -> io::Result<(String, u64)> {
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

pub(super) fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
