//! FindCoordinator (key 10): the one group API any broker answers.
//! Groups resolve through both tiers (explicit entry, else the hash);
//! transactional ids through the hash tier.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Err, RequestContext};
use crate::auth::{Operation, ResourceType};

const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;

pub fn handle(ctx: &RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let v = ctx.api_version;
    let keys: Vec<StrBytes> = if v >= 4 {
        req.coordinator_keys.clone()
    } else {
        vec![req.key.clone()]
    };
    let results: Vec<Coordinator> = keys
        .into_iter()
        .map(|k| resolve(ctx, req.key_type, k))
        .collect();
    if v >= 4 {
        return FindCoordinatorResponse::default().with_coordinators(results);
    }
    let c = results.into_iter().next().unwrap_or_default();
    FindCoordinatorResponse::default()
        .with_error_code(c.error_code)
        .with_error_message(if v >= 1 { c.error_message } else { None })
        .with_node_id(c.node_id)
        .with_host(c.host)
        .with_port(c.port)
}

fn resolve(ctx: &RequestContext, key_type: i8, key: StrBytes) -> Coordinator {
    let failed = |key: StrBytes, code: i16, message: &str| {
        Coordinator::default()
            .with_key(key)
            .with_node_id(BrokerId(-1))
            .with_host(StrBytes::from_static_str(""))
            .with_port(-1)
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message.to_string())))
    };
    if key_type != GROUP && key_type != TRANSACTION {
        return failed(
            key,
            Err::InvalidRequest.code(),
            "unknown coordinator key type",
        );
    }
    // Before routing: a principal that may not describe the key learns
    // nothing of where it lives or whether it exists.
    let (resource_type, denied, message) = if key_type == GROUP {
        (
            ResourceType::Group,
            Err::GroupAuthorizationFailed,
            "Group authorization failed.",
        )
    } else {
        (
            ResourceType::TransactionalId,
            Err::TransactionalIdAuthorizationFailed,
            "Transactional Id authorization failed.",
        )
    };
    if !ctx.authorized(Operation::Describe, resource_type, key.as_str()) {
        return failed(key, denied.code(), message);
    }
    let Some(routing) = ctx.broker.routing() else {
        return failed(
            key,
            Err::CoordinatorNotAvailable.code(),
            "no assignment yet",
        );
    };
    let owner = if key_type == GROUP {
        routing.owner_of_group(key.as_str())
    } else {
        routing.owner_of_transaction(key.as_str())
    };
    let Some(broker) = owner.and_then(|id| routing.broker(id)) else {
        return failed(
            key,
            Err::CoordinatorNotAvailable.code(),
            "no broker is alive",
        );
    };
    // At its address on this request's listener.
    let Some((host, port)) = broker.endpoint(ctx.listener.name()) else {
        return failed(
            key,
            Err::CoordinatorNotAvailable.code(),
            "the coordinator has no such listener",
        );
    };
    Coordinator::default()
        .with_key(key)
        .with_node_id(BrokerId(broker.id))
        .with_host(StrBytes::from_string(host.to_string()))
        .with_port(i32::from(port))
}
