//! Apache Kafka's `TransactionCoordinatorTest` (and the expiry and loading
//! cases of `TransactionStateManagerTest`), case by case, names kept. Where
//! Apache mocks the state manager's append, these tests see the Write
//! effect and report its outcome with `write_done`. Cases about partition
//! ownership (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) belong to the
//! shell, which routes and loads before the core is asked.

use std::collections::BTreeSet;

use crate::txn::core::metadata::{TopicPartition, TxnMetadata, TxnTransit, NO_PRODUCER_ID};
use crate::txn::core::state::{TxnState, TxnState::*, TxnVersion};
use crate::txn::core::{
    code, ProducerIdSource, TxnAnswer, TxnCoordinator, TxnCoordinatorConfig, TxnEffect, TxnResult,
    TxnResult::*,
};

const ID: &str = "known";
const PID: i64 = 10;
const EPOCH: i16 = 1;
const TIMEOUT: i32 = 1;
const NOW: i64 = 1_000_000;
const V0: TxnVersion = TxnVersion::V0;
const V2: TxnVersion = TxnVersion::V2;

/// Hands out 0, 1, 2, ... (Apache's `mockPidGenerator`).
struct Pids(i64, usize);

impl ProducerIdSource for Pids {
    fn next_id(&mut self) -> Result<i64, i16> {
        self.1 += 1;
        self.0 += 1;
        Ok(self.0 - 1)
    }
}

fn pids_from(next: i64) -> Pids {
    Pids(next, 0)
}

fn partitions() -> BTreeSet<TopicPartition> {
    [TopicPartition::new("topic1", 0)].into()
}

#[allow(clippy::too_many_arguments)]
fn meta(
    pid: i64,
    prev: i64,
    epoch: i16,
    last: i16,
    state: TxnState,
    parts: BTreeSet<TopicPartition>,
    version: TxnVersion,
) -> TxnMetadata {
    TxnMetadata {
        transactional_id: ID.into(),
        producer_id: pid,
        prev_producer_id: prev,
        next_producer_id: NO_PRODUCER_ID,
        producer_epoch: epoch,
        last_producer_epoch: last,
        timeout_ms: TIMEOUT,
        state,
        partitions: parts,
        start_ms: if state == Empty { -1 } else { NOW },
        last_update_ms: NOW,
        client_version: version,
        pending: None,
        failed_epoch_fence: false,
    }
}

fn with(m: TxnMetadata) -> TxnCoordinator {
    with_cfg(m, TxnCoordinatorConfig::default())
}

fn with_cfg(m: TxnMetadata, cfg: TxnCoordinatorConfig) -> TxnCoordinator {
    let mut c = TxnCoordinator::new(cfg);
    c.put(m);
    c
}

fn server(version: TxnVersion) -> TxnCoordinatorConfig {
    TxnCoordinatorConfig {
        server_version: version,
        ..TxnCoordinatorConfig::default()
    }
}

fn answers(fx: &[TxnEffect]) -> Vec<TxnAnswer> {
    fx.iter()
        .filter_map(|e| match e {
            TxnEffect::Answer(_, a) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

fn the_answer(fx: &[TxnEffect]) -> TxnAnswer {
    let a = answers(fx);
    assert_eq!(a.len(), 1, "one answer in {fx:?}");
    a[0].clone()
}

fn writes(fx: &[TxnEffect]) -> Vec<(u64, TxnTransit)> {
    fx.iter()
        .filter_map(|e| match e {
            TxnEffect::Write {
                token,
                transit: Some(t),
                ..
            } => Some((*token, t.clone())),
            _ => None,
        })
        .collect()
}

fn the_write(fx: &[TxnEffect]) -> (u64, TxnTransit) {
    let w = writes(fx);
    assert_eq!(w.len(), 1, "one write in {fx:?}");
    w[0].clone()
}

fn has_markers(fx: &[TxnEffect]) -> bool {
    fx.iter()
        .any(|e| matches!(e, TxnEffect::WriteMarkers { .. }))
}

fn init(
    c: &mut TxnCoordinator,
    timeout: i32,
    expected: Option<(i64, i16)>,
    ids: &mut Pids,
) -> Vec<TxnEffect> {
    c.init_producer_id(1, ID, timeout, expected, NOW, ids)
}

fn init_answer(pid: i64, epoch: i16, error: i16) -> TxnAnswer {
    TxnAnswer::InitProducerId {
        producer_id: pid,
        producer_epoch: epoch,
        error,
    }
}

fn end(
    c: &mut TxnCoordinator,
    pid: i64,
    epoch: i16,
    result: TxnResult,
    v: TxnVersion,
) -> Vec<TxnEffect> {
    c.end_txn(1, ID, pid, epoch, result, v, NOW, &mut pids_from(0))
}

fn end_error(fx: &[TxnEffect]) -> i16 {
    the_answer(fx).error()
}

fn add(c: &mut TxnCoordinator, pid: i64, epoch: i16, v: TxnVersion) -> Vec<TxnEffect> {
    c.add_partitions(1, ID, pid, epoch, &partitions(), v, NOW)
}

/// Under version 2 a retry carries the epoch one below (Apache's
/// `requestEpoch`).
fn request_epoch(v: TxnVersion) -> i16 {
    if v.supports_epoch_bump() {
        EPOCH - 1
    } else {
        EPOCH
    }
}

// --- InitProducerId ---

#[test]
fn should_return_invalid_request_when_transactional_id_is_empty() {
    let mut c = TxnCoordinator::default();
    for _ in 0..2 {
        let fx = c.init_producer_id(1, "", TIMEOUT, None, NOW, &mut pids_from(0));
        assert_eq!(the_answer(&fx), init_answer(-1, -1, code::INVALID_REQUEST));
    }
}

#[test]
fn should_init_pid_with_epoch_zero_for_new_transactional_id() {
    let mut c = TxnCoordinator::default();
    let mut ids = pids_from(0);
    let fx = init(&mut c, TIMEOUT, None, &mut ids);
    let (token, t) = the_write(&fx);
    assert_eq!((t.producer_id, t.producer_epoch, t.state), (0, 0, Empty));
    assert!(answers(&fx).is_empty(), "answered only once durable");
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx), init_answer(0, 0, code::NONE));
    assert_eq!(c.metadata(ID).unwrap().producer_epoch, 0);
}

#[test]
fn should_generate_new_producer_id_if_no_state_and_producer_id_and_epoch_provided() {
    let mut c = TxnCoordinator::default();
    let fx = init(&mut c, TIMEOUT, Some((PID, EPOCH)), &mut pids_from(0));
    let (token, t) = the_write(&fx);
    assert_eq!((t.producer_id, t.producer_epoch), (0, 0));
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx), init_answer(0, 0, code::NONE));
}

