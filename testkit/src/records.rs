//! Record batches as producers write them, for tests and benchmarks that
//! write below the client libraries.

use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// A plain producer's record (no producer id, create time) for
/// [`encode_records`]; struct update syntax adjusts the rest. Its sequence
/// is `offset - 1`, so a batch from offset 0 carries a plain producer's
/// base sequence, -1.
pub fn record(offset: i64, timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Record {
    Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset,
        sequence: offset as i32 - 1,
        timestamp,
        key: key.map(bytes::Bytes::copy_from_slice),
        value: value.map(bytes::Bytes::copy_from_slice),
        headers: Default::default(),
    }
}

/// `records` as v2 batches by the kafka-protocol crate's encoder: one
/// batch while their producer fields agree and offset - sequence stays the
/// same, as producers write them.
pub fn encode_records(records: &[Record], compression: Compression) -> Vec<u8> {
    let mut buf = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .expect("a batch encodes");
    buf.to_vec()
}

/// A record batch as a producer writes it at `timestamp` (magic 2,
/// uncompressed), one record per value: a plain producer's, or with
/// `transactional` = (producer id, epoch) a transactional producer's with
/// sequences from 0.
pub fn record_batch_at(
    values: impl IntoIterator<Item = bytes::Bytes>,
    transactional: Option<(i64, i16)>,
    timestamp: i64,
) -> bytes::Bytes {
    let records: Vec<Record> = values
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            let plain = record(i as i64, timestamp, None, Some(&value));
            match transactional {
                Some((producer_id, producer_epoch)) => Record {
                    transactional: true,
                    producer_id,
                    producer_epoch,
                    sequence: i as i32,
                    ..plain
                },
                None => plain,
            }
        })
        .collect();
    encode_records(&records, Compression::None).into()
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
        .map(|(i, (key, value))| record(i as i64, timestamp, Some(&key), value.as_deref()))
        .collect();
    encode_records(&records, Compression::None).into()
}

/// [`record_batch_at`] timestamp 1,000.
pub fn record_batch(
    values: impl IntoIterator<Item = bytes::Bytes>,
    transactional: Option<(i64, i16)>,
) -> bytes::Bytes {
    record_batch_at(values, transactional, 1_000)
}
