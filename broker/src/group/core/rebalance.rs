//! The classic rebalance engine every group API shares (Apache
//! `prepareRebalance`, `completeClassicGroupJoin`, `propagateAssignment`,
//! heartbeat and pending-sync expiration): parked join and sync waiters,
//! the group's timers, and the transitions between rebalance states.

use std::collections::HashMap;

use bytes::Bytes;

use super::api::sync_error;
use super::group::JoinTimer;
use super::join::ms;
use super::{
    ClassicGroup, ClassicGroupMember, Ctx, Effect, GroupCoordinator, GroupState, JoinGroupResponse,
    PendingPersist, RequestToken, Response, SyncGroupResponse, TimerKey,
};
use crate::coordinator::errors::{append_error_to_response_error, code};

// ------------------------------------------------------------ waiters/timers

pub(crate) fn respond_join(token: RequestToken, resp: JoinGroupResponse, cx: &mut Ctx<'_>) {
    cx.fx.push(Effect::Respond(token, Response::Join(resp)));
}

/// Apache `completeJoinFuture`.
pub(crate) fn complete_join_waiter(
    g: &mut ClassicGroup,
    member_id: &str,
    resp: JoinGroupResponse,
    cx: &mut Ctx<'_>,
) -> bool {
    match g.take_join_waiter(member_id) {
        Some(token) => {
            respond_join(token, resp, cx);
            true
        }
        None => false,
    }
}

/// Answers whatever a member that is leaving the group still has parked, so no
/// request is left without an answer.
pub(crate) fn answer_leftover_waiters(m: &ClassicGroupMember, error: i16, cx: &mut Ctx<'_>) {
    if let Some(t) = m.awaiting_join {
        respond_join(t, JoinGroupResponse::error("", error), cx);
    }
    if let Some(t) = m.awaiting_sync {
        cx.fx.push(sync_error(t, error));
    }
}

pub(crate) fn reschedule_heartbeat(
    g: &ClassicGroup,
    member_id: &str,
    timeout_ms: u64,
    cx: &mut Ctx<'_>,
) {
    cx.timers.schedule(
        TimerKey::Heartbeat(g.group_id.clone(), member_id.to_string()),
        cx.now.saturating_add(timeout_ms),
    );
}

/// Apache `rescheduleClassicGroupMemberHeartbeat(group, member)`.
pub(crate) fn reschedule_member_heartbeat(g: &ClassicGroup, member_id: &str, cx: &mut Ctx<'_>) {
    if let Some(m) = g.member(member_id) {
        let t = ms(m.session_timeout_ms);
        reschedule_heartbeat(g, member_id, t, cx);
    }
}

pub(crate) fn cancel_heartbeat(g: &ClassicGroup, member_id: &str, cx: &mut Ctx<'_>) {
    cx.timers.cancel(&TimerKey::Heartbeat(
        g.group_id.clone(),
        member_id.to_string(),
    ));
}

fn schedule_join(g: &mut ClassicGroup, kind: JoinTimer, delay_ms: u64, cx: &mut Ctx<'_>) {
    g.join_timer = Some(kind);
    cx.timers.schedule(
        TimerKey::Join(g.group_id.clone()),
        cx.now.saturating_add(delay_ms),
    );
}

fn cancel_join(g: &mut ClassicGroup, cx: &mut Ctx<'_>) {
    g.join_timer = None;
    cx.timers.cancel(&TimerKey::Join(g.group_id.clone()));
}

/// Apache `removeSyncExpiration`.
pub(crate) fn remove_sync_expiration(g: &mut ClassicGroup, cx: &mut Ctx<'_>) {
    g.clear_pending_sync_members();
    g.sync_timer_generation = None;
    cx.timers.cancel(&TimerKey::Sync(g.group_id.clone()));
}

fn schedule_pending_sync(g: &mut ClassicGroup, cx: &mut Ctx<'_>) {
    g.sync_timer_generation = Some(g.generation_id);
    let t = ms(g.rebalance_timeout_ms());
    cx.timers
        .schedule(TimerKey::Sync(g.group_id.clone()), cx.now.saturating_add(t));
}