#[test]
fn should_generate_new_producer_id_if_epochs_exhausted() {
    let mut c = with(meta(PID, -1, i16::MAX - 1, -1, Empty, BTreeSet::new(), V0));
    let fx = init(&mut c, TIMEOUT, None, &mut pids_from(11));
    let (token, t) = the_write(&fx);
    assert_ne!(t.producer_id, PID);
    assert_eq!(t.producer_epoch, 0);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx), init_answer(11, 0, code::NONE));
}

#[test]
fn should_generate_new_producer_id_if_epochs_exhausted_v2() {
    let mut c = with(meta(PID, -1, i16::MAX - 1, -1, Ongoing, partitions(), V2));
    let mut ids = pids_from(11);
    let fx = c.end_txn(1, ID, PID, i16::MAX - 1, Commit, V2, NOW, &mut ids);
    let (token, t) = the_write(&fx);
    assert_eq!(
        (t.state, t.producer_epoch, t.next_producer_id),
        (PrepareCommit, i16::MAX, 11)
    );
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(
        the_answer(&fx),
        TxnAnswer::EndTxn {
            error: code::NONE,
            producer_id: 11,
            producer_epoch: 0
        }
    );
}

#[test]
fn should_increment_epoch_and_update_metadata_on_handle_init_pid_when_existing_empty_transaction() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Empty, BTreeSet::new(), V0));
    let fx = init(&mut c, 10, None, &mut pids_from(0));
    let (token, _) = the_write(&fx);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx), init_answer(PID, 2, code::NONE));
    let m = c.metadata(ID).unwrap();
    assert_eq!(
        (
            m.timeout_ms,
            m.last_update_ms,
            m.producer_epoch,
            m.producer_id
        ),
        (10, NOW, 2, PID)
    );
}

fn init_from_complete(state: TxnState) {
    for v in [V0, V2] {
        let mut c = with(meta(PID, -1, EPOCH, -1, state, BTreeSet::new(), v));
        let fx = init(&mut c, 10, None, &mut pids_from(0));
        let (token, _) = the_write(&fx);
        let fx = c.write_done(token, Ok(()), NOW);
        assert_eq!(the_answer(&fx), init_answer(PID, 2, code::NONE));
        let m = c.metadata(ID).unwrap();
        assert_eq!((m.timeout_ms, m.producer_epoch, m.state), (10, 2, Empty));
    }
}

#[test]
fn should_increment_epoch_and_update_metadata_on_handle_init_pid_when_existing_complete_transaction(
) {
    init_from_complete(CompleteAbort);
}

#[test]
fn should_increment_epoch_and_update_metadata_on_handle_init_pid_when_existing_complete_commit_transaction(
) {
    init_from_complete(CompleteCommit);
}

#[test]
fn should_wait_for_commit_to_complete_on_handle_init_pid_and_existing_transaction_in_prepare_commit_state(
) {
    let mut c = with(meta(PID, -1, EPOCH, -1, PrepareCommit, partitions(), V0));
    let fx = init(&mut c, 10, None, &mut pids_from(0));
    assert_eq!(
        the_answer(&fx),
        init_answer(-1, -1, code::CONCURRENT_TRANSACTIONS)
    );
}

#[test]
fn should_wait_for_commit_to_complete_on_handle_init_pid_and_existing_transaction_in_prepare_abort_state(
) {
    let mut c = with(meta(PID, -1, EPOCH, -1, PrepareAbort, partitions(), V0));
    let fx = init(&mut c, 10, None, &mut pids_from(0));
    assert_eq!(
        the_answer(&fx),
        init_answer(-1, -1, code::CONCURRENT_TRANSACTIONS)
    );
}

#[test]
fn should_abort_transaction_on_handle_init_pid_when_existing_transaction_in_ongoing_state() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V0));
    let fx = init(&mut c, TIMEOUT, None, &mut pids_from(0));
    let (token, t) = the_write(&fx);
    assert_eq!(
        t,
        TxnTransit {
            producer_id: PID,
            prev_producer_id: PID,
            next_producer_id: -1,
            producer_epoch: 2,
            last_producer_epoch: -1,
            timeout_ms: TIMEOUT,
            state: PrepareAbort,
            partitions: partitions(),
            start_ms: NOW,
            last_update_ms: NOW,
            client_version: V0,
        }
    );
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(
        the_answer(&fx),
        init_answer(-1, -1, code::CONCURRENT_TRANSACTIONS)
    );
    assert!(has_markers(&fx), "the abort's markers go out");
}

#[test]
fn should_not_repeatedly_bump_epoch_due_to_init_pid_during_ongoing_txn_if_append_to_log_fails() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V0));
    let mut transits = Vec::new();
    for _ in 0..2 {
        let fx = init(&mut c, TIMEOUT, None, &mut pids_from(0));
        let (token, t) = the_write(&fx);
        transits.push(t);
        let fx = c.write_done(token, Err(code::COORDINATOR_NOT_AVAILABLE), NOW);
        assert_eq!(
            the_answer(&fx),
            init_answer(-1, -1, code::COORDINATOR_NOT_AVAILABLE)
        );
        let m = c.metadata(ID).unwrap();
        assert_eq!(m.producer_epoch, 2);
        assert!(m.failed_epoch_fence);
    }
    let fx = init(&mut c, TIMEOUT, None, &mut pids_from(0));
    let (token, t) = the_write(&fx);
    transits.push(t);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(
        the_answer(&fx),
        init_answer(-1, -1, code::CONCURRENT_TRANSACTIONS)
    );
    let m = c.metadata(ID).unwrap();
    assert_eq!(m.producer_epoch, 2);
    assert!(!m.failed_epoch_fence);
    assert!(transits
        .iter()
        .all(|t| *t == transits[0] && t.producer_epoch == 2));
}

