use super::*;
use crate::assignment::BrokerState::{self, Alive, Dead, Draining};
use crate::route::BrokerId;
use proptest::prelude::*;

fn broker(id: BrokerId, state: BrokerState) -> BrokerInfo {
    BrokerInfo {
        id,
        host: format!("demo-{id}.demo-brokers.ns.svc"),
        port: 9092,
        state,
        listeners: Vec::new(),
    }
}

fn cluster(states: &[BrokerState]) -> Vec<BrokerInfo> {
    (0..).zip(states).map(|(i, &s)| broker(i, s)).collect()
}

fn all_alive(n: usize) -> Vec<BrokerInfo> {
    cluster(&vec![Alive; n])
}

fn with_state(mut brokers: Vec<BrokerInfo>, id: BrokerId, state: BrokerState) -> Vec<BrokerInfo> {
    for b in &mut brokers {
        if b.id == id {
            b.state = state;
        }
    }
    brokers
}

fn groups(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("group-{i}")).collect()
}

fn owners(a: &Assignment, groups: &[String]) -> Vec<Option<BrokerId>> {
    let r = Routing::new(a.clone());
    groups.iter().map(|g| r.owner_of_group(g)).collect()
}

const NONE: [&str; 0] = [];

#[test]
fn first_recompute_writes_no_entries() {
    let observed = vec![broker(2, Alive), broker(0, Dead), broker(1, Alive)];
    let a = recompute(None, &observed, groups(1000));
    assert_eq!(a.version, 1);
    assert!(a.consumer_groups.is_empty());
    assert!(a.partitions.is_empty());
    let ids: Vec<BrokerId> = a.brokers.iter().map(|b| b.id).collect();
    assert_eq!(ids, vec![0, 1, 2]);
}

#[test]
fn partitions_version_moves_with_brokers_and_partition_entries_only() {
    let gs = groups(2000);
    let v1 = recompute(None, &all_alive(3), NONE);
    assert_eq!((v1.version, v1.partitions_version), (1, 1));
    // Scale 3 -> 4: the broker set changed, so did partition leaders.
    let v2 = recompute(Some(&v1), &all_alive(4), &gs);
    assert_eq!((v2.version, v2.partitions_version), (2, 2));
    // A broker dies: partitions move, the epoch rises.
    let mut observed = all_alive(4);
    observed[1].state = Dead;
    let v3 = recompute(Some(&v2), &observed, &gs);
    assert_eq!((v3.version, v3.partitions_version), (3, 3));
    // Only a group entry changes (one on the dead broker is rewritten):
    // a new version, the same leader epoch.
    let mut stale = v3.clone();
    stale.consumer_groups.push(GroupEntry {
        group_id: "~stale".into(),
        broker: 1,
    });
    let v4 = recompute(Some(&stale), &observed, &gs);
    assert_eq!((v4.version, v4.partitions_version), (4, 3));
    assert_eq!(Routing::new(v4.clone()).leader_epoch(), 3);
    // A document from before the field: its version stands in.
    let old = Assignment {
        partitions_version: 0,
        ..stale
    };
    assert_eq!(Routing::new(old.clone()).leader_epoch(), 3);
    let v4_from_old = recompute(Some(&old), &observed, &gs);
    assert_eq!(
        (v4_from_old.version, v4_from_old.partitions_version),
        (4, 3)
    );
}

#[test]
fn unchanged_input_keeps_version() {
    let gs = groups(2000);
    let v1 = recompute(None, &all_alive(3), &gs);
    let v2 = recompute(Some(&v1), &all_alive(4), &gs);
    assert_eq!(v2.version, 2);
    assert!(!v2.consumer_groups.is_empty());
    let v2_again = recompute(Some(&v2), &all_alive(4), &gs);
    assert_eq!(v2_again, v2);
    // Observed in another order is the same input.
    let mut shuffled = all_alive(4);
    shuffled.reverse();
    assert_eq!(recompute(Some(&v2), &shuffled, &gs), v2);
    // A group going quiet changes nothing either.
    assert_eq!(recompute(Some(&v2), &all_alive(4), NONE), v2);
}

