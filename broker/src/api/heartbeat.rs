//! Heartbeat (key 12).

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::{group_error, RequestContext};
use crate::group::core::{self, code, Response};

pub async fn handle(ctx: &RequestContext, req: HeartbeatRequest) -> HeartbeatResponse {
    let group_id = req.group_id.0.to_string();
    let manager = &ctx.broker.groups;
    if let Err(e) = manager.prepare(&group_id).await {
        return HeartbeatResponse::default().with_error_code(group_error(e));
    }
    let request = core::HeartbeatRequest {
        group_id: group_id.clone(),
        generation_id: req.generation_id,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.map(|s| s.to_string()),
    };
    let error_code = match manager
        .call(&group_id, |core, token, now| {
            core.heartbeat(token, request, now)
        })
        .await
    {
        Some(Response::Heartbeat(r)) => r.error_code,
        _ => code::NOT_COORDINATOR,
    };
    HeartbeatResponse::default().with_error_code(error_code)
}
