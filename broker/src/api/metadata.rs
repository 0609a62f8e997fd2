//! Metadata (key 3): brokers from the assignment, topics from the shared
//! folder, partition leaders from the same two-tier routing as groups.

use kaas_shared::{BrokerState, Routing};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use tracing::info;
use uuid::Uuid;

use super::{replicas, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::storage::{TopicError, TopicMeta};

pub async fn handle(ctx: &RequestContext, req: MetadataRequest) -> MetadataResponse {
    let broker = &ctx.broker;
    let routing = broker.routing();
    let mut resp = MetadataResponse::default()
        .with_cluster_id(Some(StrBytes::from_string(broker.cluster_id.clone())));
    let listener = ctx.listener.name();
    let (brokers, controller_id) = listed_brokers(ctx, false);
    resp.brokers = brokers
        .into_iter()
        .map(|b| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(b.id))
                .with_host(StrBytes::from_string(b.host))
                .with_port(i32::from(b.port))
        })
        .collect();
    resp.controller_id = BrokerId(controller_id);

    // Topics the principal may not describe: left out of a listing of all,
    // TOPIC_AUTHORIZATION_FAILED when named (before anyone looks whether
    // they exist), as KafkaApis.
    let describable = |name: &str| ctx.authorized(Operation::Describe, ResourceType::Topic, name);
    let unauthorized = |name: Option<TopicName>, id| {
        MetadataResponseTopic::default()
            .with_name(name)
            .with_topic_id(id)
            .with_error_code(Err::TopicAuthorizationFailed.code())
    };
    let mut topics: Vec<Result<std::sync::Arc<TopicMeta>, MetadataResponseTopic>> = Vec::new();
    match req.topics {
        None => topics.extend(
            broker
                .storage
                .topics
                .all()
                .into_iter()
                .filter(|m| describable(&m.name))
                .map(Ok),
        ),
        Some(requested) => {
            for t in requested {
                topics.push(match t.name {
                    Some(name) if !describable(name.0.as_str()) => {
                        Err(unauthorized(Some(name), Uuid::nil()))
                    }
                    Some(name) => {
                        lookup_or_create(ctx, name.0.as_str(), req.allow_auto_topic_creation).await
                    }
                    None => match broker.storage.topics.get_by_id(t.topic_id) {
                        // Topic ids are not secret: the id is echoed.
                        Some(meta) if !describable(&meta.name) => {
                            Err(unauthorized(None, t.topic_id))
                        }
                        Some(meta) => Ok(meta),
                        None => Err(MetadataResponseTopic::default()
                            .with_name(None)
                            .with_topic_id(t.topic_id)
                            .with_error_code(Err::UnknownTopicId.code())),
                    },
                });
            }
        }
    }
    let v = ctx.api_version;
    for t in topics {
        resp.topics.push(match t {
            Ok(meta) => {
                let mut topic = describe_topic(&meta, routing.as_deref(), listener, v);
                if v >= 8 && req.include_topic_authorized_operations {
                    topic.topic_authorized_operations = ctx.authorized_operations(
                        ResourceType::Topic,
                        &meta.name,
                        &TOPIC_OPERATIONS,
                    );
                }
                topic
            }
            Err(error_topic) => error_topic,
        });
    }
    if (8..=10).contains(&v) && req.include_cluster_authorized_operations {
        resp.cluster_authorized_operations = cluster_authorized_operations(ctx);
    }
    resp
}

/// A broker as a client on some listener is told of it.
pub(super) struct ListedBroker {
    pub id: i32,
    pub host: String,
    pub port: u16,
    /// Not alive in the assignment (DescribeCluster's `is_fenced`).
    pub fenced: bool,
}

/// The brokers a client on `ctx`'s listener is told of (Metadata,
/// DescribeCluster), with the controller id to name: the alive ones (all,
/// with `include_fenced`) at their address on that listener, one without
/// it left out as in Apache; before the first assignment this broker
/// alone.
pub(super) fn listed_brokers(
    ctx: &RequestContext,
    include_fenced: bool,
) -> (Vec<ListedBroker>, i32) {
    let listener = ctx.listener.name();
    let Some(routing) = ctx.broker.routing() else {
        let own = &ctx.listener.config;
        let me = ListedBroker {
            id: ctx.broker.id(),
            host: own.advertised_host.clone(),
            port: own.advertised_port,
            fenced: false,
        };
        return (vec![me], ctx.broker.id());
    };
    let brokers: Vec<ListedBroker> = routing
        .assignment()
        .brokers
        .iter()
        .filter(|b| include_fenced || b.state == BrokerState::Alive)
        .filter_map(|b| {
            let (host, port) = b.endpoint(listener)?;
            Some(ListedBroker {
                id: b.id,
                host: host.to_string(),
                port,
                fenced: b.state != BrokerState::Alive,
            })
        })
        .collect();
    let controller_id = brokers.iter().find(|b| !b.fenced).map_or(-1, |b| b.id);
    (brokers, controller_id)
}

/// `cluster_authorized_operations` as Apache computes it: the cluster's
/// operations the principal may do, nothing without DESCRIBE.
pub(super) fn cluster_authorized_operations(ctx: &RequestContext) -> i32 {
    if ctx.authorized(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
        ctx.authorized_operations(ResourceType::Cluster, CLUSTER_NAME, &CLUSTER_OPERATIONS)
    } else {
        0
    }
}

