//! OffsetCommit (key 8): validated by the coordinator, acknowledged only
//! once fsynced.

use kafka_protocol::messages::offset_commit_request::OffsetCommitRequestTopic;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, TopicName};

use super::{group_error, str_bytes, RequestContext};
use crate::group::core::{self, OffsetCommitPartition, OffsetCommitTopic};

pub async fn handle(ctx: &RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse {
    let v = ctx.api_version;
    let group_id = req.group_id.0.to_string();
    let topics: Vec<OffsetCommitTopic> = req
        .topics
        .iter()
        .map(|t| OffsetCommitTopic {
            name: t.name.0.to_string(),
            partitions: t
                .partitions
                .iter()
                .map(|p| OffsetCommitPartition {
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if v >= 6 { p.committed_leader_epoch } else { -1 },
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                })
                .collect(),
        })
        .collect();
    let request = core::OffsetCommitRequest {
        group_id,
        generation_id: req.generation_id_or_member_epoch,
        member_id: req.member_id.to_string(),
        group_instance_id: if v >= 7 {
            req.group_instance_id.map(|s| s.to_string())
        } else {
            None
        },
        retention_time_ms: if v <= 4 { req.retention_time_ms } else { -1 },
        topics,
        api_version: v,
    };
    match ctx.broker.groups.request(request).await {
        Ok(r) => encode(r),
        Err(e) => refuse(&req.topics, group_error(e)),
    }
}

/// Every partition of the request answered `error_code`.
fn refuse(topics: &[OffsetCommitRequestTopic], error_code: i16) -> OffsetCommitResponse {
    OffsetCommitResponse::default().with_topics(
        topics
            .iter()
            .map(|t| {
                OffsetCommitResponseTopic::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(error_code)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

fn encode(r: core::OffsetCommitResponse) -> OffsetCommitResponse {
    OffsetCommitResponse::default().with_topics(
        r.topics
            .into_iter()
            .map(|t| {
                OffsetCommitResponseTopic::default()
                    .with_name(TopicName(str_bytes(t.name)))
                    .with_partitions(
                        t.partitions
                            .into_iter()
                            .map(|p| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition)
                                    .with_error_code(p.error_code)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}
