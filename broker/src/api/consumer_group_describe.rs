//! ConsumerGroupDescribe (key 69): a KIP-848 consumer group as its
//! coordinator holds it, per group, as Apache's `asDescribedGroup`.

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId, TopicName,
};

use super::describe_groups::GROUP_OPERATIONS;
use super::{group_error, str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::group::assignor::MemberAssignment;
use crate::group::consumer::group::ConsumerGroup;

/// A consumer-protocol member (v1's `member_type`; 0 is a classic member
/// of a consumer group, which kaas does not have yet).
const CONSUMER_MEMBER: i8 = 1;

pub async fn handle(
    ctx: &RequestContext,
    req: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let manager = &ctx.broker.groups;
    let mut out = ConsumerGroupDescribeResponse::default();
    for group in req.group_ids {
        let id = group.0.to_string();
        let ready = async {
            ctx.require(
                Operation::Describe,
                ResourceType::Group,
                &id,
                Err::GroupAuthorizationFailed,
            )?;
            manager.prepare(&id).await
        };
        if let Err(e) = ready.await {
            out.groups.push(error(group, group_error(e), None));
            continue;
        }
        let found = manager.read(|core| match core.consumer_group(&id) {
            // With the default assignor (`group.consumer.assignors`' first).
            Some(g) => Ok((g.clone(), core.consumer_assignor_names()[0])),
            None if core.group(&id).is_some() => {
                Err(format!("Group {id} is not a consumer group."))
            }
            None => Err(format!("Group {id} not found.")),
        });
        let (g, default_assignor) = match found {
            Ok(found) => found,
            Err(message) => {
                out.groups
                    .push(error(group, Err::GroupIdNotFound.code(), Some(message)));
                continue;
            }
        };
        let mut described = describe(ctx, group, &g, default_assignor);
        if req.include_authorized_operations {
            described.authorized_operations =
                ctx.authorized_operations(ResourceType::Group, &id, &GROUP_OPERATIONS);
        }
        out.groups.push(described);
    }
    out
}

fn error(group: GroupId, code: i16, message: Option<String>) -> DescribedGroup {
    DescribedGroup::default()
        .with_group_id(group)
        .with_error_code(code)
        .with_error_message(message.map(str_bytes))
}

fn describe(
    ctx: &RequestContext,
    group: GroupId,
    g: &ConsumerGroup,
    default_assignor: &str,
) -> DescribedGroup {
    let empty = MemberAssignment::new();
    DescribedGroup::default()
        .with_group_id(group)
        .with_group_state(str_bytes(g.state().as_str().to_string()))
        .with_group_epoch(g.group_epoch())
        .with_assignment_epoch(g.target_assignment_epoch())
        .with_assignor_name(str_bytes(
            g.preferred_server_assignor()
                .unwrap_or(default_assignor)
                .to_string(),
        ))
        .with_members(
            g.members()
                .values()
                .map(|m| {
                    let meta = &m.metadata;
                    Member::default()
                        .with_member_id(str_bytes(m.member_id.clone()))
                        .with_instance_id(meta.instance_id.clone().map(str_bytes))
                        .with_rack_id(meta.rack_id.clone().map(str_bytes))
                        .with_member_epoch(m.member_epoch())
                        .with_client_id(str_bytes(meta.client_id.clone()))
                        .with_client_host(str_bytes(meta.client_host.clone()))
                        .with_subscribed_topic_names(
                            meta.subscribed_topic_names
                                .iter()
                                .map(|n| TopicName(str_bytes(n.clone())))
                                .collect(),
                        )
                        .with_subscribed_topic_regex(
                            meta.subscribed_topic_regex.clone().map(str_bytes),
                        )
                        .with_assignment(assignment(ctx, &m.assignment.assigned))
                        .with_target_assignment(assignment(
                            ctx,
                            g.target_assignment().get(&m.member_id).unwrap_or(&empty),
                        ))
                        .with_member_type(CONSUMER_MEMBER)
                })
                .collect(),
        )
}

/// Partitions by topic id and name; a topic deleted since is left out, as
/// Apache does.
fn assignment(ctx: &RequestContext, partitions: &MemberAssignment) -> Assignment {
    Assignment::default().with_topic_partitions(
        partitions
            .iter()
            .filter_map(|(id, ps)| {
                let topic = ctx.broker.storage.topics.get_by_id(*id)?;
                Some(
                    TopicPartitions::default()
                        .with_topic_id(*id)
                        .with_topic_name(TopicName(str_bytes(topic.name.clone())))
                        .with_partitions(ps.iter().copied().collect()),
                )
            })
            .collect(),
    )
}
