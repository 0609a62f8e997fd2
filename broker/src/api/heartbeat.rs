//! Heartbeat (key 12).

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::{group_error, Err::GroupAuthorizationFailed, RequestContext};
use crate::auth::{Operation::Read, ResourceType::Group};
use crate::group::core;

pub async fn handle(ctx: &RequestContext, req: HeartbeatRequest) -> HeartbeatResponse {
    let request = core::HeartbeatRequest {
        group_id: req.group_id.0.to_string(),
        generation_id: req.generation_id,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.map(|s| s.to_string()),
    };
    let answer = async {
        ctx.require(Read, Group, &request.group_id, GroupAuthorizationFailed)?;
        ctx.broker.groups.request(request).await
    };
    let error_code = match answer.await {
        Ok(r) => r.error_code,
        Err(e) => group_error(e),
    };
    HeartbeatResponse::default().with_error_code(error_code)
}
