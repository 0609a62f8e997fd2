//! EndTxn (key 26): commit or abort a transaction. The answer waits for
//! the PrepareCommit/PrepareAbort to be durable and then, up to 100 ms, for
//! the markers and the completion (`txn::manager`'s
//! `HOLD_END_TXN_ANSWER`), so the producer's next transaction is not
//! refused with CONCURRENT_TRANSACTIONS.

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId};

use super::{Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::txn::core::{TxnAnswer, TxnResult, TxnVersion};

pub async fn handle(ctx: &RequestContext, req: EndTxnRequest) -> EndTxnResponse {
    let resp = EndTxnResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    if !ctx.authorized(
        Operation::Write,
        ResourceType::TransactionalId,
        req.transactional_id.0.as_str(),
    ) {
        return resp.with_error_code(Err::TransactionalIdAuthorizationFailed.code());
    }
    let answer = ctx
        .broker
        .txns
        .end_txn(
            req.transactional_id.0.as_str(),
            req.producer_id.0,
            req.producer_epoch,
            TxnResult::from_committed(req.committed),
            TxnVersion::of_end_txn(ctx.api_version),
        )
        .await;
    match answer {
        Ok(TxnAnswer::EndTxn {
            error,
            producer_id,
            producer_epoch,
        }) => resp
            .with_error_code(old_client_code(ctx.api_version, error))
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(producer_epoch),
        Ok(other) => resp.with_error_code(other.error()),
        Err(e) => resp.with_error_code(e.0),
    }
}

/// Clients before v2 know INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED.
fn old_client_code(version: i16, error: i16) -> i16 {
    if version < 2 && error == Err::ProducerFenced.code() {
        Err::InvalidProducerEpoch.code()
    } else {
        error
    }
}
