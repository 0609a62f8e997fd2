//! AddOffsetsToTxn (key 25): the consumer group whose offsets the
//! transaction will commit joins the transaction, so its marker reaches the
//! group's coordinator.

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use super::{Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::txn::core::{TopicPartition, TxnVersion};

pub async fn handle(ctx: &RequestContext, req: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
    let resp = AddOffsetsToTxnResponse::default();
    if !ctx.authorized(
        Operation::Write,
        ResourceType::TransactionalId,
        req.transactional_id.0.as_str(),
    ) {
        return resp.with_error_code(Err::TransactionalIdAuthorizationFailed.code());
    }
    if !ctx.authorized(
        Operation::Read,
        ResourceType::Group,
        req.group_id.0.as_str(),
    ) {
        return resp.with_error_code(Err::GroupAuthorizationFailed.code());
    }
    if req.group_id.0.is_empty() {
        return resp.with_error_code(Err::InvalidGroupId.code());
    }
    let partitions = [TopicPartition::offsets_of(req.group_id.0.as_str())].into();
    let error = match ctx
        .broker
        .txns
        .add_partitions(
            req.transactional_id.0.as_str(),
            req.producer_id.0,
            req.producer_epoch,
            &partitions,
            TxnVersion::V0,
        )
        .await
    {
        Ok(answer) => answer.error(),
        Err(e) => e.0,
    };
    // Clients before v2 know INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED.
    let error = if ctx.api_version < 2 && error == Err::ProducerFenced.code() {
        Err::InvalidProducerEpoch.code()
    } else {
        error
    };
    resp.with_error_code(error)
}
