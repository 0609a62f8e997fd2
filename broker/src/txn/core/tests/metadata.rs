//! Apache Kafka's `TransactionMetadataTest`, case by case (names kept).

use std::collections::BTreeSet;

use crate::txn::core::metadata::*;
use crate::txn::core::state::{TxnState, TxnState::*, TxnVersion};

const PRODUCER_ID: i64 = 23423;
const ID: &str = "txnlId";
const TIMEOUT: i32 = 30_000;
const NOW: i64 = 1_000_000;

fn metadata(epoch: i16, last: i16, state: TxnState, version: TxnVersion) -> TxnMetadata {
    TxnMetadata {
        transactional_id: ID.into(),
        producer_id: PRODUCER_ID,
        prev_producer_id: NO_PRODUCER_ID,
        next_producer_id: NO_PRODUCER_ID,
        producer_epoch: epoch,
        last_producer_epoch: last,
        timeout_ms: TIMEOUT,
        state,
        partitions: BTreeSet::new(),
        start_ms: if state == Empty { -1 } else { NOW },
        last_update_ms: NOW,
        client_version: version,
        pending: None,
        failed_epoch_fence: false,
    }
}

fn partitions(names: &[(&str, i32)]) -> BTreeSet<TopicPartition> {
    names
        .iter()
        .map(|(t, p)| TopicPartition::new(*t, *p))
        .collect()
}

fn complete(m: &mut TxnMetadata, t: TxnTransit) {
    m.complete_transition(&t).unwrap();
}

#[test]
fn test_initialize_epoch() {
    let mut m = metadata(NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    let t = m
        .prepare_increment_producer_epoch(TIMEOUT, None, NOW)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_id, PRODUCER_ID);
    assert_eq!(m.producer_epoch, 0);
    assert_eq!(m.last_producer_epoch, NO_PRODUCER_EPOCH);
}

#[test]
fn test_normal_epoch_bump() {
    let mut m = metadata(735, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    let t = m
        .prepare_increment_producer_epoch(TIMEOUT, None, NOW)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_epoch, 736);
    assert_eq!(m.last_producer_epoch, NO_PRODUCER_EPOCH);
}

#[test]
fn test_bump_epoch_not_allowed_if_epochs_exhausted() {
    let mut m = metadata(i16::MAX - 1, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    assert!(m.epoch_exhausted());
    assert!(matches!(
        m.prepare_increment_producer_epoch(TIMEOUT, None, NOW),
        Err(TransitionError::IllegalState(_))
    ));
}

fn empty_abort_in_v2(from: TxnState) {
    let mut m = metadata(735, NO_PRODUCER_EPOCH, from, TxnVersion::V2);
    m.start_ms = NOW - 1;
    let t = m
        .prepare_abort_or_commit(PrepareAbort, TxnVersion::V2, NO_PRODUCER_ID, NOW + 1, true)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.state, PrepareAbort);
    assert_eq!(m.producer_epoch, 736);
    assert_eq!(m.start_ms, NOW + 1);
}

#[test]
fn test_transit_from_empty_to_prepare_abort_in_v2() {
    empty_abort_in_v2(Empty);
}

#[test]
fn test_transit_from_complete_abort_to_prepare_abort_in_v2() {
    empty_abort_in_v2(CompleteAbort);
}

#[test]
fn test_transit_from_complete_commit_to_prepare_abort_in_v2() {
    empty_abort_in_v2(CompleteCommit);
}

#[test]
fn test_tolerate_update_time_shift_during_epoch_bump() {
    let mut m = metadata(1, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    m.start_ms = 1;
    let t = m
        .prepare_increment_producer_epoch(TIMEOUT, Some(1), NOW - 1)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_epoch, 2);
    assert_eq!(m.last_producer_epoch, 1);
    assert_eq!(m.start_ms, -1);
    assert_eq!(m.last_update_ms, NOW - 1);
}

