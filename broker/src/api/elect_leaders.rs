//! ElectLeaders (key 43), as Apache's controller answers it
//! (`ReplicationControlManager.electLeaders`), on replicas as kaas has them
//! (`api::replicas`). PREFERRED: a partition led by its first replica needs
//! no election; one whose first replica is not alive cannot have it
//! (PREFERRED_LEADER_NOT_AVAILABLE); otherwise the controller moves it at
//! its next round, and the answer waits for the assignment that shows it
//! (REQUEST_TIMED_OUT past the request's timeout). UNCLEAN: every
//! partition of a cluster with a broker alive has a leader (the volume is
//! the one copy, so no election loses data), so none is needed. Asked for
//! every partition, those needing none are left out, as Apache does.

use std::collections::BTreeMap;
use std::time::Duration;

use kaas_shared::Routing;
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};

use super::{replicas, str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};

const PREFERRED: i8 = 0;
const UNCLEAN: i8 = 1;

/// A partition's answer: its error code and message.
type Outcome = (i16, Option<String>);

pub async fn handle(ctx: &RequestContext, req: ElectLeadersRequest) -> ElectLeadersResponse {
    let refused = |code: Err, message: String| {
        let every = req.topic_partitions.iter().flatten().map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|&p| result(p, (code.code(), Some(message.clone()))));
            ReplicaElectionResult::default()
                .with_topic(t.topic.clone())
                .with_partition_result(partitions.collect())
        });
        ElectLeadersResponse::default()
            .with_error_code(code.code())
            .with_replica_election_results(every.collect())
    };
    if !ctx.authorized(Operation::Alter, ResourceType::Cluster, CLUSTER_NAME) {
        let message = format!("{} may not alter the cluster", ctx.principal);
        return refused(Err::ClusterAuthorizationFailed, message);
    }
    if !matches!(req.election_type, PREFERRED | UNCLEAN) {
        let message = format!("Unknown election type {}", req.election_type);
        return refused(Err::InvalidRequest, message);
    }
    let routing = ctx.broker.routing();
    let all = req.topic_partitions.is_none();
    // The partitions asked for, by topic, in the request's order.
    let asked: Vec<(String, Vec<i32>)> = match req.topic_partitions {
        Some(topics) => topics
            .into_iter()
            .map(|t| (t.topic.to_string(), t.partitions))
            .collect(),
        None => {
            let mut topics = ctx.broker.storage.topics.all();
            topics.sort_by(|a, b| a.name.cmp(&b.name));
            topics
                .into_iter()
                .map(|t| (t.name.clone(), (0..t.partitions).collect()))
                .collect()
        }
    };
    let mut outcomes: Vec<(String, Vec<(i32, Outcome)>)> = Vec::new();
    // Partitions the controller is to move: (topic, partition) → the
    // broker to lead it.
    let mut moving: BTreeMap<(String, i32), i32> = BTreeMap::new();
    for (topic, partitions) in asked {
        let meta = ctx.broker.storage.topics.get(&topic);
        let mut results = Vec::new();
        for p in partitions {
            let outcome = match (&meta, routing.as_deref()) {
                (None, _) => (
                    Err::UnknownTopicOrPartition.code(),
                    Some(format!("No such topic as {topic}")),
                ),
                (Some(m), _) if !(0..m.partitions).contains(&p) => (
                    Err::UnknownTopicOrPartition.code(),
                    Some(format!("No such partition as {topic}-{p}")),
                ),
                (Some(_), None) => (Err::EligibleLeadersNotAvailable.code(), None),
                (Some(m), Some(r)) => {
                    let leader = r.owner_of_partition(&topic, p);
                    let replicas = replicas::reported(m, p, leader);
                    match (req.election_type, replicas.first()) {
                        (UNCLEAN, _) | (_, None) if leader.is_some() => {
                            (Err::ElectionNotNeeded.code(), None)
                        }
                        (UNCLEAN, _) | (_, None) => (Err::EligibleLeadersNotAvailable.code(), None),
                        (_, Some(&first)) if leader == Some(first) => {
                            (Err::ElectionNotNeeded.code(), None)
                        }
                        (_, Some(&first)) if !r.is_alive(first) => {
                            (Err::PreferredLeaderNotAvailable.code(), None)
                        }
                        (_, Some(&first)) => {
                            moving.insert((topic.clone(), p), first);
                            (0, None)
                        }
                    }
                }
            };
            if !(all && outcome.0 == Err::ElectionNotNeeded.code()) {
                results.push((p, outcome));
            }
        }
        if !(all && results.is_empty()) {
            outcomes.push((topic, results));
        }
    }
    if !moving.is_empty() {
        let timeout = Duration::from_millis(req.timeout_ms.max(0) as u64);
        let moved = |r: &Routing| {
            moving
                .iter()
                .all(|((t, p), &b)| r.owner_of_partition(t, *p) == Some(b))
        };
        let mut view = ctx.broker.cluster.subscribe();
        let waited =
            tokio::time::timeout(timeout, view.wait_for(|r| r.as_deref().is_some_and(moved))).await;
        if !matches!(waited, Ok(Ok(_))) {
            let now = ctx.broker.routing();
            for (topic, results) in &mut outcomes {
                for (p, outcome) in results.iter_mut() {
                    let Some(&want) = moving.get(&(topic.clone(), *p)) else {
                        continue;
                    };
                    if now.as_deref().and_then(|r| r.owner_of_partition(topic, *p)) != Some(want) {
                        *outcome = (
                            Err::RequestTimedOut.code(),
                            Some(format!("The controller had not moved {topic}-{p} to broker {want} within {} ms", timeout.as_millis())),
                        );
                    }
                }
            }
        }
    }
    ElectLeadersResponse::default().with_replica_election_results(
        outcomes
            .into_iter()
            .map(|(topic, results)| {
                ReplicaElectionResult::default()
                    .with_topic(TopicName(str_bytes(topic)))
                    .with_partition_result(results.into_iter().map(|(p, o)| result(p, o)).collect())
            })
            .collect(),
    )
}

fn result(partition: i32, (code, message): Outcome) -> PartitionResult {
    PartitionResult::default()
        .with_partition_id(partition)
        .with_error_code(code)
        .with_error_message(message.map(str_bytes))
}
