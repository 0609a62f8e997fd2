//! Group commit across files: one `syncfs(2)` of the volume makes every
//! write made before it started durable, whichever file it went to.
//!
//! Per-file group commit only batches appends to the *same* file, and a
//! coordinator's commits are spread over thousands of group logs: with one
//! `fdatasync` per commit, the broker spends most of its CPU handing each
//! one to a blocking thread and back. Here a thread runs sync *rounds*: a
//! caller registers after its write, and is answered by the first round
//! that starts after it registered and finishes. Callers that arrive while
//! a round runs share the next one.
//!
//! `syncfs` reports write-back errors of any file on the volume since the
//! folder was opened (Linux ≥ 5.8), so a failed round fails every write it
//! covered: never a success for a write that may be lost.

use std::fs::File;
use std::future::Future;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard};
use tokio::sync::oneshot;
use tracing::error;

/// Rounds that may run at once (threads). The bookkeeping allows overlap,
/// but measured on the commit benchmark one at a time costs the least CPU
/// and latency: concurrent `syncfs` calls wait on each other's write-back.
pub const ROUNDS_IN_FLIGHT: usize = 1;

/// How a round ended, for every caller it covered.
type Outcome = Result<(), (io::ErrorKind, String)>;

/// The bookkeeping of rounds, free of I/O: which callers a round answers.
#[derive(Default)]
struct Rounds {
    /// Rounds started so far.
    started: u64,
    /// Callers waiting, with the first round that covers them.
    waiters: Vec<(u64, oneshot::Sender<Outcome>)>,
    /// Callers registered since the last round started: no running round
    /// covers them.
    uncovered: usize,
    /// The owner is gone: answer the waiters, then stop. (Nobody can
    /// register after: registering needs the owner.)
    closing: bool,
    /// Threads asleep waiting for work: only then does a caller wake one
    /// (a wake is a system call; a running thread looks again by itself).
    idle: usize,
    /// Tests hold rounds back to line callers up deterministically.
    #[cfg(test)]
    held: bool,
}

impl Rounds {
    /// Registers a caller whose writes are done: the next round to start
    /// covers them (the running one may have started before they were made).
    fn register(&mut self, tx: oneshot::Sender<Outcome>) {
        self.waiters.push((self.started + 1, tx));
        self.uncovered += 1;
    }

    /// Starts a round if a caller waits that no running round covers;
    /// returns its number.
    fn start(&mut self) -> Option<u64> {
        #[cfg(test)]
        if self.held && !self.closing {
            return None;
        }
        if self.uncovered == 0 {
            return None;
        }
        self.uncovered = 0;
        self.started += 1;
        Some(self.started)
    }

    /// The callers round `round` answers: everyone registered before it
    /// started (rounds may finish out of order: a later round answers the
    /// callers of an earlier one still running, since it covers them too).
    /// A failed round answers every caller: `syncfs` reports an error once,
    /// to one round, and any write made so far may be the one lost.
    fn finish(&mut self, round: u64, failed: bool) -> Vec<oneshot::Sender<Outcome>> {
        if failed {
            self.uncovered = 0;
            return std::mem::take(&mut self.waiters)
                .into_iter()
                .map(|(_, tx)| tx)
                .collect();
        }
        let (done, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiters)
            .into_iter()
            .partition(|(r, _)| *r <= round);
        self.waiters = rest;
        done.into_iter().map(|(_, tx)| tx).collect()
    }
}

struct Shared {
    /// An open descriptor on the volume (its folder), for `syncfs`.
    dir: File,
    rounds: Mutex<Rounds>,
    wake: Condvar,
    syncs: AtomicU64,
}

impl Shared {
    fn rounds(&self) -> MutexGuard<'_, Rounds> {
        self.rounds.lock()
    }

    fn syncfs(&self) -> Outcome {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        super::fs::syncfs(&self.dir).map_err(|e| {
            error!(error = %e, "syncfs of the data volume failed");
            (e.kind(), format!("syncfs of the data volume failed: {e}"))
        })
    }

    fn run(&self) {
        loop {
            let round = {
                let mut rounds = self.rounds();
                loop {
                    if let Some(round) = rounds.start() {
                        break round;
                    }
                    if rounds.closing {
                        return;
                    }
                    rounds.idle += 1;
                    self.wake.wait(&mut rounds);
                    rounds.idle -= 1;
                }
            };
            let outcome = self.syncfs();
            let answered = self.rounds().finish(round, outcome.is_err());
            for tx in answered {
                let _ = tx.send(outcome.clone());
            }
        }
    }
}

/// Sync rounds over the volume holding a folder, run by
/// [`ROUNDS_IN_FLIGHT`] threads that start with the first caller and stop
/// once the `VolumeSync` is dropped and every caller is answered.
pub struct VolumeSync {
    shared: Arc<Shared>,
    /// The threads start with the first caller: a store that only reads
    /// (tools, tests, the fuzzer) never starts them.
    started: std::sync::OnceLock<io::Result<()>>,
}

