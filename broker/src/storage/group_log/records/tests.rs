//! The group log records: encodings read back, damage refused.
use super::*;
use crate::storage::group_log::table::Table;
use crate::txn::core::{TopicPartition, TxnState, TxnTransit, TxnVersion};

fn oam(offset: i64, metadata: &str, epoch: Option<i32>, expire: Option<u64>) -> OffsetAndMetadata {
    OffsetAndMetadata {
        offset,
        leader_epoch: epoch,
        metadata: metadata.to_string(),
        commit_timestamp_ms: 1_700_000_000_000,
        expire_timestamp_ms: expire,
    }
}

#[test]
fn binary_commits_and_snapshots_read_back_exactly() {
    let offsets: Offsets = vec![
        ("orders".into(), 3, oam(42, "", None, None)),
        ("orders".into(), 1, oam(7, "läuft", Some(5), Some(9))),
        ("pay/ments".into(), 0, oam(-1, "x", Some(0), None)),
    ];
    let frame = encode_commit(&offsets).unwrap();
    let (record, size) = read_frame(&frame).unwrap();
    assert_eq!(size, frame.len());
    let Record::Commit(back) = record else {
        panic!("not a commit: {record:?}")
    };
    assert_eq!(back, offsets);

    let mut table = Table::default();
    table.apply(Record::Commit(back));
    // A claim naming its process's incarnation, and one written before
    // incarnations (no section for it).
    for incarnation in ["9f86d081884c7d659a2feaa0c55ad015", ""] {
        table.claim = Some(ClaimBody {
            broker: 2,
            assignment_version: 17,
            incarnation: incarnation.to_string(),
        });
        let (record, _) = read_frame(&table.encode_snapshot().unwrap()).unwrap();
        let mut again = Table::default();
        again.apply(record);
        assert_eq!(again.offsets.committed_vec(), table.offsets.committed_vec());
        assert_eq!(again.claim, table.claim);
    }
    let mut again = Table::default();
    let (record, _) = read_frame(&table.encode_snapshot().unwrap()).unwrap();
    again.apply(record);
    // Sorted by topic, then partition.
    let keys: Vec<_> = again
        .offsets
        .committed_vec()
        .into_iter()
        .map(|(t, p, _)| (t, p))
        .collect();
    assert_eq!(
        keys,
        vec![
            ("orders".into(), 1),
            ("orders".into(), 3),
            ("pay/ments".into(), 0)
        ]
    );
}

/// A transaction's state as its log stores it (the conversion is the
/// adapter's, `log_stores::txn`).
fn txn(state: TxnState) -> TxnBody {
    TxnBody::from(&TxnTransit {
        producer_id: 7,
        prev_producer_id: 6,
        next_producer_id: -1,
        producer_epoch: 3,
        last_producer_epoch: -1,
        timeout_ms: 60_000,
        state,
        partitions: [
            TopicPartition::new("orders", 2),
            TopicPartition::new("läuft", 0),
        ]
        .into(),
        start_ms: 10,
        last_update_ms: 11,
        client_version: TxnVersion::V2,
    })
}

#[test]
fn transaction_records_and_their_snapshots_read_back_exactly() {
    let t = txn(TxnState::PrepareCommit);
    let frame = encode(&Record::Txn(Some(t.clone()))).unwrap();
    let (record, size) = read_frame(&frame).unwrap();
    assert_eq!(size, frame.len());
    let mut table = Table::default();
    table.apply(record);
    assert_eq!(table.txn, Some(t.clone()));
    let (record, _) = read_frame(&table.encode_snapshot().unwrap()).unwrap();
    let mut again = Table::default();
    again.apply(record);
    assert_eq!(again.txn, Some(t));
    let (cleared, _) = read_frame(&encode(&Record::Txn(None)).unwrap()).unwrap();
    again.apply(cleared);
    assert_eq!(again.txn, None);
}

