//! The controller's recompute: previous document + what it observes now →
//! next document.
//!
//! The one goal is that no running group moves unless its coordinator stops
//! being alive. The hash tier moves keys whenever the full set changes size
//! (scale 3→4) and moves fallback keys back when their preferred broker
//! returns; explicit entries are how the controller holds active groups in
//! place through those changes. Entries are written only where the hash
//! tier would now answer differently from what clients already see, so the
//! document stays small (a ConfigMap holds at most 1 MiB).

use std::collections::HashSet;

use crate::assignment::{
    Assignment, BrokerInfo, GroupEntry, PartitionEntry, PartitionReplicas, Routing,
};
use crate::fnv::fnv1a32;
use crate::route::RouteTable;

/// Computes the next assignment.
///
/// - `observed` is the full broker set now; the result's `brokers` is it,
///   sorted by id (for a duplicated id the first occurrence wins).
/// - An existing group entry whose broker is still alive is kept, active or
///   not: entries are never retired because a group went quiet.
/// - An existing entry whose broker is draining, dead or gone is rewritten
///   to the hash tier over the new set (dropped if nothing is alive).
/// - An active group without an entry gets one pinning it to its previous
///   owner when that owner is still alive and the new hash tier would send
///   it elsewhere; otherwise it gets none. A written entry therefore always
///   confirms the owner clients already see, and a first recompute (no
///   `previous`) writes no entries.
/// - Partition entries are kept while their broker is alive, else dropped.
/// - `version` is `previous.version + 1` if brokers or entries changed,
///   else unchanged; 1 with no `previous`. `partitions_version` is the
///   new version when brokers or partition entries changed, else kept:
///   group entries change no partition's leader epoch.
///
/// The output is canonical (brokers by id, groups by id, partitions by
/// topic then partition, no duplicates), so serialising it is stable.
#[must_use]
pub fn recompute<I>(
    previous: Option<&Assignment>,
    observed: &[BrokerInfo],
    active_groups: I,
) -> Assignment
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    recompute_with(previous, observed, active_groups, &[])
}

/// [`recompute`], and each partition of `moving` (those whose leader is not
/// where their replicas want it: ListPartitionReassignments) gets an entry
/// naming its first alive replica, replacing the entry it had; one with no
/// replica alive loses its entry and falls to the hash tier. A partition
/// named twice keeps its first.
#[must_use]
pub fn recompute_with<I>(
    previous: Option<&Assignment>,
    observed: &[BrokerInfo],
    active_groups: I,
    moving: &[PartitionReplicas],
) -> Assignment
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let brokers = canonical_brokers(observed);
    let next = RouteTable::new(brokers.iter().map(|b| b.id), |id| {
        brokers
            .binary_search_by_key(&id, |b| b.id)
            .ok()
            .and_then(|i| brokers.get(i))
            .is_some_and(|b| b.state.is_alive())
    });

    let Some(previous) = previous else {
        return Assignment {
            version: 1,
            brokers,
            consumer_groups: Vec::new(),
            partitions: placed(Vec::new(), moving, &next),
            partitions_version: 1,
        };
    };
    let before = Routing::new(previous.clone());

    // Existing entries: keep while alive, else follow the new hash tier.
    let mut groups: Vec<GroupEntry> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for entry in &previous.consumer_groups {
        if !seen.insert(entry.group_id.as_str()) {
            continue; // duplicate: the first occurrence is the one that routed
        }
        if next.is_alive(entry.broker) {
            groups.push(entry.clone());
        } else if let Some(broker) = next.route(entry.group_id.as_bytes()) {
            groups.push(GroupEntry {
                group_id: entry.group_id.clone(),
                broker,
            });
        }
    }

    // Active groups on the hash tier: pin where the hash tier would move them.
    for group in active_groups {
        let group = group.as_ref();
        if before.group_entry(group).is_some() {
            continue;
        }
        let key_hash = fnv1a32(group.as_bytes());
        let Some(owner) = before.table().route_hash(key_hash) else {
            continue;
        };
        if next.is_alive(owner) && next.route_hash(key_hash) != Some(owner) {
            groups.push(GroupEntry {
                group_id: group.to_owned(),
                broker: owner,
            });
        }
    }
    groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    groups.dedup_by(|a, b| a.group_id == b.group_id);

    let mut kept: Vec<PartitionEntry> = Vec::new();
    let mut seen: HashSet<(&str, i32)> = HashSet::new();
    for entry in &previous.partitions {
        if seen.insert((entry.topic.as_str(), entry.partition)) && next.is_alive(entry.broker) {
            kept.push(entry.clone());
        }
    }
    let partitions = placed(kept, moving, &next);

    let partitions_unchanged = brokers == previous.brokers && partitions == previous.partitions;
    let unchanged = partitions_unchanged && groups == previous.consumer_groups;
    let version = if unchanged {
        previous.version
    } else {
        previous.version.saturating_add(1)
    };
    let partitions_version = match previous.partitions_version {
        _ if !partitions_unchanged => version,
        // A document from before the field: its version stood in.
        0 => previous.version,
        kept => kept,
    };
    Assignment {
        version,
        brokers,
        consumer_groups: groups,
        partitions,
        partitions_version,
    }
}

/// `entries` with each partition of `moving` led by its first alive
/// replica over `table` (no entry when none is alive), sorted by topic
/// then partition.
fn placed(
    mut entries: Vec<PartitionEntry>,
    moving: &[PartitionReplicas],
    table: &RouteTable,
) -> Vec<PartitionEntry> {
    let mut seen: HashSet<(&str, i32)> = HashSet::new();
    for m in moving {
        if !seen.insert((m.topic.as_str(), m.partition)) {
            continue;
        }
        entries.retain(|e| (e.topic.as_str(), e.partition) != (m.topic.as_str(), m.partition));
        if let Some(&broker) = m.replicas.iter().find(|&&b| table.is_alive(b)) {
            entries.push(PartitionEntry {
                topic: m.topic.clone(),
                partition: m.partition,
                broker,
            });
        }
    }
    entries.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    entries
}

/// `observed` sorted by id, first occurrence of each id kept.
fn canonical_brokers(observed: &[BrokerInfo]) -> Vec<BrokerInfo> {
    let mut brokers = observed.to_vec();
    brokers.sort_by_key(|b| b.id); // stable: first occurrence stays first
    brokers.dedup_by_key(|b| b.id);
    brokers
}

#[cfg(test)]
mod tests;