/// Writes the group's metadata; an Empty group's record is fire-and-forget as
/// in Apache (a lost write only resurrects an empty generation).
pub(crate) fn persist_group(g: &ClassicGroup, cx: &mut Ctx<'_>) {
    cx.fx.push(Effect::PersistGroupMetadata {
        group_id: g.group_id.clone(),
        record: g.to_record(None),
        ack: None,
    });
}

// ------------------------------------------------------------ rebalance

/// Apache `validateMember`: instance id must map to this member id, and the
/// member must exist.
pub(crate) fn validate_member(
    g: &ClassicGroup,
    member_id: &str,
    instance_id: Option<&str>,
    operation: &str,
) -> Result<(), i16> {
    if let Some(iid) = instance_id {
        match g.static_member_id(iid) {
            None => return Err(code::UNKNOWN_MEMBER_ID),
            Some(existing) if existing != member_id => {
                tracing::info!(
                    group = %g.group_id,
                    member_id,
                    group_instance_id = iid,
                    existing_member_id = existing,
                    operation,
                    "static member is fenced by the existing member id"
                );
                return Err(code::FENCED_INSTANCE_ID);
            }
            Some(_) => {}
        }
    }
    if !g.has_member(member_id) {
        return Err(code::UNKNOWN_MEMBER_ID);
    }
    Ok(())
}

/// Apache `prepareRebalance`.
pub(crate) fn prepare_rebalance(g: &mut ClassicGroup, reason: &str, cx: &mut Ctx<'_>) {
    if g.is(GroupState::CompletingRebalance) {
        reset_and_propagate_assignment_with_error(g, code::REBALANCE_IN_PROGRESS, cx);
    }
    remove_sync_expiration(g, cx);

    let initial = g.is(GroupState::Empty);
    if initial {
        // A new group gets more time for members to join.
        let delay = cx.cfg.initial_rebalance_delay_ms;
        let remaining = ms(g.rebalance_timeout_ms()).saturating_sub(delay);
        schedule_join(
            g,
            JoinTimer::InitialDelay {
                delay_ms: delay,
                remaining_ms: remaining,
            },
            delay,
            cx,
        );
    }
    if !g.transition_to(GroupState::PreparingRebalance, cx.now) {
        return;
    }
    tracing::info!(
        group = %g.group_id,
        generation = g.generation_id,
        reason,
        "preparing to rebalance group"
    );
    if !initial {
        maybe_complete_join_else_schedule(g, cx);
    }
}

fn maybe_complete_join_else_schedule(g: &mut ClassicGroup, cx: &mut Ctx<'_>) {
    if g.has_all_members_joined() {
        complete_join(g, cx);
    } else {
        let t = ms(g.rebalance_timeout_ms());
        schedule_join(g, JoinTimer::Complete, t, cx);
    }
}

/// Apache `tryCompleteInitialRebalanceElseSchedule`: every new arrival during
/// the initial delay extends it by another delay, capped by the rebalance
/// timeout.
pub(crate) fn try_complete_initial_rebalance(
    g: &mut ClassicGroup,
    delay_ms: u64,
    remaining_ms: u64,
    cx: &mut Ctx<'_>,
) {
    if g.new_member_added && remaining_ms != 0 {
        g.new_member_added = false;
        let new_delay = cx.cfg.initial_rebalance_delay_ms.min(remaining_ms);
        let new_remaining = remaining_ms.saturating_sub(delay_ms);
        schedule_join(
            g,
            JoinTimer::InitialDelay {
                delay_ms: new_delay,
                remaining_ms: new_remaining,
            },
            new_delay,
            cx,
        );
    } else {
        complete_join(g, cx);
    }
}

pub(crate) fn maybe_prepare_rebalance_or_complete_join(
    g: &mut ClassicGroup,
    reason: &str,
    cx: &mut Ctx<'_>,
) {
    if g.can_rebalance() {
        prepare_rebalance(g, reason, cx);
    } else {
        maybe_complete_join_phase(g, cx);
    }
}

/// Apache `maybeCompleteJoinPhase`: never completes the initial rebalance
/// early (the delay timer does).
pub(crate) fn maybe_complete_join_phase(g: &mut ClassicGroup, cx: &mut Ctx<'_>) {
    if !g.is(GroupState::PreparingRebalance)
        || g.previous_state == GroupState::Empty
        || !g.has_all_members_joined()
    {
        return;
    }
    complete_join(g, cx);
}

