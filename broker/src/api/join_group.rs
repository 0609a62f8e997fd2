//! JoinGroup (key 11): parks until the rebalance round completes.

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use tracing::info;

use super::consumer_group_heartbeat::TopicsNow;
use super::{client_host, group_error, str_bytes, Err::GroupAuthorizationFailed, RequestContext};
use crate::auth::{Operation::Read, ResourceType::Group};
use crate::group::core::{self, Protocol};
use crate::group::manager::Join;

pub async fn handle(ctx: &RequestContext, req: JoinGroupRequest) -> JoinGroupResponse {
    let v = ctx.api_version;
    let group_id = req.group_id.0.to_string();
    let member_id = req.member_id.to_string();
    if let Some(reason) = &req.reason {
        info!(group = %group_id, member = %member_id, reason = %reason, "member (re)joins");
    }
    let request = core::JoinGroupRequest {
        group_id,
        session_timeout_ms: req.session_timeout_ms,
        rebalance_timeout_ms: if v >= 1 {
            req.rebalance_timeout_ms
        } else {
            req.session_timeout_ms
        },
        member_id: member_id.clone(),
        group_instance_id: req.group_instance_id.map(|s| s.to_string()),
        protocol_type: req.protocol_type.to_string(),
        protocols: req
            .protocols
            .into_iter()
            .map(|p| Protocol::new(p.name.to_string(), p.metadata))
            .collect(),
        reason: req.reason.map(|s| s.to_string()),
        api_version: v,
        client_id: ctx.client_id.clone(),
        client_host: client_host(ctx),
    };
    let answer = async {
        ctx.require(Read, Group, &request.group_id, GroupAuthorizationFailed)?;
        let topics = TopicsNow::read(ctx);
        ctx.broker
            .groups
            .request(Join {
                request,
                topics: Box::new(topics),
            })
            .await
    };
    match answer.await {
        Ok(r) => encode(v, r),
        Err(e) => encode(v, core::JoinGroupResponse::error(member_id, group_error(e))),
    }
}

fn encode(v: i16, r: core::JoinGroupResponse) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_error_code(r.error_code)
        .with_generation_id(r.generation_id)
        .with_protocol_type(if v >= 7 {
            r.protocol_type.map(str_bytes)
        } else {
            None
        })
        // Nullable only from v7; older versions carry an empty string.
        .with_protocol_name(match (v >= 7, r.protocol_name) {
            (true, p) => p.map(str_bytes),
            (false, p) => Some(str_bytes(p.unwrap_or_default())),
        })
        .with_leader(str_bytes(r.leader))
        .with_skip_assignment(v >= 9 && r.skip_assignment)
        .with_member_id(str_bytes(r.member_id))
        .with_members(
            r.members
                .into_iter()
                .map(|m| {
                    JoinGroupResponseMember::default()
                        .with_member_id(str_bytes(m.member_id))
                        .with_group_instance_id(if v >= 5 {
                            m.group_instance_id.map(str_bytes)
                        } else {
                            None
                        })
                        .with_metadata(m.metadata)
                })
                .collect(),
        )
}
