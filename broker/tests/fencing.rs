//! A second owner: two brokers sharing one folder both believe they
//! coordinate a group, because one of them still follows an older
//! assignment. The stale one must be fenced (retriable NOT_COORDINATOR),
//! the group's log must never be corrupted, and no acknowledged commit may
//! be lost. See docs/design/fencing.md.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kaas_broker::api::{offset_commit, offset_fetch, RequestContext};
use kaas_broker::storage::group_log::GroupLogStore;
use kaas_broker::{Broker, BrokerConfig};
use kaas_shared::{Assignment, BrokerInfo, GroupEntry};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, OffsetFetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

const GROUP: &str = "contested";
const NOT_COORDINATOR: i16 = 16;

fn assignment(version: u64, owner: i32) -> Assignment {
    Assignment {
        version,
        brokers: (0..2)
            .map(|id| BrokerInfo::alive(id, "127.0.0.1", 9092 + id as u16))
            .collect(),
        consumer_groups: vec![GroupEntry {
            group_id: GROUP.into(),
            broker: owner,
        }],
        ..Default::default()
    }
}

/// Two brokers over one folder holding topic `t` (2 partitions), the topic
/// the test commits to.
fn open(dir: &std::path::Path) -> [Arc<Broker>; 2] {
    let both = [0, 1].map(|id| {
        kaas_broker::serve::open(BrokerConfig::new(
            id,
            dir.into(),
            "127.0.0.1",
            9092 + id as u16,
        ))
        .unwrap()
    });
    both[0]
        .storage
        .topics
        .create_blocking("t", 2, Default::default(), false)
        .unwrap();
    both
}

fn ctx(b: &Arc<Broker>, version: i16) -> RequestContext {
    RequestContext {
        broker: b.clone(),
        api_version: version,
        client_id: "fencing".into(),
        client_addr: "127.0.0.1:1".parse().unwrap(),
        listener: b.listeners[0].clone(),
        principal: kaas_broker::auth::Principal::anonymous(),
        applied: Default::default(),
    }
}

async fn commit(b: &Arc<Broker>, partition: i32, offset: i64) -> i16 {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)])]);
    offset_commit::handle(&ctx(b, 8), req).await.topics[0].partitions[0].error_code
}

/// (group error, offset) of one partition, -1 when none is committed.
async fn fetch(b: &Arc<Broker>, partition: i32) -> (i16, i64) {
    let req = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_indexes(vec![partition])]));
    let r = offset_fetch::handle(&ctx(b, 7), req).await;
    if r.error_code != 0 {
        return (r.error_code, -1);
    }
    (0, r.topics[0].partitions[0].committed_offset)
}

/// Reads the log as a fresh coordinator would: no damage allowed.
fn on_disk(dir: &std::path::Path) -> Vec<(i32, i64)> {
    let store = GroupLogStore::new(dir).unwrap();
    let g = store.load(GROUP).unwrap().expect("the group has a log");
    assert!(g.damage.is_none(), "the log was damaged: {:?}", g.damage);
    g.offsets
        .committed()
        .map(|(_, p, o)| (p, o.offset))
        .collect()
}