/// The group as a JoinGroup answer to `member_id`: the generation, the
/// protocol, the leader and, with `with_members`, every member (the leader's
/// answer).
pub(crate) fn current_state_response(
    g: &ClassicGroup,
    member_id: &str,
    with_members: bool,
) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: code::NONE,
        generation_id: g.generation_id,
        protocol_type: g.protocol_type.clone(),
        protocol_name: g.protocol_name.clone(),
        leader: g.leader_id.clone().unwrap_or_default(),
        skip_assignment: false,
        member_id: member_id.to_string(),
        members: if with_members {
            g.current_members_for_join()
        } else {
            Vec::new()
        },
    }
}

/// Apache `completeClassicGroupJoin`: drop dynamic members that did not
/// rejoin, start the next generation, answer every parked JoinGroup.
pub(crate) fn complete_join(g: &mut ClassicGroup, cx: &mut Ctx<'_>) {
    cancel_join(g, cx);

    let failed = g.not_yet_rejoined_dynamic_members();
    if !failed.is_empty() {
        for id in &failed {
            if let Some(m) = g.remove(id) {
                answer_leftover_waiters(&m, code::UNKNOWN_MEMBER_ID, cx);
            }
            cancel_heartbeat(g, id, cx);
        }
        tracing::info!(group = %g.group_id, members = ?failed, "removed dynamic members who haven't joined");
    }

    if g.is(GroupState::Dead) {
        tracing::info!(group = %g.group_id, "group is dead, skipping rebalance stage");
        return;
    }
    if !g.maybe_elect_new_joined_leader() && g.num_members() > 0 {
        // Nobody rejoined: wait another rebalance timeout for session expiry
        // to clear the silent members.
        tracing::error!(group = %g.group_id, "group could not complete rebalance because no members rejoined");
        let t = ms(g.rebalance_timeout_ms());
        schedule_join(g, JoinTimer::Complete, t, cx);
        return;
    }

    g.init_next_generation(cx.now);
    if g.is(GroupState::Empty) {
        tracing::info!(group = %g.group_id, generation = g.generation_id, "group is now empty");
        persist_group(g, cx);
        return;
    }

    tracing::info!(
        group = %g.group_id,
        generation = g.generation_id,
        members = g.num_members(),
        "Stabilized group"
    );
    for id in g.member_ids() {
        let resp = current_state_response(g, &id, g.is_leader(&id));
        complete_join_waiter(g, &id, resp, cx);
        reschedule_member_heartbeat(g, &id, cx);
        if let Some(m) = g.member_mut(&id) {
            m.is_new = false;
        }
        g.add_pending_sync_member(&id);
    }
    schedule_pending_sync(g, cx);
}

/// Apache `resetAndPropagateAssignmentWithError`.
pub(crate) fn reset_and_propagate_assignment_with_error(
    g: &mut ClassicGroup,
    error: i16,
    cx: &mut Ctx<'_>,
) {
    if !g.is(GroupState::CompletingRebalance) {
        return;
    }
    for m in g.members.values_mut() {
        m.assignment = Bytes::new();
    }
    propagate_assignment(g, error, cx);
}

/// Apache `setAndPropagateAssignment`.
pub(crate) fn set_and_propagate_assignment(
    g: &mut ClassicGroup,
    assignment: &HashMap<String, Bytes>,
    cx: &mut Ctx<'_>,
) {
    if !g.is(GroupState::CompletingRebalance) {
        return;
    }
    for m in g.members.values_mut() {
        m.assignment = assignment.get(&m.member_id).cloned().unwrap_or_default();
    }
    propagate_assignment(g, code::NONE, cx);
}

fn propagate_assignment(g: &mut ClassicGroup, error: i16, cx: &mut Ctx<'_>) {
    let (ptype, pname) = if error == code::NONE {
        (g.protocol_type.clone(), g.protocol_name.clone())
    } else {
        (None, None)
    };
    for id in g.member_ids() {
        let Some(token) = g.take_sync_waiter(&id) else {
            continue;
        };
        let assignment = g
            .member(&id)
            .map(|m| m.assignment.clone())
            .unwrap_or_default();
        if assignment.is_empty() && error == code::NONE {
            tracing::warn!(group = %g.group_id, member = %id, generation = g.generation_id, "sending empty assignment with no error");
        }
        cx.fx.push(Effect::Respond(
            token,
            Response::Sync(SyncGroupResponse {
                error_code: error,
                protocol_type: ptype.clone(),
                protocol_name: pname.clone(),
                assignment,
            }),
        ));
        // Expirations ignored while the member was parked must be re-armed.
        reschedule_member_heartbeat(g, &id, cx);
    }
}

