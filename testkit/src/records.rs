//! Record batches as producers write them, for tests and benchmarks that
//! write below the client libraries.

use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// A record batch as a producer writes it at `timestamp` (magic 2, uncompressed), one
/// record per value: a plain producer's, or with `transactional` = (producer
/// id, epoch) a transactional producer's with sequences from 0.
pub fn record_batch_at(
    values: impl IntoIterator<Item = bytes::Bytes>,
    transactional: Option<(i64, i16)>,
    timestamp: i64,
) -> bytes::Bytes {
    let (producer_id, producer_epoch) = transactional.unwrap_or((-1, -1));
    let records: Vec<Record> = values
        .into_iter()
        .enumerate()
        .map(|(i, value)| Record {
            transactional: transactional.is_some(),
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: if transactional.is_some() {
                i as i32
            } else {
                -1
            },
            timestamp,
            key: None,
            value: Some(value),
            headers: Default::default(),
        })
        .collect();
    encode(&records)
}

/// A plain producer's batch of keyed records at `timestamp` (a `None`
/// value is a tombstone), for compacted topics.
pub fn keyed_record_batch(
    entries: impl IntoIterator<Item = (bytes::Bytes, Option<bytes::Bytes>)>,
    timestamp: i64,
) -> bytes::Bytes {
    let records: Vec<Record> = entries
        .into_iter()
        .enumerate()
        .map(|(i, (key, value))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: -1,
            timestamp,
            key: Some(key),
            value,
            headers: Default::default(),
        })
        .collect();
    encode(&records)
}

fn encode(records: &[Record]) -> bytes::Bytes {
    let mut buf = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records,
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("a batch encodes");
    buf.freeze()
}

/// [`record_batch_at`] timestamp 1,000.
pub fn record_batch(
    values: impl IntoIterator<Item = bytes::Bytes>,
    transactional: Option<(i64, i16)>,
) -> bytes::Bytes {
    record_batch_at(values, transactional, 1_000)
}
