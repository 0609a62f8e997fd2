//! Group commit: callers add their work to one batch; a *round* takes the
//! whole batch waiting at that moment, makes it durable with one flush,
//! and answers every caller it held with the round's outcome. Callers that
//! arrive while a round runs share the next.
//!
//! Rounds run on the engine's own thread, or on a store thread that opted
//! in with [`leading`]: a submit made inside it wakes nobody, and the
//! thread runs the round itself after its job if none is running. A wake
//! is two system calls and a context switch per round; a store thread that
//! would only hand its batch over and wait does the round instead. Rounds
//! never overlap and answer in order, whoever runs them.
//!
//! The commit journal (a batch of encoded entries, one `pwrite` and one
//! `fdatasync`) and volume sync (an empty batch, one `syncfs`) are the two
//! flushes; this module is the one copy of the rounds, the waking, the
//! answering and the shutdown they share.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use parking_lot::{Condvar, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// How a round ended, for every caller it covered.
type Outcome = Result<(), (io::ErrorKind, String)>;

/// What a round's batch holds between rounds; reused, so steady state
/// allocates nothing.
pub(crate) trait Batch: Default + Send + 'static {
    fn clear(&mut self);
}

impl Batch for () {
    fn clear(&mut self) {}
}

impl Batch for Vec<u8> {
    fn clear(&mut self) {
        Vec::clear(self)
    }
}

/// Makes one round's batch durable.
pub(crate) trait Flush: Send + 'static {
    type Batch: Batch;

    /// Whether a failed round also fails the callers that queued while it
    /// ran: a `syncfs` reports a write-back error once, to whichever round
    /// sees it, and the lost write may be one of theirs.
    const FAILURE_COVERS_QUEUED: bool = false;

    fn flush(&mut self, batch: &mut Self::Batch) -> io::Result<()>;
}

struct Queue<B> {
    batch: B,
    waiters: Vec<oneshot::Sender<Outcome>>,
    /// The last round's batch and waiters, emptied, for the next round.
    spare: (B, Vec<oneshot::Sender<Outcome>>),
    /// A round is running (on the thread or a leading store thread).
    running: bool,
    closing: bool,
    /// The thread sleeps waiting for work: only then does a caller wake it
    /// (a wake is a system call; a running thread looks again by itself).
    idle: bool,
    /// Tests hold rounds back to line callers up deterministically.
    #[cfg(test)]
    held: bool,
}

struct Shared<F: Flush> {
    queue: Mutex<Queue<F::Batch>>,
    wake: Condvar,
    rounds: AtomicU64,
    /// Set once opened; locked only by the one running round.
    flusher: Mutex<Option<F>>,
}

type Open<F> = Box<dyn Fn() -> io::Result<F> + Send + Sync>;

/// Rounds of one flusher. Its thread, named `thread_name`, is started by
/// the first caller (a store that only reads never starts one) and
/// stopped, after answering everyone queued, when this is dropped.
pub(crate) struct GroupCommit<F: Flush> {
    shared: Arc<Shared<F>>,
    thread_name: &'static str,
    /// Makes the flusher (creates files, say); until it succeeds, every
    /// caller tries again (a full volume may have room later).
    open: Open<F>,
    started: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl<F: Flush> GroupCommit<F> {
    pub(crate) fn new(
        thread_name: &'static str,
        open: impl Fn() -> io::Result<F> + Send + Sync + 'static,
    ) -> GroupCommit<F> {
        GroupCommit {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    batch: F::Batch::default(),
                    waiters: Vec::new(),
                    spare: Default::default(),
                    running: false,
                    closing: false,
                    idle: false,
                    #[cfg(test)]
                    held: false,
                }),
                wake: Condvar::new(),
                rounds: AtomicU64::new(0),
                flusher: Mutex::new(None),
            }),
            thread_name,
            open: Box::new(open),
            started: AtomicBool::new(false),
            thread: Mutex::new(None),
        }
    }

    fn start(&self) -> io::Result<()> {
        let mut thread = self.thread.lock();
        if self.started.load(Ordering::Acquire) {
            return Ok(());
        }
        *self.shared.flusher.lock() = Some((self.open)()?);
        let shared = self.shared.clone();
        *thread = Some(
            std::thread::Builder::new()
                .name(self.thread_name.into())
                .spawn(move || shared.run())?,
        );
        self.started.store(true, Ordering::Release);
        Ok(())
    }

    /// Adds to the next round's batch now (`add` leaves it unchanged when
    /// it fails), in order after everything added before; resolves once
    /// the round that took it is done.
    pub(crate) fn submit(&self, add: impl FnOnce(&mut F::Batch) -> io::Result<()>) -> Committed {
        let started = match self.started.load(Ordering::Acquire) {
            true => Ok(()),
            false => self.start(),
        };
        if let Err(e) = started {
            return Committed(Err(Some(e)));
        }
        let (tx, rx) = oneshot::channel();
        let mut q = self.shared.queue.lock();
        if let Err(e) = add(&mut q.batch) {
            return Committed(Err(Some(e)));
        }
        q.waiters.push(tx);
        let wake = q.idle && !q.running;
        drop(q);
        if !defer_to_leader(&self.shared) && wake {
            self.shared.wake.notify_one();
        }
        Committed(Ok(rx))
    }

    /// Rounds run so far.
    pub(crate) fn rounds(&self) -> u64 {
        self.shared.rounds.load(Ordering::Relaxed)
    }

    /// Holds rounds back (`true`) or lets them run again.
    #[cfg(test)]
    pub(crate) fn hold(&self, held: bool) {
        self.shared.queue.lock().held = held;
        self.shared.wake.notify_all();
    }

    /// Callers waiting for a round not started yet.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.shared.queue.lock().waiters.len()
    }
}

