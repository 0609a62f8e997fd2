//! Produce (key 0): validate, append, fsync, then acknowledge.
//!
//! Every acknowledgement (acks=1 and acks=all alike) means the batch is
//! fsynced: with one copy of the data on the shared volume, durability is
//! the fsync. acks=0 gets no response, as in Kafka.

use futures::future::join_all;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::{BrokerId, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use tracing::{debug, warn};

use super::{broker_endpoint, open_error_code, topic_denied, Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::storage::batch::{self, BatchError};
use crate::storage::log::AppendError;
use crate::storage::partition::Durable;
use crate::storage::validator::{self, Refusal};
use crate::storage::PartitionRef;
use crate::txn::core::TopicPartition;

struct PartitionOutcome {
    response: PartitionProduceResponse,
    /// The leader to tell the client about on NOT_LEADER_OR_FOLLOWER.
    leader_hint: Option<i32>,
}

impl PartitionOutcome {
    fn failed(mut response: PartitionProduceResponse, code: i16, message: String) -> Self {
        response.error_code = code;
        response.error_message = Some(StrBytes::from_string(message));
        PartitionOutcome {
            response,
            leader_hint: None,
        }
    }
}

/// A partition's part of a Produce once its batches are in the log, or
/// refused.
enum Staged {
    Answered(PartitionOutcome),
    Appended(Box<Appending>),
}

/// Batches in the log, acknowledged once durable.
struct Appending {
    partition: PartitionRef,
    durable: Durable,
    response: PartitionProduceResponse,
    size: u64,
    duplicate: bool,
}

impl From<PartitionOutcome> for Staged {
    fn from(outcome: PartitionOutcome) -> Self {
        Staged::Answered(outcome)
    }
}

pub async fn handle(ctx: &RequestContext, req: ProduceRequest) -> Option<ProduceResponse> {
    let acks = req.acks;
    let transactional_id = req.transactional_id.as_ref().map(|t| t.0.to_string());
    let by_id = ctx.api_version >= 13;
    let mut topic_futures = Vec::with_capacity(req.topic_data.len());
    for topic in req.topic_data {
        let ctx = ctx.clone();
        let transactional_id = transactional_id.clone();
        topic_futures.push(async move {
            let meta = if by_id {
                ctx.broker.storage.topics.get_by_id(topic.topic_id)
            } else {
                ctx.broker.storage.topics.get(topic.name.0.as_str())
            };
            let unknown = if by_id {
                Err::UnknownTopicId.code()
            } else {
                Err::UnknownTopicOrPartition.code()
            };
            let denied = topic_denied(
                &ctx,
                Operation::Write,
                by_id,
                topic.name.0.as_str(),
                meta.as_deref(),
            );
            let parts = join_all(topic.partition_data.into_iter().map(|p| {
                let meta = meta.clone();
                let ctx = ctx.clone();
                let transactional_id = transactional_id.clone();
                async move {
                    let response = PartitionProduceResponse::default().with_index(p.index);
                    let refused = |mut response: PartitionProduceResponse, code| {
                        response.error_code = code;
                        Staged::Answered(PartitionOutcome {
                            response,
                            leader_hint: None,
                        })
                    };
                    if denied {
                        return refused(response, Err::TopicAuthorizationFailed.code());
                    }
                    let Some(meta) = meta else {
                        return refused(response, unknown);
                    };
                    if !(-1..=1).contains(&acks) {
                        return refused(response, Err::InvalidRequiredAcks.code());
                    }
                    produce_partition(&ctx, &meta, p.index, p.records, transactional_id.as_deref())
                        .await
                }
            }))
            .await;
            (topic.name, topic.topic_id, parts)
        });
    }
    let staged = join_all(topic_futures).await;
    // Every batch is in its log: the connection's next Produce may append
    // behind them while these wait to be durable.
    ctx.applied.fire();
    let results = join_all(
        staged
            .into_iter()
            .map(|(name, topic_id, parts)| async move {
                let parts = join_all(parts.into_iter().map(|p| acknowledged(ctx, p))).await;
                (name, topic_id, parts)
            }),
    )
    .await;
    if acks == 0 {
        return None;
    }
    let mut resp = ProduceResponse::default();
    let mut hinted = Vec::new();
    for (name, topic_id, parts) in results {
        let mut topic = TopicProduceResponse::default()
            .with_name(name)
            .with_topic_id(topic_id);
        for outcome in parts {
            if let Some(id) = outcome.leader_hint {
                hinted.push(id);
            }
            topic.partition_responses.push(outcome.response);
        }
        resp.responses.push(topic);
    }
    if ctx.api_version >= 10 {
        hinted.sort_unstable();
        hinted.dedup();
        for id in hinted {
            if let Some((host, port)) = broker_endpoint(ctx, id) {
                resp.node_endpoints.push(
                    NodeEndpoint::default()
                        .with_node_id(BrokerId(id))
                        .with_host(StrBytes::from_string(host))
                        .with_port(port),
                );
            }
        }
    }
    Some(resp)
}

async fn produce_partition(
    ctx: &RequestContext,
    meta: &crate::storage::TopicMeta,
    index: i32,
    records: Option<bytes::Bytes>,
    transactional_id: Option<&str>,
) -> Staged {
    let mut response = PartitionProduceResponse::default().with_index(index);
    let fail = |response, code, message| PartitionOutcome::failed(response, code, message).into();
    if index < 0 || index >= meta.partitions {
        response.error_code = Err::UnknownTopicOrPartition.code();
        return PartitionOutcome {
            response,
            leader_hint: None,
        }
        .into();
    }
    let broker = &ctx.broker;
    let routing = broker.routing();
    let leader = routing
        .as_ref()
        .and_then(|r| r.owner_of_partition(&meta.name, index));
    if leader != Some(broker.id()) {
        response.error_code = Err::NotLeaderOrFollower.code();
        if ctx.api_version >= 10 {
            response.current_leader = LeaderIdAndEpoch::default()
                .with_leader_id(BrokerId(leader.unwrap_or(-1)))
                .with_leader_epoch(match (&routing, leader) {
                    (Some(r), Some(_)) => r.leader_epoch(),
                    _ => -1,
                });
        }
        return PartitionOutcome {
            response,
            leader_hint: leader,
        }
        .into();
    }
    if let Err(why) = broker.tenancy.status() {
        // The volume does not answer (or this process was fenced): nothing
        // could be acknowledged; the client looks for the leader again.
        return fail(response, Err::NotLeaderOrFollower.code(), why);
    }
    let records = records.unwrap_or_default();
    // The producer of the request's transactional batches, if any.
    let transactional = match batch::split_batches(&records) {
        Ok(parts) if !parts.is_empty() => parts
            .iter()
            .find(|(_, h)| h.is_transactional())
            .map(|(_, h)| (h.producer_id, h.producer_epoch)),
        Ok(_) => {
            return fail(
                response,
                Err::CorruptMessage.code(),
                "the request carries no record batch".into(),
            )
        }
        Err(BatchError::UnsupportedMagic(m)) => {
            return fail(
                response,
                Err::UnsupportedForMessageFormat.code(),
                format!("record batch magic v{m} is not supported; only v2"),
            )
        }
        Err(e) => {
            warn!(topic = %meta.name, partition = index, error = %e, client = %ctx.client_id,
                  "refusing a corrupt record batch");
            return fail(response, Err::CorruptMessage.code(), e.to_string());
        }
    };
    let partition = match broker.storage.partition(meta, index).await {
        Ok(p) => p,
        Err(e) => {
            warn!(topic = %meta.name, partition = index, error = %e, "cannot open partition");
            return fail(response, open_error_code(&e), e.to_string());
        }
    };
    if let Some((producer_id, producer_epoch)) = transactional {
        let Some(id) = transactional_id else {
            return fail(
                response,
                Err::TransactionalIdAuthorizationFailed.code(),
                "transactional records without a transactional id".into(),
            );
        };
        if !ctx.authorized(Operation::Write, ResourceType::TransactionalId, id) {
            return fail(
                response,
                Err::TransactionalIdAuthorizationFailed.code(),
                format!("{} may not write transactional id {id}", ctx.principal),
            );
        }
        // The first batch of a transaction to this partition is checked
        // with the coordinator (KIP-890; a transaction version 2 producer's
        // is added by it): appended unchecked, a producer that never ends
        // its transaction would hold every read_committed reader back.
        if !partition.has_ongoing_transaction(producer_id, producer_epoch) {
            let code = crate::api::txn_verify::check_produce(
                ctx,
                id,
                producer_id,
                producer_epoch,
                TopicPartition::new(meta.name.to_string(), index),
            )
            .await;
            if code != 0 {
                let why = Err::try_from_code(code).map_or(code.to_string(), |e| format!("{e:?}"));
                return fail(
                    response,
                    code,
                    format!("the transaction's coordinator did not admit the batch: {why}"),
                );
            }
        }
    }
    let tp = validator::Tp(&meta.name, index);
    let now = crate::storage::log::wall_clock_ms();
    let validated = match validator::validate(records.to_vec(), tp, &partition.record_policy(), now)
    {
        Ok(v) => v,
        Err(refusal) => {
            debug!(partition = %tp, error = %refusal.message, client = %ctx.client_id,
                   "refusing records");
            return refused(response, refusal).into();
        }
    };
    let size = validated.data.len() as u64;
    // The leader check's routing names this broker, so it is there.
    let epoch = routing.as_ref().map_or(0, |r| r.leader_epoch());
    match partition.append_unsynced(validated.data, epoch).await {
        Ok((appended, durable)) => {
            debug!(topic = %meta.name, partition = index, base = appended.base_offset,
                   last = appended.last_offset, "appended");
            response.base_offset = appended.base_offset;
            response.log_append_time_ms = validated.log_append_time_ms;
            Staged::Appended(Box::new(Appending {
                partition,
                durable,
                response,
                size,
                duplicate: appended.duplicate,
            }))
        }
        Err(AppendError::Refused(code)) => {
            response.error_code = code;
            PartitionOutcome {
                response,
                leader_hint: None,
            }
            .into()
        }
        Err(AppendError::TooLarge { size, max }) => fail(
            response,
            Err::MessageTooLarge.code(),
            format!(
                "The record batch size in the append to {}-{index} is {size} bytes which exceeds the maximum configured value of {max}.",
                meta.name
            ),
        ),
        Err(AppendError::Io(e)) => {
            warn!(topic = %meta.name, partition = index, error = %e, "append failed");
            // WouldBlock: another generation took the partition over.
            fail(response, open_error_code(&e), format!("write failed: {e}"))
        }
    }
}

/// A partition's outcome once its append is durable (or failed to be).
async fn acknowledged(ctx: &RequestContext, staged: Staged) -> PartitionOutcome {
    let mut a = match staged {
        Staged::Answered(outcome) => return outcome,
        Staged::Appended(a) => *a,
    };
    if let Err(e) = a.partition.made_durable(a.durable).await {
        warn!(topic = %a.partition.topic, partition = a.partition.index, error = %e, "append failed");
        return PartitionOutcome::failed(
            a.response,
            open_error_code(&e),
            format!("write failed: {e}"),
        );
    }
    if !a.duplicate {
        ctx.broker.metrics.produce_bytes.inc_by(a.size);
    }
    a.response.log_start_offset = a.partition.log_start_offset();
    PartitionOutcome {
        response: a.response,
        leader_hint: None,
    }
}

/// The response to records the validator refused: Apache's error, its
/// message and each failing record's index and message.
fn refused(mut response: PartitionProduceResponse, refusal: Refusal) -> PartitionOutcome {
    response.error_code = refusal.error.code();
    response.error_message = Some(StrBytes::from_string(refusal.message));
    response.record_errors = refusal
        .record_errors
        .into_iter()
        .map(|(index, message)| {
            BatchIndexAndErrorMessage::default()
                .with_batch_index(index)
                .with_batch_index_error_message(Some(StrBytes::from_string(message)))
        })
        .collect();
    PartitionOutcome {
        response,
        leader_hint: None,
    }
}
