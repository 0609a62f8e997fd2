use super::*;

fn gen(n: u32, broker: i32, incarnation: &str, version: u64) -> Generation {
    Generation {
        generation: n,
        broker,
        incarnation: incarnation.into(),
        assignment_version: version,
        leader_epoch: version as i32,
        start_offset: 10 * i64::from(n),
        log_start_offset: 0,
        holds_lock: true,
        epochs: Vec::new(),
    }
}

fn me(dir: &Path, broker: i32, version: u64, alive: &[i32]) -> Tenure {
    Tenure::of_new_process(dir, broker, version, alive)
}

#[test]
fn a_free_lock_or_no_generation_proceeds_and_a_held_unknown_one_waits() {
    let dir = tempfile::tempdir().unwrap();
    let b1 = me(dir.path(), 1, 5, &[0, 1]);
    assert_eq!(decide(None, true, false, &b1), Takeover::Proceed);
    assert!(matches!(decide(None, false, false, &b1), Takeover::Wait(_)));
    let latest = gen(1, 0, "zero", 4);
    assert_eq!(decide(Some(&latest), true, false, &b1), Takeover::Proceed);
    // A holder that began without the lock: a free lock says nothing of
    // it, its release marker does.
    let lockless = Generation {
        holds_lock: false,
        ..latest.clone()
    };
    assert!(matches!(
        decide(Some(&lockless), true, false, &b1),
        Takeover::Wait(_)
    ));
    assert_eq!(decide(Some(&lockless), false, true, &b1), Takeover::Proceed);
}

#[test]
fn a_held_lock_of_a_dead_broker_or_an_earlier_self_is_fenced_an_alive_one_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let latest = gen(1, 0, "zero", 4);
    let alive = me(dir.path(), 1, 5, &[0, 1]);
    assert!(
        matches!(decide(Some(&latest), false, false, &alive), Takeover::Wait(w) if w.contains("broker 0"))
    );
    let dead = me(dir.path(), 1, 5, &[1]);
    assert_eq!(
        decide(Some(&latest), false, false, &dead),
        Takeover::Fence {
            broker: 0,
            incarnation: "zero".into()
        }
    );
    // Broker 0 restarted: its earlier process is fenced, alive or not.
    let restarted = me(dir.path(), 0, 5, &[0, 1]);
    assert!(matches!(
        decide(Some(&latest), false, false, &restarted),
        Takeover::Fence { broker: 0, .. }
    ));
    // Its own still-open handle is waited for.
    let mut own = latest.clone();
    own.incarnation = restarted.incarnation_id().to_string();
    assert!(matches!(
        decide(Some(&own), false, false, &restarted),
        Takeover::Wait(_)
    ));
}

#[test]
fn a_generation_opened_under_a_newer_assignment_makes_this_broker_stale() {
    let dir = tempfile::tempdir().unwrap();
    let latest = gen(3, 2, "two", 9);
    let old = me(dir.path(), 1, 8, &[1]);
    let stale = Takeover::Stale {
        broker: 2,
        assignment_version: 9,
    };
    assert_eq!(decide(Some(&latest), true, false, &old), stale);
    assert_eq!(decide(Some(&latest), false, false, &old), stale);
    // The same version names one leader: another broker there is stale.
    let same = me(dir.path(), 1, 9, &[1]);
    assert_eq!(decide(Some(&latest), true, false, &same), stale);
    // A process without an incarnation never fences.
    let tool = Tenure::standalone(dir.path().to_path_buf());
    assert!(matches!(
        decide(Some(&latest), false, false, &tool),
        Takeover::Wait(_)
    ));
    assert_eq!(decide(Some(&latest), true, false, &tool), Takeover::Proceed);
}

#[test]
fn a_release_marker_is_per_generation() {
    let dir = tempfile::tempdir().unwrap();
    assert!(!is_released(dir.path(), 3));
    release(dir.path(), 3).unwrap();
    release(dir.path(), 3).unwrap();
    assert!(is_released(dir.path(), 3));
    assert!(!is_released(dir.path(), 4));
}

#[test]
fn epochs_come_from_the_latest_generation_s_checkpoint_else_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut latest = gen(2, 1, "b", 6);
    latest.epochs = vec![(3, 0), (5, 40)];
    let entries = |c: LeaderEpochCache| -> Vec<(i32, i64)> {
        c.entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect()
    };
    assert_eq!(
        entries(epochs_of(dir.path(), Some(&latest)).unwrap()),
        [(3, 0), (5, 40)]
    );
    LeaderEpochCache::from_entries([(3, 0), (5, 40), (6, 55)])
        .write(dir.path(), 2)
        .unwrap();
    assert_eq!(
        entries(epochs_of(dir.path(), Some(&latest)).unwrap()),
        [(3, 0), (5, 40), (6, 55)]
    );
    // An earlier generation's checkpoint is not the latest one's.
    LeaderEpochCache::from_entries([(9, 99)])
        .write(dir.path(), 1)
        .unwrap();
    assert_eq!(
        entries(epochs_of(dir.path(), Some(&latest)).unwrap()).len(),
        3
    );
    assert!(epochs_of(dir.path(), None).unwrap().entries().is_empty());
}

#[test]
fn records_are_created_once_and_read_in_order() {
    let dir = tempfile::tempdir().unwrap();
    assert!(read(dir.path()).unwrap().is_empty());
    assert!(create(dir.path(), &gen(2, 1, "b", 6)).unwrap());
    assert!(create(dir.path(), &gen(1, 0, "a", 5)).unwrap());
    assert!(!create(dir.path(), &gen(2, 0, "c", 7)).unwrap());
    let gens = read(dir.path()).unwrap();
    assert_eq!(gens, vec![gen(1, 0, "a", 5), gen(2, 1, "b", 6)]);
    assert_eq!(limit_of(&gens, 0), Some(10));
    assert_eq!(limit_of(&gens, 1), Some(20));
    assert_eq!(limit_of(&gens, 2), None);
}

mod model;
