//! Request decoding, dispatch to one handler per API, response encoding.
//!
//! [`SUPPORTED`] is the single list of what this broker serves: ApiVersions
//! advertises exactly it, `decode` refuses everything else, and a test walks
//! it to prove every advertised version reaches a handler.

pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod alter_client_quotas;
pub mod alter_configs;
pub mod alter_replica_log_dirs;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_acls;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_acls;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_acls;
pub mod describe_client_quotas;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_topic_partitions;
pub mod describe_transactions;
pub mod describe_user_scram_credentials;
pub mod elect_leaders;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_config_resources;
pub mod list_groups;
pub mod list_offsets;
pub mod list_transactions;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod partition_reassignments;
pub mod produce;
pub mod replicas;
pub mod sync_group;
pub mod throttle;
pub mod txn_markers;
pub mod txn_offset_commit;
pub mod txn_verify;
pub mod write_txn_markers;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind, SaslAuthenticateResponse,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable};
use thiserror::Error;
use tracing::error;

use crate::auth::{Action, Operation, Principal, ResourceType};
use crate::broker::Broker;
use crate::client_quotas::enforce::{Client as QuotaClient, MutationQuota, Strictness};

/// Every API this broker serves, with the version range it serves. The
/// floors are those of Apache Kafka 4.x (the codec drops older versions too).
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    // v5 is transaction version 2 (the finalized `transaction.version`).
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::WriteTxnMarkers, 1, 1),
    // v1 adds subscribed_topic_regex (and librdkafka needs it even
    // without one).
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 2),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
    (ApiKey::ListConfigResources, 0, 1),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterReplicaLogDirs, 1, 2),
    (ApiKey::DescribeQuorum, 0, 2),
    // The exchange runs before requests reach `handle` (`net::sasl`).
    // v0 is advertised as Apache does (librdkafka requires it before it
    // uses SaslAuthenticate); a client that then sends raw SASL tokens
    // instead of SaslAuthenticate (Kafka clients before 1.0) is closed.
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

pub fn supported_range(key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, lo, hi)| (*lo, *hi))
}

/// Who sent a request and how, for handlers that answer per connection.
#[derive(Clone)]
pub struct RequestContext {
    pub broker: Arc<Broker>,
    pub api_version: i16,
    pub client_id: String,
    pub client_addr: SocketAddr,
    /// The listener the request arrived on: Metadata and FindCoordinator
    /// answer with its addresses.
    pub listener: Arc<crate::net::listener::Listener>,
    /// Who sent it (`User:ANONYMOUS` on a PLAINTEXT listener).
    pub principal: Principal,
    /// Fired once the request's effects are in place for the connection's
    /// next request, before its answer is ready (`net::ordering`).
    pub applied: crate::net::ordering::AppliedSignal,
}

