//! The commit journal: group commit for appends to many group logs with one
//! sequential write and one `fdatasync` of one preallocated file.
//!
//! A writer appends a record to its group's log (page cache, no fsync),
//! then hands the same bytes, with the group, the log file's id and the
//! position, to the journal. A thread writes every entry waiting at that
//! moment in one `pwrite` and makes it durable with one `fdatasync`; the
//! file is preallocated, so that flush writes the data and nothing else
//! (no inode, no allocation). The group logs themselves become durable
//! later: each time the journal fills a file it switches to its second
//! file, and one `syncfs` of the volume first makes every group-log write
//! journaled so far durable in the logs, after which the old file's
//! entries are no longer needed and it is reused.
//!
//! After a crash of the machine (page cache lost), a group log may lack
//! writes its journal holds: [`orphaned`] finds journals whose process is
//! gone (their `flock` is free) and the group log store replays their
//! entries into the logs before serving. A process crash loses nothing
//! from the page cache, so replay then finds every entry in place.
//!
//! Where the volume allows it (`O_DIRECT`), rounds bypass the page cache:
//! one `pwrite` with `O_DSYNC` of whole 4 KiB blocks, the last, partial
//! block rewritten by the next round with its earlier bytes unchanged (so
//! a torn block write cannot damage an acknowledged entry). That costs
//! the kernel much less CPU per round than page-cache writeback does.
//!
//! File format: a 16-byte header (`KJNL`, format version u32, generation
//! u64), then entries: `u32 length, u32 crc32c, u64 generation, payload`,
//! with the CRC over generation and payload. An entry of another
//! generation than the header's (left from before the file was reused) or
//! a zero length ends the file. Payload: `u16 group id length, group id,
//! u64 log id, u64 position, u32 checksum of the record before, the
//! record's bytes`.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tracing::error;

use super::fs::{sync_dir, syncfs, FileLock};
use super::group_commit::{Committed, Flush, GroupCommit};

/// The journals' folder, inside the group logs' folder.
pub const JOURNAL_DIR: &str = ".journal";
/// Size of each of a journal's two files.
pub const DEFAULT_CAPACITY: u64 = 8 << 20;

const SUFFIX: &str = ".jnl";
const CREATING: &str = ".jnl.creating";
const MAGIC: &[u8; 4] = b"KJNL";
const FORMAT: u32 = 1;
const HEADER_LEN: u64 = 16;

/// One write to a group log, as the journal keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalEntry {
    pub group_id: String,
    /// The id in the header of the log file written to.
    pub log_id: u64,
    /// Where in that file the bytes were written.
    pub position: u64,
    /// Checksum of the record the bytes follow in that file.
    pub prev_crc: u32,
    pub bytes: Vec<u8>,
}

impl JournalEntry {
    pub fn as_ref(&self) -> EntryRef<'_> {
        EntryRef {
            group_id: &self.group_id,
            log_id: self.log_id,
            position: self.position,
            prev_crc: self.prev_crc,
            bytes: &self.bytes,
        }
    }
}

/// A [`JournalEntry`] to append, borrowed: appends encode it straight
/// into the queue, so a commit allocates nothing the journal thread has
/// to free (a free from another thread contends for the allocator's
/// arena lock).
#[derive(Clone, Copy, Debug)]
pub struct EntryRef<'a> {
    pub group_id: &'a str,
    pub log_id: u64,
    pub position: u64,
    pub prev_crc: u32,
    pub bytes: &'a [u8],
}

/// Alignment and size unit of direct writes.
const BLOCK: usize = 4096;

/// Writes a journal's files with `O_DIRECT | O_DSYNC`: each write is
/// durable when it returns, without the page cache.
struct DirectWriter {
    files: [File; 2],
    /// The bytes of the current file's last partial block, up to the
    /// write position: rewritten, unchanged, in front of the next write.
    tail: Vec<u8>,
    buf: Vec<u8>,
}