impl VolumeSync {
    /// Rounds over the volume of `dir` (opened now).
    pub fn new(dir: &Path) -> io::Result<VolumeSync> {
        let shared = Arc::new(Shared {
            dir: File::open(dir)?,
            rounds: Mutex::default(),
            wake: Condvar::new(),
            syncs: AtomicU64::new(0),
        });
        Ok(VolumeSync {
            shared,
            started: std::sync::OnceLock::new(),
        })
    }

    fn start_threads(&self) -> io::Result<()> {
        for _ in 0..ROUNDS_IN_FLIGHT {
            let runner = self.shared.clone();
            std::thread::Builder::new()
                .name("kaas-volume-sync".into())
                .spawn(move || runner.run())?;
        }
        Ok(())
    }

    /// Registers now, for writes already made; resolves once they are
    /// durable (or with the error of the round that covered them).
    pub fn sync(&self) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let started = self.started.get_or_init(|| self.start_threads());
        let refused = match started {
            Ok(()) => {
                let mut rounds = self.shared.rounds();
                rounds.register(tx);
                let idle = rounds.idle > 0;
                drop(rounds);
                if idle {
                    self.shared.wake.notify_one();
                }
                None
            }
            Err(e) => Some(io::Error::new(
                e.kind(),
                format!("cannot start the volume sync thread: {e}"),
            )),
        };
        async move {
            if let Some(e) = refused {
                return Err(e);
            }
            let outcome = rx.await.unwrap_or_else(|_| {
                Err((
                    io::ErrorKind::Other,
                    "the volume sync thread stopped".to_string(),
                ))
            });
            outcome.map_err(|(kind, msg)| io::Error::new(kind, msg))
        }
    }

    /// Rounds (syncfs calls) run so far.
    pub fn syncs(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
impl VolumeSync {
    /// Holds rounds back (`true`) or lets them run again.
    pub(crate) fn hold(&self, held: bool) {
        self.shared.rounds().held = held;
        self.shared.wake.notify_all();
    }
}

impl Drop for VolumeSync {
    fn drop(&mut self) {
        self.shared.rounds().closing = true;
        self.shared.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_answers_exactly_the_callers_registered_before_it_started() {
        let mut rounds = Rounds::default();
        assert_eq!(rounds.start(), None, "no round without a caller");
        let (a, mut a_rx) = oneshot::channel();
        rounds.register(a);
        assert_eq!(rounds.start(), Some(1));
        // Registered while round 1 runs: its write may postdate the sync.
        let (b, mut b_rx) = oneshot::channel();
        rounds.register(b);
        for tx in rounds.finish(1, false) {
            tx.send(Ok(())).unwrap();
        }
        assert_eq!(a_rx.try_recv().unwrap(), Ok(()));
        assert!(b_rx.try_recv().is_err(), "b waits for round 2");
        assert_eq!(rounds.start(), Some(2));
        assert_eq!(rounds.finish(2, false).len(), 1);
        assert_eq!(rounds.start(), None);
    }

    #[test]
    fn overlapping_rounds_answer_each_caller_once_whichever_finishes_first() {
        let mut rounds = Rounds::default();
        let (a, _a_rx) = oneshot::channel();
        rounds.register(a);
        assert_eq!(rounds.start(), Some(1));
        assert_eq!(rounds.start(), None, "a is covered by round 1");
        let (b, _b_rx) = oneshot::channel();
        rounds.register(b);
        assert_eq!(rounds.start(), Some(2));
        // Round 2 started after both registered: it covers both.
        assert_eq!(rounds.finish(2, false).len(), 2);
        assert_eq!(rounds.finish(1, false).len(), 0);
        assert!(rounds.waiters.is_empty());
    }

    #[test]
    fn a_failed_round_fails_every_caller_waiting() {
        let mut rounds = Rounds::default();
        let (a, _a) = oneshot::channel();
        rounds.register(a);
        assert_eq!(rounds.start(), Some(1));
        let (b, _b) = oneshot::channel();
        rounds.register(b);
        // b's write came after round 1 started, but the error round 1
        // reports may be b's: nobody waiting gets a success from it.
        assert_eq!(rounds.finish(1, true).len(), 2);
        assert_eq!(rounds.start(), None);
    }

    #[test]
    fn callers_waiting_together_share_one_round() {
        let mut rounds = Rounds::default();
        let receivers: Vec<_> = (0..10)
            .map(|_| {
                let (tx, rx) = oneshot::channel();
                rounds.register(tx);
                rx
            })
            .collect();
        let round = rounds.start().unwrap();
        assert_eq!(rounds.finish(round, false).len(), receivers.len());
        assert_eq!(rounds.start(), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_syncs_complete_in_fewer_rounds_and_after_close() {
        let dir = tempfile::tempdir().unwrap();
        let volume = VolumeSync::new(dir.path()).unwrap();
        let calls: Vec<_> = (0..50).map(|_| volume.sync()).collect();
        for r in futures::future::join_all(calls).await {
            r.unwrap();
        }
        let syncs = volume.syncs();
        assert!((1..50).contains(&syncs), "{syncs} rounds for 50 callers");
        // A caller registered just before the owner goes is still answered.
        let last = volume.sync();
        drop(volume);
        last.await.unwrap();
    }
}
