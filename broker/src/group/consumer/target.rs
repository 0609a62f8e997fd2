//! Apache's `TargetAssignmentBuilder`: the group's next target assignment
//! from its members (with this heartbeat's changes applied), the
//! subscribed topics and the current target, through the group's assignor;
//! out come the new target and the records that make it durable (one per
//! member whose target changed, then the target epoch).

use std::collections::BTreeMap;

use super::member::ConsumerGroupMember;
use super::records::{ConsumerGroupRecord, ResolvedRegex, TopicMetadata};
use crate::group::assignor::{
    AssignorError, GroupAssignment, GroupSpec, MemberAssignment, MemberSubscription,
    PartitionAssignor,
};

/// The new target assignment and the records to write for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetAssignmentResult {
    pub records: Vec<ConsumerGroupRecord>,
    pub target: GroupAssignment,
}

pub struct TargetAssignmentBuilder<'a> {
    group_epoch: i32,
    assignor: &'a dyn PartitionAssignor,
    members: Option<&'a BTreeMap<String, ConsumerGroupMember>>,
    static_members: Option<&'a BTreeMap<String, String>>,
    subscription_metadata: Option<&'a BTreeMap<String, TopicMetadata>>,
    target_assignment: Option<&'a BTreeMap<String, MemberAssignment>>,
    resolved_regexes: Option<&'a BTreeMap<String, ResolvedRegex>>,
    /// Members added or changed (`Some`) or removed (`None`) by this change.
    updated: BTreeMap<String, Option<ConsumerGroupMember>>,
}

impl<'a> TargetAssignmentBuilder<'a> {
    /// A target at `group_epoch`, computed by `assignor`.
    pub fn new(group_epoch: i32, assignor: &'a dyn PartitionAssignor) -> Self {
        TargetAssignmentBuilder {
            group_epoch,
            assignor,
            members: None,
            static_members: None,
            subscription_metadata: None,
            target_assignment: None,
            resolved_regexes: None,
            updated: BTreeMap::new(),
        }
    }

    pub fn with_members(mut self, members: &'a BTreeMap<String, ConsumerGroupMember>) -> Self {
        self.members = Some(members);
        self
    }

    /// Instance id → member id of the static members.
    pub fn with_static_members(mut self, static_members: &'a BTreeMap<String, String>) -> Self {
        self.static_members = Some(static_members);
        self
    }

    /// The subscribed topics by name: a subscribed name not in it (a topic
    /// that does not exist) is left out of the member's subscription.
    pub fn with_subscription_metadata(
        mut self,
        subscription_metadata: &'a BTreeMap<String, TopicMetadata>,
    ) -> Self {
        self.subscription_metadata = Some(subscription_metadata);
        self
    }

    /// The current target assignment, by member id.
    pub fn with_target_assignment(
        mut self,
        target_assignment: &'a BTreeMap<String, MemberAssignment>,
    ) -> Self {
        self.target_assignment = Some(target_assignment);
        self
    }

    /// What each subscribed regex resolved to: a member subscribes to
    /// its names and its regex's topics.
    pub fn with_resolved_regexes(
        mut self,
        resolved_regexes: &'a BTreeMap<String, ResolvedRegex>,
    ) -> Self {
        self.resolved_regexes = Some(resolved_regexes);
        self
    }

    pub fn add_or_update_member(mut self, member: ConsumerGroupMember) -> Self {
        self.updated.insert(member.member_id.clone(), Some(member));
        self
    }

    pub fn remove_member(mut self, member_id: &str) -> Self {
        self.updated.insert(member_id.to_string(), None);
        self
    }

    pub fn build(self) -> Result<TargetAssignmentResult, AssignorError> {
        let empty_members = BTreeMap::new();
        let empty_statics = BTreeMap::new();
        let empty_topics = BTreeMap::new();
        let empty_target = BTreeMap::new();
        let empty_regexes = BTreeMap::new();
        let regexes = self.resolved_regexes.unwrap_or(&empty_regexes);
        let subscription = |m: &ConsumerGroupMember, assignment, topics| {
            subscription(m, assignment, topics, regexes)
        };
        let members = self.members.unwrap_or(&empty_members);
        let static_members = self.static_members.unwrap_or(&empty_statics);
        let topics = self.subscription_metadata.unwrap_or(&empty_topics);
        let target = self.target_assignment.unwrap_or(&empty_target);
        let current_target = |member_id: &str| target.get(member_id).cloned().unwrap_or_default();

        let mut specs: BTreeMap<String, MemberSubscription> = members
            .iter()
            .map(|(id, m)| (id.clone(), subscription(m, current_target(id), topics)))
            .collect();
        for (member_id, update) in &self.updated {
            let Some(member) = update else {
                specs.remove(member_id);
                continue;
            };
            // A static member that replaces a departed one takes over its
            // target.
            let replaced = member
                .instance_id()
                .and_then(|instance| static_members.get(instance))
                .filter(|previous| *previous != member_id);
            let assignment = current_target(replaced.unwrap_or(member_id));
            specs.insert(member_id.clone(), subscription(member, assignment, topics));
        }
        let partitions: BTreeMap<uuid::Uuid, i32> =
            topics.values().map(|t| (t.id, t.num_partitions)).collect();
        let member_ids: Vec<String> = specs.keys().cloned().collect();
        let new_target = self.assignor.assign(&GroupSpec::new(specs), &partitions)?;

        let mut records = Vec::new();
        for member_id in member_ids {
            let new = new_target.get(&member_id).cloned().unwrap_or_default();
            if target.get(&member_id) != Some(&new) {
                records.push(ConsumerGroupRecord::TargetMember {
                    member_id,
                    partitions: new,
                });
            }
        }
        records.push(ConsumerGroupRecord::TargetEpoch {
            assignment_epoch: self.group_epoch,
        });
        Ok(TargetAssignmentResult {
            records,
            target: new_target,
        })
    }
}

/// Apache's `createMemberSubscriptionAndAssignment`: the member as the
/// assignor sees it, its subscribed names and its regex's topics (an
/// unresolved regex matches nothing) resolved to the ids of topics that
/// exist.
fn subscription(
    member: &ConsumerGroupMember,
    assignment: MemberAssignment,
    topics: &BTreeMap<String, TopicMetadata>,
    regexes: &BTreeMap<String, ResolvedRegex>,
) -> MemberSubscription {
    let regex_topics = member
        .metadata
        .subscribed_topic_regex
        .as_ref()
        .and_then(|r| regexes.get(r))
        .into_iter()
        .flat_map(|r| &r.topics);
    MemberSubscription {
        instance_id: member.metadata.instance_id.clone(),
        rack_id: member.metadata.rack_id.clone(),
        subscribed_topic_ids: member
            .metadata
            .subscribed_topic_names
            .iter()
            .chain(regex_topics)
            .filter_map(|name| topics.get(name).map(|t| t.id))
            .collect(),
        assignment,
    }
}

/// Ported from Apache's `TargetAssignmentBuilderTest`, by name. Apache's
/// tests mock the assignor to return a prepared assignment and verify the
/// spec it was called with; `MockAssignor` does both.
#[cfg(test)]
mod tests;
