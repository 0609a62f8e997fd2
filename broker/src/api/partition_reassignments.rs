//! AlterPartitionReassignments (key 45) and ListPartitionReassignments
//! (key 46), as Apache's controller answers them
//! (`ReplicationControlManager`), on replicas as kaas has them
//! (`api::replicas`): a reassignment writes the partition's new replicas
//! to its topic on the shared volume at once (every replica is in sync:
//! there is nothing to copy), and it is in progress until its first alive
//! replica leads, which the controller does at its next round (it asks
//! ListPartitionReassignments). Cancelling one in progress puts back the
//! replicas it had.

use std::sync::Arc;

use kaas_shared::Routing;
use kafka_protocol::messages::alter_partition_reassignments_request::ReassignablePartition;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, TopicName,
};
use parking_lot::Mutex;

use super::{replicas, str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::storage::{TopicError, TopicMeta};

/// A partition's answer: its error code and message.
type Outcome = (i16, Option<String>);

pub async fn alter(
    ctx: &RequestContext,
    req: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    // v0 has no flag: the replication factor may change.
    let allow_rf_change = ctx.api_version == 0 || req.allow_replication_factor_change;
    let response = AlterPartitionReassignmentsResponse::default()
        .with_error_message(None)
        .with_allow_replication_factor_change(req.allow_replication_factor_change);
    if !ctx.authorized(Operation::Alter, ResourceType::Cluster, CLUSTER_NAME) {
        let message = format!("{} may not alter the cluster", ctx.principal);
        let code = Err::ClusterAuthorizationFailed.code();
        let every = req.topics.into_iter().map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| partition_response(p.partition_index, (code, Some(message.clone()))));
            ReassignableTopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions.collect())
        });
        return response
            .with_error_code(code)
            .with_error_message(Some(str_bytes(message.clone())))
            .with_responses(every.collect());
    }
    let members = replicas::Members::of(&ctx.broker);
    let routing = ctx.broker.routing();
    let mut responses = Vec::with_capacity(req.topics.len());
    for topic in req.topics {
        let name = topic.name.to_string();
        let outcomes = reassign_topic(
            ctx,
            &name,
            topic.partitions,
            members.clone(),
            routing.clone(),
            allow_rf_change,
        )
        .await;
        responses.push(
            ReassignableTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(
                    outcomes
                        .into_iter()
                        .map(|(p, outcome)| partition_response(p, outcome))
                        .collect(),
                ),
        );
    }
    response.with_responses(responses)
}

fn partition_response(partition: i32, (code, message): Outcome) -> ReassignablePartitionResponse {
    ReassignablePartitionResponse::default()
        .with_partition_index(partition)
        .with_error_code(code)
        .with_error_message(message.map(str_bytes))
}

/// One topic's reassignments, written together under the topic's lock:
/// each partition's outcome, in the request's order.
async fn reassign_topic(
    ctx: &RequestContext,
    name: &str,
    partitions: Vec<ReassignablePartition>,
    members: replicas::Members,
    routing: Option<Arc<Routing>>,
    allow_rf_change: bool,
) -> Vec<(i32, Outcome)> {
    let indexes: Vec<i32> = partitions.iter().map(|p| p.partition_index).collect();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let written = outcomes.clone();
    let updated = ctx
        .broker
        .storage
        .topics
        .update(name, false, move |meta| {
            let mut outcomes = written.lock();
            for p in &partitions {
                let outcome = reassign(meta, p, &members, routing.as_deref(), allow_rf_change);
                outcomes.push((p.partition_index, outcome));
            }
            // Written only when a partition changed.
            match outcomes.iter().any(|(_, (code, _))| *code == 0) {
                true => Ok(()),
                false => Err(()),
            }
        })
        .await;
    let failed = |code: Err, message: String| {
        let every = indexes
            .iter()
            .map(|&p| (p, (code.code(), Some(message.clone()))));
        every.collect()
    };
    match updated {
        Ok(_) => std::mem::take(&mut *outcomes.lock()),
        Err(TopicError::Unknown(_)) => failed(
            Err::UnknownTopicOrPartition,
            format!("Unable to find a topic named {name}."),
        ),
        Err(e) => failed(Err::KafkaStorageError, e.to_string()),
    }
}

