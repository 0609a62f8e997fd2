//! Consumer groups end to end on a 3-broker local cluster with librdkafka:
//! three assignors and the KIP-848 consumer protocol sharing a topic,
//! offsets surviving a restart, and the
//! admin surface (list, describe, delete) staying honest cluster-wide.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{client_config, create_topic, eventually};
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, KafkaResult, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

async fn cluster(dir: &std::path::Path) -> LocalCluster {
    let mut c = LocalClusterConfig::new(3, dir.to_path_buf());
    c.base_port = 0;
    // Keep rebalances quick in tests; the delay logic itself is unit tested.
    c.tune = |b| b.groups.core.initial_rebalance_delay_ms = 200;
    LocalCluster::start(c).await.unwrap()
}

/// A classic consumer with `assignor`, or with `"consumer"` one of the
/// KIP-848 protocol (the coordinator assigns; librdkafka refuses the
/// classic session settings there).
fn group_consumer(bootstrap: &str, group: &str, assignor: &str) -> BaseConsumer {
    if assignor == "consumer" {
        return client_config(bootstrap)
            .set("group.id", group)
            .set("group.protocol", "consumer")
            .set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
    }
    client_config(bootstrap)
        .set("group.id", group)
        .set("partition.assignment.strategy", assignor)
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "300")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap()
}

/// A consumer on its own thread that polls and publishes its assignment.
struct Member {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Member {
    fn start(
        bootstrap: &str,
        group: &str,
        assignor: &str,
        name: String,
        view: Arc<Mutex<BTreeMap<String, BTreeSet<i32>>>>,
    ) -> Member {
        let consumer = group_consumer(bootstrap, group, assignor);
        consumer.subscribe(&["shared"]).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let _ = consumer.poll(Duration::from_millis(50));
                let parts: BTreeSet<i32> = consumer
                    .assignment()
                    .map(|t| t.elements().iter().map(|e| e.partition()).collect())
                    .unwrap_or_default();
                view.lock().unwrap().insert(name.clone(), parts);
            }
            view.lock().unwrap().remove(&name);
            drop(consumer); // closes: LeaveGroup
        });
        Member {
            stop,
            handle: Some(handle),
        }
    }
    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap();
    }
}

/// Every partition owned by exactly one member, each member owning some.
fn balanced(view: &BTreeMap<String, BTreeSet<i32>>, members: usize, partitions: i32) -> bool {
    if view.len() != members || view.values().any(|p| p.is_empty()) {
        return false;
    }
    let total: usize = view.values().map(|p| p.len()).sum();
    let union: BTreeSet<i32> = view.values().flatten().copied().collect();
    total == partitions as usize && union == (0..partitions).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn range_roundrobin_cooperative_sticky_and_the_consumer_protocol_own_every_partition_once() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(dir.path()).await;
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, "shared", 12).await;
    for assignor in ["range", "roundrobin", "cooperative-sticky", "consumer"] {
        let group = format!("g-{assignor}");
        let view: Arc<Mutex<BTreeMap<String, BTreeSet<i32>>>> = Arc::default();
        let mut members: Vec<Member> = (0..3)
            .map(|i| Member::start(&bootstrap, &group, assignor, format!("m{i}"), view.clone()))
            .collect();
        let what = format!("{assignor}: 3 members own all 12 partitions once");
        eventually(Duration::from_secs(30), &what, || {
            balanced(&view.lock().unwrap(), 3, 12)
        })
        .await;

        members.push(Member::start(
            &bootstrap,
            &group,
            assignor,
            "m3".into(),
            view.clone(),
        ));
        let what = format!("{assignor}: 4 members after a join");
        eventually(Duration::from_secs(30), &what, || {
            balanced(&view.lock().unwrap(), 4, 12)
        })
        .await;

        tokio::task::block_in_place(|| members.remove(0).stop());
        let what = format!("{assignor}: 3 members after a leave");
        eventually(Duration::from_secs(30), &what, || {
            balanced(&view.lock().unwrap(), 3, 12)
        })
        .await;
        tokio::task::block_in_place(|| members.into_iter().for_each(Member::stop));
    }
    cluster.shutdown().await;
}

