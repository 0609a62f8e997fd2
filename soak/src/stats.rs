//! Counters of what the run did, and a log of notable events with their
//! time since the start.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::proto::error_name;

#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

pub struct Stats {
    pub start: Instant,
    pub joins: Counter,
    pub rebalances: Counter,
    pub leaves: Counter,
    pub crashes: Counter,
    pub heartbeats: Counter,
    pub commits_sent: Counter,
    pub commits_acked: Counter,
    pub partition_commits_acked: Counter,
    pub coordinator_moves: Counter,
    pub groups_created: Counter,
    pub groups_deleted: Counter,
    pub delete_gave_up: Counter,
    pub kills: Counter,
    pub restarts: Counter,
    /// Restarts right after the kill (the others waited for the controller).
    pub restarts_at_once: Counter,
    /// Simulated members that panicked (a harness bug).
    pub member_panics: Counter,
    /// (API, error) -> count, for answers other than NONE.
    errors: Mutex<BTreeMap<(String, String), u64>>,
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            start: Instant::now(),
            joins: Counter::default(),
            rebalances: Counter::default(),
            leaves: Counter::default(),
            crashes: Counter::default(),
            heartbeats: Counter::default(),
            commits_sent: Counter::default(),
            commits_acked: Counter::default(),
            partition_commits_acked: Counter::default(),
            coordinator_moves: Counter::default(),
            groups_created: Counter::default(),
            groups_deleted: Counter::default(),
            delete_gave_up: Counter::default(),
            kills: Counter::default(),
            restarts: Counter::default(),
            restarts_at_once: Counter::default(),
            member_panics: Counter::default(),
            errors: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Counts an error code answered to `api`.
    pub fn code(&self, api: &str, code: i16) {
        self.error(api, &error_name(code));
    }

    /// Counts a failure of `api` by kind (a code name, "connection", ...).
    pub fn error(&self, api: &str, what: &str) {
        *self
            .errors
            .lock()
            .unwrap()
            .entry((api.to_string(), what.to_string()))
            .or_default() += 1;
    }

    pub fn errors(&self) -> BTreeMap<(String, String), u64> {
        self.errors.lock().unwrap().clone()
    }

    /// Prints a timestamped event line.
    pub fn event(&self, what: &str) {
        println!("[{:7.1}s] {what}", self.elapsed_s());
    }
}
