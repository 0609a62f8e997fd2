//! The runtime every coordinator runs on, Apache's `CoordinatorRuntime`
//! for a model: a coordinator is a pure core (requests and timers in,
//! answers and writes out) keyed by ids the assignment routes (group ids,
//! transactional ids); the runtime holds the core behind one mutex beside
//! the requests waiting for an answer, loads a key's log the first time
//! this broker serves it, and reports each write's outcome to the core
//! once it is durable, so that no answer that waits on a write is released
//! before it.
//!
//! Writes are *ordered* while the mutex is held (the stores queue each on
//! its key's lane and do no I/O) and *awaited* outside it: a slow lock,
//! write or fsync never blocks other keys, and records of one key land in
//! the order the core emitted them.
//!
//! A coordinator plugs in with its core and a shell that carries out the
//! core's effects: answers through [`Shard::answer`], writes through its
//! store, their outcomes reported back with [`Runtime::after_write`].

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use kaas_shared::Routing;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::{oneshot, watch, Notify};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::clock::Clock;
use super::errors::code;
use crate::store::{Durable, StoreError};

/// Identifies a request waiting for its answer.
pub type Token = u64;

/// Why a request cannot be served here: the error code to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotServed(pub i16);

/// How the keys of one kind of coordinator are routed.
#[derive(Clone, Copy)]
pub struct Keyspace {
    /// What a key is, for logs: "group", "transactional id".
    pub noun: &'static str,
    /// The broker that coordinates a key.
    pub owner: fn(&Routing, &str) -> Option<i32>,
    /// A span naming a key by its own field (`group_id`,
    /// `transactional_id`), for the runtime's log lines.
    pub span: fn(&str) -> tracing::Span,
}

/// What the runtime guards with one mutex: the core, the shell's own state
/// beside it (`extra`), and the requests waiting for an answer.
pub struct Shard<C, A, X> {
    pub core: C,
    pub extra: X,
    waiters: HashMap<Token, oneshot::Sender<A>>,
}

