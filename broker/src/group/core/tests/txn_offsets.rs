//! Transactional offsets (Apache's OffsetMetadataManagerTest, the
//! transactional cases; names kept where they match).

use super::*;

const PID: i64 = 42;

fn txn_req(group: &str, member: &str, generation: i32, offset: i64) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest {
        group_id: group.into(),
        producer_id: PID,
        producer_epoch: 0,
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        topics: vec![OffsetCommitTopic {
            name: "in".into(),
            partitions: vec![OffsetCommitPartition {
                partition: 0,
                offset,
                leader_epoch: -1,
                metadata: None,
            }],
        }],
    }
}

impl Shell {
    /// TxnOffsetCommit, its write made durable; the partition's error.
    fn txn_commit(&mut self, req: TxnOffsetCommitRequest) -> i16 {
        let t = self.token();
        let fx = self.c.txn_offset_commit(t, req, self.now);
        self.apply(fx);
        if let Some(i) = self.txn_offset_plans.iter().position(|p| p.token == t) {
            self.txn_offset_plans.remove(i);
            let fx = self.c.complete_txn_offset_commit(t, self.now);
            self.apply(fx);
        }
        match self.responses.remove(&t) {
            Some(Response::TxnOffsetCommit(r)) => r.topics[0].partitions[0].error_code,
            other => panic!("not a TxnOffsetCommit answer: {other:?}"),
        }
    }

    /// A marker for the group, its write made durable.
    fn marker(&mut self, group: &str, commit: bool) -> i16 {
        let t = self.token();
        let fx = self.c.txn_marker(t, group, PID, commit);
        self.apply(fx);
        if let Some(i) = self.txn_ends.iter().position(|(tok, _)| *tok == t) {
            self.txn_ends.remove(i);
            let fx = self.c.complete_txn_marker(t, self.now);
            self.apply(fx);
        }
        match self.responses.remove(&t) {
            Some(Response::TxnMarker(code)) => code,
            other => panic!("not a marker answer: {other:?}"),
        }
    }

    fn fetched(&self, group: &str, require_stable: bool) -> (i64, i16) {
        let r = self.c.offset_fetch(&OffsetFetchRequest {
            group_id: group.into(),
            topics: Some(vec![("in".into(), vec![0])]),
            require_stable,
            ..OffsetFetchRequest::admin()
        });
        let p = &r.topics[0].partitions[0];
        (p.offset, p.error_code)
    }
}

#[test]
fn test_generic_group_transactional_offset_commit() {
    let mut s = Shell::new();
    assert_eq!(s.txn_commit(txn_req("foo", "", -1, 100)), code::NONE);
    // Pending: not the group's, and require_stable readers wait.
    assert_eq!(s.fetched("foo", false), (-1, code::NONE));
    assert_eq!(s.fetched("foo", true).1, code::UNSTABLE_OFFSET_COMMIT);
    assert_eq!(s.marker("foo", true), code::NONE);
    assert_eq!(s.fetched("foo", true), (100, code::NONE));
}

#[test]
fn test_generic_group_transactional_offset_commit_with_unknown_group_id_and_generation() {
    let mut s = Shell::new();
    assert_eq!(
        s.txn_commit(txn_req("foo", "member", 10, 100)),
        code::ILLEGAL_GENERATION
    );
    assert_eq!(s.fetched("foo", true), (-1, code::NONE));
}

#[test]
fn an_aborted_transactions_offsets_are_dropped() {
    let mut s = Shell::new();
    s.txn_commit(txn_req("foo", "", -1, 100));
    assert_eq!(s.marker("foo", false), code::NONE);
    assert_eq!(s.fetched("foo", true), (-1, code::NONE));
    assert!(s.c.pending_txn_producers("foo").is_empty());
}

#[test]
fn a_marker_with_nothing_pending_is_answered_at_once() {
    let mut s = Shell::new();
    let t = s.token();
    let fx = s.c.txn_marker(t, "foo", PID, true);
    assert!(matches!(
        fx.as_slice(),
        [Effect::Respond(_, Response::TxnMarker(0))]
    ));
}

