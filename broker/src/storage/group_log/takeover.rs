//! Taking a group (or transactional id) log over from a broker process
//! that can no longer be waited for: its broker counted dead by the
//! assignment, or an earlier process of this broker. Such a process may
//! hold the log's lock for as long as its volume stalls, and writes it
//! queued may land at any time later; so instead of waiting for the lock
//! and appending to the file, the taker fences the process, reads what it
//! acknowledged (the file, completed from its journals) and replaces the
//! file by a new one whose last claim is its own. The argument is in
//! docs/design/volume.md ("Group and transaction logs").

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use tracing::{info, warn};

use super::fencing::{LogLock, Owner};
use super::file::{frame_crc, identity, remove_if_exists, scan, write_tmp, LogPaths, Scan};
use super::records::{encode, header_record, new_log_id, read_frame, ClaimBody};
use super::Logs;
use crate::storage::fs::sync_dir;
use crate::storage::incarnation::{self, Fence, Incarnation};
use crate::storage::journal::{self, JournalEntry};
use crate::store::StoreError;

/// Journals of fenced processes kept parsed at once (each up to two
/// journal files).
const FENCED_JOURNALS_KEPT: usize = 4;

/// Takeover markers tried for one log before giving up for now.
const MARKERS: u32 = 8;

/// A fenced process's journal entries, by (group id, log id), in journal
/// order. Read once, after the fence: everything the process acknowledged
/// was durable in its journal before its fence check found no fence.
pub(super) type FencedJournal = BTreeMap<(String, u64), Vec<JournalEntry>>;

/// A log as read, without its lock.
struct Seen {
    scan: Scan,
    identity: (u64, u64),
}

enum Outcome {
    /// The log is ours now (or needed no takeover).
    Done,
    /// The file at the path changed meanwhile: look again.
    Changed,
}

