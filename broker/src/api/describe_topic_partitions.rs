//! DescribeTopicPartitions (key 75, KIP-966): the topics' partitions a page
//! at a time, as Apache's `DescribeTopicPartitionsRequestHandler` and
//! `KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse` answer:
//! topics from the cursor's on, in name order; Topic DESCRIBE (a named
//! topic without it TOPIC_AUTHORIZATION_FAILED and no id, one left out of a
//! listing of all); at most `response_partition_limit` partitions (capped
//! at 2,000, Apache's `max.request.partition.size.limit`), with a cursor
//! to the next; each partition's leader as Metadata names it, its only
//! replica, no eligible leader replicas.

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};

use super::metadata::{leader_on_listener, replica_nodes, TOPIC_OPERATIONS};
use super::{str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::storage::topics::validate_topic_name;

/// Apache's `max.request.partition.size.limit`.
const MAX_PARTITIONS_PER_RESPONSE: i32 = 2_000;

pub fn handle(
    ctx: &RequestContext,
    req: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let all = req.topics.is_empty();
    let cursor = req
        .cursor
        .as_ref()
        .map(|c| (c.topic_name.to_string(), c.partition_index));
    let from = cursor.as_ref().map_or("", |(t, _)| t.as_str());
    let known = ctx.broker.storage.topics.by_name();
    let mut names: Vec<String> = if all {
        known
            .keys()
            .filter(|t| t.as_str() >= from)
            .cloned()
            .collect()
    } else {
        req.topics
            .iter()
            .map(|t| t.name.to_string())
            .filter(|t| t.as_str() >= from)
            .collect()
    };
    names.sort();
    names.dedup();
    let invalid = match &cursor {
        Some((topic, _)) if !all && !names.contains(topic) => Some(format!(
            "DescribeTopicPartitionsRequest topic list should contain the cursor topic: {topic}"
        )),
        Some((topic, index)) if *index < 0 => Some(format!(
            "DescribeTopicPartitionsRequest cursor partition must be valid: Cursor(topicName={topic}, partitionIndex={index})"
        )),
        _ => None,
    };
    if invalid.is_some() {
        // Apache answers the whole request with the error on each topic.
        let topics = req
            .topics
            .into_iter()
            .map(|t| {
                DescribeTopicPartitionsResponseTopic::default()
                    .with_name(Some(t.name))
                    .with_error_code(Err::InvalidRequest.code())
            })
            .collect();
        return DescribeTopicPartitionsResponse::default().with_topics(topics);
    }
    let mut unauthorized = Vec::new();
    let authorized: Vec<String> = names
        .into_iter()
        .filter(|t| {
            let ok = ctx.authorized(Operation::Describe, ResourceType::Topic, t);
            if !ok && !all {
                unauthorized.push(
                    DescribeTopicPartitionsResponseTopic::default()
                        .with_name(Some(TopicName(str_bytes(t.clone()))))
                        .with_error_code(Err::TopicAuthorizationFailed.code()),
                );
            }
            ok
        })
        .collect();
    let routing = ctx.broker.routing();
    let listener = ctx.listener.name();
    let mut remaining = req
        .response_partition_limit
        .clamp(1, MAX_PARTITIONS_PER_RESPONSE);
    let mut resp = DescribeTopicPartitionsResponse::default();
    for name in authorized {
        if remaining == 0 {
            // The next page starts at this topic.
            resp.next_cursor = Some(
                Cursor::default()
                    .with_topic_name(TopicName(str_bytes(name)))
                    .with_partition_index(0),
            );
            break;
        }
        let topic = DescribeTopicPartitionsResponseTopic::default()
            .with_name(Some(TopicName(str_bytes(name.clone()))))
            .with_topic_authorized_operations(ctx.authorized_operations(
                ResourceType::Topic,
                &name,
                &TOPIC_OPERATIONS,
            ));
        let Some(meta) = known.get(&name) else {
            if !all {
                let code = match validate_topic_name(&name) {
                    Ok(()) => Err::UnknownTopicOrPartition,
                    Err(_) => Err::InvalidTopicException,
                };
                resp.topics.push(topic.with_error_code(code.code()));
            }
            continue;
        };
        let start = match &cursor {
            Some((t, index)) if *t == name => *index,
            _ => 0,
        };
        let end = meta.partitions.min(start.saturating_add(remaining));
        let partitions: Vec<_> = (start..end)
            .map(|p| {
                let leader = routing
                    .as_deref()
                    .and_then(|r| leader_on_listener(r, &name, p, listener).ok());
                let (replicas, in_sync) = replica_nodes(meta, p, leader, routing.as_deref());
                DescribeTopicPartitionsResponsePartition::default()
                    .with_partition_index(p)
                    .with_leader_id(BrokerId(leader.unwrap_or(-1)))
                    .with_leader_epoch(routing.as_deref().map_or(-1, |r| r.leader_epoch()))
                    .with_replica_nodes(replicas)
                    .with_isr_nodes(in_sync)
                    .with_eligible_leader_replicas(Some(Vec::new()))
                    .with_last_known_elr(Some(Vec::new()))
            })
            .collect();
        remaining -= partitions.len() as i32;
        resp.topics
            .push(topic.with_topic_id(meta.id).with_partitions(partitions));
        if end < meta.partitions {
            resp.next_cursor = Some(
                Cursor::default()
                    .with_topic_name(TopicName(str_bytes(name)))
                    .with_partition_index(end),
            );
            break;
        }
    }
    resp.topics.extend(unauthorized);
    resp
}
