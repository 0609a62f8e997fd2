//! LeaveGroup (key 13): the single-member shape (v0–v2) and the batch of
//! members (v3+, also used by admin clients to remove static members).

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

use super::{group_error, str_bytes, Err::GroupAuthorizationFailed, RequestContext};
use crate::auth::{Operation::Read, ResourceType::Group};
use crate::group::core::{self, LeaveMember};

pub async fn handle(ctx: &RequestContext, req: LeaveGroupRequest) -> LeaveGroupResponse {
    let v = ctx.api_version;
    let group_id = req.group_id.0.to_string();
    let members = if v >= 3 {
        req.members
            .into_iter()
            .map(|m| LeaveMember {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.map(|s| s.to_string()),
                reason: if v >= 5 {
                    m.reason.map(|s| s.to_string())
                } else {
                    None
                },
            })
            .collect()
    } else {
        vec![LeaveMember {
            member_id: req.member_id.to_string(),
            group_instance_id: None,
            reason: None,
        }]
    };
    let request = core::LeaveGroupRequest {
        group_id,
        members,
        api_version: v,
    };
    let answer = async {
        ctx.require(Read, Group, &request.group_id, GroupAuthorizationFailed)?;
        ctx.broker.groups.request(request).await
    };
    let r = match answer.await {
        Ok(r) => r,
        Err(e) => core::LeaveGroupResponse {
            error_code: group_error(e),
            members: Vec::new(),
        },
    };
    let mut out = LeaveGroupResponse::default().with_error_code(r.error_code);
    if v >= 3 {
        out.members = r
            .members
            .into_iter()
            .map(|m| {
                MemberResponse::default()
                    .with_member_id(str_bytes(m.member_id))
                    .with_group_instance_id(m.group_instance_id.map(str_bytes))
                    .with_error_code(m.error_code)
            })
            .collect();
    }
    out
}