/// Broker 1 follows v2 (it owns the group) while broker 0 still follows
/// v1 (it believes it owns it). Broker 0's writes are refused with the
/// retriable NOT_COORDINATOR; everything acknowledged by either is kept.
#[tokio::test]
async fn stale_owner_is_fenced_and_no_acknowledged_commit_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let [b0, b1] = open(dir.path());
    b0.apply_assignment(assignment(1, 0));
    b1.apply_assignment(assignment(1, 0));
    assert_eq!(commit(&b0, 0, 10).await, 0, "owner under v1");
    assert_eq!(
        commit(&b1, 0, 99).await,
        NOT_COORDINATOR,
        "not the owner under v1"
    );

    // v2 moves the group to broker 1; broker 0 does not see it yet.
    b1.apply_assignment(assignment(2, 1));
    assert_eq!(
        fetch(&b1, 0).await,
        (0, 10),
        "the new owner loads v1's commit"
    );
    assert_eq!(commit(&b1, 0, 20).await, 0, "new owner commits");
    // The stale owner does not answer from its memory (offset 10): the log
    // changed under it, and the new owner's claim is the newer one.
    assert_eq!(
        fetch(&b0, 0).await.0,
        NOT_COORDINATOR,
        "stale owner refuses to read"
    );
    // The stale owner still has the group in memory and believes it owns
    // it: its write must be refused, retriably.
    assert_eq!(
        commit(&b0, 0, 30).await,
        NOT_COORDINATOR,
        "stale owner fenced"
    );
    assert_eq!(
        commit(&b0, 1, 31).await,
        NOT_COORDINATOR,
        "and stays fenced"
    );
    assert_eq!(commit(&b1, 0, 21).await, 0);

    // Broker 0 catches up; nothing it refused reappears.
    b0.apply_assignment(assignment(2, 1));
    assert_eq!(commit(&b0, 0, 40).await, NOT_COORDINATOR);
    assert_eq!(fetch(&b1, 0).await, (0, 21));
    assert_eq!(fetch(&b1, 1).await, (0, -1));
    assert_eq!(on_disk(dir.path()), vec![(0, 21)]);

    // v3 moves it back: broker 0 takes over from the log, not its memory.
    b0.apply_assignment(assignment(3, 0));
    b1.apply_assignment(assignment(3, 0));
    assert_eq!(fetch(&b0, 0).await, (0, 21));
    assert_eq!(commit(&b0, 0, 50).await, 0);
    assert_eq!(commit(&b1, 0, 51).await, NOT_COORDINATOR);
    assert_eq!(on_disk(dir.path()), vec![(0, 50)]);
}

/// Both brokers commit as fast as they can while they disagree about the
/// owner (broker 0 on v1, broker 1 on v2). Each writes its own partition
/// with increasing offsets and records what was acknowledged. At the end
/// the log is intact and holds, per partition, the last acknowledged offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_racing_never_corrupt_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let [b0, b1] = open(dir.path());
    b0.apply_assignment(assignment(1, 0));
    b1.apply_assignment(assignment(1, 0));
    assert_eq!(commit(&b0, 0, 0).await, 0);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = |b: Arc<Broker>, partition: i32| {
        let stop = stop.clone();
        tokio::spawn(async move {
            let (mut acked, mut refused, mut offset) = (-1i64, 0u64, 0i64);
            while !stop.load(Ordering::Relaxed) {
                offset += 1;
                match commit(&b, partition, offset).await {
                    0 => acked = offset,
                    NOT_COORDINATOR => refused += 1,
                    e => panic!("broker {} answered {e}", b.id()),
                }
                tokio::task::yield_now().await;
            }
            (acked, refused)
        })
    };
    let w0 = writer(b0.clone(), 0);
    let w1 = writer(b1.clone(), 1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Broker 1 learns v2 mid-stream; broker 0 lags for a while.
    b1.apply_assignment(assignment(2, 1));
    tokio::time::sleep(Duration::from_millis(300)).await;
    b0.apply_assignment(assignment(2, 1));
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);
    let (acked0, refused0) = w0.await.unwrap();
    let (acked1, refused1) = w1.await.unwrap();
    eprintln!("broker 0: last ack {acked0}, {refused0} refused; broker 1: last ack {acked1}, {refused1} refused");
    assert!(acked1 > 0, "the new owner acknowledged commits");
    assert!(refused0 > 0, "the stale owner was fenced at some point");
    let want: Vec<(i32, i64)> = [(0, acked0.max(0)), (1, acked1)]
        .into_iter()
        .filter(|(_, o)| *o >= 0)
        .collect();
    assert_eq!(
        on_disk(dir.path()),
        want,
        "every acknowledged commit, intact"
    );
    let what = "broker 1 to answer group 0's last acknowledged commit";
    kaas_testkit::retry(
        Duration::from_secs(5),
        Duration::from_millis(20),
        what,
        async || match fetch(&b1, 0).await {
            got if got == (0, acked0.max(0)) => Ok(()),
            got => Err(format!("it answers {got:?}")),
        },
    )
    .await;
    assert_eq!(fetch(&b1, 1).await, (0, acked1));
}
