//! Online migration between classic and consumer groups (Apache 4.x,
//! `group.consumer.migration.policy`): a classic group converts when a
//! consumer-protocol member joins it; its classic members go on with
//! JoinGroup / SyncGroup / Heartbeat / LeaveGroup inside the consumer
//! group; the group converts back when its last consumer-protocol member
//! leaves. Pure, as the heartbeat is: the group in, records, answers and
//! timers out (Apache's `convertToConsumerGroup`, `classicGroup*ToConsumerGroup`,
//! `convertToClassicGroup`).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use uuid::Uuid;

use super::protocol::{
    consumer_protocol_version, decode_assignment, decode_subscription, encode_assignment,
    CONSUMER_PROTOCOL_TYPE,
};
use super::{
    code, ClassicGroup, GroupMetadataRecord, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, LeaveMemberResponse, MemberMetadataRecord, Protocol, SyncGroupRequest,
    SyncGroupResponse,
};
use crate::group::assignor::MemberAssignment;
use crate::group::consumer::group::ConsumerGroup;
use crate::group::consumer::heartbeat::{
    check_instance_not_fenced, error, members_gone_records, remove_member_records,
    replace_static_member, update_and_reconcile, Context, HeartbeatError, MigrationPolicy, TimerOp,
    TopicsView,
};
use crate::group::consumer::member::{ClassicMemberMetadata, ClassicProtocol, ConsumerGroupMember};
use crate::group::consumer::reconcile::{MemberAssignmentState, MemberState};
use crate::group::consumer::records::ConsumerGroupRecord;

// ------------------------------------------------------------ conversions

/// The records that make `classic` a consumer group (Apache's
/// `ConsumerGroup.fromClassicGroup` + `createConsumerGroupRecords`): each
/// member keeps its id, its subscription and the partitions of its last
/// assignment, Stable at the generation as its epoch; the target
/// assignment is the current one. Topics that no longer exist are left
/// out. Err: an embedded consumer protocol that does not parse.
pub fn upgrade_records(
    classic: &ClassicGroup,
    topics: &dyn TopicsView,
) -> Result<Vec<ConsumerGroupRecord>, String> {
    let generation = classic.generation_id();
    let mut members = Vec::new();
    for m in classic.members_in_order() {
        // The group's protocol; a group still in its first rebalance has
        // none yet: the member's first (every one carries the same
        // subscription).
        let subscription = classic
            .protocol_name()
            .and_then(|p| m.metadata(p))
            .or_else(|| m.protocols.first().map(|p| &p.metadata))
            .and_then(|metadata| decode_subscription(metadata))
            .ok_or_else(|| format!("the subscription of member {} does not parse", m.member_id))?;
        let assignment = decode_assignment(&m.assignment)
            .ok_or_else(|| format!("the assignment of member {} does not parse", m.member_id))?;
        let assigned = to_topic_ids(
            assignment
                .assigned_partitions
                .iter()
                .map(|tp| (tp.topic.0.as_str(), &tp.partitions)),
            topics,
        );
        let metadata = crate::group::consumer::member::MemberSubscriptionMetadata {
            instance_id: m.group_instance_id.clone(),
            rack_id: subscription.rack_id.as_ref().map(|r| r.to_string()),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            subscribed_topic_names: subscription.topics.iter().map(|t| t.to_string()).collect(),
            subscribed_topic_regex: None,
            server_assignor: None,
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            classic: Some(classic_metadata(m.session_timeout_ms, &m.protocols)),
        };
        members.push((m.member_id.clone(), metadata, assigned));
    }
    let mut records: Vec<ConsumerGroupRecord> = members
        .iter()
        .map(|(id, metadata, _)| ConsumerGroupRecord::Member {
            member_id: id.clone(),
            metadata: metadata.clone(),
        })
        .collect();
    records.push(ConsumerGroupRecord::GroupEpoch { epoch: generation });
    records.extend(
        members
            .iter()
            .map(|(id, _, assigned)| ConsumerGroupRecord::TargetMember {
                member_id: id.clone(),
                partitions: assigned.clone(),
            }),
    );
    records.push(ConsumerGroupRecord::TargetEpoch {
        assignment_epoch: generation,
    });
    records.extend(members.iter().map(|(id, _, assigned)| {
        ConsumerGroupRecord::current_assignment(
            id,
            &MemberAssignmentState {
                state: MemberState::Stable,
                member_epoch: generation,
                previous_member_epoch: generation,
                assigned: assigned.clone(),
                pending_revocation: MemberAssignment::new(),
            },
        )
    }));
    Ok(records)
}