impl Logs {
    /// Before a load takes the log's lock: if the log's last claim names
    /// another process this broker takes the log over from, fence it (if
    /// it may still write: its incarnation is registered) and replace the
    /// log by one claimed by this process. Otherwise nothing: the load
    /// takes the lock and claims as usual (docs/design/fencing.md).
    pub(super) fn take_over_if_needed(&self, paths: &LogPaths) -> Result<(), StoreError> {
        let Some(owner) = &self.owner else {
            return Ok(());
        };
        let Some(me) = owner.incarnation() else {
            return Ok(());
        };
        // Not ours under the assignment followed now: the claim refuses.
        let Some(ours) = (owner.owns)(&paths.group_id) else {
            return Ok(());
        };
        for _ in 0..3 {
            let Some(seen) = read_unlocked(paths)? else {
                return Ok(());
            };
            let Some(claim) = seen.scan.table.claim.clone() else {
                return Ok(());
            };
            if !must_take_over(owner, &me, &claim, ours) {
                return Ok(());
            }
            match self.replace_log(owner, &me, paths, &claim, &seen, ours) {
                Ok(Outcome::Done) => return Ok(()),
                Ok(Outcome::Changed) => continue,
                // Nothing can be written, ours included: the load serves
                // the log as it is on disk.
                Err(StoreError::Io(e)) if crate::storage::is_read_only(&e) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Err(busy("the group log kept changing while it was taken over"))
    }

    /// Fences the claimant (if it may still write), wins the right to
    /// replace the file it wrote, and replaces it by what the claimant
    /// acknowledged, claimed by us.
    fn replace_log(
        &self,
        owner: &Owner,
        me: &Incarnation,
        paths: &LogPaths,
        claim: &ClaimBody,
        seen: &Seen,
        ours: u64,
    ) -> Result<Outcome, StoreError> {
        let fence = Fence {
            by_broker: owner.broker,
            at_version: ours,
        };
        // A process that ended writes nothing more: no fence needed.
        if incarnation::is_live(&owner.cluster_dir, claim.broker, &claim.incarnation) {
            incarnation::fence(&owner.cluster_dir, claim.broker, &claim.incarnation, fence)?;
        }
        // A snapshot the claimant was about to rename in can no longer land.
        remove_if_exists(&paths.tmp_of(&claim.incarnation))?;
        let log_id = seen.scan.log_id;
        let won = self.win_marker(owner, me, paths, log_id, fence)?;
        // Not replacing after all: our marker must not hold up a later
        // takeover of the same file.
        let changed = || {
            let _ = fs::remove_file(paths.marker(log_id, won));
            Ok(Outcome::Changed)
        };
        // Read fresh (after the fence) and only if it is still the file
        // we decided on; its lock, if free, keeps a live writer out while
        // we replace it.
        let file = match File::open(&paths.path) {
            Ok(f) => Arc::new(f),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return changed(),
            Err(e) => return Err(e.into()),
        };
        if identity(&file)? != seen.identity {
            return changed();
        }
        let _lock = LogLock::try_acquire(&file)?;
        let mut data = Vec::new();
        (&*file).read_to_end(&mut data)?;
        let now = scan(&data, &paths.group_id)?;
        if now.table.claim.as_ref() != Some(claim) {
            return changed();
        }
        let entries = self
            .fenced_journals
            .of(&self.root, claim.broker, &claim.incarnation)?;
        let (restored, added) = complete_from_journal(
            &data[..now.valid_end as usize],
            now.last_crc,
            entries
                .get(&(paths.group_id.clone(), log_id))
                .map_or(&[][..], Vec::as_slice),
        );
        if data.len() > restored.len() {
            let (position, left) = (restored.len(), data.len() - restored.len());
            let reason = now.damage.as_ref().map_or("", |(_, r)| r.as_str());
            warn!(group_id = %paths.group_id, position, left_behind_bytes = left, reason,
                  "group log damaged: what follows its last intact record (a write the fenced \
                   process had not finished) is left behind in the file replaced");
        }
        let mut table = scan(&restored, &paths.group_id)?.table;
        table.claim = Some(ClaimBody {
            broker: owner.broker,
            assignment_version: fence.at_version,
            incarnation: me.id().to_string(),
        });
        let mut bytes = encode(&header_record(&paths.group_id, new_log_id()))?;
        bytes.extend_from_slice(&table.encode_snapshot()?);
        write_tmp(paths, &bytes, &self.shared)?;
        // Superseded meanwhile (another taker fenced us): rename nothing.
        if let Err(e) = self.shared.check_fence() {
            let _ = fs::remove_file(&paths.tmp);
            return Err(e.into());
        }
        fs::rename(&paths.tmp, &paths.path)?;
        sync_dir(&paths.root)?;
        self.shared.synced();
        for n in 0..=won {
            let _ = fs::remove_file(paths.marker(log_id, n));
        }
        info!(group_id = %paths.group_id, from = claim.broker, from_incarnation = %claim.incarnation,
              from_version = claim.assignment_version, to = owner.broker,
              to_version = fence.at_version, restored_from_journal = added,
              "took the log over from another broker process (fenced if it may still \
               write); the log is a new file");
        Ok(Outcome::Done)
    }

    /// The right to replace log file `log_id`: a marker created only if
    /// absent, numbered. A marker of a process that can no longer be
    /// waited for is superseded by the next number once that process is
    /// fenced and its tmp file removed (its rename can then never land).
    /// Returns the number won; retriable while a live broker holds one.
    fn win_marker(
        &self,
        owner: &Owner,
        me: &Incarnation,
        paths: &LogPaths,
        log_id: u64,
        fence: Fence,
    ) -> Result<u32, StoreError> {
        let mine = format!("{} {}", owner.broker, me.id());
        for n in 0..MARKERS {
            let path = paths.marker(log_id, n);
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    f.write_all(mine.as_bytes())?;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e.into()),
            }
            let holder = fs::read_to_string(&path).unwrap_or_default();
            if holder == mine {
                return Ok(n);
            }
            let Some((broker, incarnation)) = holder
                .split_once(' ')
                .and_then(|(b, i)| Some((b.parse::<i32>().ok()?, i.to_string())))
            else {
                // Being written this instant, or damaged: look again later.
                return Err(busy("another broker is taking the group log over"));
            };
            if broker != owner.broker && (owner.alive)(broker) {
                return Err(busy(&format!(
                    "broker {broker} is taking the group log over"
                )));
            }
            incarnation::fence(&owner.cluster_dir, broker, &incarnation, fence)?;
            remove_if_exists(&paths.tmp_of(&incarnation))?;
        }
        Err(busy("too many takeovers of the group log at once"))
    }
}

