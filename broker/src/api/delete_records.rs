//! DeleteRecords (key 21): a partition's leader moves its log start offset
//! (`storage::Partition::delete_records`), as Apache's KafkaApis and
//! `Partition.deleteRecordsOnLeader` check it: Topic DELETE, the partition
//! known, this broker its leader, `cleanup.policy` including `delete`
//! (POLICY_VIOLATION otherwise), the offset within `[0, high watermark]`
//! or -1 for the high watermark (OFFSET_OUT_OF_RANGE otherwise). The low
//! watermark answered is the new log start offset, durable.

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use tracing::warn;

use super::{open_error_code, Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::storage::partition::DeleteRecordsError;
use crate::storage::topic_config;

pub async fn handle(ctx: &RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse {
    let broker = &ctx.broker;
    let routing = broker.routing();
    let mut topics = Vec::with_capacity(req.topics.len());
    for topic in req.topics {
        let name = topic.name.to_string();
        let authorized = ctx.authorized(Operation::Delete, ResourceType::Topic, &name);
        let meta = broker.storage.topics.get(&name);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in topic.partitions {
            let result = DeleteRecordsPartitionResult::default()
                .with_partition_index(p.partition_index)
                .with_low_watermark(-1);
            let answer = |code: i16| result.clone().with_error_code(code);
            let Some(meta) = meta.as_ref().filter(|_| authorized) else {
                partitions.push(answer(if authorized {
                    Err::UnknownTopicOrPartition.code()
                } else {
                    Err::TopicAuthorizationFailed.code()
                }));
                continue;
            };
            if !(0..meta.partitions).contains(&p.partition_index) {
                partitions.push(answer(Err::UnknownTopicOrPartition.code()));
                continue;
            }
            let leader = routing
                .as_ref()
                .and_then(|r| r.owner_of_partition(&name, p.partition_index));
            if leader != Some(broker.id()) {
                partitions.push(answer(Err::NotLeaderOrFollower.code()));
                continue;
            }
            let settings =
                topic_config::log_settings(&meta.configs, &broker.storage.topic_defaults());
            if !settings.retention.delete {
                partitions.push(answer(Err::PolicyViolation.code()));
                continue;
            }
            let partition = match broker.storage.partition(meta, p.partition_index).await {
                Ok(partition) => partition,
                Err(e) => {
                    partitions.push(answer(open_error_code(&e)));
                    continue;
                }
            };
            partitions.push(match partition.delete_records(p.offset).await {
                Ok(start) => result.with_low_watermark(start),
                Err(DeleteRecordsError::OutOfRange { .. }) => answer(Err::OffsetOutOfRange.code()),
                Err(DeleteRecordsError::Io(e)) => {
                    warn!(topic = %name, partition = p.partition_index, error = %e,
                          "DeleteRecords could not move the log start offset");
                    answer(Err::KafkaStorageError.code())
                }
            });
        }
        topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    DeleteRecordsResponse::default().with_topics(topics)
}
