//! ConsumerGroupHeartbeat, as Apache's `GroupMetadataManager
//! .consumerGroupHeartbeat`: validate the request, fence stale epochs,
//! update the member, bump the group epoch when a subscription or a
//! subscribed topic changed, recompute the target assignment when the group
//! epoch is ahead of it, reconcile the member one step, answer. Pure: the
//! group as it is in, the records that change it and the answer out (the
//! caller replays the records once they are durable).
//!
//! Over 800 lines: one request's path (validate, fence, update, assign,
//! reconcile, answer) as Apache's `consumerGroupHeartbeat` is one method,
//! with the record builders it shares with the classic bridge; split, the
//! steps would reach into each other's helpers.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::config::ConsumerTiming;
pub use super::config::{ConsumerGroupConfig, MigrationPolicy};
use super::group::{ConsumerGroup, LEAVE_GROUP_MEMBER_EPOCH};
use super::member::ConsumerGroupMember;
use super::reconcile::{reconcile, MemberAssignmentState, MemberState};
use super::records::{ConsumerGroupRecord, ResolvedRegex, TopicMetadata};
use super::regex_subscription;
use super::target::TargetAssignmentBuilder;
use crate::coordinator::errors::code;
use crate::group::assignor::{MemberAssignment, PartitionAssignor};

/// The epoch a static member leaves with, keeping its place for a
/// restart (Apache's `LEAVE_GROUP_STATIC_MEMBER_EPOCH`).
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// The topics that exist, as the heartbeat's member sees them.
pub trait TopicsView {
    fn topic(&self, name: &str) -> Option<TopicMetadata>;

    fn exists(&self, name: &str) -> bool {
        self.topic(name).is_some()
    }

    /// Whether the topic `m` names still exists as `m` describes it.
    fn unchanged(&self, m: &TopicMetadata) -> bool {
        self.topic(&m.name).as_ref() == Some(m)
    }

    /// The topics a regex of the member may match: those it may describe
    /// (Apache's `filterTopicDescribeAuthorizedTopics`).
    fn names_for_regex(&self) -> Vec<String>;

    /// Moves when a topic is created or deleted (Apache's metadata image
    /// version): regexes resolved at an older one are resolved again.
    fn version(&self) -> i64;
}

impl TopicsView for BTreeMap<String, TopicMetadata> {
    fn topic(&self, name: &str) -> Option<TopicMetadata> {
        self.get(name).cloned()
    }

    fn names_for_regex(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }

    fn version(&self) -> i64 {
        0
    }
}

/// The wire request's fields (`None` / -1 where the client left a field
/// out: it is unchanged).
#[derive(Debug, Clone, Default)]
pub struct HeartbeatRequest {
    pub group_id: String,
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// The partitions the member owns (`topic_partitions`).
    pub owned: Option<MemberAssignment>,
    pub client_id: String,
    pub client_host: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatResponse {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// Sent on a full request and when the member's partitions changed.
    pub assignment: Option<MemberAssignment>,
}

/// An error answer: Apache's code and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HeartbeatError {
    pub code: i16,
    pub message: String,
}

pub(in crate::group) fn error(code: i16, message: impl Into<String>) -> HeartbeatError {
    HeartbeatError {
        code,
        message: message.into(),
    }
}

/// A member's timers, keyed by group and member like Apache's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimerOp {
    /// Fence the member if it does not heartbeat again by then.
    ScheduleSession {
        member_id: String,
        deadline_ms: u64,
    },
    /// Fence the member if it is still at `member_epoch` by then (it did
    /// not revoke in time).
    ScheduleRebalance {
        member_id: String,
        member_epoch: i32,
        deadline_ms: u64,
    },
    CancelSession {
        member_id: String,
    },
    CancelRebalance {
        member_id: String,
    },
    /// A classic member told to rejoin: fenced unless its JoinGroup comes
    /// by then (kept if already armed).
    ScheduleJoinIfAbsent {
        member_id: String,
        deadline_ms: u64,
    },
    CancelJoin {
        member_id: String,
    },
    /// A classic member that joined: fenced unless its SyncGroup comes by
    /// then.
    ScheduleSync {
        member_id: String,
        deadline_ms: u64,
    },
    CancelSync {
        member_id: String,
    },
}