#[test]
fn should_use_last_epoch_to_fence_when_epochs_are_exhausted() {
    let mut c = with(meta(PID, -1, i16::MAX - 1, -1, Ongoing, partitions(), V0));
    let fx = init(&mut c, TIMEOUT, None, &mut pids_from(0));
    let (token, t) = the_write(&fx);
    assert_eq!(
        (
            t.producer_id,
            t.prev_producer_id,
            t.producer_epoch,
            t.last_producer_epoch
        ),
        (PID, PID, i16::MAX, -1)
    );
    assert_eq!(t.state, PrepareAbort);
    assert_eq!(c.metadata(ID).unwrap().producer_epoch, i16::MAX);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(
        the_answer(&fx),
        init_answer(-1, -1, code::CONCURRENT_TRANSACTIONS)
    );
}

#[test]
fn should_not_cause_epoch_overflow_when_init_pid_during_ongoing_txn_v2() {
    let mut c = with_cfg(
        meta(PID, -1, i16::MAX - 1, -1, Ongoing, partitions(), V2),
        server(V2),
    );
    let fx = init(&mut c, TIMEOUT, None, &mut pids_from(11));
    let (token, t) = the_write(&fx);
    assert_eq!((t.state, t.producer_epoch), (PrepareAbort, i16::MAX));
    c.write_done(token, Ok(()), NOW);
    let m = c.metadata(ID).unwrap();
    assert_eq!((m.state, m.producer_epoch), (PrepareAbort, i16::MAX));
}

/// Runs a transaction through its markers to completion.
fn finish(c: &mut TxnCoordinator) -> Vec<TxnEffect> {
    let fx = c.markers_written(ID);
    let (token, _) = the_write(&fx);
    c.write_done(token, Ok(()), NOW)
}

#[test]
fn should_handle_timeout_at_epoch_overflow_boundary_correctly_tv2() {
    let mut m = meta(PID, -1, i16::MAX - 1, -1, Ongoing, partitions(), V2);
    m.start_ms = NOW - 10_000;
    let mut c = with_cfg(m, server(V2));
    let mut ids = pids_from(11);
    let fx = c.abort_timed_out(NOW, &mut ids);
    let (token, t) = the_write(&fx);
    assert_eq!(
        (t.state, t.producer_id, t.producer_epoch, t.next_producer_id),
        (PrepareAbort, PID, i16::MAX, 11)
    );
    assert_eq!(ids.1, 1, "one producer id generated");
    let fx = c.write_done(token, Ok(()), NOW);
    assert!(answers(&fx).is_empty(), "a timeout answers nobody");
    assert!(has_markers(&fx));
    let m = c.metadata(ID).unwrap();
    assert_eq!(
        (m.state, m.producer_id, m.producer_epoch),
        (PrepareAbort, PID, i16::MAX)
    );
}

#[test]
fn should_handle_timeout_at_epoch_overflow_boundary_correctly_and_late_client_abort_request_tv2() {
    let mut m = meta(PID, -1, i16::MAX - 1, -1, Ongoing, partitions(), V2);
    m.start_ms = NOW - 10_000;
    let mut c = with_cfg(m, server(V2));
    let fx = c.abort_timed_out(NOW, &mut pids_from(11));
    let (token, _) = the_write(&fx);
    c.write_done(token, Ok(()), NOW);
    finish(&mut c);
    let m = c.metadata(ID).unwrap();
    assert_eq!(
        (m.state, m.producer_id, m.producer_epoch),
        (CompleteAbort, 11, 0)
    );
    // The client's own abort, late: a retry on overflow.
    let fx = end(&mut c, PID, i16::MAX - 1, Abort, V2);
    assert_eq!(
        the_answer(&fx),
        TxnAnswer::EndTxn {
            error: code::NONE,
            producer_id: 11,
            producer_epoch: 0
        }
    );
}

#[test]
fn should_rotate_producer_id_when_init_pid_fences_ongoing_txn_at_epoch_overflow_boundary_tv2() {
    let mut c = with_cfg(
        meta(PID, -1, i16::MAX - 1, -1, Ongoing, partitions(), V2),
        server(V2),
    );
    let mut ids = pids_from(11);
    let fx = init(&mut c, TIMEOUT, None, &mut ids);
    let (token, t) = the_write(&fx);
    assert_eq!(
        (t.state, t.producer_id, t.producer_epoch, t.next_producer_id),
        (PrepareAbort, PID, i16::MAX, 11)
    );
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(
        the_answer(&fx),
        init_answer(-1, -1, code::CONCURRENT_TRANSACTIONS)
    );
    finish(&mut c);
    let m = c.metadata(ID).unwrap();
    assert_eq!(
        (m.state, m.producer_id, m.producer_epoch),
        (CompleteAbort, 11, 0)
    );
    let fx = end(&mut c, PID, i16::MAX - 1, Abort, V2);
    assert_eq!(
        the_answer(&fx),
        TxnAnswer::EndTxn {
            error: code::NONE,
            producer_id: 11,
            producer_epoch: 0
        }
    );
    assert_eq!(ids.1, 1);
}

#[test]
fn should_handle_timeout_at_epoch_overflow_boundary_correctly_and_retry_init_producer_id_tv2() {
    let mut m = meta(PID, -1, i16::MAX - 1, -1, Ongoing, partitions(), V2);
    m.start_ms = NOW - 10_000;
    let mut c = with_cfg(m, server(V2));
    let fx = c.abort_timed_out(NOW, &mut pids_from(11));
    let (token, _) = the_write(&fx);
    c.write_done(token, Ok(()), NOW);
    finish(&mut c);
    let fx = init(
        &mut c,
        TIMEOUT,
        Some((PID, i16::MAX - 1)),
        &mut pids_from(50),
    );
    let (token, t) = the_write(&fx);
    assert_eq!(
        (t.producer_id, t.producer_epoch),
        (11, 0),
        "no bump: a retry"
    );
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx), init_answer(11, 0, code::NONE));
}

#[test]
fn test_init_producer_id_with_no_last_producer_data() {
    let mut c = with(meta(PID, -1, 2, -1, Empty, BTreeSet::new(), V0));
    let fx = init(&mut c, TIMEOUT, Some((PID, 1)), &mut pids_from(0));
    assert_eq!(the_answer(&fx), init_answer(-1, -1, code::PRODUCER_FENCED));
}

#[test]
fn test_fence_producer_when_mapping_exists_with_different_producer_id() {
    let mut c = with(meta(11, PID, EPOCH, -1, Empty, BTreeSet::new(), V0));
    let fx = init(&mut c, TIMEOUT, Some((PID, EPOCH)), &mut pids_from(0));
    assert_eq!(the_answer(&fx), init_answer(-1, -1, code::PRODUCER_FENCED));
}

