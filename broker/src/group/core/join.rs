//! JoinGroup (Apache `classicGroupJoin*`): new, existing and static members
//! joining a classic group. The rebalance engine it drives is
//! [`super::rebalance`].

use bytes::Bytes;

use super::api::{join_error, sync_error};
use super::rebalance::{
    answer_leftover_waiters, cancel_heartbeat, current_state_response, maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join, prepare_rebalance, reschedule_heartbeat,
    reschedule_member_heartbeat, respond_join, validate_member,
};
use crate::coordinator::errors::code;
use crate::group::consumer::heartbeat::TopicsView;

use super::{
    ClassicGroup, ClassicGroupMember, Ctx, Effect, GroupCoordinator, GroupState, JoinGroupRequest,
    JoinGroupResponse, PendingPersist, RequestToken,
};

/// `JoinGroupRequest.requiresKnownMemberId`: KIP-394, v4+.
fn requires_known_member_id(api_version: i16) -> bool {
    api_version >= 4
}

/// `JoinGroupRequest.supportsSkippingAssignment`: KIP-814, v9+.
fn supports_skipping_assignment(api_version: i16) -> bool {
    api_version >= 9
}

fn join_reason(req: &JoinGroupRequest) -> &str {
    req.reason.as_deref().unwrap_or("not provided")
}

pub(crate) fn ms(v: i32) -> u64 {
    v.max(0) as u64
}

// ------------------------------------------------------------ JoinGroup

/// Apache `acceptJoiningMember`.
fn accept_joining_member(g: &ClassicGroup, member_id: &str, max: usize) -> bool {
    match g.state {
        GroupState::Empty | GroupState::Dead => true,
        // Awaiting members are counted (not members) so the last rejoining
        // members are the ones kicked out when the group is over capacity.
        GroupState::PreparingRebalance => {
            g.member(member_id).is_some_and(|m| m.is_awaiting_join()) || g.num_awaiting_join() < max
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            g.has_member(member_id) || g.num_members() < max
        }
    }
}

impl GroupCoordinator {
    /// JoinGroup. The answer is immediate on errors and parked until the join
    /// phase completes otherwise. `topics`: the topics that exist now (a
    /// consumer group reads them).
    pub fn join_group(
        &mut self,
        token: RequestToken,
        req: JoinGroupRequest,
        topics: &dyn TopicsView,
        now_ms: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        if super::api::invalid_group_id(&req.group_id) {
            fx.push(join_error(token, &req.member_id, code::INVALID_GROUP_ID));
            return fx;
        }
        if req.session_timeout_ms < self.config.min_session_timeout_ms
            || req.session_timeout_ms > self.config.max_session_timeout_ms
        {
            fx.push(join_error(
                token,
                &req.member_id,
                code::INVALID_SESSION_TIMEOUT,
            ));
            return fx;
        }
        let is_unknown = req.member_id.is_empty();
        if let Some(group) = self.consumer.groups.get(&req.group_id) {
            if self.consumer.deleting.contains(&req.group_id) {
                fx.push(join_error(
                    token,
                    &req.member_id,
                    code::COORDINATOR_LOAD_IN_PROGRESS,
                ));
                return fx;
            }
            // Classic members join a consumer group that has members
            // (online migration); an empty one makes way for a classic
            // group.
            if !group.members().is_empty() {
                return self.classic_join_to_consumer_group(token, &req, topics, now_ms);
            }
            fx.extend(self.delete_empty_consumer_group(&req.group_id));
        }
        if !self.groups.contains_key(&req.group_id) {
            // A known member id cannot create a group.
            if !is_unknown {
                fx.push(join_error(token, &req.member_id, code::UNKNOWN_MEMBER_ID));
                return fx;
            }
            self.groups.insert(
                req.group_id.clone(),
                ClassicGroup::new(&req.group_id, now_ms),
            );
        }
        let gid = req.group_id.clone();
        self.with_group(&gid, now_ms, &mut fx, |g, cx| {
            if !accept_joining_member(g, &req.member_id, cx.cfg.max_group_size) {
                if let Some(m) = g.remove(&req.member_id) {
                    answer_leftover_waiters(&m, code::GROUP_MAX_SIZE_REACHED, cx);
                    cancel_heartbeat(g, &req.member_id, cx);
                }
                cx.fx
                    .push(join_error(token, "", code::GROUP_MAX_SIZE_REACHED));
            } else if is_unknown {
                join_new_member(g, token, &req, cx);
            } else {
                join_existing_member(g, token, &req, cx);
            }
        });
        fx
    }
}