impl TimerOp {
    /// Every timer of a member cancelled (it left or was fenced).
    pub fn cancel_all(member_id: &str) -> Vec<TimerOp> {
        let member_id = || member_id.to_string();
        vec![
            TimerOp::CancelSession {
                member_id: member_id(),
            },
            TimerOp::CancelRebalance {
                member_id: member_id(),
            },
            TimerOp::CancelJoin {
                member_id: member_id(),
            },
            TimerOp::CancelSync {
                member_id: member_id(),
            },
        ]
    }
}

/// What a heartbeat leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatResult {
    /// To write, then replay on the group, in order, before answering.
    pub records: Vec<ConsumerGroupRecord>,
    pub response: HeartbeatResponse,
    pub timers: Vec<TimerOp>,
}

/// What the heartbeat needs besides the group.
pub struct Context<'a> {
    pub config: &'a ConsumerGroupConfig,
    /// The group's session timeout and heartbeat interval (its own
    /// configs, else `config`'s).
    pub timing: ConsumerTiming,
    /// `group.consumer.assignors`, the default first.
    pub assignors: &'a [Box<dyn PartitionAssignor>],
    pub topics: &'a dyn TopicsView,
    pub now_ms: u64,
}

/// One ConsumerGroupHeartbeat against `group` (`None`: no such group).
/// `new_member_id` names a member that joins without an id.
pub fn heartbeat(
    group: Option<&ConsumerGroup>,
    request: &HeartbeatRequest,
    cx: &Context<'_>,
    new_member_id: impl FnOnce() -> String,
) -> Result<HeartbeatResult, HeartbeatError> {
    validate(request, cx.assignors)?;
    if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
        || request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
    {
        return leave(group, request);
    }
    join_or_heartbeat(group, request, cx, new_member_id)
}

