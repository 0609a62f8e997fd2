use super::*;
use crate::group::assignor::testing::assignment;

fn member(
    id: &str,
    epoch: i32,
    assigned: MemberAssignment,
    pending: MemberAssignment,
) -> ConsumerGroupMember {
    let mut m = ConsumerGroupMember::new(id);
    m.assignment.member_epoch = epoch;
    m.assignment.assigned = assigned;
    m.assignment.pending_revocation = pending;
    m
}

fn empty() -> MemberAssignment {
    MemberAssignment::new()
}

#[test]
fn test_update_member() {
    let mut group = ConsumerGroup::new("foo");
    let mut m = ConsumerGroupMember::new("member");
    m.metadata.subscribed_topic_names = ["foo".to_string(), "bar".to_string()].into();
    group.update_member(m.clone()).unwrap();
    assert_eq!(group.member("member"), Some(&m));
}

#[test]
fn test_no_static_member() {
    let mut group = ConsumerGroup::new("foo");
    group
        .update_member(ConsumerGroupMember::new("member"))
        .unwrap();
    assert_eq!(group.static_member("instance-id"), None);
}

#[test]
fn test_get_static_member_by_instance_id() {
    let mut group = ConsumerGroup::new("foo");
    let mut m = ConsumerGroupMember::new("member");
    m.metadata.subscribed_topic_names = ["foo".to_string(), "bar".to_string()].into();
    m.metadata.instance_id = Some("instance".into());
    group.update_member(m.clone()).unwrap();
    assert_eq!(group.static_member("instance"), Some(&m));
    assert_eq!(group.static_member_id("instance"), Some("member"));
}

#[test]
fn test_remove_member() {
    let mut group = ConsumerGroup::new("foo");
    group
        .update_member(ConsumerGroupMember::new("member"))
        .unwrap();
    assert!(group.member("member").is_some());
    group.remove_member("member").unwrap();
    assert!(group.member("member").is_none());
}

#[test]
fn test_remove_static_member() {
    let mut group = ConsumerGroup::new("foo");
    let mut m = ConsumerGroupMember::new("member");
    m.metadata.instance_id = Some("instance".into());
    group.update_member(m).unwrap();
    group.remove_member("member").unwrap();
    assert!(group.member("member").is_none());
    assert_eq!(group.static_member("instance"), None);
    assert_eq!(group.static_member_id("instance"), None);
}

#[test]
fn test_updating_member_updates_partition_epoch() {
    let (foo, bar, zar) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let mut group = ConsumerGroup::new("foo");
    let m = member(
        "member",
        10,
        assignment(&[(foo, &[1, 2, 3])]),
        assignment(&[(bar, &[4, 5, 6])]),
    );
    group.update_member(m).unwrap();
    for p in [1, 2, 3] {
        assert_eq!(group.current_partition_epoch(foo, p), 10);
    }
    for p in [4, 5, 6] {
        assert_eq!(group.current_partition_epoch(bar, p), 10);
    }
    for p in [7, 8, 9] {
        assert_eq!(group.current_partition_epoch(zar, p), -1);
    }
    let m = member(
        "member",
        11,
        assignment(&[(bar, &[1, 2, 3])]),
        assignment(&[(zar, &[4, 5, 6])]),
    );
    group.update_member(m).unwrap();
    for p in [1, 2, 3] {
        assert_eq!(group.current_partition_epoch(bar, p), 11);
    }
    for p in [4, 5, 6] {
        assert_eq!(group.current_partition_epoch(zar, p), 11);
    }
    for p in [7, 8, 9] {
        assert_eq!(group.current_partition_epoch(foo, p), -1);
    }
    // The old partitions are released.
    assert_eq!(group.current_partition_epoch(foo, 1), -1);
}

#[test]
fn test_updating_member_updates_partition_epoch_when_partition_is_reassigned_before_being_revoked()
{
    let foo = Uuid::new_v4();
    let mut group = ConsumerGroup::new("foo");
    group
        .update_member(member("member", 10, empty(), assignment(&[(foo, &[1])])))
        .unwrap();
    assert_eq!(group.current_partition_epoch(foo, 1), 10);
    group
        .update_member(member("member", 11, assignment(&[(foo, &[1])]), empty()))
        .unwrap();
    assert_eq!(group.current_partition_epoch(foo, 1), 11);
}

#[test]
fn test_updating_member_updates_partition_epoch_when_partition_is_not_released() {
    let foo = Uuid::new_v4();
    let mut group = ConsumerGroup::new("foo");
    group
        .update_member(member("m1", 10, assignment(&[(foo, &[1])]), empty()))
        .unwrap();
    // m2 cannot take foo-1: m1 still holds it; nothing changes.
    let m2 = member("m2", 10, assignment(&[(foo, &[1])]), empty());
    assert!(group.update_member(m2).is_err());
    assert!(group.member("m2").is_none());
    assert_eq!(group.current_partition_epoch(foo, 1), 10);
}

