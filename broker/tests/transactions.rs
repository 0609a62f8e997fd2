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

/// A transactional batch of `values` from `pid` at `epoch`, sequences from 0.
fn txn_batch(pid: i64, epoch: i16, values: &[String]) -> bytes::Bytes {
    kaas_testkit::records::record_batch(
        values.iter().map(|v| bytes::Bytes::from(v.clone())),
        Some((pid, epoch)),
    )
}

/// Transaction version 2 across brokers, in the requests a Java 4.x
/// producer sends once ApiVersions finalizes `transaction.version` 2: no
/// AddPartitionsToTxn and no AddOffsetsToTxn. Partition leaders add their
/// partitions to the transaction by AddPartitionsToTxn v5 to its
/// coordinator on another broker, the group's coordinator adds the group's
/// offsets the same way, EndTxn v5 bumps the epoch for the next
/// transaction. librdkafka then reads exactly the committed records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_version_2_producer_over_three_brokers() {
    use kaas_client::KafkaClient;
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;

    let dir = tempfile::tempdir().unwrap();
    let cluster = LocalCluster::start(config(dir.path())).await.unwrap();
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, TOPIC, PARTITIONS).await;
    let routing = cluster.brokers[0].routing().unwrap();
    let id = "kaas-txn-v2";
    let coordinator = routing.owner_of_transaction(id).unwrap();
    let leaders: Vec<i32> = (0..PARTITIONS)
        .map(|p| routing.owner_of_partition(TOPIC, p).unwrap())
        .collect();
    assert!(
        leaders.iter().any(|l| *l != coordinator),
        "a partition led away from the coordinator"
    );
    // A group coordinated away from the transaction's coordinator.
    let group = (0..)
        .map(|i| format!("kaas-txn-v2-group-{i}"))
        .find(|g| routing.owner_of_group(g) != Some(coordinator))
        .unwrap();
    let connect = |broker: i32| {
        let addr = cluster.addrs[broker as usize].to_string();
        async move { KafkaClient::connect(&addr, T).await.unwrap() }
    };
    let s = |v: &str| StrBytes::from_string(v.to_string());

    let mut txn = connect(coordinator).await;
    let init = txn
        .send(
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(s(id))))
                .with_transaction_timeout_ms(60_000),
            5,
        )
        .await
        .unwrap();
    assert_eq!(init.error_code, 0);
    let pid = init.producer_id.0;
    let mut epoch = init.producer_epoch;

    // Two transactions, committed then aborted, each writing every
    // partition (to its leader, Produce v12) and the group's offset of
    // partition 0 (TxnOffsetCommit v5).
    for (round, commit, offset) in [("committed", true, 7), ("aborted", false, 9)] {
        for p in 0..PARTITIONS {
            let values: Vec<String> = (0..2).map(|i| format!("{round}-{p}-{i}")).collect();
            let resp = connect(leaders[p as usize])
                .await
                .send(
                    &ProduceRequest::default()
                        .with_acks(-1)
                        .with_timeout_ms(10_000)
                        .with_transactional_id(Some(TransactionalId(s(id))))
                        .with_topic_data(vec![produce_request::TopicProduceData::default()
                            .with_name(TopicName(s(TOPIC)))
                            .with_partition_data(vec![
                                produce_request::PartitionProduceData::default()
                                    .with_index(p)
                                    .with_records(Some(txn_batch(pid, epoch, &values))),
                            ])]),
                    12,
                )
                .await
                .unwrap();
            assert_eq!(
                resp.responses[0].partition_responses[0].error_code, 0,
                "{round}: partition {p} added by its leader"
            );
        }
        let committed = connect(routing.owner_of_group(&group).unwrap())
            .await
            .send(
                &TxnOffsetCommitRequest::default()
                    .with_transactional_id(TransactionalId(s(id)))
                    .with_group_id(GroupId(s(&group)))
                    .with_producer_id(ProducerId(pid))
                    .with_producer_epoch(epoch)
                    .with_generation_id(-1)
                    .with_topics(vec![
                        txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                            .with_name(TopicName(s(TOPIC)))
                            .with_partitions(vec![
                            txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(offset),
                        ]),
                    ]),
                5,
            )
            .await
            .unwrap();
        assert_eq!(
            committed.topics[0].partitions[0].error_code, 0,
            "{round}: offsets staged"
        );
        let ended = txn
            .send(
                &EndTxnRequest::default()
                    .with_transactional_id(TransactionalId(s(id)))
                    .with_producer_id(ProducerId(pid))
                    .with_producer_epoch(epoch)
                    .with_committed(commit),
                5,
            )
            .await
            .unwrap();
        assert_eq!(ended.error_code, 0, "{round}: ended");
        assert_eq!(ended.producer_id.0, pid);
        assert_eq!(
            ended.producer_epoch,
            epoch + 1,
            "{round}: the epoch is bumped"
        );
        epoch = ended.producer_epoch;
    }

    let fetched = connect(routing.owner_of_group(&group).unwrap())
        .await
        .send(
            &OffsetFetchRequest::default()
                .with_require_stable(true)
                .with_groups(vec![
                    offset_fetch_request::OffsetFetchRequestGroup::default()
                        .with_group_id(GroupId(s(&group)))
                        .with_topics(None),
                ]),
            9,
        )
        .await
        .unwrap();
    let offsets: Vec<(i32, i64, i16)> = fetched.groups[0]
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| (p.partition_index, p.committed_offset, p.error_code))
        .collect();
    assert_eq!(offsets, [(0, 7, 0)], "the committed round's offset only");

    let b = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let committed: BTreeSet<String> = read_all(&b, "read_committed", 6).into_iter().collect();
        assert_eq!(committed, values("committed", 2));
        let all = read_all(&b, "read_uncommitted", 12);
        assert_eq!(
            all.len(),
            12,
            "every record once, no control record: {all:?}"
        );
    })
    .await
    .unwrap();
    cluster.shutdown().await;
}
