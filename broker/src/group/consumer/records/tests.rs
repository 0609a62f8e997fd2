use super::*;
use crate::group::assignor::testing::{assignment, TOPIC1, TOPIC2};
use crate::group::consumer::member::MemberSubscriptionMetadata;

#[test]
fn every_record_survives_json() {
    let records = vec![
        ConsumerGroupRecord::GroupEpoch { epoch: 7 },
        ConsumerGroupRecord::GroupTombstone,
        ConsumerGroupRecord::SubscriptionMetadata {
            topics: [(
                "foo".to_string(),
                TopicMetadata {
                    id: TOPIC1,
                    name: "foo".into(),
                    num_partitions: 6,
                },
            )]
            .into(),
        },
        ConsumerGroupRecord::Member {
            member_id: "m".into(),
            metadata: MemberSubscriptionMetadata {
                instance_id: Some("i".into()),
                subscribed_topic_names: ["foo".to_string()].into(),
                server_assignor: Some("range".into()),
                rebalance_timeout_ms: 45_000,
                ..Default::default()
            },
        },
        ConsumerGroupRecord::TargetMember {
            member_id: "m".into(),
            partitions: assignment(&[(TOPIC1, &[0, 1]), (TOPIC2, &[3])]),
        },
        ConsumerGroupRecord::TargetEpoch {
            assignment_epoch: 7,
        },
        ConsumerGroupRecord::CurrentAssignment {
            member_id: "m".into(),
            state: 1,
            member_epoch: 7,
            previous_member_epoch: 6,
            assigned: assignment(&[(TOPIC1, &[0])]),
            pending_revocation: assignment(&[(TOPIC2, &[3])]),
        },
        ConsumerGroupRecord::CurrentAssignmentTombstone {
            member_id: "m".into(),
        },
        ConsumerGroupRecord::RegularExpression {
            regex: "foo.*".into(),
            resolved: ResolvedRegex {
                topics: ["foo".to_string(), "foo2".to_string()].into(),
                version: 12,
                timestamp_ms: 1_700_000_000_000,
            },
        },
        ConsumerGroupRecord::RegularExpressionTombstone {
            regex: "foo.*".into(),
        },
    ];
    for record in records {
        let json = serde_json::to_string(&record).unwrap();
        let back: ConsumerGroupRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, record, "{json}");
    }
}
