//! OffsetCommit (key 8): validated by the coordinator, acknowledged only
//! once fsynced.

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, TopicName};

use super::{group_error, str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::group::core::{
    self, OffsetCommitPartition, OffsetCommitTopic, PartitionResult, TopicResult,
};

pub async fn handle(ctx: &RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse {
    let v = ctx.api_version;
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
    let group = req.group_id.0.as_str();
    let denied = (!ctx.authorized(Operation::Read, ResourceType::Group, group))
        .then_some(Err::GroupAuthorizationFailed);
    let answer = commit_known(ctx, topics, denied, |topics| {
        ctx.broker.groups.request(core::OffsetCommitRequest {
            group_id: req.group_id.0.to_string(),
            generation_id: req.generation_id_or_member_epoch,
            member_id: req.member_id.to_string(),
            group_instance_id: if v >= 7 {
                req.group_instance_id.as_ref().map(|s| s.to_string())
            } else {
                None
            },
            retention_time_ms: if v <= 4 { req.retention_time_ms } else { -1 },
            topics,
            api_version: v,
        })
    })
    .await;
    encode(answer)
}

/// Apache's KafkaApis answers itself, before the coordinator: every
/// partition `denied` when the request's group (or transactional id) check
/// failed; else the partitions of a topic the principal may not read
/// TOPIC_AUTHORIZATION_FAILED, of a topic that does not exist (or a
/// partition it does not have) UNKNOWN_TOPIC_OR_PARTITION, and hands the
/// coordinator only the rest (none: it is not asked at all). Shared by
/// OffsetCommit and TxnOffsetCommit.
pub(super) async fn commit_known<F>(
    ctx: &RequestContext,
    topics: Vec<OffsetCommitTopic>,
    denied: Option<Err>,
    coordinator: impl FnOnce(Vec<OffsetCommitTopic>) -> F,
) -> core::OffsetCommitResponse
where
    F: std::future::Future<
        Output = Result<core::OffsetCommitResponse, crate::coordinator::runtime::NotServed>,
    >,
{
    if let Some(denied) = denied {
        return core::OffsetCommitResponse::all(&topics, denied.code());
    }
    let mut known = Vec::with_capacity(topics.len());
    let mut unknown = Vec::new();
    for mut topic in topics {
        let (partitions, code) =
            if ctx.authorized(Operation::Read, ResourceType::Topic, &topic.name) {
                let partitions = ctx
                    .broker
                    .storage
                    .topics
                    .get(&topic.name)
                    .map_or(0, |meta| meta.partitions);
                (partitions, Err::UnknownTopicOrPartition.code())
            } else {
                (0, Err::TopicAuthorizationFailed.code())
            };
        let missing: Vec<PartitionResult> = topic
            .partitions
            .iter()
            .filter(|p| !(0..partitions).contains(&p.partition))
            .map(|p| PartitionResult {
                partition: p.partition,
                error_code: code,
            })
            .collect();
        if !missing.is_empty() {
            topic
                .partitions
                .retain(|p| (0..partitions).contains(&p.partition));
            unknown.push(TopicResult {
                name: topic.name.clone(),
                partitions: missing,
            });
        }
        if !topic.partitions.is_empty() {
            known.push(topic);
        }
    }
    let mut answer = if known.is_empty() {
        core::OffsetCommitResponse { topics: Vec::new() }
    } else {
        // The request moves into the coordinator; a refusal answers its shape.
        let mut refused = core::OffsetCommitResponse::all(&known, 0);
        match coordinator(known).await {
            Ok(r) => r,
            Err(e) => {
                let code = group_error(e);
                for p in refused.topics.iter_mut().flat_map(|t| &mut t.partitions) {
                    p.error_code = code;
                }
                refused
            }
        }
    };
    for topic in unknown {
        match answer.topics.iter_mut().find(|t| t.name == topic.name) {
            Some(t) => t.partitions.extend(topic.partitions),
            None => answer.topics.push(topic),
        }
    }
    answer
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