#[test]
fn a_broker_dying_moves_exactly_its_groups() {
    let gs = groups(10_000);
    let v1 = recompute(None, &all_alive(10), &gs);
    let v2 = recompute(Some(&v1), &with_state(all_alive(10), 3, Dead), &gs);
    assert_eq!(v2.version, v1.version + 1);
    let before = owners(&v1, &gs);
    let after = owners(&v2, &gs);
    let mut moved = 0;
    for (b, a) in before.iter().zip(&after) {
        assert!(a.is_some() && *a != Some(3));
        if *b == Some(3) {
            moved += 1;
        } else {
            assert_eq!(a, b);
        }
    }
    assert!(moved > 500, "broker 3 owned {moved} groups");
    // Nothing to pin: every surviving owner is still the hash answer.
    assert!(v2.consumer_groups.is_empty());
}

#[test]
fn scale_up_keeps_active_groups_and_lets_quiet_ones_move() {
    let gs = groups(3000);
    let (active, quiet) = gs.split_at(2000);
    let v1 = recompute(None, &all_alive(3), &gs);
    let v2 = recompute(Some(&v1), &all_alive(4), active);
    assert_eq!(owners(&v2, active), owners(&v1, active));
    let quiet_moved = owners(&v1, quiet)
        .iter()
        .zip(owners(&v2, quiet))
        .filter(|(a, b)| **a != *b)
        .count();
    assert!(quiet_moved > 0, "quiet groups follow the new hash");
    // Entries exist only where the hash tier would have moved the group.
    let r2 = Routing::new(v2.clone());
    for e in &v2.consumer_groups {
        assert_ne!(r2.hash_owner_of_group(&e.group_id), Some(e.broker));
    }
}

#[test]
fn an_entry_survives_its_group_going_quiet() {
    let gs = groups(500);
    let v1 = recompute(None, &all_alive(3), &gs);
    let v2 = recompute(Some(&v1), &all_alive(4), &gs);
    assert!(!v2.consumer_groups.is_empty());
    let v3 = recompute(Some(&v2), &all_alive(4), NONE);
    assert_eq!(v3.consumer_groups, v2.consumer_groups);
    assert_eq!(v3.version, v2.version);
    assert_eq!(owners(&v3, &gs), owners(&v2, &gs));
}

#[test]
fn entries_on_dead_draining_or_gone_brokers_follow_the_hash() {
    let pinned = |broker: BrokerId| GroupEntry {
        group_id: format!("pinned-to-{broker}"),
        broker,
    };
    let previous = Assignment {
        partitions_version: 0,
        version: 7,
        brokers: all_alive(5),
        consumer_groups: vec![pinned(0), pinned(1), pinned(2), pinned(4)],
        partitions: vec![],
    };
    // 1 dead, 2 draining, 4 gone from the set.
    let observed = cluster(&[Alive, Dead, Draining, Alive]);
    let next = recompute(Some(&previous), &observed, NONE);
    assert_eq!(next.version, 8);
    let r = Routing::new(next.clone());
    let mut expected = vec![pinned(0)];
    for b in [1, 2, 4] {
        let g = format!("pinned-to-{b}");
        let owner = r.hash_owner_of_group(&g).expect("0 and 3 are alive");
        assert!(owner == 0 || owner == 3);
        expected.push(GroupEntry {
            group_id: g,
            broker: owner,
        });
    }
    expected.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    assert_eq!(next.consumer_groups, expected);

    // Nothing alive: entries cannot be rewritten, so they go.
    let dark = recompute(Some(&previous), &cluster(&[Dead; 5]), NONE);
    assert!(dark.consumer_groups.is_empty());
    assert!(Routing::new(dark).owner_of_group("pinned-to-0").is_none());
}

#[test]
fn a_returning_broker_does_not_steal_active_groups() {
    let gs = groups(5000);
    let v1 = recompute(None, &all_alive(4), &gs);
    let v2 = recompute(Some(&v1), &with_state(all_alive(4), 2, Dead), &gs);
    let v3 = recompute(Some(&v2), &all_alive(4), &gs);
    assert_eq!(v3.version, v2.version + 1);
    assert_eq!(owners(&v3, &gs), owners(&v2, &gs));
    assert!(owners(&v3, &gs).iter().all(|o| *o != Some(2)));
    // Had they been quiet, they would have gone home to broker 2.
    let v3_quiet = recompute(Some(&v2), &all_alive(4), NONE);
    assert_eq!(owners(&v3_quiet, &gs), owners(&v1, &gs));
}

