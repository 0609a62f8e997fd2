use super::*;

fn batch(epoch: i16, first: i32, last: i32) -> BatchIdentity {
    BatchIdentity {
        producer_id: 7,
        epoch,
        first_sequence: first,
        last_sequence: last,
        transactional: false,
        max_timestamp: 0,
    }
}

// Apache's ProducerStateManagerTest, the transaction cases (names kept;
// producer id 1, epoch 0, as its fixture).

const PID: i64 = 1;

fn data(epoch: i16, seq: i32, transactional: bool) -> BatchIdentity {
    BatchIdentity {
        producer_id: PID,
        epoch,
        first_sequence: seq,
        last_sequence: seq,
        transactional,
        max_timestamp: 0,
    }
}

/// Apache's `appendClientEntry`: checked, then recorded at `offset`.
fn append(s: &mut ProducerStates, b: BatchIdentity, offset: i64) -> Result<(), i16> {
    match s.check(&b) {
        Verdict::Append => {
            s.record(&b, offset);
            Ok(())
        }
        Verdict::Refuse(code) => Err(code),
        Verdict::Duplicate { .. } => Err(OUT_OF_ORDER),
    }
}

fn marker(
    s: &mut ProducerStates,
    epoch: i16,
    commit: bool,
    offset: i64,
    coordinator_epoch: i32,
) -> Result<Option<CompletedTxn>, i16> {
    s.check_marker(PID, epoch, coordinator_epoch)?;
    Ok(s.record_marker(PID, epoch, coordinator_epoch, offset, commit, 0))
}

const INVALID_PRODUCER_EPOCH: i16 = ResponseError::InvalidProducerEpoch.code();

#[test]
fn test_append_txn_marker_with_no_producer_state() {
    let mut s = ProducerStates::default();
    marker(&mut s, 2, true, 27, 0).unwrap();
    assert_eq!(s.producer(PID), Some((2, None)));
    // Fencing goes on with only the marker left.
    assert_eq!(
        append(&mut s, data(0, 0, false), 4),
        Err(INVALID_PRODUCER_EPOCH)
    );
    assert_eq!(append(&mut s, data(2, 17, false), 4), Err(OUT_OF_ORDER));
    append(&mut s, data(2, 0, false), 4).unwrap();
    assert_eq!(s.producer(PID), Some((2, Some(0))));
}

#[test]
fn test_control_record_bumps_producer_epoch() {
    let mut s = ProducerStates::default();
    append(&mut s, data(0, 0, false), 0).unwrap();
    marker(&mut s, 1, false, 1, 0).unwrap();
    assert_eq!(s.producer(PID), Some((1, None)));
    assert_eq!(s.open_transaction(PID), None);
    append(&mut s, data(1, 0, false), 2).unwrap();
}

#[test]
fn update_producer_transaction_state() {
    let mut s = ProducerStates::default();
    append(&mut s, data(0, 0, false), 9).unwrap();
    let mut txn = data(0, 1, true);
    txn.last_sequence = 5;
    append(&mut s, txn, 16).unwrap();
    assert_eq!(s.open_transaction(PID), Some(16));
    let mut more = data(0, 6, true);
    more.last_sequence = 10;
    append(&mut s, more, 26).unwrap();
    assert_eq!(s.open_transaction(PID), Some(16), "the first offset stays");
    let completed = marker(&mut s, 0, true, 40, 15).unwrap().unwrap();
    assert_eq!(
        completed,
        CompletedTxn {
            producer_id: PID,
            first_offset: 16,
            last_offset: 40,
            aborted: false
        }
    );
    assert_eq!(s.open_transaction(PID), None);
    assert_eq!(s.producer(PID), Some((0, Some(10))), "the batches are kept");
}

#[test]
fn test_out_of_sequence_after_control_record_epoch_bump() {
    let mut s = ProducerStates::default();
    append(&mut s, data(0, 0, true), 0).unwrap();
    append(&mut s, data(0, 1, true), 1).unwrap();
    marker(&mut s, 1, false, 1, 0).unwrap();
    assert_eq!(append(&mut s, data(1, 2, true), 2), Err(OUT_OF_ORDER));
    assert_eq!(append(&mut s, data(2, 2, true), 2), Err(OUT_OF_ORDER));
    append(&mut s, data(1, 0, true), 0).unwrap();
    assert_eq!(s.producer(PID), Some((1, Some(0))));
}

