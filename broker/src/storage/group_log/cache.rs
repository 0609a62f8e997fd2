//! The open-log cache: one live entry per group this broker writes, each
//! with its open log and the sequence numbers of its appends, and closing
//! of the least recently used idle ones beyond a bound.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use super::durability::Durability;
use super::fencing::LogLock;
use super::file::{open_log, LogPaths, OpenLog};
use super::Logs;

/// One group's log as this process sees it. The store caches at most one
/// live entry per group, so every write to a log goes through one `inner`.
pub(super) struct Entry {
    pub(super) paths: LogPaths,
    pub(super) inner: Mutex<Inner>,
    /// Sync turns. With volume rounds, waiters share it (each joins the
    /// rounds, which cover every log); with per-file syncs, one fsync at a
    /// time, and appends waiting meanwhile share the next one. A snapshot
    /// takes it exclusively, from before it is taken until it is synced.
    pub(super) sync_lock: Arc<tokio::sync::RwLock<()>>,
    /// A snapshot task is spawned or running.
    pub(super) compacting: AtomicBool,
    /// `Logs::ticks` at the last use, for closing idle logs.
    pub(super) last_used: AtomicU64,
}

#[derive(Debug, Default)]
pub(super) struct Inner {
    /// The open log; `None` when closed (reopened from disk on next use).
    pub(super) log: Option<OpenLog>,
    /// Files replaced by a reopen while appends to them were not yet
    /// durable: the next group commit fsyncs them too.
    pub(super) retired: Vec<Arc<File>>,
    /// Sequence numbers of appends: the last one, the last durable one, and
    /// the last one a failed fsync may have lost (those fail even if a
    /// later fsync succeeds).
    pub(super) appended: u64,
    pub(super) durable: u64,
    pub(super) failed_upto: u64,
    /// A write could not be undone: reopen (rescanning) before the next use.
    pub(super) reopen: bool,
    /// An fsync failed: the page cache can no longer be trusted, so reopen
    /// (and fsync the folder again) before the next use.
    pub(super) failed: bool,
    /// Dropped from the cache: users look the group up again.
    pub(super) closed: bool,
}

impl Inner {
    pub(super) fn settled(&self, seq: u64) -> Option<io::Result<()>> {
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
    pub(super) fn retire_log(&mut self) {
        if let Some(log) = self.log.take() {
            if self.appended > self.durable {
                self.retired.push(log.file);
            }
        }
    }

    pub(super) fn fail_upto(&mut self, seq: u64) {
        self.failed_upto = self.failed_upto.max(seq);
        self.failed = true;
    }
}

impl Entry {
    pub(super) fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock()
    }

    /// Makes sure `inner.log` is the current log (opening or reopening it),
    /// and returns with its file lock held (`None` when there is no log).
    pub(super) fn ensure_open(
        &self,
        inner: &mut Inner,
        create: bool,
        shared: &Durability,
    ) -> io::Result<Option<LogLock>> {
        let failed = std::mem::take(&mut inner.failed);
        let read_only = inner.log.as_ref().is_some_and(|log| log.read_only);
        if std::mem::take(&mut inner.reopen) || failed || read_only {
            inner.retire_log();
        }
        if let Some(log) = &inner.log {
            // Checked under the lock: nobody can append between the check
            // and our write.
            let guard = LogLock::acquire(&log.file)?;
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

impl Logs {
    /// Runs `f` on the group's live entry, locked.
    pub(super) fn with_entry<R>(
        &self,
        group_id: &str,
        f: impl FnOnce(&Arc<Entry>, &mut Inner) -> R,
    ) -> R {
        loop {
            let entry = {
                let mut entries = self.entries.lock();
                let entry = match entries.get(group_id) {
                    Some(e) => e.clone(),
                    None => {
                        if entries.len() >= self.max_open {
                            evict_idle(&mut entries, self.max_open - self.max_open / 4);
                        }
                        let e = Arc::new(Entry {
                            paths: self.paths(group_id),
                            inner: Mutex::new(Inner::default()),
                            sync_lock: Arc::default(),
                            compacting: AtomicBool::new(false),
                            last_used: AtomicU64::new(0),
                        });
                        entries.insert(group_id.to_string(), e.clone());
                        e
                    }
                };
                let tick = self.ticks.fetch_add(1, Ordering::Relaxed);
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
}

/// Closes least recently used idle entries until at most `keep` remain (or
/// no idle one is left). Idle: nobody else holds the entry (no write in
/// flight, no waiter, no sync), every append is durable, and no failure is
/// pending a reopen. A closed entry's log reopens from disk on next use.
pub(super) fn evict_idle(entries: &mut HashMap<String, Arc<Entry>>, keep: usize) {
    let excess = entries.len().saturating_sub(keep);
    if excess == 0 {
        return;
    }
    let mut idle: Vec<(u64, &String)> = entries
        .iter()
        .filter(|(_, e)| Arc::strong_count(e) == 1)
        .filter(|(_, e)| {
            e.inner.try_lock().is_some_and(|i| {
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
