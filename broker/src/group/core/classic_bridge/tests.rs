use std::collections::BTreeMap;

use super::*;
use crate::group::consumer::group::replay_change;
use crate::group::consumer::records::TopicMetadata;
use crate::group::core::protocol::encode_subscription;

fn foo() -> TopicMetadata {
    TopicMetadata {
        id: Uuid::from_u128(1),
        name: "foo".into(),
        num_partitions: 4,
    }
}

fn topics() -> BTreeMap<String, TopicMetadata> {
    [("foo".to_string(), foo())].into()
}

fn classic_member(id: &str, partitions: Vec<i32>) -> MemberMetadataRecord {
    MemberMetadataRecord {
        member_id: id.into(),
        group_instance_id: None,
        client_id: "client".into(),
        client_host: "/10.0.0.1".into(),
        rebalance_timeout_ms: 20_000,
        session_timeout_ms: 10_000,
        subscription: encode_subscription(&["foo", "gone"]),
        // "gone" no longer exists: left out of the conversion.
        assignment: encode_assignment([("foo", partitions), ("gone", vec![0])], 1),
    }
}

fn classic_group() -> ClassicGroup {
    ClassicGroup::from_record(
        &GroupMetadataRecord {
            group_id: "g".into(),
            protocol_type: Some("consumer".into()),
            generation: 5,
            protocol: Some("range".into()),
            leader: Some("a".into()),
            current_state_timestamp_ms: None,
            members: vec![
                classic_member("a", vec![0, 1]),
                classic_member("b", vec![2, 3]),
            ],
        },
        0,
    )
}

fn converted() -> ConsumerGroup {
    let records = upgrade_records(&classic_group(), &topics()).unwrap();
    let mut group = None;
    replay_change(&mut group, "g", &records);
    group.unwrap()
}

#[test]
fn an_upgraded_member_keeps_its_partitions_stable_at_the_generation() {
    let group = converted();
    assert_eq!(
        (group.group_epoch(), group.target_assignment_epoch()),
        (5, 5)
    );
    let a = group.member("a").unwrap();
    assert_eq!(a.assignment.state, MemberState::Stable);
    assert_eq!(
        (a.member_epoch(), a.assignment.previous_member_epoch),
        (5, 5)
    );
    let mine: MemberAssignment = [(foo().id, [0, 1].into())].into();
    assert_eq!(a.assignment.assigned, mine);
    assert_eq!(group.target_assignment().get("a"), Some(&mine));
    assert_eq!(
        a.metadata.subscribed_topic_names,
        ["foo".to_string(), "gone".to_string()].into()
    );
    assert_eq!(a.classic_session_timeout_ms(), Some(10_000));
    assert_eq!(a.metadata.rebalance_timeout_ms, 20_000);
    // Each partition's epoch is its holder's.
    assert_eq!(group.current_partition_epoch(foo().id, 3), 5);
}

#[test]
fn an_unreadable_subscription_refuses_the_upgrade() {
    let mut record = classic_member("a", vec![0]);
    record.subscription = Bytes::from_static(&[0, 0, 9]);
    let group = ClassicGroup::from_record(
        &GroupMetadataRecord {
            group_id: "g".into(),
            protocol_type: Some("consumer".into()),
            generation: 1,
            protocol: Some("range".into()),
            leader: None,
            current_state_timestamp_ms: None,
            members: vec![record],
        },
        0,
    );
    assert!(upgrade_records(&group, &topics()).is_err());
}