#[test]
fn a_first_entry_agrees_with_the_previous_owner() {
    let gs = groups(3000);
    for (before, after) in [
        (all_alive(3), all_alive(4)),
        (with_state(all_alive(5), 1, Dead), all_alive(5)),
        (all_alive(6), all_alive(5)),
    ] {
        let prev = recompute(None, &before, &gs);
        assert!(prev.consumer_groups.is_empty());
        let next = recompute(Some(&prev), &after, &gs);
        assert!(!next.consumer_groups.is_empty());
        let r = Routing::new(prev);
        for e in &next.consumer_groups {
            assert_eq!(r.owner_of_group(&e.group_id), Some(e.broker));
        }
    }
}

#[test]
fn partition_entries_follow_their_broker() {
    let entry = |topic: &str, partition, broker| PartitionEntry {
        topic: topic.into(),
        partition,
        broker,
    };
    let previous = Assignment {
        partitions_version: 0,
        version: 3,
        brokers: all_alive(3),
        consumer_groups: vec![],
        partitions: vec![
            entry("b", 0, 1),
            entry("a", 1, 2),
            entry("a", 0, 0),
            entry("a", 0, 2),
        ],
    };
    let same = recompute(Some(&previous), &all_alive(3), NONE);
    // Canonicalised (sorted, duplicate dropped): a content change.
    assert_eq!(
        same.partitions,
        vec![entry("a", 0, 0), entry("a", 1, 2), entry("b", 0, 1)]
    );
    assert_eq!(same.version, 4);
    let next = recompute(Some(&same), &with_state(all_alive(3), 2, Draining), NONE);
    assert_eq!(next.partitions, vec![entry("a", 0, 0), entry("b", 0, 1)]);
    assert_eq!(next.version, 5);
}

/// A partition whose leader is not where its replicas want it gets an
/// entry naming its first alive replica (replacing the entry it had),
/// bumping the leader epoch; none alive leaves it to the hash tier; a
/// partition named twice keeps its first; a move already in place
/// changes nothing.
#[test]
fn moving_partitions_are_led_by_their_first_alive_replica() {
    let entry = |topic: &str, partition, broker| PartitionEntry {
        topic: topic.into(),
        partition,
        broker,
    };
    let moving = |topic: &str, partition, replicas: &[BrokerId]| PartitionReplicas {
        topic: topic.into(),
        partition,
        replicas: replicas.to_vec(),
    };
    let v1 = recompute(None, &all_alive(3), NONE);
    let v2 = recompute_with(
        Some(&v1),
        &all_alive(3),
        NONE,
        &[
            moving("t", 0, &[2, 1]),
            moving("t", 1, &[0]),
            moving("t", 0, &[1]),
        ],
    );
    assert_eq!(v2.partitions, vec![entry("t", 0, 2), entry("t", 1, 0)]);
    assert_eq!((v2.version, v2.partitions_version), (2, 2));
    // In place: kept without being named again, and naming it again
    // changes nothing.
    assert_eq!(recompute(Some(&v2), &all_alive(3), NONE), v2);
    let again = recompute_with(Some(&v2), &all_alive(3), NONE, &[moving("t", 1, &[0])]);
    assert_eq!(again, v2);
    // Its first replica dead: the next; none alive: the hash tier.
    let two_dead = with_state(with_state(all_alive(3), 2, Dead), 0, Dead);
    let v3 = recompute_with(
        Some(&v2),
        &two_dead,
        NONE,
        &[moving("t", 0, &[2, 1]), moving("t", 1, &[0, 2])],
    );
    assert_eq!(v3.partitions, vec![entry("t", 0, 1)]);
    assert_eq!((v3.version, v3.partitions_version), (3, 3));
    // A first document places them too.
    let first = recompute_with(None, &all_alive(2), NONE, &[moving("u", 3, &[5, 1])]);
    assert_eq!(first.partitions, vec![entry("u", 3, 1)]);
}