/// Whether fencing `member_id` converts the group back to a classic group
/// (Apache's `validateOnlineDowngradeWithFencedMember`): every other member
/// speaks the classic protocol, there is one, the policy allows it and
/// they fit in a classic group.
pub fn downgrade_on_fence(
    group: &ConsumerGroup,
    member_id: &str,
    policy: MigrationPolicy,
    classic_max_size: usize,
) -> bool {
    let others = group
        .members()
        .values()
        .filter(|m| m.member_id != member_id);
    let mut remaining = 0;
    for m in others {
        if !m.uses_classic_protocol() {
            return false;
        }
        remaining += 1;
    }
    remaining > 0 && downgrade_allowed(group, remaining, policy, classic_max_size)
}

/// Whether a classic static member replacing `replaced_id` converts the
/// group back to a classic group (Apache's
/// `validateOnlineDowngradeWithReplacedMember`): the replaced member is
/// the only one speaking the consumer protocol, the policy allows it and
/// the members fit in a classic group.
pub fn downgrade_on_replace(
    group: &ConsumerGroup,
    replaced_id: &str,
    policy: MigrationPolicy,
    classic_max_size: usize,
) -> bool {
    let last_consumer_member = group.members().values().all(|m| {
        let replaced = m.member_id == replaced_id;
        m.uses_classic_protocol() != replaced
    });
    last_consumer_member
        && group.member(replaced_id).is_some()
        && downgrade_allowed(group, group.members().len(), policy, classic_max_size)
}

/// The policy and size checks of a downgrade to `members` classic members.
fn downgrade_allowed(
    group: &ConsumerGroup,
    members: usize,
    policy: MigrationPolicy,
    classic_max_size: usize,
) -> bool {
    if !policy.downgrade_enabled() {
        tracing::info!(group = %group.group_id(), "not converting the consumer group back to a classic group: the online downgrade is disabled");
        return false;
    }
    if members > classic_max_size {
        tracing::info!(group = %group.group_id(), "not converting the consumer group back to a classic group: its size is greater than group.max.size");
        return false;
    }
    true
}

/// The conversion of `group` without `leaving` (if one leaves) back to a
/// classic group (Apache's `convertToClassicGroup` and
/// `ClassicGroup.fromConsumerGroup`): the consumer group's tombstones, and
/// the classic group's metadata at the group epoch as its generation, each
/// member's assignment its target, encoded at its protocol's version.
pub fn downgrade(
    group: &ConsumerGroup,
    leaving: Option<&str>,
    now_ms: u64,
) -> (Vec<ConsumerGroupRecord>, GroupMetadataRecord) {
    let members: Vec<&ConsumerGroupMember> = group
        .members()
        .values()
        .filter(|m| Some(m.member_id.as_str()) != leaving)
        .collect();
    let protocol = select_protocol(&members);
    let names = topic_names(group);
    let members = members
        .iter()
        .map(|m| {
            let subscription = classic_protocols(m)
                .iter()
                .find(|p| p.name == protocol)
                .map(|p| Bytes::from(p.metadata.clone()))
                .unwrap_or_default();
            let version = consumer_protocol_version(&subscription).unwrap_or(0);
            let target = group
                .target_assignment()
                .get(&m.member_id)
                .cloned()
                .unwrap_or_default();
            MemberMetadataRecord {
                member_id: m.member_id.clone(),
                group_instance_id: m.metadata.instance_id.clone(),
                client_id: m.metadata.client_id.clone(),
                client_host: m.metadata.client_host.clone(),
                rebalance_timeout_ms: m.metadata.rebalance_timeout_ms,
                session_timeout_ms: m.classic_session_timeout_ms().unwrap_or_default(),
                subscription,
                assignment: encode_assignment(to_topic_names(&target, &names), version),
            }
        })
        .collect();
    let record = GroupMetadataRecord {
        group_id: group.group_id().to_string(),
        protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
        generation: group.group_epoch(),
        protocol: Some(protocol),
        leader: None,
        current_state_timestamp_ms: Some(now_ms),
        members,
    };
    (tombstones(group), record)
}

