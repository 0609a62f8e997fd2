//! Apache's `LogValidatorTest`, case by case where a case applies to the
//! v2 batches clients send (the names are Apache's, in snake case); the
//! batches they build serve the produce API's tests too.

use bytes::Bytes;
use kafka_protocol::records::{Compression, Record, RecordBatchDecoder, TimestampType};
use kafka_protocol::ResponseError;

use super::*;
use crate::storage::batch;

const NOW: i64 = 1_700_000_000_000;
const TP: Tp = Tp("topic", 0);
const HOUR: i64 = 3_600_000;

/// What a test batch holds.
pub(crate) struct Spec<'a> {
    pub(crate) timestamps: &'a [i64],
    pub(crate) compression: Compression,
    /// The records without a key.
    pub(crate) keyless: &'a [usize],
    /// Producer id, epoch, base sequence; -1s for a plain producer.
    pub(crate) producer: (i64, i16, i32),
    pub(crate) transactional: bool,
    /// Each record's offset (the encoder's deltas from the smallest).
    pub(crate) offsets: Option<&'a [i64]>,
}

impl Default for Spec<'_> {
    fn default() -> Self {
        Spec {
            timestamps: &[NOW, NOW, NOW],
            compression: Compression::None,
            keyless: &[],
            producer: (-1, -1, -1),
            transactional: false,
            offsets: None,
        }
    }
}

pub(crate) fn encode(spec: &Spec) -> Vec<u8> {
    let (pid, epoch, seq) = spec.producer;
    let records: Vec<Record> = spec
        .timestamps
        .iter()
        .enumerate()
        .map(|(i, ts)| {
            let offset = spec.offsets.map_or(i as i64, |o| o[i]);
            let key = format!("key-{i}");
            let value = format!("value-{i}").repeat(20);
            let key = (!spec.keyless.contains(&i)).then_some(key.as_bytes());
            Record {
                transactional: spec.transactional,
                producer_id: pid,
                producer_epoch: epoch,
                sequence: seq + offset as i32,
                ..batch::tests::record(offset, *ts, key, Some(value.as_bytes()))
            }
        })
        .collect();
    batch::tests::encode_records(&records, spec.compression)
}

/// (offset, timestamp, timestamp type, key, value) of each record as a
/// stock decoder reads them.
type Decoded = Vec<(i64, i64, TimestampType, Option<Bytes>, Option<Bytes>)>;

fn decode(data: &[u8]) -> Decoded {
    let mut b = Bytes::copy_from_slice(data);
    RecordBatchDecoder::decode(&mut b)
        .expect("a stock decoder reads it")
        .records
        .into_iter()
        .map(|r| (r.offset, r.timestamp, r.timestamp_type, r.key, r.value))
        .collect()
}

fn codec_of(data: &[u8]) -> i16 {
    batch::validate(data).unwrap().attributes & 0x07
}

fn run(data: Vec<u8>, policy: &RecordPolicy) -> Result<Validated, Refusal> {
    validate(data, TP, policy, NOW)
}

/// The message of a whole-batch INVALID_RECORD refusal of `data`.
fn invalid_batch(data: Vec<u8>, policy: &RecordPolicy) -> String {
    let refusal = run(data, policy).unwrap_err();
    assert_eq!(refusal.error, ResponseError::InvalidRecord, "{refusal:?}");
    assert!(refusal.record_errors.is_empty(), "{refusal:?}");
    refusal.message
}

fn create_time(before: i64, after: i64) -> RecordPolicy {
    RecordPolicy {
        timestamp_before_max_ms: before,
        timestamp_after_max_ms: after,
        ..RecordPolicy::default()
    }
}

fn log_append_time() -> RecordPolicy {
    RecordPolicy {
        log_append_time: true,
        ..RecordPolicy::default()
    }
}

const GZIP: Codec = Codec::Gzip {
    level: Codec::GZIP_DEFAULT_LEVEL,
};

/// Every codec a producer may send.
const COMPRESSIONS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

