//! AlterReplicaLogDirs (key 34), as Apache's `ReplicaManager.alterReplicaLogDirs`
//! answers it, on a broker whose one log directory is the shared volume
//! (the one DescribeLogDirs reports): a replica asked into it is there
//! already (NONE, nothing to move), any other directory is
//! LOG_DIR_NOT_FOUND; a partition this broker is not a replica of
//! (`api::replicas`) NOT_LEADER_OR_FOLLOWER, one that does not exist
//! UNKNOWN_TOPIC_OR_PARTITION. Cluster ALTER, else
//! CLUSTER_AUTHORIZATION_FAILED for every partition.

use std::collections::BTreeMap;

use kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, TopicName,
};

use super::{replicas, str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::storage::TopicMeta;

pub fn handle(
    ctx: &RequestContext,
    req: AlterReplicaLogDirsRequest,
) -> AlterReplicaLogDirsResponse {
    let authorized = ctx.authorized(Operation::Alter, ResourceType::Cluster, CLUSTER_NAME);
    let own_dir = ctx.broker.storage.data_dir().display().to_string();
    let routing = ctx.broker.routing();
    // Apache answers by topic, each partition once (the last asked wins).
    let mut answers: BTreeMap<String, BTreeMap<i32, i16>> = BTreeMap::new();
    for dir in &req.dirs {
        for topic in &dir.topics {
            let meta = ctx.broker.storage.topics.get(topic.name.as_str());
            for &p in &topic.partitions {
                let is_replica = |m: &TopicMeta| {
                    let leader = routing
                        .as_ref()
                        .and_then(|r| r.owner_of_partition(&m.name, p));
                    replicas::reported(m, p, leader).contains(&ctx.broker.id())
                };
                let code = match &meta {
                    _ if !authorized => Err::ClusterAuthorizationFailed.code(),
                    _ if dir.path.as_str() != own_dir => Err::LogDirNotFound.code(),
                    Some(m) if !(0..m.partitions).contains(&p) => {
                        Err::UnknownTopicOrPartition.code()
                    }
                    Some(m) if is_replica(m) => 0,
                    Some(_) => Err::NotLeaderOrFollower.code(),
                    None => Err::UnknownTopicOrPartition.code(),
                };
                let by_partition = answers.entry(topic.name.to_string()).or_default();
                by_partition.insert(p, code);
            }
        }
    }
    AlterReplicaLogDirsResponse::default().with_results(
        answers
            .into_iter()
            .map(|(topic, partitions)| {
                AlterReplicaLogDirTopicResult::default()
                    .with_topic_name(TopicName(str_bytes(topic)))
                    .with_partitions(
                        partitions
                            .into_iter()
                            .map(|(p, code)| {
                                AlterReplicaLogDirPartitionResult::default()
                                    .with_partition_index(p)
                                    .with_error_code(code)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}