/// Apache's `alterPartitionReassignment` of one partition on `meta`.
fn reassign(
    meta: &mut TopicMeta,
    target: &ReassignablePartition,
    members: &replicas::Members,
    routing: Option<&Routing>,
    allow_rf_change: bool,
) -> Outcome {
    let p = target.partition_index;
    if !(0..meta.partitions).contains(&p) {
        return (
            Err::UnknownTopicOrPartition.code(),
            Some(format!("Unable to find partition {}:{p}.", meta.name)),
        );
    }
    let leader = routing.and_then(|r| r.owner_of_partition(&meta.name, p));
    let Some(wanted) = &target.replicas else {
        // Cancel: only one in progress, back to the replicas it had.
        let in_progress = routing.is_some_and(|r| replicas::moving(meta, r).any(|(m, _)| m == p));
        if !in_progress {
            return (
                Err::NoReassignmentInProgress.code(),
                Some("No partition reassignment is in progress.".into()),
            );
        }
        match meta.replicas_before.remove(&p) {
            Some(before) if !before.is_empty() => meta.replicas.insert(p, before),
            _ => meta.replicas.remove(&p),
        };
        return (0, None);
    };
    let wanted: Vec<i32> = wanted.iter().map(|b| b.0).collect();
    if let Err(message) = replicas::check_assignment(&wanted, |b| members.registered(b), None) {
        return (Err::InvalidReplicaAssignment.code(), Some(message));
    }
    let current = replicas::reported(meta, p, leader);
    if !allow_rf_change && current.len() != wanted.len() {
        return (
            Err::InvalidReplicationFactor.code(),
            Some(format!(
                "The replication factor is changed from {} to {}",
                current.len(),
                wanted.len()
            )),
        );
    }
    let before = meta.replicas.get(&p).cloned().unwrap_or_default();
    meta.replicas_before.insert(p, before);
    meta.replicas.insert(p, wanted);
    (0, None)
}

pub fn list(
    ctx: &RequestContext,
    req: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let response = ListPartitionReassignmentsResponse::default().with_error_message(None);
    if !ctx.authorized(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
        return response
            .with_error_code(Err::ClusterAuthorizationFailed.code())
            .with_error_message(Some(str_bytes(format!(
                "{} may not describe the cluster",
                ctx.principal
            ))));
    }
    let Some(routing) = ctx.broker.routing() else {
        return response;
    };
    let topics = &ctx.broker.storage.topics;
    // Each topic asked for, with the partitions asked for; else every one.
    let asked: Vec<(Arc<TopicMeta>, Option<Vec<i32>>)> = match req.topics {
        None => {
            let mut all = topics.all();
            all.retain(|t| !t.replicas.is_empty());
            all.sort_by(|a, b| a.name.cmp(&b.name));
            all.into_iter().map(|t| (t, None)).collect()
        }
        Some(named) => named
            .into_iter()
            .filter_map(|t| Some((topics.get(t.name.as_str())?, Some(t.partition_indexes))))
            .collect(),
    };
    let ongoing = asked.into_iter().filter_map(|(meta, partitions)| {
        let moving = replicas::moving(&meta, &routing);
        let listed: Vec<OngoingPartitionReassignment> = moving
            .filter(|(p, _)| partitions.as_ref().is_none_or(|ps| ps.contains(p)))
            .map(|(p, replicas)| {
                OngoingPartitionReassignment::default()
                    .with_partition_index(p)
                    .with_replicas(replicas.iter().copied().map(BrokerId).collect())
            })
            .collect();
        (!listed.is_empty()).then(|| {
            OngoingTopicReassignment::default()
                .with_name(TopicName(str_bytes(meta.name.clone())))
                .with_partitions(listed)
        })
    });
    response.with_topics(ongoing.collect())
}