#[test]
fn check_non_compressed() {
    // The largest timestamp is the second record's; the batch claims 0.
    let spec = Spec {
        timestamps: &[NOW - 1, NOW + 1, NOW],
        producer: (1_324, 10, 984),
        transactional: true,
        ..Spec::default()
    };
    let mut data = encode(&spec);
    records::set_max_timestamp(&mut data, false, 0);
    let out = run(data.clone(), &RecordPolicy::default()).unwrap();
    assert_eq!(out.log_append_time_ms, -1);
    let h = batch::validate(&out.data).expect("a valid checksum");
    assert_eq!(h.max_timestamp, NOW + 1);
    assert_eq!(
        (
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            h.is_transactional()
        ),
        (1_324, 10, 984, true)
    );
    // Only the header's largest timestamp changed.
    assert_eq!(out.data[HEADER_RECORDS..], data[HEADER_RECORDS..]);
    assert_eq!(decode(&out.data), decode(&encode(&spec)));
}

/// Where a batch's records start.
const HEADER_RECORDS: usize = batch::HEADER_LEN;

#[test]
fn check_compressed() {
    for compression in &COMPRESSIONS[1..] {
        let spec = Spec {
            timestamps: &[NOW - 1, NOW + 1, NOW],
            compression: *compression,
            producer: (1_324, 10, 984),
            ..Spec::default()
        };
        let data = encode(&spec);
        let out = run(data.clone(), &RecordPolicy::default()).unwrap();
        assert_eq!(out.data, data, "{compression:?}: kept as it came");
        assert_eq!(batch::validate(&out.data).unwrap().max_timestamp, NOW + 1);
    }
}

#[test]
fn check_recompression() {
    let spec = Spec {
        timestamps: &[NOW - 1, NOW + 1, NOW],
        producer: (1_324, 10, 984),
        transactional: true,
        ..Spec::default()
    };
    let data = encode(&spec);
    let policy = RecordPolicy {
        compression: Some(GZIP),
        ..RecordPolicy::default()
    };
    let out = run(data.clone(), &policy).unwrap();
    let h = batch::validate(&out.data).expect("a valid checksum");
    assert_eq!(codec_of(&out.data), 1, "gzip");
    assert_eq!(
        (
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            h.is_transactional(),
            h.record_count,
            h.last_offset_delta,
            h.max_timestamp
        ),
        (1_324, 10, 984, true, 3, 2, NOW + 1)
    );
    assert_eq!(decode(&out.data), decode(&data));
}

#[test]
fn check_log_append_time_non_compressed() {
    let spec = Spec {
        timestamps: &[NOW - 5_000, NOW - 4_000, NOW - 3_000],
        ..Spec::default()
    };
    let data = encode(&spec);
    let out = run(data.clone(), &log_append_time()).unwrap();
    assert_eq!(out.log_append_time_ms, NOW);
    let h = batch::validate(&out.data).expect("a valid checksum");
    assert_eq!(h.max_timestamp, NOW);
    assert_eq!(out.data[HEADER_RECORDS..], data[HEADER_RECORDS..]);
    assert!(decode(&out.data)
        .iter()
        .all(|r| r.2 == TimestampType::LogAppend));
}

#[test]
fn check_log_append_time_without_recompression() {
    let spec = Spec {
        timestamps: &[NOW - 5_000, NOW - 4_000, NOW - 3_000],
        compression: Compression::Gzip,
        ..Spec::default()
    };
    let data = encode(&spec);
    let policy = RecordPolicy {
        compression: Some(GZIP),
        ..log_append_time()
    };
    let out = run(data.clone(), &policy).unwrap();
    assert_eq!(out.data[HEADER_RECORDS..], data[HEADER_RECORDS..]);
    assert_eq!(batch::validate(&out.data).unwrap().max_timestamp, NOW);
    // Readers take the batch's largest timestamp for every record's.
    assert!(decode(&out.data)
        .iter()
        .all(|r| r.2 == TimestampType::LogAppend));
}

#[test]
fn check_log_append_time_with_recompression() {
    let spec = Spec {
        timestamps: &[NOW - 5_000, NOW - 4_000, NOW - 3_000],
        ..Spec::default()
    };
    let policy = RecordPolicy {
        compression: Some(GZIP),
        ..log_append_time()
    };
    let out = run(encode(&spec), &policy).unwrap();
    assert_eq!(out.log_append_time_ms, NOW);
    assert_eq!(codec_of(&out.data), 1);
    let h = batch::validate(&out.data).unwrap();
    assert_eq!(h.max_timestamp, NOW);
    // The records keep their own timestamps underneath (Apache's
    // MemoryRecordsBuilder); readers take the batch's for each.
    assert_eq!(h.base_timestamp, NOW - 5_000);
    // Readers take the batch's largest timestamp for every record's.
    assert!(decode(&out.data)
        .iter()
        .all(|r| r.2 == TimestampType::LogAppend));
}