/// Apache's `createGroupTombstoneRecords`: every record of the group
/// deleted, in the order replay accepts.
pub fn tombstones(group: &ConsumerGroup) -> Vec<ConsumerGroupRecord> {
    let ids: Vec<String> = group.members().keys().cloned().collect();
    let mut records: Vec<ConsumerGroupRecord> = ids
        .iter()
        .map(|id| ConsumerGroupRecord::CurrentAssignmentTombstone {
            member_id: id.clone(),
        })
        .collect();
    records.extend(group.target_assignment().keys().map(|id| {
        ConsumerGroupRecord::TargetMemberTombstone {
            member_id: id.clone(),
        }
    }));
    records.extend(ids.iter().map(|id| ConsumerGroupRecord::MemberTombstone {
        member_id: id.clone(),
    }));
    records.push(ConsumerGroupRecord::TargetEpochTombstone);
    records.push(ConsumerGroupRecord::SubscriptionMetadataTombstone);
    records.push(ConsumerGroupRecord::GroupTombstone);
    records
}

/// The protocol every member supports that most members prefer (Apache's
/// `ClassicGroup.selectProtocol`; ties to the first name).
fn select_protocol(members: &[&ConsumerGroupMember]) -> String {
    let mut candidates: Option<BTreeSet<&str>> = None;
    for m in members {
        let names: BTreeSet<&str> = classic_protocols(m)
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        candidates = Some(match candidates {
            None => names,
            Some(c) => c.intersection(&names).copied().collect(),
        });
    }
    let candidates = candidates.unwrap_or_default();
    let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
    for m in members {
        if let Some(p) = classic_protocols(m)
            .iter()
            .find(|p| candidates.contains(p.name.as_str()))
        {
            *votes.entry(p.name.as_str()).or_default() += 1;
        }
    }
    let mut best: Option<(&str, usize)> = None;
    for (name, count) in votes {
        if best.is_none_or(|(_, c)| count > c) {
            best = Some((name, count));
        }
    }
    best.map(|(name, _)| name.to_string()).unwrap_or_default()
}

fn classic_protocols(m: &ConsumerGroupMember) -> &[ClassicProtocol] {
    m.metadata
        .classic
        .as_ref()
        .map(|c| c.supported_protocols.as_slice())
        .unwrap_or_default()
}

fn classic_metadata(session_timeout_ms: i32, protocols: &[Protocol]) -> ClassicMemberMetadata {
    ClassicMemberMetadata {
        session_timeout_ms,
        supported_protocols: protocols
            .iter()
            .map(|p| ClassicProtocol {
                name: p.name.clone(),
                metadata: p.metadata.to_vec(),
            })
            .collect(),
    }
}

/// Topic name → partitions, by the ids `topics` knows.
fn to_topic_ids<'a>(
    partitions: impl Iterator<Item = (&'a str, &'a Vec<i32>)>,
    topics: &dyn TopicsView,
) -> MemberAssignment {
    let mut out = MemberAssignment::new();
    for (name, ps) in partitions {
        if let Some(t) = topics.topic(name) {
            out.entry(t.id).or_default().extend(ps.iter().copied());
        }
    }
    out
}

/// The names of the group's subscribed topics, by id.
fn topic_names(group: &ConsumerGroup) -> BTreeMap<Uuid, &str> {
    group
        .subscription_metadata()
        .values()
        .map(|t| (t.id, t.name.as_str()))
        .collect()
}

fn to_topic_names<'a>(
    assignment: &MemberAssignment,
    names: &BTreeMap<Uuid, &'a str>,
) -> Vec<(&'a str, Vec<i32>)> {
    assignment
        .iter()
        .filter_map(|(id, ps)| Some((*names.get(id)?, ps.iter().copied().collect())))
        .collect()
}

// ------------------------------------------------------------ JoinGroup

/// What a classic member's JoinGroup to a consumer group leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicJoinResult {
    /// To write, then answer.
    pub records: Vec<ConsumerGroupRecord>,
    pub response: JoinGroupResponse,
    pub timers: Vec<TimerOp>,
}

