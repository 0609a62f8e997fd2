//! Group commit across files: one `syncfs(2)` of the volume makes every
//! write made before it started durable, whichever file it went to.
//!
//! Per-file group commit only batches appends to the *same* file, and a
//! coordinator's commits are spread over thousands of group logs: with one
//! `fdatasync` per commit, the broker spends most of its CPU handing each
//! one to a blocking thread and back. Here a caller registers after its
//! write and is answered by the next round ([`GroupCommit`]) to finish:
//! a round starts after the callers it takes registered, so their writes
//! precede its `syncfs`. One round at a time: measured on the commit
//! benchmark, concurrent `syncfs` calls wait on each other's write-back.
//!
//! `syncfs` reports write-back errors of any file on the volume since the
//! folder was opened (Linux ≥ 5.8), so a failed round fails every write it
//! covered and every caller queued behind it: never a success for a write
//! that may be lost.

use std::fs::File;
use std::io;
use std::path::Path;

use tracing::error;

use super::group_commit::{Committed, Flush, GroupCommit};
use super::journal::AfterFlush;

struct Syncfs {
    /// An open descriptor on the volume (its folder).
    dir: File,
    after_flush: Option<AfterFlush>,
}

impl Flush for Syncfs {
    type Batch = ();
    const FAILURE_COVERS_QUEUED: bool = true;

    fn flush(&mut self, _: &mut ()) -> io::Result<()> {
        super::fs::syncfs(&self.dir).map_err(|e| {
            error!(error = %e, "syncfs of the data volume failed");
            io::Error::new(e.kind(), format!("syncfs of the data volume failed: {e}"))
        })?;
        match &self.after_flush {
            Some(check) => check(),
            None => Ok(()),
        }
    }
}

/// Sync rounds over the volume holding a folder.
pub struct VolumeSync {
    rounds: GroupCommit<Syncfs>,
}

impl VolumeSync {
    /// Rounds over the volume of `dir` (opened now; the round thread
    /// starts with the first caller).
    pub fn new(dir: &Path) -> io::Result<VolumeSync> {
        VolumeSync::checked(dir, None)
    }

    /// [`VolumeSync::new`] whose rounds, once durable, run `after_flush`
    /// (the process's fence check) and fail if it does.
    pub fn checked(dir: &Path, after_flush: Option<AfterFlush>) -> io::Result<VolumeSync> {
        let dir = File::open(dir)?;
        Ok(VolumeSync {
            rounds: GroupCommit::new("kaas-volume-sync", move || {
                Ok(Syncfs {
                    dir: dir.try_clone()?,
                    after_flush: after_flush.clone(),
                })
            }),
        })
    }

    /// Registers now, for writes already made; resolves once they are
    /// durable (or with the error of the round that covered them).
    pub fn sync(&self) -> Committed {
        self.rounds.submit(|()| Ok(()))
    }

    /// Rounds (syncfs calls) run so far.
    pub fn syncs(&self) -> u64 {
        self.rounds.rounds()
    }

    /// Holds rounds back (`true`) or lets them run again.
    #[cfg(test)]
    pub(crate) fn hold(&self, held: bool) {
        self.rounds.hold(held);
    }
}

#[cfg(test)]
mod tests;
