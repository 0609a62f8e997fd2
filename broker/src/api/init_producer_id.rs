//! InitProducerId (key 22) for idempotent producers (the default of the
//! Java client and kafka-python). Transactions are not served: a request
//! naming a transactional id is refused.

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use tracing::warn;

use super::{Err, RequestContext};

pub async fn handle(ctx: &RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse {
    let resp = InitProducerIdResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    if req.transactional_id.is_some() {
        warn!(client = %ctx.client_id, "transactional producers are not supported");
        return resp.with_error_code(Err::TransactionalIdAuthorizationFailed.code());
    }
    // KIP-360: a producer that knows its id asks for a bumped epoch.
    if ctx.api_version >= 3
        && req.producer_id.0 >= 0
        && req.producer_epoch >= 0
        && req.producer_epoch < i16::MAX - 1
    {
        return resp
            .with_producer_id(req.producer_id)
            .with_producer_epoch(req.producer_epoch + 1);
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
