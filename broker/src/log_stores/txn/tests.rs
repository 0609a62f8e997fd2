//! The transaction coordinator's port on the transactional ids' logs.

use std::collections::BTreeSet;
use std::path::Path;

use super::*;
use crate::storage::group_log::{GroupLogOptions, GroupLogStore, Owner};

fn transit(state: TxnState, epoch: i16, partitions: &[(&str, i32)]) -> TxnTransit {
    TxnTransit {
        producer_id: 42,
        prev_producer_id: 41,
        next_producer_id: -1,
        producer_epoch: epoch,
        last_producer_epoch: -1,
        timeout_ms: 60_000,
        state,
        partitions: partitions
            .iter()
            .map(|(t, p)| TopicPartition::new(*t, *p))
            .collect::<BTreeSet<_>>(),
        start_ms: 1_000,
        last_update_ms: 2_000,
        client_version: TxnVersion::V2,
    }
}

fn owned(dir: &Path) -> TxnLogStore {
    let options = GroupLogOptions {
        owner: Some(Owner::new(1, || 1)),
        ..GroupLogOptions::default()
    };
    TxnLogStore::open(dir, options).unwrap()
}

#[tokio::test]
async fn the_latest_state_survives_a_reopen_and_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = owned(dir.path());
    // Enough writes to snapshot the log more than once.
    let mut last = None;
    for epoch in 0..200 {
        let t = transit(TxnState::Ongoing, epoch, &[("orders", 0), ("orders", 1)]);
        store.write("payments-1", &t).await.unwrap();
        last = Some(t);
    }
    assert!(store.logs().snapshot_count() > 0, "snapshots were taken");
    drop(store);
    let store = owned(dir.path());
    assert_eq!(store.load("payments-1").unwrap(), last);
    assert_eq!(store.list().unwrap(), ["payments-1"]);
}

#[tokio::test]
async fn transactional_ids_and_group_ids_are_separate_logs() {
    let dir = tempfile::tempdir().unwrap();
    let txns = owned(dir.path());
    let groups = GroupLogStore::new(dir.path()).unwrap();
    let t = transit(TxnState::CompleteCommit, 3, &[]);
    txns.write("same-name", &t).await.unwrap();
    assert_eq!(groups.list_groups().unwrap(), Vec::<String>::new());
    assert!(txns
        .logs()
        .log_path("same-name")
        .starts_with(dir.path().join("__cluster/__transaction_state")));
    assert_eq!(txns.load("same-name").unwrap(), Some(t));
}

#[tokio::test]
async fn a_removed_id_has_no_state() {
    let dir = tempfile::tempdir().unwrap();
    let store = owned(dir.path());
    store
        .write("gone", &transit(TxnState::Empty, 0, &[]))
        .await
        .unwrap();
    store.remove("gone").await.unwrap();
    assert_eq!(store.load("gone").unwrap(), None);
    assert!(store.list().unwrap().is_empty());
}

#[tokio::test]
async fn another_brokers_newer_claim_fences_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let old = owned(dir.path());
    old.write("fenced", &transit(TxnState::Empty, 0, &[]))
        .await
        .unwrap();
    let newer = TxnLogStore::open(
        dir.path(),
        GroupLogOptions {
            owner: Some(Owner::new(2, || 2)),
            ..GroupLogOptions::default()
        },
    )
    .unwrap();
    assert!(newer.load("fenced").unwrap().is_some());
    newer
        .write("fenced", &transit(TxnState::Empty, 1, &[]))
        .await
        .unwrap();
    let refused = old.write("fenced", &transit(TxnState::Empty, 2, &[])).await;
    assert!(
        matches!(
            refused,
            Err(StoreError::Fenced { .. } | StoreError::Reclaimed { .. })
        ),
        "{refused:?}"
    );
    assert_eq!(newer.load("fenced").unwrap().unwrap().producer_epoch, 1);
}
