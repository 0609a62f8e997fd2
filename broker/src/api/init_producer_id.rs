//! InitProducerId (key 22): idempotent producers get a producer id from
//! the range this broker process claimed (`storage::producer_ids`);
//! transactional producers are answered by their transactional id's
//! coordinator (a new id, an epoch bump that fences the previous producer,
//! KIP-360 recovery).

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use tracing::warn;

use super::{Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::txn::core::TxnAnswer;

pub async fn handle(ctx: &RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse {
    let resp = InitProducerIdResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    // KafkaApis asks first: Write on the transactional id, or for an
    // idempotent producer IdempotentWrite on the cluster or Write on some
    // topic.
    let allowed = match &req.transactional_id {
        Some(id) => ctx
            .authorized(
                Operation::Write,
                ResourceType::TransactionalId,
                id.0.as_str(),
            )
            .then_some(())
            .ok_or(Err::TransactionalIdAuthorizationFailed),
        None => (ctx.authorized(
            Operation::IdempotentWrite,
            ResourceType::Cluster,
            CLUSTER_NAME,
        ) || ctx.authorized_any(Operation::Write, ResourceType::Topic))
        .then_some(())
        .ok_or(Err::ClusterAuthorizationFailed),
    };
    if let Err(denied) = allowed {
        return resp.with_error_code(denied.code());
    }
    // (-1, -1): a new producer; one of them -1: malformed.
    let expected = match (req.producer_id.0, req.producer_epoch) {
        (-1, -1) => None,
        (id, epoch) if id < 0 || epoch < 0 => {
            return resp.with_error_code(Err::InvalidRequest.code())
        }
        (id, epoch) => Some((id, epoch)),
    };
    if let Some(id) = &req.transactional_id {
        if req.enable_2_pc || req.keep_prepared_txn {
            // Two-phase commit (KIP-939) is not served.
            return resp.with_error_code(Err::UnsupportedVersion.code());
        }
        let answer = ctx
            .broker
            .txns
            .init_producer_id(id.0.as_str(), req.transaction_timeout_ms, expected)
            .await;
        return match answer {
            Ok(TxnAnswer::InitProducerId {
                producer_id,
                producer_epoch,
                error,
            }) => {
                // Clients before v4 know INVALID_PRODUCER_EPOCH only.
                let error = if ctx.api_version < 4 && error == Err::ProducerFenced.code() {
                    Err::InvalidProducerEpoch.code()
                } else {
                    error
                };
                resp.with_producer_id(ProducerId(producer_id))
                    .with_producer_epoch(producer_epoch)
                    .with_error_code(error)
            }
            Ok(other) => resp.with_error_code(other.error()),
            Err(e) => resp.with_error_code(e.0),
        };
    }
    // KIP-360: a producer that knows its id asks for a bumped epoch.
    if let Some((id, epoch)) = expected {
        if ctx.api_version >= 3 && epoch < i16::MAX - 1 {
            return resp
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(epoch + 1);
        }
    }
    let allocator = ctx.broker.producer_ids.clone();
    match tokio::task::spawn_blocking(move || allocator.allocate()).await {
        Ok(Ok(id)) => resp.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Ok(Err(e)) => {
            warn!(error = %e, "cannot allocate a producer id");
            resp.with_error_code(Err::KafkaStorageError.code())
        }
        Err(_) => resp.with_error_code(Err::UnknownServerError.code()),
    }
}
