//! A broker process's incarnation on the shared volume, and its fence
//! (docs/design/volume.md).
//!
//! Every broker process registers an incarnation: a file
//! `__cluster/incarnations/<broker>-<id>` of two blocks. The first holds a
//! fence record, written only by *other* brokers; the second the owner's
//! heartbeat, written only by the owner. What a broker holds on the volume
//! (a partition's generation, a group log's claim) names the incarnation
//! that holds it.
//!
//! A broker that takes something over without the holder's file lock (the
//! holder's node may have lost its volume, and a network file system keeps
//! a lost client's locks until its lease ends) first *fences* the holder:
//! it writes the fence record and makes it durable, and only then reads
//! what the holder left. The holder, after each write of its own is
//! durable and before it acknowledges it, reads the fence record fresh
//! ([`Incarnation::check_fence`], on the thread that made the write
//! durable, in the same round): either that read came before the fence,
//! and so the write was durable before the taker read, or it sees the
//! fence and acknowledges nothing more. The cost is one small read per
//! durability round (a `pread` of a cached block on a local file system).
//!
//! "Fresh" depends on the volume: on a local file system one page cache
//! serves every process, so a plain `pread` is current; on a network file
//! system (NFS, CephFS, FUSE, SMB) the client may cache, so the block is
//! read with `O_DIRECT` (from the server), or, where that is refused,
//! through a file opened anew (close-to-open consistency).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use tracing::{error, info, warn};

use super::fs::sync_dir;

/// The folder of incarnation files under `__cluster`.
pub const FOLDER: &str = "incarnations";

/// Size of each of the file's two blocks (the `O_DIRECT` unit).
const BLOCK: usize = 4096;
const FENCE_MAGIC: &[u8; 8] = b"KAASFNC1";
const HEARTBEAT_MAGIC: &[u8; 8] = b"KAASHB01";
const RECORD_LEN: usize = 28;

/// Who fenced an incarnation, and under which assignment version: the
/// fenced process serves nothing again before it follows one at least as
/// new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    pub by_broker: i32,
    pub at_version: u64,
}

impl Fence {
    fn encode(&self) -> [u8; RECORD_LEN] {
        let mut out = [0u8; RECORD_LEN];
        out[0..8].copy_from_slice(FENCE_MAGIC);
        out[8..12].copy_from_slice(&self.by_broker.to_be_bytes());
        out[12..20].copy_from_slice(&self.at_version.to_be_bytes());
        let crc = crc32c::crc32c(&out[..20]);
        out[20..24].copy_from_slice(&crc.to_be_bytes());
        out
    }

    /// The fence in a first block; `None` for an unfenced (zeroed) one. A
    /// block that holds anything else counts as fenced by an unknown
    /// broker: someone began to write a fence there.
    fn decode(block: &[u8]) -> Option<Fence> {
        let record = &block[..RECORD_LEN.min(block.len())];
        if record.iter().all(|b| *b == 0) {
            return None;
        }
        let valid = record.len() == RECORD_LEN
            && &record[0..8] == FENCE_MAGIC
            && crc32c::crc32c(&record[..20]).to_be_bytes() == record[20..24];
        Some(match valid {
            true => Fence {
                by_broker: i32::from_be_bytes(record[8..12].try_into().expect("4")),
                at_version: u64::from_be_bytes(record[12..20].try_into().expect("8")),
            },
            false => Fence {
                by_broker: -1,
                at_version: 0,
            },
        })
    }
}

/// How a block written by another process is read so that what the read
/// returns is what the volume holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshRead {
    /// A local file system: one page cache, so a plain read is current.
    Plain,
    /// A network file system that takes `O_DIRECT`: read from the server.
    Direct,
    /// A network file system that refuses `O_DIRECT`: a file opened anew
    /// (an open revalidates what the client cached: close-to-open).
    Reopen,
}

