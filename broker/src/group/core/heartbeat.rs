//! Heartbeat (Apache `classicGroupHeartbeat`).

use super::api::{heartbeat, invalid_group_id};
use super::rebalance::{reschedule_member_heartbeat, validate_member};
use super::{Effect, GroupCoordinator, GroupState, HeartbeatRequest, RequestToken};
use crate::coordinator::errors::code;

impl GroupCoordinator {
    /// Heartbeat. Order of checks as Apache: group id, unknown group
    /// (UNKNOWN_MEMBER_ID), Dead (COORDINATOR_NOT_AVAILABLE), instance fencing
    /// and member, generation, then the state.
    pub fn heartbeat(
        &mut self,
        token: RequestToken,
        req: HeartbeatRequest,
        now_ms: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        if invalid_group_id(&req.group_id) {
            fx.push(heartbeat(token, code::INVALID_GROUP_ID));
            return fx;
        }
        if let Some(fx) = self.classic_heartbeat_to_consumer_group(token, &req, now_ms) {
            return fx;
        }
        let gid = req.group_id.clone();
        let handled = self.with_group(&gid, now_ms, &mut fx, |g, cx| {
            if g.is(GroupState::Dead) {
                cx.fx
                    .push(heartbeat(token, code::COORDINATOR_NOT_AVAILABLE));
                return;
            }
            if let Err(e) = validate_member(
                g,
                &req.member_id,
                req.group_instance_id.as_deref(),
                "heartbeat",
            ) {
                cx.fx.push(heartbeat(token, e));
                return;
            }
            if req.generation_id != g.generation_id {
                cx.fx.push(heartbeat(token, code::ILLEGAL_GENERATION));
                return;
            }
            match g.state {
                GroupState::Empty | GroupState::Dead => {
                    cx.fx.push(heartbeat(token, code::UNKNOWN_MEMBER_ID));
                }
                GroupState::PreparingRebalance => {
                    // The session stays alive while the member is told to rejoin.
                    reschedule_member_heartbeat(g, &req.member_id, cx);
                    cx.fx.push(heartbeat(token, code::REBALANCE_IN_PROGRESS));
                }
                GroupState::CompletingRebalance | GroupState::Stable => {
                    // Members may heartbeat between JoinGroup and SyncGroup.
                    reschedule_member_heartbeat(g, &req.member_id, cx);
                    cx.fx.push(heartbeat(token, code::NONE));
                }
            }
        });
        if handled.is_none() {
            fx.push(heartbeat(token, code::UNKNOWN_MEMBER_ID));
        }
        fx
    }
}