#[test]
fn test_invalid_create_time_non_compressed_v2() {
    for compression in COMPRESSIONS {
        let spec = Spec {
            timestamps: &[NOW - 1_001, NOW - 1_001, NOW - 1_001],
            compression,
            ..Spec::default()
        };
        let refusal = run(encode(&spec), &create_time(1_000, 1_000)).unwrap_err();
        assert_eq!(refusal.error, ResponseError::InvalidTimestamp);
        assert_eq!(
            refusal.message,
            "One or more records have been rejected due to invalid timestamp"
        );
        assert_eq!(refusal.record_errors.len(), 3, "{compression:?}");
        assert_eq!(
            refusal.record_errors[1],
            (
                1,
                format!(
                    "Timestamp {} of message with offset 1 is out of range. The timestamp should \
                     be within [{}, {}]",
                    NOW - 1_001,
                    NOW - 1_000,
                    NOW + 1_000
                )
            )
        );
    }
}

#[test]
fn test_invalid_create_time_compressed_v2() {
    let spec = Spec {
        timestamps: &[NOW, NOW + 1_001, NOW],
        compression: Compression::Gzip,
        ..Spec::default()
    };
    let refusal = run(encode(&spec), &create_time(1_000, 1_000)).unwrap_err();
    assert_eq!(refusal.error, ResponseError::InvalidTimestamp);
    assert_eq!(
        refusal
            .record_errors
            .iter()
            .map(|e| e.0)
            .collect::<Vec<_>>(),
        [1],
        "only the record out of range"
    );
}

#[test]
fn test_record_with_past_timestamp_is_rejected() {
    let before = 24 * HOUR;
    let past = NOW - before - 5 * 60_000;
    let spec = Spec {
        timestamps: &[past, past, past],
        compression: Compression::Gzip,
        ..Spec::default()
    };
    let refusal = run(encode(&spec), &create_time(before, HOUR)).unwrap_err();
    assert_eq!(refusal.error, ResponseError::InvalidTimestamp);
    assert_eq!(refusal.record_errors.len(), 3);
    // Within the limit, the same records pass.
    let recent = NOW - before + 5 * 60_000;
    let spec = Spec {
        timestamps: &[recent, recent, recent],
        ..spec
    };
    assert!(run(encode(&spec), &create_time(before, HOUR)).is_ok());
}

#[test]
fn test_record_with_future_timestamp_is_rejected() {
    let future = NOW + HOUR + 5 * 60_000;
    let spec = Spec {
        timestamps: &[future, future, future],
        compression: Compression::Gzip,
        ..Spec::default()
    };
    // Apache's default after.max.ms is an hour.
    let refusal = run(encode(&spec), &RecordPolicy::default()).unwrap_err();
    assert_eq!(refusal.error, ResponseError::InvalidTimestamp);
    assert_eq!(refusal.record_errors.len(), 3);
    // With the default before.max.ms (Long.MAX_VALUE) any past time passes,
    // and the message's lower bound wraps as Java's long does.
    let spec = Spec {
        timestamps: &[0, 1, future],
        ..spec
    };
    let refusal = run(encode(&spec), &RecordPolicy::default()).unwrap_err();
    assert_eq!(refusal.record_errors.len(), 1);
    assert!(refusal.record_errors[0].1.contains(&format!(
        "should be within [{}, {}]",
        NOW.wrapping_sub(i64::MAX),
        NOW + HOUR
    )));
}

#[test]
fn records_without_a_timestamp_are_not_checked() {
    let spec = Spec {
        timestamps: &[-1, -1],
        ..Spec::default()
    };
    let out = run(encode(&spec), &create_time(0, 0)).unwrap();
    assert_eq!(batch::validate(&out.data).unwrap().max_timestamp, -1);
}