/// Transaction version 2 (UnifiedLogTest's
/// testTransactionIsOngoingAndVerificationGuard): a transaction is
/// ongoing for its producer's epoch only; the next transaction comes at
/// the epoch its marker bumped to, starts at sequence 0, and is new to
/// the partition until its first batch lands.
#[test]
fn test_transaction_is_ongoing_for_its_epoch_only() {
    let mut s = ProducerStates::default();
    assert!(!s.has_ongoing_transaction(PID, 0));
    append(&mut s, data(0, 0, true), 0).unwrap();
    assert!(s.has_ongoing_transaction(PID, 0));
    assert!(!s.has_ongoing_transaction(PID, 1));
    marker(&mut s, 1, true, 1, 0).unwrap();
    assert!(!s.has_ongoing_transaction(PID, 1));
    append(&mut s, data(1, 0, true), 2).unwrap();
    assert!(s.has_ongoing_transaction(PID, 1));
    marker(&mut s, 2, false, 3, 0).unwrap();
    // The transaction at epoch 3 left this partition out: the one at
    // epoch 4 starts here at sequence 0 too.
    assert_eq!(append(&mut s, data(4, 1, true), 4), Err(OUT_OF_ORDER));
    append(&mut s, data(4, 0, true), 4).unwrap();
    assert!(s.has_ongoing_transaction(PID, 4));
}

#[test]
fn test_non_transactional_append_with_ongoing_transaction() {
    let mut s = ProducerStates::default();
    append(&mut s, data(0, 0, true), 0).unwrap();
    assert_eq!(
        append(&mut s, data(0, 1, false), 1),
        Err(ResponseError::InvalidTxnState.code())
    );
}

const EXPIRATION_MS: i64 = 86_400_000;

/// Apache's `testPidExpirationTimeout`: an idempotent producer idle past
/// `producer.id.expiration.ms` is forgotten, so its next batch starts
/// it afresh from whatever sequence it sends.
#[test]
fn test_pid_expiration_timeout() {
    let mut s = ProducerStates::default();
    let at = |b: BatchIdentity, ts: i64| BatchIdentity {
        max_timestamp: ts,
        ..b
    };
    append(&mut s, at(data(5, 37, false), 1_000), 1).unwrap();
    assert_eq!(
        s.remove_expired(1_000 + EXPIRATION_MS - 1, EXPIRATION_MS),
        0
    );
    assert_eq!(
        append(&mut s, at(data(5, 40, false), 1_000), 2),
        Err(OUT_OF_ORDER),
        "a gap while it is remembered"
    );
    assert_eq!(s.remove_expired(1_000 + EXPIRATION_MS, EXPIRATION_MS), 1);
    append(&mut s, at(data(5, 40, false), 90_000_000), 2).unwrap();
    assert_eq!(s.active().len(), 1);
    assert_eq!(s.producer(PID), Some((5, Some(40))));
}

/// Apache's `testProducersWithOngoingTransactionsDontExpire`.
#[test]
fn test_producers_with_ongoing_transactions_dont_expire() {
    let mut s = ProducerStates::default();
    append(&mut s, data(0, 0, true), 99).unwrap();
    assert_eq!(s.first_undecided_offset(), Some(99));
    assert_eq!(s.remove_expired(EXPIRATION_MS + 1, EXPIRATION_MS), 0);
    assert_eq!(s.open_transaction(PID), Some(99));
    assert_eq!(s.first_undecided_offset(), Some(99));
    // Once its transaction ends it expires from the marker's time.
    s.record_marker(PID, 0, 0, 100, true, 5_000);
    assert_eq!(
        s.remove_expired(5_000 + EXPIRATION_MS - 1, EXPIRATION_MS),
        0
    );
    assert_eq!(s.remove_expired(5_000 + EXPIRATION_MS, EXPIRATION_MS), 1);
    assert!(s.producer(PID).is_none());
}

#[test]
fn test_producer_state_after_fencing_abort_marker() {
    let mut s = ProducerStates::default();
    append(&mut s, data(0, 0, true), 0).unwrap();
    marker(&mut s, 1, false, 1, 0).unwrap();
    assert_eq!(s.open_transaction(PID), None);
    assert_eq!(s.producer(PID), Some((1, None)));
}

