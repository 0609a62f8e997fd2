use kaas_shared::{Assignment, BrokerInfo};

use futures::FutureExt;

use std::time::Duration;

use super::*;
use crate::coordinator::clock::ManualClock;
use crate::group::core::OffsetCommitRequest;
use crate::group::store::MemoryStore;

type RoutingSender = watch::Sender<Option<Arc<Routing>>>;

fn manager(store: Arc<MemoryStore>, clock: Arc<ManualClock>) -> (Arc<GroupManager>, RoutingSender) {
    let routing = Routing::new(Assignment::of_brokers(
        1,
        [BrokerInfo::alive(0, "127.0.0.1", 9092)],
    ));
    let (tx, rx) = watch::channel(Some(Arc::new(routing)));
    let config = GroupManagerConfig {
        idle_unload_ms: 60_000,
        ..Default::default()
    };
    (GroupManager::new(0, config, store, clock, rx), tx)
}

async fn commit(m: &Arc<GroupManager>, group: &str, offset: i64) {
    m.prepare(group).await.unwrap();
    let req = commit_request(group, offset);
    let r = m
        .call(group, |core, token, now| {
            core.offset_commit(token, req, now)
        })
        .await;
    assert!(matches!(r, Some(Response::OffsetCommit(_))));
}

/// Brokers 0 and 1, both alive.
fn two_brokers() -> Routing {
    Routing::new(Assignment::of_brokers(
        2,
        [
            BrokerInfo::alive(0, "127.0.0.1", 9092),
            BrokerInfo::alive(1, "127.0.0.1", 9093),
        ],
    ))
}

/// The `nth` group id `g0`, `g1`, … that `routing` gives to `owner`.
fn owned_by(routing: &Routing, owner: i32, nth: usize) -> String {
    (0..)
        .map(|i| format!("g{i}"))
        .filter(|g| routing.owner_of_group(g) == Some(owner))
        .nth(nth)
        .unwrap()
}

fn commit_request(group: &str, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::simple(group, "t", 0, offset)
}