#[test]
fn a_producer_may_not_set_log_append_time() {
    let spec = Spec::default();
    let mut data = encode(&spec);
    records::set_max_timestamp(&mut data, true, NOW);
    let refusal = run(data, &log_append_time()).unwrap_err();
    assert_eq!(refusal.error, ResponseError::InvalidTimestamp);
    assert_eq!(
        refusal.record_errors[0].1,
        format!(
            "Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW}, key=5 \
             bytes, value=140 bytes). Producer should not set timestamp type to LogAppendTime."
        )
    );
}

#[test]
fn test_different_level_does_not_cause_recompression() {
    let spec = Spec {
        timestamps: &[-1, -1],
        compression: Compression::Gzip,
        ..Spec::default()
    };
    let data = encode(&spec);
    let policy = RecordPolicy {
        compression: Some(Codec::Gzip { level: 1 }),
        ..RecordPolicy::default()
    };
    assert_eq!(run(data.clone(), &policy).unwrap().data, data);
}

#[test]
fn test_different_codec_causes_recompression() {
    let spec = Spec {
        timestamps: &[-1, -1],
        compression: Compression::Gzip,
        ..Spec::default()
    };
    let data = encode(&spec);
    for (codec, id) in [
        (Codec::Lz4 { level: 1 }, 3),
        (Codec::Zstd { level: -5 }, 4),
        (Codec::Snappy, 2),
        (Codec::None, 0),
    ] {
        let policy = RecordPolicy {
            compression: Some(codec),
            ..RecordPolicy::default()
        };
        let out = run(data.clone(), &policy).unwrap();
        assert_eq!(codec_of(&out.data), id);
        assert_eq!(decode(&out.data), decode(&data), "{codec:?}");
    }
}

#[test]
fn every_codec_recompresses_into_every_other() {
    for from in COMPRESSIONS {
        let data = encode(&Spec {
            compression: from,
            ..Spec::default()
        });
        for to in [
            Codec::None,
            GZIP,
            Codec::Snappy,
            Codec::Lz4 {
                level: Codec::LZ4_DEFAULT_LEVEL,
            },
            Codec::Zstd {
                level: Codec::ZSTD_DEFAULT_LEVEL,
            },
        ] {
            let policy = RecordPolicy {
                compression: Some(to),
                ..RecordPolicy::default()
            };
            let out = run(data.clone(), &policy).unwrap();
            assert_eq!(codec_of(&out.data), to.id());
            assert_eq!(decode(&out.data), decode(&data), "{from:?} → {to:?}");
        }
    }
}

#[test]
fn inner_offsets_of_a_compressed_batch_are_renumbered() {
    // Deltas 0, 0, 2: the count agrees with the last delta, the inner
    // offsets do not (Apache rewrites such a batch rather than refuse it).
    let offsets = [0, 0, 2];
    let compressed = encode(&Spec {
        compression: Compression::Lz4,
        offsets: Some(&offsets),
        ..Spec::default()
    });
    let out = run(compressed, &RecordPolicy::default()).unwrap();
    assert_eq!(codec_of(&out.data), 3);
    let got: Vec<i64> = decode(&out.data).iter().map(|r| r.0).collect();
    assert_eq!(got, [0, 1, 2]);
    // An uncompressed batch is kept as it came, as Apache keeps it.
    let plain = encode(&Spec {
        offsets: Some(&offsets),
        ..Spec::default()
    });
    assert_eq!(
        run(plain.clone(), &RecordPolicy::default()).unwrap().data,
        plain
    );
}

#[test]
fn check_only_one_batch() {
    for compression in COMPRESSIONS {
        let one = encode(&Spec {
            compression,
            ..Spec::default()
        });
        let mut two = one.clone();
        two.extend_from_slice(&one);
        assert_eq!(
            invalid_batch(two, &RecordPolicy::default()),
            "Compressed outer record has more than one batch"
        );
    }
}

#[test]
fn test_batch_without_records_not_allowed() {
    for compression in COMPRESSIONS {
        let data = encode(&Spec {
            compression,
            producer: (1_324, 10, 984),
            ..Spec::default()
        });
        let h = batch::validate(&data).unwrap();
        let empty = records::empty(&data, &h);
        for target in [None, Some(GZIP)] {
            let policy = RecordPolicy {
                compression: target,
                ..RecordPolicy::default()
            };
            assert_eq!(
                invalid_batch(empty.clone(), &policy),
                "Invalid reported count for record batch: 0 in topic partition topic-0"
            );
        }
    }
}

