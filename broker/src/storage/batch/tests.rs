use super::*;

use kafka_protocol::records::{Compression, Record};

pub use kaas_testkit::records::{encode_records, record};

/// A real v2 batch of `n` records encoded by the kafka-protocol crate.
pub fn encode_batch(n: usize, ts: i64) -> Vec<u8> {
    let records: Vec<Record> = (0..n)
        .map(|i| {
            let value = format!("value-{i}");
            record(i as i64, ts + i as i64, None, Some(value.as_bytes()))
        })
        .collect();
    encode_records(&records, Compression::None)
}

/// A transactional batch of `n` records from producer `pid` at `epoch`,
/// sequences from `seq`.
pub fn encode_txn_batch(pid: i64, epoch: i16, seq: i32, n: usize) -> Vec<u8> {
    let records: Vec<Record> = (0..n)
        .map(|i| {
            let value = format!("txn-{pid}-{i}");
            Record {
                transactional: true,
                producer_id: pid,
                producer_epoch: epoch,
                sequence: seq + i as i32,
                ..record(i as i64, 1_000, None, Some(value.as_bytes()))
            }
        })
        .collect();
    encode_records(&records, Compression::None)
}

#[test]
fn parses_and_validates_a_real_batch() {
    let b = encode_batch(3, 1000);
    let h = validate(&b).unwrap();
    assert_eq!(h.size, b.len());
    assert_eq!(h.last_offset_delta, 2);
    assert_eq!(h.record_count, 3);
    assert_eq!(h.max_timestamp, 1002);
}

#[test]
fn offset_rewrite_keeps_crc_valid() {
    let mut b = encode_batch(2, 0);
    assign_offset(&mut b, 12345, 7);
    let h = validate(&b).unwrap();
    assert_eq!(h.base_offset, 12345);
    assert_eq!(h.next_offset(), 12347);
}

#[test]
fn corruption_is_detected() {
    let mut b = encode_batch(2, 0);
    let last = b.len() - 1;
    b[last] ^= 0xff;
    assert!(matches!(validate(&b), Err(BatchError::CrcMismatch { .. })));
    assert!(matches!(
        validate(&b[..30]),
        Err(BatchError::Truncated { .. })
    ));
    let mut b = encode_batch(1, 0);
    b[16] = 1;
    assert_eq!(validate(&b), Err(BatchError::UnsupportedMagic(1)));
}

#[test]
fn a_marker_batch_reads_back_as_a_transactional_control_batch() {
    for commit in [true, false] {
        let marker = ControlMarker {
            commit,
            coordinator_epoch: 7,
        };
        let b = encode_marker(42, 3, marker, 1_000);
        let h = validate(&b).unwrap();
        assert!(h.is_control() && h.is_transactional());
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.record_count),
            (42, 3, 1)
        );
        assert_eq!(h.base_sequence, -1);
        assert_eq!(control_marker(&b).unwrap(), Some(marker));
    }
    let data = encode_batch(2, 0);
    let h = validate(&data).unwrap();
    assert!(!h.is_control() && !h.is_transactional());
}

#[test]
fn split_finds_every_batch() {
    let mut two = encode_batch(2, 0);
    two.extend(encode_batch(5, 0));
    let parts = split_batches(&two).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1].1.record_count, 5);
}
