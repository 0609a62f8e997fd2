//! OffsetForLeaderEpoch (key 23): where a leader epoch ended, so a consumer
//! whose partition changed leader can tell whether the records it read are
//! still in the log (KIP-320). Apache's `handleOffsetForLeaderEpochRequest`
//! and `Partition.lastOffsetForLeaderEpoch`.

use kafka_protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderPartition;
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
            let answer = if denied {
                Err(Err::TopicAuthorizationFailed.code())
            } else {
                end_offset(ctx, routing.as_ref(), meta.as_deref(), &p).await
            };
            match answer {
                Ok((epoch, offset)) => (r.leader_epoch, r.end_offset) = (epoch, offset),
                Err(code) => r.error_code = code,
            }
            out.partitions.push(r);
        }
        resp.topics.push(out);
    }
    resp
}

/// The epoch and end offset `p` asks for, from this broker if it leads
/// the partition, else the error code.
async fn end_offset(
    ctx: &RequestContext,
    routing: Option<&std::sync::Arc<kaas_shared::Routing>>,
    meta: Option<&crate::storage::TopicMeta>,
    p: &OffsetForLeaderPartition,
) -> Result<(i32, i64), i16> {
    let broker = &ctx.broker;
    let meta = meta
        .filter(|m| (0..m.partitions).contains(&p.partition))
        .ok_or(Err::UnknownTopicOrPartition.code())?;
    let routing = routing
        .filter(|rt| rt.owner_of_partition(&meta.name, p.partition) == Some(broker.id()))
        .ok_or(Err::NotLeaderOrFollower.code())?;
    match leader_epoch_error(routing, p.current_leader_epoch) {
        0 => {}
        code => return Err(code),
    }
    let partition = broker
        .storage
        .partition(meta, p.partition)
        .await
        .map_err(|e| open_error_code(&e))?;
    Ok(partition.end_offset_for_epoch(p.leader_epoch))
}

#[cfg(test)]
mod tests;
