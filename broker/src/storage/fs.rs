//! The file-system primitives every durable writer of the broker uses: one
//! copy of each. The volume may be a network file system shared by many
//! machines, so nothing here caches what is on disk.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Fsyncs a directory so that entries created, renamed or removed in it are
/// durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// `syncfs(2)`: makes every write to the file system holding `on` durable,
/// and reports write-back errors of any file on it since the last call.
pub fn syncfs(on: &File) -> io::Result<()> {
    // SAFETY: `on` is an open descriptor for the duration of the call.
    if unsafe { libc::syncfs(on.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `len` bytes of `file` from `offset`, read into a fresh buffer that is
/// not zeroed first (a fetch reads megabytes: zeroing them cost as much as
/// the read). An end of file before `len` bytes is `UnexpectedEof`.
pub fn read_at(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf: Vec<u8> = Vec::with_capacity(len);
    while buf.len() < len {
        let done = buf.len();
        let at = libc::off_t::try_from(offset + done as u64)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset past off_t"))?;
        let spare = &mut buf.spare_capacity_mut()[..len - done];
        // SAFETY: `spare` is writable memory of `spare.len()` bytes owned by
        // `buf`; pread writes at most that many and reports how many.
        let n =
            unsafe { libc::pread(file.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len(), at) };
        match n {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n if n < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            // SAFETY: pread initialised the first `n` bytes of `spare`.
            n => unsafe { buf.set_len(done + n as usize) },
        }
    }
    Ok(buf)
}

/// Creates (or truncates) `path` with `bytes` and fsyncs it. The name is
/// not durable until its folder is synced.
pub fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// A temporary sibling of `path`, unique to this call: two writers (two
/// brokers on one volume) never share one.
fn tmp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Replaces `path` by a file holding `bytes`, all or nothing across a
/// crash: a temporary file is written and fsynced, renamed over `path`,
/// and the folder is fsynced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_beside(path);
    let written = write_synced(&tmp, bytes).and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    sync_dir(parent(path))
}

/// Creates `path` holding `bytes` unless it exists, all or nothing across
/// a crash (written whole, fsynced, then linked into place). `Ok(false)`:
/// someone else created it first, and theirs is kept.
pub fn create_atomic(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    let tmp = tmp_beside(path);
    let linked = write_synced(&tmp, bytes).and_then(|()| fs::hard_link(&tmp, path));
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_dir(parent(path))?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// The total and the usable (free to unprivileged users) bytes of the file
/// system holding `path` (`statvfs`).
pub fn space(path: &Path) -> io::Result<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer statvfs fills on success.
    if unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled the buffer.
    let stat = unsafe { stat.assume_init() };
    // The fields' widths differ between platforms.
    #[allow(clippy::unnecessary_cast)]
    let (unit, blocks, available) = (
        stat.f_frsize as u64,
        stat.f_blocks as u64,
        stat.f_bavail as u64,
    );
    Ok((blocks * unit, available * unit))
}

/// An exclusive `flock` on an open file, released when dropped.
#[must_use = "the lock is released when the guard is dropped"]
pub struct FileLock(Arc<File>);

impl FileLock {
    /// Blocks until the lock is held.
    pub fn acquire(file: &Arc<File>) -> io::Result<FileLock> {
        file.lock()?;
        Ok(FileLock(file.clone()))
    }

    /// The lock if it is free now (`None`: another open file holds it).
    pub fn try_acquire(file: &Arc<File>) -> io::Result<Option<FileLock>> {
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock(file.clone()))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Opens (creating) `path` and locks it: a lock file guarding something
    /// that is replaced by rename, which a lock on the thing itself would
    /// not survive.
    pub fn acquire_path(path: &Path) -> io::Result<FileLock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        FileLock::acquire(&Arc::new(file))
    }

    /// Whether `e` says the file system has no working locks.
    pub fn unsupported(e: &io::Error) -> bool {
        e.kind() == io::ErrorKind::Unsupported || e.raw_os_error() == Some(libc::ENOLCK)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// A counter on the shared volume that many brokers advance: under an
/// exclusive lock on a lock file beside it (`<name>.lock`: the counter is
/// replaced by rename, which a lock on the counter itself would not
/// survive), replaced atomically, so a crash leaves the old value or the
/// new one, never an empty file that starts over from 0.
pub struct SharedCounter {
    path: PathBuf,
    lock_path: PathBuf,
}

impl SharedCounter {
    pub fn new(path: PathBuf) -> SharedCounter {
        let mut lock_path = path.clone().into_os_string();
        lock_path.push(".lock");
        SharedCounter {
            path,
            lock_path: lock_path.into(),
        }
    }

    /// The value (0 before the first advance). Reads the file itself, not
    /// its attributes: on NFS an open revalidates what another machine
    /// wrote, where a `stat` may answer from the attribute cache.
    pub fn read(&self) -> io::Result<i64> {
        let raw = match fs::read_to_string(&self.path) {
            Ok(raw) => raw,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        match raw.trim() {
            "" => Ok(0),
            s => s.parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad counter '{s}' in {}", self.path.display()),
                )
            }),
        }
    }

    /// Adds `by`, durably, and returns the value before.
    pub fn advance(&self, by: i64) -> io::Result<i64> {
        let _held = FileLock::acquire_path(&self.lock_path)?;
        let before = self.read()?;
        write_atomic(&self.path, (before + by).to_string().as_bytes())?;
        Ok(before)
    }
}

#[cfg(test)]
mod tests;