fn join_new_member(
    g: &mut ClassicGroup,
    token: RequestToken,
    req: &JoinGroupRequest,
    cx: &mut Ctx<'_>,
) {
    if g.is(GroupState::Dead) {
        // The group was just removed (deleted or migrated): let the member
        // rediscover the coordinator and retry.
        cx.fx
            .push(join_error(token, "", code::COORDINATOR_NOT_AVAILABLE));
    } else if !g.supports_protocols(&req.protocol_type, &req.protocols) {
        cx.fx
            .push(join_error(token, "", code::INCONSISTENT_GROUP_PROTOCOL));
    } else {
        let new_id =
            ClassicGroup::generate_member_id(&req.client_id, req.group_instance_id.as_deref());
        match req.group_instance_id.as_deref() {
            Some(iid) => match g.static_member_id(iid).map(str::to_string) {
                Some(existing) => {
                    tracing::info!(
                        group = %g.group_id,
                        group_instance_id = iid,
                        state = %g.state,
                        existing_member_id = %existing,
                        "static member with unknown member id joins; replacing previously mapped member"
                    );
                    update_static_member_then_rebalance_or_complete_join(
                        g, token, req, &existing, &new_id, cx,
                    );
                }
                None => add_member_then_rebalance_or_complete_join(g, token, req, &new_id, cx),
            },
            None => {
                if requires_known_member_id(req.api_version) {
                    // KIP-394: hand out the id first; the member must rejoin
                    // with it within its session timeout.
                    g.add_pending_member(&new_id);
                    reschedule_heartbeat(g, &new_id, ms(req.session_timeout_ms), cx);
                    cx.fx
                        .push(join_error(token, &new_id, code::MEMBER_ID_REQUIRED));
                } else {
                    add_member_then_rebalance_or_complete_join(g, token, req, &new_id, cx);
                }
            }
        }
    }
}

fn join_existing_member(
    g: &mut ClassicGroup,
    token: RequestToken,
    req: &JoinGroupRequest,
    cx: &mut Ctx<'_>,
) {
    let member_id = req.member_id.as_str();
    if g.is(GroupState::Dead) {
        cx.fx.push(join_error(
            token,
            member_id,
            code::COORDINATOR_NOT_AVAILABLE,
        ));
    } else if !g.supports_protocols(&req.protocol_type, &req.protocols) {
        cx.fx.push(join_error(
            token,
            member_id,
            code::INCONSISTENT_GROUP_PROTOCOL,
        ));
    } else if g.is_pending_member(member_id) {
        if req.group_instance_id.is_some() {
            // Apache throws IllegalStateException here (a pending member is
            // never static); its runtime answers UNKNOWN_SERVER_ERROR.
            cx.fx
                .push(join_error(token, member_id, code::UNKNOWN_SERVER_ERROR));
            return;
        }
        tracing::info!(group = %g.group_id, member_id, state = %g.state, "pending dynamic member joins; adding to the group");
        add_member_then_rebalance_or_complete_join(g, token, req, member_id, cx);
    } else {
        if let Err(e) =
            validate_member(g, member_id, req.group_instance_id.as_deref(), "join-group")
        {
            cx.fx.push(join_error(token, member_id, e));
            return;
        }
        let (is_leader, matches) = match g.member(member_id) {
            Some(m) => (g.is_leader(member_id), m.matches(&req.protocols)),
            None => return,
        };
        match g.state {
            GroupState::PreparingRebalance => {
                let reason = format!(
                    "Member {member_id} is joining group during {}; client reason: {}",
                    g.state,
                    join_reason(req)
                );
                update_member_then_rebalance_or_complete_join(g, token, req, &reason, cx);
            }
            GroupState::CompletingRebalance => {
                if matches {
                    // Same metadata (the member likely lost the JoinGroup
                    // response): return the current generation.
                    let resp = current_state_response(g, member_id, is_leader);
                    respond_join(token, resp, cx);
                } else {
                    let reason = format!(
                        "Updating metadata for member {member_id} during {}; client reason: {}",
                        g.state,
                        join_reason(req)
                    );
                    update_member_then_rebalance_or_complete_join(g, token, req, &reason, cx);
                }
            }
            GroupState::Stable => {
                if is_leader {
                    // The leader may rejoin to force a rebalance for changes
                    // invisible in metadata (e.g. topic metadata).
                    let reason = format!(
                        "Leader {member_id} re-joining group during {}; client reason: {}",
                        g.state,
                        join_reason(req)
                    );
                    update_member_then_rebalance_or_complete_join(g, token, req, &reason, cx);
                } else if !matches {
                    let reason = format!(
                        "Updating metadata for member {member_id} during {}; client reason: {}",
                        g.state,
                        join_reason(req)
                    );
                    update_member_then_rebalance_or_complete_join(g, token, req, &reason, cx);
                } else {
                    let resp = current_state_response(g, member_id, false);
                    respond_join(token, resp, cx);
                }
            }
            GroupState::Empty | GroupState::Dead => {
                tracing::warn!(group = %g.group_id, member_id, state = %g.state, "rejoining member in unexpected group state");
                cx.fx
                    .push(join_error(token, member_id, code::UNKNOWN_MEMBER_ID));
            }
        }
    }
}

