//! A consumer group's state (Apache's `ConsumerGroup`), changed only by
//! replaying its records: [`ConsumerGroup::replay`] is the one path for a
//! group built live and for one loaded from its log.

use std::collections::{BTreeMap, HashMap};

use uuid::Uuid;

use super::member::ConsumerGroupMember;
use super::reconcile::{MemberAssignmentState, MemberState};
use super::records::{ConsumerGroupRecord, ResolvedRegex, TopicMetadata};
use crate::group::assignor::MemberAssignment;

/// The epoch of a member that left (Apache's `LEAVE_GROUP_MEMBER_EPOCH`).
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;

/// Apache's `ConsumerGroupState` (a deleted group is gone, not Dead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    /// The group epoch is ahead of the target assignment's.
    Assigning,
    /// Some member is not yet stable at the target epoch.
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    /// As ListGroups and DescribeGroups name it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// A record that does not fit the group it is replayed on (Apache throws
/// IllegalStateException): the group is left as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("consumer group {group_id}: {reason}")]
pub struct InconsistentRecord {
    pub group_id: String,
    pub reason: String,
}

/// What a replayed record did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replayed {
    Applied,
    /// The group tombstone: the caller forgets the group.
    GroupDeleted,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerGroup {
    group_id: String,
    group_epoch: i32,
    subscription_metadata: BTreeMap<String, TopicMetadata>,
    target_assignment_epoch: i32,
    target_assignment: BTreeMap<String, MemberAssignment>,
    members: BTreeMap<String, ConsumerGroupMember>,
    /// Instance id → member id.
    static_members: BTreeMap<String, String>,
    /// Topic → partition → the epoch of the member holding it (assigned or
    /// pending revocation).
    partition_epochs: HashMap<Uuid, HashMap<i32, i32>>,
    /// `server_assignor` → how many members ask for it.
    server_assignors: BTreeMap<String, usize>,
    /// Subscribed topic name → how many members subscribe to it by name.
    subscribed_topic_names: BTreeMap<String, usize>,
    /// Regular expression → how many members subscribe with it.
    subscribed_regexes: BTreeMap<String, usize>,
    /// Regular expression → what it last resolved to.
    resolved_regexes: BTreeMap<String, ResolvedRegex>,
}

impl ConsumerGroup {
    pub fn new(group_id: impl Into<String>) -> ConsumerGroup {
        ConsumerGroup {
            group_id: group_id.into(),
            ..Default::default()
        }
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    pub fn group_epoch(&self) -> i32 {
        self.group_epoch
    }

    pub fn target_assignment_epoch(&self) -> i32 {
        self.target_assignment_epoch
    }

    pub fn subscription_metadata(&self) -> &BTreeMap<String, TopicMetadata> {
        &self.subscription_metadata
    }

    pub fn target_assignment(&self) -> &BTreeMap<String, MemberAssignment> {
        &self.target_assignment
    }

    pub fn members(&self) -> &BTreeMap<String, ConsumerGroupMember> {
        &self.members
    }

    pub fn member(&self, member_id: &str) -> Option<&ConsumerGroupMember> {
        self.members.get(member_id)
    }

    pub fn static_members(&self) -> &BTreeMap<String, String> {
        &self.static_members
    }

    pub fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        self.static_members.get(instance_id).map(String::as_str)
    }

    pub fn static_member(&self, instance_id: &str) -> Option<&ConsumerGroupMember> {
        self.static_member_id(instance_id)
            .and_then(|id| self.members.get(id))
    }

    /// Subscribed topic names, each with how many members subscribe to it.
    pub fn subscribed_topic_names(&self) -> &BTreeMap<String, usize> {
        &self.subscribed_topic_names
    }

