//! Journal replay: at start, and when a group's log was last written by
//! another broker, the commit journals of broker processes that are gone
//! put back the writes their logs lost (docs/design/journal.md).

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::Arc;

use tracing::{error, info, warn};

use super::fencing::LogLock;
use super::file::{frame_crc, scan, OpenLog};
use super::records::read_frame;
use super::Logs;
use crate::storage::fs::syncfs;
use crate::storage::journal::{self, JournalEntry, ReplayLock};

/// What replaying one journal entry did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Replayed {
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

impl Logs {
    /// Replays the journals of broker processes that are gone into the
    /// group logs, then removes them (blocking; run before serving). Writes
    /// missing from a log (the machine crashed before the page cache was
    /// written back) are put back at their position; entries of several
    /// journals about one log are applied in position order, whichever
    /// journal holds them.
    pub(super) fn replay_journals(&self) -> io::Result<HashSet<String>> {
        let mut touched = HashSet::new();
        let held = match ReplayLock::acquire(&self.root) {
            Ok(Some(held)) => held,
            Ok(None) => return Ok(touched),
            Err(e) if crate::storage::is_read_only(&e) => {
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
        syncfs(&File::open(&self.root)?)?;
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

    /// Whether the log's last claim is another process's.
    pub(super) fn taken_over(&self, log: &OpenLog) -> bool {
        self.shared.journals()
            && log
                .table
                .claim
                .as_ref()
                .is_some_and(|c| !self.owner.as_ref().is_some_and(|o| o.made(c)))
    }

    /// Puts one journaled write back if its log lacks it. Only ever at the
    /// end of the log's valid records, never over a valid record (which
    /// may be another broker's, written after it took the group over).
    pub(super) fn replay_entry(
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
        let _guard = LogLock::acquire(&file)?;
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
pub(super) struct KnownLog {
    pub(super) identity: (u64, u64),
    pub(super) len: u64,
    pub(super) log_id: u64,
    /// End of its valid records.
    pub(super) valid_end: u64,
    /// Checksum of the record that ends there.
    pub(super) last_crc: u32,
}
