//! OffsetForLeaderEpoch (key 23): where a leader epoch ended, so a consumer
//! whose partition changed leader can tell whether the records it read are
//! still in the log (KIP-320). Apache's `handleOffsetForLeaderEpochRequest`
//! and `Partition.lastOffsetForLeaderEpoch`.

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::{leader_epoch_error, open_error_code, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};

pub async fn handle(
    ctx: &RequestContext,
    req: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let broker = &ctx.broker;
    let routing = broker.routing();
    // Brokers may ask with CLUSTER_ACTION; consumers need Topic DESCRIBE.
    let cluster_action = ctx.authorized(
        Operation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    );
    let mut resp = OffsetForLeaderEpochResponse::default();
    for topic in req.topics {
        let name = topic.topic.0.as_str();
        let denied =
            !cluster_action && !ctx.authorized(Operation::Describe, ResourceType::Topic, name);
        let meta = broker.storage.topics.get(name);
        let mut out = OffsetForLeaderTopicResult::default().with_topic(topic.topic.clone());
        for p in topic.partitions {
            let mut r = EpochEndOffset::default()
                .with_partition(p.partition)
                .with_leader_epoch(-1)
                .with_end_offset(-1);
            let known = meta
                .as_ref()
                .filter(|m| (0..m.partitions).contains(&p.partition));
            let code = if denied {
                Err::TopicAuthorizationFailed.code()
            } else if let Some(meta) = known {
                match routing.as_ref().filter(|rt| {
                    rt.owner_of_partition(&meta.name, p.partition) == Some(broker.id())
                }) {
                    None => Err::NotLeaderOrFollower.code(),
                    Some(rt) => match leader_epoch_error(rt, p.current_leader_epoch) {
                        0 => match broker.storage.partition(meta, p.partition).await {
                            Ok(partition) => {
                                (r.leader_epoch, r.end_offset) =
                                    partition.end_offset_for_epoch(p.leader_epoch);
                                0
                            }
                            Err(e) => open_error_code(&e),
                        },
                        code => code,
                    },
                }
            } else {
                Err::UnknownTopicOrPartition.code()
            };
            r.error_code = code;
            out.partitions.push(r);
        }
        resp.topics.push(out);
    }
    resp
}

#[cfg(test)]
#[path = "offset_for_leader_epoch_tests.rs"]
mod tests;