#[test]
fn test_tolerate_update_time_reset_during_producer_id_rotation() {
    let mut m = metadata(1, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    let t = m
        .prepare_producer_id_rotation(PRODUCER_ID + 1, TIMEOUT, NOW - 1, true)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_id, PRODUCER_ID + 1);
    assert_eq!(m.last_producer_epoch, 1);
    assert_eq!(m.producer_epoch, 0);
    assert_eq!(m.start_ms, -1);
    assert_eq!(m.last_update_ms, NOW - 1);
}

#[test]
fn test_tolerate_time_shift_during_add_partitions() {
    let mut m = metadata(1, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    let t = m
        .prepare_add_partitions(&partitions(&[("topic1", 0)]), NOW - 1, TxnVersion::V0)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.state, Ongoing);
    assert_eq!(m.start_ms, NOW - 1);
    assert_eq!(m.last_update_ms, NOW - 1);
    assert_eq!(m.last_producer_epoch, NO_PRODUCER_EPOCH);
    let t = m
        .prepare_add_partitions(&partitions(&[("topic2", 0)]), NOW - 2, TxnVersion::V0)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.partitions, partitions(&[("topic1", 0), ("topic2", 0)]));
    assert_eq!(m.start_ms, NOW - 1);
    assert_eq!(m.last_update_ms, NOW - 2);
}

fn time_shift_during_prepare(state: TxnState) {
    let mut m = metadata(1, NO_PRODUCER_EPOCH, Ongoing, TxnVersion::V0);
    m.start_ms = 1;
    let t = m
        .prepare_abort_or_commit(state, TxnVersion::V0, NO_PRODUCER_ID, NOW - 1, false)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.state, state);
    assert_eq!(m.producer_epoch, 1);
    assert_eq!(m.last_producer_epoch, NO_PRODUCER_EPOCH);
    assert_eq!(m.start_ms, 1);
    assert_eq!(m.last_update_ms, NOW - 1);
}

#[test]
fn test_tolerate_time_shift_during_prepare_commit() {
    time_shift_during_prepare(PrepareCommit);
}

#[test]
fn test_tolerate_time_shift_during_prepare_abort() {
    time_shift_during_prepare(PrepareAbort);
}

fn time_shift_during_complete(from: TxnState, to: TxnState) {
    for version in [TxnVersion::V0, TxnVersion::V2] {
        let mut m = metadata(1, 0, from, version);
        m.start_ms = 1;
        let t = m.prepare_complete(NOW - 1).unwrap();
        complete(&mut m, t);
        assert_eq!(m.state, to);
        assert_eq!(m.producer_id, PRODUCER_ID);
        assert_eq!(m.producer_epoch, 1);
        assert_eq!(m.last_producer_epoch, 0);
        assert_eq!(m.start_ms, 1);
        assert_eq!(m.last_update_ms, NOW - 1);
    }
}

#[test]
fn test_tolerate_time_shift_during_complete_commit() {
    time_shift_during_complete(PrepareCommit, CompleteCommit);
}

#[test]
fn test_tolerate_time_shift_during_complete_abort() {
    time_shift_during_complete(PrepareAbort, CompleteAbort);
}

#[test]
fn test_fence_producer_after_epochs_exhausted() {
    let mut m = metadata(i16::MAX - 1, NO_PRODUCER_EPOCH, Ongoing, TxnVersion::V0);
    let fence = m.prepare_fence_producer_epoch().unwrap();
    assert_eq!(fence.producer_epoch, i16::MAX);
    assert_eq!(fence.last_producer_epoch, NO_PRODUCER_EPOCH);
    assert_eq!(m.pending, Some(PrepareEpochFence));
    // The coordinator's abort of the fenced transaction.
    m.pending = None;
    m.producer_epoch = fence.producer_epoch;
    let t = m
        .prepare_abort_or_commit(PrepareAbort, TxnVersion::V0, NO_PRODUCER_ID, NOW, false)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_id, PRODUCER_ID);
    assert_eq!(m.producer_epoch, i16::MAX);
    assert_eq!(m.state, PrepareAbort);
}

