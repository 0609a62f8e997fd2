//! kill -9 of a group's coordinator: the group's metadata and offsets are on
//! the shared volume, so the new coordinator loads the group as it was. A
//! classic member goes on with the same member id and generation (no
//! rebalance) and no message is skipped; KIP-848 members caught in the
//! middle of a reconciliation finish it on the new coordinator with the
//! same epochs.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::procs::{self, PUBLISHED_WITHIN};
use common::{client_config, create_topic, eventually};
use kaas_client::KafkaClient;
use kaas_testkit::retry;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, DescribeGroupsRequest,
    FindCoordinatorRequest, GroupId, TopicName,
};
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
    coordinator_of(bootstrap_addr, GROUP).await
}

async fn coordinator_of(bootstrap_addr: &str, group: &'static str) -> i32 {
    let mut c = KafkaClient::connect(bootstrap_addr, Duration::from_secs(2))
        .await
        .unwrap();
    let r = c
        .send(
            &FindCoordinatorRequest::default().with_key(StrBytes::from_static_str(group)),
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
    let what = "the coordinator to move off the killed broker";
    let new = retry(
        Duration::from_secs(10),
        Duration::from_millis(50),
        what,
        async || match coordinator(&cluster.addr(alive)).await as usize {
            c if c != old => Ok(c),
            c => Err(format!("still {c}")),
        },
    )
    .await;

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

/// One ConsumerGroupHeartbeat of `member` at `epoch` to `addr`, owning
/// `owned` of topic `topic` (None: the field left out).
async fn consumer_heartbeat(
    addr: &str,
    member: &'static str,
    epoch: i32,
    topic: uuid::Uuid,
    owned: Option<Vec<i32>>,
) -> ConsumerGroupHeartbeatResponse {
    let mut c = KafkaClient::connect(addr, Duration::from_secs(2))
        .await
        .unwrap();
    let mut r = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(KIP848_GROUP)))
        .with_member_id(StrBytes::from_static_str(member))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(if epoch == 0 { 60_000 } else { -1 })
        .with_topic_partitions(owned.map(|ps| {
            if ps.is_empty() {
                return Vec::new();
            }
            vec![TopicPartitions::default()
                .with_topic_id(topic)
                .with_partitions(ps)]
        }));
    if epoch == 0 {
        r = r.with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_static_str(
            "moving",
        ))]));
    }
    let resp = c.send(&r, 1).await.unwrap();
    assert_eq!(
        resp.error_code, 0,
        "{member}@{epoch}: {:?}",
        resp.error_message
    );
    resp
}

const KIP848_GROUP: &str = "kip848-survivor";

fn partitions(r: &ConsumerGroupHeartbeatResponse) -> Option<Vec<i32>> {
    r.assignment.as_ref().map(|a| {
        a.topic_partitions
            .iter()
            .flat_map(|t| t.partitions.clone())
            .collect()
    })
}

/// kill -9 of the coordinator while a member is revoking: on the new
/// coordinator the members go on at the epochs they had, the revoking
/// member finishes its revocation, the new member gets what it released,
/// and nobody starts over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_protocol_members_finish_their_reconciliation_after_kill_9_of_the_coordinator() {
    let cluster = procs::start(3).await;
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, "moving", 4).await;
    let old = coordinator_of(&cluster.addr(0), KIP848_GROUP).await as usize;
    // The topic's id from the coordinator itself: a heartbeat sees topics
    // created through another broker within TOPICS_MAX_AGE (500 ms), and
    // a Metadata request naming the topic refreshes that view, so A's first
    // heartbeat below already finds the 4 partitions.
    let topic = {
        let mut c = KafkaClient::connect(&cluster.addr(old), Duration::from_secs(2))
            .await
            .unwrap();
        let m = c
            .send(
                &kafka_protocol::messages::MetadataRequest::default().with_topics(Some(vec![
                    kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_static_str("moving")))),
                ])),
                12,
            )
            .await
            .unwrap();
        m.topics[0].topic_id
    };
    let at = |id: usize| cluster.addr(id);

    // A joins alone and gets the 4 partitions.
    let a = consumer_heartbeat(&at(old), "member-a", 0, topic, Some(vec![])).await;
    assert_eq!(
        (a.member_epoch, partitions(&a)),
        (1, Some(vec![0, 1, 2, 3]))
    );
    // B joins: epoch 2, nothing yet (A holds everything).
    let b = consumer_heartbeat(&at(old), "member-b", 0, topic, Some(vec![])).await;
    assert_eq!((b.member_epoch, partitions(&b)), (2, Some(vec![])));
    // A must revoke two: it stays at epoch 1 with the two it keeps.
    let a = consumer_heartbeat(&at(old), "member-a", 1, topic, None).await;
    assert_eq!(a.member_epoch, 1);
    let kept = partitions(&a).expect("A's assignment changed");
    assert_eq!(kept.len(), 2);

    cluster.kill(old);
    cluster.wait_alive_count(2, PUBLISHED_WITHIN).await.unwrap();
    // Each broker follows the published assignment within its own poll
    // interval: wait until both survivors name the same new coordinator, so
    // the raw heartbeats below (which, unlike a client, do not retry on
    // NOT_COORDINATOR) reach a broker that knows it owns the group.
    let survivors: Vec<usize> = (0..3).filter(|i| *i != old).collect();
    let what = "the survivors to agree on a coordinator off the killed broker";
    let new = retry(
        Duration::from_secs(10),
        Duration::from_millis(50),
        what,
        async || {
            let mut named = Vec::new();
            for s in &survivors {
                named.push(coordinator_of(&at(*s), KIP848_GROUP).await as usize);
            }
            if named[0] != old && named.iter().all(|c| *c == named[0]) {
                Ok(named[0])
            } else {
                Err(format!("they name {named:?}"))
            }
        },
    )
    .await;

    // B, at its epoch on the new coordinator, still waits for A.
    let b = consumer_heartbeat(&at(new), "member-b", 2, topic, Some(vec![])).await;
    assert_eq!(b.member_epoch, 2, "{}", cluster.logs());
    // A reports it revoked: epoch 2 with what it kept, nothing taken back.
    let a = consumer_heartbeat(&at(new), "member-a", 1, topic, Some(kept.clone())).await;
    assert_eq!(a.member_epoch, 2);
    assert!(
        partitions(&a).is_none_or(|p| p == kept),
        "{:?}",
        partitions(&a)
    );
    // B gets the two A released.
    let b = consumer_heartbeat(&at(new), "member-b", 2, topic, Some(vec![])).await;
    assert_eq!(b.member_epoch, 2);
    let released = partitions(&b).expect("B's assignment changed");
    let mut all: Vec<i32> = kept.iter().chain(&released).copied().collect();
    all.sort();
    assert_eq!(all, vec![0, 1, 2, 3], "each partition owned once");
}
