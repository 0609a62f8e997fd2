//! Fencing a second owner of a group log (docs/design/fencing.md): owner
//! claims checked and appended under a short file lock per write.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use tracing::{info, warn};

use super::file::{frame_crc, OpenLog};
use super::records::{encode, ClaimBody, Record};
use super::Logs;
use crate::group::store::StoreError;
use crate::storage::fs::FileLock;
use crate::storage::journal::JournalEntry;

/// The broker writing through a store, for owner claims (see
/// docs/design/fencing.md).
#[derive(Clone)]
pub struct Owner {
    pub broker: i32,
    /// The assignment version the broker follows now.
    pub version: Arc<dyn Fn() -> u64 + Send + Sync>,
}

impl Owner {
    /// `broker` claims the logs it loads or writes under the assignment
    /// version `version()` returns at the time.
    pub fn new(broker: i32, version: impl Fn() -> u64 + Send + Sync + 'static) -> Owner {
        Owner {
            broker,
            version: Arc::new(version),
        }
    }
}

/// An exclusive `flock` on an open log, held while its length is checked
/// and written; released on drop. On a file system without working locks
/// it degrades (once warned) to the claim check alone.
pub(super) struct LogLock {
    _held: Option<FileLock>,
}

impl LogLock {
    pub(super) fn acquire(file: &Arc<File>) -> io::Result<LogLock> {
        match FileLock::acquire(file) {
            Ok(held) => Ok(LogLock { _held: Some(held) }),
            Err(e) if FileLock::unsupported(&e) => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    warn!(error = %e, "file locks do not work on the data volume; group logs are \
                          fenced by owner claims alone (see docs/design/fencing.md)")
                });
                Ok(LogLock { _held: None })
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
        let ours = (owner.version)();
        let previous = log.table.claim;
        match previous {
            Some(c) if c.broker == owner.broker => return Ok(None),
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
        };
        let frame = encode(&Record::Claim(claim))?;
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
}
