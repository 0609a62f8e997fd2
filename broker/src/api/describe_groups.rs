//! DescribeGroups (key 15): per group, only from its coordinator.

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, GroupId};

use super::{group_error, str_bytes, Err::GroupAuthorizationFailed, RequestContext};
use crate::auth::{Operation, ResourceType};

/// The operations a group supports (Apache's `authorizedOperations` of a
/// GROUP resource).
pub(crate) const GROUP_OPERATIONS: [Operation; 3] =
    [Operation::Read, Operation::Describe, Operation::Delete];

pub async fn handle(ctx: &RequestContext, req: DescribeGroupsRequest) -> DescribeGroupsResponse {
    let v = ctx.api_version;
    let manager = &ctx.broker.groups;
    let mut out = DescribeGroupsResponse::default();
    for group in req.groups {
        let id = group.0.to_string();
        let ready = async {
            ctx.require(
                Operation::Describe,
                ResourceType::Group,
                &id,
                GroupAuthorizationFailed,
            )?;
            manager.prepare(&id).await
        };
        if let Err(e) = ready.await {
            out.groups.push(
                DescribedGroup::default()
                    .with_group_id(group)
                    .with_error_code(group_error(e))
                    .with_group_state(str_bytes(String::new())),
            );
            continue;
        }
        let described = manager.read(|core| core.describe_groups(std::slice::from_ref(&id), v));
        for d in described {
            let mut g = DescribedGroup::default()
                .with_group_id(GroupId(str_bytes(d.group_id)))
                .with_error_code(d.error_code)
                .with_error_message(d.error_message.map(str_bytes))
                .with_group_state(str_bytes(d.group_state))
                .with_protocol_type(str_bytes(d.protocol_type))
                .with_protocol_data(str_bytes(d.protocol_data))
                .with_members(
                    d.members
                        .into_iter()
                        .map(|m| {
                            DescribedGroupMember::default()
                                .with_member_id(str_bytes(m.member_id))
                                .with_group_instance_id(if v >= 4 {
                                    m.group_instance_id.map(str_bytes)
                                } else {
                                    None
                                })
                                .with_client_id(str_bytes(m.client_id))
                                .with_client_host(str_bytes(m.client_host))
                                .with_member_metadata(m.member_metadata)
                                .with_member_assignment(m.member_assignment)
                        })
                        .collect(),
                );
            if v >= 3 && req.include_authorized_operations {
                g.authorized_operations =
                    ctx.authorized_operations(ResourceType::Group, &id, &GROUP_OPERATIONS);
            }
            out.groups.push(g);
        }
    }
    out
}