#[test]
fn test_init_producer_id_with_current_epoch_provided() {
    let mut c = with(meta(PID, -1, 10, 9, Empty, BTreeSet::new(), V0));
    for _ in 0..2 {
        let fx = init(&mut c, TIMEOUT, Some((PID, 10)), &mut pids_from(0));
        let (token, t) = the_write(&fx);
        assert_eq!((t.producer_id, t.producer_epoch), (PID, 11));
        // The write fails: a retry with the same expected epoch asks again.
        c.write_done(token, Err(code::COORDINATOR_NOT_AVAILABLE), NOW);
    }
}

#[test]
fn test_init_producer_id_stale_current_epoch_provided() {
    let mut c = with(meta(PID, -1, 10, 9, Empty, BTreeSet::new(), V0));
    let fx = init(&mut c, TIMEOUT, None, &mut pids_from(0));
    let (token, _) = the_write(&fx);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx), init_answer(PID, 11, code::NONE));
    assert_eq!(c.metadata(ID).unwrap().last_producer_epoch, -1);
    let fx = init(&mut c, TIMEOUT, Some((PID, 10)), &mut pids_from(0));
    assert_eq!(the_answer(&fx), init_answer(-1, -1, code::PRODUCER_FENCED));
}

#[test]
fn test_retry_init_producer_id_after_producer_id_rotation() {
    let mut c = with(meta(
        PID,
        -1,
        i16::MAX - 1,
        i16::MAX - 2,
        Empty,
        BTreeSet::new(),
        V0,
    ));
    let fx = init(
        &mut c,
        TIMEOUT,
        Some((PID, i16::MAX - 1)),
        &mut pids_from(11),
    );
    let (token, _) = the_write(&fx);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx), init_answer(11, 0, code::NONE));
    // The answer was lost; the client asks again with what it had.
    let fx = init(
        &mut c,
        TIMEOUT,
        Some((PID, i16::MAX - 1)),
        &mut pids_from(12),
    );
    let (token, _) = the_write(&fx);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx), init_answer(11, 0, code::NONE));
}

#[test]
fn test_init_producer_id_with_invalid_epoch_after_producer_id_rotation() {
    let mut c = with(meta(
        PID,
        -1,
        i16::MAX - 1,
        i16::MAX - 2,
        Empty,
        BTreeSet::new(),
        V0,
    ));
    let fx = init(
        &mut c,
        TIMEOUT,
        Some((PID, i16::MAX - 1)),
        &mut pids_from(11),
    );
    let (token, _) = the_write(&fx);
    c.write_done(token, Ok(()), NOW);
    let fx = init(
        &mut c,
        TIMEOUT,
        Some((PID, i16::MAX - 2)),
        &mut pids_from(12),
    );
    assert_eq!(the_answer(&fx), init_answer(-1, -1, code::PRODUCER_FENCED));
}

#[test]
fn should_not_bump_epoch_with_pending_transaction() {
    let mut m = meta(PID, -1, 10, -1, Ongoing, partitions(), V0);
    m.pending = Some(PrepareCommit);
    let mut c = with(m);
    let fx = init(&mut c, TIMEOUT, Some((PID, 10)), &mut pids_from(0));
    assert_eq!(
        the_answer(&fx),
        init_answer(-1, -1, code::CONCURRENT_TRANSACTIONS)
    );
}

#[test]
fn a_timeout_above_the_maximum_is_refused() {
    let mut c = TxnCoordinator::default();
    for timeout in [0, -1, 900_001] {
        let fx = init(&mut c, timeout, None, &mut pids_from(0));
        assert_eq!(
            the_answer(&fx),
            init_answer(-1, -1, code::INVALID_TRANSACTION_TIMEOUT)
        );
    }
}

#[test]
fn test_tv2_allows_epoch_re_bumping_after_failed_write() {
    let mut c = with_cfg(
        meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V2),
        server(V2),
    );
    let fx = init(&mut c, TIMEOUT, None, &mut pids_from(0));
    let (token, _) = the_write(&fx);
    let fx = c.write_done(token, Err(code::COORDINATOR_NOT_AVAILABLE), NOW);
    assert_eq!(
        the_answer(&fx),
        init_answer(-1, -1, code::COORDINATOR_NOT_AVAILABLE)
    );
    assert!(!c.metadata(ID).unwrap().failed_epoch_fence);
    let fx = init(&mut c, TIMEOUT, None, &mut pids_from(0));
    let (token, _) = the_write(&fx);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(
        the_answer(&fx),
        init_answer(-1, -1, code::CONCURRENT_TRANSACTIONS)
    );
    finish(&mut c);
    assert!(!c.metadata(ID).unwrap().failed_epoch_fence);
    let fx = init(&mut c, TIMEOUT, None, &mut pids_from(0));
    let (token, _) = the_write(&fx);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx), init_answer(PID, 3, code::NONE));
}

// --- AddPartitionsToTxn ---

#[test]
fn should_respond_with_invalid_pid_mapping_on_add_partitions_to_transaction_when_transactional_id_not_present(
) {
    let mut c = TxnCoordinator::default();
    let fx = add(&mut c, 0, 1, V0);
    assert_eq!(the_answer(&fx).error(), code::INVALID_PRODUCER_ID_MAPPING);
}

#[test]
fn should_respond_with_invalid_request_add_partitions_to_transaction_when_transactional_id_is_empty(
) {
    let mut c = TxnCoordinator::default();
    let fx = c.add_partitions(1, "", 0, 1, &partitions(), V0, NOW);
    assert_eq!(the_answer(&fx).error(), code::INVALID_REQUEST);
}

#[test]
fn test_verify_partition_handling() {
    let verify = |m: TxnMetadata, pid: i64, epoch: i16| {
        let c = with(m);
        c.verify_partitions(ID, pid, epoch, &partitions())
            .into_iter()
            .map(|(_, e)| e)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        verify(meta(1, -1, 0, -1, Empty, BTreeSet::new(), V0), 0, 0),
        [code::INVALID_PRODUCER_ID_MAPPING]
    );
    assert_eq!(
        verify(meta(0, -1, 0, -1, Empty, BTreeSet::new(), V0), 0, 1),
        [code::PRODUCER_FENCED]
    );
    assert_eq!(
        verify(meta(0, -1, 0, -1, PrepareCommit, BTreeSet::new(), V0), 0, 0),
        [code::CONCURRENT_TRANSACTIONS]
    );
    let mut pending = meta(0, -1, 0, -1, Ongoing, BTreeSet::new(), V0);
    pending.pending = Some(CompleteCommit);
    assert_eq!(verify(pending, 0, 0), [code::TRANSACTION_ABORTABLE]);
}