    /// Apache `ModernGroup.isSubscribedToTopic`: by name or through a
    /// resolved regex.
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        self.subscribed_topic_names.contains_key(topic)
            || self
                .resolved_regexes
                .values()
                .any(|r| r.topics.contains(topic))
    }

    /// Regular expression → how many members subscribe with it.
    pub fn subscribed_regexes(&self) -> &BTreeMap<String, usize> {
        &self.subscribed_regexes
    }

    /// Apache `numSubscribedMembers(regex)`.
    pub fn num_regex_subscribers(&self, regex: &str) -> usize {
        self.subscribed_regexes.get(regex).copied().unwrap_or(0)
    }

    /// Regular expression → what it last resolved to.
    pub fn resolved_regexes(&self) -> &BTreeMap<String, ResolvedRegex> {
        &self.resolved_regexes
    }

    /// The epoch of the member holding the partition, -1 if none does.
    pub fn current_partition_epoch(&self, topic: Uuid, partition: i32) -> i32 {
        self.partition_epochs
            .get(&topic)
            .and_then(|ps| ps.get(&partition))
            .copied()
            .unwrap_or(-1)
    }

    /// The assignor most members ask for (ties: the first name).
    pub fn preferred_server_assignor(&self) -> Option<&str> {
        let mut best: Option<(&String, usize)> = None;
        for (name, &count) in &self.server_assignors {
            if best.is_none_or(|(_, c)| count > c) {
                best = Some((name, count));
            }
        }
        best.map(|(name, _)| name.as_str())
    }

    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.target_assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.target_assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// Whether `member` waits for a partition of its target that another
    /// member still holds.
    pub fn waiting_on_unreleased_partition(&self, member: &ConsumerGroupMember) -> bool {
        if member.assignment.state != MemberState::UnreleasedPartitions {
            return false;
        }
        let Some(target) = self.target_assignment.get(&member.member_id) else {
            return false;
        };
        target.iter().any(|(topic, partitions)| {
            let assigned = member.assignment.assigned.get(topic);
            partitions.iter().any(|p| {
                !assigned.is_some_and(|a| a.contains(p))
                    && self.current_partition_epoch(*topic, *p) != -1
            })
        })
    }

    /// Records that rebuild the group as it is (a snapshot of it): replayed
    /// on an empty group they give this one.
    pub fn to_records(&self) -> Vec<ConsumerGroupRecord> {
        let mut records: Vec<ConsumerGroupRecord> = self
            .members
            .values()
            .map(|m| ConsumerGroupRecord::Member {
                member_id: m.member_id.clone(),
                metadata: m.metadata.clone(),
            })
            .collect();
        records.push(ConsumerGroupRecord::GroupEpoch {
            epoch: self.group_epoch,
        });
        records.push(ConsumerGroupRecord::SubscriptionMetadata {
            topics: self.subscription_metadata.clone(),
        });
        records.extend(self.resolved_regexes.iter().map(|(regex, resolved)| {
            ConsumerGroupRecord::RegularExpression {
                regex: regex.clone(),
                resolved: resolved.clone(),
            }
        }));
        records.extend(
            self.target_assignment
                .iter()
                .map(
                    |(member_id, partitions)| ConsumerGroupRecord::TargetMember {
                        member_id: member_id.clone(),
                        partitions: partitions.clone(),
                    },
                ),
        );
        records.push(ConsumerGroupRecord::TargetEpoch {
            assignment_epoch: self.target_assignment_epoch,
        });
        records.extend(
            self.members
                .values()
                .map(|m| ConsumerGroupRecord::current_assignment(&m.member_id, &m.assignment)),
        );
        records
    }

    /// Applies one record (Apache's `GroupMetadataManager.replay` for the
    /// consumer group records).
    pub fn replay(&mut self, record: &ConsumerGroupRecord) -> Result<Replayed, InconsistentRecord> {
        use ConsumerGroupRecord as R;
        match record {
            R::GroupEpoch { epoch } => self.group_epoch = *epoch,
            R::GroupTombstone => {
                if !self.members.is_empty() {
                    return Err(self.inconsistent(format!(
                        "a group tombstone while the group still has {} members",
                        self.members.len()
                    )));
                }
                if !self.target_assignment.is_empty() {
                    return Err(self.inconsistent(format!(
                        "a group tombstone while the target assignment still has {} members",
                        self.target_assignment.len()
                    )));
                }
                if self.target_assignment_epoch != -1 {
                    return Err(self.inconsistent(
                        "a group tombstone before the target assignment epoch's tombstone".into(),
                    ));
                }
                return Ok(Replayed::GroupDeleted);
            }
            R::SubscriptionMetadata { topics } => self.subscription_metadata = topics.clone(),
            R::SubscriptionMetadataTombstone => self.subscription_metadata.clear(),
            R::Member {
                member_id,
                metadata,
            } => {
                let mut member = self
                    .members
                    .get(member_id)
                    .cloned()
                    .unwrap_or_else(|| ConsumerGroupMember::new(member_id.clone()));
                member.metadata = metadata.clone();
                self.update_member(member)?;
            }
            R::MemberTombstone { member_id } => {
                let Some(member) = self.members.get(member_id) else {
                    return Ok(Replayed::Applied);
                };
                if member.member_epoch() != LEAVE_GROUP_MEMBER_EPOCH {
                    return Err(self.inconsistent(format!(
                        "a tombstone of member {member_id} before its current assignment's tombstone"
                    )));
                }
                if self.target_assignment.contains_key(member_id) {
                    return Err(self.inconsistent(format!(
                        "a tombstone of member {member_id} before its target assignment's tombstone"
                    )));
                }
                self.remove_member(member_id)?;
            }
            R::TargetMember {
                member_id,
                partitions,
            } => {
                self.target_assignment
                    .insert(member_id.clone(), partitions.clone());
            }
            R::TargetMemberTombstone { member_id } => {
                self.target_assignment.remove(member_id);
            }
            R::TargetEpoch { assignment_epoch } => self.target_assignment_epoch = *assignment_epoch,
            R::RegularExpression { regex, resolved } => {
                self.resolved_regexes
                    .insert(regex.clone(), resolved.clone());
            }
            R::RegularExpressionTombstone { regex } => {
                self.resolved_regexes.remove(regex);
            }
            R::TargetEpochTombstone => {
                if !self.target_assignment.is_empty() {
                    return Err(self.inconsistent(format!(
                        "a target assignment epoch tombstone while the assignment still has {} members",
                        self.target_assignment.len()
                    )));
                }
                self.target_assignment_epoch = -1;
            }
            R::CurrentAssignment {
                member_id,
                state,
                member_epoch,
                previous_member_epoch,
                assigned,
                pending_revocation,
            } => {
                let mut member = self
                    .members
                    .get(member_id)
                    .cloned()
                    .unwrap_or_else(|| ConsumerGroupMember::new(member_id.clone()));
                member.assignment = MemberAssignmentState {
                    state: MemberState::from_value(*state),
                    member_epoch: *member_epoch,
                    previous_member_epoch: *previous_member_epoch,
                    assigned: assigned.clone(),
                    pending_revocation: pending_revocation.clone(),
                };
                self.update_member(member)?;
            }
            R::CurrentAssignmentTombstone { member_id } => {
                let Some(member) = self.members.get(member_id) else {
                    return Ok(Replayed::Applied);
                };
                let mut member = member.clone();
                member.assignment = MemberAssignmentState {
                    state: member.assignment.state,
                    member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
                    previous_member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
                    assigned: MemberAssignment::new(),
                    pending_revocation: MemberAssignment::new(),
                };
                self.update_member(member)?;
            }
        }
        Ok(Replayed::Applied)
    }

    fn inconsistent(&self, reason: String) -> InconsistentRecord {
        InconsistentRecord {
            group_id: self.group_id.clone(),
            reason,
        }
    }

    /// Adds or replaces a member, moving its partitions' epochs; refused,
    /// with nothing changed, if it would take a partition another member
    /// holds.
    pub(crate) fn update_member(
        &mut self,
        member: ConsumerGroupMember,
    ) -> Result<(), InconsistentRecord> {
        let old = self.members.get(&member.member_id);
        let mut released = Vec::new();
        if let Some(old) = old {
            self.check_removable(&old.assignment)?;
            released = held_partitions(&old.assignment).collect();
        }
        for (topic, partition) in held_partitions(&member.assignment) {
            let epoch = self.current_partition_epoch(topic, partition);
            if epoch != -1 && !released.contains(&(topic, partition)) {
                return Err(self.inconsistent(format!(
                    "cannot give {topic}-{partition} to member {} at epoch {}: it is still held at epoch {epoch}",
                    member.member_id,
                    member.member_epoch()
                )));
            }
        }
        let old = self.members.remove(&member.member_id);
        if let Some(old) = &old {
            self.forget(old);
        }
        self.remember(&member);
        self.members.insert(member.member_id.clone(), member);
        Ok(())
    }

    /// Removes a member and releases its partitions.
    pub(crate) fn remove_member(&mut self, member_id: &str) -> Result<(), InconsistentRecord> {
        if let Some(old) = self.members.get(member_id) {
            self.check_removable(&old.assignment)?;
        }
        if let Some(old) = self.members.remove(member_id) {
            self.forget(&old);
        }
        Ok(())
    }

    /// Whether the partitions of `assignment` are held at its epoch.
    fn check_removable(
        &self,
        assignment: &MemberAssignmentState,
    ) -> Result<(), InconsistentRecord> {
        for (topic, partition) in held_partitions(assignment) {
            let epoch = self.current_partition_epoch(topic, partition);
            if epoch != assignment.member_epoch {
                return Err(self.inconsistent(format!(
                    "cannot release {topic}-{partition} at epoch {}: it is held at epoch {epoch}",
                    assignment.member_epoch
                )));
            }
        }
        Ok(())
    }

    /// Drops what `old` contributed to the indexes.
    fn forget(&mut self, old: &ConsumerGroupMember) {
        for (topic, partition) in held_partitions(&old.assignment) {
            if let Some(ps) = self.partition_epochs.get_mut(&topic) {
                ps.remove(&partition);
                if ps.is_empty() {
                    self.partition_epochs.remove(&topic);
                }
            }
        }
        if let Some(instance) = old.instance_id() {
            if self.static_members.get(instance) == Some(&old.member_id) {
                self.static_members.remove(instance);
            }
        }
        if let Some(name) = &old.metadata.server_assignor {
            decrement(&mut self.server_assignors, name);
        }
        for name in &old.metadata.subscribed_topic_names {
            decrement(&mut self.subscribed_topic_names, name);
        }
        if let Some(regex) = &old.metadata.subscribed_topic_regex {
            decrement(&mut self.subscribed_regexes, regex);
        }
    }

    /// Adds what `new` contributes to the indexes.
    fn remember(&mut self, new: &ConsumerGroupMember) {
        for (topic, partition) in held_partitions(&new.assignment) {
            self.partition_epochs
                .entry(topic)
                .or_default()
                .insert(partition, new.member_epoch());
        }
        if let Some(instance) = new.instance_id() {
            self.static_members
                .insert(instance.to_string(), new.member_id.clone());
        }
        if let Some(name) = &new.metadata.server_assignor {
            *self.server_assignors.entry(name.clone()).or_default() += 1;
        }
        for name in &new.metadata.subscribed_topic_names {
            *self.subscribed_topic_names.entry(name.clone()).or_default() += 1;
        }
        if let Some(regex) = &new.metadata.subscribed_topic_regex {
            *self.subscribed_regexes.entry(regex.clone()).or_default() += 1;
        }
    }
}