#[test]
fn test_invalid_transition_from_complete_commit_to_fence() {
    let mut m = metadata(
        i16::MAX - 1,
        NO_PRODUCER_EPOCH,
        CompleteCommit,
        TxnVersion::V0,
    );
    assert!(matches!(
        m.prepare_fence_producer_epoch(),
        Err(TransitionError::IllegalState(_))
    ));
}

#[test]
fn test_invalid_transition_from_complete_abort_to_fence() {
    let mut m = metadata(
        i16::MAX - 1,
        NO_PRODUCER_EPOCH,
        CompleteAbort,
        TxnVersion::V0,
    );
    assert!(matches!(
        m.prepare_fence_producer_epoch(),
        Err(TransitionError::IllegalState(_))
    ));
}

#[test]
fn test_fence_producer_not_allowed_if_it_would_overflow() {
    let mut m = metadata(i16::MAX, NO_PRODUCER_EPOCH, Ongoing, TxnVersion::V0);
    let fence = m.prepare_fence_producer_epoch().unwrap();
    assert_eq!(fence.producer_epoch, i16::MAX);
    assert_eq!(fence.state, PrepareEpochFence);
}

#[test]
fn test_rotate_producer_id() {
    let mut m = metadata(i16::MAX - 1, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    let t = m
        .prepare_producer_id_rotation(9893, TIMEOUT, NOW, true)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_id, 9893);
    assert_eq!(m.prev_producer_id, PRODUCER_ID);
    assert_eq!(m.producer_epoch, 0);
    assert_eq!(m.last_producer_epoch, i16::MAX - 1);
}

#[test]
fn test_epoch_bump_on_end_txn() {
    let mut m = metadata(10, NO_PRODUCER_EPOCH, Ongoing, TxnVersion::V2);
    let t = m
        .prepare_abort_or_commit(PrepareCommit, TxnVersion::V2, NO_PRODUCER_ID, NOW, false)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_epoch, 11);
    assert_eq!(m.client_version, TxnVersion::V2);
    let t = m.prepare_complete(NOW).unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_id, PRODUCER_ID);
    assert_eq!(m.producer_epoch, 11);
}

#[test]
fn test_epoch_bump_on_end_txn_overflow() {
    let mut m = metadata(i16::MAX - 1, NO_PRODUCER_EPOCH, Ongoing, TxnVersion::V2);
    let t = m
        .prepare_abort_or_commit(PrepareCommit, TxnVersion::V2, 9893, NOW, false)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_id, PRODUCER_ID);
    assert_eq!(m.producer_epoch, i16::MAX);
    assert_eq!(m.last_producer_epoch, i16::MAX - 1);
    let t = m.prepare_complete(NOW).unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_id, 9893);
    assert_eq!(m.producer_epoch, 0);
    assert_eq!(m.last_producer_epoch, i16::MAX - 1);
}

#[test]
fn test_rotate_producer_id_in_ongoing_state() {
    let mut m = metadata(i16::MAX - 1, NO_PRODUCER_EPOCH, Ongoing, TxnVersion::V0);
    assert!(m
        .prepare_producer_id_rotation(9893, TIMEOUT, NOW, false)
        .is_err());
}

#[test]
fn test_rotate_producer_id_in_prepare_abort_state() {
    for version in [TxnVersion::V0, TxnVersion::V2] {
        let mut m = metadata(i16::MAX - 1, NO_PRODUCER_EPOCH, PrepareAbort, version);
        assert!(m
            .prepare_producer_id_rotation(9893, TIMEOUT, NOW, false)
            .is_err());
    }
}