impl DirectWriter {
    /// Opens both files for direct writes; `None` where the file system
    /// refuses `O_DIRECT` (tmpfs, some FUSE volumes).
    fn open(paths: [&Path; 2]) -> io::Result<Option<DirectWriter>> {
        let open = |p: &Path| {
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_DIRECT | libc::O_DSYNC)
                .open(p)
        };
        match (open(paths[0]), open(paths[1])) {
            (Ok(a), Ok(b)) => Ok(Some(DirectWriter {
                files: [a, b],
                tail: Vec::new(),
                buf: Vec::new(),
            })),
            (Err(e), _) | (_, Err(e)) if e.raw_os_error() == Some(libc::EINVAL) => Ok(None),
            (Err(e), _) | (_, Err(e)) => Err(e),
        }
    }

    /// Writes `data` at `position` of file `n` (the end of what was
    /// written there since [`Self::restart`]) and returns once durable.
    fn write(&mut self, n: usize, position: u64, data: &[u8]) -> io::Result<()> {
        let start = position - self.tail.len() as u64;
        debug_assert_eq!(start % BLOCK as u64, 0, "the tail starts a block");
        let len = self.tail.len() + data.len();
        let padded = len.div_ceil(BLOCK) * BLOCK;
        // Zeroed, one block longer than needed so an aligned start fits.
        self.buf.clear();
        self.buf.resize(padded + BLOCK, 0);
        let at = self.buf.as_ptr().align_offset(BLOCK);
        let blocks = &mut self.buf[at..at + padded];
        blocks[..self.tail.len()].copy_from_slice(&self.tail);
        blocks[self.tail.len()..len].copy_from_slice(data);
        self.files[n].write_all_at(blocks, start)?;
        let keep = ((position + data.len() as u64) % BLOCK as u64) as usize;
        self.tail.clear();
        self.tail.extend_from_slice(&blocks[len - keep..len]);
        Ok(())
    }

    /// Starts file `n` over: its header, durable, at its first block.
    fn restart(&mut self, n: usize, header: &[u8]) -> io::Result<()> {
        self.tail.clear();
        self.write(n, 0, header)
    }
}

/// The open files, owned by the journal's round thread.
struct Files {
    /// Locked (the lock says the journal is live) and used for buffered
    /// writes where direct ones are refused.
    files: [File; 2],
    direct: Option<DirectWriter>,
    current: usize,
    position: u64,
    /// The generation of the file being written, published to callers
    /// (entries encoded under an older one are re-stamped by the round
    /// that writes them).
    generation: Arc<AtomicU64>,
    capacity: u64,
    /// A write failed: the page cache of the current file cannot be
    /// trusted, so the next round starts the other file.
    must_switch: bool,
    /// The other file holds entries whose log writes no checkpoint has
    /// made durable yet: it cannot be reused before one has.
    other_uncovered: bool,
    /// The checkpoint (`syncfs`) started at the last switch.
    checkpoint: Option<std::thread::JoinHandle<io::Result<()>>>,
    /// The group logs' folder, for `syncfs`.
    volume: File,
    after_flush: Option<AfterFlush>,
}

/// Run after every round is durable and before its callers are answered:
/// an error fails the round (the process's fence check).
pub type AfterFlush = Arc<dyn Fn() -> io::Result<()> + Send + Sync>;

/// A broker process's journal. Its files are created, and its round
/// thread started, by the first append: stores that only read never make
/// one.
pub struct Journal {
    rounds: GroupCommit<Files>,
    /// The generation entries are encoded under (see [`Files::generation`]).
    generation: Arc<AtomicU64>,
}

fn header(generation: u64) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[0..4].copy_from_slice(MAGIC);
    h[4..8].copy_from_slice(&FORMAT.to_be_bytes());
    h[8..16].copy_from_slice(&generation.to_be_bytes());
    h
}

