//! The replay of offset records, ported from Apache's
//! `OffsetMetadataManagerTest` by name where it has the case.

use super::*;

fn at(offset: i64) -> OffsetAndMetadata {
    OffsetAndMetadata {
        offset,
        leader_epoch: None,
        metadata: "small".into(),
        commit_timestamp_ms: 1,
        expire_timestamp_ms: None,
    }
}

fn staged(topic: &str, partition: i32, offset: i64) -> [(Arc<str>, i32, OffsetAndMetadata); 1] {
    [(Arc::from(topic), partition, at(offset))]
}

fn pending_of(g: &GroupOffsets, producer_id: i64, topic: &str, partition: i32) -> Option<i64> {
    g.pending()
        .get(&producer_id)?
        .iter()
        .find(|(t, p, _)| &**t == topic && *p == partition)
        .map(|(_, _, o)| o.offset)
}

#[test]
fn test_replay() {
    let mut g = GroupOffsets::default();
    g.commit("bar", 0, at(100));
    assert_eq!(g.get("bar", 0), Some(&at(100)));
    g.commit("bar", 0, at(200));
    assert_eq!(g.get("bar", 0), Some(&at(200)));
    g.commit("bar", 1, at(200));
    g.commit("bar", 1, at(300));
    assert_eq!(g.get("bar", 1), Some(&at(300)));
    assert_eq!(g.committed_len(), 2);
}

#[test]
fn test_transactional_replay() {
    let mut g = GroupOffsets::default();
    g.stage(5, staged("bar", 0, 100));
    g.stage(5, staged("bar", 1, 101));
    g.stage(5, staged("zar", 0, 100));
    g.stage(5, staged("zar", 1, 101));
    g.stage(6, staged("bar", 2, 200));
    g.stage(6, staged("bar", 3, 201));
    assert_eq!(pending_of(&g, 5, "zar", 1), Some(101));
    assert_eq!(pending_of(&g, 6, "bar", 3), Some(201));
    // Staged offsets are not the group's.
    assert_eq!(g.get("bar", 0), None);
    assert!(g.has_pending("bar", 2));
    assert!(!g.has_pending("bar", 4));
    // A later stage of the same partition replaces the earlier.
    g.stage(5, staged("bar", 0, 150));
    assert_eq!(pending_of(&g, 5, "bar", 0), Some(150));
    assert_eq!(g.pending()[&5].len(), 4);
}

#[test]
fn test_replay_with_tombstone_and_pending_transactional_offsets() {
    let mut g = GroupOffsets::default();
    g.commit("bar", 0, at(100));
    g.stage(10, staged("bar", 0, 101));
    g.stage(10, staged("bar", 1, 102));
    g.delete("bar", 0);
    g.delete("bar", 1);
    // Gone from the committed offsets and from every open transaction.
    assert_eq!(g.get("bar", 0), None);
    assert!(!g.has_pending("bar", 0));
    assert!(!g.has_pending("bar", 1));
    // The transaction is still open: its end commits nothing of them.
    assert!(g.end_txn(10, true));
    assert_eq!(g.get("bar", 0), None);
    assert_eq!(g.get("bar", 1), None);
    assert!(g.is_empty());
}

#[test]
fn test_replay_transaction_end_marker_with_commit() {
    let mut g = GroupOffsets::default();
    g.commit("bar", 0, at(100));
    g.stage(5, staged("bar", 0, 101));
    g.stage(6, staged("bar", 1, 102));
    // An end marker of an unknown producer id does not fail.
    assert!(!g.end_txn(1, true));
    assert!(g.end_txn(5, true));
    assert_eq!(pending_of(&g, 5, "bar", 0), None);
    assert_eq!(g.get("bar", 0), Some(&at(101)));
    assert!(g.end_txn(6, false));
    assert_eq!(pending_of(&g, 6, "bar", 1), None);
    assert_eq!(g.get("bar", 1), None);
    assert!(g.pending().is_empty());
}

#[test]
fn committed_offsets_iterate_sorted_whatever_the_commit_order() {
    let g: GroupOffsets = vec![
        ("b".to_string(), 1, at(3)),
        ("a".to_string(), 2, at(2)),
        ("b".to_string(), 0, at(4)),
        ("a".to_string(), 0, at(1)),
    ]
    .into();
    let order: Vec<(&str, i32, i64)> = g.committed().map(|(t, p, o)| (t, p, o.offset)).collect();
    assert_eq!(order, [("a", 0, 1), ("a", 2, 2), ("b", 0, 4), ("b", 1, 3)]);
    assert_eq!(g.committed_vec().len(), 4);
}

/// Where kaas differs from Apache (docs/design/transactions.md): Apache's
/// `testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset` keeps
/// a plain commit written after the transactional one; kaas applies the
/// transaction's offset at its end.
#[test]
fn a_transactions_end_applies_its_offset_over_a_later_plain_commit() {
    let mut g = GroupOffsets::default();
    g.stage(5, staged("bar", 0, 100));
    g.commit("bar", 0, at(101));
    assert!(g.end_txn(5, true));
    assert_eq!(g.get("bar", 0), Some(&at(100)));
}
