//! The assignment document and the two-tier ownership lookup over it.
//!
//! The controller publishes one versioned JSON document; every broker holds
//! the latest as an `Arc<Routing>` and asks it, on every request, who owns a
//! group or partition. Ownership is two-tier: an explicit entry naming an
//! alive broker wins, otherwise the hash tier ([`crate::route()`]) over the
//! full broker set answers.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fnv::{fnv1a32, Fnv1a32};
use crate::route::{BrokerId, RouteTable};

/// The controller's assignment document.
///
/// `version` strictly increases with content changes; brokers ignore a
/// document whose version is not higher than the one they hold. Documents
/// produced by [`crate::recompute()`] are canonical: `brokers` sorted by id,
/// entries sorted by key, no duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Assignment {
    /// Monotonic document version.
    pub version: u64,
    /// The full broker set the controller knows, including draining and dead
    /// brokers: it is the hash divisor, so it must not shrink when a broker
    /// is merely down.
    pub brokers: Vec<BrokerInfo>,
    /// Explicit group coordinators; they win over the hash tier.
    #[serde(default)]
    pub consumer_groups: Vec<GroupEntry>,
    /// Explicit partition leaders; they win over the hash tier.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<PartitionEntry>,
    /// The version at which `brokers` or `partitions` last changed: every
    /// partition's leader epoch ([`Routing::leader_epoch`]). Group entries
    /// move no partition, so they leave it alone. 0 in a document written
    /// before it (the version stands in).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partitions_version: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One broker as the controller sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrokerInfo {
    /// Broker id (StatefulSet ordinal).
    pub id: BrokerId,
    /// Host clients connect to.
    pub host: String,
    /// Port clients connect to.
    pub port: u16,
    /// Liveness as the controller observed it.
    pub state: BrokerState,
    /// Every listener of a broker with several (Apache's
    /// `advertised.listeners`), `host:port` among them as the inter-broker
    /// one; empty when the broker has one listener, `host:port`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<Endpoint>,
}

/// One named listener's advertised address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Endpoint {
    /// The listener's name (`CLIENT` of `CLIENT://host:9092`).
    pub name: String,
    pub host: String,
    pub port: u16,
}

impl BrokerInfo {
    /// An alive broker at `host:port`.
    pub fn alive(id: BrokerId, host: impl Into<String>, port: u16) -> BrokerInfo {
        BrokerInfo {
            id,
            host: host.into(),
            port,
            state: BrokerState::Alive,
            listeners: Vec::new(),
        }
    }

    /// Where a client of listener `listener` reaches this broker: that
    /// listener's address, or `None` when the broker has named listeners
    /// and not this one (Apache leaves such a broker out of Metadata); a
    /// broker with a single listener answers every name with it.
    pub fn endpoint(&self, listener: &str) -> Option<(&str, u16)> {
        if self.listeners.is_empty() {
            return Some((&self.host, self.port));
        }
        self.listeners
            .iter()
            .find(|e| e.name == listener)
            .map(|e| (e.host.as_str(), e.port))
    }
}

impl Assignment {
    /// Version `version` of a document naming `brokers` and no explicit entry.
    pub fn of_brokers(version: u64, brokers: impl IntoIterator<Item = BrokerInfo>) -> Assignment {
        Assignment {
            version,
            brokers: brokers.into_iter().collect(),
            ..Assignment::default()
        }
    }
}

/// Broker liveness. Only [`BrokerState::Alive`] brokers are routed to;
/// draining and dead brokers stay in the set only to keep the divisor stable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BrokerState {
    /// Serving; eligible to own groups and partitions.
    Alive,
    /// Shutting down gracefully; its groups move away.
    Draining,
    /// Not reachable.
    Dead,
}

impl BrokerState {
    /// Whether routing may send work to a broker in this state.
    #[must_use]
    pub const fn is_alive(self) -> bool {
        matches!(self, Self::Alive)
    }
}

/// An explicit group coordinator.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupEntry {
    /// Consumer group id.
    pub group_id: String,
    /// Coordinating broker.
    pub broker: BrokerId,
}

/// An explicit partition leader.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartitionEntry {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Leading broker.
    pub broker: BrokerId,
}