async fn produce(bootstrap: &str, topic: &str, partitions: i32, n: usize) {
    let producer: FutureProducer = client_config(bootstrap)
        .set("acks", "all")
        .create()
        .unwrap();
    for i in 0..n {
        let payload = format!("{i}");
        producer
            .send(
                FutureRecord::<(), _>::to(topic)
                    .partition((i % partitions as usize) as i32)
                    .payload(&payload),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
    }
}

/// Consumes `n` messages in `group`, committing each, and returns them.
fn consume_and_commit(bootstrap: &str, group: &str, topic: &str, n: usize) -> Vec<(i32, i64)> {
    let consumer = group_consumer(bootstrap, group, "range");
    consumer.subscribe(&[topic]).unwrap();
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while got.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "consumed only {}",
            got.len()
        );
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.unwrap();
            got.push((m.partition(), m.offset()));
            consumer.commit_message(&m, CommitMode::Sync).unwrap();
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_offsets_survive_a_cluster_restart_with_nothing_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path()).await;
    let bootstrap = c.bootstrap();
    create_topic(&bootstrap, "events", 3).await;
    produce(&bootstrap, "events", 3, 300).await;
    let first =
        tokio::task::block_in_place(|| consume_and_commit(&bootstrap, "resumer", "events", 120));
    c.shutdown().await;

    let c = cluster(dir.path()).await;
    let bootstrap = c.bootstrap();
    // The committed positions are there, read straight from the coordinator.
    let consumer = group_consumer(&bootstrap, "resumer", "range");
    let mut tpl = TopicPartitionList::new();
    for p in 0..3 {
        tpl.add_partition("events", p);
    }
    let committed =
        tokio::task::block_in_place(|| consumer.committed_offsets(tpl, Duration::from_secs(10)))
            .unwrap();
    let mut next_by_partition: BTreeMap<i32, i64> = BTreeMap::new();
    for (p, o) in &first {
        let e = next_by_partition.entry(*p).or_default();
        *e = (*e).max(o + 1);
    }
    for e in committed.elements() {
        assert_eq!(
            e.offset(),
            // A partition never consumed has no committed offset.
            next_by_partition
                .get(&e.partition())
                .map_or(Offset::Invalid, |o| Offset::Offset(*o)),
            "committed offset of partition {}",
            e.partition()
        );
    }
    drop(consumer);
    let rest =
        tokio::task::block_in_place(|| consume_and_commit(&bootstrap, "resumer", "events", 180));
    let all: BTreeSet<(i32, i64)> = first.iter().chain(rest.iter()).copied().collect();
    assert_eq!(
        all.len(),
        300,
        "every message exactly once across the restart"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_describe_and_delete_groups_cluster_wide() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path()).await;
    let bootstrap = c.bootstrap();
    create_topic(&bootstrap, "audit", 2).await;
    produce(&bootstrap, "audit", 2, 20).await;
    for g in ["alpha", "beta", "gamma"] {
        tokio::task::block_in_place(|| consume_and_commit(&bootstrap, g, "audit", 5));
    }
    let admin_consumer = group_consumer(&bootstrap, "observer", "range");
    let listed = |c: &BaseConsumer| -> BTreeMap<String, String> {
        let list = c.fetch_group_list(None, Duration::from_secs(10)).unwrap();
        list.groups()
            .iter()
            .map(|g| (g.name().to_string(), g.state().to_string()))
            .collect()
    };
    let groups = tokio::task::block_in_place(|| listed(&admin_consumer));
    for g in ["alpha", "beta", "gamma"] {
        assert_eq!(
            groups.get(g).map(String::as_str),
            Some("Empty"),
            "{groups:?}"
        );
    }

    let admin: AdminClient<DefaultClientContext> = client_config(&bootstrap).create().unwrap();
    let deleted = admin
        .delete_groups(&["beta", "nonexistent"], &AdminOptions::new())
        .await
        .unwrap();
    assert!(deleted[0].is_ok(), "{deleted:?}");
    assert!(
        deleted[1].is_err(),
        "deleting an unknown group fails: {deleted:?}"
    );

    let groups = tokio::task::block_in_place(|| listed(&admin_consumer));
    assert!(
        !groups.contains_key("beta"),
        "a deleted group never reappears: {groups:?}"
    );
    assert!(groups.contains_key("alpha") && groups.contains_key("gamma"));
    c.shutdown().await;
    // Nor after a restart: its log is gone from the shared volume.
    let c = cluster(dir.path()).await;
    let admin_consumer = group_consumer(&c.bootstrap(), "observer", "range");
    let groups = tokio::task::block_in_place(|| listed(&admin_consumer));
    assert!(!groups.contains_key("beta"), "{groups:?}");
    assert_eq!(
        groups.get("alpha").map(String::as_str),
        Some("Empty"),
        "{groups:?}"
    );
    c.shutdown().await;
}