/// `data` with its last offset delta and record count replaced, its
/// checksum made right again.
fn with_count(mut data: Vec<u8>, last_offset_delta: i32, count: i32) -> Vec<u8> {
    data[23..27].copy_from_slice(&last_offset_delta.to_be_bytes());
    data[57..61].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&data[21..]);
    data[17..21].copy_from_slice(&crc.to_be_bytes());
    data
}

#[test]
fn test_inconsistent_count_and_offset() {
    let data = encode(&Spec::default());
    for (delta, count) in [(0, 3), (5, 3), (2, 4)] {
        assert_eq!(
            invalid_batch(
                with_count(data.clone(), delta, count),
                &RecordPolicy::default()
            ),
            format!(
                "Inconsistent batch offset range [0, {delta}] and count of records {count} in \
                 topic partition topic-0"
            )
        );
    }
}

#[test]
fn test_control_records_not_allowed_from_clients() {
    let marker = batch::encode_marker(
        7,
        0,
        batch::ControlMarker {
            commit: true,
            coordinator_epoch: 1,
        },
        NOW,
    );
    assert_eq!(
        invalid_batch(marker, &RecordPolicy::default()),
        "Clients are not allowed to write control records in topic partition topic-0"
    );
}

#[test]
fn check_invalid_sequence() {
    let data = encode(&Spec {
        producer: (1_324, 10, -1),
        ..Spec::default()
    });
    assert_eq!(
        invalid_batch(data, &RecordPolicy::default()),
        "Invalid sequence number -1 in record batch with producerId 1324 in topic partition topic-0"
    );
}

#[test]
fn check_no_key_compacted_topic() {
    for compression in COMPRESSIONS {
        let data = encode(&Spec {
            compression,
            keyless: &[0, 1, 2],
            ..Spec::default()
        });
        let policy = RecordPolicy {
            compact: true,
            ..RecordPolicy::default()
        };
        let refusal = run(data, &policy).unwrap_err();
        assert_eq!(refusal.error, ResponseError::InvalidRecord);
        let message =
            "Compacted topic cannot accept message without key in topic partition topic-0";
        assert_eq!(
            refusal.record_errors,
            (0..3).map(|i| (i, message.to_string())).collect::<Vec<_>>()
        );
        assert_eq!(
            refusal.message,
            format!(
                "One or more records have been rejected due to 3 record errors in total, and \
                 only showing the first three errors at most: [RecordError(batchIndex=0, \
                 message='{message}'), RecordError(batchIndex=1, message='{message}'), \
                 RecordError(batchIndex=2, message='{message}')]"
            )
        );
    }
}

#[test]
fn test_batch_with_invalid_records_and_invalid_timestamp() {
    // Two keyless records in a compacted topic and a keyed one out of
    // range: the timestamp's error decides the code, every record is listed.
    let data = encode(&Spec {
        timestamps: &[NOW, NOW + 2 * HOUR, NOW],
        keyless: &[0, 2],
        ..Spec::default()
    });
    let policy = RecordPolicy {
        compact: true,
        ..RecordPolicy::default()
    };
    let refusal = run(data, &policy).unwrap_err();
    assert_eq!(refusal.error, ResponseError::InvalidTimestamp);
    assert_eq!(
        refusal
            .record_errors
            .iter()
            .map(|e| e.0)
            .collect::<Vec<_>>(),
        [0, 1, 2]
    );
}

#[test]
fn a_corrupt_record_is_an_error_not_a_panic() {
    let data = encode(&Spec::default());
    // The first record's length claims more than the batch holds.
    let mut bad = data.clone();
    bad[HEADER_RECORDS] = 0x7e;
    let crc = crc32c::crc32c(&bad[21..]);
    bad[17..21].copy_from_slice(&crc.to_be_bytes());
    let refusal = run(bad, &RecordPolicy::default()).unwrap_err();
    assert_eq!(refusal.error, ResponseError::CorruptMessage, "{refusal:?}");
}