/// Apache `expirePendingSync`.
pub(crate) fn expire_pending_sync(g: &mut ClassicGroup, generation: i32, cx: &mut Ctx<'_>) {
    if generation != g.generation_id {
        tracing::error!(group = %g.group_id, generation, current = g.generation_id, "sync expiration for an old generation");
        return;
    }
    match g.state {
        GroupState::CompletingRebalance | GroupState::Stable => {
            if g.has_received_sync_from_all_members() {
                return;
            }
            let pending = g.pending_sync_members();
            for id in &pending {
                if let Some(m) = g.remove(id) {
                    answer_leftover_waiters(&m, code::UNKNOWN_MEMBER_ID, cx);
                }
                cancel_heartbeat(g, id, cx);
            }
            let reason = format!("Removing {pending:?} on pending sync request expiration");
            prepare_rebalance(g, &reason, cx);
        }
        _ => {
            tracing::error!(group = %g.group_id, state = %g.state, "sync expiration after the group left the sync phase");
        }
    }
}

/// Apache `expireClassicGroupMemberHeartbeat`.
pub(crate) fn expire_heartbeat(g: &mut ClassicGroup, member_id: &str, cx: &mut Ctx<'_>) {
    if g.is(GroupState::Dead) {
        return;
    }
    if g.is_pending_member(member_id) {
        tracing::info!(group = %g.group_id, member_id, "pending member removed after session timeout expiration");
        g.remove(member_id);
        if g.is(GroupState::PreparingRebalance) && g.has_all_members_joined() {
            complete_join(g, cx);
        }
        return;
    }
    let Some(m) = g.member(member_id) else {
        return;
    };
    if !m.has_satisfied_heartbeat() {
        tracing::info!(group = %g.group_id, member_id, "member has failed, removing it from the group");
        let reason = format!("removing member {member_id} on heartbeat expiration.");
        remove_member_and_update(g, member_id, &reason, cx);
    }
}

/// Removes a member, telling its parked JoinGroup and SyncGroup to retry
/// (UNKNOWN_MEMBER_ID).
pub(crate) fn drop_member(g: &mut ClassicGroup, member_id: &str, cx: &mut Ctx<'_>) {
    complete_join_waiter(
        g,
        member_id,
        JoinGroupResponse::error("", code::UNKNOWN_MEMBER_ID),
        cx,
    );
    if let Some(m) = g.remove(member_id) {
        answer_leftover_waiters(&m, code::UNKNOWN_MEMBER_ID, cx);
    }
}

/// Apache `removeMemberAndUpdateClassicGroup`.
pub(crate) fn remove_member_and_update(
    g: &mut ClassicGroup,
    member_id: &str,
    reason: &str,
    cx: &mut Ctx<'_>,
) {
    // A new member may time out with its JoinGroup parked: tell it to retry.
    drop_member(g, member_id, cx);
    match g.state {
        GroupState::Stable | GroupState::CompletingRebalance => {
            maybe_prepare_rebalance_or_complete_join(g, reason, cx)
        }
        GroupState::PreparingRebalance if g.has_all_members_joined() => complete_join(g, cx),
        _ => {}
    }
}

impl GroupCoordinator {
    pub(crate) fn on_join_timer(&mut self, group_id: &str, now_ms: u64, fx: &mut Vec<Effect>) {
        self.with_group(group_id, now_ms, fx, |g, cx| match g.join_timer.take() {
            Some(JoinTimer::InitialDelay {
                delay_ms,
                remaining_ms,
            }) => try_complete_initial_rebalance(g, delay_ms, remaining_ms, cx),
            Some(JoinTimer::Complete) => complete_join(g, cx),
            None => {}
        });
    }

