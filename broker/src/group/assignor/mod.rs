//! The server-side partition assignors of the KIP-848 consumer protocol,
//! as Apache's `group-coordinator` `assignor` package: `uniform` (the
//! default) and `range`, chosen by a member's `server_assignor`. Pure: a
//! group's members, their subscriptions and current target assignment in,
//! the new target assignment out.
//!
//! Iteration is over sorted maps, so an assignment is a function of its
//! input alone (Apache's follows Java's hash order where the algorithm
//! leaves a choice).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

pub mod range;
pub mod uniform;

pub use crate::records::consumer::MemberAssignment;

/// The new target assignment, by member id.
pub type GroupAssignment = BTreeMap<String, MemberAssignment>;

/// What the assignor knows of one member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSubscription {
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub subscribed_topic_ids: BTreeSet<Uuid>,
    /// Its partitions in the current target assignment.
    pub assignment: MemberAssignment,
}

/// Whether every member subscribes to the same topics (Apache's
/// `SubscriptionType`): the assignors have a faster path for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionType {
    Homogeneous,
    Heterogeneous,
}

/// The group as an assignor sees it (Apache's `GroupSpec`).
#[derive(Debug, Clone)]
pub struct GroupSpec {
    pub members: BTreeMap<String, MemberSubscription>,
    pub subscription_type: SubscriptionType,
}

impl GroupSpec {
    /// The spec of `members`; the subscription type is computed.
    pub fn new(members: BTreeMap<String, MemberSubscription>) -> GroupSpec {
        let mut subscriptions = members.values().map(|m| &m.subscribed_topic_ids);
        let first = subscriptions.next();
        let subscription_type = match subscriptions.all(|s| Some(s) == first) {
            true => SubscriptionType::Homogeneous,
            false => SubscriptionType::Heterogeneous,
        };
        GroupSpec {
            members,
            subscription_type,
        }
    }
}

/// The partition counts of the subscribed topics (Apache's
/// `SubscribedTopicDescriber`).
pub trait SubscribedTopicDescriber {
    /// `None` for a topic that does not exist.
    fn num_partitions(&self, topic: Uuid) -> Option<i32>;
}

impl SubscribedTopicDescriber for BTreeMap<Uuid, i32> {
    fn num_partitions(&self, topic: Uuid) -> Option<i32> {
        self.get(&topic).copied()
    }
}

impl SubscribedTopicDescriber for HashMap<Uuid, i32> {
    fn num_partitions(&self, topic: Uuid) -> Option<i32> {
        self.get(&topic).copied()
    }
}

/// Apache's `PartitionAssignorException`: the group keeps its current
/// target assignment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AssignorError(pub String);

/// A server-side assignor (Apache's `ConsumerGroupPartitionAssignor`).
pub trait PartitionAssignor: Send + Sync {
    /// The name a client asks for in `server_assignor`.
    fn name(&self) -> &'static str;

    fn assign(
        &self,
        group: &GroupSpec,
        topics: &dyn SubscribedTopicDescriber,
    ) -> Result<GroupAssignment, AssignorError>;
}

/// A built-in assignor, as `group.consumer.assignors` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinAssignor {
    Uniform,
    Range,
}

impl BuiltinAssignor {
    /// Apache's default list: uniform first (the default), then range.
    pub const DEFAULTS: [BuiltinAssignor; 2] = [BuiltinAssignor::Uniform, BuiltinAssignor::Range];

    pub fn name(self) -> &'static str {
        match self {
            BuiltinAssignor::Uniform => "uniform",
            BuiltinAssignor::Range => "range",
        }
    }

    pub fn build(self) -> Box<dyn PartitionAssignor> {
        match self {
            BuiltinAssignor::Uniform => Box::new(uniform::UniformAssignor),
            BuiltinAssignor::Range => Box::new(range::RangeAssignor),
        }
    }

    /// `group.consumer.assignors` as written: a comma-separated list
    /// (whether it is empty or repeats one is checked with the other
    /// settings, [`ConsumerGroupConfig::validate`]).
    ///
    /// [`ConsumerGroupConfig::validate`]: crate::group::consumer::heartbeat::ConsumerGroupConfig::validate
    pub fn parse_list(list: &str) -> Result<Vec<BuiltinAssignor>, String> {
        list.split(',').map(|item| item.trim().parse()).collect()
    }
}

impl std::str::FromStr for BuiltinAssignor {
    type Err = String;