/// librdkafka's 0030 `do_nonexist_commit`: committing offsets of a topic
/// that does not exist fails with UNKNOWN_TOPIC_OR_PARTITION (Apache's
/// KafkaApis answer), and a partition the topic does not have fails the same
/// way while nothing of either is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committing_a_topic_that_does_not_exist_fails_unknown_topic_or_partition() {
    use rdkafka::error::{KafkaError, RDKafkaErrorCode};
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(dir.path()).await;
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, "real", 1).await;
    let consumer = group_consumer(&bootstrap, "nonexist-commit", "range");
    let commit = |topic: &str, partition: i32| {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, partition, Offset::Offset(5))
            .unwrap();
        consumer.commit(&tpl, CommitMode::Sync)
    };
    for (topic, partition) in [("nonexist", 0), ("real", 3)] {
        match commit(topic, partition) {
            Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::UnknownTopicOrPartition)) => {}
            other => panic!("commit of {topic}:{partition} answered {other:?}"),
        }
    }
    commit("real", 0).expect("a commit of a partition that exists");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition("real", 0);
    tpl.add_partition("real", 3);
    tpl.add_partition("nonexist", 0);
    let committed = consumer
        .committed_offsets(tpl, Duration::from_secs(10))
        .unwrap();
    let offsets: BTreeMap<(String, i32), Offset> = committed
        .elements()
        .iter()
        .map(|e| ((e.topic().to_string(), e.partition()), e.offset()))
        .collect();
    assert_eq!(offsets[&("real".to_string(), 0)], Offset::Offset(5));
    assert_eq!(offsets[&("real".to_string(), 3)], Offset::Invalid);
    assert_eq!(offsets[&("nonexist".to_string(), 0)], Offset::Invalid);
    cluster.shutdown().await;
}

/// Who owns which partition, from the members' own rebalance callbacks:
/// any partition given to a member while another owns it is a violation.
#[derive(Default)]
struct Ledger {
    owner: BTreeMap<i32, String>,
    violations: Vec<String>,
}

impl Ledger {
    fn assigned(&mut self, member: &str, partitions: &[i32]) {
        for p in partitions {
            if let Some(holder) = self.owner.get(p).filter(|h| *h != member) {
                let v = format!("partition {p} given to {member} while {holder} owns it");
                self.violations.push(v);
            }
            self.owner.insert(*p, member.to_string());
        }
    }

    fn revoked(&mut self, member: &str, partitions: &[i32]) {
        for p in partitions {
            if self.owner.get(p).is_some_and(|h| h == member) {
                self.owner.remove(p);
            }
        }
    }

    fn owned_by(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for m in self.owner.values() {
            *counts.entry(m.clone()).or_default() += 1;
        }
        counts
    }
}

/// A member's callbacks write the ledger; a revocation first commits what
/// the member read (refused if it races the rebalance, as Apache refuses
/// it: the next owner reads those records again and commits them).
struct LedgerContext {
    name: String,
    ledger: Arc<Mutex<Ledger>>,
}

impl rdkafka::client::ClientContext for LedgerContext {}

