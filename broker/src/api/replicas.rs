//! A partition's replicas as users assign them (CreateTopics,
//! CreatePartitions, AlterPartitionReassignments) and as Metadata reports
//! them. Every broker reads the one copy of a partition on the shared
//! volume, so a partition's replicas are the brokers that may lead it,
//! preferred first, and each alive one is in sync: the controller makes the
//! first alive one its leader (Apache moves a leader to its preferred
//! replica with `auto.leader.rebalance.enable`; kaas does at once). A
//! partition no one assigned is led where the controller's hash puts it,
//! and its leader is its one replica.

use std::sync::Arc;

use kaas_shared::Routing;

use crate::broker::Broker;
use crate::storage::TopicMeta;

/// The brokers an assignment may name, as this broker knows them: the
/// controller's full set (alive or not) and those alive; itself alone
/// before the first assignment.
#[derive(Clone)]
pub struct Members {
    routing: Option<Arc<Routing>>,
    own: i32,
}

impl Members {
    pub fn of(broker: &Broker) -> Members {
        Members {
            routing: broker.routing(),
            own: broker.id(),
        }
    }

    pub fn registered(&self, b: i32) -> bool {
        self.routing
            .as_ref()
            .map_or(b == self.own, |r| r.broker(b).is_some())
    }

    fn alive(&self, b: i32) -> bool {
        self.routing
            .as_ref()
            .map_or(b == self.own, |r| r.is_alive(b))
    }

    /// `partition`'s assignment checked as Apache's controller checks one
    /// ([`check_assignment`]), and one of its brokers alive: Apache's
    /// message when not.
    pub fn check(
        &self,
        partition: i32,
        replicas: &[i32],
        replication_factor: Option<usize>,
    ) -> Result<(), String> {
        check_assignment(replicas, |b| self.registered(b), replication_factor)?;
        match replicas.iter().any(|&b| self.alive(b)) {
            true => Ok(()),
            false => Err(format!(
                "All brokers specified in the manual partition assignment for partition {partition} are fenced or in controlled shutdown."
            )),
        }
    }
}

/// Apache's `validateManualPartitionAssignment`: a replica list that is not
/// empty, of brokers the cluster has (`registered`), each once, as long as
/// the partitions before it (`replication_factor`, when they count).
pub fn check_assignment(
    replicas: &[i32],
    registered: impl Fn(i32) -> bool,
    replication_factor: Option<usize>,
) -> Result<(), String> {
    if replicas.is_empty() {
        return Err("The manual partition assignment includes an empty replica list.".into());
    }
    let mut sorted = replicas.to_vec();
    sorted.sort_unstable();
    for (i, &broker) in sorted.iter().enumerate() {
        if !registered(broker) {
            return Err(format!(
                "The manual partition assignment includes broker {broker}, but no such broker is registered."
            ));
        }
        if i > 0 && sorted[i - 1] == broker {
            return Err(format!(
                "The manual partition assignment includes the broker {broker} more than once."
            ));
        }
    }
    match replication_factor {
        Some(n) if n != replicas.len() => Err(format!(
            "The manual partition assignment includes a partition with {} replica(s), but this is not consistent with previous partitions, which have {n} replica(s).",
            replicas.len()
        )),
        _ => Ok(()),
    }
}

/// A topic's replication factor as clients read it: its first partition's
/// assigned replicas, else 1 (the leader).
pub fn replication_factor(meta: &TopicMeta) -> usize {
    meta.replicas.get(&0).map_or(1, Vec::len)
}

/// `partition`'s replicas as Metadata reports them: the assigned ones, else
/// its leader alone (none without a leader).
pub fn reported(meta: &TopicMeta, partition: i32, leader: Option<i32>) -> Vec<i32> {
    match meta.replicas.get(&partition) {
        Some(replicas) => replicas.clone(),
        None => leader.into_iter().collect(),
    }
}

/// The in-sync replicas of `replicas`: those alive.
pub fn in_sync(replicas: &[i32], routing: &Routing) -> Vec<i32> {
    replicas
        .iter()
        .copied()
        .filter(|&b| routing.is_alive(b))
        .collect()
}

/// The partitions of `meta` whose leader is not their first alive replica:
/// reassignments in progress, until the controller moves them.
pub fn moving<'a>(
    meta: &'a TopicMeta,
    routing: &'a Routing,
) -> impl Iterator<Item = (i32, &'a Vec<i32>)> + 'a {
    meta.replicas
        .iter()
        .filter(|&(&p, _)| p < meta.partitions)
        .filter(move |&(&p, replicas)| {
            routing
                .first_alive(replicas)
                .is_some_and(|want| routing.owner_of_partition(&meta.name, p) != Some(want))
        })
        .map(|(&p, replicas)| (p, replicas))
}

#[cfg(test)]
mod tests {
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
            replicas: BTreeMap::from([
                (0, vec![1, 2]),
                (1, vec![2, 0]),
                (2, vec![0]),
                (7, vec![1]),
            ]),
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
}
