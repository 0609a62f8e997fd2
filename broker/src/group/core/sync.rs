//! SyncGroup (Apache `classicGroupSync`).

use std::collections::HashMap;

use bytes::Bytes;

use super::api::{invalid_group_id, sync_error};
use super::join::validate_sync_protocol;
use super::protocol::{consumer_protocol_version, empty_consumer_assignment};
use super::rebalance::validate_member;
use super::{
    ClassicGroup, Ctx, Effect, GroupCoordinator, GroupState, PendingPersist, RequestToken,
    Response, SyncGroupRequest, SyncGroupResponse, TimerKey,
};
use crate::coordinator::errors::code;

/// Apache `removePendingSyncMember`: the sync timer is no longer needed once
/// every member synced (or the group left the sync phase).
fn remove_pending_sync_member(g: &mut ClassicGroup, member_id: &str, cx: &mut Ctx<'_>) {
    g.remove_pending_sync_member(member_id);
    let done = match g.state {
        GroupState::Dead | GroupState::Empty | GroupState::PreparingRebalance => true,
        GroupState::CompletingRebalance | GroupState::Stable => {
            g.has_received_sync_from_all_members()
        }
    };
    if done {
        g.sync_timer_generation = None;
        cx.timers.cancel(&TimerKey::Sync(g.group_id.clone()));
    }
}

/// Assignment for a member the leader left out. Consumers get a valid empty
/// ConsumerProtocolAssignment in the version of their subscription (a Java
/// consumer cannot parse zero bytes); other protocol types get empty bytes.
fn missing_assignment(g: &ClassicGroup, member_id: &str) -> Bytes {
    if !g.uses_consumer_protocol() {
        return Bytes::new();
    }
    let version = g
        .protocol_name
        .as_deref()
        .and_then(|p| g.member(member_id)?.metadata(p))
        .and_then(|m| consumer_protocol_version(m))
        .unwrap_or(0);
    empty_consumer_assignment(version)
}

fn validate_sync(g: &ClassicGroup, req: &SyncGroupRequest) -> Result<(), i16> {
    if g.is(GroupState::Dead) {
        return Err(code::COORDINATOR_NOT_AVAILABLE);
    }
    validate_member(
        g,
        &req.member_id,
        req.group_instance_id.as_deref(),
        "sync-group",
    )?;
    if req.generation_id != g.generation_id {
        return Err(code::ILLEGAL_GENERATION);
    }
    validate_sync_protocol(
        g,
        req.protocol_type.as_deref(),
        req.protocol_name.as_deref(),
    )
}

impl GroupCoordinator {
    /// SyncGroup. Followers park until the leader's assignment is stored;
    /// the leader's assignment is written first (`PersistGroupMetadata` with
    /// an ack) and only then propagated.
    pub fn sync_group(
        &mut self,
        token: RequestToken,
        req: SyncGroupRequest,
        now_ms: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        if invalid_group_id(&req.group_id) {
            fx.push(sync_error(token, code::INVALID_GROUP_ID));
            return fx;
        }
        if let Some(fx) = self.classic_sync_to_consumer_group(token, &req, now_ms) {
            return fx;
        }
        let gid = req.group_id.clone();
        let handled = self.with_group(&gid, now_ms, &mut fx, |g, cx| {
            if g.is(GroupState::Empty) {
                cx.fx.push(sync_error(token, code::UNKNOWN_MEMBER_ID));
                return;
            }
            if let Err(e) = validate_sync(g, &req) {
                cx.fx.push(sync_error(token, e));
                return;
            }
            match g.state {
                GroupState::PreparingRebalance => {
                    cx.fx.push(sync_error(token, code::REBALANCE_IN_PROGRESS));
                }
                GroupState::CompletingRebalance => {
                    let member_id = req.member_id.as_str();
                    // A superseded SyncGroup (client retry) is not left parked.
                    if let Some(old) = g.take_sync_waiter(member_id) {
                        cx.fx.push(sync_error(old, code::REBALANCE_IN_PROGRESS));
                    }
                    if let Some(m) = g.member_mut(member_id) {
                        m.awaiting_sync = Some(token);
                    }
                    remove_pending_sync_member(g, member_id, cx);
                    if g.is_leader(member_id) {
                        leader_sync(g, &req, cx);
                    }
                }
                GroupState::Stable => {
                    remove_pending_sync_member(g, &req.member_id, cx);
                    let assignment = g
                        .member(&req.member_id)
                        .map(|m| m.assignment.clone())
                        .unwrap_or_default();
                    cx.fx.push(Effect::Respond(
                        token,
                        Response::Sync(SyncGroupResponse {
                            error_code: code::NONE,
                            protocol_type: g.protocol_type.clone(),
                            protocol_name: g.protocol_name.clone(),
                            assignment,
                        }),
                    ));
                }
                GroupState::Empty | GroupState::Dead => {
                    cx.fx.push(sync_error(token, code::UNKNOWN_MEMBER_ID));
                }
            }
        });
        if handled.is_none() {
            fx.push(sync_error(token, code::UNKNOWN_MEMBER_ID));
        }
        fx
    }
}

/// The leader delivered the assignment: fill members it left out, then ask
/// the shell to persist before anyone is answered.
fn leader_sync(g: &mut ClassicGroup, req: &SyncGroupRequest, cx: &mut Ctx<'_>) {
    tracing::info!(
        group = %g.group_id,
        leader = %req.member_id,
        generation = g.generation_id,
        members = g.num_members(),
        "assignment received from leader"
    );
    let mut assignment: HashMap<String, Bytes> = req.assignments.iter().cloned().collect();
    let mut missing = Vec::new();
    for id in g.member_ids() {
        if !assignment.contains_key(&id) {
            let a = missing_assignment(g, &id);
            assignment.insert(id.clone(), a);
            missing.push(id);
        }
    }
    if !missing.is_empty() {
        tracing::warn!(group = %g.group_id, members = ?missing, generation = g.generation_id, "setting empty assignments for members the leader omitted");
    }
    let record = g.to_record(Some(&assignment));
    let ack = cx.persist.register(PendingPersist::SyncAssignment {
        group_id: g.group_id.clone(),
        generation: g.generation_id,
        assignment,
        leader_member_id: req.member_id.clone(),
    });
    cx.fx.push(Effect::PersistGroupMetadata {
        group_id: g.group_id.clone(),
        record,
        ack: Some(ack),
    });
}