#[test]
fn test_first_unstable_offset() {
    let mut s = ProducerStates::default();
    assert_eq!(s.first_undecided_offset(), None);
    append(&mut s, data(5, 0, true), 99).unwrap();
    assert_eq!(s.first_undecided_offset(), Some(99));
    let other = BatchIdentity {
        producer_id: 2,
        ..data(5, 0, true)
    };
    append(&mut s, other, 105).unwrap();
    assert_eq!(s.first_undecided_offset(), Some(99));
    let done = marker(&mut s, 5, true, 109, 0).unwrap().unwrap();
    assert_eq!(s.first_undecided_offset(), Some(105));
    assert_eq!(s.last_stable_offset_after(&done), 105);
    s.check_marker(2, 5, 0).unwrap();
    let done = s.record_marker(2, 5, 0, 112, false, 0).unwrap();
    assert_eq!(s.first_undecided_offset(), None);
    assert_eq!(s.last_stable_offset_after(&done), 113);
}

#[test]
fn test_old_epoch_for_control_record() {
    let mut s = ProducerStates::default();
    append(&mut s, data(5, 0, true), 99).unwrap();
    assert_eq!(marker(&mut s, 3, true, 100, 0), Err(INVALID_PRODUCER_EPOCH));
}

#[test]
fn test_coordinator_fencing() {
    let mut s = ProducerStates::default();
    append(&mut s, data(5, 0, true), 99).unwrap();
    marker(&mut s, 5, true, 100, 1).unwrap();
    marker(&mut s, 5, true, 101, 1).unwrap();
    marker(&mut s, 5, true, 102, 2).unwrap();
    assert_eq!(
        marker(&mut s, 5, true, 103, 1),
        Err(ResponseError::TransactionCoordinatorFenced.code())
    );
}

#[test]
fn test_append_empty_control_batch() {
    // A marker for a producer with nothing open ends no transaction and
    // starts none.
    let mut s = ProducerStates::default();
    assert_eq!(marker(&mut s, 0, false, 15, 0).unwrap(), None);
    assert_eq!(s.open_transaction(PID), None);
    assert_eq!(s.first_undecided_offset(), None);
}

#[test]
fn retries_are_duplicates_and_gaps_are_refused() {
    let mut s = ProducerStates::default();
    assert_eq!(s.check(&batch(0, 0, 9)), Verdict::Append);
    s.record(&batch(0, 0, 9), 100);
    assert_eq!(
        s.check(&batch(0, 0, 9)),
        Verdict::Duplicate { base_offset: 100 }
    );
    assert_eq!(s.check(&batch(0, 10, 19)), Verdict::Append);
    s.record(&batch(0, 10, 19), 110);
    assert_eq!(
        s.check(&batch(0, 0, 9)),
        Verdict::Duplicate { base_offset: 100 }
    );
    assert_eq!(
        s.check(&batch(0, 25, 30)),
        Verdict::Refuse(ResponseError::OutOfOrderSequenceNumber.code())
    );
    // A fenced (older) epoch is refused; a new epoch starts at 0.
    s.record(&batch(1, 0, 0), 120);
    assert_eq!(
        s.check(&batch(0, 20, 20)),
        Verdict::Refuse(ResponseError::InvalidProducerEpoch.code())
    );
    assert_eq!(
        s.check(&batch(2, 5, 5)),
        Verdict::Refuse(ResponseError::OutOfOrderSequenceNumber.code())
    );
    assert_eq!(s.check(&batch(2, 0, 3)), Verdict::Append);
}

#[test]
fn only_the_last_five_batches_are_remembered_and_sequences_wrap() {
    let mut s = ProducerStates::default();
    for i in 0..6 {
        s.record(&batch(0, i, i), i64::from(i));
    }
    assert_eq!(
        s.check(&batch(0, 0, 0)),
        Verdict::Refuse(ResponseError::OutOfOrderSequenceNumber.code())
    );
    assert_eq!(
        s.check(&batch(0, 1, 1)),
        Verdict::Duplicate { base_offset: 1 }
    );
    let mut s = ProducerStates::default();
    s.record(&batch(0, i32::MAX - 1, i32::MAX), 0);
    assert_eq!(s.check(&batch(0, 0, 4)), Verdict::Append);
    assert_eq!(
        s.check(&BatchIdentity {
            producer_id: -1,
            ..batch(0, 9, 9)
        }),
        Verdict::Append
    );
}