/// `statfs` magic numbers of file systems with one page cache per
/// machine, where no other machine writes.
const LOCAL_FILE_SYSTEMS: [i64; 7] = [
    0xEF53,      // ext2/3/4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0x0102_1994, // tmpfs
    0x794C_7630, // overlayfs
    0x2FC1_2FC1, // zfs
    0xF2F5_2010, // f2fs
];

/// The file system type (`statfs.f_type`) holding `path`.
pub fn file_system_type(path: &Path) -> io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer statfs fills on success.
    if unsafe { libc::statfs(c_path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statfs returned 0, so it filled the buffer.
    #[allow(clippy::unnecessary_cast)]
    Ok(unsafe { stat.assume_init() }.f_type as i64)
}

/// Whether the volume holding `path` is a local file system (one page
/// cache), as opposed to one other machines write too.
pub fn is_local(path: &Path) -> io::Result<bool> {
    let kind = file_system_type(path)?;
    Ok(LOCAL_FILE_SYSTEMS.contains(&kind))
}

/// A reader of one block of one file, current as [`FreshRead`] says.
/// Reads share nothing but the descriptor (`pread`), so threads checking
/// at once do not wait for one another's round trip.
struct BlockReader {
    path: PathBuf,
    /// Kept open for `Plain` and `Direct`.
    file: Option<File>,
}

/// One block, aligned for a direct read.
struct Block {
    buf: Vec<u8>,
    at: usize,
}

impl Block {
    fn bytes(&self) -> &[u8] {
        &self.buf[self.at..self.at + BLOCK]
    }
}

impl BlockReader {
    fn open(path: &Path, mode: FreshRead) -> io::Result<BlockReader> {
        let file = match mode {
            FreshRead::Plain => Some(File::open(path)?),
            FreshRead::Direct => Some(
                OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(path)?,
            ),
            FreshRead::Reopen => None,
        };
        Ok(BlockReader {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Block `n` of the file as the volume holds it now (zeros past the
    /// end).
    fn read(&self, n: u64) -> io::Result<Block> {
        let mut buf = vec![0u8; 2 * BLOCK];
        let at = buf.as_ptr().align_offset(BLOCK);
        let block = &mut buf[at..at + BLOCK];
        match &self.file {
            Some(file) => read_full(file, block, n * BLOCK as u64)?,
            None => read_full(&File::open(&self.path)?, block, n * BLOCK as u64)?,
        }
        Ok(Block { buf, at })
    }
}

/// Reads into `block` from `offset` until it is full or the file ends.
fn read_full(file: &File, block: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < block.len() {
        match file.read_at(&mut block[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Picks how to read another process's writes on the volume of `dir`:
/// [`FreshRead::Plain`] on a local file system, else `Direct` where the
/// file at `probe` opens with `O_DIRECT`, else `Reopen`.
pub fn fresh_read_for(dir: &Path, probe: &Path) -> io::Result<FreshRead> {
    if is_local(dir)? {
        return Ok(FreshRead::Plain);
    }
    match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(probe)
    {
        Ok(_) => Ok(FreshRead::Direct),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(FreshRead::Reopen),
        Err(e) => Err(e),
    }
}

/// What the owner's check rounds share with the owner.
#[derive(Default)]
struct Standing {
    fence: Mutex<Option<Fence>>,
}

impl Standing {
    fn record(&self, block: &[u8], who: &str) -> io::Result<()> {
        let Some(fence) = Fence::decode(block) else {
            return Ok(());
        };
        let mut held = self.fence.lock();
        if held.is_none() {
            error!(
                incarnation = who,
                by_broker = fence.by_broker,
                at_version = fence.at_version,
                "this broker process was fenced by another broker, which took over what it \
                    held: it acknowledges nothing more"
            );
            *held = Some(fence);
        }
        Err(fenced_error(fence))
    }
}

/// The error of a fenced process's writes: "fenced by broker …".
pub fn fenced_error(fence: Fence) -> io::Error {
    io::Error::other(Fenced(fence))
}

/// The fence an error of [`fenced_error`] carries.
pub fn fence_of(e: &io::Error) -> Option<Fence> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<Fenced>())
        .map(|f| f.0)
}

#[derive(Debug)]
struct Fenced(Fence);

impl std::fmt::Display for Fenced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fenced by broker {} at assignment version {}",
            self.0.by_broker, self.0.at_version
        )
    }
}

impl std::error::Error for Fenced {}

/// This broker process on the volume. See the module documentation.
pub struct Incarnation {
    broker: i32,
    id: String,
    path: PathBuf,
    /// For the owner's heartbeats (its block only).
    file: File,
    mode: FreshRead,
    standing: Standing,
    /// Fresh reads of the file (shared by fence checks and heartbeats).
    reader: BlockReader,
    /// Heartbeats written.
    beats: Mutex<u64>,
}

impl std::fmt::Debug for Incarnation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incarnation")
            .field("broker", &self.broker)
            .field("id", &self.id)
            .finish()
    }
}

/// The path of incarnation `id` of `broker` under the cluster folder.
pub fn path(cluster_dir: &Path, broker: i32, id: &str) -> PathBuf {
    cluster_dir.join(FOLDER).join(format!("{broker}-{id}"))
}

impl Incarnation {
    /// Registers a new incarnation of `broker` under `cluster_dir`: its
    /// file created and durable, unfenced.
    pub fn register(cluster_dir: &Path, broker: i32) -> io::Result<Arc<Incarnation>> {
        let folder = cluster_dir.join(FOLDER);
        fs::create_dir_all(&folder)?;
        let id = uuid::Uuid::new_v4().simple().to_string();
        let path = path(cluster_dir, broker, &id);
        let file = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&path)?;
        let mut blocks = vec![0u8; 2 * BLOCK];
        blocks[BLOCK..BLOCK + RECORD_LEN].copy_from_slice(&heartbeat_record(broker, 0));
        file.write_all_at(&blocks, 0)?;
        file.sync_all()?;
        // Held for the process's life: free once the process is gone (or
        // the volume gave up on its node), which says it writes no more.
        if let Err(e) = file.lock() {
            warn!(error = %e, "cannot lock this process's incarnation file; other brokers will \
                  count it live until it is removed");
        }
        sync_dir(&folder)?;
        let mode = fresh_read_for(&folder, &path)?;
        info!(broker, incarnation = %id, read = ?mode, "registered this broker process on the volume");
        Ok(Arc::new(Incarnation {
            reader: BlockReader::open(&path, mode)?,
            beats: Mutex::new(0),
            broker,
            id,
            path,
            file,
            mode,
            standing: Standing::default(),
        }))
    }

    pub fn broker(&self) -> i32 {
        self.broker
    }

    /// The incarnation's id (the file's name after `<broker>-`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// How this incarnation reads what other processes wrote.
    pub fn fresh_read(&self) -> FreshRead {
        self.mode
    }

    /// The fence found by a check, if one was.
    pub fn fenced(&self) -> Option<Fence> {
        *self.standing.fence.lock()
    }

    /// Reads the fence block fresh: call it after a write is durable and
    /// before acknowledging it (blocking). An error when fenced (then
    /// [`Self::fenced`] says by whom) or when the read failed.
    pub fn check_fence(&self) -> io::Result<()> {
        if let Some(fence) = self.fenced() {
            return Err(fenced_error(fence));
        }
        let block = self.reader.read(0)?;
        self.standing.record(block.bytes(), &self.id)
    }

    /// The volume check: the owner's heartbeat block written and made
    /// durable, then both blocks read back fresh. Blocking: a stalled
    /// volume stalls it, which is what the caller's timeout measures.
    pub fn heartbeat(&self) -> io::Result<()> {
        let mut count = self.beats.lock();
        *count += 1;
        let record = heartbeat_record(self.broker, *count);
        self.file.write_all_at(&record, BLOCK as u64)?;
        self.file.sync_data()?;
        let fence = self.reader.read(0)?;
        let back = self.reader.read(1)?;
        let back = back.bytes();
        if back[..RECORD_LEN] != record {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the volume check read back something else than it had just written and \
                     synced to {}: the volume does not show this broker its own writes",
                    self.path.display()
                ),
            ));
        }
        self.standing.record(fence.bytes(), &self.id)
    }

    /// The file, for a volume check.
    pub fn file_path(&self) -> &Path {
        &self.path
    }
}