impl<F: Flush> Shared<F> {
    /// The engine's thread: runs rounds while callers wait and no other
    /// round runs; once closing, answers everyone queued, then ends.
    fn run(&self) {
        let mut q = self.queue.lock();
        loop {
            if !q.running && !q.waiters.is_empty() && (!q.held() || q.closing) {
                self.round(&mut q);
                continue;
            }
            if q.closing && !q.running && q.waiters.is_empty() {
                return;
            }
            q.idle = true;
            self.wake.wait(&mut q);
            q.idle = false;
        }
    }

    /// Runs one round on this thread if callers wait and none runs; a
    /// round already running takes them next.
    fn lead(&self) {
        let mut q = self.queue.lock();
        if q.running || q.waiters.is_empty() || q.held() || q.closing {
            // The thread (woken by whoever changes that) serves them.
            if q.idle && !q.running && !q.waiters.is_empty() {
                self.wake.notify_one();
            }
            return;
        }
        self.round(&mut q);
        // Callers that queued meanwhile go to the thread, as does a close
        // it waited on this round for.
        if q.idle && (!q.waiters.is_empty() || q.closing) {
            self.wake.notify_one();
        }
    }

    /// Takes the batch and its callers, flushes it without the queue's
    /// lock, and answers them.
    fn round(&self, q: &mut MutexGuard<'_, Queue<F::Batch>>) {
        q.running = true;
        let (spare_batch, spare_waiters) = std::mem::take(&mut q.spare);
        let mut batch = std::mem::replace(&mut q.batch, spare_batch);
        let mut waiters = std::mem::replace(&mut q.waiters, spare_waiters);
        let outcome = MutexGuard::unlocked(q, || {
            let mut flusher = self.flusher.lock();
            let flusher = flusher.as_mut().expect("a round runs once started");
            flusher
                .flush(&mut batch)
                .map_err(|e| (e.kind(), e.to_string()))
        });
        self.rounds.fetch_add(1, Ordering::Relaxed);
        if outcome.is_err() && F::FAILURE_COVERS_QUEUED {
            q.batch.clear();
            waiters.append(&mut q.waiters);
        }
        MutexGuard::unlocked(q, || {
            for tx in waiters.drain(..) {
                let _ = tx.send(outcome.clone());
            }
        });
        batch.clear();
        q.spare = (batch, waiters);
        q.running = false;
    }
}

/// A round that [`Shared::lead`] can run on the current thread.
trait Lead: Send + Sync {
    fn lead(&self);
}

impl<F: Flush> Lead for Shared<F> {
    fn lead(&self) {
        Shared::lead(self)
    }
}

thread_local! {
    /// The engines a [`leading`] job submitted to, in order.
    static DEFERRED: RefCell<Option<Vec<Arc<dyn Lead>>>> = const { RefCell::new(None) };
}

/// Runs `job` with its submits waking no engine thread, then runs each
/// engine's round here if none is running. For store threads, which may
/// block: the caller holds no lock a round must not wait under (the job
/// has returned, releasing its own).
pub(crate) fn leading<R>(job: impl FnOnce() -> R) -> R {
    let outer = DEFERRED.replace(Some(Vec::new()));
    let r = job();
    let deferred = DEFERRED.replace(outer).unwrap_or_default();
    for engine in deferred {
        engine.lead();
    }
    r
}

/// Records `shared` for the enclosing [`leading`] job, if there is one.
fn defer_to_leader<F: Flush>(shared: &Arc<Shared<F>>) -> bool {
    DEFERRED.with_borrow_mut(|deferred| match deferred {
        Some(engines) => {
            let id = Arc::as_ptr(shared) as *const ();
            if !engines.iter().any(|e| Arc::as_ptr(e) as *const () == id) {
                engines.push(shared.clone());
            }
            true
        }
        None => false,
    })
}

impl<B> Queue<B> {
    fn held(&self) -> bool {
        #[cfg(test)]
        return self.held;
        #[cfg(not(test))]
        false
    }
}

impl<F: Flush> Drop for GroupCommit<F> {
    fn drop(&mut self) {
        // The thread answers what is queued, then stops (releasing what
        // the flusher holds: the journal's file locks).
        self.shared.queue.lock().closing = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
        self.shared.flusher.lock().take();
    }
}

/// Resolves once the round that took a [`GroupCommit::submit`] is done,
/// with its outcome.
pub struct Committed(Result<oneshot::Receiver<Outcome>, Option<io::Error>>);

impl Future for Committed {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.0 {
            Err(e) => Poll::Ready(Err(e
                .take()
                .unwrap_or_else(|| io::Error::other("polled after completion")))),
            Ok(rx) => Pin::new(rx).poll(cx).map(|r| match r {
                Ok(Ok(())) => Ok(()),
                Ok(Err((kind, msg))) => Err(io::Error::new(kind, msg)),
                Err(_) => Err(io::Error::other("the group commit thread stopped")),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
