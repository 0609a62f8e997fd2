//! OffsetDelete (key 47): drops committed offsets of chosen partitions.

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, TopicName};

use super::Err::{GroupAuthorizationFailed, TopicAuthorizationFailed};
use super::{group_error, str_bytes, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::group::core;

pub async fn handle(ctx: &RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let group_id = req.group_id.0.to_string();
    // Group DELETE, then READ of each topic (KafkaApis' order): partitions
    // of a topic the principal may not read answer TOPIC_AUTHORIZATION_FAILED.
    let (readable, unreadable): (Vec<_>, Vec<_>) = req
        .topics
        .iter()
        .map(|t| {
            (
                t.name.0.to_string(),
                t.partitions
                    .iter()
                    .map(|p| p.partition_index)
                    .collect::<Vec<_>>(),
            )
        })
        .partition(|(name, _)| ctx.authorized(Operation::Read, ResourceType::Topic, name));
    let request = core::OffsetDeleteRequest {
        group_id: group_id.clone(),
        topics: readable,
    };
    let answer = async {
        ctx.require(
            Operation::Delete,
            ResourceType::Group,
            &group_id,
            GroupAuthorizationFailed,
        )?;
        ctx.broker.groups.request(request).await
    };
    let r = match answer.await {
        Ok(mut r) => {
            r.topics
                .extend(unreadable.into_iter().map(|(name, partitions)| {
                    core::TopicResult {
                        name,
                        partitions: partitions
                            .into_iter()
                            .map(|partition| core::PartitionResult {
                                partition,
                                error_code: TopicAuthorizationFailed.code(),
                            })
                            .collect(),
                    }
                }));
            r
        }
        Err(e) => core::OffsetDeleteResponse {
            error_code: group_error(e),
            topics: Vec::new(),
        },
    };
    OffsetDeleteResponse::default()
        .with_error_code(r.error_code)
        .with_topics(
            r.topics
                .into_iter()
                .map(|t| {
                    OffsetDeleteResponseTopic::default()
                        .with_name(TopicName(str_bytes(t.name)))
                        .with_partitions(
                            t.partitions
                                .into_iter()
                                .map(|p| {
                                    OffsetDeleteResponsePartition::default()
                                        .with_partition_index(p.partition)
                                        .with_error_code(p.error_code)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
}
