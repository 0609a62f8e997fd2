//! ListTransactions (key 66): the transactional ids this broker
//! coordinates, filtered by state (unknown names echoed back), producer id,
//! running longer than `duration_filter` (v1) and a pattern the whole id
//! must match (v2).

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{ListTransactionsRequest, ListTransactionsResponse, ProducerId};
use kafka_protocol::protocol::StrBytes;

use super::{Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::txn::core::TxnState as State;

pub async fn handle(
    ctx: &RequestContext,
    req: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let mut resp = ListTransactionsResponse::default();
    let mut states = Vec::new();
    for name in &req.state_filters {
        match State::from_name(name.as_str()) {
            Some(s) => states.push(s),
            None => resp.unknown_state_filters.push(name.clone()),
        }
    }
    let pattern = match req
        .transactional_id_pattern
        .as_ref()
        .filter(|p| !p.is_empty())
    {
        None => None,
        Some(p) => match regex::Regex::new(&format!("^(?:{})$", p.as_str())) {
            Ok(re) => Some(re),
            Err(_) => return resp.with_error_code(Err::InvalidRegularExpression.code()),
        },
    };
    let all = match ctx.broker.txns.list().await {
        Ok(all) => all,
        Err(e) => return resp.with_error_code(e.0),
    };
    let now = crate::storage::log::wall_clock_ms();
    for m in all {
        let listed = m.state != State::Dead
            && (states.is_empty() || states.contains(&m.state))
            && (req.producer_id_filters.is_empty()
                || req.producer_id_filters.contains(&ProducerId(m.producer_id)))
            && (req.duration_filter < 0 || now - m.start_ms > req.duration_filter)
            && pattern
                .as_ref()
                .is_none_or(|re| re.is_match(&m.transactional_id))
            // Only the ids the principal may describe.
            && ctx.authorized(
                Operation::Describe,
                ResourceType::TransactionalId,
                &m.transactional_id,
            );
        if listed {
            resp.transaction_states.push(
                TransactionState::default()
                    .with_transactional_id(kafka_protocol::messages::TransactionalId(
                        StrBytes::from_string(m.transactional_id),
                    ))
                    .with_producer_id(ProducerId(m.producer_id))
                    .with_transaction_state(StrBytes::from_static_str(m.state.name())),
            );
        }
    }
    resp
}
