//! OffsetFetch (key 9): one group (v1–v7) or many (v8+), each resolved on
//! its own: a group owned elsewhere answers NOT_COORDINATOR.

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};

use super::Err::{GroupAuthorizationFailed, TopicAuthorizationFailed};
use super::{group_error, str_bytes, RequestContext};
use crate::auth::{Operation::Describe, ResourceType::Group, ResourceType::Topic};
use crate::group::core::{self, OffsetFetchTopic};

pub async fn handle(ctx: &RequestContext, req: OffsetFetchRequest) -> OffsetFetchResponse {
    let v = ctx.api_version;
    if v >= 8 {
        let mut out = OffsetFetchResponse::default();
        for g in &req.groups {
            let topics = g.topics.as_ref().map(|ts| {
                ts.iter()
                    .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
                    .collect()
            });
            let member = (g.member_id.as_ref().map(|m| m.to_string()), g.member_epoch);
            let r = fetch(
                ctx,
                g.group_id.0.to_string(),
                topics,
                req.require_stable,
                member,
            )
            .await;
            out.groups.push(
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_error_code(r.error_code)
                    .with_topics(r.topics.into_iter().map(topics_v8).collect()),
            );
        }
        return out;
    }
    let topics = req.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect()
    });
    let r = fetch(
        ctx,
        req.group_id.0.to_string(),
        topics,
        v >= 7 && req.require_stable,
        (None, -1),
    )
    .await;
    let mut out = OffsetFetchResponse::default().with_topics(
        r.topics
            .into_iter()
            .map(|t| {
                OffsetFetchResponseTopic::default()
                    .with_name(TopicName(str_bytes(t.name)))
                    .with_partitions(
                        t.partitions
                            .into_iter()
                            .map(|p| {
                                OffsetFetchResponsePartition::default()
                                    .with_partition_index(p.partition)
                                    .with_committed_offset(p.offset)
                                    .with_committed_leader_epoch(if v >= 5 {
                                        p.leader_epoch
                                    } else {
                                        -1
                                    })
                                    .with_metadata(Some(str_bytes(p.metadata)))
                                    .with_error_code(p.error_code)
                            })
                            .collect(),
                    )
            })
            .collect(),
    );
    if v >= 2 {
        out.error_code = r.error_code;
    } else if r.error_code != 0 {
        // v1 has no top-level error: Apache repeats it on every partition.
        for t in &mut out.topics {
            for p in &mut t.partitions {
                p.error_code = r.error_code;
            }
        }
    }
    out
}

async fn fetch(
    ctx: &RequestContext,
    group_id: String,
    topics: Option<Vec<(String, Vec<i32>)>>,
    require_stable: bool,
    (member_id, member_epoch): (Option<String>, i32),
) -> core::OffsetFetchResponse {
    let manager = &ctx.broker.groups;
    let ready = async {
        ctx.require(Describe, Group, &group_id, GroupAuthorizationFailed)?;
        manager.prepare_read(&group_id).await
    };
    if let Err(e) = ready.await {
        return core::OffsetFetchResponse {
            error_code: group_error(e),
            topics: Vec::new(),
        };
    }
    // Offsets of topics the principal may not describe are not shown:
    // asked for, TOPIC_AUTHORIZATION_FAILED; in a fetch of all, left out.
    let describable = |topic: &str| ctx.authorized(Describe, Topic, topic);
    let (topics, hidden) = match topics {
        Some(topics) => {
            let (shown, hidden) = topics.into_iter().partition(|(t, _)| describable(t));
            (Some(shown), hidden)
        }
        None => (None, Vec::new()),
    };
    let request = core::OffsetFetchRequest {
        group_id,
        topics,
        require_stable,
        member_id,
        member_epoch,
    };
    let mut answer = manager.read(|core| core.offset_fetch(&request));
    if answer.error_code == 0 {
        answer.topics.retain(|t| describable(&t.name));
        answer
            .topics
            .extend(hidden.into_iter().map(|(name, partitions)| {
                OffsetFetchTopic {
                    name,
                    partitions: partitions
                        .into_iter()
                        .map(|partition| core::OffsetFetchPartition {
                            partition,
                            offset: -1,
                            leader_epoch: -1,
                            metadata: String::new(),
                            error_code: TopicAuthorizationFailed.code(),
                        })
                        .collect(),
                }
            }));
    }
    answer
}

fn topics_v8(t: OffsetFetchTopic) -> OffsetFetchResponseTopics {
    OffsetFetchResponseTopics::default()
        .with_name(TopicName(str_bytes(t.name)))
        .with_partitions(
            t.partitions
                .into_iter()
                .map(|p| {
                    OffsetFetchResponsePartitions::default()
                        .with_partition_index(p.partition)
                        .with_committed_offset(p.offset)
                        .with_committed_leader_epoch(p.leader_epoch)
                        .with_metadata(Some(str_bytes(p.metadata)))
                        .with_error_code(p.error_code)
                })
                .collect(),
        )
}
