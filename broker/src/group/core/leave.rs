//! LeaveGroup (Apache `classicGroupLeave`), every request shape.

use super::api::invalid_group_id;
use super::rebalance::{
    cancel_heartbeat, drop_member, maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join, validate_member,
};
use super::{
    ClassicGroup, Ctx, Effect, GroupCoordinator, GroupState, LeaveGroupRequest, LeaveGroupResponse,
    LeaveMemberResponse, RequestToken, Response,
};
use crate::coordinator::errors::code;

/// v0–v2 responses have no member list: Apache's `LeaveGroupResponse` folds
/// the first member error into the top-level code.
pub(super) fn shape(api_version: i16, mut resp: LeaveGroupResponse) -> LeaveGroupResponse {
    if api_version <= 2 {
        if resp.error_code == code::NONE {
            resp.error_code = resp
                .members
                .iter()
                .map(|m| m.error_code)
                .find(|e| *e != code::NONE)
                .unwrap_or(code::NONE);
        }
        resp.members.clear();
    }
    resp
}

/// Apache `removeCurrentMemberFromClassicGroup`.
fn remove_current_member(g: &mut ClassicGroup, member_id: &str, reason: &str, cx: &mut Ctx<'_>) {
    cancel_heartbeat(g, member_id, cx);
    tracing::info!(group = %g.group_id, member_id, reason, "member has left group through explicit LeaveGroup request");
    // A parked JoinGroup of the leaving member is told to retry.
    drop_member(g, member_id, cx);
}

impl GroupCoordinator {
    pub fn leave_group(
        &mut self,
        token: RequestToken,
        req: LeaveGroupRequest,
        now_ms: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let v = req.api_version;
        let respond = |fx: &mut Vec<Effect>, r: LeaveGroupResponse| {
            fx.push(Effect::Respond(token, Response::Leave(shape(v, r))));
        };
        if invalid_group_id(&req.group_id) {
            respond(
                &mut fx,
                LeaveGroupResponse {
                    error_code: code::INVALID_GROUP_ID,
                    members: Vec::new(),
                },
            );
            return fx;
        }
        if let Some(fx) = self.classic_leave_to_consumer_group(token, &req) {
            return fx;
        }
        let gid = req.group_id.clone();
        let result = self.with_group(&gid, now_ms, &mut fx, |g, cx| {
            if g.is(GroupState::Dead) {
                return LeaveGroupResponse {
                    error_code: code::COORDINATOR_NOT_AVAILABLE,
                    members: Vec::new(),
                };
            }
            let mut members = Vec::with_capacity(req.members.len());
            for m in &req.members {
                let reason = m.reason.as_deref().unwrap_or("not provided");
                let error = if m.member_id.is_empty() {
                    // Admin removal by instance id (KIP-345).
                    match m
                        .group_instance_id
                        .as_deref()
                        .and_then(|iid| g.static_member_id(iid))
                        .map(str::to_string)
                    {
                        Some(id) => {
                            remove_current_member(g, &id, reason, cx);
                            code::NONE
                        }
                        None => code::UNKNOWN_MEMBER_ID,
                    }
                } else if g.is_pending_member(&m.member_id) {
                    g.remove(&m.member_id);
                    cancel_heartbeat(g, &m.member_id, cx);
                    tracing::info!(group = %g.group_id, member_id = %m.member_id, reason, "pending member has left group through explicit LeaveGroup request");
                    code::NONE
                } else {
                    match validate_member(g, &m.member_id, m.group_instance_id.as_deref(), "leave-group") {
                        Ok(()) => {
                            remove_current_member(g, &m.member_id, reason, cx);
                            code::NONE
                        }
                        Err(e) => e,
                    }
                };
                members.push(LeaveMemberResponse {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    error_code: error,
                });
            }
            let left: Vec<&str> = members
                .iter()
                .filter(|r| r.error_code == code::NONE)
                .map(|r| r.member_id.as_str())
                .collect();
            if !left.is_empty() {
                let reason = format!("explicit `LeaveGroup` request for ({}) members.", left.join(", "));
                match g.state {
                    GroupState::Stable | GroupState::CompletingRebalance => {
                        maybe_prepare_rebalance_or_complete_join(g, &reason, cx)
                    }
                    GroupState::PreparingRebalance => maybe_complete_join_phase(g, cx),
                    GroupState::Empty | GroupState::Dead => {}
                }
            }
            LeaveGroupResponse {
                error_code: code::NONE,
                members,
            }
        });
        let resp = result.unwrap_or_else(|| LeaveGroupResponse {
            // Unknown group: every member is unknown (GroupCoordinatorService).
            error_code: code::NONE,
            members: req
                .members
                .iter()
                .map(|m| LeaveMemberResponse {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    error_code: code::UNKNOWN_MEMBER_ID,
                })
                .collect(),
        });
        respond(&mut fx, resp);
        fx
    }
}
