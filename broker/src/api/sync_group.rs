//! SyncGroup (key 14): the leader hands out the assignment; followers park
//! until it is durable.

use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};

use super::{group_error, str_bytes, Err::GroupAuthorizationFailed, RequestContext};
use crate::auth::{Operation::Read, ResourceType::Group};
use crate::group::core;

pub async fn handle(ctx: &RequestContext, req: SyncGroupRequest) -> SyncGroupResponse {
    let v = ctx.api_version;
    let request = core::SyncGroupRequest {
        group_id: req.group_id.0.to_string(),
        generation_id: req.generation_id,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.map(|s| s.to_string()),
        protocol_type: if v >= 5 {
            req.protocol_type.map(|s| s.to_string())
        } else {
            None
        },
        protocol_name: if v >= 5 {
            req.protocol_name.map(|s| s.to_string())
        } else {
            None
        },
        assignments: req
            .assignments
            .into_iter()
            .map(|a| (a.member_id.to_string(), a.assignment))
            .collect(),
        api_version: v,
    };
    let answer = async {
        ctx.require(Read, Group, &request.group_id, GroupAuthorizationFailed)?;
        ctx.broker.groups.request(request).await
    };
    match answer.await {
        Ok(r) => encode(v, r),
        Err(e) => encode(v, core::SyncGroupResponse::error(group_error(e))),
    }
}

fn encode(v: i16, r: core::SyncGroupResponse) -> SyncGroupResponse {
    let mut out = SyncGroupResponse::default()
        .with_error_code(r.error_code)
        .with_assignment(r.assignment);
    if v >= 5 {
        out.protocol_type = r.protocol_type.map(str_bytes);
        out.protocol_name = r.protocol_name.map(str_bytes);
    }
    out
}