/// Apache's `throwIfConsumerGroupHeartbeatRequestIsInvalid`.
fn validate(
    request: &HeartbeatRequest,
    assignors: &[Box<dyn PartitionAssignor>],
) -> Result<(), HeartbeatError> {
    let invalid = |m: &str| Err(error(code::INVALID_REQUEST, m));
    let blank = |s: Option<&str>| s.is_some_and(|s| s.trim().is_empty());
    if request.group_id.trim().is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if blank(request.instance_id.as_deref()) {
        return invalid("InstanceId can't be empty.");
    }
    if blank(request.rack_id.as_deref()) {
        return invalid("RackId can't be empty.");
    }
    let epoch = request.member_epoch;
    if epoch > 0 || epoch == LEAVE_GROUP_MEMBER_EPOCH {
        if request.member_id.trim().is_empty() {
            return invalid("MemberId can't be empty.");
        }
    } else if epoch == 0 {
        if request.rebalance_timeout_ms == -1 {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if request.owned.as_ref().is_none_or(|o| !o.is_empty()) {
            return invalid("TopicPartitions must be empty when (re-)joining.");
        }
        // Empty names or an empty regex: a member subscribed to nothing.
        if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none() {
            return invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            );
        }
    } else if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        if request.member_id.trim().is_empty() {
            return invalid("MemberId can't be empty.");
        }
        if request.instance_id.is_none() {
            return invalid("InstanceId can't be null.");
        }
    } else {
        return invalid("MemberEpoch is invalid.");
    }
    if let Some(name) = &request.server_assignor {
        if !assignors.iter().any(|a| a.name() == name) {
            let supported: Vec<&str> = assignors.iter().map(|a| a.name()).collect();
            return Err(error(
                code::UNSUPPORTED_ASSIGNOR,
                format!(
                    "ServerAssignor {name} is not supported. Supported assignors: {}.",
                    supported.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn group_not_found(group_id: &str) -> HeartbeatError {
    error(
        code::GROUP_ID_NOT_FOUND,
        format!("Consumer group {group_id} not found."),
    )
}

pub(in crate::group) fn unknown_member(group_id: &str, member_id: &str) -> HeartbeatError {
    error(
        code::UNKNOWN_MEMBER_ID,
        format!("Member {member_id} is not a member of group {group_id}."),
    )
}

fn join_or_heartbeat(
    group: Option<&ConsumerGroup>,
    request: &HeartbeatRequest,
    cx: &Context<'_>,
    new_member_id: impl FnOnce() -> String,
) -> Result<HeartbeatResult, HeartbeatError> {
    let joining = request.member_epoch == 0;
    let empty;
    let group = match group {
        Some(g) => g,
        None if joining => {
            empty = ConsumerGroup::new(request.group_id.clone());
            &empty
        }
        None => return Err(group_not_found(&request.group_id)),
    };
    if group.members().len() >= cx.config.max_size
        && (request.member_id.is_empty() || group.member(&request.member_id).is_none())
    {
        return Err(error(
            code::GROUP_MAX_SIZE_REACHED,
            format!(
                "The consumer group has reached its maximum capacity of {} members.",
                cx.config.max_size
            ),
        ));
    }
    let member_id = if request.member_id.is_empty() {
        new_member_id()
    } else {
        request.member_id.clone()
    };
    let mut records = Vec::new();
    let member = match &request.instance_id {
        None => dynamic_member(group, &member_id, request, joining)?,
        Some(instance) => {
            static_member(group, &member_id, instance, request, joining, &mut records)?
        }
    };

    // 1. The member as this heartbeat declares it.
    let mut updated = member.clone();
    let m = &mut updated.metadata;
    if let Some(instance) = &request.instance_id {
        m.instance_id = Some(instance.clone());
    }
    if let Some(rack) = &request.rack_id {
        m.rack_id = Some(rack.clone());
    }
    if request.rebalance_timeout_ms != -1 {
        m.rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    if let Some(assignor) = &request.server_assignor {
        m.server_assignor = Some(assignor.clone());
    }
    if let Some(names) = &request.subscribed_topic_names {
        m.subscribed_topic_names = names.iter().cloned().collect();
    }
    if let Some(regex) = &request.subscribed_topic_regex {
        // "" is no regex.
        m.subscribed_topic_regex = Some(regex.clone()).filter(|r| !r.is_empty());
    }
    m.client_id = request.client_id.clone();
    m.client_host = request.client_host.clone();
    // It speaks the consumer protocol now, whatever it spoke before.
    m.classic = None;

    let mut timers = Vec::new();
    let updated = update_and_reconcile(
        group,
        &member,
        updated,
        request.owned.as_ref(),
        cx,
        &mut records,
        &mut timers,
    )?;
    timers.push(TimerOp::ScheduleSession {
        member_id: member_id.clone(),
        deadline_ms: cx.now_ms + cx.timing.session_timeout_ms.max(0) as u64,
    });

    // The assignment goes out on a full request (a join, or a member that
    // sent every field after an error) and whenever it changed.
    let full_request = joining
        || (request.rebalance_timeout_ms != -1
            && (request.subscribed_topic_names.is_some()
                || request.subscribed_topic_regex.is_some())
            && request.owned.is_some());
    let changed = updated.assignment.assigned != member.assignment.assigned;
    Ok(HeartbeatResult {
        records,
        response: HeartbeatResponse {
            member_id,
            member_epoch: updated.member_epoch(),
            heartbeat_interval_ms: cx.timing.heartbeat_interval_ms,
            assignment: (full_request || changed).then(|| updated.assignment.assigned.clone()),
        },
        timers,
    })
}

/// Steps 1 to 3 of a heartbeat, and of a classic member's JoinGroup:
/// record the member as it now declares itself, bump the group epoch when
/// a subscription or a subscribed topic changed, compute a new target
/// assignment when the group epoch is ahead of it, and move the member one
/// step towards it (Apache's `hasMemberSubscriptionChanged`,
/// `updateTargetAssignment`, `maybeReconcile`). `owned`: the partitions
/// the member reports. Returns the member as it ends up.
pub(in crate::group) fn update_and_reconcile(
    group: &ConsumerGroup,
    member: &ConsumerGroupMember,
    mut updated: ConsumerGroupMember,
    owned: Option<&MemberAssignment>,
    cx: &Context<'_>,
    records: &mut Vec<ConsumerGroupRecord>,
    timers: &mut Vec<TimerOp>,
) -> Result<ConsumerGroupMember, HeartbeatError> {
    let member_id = updated.member_id.clone();
    let mut bump = false;
    if updated.metadata != member.metadata {
        records.push(ConsumerGroupRecord::Member {
            member_id: member_id.clone(),
            metadata: updated.metadata.clone(),
        });
        bump |= updated.metadata.subscribed_topic_names != member.metadata.subscribed_topic_names;
    }
    let regexes = regex_subscription::update(group, member, &updated, cx, records)?;
    // A new group starts at epoch 1, whatever its first member subscribes
    // to (Apache 4.x's `groupEpoch == 0`).
    bump |= regexes.bump || group.group_epoch() == 0;
    // The subscribed topics as they are now: a subscription changed, a
    // regex matches other topics, or a subscribed topic was created,
    // deleted or grew.
    let subscribed = subscribed_topics(group, Some(member), Some(&updated), &regexes.resolved);
    let mut subscription_metadata = Cow::Borrowed(group.subscription_metadata());
    if metadata_changed(group.subscription_metadata(), &subscribed, cx.topics) {
        let now: BTreeMap<String, TopicMetadata> = subscribed
            .keys()
            .filter_map(|name| cx.topics.topic(name).map(|t| (name.clone(), t)))
            .collect();
        bump = true;
        records.push(ConsumerGroupRecord::SubscriptionMetadata {
            topics: now.clone(),
        });
        subscription_metadata = Cow::Owned(now);
    }
    let mut group_epoch = group.group_epoch();
    if bump {
        group_epoch += 1;
        records.push(ConsumerGroupRecord::GroupEpoch { epoch: group_epoch });
    }

    // 2. A new target assignment when the group epoch is ahead of it.
    let (target_epoch, target) = if group_epoch > group.target_assignment_epoch() {
        let result = new_target_assignment(
            group,
            group_epoch,
            member,
            &updated,
            (&subscription_metadata, &regexes.resolved),
            cx,
        )?;
        records.extend(result.records);
        let mine = result.target.get(&member_id).cloned().unwrap_or_default();
        (group_epoch, mine)
    } else {
        let owner = updated
            .instance_id()
            .and_then(|i| group.static_member_id(i))
            .unwrap_or(&member_id);
        let mine = group
            .target_assignment()
            .get(owner)
            .cloned()
            .unwrap_or_default();
        (group.target_assignment_epoch(), mine)
    };

    // 3. One step of reconciliation towards it.
    if !updated.is_reconciled_to(target_epoch) {
        let held =
            |topic: Uuid, partition: i32| group.current_partition_epoch(topic, partition) != -1;
        let next = reconcile(&updated.assignment, target_epoch, &target, held, owned)
            .map_err(|e| error(code::FENCED_MEMBER_EPOCH, e.to_string()))?;
        if next != updated.assignment {
            updated.assignment = next;
            let a = &updated.assignment;
            records.push(ConsumerGroupRecord::current_assignment(&member_id, a));
            // A classic member has join and sync timers instead.
            if !updated.uses_classic_protocol() {
                timers.push(if a.state == MemberState::UnrevokedPartitions {
                    TimerOp::ScheduleRebalance {
                        member_id: member_id.clone(),
                        member_epoch: a.member_epoch,
                        deadline_ms: cx.now_ms
                            + updated.metadata.rebalance_timeout_ms.max(0) as u64,
                    }
                } else {
                    TimerOp::CancelRebalance {
                        member_id: member_id.clone(),
                    }
                });
            }
        }
    }
    Ok(updated)
}

/// Apache's `getOrMaybeSubscribeDynamicConsumerGroupMember`.
fn dynamic_member(
    group: &ConsumerGroup,
    member_id: &str,
    request: &HeartbeatRequest,
    joining: bool,
) -> Result<ConsumerGroupMember, HeartbeatError> {
    match group.member(member_id) {
        Some(m) => {
            check_member_epoch(m, request)?;
            Ok(m.clone())
        }
        None if joining => Ok(ConsumerGroupMember::new(member_id)),
        None => Err(unknown_member(group.group_id(), member_id)),
    }
}

/// Apache's `getOrMaybeSubscribeStaticConsumerGroupMember`: a static
/// member rejoining after a leave with epoch -2 takes the place (and the
/// target) of the instance's previous member.
fn static_member(
    group: &ConsumerGroup,
    member_id: &str,
    instance_id: &str,
    request: &HeartbeatRequest,
    joining: bool,
    records: &mut Vec<ConsumerGroupRecord>,
) -> Result<ConsumerGroupMember, HeartbeatError> {
    let existing = group.static_member(instance_id);
    if joining {
        let Some(existing) = existing else {
            return Ok(group
                .member(member_id)
                .cloned()
                .unwrap_or_else(|| ConsumerGroupMember::new(member_id)));
        };
        // A classic instance is replaced at once; a consumer-protocol one
        // only after it left with epoch -2.
        if !existing.uses_classic_protocol()
            && existing.member_epoch() != LEAVE_GROUP_STATIC_MEMBER_EPOCH
        {
            return Err(error(
                code::UNRELEASED_INSTANCE_ID,
                format!(
                    "Static member {member_id} with instance id {instance_id} cannot join the group because the instance id is owned by {} member.",
                    existing.member_id
                ),
            ));
        }
        return Ok(replace_static_member(group, existing, member_id, records));
    }
    let existing = existing.ok_or_else(|| {
        error(
            code::UNKNOWN_MEMBER_ID,
            format!("Instance id {instance_id} is unknown."),
        )
    })?;
    check_instance_not_fenced(existing, member_id, instance_id)?;
    check_member_epoch(existing, request)?;
    Ok(existing.clone())
}

/// Apache's `replaceMember`: `existing`'s place, target included, taken by
/// a new member id at epoch 0.
pub(in crate::group) fn replace_static_member(
    group: &ConsumerGroup,
    existing: &ConsumerGroupMember,
    member_id: &str,
    records: &mut Vec<ConsumerGroupRecord>,
) -> ConsumerGroupMember {
    let mut replacement = existing.clone();
    replacement.member_id = member_id.to_string();
    replacement.assignment.member_epoch = 0;
    replacement.assignment.previous_member_epoch = 0;
    // Apache's replaceMember.
    records.extend(remove_member_records(&existing.member_id));
    records.push(ConsumerGroupRecord::Member {
        member_id: member_id.to_string(),
        metadata: replacement.metadata.clone(),
    });
    records.push(ConsumerGroupRecord::TargetMember {
        member_id: member_id.to_string(),
        partitions: group
            .target_assignment()
            .get(&existing.member_id)
            .cloned()
            .unwrap_or_default(),
    });
    records.push(ConsumerGroupRecord::current_assignment(
        member_id,
        &replacement.assignment,
    ));
    replacement
}

pub(in crate::group) fn check_instance_not_fenced(
    existing: &ConsumerGroupMember,
    member_id: &str,
    instance_id: &str,
) -> Result<(), HeartbeatError> {
    if existing.member_id != member_id {
        return Err(error(
            code::FENCED_INSTANCE_ID,
            format!(
                "Static member {member_id} with instance id {instance_id} was fenced by member {}.",
                existing.member_id
            ),
        ));
    }
    Ok(())
}

/// Apache's `throwIfConsumerGroupMemberEpochIsInvalid`: a member one epoch
/// behind is accepted if it owns a subset of its partitions (the answer
/// that moved it on may have been lost).
fn check_member_epoch(
    member: &ConsumerGroupMember,
    request: &HeartbeatRequest,
) -> Result<(), HeartbeatError> {
    let received = request.member_epoch;
    let current = member.member_epoch();
    let fenced = |which: &str| {
        Err(error(
            code::FENCED_MEMBER_EPOCH,
            format!(
                "The consumer group member has a {which} member epoch ({received}) than the one known by the group coordinator ({current}). The member must abandon all its partitions and rejoin."
            ),
        ))
    };
    if received > current {
        return fenced("greater");
    }
    if received < current {
        let subset = request.owned.as_ref().is_some_and(|owned| {
            owned.iter().all(|(topic, ps)| {
                member
                    .assignment
                    .assigned
                    .get(topic)
                    .is_some_and(|assigned| ps.is_subset(assigned))
            })
        });
        if received != member.assignment.previous_member_epoch || !subset {
            return fenced("smaller");
        }
    }
    Ok(())
}

/// The group's subscribed topic names (each with a count of the members
/// subscribing by name, and of the regexes matching it), the regexes'
/// topics as `resolved` has them, with `old` replaced by `new` among the
/// members (either may be `None`; Apache's `computeSubscribedTopicNames`).
/// The group's own names when nothing changes them: no copy on a steady
/// heartbeat.
pub(super) fn subscribed_topics<'a>(
    group: &'a ConsumerGroup,
    old: Option<&ConsumerGroupMember>,
    new: Option<&ConsumerGroupMember>,
    resolved: &BTreeMap<String, ResolvedRegex>,
) -> Cow<'a, BTreeMap<String, usize>> {
    fn names_of(m: Option<&ConsumerGroupMember>) -> Option<&BTreeSet<String>> {
        m.map(|m| &m.metadata.subscribed_topic_names)
            .filter(|names| !names.is_empty())
    }
    let same_names = names_of(old) == names_of(new);
    if same_names && resolved.is_empty() {
        return Cow::Borrowed(group.subscribed_topic_names());
    }
    let mut names = group.subscribed_topic_names().clone();
    if let Some(old) = old {
        for name in &old.metadata.subscribed_topic_names {
            if let Some(n) = names.get_mut(name) {
                *n -= 1;
                if *n == 0 {
                    names.remove(name);
                }
            }
        }
    }
    if let Some(new) = new {
        for name in &new.metadata.subscribed_topic_names {
            *names.entry(name.clone()).or_default() += 1;
        }
    }
    if !resolved.is_empty() {
        for regex in regex_subscription::subscribed_regexes(group, old, new).keys() {
            for topic in resolved.get(regex).into_iter().flat_map(|r| &r.topics) {
                *names.entry(topic.clone()).or_default() += 1;
            }
        }
    }
    Cow::Owned(names)
}

/// Whether the subscribed `names` that exist, as `topics` has them, differ
/// from the group's subscription metadata `current` (compared in place:
/// a steady heartbeat copies nothing).
fn metadata_changed(
    current: &BTreeMap<String, TopicMetadata>,
    names: &BTreeMap<String, usize>,
    topics: &dyn TopicsView,
) -> bool {
    let mut kept = 0;
    for name in names.keys() {
        match current.get(name) {
            Some(m) if topics.unchanged(m) => kept += 1,
            Some(_) => return true,
            None if topics.exists(name) => return true,
            None => {}
        }
    }
    kept != current.len()
}

/// Apache's `updateTargetAssignment`.
fn new_target_assignment(
    group: &ConsumerGroup,
    group_epoch: i32,
    member: &ConsumerGroupMember,
    updated: &ConsumerGroupMember,
    (subscription_metadata, resolved_regexes): (
        &BTreeMap<String, TopicMetadata>,
        &BTreeMap<String, ResolvedRegex>,
    ),
    cx: &Context<'_>,
) -> Result<super::target::TargetAssignmentResult, HeartbeatError> {
    let assignor = preferred_assignor(group, member, updated, cx.assignors);
    let mut builder = TargetAssignmentBuilder::new(group_epoch, assignor)
        .with_members(group.members())
        .with_static_members(group.static_members())
        .with_subscription_metadata(subscription_metadata)
        .with_resolved_regexes(resolved_regexes)
        .with_target_assignment(group.target_assignment())
        .add_or_update_member(updated.clone());
    // A static member replacing the instance's previous member.
    if let Some(previous) = updated
        .instance_id()
        .and_then(|i| group.static_member_id(i))
        .filter(|p| *p != updated.member_id)
    {
        builder = builder.remove_member(previous);
    }
    builder.build().map_err(|e| {
        error(
            code::UNKNOWN_SERVER_ERROR,
            format!("Failed to compute a new target assignment for epoch {group_epoch}: {e}"),
        )
    })
}

/// The assignor most members ask for, counting `updated` instead of
/// `member`; the default (the first configured) if none asks.
fn preferred_assignor<'a>(
    group: &ConsumerGroup,
    member: &ConsumerGroupMember,
    updated: &ConsumerGroupMember,
    assignors: &'a [Box<dyn PartitionAssignor>],
) -> &'a dyn PartitionAssignor {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in group.members().values() {
        if m.member_id == member.member_id {
            continue;
        }
        if let Some(name) = &m.metadata.server_assignor {
            *counts.entry(name).or_default() += 1;
        }
    }
    if let Some(name) = &updated.metadata.server_assignor {
        *counts.entry(name).or_default() += 1;
    }
    let mut best: Option<(&str, usize)> = None;
    for (name, count) in counts {
        if best.is_none_or(|(_, c)| count > c) {
            best = Some((name, count));
        }
    }
    best.and_then(|(name, _)| assignors.iter().find(|a| a.name() == name))
        .unwrap_or(&assignors[0])
        .as_ref()
}

/// Apache's `removeMember`: the member's three tombstones.
pub(in crate::group) fn remove_member_records(member_id: &str) -> [ConsumerGroupRecord; 3] {
    [
        ConsumerGroupRecord::CurrentAssignmentTombstone {
            member_id: member_id.to_string(),
        },
        ConsumerGroupRecord::TargetMemberTombstone {
            member_id: member_id.to_string(),
        },
        ConsumerGroupRecord::MemberTombstone {
            member_id: member_id.to_string(),
        },
    ]
}

/// Apache's `consumerGroupLeave`.
fn leave(
    group: Option<&ConsumerGroup>,
    request: &HeartbeatRequest,
) -> Result<HeartbeatResult, HeartbeatError> {
    let group = group.ok_or_else(|| group_not_found(&request.group_id))?;
    let response = HeartbeatResponse {
        member_id: request.member_id.clone(),
        member_epoch: request.member_epoch,
        heartbeat_interval_ms: 0,
        assignment: None,
    };
    let member = match &request.instance_id {
        None => group
            .member(&request.member_id)
            .ok_or_else(|| unknown_member(group.group_id(), &request.member_id))?,
        Some(instance) => {
            let member = group.static_member(instance).ok_or_else(|| {
                error(
                    code::UNKNOWN_MEMBER_ID,
                    format!("Instance id {instance} is unknown."),
                )
            })?;
            check_instance_not_fenced(member, &request.member_id, instance)?;
            if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                // The static member keeps its place (and partitions) for
                // its next incarnation; its session timer still runs.
                let leaving = MemberAssignmentState {
                    member_epoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                    pending_revocation: MemberAssignment::new(),
                    ..member.assignment.clone()
                };
                return Ok(HeartbeatResult {
                    records: vec![ConsumerGroupRecord::current_assignment(
                        &member.member_id,
                        &leaving,
                    )],
                    response: HeartbeatResponse {
                        member_id: member.member_id.clone(),
                        member_epoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                        heartbeat_interval_ms: 0,
                        assignment: None,
                    },
                    timers: Vec::new(),
                });
            }
            member
        }
    };
    let (records, timers) = fence_member(group, member);
    Ok(HeartbeatResult {
        records,
        response,
        timers,
    })
}

