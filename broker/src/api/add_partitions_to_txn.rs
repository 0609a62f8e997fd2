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
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::txn::core::{TopicPartition, TxnVersion};

pub async fn handle(
    ctx: &RequestContext,
    req: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let mut resp = AddPartitionsToTxnResponse::default();
    if ctx.api_version <= 3 {
        let id = req.v3_and_below_transactional_id.0.to_string();
        let answers = if ctx.authorized(Operation::Write, ResourceType::TransactionalId, &id) {
            add(
                ctx,
                &id,
                req.v3_and_below_producer_id.0,
                req.v3_and_below_producer_epoch,
                &req.v3_and_below_topics,
            )
            .await
        } else {
            every(
                &req.v3_and_below_topics,
                Err::TransactionalIdAuthorizationFailed.code(),
            )
        };
        // Old clients know INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED.
        let old = |e: i16| match e {
            e if ctx.api_version < 2 && e == Err::ProducerFenced.code() => {
                Err::InvalidProducerEpoch.code()
            }
            e => e,
        };
        resp.results_by_topic_v3_and_below = results(&req.v3_and_below_topics, |t, p| {
            old(code_in(&answers, t, p))
        });
        return resp;
    }
    // v4+ comes from brokers only.
    if !ctx.authorized(
        Operation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    ) {
        return resp.with_error_code(Err::ClusterAuthorizationFailed.code());
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
            add(ctx, &id, txn.producer_id.0, txn.producer_epoch, &txn.topics).await
        };
        resp.results_by_transaction.push(
            AddPartitionsToTxnResult::default()
                .with_transactional_id(txn.transactional_id.clone())
                .with_topic_results(results(&txn.topics, |t, p| code_in(&answers, t, p))),
        );
    }
    resp
}

fn code_in(answers: &[(TopicPartition, i16)], topic: &str, partition: i32) -> i16 {
    answers
        .iter()
        .find(|(p, _)| p.topic == topic && p.partition == partition)
        .map_or(Err::UnknownServerError.code(), |(_, e)| *e)
}

fn every(topics: &[AddPartitionsToTxnTopic], code: i16) -> Vec<(TopicPartition, i16)> {
    partition_set(topics)
        .into_iter()
        .map(|p| (p, code))
        .collect()
}

/// Adds the partitions to the transaction: each partition's answer.
async fn add(
    ctx: &RequestContext,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    topics: &[AddPartitionsToTxnTopic],
) -> Vec<(TopicPartition, i16)> {
    // KafkaApis checks every partition before the coordinator: a topic the
    // principal may not write answers TOPIC_AUTHORIZATION_FAILED (a
    // producer's request; a broker's passed CLUSTER_ACTION), a partition
    // that does not exist UNKNOWN_TOPIC_OR_PARTITION; either fails the
    // request, and the partitions that passed are OPERATION_NOT_ATTEMPTED.
    let from_broker = ctx.api_version > 3;
    let mut failed = Vec::new();
    let mut passed = BTreeSet::new();
    for t in topics {
        let name = t.name.0.as_str();
        let writable = from_broker || ctx.authorized(Operation::Write, ResourceType::Topic, name);
        let offsets_of_group = from_broker && TopicPartition::is_offsets_topic(name);
        let partitions = if offsets_of_group {
            // A group coordinator adding a group's offsets (TxnOffsetCommit
            // v5): the group's one pseudo partition.
            1
        } else {
            ctx.broker
                .storage
                .topics
                .get(name)
                .map_or(0, |m| m.partitions)
        };
        for &p in &t.partitions {
            let tp = TopicPartition::new(name.to_string(), p);
            if !writable {
                failed.push((tp, Err::TopicAuthorizationFailed.code()));
            } else if !(0..partitions).contains(&p) {
                failed.push((tp, Err::UnknownTopicOrPartition.code()));
            } else {
                passed.insert(tp);
            }
        }
    }
    if !failed.is_empty() {
        let not_attempted = Err::OperationNotAttempted.code();
        failed.extend(passed.into_iter().map(|p| (p, not_attempted)));
        return failed;
    }
    let error = match ctx
        .broker
        .txns
        .add_partitions(
            transactional_id,
            producer_id,
            producer_epoch,
            &passed,
            TxnVersion::of_add_partitions(ctx.api_version),
        )
        .await
    {
        Ok(answer) => answer.error(),
        Err(e) => e.0,
    };
    passed.into_iter().map(|p| (p, error)).collect()
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
