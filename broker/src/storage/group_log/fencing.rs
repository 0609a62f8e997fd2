//! Fencing a second owner of a group log (docs/design/fencing.md): owner
//! claims checked and appended under a short file lock per write.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::file::{frame_crc, OpenLog};
use super::records::{encode, ClaimBody, Record};
use super::Logs;
use crate::storage::fs::FileLock;
use crate::storage::incarnation::Incarnation;
use crate::storage::journal::JournalEntry;
use crate::store::StoreError;

/// The broker writing through a store, for owner claims (see
/// docs/design/fencing.md) and, with its process's incarnation, for taking
/// a log over from a process that can no longer be waited for
/// (docs/design/volume.md).
#[derive(Clone)]
pub struct Owner {
    pub broker: i32,
    /// The assignment version the broker follows now.
    pub version: Arc<dyn Fn() -> u64 + Send + Sync>,
    /// This process on the volume now (`None`: a process that registered
    /// none, which fences no one and waits for locks).
    pub incarnation: Arc<dyn Fn() -> Option<Arc<Incarnation>> + Send + Sync>,
    /// Whether the assignment followed now counts a broker alive.
    pub alive: Arc<dyn Fn(i32) -> bool + Send + Sync>,
    /// The volume's `__cluster` folder, where incarnations are.
    pub cluster_dir: PathBuf,
    /// The version of the assignment followed now if it gives this broker
    /// the key (one reading of the assignment for both).
    pub owns: Ownership,
}

/// See [`Owner::owns`].
pub type Ownership = Arc<dyn Fn(&str) -> Option<u64> + Send + Sync>;

impl Owner {
    /// `broker` claims the logs it loads or writes under the assignment
    /// version `version()` returns at the time; no incarnation.
    pub fn new(broker: i32, version: impl Fn() -> u64 + Send + Sync + 'static) -> Owner {
        let version: Arc<dyn Fn() -> u64 + Send + Sync> = Arc::new(version);
        Owner {
            broker,
            owns: {
                let version = version.clone();
                Arc::new(move |_| Some(version()))
            },
            version,
            incarnation: Arc::new(|| None),
            alive: Arc::new(|_| true),
            cluster_dir: PathBuf::new(),
        }
    }

    /// The same owner, claiming a key only under an assignment that gives
    /// it this broker: `owns(key)` is that assignment's version, or `None`.
    pub fn owning(self, owns: impl Fn(&str) -> Option<u64> + Send + Sync + 'static) -> Owner {
        Owner {
            owns: Arc::new(owns),
            ..self
        }
    }

    /// The same owner as the process `incarnation()` names, following an
    /// assignment that counts alive what `alive` says.
    pub fn with_incarnation(
        self,
        cluster_dir: PathBuf,
        incarnation: impl Fn() -> Option<Arc<Incarnation>> + Send + Sync + 'static,
        alive: impl Fn(i32) -> bool + Send + Sync + 'static,
    ) -> Owner {
        Owner {
            incarnation: Arc::new(incarnation),
            alive: Arc::new(alive),
            cluster_dir,
            ..self
        }
    }

    pub(super) fn version(&self) -> u64 {
        (self.version)()
    }

    pub(super) fn incarnation(&self) -> Option<Arc<Incarnation>> {
        (self.incarnation)()
    }

    /// Reads this process's fence fresh (after a write is durable, before
    /// it is acknowledged): an error once it was fenced.
    pub(super) fn check_fence(&self) -> io::Result<()> {
        match self.incarnation() {
            Some(i) => i.check_fence(),
            None => Ok(()),
        }
    }

    /// Whether `claim` was written by this process (by this broker, when
    /// neither names an incarnation).
    pub(super) fn made(&self, claim: &ClaimBody) -> bool {
        claim.broker == self.broker
            && match self.incarnation() {
                Some(i) => claim.incarnation.is_empty() || claim.incarnation == i.id(),
                None => true,
            }
    }
}

/// An exclusive `flock` on an open log, held while its length is checked
/// and written; released on drop. On a file system without working locks
/// it degrades (once warned) to the claim check alone.
pub(super) struct LogLock {
    _held: Option<FileLock>,
}

/// Longest a log's lock is waited for. Held for the length of one write
/// by a live broker; a holder whose volume stalled keeps it for as long
/// as the stall lasts, and the request is answered retriably instead.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(2);

impl LogLock {
    /// The log's lock, waited for at most [`LOCK_WAIT`] (then `TimedOut`).
    pub(super) fn acquire(file: &Arc<File>) -> io::Result<LogLock> {
        let deadline = Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_micros(100);
        loop {
            match LogLock::try_acquire(file)? {
                Some(held) => return Ok(held),
                None if Instant::now() >= deadline => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "the group log's lock is held by another process for over {LOCK_WAIT:?}"
                        ),
                    ))
                }
                None => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
            }
        }
    }

    /// The log's lock if it is free now.
    pub(super) fn try_acquire(file: &Arc<File>) -> io::Result<Option<LogLock>> {
        match FileLock::try_acquire(file) {
            Ok(Some(held)) => Ok(Some(LogLock { _held: Some(held) })),
            Ok(None) => Ok(None),
            Err(e) if FileLock::unsupported(&e) => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    warn!(error = %e, "file locks do not work on the data volume; group logs are \
                          fenced by owner claims alone (see docs/design/fencing.md)")
                });
                Ok(Some(LogLock { _held: None }))
            }
            Err(e) => Err(e),
        }
    }
}

impl Logs {
    /// Under the log's file lock: refuses ([`Fenced`]) when another broker
    /// claimed the log under an assignment at least as new as ours, else
    /// appends our claim if the log's last claim is not ours (and adds the
    /// write to `journal`). Returns the broker the claim was taken from, if
    /// any. No-op without an owner.
    pub(super) fn claim(
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
        let Some(ours) = (owner.owns)(group_id) else {
            return Err(StoreError::Moved {
                key: group_id.to_string(),
                version: owner.version(),
            });
        };
        let previous = log.table.claim.clone();
        match &previous {
            Some(c) if owner.made(c) => return Ok(None),
            // An earlier process of this broker: its claim is ours to
            // replace whatever version it names.
            Some(c) if c.broker == owner.broker => {}
            Some(c) if c.assignment_version >= ours => {
                return Err(StoreError::Fenced {
                    key: group_id.to_string(),
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
            incarnation: owner
                .incarnation()
                .map_or_else(String::new, |i| i.id().to_string()),
        };
        let frame = encode(&Record::Claim(claim.clone()))?;
        if let Err(e) = log.file.write_all_at(&frame, log.len) {
            let _ = log.file.set_len(log.len);
            return Err(e.into());
        }
        if self.shared.journals() {
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
        if let Some(c) = &previous {
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
}