/// Apache's `consumerGroupFenceMember`: the member's tombstones, the
/// subscribed topics without it, a new group epoch; its timers cancelled.
pub fn fence_member(
    group: &ConsumerGroup,
    member: &ConsumerGroupMember,
) -> (Vec<ConsumerGroupRecord>, Vec<TimerOp>) {
    let mut records = remove_member_records(&member.member_id).to_vec();
    records.extend(members_gone_records(group, &[member]));
    (records, TimerOp::cancel_all(&member.member_id))
}

/// After `gone` members' tombstones: the tombstones of regexes only they
/// subscribed with, the subscribed topics without them, a new group epoch
/// (Apache's `consumerGroupFenceMembers`). Only topics only they
/// subscribed to leave the metadata; a topic created, grown or deleted
/// meanwhile is seen at the next heartbeat.
pub(in crate::group) fn members_gone_records(
    group: &ConsumerGroup,
    gone: &[&ConsumerGroupMember],
) -> Vec<ConsumerGroupRecord> {
    let mut records = Vec::new();
    let resolved = regex_subscription::drop_unused(group, gone, &mut records);
    let mut names = group.subscribed_topic_names().clone();
    for name in gone.iter().flat_map(|m| &m.metadata.subscribed_topic_names) {
        if let Some(n) = names.get_mut(name) {
            *n -= 1;
            if *n == 0 {
                names.remove(name);
            }
        }
    }
    let regex_topics = resolved.values().flat_map(|r| &r.topics);
    let remaining: BTreeSet<&String> = names.keys().chain(regex_topics).collect();
    let mut metadata = group.subscription_metadata().clone();
    metadata.retain(|name, _| remaining.contains(name));
    if &metadata != group.subscription_metadata() {
        records.push(ConsumerGroupRecord::SubscriptionMetadata { topics: metadata });
    }
    records.push(ConsumerGroupRecord::GroupEpoch {
        epoch: group.group_epoch() + 1,
    });
    records
}

/// A member's session expired: fenced if it is still there.
pub fn on_session_timeout(group: &ConsumerGroup, member_id: &str) -> Vec<ConsumerGroupRecord> {
    match group.member(member_id) {
        Some(member) => fence_member(group, member).0,
        None => Vec::new(),
    }
}

/// A member's rebalance timeout expired: fenced if it is still at the
/// epoch it had to leave.
pub fn on_rebalance_timeout(
    group: &ConsumerGroup,
    member_id: &str,
    member_epoch: i32,
) -> Vec<ConsumerGroupRecord> {
    match group.member(member_id) {
        Some(member) if member.member_epoch() == member_epoch => fence_member(group, member).0,
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
