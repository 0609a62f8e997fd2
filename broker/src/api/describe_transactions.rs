//! DescribeTransactions (key 65): each transactional id's state, producer,
//! timeout, start time and partitions, from its coordinator.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::{Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::txn::core::TxnState as State;

pub async fn handle(
    ctx: &RequestContext,
    req: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let mut resp = DescribeTransactionsResponse::default();
    for id in req.transactional_ids {
        let mut out = TransactionState::default()
            .with_transactional_id(id.clone())
            .with_transaction_state(StrBytes::from_static_str(""))
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
            .with_transaction_start_time_ms(-1);
        if !ctx.authorized(
            Operation::Describe,
            ResourceType::TransactionalId,
            id.0.as_str(),
        ) {
            resp.transaction_states
                .push(out.with_error_code(Err::TransactionalIdAuthorizationFailed.code()));
            continue;
        }
        if id.0.is_empty() {
            resp.transaction_states
                .push(out.with_error_code(Err::InvalidRequest.code()));
            continue;
        }
        let out = match ctx.broker.txns.describe(id.0.as_str()).await {
            Err(e) => out.with_error_code(e.0),
            Ok(None) => out.with_error_code(Err::TransactionalIdNotFound.code()),
            Ok(Some(m)) if m.state == State::Dead => {
                out.with_error_code(Err::TransactionalIdNotFound.code())
            }
            Ok(Some(m)) => {
                let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
                for p in &m.partitions {
                    // A group's offsets show as the offsets topic, as Apache's do.
                    match p.offsets_group() {
                        Some(_) => {
                            let offsets = topics.entry("__consumer_offsets").or_default();
                            if offsets.is_empty() {
                                offsets.push(0);
                            }
                        }
                        None => topics.entry(&p.topic).or_default().push(p.partition),
                    }
                }
                out = out
                    .with_transaction_state(StrBytes::from_static_str(m.state.name()))
                    .with_transaction_timeout_ms(m.timeout_ms)
                    .with_transaction_start_time_ms(m.start_ms)
                    .with_producer_id(ProducerId(m.producer_id))
                    .with_producer_epoch(m.producer_epoch);
                // Only the topics the principal may describe.
                out.topics = topics
                    .into_iter()
                    .filter(|(topic, _)| {
                        ctx.authorized(Operation::Describe, ResourceType::Topic, topic)
                    })
                    .map(|(topic, partitions)| {
                        TopicData::default()
                            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                            .with_partitions(partitions)
                    })
                    .collect();
                out
            }
        };
        resp.transaction_states.push(out);
    }
    resp
}
