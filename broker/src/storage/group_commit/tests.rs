use super::*;

/// Records each round's batch and the thread that ran it; fails the
/// rounds it is told to.
struct Recorder {
    rounds: Rounds,
    fail: Arc<AtomicBool>,
}

impl Flush for Recorder {
    type Batch = Vec<u8>;
    fn flush(&mut self, batch: &mut Vec<u8>) -> io::Result<()> {
        RAN_ON.with(|t| t.set(true));
        self.rounds.lock().push(batch.clone());
        match self.fail.load(Ordering::SeqCst) {
            true => Err(io::Error::other("injected")),
            false => Ok(()),
        }
    }
}

struct FailingSyncfs;

impl Flush for FailingSyncfs {
    type Batch = ();
    const FAILURE_COVERS_QUEUED: bool = true;
    fn flush(&mut self, _: &mut ()) -> io::Result<()> {
        Err(io::Error::other("write-back error"))
    }
}

type Rounds = Arc<Mutex<Vec<Vec<u8>>>>;

thread_local! {
    /// A round ran on this thread.
    static RAN_ON: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn recorder() -> (GroupCommit<Recorder>, Rounds, Arc<AtomicBool>) {
    let rounds = Arc::new(Mutex::new(Vec::new()));
    let fail = Arc::new(AtomicBool::new(false));
    let (r, f) = (rounds.clone(), fail.clone());
    let commit = GroupCommit::new("test-commit", move || {
        Ok(Recorder {
            rounds: r.clone(),
            fail: f.clone(),
        })
    });
    (commit, rounds, fail)
}

fn push(byte: u8) -> impl FnOnce(&mut Vec<u8>) -> io::Result<()> {
    move |b| {
        b.push(byte);
        Ok(())
    }
}

#[tokio::test]
async fn callers_waiting_together_share_one_round_in_order() {
    let (commit, rounds, _) = recorder();
    commit.hold(true);
    let waits: Vec<_> = (0..10).map(|i| commit.submit(push(i))).collect();
    commit.hold(false);
    for r in futures::future::join_all(waits).await {
        r.unwrap();
    }
    assert_eq!(*rounds.lock(), vec![(0..10).collect::<Vec<u8>>()]);
    assert_eq!(commit.rounds(), 1);
}

#[tokio::test]
async fn a_leading_job_runs_its_round_itself_once_the_job_is_done() {
    let (commit, rounds, _) = recorder();
    commit.submit(push(0)).await.unwrap(); // the engine's thread starts
                                           // Until its thread is back asleep, its round counts as running.
    while {
        let q = commit.shared.queue.lock();
        q.running || !q.idle
    } {
        std::thread::yield_now();
    }
    RAN_ON.with(|t| t.set(false));
    let committed = leading(|| {
        let c = commit.submit(push(1));
        let d = commit.submit(push(2));
        assert_eq!(commit.rounds(), 1, "no round inside the job");
        (c, d)
    });
    assert_eq!(commit.rounds(), 2, "one round, run before leading returns");
    assert!(RAN_ON.with(|t| t.get()), "on the job's own thread");
    committed.0.await.unwrap();
    committed.1.await.unwrap();
    assert_eq!(*rounds.lock(), vec![vec![0], vec![1, 2]]);
}

#[tokio::test]
async fn a_leading_job_that_cannot_lead_leaves_its_callers_to_the_thread() {
    let (commit, rounds, _) = recorder();
    commit.hold(true);
    RAN_ON.with(|t| t.set(false));
    let committed = leading(|| commit.submit(push(1)));
    assert_eq!(commit.rounds(), 0, "held: nobody leads");
    commit.hold(false);
    committed.await.unwrap();
    assert!(!RAN_ON.with(|t| t.get()), "the engine's thread ran it");
    assert_eq!(*rounds.lock(), vec![vec![1]]);
}

#[tokio::test]
async fn a_failed_add_queues_nothing_and_fails_only_its_caller() {
    let (commit, rounds, _) = recorder();
    commit.hold(true);
    let first = commit.submit(push(1));
    let refused = commit.submit(|_| Err(io::Error::other("too long")));
    commit.hold(false);
    assert_eq!(refused.await.unwrap_err().to_string(), "too long");
    first.await.unwrap();
    assert_eq!(*rounds.lock(), vec![vec![1]]);
}

#[tokio::test]
async fn a_failed_round_fails_its_callers_and_the_next_round_runs() {
    let (commit, rounds, fail) = recorder();
    fail.store(true, Ordering::SeqCst);
    let err = commit.submit(push(1)).await.unwrap_err();
    assert_eq!(err.to_string(), "injected");
    fail.store(false, Ordering::SeqCst);
    commit.submit(push(2)).await.unwrap();
    assert_eq!(*rounds.lock(), vec![vec![1], vec![2]]);
}

#[tokio::test]
async fn a_syncfs_failure_also_fails_the_callers_queued_behind_it() {
    let commit = GroupCommit::new("test-syncfs", || Ok(FailingSyncfs));
    // Both are taken by one round, or the second queues behind the
    // failing first: either way neither may hear success.
    let a = commit.submit(|_| Ok(()));
    let b = commit.submit(|_| Ok(()));
    assert!(a.await.is_err());
    assert!(b.await.is_err());
}

#[tokio::test]
async fn a_caller_queued_before_the_owner_goes_is_still_answered() {
    let (commit, rounds, _) = recorder();
    commit.hold(true);
    let last = commit.submit(push(7));
    // Closing overrides the hold: the thread drains, then stops.
    drop(commit);
    last.await.unwrap();
    assert_eq!(*rounds.lock(), vec![vec![7]]);
}

#[tokio::test]
async fn a_flusher_that_cannot_open_is_retried_by_the_next_caller() {
    let tries = Arc::new(AtomicU64::new(0));
    let t = tries.clone();
    let commit = GroupCommit::new("test-open", move || {
        match t.fetch_add(1, Ordering::SeqCst) {
            0 => Err(io::Error::other("volume full")),
            _ => Ok(FailingSyncfs),
        }
    });
    let first = commit.submit(|_| Ok(())).await.unwrap_err();
    assert_eq!(first.to_string(), "volume full");
    // Opened now; its round fails by design of this flusher.
    assert_eq!(
        commit.submit(|_| Ok(())).await.unwrap_err().to_string(),
        "write-back error"
    );
    assert_eq!(tries.load(Ordering::SeqCst), 2);
}