#[test]
fn test_remove_partition_epochs() {
    let foo = Uuid::new_v4();
    let mut group = ConsumerGroup::new("foo");
    // A member whose partitions are held at another epoch cannot be
    // removed (Apache: removing an epoch that is not set, or not the
    // expected one, fails).
    group
        .update_member(member("m1", 10, assignment(&[(foo, &[1])]), empty()))
        .unwrap();
    group.partition_epochs.get_mut(&foo).unwrap().insert(1, 11);
    assert!(group.remove_member("m1").is_err());
    assert!(group.member("m1").is_some());
    group.partition_epochs.clear();
    assert!(group.remove_member("m1").is_err());
}

#[test]
fn test_deleting_member_removes_partition_epoch() {
    let (foo, bar) = (Uuid::new_v4(), Uuid::new_v4());
    let mut group = ConsumerGroup::new("foo");
    group
        .update_member(member(
            "member",
            10,
            assignment(&[(foo, &[1, 2, 3])]),
            assignment(&[(bar, &[4, 5, 6])]),
        ))
        .unwrap();
    group.remove_member("member").unwrap();
    for p in 1..=9 {
        assert_eq!(group.current_partition_epoch(foo, p), -1);
        assert_eq!(group.current_partition_epoch(bar, p), -1);
    }
    assert!(group.partition_epochs.is_empty());
}

#[test]
fn test_waiting_on_unreleased_partition() {
    let (foo, bar, zar) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let mut group = ConsumerGroup::new("foo");
    group
        .replay(&ConsumerGroupRecord::TargetMember {
            member_id: "member-1".into(),
            partitions: assignment(&[(foo, &[1, 2, 3]), (zar, &[7, 8, 9])]),
        })
        .unwrap();
    let mut member1 = member(
        "member-1",
        10,
        assignment(&[(foo, &[1, 2, 3])]),
        assignment(&[(bar, &[4, 5, 6])]),
    );
    member1.assignment.state = MemberState::UnreleasedPartitions;
    group.update_member(member1.clone()).unwrap();
    assert!(!group.waiting_on_unreleased_partition(&member1));
    group
        .update_member(member("member-2", 10, empty(), assignment(&[(zar, &[7])])))
        .unwrap();
    assert!(group.waiting_on_unreleased_partition(&member1));
}

#[test]
fn test_group_state() {
    let mut group = ConsumerGroup::new("foo");
    assert_eq!(group.state(), ConsumerGroupState::Empty);
    let stable = |id: &str, epoch: i32, state: MemberState| {
        let mut m = member(id, epoch, empty(), empty());
        m.assignment.previous_member_epoch = epoch - 1;
        m.assignment.state = state;
        m
    };
    group
        .update_member(stable("member1", 1, MemberState::Stable))
        .unwrap();
    group
        .replay(&ConsumerGroupRecord::GroupEpoch { epoch: 1 })
        .unwrap();
    assert_eq!(group.state(), ConsumerGroupState::Assigning);
    group
        .update_member(stable("member2", 1, MemberState::Stable))
        .unwrap();
    group
        .replay(&ConsumerGroupRecord::GroupEpoch { epoch: 2 })
        .unwrap();
    assert_eq!(group.state(), ConsumerGroupState::Assigning);
    group
        .replay(&ConsumerGroupRecord::TargetEpoch {
            assignment_epoch: 2,
        })
        .unwrap();
    assert_eq!(group.state(), ConsumerGroupState::Reconciling);
    group
        .update_member(stable("member1", 2, MemberState::Stable))
        .unwrap();
    assert_eq!(group.state(), ConsumerGroupState::Reconciling);
    // Member 2 is not stable, so the group stays reconciling.
    group
        .update_member(stable("member2", 2, MemberState::UnrevokedPartitions))
        .unwrap();
    assert_eq!(group.state(), ConsumerGroupState::Reconciling);
    group
        .update_member(stable("member2", 2, MemberState::Stable))
        .unwrap();
    assert_eq!(group.state(), ConsumerGroupState::Stable);
    group.remove_member("member1").unwrap();
    group.remove_member("member2").unwrap();
    assert_eq!(group.state(), ConsumerGroupState::Empty);
}

#[test]
fn test_preferred_server_assignor() {
    let mut group = ConsumerGroup::new("foo");
    let with_assignor = |id: &str, name: &str| {
        let mut m = ConsumerGroupMember::new(id);
        m.metadata.server_assignor = Some(name.into());
        m
    };
    assert_eq!(group.preferred_server_assignor(), None);
    group
        .update_member(with_assignor("member1", "range"))
        .unwrap();
    group
        .update_member(with_assignor("member2", "range"))
        .unwrap();
    group
        .update_member(with_assignor("member3", "uniform"))
        .unwrap();
    assert_eq!(group.preferred_server_assignor(), Some("range"));
    group
        .update_member(with_assignor("member1", "uniform"))
        .unwrap();
    assert_eq!(group.preferred_server_assignor(), Some("uniform"));
    group.remove_member("member1").unwrap();
    group.remove_member("member3").unwrap();
    assert_eq!(group.preferred_server_assignor(), Some("range"));
}