#[test]
fn should_respond_with_concurrent_transactions_on_add_partitions_when_state_is_prepare_commit() {
    let mut c = with(meta(PID, -1, EPOCH, -1, PrepareCommit, partitions(), V0));
    assert_eq!(
        the_answer(&add(&mut c, PID, EPOCH, V0)).error(),
        code::CONCURRENT_TRANSACTIONS
    );
}

#[test]
fn should_respond_with_concurrent_transaction_on_add_partitions_when_state_is_prepare_abort() {
    let mut c = with(meta(PID, -1, EPOCH, -1, PrepareAbort, partitions(), V0));
    assert_eq!(
        the_answer(&add(&mut c, PID, EPOCH, V0)).error(),
        code::CONCURRENT_TRANSACTIONS
    );
}

#[test]
fn should_respond_with_producer_fenced_on_add_partitions_when_epochs_are_different() {
    let mut c = with(meta(0, -1, 10, -1, PrepareCommit, partitions(), V0));
    assert_eq!(
        the_answer(&add(&mut c, 0, 0, V0)).error(),
        code::PRODUCER_FENCED
    );
}

#[test]
fn should_append_new_metadata_to_log_on_add_partitions_when_partitions_added() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Empty, BTreeSet::new(), V0));
    let fx = add(&mut c, PID, EPOCH, V0);
    let (token, t) = the_write(&fx);
    assert_eq!(
        (t.state, t.partitions.clone(), t.start_ms),
        (Ongoing, partitions(), NOW)
    );
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx).error(), code::NONE);
    assert_eq!(c.metadata(ID).unwrap().state, Ongoing);
}

#[test]
fn should_respond_with_success_on_add_partitions_when_state_is_ongoing() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, BTreeSet::new(), V0));
    the_write(&add(&mut c, PID, EPOCH, V0));
}

fn add_from_complete(state: TxnState) {
    for v in [V0, V2] {
        let mut c = with(meta(PID, -1, EPOCH, -1, state, BTreeSet::new(), v));
        let fx = add(&mut c, PID, EPOCH, v);
        let (token, t) = the_write(&fx);
        assert_eq!(t.client_version, v);
        assert_eq!(
            the_answer(&c.write_done(token, Ok(()), NOW)).error(),
            code::NONE
        );
    }
}

#[test]
fn should_respond_with_success_on_add_partitions_when_state_is_complete_commit() {
    add_from_complete(CompleteCommit);
}

#[test]
fn should_respond_with_success_on_add_partitions_when_state_is_complete_abort() {
    add_from_complete(CompleteAbort);
}

#[test]
fn should_respond_with_errors_none_on_add_partition_when_no_errors_and_partitions_the_same() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V0));
    let fx = add(&mut c, PID, EPOCH, V0);
    assert!(writes(&fx).is_empty(), "nothing new to write");
    assert_eq!(the_answer(&fx).error(), code::NONE);
}

#[test]
fn should_respond_with_errors_none_on_add_partition_when_ongoing_verify_only_and_partitions_the_same(
) {
    let c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V0));
    let verified = c.verify_partitions(ID, PID, EPOCH, &partitions());
    assert!(verified.iter().all(|(_, e)| *e == code::NONE));
}

#[test]
fn should_respond_with_invalid_txn_state_when_verify_only_and_partition_not_present() {
    let c = with(meta(PID, -1, EPOCH, -1, Empty, partitions(), V0));
    let asked: BTreeSet<_> = [
        TopicPartition::new("topic1", 0),
        TopicPartition::new("topic2", 0),
    ]
    .into();
    let verified = c.verify_partitions(ID, PID, EPOCH, &asked);
    assert_eq!(
        verified,
        [
            (TopicPartition::new("topic1", 0), code::NONE),
            (
                TopicPartition::new("topic2", 0),
                code::TRANSACTION_ABORTABLE
            )
        ]
    );
}

#[test]
fn should_return_concurrent_txn_on_add_partitions_if_end_txn_v2_epoch_overflow_and_not_complete() {
    let mut m = meta(PID, -1, i16::MAX - 1, -1, Ongoing, partitions(), V2);
    m.start_ms = NOW;
    let mut c = with(m);
    let fx = c.end_txn(
        1,
        ID,
        PID,
        i16::MAX - 1,
        Commit,
        V2,
        NOW,
        &mut pids_from(11),
    );
    let (token, _) = the_write(&fx);
    c.write_done(token, Ok(()), NOW);
    // The completion (to producer id 11) is pending while markers go out.
    assert_eq!(
        the_answer(&add(&mut c, 11, 0, V2)).error(),
        code::CONCURRENT_TRANSACTIONS
    );
    finish(&mut c);
    let fx = add(&mut c, 11, 0, V2);
    let (token, _) = the_write(&fx);
    assert_eq!(
        the_answer(&c.write_done(token, Ok(()), NOW)).error(),
        code::NONE
    );
}

// --- EndTxn ---

#[test]
fn should_reply_with_invalid_pid_mapping_on_end_txn_when_txn_id_doesnt_exist() {
    for v in [V0, V2] {
        let mut c = TxnCoordinator::default();
        assert_eq!(
            end_error(&end(&mut c, 0, 0, Commit, v)),
            code::INVALID_PRODUCER_ID_MAPPING
        );
    }
}

#[test]
fn should_reply_with_invalid_pid_mapping_on_end_txn_when_pid_doesnt_match_mapped() {
    for v in [V0, V2] {
        let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), v));
        assert_eq!(
            end_error(&end(&mut c, 0, EPOCH, Commit, v)),
            code::INVALID_PRODUCER_ID_MAPPING
        );
    }
}

#[test]
fn should_reply_with_producer_fenced_on_end_txn_when_epoch_is_not_same_as_transaction() {
    for v in [V0, V2] {
        let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), v));
        assert_eq!(
            end_error(&end(&mut c, PID, 0, Commit, v)),
            code::PRODUCER_FENCED
        );
    }
}

