//! EndTxn's decision, as Apache's `TransactionCoordinator` makes it: the
//! transaction version 0/1 path (`endTransactionWithTV1`) and the version 2
//! path (KIP-890 part 2: every EndTxn bumps the epoch, a retry is known by
//! the epoch one below).

use super::coordinator::{code, transition_error, ProducerIdSource, TxnResult};
use super::metadata::{TxnMetadata, TxnTransit, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
use super::state::{TxnState, TxnVersion};

/// The decision on an EndTxn.
pub(super) enum End {
    Refuse(i16),
    /// Accepted with nothing to write (a retry of a completed EndTxn).
    Done {
        producer_id: i64,
        producer_epoch: i16,
    },
    Write {
        transit: TxnTransit,
        epoch_fence: bool,
    },
}

/// EndTxn before transaction version 2 (`endTransactionWithTV1`).
pub(super) fn decide_end_v1(
    m: &mut TxnMetadata,
    producer_id: i64,
    producer_epoch: i16,
    result: TxnResult,
    from_client: bool,
    now_ms: i64,
) -> End {
    use TxnResult::*;
    use TxnState::*;
    if m.producer_id != producer_id {
        return End::Refuse(code::INVALID_PRODUCER_ID_MAPPING);
    }
    if (from_client && producer_epoch != m.producer_epoch) || producer_epoch < m.producer_epoch {
        return End::Refuse(code::PRODUCER_FENCED);
    }
    if m.transition_pending() && m.pending != Some(PrepareEpochFence) {
        return End::Refuse(code::CONCURRENT_TRANSACTIONS);
    }
    let done = End::Done {
        producer_id: NO_PRODUCER_ID,
        producer_epoch: NO_PRODUCER_EPOCH,
    };
    match (m.state, result) {
        (Ongoing, _) => {
            let mut epoch_fence = false;
            if result == Abort && m.pending == Some(PrepareEpochFence) {
                // The fence's epoch becomes the metadata's before the abort.
                epoch_fence = true;
                m.pending = None;
                m.producer_epoch = producer_epoch;
                m.last_producer_epoch = NO_PRODUCER_EPOCH;
            }
            prepare_write(
                m,
                result.prepare_state(),
                TxnVersion::V0,
                NO_PRODUCER_ID,
                now_ms,
                false,
                epoch_fence,
            )
        }
        (CompleteCommit, Commit) | (CompleteAbort, Abort) => done,
        (PrepareCommit, Commit) | (PrepareAbort, Abort) => {
            End::Refuse(code::CONCURRENT_TRANSACTIONS)
        }
        (CompleteCommit, Abort)
        | (CompleteAbort, Commit)
        | (PrepareCommit, Abort)
        | (PrepareAbort, Commit)
        | (Empty, _) => End::Refuse(code::INVALID_TXN_STATE),
        (Dead | PrepareEpochFence, _) => End::Refuse(code::UNKNOWN_SERVER_ERROR),
    }
}

/// EndTxn under transaction version 2 (KIP-890 part 2: every EndTxn bumps
/// the epoch, a retry is recognised by the epoch one below).
pub(super) fn decide_end_v2(
    m: &mut TxnMetadata,
    producer_id: i64,
    producer_epoch: i16,
    result: TxnResult,
    from_client: bool,
    now_ms: i64,
    ids: &mut dyn ProducerIdSource,
) -> End {
    use TxnResult::*;
    use TxnState::*;
    let current = (m.producer_id, m.producer_epoch);
    let epoch_fence = m.pending == Some(PrepareEpochFence);
    // Epoch arithmetic in i32, as Apache's Scala does: no wrap at i16::MAX.
    let request_epoch = i32::from(producer_epoch);
    let retry_on_overflow = !epoch_fence
        && m.prev_producer_id == producer_id
        && producer_epoch == i16::MAX - 1
        && m.producer_epoch == 0;
    let retry_on_epoch_bump = !epoch_fence && i32::from(m.producer_epoch) == request_epoch + 1;
    let valid_epoch = if !epoch_fence {
        match m.state {
            Ongoing | Empty | Dead | PrepareEpochFence => producer_epoch == m.producer_epoch,
            PrepareCommit | PrepareAbort => retry_on_epoch_bump,
            CompleteCommit | CompleteAbort => {
                retry_on_epoch_bump || retry_on_overflow || producer_epoch == m.producer_epoch
            }
        }
    } else {
        (!from_client || producer_epoch == m.producer_epoch) && producer_epoch >= m.producer_epoch
    };
    let retry = retry_on_epoch_bump || retry_on_overflow;

    if m.transition_pending() && !epoch_fence {
        return End::Refuse(code::CONCURRENT_TRANSACTIONS);
    }
    if m.producer_id != producer_id && !retry_on_overflow {
        return End::Refuse(code::INVALID_PRODUCER_ID_MAPPING);
    }
    if !valid_epoch {
        return End::Refuse(code::PRODUCER_FENCED);
    }
    let mut prepare = |m: &mut TxnMetadata, state: TxnState, no_partition_added: bool| {
        let next_producer_id = if m.epoch_exhausted() {
            match ids.next_id() {
                Ok(id) => id,
                Err(error) => return End::Refuse(error),
            }
        } else {
            NO_PRODUCER_ID
        };
        if state == PrepareAbort && epoch_fence {
            m.pending = None;
        }
        prepare_write(
            m,
            state,
            TxnVersion::V2,
            next_producer_id,
            now_ms,
            no_partition_added,
            epoch_fence,
        )
    };
    let done = End::Done {
        producer_id: current.0,
        producer_epoch: current.1,
    };
    match (m.state, result) {
        (Ongoing, _) => prepare(m, result.prepare_state(), false),
        (CompleteCommit, Commit) if retry => done,
        (CompleteCommit, Commit) => End::Refuse(code::INVALID_TXN_STATE),
        (CompleteCommit, Abort) if retry => End::Refuse(code::INVALID_TXN_STATE),
        (CompleteCommit, Abort) => prepare(m, PrepareAbort, true),
        (CompleteAbort, Abort) if retry => done,
        (CompleteAbort, Abort) => prepare(m, PrepareAbort, true),
        (CompleteAbort, Commit) => End::Refuse(code::INVALID_TXN_STATE),
        (PrepareCommit, Commit) | (PrepareAbort, Abort) => {
            End::Refuse(code::CONCURRENT_TRANSACTIONS)
        }
        (PrepareCommit, Abort) | (PrepareAbort, Commit) => End::Refuse(code::INVALID_TXN_STATE),
        (Empty, Abort) => prepare(m, PrepareAbort, true),
        (Empty, Commit) => End::Refuse(code::INVALID_TXN_STATE),
        (Dead | PrepareEpochFence, _) => End::Refuse(code::UNKNOWN_SERVER_ERROR),
    }
}

/// The transit to PrepareCommit/PrepareAbort to write, or its refusal.
#[allow(clippy::too_many_arguments)]
fn prepare_write(
    m: &mut TxnMetadata,
    state: TxnState,
    version: TxnVersion,
    next_producer_id: i64,
    now_ms: i64,
    no_partition_added: bool,
    epoch_fence: bool,
) -> End {
    match m.prepare_abort_or_commit(state, version, next_producer_id, now_ms, no_partition_added) {
        Ok(transit) => End::Write {
            transit,
            epoch_fence,
        },
        Err(e) => End::Refuse(transition_error(&e)),
    }
}
