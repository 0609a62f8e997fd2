use super::*;

fn header(base: i64, last_delta: i32, pid: i64, attributes: i16, count: i32) -> BatchHeader {
    BatchHeader {
        base_offset: base,
        size: 61,
        last_offset_delta: last_delta,
        base_timestamp: 0,
        max_timestamp: 0,
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: 0,
        record_count: count,
        attributes,
    }
}
const TXN: i16 = 0x10;
const CONTROL: i16 = 0x30;
fn marker(commit: bool) -> Option<ControlMarker> {
    Some(ControlMarker {
        commit,
        coordinator_epoch: 0,
    })
}

#[test]
fn aborted_batches_go_and_their_marker_stays_while_they_were_there() {
    let mut t = CleanedTransactions::default();
    t.add_aborted([AbortedTxn {
        producer_id: 1,
        first_offset: 0,
        last_offset: 2,
        last_stable_offset: 3,
    }]);
    assert!(t.on_batch(&header(0, 1, 1, TXN, 2)), "aborted data");
    assert!(!t.on_batch(&header(2, 0, 2, TXN, 1)), "another producer's");
    // The abort marker stays: its transaction's data was in this pass.
    assert!(!t.on_control_batch(&header(3, 0, 1, CONTROL, 1), marker(false)));
    // The commit marker of producer 2 stays too: its data was seen.
    assert!(!t.on_control_batch(&header(4, 0, 2, CONTROL, 1), marker(true)));
    // A later pass, the data gone: both markers may go.
    let mut t = CleanedTransactions::default();
    t.add_aborted([AbortedTxn {
        producer_id: 1,
        first_offset: 0,
        last_offset: 2,
        last_stable_offset: 3,
    }]);
    assert!(t.on_control_batch(&header(3, 0, 1, CONTROL, 1), marker(false)));
    assert!(t.on_control_batch(&header(4, 0, 2, CONTROL, 1), marker(true)));
    assert!(
        t.on_control_batch(&header(5, 0, 2, CONTROL, 0), None),
        "empty"
    );
}