fn encode_entry(out: &mut Vec<u8>, generation: u64, e: &EntryRef<'_>) -> io::Result<()> {
    let id_len = u16::try_from(e.group_id.len()).map_err(io::Error::other)?;
    u32::try_from(8 + 2 + e.group_id.len() + 20 + e.bytes.len()).map_err(io::Error::other)?;
    let start = out.len();
    out.extend_from_slice(&[0u8; 8]);
    out.extend_from_slice(&generation.to_be_bytes());
    out.extend_from_slice(&id_len.to_be_bytes());
    out.extend_from_slice(e.group_id.as_bytes());
    out.extend_from_slice(&e.log_id.to_be_bytes());
    out.extend_from_slice(&e.position.to_be_bytes());
    out.extend_from_slice(&e.prev_crc.to_be_bytes());
    out.extend_from_slice(e.bytes);
    let len = (out.len() - start - 8) as u32;
    let crc = crc32c::crc32c(&out[start + 8..]);
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// Stamps the whole entries of `encoded` (laid out as [`encode_entry`]
/// writes them) with `generation` and recomputes their checksums: only
/// those of another generation, or every one with `every`. Stops at the
/// first entry that is not whole.
fn stamp_generation(encoded: &mut [u8], generation: u64, every: bool) {
    let stamp = generation.to_be_bytes();
    let mut at = 0;
    while at + 16 <= encoded.len() {
        let len = u32::from_be_bytes(encoded[at..at + 4].try_into().expect("4 bytes")) as usize;
        let Some(end) = (at + 8)
            .checked_add(len)
            .filter(|&end| len >= 8 && end <= encoded.len())
        else {
            return;
        };
        if every || encoded[at + 8..at + 16] != stamp {
            encoded[at + 8..at + 16].copy_from_slice(&stamp);
            let crc = crc32c::crc32c(&encoded[at + 8..end]);
            encoded[at + 4..at + 8].copy_from_slice(&crc.to_be_bytes());
        }
        at = end;
    }
}

/// A journal file of generation 1 holding `body` as its entries, every
/// whole entry stamped with that generation and a valid checksum, so that
/// fuzzed entries get past the checks and reach replay.
#[doc(hidden)]
pub fn fuzz_file(body: &[u8]) -> Vec<u8> {
    let mut out = header(1).to_vec();
    out.extend_from_slice(body);
    stamp_generation(&mut out[HEADER_LEN as usize..], 1, true);
    out
}

/// The entries of one journal file, in order, and its generation; an
/// unreadable or foreign file reads as empty.
pub fn parse(data: &[u8]) -> (u64, Vec<JournalEntry>) {
    // Reading from a slice cannot fail.
    read(data).unwrap_or_default()
}

/// [`parse`] of what `from` yields, read in small pieces: a whole-file
/// buffer (8 MiB), once freed, raises glibc's mmap threshold and leaves the
/// heap, and the broker's RSS, that much larger for the rest of its life.
pub fn read(from: impl io::Read) -> io::Result<(u64, Vec<JournalEntry>)> {
    let mut input = Pieces {
        from,
        buf: Vec::new(),
        start: 0,
        eof: false,
    };
    let header = input.peek(HEADER_LEN as usize)?;
    if header.len() < HEADER_LEN as usize
        || &header[0..4] != MAGIC
        || header[4..8] != FORMAT.to_be_bytes()
    {
        return Ok((0, Vec::new()));
    }
    let generation = u64::from_be_bytes(header[8..16].try_into().expect("8 bytes"));
    input.consume(HEADER_LEN as usize);
    let mut entries = Vec::new();
    loop {
        let head = input.peek(8)?;
        if head.len() < 8 {
            break;
        }
        let len = u32::from_be_bytes(head[0..4].try_into().expect("4 bytes")) as usize;
        let Some((entry, n)) = parse_entry(input.peek(8 + len)?, generation) else {
            break;
        };
        entries.push(entry);
        input.consume(n);
    }
    Ok((generation, entries))
}

/// A reader's bytes, pulled 64 KiB at a time as parsing needs them.
struct Pieces<R> {
    from: R,
    buf: Vec<u8>,
    /// First byte of `buf` not consumed yet.
    start: usize,
    eof: bool,
}

impl<R: io::Read> Pieces<R> {
    const PIECE: usize = 64 << 10;

    /// The next `n` bytes, or fewer at the end of the input.
    fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        while self.buf.len() - self.start < n && !self.eof {
            self.buf.drain(..self.start);
            self.start = 0;
            let have = self.buf.len();
            self.buf.resize(have + Self::PIECE, 0);
            let got = loop {
                match self.from.read(&mut self.buf[have..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r,
                }
            };
            self.buf.truncate(have + *got.as_ref().unwrap_or(&0));
            self.eof = got? == 0;
        }
        let end = (self.start + n).min(self.buf.len());
        Ok(&self.buf[self.start..end])
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
    }
}

fn parse_entry(data: &[u8], generation: u64) -> Option<(JournalEntry, usize)> {
    let len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let crc = u32::from_be_bytes(data.get(4..8)?.try_into().ok()?);
    let body = data.get(8..8 + len)?;
    if len < 8 + 2 + 20 || crc32c::crc32c(body) != crc {
        return None;
    }
    if u64::from_be_bytes(body[0..8].try_into().ok()?) != generation {
        return None;
    }
    let id_len = u16::from_be_bytes(body[8..10].try_into().ok()?) as usize;
    let id = body.get(10..10 + id_len)?;
    let rest = body.get(10 + id_len..)?;
    let log_id = u64::from_be_bytes(rest.get(0..8)?.try_into().ok()?);
    let position = u64::from_be_bytes(rest.get(8..16)?.try_into().ok()?);
    let prev_crc = u32::from_be_bytes(rest.get(16..20)?.try_into().ok()?);
    let entry = JournalEntry {
        group_id: String::from_utf8(id.to_vec()).ok()?,
        log_id,
        position,
        prev_crc,
        bytes: rest[20..].to_vec(),
    };
    Some((entry, 8 + len))
}

/// Creates one preallocated, zero-filled journal file, locked, under its
/// final name (it is renamed into place only once locked, so a replayer
/// never takes a live journal for an orphan).
fn create_file(folder: &Path, tag: &str, n: usize, capacity: u64) -> io::Result<File> {
    let creating = folder.join(format!("{tag}-{n}{CREATING}"));
    let made = make_file(&creating, capacity).and_then(|file| {
        fs::rename(&creating, file_path(folder, tag, n))?;
        Ok(file)
    });
    if made.is_err() {
        let _ = fs::remove_file(&creating);
    }
    made
}

fn file_path(folder: &Path, tag: &str, n: usize) -> PathBuf {
    folder.join(format!("{tag}-{n}{SUFFIX}"))
}

/// A zero-filled file of `capacity` bytes, locked.
fn make_file(creating: &Path, capacity: u64) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(creating)?;
    file.lock()?;
    let zeros = vec![0u8; 1 << 20];
    let mut at = 0;
    while at < capacity {
        let n = zeros.len().min((capacity - at) as usize);
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    file.sync_all()?;
    Ok(file)
}

/// Creates both files, locked, the first started, under `folder`.
fn open_files(
    folder: &Path,
    tag: &str,
    capacity: u64,
    volume: File,
    generation: Arc<AtomicU64>,
    after_flush: Option<AfterFlush>,
) -> io::Result<Files> {
    fs::create_dir_all(folder)?;
    let a = create_file(folder, tag, 0, capacity)?;
    let b = create_file(folder, tag, 1, capacity)?;
    let paths = [0, 1].map(|n| file_path(folder, tag, n));
    let mut direct = DirectWriter::open([&paths[0], &paths[1]])?;
    match &mut direct {
        Some(d) => d.restart(0, &header(1))?,
        None => {
            a.write_all_at(&header(1), 0)?;
            a.sync_data()?;
        }
    }
    sync_dir(folder)?;
    generation.store(1, Ordering::Release);
    Ok(Files {
        files: [a, b],
        direct,
        current: 0,
        position: HEADER_LEN,
        generation,
        capacity,
        must_switch: false,
        other_uncovered: false,
        checkpoint: None,
        volume,
        after_flush,
    })
}

impl Flush for Files {
    type Batch = Vec<u8>;

    fn flush(&mut self, encoded: &mut Vec<u8>) -> io::Result<()> {
        self.write(encoded).map_err(|e| {
            error!(error = %e, "commit journal write failed");
            self.must_switch = true;
            io::Error::new(e.kind(), format!("commit journal write failed: {e}"))
        })?;
        // Durable; acknowledged only if this process was not fenced
        // meanwhile (docs/design/volume.md).
        match &self.after_flush {
            Some(check) => check(),
            None => Ok(()),
        }
    }
}

impl Files {
    /// Writes one round's entries.
    fn write(&mut self, encoded: &mut [u8]) -> io::Result<()> {
        if self.must_switch || self.position + encoded.len() as u64 > self.capacity {
            self.switch()?;
            if self.position + encoded.len() as u64 > self.capacity {
                // Larger than a whole journal file (a commit of many
                // thousand partitions): the logs hold these writes already,
                // so a sync of the volume makes them durable instead.
                return syncfs(&self.volume);
            }
        }
        // Entries queued while the last round switched files carry the
        // old generation.
        let generation = self.generation.load(Ordering::Acquire);
        stamp_generation(encoded, generation, false);
        let written = match &mut self.direct {
            Some(d) => d.write(self.current, self.position, encoded),
            None => {
                let file = &self.files[self.current];
                file.write_all_at(encoded, self.position)
                    .and_then(|()| file.sync_data())
            }
        };
        self.position += encoded.len() as u64;
        written
    }

    /// Starts the other file, and a checkpoint: everything journaled in
    /// the file being left was written to its group log first, so one
    /// `syncfs` makes it durable there, after which that file is no longer
    /// needed. It is reused at the next switch (under a new generation that
    /// ends it at its first old entry), which first waits for that
    /// checkpoint: the `syncfs` runs off the commit path, beside rounds.
    fn switch(&mut self) -> io::Result<()> {
        if self.other_uncovered {
            let done = match self.checkpoint.take() {
                Some(thread) => thread
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("journal checkpoint panicked"))),
                None => Err(io::Error::other("no checkpoint ran")),
            };
            if let Err(e) = done {
                error!(error = %e, "commit journal checkpoint failed; retrying before reuse");
                syncfs(&self.volume)?;
            }
            self.other_uncovered = false;
        }
        let next = 1 - self.current;
        let generation = self.generation.load(Ordering::Acquire) + 1;
        match &mut self.direct {
            Some(d) => d.restart(next, &header(generation))?,
            None => {
                self.files[next].write_all_at(&header(generation), 0)?;
                self.files[next].sync_data()?;
            }
        }
        self.current = next;
        self.generation.store(generation, Ordering::Release);
        self.position = HEADER_LEN;
        self.must_switch = false;
        self.other_uncovered = true;
        let volume = self.volume.try_clone()?;
        self.checkpoint = Some(
            std::thread::Builder::new()
                .name("kaas-journal-checkpoint".into())
                .spawn(move || syncfs(&volume))?,
        );
        Ok(())
    }
}

