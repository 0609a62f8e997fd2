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
mod tests;