#[test]
fn test_rotate_producer_id_in_prepare_commit_state() {
    for version in [TxnVersion::V0, TxnVersion::V2] {
        let mut m = metadata(i16::MAX - 1, NO_PRODUCER_EPOCH, PrepareCommit, version);
        assert!(m
            .prepare_producer_id_rotation(9893, TIMEOUT, NOW, false)
            .is_err());
    }
}

#[test]
fn test_attempted_epoch_bump_with_newly_created_metadata() {
    let mut m = metadata(NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    let t = m
        .prepare_increment_producer_epoch(TIMEOUT, Some(735), NOW)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_epoch, 0);
    assert_eq!(m.last_producer_epoch, NO_PRODUCER_EPOCH);
}

#[test]
fn test_epoch_bump_with_current_epoch_provided() {
    let mut m = metadata(735, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    let t = m
        .prepare_increment_producer_epoch(TIMEOUT, Some(735), NOW)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_epoch, 736);
    assert_eq!(m.last_producer_epoch, 735);
}

#[test]
fn test_attempted_epoch_bump_with_last_epoch() {
    let mut m = metadata(735, 734, Empty, TxnVersion::V0);
    let t = m
        .prepare_increment_producer_epoch(TIMEOUT, Some(734), NOW)
        .unwrap();
    complete(&mut m, t);
    assert_eq!(m.producer_epoch, 735);
    assert_eq!(m.last_producer_epoch, 734);
}

#[test]
fn test_attempted_epoch_bump_with_fenced_epoch() {
    let mut m = metadata(735, 734, Empty, TxnVersion::V0);
    assert_eq!(
        m.prepare_increment_producer_epoch(TIMEOUT, Some(733), NOW),
        Err(TransitionError::ProducerFenced)
    );
}

#[test]
fn test_transaction_state_id_and_name_mapping() {
    for state in TxnState::ALL {
        assert_eq!(TxnState::from_id(state.id()), Some(state));
        assert_eq!(TxnState::from_name(state.name()), Some(state));
    }
    assert_eq!(TxnState::from_id(8), None);
    assert_eq!(TxnState::from_name("Unknown"), None);
}

#[test]
fn test_all_transaction_states_are_mapped() {
    let ids: BTreeSet<i8> = TxnState::ALL.iter().map(|s| s.id()).collect();
    assert_eq!(ids, (0..8).collect());
}

// Beyond Apache's cases: what a pending transition and the completion
// checks refuse.

#[test]
fn a_second_transition_cannot_be_prepared_while_one_is_pending() {
    let mut m = metadata(1, NO_PRODUCER_EPOCH, Empty, TxnVersion::V0);
    m.prepare_add_partitions(&partitions(&[("t", 0)]), NOW, TxnVersion::V0)
        .unwrap();
    assert!(m
        .prepare_add_partitions(&partitions(&[("t", 1)]), NOW, TxnVersion::V0)
        .is_err());
}

#[test]
fn a_transit_that_does_not_match_the_pending_state_is_refused() {
    let mut m = metadata(1, NO_PRODUCER_EPOCH, Ongoing, TxnVersion::V0);
    m.partitions = partitions(&[("t", 0)]);
    let mut t = m
        .prepare_abort_or_commit(PrepareCommit, TxnVersion::V0, NO_PRODUCER_ID, NOW, false)
        .unwrap();
    t.producer_epoch = 5;
    assert!(m.complete_transition(&t).is_err());
    assert_eq!(m.state, Ongoing, "nothing applied");
}

#[test]
fn loaded_metadata_forgets_the_last_epoch_and_keeps_no_partitions_when_empty() {
    let mut stored = metadata(4, 3, Empty, TxnVersion::V0).current();
    stored.partitions = partitions(&[("t", 0)]);
    let m = TxnMetadata::from_stored(ID, &stored);
    assert_eq!(m.last_producer_epoch, NO_PRODUCER_EPOCH);
    assert!(m.partitions.is_empty());
    assert_eq!(m.pending, None);
}