/// An EndTxn against a resting state: the error, and whether it wrote.
fn end_on(
    state: TxnState,
    v: TxnVersion,
    result: TxnResult,
    retry: bool,
) -> (i16, Option<TxnTransit>) {
    let mut c = with(meta(PID, -1, EPOCH, EPOCH - 1, state, BTreeSet::new(), v));
    let epoch = if retry { EPOCH - 1 } else { EPOCH };
    let fx = end(&mut c, PID, epoch, result, v);
    match writes(&fx).pop() {
        Some((_, t)) => (code::NONE, Some(t)),
        None => (end_error(&fx), None),
    }
}

#[test]
fn test_end_txn_when_status_is_complete_commit_and_result_is_commit_in_v1() {
    assert_eq!(
        end_on(CompleteCommit, V0, Commit, true),
        (code::PRODUCER_FENCED, None)
    );
    assert_eq!(
        end_on(CompleteCommit, V0, Commit, false),
        (code::NONE, None)
    );
}

#[test]
fn test_end_txn_when_status_is_complete_commit_and_result_is_commit_in_v2() {
    assert_eq!(end_on(CompleteCommit, V2, Commit, true), (code::NONE, None));
    assert_eq!(
        end_on(CompleteCommit, V2, Commit, false),
        (code::INVALID_TXN_STATE, None)
    );
}

#[test]
fn test_end_txn_when_status_is_complete_abort_and_result_is_abort_in_v1() {
    assert_eq!(
        end_on(CompleteAbort, V0, Abort, true),
        (code::PRODUCER_FENCED, None)
    );
    assert_eq!(end_on(CompleteAbort, V0, Abort, false), (code::NONE, None));
}

fn assert_empty_abort(written: (i16, Option<TxnTransit>)) {
    let (error, t) = written;
    assert_eq!(error, code::NONE);
    let t = t.expect("an empty abort is written");
    assert_eq!(
        (t.state, t.producer_epoch, t.start_ms),
        (PrepareAbort, EPOCH + 1, NOW)
    );
}

#[test]
fn should_return_ok_on_end_txn_when_status_is_complete_abort_and_result_is_abort_in_v2() {
    assert_eq!(end_on(CompleteAbort, V2, Abort, true), (code::NONE, None));
    assert_empty_abort(end_on(CompleteAbort, V2, Abort, false));
}

#[test]
fn should_return_invalid_txn_request_on_end_txn_request_when_status_is_complete_abort_and_result_is_not_abort(
) {
    for v in [V0, V2] {
        let retry = v.supports_epoch_bump();
        assert_eq!(
            end_on(CompleteAbort, v, Commit, retry),
            (code::INVALID_TXN_STATE, None)
        );
    }
}

#[test]
fn should_return_invalid_txn_request_on_end_txn_request_when_status_is_complete_commit_and_result_is_not_commit(
) {
    assert_eq!(
        end_on(CompleteCommit, V0, Abort, false),
        (code::INVALID_TXN_STATE, None)
    );
}

#[test]
fn test_end_txn_request_when_status_is_complete_commit_and_result_is_abort_in_v1() {
    assert_eq!(
        end_on(CompleteCommit, V0, Abort, true),
        (code::PRODUCER_FENCED, None)
    );
    assert_eq!(
        end_on(CompleteCommit, V0, Abort, false),
        (code::INVALID_TXN_STATE, None)
    );
}

#[test]
fn test_end_txn_request_when_status_is_complete_commit_and_result_is_abort_in_v2() {
    assert_eq!(
        end_on(CompleteCommit, V2, Abort, true),
        (code::INVALID_TXN_STATE, None)
    );
    assert_empty_abort(end_on(CompleteCommit, V2, Abort, false));
}

#[test]
fn should_return_concurrent_transactions_on_end_txn_request_when_status_is_prepare_commit() {
    for v in [V0, V2] {
        let mut c = with(meta(PID, -1, EPOCH, -1, PrepareCommit, partitions(), v));
        let fx = end(&mut c, PID, request_epoch(v), Commit, v);
        assert_eq!(end_error(&fx), code::CONCURRENT_TRANSACTIONS);
    }
}

#[test]
fn should_return_invalid_txn_request_on_end_txn_request_when_status_is_prepare_abort() {
    for v in [V0, V2] {
        let mut c = with(meta(PID, -1, EPOCH, -1, PrepareAbort, partitions(), v));
        let fx = end(&mut c, PID, request_epoch(v), Commit, v);
        assert_eq!(end_error(&fx), code::INVALID_TXN_STATE);
    }
}

#[test]
fn test_end_txn_request_when_empty_transaction_state_for_abort_in_v1() {
    assert_eq!(
        end_on(Empty, V0, Abort, false),
        (code::INVALID_TXN_STATE, None)
    );
}

#[test]
fn test_end_txn_request_when_empty_transaction_state_for_abort_in_v2() {
    assert_eq!(
        end_on(Empty, V2, Abort, true),
        (code::PRODUCER_FENCED, None)
    );
    assert_empty_abort(end_on(Empty, V2, Abort, false));
}

#[test]
fn test_end_txn_request_when_empty_transaction_state_for_commit_in_v2() {
    assert_eq!(
        end_on(Empty, V2, Commit, true),
        (code::PRODUCER_FENCED, None)
    );
    assert_eq!(
        end_on(Empty, V2, Commit, false),
        (code::INVALID_TXN_STATE, None)
    );
}

#[test]
fn should_return_invalid_txn_request_on_end_txn_v2_if_not_end_txn_v2_retry() {
    let mut c = with(meta(PID, -1, EPOCH, -1, PrepareCommit, partitions(), V2));
    assert_eq!(
        end_error(&end(&mut c, PID, EPOCH, Commit, V2)),
        code::PRODUCER_FENCED
    );
    let mut c = with(meta(
        PID,
        -1,
        EPOCH,
        -1,
        CompleteCommit,
        BTreeSet::new(),
        V2,
    ));
    assert_eq!(
        end_error(&end(&mut c, PID, EPOCH, Commit, V2)),
        code::INVALID_TXN_STATE
    );
}

#[test]
fn should_return_ok_on_end_txn_v2_if_end_txn_v2_retry_epoch_overflow() {
    let mut m = meta(
        PID,
        -1,
        i16::MAX,
        i16::MAX - 1,
        PrepareCommit,
        partitions(),
        V2,
    );
    m.next_producer_id = 11;
    let mut c = with(m);
    assert_eq!(
        end_error(&end(&mut c, PID, i16::MAX - 1, Commit, V2)),
        code::CONCURRENT_TRANSACTIONS
    );
    let mut c = with(meta(
        11,
        PID,
        0,
        i16::MAX - 1,
        CompleteCommit,
        BTreeSet::new(),
        V2,
    ));
    assert_eq!(
        the_answer(&end(&mut c, PID, i16::MAX - 1, Commit, V2)),
        TxnAnswer::EndTxn {
            error: code::NONE,
            producer_id: 11,
            producer_epoch: 0
        }
    );
}

