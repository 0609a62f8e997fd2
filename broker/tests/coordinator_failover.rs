//! kill -9 of a group's coordinator: the group's metadata and offsets are on
//! the shared volume, so the new coordinator loads the group as it was. The
//! member goes on with the same member id and generation (no rebalance) and
//! no message is skipped.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::procs::{self, PUBLISHED_WITHIN};
use common::{client_config, create_topic, eventually};
use kaas_client::KafkaClient;
use kafka_protocol::messages::{DescribeGroupsRequest, FindCoordinatorRequest, GroupId};
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientContext;

const GROUP: &str = "survivor";
const PARTITIONS: i32 = 3;

/// Counts the assignments librdkafka receives: one per rebalance.
#[derive(Clone, Default)]
struct Rebalances(Arc<AtomicUsize>);
impl ClientContext for Rebalances {}
impl ConsumerContext for Rebalances {
    fn post_rebalance(&self, _: &BaseConsumer<Self>, r: &Rebalance<'_>) {
        if matches!(r, Rebalance::Assign(_)) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

async fn coordinator(bootstrap_addr: &str) -> i32 {
    let mut c = KafkaClient::connect(bootstrap_addr, Duration::from_secs(2))
        .await
        .unwrap();
    let r = c
        .send(
            &FindCoordinatorRequest::default().with_key(StrBytes::from_static_str(GROUP)),
            3,
        )
        .await
        .unwrap();
    assert_eq!(r.error_code, 0);
    r.node_id.0
}

/// (state, generation via member assignment presence, member ids) as the
/// coordinator describes the group.
async fn describe(addr: &str) -> (String, Vec<String>) {
    let mut c = KafkaClient::connect(addr, Duration::from_secs(2))
        .await
        .unwrap();
    let r = c
        .send(
            &DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(StrBytes::from_static_str(GROUP))]),
            5,
        )
        .await
        .unwrap();
    let g = &r.groups[0];
    assert_eq!(g.error_code, 0, "describe from {addr}");
    (
        g.group_state.to_string(),
        g.members.iter().map(|m| m.member_id.to_string()).collect(),
    )
}

async fn produce(bootstrap: &str, from: usize, to: usize) {
    let producer: FutureProducer = client_config(bootstrap)
        .set("acks", "all")
        .set("message.timeout.ms", "30000")
        .create()
        .unwrap();
    for i in from..to {
        let payload = format!("{i}");
        producer
            .send(
                FutureRecord::<(), _>::to("stream")
                    .partition((i % PARTITIONS as usize) as i32)
                    .payload(&payload),
                Duration::from_secs(30),
            )
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_survives_kill_9_of_its_coordinator_without_a_rebalance() {
    let cluster = procs::start(3).await;
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, "stream", PARTITIONS).await;
    produce(&bootstrap, 0, 300).await;

    let rebalances = Rebalances::default();
    let consumer: BaseConsumer<Rebalances> = client_config(&bootstrap)
        .set("group.id", GROUP)
        .set("session.timeout.ms", "15000")
        .set("heartbeat.interval.ms", "300")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create_with_context(rebalances.clone())
        .unwrap();
    consumer.subscribe(&["stream"]).unwrap();
    let seen: Arc<Mutex<BTreeMap<i32, BTreeSet<i64>>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let seen = seen.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(Ok(m)) = consumer.poll(Duration::from_millis(50)) {
                    seen.lock()
                        .unwrap()
                        .entry(m.partition())
                        .or_default()
                        .insert(m.offset());
                    // A commit may fail while the coordinator moves; the next one covers it.
                    let _ = consumer.commit_message(&m, CommitMode::Sync);
                }
            }
        })
    };
    let count = |seen: &Arc<Mutex<BTreeMap<i32, BTreeSet<i64>>>>| -> usize {
        seen.lock().unwrap().values().map(|s| s.len()).sum()
    };
    eventually(Duration::from_secs(30), "the first 300 messages", || {
        count(&seen) >= 300
    })
    .await;

    let old = coordinator(&cluster.addr(0)).await as usize;
    let (state, members) = describe(&cluster.addr(old)).await;
    assert_eq!(state, "Stable");
    assert_eq!(members.len(), 1);
    assert_eq!(rebalances.0.load(Ordering::SeqCst), 1);

    cluster.kill(old);
    cluster.wait_alive_count(2, PUBLISHED_WITHIN).await.unwrap();
    let alive = (0..3).find(|i| *i != old).unwrap();
    // Brokers follow the published assignment within a poll interval.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let new = loop {
        let c = coordinator(&cluster.addr(alive)).await as usize;
        if c != old {
            break c;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the coordinator never moved off the killed broker"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    produce(&cluster.addr(alive), 300, 600).await;
    eventually(
        Duration::from_secs(40),
        "all 600 messages after the move",
        || count(&seen) >= 600,
    )
    .await;

    // Same member, same generation: the new coordinator loaded the group
    // Stable from its log and the member never had to rejoin.
    let (state, members_after) = describe(&cluster.addr(new)).await;
    assert_eq!(state, "Stable", "{}", cluster.logs());
    assert_eq!(members_after, members, "the member id survives the move");
    assert_eq!(
        rebalances.0.load(Ordering::SeqCst),
        1,
        "no rebalance happened"
    );

    stop.store(true, Ordering::Relaxed);
    tokio::task::block_in_place(|| worker.join().unwrap());
    // No message skipped: every offset of every partition was seen.
    let seen = seen.lock().unwrap();
    for (p, offsets) in seen.iter() {
        let max = *offsets.iter().max().unwrap();
        assert_eq!(offsets.len() as i64, max + 1, "partition {p} has a gap");
    }
    assert_eq!(count_all(&seen), 600);
}

fn count_all(seen: &BTreeMap<i32, BTreeSet<i64>>) -> usize {
    seen.values().map(|s| s.len()).sum()
}