/// Apache's `classicGroupJoinToConsumerGroup`: the member joins or rejoins
/// as a consumer group member that speaks the classic protocol, the group
/// epoch moves when its subscription changed, and it is reconciled one
/// step with the partitions its subscription says it owns. The answer
/// makes it a follower (no leader, no member list): its assignment comes
/// back in SyncGroup.
pub fn join(
    group: &ConsumerGroup,
    req: &JoinGroupRequest,
    cx: &Context<'_>,
    new_member_id: impl FnOnce() -> String,
) -> ClassicJoinResult {
    let is_unknown = req.member_id.is_empty();
    let member_id = if is_unknown {
        new_member_id()
    } else {
        req.member_id.clone()
    };
    match join_member(group, req, cx, &member_id, is_unknown) {
        Ok(result) => result,
        Err(e) => {
            tracing::info!(group = %group.group_id(), member = %member_id, code = e.code, "classic JoinGroup to a consumer group refused: {}", e.message);
            ClassicJoinResult {
                records: Vec::new(),
                response: JoinGroupResponse::error(
                    if e.code == code::MEMBER_ID_REQUIRED {
                        member_id
                    } else {
                        req.member_id.clone()
                    },
                    e.code,
                ),
                timers: Vec::new(),
            }
        }
    }
}

fn join_member(
    group: &ConsumerGroup,
    req: &JoinGroupRequest,
    cx: &Context<'_>,
    member_id: &str,
    is_unknown: bool,
) -> Result<ClassicJoinResult, HeartbeatError> {
    if group.members().len() >= cx.config.max_size && group.member(member_id).is_none() {
        return Err(error(
            code::GROUP_MAX_SIZE_REACHED,
            format!(
                "The consumer group has reached its maximum capacity of {} members.",
                cx.config.max_size
            ),
        ));
    }
    if !supports_classic_protocols(group, &req.protocol_type, &req.protocols) {
        return Err(error(
            code::INCONSISTENT_GROUP_PROTOCOL,
            format!("Member {member_id}'s protocols are not supported."),
        ));
    }
    if is_unknown && req.api_version >= 4 && req.group_instance_id.is_none() {
        // KIP-394: a new dynamic member comes back with the id it is given.
        return Err(error(
            code::MEMBER_ID_REQUIRED,
            "A new member must rejoin with the member id it was given.",
        ));
    }
    let mut records = Vec::new();
    let member = match &req.group_instance_id {
        None => group
            .member(member_id)
            .cloned()
            .unwrap_or_else(|| ConsumerGroupMember::new(member_id)),
        Some(instance) => match group.static_member(instance) {
            None if is_unknown => ConsumerGroupMember::new(member_id),
            None => return Err(unknown_instance(instance)),
            Some(existing) if is_unknown => {
                replace_static_member(group, existing, member_id, &mut records)
            }
            Some(existing) => {
                check_instance_not_fenced(existing, member_id, instance)?;
                existing.clone()
            }
        },
    };
    let subscription = req
        .protocols
        .first()
        .and_then(|p| decode_subscription(&p.metadata))
        .ok_or_else(|| {
            error(
                code::UNKNOWN_SERVER_ERROR,
                "Malformed embedded consumer protocol in subscription deserialization.",
            )
        })?;

    let mut updated = member.clone();
    let m = &mut updated.metadata;
    if let Some(instance) = &req.group_instance_id {
        m.instance_id = Some(instance.clone());
    }
    if let Some(rack) = &subscription.rack_id {
        m.rack_id = Some(rack.to_string());
    }
    if req.rebalance_timeout_ms != -1 {
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
    }
    m.subscribed_topic_names = subscription.topics.iter().map(|t| t.to_string()).collect();
    m.client_id = req.client_id.clone();
    m.client_host = req.client_host.clone();
    m.classic = Some(classic_metadata(req.session_timeout_ms, &req.protocols));

    let owned = to_topic_ids(
        subscription
            .owned_partitions
            .iter()
            .map(|tp| (tp.topic.0.as_str(), &tp.partitions)),
        cx.topics,
    );
    let mut timers = Vec::new();
    let updated = update_and_reconcile(
        group,
        &member,
        updated,
        Some(&owned),
        cx,
        &mut records,
        &mut timers,
    )?;
    timers.extend([
        TimerOp::CancelJoin {
            member_id: member_id.to_string(),
        },
        TimerOp::ScheduleSession {
            member_id: member_id.to_string(),
            deadline_ms: cx.now_ms + req.session_timeout_ms.max(0) as u64,
        },
        TimerOp::ScheduleSync {
            member_id: member_id.to_string(),
            deadline_ms: cx.now_ms + req.rebalance_timeout_ms.max(0) as u64,
        },
    ]);
    Ok(ClassicJoinResult {
        records,
        response: JoinGroupResponse {
            error_code: code::NONE,
            generation_id: updated.member_epoch(),
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: req.protocols.first().map(|p| p.name.clone()),
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members: Vec::new(),
        },
        timers,
    })
}