fn end_ongoing_writes_prepare(result: TxnResult, state: TxnState) {
    for v in [V0, V2] {
        let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V0));
        let fx = end(&mut c, PID, EPOCH, result, v);
        let (token, t) = the_write(&fx);
        assert_eq!(t.state, state);
        let expected_epoch = if v.supports_epoch_bump() {
            EPOCH + 1
        } else {
            EPOCH
        };
        assert_eq!(t.producer_epoch, expected_epoch);
        let fx = c.write_done(token, Ok(()), NOW);
        let (pid, epoch) = if v.supports_epoch_bump() {
            (PID, EPOCH + 1)
        } else {
            (-1, -1)
        };
        assert_eq!(
            the_answer(&fx),
            TxnAnswer::EndTxn {
                error: code::NONE,
                producer_id: pid,
                producer_epoch: epoch
            }
        );
        assert!(has_markers(&fx));
    }
}

#[test]
fn should_append_prepare_commit_to_log_on_end_txn_when_status_is_ongoing_and_result_is_commit() {
    end_ongoing_writes_prepare(Commit, PrepareCommit);
}

#[test]
fn should_append_prepare_abort_to_log_on_end_txn_when_status_is_ongoing_and_result_is_abort() {
    end_ongoing_writes_prepare(Abort, PrepareAbort);
}

#[test]
fn should_respond_with_invalid_request_on_end_txn_when_transactional_id_is_empty() {
    for v in [V0, V2] {
        let mut c = TxnCoordinator::default();
        let fx = c.end_txn(1, "", PID, EPOCH, Commit, v, NOW, &mut pids_from(0));
        assert_eq!(end_error(&fx), code::INVALID_REQUEST);
    }
}

#[test]
fn should_return_invalid_epoch_on_end_txn_when_epoch_is_larger() {
    for v in [V0, V2] {
        let mut c = with(meta(
            PID,
            -1,
            EPOCH,
            EPOCH,
            CompleteCommit,
            BTreeSet::new(),
            v,
        ));
        assert_eq!(
            end_error(&end(&mut c, PID, EPOCH + 1, Commit, v)),
            code::PRODUCER_FENCED
        );
    }
}

#[test]
fn should_return_invalid_epoch_on_end_txn_when_epoch_is_smaller() {
    for v in [V0, V2] {
        let mut c = with(meta(PID, -1, 2, 1, CompleteCommit, BTreeSet::new(), v));
        let epoch = if v.supports_epoch_bump() { 0 } else { 1 };
        assert_eq!(
            end_error(&end(&mut c, PID, epoch, Commit, v)),
            code::PRODUCER_FENCED
        );
    }
}

// --- The whole path: prepare, markers, completion ---

#[test]
fn a_commit_is_answered_once_prepared_and_completes_after_its_markers() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V0));
    let fx = end(&mut c, PID, EPOCH, Commit, V0);
    let (token, _) = the_write(&fx);
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(end_error(&fx), code::NONE);
    let markers = fx
        .iter()
        .find_map(|e| match e {
            TxnEffect::WriteMarkers {
                producer_id,
                producer_epoch,
                result,
                partitions,
                ..
            } => Some((*producer_id, *producer_epoch, *result, partitions.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(markers, (PID, EPOCH, Commit, partitions()));
    // While markers are written, the id is busy.
    assert_eq!(
        the_answer(&add(&mut c, PID, EPOCH, V0)).error(),
        code::CONCURRENT_TRANSACTIONS
    );
    let fx = c.markers_written(ID);
    let (token, t) = the_write(&fx);
    assert_eq!((t.state, t.partitions.len()), (CompleteCommit, 0));
    // A failed completion write stays pending and is written again.
    c.write_done(token, Err(code::COORDINATOR_NOT_AVAILABLE), NOW);
    assert_eq!(c.metadata(ID).unwrap().pending, Some(CompleteCommit));
    finish(&mut c);
    let m = c.metadata(ID).unwrap();
    assert_eq!((m.state, m.pending), (CompleteCommit, None));
}

#[test]
fn a_write_that_outlives_an_unload_answers_not_coordinator() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Empty, BTreeSet::new(), V0));
    let fx = add(&mut c, PID, EPOCH, V0);
    let (token, t) = the_write(&fx);
    c.unload(ID);
    c.load(
        ID,
        Some(&meta(PID, -1, EPOCH, -1, Empty, BTreeSet::new(), V0).current()),
        NOW,
    );
    let fx = c.write_done(token, Ok(()), NOW);
    assert_eq!(the_answer(&fx).error(), code::NOT_COORDINATOR);
    assert_ne!(
        c.metadata(ID).unwrap().state,
        t.state,
        "not applied to the new load"
    );
}

// --- Timeouts ---

#[test]
fn should_abort_expired_transactions_in_ongoing_state_and_bump_epoch() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V0));
    let later = NOW + 10_000;
    let fx = c.abort_timed_out(later, &mut pids_from(0));
    let (token, t) = the_write(&fx);
    assert_eq!(
        t,
        TxnTransit {
            producer_id: PID,
            prev_producer_id: PID,
            next_producer_id: -1,
            producer_epoch: 2,
            last_producer_epoch: -1,
            timeout_ms: TIMEOUT,
            state: PrepareAbort,
            partitions: partitions(),
            start_ms: NOW,
            last_update_ms: later,
            client_version: V0,
        }
    );
    let fx = c.write_done(token, Ok(()), later);
    assert!(answers(&fx).is_empty());
    assert!(has_markers(&fx));
}

#[test]
fn should_not_abort_expired_transactions_that_have_a_pending_state_transition() {
    let mut m = meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V0);
    m.pending = Some(PrepareCommit);
    let mut c = with(m);
    assert!(c
        .abort_timed_out(NOW + 10_000, &mut pids_from(0))
        .is_empty());
}

