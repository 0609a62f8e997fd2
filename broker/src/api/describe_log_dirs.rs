//! DescribeLogDirs (key 35): the one log folder of a kaas broker (the
//! shared volume's data folder), with the partitions this broker leads
//! (all of them, or those asked for), each one's size on the volume, and
//! the volume's total and usable bytes (v4), as Apache's KafkaApis
//! answers: Cluster DESCRIBE, else CLUSTER_AUTHORIZATION_FAILED and no
//! folder. A leader has no lag.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use tracing::warn;

use super::{str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::storage::{blocking, fs, log};

pub async fn handle(ctx: &RequestContext, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    if !ctx.authorized(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
        return DescribeLogDirsResponse::default()
            .with_error_code(Err::ClusterAuthorizationFailed.code());
    }
    let broker = &ctx.broker;
    let Some(routing) = broker.routing() else {
        return DescribeLogDirsResponse::default();
    };
    let topics = broker.storage.topics.by_name();
    // The partitions asked for (every one when none are named) that exist
    // and that this broker leads, by topic.
    let mut led: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    let mut lead = |name: &str, index: i32| {
        let exists = topics
            .get(name)
            .is_some_and(|t| (0..t.partitions).contains(&index));
        if exists && routing.owner_of_partition(name, index) == Some(broker.id()) {
            led.entry(name.to_string()).or_default().push(index);
        }
    };
    match req.topics {
        None => {
            for t in topics.values() {
                for index in 0..t.partitions {
                    lead(&t.name, index);
                }
            }
        }
        Some(asked) => {
            for t in asked {
                for index in t.partitions {
                    lead(&t.topic, index);
                }
            }
        }
    }
    let dirs: Vec<(String, Vec<(i32, std::path::PathBuf)>)> = led
        .into_iter()
        .map(|(name, mut indexes)| {
            indexes.sort_unstable();
            indexes.dedup();
            let dir = broker.storage.topics.topic_dir(&name);
            let paths = indexes
                .into_iter()
                .map(|i| (i, dir.join(i.to_string())))
                .collect();
            (name, paths)
        })
        .collect();
    let data_dir = broker.storage.data_dir().to_path_buf();
    let measured = blocking(move || {
        let space = fs::space(&data_dir)?;
        let sizes: Vec<(String, Vec<(i32, u64)>)> = dirs
            .into_iter()
            .map(|(name, partitions)| {
                let sizes = partitions
                    .into_iter()
                    // A partition never written has no folder yet: 0 bytes.
                    .map(|(i, path)| (i, log::size_on_disk(&path).unwrap_or(0)))
                    .collect();
                (name, sizes)
            })
            .collect();
        Ok((space, sizes))
    })
    .await;
    let log_dir = str_bytes(broker.storage.data_dir().display().to_string());
    let result = DescribeLogDirsResult::default().with_log_dir(log_dir);
    let result = match measured {
        Ok(((total, usable), sizes)) => result
            .with_total_bytes(total as i64)
            .with_usable_bytes(usable as i64)
            .with_topics(
                sizes
                    .into_iter()
                    .map(|(name, partitions)| {
                        DescribeLogDirsTopic::default()
                            .with_name(TopicName(str_bytes(name)))
                            .with_partitions(
                                partitions
                                    .into_iter()
                                    .map(|(index, size)| {
                                        DescribeLogDirsPartition::default()
                                            .with_partition_index(index)
                                            .with_partition_size(size as i64)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
        Err(e) => {
            warn!(error = %e, "DescribeLogDirs could not read the data folder");
            result
                .with_error_code(Err::KafkaStorageError.code())
                .with_total_bytes(-1)
                .with_usable_bytes(-1)
        }
    };
    DescribeLogDirsResponse::default().with_results(vec![result])
}