#[test]
fn test_update_subscribed_topic_names() {
    let mut group = ConsumerGroup::new("group-foo");
    let subscribing = |id: &str, topics: &[&str]| {
        let mut m = ConsumerGroupMember::new(id);
        m.metadata.subscribed_topic_names = topics.iter().map(|t| t.to_string()).collect();
        m
    };
    group
        .update_member(subscribing("member1", &["foo"]))
        .unwrap();
    group
        .update_member(subscribing("member2", &["foo", "bar"]))
        .unwrap();
    assert_eq!(
        group.subscribed_topic_names(),
        &[("bar".to_string(), 1), ("foo".to_string(), 2)].into()
    );
    group
        .update_member(subscribing("member2", &["zar"]))
        .unwrap();
    group.remove_member("member1").unwrap();
    assert_eq!(
        group.subscribed_topic_names(),
        &[("zar".to_string(), 1)].into()
    );
}

#[test]
fn a_group_rebuilt_from_its_records_is_the_same_group() {
    let (foo, bar) = (Uuid::new_v4(), Uuid::new_v4());
    let mut group = ConsumerGroup::new("g");
    let mut m1 = member(
        "m1",
        4,
        assignment(&[(foo, &[0, 1])]),
        assignment(&[(bar, &[2])]),
    );
    m1.metadata.instance_id = Some("i1".into());
    m1.metadata.server_assignor = Some("range".into());
    m1.metadata.subscribed_topic_names = ["foo".to_string(), "bar".to_string()].into();
    m1.assignment.state = MemberState::UnrevokedPartitions;
    let m2 = member("m2", 5, assignment(&[(bar, &[0, 1])]), empty());
    group.update_member(m1).unwrap();
    group.update_member(m2).unwrap();
    for r in [
        ConsumerGroupRecord::GroupEpoch { epoch: 5 },
        ConsumerGroupRecord::SubscriptionMetadata {
            topics: [(
                "foo".to_string(),
                TopicMetadata {
                    id: foo,
                    name: "foo".into(),
                    num_partitions: 2,
                },
            )]
            .into(),
        },
        ConsumerGroupRecord::TargetMember {
            member_id: "m1".into(),
            partitions: assignment(&[(foo, &[0, 1])]),
        },
        ConsumerGroupRecord::TargetEpoch {
            assignment_epoch: 5,
        },
    ] {
        group.replay(&r).unwrap();
    }
    let mut rebuilt = ConsumerGroup::new("g");
    for r in group.to_records() {
        rebuilt.replay(&r).unwrap();
    }
    assert_eq!(rebuilt, group);
}

/// The replay path: a member leaves as Apache writes it (current
/// assignment, target, member tombstones), then the group is deleted;
/// tombstones out of that order are refused and change nothing.
#[test]
fn replaying_a_group_from_records_and_deleting_it() {
    let foo = Uuid::new_v4();
    let mut group = ConsumerGroup::new("g");
    let records = [
        ConsumerGroupRecord::Member {
            member_id: "m".into(),
            metadata: Default::default(),
        },
        ConsumerGroupRecord::GroupEpoch { epoch: 1 },
        ConsumerGroupRecord::TargetMember {
            member_id: "m".into(),
            partitions: assignment(&[(foo, &[0, 1])]),
        },
        ConsumerGroupRecord::TargetEpoch {
            assignment_epoch: 1,
        },
        ConsumerGroupRecord::CurrentAssignment {
            member_id: "m".into(),
            state: 0,
            member_epoch: 1,
            previous_member_epoch: 0,
            assigned: assignment(&[(foo, &[0, 1])]),
            pending_revocation: empty(),
        },
    ];
    for r in &records {
        assert_eq!(group.replay(r), Ok(Replayed::Applied));
    }
    assert_eq!(group.state(), ConsumerGroupState::Stable);
    assert_eq!(group.current_partition_epoch(foo, 1), 1);

    let member_tombstone = ConsumerGroupRecord::MemberTombstone {
        member_id: "m".into(),
    };
    assert!(group.replay(&member_tombstone).is_err());
    assert!(group.replay(&ConsumerGroupRecord::GroupTombstone).is_err());
    group
        .replay(&ConsumerGroupRecord::CurrentAssignmentTombstone {
            member_id: "m".into(),
        })
        .unwrap();
    assert_eq!(group.current_partition_epoch(foo, 1), -1);
    assert!(group.replay(&member_tombstone).is_err(), "target first");
    group
        .replay(&ConsumerGroupRecord::TargetMemberTombstone {
            member_id: "m".into(),
        })
        .unwrap();
    group.replay(&member_tombstone).unwrap();
    assert!(group.replay(&ConsumerGroupRecord::GroupTombstone).is_err());
    group
        .replay(&ConsumerGroupRecord::TargetEpochTombstone)
        .unwrap();
    assert_eq!(
        group.replay(&ConsumerGroupRecord::GroupTombstone),
        Ok(Replayed::GroupDeleted)
    );
}
