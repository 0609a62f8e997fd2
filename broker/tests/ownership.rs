//! Ownership across assignment changes, on real brokers sharing a folder:
//! writing a group's first explicit entry never moves it, and every
//! assignment change drops exactly the groups a broker no longer owns.

use std::collections::BTreeSet;
use std::sync::Arc;

use kaas_broker::api::{offset_commit, RequestContext};
use kaas_broker::{Broker, BrokerConfig};
use kaas_shared::{recompute, Assignment, BrokerInfo, BrokerState, Routing};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

fn brokers(states: &[BrokerState]) -> Vec<BrokerInfo> {
    states
        .iter()
        .enumerate()
        .map(|(id, state)| BrokerInfo {
            id: id as i32,
            host: "127.0.0.1".into(),
            port: 9092 + id as u16,
            state: *state,
            listeners: Vec::new(),
        })
        .collect()
}

/// `n` brokers over one folder holding topic `t`, the topic `touch` commits to.
fn open(dir: &std::path::Path, n: usize) -> Vec<Arc<Broker>> {
    let all: Vec<Arc<Broker>> = (0..n)
        .map(|id| {
            kaas_broker::serve::open(BrokerConfig::new(
                id as i32,
                dir.into(),
                "127.0.0.1",
                9092 + id as u16,
            ))
            .unwrap()
        })
        .collect();
    all[0]
        .storage
        .topics
        .create_blocking("t", 1, Default::default(), false)
        .unwrap();
    all
}

fn apply(all: &[Arc<Broker>], a: &Assignment) {
    for b in all {
        b.apply_assignment(a.clone());
    }
}

/// Makes `group` resident on its coordinator with a committed offset, the
/// way a simple consumer does.
async fn touch(broker: &Arc<Broker>, group: &str) {
    let ctx = RequestContext {
        broker: broker.clone(),
        api_version: 8,
        client_id: "test".into(),
        client_addr: "127.0.0.1:1".parse().unwrap(),
        listener: broker.listeners[0].clone(),
        principal: kaas_broker::auth::Principal::anonymous(),
        applied: Default::default(),
    };
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.into())))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partitions(vec![
                OffsetCommitRequestPartition::default().with_committed_offset(1)
            ])]);
    let resp = offset_commit::handle(&ctx, req).await;
    assert_eq!(
        resp.topics[0].partitions[0].error_code, 0,
        "commit for {group}"
    );
}

fn resident(b: &Broker) -> BTreeSet<String> {
    b.groups
        .read(|core| core.resident_groups())
        .into_iter()
        .collect()
}

fn owner(a: &Assignment, group: &str) -> i32 {
    Routing::new(a.clone()).owner_of_group(group).unwrap()
}

#[tokio::test]
async fn the_first_explicit_entry_confirms_the_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    let all = open(dir.path(), 4);
    let groups: Vec<String> = (0..200).map(|i| format!("orders-{i}")).collect();
    let first = recompute(None, &brokers(&[BrokerState::Alive; 3]), &groups);
    assert!(
        first.consumer_groups.is_empty(),
        "no entries on the hash tier alone"
    );
    apply(&all, &first);
    for g in &groups {
        touch(&all[owner(&first, g) as usize], g).await;
    }
    // Scaling 3 -> 4 changes the divisor: active groups get entries, and each
    // entry names the broker already coordinating the group.
    let mut four = brokers(&[BrokerState::Alive; 4]);
    four[3].port = 9095;
    let scaled = recompute(Some(&first), &four, &groups);
    assert!(!scaled.consumer_groups.is_empty(), "the change needs pins");
    for e in &scaled.consumer_groups {
        assert_eq!(
            e.broker,
            owner(&first, &e.group_id),
            "entry for {} moved it",
            e.group_id
        );
    }
    apply(&all, &scaled);
    for g in &groups {
        let o = owner(&scaled, g);
        assert_eq!(o, owner(&first, g), "{g} changed coordinator");
        assert!(
            resident(&all[o as usize]).contains(g),
            "{g} was dropped by its own coordinator"
        );
    }
}

#[tokio::test]
async fn an_assignment_change_drops_exactly_the_disowned_groups() {
    let dir = tempfile::tempdir().unwrap();
    let all = open(dir.path(), 3);
    let groups: Vec<String> = (0..120).map(|i| format!("g-{i}")).collect();
    let before = recompute(None, &brokers(&[BrokerState::Alive; 3]), &groups);
    apply(&all, &before);
    for g in &groups {
        touch(&all[owner(&before, g) as usize], g).await;
    }
    let resident_before: Vec<BTreeSet<String>> = all.iter().map(|b| resident(b)).collect();
    // Broker 2 is declared dead (it is still running, with a stale view,
    // until it reads the new document; then it must let go of everything).
    let after = recompute(
        Some(&before),
        &brokers(&[BrokerState::Alive, BrokerState::Alive, BrokerState::Dead]),
        &groups,
    );
    assert!(after.version > before.version);
    apply(&all, &after);
    for (id, b) in all.iter().enumerate() {
        let kept: BTreeSet<String> = resident_before[id]
            .iter()
            .filter(|g| owner(&after, g) == id as i32)
            .cloned()
            .collect();
        assert_eq!(resident(b), kept, "broker {id} kept the wrong groups");
    }
    assert!(resident(&all[2]).is_empty());
    // Groups of brokers 0 and 1 did not move.
    for g in &groups {
        let was = owner(&before, g);
        if was != 2 {
            assert_eq!(owner(&after, g), was, "{g} moved although its broker lives");
        }
    }
}
