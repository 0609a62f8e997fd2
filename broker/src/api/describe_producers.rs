//! DescribeProducers (key 61): the producers a partition's leader knows,
//! with each one's epoch, last sequence, coordinator epoch and open
//! transaction's first offset (what `kafka-transactions.sh
//! describe-producers` and find-hanging show).

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};

use super::{open_error_code, Err, RequestContext};
use crate::auth::{Operation, ResourceType};

pub async fn handle(
    ctx: &RequestContext,
    req: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let broker = &ctx.broker;
    let routing = broker.routing();
    let mut resp = DescribeProducersResponse::default();
    for topic in req.topics {
        let meta = broker.storage.topics.get(topic.name.0.as_str());
        let readable = ctx.authorized(Operation::Read, ResourceType::Topic, topic.name.0.as_str());
        let mut out = TopicResponse::default().with_name(topic.name.clone());
        for index in topic.partition_indexes {
            let mut p = PartitionResponse::default().with_partition_index(index);
            if !readable {
                out.partitions
                    .push(p.with_error_code(Err::TopicAuthorizationFailed.code()));
                continue;
            }
            let Some(meta) = meta.as_ref().filter(|m| (0..m.partitions).contains(&index)) else {
                out.partitions
                    .push(p.with_error_code(Err::UnknownTopicOrPartition.code()));
                continue;
            };
            let leads = routing
                .as_ref()
                .and_then(|r| r.owner_of_partition(&meta.name, index))
                == Some(broker.id());
            if !leads {
                out.partitions
                    .push(p.with_error_code(Err::NotLeaderOrFollower.code()));
                continue;
            }
            match broker.storage.partition(meta, index).await {
                Err(e) => p = p.with_error_code(open_error_code(&e)),
                Ok(partition) => {
                    p.active_producers = partition
                        .active_producers()
                        .into_iter()
                        .map(|a| {
                            ProducerState::default()
                                .with_producer_id(ProducerId(a.producer_id))
                                .with_producer_epoch(i32::from(a.epoch))
                                .with_last_sequence(a.last_sequence)
                                .with_last_timestamp(-1)
                                .with_coordinator_epoch(a.coordinator_epoch)
                                .with_current_txn_start_offset(a.txn_first_offset.unwrap_or(-1))
                        })
                        .collect();
                }
            }
            out.partitions.push(p);
        }
        resp.topics.push(out);
    }
    resp
}