/// The operations a topic supports (Apache's `AclEntry.supportedOperations`).
pub(super) const TOPIC_OPERATIONS: [Operation; 8] = [
    Operation::Read,
    Operation::Write,
    Operation::Create,
    Operation::Describe,
    Operation::Delete,
    Operation::Alter,
    Operation::DescribeConfigs,
    Operation::AlterConfigs,
];

/// The operations the cluster supports.
const CLUSTER_OPERATIONS: [Operation; 7] = [
    Operation::Create,
    Operation::ClusterAction,
    Operation::DescribeConfigs,
    Operation::AlterConfigs,
    Operation::IdempotentWrite,
    Operation::Alter,
    Operation::Describe,
];

async fn lookup_or_create(
    ctx: &RequestContext,
    name: &str,
    allow_auto_create: bool,
) -> Result<std::sync::Arc<TopicMeta>, MetadataResponseTopic> {
    let broker = &ctx.broker;
    let error = |code: i16| {
        MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
            .with_error_code(code)
    };
    if let Some(meta) = broker.storage.topics.get(name) {
        return Ok(meta);
    }
    if !(allow_auto_create && broker.config.auto_create_topics) {
        return Err(error(Err::UnknownTopicOrPartition.code()));
    }
    // Auto-creation needs Cluster CREATE or the topic's CREATE.
    if !ctx.authorized(Operation::Create, ResourceType::Cluster, CLUSTER_NAME)
        && !ctx.authorized(Operation::Create, ResourceType::Topic, name)
    {
        return Err(error(Err::TopicAuthorizationFailed.code()));
    }
    let partitions = broker.config.default_partitions;
    match broker
        .storage
        .topics
        .create(name, partitions, Default::default(), false)
        .await
    {
        Ok(meta) => {
            info!(topic = name, partitions, "auto-created topic");
            Ok(meta)
        }
        Err(TopicError::AlreadyExists(_)) => broker
            .storage
            .topics
            .get(name)
            .ok_or_else(|| error(Err::UnknownTopicOrPartition.code())),
        Err(TopicError::InvalidName(_)) => Err(error(Err::InvalidTopicException.code())),
        Err(_) => Err(error(Err::KafkaStorageError.code())),
    }
}

/// A topic's partitions and their leaders, as clients of `listener` see
/// them (Metadata version `version`).
/// Why a partition has no leader a client on some listener can reach.
pub(super) enum NoLeader {
    /// The assignment names none (no broker alive).
    None,
    /// Its leader has no address on the listener.
    NotOnListener,
}

/// The broker `route` names for `topic/partition`, if it has an address
/// on `listener`.
pub(super) fn leader_on_listener(
    routing: &Routing,
    topic: &str,
    partition: i32,
    listener: &str,
) -> Result<i32, NoLeader> {
    let id = routing
        .owner_of_partition(topic, partition)
        .ok_or(NoLeader::None)?;
    match routing.broker(id).and_then(|b| b.endpoint(listener)) {
        Some(_) => Ok(id),
        None => Err(NoLeader::NotOnListener),
    }
}

/// `partition`'s replicas and in-sync replicas as Metadata and
/// DescribeTopicPartitions report them (`api::replicas`).
pub(super) fn replica_nodes(
    meta: &TopicMeta,
    partition: i32,
    leader: Option<i32>,
    routing: Option<&Routing>,
) -> (Vec<BrokerId>, Vec<BrokerId>) {
    let reported = replicas::reported(meta, partition, leader);
    let in_sync = match routing {
        Some(r) => replicas::in_sync(&reported, r),
        None => Vec::new(),
    };
    let ids = |v: Vec<i32>| v.into_iter().map(BrokerId).collect();
    (ids(reported), ids(in_sync))
}

pub fn describe_topic(
    meta: &TopicMeta,
    routing: Option<&Routing>,
    listener: &str,
    version: i16,
) -> MetadataResponseTopic {
    let partitions = (0..meta.partitions)
        .map(|p| {
            let mut part = MetadataResponsePartition::default()
                .with_partition_index(p)
                .with_leader_epoch(routing.map_or(-1, |r| r.leader_epoch()));
            let leader = match routing {
                Some(r) => leader_on_listener(r, &meta.name, p, listener),
                None => Err(NoLeader::None),
            };
            let (reported, in_sync) =
                replica_nodes(meta, p, leader.as_ref().ok().copied(), routing);
            part.replica_nodes = reported;
            part.isr_nodes = in_sync;
            match leader {
                Ok(id) => {
                    part.leader_id = BrokerId(id);
                }
                // A leader without this listener: LISTENER_NOT_FOUND from
                // version 6, as Apache.
                Err(NoLeader::NotOnListener) => {
                    part.leader_id = BrokerId(-1);
                    part.error_code = if version >= 6 {
                        Err::ListenerNotFound.code()
                    } else {
                        Err::LeaderNotAvailable.code()
                    };
                }
                Err(NoLeader::None) => {
                    part.leader_id = BrokerId(-1);
                    part.error_code = Err::LeaderNotAvailable.code();
                }
            }
            part
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(meta.name.clone()))))
        .with_topic_id(meta.id)
        .with_partitions(partitions)
}
