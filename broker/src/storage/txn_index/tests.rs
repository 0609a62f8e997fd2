use super::*;

fn aborted(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
    AbortedTxn {
        producer_id: pid,
        first_offset: first,
        last_offset: last,
        last_stable_offset: lso,
    }
}

fn four() -> [AbortedTxn; 4] {
    [
        aborted(0, 0, 10, 11),
        aborted(1, 5, 15, 13),
        aborted(2, 18, 35, 25),
        aborted(3, 32, 50, 40),
    ]
}

fn index_of(txns: &[AbortedTxn]) -> AbortedTxns {
    let mut index = AbortedTxns::default();
    for t in txns {
        index.push(*t);
    }
    index
}

/// Apache's TransactionIndexTest `testCollectAbortedTransactions`.
#[test]
fn test_collect_aborted_transactions() {
    let txns = four();
    let index = index_of(&txns);
    assert_eq!(index.overlapping(0, 100), txns[..]);
    assert_eq!(index.overlapping(0, 32), txns[..3]);
    assert_eq!(index.overlapping(0, 35), txns[..]);
    assert_eq!(index.overlapping(10, 35), txns[..]);
    assert_eq!(index.overlapping(11, 35), txns[1..]);
    assert_eq!(index.overlapping(20, 41), txns[2..]);
}

/// Apache's TransactionIndexTest `testTruncate`.
#[test]
fn test_truncate() {
    let txns = [
        aborted(0, 0, 10, 2),
        aborted(1, 5, 15, 16),
        aborted(2, 18, 35, 25),
        aborted(3, 32, 50, 40),
    ];
    let mut index = index_of(&txns);
    index.truncate_to(51);
    assert_eq!(index.overlapping(0, 100), txns[..]);
    index.truncate_to(50);
    assert_eq!(index.overlapping(0, 100), txns[..3]);
    index.truncate_to(0);
    assert!(index.overlapping(0, 100).is_empty());
}

#[test]
fn retention_drops_what_ended_before_the_log_start() {
    let txns = four();
    let mut index = index_of(&txns);
    index.drop_before(11);
    assert_eq!(index.overlapping(0, 100), txns[1..]);
    index.drop_before(51);
    assert!(index.is_empty());
}