/// Apache's `ConsumerGroup.supportsClassicProtocols`: the consumer protocol
/// type, and a protocol every classic member supports (any, when the group
/// is empty).
fn supports_classic_protocols(
    group: &ConsumerGroup,
    protocol_type: &str,
    protocols: &[Protocol],
) -> bool {
    if protocol_type != CONSUMER_PROTOCOL_TYPE || protocols.is_empty() {
        return false;
    }
    let classic: Vec<&ConsumerGroupMember> = group
        .members()
        .values()
        .filter(|m| m.uses_classic_protocol())
        .collect();
    protocols.iter().any(|p| {
        classic
            .iter()
            .all(|m| classic_protocols(m).iter().any(|c| c.name == p.name))
    })
}

fn unknown_instance(instance: &str) -> HeartbeatError {
    error(
        code::UNKNOWN_MEMBER_ID,
        format!("Instance id {instance} is unknown."),
    )
}

/// Apache's `validateConsumerGroupMember` and
/// `throwIfMemberDoesNotUseClassicProtocol`: the classic member the
/// request names.
fn classic_member<'a>(
    group: &'a ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<&'a ConsumerGroupMember, HeartbeatError> {
    let member = match instance_id {
        None => group.member(member_id).ok_or_else(|| {
            crate::group::consumer::heartbeat::unknown_member(group.group_id(), member_id)
        })?,
        Some(instance) => {
            let member = group
                .static_member(instance)
                .ok_or_else(|| unknown_instance(instance))?;
            check_instance_not_fenced(member, member_id, instance)?;
            member
        }
    };
    if !member.uses_classic_protocol() {
        return Err(error(
            code::UNKNOWN_MEMBER_ID,
            format!(
                "Member {} does not use the classic protocol.",
                member.member_id
            ),
        ));
    }
    Ok(member)
}

fn check_generation(member: &ConsumerGroupMember, generation: i32) -> Result<(), HeartbeatError> {
    if member.member_epoch() != generation {
        return Err(error(
            code::ILLEGAL_GENERATION,
            format!(
                "The request generation id {generation} is not equal to the member epoch {} of member {}.",
                member.member_epoch(),
                member.member_id
            ),
        ));
    }
    Ok(())
}

/// Fenced unless it rejoins within its rebalance timeout.
fn rejoin_timer(member: &ConsumerGroupMember, now_ms: u64) -> TimerOp {
    TimerOp::ScheduleJoinIfAbsent {
        member_id: member.member_id.clone(),
        deadline_ms: now_ms + member.metadata.rebalance_timeout_ms.max(0) as u64,
    }
}

fn session_timer(member: &ConsumerGroupMember, now_ms: u64) -> TimerOp {
    TimerOp::ScheduleSession {
        member_id: member.member_id.clone(),
        deadline_ms: now_ms
            + member
                .classic_session_timeout_ms()
                .unwrap_or_default()
                .max(0) as u64,
    }
}

// ------------------------------------------------------------ SyncGroup

/// Apache's `classicGroupSyncToConsumerGroup`: the member's assigned
/// partitions, encoded at its protocol's version. No records.
pub fn sync(
    group: &ConsumerGroup,
    req: &SyncGroupRequest,
    now_ms: u64,
) -> (SyncGroupResponse, Vec<TimerOp>) {
    let member = match classic_member(group, &req.member_id, req.group_instance_id.as_deref())
        .and_then(|m| check_generation(m, req.generation_id).map(|()| m))
    {
        Ok(m) => m,
        Err(e) => return (SyncGroupResponse::error(e.code), Vec::new()),
    };
    let protocols = classic_protocols(member);
    let protocol_name = protocols
        .first()
        .map(|p| p.name.as_str())
        .unwrap_or_default();
    if req
        .protocol_type
        .as_deref()
        .is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
        || req
            .protocol_name
            .as_deref()
            .is_some_and(|n| n != protocol_name)
    {
        return (
            SyncGroupResponse::error(code::INCONSISTENT_GROUP_PROTOCOL),
            Vec::new(),
        );
    }
    // A new epoch: rejoin to catch up, unless the member still has to
    // revoke (its next rejoin comes once it has).
    if group.group_epoch() > member.member_epoch()
        && member.assignment.state != MemberState::UnrevokedPartitions
    {
        return (
            SyncGroupResponse::error(code::REBALANCE_IN_PROGRESS),
            vec![rejoin_timer(member, now_ms)],
        );
    }
    let version = protocols
        .first()
        .and_then(|p| consumer_protocol_version(&p.metadata))
        .unwrap_or(0);
    let assignment = encode_assignment(
        to_topic_names(&member.assignment.assigned, &topic_names(group)),
        version,
    );
    (
        SyncGroupResponse {
            error_code: code::NONE,
            protocol_type: req.protocol_type.clone(),
            protocol_name: req.protocol_name.clone(),
            assignment,
        },
        vec![
            TimerOp::CancelSync {
                member_id: member.member_id.clone(),
            },
            session_timer(member, now_ms),
        ],
    )
}