#[tokio::test]
async fn a_commit_whose_client_left_before_it_was_durable_still_applies() {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (m, _routing) = manager(store.clone(), clock);
    commit(&m, "g", 1).await;
    // Polled once (planned and written, waiting for durability), then
    // dropped, as when the connection closes.
    let gate = store.park("g");
    let req = commit_request("g", 5);
    let answered = m
        .call("g", |core, token, now| core.offset_commit(token, req, now))
        .now_or_never();
    assert!(answered.is_none(), "answered before the write was durable");
    let applied = || m.read(|c| c.committed_offset("g", "t", 0).map(|o| o.offset));
    assert_eq!(applied(), Some(1), "applied before the write was durable");
    gate.open();
    tokio::time::timeout(Duration::from_secs(10), async {
        while applied() != Some(5) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the commit applies once durable, though its client left");
}

#[tokio::test]
async fn a_consumer_group_with_members_is_not_unloaded_as_idle() {
    use crate::group::consumer::heartbeat::HeartbeatRequest;
    use crate::group::consumer::records::TopicMetadata;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (m, _routing) = manager(store.clone(), clock.clone());
    let topics: std::collections::BTreeMap<String, TopicMetadata> = [(
        "t".to_string(),
        TopicMetadata {
            id: uuid::Uuid::from_u128(1),
            name: "t".into(),
            num_partitions: 2,
        },
    )]
    .into();
    let joined = m
        .request(ConsumerHeartbeat {
            request: HeartbeatRequest {
                group_id: "kip".into(),
                member_id: "m".into(),
                rebalance_timeout_ms: 30_000,
                subscribed_topic_names: Some(vec!["t".into()]),
                owned: Some(Default::default()),
                ..Default::default()
            },
            topics: Box::new(topics),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(joined.member_epoch, 1);
    // Idle past the limit (no timer loop runs here, so no session
    // expiry either): a group with a member stays.
    clock.advance(61_000);
    m.unload_idle_groups();
    assert!(m.read(|c| c.is_resident("kip")), "a member: kept");
    assert!(store.stored("kip").unwrap().consumer.is_some());
}

#[tokio::test]
async fn idle_empty_groups_unload_and_reload_from_their_log() {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (m, _routing) = manager(store.clone(), clock.clone());
    commit(&m, "idle", 42).await;
    commit(&m, "busy", 7).await;
    clock.advance(59_000);
    commit(&m, "busy", 8).await;
    clock.advance(2_000);
    m.unload_idle_groups();
    assert!(
        !m.read(|c| c.is_resident("idle")),
        "idle past the limit: unloaded"
    );
    assert!(m.read(|c| c.is_resident("busy")), "touched recently: kept");
    assert_eq!(
        store.stored("idle").map(|g| g.offsets.committed_len()),
        Some(1),
        "its commit is in the store"
    );
    m.prepare("idle").await.unwrap();
    let offset = m.read(|c| c.committed_offset("idle", "t", 0).map(|o| o.offset));
    assert_eq!(offset, Some(42), "reloaded from its log");
}

/// A consumer group that stopped keeps its lag on `/metrics` after it
/// is unloaded: its committed offsets stay known until it loads again
/// or its coordinator moves.
#[tokio::test]
async fn the_offsets_of_groups_unloaded_for_idleness_stay_known_for_lag() {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (m, routing) = manager(store.clone(), clock.clone());
    // Under a second broker, `stopped` moves to it and `running` stays.
    let two = two_brokers();
    let (stopped, running) = (owned_by(&two, 1, 0), owned_by(&two, 0, 0));
    commit(&m, &stopped, 42).await;
    commit(&m, &running, 7).await;
    clock.advance(61_000);
    commit(&m, &running, 8).await;
    m.unload_idle_groups();
    assert!(!m.read(|c| c.is_resident(&stopped)));
    let known = || {
        let mut k = m.committed_offsets();
        k.sort();
        k
    };
    let row = |g: &str, o| (g.to_string(), "t".to_string(), 0, o);
    let rows = |mut r: Vec<(String, String, i32, i64)>| {
        r.sort();
        r
    };
    assert_eq!(known(), rows(vec![row(&running, 8), row(&stopped, 42)]));

    // Loaded again: its offsets come from the group, once.
    commit(&m, &stopped, 43).await;
    assert_eq!(known(), rows(vec![row(&running, 8), row(&stopped, 43)]));

    // Both unloaded, then `stopped` coordinated elsewhere: forgotten.
    clock.advance(61_000);
    m.unload_idle_groups();
    assert!(!m.read(|c| c.is_resident(&running)));
    assert_eq!(known(), rows(vec![row(&running, 8), row(&stopped, 43)]));
    routing.send_replace(Some(Arc::new(two.clone())));
    m.sweep(&two);
    assert_eq!(known(), vec![row(&running, 8)]);

    // Past its retention, as Apache's sweep would have removed it.
    clock.advance(m.config.core.offsets_retention_ms);
    assert_eq!(known(), vec![]);
}

/// After a restart (or a move here) nothing is in memory: the groups this
/// coordinator owns are read from their logs, without loading them, so a
/// stopped consumer group's lag is exported before anyone uses it again.
#[tokio::test]
async fn a_restarted_coordinator_learns_the_offsets_of_groups_it_has_not_loaded() {
    const DAY: u64 = 24 * 60 * 60 * 1000;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let two = two_brokers();
    let (stopped, expired, elsewhere) = (
        owned_by(&two, 0, 0),
        owned_by(&two, 0, 1),
        owned_by(&two, 1, 0),
    );
    {
        let (before, _routing) = manager(store.clone(), clock.clone());
        commit(&before, &expired, 5).await;
        clock.advance(7 * DAY - 60_000);
        commit(&before, &stopped, 42).await;
        commit(&before, &elsewhere, 9).await;
    }
    // Restarted two minutes later, under the two-broker assignment: the
    // retention (7 days) has passed for `expired`'s commit, not the others.
    clock.advance(120_000);
    let (tx, rx) = watch::channel(Some(Arc::new(two)));
    let after = GroupManager::new(
        0,
        GroupManagerConfig::default(),
        store.clone(),
        clock.clone(),
        rx,
    );
    assert!(after.committed_offsets().is_empty());
    after.clone().learn_offsets_on_disk().await;
    assert_eq!(
        after.committed_offsets(),
        vec![(stopped.clone(), "t".to_string(), 0, 42)]
    );
    assert!(
        !after.read(|c| c.is_resident(&stopped)),
        "read, not loaded: the log is not taken"
    );
    assert_eq!(
        store.stored(&expired).map(|g| g.offsets.committed_len()),
        Some(1)
    );
    // Its retention passes too: no longer exported, as Apache's sweep
    // would have removed it.
    clock.advance(7 * DAY);
    assert!(after.committed_offsets().is_empty());
    drop(tx);
}

/// Offsets that expired while their group was out of memory are gone as
/// soon as it loads, as Apache's sweeps (which see every group) would have
/// removed them meanwhile: a consumer then starts from its reset policy.
#[tokio::test]
async fn offsets_that_expired_while_their_group_was_unloaded_are_removed_at_its_load() {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (m, _routing) = manager(store.clone(), clock.clone());
    commit(&m, "kept", 1).await;
    commit(&m, "gone", 2).await;
    clock.advance(61_000);
    m.unload_idle_groups();
    assert!(!m.read(|c| c.is_resident("gone")));
    let retention = m.config.core.offsets_retention_ms;
    clock.advance(retention - 61_000);
    m.prepare("gone").await.unwrap();
    assert_eq!(
        m.read(|c| c.committed_offset("gone", "t", 0).cloned()),
        None
    );
    assert!(
        store.stored("gone").is_none(),
        "the empty group and its offsets are deleted from its log"
    );
    // One just inside the retention stays.
    commit(&m, "kept", 3).await;
    assert_eq!(
        m.read(|c| c.committed_offset("kept", "t", 0).map(|o| o.offset)),
        Some(3)
    );
}

/// Apache's retention sweep sees every group; kaas unloads idle ones, so a
/// periodic pass sweeps those on disk: a group whose offsets all expired
/// is removed with its log (as `kafka-consumer-groups --list` then shows
/// on Apache), one with an offset in force stays on disk, not loaded.
#[tokio::test]
async fn the_retention_sweep_reaches_groups_out_of_memory() {
    const DAY: u64 = 24 * 60 * 60 * 1000;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (m, _routing) = manager(store.clone(), clock.clone());
    commit(&m, "stale", 1).await;
    clock.advance(DAY);
    commit(&m, "fresh", 2).await;
    clock.advance(61_000);
    m.unload_idle_groups();
    clock.advance(6 * DAY);
    assert_eq!(m.owned_groups_on_disk().await, vec!["fresh", "stale"]);
    m.expire_groups_on_disk().await;
    assert_eq!(
        store.peeks(),
        1,
        "only the group known to be past its retention is read"
    );
    assert!(store.stored("stale").is_none(), "removed with its offsets");
    assert_eq!(m.owned_groups_on_disk().await, vec!["fresh"]);
    assert!(!m.read(|c| c.is_resident("fresh")), "read, not loaded");
    assert_eq!(
        store.stored("fresh").map(|g| g.offsets.committed_len()),
        Some(1),
        "in force: kept"
    );
}
