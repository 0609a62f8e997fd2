//! Produce through a topic's record configs on the wire:
//! `message.timestamp.type`, `message.timestamp.before/after.max.ms`,
//! `compression.type` and one batch per partition, answered with Apache's
//! errors and nothing appended of a refused batch.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;

use crate::api::tests::{call_at, name, one_broker};
use crate::api::{Err, RequestKind, ResponseKind};
use crate::broker::Broker;
use crate::storage::batch::{self, BatchHeader};
use crate::storage::log::wall_clock_ms;
use crate::storage::validator::tests::{encode, Spec};

fn topic(broker: &Arc<Broker>, topic: &str, configs: &[(&str, &str)]) {
    let configs: BTreeMap<String, String> = configs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    broker
        .storage
        .topics
        .create_blocking(topic, 1, configs, false)
        .unwrap();
}

/// The partition's answer to one batch.
async fn produce(
    broker: &Arc<Broker>,
    topic: &str,
    data: Vec<u8>,
) -> produce_response::PartitionProduceResponse {
    use produce_request::*;
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(data.into()))])]);
    let ResponseKind::Produce(r) = call_at(broker, 9, RequestKind::Produce(req)).await else {
        panic!("not a produce response")
    };
    r.responses[0].partition_responses[0].clone()
}

/// Every batch of the partition, as stored.
async fn stored(broker: &Arc<Broker>, topic: &str) -> Vec<(BatchHeader, Vec<u8>)> {
    use fetch_request::*;
    let req = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_partition_max_bytes(1 << 20)])]);
    let ResponseKind::Fetch(r) = call_at(broker, 11, RequestKind::Fetch(req)).await else {
        panic!("not a fetch response")
    };
    let records = r.responses[0].partitions[0]
        .records
        .clone()
        .unwrap_or_default();
    batch::split_batches(&records)
        .expect("valid batches")
        .into_iter()
        .map(|(range, h)| (h, records[range].to_vec()))
        .collect()
}

const LOG_APPEND_TIME: i16 = 0x08;

#[tokio::test]
async fn log_append_time_stamps_the_brokers_time_and_answers_it() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    topic(
        &broker,
        "lat",
        &[("message.timestamp.type", "LogAppendTime")],
    );
    let before = wall_clock_ms();
    let p = produce(
        &broker,
        "lat",
        encode(&Spec {
            timestamps: &[1_000, 2_000],
            ..Spec::default()
        }),
    )
    .await;
    let after = wall_clock_ms();
    assert_eq!(p.error_code, 0);
    assert!(
        (before..=after).contains(&p.log_append_time_ms),
        "{} not in {before}..={after}",
        p.log_append_time_ms
    );
    let batches = stored(&broker, "lat").await;
    let (h, _) = &batches[0];
    assert_ne!(h.attributes & LOG_APPEND_TIME, 0, "LogAppendTime");
    assert_eq!(h.max_timestamp, p.log_append_time_ms);
    // A CreateTime topic answers -1 and keeps the producer's time.
    let p = produce(&broker, "t", encode(&Spec::default())).await;
    assert_eq!((p.error_code, p.log_append_time_ms), (0, -1));
}

#[tokio::test]
async fn timestamps_out_of_the_topics_bounds_are_refused_and_nothing_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    topic(
        &broker,
        "bounded",
        &[
            ("message.timestamp.before.max.ms", "60000"),
            ("message.timestamp.after.max.ms", "60000"),
        ],
    );
    let now = wall_clock_ms();
    for (ts, topic) in [
        (now - 600_000, "bounded"),
        (now + 600_000, "bounded"),
        // Apache's default after.max.ms is an hour.
        (now + 2 * 3_600_000, "t"),
    ] {
        let p = produce(
            &broker,
            topic,
            encode(&Spec {
                timestamps: &[now, ts, now],
                ..Spec::default()
            }),
        )
        .await;
        assert_eq!(p.error_code, Err::InvalidTimestamp.code(), "{topic} {ts}");
        assert_eq!(
            p.error_message.as_deref(),
            Some("One or more records have been rejected due to invalid timestamp")
        );
        assert_eq!(p.record_errors.len(), 1);
        assert_eq!(p.record_errors[0].batch_index, 1);
        let message = p.record_errors[0]
            .batch_index_error_message
            .as_deref()
            .unwrap_or_default()
            .to_string();
        assert!(
            message.starts_with(&format!(
                "Timestamp {ts} of message with offset 1 is out of range."
            )),
            "{message}"
        );
        assert!(stored(&broker, topic).await.is_empty(), "nothing appended");
    }
    let p = produce(
        &broker,
        "bounded",
        encode(&Spec {
            timestamps: &[now - 30_000, now + 30_000],
            ..Spec::default()
        }),
    )
    .await;
    assert_eq!(p.error_code, 0, "within the bounds");
    assert_eq!(stored(&broker, "bounded").await.len(), 1);
}

#[tokio::test]
async fn compression_type_recompresses_what_the_producer_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    topic(&broker, "gz", &[("compression.type", "gzip")]);
    topic(&broker, "plain", &[("compression.type", "uncompressed")]);
    let now = wall_clock_ms();
    let lz4 = encode(&Spec {
        timestamps: &[now, now + 1, now + 2],
        compression: Compression::Lz4,
        producer: (7, 0, 0),
        ..Spec::default()
    });
    for (topic, codec) in [("gz", 1), ("plain", 0), ("t", 3)] {
        let p = produce(&broker, topic, lz4.clone()).await;
        assert_eq!(p.error_code, 0, "{topic}");
        let batches = stored(&broker, topic).await;
        let (h, bytes) = &batches[0];
        assert_eq!(h.attributes & 0x07, codec, "{topic}");
        assert_eq!(
            (h.producer_id, h.base_sequence, h.record_count),
            (7, 0, 3),
            "{topic}: the producer's fields kept"
        );
        let mut b = bytes::Bytes::copy_from_slice(bytes);
        let records = kafka_protocol::records::RecordBatchDecoder::decode(&mut b)
            .unwrap()
            .records;
        let values: Vec<_> = records.iter().map(|r| r.value.clone()).collect();
        let mut original = bytes::Bytes::from(lz4.clone());
        let sent: Vec<_> = kafka_protocol::records::RecordBatchDecoder::decode(&mut original)
            .unwrap()
            .records
            .iter()
            .map(|r| r.value.clone())
            .collect();
        assert_eq!(values, sent, "{topic}: the same records");
    }
    // The retried batch is still known as a duplicate after recompression.
    let p = produce(&broker, "gz", lz4.clone()).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0), "a duplicate");
    assert_eq!(stored(&broker, "gz").await.len(), 1);
}

#[tokio::test]
async fn two_batches_for_one_partition_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let mut two = encode(&Spec::default());
    two.extend(encode(&Spec::default()));
    let p = produce(&broker, "t", two).await;
    assert_eq!(p.error_code, Err::InvalidRecord.code());
    assert_eq!(
        p.error_message.as_deref(),
        Some("Compressed outer record has more than one batch")
    );
    assert!(stored(&broker, "t").await.is_empty());
}
