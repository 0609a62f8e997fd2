//! The broker's standing (docs/design/volume.md): its incarnation on the
//! volume, a check that the volume answers, whether its assignment source
//! still confirms the assignment, and what happens when another broker
//! fenced this process.
//!
//! Every `interval` a thread writes this process's heartbeat block, makes
//! it durable and reads both blocks back fresh
//! ([`Incarnation::heartbeat`]). The volume counts as healthy while the
//! last check that succeeded is younger than `timeout`: a stalled mount
//! stalls the thread, so the health falls with no write ever failing.
//! While it is down (or the broker is fenced, or cut off from its
//! assignment) the broker is not ready (`/readyz`, `/serving`), answers
//! ListGroups (the controller's probe) with COORDINATOR_NOT_AVAILABLE so
//! the controller counts it dead, and refuses produce with
//! NOT_LEADER_OR_FOLLOWER, so clients move on to where the controller
//! moves its partitions. While the volume stalls, a watchdog thread (no
//! I/O) also cuts every client connection ([`Tenancy::watch_once`]); cut
//! off from its assignment, the broker lets go of its partitions
//! ([`Tenancy::let_go_if_cut_off`]).
//!
//! A check that finds this process fenced makes the broker let go of every
//! partition and, once it follows an assignment at least as new as the
//! fence's, register a new incarnation: it serves again what the controller
//! gives it back.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::net::sockets::Sockets;
use crate::storage::incarnation::Incarnation;

/// How often the volume is checked and how long a check may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeCheckConfig {
    pub interval: Duration,
    /// The volume counts as stalled once no check succeeded for this long.
    /// Well under the controller's dead time, so a stalled broker stops
    /// acknowledging before its partitions move.
    pub timeout: Duration,
    /// A broker whose assignment source (the file, the ConfigMap) has not
    /// confirmed the assignment for this long is cut off: it may no longer
    /// own what it holds, so it acknowledges nothing and lets it go.
    pub assignment_timeout: Duration,
}

impl Default for VolumeCheckConfig {
    fn default() -> Self {
        VolumeCheckConfig {
            interval: Duration::from_millis(250),
            timeout: Duration::from_millis(1500),
            assignment_timeout: Duration::from_secs(15),
        }
    }
}

/// This broker process's incarnation, replaced when it was fenced.
pub struct Tenancy {
    current: RwLock<Arc<Incarnation>>,
    config: VolumeCheckConfig,
    started: Instant,
    /// Milliseconds since `started` of the last check that succeeded.
    last_ok_ms: AtomicU64,
    /// What the last failed check said.
    last_error: Mutex<Option<String>>,
    /// Healthy at the last look (for logging and counting transitions).
    was_healthy: AtomicBool,
    /// What the fenced incarnation held was let go.
    let_go_done: AtomicBool,
    /// The checks run ([`Self::run`]): until then nothing says the volume
    /// stalled (a broker driven by tests alone).
    checking: AtomicBool,
    /// Milliseconds since `started` of the last time the assignment source
    /// confirmed the assignment; judged once a source confirmed one.
    confirmed_ms: AtomicU64,
    following: AtomicBool,
    /// What the broker held was let go after it was cut off.
    cut_off_let_go: AtomicBool,
    pub stalls: prometheus_client::metrics::counter::Counter,
    pub check_failures: prometheus_client::metrics::counter::Counter,
    pub fences: prometheus_client::metrics::counter::Counter,
    /// Milliseconds the last completed check took.
    pub last_check_ms: prometheus_client::metrics::gauge::Gauge,
    /// The client connections, cut when the volume stalls.
    pub sockets: Arc<Sockets>,
}

impl Tenancy {
    pub fn new(incarnation: Arc<Incarnation>, mut config: VolumeCheckConfig) -> Tenancy {
        if config.timeout < 2 * config.interval {
            warn!(interval = ?config.interval, timeout = ?config.timeout,
                  "the volume check timeout is under two intervals; using two intervals");
            config.timeout = 2 * config.interval;
        }
        Tenancy {
            current: RwLock::new(incarnation),
            config,
            started: Instant::now(),
            last_ok_ms: AtomicU64::new(0),
            last_error: Mutex::new(None),
            was_healthy: AtomicBool::new(true),
            let_go_done: AtomicBool::new(false),
            checking: AtomicBool::new(false),
            confirmed_ms: AtomicU64::new(0),
            following: AtomicBool::new(false),
            cut_off_let_go: AtomicBool::new(false),
            stalls: Default::default(),
            check_failures: Default::default(),
            fences: Default::default(),
            last_check_ms: Default::default(),
            sockets: Arc::default(),
        }
    }