fn heartbeat_record(broker: i32, count: u64) -> [u8; RECORD_LEN] {
    let mut out = [0u8; RECORD_LEN];
    out[0..8].copy_from_slice(HEARTBEAT_MAGIC);
    out[8..12].copy_from_slice(&broker.to_be_bytes());
    out[12..20].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&out[..20]);
    out[20..24].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Fences incarnation `id` of `broker`: writes `fence` into its first
/// block and makes it durable. Blocking. An incarnation whose file is gone
/// (its broker removed it at a clean exit) is not there to fence.
pub fn fence(cluster_dir: &Path, broker: i32, id: &str, fence: Fence) -> io::Result<()> {
    let path = path(cluster_dir, broker, id);
    let file = match OpenOptions::new().write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            warn!(
                broker,
                incarnation = id,
                "no incarnation file to fence: it ended cleanly"
            );
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    file.write_all_at(&fence.encode(), 0)?;
    file.sync_data()?;
    info!(
        broker,
        incarnation = id,
        by_broker = fence.by_broker,
        at_version = fence.at_version,
        "fenced a broker process that held what this broker takes over"
    );
    Ok(())
}

/// Whether the process of incarnation `id` of `broker` may still write:
/// its file is there and locked (its process holds the lock for its life,
/// and a network file system keeps it for a node that vanished until its
/// lease ends). A lock that cannot be tested counts as held.
pub fn is_live(cluster_dir: &Path, broker: i32, id: &str) -> bool {
    let file = match File::open(path(cluster_dir, broker, id)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    match file.try_lock() {
        Ok(()) => false,
        Err(_) => true,
    }
}

/// Removes the incarnation files of `broker`'s earlier processes that are
/// gone (their lock is free): at start, after their journals were
/// replayed. Only a broker's own: no other process registers under its id
/// meanwhile.
pub fn retire_ended(cluster_dir: &Path, broker: i32, mine: &str) -> io::Result<usize> {
    let folder = cluster_dir.join(FOLDER);
    let prefix = format!("{broker}-");
    let mut retired = 0;
    for dirent in fs::read_dir(&folder)? {
        let name = dirent?.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        if id == mine || is_live(cluster_dir, broker, id) {
            continue;
        }
        match fs::remove_file(folder.join(&name)) {
            Ok(()) => retired += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    if retired > 0 {
        info!(
            broker,
            retired, "removed the incarnation files of this broker's ended processes"
        );
    }
    Ok(retired)
}

/// The fence of incarnation `id` of `broker`, as the volume holds it now
/// (read as `mode` says). `None`: not fenced, or no such incarnation.
pub fn read_fence(
    cluster_dir: &Path,
    broker: i32,
    id: &str,
    mode: FreshRead,
) -> io::Result<Option<Fence>> {
    let path = path(cluster_dir, broker, id);
    let reader = match BlockReader::open(&path, mode) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if mode == FreshRead::Reopen && !path.exists() {
        return Ok(None);
    }
    Ok(Fence::decode(reader.read(0)?.bytes()))
}

impl Drop for Incarnation {
    /// A clean end removes the file: nothing this process held is held
    /// any more, so there is nothing to fence.
    fn drop(&mut self) {
        if self.fenced().is_none() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests;