/// Replays one change (its records in order) on a group that may not exist
/// yet, the way a stored log is read: a record that does not fit (a bug,
/// or a log written under other rules) is skipped with an error log, so
/// the rest still loads.
pub fn replay_change(
    group: &mut Option<ConsumerGroup>,
    group_id: &str,
    records: &[ConsumerGroupRecord],
) {
    for record in records {
        let g = group.get_or_insert_with(|| ConsumerGroup::new(group_id));
        match g.replay(record) {
            Ok(Replayed::Applied) => {}
            Ok(Replayed::GroupDeleted) => *group = None,
            Err(e) => {
                tracing::error!(error = %e, "skipped a consumer group record that does not fit")
            }
        }
    }
}

/// The partitions a member holds: assigned or pending revocation.
fn held_partitions(assignment: &MemberAssignmentState) -> impl Iterator<Item = (Uuid, i32)> + '_ {
    assignment
        .assigned
        .iter()
        .chain(&assignment.pending_revocation)
        .flat_map(|(topic, ps)| ps.iter().map(move |p| (*topic, *p)))
}

fn decrement(counts: &mut BTreeMap<String, usize>, name: &str) {
    if let Some(n) = counts.get_mut(name) {
        *n -= 1;
        if *n == 0 {
            counts.remove(name);
        }
    }
}

/// Ported from Apache's `ConsumerGroupTest`, by name.
#[cfg(test)]
mod tests;
