//! DescribeQuorum (key 55): kaas's metadata "quorum" described in
//! Apache's terms (`KafkaRaftClient.handleDescribeQuorumRequest`). kaas has
//! no KRaft log: its metadata is the controller's assignment, one
//! document at a time, so `__cluster_metadata`'s high watermark is the
//! version of the document this broker follows and its leader epoch the
//! document's partition epoch (it moves whenever the broker set does). The
//! one voter is the broker Metadata and DescribeCluster name as the
//! controller (kaas's controller is the operator, or `local`'s process,
//! not a broker); the other brokers are observers, this one at the
//! version it holds and the rest at -1 (kaas does not know what another
//! broker holds). Cluster DESCRIBE; a request for anything but partition
//! 0 of `__cluster_metadata` UNKNOWN_TOPIC_OR_PARTITION on each partition
//! asked, as Apache.

use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{
    BrokerId, DescribeQuorumRequest, DescribeQuorumResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::metadata::listed_brokers;
use super::{str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};

const METADATA_TOPIC: &str = "__cluster_metadata";

pub fn handle(ctx: &RequestContext, req: DescribeQuorumRequest) -> DescribeQuorumResponse {
    if !ctx.authorized(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
        return DescribeQuorumResponse::default()
            .with_error_code(Err::ClusterAuthorizationFailed.code())
            .with_error_message(Some(str_bytes(format!(
                "{} may not describe the cluster",
                ctx.principal
            ))));
    }
    let asks_for_the_metadata = matches!(
        req.topics.as_slice(),
        [t] if t.topic_name.as_str() == METADATA_TOPIC
            && matches!(t.partitions.as_slice(), [p] if p.partition_index == 0)
    );
    if !asks_for_the_metadata {
        let message = "This server does not host this topic-partition.";
        let topics = req.topics.into_iter().map(|t| {
            let partitions = t.partitions.iter().map(|p| {
                PartitionData::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(Err::UnknownTopicOrPartition.code())
                    .with_error_message(Some(StrBytes::from_static_str(message)))
            });
            TopicData::default()
                .with_topic_name(t.topic_name)
                .with_partitions(partitions.collect())
        });
        return DescribeQuorumResponse::default()
            .with_error_message(None)
            .with_topics(topics.collect());
    }
    let Some(routing) = ctx.broker.routing() else {
        return DescribeQuorumResponse::default()
            .with_error_code(Err::BrokerNotAvailable.code())
            .with_error_message(Some(StrBytes::from_static_str(
                "This broker has no assignment from the controller yet",
            )));
    };
    let now = crate::storage::log::wall_clock_ms();
    let held = routing.version() as i64;
    let (brokers, leader) = listed_brokers(ctx, false);
    let state = |id: i32, end: i64, seen: i64| {
        ReplicaState::default()
            .with_replica_id(BrokerId(id))
            .with_log_end_offset(end)
            .with_last_fetch_timestamp(seen)
            .with_last_caught_up_timestamp(seen)
    };
    let own = ctx.broker.id();
    let observers = brokers
        .iter()
        .filter(|b| b.id != leader)
        .map(|b| match b.id == own {
            true => state(b.id, held, now),
            false => state(b.id, -1, -1),
        });
    let partition = PartitionData::default()
        .with_partition_index(0)
        .with_error_message(None)
        .with_leader_id(BrokerId(leader))
        .with_leader_epoch(routing.leader_epoch())
        .with_high_watermark(held)
        .with_current_voters(vec![state(leader, held, now)])
        .with_observers(observers.collect());
    let listener = ctx.listener.name();
    // v2 lists the voters' addresses.
    let nodes = routing
        .broker(leader)
        .filter(|_| ctx.api_version >= 2)
        .map(|b| {
            let endpoints: Vec<Listener> = match b.listeners.is_empty() {
                true => vec![Listener::default()
                    .with_name(str_bytes(listener.to_string()))
                    .with_host(str_bytes(b.host.clone()))
                    .with_port(b.port)],
                false => b
                    .listeners
                    .iter()
                    .map(|e| {
                        Listener::default()
                            .with_name(str_bytes(e.name.clone()))
                            .with_host(str_bytes(e.host.clone()))
                            .with_port(e.port)
                    })
                    .collect(),
            };
            Node::default()
                .with_node_id(BrokerId(leader))
                .with_listeners(endpoints)
        });
    DescribeQuorumResponse::default()
        .with_error_message(None)
        .with_topics(vec![TopicData::default()
            .with_topic_name(TopicName(StrBytes::from_static_str(METADATA_TOPIC)))
            .with_partitions(vec![partition])])
        .with_nodes(nodes.into_iter().collect())
}
