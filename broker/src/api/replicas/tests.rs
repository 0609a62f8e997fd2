use std::collections::BTreeMap;

use kaas_shared::{Assignment, BrokerInfo, BrokerState, PartitionEntry};

use super::*;

/// ReplicationControlManagerTest's manual-assignment cases, with
/// Apache's messages.
#[test]
fn manual_assignments_are_checked_as_apache_checks_them() {
    let registered = |b: i32| (0..3).contains(&b);
    assert_eq!(check_assignment(&[2, 0], registered, None), Ok(()));
    assert_eq!(check_assignment(&[2, 0], registered, Some(2)), Ok(()));
    assert_eq!(
        check_assignment(&[], registered, None).unwrap_err(),
        "The manual partition assignment includes an empty replica list."
    );
    assert_eq!(
        check_assignment(&[1, 7, 9], registered, None).unwrap_err(),
        "The manual partition assignment includes broker 7, but no such broker is registered."
    );
    assert_eq!(
        check_assignment(&[1, 2, 1], registered, None).unwrap_err(),
        "The manual partition assignment includes the broker 1 more than once."
    );
    assert_eq!(
            check_assignment(&[1], registered, Some(2)).unwrap_err(),
            "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."
        );
}

fn routing(alive: &[i32], entries: &[(i32, i32)]) -> Routing {
    let state = |id| match alive.contains(&id) {
        true => BrokerState::Alive,
        false => BrokerState::Dead,
    };
    Routing::new(Assignment {
        version: 1,
        brokers: (0..3)
            .map(|id| BrokerInfo {
                state: state(id),
                ..BrokerInfo::alive(id, "h", 9092)
            })
            .collect(),
        partitions: entries
            .iter()
            .map(|&(partition, broker)| PartitionEntry {
                topic: "t".into(),
                partition,
                broker,
            })
            .collect(),
        ..Default::default()
    })
}

/// A partition is moving while its leader is not its first alive
/// replica; one with no replica alive, one the topic no longer has and
/// one nobody assigned are not.
#[test]
fn a_partition_moves_until_its_first_alive_replica_leads() {
    let meta = TopicMeta {
        name: "t".into(),
        id: uuid::Uuid::nil(),
        partitions: 4,
        configs: BTreeMap::new(),
        replicas: BTreeMap::from([(0, vec![1, 2]), (1, vec![2, 0]), (2, vec![0]), (7, vec![1])]),
        replicas_before: BTreeMap::new(),
    };
    let placed = routing(&[0, 1, 2], &[(0, 1), (1, 2), (2, 0)]);
    assert_eq!(moving(&meta, &placed).count(), 0);
    let unplaced = routing(&[0, 1, 2], &[(0, 2), (2, 1)]);
    let wanted: Vec<i32> = moving(&meta, &unplaced).map(|(p, _)| p).collect();
    assert!(wanted.contains(&0) && wanted.contains(&2), "{wanted:?}");
    // Brokers 0 and 1 dead: 2, the one alive, leads every partition;
    // partition 2 has no replica alive.
    let two_dead = routing(&[2], &[(0, 1), (1, 2), (2, 0)]);
    assert_eq!(moving(&meta, &two_dead).count(), 0);
    assert_eq!(in_sync(&[1, 2], &two_dead), vec![2]);
    assert_eq!(reported(&meta, 1, Some(0)), vec![2, 0]);
    assert_eq!(reported(&meta, 3, Some(0)), vec![0]);
    assert_eq!(reported(&meta, 3, None), Vec::<i32>::new());
    assert_eq!(replication_factor(&meta), 2);
}