#[test]
fn pending_transactional_offsets_commit_or_abort_and_survive_a_snapshot() {
    let offsets: Offsets = vec![("in".into(), 0, oam(10, "", None, None))];
    let frame = encode_txn_offsets(7, &offsets).unwrap();
    let (record, _) = read_frame(&frame).unwrap();
    let mut table = Table::default();
    table.offsets.commit("in", 0, oam(5, "", None, None));
    table.apply(record);
    let (other, _) = read_frame(&encode_txn_offsets(8, &offsets).unwrap()).unwrap();
    table.apply(other);
    assert_eq!(
        table.offsets.committed_vec()[0].2.offset,
        5,
        "pending offsets are not the group's"
    );
    assert_eq!(table.offsets.pending().len(), 2);
    // A snapshot keeps them pending.
    let (snap, _) = read_frame(&table.encode_snapshot().unwrap()).unwrap();
    let mut again = Table::default();
    again.apply(snap);
    assert_eq!(again.offsets.pending(), table.offsets.pending());
    assert_eq!(again.offsets.committed_vec(), table.offsets.committed_vec());
    for (producer_id, commit) in [(7, true), (8, false)] {
        let end = encode(&Record::TxnEnd {
            producer_id,
            commit,
        })
        .unwrap();
        again.apply(read_frame(&end).unwrap().0);
    }
    assert!(again.offsets.pending().is_empty());
    assert_eq!(
        again.offsets.committed_vec()[0].2.offset,
        10,
        "the committed transaction's offset"
    );
}

#[test]
fn a_group_snapshot_is_unchanged_by_the_transaction_trailer() {
    let mut table = Table::default();
    table.offsets.commit("t", 0, oam(5, "", None, None));
    let group = table.encode_snapshot().unwrap();
    table.txn = Some(txn(TxnState::Ongoing));
    let with_txn = table.encode_snapshot().unwrap();
    assert!(with_txn.len() > group.len());
    assert_eq!(
        &with_txn[FRAME_HEADER..group.len()],
        &group[FRAME_HEADER..],
        "the trailer only follows what a group snapshot holds"
    );
    let (record, _) = read_frame(&group).unwrap();
    let mut again = Table::default();
    again.apply(record);
    assert_eq!(again.txn, None);
}

#[test]
fn a_transaction_state_that_is_never_stored_is_refused() {
    for state in [TxnState::Dead, TxnState::PrepareEpochFence] {
        let frame = encode(&Record::Txn(Some(txn(state)))).unwrap();
        assert!(read_frame(&frame).is_err(), "{state:?} accepted");
    }
    let mut payload = vec![KIND_TXN];
    payload.extend_from_slice(br#"{"producer_id":1}"#);
    assert!(decode(&payload).is_err(), "a record missing fields");
}

#[test]
fn json_records_of_earlier_logs_still_read() {
    let commit = br#"[{"topic":"t","partition":2,"offset":5,"leader_epoch":null,"metadata":"m","commit_timestamp_ms":1,"expire_timestamp_ms":null}]"#;
    let mut payload = vec![KIND_COMMIT_JSON];
    payload.extend_from_slice(commit);
    let Ok(Record::Commit(offsets)) = decode(&payload) else {
        panic!("JSON commit not read")
    };
    assert_eq!(offsets[0].0, "t");
    assert_eq!(offsets[0].2.offset, 5);

    let snapshot = br#"{"offsets":[{"topic":"t","partition":0,"offset":9,"leader_epoch":3,"metadata":"","commit_timestamp_ms":1,"expire_timestamp_ms":null}],"metadata":null}"#;
    let mut payload = vec![KIND_SNAPSHOT_JSON];
    payload.extend_from_slice(snapshot);
    let mut table = Table::default();
    table.apply(decode(&payload).unwrap());
    assert_eq!(table.offsets.committed_vec()[0].2.leader_epoch, Some(3));
}

#[test]
fn truncated_or_inflated_binary_records_are_refused() {
    let frame = encode_commit(&[("t", 0, oam(1, "meta", None, None))]).unwrap();
    let payload = &frame[FRAME_HEADER..];
    for cut in 1..payload.len() {
        assert!(decode(&payload[..cut]).is_err(), "cut at {cut} accepted");
    }
    // A count far beyond what the record holds reserves nothing.
    let mut inflated = payload.to_vec();
    inflated[1..5].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(decode(&inflated).unwrap_err().contains("exceeds"));
}
