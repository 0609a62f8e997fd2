//! AddPartitionsToTxn (key 24): v0-3 from a transactional producer (one
//! transaction: every partition gets the coordinator's one answer); v4+
//! from brokers, several transactions at once, `verify_only` asking
//! whether partitions are in a producer's open transaction (KIP-890).

use std::collections::BTreeSet;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, TopicName};

use super::{Err, RequestContext};
use crate::txn::core::{TopicPartition, TxnVersion};

pub async fn handle(
    ctx: &RequestContext,
    req: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let mut resp = AddPartitionsToTxnResponse::default();
    if ctx.api_version <= 3 {
        let id = req.v3_and_below_transactional_id.0.to_string();
        let error = add(
            ctx,
            &id,
            req.v3_and_below_producer_id.0,
            req.v3_and_below_producer_epoch,
            &req.v3_and_below_topics,
        )
        .await;
        // Old clients know INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED.
        let error = match error {
            e if ctx.api_version < 2 && e == Err::ProducerFenced.code() => {
                Err::InvalidProducerEpoch.code()
            }
            e => e,
        };
        resp.results_by_topic_v3_and_below = results(&req.v3_and_below_topics, |_, _| error);
        return resp;
    }
    for txn in &req.transactions {
        let id = txn.transactional_id.0.to_string();
        let answers = if txn.verify_only {
            let partitions = partition_set(&txn.topics);
            match ctx
                .broker
                .txns
                .verify_partitions(&id, txn.producer_id.0, txn.producer_epoch, &partitions)
                .await
            {
                Ok(verified) => verified,
                Err(e) => partitions.into_iter().map(|p| (p, e.0)).collect(),
            }
        } else {
            let error = add(ctx, &id, txn.producer_id.0, txn.producer_epoch, &txn.topics).await;
            partition_set(&txn.topics)
                .into_iter()
                .map(|p| (p, error))
                .collect()
        };
        let code_of = |topic: &str, partition: i32| {
            answers
                .iter()
                .find(|(p, _)| p.topic == topic && p.partition == partition)
                .map_or(Err::UnknownServerError.code(), |(_, e)| *e)
        };
        resp.results_by_transaction.push(
            AddPartitionsToTxnResult::default()
                .with_transactional_id(txn.transactional_id.clone())
                .with_topic_results(results(&txn.topics, code_of)),
        );
    }
    resp
}

/// Adds the partitions to the transaction; the one error for them all.
async fn add(
    ctx: &RequestContext,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    topics: &[AddPartitionsToTxnTopic],
) -> i16 {
    // Partitions of topics that do not exist fail the request, the others
    // are not attempted (Apache's answer before it asks the coordinator).
    let unknown = topics.iter().any(|t| {
        ctx.broker
            .storage
            .topics
            .get(t.name.0.as_str())
            .is_none_or(|m| t.partitions.iter().any(|p| !(0..m.partitions).contains(p)))
    });
    if unknown {
        return Err::UnknownTopicOrPartition.code();
    }
    let partitions = partition_set(topics);
    match ctx
        .broker
        .txns
        .add_partitions(
            transactional_id,
            producer_id,
            producer_epoch,
            &partitions,
            TxnVersion::of_add_partitions(ctx.api_version),
        )
        .await
    {
        Ok(answer) => answer.error(),
        Err(e) => e.0,
    }
}

fn partition_set(topics: &[AddPartitionsToTxnTopic]) -> BTreeSet<TopicPartition> {
    topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| TopicPartition::new(t.name.0.to_string(), *p))
        })
        .collect()
}

fn results(
    topics: &[AddPartitionsToTxnTopic],
    code: impl Fn(&str, i32) -> i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .iter()
        .map(|t| {
            AddPartitionsToTxnTopicResult::default()
                .with_name(TopicName(t.name.0.clone()))
                .with_results_by_partition(
                    t.partitions
                        .iter()
                        .map(|p| {
                            AddPartitionsToTxnPartitionResult::default()
                                .with_partition_index(*p)
                                .with_partition_error_code(code(t.name.0.as_str(), *p))
                        })
                        .collect(),
                )
        })
        .collect()
}