// ------------------------------------------------------------ Heartbeat

/// Apache's `classicGroupHeartbeatToConsumerGroup`: keeps the session;
/// REBALANCE_IN_PROGRESS when the member must rejoin (a new group epoch,
/// partitions to revoke, or partitions it waits for now free).
pub fn heartbeat(
    group: &ConsumerGroup,
    req: &HeartbeatRequest,
    now_ms: u64,
) -> (i16, Vec<TimerOp>) {
    let member = match classic_member(group, &req.member_id, req.group_instance_id.as_deref())
        .and_then(|m| check_generation(m, req.generation_id).map(|()| m))
    {
        Ok(m) => m,
        Err(e) => return (e.code, Vec::new()),
    };
    let mut timers = vec![session_timer(member, now_ms)];
    let state = member.assignment.state;
    if member.member_epoch() < group.group_epoch()
        || state == MemberState::UnrevokedPartitions
        || (state == MemberState::UnreleasedPartitions
            && !group.waiting_on_unreleased_partition(member))
    {
        timers.push(rejoin_timer(member, now_ms));
        return (code::REBALANCE_IN_PROGRESS, timers);
    }
    (code::NONE, timers)
}

// ------------------------------------------------------------ LeaveGroup

/// What a classic LeaveGroup to a consumer group leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicLeaveResult {
    pub records: Vec<ConsumerGroupRecord>,
    pub members: Vec<LeaveMemberResponse>,
    pub timers: Vec<TimerOp>,
}

/// Apache's `classicGroupLeaveToConsumerGroup`: every named classic member
/// removed (a static one also by instance id alone), then the subscribed
/// topics without them and one new group epoch.
pub fn leave(group: &ConsumerGroup, req: &LeaveGroupRequest) -> ClassicLeaveResult {
    let mut records = Vec::new();
    let mut members = Vec::new();
    let mut timers = Vec::new();
    let mut left: Vec<&ConsumerGroupMember> = Vec::new();
    for identity in &req.members {
        let instance = identity.group_instance_id.as_deref();
        let found = match instance {
            None => classic_member(group, &identity.member_id, None),
            Some(instance) => group
                .static_member(instance)
                .ok_or_else(|| unknown_instance(instance))
                .and_then(|m| {
                    // An admin removes a static member by instance id alone.
                    if !identity.member_id.is_empty() {
                        check_instance_not_fenced(m, &identity.member_id, instance)?;
                    }
                    classic_member(group, &m.member_id, None)
                }),
        };
        match found {
            Ok(m) if !left.iter().any(|l| l.member_id == m.member_id) => {
                tracing::info!(group = %group.group_id(), member = %m.member_id,
                               reason = identity.reason.as_deref().unwrap_or("not provided"),
                               "classic member left the consumer group through LeaveGroup");
                records.extend(remove_member_records(&m.member_id));
                timers.extend(TimerOp::cancel_all(&m.member_id));
                members.push(LeaveMemberResponse {
                    member_id: m.member_id.clone(),
                    group_instance_id: identity.group_instance_id.clone(),
                    error_code: code::NONE,
                });
                left.push(m);
            }
            Ok(m) => members.push(LeaveMemberResponse {
                member_id: m.member_id.clone(),
                group_instance_id: identity.group_instance_id.clone(),
                error_code: code::NONE,
            }),
            Err(e) => members.push(LeaveMemberResponse {
                member_id: identity.member_id.clone(),
                group_instance_id: identity.group_instance_id.clone(),
                error_code: e.code,
            }),
        }
    }
    if !left.is_empty() {
        records.extend(members_gone_records(group, &left));
    }
    ClassicLeaveResult {
        records,
        members,
        timers,
    }
}

#[cfg(test)]
mod tests;
