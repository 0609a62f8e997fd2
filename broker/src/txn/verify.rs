//! Produce-time verification (KIP-890 part 1): before the first batch of a
//! transaction lands in a partition, the partition's leader asks the
//! transaction's coordinator whether the partition was added to it — here
//! if this broker coordinates the id, else by AddPartitionsToTxn v4 with
//! `verify_only`.

use std::collections::BTreeSet;
use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as Err;
use tracing::debug;

use super::core::TopicPartition;
use crate::api::RequestContext;

/// NONE when the partition is in the producer's open transaction; else the
/// coordinator's answer (TRANSACTION_ABORTABLE, PRODUCER_FENCED, ...) or a
/// retriable error when it cannot be asked.
pub async fn verify(
    ctx: &RequestContext,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    topic: &str,
    partition: i32,
) -> i16 {
    let broker = &ctx.broker;
    let Some(routing) = broker.routing() else {
        return Err::NotEnoughReplicas.code();
    };
    let Some(coordinator) = routing.owner_of_transaction(transactional_id) else {
        return Err::NotEnoughReplicas.code();
    };
    let asked: BTreeSet<TopicPartition> = [TopicPartition::new(topic, partition)].into();
    if coordinator == broker.id() {
        return match broker
            .txns
            .verify_partitions(transactional_id, producer_id, producer_epoch, &asked)
            .await
        {
            Ok(answers) => answers
                .first()
                .map_or(Err::UnknownServerError.code(), |a| a.1),
            // Moved or loading: the producer retries.
            Err(_) => Err::NotEnoughReplicas.code(),
        };
    }
    let Some(b) = routing.broker(coordinator) else {
        return Err::NotEnoughReplicas.code();
    };
    let req = AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(StrBytes::from_string(
                transactional_id.to_string(),
            )))
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(producer_epoch)
            .with_verify_only(true)
            .with_topics(vec![AddPartitionsToTxnTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(vec![partition])]),
    ]);
    let asked = async {
        let mut client = kaas_client::KafkaClient::connect(
            &format!("{}:{}", b.host, b.port),
            Duration::from_secs(5),
        )
        .await?;
        client.send(&req, 4).await
    };
    match asked.await {
        Ok(resp) if resp.error_code != 0 => resp.error_code,
        Ok(resp) => resp
            .results_by_transaction
            .first()
            .and_then(|t| t.topic_results.first())
            .and_then(|t| t.results_by_partition.first())
            .map_or(Err::UnknownServerError.code(), |p| p.partition_error_code),
        Err(e) => {
            debug!(coordinator, error = %e, "cannot verify a transactional batch");
            // Retriable for the producer, as Apache answers when the
            // coordinator cannot be reached.
            Err::NotEnoughReplicas.code()
        }
    }
}