/// A partition's replicas as a user assigned them (CreateTopics,
/// CreatePartitions, AlterPartitionReassignments): the brokers that may
/// lead it, preferred first. Every broker reads the same volume, so each is
/// in sync; the first alive one leads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PartitionReplicas {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The replicas, preferred leader first.
    pub replicas: Vec<BrokerId>,
}

/// Hash-tier key of a partition: `"{topic}/{partition}"`.
///
/// [`Routing`] hashes this text without building it; this function is the
/// reference for what gets hashed.
#[must_use]
pub fn partition_key(topic: &str, partition: i32) -> String {
    format!("{topic}/{partition}")
}

/// FNV-1a 32 of [`partition_key`], without allocating.
pub(crate) fn partition_key_hash(topic: &str, partition: i32) -> u32 {
    use core::fmt::Write as _;
    let mut h = Fnv1a32::new();
    // Writing into the hasher cannot fail.
    let _ = write!(h, "{topic}/{partition}");
    h.finish()
}

/// An [`Assignment`] indexed for O(1)-ish ownership queries.
///
/// Built once per published document and shared (`Arc<Routing>`) by every
/// request handler. Tolerates malformed documents without panicking: for a
/// duplicated broker id, group or partition, the first occurrence in the
/// document wins.
#[derive(Clone, Debug)]
pub struct Routing {
    assignment: Arc<Assignment>,
    table: RouteTable,
    /// (id, index into `assignment.brokers`), ascending by id, one per id.
    by_id: Vec<(BrokerId, usize)>,
    groups: HashMap<String, BrokerId>,
    partitions: HashMap<String, HashMap<i32, BrokerId>>,
}

impl Routing {
    /// Indexes `assignment` (an `Assignment` or an `Arc<Assignment>`).
    #[must_use]
    pub fn new(assignment: impl Into<Arc<Assignment>>) -> Self {
        let assignment: Arc<Assignment> = assignment.into();

        let mut by_id: Vec<(BrokerId, usize)> = assignment
            .brokers
            .iter()
            .enumerate()
            .map(|(i, b)| (b.id, i))
            .collect();
        // Stable sort + dedup keeps the first occurrence of each id.
        by_id.sort_by_key(|&(id, _)| id);
        by_id.dedup_by_key(|&mut (id, _)| id);

        let table = {
            let alive: HashSet<BrokerId> = by_id
                .iter()
                .filter(|&&(_, i)| {
                    assignment
                        .brokers
                        .get(i)
                        .is_some_and(|b| b.state.is_alive())
                })
                .map(|&(id, _)| id)
                .collect();
            RouteTable::new(by_id.iter().map(|&(id, _)| id), |id| alive.contains(&id))
        };

        let mut groups = HashMap::with_capacity(assignment.consumer_groups.len());
        for e in &assignment.consumer_groups {
            groups.entry(e.group_id.clone()).or_insert(e.broker);
        }

        let mut partitions: HashMap<String, HashMap<i32, BrokerId>> = HashMap::new();
        for e in &assignment.partitions {
            partitions
                .entry(e.topic.clone())
                .or_default()
                .entry(e.partition)
                .or_insert(e.broker);
        }

        Self {
            assignment,
            table,
            by_id,
            groups,
            partitions,
        }
    }

    /// The document this routing was built from.
    #[must_use]
    pub fn assignment(&self) -> &Arc<Assignment> {
        &self.assignment
    }

    /// The document's version.
    #[must_use]
    pub fn version(&self) -> u64 {
        self.assignment.version
    }

    /// Every partition's leader epoch: the version at which the broker
    /// set or the partition entries last changed
    /// ([`Assignment::partitions_version`], else the version). It rises
    /// with every change of leadership, not with group entries, and every
    /// broker knows it. Kafka's epochs are INT32; beyond, `i32::MAX`.
    #[must_use]
    pub fn leader_epoch(&self) -> i32 {
        let a = &self.assignment;
        let epoch = if a.partitions_version > 0 {
            a.partitions_version
        } else {
            a.version
        };
        i32::try_from(epoch).unwrap_or(i32::MAX)
    }

