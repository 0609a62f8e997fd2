//! CreatePartitions (key 37): more partitions for a topic, as Apache's
//! `ControllerApis.createPartitions` and `ReplicationControlManager`
//! check it: each topic once, Topic ALTER, the topic known, a count above
//! the current one, as many assignments as new partitions when any are
//! given, each checked as CreateTopics checks them (`api::replicas`: the
//! topic's replication factor, brokers the cluster has, one alive). The
//! new count and assignments are written to the topic on the shared
//! volume; a new partition without an assignment is led where the
//! controller's hash puts it, and the existing ones stay where they are.

use std::collections::HashMap;

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use tracing::debug;

use super::{replicas, str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::client_quotas::enforce::MutationQuota;
use crate::storage::topics::{TopicError, MAX_PARTITIONS};

pub async fn handle(
    ctx: &RequestContext,
    req: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut times: HashMap<String, usize> = HashMap::new();
    for t in &req.topics {
        *times.entry(t.name.to_string()).or_default() += 1;
    }
    let mut results = Vec::with_capacity(req.topics.len());
    let mut answered_duplicates = Vec::new();
    let mut quota = ctx.mutation_quota(3);
    for topic in req.topics {
        let name = topic.name.to_string();
        let outcome = if times[&name] > 1 {
            if answered_duplicates.contains(&name) {
                continue;
            }
            answered_duplicates.push(name.clone());
            Err((
                Err::InvalidRequest,
                Some("Duplicate topic name.".to_string()),
            ))
        } else if !ctx.authorized(Operation::Alter, ResourceType::Topic, &name) {
            Err((Err::TopicAuthorizationFailed, None))
        } else if let Err(throttle_ms) = record_mutation(ctx, &mut quota, &name, &topic) {
            debug!(topic = %name, throttle_ms, "new partitions over the controller mutation quota");
            let e = Err::ThrottlingQuotaExceeded;
            Err((e, Some(e.to_string())))
        } else {
            add_partitions(
                ctx,
                &name,
                topic.count,
                topic.assignments.map(|a| {
                    a.into_iter()
                        .map(|a| a.broker_ids.into_iter().map(|b| b.0).collect())
                        .collect()
                }),
                req.validate_only,
            )
            .await
        };
        let (code, message) = match outcome {
            Ok(()) => (0, None),
            Err((e, message)) => (e.code(), message),
        };
        results.push(
            CreatePartitionsTopicResult::default()
                .with_name(topic.name)
                .with_error_code(code)
                .with_error_message(message.map(str_bytes)),
        );
    }
    CreatePartitionsResponse::default()
        .with_results(results)
        .with_throttle_time_ms(quota.throttle_ms(ctx.broker.quotas.now_ms()) as i32)
}

/// The controller mutation quota of the partitions a request would add (as
/// Apache, once the count is an increase and the assignments match it;
/// otherwise the request fails on those checks and adds nothing).
fn record_mutation(
    ctx: &RequestContext,
    quota: &mut MutationQuota<'_>,
    name: &str,
    topic: &CreatePartitionsTopic,
) -> Result<(), u64> {
    let Some(meta) = ctx.broker.storage.topics.get(name) else {
        return Ok(());
    };
    let additional = topic.count - meta.partitions;
    let matching = topic
        .assignments
        .as_ref()
        .is_none_or(|a| a.len() as i32 == additional);
    if additional <= 0 || !matching {
        return Ok(());
    }
    quota.record(additional as f64, ctx.broker.quotas.now_ms())
}

async fn add_partitions(
    ctx: &RequestContext,
    name: &str,
    count: i32,
    assignments: Option<Vec<Vec<i32>>>,
    validate_only: bool,
) -> Result<(), (Err, Option<String>)> {
    let owned = name.to_string();
    let members = replicas::Members::of(&ctx.broker);
    let updated = ctx
        .broker
        .storage
        .topics
        .update(name, validate_only, move |meta| {
            let current = meta.partitions;
            if count == current {
                return Err((
                    Err::InvalidPartitions,
                    format!("Topic already has {current} partition(s)."),
                ));
            }
            if count < current {
                return Err((
                    Err::InvalidPartitions,
                    format!(
                        "The topic {owned} currently has {current} partition(s); {count} would not be an increase."
                    ),
                ));
            }
            if count > MAX_PARTITIONS {
                return Err((
                    Err::InvalidPartitions,
                    format!("kaas allows at most {MAX_PARTITIONS} partitions per topic; {count} asked"),
                ));
            }
            let additional = count - current;
            let wrong_count = assignments.as_ref().map(Vec::len).filter(|n| *n as i32 != additional);
            if let Some(given) = wrong_count {
                return Err((
                    Err::InvalidReplicaAssignment,
                    format!(
                        "Attempted to add {additional} additional partition(s), but only {given} assignment(s) were specified."
                    ),
                ));
            }
            let factor = replicas::replication_factor(meta);
            for (partition, assigned) in (current..).zip(assignments.unwrap_or_default()) {
                members
                    .check(partition, &assigned, Some(factor))
                    .map_err(|m| (Err::InvalidReplicaAssignment, m))?;
                meta.replicas.insert(partition, assigned);
            }
            meta.partitions = count;
            Ok(())
        })
        .await;
    match updated {
        Ok(Ok(_)) => Ok(()),
        Ok(Err((e, message))) => Err((e, Some(message))),
        Err(TopicError::Unknown(_)) => Err((Err::UnknownTopicOrPartition, None)),
        Err(e) => Err((Err::KafkaStorageError, Some(e.to_string()))),
    }
}