#[test]
fn the_group_goes_back_only_when_classic_members_alone_remain() {
    let mut group = converted();
    let policy = MigrationPolicy::Bidirectional;
    // All classic: fencing one leaves classic members (Apache converts).
    assert!(downgrade_on_fence(&group, "a", policy, 10));
    assert!(!downgrade_on_fence(
        &group,
        "a",
        MigrationPolicy::Upgrade,
        10
    ));
    assert!(
        !downgrade_on_fence(&group, "a", policy, 0),
        "over group.max.size"
    );
    // A consumer-protocol member joins: fencing a classic one keeps the
    // consumer group; fencing it converts.
    let mut m = group.member("b").unwrap().clone();
    m.member_id = "m".into();
    m.metadata.classic = None;
    let mut holder = Some(group);
    replay_change(
        &mut holder,
        "g",
        &[ConsumerGroupRecord::Member {
            member_id: "m".into(),
            metadata: m.metadata.clone(),
        }],
    );
    group = holder.unwrap();
    assert!(!downgrade_on_fence(&group, "a", policy, 10));
    assert!(downgrade_on_fence(&group, "m", policy, 10));
    // Apache's `allMembersUseClassicProtocolExcept`: replacing the only
    // consumer-protocol member converts, replacing a classic one does not.
    assert!(downgrade_on_replace(&group, "m", policy, 10));
    assert!(!downgrade_on_replace(&group, "a", policy, 10));
    assert!(!downgrade_on_replace(
        &group,
        "m",
        MigrationPolicy::Upgrade,
        10
    ));
    assert!(
        !downgrade_on_replace(&group, "m", policy, 2),
        "3 members over group.max.size"
    );
    assert!(!downgrade_on_replace(&group, "unknown", policy, 10));
}

#[test]
fn a_downgraded_group_carries_the_targets_at_the_group_epoch() {
    // As after the heartbeat that upgraded it: the subscribed topics known.
    let mut holder = Some(converted());
    replay_change(
        &mut holder,
        "g",
        &[ConsumerGroupRecord::SubscriptionMetadata { topics: topics() }],
    );
    let group = holder.unwrap();
    let (tombstones, record) = downgrade(&group, Some("b"), 42);
    assert_eq!(
        tombstones.last(),
        Some(&ConsumerGroupRecord::GroupTombstone)
    );
    let mut gone = Some(group.clone());
    replay_change(&mut gone, "g", &tombstones);
    assert_eq!(gone, None, "the tombstones replay to no group");
    assert_eq!(
        (
            record.generation,
            record.protocol.as_deref(),
            record.leader.as_deref()
        ),
        (5, Some("range"), None)
    );
    assert_eq!(record.members.len(), 1);
    let a = &record.members[0];
    assert_eq!((a.member_id.as_str(), a.session_timeout_ms), ("a", 10_000));
    // Encoded at the version of the member's subscription (0 here).
    assert_eq!(consumer_protocol_version(&a.assignment), Some(0));
    let decoded = decode_assignment(&a.assignment).unwrap();
    let partitions: Vec<i32> = decoded
        .assigned_partitions
        .iter()
        .flat_map(|tp| tp.partitions.clone())
        .collect();
    assert_eq!(partitions, vec![0, 1]);
}

#[test]
fn the_protocol_all_support_that_most_prefer_is_chosen() {
    let member = |id: &str, names: &[&str]| {
        let mut m = ConsumerGroupMember::new(id);
        m.metadata.classic = Some(ClassicMemberMetadata {
            session_timeout_ms: 1,
            supported_protocols: names
                .iter()
                .map(|n| ClassicProtocol {
                    name: n.to_string(),
                    metadata: Vec::new(),
                })
                .collect(),
        });
        m
    };
    let a = member("a", &["range", "roundrobin"]);
    let b = member("b", &["roundrobin", "range"]);
    let c = member("c", &["roundrobin", "sticky"]);
    assert_eq!(select_protocol(&[&a, &b, &c]), "roundrobin");
    assert_eq!(
        select_protocol(&[&a, &b]),
        "range",
        "a tie goes to the first name"
    );
}

#[test]
fn a_group_in_its_first_rebalance_upgrades_with_its_members_subscriptions() {
    // No protocol chosen yet: each member's own (first) subscription.
    let group = ClassicGroup::from_record(
        &GroupMetadataRecord {
            group_id: "g".into(),
            protocol_type: Some("consumer".into()),
            generation: 0,
            protocol: None,
            leader: None,
            current_state_timestamp_ms: None,
            members: vec![classic_member("a", vec![])],
        },
        0,
    );
    let records = upgrade_records(&group, &topics()).unwrap();
    let mut converted = None;
    replay_change(&mut converted, "g", &records);
    let a = converted.unwrap().member("a").unwrap().clone();
    assert_eq!(
        a.metadata.subscribed_topic_names,
        ["foo".to_string(), "gone".to_string()].into()
    );
}