impl<C, A, X> Shard<C, A, X> {
    /// Releases the answer of request `token`; false if nobody waits for it
    /// (the caller went away).
    pub fn answer(&mut self, token: Token, answer: A) -> bool {
        match self.waiters.remove(&token) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Takes request `token`'s answer channel, for a shell that releases
    /// the answer later than its core gives it (EndTxn's, held for the
    /// transaction's markers).
    pub fn take_waiter(&mut self, token: Token) -> Option<oneshot::Sender<A>> {
        self.waiters.remove(&token)
    }
}

pub struct Runtime<C, A, X = ()> {
    broker_id: i32,
    keyspace: Keyspace,
    shard: Mutex<Shard<C, A, X>>,
    clock: Arc<dyn Clock>,
    routing: watch::Receiver<Option<Arc<Routing>>>,
    next_token: AtomicU64,
}

impl<C, A, X> Runtime<C, A, X>
where
    C: Send + 'static,
    A: Send + 'static,
    X: Send + 'static,
{
    pub fn new(
        broker_id: i32,
        keyspace: Keyspace,
        core: C,
        extra: X,
        clock: Arc<dyn Clock>,
        routing: watch::Receiver<Option<Arc<Routing>>>,
    ) -> Runtime<C, A, X> {
        Runtime {
            broker_id,
            keyspace,
            shard: Mutex::new(Shard {
                core,
                extra,
                waiters: HashMap::new(),
            }),
            clock,
            routing,
            next_token: AtomicU64::new(1),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Shard<C, A, X>> {
        self.shard.lock()
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    pub fn broker_id(&self) -> i32 {
        self.broker_id
    }

    /// The routing this broker follows, if any.
    pub fn routing(&self) -> Option<Arc<Routing>> {
        self.routing.borrow().clone()
    }

    /// The assignments as they change, for a shell that reacts to them.
    pub fn assignments(&self) -> watch::Receiver<Option<Arc<Routing>>> {
        self.routing.clone()
    }

    /// Whether `routing` has this broker coordinate `key`.
    pub fn owns_in(&self, routing: &Routing, key: &str) -> bool {
        (self.keyspace.owner)(routing, key) == Some(self.broker_id)
    }

    /// Whether this broker coordinates `key` now.
    pub fn check_owner(&self, key: &str) -> Result<(), NotServed> {
        match self.routing() {
            None => Err(NotServed(code::COORDINATOR_NOT_AVAILABLE)),
            Some(r) if self.owns_in(&r, key) => Ok(()),
            Some(_) => Err(NotServed(code::NOT_COORDINATOR)),
        }
    }

    /// Owner check; then, unless `loaded` finds `key` in memory, its log
    /// read on a blocking thread (`read`), the owner checked again (the key
    /// may have moved during the read) and `install` run under the lock,
    /// unless another request loaded the key meanwhile: a key in memory is
    /// never overwritten by older state from its log.
    pub async fn load<S: Send + 'static>(
        &self,
        key: &str,
        loaded: impl Fn(&Shard<C, A, X>) -> bool,
        read: impl FnOnce() -> Result<Option<S>, StoreError> + Send + 'static,
        install: impl FnOnce(&mut Shard<C, A, X>, Option<S>, u64),
    ) -> Result<(), NotServed> {
        self.check_owner(key)?;
        if loaded(&self.lock()) {
            return Ok(());
        }
        let noun = self.keyspace.noun;
        let stored = match tokio::task::spawn_blocking(read).await {
            Ok(Ok(stored)) => stored,
            Ok(Err(e @ (StoreError::Fenced { .. } | StoreError::Moved { .. }))) => {
                let _key = (self.keyspace.span)(key).entered();
                info!(error = %e, "not loading a {noun} another broker claimed");
                return Err(NotServed(code::NOT_COORDINATOR));
            }
            Ok(Err(e)) => {
                let _key = (self.keyspace.span)(key).entered();
                warn!(error = %e, "cannot read the {noun}'s log");
                return Err(NotServed(code::COORDINATOR_NOT_AVAILABLE));
            }
            Err(_) => return Err(NotServed(code::COORDINATOR_NOT_AVAILABLE)),
        };
        self.check_owner(key)?;
        let mut shard = self.lock();
        if !loaded(&shard) {
            let now = self.now_ms();
            install(&mut shard, stored, now);
        }
        Ok(())
    }

    /// Submits a request whose answer may come later (a parked join, a
    /// commit waiting for its write) and waits for the answer. `submit`
    /// runs under the lock with the request's token; it may hand back the
    /// report of the write the answer waits on, which this task runs rather
    /// than a task of its own (one hand-off less per commit), to its end
    /// even if the caller goes away. A key unloaded before it answered
    /// reads as NOT_COORDINATOR.
    pub async fn call(
        &self,
        submit: impl FnOnce(&mut Shard<C, A, X>, Token, u64) -> Option<BoxFuture<'static, ()>>,
    ) -> Result<A, NotServed> {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let own_write = {
            let mut shard = self.lock();
            shard.waiters.insert(token, tx);
            let now = self.now_ms();
            submit(&mut shard, token, now)
        };
        if let Some(report) = own_write {
            FinishOnDrop(Some(report)).await;
        }
        rx.await.map_err(|_| NotServed(code::NOT_COORDINATOR))
    }

    /// Waits for a write to be durable, then runs `report` with its outcome
    /// under the lock: a task to spawn, or for the request whose answer
    /// waits on the write to run ([`Self::call`]).
    pub fn after_write(
        self: &Arc<Self>,
        durable: Durable,
        report: impl FnOnce(&mut Shard<C, A, X>, Result<(), StoreError>, u64) + Send + 'static,
    ) -> BoxFuture<'static, ()> {
        let runtime = self.clone();
        Box::pin(async move {
            let outcome = durable.await;
            let mut shard = runtime.lock();
            let now = runtime.now_ms();
            report(&mut shard, outcome, now);
        })
    }
}

/// Whether a failed write says the key's log belongs to another broker now
/// (what this one holds of the key is stale: it unloads it).
pub fn moved(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::Fenced { .. } | StoreError::Moved { .. } | StoreError::Reclaimed { .. }
    )
}

/// Runs a report to its end even if the request awaiting it goes away
/// (the client disconnected): the core must hear every write's outcome.
struct FinishOnDrop(Option<BoxFuture<'static, ()>>);

impl Future for FinishOnDrop {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(report) = self.0.as_mut() else {
            return Poll::Ready(());
        };
        let done = report.as_mut().poll(cx);
        if done.is_ready() {
            self.0 = None;
        }
        done
    }
}

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        if let Some(report) = self.0.take() {
            // Without a runtime the process is ending: nobody is left to hear.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(report);
            }
        }
    }
}

/// The wake-up of a coordinator's timer loop: it sleeps until its core's
/// next deadline (at most a second), and a request that arms an earlier
/// timer wakes it.
#[derive(Default)]
pub struct TimerWake {
    notify: Notify,
    /// The deadline the loop sleeps until.
    sleeps_until: AtomicU64,
}

impl TimerWake {
    /// Called after the core may have armed a timer (under the lock).
    pub fn armed(&self, next_deadline: Option<u64>) {
        if next_deadline.is_some_and(|d| d < self.sleeps_until.load(Ordering::Relaxed)) {
            self.notify.notify_one();
        }
    }

    /// How long the loop sleeps at `now` for a core whose next deadline is
    /// `next`; called under the lock, so that a request arming an earlier
    /// timer after this sees the new deadline and wakes the loop.
    pub fn plan(&self, now: u64, next: Option<u64>) -> Duration {
        let wait = next.map_or(1000, |d| d.saturating_sub(now)).min(1000);
        self.sleeps_until.store(now + wait, Ordering::Relaxed);
        Duration::from_millis(wait)
    }

    /// Sleeps `wait` or until woken; false once `shutdown` fires.
    pub async fn sleep(&self, wait: Duration, shutdown: &CancellationToken) -> bool {
        tokio::select! {
            _ = shutdown.cancelled() => false,
            _ = self.notify.notified() => true,
            _ = tokio::time::sleep(wait) => true,
        }
    }
}

#[cfg(test)]
mod tests;
