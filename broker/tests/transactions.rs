//! Transactions end to end with librdkafka (the `rdkafka` crate) on a
//! 3-broker local cluster: the transaction coordinator, the partition
//! leaders and the markers between them are spread over the brokers.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{client_config, create_topic};
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

const TOPIC: &str = "txn-orders";
const PARTITIONS: i32 = 3;
const T: Duration = Duration::from_secs(20);

fn config(dir: &std::path::Path) -> LocalClusterConfig {
    let mut c = LocalClusterConfig::new(3, dir.to_path_buf());
    c.base_port = 0;
    // Timed-out transactions are looked for often, so the timeout test
    // waits for its timeout, not for the sweep.
    c.tune = |b| b.transactions.abort_check_interval_ms = 100;
    c
}

fn producer(bootstrap: &str, transactional_id: &str) -> ThreadedProducer<DefaultProducerContext> {
    client_config(bootstrap)
        .set("transactional.id", transactional_id)
        .set("transaction.timeout.ms", "60000")
        .create()
        .expect("transactional producer")
}

/// One record to every partition, values `{prefix}-{partition}-{i}`.
fn send_round(p: &ThreadedProducer<DefaultProducerContext>, prefix: &str, per_partition: usize) {
    for partition in 0..PARTITIONS {
        for i in 0..per_partition {
            let value = format!("{prefix}-{partition}-{i}");
            p.send(
                BaseRecord::<(), _>::to(TOPIC)
                    .partition(partition)
                    .payload(&value),
            )
            .map_err(|(e, _)| e)
            .expect("queued");
        }
    }
}

/// Every value in the topic, read from the start at `isolation`, until no
/// more arrive for a while (after at least `at_least`).
fn read_all(bootstrap: &str, isolation: &str, at_least: usize) -> Vec<String> {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", format!("txn-reader-{isolation}"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", isolation)
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(TOPIC, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + T;
    let mut quiet_since = Instant::now();
    loop {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                got.push(String::from_utf8(m.payload().unwrap().to_vec()).unwrap());
                quiet_since = Instant::now();
            }
            Some(Err(e)) => panic!("consumer error: {e}"),
            None => {}
        }
        if got.len() >= at_least && quiet_since.elapsed() > Duration::from_secs(2) {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "read {} of {at_least} at {isolation}",
            got.len()
        );
    }
}

