//! ListGroups (key 16): the groups this broker coordinates, including those
//! that exist only as a log on the shared volume (loaded first, as Apache
//! loads its offsets partitions, so they list with their real state).

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};

use super::{str_bytes, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};

pub async fn handle(ctx: &RequestContext, req: ListGroupsRequest) -> ListGroupsResponse {
    let v = ctx.api_version;
    if !ctx.broker.tenancy.healthy() {
        // A broker whose volume does not answer coordinates nothing: this
        // is also how the controller's probe learns it (crate::volume).
        return ListGroupsResponse::default()
            .with_error_code(super::Err::CoordinatorNotAvailable.code());
    }
    let manager = &ctx.broker.groups;
    let states: Vec<String> = if v >= 4 {
        req.states_filter.iter().map(|s| s.to_string()).collect()
    } else {
        Vec::new()
    };
    let types: Vec<String> = if v >= 5 {
        req.types_filter.iter().map(|s| s.to_string()).collect()
    } else {
        Vec::new()
    };
    // Groups on disk not yet loaded can only be Empty or carry a completed
    // rebalance; a filter that asks for neither Empty nor Stable needs no
    // loading (the controller's probe asks for active states only, so it
    // does not keep idle groups in memory).
    let wants = |s: &str| states.is_empty() || states.iter().any(|x| x.eq_ignore_ascii_case(s));
    if wants("Empty") {
        for g in manager.owned_groups_on_disk().await {
            let _ = manager.prepare(&g).await;
        }
    }
    let listed = manager.read(|core| core.list_groups(&states, &types));
    // Every group with Cluster DESCRIBE, else those the principal may
    // describe.
    let all = ctx.authorized(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME);
    ListGroupsResponse::default().with_groups(
        listed
            .into_iter()
            .filter(|g| manager.check_owner(&g.group_id).is_ok())
            .filter(|g| {
                all || ctx.authorized(Operation::Describe, ResourceType::Group, &g.group_id)
            })
            .map(|g| {
                let mut l = ListedGroup::default()
                    .with_group_id(GroupId(str_bytes(g.group_id)))
                    .with_protocol_type(str_bytes(g.protocol_type));
                if v >= 4 {
                    l.group_state = str_bytes(g.group_state);
                }
                if v >= 5 {
                    l.group_type = str_bytes(g.group_type);
                }
                l
            })
            .collect(),
    )
}