impl Journal {
    /// A journal in `<logs>/.journal`, its files named after `tag` (unique
    /// to this process). Nothing is created before the first append.
    pub fn new(logs: &Path, tag: &str, capacity: u64) -> io::Result<Journal> {
        Journal::checked(logs, tag, capacity, None)
    }

    /// [`Journal::new`] whose rounds, once durable, run `after_flush`
    /// (the process's fence check) and fail if it does.
    pub fn checked(
        logs: &Path,
        tag: &str,
        capacity: u64,
        after_flush: Option<AfterFlush>,
    ) -> io::Result<Journal> {
        let folder = logs.join(JOURNAL_DIR);
        let volume = File::open(logs)?;
        let tag = tag.to_string();
        let generation = Arc::new(AtomicU64::new(1));
        let published = generation.clone();
        let rounds = GroupCommit::new("kaas-journal", move || {
            let volume = volume.try_clone()?;
            open_files(
                &folder,
                &tag,
                capacity,
                volume,
                published.clone(),
                after_flush.clone(),
            )
            .map_err(|e| {
                error!(error = %e, "cannot create the commit journal");
                io::Error::new(e.kind(), format!("cannot create the commit journal: {e}"))
            })
        });
        Ok(Journal { rounds, generation })
    }

    /// Queues `entries` now, in order after everything queued before; the
    /// future resolves once they are durable.
    pub fn append<'a>(&self, entries: impl IntoIterator<Item = EntryRef<'a>>) -> Committed {
        self.rounds.submit(|encoded| {
            let before = encoded.len();
            let generation = self.generation.load(Ordering::Acquire);
            for e in entries {
                if let Err(e) = encode_entry(encoded, generation, &e) {
                    // All or none of the call's entries.
                    encoded.truncate(before);
                    return Err(e);
                }
            }
            Ok(())
        })
    }

    /// Journal rounds (one `fdatasync` each) so far.
    pub fn rounds(&self) -> u64 {
        self.rounds.rounds()
    }

    /// Holds rounds back (`true`) or lets them run again.
    #[cfg(test)]
    pub(crate) fn hold(&self, held: bool) {
        self.rounds.hold(held);
    }

    /// Appends waiting for a round not started yet.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.rounds.queued()
    }
}