impl RequestContext {
    /// This request's `controller_mutation_rate` (KIP-599): strict from
    /// `strict_since` (partitions over the quota refused with
    /// THROTTLING_QUOTA_EXCEEDED), permissive before (taken, then
    /// throttled), as Apache's `newQuotaFor`.
    pub fn mutation_quota(&self, strict_since: i16) -> MutationQuota<'_> {
        let strictness = match self.api_version >= strict_since {
            true => Strictness::Strict,
            false => Strictness::Permissive,
        };
        let client = QuotaClient {
            user: &self.principal.name,
            client_id: &self.client_id,
        };
        self.broker.quotas.mutation_quota(&client, strictness)
    }

    /// Asks the broker's authorizer whether this request's principal may
    /// do `operation` on the resource.
    pub fn authorized(
        &self,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.broker.authorizer.authorize(
            &self.principal,
            self.client_addr.ip(),
            Action {
                operation,
                resource_type,
                name,
            },
        )
    }

    /// `Err(NotServed(denied))` unless the principal may: for handlers
    /// whose refusal travels the way a coordinator's does.
    pub fn require(
        &self,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
        denied: Err,
    ) -> Result<(), crate::coordinator::runtime::NotServed> {
        if self.authorized(operation, resource_type, name) {
            Ok(())
        } else {
            Err(crate::coordinator::runtime::NotServed(denied.code()))
        }
    }

    /// Apache's `authorizedOperations`: the bit `1 << code` of each of the
    /// resource's `operations` the principal may do.
    pub fn authorized_operations(
        &self,
        resource_type: ResourceType,
        name: &str,
        operations: &[Operation],
    ) -> i32 {
        operations
            .iter()
            .filter(|op| self.authorized(**op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }

    /// Whether the principal may do `operation` on some resource of the type.
    pub fn authorized_any(&self, operation: Operation, resource_type: ResourceType) -> bool {
        self.broker.authorizer.authorize_any(
            &self.principal,
            self.client_addr.ip(),
            operation,
            resource_type,
        )
    }
}

#[derive(Debug, Error)]
pub enum RequestError {
    #[error("request of {0} bytes is too short for a request header")]
    TooShort(usize),
    #[error("unknown or unsupported API key {0}")]
    UnknownApiKey(i16),
    #[error("{key:?} version {version} is not supported (this broker serves {min}..={max})")]
    UnsupportedVersion {
        key: ApiKey,
        version: i16,
        min: i16,
        max: i16,
    },
    #[error("malformed {key:?} v{version} request: {error}")]
    Malformed {
        key: ApiKey,
        version: i16,
        error: String,
    },
}

pub enum Incoming {
    Request {
        header: RequestHeader,
        api_key: ApiKey,
        request: Box<RequestKind>,
    },
    /// ApiVersions at a version newer than we serve: Kafka answers it at v0
    /// with UNSUPPORTED_VERSION and its own ranges so the client can retry.
    UnsupportedApiVersions { correlation_id: i32 },
}

pub fn decode(mut frame: Bytes) -> Result<Incoming, RequestError> {
    if frame.len() < 8 {
        return Err(RequestError::TooShort(frame.len()));
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api_key = ApiKey::try_from(key).map_err(|_| RequestError::UnknownApiKey(key))?;
    let (min, max) = supported_range(api_key).ok_or(RequestError::UnknownApiKey(key))?;
    if version < min || version > max {
        if api_key == ApiKey::ApiVersions && version > max {
            let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
            return Ok(Incoming::UnsupportedApiVersions { correlation_id });
        }
        return Err(RequestError::UnsupportedVersion {
            key: api_key,
            version,
            min,
            max,
        });
    }
    let malformed = |e: anyhow::Error| RequestError::Malformed {
        key: api_key,
        version,
        error: e.to_string(),
    };
    let header = RequestHeader::decode(&mut frame, api_key.request_header_version(version))
        .map_err(malformed)?;
    let request = Box::new(RequestKind::decode(api_key, &mut frame, version).map_err(malformed)?);
    Ok(Incoming::Request {
        header,
        api_key,
        request,
    })
}

/// Encodes a response as a whole frame (length prefix included).
pub fn encode_response(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    response: &ResponseKind,
) -> anyhow::Result<Bytes> {
    // A fetch response carries megabytes: sized up front, it is written
    // once instead of copied on each doubling of a small buffer.
    let capacity = match response {
        ResponseKind::Fetch(r) => r.compute_size(version).unwrap_or(0) + 64,
        _ => 256,
    };
    kaas_client::frame::encode_frame(capacity, |buf| {
        ResponseHeader::default()
            .with_correlation_id(correlation_id)
            .encode(buf, api_key.response_header_version(version))?;
        response.encode(buf, version)
    })
}

/// Runs the handler for one request. `None` means no response is sent
/// (Produce with acks=0).
pub async fn handle(ctx: RequestContext, request: RequestKind) -> Option<ResponseKind> {
    Some(match request {
        RequestKind::ApiVersions(r) => ResponseKind::ApiVersions(api_versions::handle(&ctx, r)),
        RequestKind::Metadata(r) => ResponseKind::Metadata(metadata::handle(&ctx, r).await),
        RequestKind::CreateTopics(r) => {
            ResponseKind::CreateTopics(create_topics::handle(&ctx, r).await)
        }
        RequestKind::DeleteTopics(r) => {
            ResponseKind::DeleteTopics(delete_topics::handle(&ctx, r).await)
        }
        RequestKind::Produce(r) => {
            return produce::handle(&ctx, r).await.map(ResponseKind::Produce)
        }
        RequestKind::Fetch(r) => ResponseKind::Fetch(fetch::handle(&ctx, r).await),
        RequestKind::ListOffsets(r) => {
            ResponseKind::ListOffsets(list_offsets::handle(&ctx, r).await)
        }
        RequestKind::OffsetForLeaderEpoch(r) => {
            ResponseKind::OffsetForLeaderEpoch(offset_for_leader_epoch::handle(&ctx, r).await)
        }
        RequestKind::FindCoordinator(r) => {
            ResponseKind::FindCoordinator(find_coordinator::handle(&ctx, r))
        }
        RequestKind::JoinGroup(r) => ResponseKind::JoinGroup(join_group::handle(&ctx, r).await),
        RequestKind::SyncGroup(r) => ResponseKind::SyncGroup(sync_group::handle(&ctx, r).await),
        RequestKind::Heartbeat(r) => ResponseKind::Heartbeat(heartbeat::handle(&ctx, r).await),
        RequestKind::LeaveGroup(r) => ResponseKind::LeaveGroup(leave_group::handle(&ctx, r).await),
        RequestKind::OffsetCommit(r) => {
            ResponseKind::OffsetCommit(offset_commit::handle(&ctx, r).await)
        }
        RequestKind::OffsetFetch(r) => {
            ResponseKind::OffsetFetch(offset_fetch::handle(&ctx, r).await)
        }
        RequestKind::OffsetDelete(r) => {
            ResponseKind::OffsetDelete(offset_delete::handle(&ctx, r).await)
        }
        RequestKind::DescribeGroups(r) => {
            ResponseKind::DescribeGroups(describe_groups::handle(&ctx, r).await)
        }
        RequestKind::ListGroups(r) => ResponseKind::ListGroups(list_groups::handle(&ctx, r).await),
        RequestKind::InitProducerId(r) => {
            ResponseKind::InitProducerId(init_producer_id::handle(&ctx, r).await)
        }
        RequestKind::DeleteGroups(r) => {
            ResponseKind::DeleteGroups(delete_groups::handle(&ctx, r).await)
        }
        RequestKind::AddPartitionsToTxn(r) => {
            ResponseKind::AddPartitionsToTxn(add_partitions_to_txn::handle(&ctx, r).await)
        }
        RequestKind::EndTxn(r) => ResponseKind::EndTxn(end_txn::handle(&ctx, r).await),
        RequestKind::AddOffsetsToTxn(r) => {
            ResponseKind::AddOffsetsToTxn(add_offsets_to_txn::handle(&ctx, r).await)
        }
        RequestKind::TxnOffsetCommit(r) => {
            ResponseKind::TxnOffsetCommit(txn_offset_commit::handle(&ctx, r).await)
        }
        RequestKind::WriteTxnMarkers(r) => {
            ResponseKind::WriteTxnMarkers(write_txn_markers::handle(&ctx, r).await)
        }
        RequestKind::DescribeProducers(r) => {
            ResponseKind::DescribeProducers(describe_producers::handle(&ctx, r).await)
        }
        RequestKind::DescribeTransactions(r) => {
            ResponseKind::DescribeTransactions(describe_transactions::handle(&ctx, r).await)
        }
        RequestKind::ListTransactions(r) => {
            ResponseKind::ListTransactions(list_transactions::handle(&ctx, r).await)
        }
        RequestKind::DescribeConfigs(r) => {
            ResponseKind::DescribeConfigs(describe_configs::handle(&ctx, r).await)
        }
        RequestKind::DescribeLogDirs(r) => {
            ResponseKind::DescribeLogDirs(describe_log_dirs::handle(&ctx, r).await)
        }
        RequestKind::DescribeTopicPartitions(r) => {
            ResponseKind::DescribeTopicPartitions(describe_topic_partitions::handle(&ctx, r))
        }
        RequestKind::DescribeCluster(r) => {
            ResponseKind::DescribeCluster(describe_cluster::handle(&ctx, r))
        }
        RequestKind::AlterPartitionReassignments(r) => {
            ResponseKind::AlterPartitionReassignments(partition_reassignments::alter(&ctx, r).await)
        }
        RequestKind::ListPartitionReassignments(r) => {
            ResponseKind::ListPartitionReassignments(partition_reassignments::list(&ctx, r))
        }
        RequestKind::AlterReplicaLogDirs(r) => {
            ResponseKind::AlterReplicaLogDirs(alter_replica_log_dirs::handle(&ctx, r))
        }
        RequestKind::DescribeQuorum(r) => {
            ResponseKind::DescribeQuorum(describe_quorum::handle(&ctx, r))
        }
        RequestKind::ElectLeaders(r) => {
            ResponseKind::ElectLeaders(elect_leaders::handle(&ctx, r).await)
        }
        RequestKind::ListConfigResources(r) => {
            ResponseKind::ListConfigResources(list_config_resources::handle(&ctx, r))
        }
        RequestKind::CreatePartitions(r) => {
            ResponseKind::CreatePartitions(create_partitions::handle(&ctx, r).await)
        }
        RequestKind::DeleteRecords(r) => {
            ResponseKind::DeleteRecords(delete_records::handle(&ctx, r).await)
        }
        RequestKind::AlterConfigs(r) => {
            ResponseKind::AlterConfigs(alter_configs::handle_legacy(&ctx, r).await)
        }
        RequestKind::IncrementalAlterConfigs(r) => {
            ResponseKind::IncrementalAlterConfigs(alter_configs::handle_incremental(&ctx, r).await)
        }
        RequestKind::ConsumerGroupHeartbeat(r) => {
            ResponseKind::ConsumerGroupHeartbeat(consumer_group_heartbeat::handle(&ctx, r).await)
        }
        RequestKind::ConsumerGroupDescribe(r) => {
            ResponseKind::ConsumerGroupDescribe(consumer_group_describe::handle(&ctx, r).await)
        }
        RequestKind::DescribeAcls(r) => ResponseKind::DescribeAcls(describe_acls::handle(&ctx, r)),
        RequestKind::CreateAcls(r) => ResponseKind::CreateAcls(create_acls::handle(&ctx, r).await),
        RequestKind::DeleteAcls(r) => ResponseKind::DeleteAcls(delete_acls::handle(&ctx, r).await),
        // Here only on a listener without SASL, or once authenticated
        // (Apache's KafkaApis answers the same).
        RequestKind::SaslHandshake(_) => ResponseKind::SaslHandshake(
            SaslHandshakeResponse::default().with_error_code(Err::IllegalSaslState.code()),
        ),
        RequestKind::SaslAuthenticate(_) => ResponseKind::SaslAuthenticate(
            SaslAuthenticateResponse::default()
                .with_error_code(Err::IllegalSaslState.code())
                .with_error_message(Some(str_bytes(
                    "SaslAuthenticate on a connection that is not authenticating".into(),
                ))),
        ),
        RequestKind::DescribeUserScramCredentials(r) => ResponseKind::DescribeUserScramCredentials(
            describe_user_scram_credentials::handle(&ctx, r),
        ),
        RequestKind::AlterUserScramCredentials(r) => ResponseKind::AlterUserScramCredentials(
            alter_user_scram_credentials::handle(&ctx, r).await,
        ),
        RequestKind::DescribeClientQuotas(r) => {
            ResponseKind::DescribeClientQuotas(describe_client_quotas::handle(&ctx, r))
        }
        RequestKind::AlterClientQuotas(r) => {
            ResponseKind::AlterClientQuotas(alter_client_quotas::handle(&ctx, r).await)
        }
        other => {
            // decode() only lets SUPPORTED keys through; reaching this is a
            // bug in the table, which the dispatch test guards.
            error!(request = ?std::mem::discriminant(&other), "no handler for an advertised API");
            return None;
        }
    })
}

/// Shorthand for error codes.
pub(crate) use kafka_protocol::ResponseError as Err;

/// The error code for a partition that could not be opened: still held by
/// the previous leader is retriable NOT_LEADER_OR_FOLLOWER.
pub(crate) fn open_error_code(e: &std::io::Error) -> i16 {
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Err::NotLeaderOrFollower.code()
    } else {
        Err::KafkaStorageError.code()
    }
}

/// A request's `current_leader_epoch` against the partition's (`routing`'s,
/// on its leader), as Apache's `Partition.checkCurrentLeaderEpoch`: -1
/// asks for no check; an older one is FENCED_LEADER_EPOCH (the client's
/// metadata is stale), a newer one UNKNOWN_LEADER_EPOCH (this broker's is).
pub(crate) fn leader_epoch_error(routing: &kaas_shared::Routing, requested: i32) -> i16 {
    let current = routing.leader_epoch();
    match requested {
        -1 => 0,
        r if r < current => Err::FencedLeaderEpoch.code(),
        r if r > current => Err::UnknownLeaderEpoch.code(),
        _ => 0,
    }
}

/// The wire code for a group request this broker cannot serve now.
pub(crate) fn group_error(e: crate::coordinator::runtime::NotServed) -> i16 {
    e.0
}

/// Whether the principal may not do `operation` on a topic a request
/// names, by name or by id (`meta` is what the id resolved to). Asked
/// before anyone looks whether the topic exists, as KafkaApis; an id that
/// resolves to nothing is not denied here (it answers UNKNOWN_TOPIC_ID).
pub(crate) fn topic_denied(
    ctx: &RequestContext,
    operation: Operation,
    by_id: bool,
    name: &str,
    meta: Option<&crate::storage::TopicMeta>,
) -> bool {
    let name = match (by_id, meta) {
        (true, Some(m)) => m.name.as_str(),
        (true, None) => return false,
        (false, _) => name,
    };
    !ctx.authorized(operation, ResourceType::Topic, name)
}

pub(crate) fn str_bytes(s: String) -> kafka_protocol::protocol::StrBytes {
    kafka_protocol::protocol::StrBytes::from_string(s)
}

/// The client's address as Apache reports it (`InetAddress.toString()`).
pub(crate) fn client_host(ctx: &RequestContext) -> String {
    format!("/{}", ctx.client_addr.ip())
}

/// The node endpoint of a broker, for NOT_LEADER answers that name the
/// new leader (KIP-951).
pub(crate) fn broker_endpoint(ctx: &RequestContext, id: i32) -> Option<(String, i32)> {
    let routing = ctx.broker.routing()?;
    let (host, port) = routing.broker(id)?.endpoint(ctx.listener.name())?;
    Some((host.to_string(), i32::from(port)))
}

#[cfg(test)]
mod tests;