/// The journals of processes a store fenced, parsed, the latest few.
#[derive(Default)]
pub(super) struct FencedJournals(Mutex<Vec<(FencedProcess, Arc<FencedJournal>)>>);

/// A fenced process: its broker and incarnation.
type FencedProcess = (i32, String);

impl FencedJournals {
    /// The journal entries of `broker`'s processes under `logs`, read once
    /// per fenced process (call after fencing it).
    fn of(&self, logs: &Path, broker: i32, incarnation: &str) -> io::Result<Arc<FencedJournal>> {
        let key = (broker, incarnation.to_string());
        if let Some((_, j)) = self.0.lock().iter().find(|(k, _)| *k == key) {
            return Ok(j.clone());
        }
        let mut index = FencedJournal::new();
        for e in journal::of_broker(logs, broker)? {
            index
                .entry((e.group_id.clone(), e.log_id))
                .or_default()
                .push(e);
        }
        let index = Arc::new(index);
        let mut kept = self.0.lock();
        if kept.len() >= FENCED_JOURNALS_KEPT {
            kept.remove(0);
        }
        kept.push((key, index.clone()));
        Ok(index)
    }
}

/// Whether the log must be taken over rather than claimed where it is:
/// its claim names another process (an incarnation is named, and it is not
/// ours), of this broker or of a broker the assignment counts dead, under
/// an assignment older than ours (a newer one refuses us later). Also when
/// that process ended: another broker may be taking the same file over
/// meanwhile (under the assignment before ours, its rename yet to land),
/// and only the takeover markers keep the two apart, so a claim in place
/// could be replaced under us (found by takeover_model_tests.rs).
fn must_take_over(owner: &Owner, me: &Incarnation, claim: &ClaimBody, ours: u64) -> bool {
    if claim.incarnation.is_empty() || claim.incarnation == me.id() {
        return false;
    }
    let own_earlier = claim.broker == owner.broker;
    own_earlier || !((owner.alive)(claim.broker) || claim.assignment_version >= ours)
}

/// The valid records `valid` (ending with the record whose checksum is
/// `last_crc`) followed by the journaled writes that continue them: each
/// at the end so far, after the record it names, whole. Later entries for
/// one position win (a write retried there). How many were added.
pub(super) fn complete_from_journal(
    valid: &[u8],
    last_crc: u32,
    entries: &[JournalEntry],
) -> (Vec<u8>, usize) {
    let mut at: BTreeMap<u64, &JournalEntry> = BTreeMap::new();
    for e in entries {
        at.insert(e.position, e);
    }
    let mut out = valid.to_vec();
    let (mut crc, mut added) = (last_crc, 0);
    while let Some(e) = at.get(&(out.len() as u64)) {
        let whole = matches!(read_frame(&e.bytes), Ok((_, size)) if size == e.bytes.len());
        if !whole || e.prev_crc != crc {
            if !whole {
                warn!(group_id = %e.group_id, position = e.position,
                      "a journal entry is not one whole group-log record; not restored");
            }
            break;
        }
        warn!(group_id = %e.group_id, position = e.position,
              "restored a write the group log had lost, from a commit journal");
        out.extend_from_slice(&e.bytes);
        crc = frame_crc(&e.bytes);
        added += 1;
    }
    (out, added)
}

fn read_unlocked(paths: &LogPaths) -> Result<Option<Seen>, StoreError> {
    let file = match File::open(&paths.path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let identity = identity(&file)?;
    let mut data = Vec::new();
    (&file).read_to_end(&mut data)?;
    let scan = scan(&data, &paths.group_id)?;
    Ok(Some(Seen { scan, identity }))
}

fn busy(why: &str) -> StoreError {
    StoreError::Io(io::Error::new(io::ErrorKind::WouldBlock, why.to_string()))
}

impl LogPaths {
    /// The snapshot tmp file of the process (or store) `owner`.
    pub(super) fn tmp_of(&self, owner: &str) -> PathBuf {
        let mut name = OsString::from(self.path.as_os_str());
        name.push(".tmp.");
        name.push(owner);
        name.into()
    }

    /// Marker `n` of the takeovers of log file `log_id`.
    pub(super) fn marker(&self, log_id: u64, n: u32) -> PathBuf {
        let mut name = OsString::from(self.path.as_os_str());
        name.push(format!(".taken.{log_id:016x}.{n}"));
        name.into()
    }
}
