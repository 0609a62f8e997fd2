//! OffsetDelete (key 47): drops committed offsets of chosen partitions.

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, TopicName};

use super::{group_error, str_bytes, RequestContext};
use crate::group::core::{self, code, Response};

pub async fn handle(ctx: &RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let group_id = req.group_id.0.to_string();
    let manager = &ctx.broker.groups;
    if let Err(e) = manager.prepare(&group_id).await {
        return OffsetDeleteResponse::default().with_error_code(group_error(e));
    }
    let request = core::OffsetDeleteRequest {
        group_id: group_id.clone(),
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
    let r = match manager
        .call(&group_id, |core, token, now| {
            core.offset_delete(token, request, now)
        })
        .await
    {
        Some(Response::OffsetDelete(r)) => r,
        _ => core::OffsetDeleteResponse {
            error_code: code::NOT_COORDINATOR,
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
