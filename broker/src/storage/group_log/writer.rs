//! The store's own threads: every file operation of a group's write (open,
//! lock, claim, append, journal, unlink, load) runs here, in the order the
//! writes were submitted for that group, and never on the caller's thread.
//! The coordinator submits under its lock, so a slow lock or a slow file
//! on a network volume delays only the group it belongs to: groups are
//! lanes, taken by whichever thread is free, one thread per lane at a time.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

/// Threads of a store: enough that one group stuck in a slow call leaves
/// others served.
const THREADS: usize = 4;

pub(super) type Job = Box<dyn FnOnce() + Send>;

pub(super) struct Writer {
    shared: Arc<Lanes>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Lanes {
    state: Mutex<State>,
    /// A lane became ready, or the writer is stopping.
    ready: Condvar,
}

#[derive(Default)]
struct State {
    /// Groups with jobs queued or running; a lane goes once drained.
    lanes: HashMap<String, VecDeque<Job>>,
    /// Lanes waiting for a thread, each at most once.
    ready: VecDeque<String>,
    stopping: bool,
}

impl Writer {
    pub(super) fn new() -> std::io::Result<Writer> {
        let shared = Arc::new(Lanes::default());
        let mut threads = Vec::with_capacity(THREADS);
        for n in 0..THREADS {
            let shared = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("kaas-group-log-{n}"))
                    .spawn(move || shared.run())?,
            );
        }
        Ok(Writer { shared, threads })
    }

    /// Runs `job` after every job submitted before it for `group_id`.
    pub(super) fn submit(&self, group_id: &str, job: Job) {
        let mut state = self.shared.state.lock();
        match state.lanes.get_mut(group_id) {
            // Queued or running: the thread that has the lane runs it.
            Some(lane) => lane.push_back(job),
            None => {
                state
                    .lanes
                    .insert(group_id.to_string(), VecDeque::from([job]));
                state.ready.push_back(group_id.to_string());
                drop(state);
                self.shared.ready.notify_one();
            }
        }
    }
}

impl Drop for Writer {
    /// Waits for the threads to finish every job submitted: once the store
    /// is dropped, no job holds its logs (their files, the journal) open.
    fn drop(&mut self) {
        self.shared.state.lock().stopping = true;
        self.shared.ready.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Lanes {
    fn run(&self) {
        loop {
            let group = {
                let mut state = self.state.lock();
                loop {
                    if let Some(group) = state.ready.pop_front() {
                        break group;
                    }
                    if state.stopping {
                        return;
                    }
                    self.ready.wait(&mut state);
                }
            };
            self.drain(&group);
        }
    }

    /// Runs the lane's jobs in order until it is empty, then lets it go.
    fn drain(&self, group: &str) {
        loop {
            let job = {
                let mut state = self.state.lock();
                let lane = state.lanes.get_mut(group).expect("a ready lane exists");
                match lane.pop_front() {
                    Some(job) => job,
                    None => {
                        state.lanes.remove(group);
                        return;
                    }
                }
            };
            job();
        }
    }
}

#[cfg(test)]
mod tests;