#[test]
fn should_not_bump_epoch_when_aborting_expired_transaction_if_append_to_log_fails() {
    let mut c = with(meta(PID, -1, EPOCH, -1, Ongoing, partitions(), V0));
    let later = NOW + 10_000;
    let fx = c.abort_timed_out(later, &mut pids_from(0));
    let (token, t) = the_write(&fx);
    assert_eq!(
        (t.producer_epoch, t.state, t.last_update_ms),
        (2, PrepareAbort, later)
    );
    c.write_done(token, Err(code::NOT_COORDINATOR), later);
    let m = c.metadata(ID).unwrap();
    assert_eq!(m.producer_epoch, 2);
    assert!(m.failed_epoch_fence);
    // The next attempt does not bump again.
    let fx = c.abort_timed_out(later, &mut pids_from(0));
    assert_eq!(the_write(&fx).1.producer_epoch, 2);
}

#[test]
fn should_only_consider_transactions_in_the_ongoing_state_to_abort() {
    let mut c = TxnCoordinator::default();
    let mut add_meta = |id: &str, state, timeout| {
        let mut m = meta(PID, -1, 0, -1, state, partitions(), V0);
        m.transactional_id = id.into();
        m.timeout_ms = timeout;
        c.put(m);
    };
    add_meta("ongoing", Ongoing, 1_000);
    add_meta("not-expiring", Ongoing, 10_000);
    add_meta("prepare-commit", PrepareCommit, 1_000);
    add_meta("prepare-abort", PrepareAbort, 1_000);
    add_meta("complete-commit", CompleteCommit, 1_000);
    add_meta("complete-abort", CompleteAbort, 1_000);
    let fx = c.abort_timed_out(NOW + 2_000, &mut pids_from(0));
    let ids: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            TxnEffect::Write {
                transactional_id, ..
            } => Some(transactional_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["ongoing"]);
}

// --- Loading (TransactionStateManagerTest) ---

#[test]
fn should_write_txn_markers_for_transaction_in_prepared_commit_state() {
    let mut c = TxnCoordinator::default();
    let stored = meta(PID, -1, EPOCH, -1, PrepareCommit, partitions(), V0).current();
    let fx = c.load(ID, Some(&stored), NOW);
    assert!(has_markers(&fx));
    let (_, t) = the_write(&finish_effects(&mut c));
    assert_eq!(t.state, CompleteCommit);
}

fn finish_effects(c: &mut TxnCoordinator) -> Vec<TxnEffect> {
    c.markers_written(ID)
}

#[test]
fn should_write_txn_markers_for_transaction_in_prepared_abort_state() {
    let mut c = TxnCoordinator::default();
    let stored = meta(PID, -1, EPOCH, -1, PrepareAbort, partitions(), V0).current();
    let fx = c.load(ID, Some(&stored), NOW);
    assert!(has_markers(&fx));
    let (_, t) = the_write(&finish_effects(&mut c));
    assert_eq!(t.state, CompleteAbort);
}

// --- Expiry (TransactionStateManagerTest) ---

fn expiry(state: TxnState) -> (TxnCoordinator, Vec<TxnEffect>) {
    let cfg = TxnCoordinatorConfig::default();
    let expiry = cfg.id_expiration_ms;
    let mut c = TxnCoordinator::new(cfg);
    let mut one = meta(1, -1, 0, -1, state, BTreeSet::new(), V0);
    one.transactional_id = "one".into();
    one.last_update_ms = NOW - expiry;
    c.put(one);
    let mut two = meta(2, -1, 0, -1, state, BTreeSet::new(), V0);
    two.transactional_id = "two".into();
    c.put(two);
    let fx = c.expire_ids(NOW);
    (c, fx)
}

fn removals(fx: &[TxnEffect]) -> Vec<(u64, String)> {
    fx.iter()
        .filter_map(|e| match e {
            TxnEffect::Write {
                token,
                transactional_id,
                transit: None,
            } => Some((*token, transactional_id.clone())),
            _ => None,
        })
        .collect()
}

fn assert_expires(state: TxnState) {
    let (mut c, fx) = expiry(state);
    let removed = removals(&fx);
    assert_eq!(
        removed.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(),
        ["one"]
    );
    c.write_done(removed[0].0, Ok(()), NOW);
    assert!(c.metadata("one").is_none());
    assert_eq!(c.metadata("two").unwrap().pending, None);
}

#[test]
fn should_remove_complete_commit_expired_transactional_ids() {
    assert_expires(CompleteCommit);
}

#[test]
fn should_remove_complete_abort_expired_transactional_ids() {
    assert_expires(CompleteAbort);
}

#[test]
fn should_remove_empty_expired_transactional_ids() {
    assert_expires(Empty);
}

#[test]
fn should_not_remove_expired_transactional_ids_if_log_append_fails() {
    let (mut c, fx) = expiry(CompleteAbort);
    let removed = removals(&fx);
    c.write_done(removed[0].0, Err(code::COORDINATOR_NOT_AVAILABLE), NOW);
    let one = c.metadata("one").unwrap();
    assert_eq!(one.pending, None);
    assert_eq!(removals(&c.expire_ids(NOW)).len(), 1, "still expirable");
}

fn assert_not_expired(state: TxnState) {
    let (c, fx) = expiry(state);
    assert!(removals(&fx).is_empty());
    assert!(c.metadata("one").is_some() && c.metadata("two").is_some());
}

#[test]
fn should_not_remove_ongoing_transactional_ids() {
    assert_not_expired(Ongoing);
}

#[test]
fn should_not_remove_prepare_abort_transactional_ids() {
    assert_not_expired(PrepareAbort);
}

#[test]
fn should_not_remove_prepare_commit_transactional_ids() {
    assert_not_expired(PrepareCommit);
}

#[test]
fn test_transaction_expiration_should_not_fail_with_uninitialized_transaction_metadata() {
    let cfg = TxnCoordinatorConfig::default();
    let expiry = cfg.id_expiration_ms;
    let mut c = TxnCoordinator::new(cfg);
    let mut m = TxnMetadata::new("one", 1, TIMEOUT, NOW - expiry - 1);
    m.prev_producer_id = -1;
    c.put(m);
    let removed = removals(&c.expire_ids(NOW));
    assert_eq!(removed.len(), 1);
    c.write_done(removed[0].0, Ok(()), NOW);
    assert!(c.metadata("one").is_none());
}

#[test]
fn test_validate_transaction_timeout() {
    let c = TxnCoordinator::default();
    let max = c.config().max_timeout_ms;
    assert!(c.valid_timeout(1));
    assert!(!c.valid_timeout(-1));
    assert!(!c.valid_timeout(0));
    assert!(c.valid_timeout(max));
    assert!(!c.valid_timeout(max + 1));
}
