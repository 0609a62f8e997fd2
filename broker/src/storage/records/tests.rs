use bytes::Bytes;
use kafka_protocol::records::{Compression, Record, RecordBatchDecoder};

use super::*;
use crate::storage::batch;

fn encode(records: &[(i64, Option<&str>, Option<&str>)], compression: Compression) -> Vec<u8> {
    let records: Vec<Record> = records
        .iter()
        .map(|(offset, key, value)| Record {
            partition_leader_epoch: 0,
            producer_id: 7,
            producer_epoch: 1,
            ..batch::tests::record(
                *offset,
                1_000 + offset,
                key.map(str::as_bytes),
                value.map(str::as_bytes),
            )
        })
        .collect();
    batch::tests::encode_records(&records, compression)
}

fn decoded(batch: &[u8]) -> Vec<(i64, i64, Option<Bytes>, Option<Bytes>)> {
    let mut b = Bytes::copy_from_slice(batch);
    RecordBatchDecoder::decode(&mut b)
        .unwrap()
        .records
        .into_iter()
        .map(|r| (r.offset, r.timestamp, r.key, r.value))
        .collect()
}

#[test]
fn a_rebuilt_batch_keeps_its_offsets_and_the_records_it_keeps() {
    for compression in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let original = encode(
            &[
                (10, Some("a"), Some("1")),
                (11, Some("b"), None),
                (12, Some("a"), Some("2")),
            ],
            compression,
        );
        let h = batch::validate(&original).unwrap();
        let section = records_section(&original, &h).unwrap();
        let records = parse_records(&section, &h).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(
            (records[1].key, records[1].is_tombstone()),
            (Some(&b"b"[..]), true)
        );
        let kept = [records[1], records[2]];
        let rebuilt = rebuild(&original, &h, &kept, Some(99_000)).unwrap();
        let rh = batch::validate(&rebuilt).expect("a valid checksum");
        assert_eq!(
            (
                rh.base_offset,
                rh.last_offset(),
                rh.record_count,
                rh.producer_id
            ),
            (10, 12, 2, 7),
            "{compression:?}"
        );
        assert_eq!(delete_horizon(&rh), Some(99_000));
        assert_eq!(rh.max_timestamp, 1_012);
        assert_eq!(
            batch::is_compressed(&rebuilt),
            compression != Compression::None
        );
        let again = records_section(&rebuilt, &rh).unwrap();
        let again = parse_records(&again, &rh).unwrap();
        assert_eq!(
            again
                .iter()
                .map(|r| (r.offset, r.timestamp))
                .collect::<Vec<_>>(),
            [(11, 1_011), (12, 1_012)]
        );
        // A stock decoder reads the same records back.
        let stock = decoded(&rebuilt);
        assert_eq!(stock.len(), 2);
        assert_eq!(stock[1].3.as_deref(), Some(&b"2"[..]));
    }
}

#[test]
fn an_empty_batch_keeps_the_producer_and_the_last_offset() {
    let original = encode(
        &[(5, Some("k"), Some("v")), (6, Some("k"), Some("w"))],
        Compression::Gzip,
    );
    let h = batch::validate(&original).unwrap();
    let e = empty(&original, &h);
    let eh = batch::validate(&e).unwrap();
    assert_eq!(
        (
            eh.base_offset,
            eh.last_offset(),
            eh.record_count,
            eh.producer_id,
            eh.producer_epoch
        ),
        (5, 6, 0, 7, 1)
    );
    assert!(!batch::is_compressed(&e));
    assert_eq!(e.len(), HEADER_LEN);
}

#[test]
fn varlongs_round_trip_and_overlong_ones_are_refused() {
    for v in [
        0,
        1,
        -1,
        63,
        -64,
        300,
        i64::from(i32::MAX),
        i64::MIN,
        i64::MAX,
    ] {
        let mut out = Vec::new();
        write_varlong(&mut out, v);
        let mut buf = &out[..];
        assert_eq!(read_varlong(&mut buf).unwrap(), v);
        assert!(buf.is_empty());
    }
    assert!(read_varlong(&mut &[0xffu8; 11][..]).is_err());
    assert!(read_varint(&mut &[0xff, 0xff, 0xff, 0xff, 0x7f][..]).is_err());
}

#[test]
fn a_record_running_past_its_batch_is_an_error_not_a_panic() {
    let original = encode(&[(0, Some("key"), Some("value"))], Compression::None);
    let h = batch::validate(&original).unwrap();
    let section = records_section(&original, &h).unwrap();
    for cut in 0..section.len() {
        assert!(parse_records(&section[..cut], &h).is_err(), "cut at {cut}");
    }
}