/// Parks `token` as the member's JoinGroup. A JoinGroup it supersedes (the
/// client gave up on it and retried) is answered REBALANCE_IN_PROGRESS so it
/// does not stay parked forever; Apache silently drops it.
fn park_join(g: &mut ClassicGroup, member_id: &str, cx: &mut Ctx<'_>) {
    if let Some(old) = g.take_join_waiter(member_id) {
        respond_join(
            old,
            JoinGroupResponse::error(member_id, code::REBALANCE_IN_PROGRESS),
            cx,
        );
    }
}

fn update_member_then_rebalance_or_complete_join(
    g: &mut ClassicGroup,
    token: RequestToken,
    req: &JoinGroupRequest,
    reason: &str,
    cx: &mut Ctx<'_>,
) {
    park_join(g, &req.member_id, cx);
    g.update_member(
        &req.member_id,
        req.protocols.clone(),
        req.rebalance_timeout_ms,
        req.session_timeout_ms,
        Some(token),
    );
    maybe_prepare_rebalance_or_complete_join(g, reason, cx);
}

fn add_member_then_rebalance_or_complete_join(
    g: &mut ClassicGroup,
    token: RequestToken,
    req: &JoinGroupRequest,
    member_id: &str,
    cx: &mut Ctx<'_>,
) {
    let member = ClassicGroupMember {
        member_id: member_id.to_string(),
        group_instance_id: req.group_instance_id.clone(),
        client_id: req.client_id.clone(),
        client_host: req.client_host.clone(),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        session_timeout_ms: req.session_timeout_ms,
        protocol_type: req.protocol_type.clone(),
        protocols: req.protocols.clone(),
        assignment: Bytes::new(),
        awaiting_join: Some(token),
        awaiting_sync: None,
        is_new: true,
        seq: 0,
    };
    // New arrivals during the initial delay extend it.
    if g.is(GroupState::PreparingRebalance) && g.previous_state == GroupState::Empty {
        g.new_member_added = true;
    }
    if let Err(e) = g.add(member) {
        cx.fx.push(join_error(token, member_id, e));
        return;
    }
    // A parked new member cannot heartbeat; bound its JoinGroup instead so
    // defunct retries do not pile up.
    reschedule_heartbeat(g, member_id, cx.cfg.new_member_join_timeout_ms, cx);
    let reason = format!(
        "Adding new member {member_id} with group instance id {:?}; client reason: {}",
        req.group_instance_id,
        join_reason(req)
    );
    maybe_prepare_rebalance_or_complete_join(g, &reason, cx);
}