#[test]
fn odd_inputs_do_not_panic() {
    let dup = vec![broker(1, Alive), broker(1, Dead), broker(0, Dead)];
    let a = recompute(None, &dup, ["g", "g", ""]);
    assert_eq!(a.brokers, vec![broker(0, Dead), broker(1, Alive)]);
    let b = recompute(Some(&a), &[], ["g"]);
    assert!(b.brokers.is_empty());
    assert_eq!(b.version, 2);
    let c = recompute(Some(&b), &dup, vec![String::from("g"); 3]);
    assert!(c.consumer_groups.is_empty());
    let max = Assignment {
        version: u64::MAX,
        ..Assignment::default()
    };
    assert_eq!(recompute(Some(&max), &all_alive(1), NONE).version, u64::MAX);
}

/// 100,000 active groups over 100 brokers, one dies: the published
/// document must stay far below a ConfigMap's 1 MiB.
#[test]
fn large_cluster_one_dies_stays_small() {
    let gs = groups(100_000);
    let v1 = recompute(None, &all_alive(100), &gs);
    let v2 = recompute(Some(&v1), &with_state(all_alive(100), 42, Dead), &gs);
    assert_eq!(v2.version, 2);
    let size = serde_json::to_vec(&v2).expect("serialises").len();
    assert!(size < 1024 * 1024, "document is {size} bytes");
    // ...and once it comes back, the groups it lost stay where they went.
    let v3 = recompute(Some(&v2), &all_alive(100), &gs);
    let size = serde_json::to_vec(&v3).expect("serialises").len();
    assert!(size < 1024 * 1024, "document is {size} bytes");
}

/// One step of a cluster's life: which of 8 ids are in the set (and in
/// what state), and which of 60 groups are active.
fn step() -> impl Strategy<Value = (Vec<BrokerInfo>, Vec<String>)> {
    (
        proptest::collection::vec(0u8..4, 8),
        proptest::collection::vec(any::<bool>(), 60),
    )
        .prop_map(|(states, active)| {
            let brokers = (0..)
                .zip(states)
                .filter_map(|(id, s)| match s {
                    0 => None,
                    1 => Some(broker(id, Dead)),
                    2 => Some(broker(id, Draining)),
                    _ => Some(broker(id, Alive)),
                })
                .collect();
            let active = active
                .iter()
                .enumerate()
                .filter(|&(_, &a)| a)
                .map(|(i, _)| format!("group-{i}"))
                .collect();
            (brokers, active)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Over any sequence of broker-set changes: an active group keeps
    /// its owner while that owner stays alive, so does any group with an
    /// entry, entries only name alive brokers, versions move exactly
    /// with content, and recompute is idempotent.
    #[test]
    fn owners_only_change_when_they_must(steps in proptest::collection::vec(step(), 1..8)) {
        let all = groups(60);
        let mut prev: Option<Assignment> = None;
        for (observed, active) in steps {
            let next = recompute(prev.as_ref(), &observed, &active);
            let after = Routing::new(next.clone());
            for e in &next.consumer_groups {
                prop_assert!(after.is_alive(e.broker));
            }
            for g in &all {
                let owner = after.owner_of_group(g);
                prop_assert_eq!(owner.is_none(), after.table().alive_ids().is_empty());
            }
            if let Some(p) = &prev {
                let before = Routing::new(p.clone());
                for g in &all {
                    let Some(was) = before.owner_of_group(g) else { continue };
                    let held = active.contains(g) || before.group_entry(g).is_some();
                    if held && after.is_alive(was) {
                        prop_assert_eq!(after.owner_of_group(g), Some(was), "group {}", g);
                    }
                }
                if next.brokers == p.brokers
                    && next.consumer_groups == p.consumer_groups
                    && next.partitions == p.partitions
                {
                    prop_assert_eq!(next.version, p.version);
                } else {
                    prop_assert_eq!(next.version, p.version + 1);
                }
            }
            prop_assert_eq!(&recompute(Some(&next), &observed, &active), &next);
            prev = Some(next);
        }
    }
}