impl rdkafka::consumer::ConsumerContext for LedgerContext {
    fn pre_rebalance(
        &self,
        consumer: &BaseConsumer<Self>,
        rebalance: &rdkafka::consumer::Rebalance<'_>,
    ) {
        if let rdkafka::consumer::Rebalance::Revoke(tpl) = rebalance {
            let _ = consumer.commit_consumer_state(CommitMode::Sync);
            let parts: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            self.ledger.lock().unwrap().revoked(&self.name, &parts);
        }
    }

    fn post_rebalance(
        &self,
        _consumer: &BaseConsumer<Self>,
        rebalance: &rdkafka::consumer::Rebalance<'_>,
    ) {
        if let rdkafka::consumer::Rebalance::Assign(tpl) = rebalance {
            let parts: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            self.ledger.lock().unwrap().assigned(&self.name, &parts);
        }
    }
}

/// A KIP-848 member on its own thread: polls, notes what it read, and
/// commits all it read when stopped.
struct LedgerMember {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl LedgerMember {
    fn start(
        bootstrap: &str,
        name: &str,
        ledger: Arc<Mutex<Ledger>>,
        seen: Arc<Mutex<BTreeSet<(i32, i64)>>>,
    ) -> LedgerMember {
        let context = LedgerContext {
            name: name.to_string(),
            ledger,
        };
        let consumer: BaseConsumer<LedgerContext> = client_config(bootstrap)
            .set("group.id", "g-ledger")
            .set("group.protocol", "consumer")
            .set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", "false")
            .create_with_context(context)
            .unwrap();
        consumer.subscribe(&["ledger"]).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                if let Some(Ok(m)) = consumer.poll(Duration::from_millis(50)) {
                    seen.lock().unwrap().insert((m.partition(), m.offset()));
                }
            }
            // The last commit may race a rebalance: retry until it lands
            // (nothing new to commit is done).
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            let committed = |r: KafkaResult<()>| {
                matches!(
                    r,
                    Ok(()) | Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset))
                )
            };
            while !committed(consumer.commit_consumer_state(CommitMode::Sync))
                && std::time::Instant::now() < deadline
            {
                let _ = consumer.poll(Duration::from_millis(100));
            }
            consumer.unsubscribe();
            for _ in 0..20 {
                let _ = consumer.poll(Duration::from_millis(50));
            }
        });
        LedgerMember {
            stop,
            handle: Some(handle),
        }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
    }
}

/// The Done-when of the KIP-848 protocol with the rdkafka crate
/// (librdkafka 2.12): 3 members share 12 partitions, a 4th joins and one
/// leaves; a ledger of their rebalance callbacks shows no partition owned
/// by two at once; every record is consumed and committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_protocol_owns_each_partition_once_and_commits_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = LocalClusterConfig::new(3, dir.path().to_path_buf());
    c.base_port = 0;
    // KIP-848 members heartbeat every 500 ms (5 s by default): each step
    // of a reconciliation waits for one.
    c.tune = |b| b.groups.core.consumer.heartbeat_interval_ms = 500;
    let cluster = LocalCluster::start(c).await.unwrap();
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, "ledger", 12).await;
    produce(&bootstrap, "ledger", 12, 600).await;
    let ledger: Arc<Mutex<Ledger>> = Arc::default();
    let seen: Arc<Mutex<BTreeSet<(i32, i64)>>> = Arc::default();
    let start = |name: &str| LedgerMember::start(&bootstrap, name, ledger.clone(), seen.clone());
    let shares = |n: usize| {
        let owned = ledger.lock().unwrap().owned_by();
        owned.len() == n && owned.values().all(|c| *c == 12 / n)
    };
    let mut members: Vec<LedgerMember> = (0..3).map(|i| start(&format!("m{i}"))).collect();
    eventually(
        Duration::from_secs(60),
        "3 members own 4 partitions each",
        || shares(3),
    )
    .await;
    members.push(start("m3"));
    eventually(
        Duration::from_secs(60),
        "4 members own 3 partitions each",
        || shares(4),
    )
    .await;
    tokio::task::block_in_place(|| members.remove(0).stop());
    eventually(
        Duration::from_secs(60),
        "the 3 left own 4 partitions each",
        || shares(3),
    )
    .await;
    eventually(Duration::from_secs(60), "every record consumed", || {
        seen.lock().unwrap().len() == 600
    })
    .await;
    tokio::task::block_in_place(|| members.into_iter().for_each(LedgerMember::stop));
    let violations = ledger.lock().unwrap().violations.clone();
    assert!(violations.is_empty(), "{violations:?}");

    // The group's committed offsets cover every record.
    let probe: BaseConsumer = client_config(&bootstrap)
        .set("group.id", "g-ledger")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..12 {
        tpl.add_partition("ledger", p);
    }
    let committed = tokio::task::block_in_place(|| {
        probe
            .committed_offsets(tpl, Duration::from_secs(10))
            .unwrap()
    });
    for e in committed.elements() {
        assert_eq!(
            e.offset(),
            Offset::Offset(50),
            "partition {}",
            e.partition()
        );
    }
    cluster.shutdown().await;
}