    /// A built-in name, or the class name Apache lists it under.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "uniform" | "org.apache.kafka.coordinator.group.assignor.UniformAssignor" => {
                Ok(BuiltinAssignor::Uniform)
            }
            "range" | "org.apache.kafka.coordinator.group.assignor.RangeAssignor" => {
                Ok(BuiltinAssignor::Range)
            }
            "" => Err("an assignor's name is empty".to_string()),
            other => Err(format!(
                "unknown assignor {other:?}: the built-in assignors are uniform and range \
                 (custom assignor classes cannot be loaded by kaas)"
            )),
        }
    }
}

/// Apache's `group.consumer.assignors` default, built.
pub fn defaults() -> Vec<Box<dyn PartitionAssignor>> {
    BuiltinAssignor::DEFAULTS
        .iter()
        .map(|a| a.build())
        .collect()
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    pub const TOPIC1: Uuid = Uuid::from_u128(1);
    pub const TOPIC2: Uuid = Uuid::from_u128(2);
    pub const TOPIC3: Uuid = Uuid::from_u128(3);

    /// `mkAssignment(mkTopicAssignment(...), ...)`.
    pub fn assignment(topics: &[(Uuid, &[i32])]) -> MemberAssignment {
        topics
            .iter()
            .filter(|(_, p)| !p.is_empty())
            .map(|(t, p)| (*t, p.iter().copied().collect()))
            .collect()
    }

    pub fn member(topics: &[Uuid], current: MemberAssignment) -> MemberSubscription {
        MemberSubscription {
            subscribed_topic_ids: topics.iter().copied().collect(),
            assignment: current,
            ..Default::default()
        }
    }

    pub fn static_member(instance: &str, topics: &[Uuid]) -> MemberSubscription {
        MemberSubscription {
            instance_id: Some(instance.into()),
            ..member(topics, MemberAssignment::new())
        }
    }

    pub fn group(members: &[(&str, MemberSubscription)]) -> GroupSpec {
        GroupSpec::new(
            members
                .iter()
                .map(|(id, m)| (id.to_string(), m.clone()))
                .collect(),
        )
    }

    /// Apache's `MockPartitionAssignor`: answers a prepared assignment and
    /// keeps the specs it was called with.
    pub struct MockAssignor {
        pub name: &'static str,
        pub prepared: std::sync::Mutex<GroupAssignment>,
        pub called_with: std::sync::Mutex<Vec<GroupSpec>>,
    }

    impl MockAssignor {
        pub fn new(name: &'static str) -> MockAssignor {
            MockAssignor {
                name,
                prepared: Default::default(),
                called_with: Default::default(),
            }
        }

        pub fn prepare(&self, assignment: GroupAssignment) {
            *self.prepared.lock().unwrap() = assignment;
        }
    }

    impl PartitionAssignor for MockAssignor {
        fn name(&self) -> &'static str {
            self.name
        }

        fn assign(
            &self,
            group: &GroupSpec,
            _topics: &dyn SubscribedTopicDescriber,
        ) -> Result<GroupAssignment, AssignorError> {
            self.called_with.lock().unwrap().push(group.clone());
            Ok(self.prepared.lock().unwrap().clone())
        }
    }

    /// Shared, so a test keeps a handle on the mock it gave away.
    impl PartitionAssignor for std::sync::Arc<MockAssignor> {
        fn name(&self) -> &'static str {
            self.as_ref().name()
        }

        fn assign(
            &self,
            group: &GroupSpec,
            topics: &dyn SubscribedTopicDescriber,
        ) -> Result<GroupAssignment, AssignorError> {
            self.as_ref().assign(group, topics)
        }
    }

    pub fn topics(counts: &[(Uuid, i32)]) -> BTreeMap<Uuid, i32> {
        counts.iter().copied().collect()
    }

    /// Every subscribed partition assigned exactly once, only to a
    /// subscriber.
    pub fn assert_valid(group: &GroupSpec, topics: &BTreeMap<Uuid, i32>, out: &GroupAssignment) {
        let mut seen = BTreeSet::new();
        for (member, assignment) in out {
            let subscribed = &group.members[member].subscribed_topic_ids;
            for (topic, partitions) in assignment {
                assert!(
                    subscribed.contains(topic),
                    "{member} got {topic} unsubscribed"
                );
                for p in partitions {
                    assert!(seen.insert((*topic, *p)), "{topic}/{p} assigned twice");
                }
            }
        }
        let subscribed: BTreeSet<Uuid> = group
            .members
            .values()
            .flat_map(|m| m.subscribed_topic_ids.iter().copied())
            .collect();
        let all: usize = subscribed.iter().map(|t| topics[t] as usize).sum();
        assert_eq!(seen.len(), all, "every subscribed partition assigned");
    }
}