/// A journal whose process is gone, locked by the caller until dropped.
pub struct Orphan {
    pub path: PathBuf,
    pub generation: u64,
    pub entries: Vec<JournalEntry>,
    _file: File,
}

/// Holds the folder's replay lock: one replay at a time, so entries of
/// several journals about one log are applied together.
pub struct ReplayLock {
    _held: FileLock,
}

impl ReplayLock {
    /// `None` when there is no journal folder (nothing to replay).
    pub fn acquire(logs: &Path) -> io::Result<Option<ReplayLock>> {
        let folder = logs.join(JOURNAL_DIR);
        if !folder.is_dir() {
            return Ok(None);
        }
        Ok(Some(ReplayLock {
            _held: FileLock::acquire_path(&folder.join("replay.lock"))?,
        }))
    }
}

/// The journals under `logs` whose process is gone (their lock is free),
/// oldest generation first; unfinished files of crashed creators are
/// deleted. Call with the [`ReplayLock`] held.
pub fn orphaned(logs: &Path, _held: &ReplayLock) -> io::Result<Vec<Orphan>> {
    let folder = logs.join(JOURNAL_DIR);
    let mut found = Vec::new();
    for dirent in fs::read_dir(&folder)? {
        let path = dirent?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let creating = name.ends_with(CREATING);
        if !creating && !name.ends_with(SUFFIX) {
            continue;
        }
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => continue,
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
        if creating {
            fs::remove_file(&path)?;
            continue;
        }
        let (generation, entries) = read(&file)?;
        found.push(Orphan {
            path,
            generation,
            entries,
            _file: file,
        });
    }
    found.sort_by_key(|o| o.generation);
    Ok(found)
}

/// The entries of every journal of `broker`'s processes under `logs`
/// (named `<broker>-<incarnation>-<n>.jnl`), live or not, read without
/// taking their locks: for a broker taking logs over from a fenced
/// process. Oldest generation first; each file's entries in order.
pub fn of_broker(logs: &Path, broker: i32) -> io::Result<Vec<JournalEntry>> {
    let folder = logs.join(JOURNAL_DIR);
    let prefix = format!("{broker}-");
    let mut files = Vec::new();
    let listing = match fs::read_dir(&folder) {
        Ok(l) => l,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    for dirent in listing {
        let path = dirent?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.starts_with(&prefix) || !name.ends_with(SUFFIX) {
            continue;
        }
        match File::open(&path) {
            Ok(f) => files.push(read(f)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
    files.sort_by_key(|(generation, _)| *generation);
    Ok(files.into_iter().flat_map(|(_, entries)| entries).collect())
}

#[cfg(test)]
mod tests;
