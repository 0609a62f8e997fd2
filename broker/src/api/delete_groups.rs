//! DeleteGroups (key 42): Empty groups only; removes their log.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, GroupId};

use super::{group_error, str_bytes, Err::GroupAuthorizationFailed, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::group::core::{code, Response};

pub async fn handle(ctx: &RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let manager = &ctx.broker.groups;
    let mut errors: Vec<(String, i16)> = Vec::new();
    let mut owned = Vec::new();
    for g in &req.groups_names {
        let id = g.0.to_string();
        let ready = async {
            ctx.require(
                Operation::Delete,
                ResourceType::Group,
                &id,
                GroupAuthorizationFailed,
            )?;
            manager.prepare(&id).await
        };
        match ready.await {
            Ok(()) => owned.push(id),
            Err(e) => errors.push((id, group_error(e))),
        }
    }
    let mut results: Vec<(String, i16)> = Vec::new();
    if !owned.is_empty() {
        let key = owned[0].clone();
        let ids = owned.clone();
        match manager
            .call(&key, |core, token, now| core.delete_groups(token, ids, now))
            .await
        {
            Some(Response::DeleteGroups(r)) => {
                results.extend(r.results.into_iter().map(|x| (x.group_id, x.error_code)))
            }
            _ => results.extend(owned.into_iter().map(|g| (g, code::NOT_COORDINATOR))),
        }
    }
    results.extend(errors);
    // Answer in request order.
    let out = req
        .groups_names
        .iter()
        .map(|g| {
            let id = g.0.to_string();
            let error_code = results
                .iter()
                .find(|(r, _)| *r == id)
                .map_or(code::GROUP_ID_NOT_FOUND, |(_, c)| *c);
            DeletableGroupResult::default()
                .with_group_id(GroupId(str_bytes(id)))
                .with_error_code(error_code)
        })
        .collect();
    DeleteGroupsResponse::default().with_results(out)
}