    pub fn incarnation(&self) -> Arc<Incarnation> {
        self.current.read().clone()
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// `Ok` while the volume answers and this process is not fenced; else
    /// why not, for `/readyz` and logs.
    pub fn status(&self) -> Result<(), String> {
        let incarnation = self.incarnation();
        let result = if let Some(f) = incarnation.fenced() {
            Err(format!(
                "this broker process was fenced by broker {} at assignment version {}; it \
                 serves again once it follows a newer assignment",
                f.by_broker, f.at_version
            ))
        } else {
            let since = self
                .now_ms()
                .saturating_sub(self.last_ok_ms.load(Ordering::Acquire));
            let checking = self.checking.load(Ordering::Acquire);
            if checking && since > self.config.timeout.as_millis() as u64 {
                let why = self.last_error.lock().clone().unwrap_or_else(|| {
                    "the check has not returned: the volume does not answer".into()
                });
                Err(format!(
                    "the data volume check last succeeded {since} ms ago ({why})"
                ))
            } else if let Some(unconfirmed) = self.unconfirmed_for() {
                Err(format!(
                    "the assignment was last confirmed {unconfirmed} ms ago (its source, the \
                     controller's file or the API server, is out of reach): this broker may no \
                     longer own what it holds"
                ))
            } else {
                Ok(())
            }
        };
        let healthy = result.is_ok();
        if self.was_healthy.swap(healthy, Ordering::AcqRel) != healthy {
            match &result {
                Err(why) => {
                    self.stalls.inc();
                    error!(reason = %why, "this broker cannot serve: it stops acknowledging and \
                           answers NOT_LEADER_OR_FOLLOWER and COORDINATOR_NOT_AVAILABLE")
                }
                Ok(()) => info!(
                    "this broker serves again: its volume answers and its \
                                 assignment is confirmed"
                ),
            }
        }
        result
    }

    pub fn healthy(&self) -> bool {
        self.status().is_ok()
    }

    /// The assignment source read the assignment now (changed or not).
    pub fn assignment_confirmed(&self) {
        self.confirmed_ms.store(self.now_ms(), Ordering::Release);
        self.following.store(true, Ordering::Release);
    }

    /// How long the assignment went unconfirmed, when past the timeout.
    fn unconfirmed_for(&self) -> Option<u64> {
        if !self.following.load(Ordering::Acquire) {
            return None;
        }
        let since = self
            .now_ms()
            .saturating_sub(self.confirmed_ms.load(Ordering::Acquire));
        (since > self.config.assignment_timeout.as_millis() as u64).then_some(since)
    }

    /// Once cut off from the assignment: `let_go` once (what this broker
    /// holds may be another's by now, and its new owner waits for the
    /// locks). Again after the next cut.
    pub fn let_go_if_cut_off(&self, let_go: &dyn Fn()) {
        if self.unconfirmed_for().is_none() {
            self.cut_off_let_go.store(false, Ordering::Release);
        } else if !self.cut_off_let_go.swap(true, Ordering::AcqRel) {
            warn!("cut off from the assignment: letting go of every partition");
            let_go();
        }
    }

    /// The checks run and none succeeded within the timeout. No I/O: the
    /// watchdog asks it while the volume blocks every thread that touches
    /// it.
    fn stalled(&self) -> bool {
        let since = self
            .now_ms()
            .saturating_sub(self.last_ok_ms.load(Ordering::Acquire));
        self.checking.load(Ordering::Acquire) && since > self.config.timeout.as_millis() as u64
    }

    /// One look of the watchdog: while the volume is stalled, every client
    /// connection is cut (so clients fail over now rather than at their
    /// request timeouts, whatever thread their request blocks). Whether it
    /// was stalled.
    pub fn watch_once(&self, was_stalled: bool) -> bool {
        if !self.stalled() {
            return false;
        }
        let cut = self.sockets.cut_all();
        if !was_stalled {
            error!(connections = cut, timeout = ?self.config.timeout,
                   "the data volume stopped answering: cut every client connection");
        }
        true
    }

    /// One check, on the calling thread (blocking).
    pub fn check_once(&self) {
        let incarnation = self.incarnation();
        let start = Instant::now();
        let result = incarnation.heartbeat();
        self.last_check_ms
            .set(start.elapsed().as_millis().min(i64::MAX as u128) as i64);
        match result {
            Ok(()) => {
                self.last_ok_ms.store(self.now_ms(), Ordering::Release);
                *self.last_error.lock() = None;
            }
            Err(_) if incarnation.fenced().is_some() => {}
            Err(e) => {
                self.check_failures.inc();
                let mut last = self.last_error.lock();
                if last.is_none() {
                    warn!(error = %e, "the data volume check failed");
                }
                *last = Some(e.to_string());
            }
        }
    }

    /// After this process was fenced: `let_go` once (release everything
    /// held under the fenced incarnation), then, once the broker follows
    /// an assignment at least as new as the fence's (`following`), a new
    /// incarnation. Blocking. Whether one was registered.
    pub fn renew_if_fenced(
        &self,
        cluster_dir: &std::path::Path,
        broker: i32,
        following: u64,
        let_go: &dyn Fn(),
    ) -> std::io::Result<bool> {
        let Some(fence) = self.incarnation().fenced() else {
            return Ok(false);
        };
        if !self.let_go_done.swap(true, Ordering::AcqRel) {
            self.fences.inc();
            let_go();
        }
        if following < fence.at_version {
            return Ok(false);
        }
        let next = Incarnation::register(cluster_dir, broker)?;
        info!(
            incarnation = next.id(),
            version = following,
            "serving again under a new incarnation"
        );
        *self.current.write() = next;
        self.last_ok_ms.store(self.now_ms(), Ordering::Release);
        self.let_go_done.store(false, Ordering::Release);
        Ok(true)
    }

    /// Runs the checks on their own thread until `shutdown` (a stalled
    /// volume blocks that thread, never the runtime), and on the runtime
    /// [`Self::renew_if_fenced`].
    pub async fn run(
        self: Arc<Self>,
        cluster_dir: std::path::PathBuf,
        broker: i32,
        following: impl Fn() -> u64 + Send + Sync + 'static,
        let_go: impl Fn() + Send + Sync + 'static,
        shutdown: CancellationToken,
    ) {
        self.last_ok_ms.store(self.now_ms(), Ordering::Release);
        self.checking.store(true, Ordering::Release);
        let checker = self.clone();
        // Dropped at shutdown: the thread wakes and ends at once.
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("kaas-volume-check".into())
            .spawn(move || loop {
                checker.check_once();
                match stopped.recv_timeout(checker.config.interval) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
            });
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                error!(error = %e, "cannot start the volume check thread");
                return;
            }
        };
        let watcher = self.clone();
        let (stop_watch, stopped) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::Builder::new()
            .name("kaas-volume-watch".into())
            .spawn(move || {
                let mut stalled = false;
                loop {
                    match stopped.recv_timeout(Duration::from_millis(100)) {
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                    stalled = watcher.watch_once(stalled);
                }
            });
        if let Err(e) = &watchdog {
            error!(error = %e, "cannot start the volume watchdog thread");
        }
        let shutdown_check = async move {
            drop((stop, stop_watch));
            // A check stalled on the volume is not waited for long: the
            // process ends regardless.
            let joined = tokio::task::spawn_blocking(move || {
                let _ = thread.join();
                if let Ok(w) = watchdog {
                    let _ = w.join();
                }
            });
            let _ = tokio::time::timeout(Duration::from_secs(2), joined).await;
        };
        let let_go: Arc<dyn Fn() + Send + Sync> = Arc::new(let_go);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
            let _ = self.status();
            self.let_go_if_cut_off(&*let_go);
            if self.incarnation().fenced().is_none() {
                continue;
            }
            let (this, dir, version, let_go) = (
                self.clone(),
                cluster_dir.clone(),
                following(),
                let_go.clone(),
            );
            let renewed = tokio::task::spawn_blocking(move || {
                this.renew_if_fenced(&dir, broker, version, &*let_go)
            })
            .await;
            match renewed {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => warn!(error = %e, "cannot register a new incarnation yet"),
                Err(e) => warn!(error = %e, "cannot register a new incarnation yet"),
            }
        }
        shutdown_check.await;
    }
}

#[cfg(test)]
mod tests;