fn values(prefix: &str, per_partition: usize) -> BTreeSet<String> {
    (0..PARTITIONS)
        .flat_map(|p| (0..per_partition).map(move |i| format!("{prefix}-{p}-{i}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_and_aborted_transactions_over_three_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = LocalCluster::start(config(dir.path())).await.unwrap();
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, TOPIC, PARTITIONS).await;
    let b = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let p = producer(&b, "kaas-txn-1");
        p.init_transactions(T).expect("init_transactions");
        p.begin_transaction().unwrap();
        send_round(&p, "committed", 3);
        p.commit_transaction(T).expect("commit");
        p.begin_transaction().unwrap();
        send_round(&p, "aborted", 3);
        p.flush(T).unwrap();
        p.abort_transaction(T).expect("abort");
        // A third, committed: readers must move past the aborted one.
        p.begin_transaction().unwrap();
        send_round(&p, "after", 1);
        p.commit_transaction(T).expect("commit after abort");

        let committed: BTreeSet<String> = read_all(&b, "read_committed", 12).into_iter().collect();
        let mut want = values("committed", 3);
        want.extend(values("after", 1));
        assert_eq!(
            committed, want,
            "read_committed sees exactly the committed records"
        );
        let all = read_all(&b, "read_uncommitted", 21);
        assert_eq!(
            all.len(),
            21,
            "every record once, no control record: {all:?}"
        );
        let mut everything = want.clone();
        everything.extend(values("aborted", 3));
        assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), everything);
    })
    .await
    .unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_older_of_two_producers_with_one_transactional_id_is_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = LocalCluster::start(config(dir.path())).await.unwrap();
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, TOPIC, PARTITIONS).await;
    let b = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let zombie = producer(&b, "kaas-txn-zombie");
        zombie.init_transactions(T).unwrap();
        zombie.begin_transaction().unwrap();
        send_round(&zombie, "zombie", 2);
        zombie.flush(T).unwrap();

        let successor = producer(&b, "kaas-txn-zombie");
        successor
            .init_transactions(T)
            .expect("the successor starts");
        successor.begin_transaction().unwrap();
        send_round(&successor, "successor", 1);
        successor.commit_transaction(T).unwrap();

        let fenced = zombie.commit_transaction(T);
        match fenced {
            Err(KafkaError::Transaction(e)) => assert!(e.is_fatal(), "fencing is fatal: {e}"),
            other => panic!("the zombie was not fenced: {other:?}"),
        }
        let committed: BTreeSet<String> = read_all(&b, "read_committed", 3).into_iter().collect();
        assert_eq!(committed, values("successor", 1), "nothing of the zombie's");
    })
    .await
    .unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_that_stops_mid_transaction_is_aborted_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = LocalCluster::start(config(dir.path())).await.unwrap();
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, TOPIC, PARTITIONS).await;
    let b = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let stuck: ThreadedProducer<DefaultProducerContext> = client_config(&b)
            .set("transactional.id", "kaas-txn-stuck")
            .set("transaction.timeout.ms", "1500")
            .create()
            .unwrap();
        stuck.init_transactions(T).unwrap();
        stuck.begin_transaction().unwrap();
        send_round(&stuck, "stuck", 1);
        stuck.flush(T).unwrap();
        // The producer goes away without ending its transaction (no abort
        // on the way out).
        std::mem::forget(stuck);

        let later = producer(&b, "kaas-txn-later");
        later.init_transactions(T).unwrap();
        later.begin_transaction().unwrap();
        send_round(&later, "later", 1);
        later.commit_transaction(T).unwrap();
        // read_committed readers move past the stuck transaction once the
        // coordinator aborts it, with no client doing anything.
        let committed: BTreeSet<String> = read_all(&b, "read_committed", 3).into_iter().collect();
        assert_eq!(committed, values("later", 1));
    })
    .await
    .unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_its_coordinator_left_prepared_is_completed_by_the_next_without_a_client() {
    use kaas_broker::storage::group_log::GroupLogOptions;
    use kaas_broker::storage::txn_log::TxnLogStore;
    use kaas_broker::txn::core::TxnState;
    use kaas_broker::txn::store::TxnStore;

    let dir = tempfile::tempdir().unwrap();
    let cluster = LocalCluster::start(config(dir.path())).await.unwrap();
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, TOPIC, PARTITIONS).await;
    let b = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let p: ThreadedProducer<DefaultProducerContext> = client_config(&b)
            .set("transactional.id", "kaas-txn-orphan")
            .set("transaction.timeout.ms", "600000")
            .create()
            .unwrap();
        p.init_transactions(T).unwrap();
        p.begin_transaction().unwrap();
        send_round(&p, "orphan", 2);
        p.flush(T).unwrap();
        // The producer never sends EndTxn, nor anything else.
        std::mem::forget(p);
    })
    .await
    .unwrap();
    cluster.shutdown().await;

    // What its coordinator left had it made EndTxn(commit) durable and been
    // killed before a single marker: the id's log says PrepareCommit.
    let store = TxnLogStore::open(dir.path(), GroupLogOptions::default()).unwrap();
    let mut t = store
        .load("kaas-txn-orphan")
        .unwrap()
        .expect("the id's log");
    assert_eq!((t.state, t.partitions.len()), (TxnState::Ongoing, 3));
    t.state = TxnState::PrepareCommit;
    store.write("kaas-txn-orphan", &t).await.unwrap();
    drop(store);

    let cluster = LocalCluster::start(config(dir.path())).await.unwrap();
    let b = cluster.bootstrap();
    tokio::task::spawn_blocking(move || {
        let committed: BTreeSet<String> = read_all(&b, "read_committed", 6).into_iter().collect();
        assert_eq!(
            committed,
            values("orphan", 2),
            "visible with no client involved"
        );
    })
    .await
    .unwrap();
    cluster.shutdown().await;
}
