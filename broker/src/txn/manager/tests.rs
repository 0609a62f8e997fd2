use kaas_shared::{Assignment, BrokerInfo};
use tokio::sync::mpsc;

use super::*;
use crate::coordinator::clock::ManualClock;
use crate::txn::core::{TxnState, TxnTransit};
use crate::txn::store::MemoryTxnStore;

/// Hands each job to the test, which says when its markers are in.
struct HeldMarkers(mpsc::UnboundedSender<(MarkerJob, oneshot::Sender<()>)>);

impl MarkerWriter for HeldMarkers {
    fn write(&self, job: MarkerJob) -> BoxFuture<'static, ()> {
        let (done, written) = oneshot::channel();
        let _ = self.0.send((job, done));
        Box::pin(async move {
            let _ = written.await;
        })
    }
}

type Jobs = mpsc::UnboundedReceiver<(MarkerJob, oneshot::Sender<()>)>;

fn manager(store: Arc<MemoryTxnStore>, dir: &std::path::Path) -> (Arc<TxnManager>, Jobs) {
    let routing = Routing::new(Assignment::of_brokers(
        7,
        [BrokerInfo::alive(0, "127.0.0.1", 9092)],
    ));
    let (_tx, rx) = watch::channel(Some(Arc::new(routing)));
    let m = TxnManager::new(
        0,
        TxnManagerConfig::default(),
        store,
        Arc::new(ManualClock::new(1_000_000)),
        rx,
        Arc::new(ProducerIdAllocator::new(dir.to_path_buf(), 0)),
    );
    let (jobs_tx, jobs) = mpsc::unbounded_channel();
    m.set_marker_writer(Arc::new(HeldMarkers(jobs_tx)));
    (m, jobs)
}

fn orders() -> BTreeSet<TopicPartition> {
    (0..3).map(|p| TopicPartition::new("orders", p)).collect()
}

/// Waits until the store holds the id in `state`.
async fn stored_in(store: &MemoryTxnStore, id: &str, state: TxnState) -> TxnTransit {
    for _ in 0..1000 {
        if let Some(t) = store.load(id).unwrap().filter(|t| t.state == state) {
            return t;
        }
        tokio::task::yield_now().await;
    }
    panic!(
        "{id} never stored in {state:?}: {:?}",
        store.load(id).unwrap()
    );
}

#[tokio::test]
async fn a_commit_is_durable_answered_marked_then_completed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryTxnStore::new());
    let (m, mut jobs) = manager(store.clone(), dir.path());
    let TxnAnswer::InitProducerId {
        producer_id,
        producer_epoch,
        error: 0,
    } = m.init_producer_id("payments", 60_000, None).await.unwrap()
    else {
        panic!("init refused")
    };
    assert_eq!(producer_epoch, 0);
    assert_eq!(
        stored_in(&store, "payments", TxnState::Empty)
            .await
            .producer_id,
        producer_id
    );
    let added = m
        .add_partitions("payments", producer_id, 0, &orders(), TxnVersion::V0)
        .await
        .unwrap();
    assert_eq!(added.error(), 0);
    assert_eq!(
        stored_in(&store, "payments", TxnState::Ongoing)
            .await
            .partitions,
        orders()
    );
    let verified = m
        .verify_partitions("payments", producer_id, 0, &orders())
        .await
        .unwrap();
    assert!(verified.iter().all(|(_, e)| *e == 0));

    let ended = m
        .end_txn(
            "payments",
            producer_id,
            0,
            TxnResult::Commit,
            TxnVersion::V0,
        )
        .await
        .unwrap();
    assert_eq!(ended.error(), 0, "answered once PrepareCommit is durable");
    stored_in(&store, "payments", TxnState::PrepareCommit).await;
    let (job, written) = jobs.recv().await.unwrap();
    assert_eq!(
        (
            job.producer_id,
            job.producer_epoch,
            job.result,
            job.coordinator_epoch
        ),
        (producer_id, 0, TxnResult::Commit, 7)
    );
    assert_eq!(job.partitions, orders());
    written.send(()).unwrap();
    stored_in(&store, "payments", TxnState::CompleteCommit).await;
}

#[tokio::test]
async fn a_new_coordinator_finishes_a_prepared_transaction_it_loads() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryTxnStore::new());
    let _never_written = {
        let (m, mut jobs) = manager(store.clone(), dir.path());
        let TxnAnswer::InitProducerId { producer_id, .. } =
            m.init_producer_id("payments", 60_000, None).await.unwrap()
        else {
            panic!()
        };
        m.add_partitions("payments", producer_id, 0, &orders(), TxnVersion::V0)
            .await
            .unwrap();
        m.end_txn("payments", producer_id, 0, TxnResult::Abort, TxnVersion::V0)
            .await
            .unwrap();
        stored_in(&store, "payments", TxnState::PrepareAbort).await;
        // The coordinator dies before any marker is written.
        jobs.recv().await.unwrap()
    };
    let (m, mut jobs) = manager(store.clone(), dir.path());
    // Any request for the id loads it; the abort resumes by itself.
    let busy = m
        .add_partitions("payments", 0, 0, &orders(), TxnVersion::V0)
        .await
        .unwrap();
    assert_eq!(busy.error(), code::CONCURRENT_TRANSACTIONS);
    let (job, written) = jobs.recv().await.unwrap();
    assert_eq!(
        (job.result, job.partitions.clone()),
        (TxnResult::Abort, orders())
    );
    written.send(()).unwrap();
    stored_in(&store, "payments", TxnState::CompleteAbort).await;
}

#[tokio::test]
async fn a_second_producer_fences_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryTxnStore::new());
    let (m, mut jobs) = manager(store.clone(), dir.path());
    let TxnAnswer::InitProducerId { producer_id, .. } =
        m.init_producer_id("payments", 60_000, None).await.unwrap()
    else {
        panic!()
    };
    m.add_partitions("payments", producer_id, 0, &orders(), TxnVersion::V0)
        .await
        .unwrap();
    // The zombie's successor: its open transaction is aborted first.
    let retry = m.init_producer_id("payments", 60_000, None).await.unwrap();
    assert_eq!(retry.error(), code::CONCURRENT_TRANSACTIONS);
    let (job, written) = jobs.recv().await.unwrap();
    assert_eq!((job.result, job.producer_epoch), (TxnResult::Abort, 1));
    written.send(()).unwrap();
    stored_in(&store, "payments", TxnState::CompleteAbort).await;
    let TxnAnswer::InitProducerId {
        producer_epoch,
        error: 0,
        ..
    } = m.init_producer_id("payments", 60_000, None).await.unwrap()
    else {
        panic!("the successor is refused")
    };
    assert_eq!(producer_epoch, 2);
    let zombie = m
        .end_txn(
            "payments",
            producer_id,
            0,
            TxnResult::Commit,
            TxnVersion::V0,
        )
        .await
        .unwrap();
    assert_eq!(zombie.error(), code::PRODUCER_FENCED);
}
