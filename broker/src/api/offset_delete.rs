//! OffsetDelete (key 47): drops committed offsets of chosen partitions.

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, TopicName};

use super::{group_error, str_bytes, RequestContext};
use crate::group::core;

pub async fn handle(ctx: &RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let request = core::OffsetDeleteRequest {
        group_id: req.group_id.0.to_string(),
        topics: req
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.0.to_string(),
                    t.partitions.iter().map(|p| p.partition_index).collect(),
                )
            })
            .collect(),
    };
    let r = match ctx.broker.groups.request(request).await {
        Ok(r) => r,
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