/// Apache `updateStaticMemberThenRebalanceOrCompleteJoin`.
fn update_static_member_then_rebalance_or_complete_join(
    g: &mut ClassicGroup,
    token: RequestToken,
    req: &JoinGroupRequest,
    old_member_id: &str,
    new_member_id: &str,
    cx: &mut Ctx<'_>,
) {
    let Some(iid) = req.group_instance_id.clone() else {
        return;
    };
    let leader_before = g.leader_id.clone();
    let Some(old) = g.replace_static_member(&iid, old_member_id, new_member_id) else {
        cx.fx
            .push(join_error(token, "", code::UNKNOWN_SERVER_ERROR));
        return;
    };
    // Fence the duplicate immediately if it has requests parked.
    if let Some(t) = old.awaiting_join {
        respond_join(
            t,
            JoinGroupResponse::error(old_member_id, code::FENCED_INSTANCE_ID),
            cx,
        );
    }
    if let Some(t) = old.awaiting_sync {
        cx.fx.push(sync_error(t, code::FENCED_INSTANCE_ID));
    }
    // The old id's heartbeat will expire without effect.
    reschedule_member_heartbeat(g, new_member_id, cx);

    let old_protocols = old.protocols.clone();
    g.update_member(
        new_member_id,
        req.protocols.clone(),
        req.rebalance_timeout_ms,
        req.session_timeout_ms,
        Some(token),
    );

    match g.state {
        GroupState::Stable => {
            let selected = g.select_protocol();
            if selected.is_some() && g.protocol_name == selected {
                tracing::info!(group = %g.group_id, "static member joining a stable group without changing the selected protocol; no rebalance");
                let ack = cx.persist.register(PendingPersist::StaticReplace {
                    group_id: g.group_id.clone(),
                    instance_id: iid,
                    old_member_id: old_member_id.to_string(),
                    new_member_id: new_member_id.to_string(),
                    old_protocols,
                    old_rebalance_timeout_ms: old.rebalance_timeout_ms,
                    old_session_timeout_ms: old.session_timeout_ms,
                    leader_before,
                    supports_skip_assignment: supports_skipping_assignment(req.api_version),
                });
                cx.fx.push(Effect::PersistGroupMetadata {
                    group_id: g.group_id.clone(),
                    record: g.to_record(None),
                    ack: Some(ack),
                });
            } else {
                let reason = format!(
                    "Group's selectedProtocol will change because static member {new_member_id} with instance id {iid} joined with change of protocol; client reason: {}",
                    join_reason(req)
                );
                maybe_prepare_rebalance_or_complete_join(g, &reason, cx);
            }
        }
        GroupState::CompletingRebalance => {
            // The leader may already be assigning for the old member id.
            let reason = format!(
                "Updating metadata for static member {new_member_id} with instance id {iid}; client reason: {}",
                join_reason(req)
            );
            prepare_rebalance(g, &reason, cx);
        }
        GroupState::Empty | GroupState::Dead => {
            tracing::error!(group = %g.group_id, state = %g.state, "static member rejoined a group in an unexpected state");
            if let Some(t) = g.take_join_waiter(new_member_id) {
                cx.fx.push(join_error(t, "", code::UNKNOWN_SERVER_ERROR));
            }
        }
        GroupState::PreparingRebalance => maybe_complete_join_phase(g, cx),
    }
}

/// Apache `isProtocolInconsistent`: only a value both sides have can clash.
fn protocol_inconsistent(request: Option<&str>, group: Option<&str>) -> bool {
    matches!((request, group), (Some(r), Some(g)) if r != g)
}

/// SyncGroup v5 protocol type/name cross-check.
pub(crate) fn validate_sync_protocol(
    g: &ClassicGroup,
    protocol_type: Option<&str>,
    protocol_name: Option<&str>,
) -> Result<(), i16> {
    if protocol_inconsistent(protocol_type, g.protocol_type.as_deref())
        || protocol_inconsistent(protocol_name, g.protocol_name.as_deref())
    {
        return Err(code::INCONSISTENT_GROUP_PROTOCOL);
    }
    Ok(())
}