#[test]
fn loaded_pending_offsets_stay_pending_until_their_marker() {
    let mut s = Shell::new();
    let mut offsets = GroupOffsets::default();
    offsets.stage(
        PID,
        [(
            "in".into(),
            0,
            OffsetAndMetadata {
                offset: 7,
                leader_epoch: None,
                metadata: String::new(),
                commit_timestamp_ms: 1,
                expire_timestamp_ms: None,
            },
        )],
    );
    s.c.load_group("foo", None, offsets, s.now);
    assert_eq!(s.fetched("foo", true).1, code::UNSTABLE_OFFSET_COMMIT);
    assert_eq!(s.marker("foo", true), code::NONE);
    assert_eq!(s.fetched("foo", false).0, 7);
}

/// Apache `testCleanupExpiredOffsetsWithPendingTransactionalOffsets`: an
/// offset with a transactional one pending for its partition does not
/// expire; and (`cleanupExpiredOffsets`' last line) an empty group with an
/// open transaction is not removed though every offset it has expired.
/// Once the transaction ends, the sweep takes the group.
#[test]
fn test_cleanup_expired_offsets_with_pending_transactional_offsets() {
    let mut s = Shell::with_config(GroupCoordinatorConfig {
        offsets_retention_ms: 60_000,
        ..test_config()
    });
    assert_eq!(s.txn_commit(txn_req("foo", "", -1, 100)), code::NONE);
    assert_eq!(s.marker("foo", true), code::NONE);
    assert!(s.c.is_resident("foo"));
    assert_eq!(s.txn_commit(txn_req("foo", "", -1, 101)), code::NONE);
    s.sleep(60_000);
    let (expired, _) = s.c.expire_offsets(s.now);
    assert!(expired.offsets.is_empty(), "pending for in-0: {expired:?}");
    assert_eq!(s.fetched("foo", false), (100, code::NONE));

    // Committed: a new in-0, then an open transaction on another topic.
    assert_eq!(s.marker("foo", true), code::NONE);
    let mut other = txn_req("foo", "", -1, 5);
    other.topics[0].name = "other".into();
    assert_eq!(s.txn_commit(other), code::NONE);
    s.sleep(60_000);
    let (expired, _) = s.c.expire_offsets(s.now);
    assert_eq!(expired.offsets, vec![("foo".into(), "in".into(), 0)]);
    assert!(expired.removed_groups.is_empty(), "an open transaction");
    assert!(s.c.is_resident("foo"));

    // Aborted: nothing left, the group goes.
    assert_eq!(s.marker("foo", false), code::NONE);
    let (expired, _) = s.c.expire_offsets(s.now);
    assert_eq!(expired.removed_groups, vec!["foo".to_string()]);
}

/// Apache `testGenericGroupOffsetDeleteWithPendingTransactionalOffsets`:
/// OffsetDelete of a partition with only a staged offset writes its
/// tombstone, which removes the staged offset: the transaction's commit
/// then leaves the partition without an offset.
#[test]
fn test_generic_group_offset_delete_with_pending_transactional_offsets() {
    let mut s = Shell::new();
    assert_eq!(s.txn_commit(txn_req("foo", "", -1, 100)), code::NONE);
    let r = s.delete_offsets("foo", "in", 0);
    assert_eq!((r.error_code, r.topics[0].partitions[0].error_code), (0, 0));
    assert!(!s.c.has_pending_txn_offset("foo", "in", 0));
    assert_eq!(s.fetched("foo", true), (-1, code::NONE));
    // The transaction is still open; its commit brings nothing back.
    assert_eq!(s.c.pending_txn_producers("foo"), vec![PID]);
    assert_eq!(s.marker("foo", true), code::NONE);
    assert_eq!(s.fetched("foo", true), (-1, code::NONE));
}