/// Counts a cooperative consumer's assign calls (the default rebalance
/// does the incremental assign and unassign).
#[derive(Default)]
struct CountAssigns(std::sync::atomic::AtomicUsize);

impl rdkafka::ClientContext for CountAssigns {}

impl rdkafka::consumer::ConsumerContext for CountAssigns {
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &rdkafka::consumer::Rebalance<'_>) {
        if matches!(rebalance, rdkafka::consumer::Rebalance::Assign(_)) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// librdkafka's 0113 `h_delete_topic`: a cooperative-sticky consumer of two
/// topics, assigned both in one call, sees one of them deleted through its
/// own handle, loses that partition alone, and then closes and is
/// destroyed promptly (the same flow with Debian's librdkafka 2.0.2 is
/// `other_clients::librdkafka_2_0_closes_a_cooperative_consumer_after_a_topic_is_deleted`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cooperative_consumer_closes_after_a_subscribed_topic_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(dir.path()).await;
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, "h-delete-1", 1).await;
    create_topic(&bootstrap, "h-delete-2", 1).await;
    let flow = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer<CountAssigns> = client_config(&bootstrap)
            .set("group.id", "h-delete-topic")
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("topic.metadata.refresh.interval.ms", "3000")
            .set("session.timeout.ms", "15000")
            .set("auto.offset.reset", "earliest")
            .create_with_context(CountAssigns::default())
            .unwrap();
        consumer.subscribe(&["h-delete-1", "h-delete-2"]).unwrap();
        let admin: AdminClient<DefaultClientContext> = client_config(&bootstrap).create().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let topics = |c: &BaseConsumer<CountAssigns>| {
            let assignment = c.assignment().unwrap();
            let mut topics: Vec<String> = assignment
                .elements()
                .iter()
                .map(|e| e.topic().to_string())
                .collect();
            topics.sort();
            topics
        };
        let started = std::time::Instant::now();
        let mut deleted = false;
        loop {
            assert!(
                started.elapsed() < Duration::from_secs(40),
                "the assignment never settled: {:?}",
                topics(&consumer)
            );
            if let Some(Err(e)) = consumer.poll(Duration::from_millis(500)) {
                // The deleted topic's partition reports it is gone.
                assert!(
                    matches!(
                        e,
                        KafkaError::MessageConsumption(
                            RDKafkaErrorCode::UnknownTopicOrPartition
                                | RDKafkaErrorCode::UnknownPartition
                        )
                    ),
                    "{e:?}"
                );
            }
            let assigned = topics(&consumer);
            if assigned.len() == 2 && !deleted {
                assert_eq!(consumer.context().0.load(Ordering::SeqCst), 1);
                let results = runtime
                    .block_on(admin.delete_topics(&["h-delete-2"], &AdminOptions::new()))
                    .unwrap();
                assert!(results[0].is_ok(), "{results:?}");
                deleted = true;
            }
            if deleted && assigned == ["h-delete-1"] {
                break;
            }
        }
        // Dropping a group consumer closes it, then destroys the handle.
        drop(consumer);
    });
    tokio::time::timeout(Duration::from_secs(60), flow)
        .await
        .expect("the consumer closed and was destroyed within 60 s")
        .unwrap();
    cluster.shutdown().await;
}
