//! Log compaction of consumer group records. That replaying what is kept
//! builds the group replaying everything built is checked after every
//! record of Apache's heartbeat cases (`group::consumer::heartbeat::tests`).

use super::*;

fn member(id: &str) -> ConsumerGroupRecord {
    ConsumerGroupRecord::Member {
        member_id: id.into(),
        metadata: MemberSubscriptionMetadata::default(),
    }
}

fn current(id: &str, epoch: i32) -> ConsumerGroupRecord {
    ConsumerGroupRecord::CurrentAssignment {
        member_id: id.into(),
        state: 0,
        member_epoch: epoch,
        previous_member_epoch: epoch - 1,
        assigned: MemberAssignment::new(),
        pending_revocation: MemberAssignment::new(),
    }
}

fn kept(c: &CompactedRecords) -> Vec<ConsumerGroupRecord> {
    c.records().cloned().collect()
}

#[test]
fn the_last_record_of_each_key_is_kept_in_the_order_written() {
    let c: CompactedRecords = [
        member("a"),
        current("a", 1),
        ConsumerGroupRecord::GroupEpoch { epoch: 1 },
        current("a", 2),
        ConsumerGroupRecord::GroupEpoch { epoch: 2 },
    ]
    .iter()
    .collect();
    assert_eq!(
        kept(&c),
        [
            member("a"),
            current("a", 2),
            ConsumerGroupRecord::GroupEpoch { epoch: 2 }
        ]
    );
}

#[test]
fn a_members_tombstone_removes_its_three_keys() {
    let c: CompactedRecords = [
        member("a"),
        member("b"),
        ConsumerGroupRecord::TargetMember {
            member_id: "a".into(),
            partitions: MemberAssignment::new(),
        },
        current("a", 1),
        ConsumerGroupRecord::CurrentAssignmentTombstone {
            member_id: "a".into(),
        },
        ConsumerGroupRecord::TargetMemberTombstone {
            member_id: "a".into(),
        },
        ConsumerGroupRecord::MemberTombstone {
            member_id: "a".into(),
        },
    ]
    .iter()
    .collect();
    assert_eq!(kept(&c), [member("b")]);
}

#[test]
fn a_tombstone_whose_replay_is_not_absence_stays() {
    let c: CompactedRecords = [
        member("a"),
        current("a", 3),
        ConsumerGroupRecord::CurrentAssignmentTombstone {
            member_id: "a".into(),
        },
        ConsumerGroupRecord::TargetEpoch {
            assignment_epoch: 4,
        },
        ConsumerGroupRecord::TargetEpochTombstone,
    ]
    .iter()
    .collect();
    assert_eq!(
        kept(&c),
        [
            member("a"),
            ConsumerGroupRecord::CurrentAssignmentTombstone {
                member_id: "a".into()
            },
            ConsumerGroupRecord::TargetEpochTombstone,
        ]
    );
}

#[test]
fn the_groups_tombstone_clears_every_record() {
    let mut c: CompactedRecords = [
        ConsumerGroupRecord::GroupEpoch { epoch: 3 },
        ConsumerGroupRecord::RegularExpression {
            regex: "t.*".into(),
            resolved: ResolvedRegex {
                topics: Default::default(),
                version: 1,
                timestamp_ms: 1,
            },
        },
        ConsumerGroupRecord::GroupTombstone,
    ]
    .iter()
    .collect();
    assert!(c.is_empty());
    // A group made again under the same id starts from nothing.
    c.apply(&ConsumerGroupRecord::GroupEpoch { epoch: 1 });
    assert_eq!(kept(&c), [ConsumerGroupRecord::GroupEpoch { epoch: 1 }]);
}