    pub(crate) fn on_sync_timer(&mut self, group_id: &str, now_ms: u64, fx: &mut Vec<Effect>) {
        self.with_group(group_id, now_ms, fx, |g, cx| {
            if let Some(generation) = g.sync_timer_generation.take() {
                expire_pending_sync(g, generation, cx);
            }
        });
    }

    pub(crate) fn on_heartbeat_timer(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: u64,
        fx: &mut Vec<Effect>,
    ) {
        self.with_group(group_id, now_ms, fx, |g, cx| {
            expire_heartbeat(g, member_id, cx)
        });
    }

    /// Outcome of a `PersistGroupMetadata` write that carried an `ack`.
    /// `result` is `Err(error_code)` of the failed write (e.g. KAFKA_STORAGE_ERROR).
    pub fn complete_group_persist(
        &mut self,
        ack: u64,
        result: Result<(), i16>,
        now_ms: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let Some(pending) = self.persist.pending.remove(&ack) else {
            tracing::warn!(ack, "completion for an unknown group metadata write");
            return fx;
        };
        match pending {
            PendingPersist::SyncAssignment {
                group_id,
                generation,
                assignment,
                leader_member_id,
            } => {
                self.with_group(&group_id, now_ms, &mut fx, |g, cx| {
                    // Another join may have moved the group on meanwhile.
                    if !g.is(GroupState::CompletingRebalance) || g.generation_id != generation {
                        return;
                    }
                    match result {
                        Ok(()) => {
                            set_and_propagate_assignment(g, &assignment, cx);
                            g.transition_to(GroupState::Stable, cx.now);
                        }
                        Err(e) => {
                            let error = append_error_to_response_error(e);
                            reset_and_propagate_assignment_with_error(g, error, cx);
                            let reason = format!(
                                "Error {error} when storing group assignment during SyncGroup (member: {leader_member_id})."
                            );
                            maybe_prepare_rebalance_or_complete_join(g, &reason, cx);
                        }
                    }
                });
            }
            PendingPersist::StaticReplace {
                group_id,
                instance_id,
                old_member_id,
                new_member_id,
                old_protocols,
                old_rebalance_timeout_ms,
                old_session_timeout_ms,
                leader_before,
                supports_skip_assignment,
            } => {
                self.with_group(&group_id, now_ms, &mut fx, |g, cx| {
                    if g.static_member_id(&instance_id) != Some(new_member_id.as_str()) {
                        return;
                    }
                    match result {
                        Ok(()) => {
                            let is_leader = g.is_leader(&new_member_id);
                            let skip = supports_skip_assignment && is_leader;
                            let resp = JoinGroupResponse {
                                error_code: code::NONE,
                                generation_id: g.generation_id,
                                protocol_type: g.protocol_type.clone(),
                                protocol_name: g.protocol_name.clone(),
                                leader: if supports_skip_assignment {
                                    g.leader_id.clone().unwrap_or_default()
                                } else {
                                    leader_before.clone().unwrap_or_default()
                                },
                                skip_assignment: skip,
                                member_id: new_member_id.clone(),
                                members: if skip {
                                    g.current_members_for_join()
                                } else {
                                    Vec::new()
                                },
                            };
                            complete_join_waiter(g, &new_member_id, resp, cx);
                        }
                        Err(e) => {
                            // Revert to the old member id, as Apache does.
                            let token = g.take_join_waiter(&new_member_id);
                            g.update_member(
                                &new_member_id,
                                old_protocols,
                                old_rebalance_timeout_ms,
                                old_session_timeout_ms,
                                None,
                            );
                            g.replace_static_member(&instance_id, &new_member_id, &old_member_id);
                            cancel_heartbeat(g, &new_member_id, cx);
                            reschedule_member_heartbeat(g, &old_member_id, cx);
                            if let Some(token) = token {
                                respond_join(
                                    token,
                                    JoinGroupResponse {
                                        error_code: append_error_to_response_error(e),
                                        generation_id: g.generation_id,
                                        protocol_type: g.protocol_type.clone(),
                                        protocol_name: g.protocol_name.clone(),
                                        leader: leader_before.clone().unwrap_or_default(),
                                        skip_assignment: false,
                                        member_id: String::new(),
                                        members: Vec::new(),
                                    },
                                    cx,
                                );
                            }
                        }
                    }
                });
            }
        }
        fx
    }
}