    /// A transaction coordinator's epoch (the markers'): the document's
    /// version, as INT32.
    #[must_use]
    pub fn coordinator_epoch(&self) -> i32 {
        i32::try_from(self.assignment.version).unwrap_or(i32::MAX)
    }

    /// The prepared hash-tier table (full set and alive set).
    #[must_use]
    pub fn table(&self) -> &RouteTable {
        &self.table
    }

    /// A broker's entry in the document.
    #[must_use]
    pub fn broker(&self, id: BrokerId) -> Option<&BrokerInfo> {
        let pos = self.by_id.binary_search_by_key(&id, |&(b, _)| b).ok()?;
        let &(_, index) = self.by_id.get(pos)?;
        self.assignment.brokers.get(index)
    }

    /// Whether `id` is in the set and alive.
    #[must_use]
    pub fn is_alive(&self, id: BrokerId) -> bool {
        self.table.is_alive(id)
    }

    /// The first of `replicas` that is alive: a partition's preferred
    /// leader now.
    #[must_use]
    pub fn first_alive(&self, replicas: &[BrokerId]) -> Option<BrokerId> {
        replicas.iter().copied().find(|&b| self.is_alive(b))
    }

    /// The alive brokers, ascending by id.
    pub fn alive_brokers(&self) -> impl Iterator<Item = &BrokerInfo> + '_ {
        self.table
            .alive_ids()
            .iter()
            .filter_map(move |&id| self.broker(id))
    }

    /// Coordinator of `group_id`: its explicit entry if that names an alive
    /// broker, else the hash tier. `None` only when no broker is alive.
    ///
    /// An entry naming a broker that is not alive is ignored rather than
    /// obeyed: sending clients to a dead broker helps no one, and the
    /// controller rewrites such entries on its next recompute anyway.
    #[must_use]
    pub fn owner_of_group(&self, group_id: &str) -> Option<BrokerId> {
        match self.groups.get(group_id) {
            Some(&b) if self.table.is_alive(b) => Some(b),
            _ => self.hash_owner_of_group(group_id),
        }
    }

    /// The hash tier's answer for `group_id`, ignoring explicit entries.
    #[must_use]
    pub fn hash_owner_of_group(&self, group_id: &str) -> Option<BrokerId> {
        self.table.route_hash(fnv1a32(group_id.as_bytes()))
    }

    /// Coordinator of the transactional id: the hash tier (transactional ids
    /// have no explicit entries). `None` only when no broker is alive.
    #[must_use]
    pub fn owner_of_transaction(&self, transactional_id: &str) -> Option<BrokerId> {
        self.table.route_hash(fnv1a32(transactional_id.as_bytes()))
    }

    /// The raw explicit entry for `group_id`, alive or not.
    #[must_use]
    pub fn group_entry(&self, group_id: &str) -> Option<BrokerId> {
        self.groups.get(group_id).copied()
    }

    /// Leader of `topic`/`partition`: its explicit entry if that names an
    /// alive broker, else the hash tier over `"{topic}/{partition}"`.
    #[must_use]
    pub fn owner_of_partition(&self, topic: &str, partition: i32) -> Option<BrokerId> {
        match self.partition_entry(topic, partition) {
            Some(b) if self.table.is_alive(b) => Some(b),
            _ => self.hash_owner_of_partition(topic, partition),
        }
    }

    /// The hash tier's answer for a partition, ignoring explicit entries.
    #[must_use]
    pub fn hash_owner_of_partition(&self, topic: &str, partition: i32) -> Option<BrokerId> {
        self.table.route_hash(partition_key_hash(topic, partition))
    }

    /// The raw explicit entry for a partition, alive or not.
    #[must_use]
    pub fn partition_entry(&self, topic: &str, partition: i32) -> Option<BrokerId> {
        self.partitions.get(topic)?.get(&partition).copied()
    }
}

impl From<Assignment> for Routing {
    fn from(assignment: Assignment) -> Self {
        Self::new(assignment)
    }
}

impl From<Arc<Assignment>> for Routing {
    fn from(assignment: Arc<Assignment>) -> Self {
        Self::new(assignment)
    }
}

#[cfg(test)]
mod tests;
