//! Apache's `GroupMetadataManagerTest` consumer-group heartbeat cases, by
//! name, on an injected clock. As Apache's test context does, every
//! result's records are replayed on the group before the next request;
//! after each change (a result's records: one frame of the group's log,
//! between which snapshots are taken), the records a compacted log keeps
//! rebuild the same group (what a load after a snapshot builds).

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use super::*;
use crate::group::assignor::testing::{assignment, MockAssignor};
use crate::group::consumer::group::{replay_change, ConsumerGroupState, Replayed};
use crate::group::consumer::member::MemberSubscriptionMetadata;
use crate::group::consumer::reconcile::MemberState;
use crate::records::consumer::CompactedRecords;

const CLIENT_ID: &str = "client";
const CLIENT_HOST: &str = "/127.0.0.1";

/// Apache's `GroupMetadataManagerTestContext`, for one group.
struct Context {
    group: Option<ConsumerGroup>,
    /// Every record replayed, as the group's log compacts them.
    compacted: CompactedRecords,
    topics: BTreeMap<String, TopicMetadata>,
    /// The topics' version (Apache's metadata image version).
    topics_version: i64,
    /// Topics the heartbeating member may not describe.
    undescribable: std::collections::BTreeSet<String>,
    config: ConsumerGroupConfig,
    assignors: Vec<Box<dyn PartitionAssignor>>,
    mock: Arc<MockAssignor>,
    now_ms: u64,
}

impl Context {
    fn new() -> Context {
        let mock = Arc::new(MockAssignor::new("range"));
        Context {
            group: None,
            compacted: CompactedRecords::default(),
            topics: BTreeMap::new(),
            topics_version: 0,
            undescribable: Default::default(),
            config: ConsumerGroupConfig::default(),
            assignors: vec![Box::new(mock.clone())],
            mock,
            now_ms: 0,
        }
    }

    fn assignor(&self) -> &MockAssignor {
        &self.mock
    }

    fn add_topic(&mut self, name: &str, partitions: i32) -> Uuid {
        let id = Uuid::new_v4();
        self.topics.insert(
            name.into(),
            TopicMetadata {
                id,
                name: name.into(),
                num_partitions: partitions,
            },
        );
        id
    }

    /// Replays a change of one record.
    fn replay(&mut self, record: ConsumerGroupRecord) {
        self.apply_change(vec![record]);
    }

    /// Replays one change's records, then checks that the records its
    /// compacted log keeps build the same group.
    fn apply_change(&mut self, records: Vec<ConsumerGroupRecord>) {
        for record in &records {
            let group = self
                .group
                .get_or_insert_with(|| ConsumerGroup::new("fooup"));
            if group.replay(record).unwrap() == Replayed::GroupDeleted {
                self.group = None;
            }
            self.compacted.apply(record);
        }
        let kept: Vec<ConsumerGroupRecord> = self.compacted.records().cloned().collect();
        let mut rebuilt = None;
        replay_change(&mut rebuilt, "fooup", &kept);
        assert_eq!(
            rebuilt, self.group,
            "the compacted log rebuilds the group after {records:?}"
        );
    }

    fn heartbeat(&mut self, request: HeartbeatRequest) -> Result<HeartbeatResult, HeartbeatError> {
        let topics = TestTopics {
            topics: &self.topics,
            version: self.topics_version,
            undescribable: &self.undescribable,
        };
        let cx = super::Context {
            config: &self.config,
            timing: crate::group::consumer::config::ConsumerTiming {
                session_timeout_ms: self.config.session_timeout_ms,
                heartbeat_interval_ms: self.config.heartbeat_interval_ms,
            },
            assignors: &self.assignors,
            topics: &topics,
            now_ms: self.now_ms,
        };
        let result = heartbeat(self.group.as_ref(), &request, &cx, || "generated".into())?;
        self.apply_change(result.records.clone());
        Ok(result)
    }

    fn group(&self) -> &ConsumerGroup {
        self.group.as_ref().expect("the group exists")
    }

    fn member_state(&self, member_id: &str) -> MemberState {
        self.group().member(member_id).unwrap().assignment.state
    }

    /// Apache's `ConsumerGroupBuilder`: the group as its records build it.
    fn with_group(&mut self, epoch: i32, members: Vec<ConsumerGroupMember>, target_epoch: i32) {
        let subscribed: std::collections::BTreeSet<&String> = members
            .iter()
            .flat_map(|m| &m.metadata.subscribed_topic_names)
            .collect();
        let metadata: BTreeMap<String, TopicMetadata> = subscribed
            .into_iter()
            .filter_map(|n| self.topics.get(n).map(|t| (n.clone(), t.clone())))
            .collect();
        for m in &members {
            self.replay(ConsumerGroupRecord::Member {
                member_id: m.member_id.clone(),
                metadata: m.metadata.clone(),
            });
        }
        self.replay(ConsumerGroupRecord::GroupEpoch { epoch });
        self.replay(ConsumerGroupRecord::SubscriptionMetadata { topics: metadata });
        for m in &members {
            self.replay(ConsumerGroupRecord::TargetMember {
                member_id: m.member_id.clone(),
                partitions: m.assignment.assigned.clone(),
            });
        }
        self.replay(ConsumerGroupRecord::TargetEpoch {
            assignment_epoch: target_epoch,
        });
        for m in &members {
            self.replay(current_assignment(m));
        }
    }
}

/// The test's topics as a member sees them.
struct TestTopics<'a> {
    topics: &'a BTreeMap<String, TopicMetadata>,
    version: i64,
    undescribable: &'a std::collections::BTreeSet<String>,
}

impl TopicsView for TestTopics<'_> {
    fn topic(&self, name: &str) -> Option<TopicMetadata> {
        self.topics.get(name).cloned()
    }

    fn names_for_regex(&self) -> Vec<String> {
        let describable = |n: &&String| !self.undescribable.contains(*n);
        self.topics.keys().filter(describable).cloned().collect()
    }

    fn version(&self) -> i64 {
        self.version
    }
}

fn current_assignment(m: &ConsumerGroupMember) -> ConsumerGroupRecord {
    ConsumerGroupRecord::current_assignment(&m.member_id, &m.assignment)
}

/// A stable member as Apache's tests build them.
fn stable_member(
    id: &str,
    (epoch, previous): (i32, i32),
    topics: &[&str],
    assigned: MemberAssignment,
) -> ConsumerGroupMember {
    let mut m = ConsumerGroupMember::new(id);
    m.metadata = MemberSubscriptionMetadata {
        client_id: CLIENT_ID.into(),
        client_host: CLIENT_HOST.into(),
        subscribed_topic_names: topics.iter().map(|t| t.to_string()).collect(),
        server_assignor: Some("range".into()),
        rebalance_timeout_ms: 5000,
        ..Default::default()
    };
    m.assignment.member_epoch = epoch;
    m.assignment.previous_member_epoch = previous;
    m.assignment.assigned = assigned;
    m
}

fn request(member_id: &str, epoch: i32) -> HeartbeatRequest {
    HeartbeatRequest {
        group_id: "fooup".into(),
        member_id: member_id.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        client_id: CLIENT_ID.into(),
        client_host: CLIENT_HOST.into(),
        ..Default::default()
    }
}

fn join(member_id: &str, topics: &[&str]) -> HeartbeatRequest {
    HeartbeatRequest {
        rebalance_timeout_ms: 5000,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        server_assignor: Some("range".into()),
        owned: Some(MemberAssignment::new()),
        ..request(member_id, 0)
    }
}

fn response(
    member_id: &str,
    epoch: i32,
    assignment: Option<MemberAssignment>,
) -> HeartbeatResponse {
    HeartbeatResponse {
        member_id: member_id.into(),
        member_epoch: epoch,
        heartbeat_interval_ms: 5000,
        assignment,
    }
}

fn current(
    member_id: &str,
    state: MemberState,
    (epoch, previous): (i32, i32),
    assigned: MemberAssignment,
    pending: MemberAssignment,
) -> ConsumerGroupRecord {
    ConsumerGroupRecord::CurrentAssignment {
        member_id: member_id.into(),
        state: state.value(),
        member_epoch: epoch,
        previous_member_epoch: previous,
        assigned,
        pending_revocation: pending,
    }
}

fn none() -> MemberAssignment {
    MemberAssignment::new()
}

fn err(result: Result<HeartbeatResult, HeartbeatError>) -> (i16, String) {
    let e = result.unwrap_err();
    (e.code, e.message)
}

#[test]
fn test_consumer_heartbeat_request_validation() {
    let mut c = Context::new();
    let invalid = |m: &str| (code::INVALID_REQUEST, m.to_string());
    let base = HeartbeatRequest {
        rebalance_timeout_ms: -1,
        ..Default::default()
    };
    assert_eq!(
        err(c.heartbeat(base.clone())),
        invalid("GroupId can't be empty.")
    );
    let g = |r: HeartbeatRequest| HeartbeatRequest {
        group_id: "foo".into(),
        ..r
    };
    assert_eq!(
        err(c.heartbeat(HeartbeatRequest {
            group_id: "   ".into(),
            ..base.clone()
        })),
        invalid("GroupId can't be empty.")
    );
    assert_eq!(
        err(c.heartbeat(g(base.clone()))),
        invalid("RebalanceTimeoutMs must be provided in first request.")
    );
    let with_timeout = HeartbeatRequest {
        rebalance_timeout_ms: 5000,
        ..g(base.clone())
    };
    assert_eq!(
        err(c.heartbeat(with_timeout.clone())),
        invalid("TopicPartitions must be empty when (re-)joining.")
    );
    assert_eq!(
        err(c.heartbeat(HeartbeatRequest {
            owned: Some(none()),
            ..with_timeout.clone()
        })),
        invalid(
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
        )
    );
    let epoch1 = HeartbeatRequest {
        member_epoch: 1,
        ..g(base.clone())
    };
    assert_eq!(
        err(c.heartbeat(epoch1.clone())),
        invalid("MemberId can't be empty.")
    );
    let known = HeartbeatRequest {
        member_id: Uuid::new_v4().to_string(),
        ..epoch1
    };
    assert_eq!(
        err(c.heartbeat(HeartbeatRequest {
            instance_id: Some(String::new()),
            ..known.clone()
        })),
        invalid("InstanceId can't be empty.")
    );
    assert_eq!(
        err(c.heartbeat(HeartbeatRequest {
            rack_id: Some(String::new()),
            ..known.clone()
        })),
        invalid("RackId can't be empty.")
    );
    assert_eq!(
        err(c.heartbeat(HeartbeatRequest {
            server_assignor: Some("bar".into()),
            ..known.clone()
        })),
        (
            code::UNSUPPORTED_ASSIGNOR,
            "ServerAssignor bar is not supported. Supported assignors: range.".into()
        )
    );
    assert_eq!(
        err(c.heartbeat(HeartbeatRequest {
            member_epoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH,
            rebalance_timeout_ms: 5000,
            subscribed_topic_names: Some(vec!["foo".into(), "bar".into()]),
            owned: Some(none()),
            ..known.clone()
        })),
        invalid("InstanceId can't be null.")
    );
    assert_eq!(
        err(c.heartbeat(HeartbeatRequest {
            member_epoch: -3,
            ..known
        })),
        invalid("MemberEpoch is invalid.")
    );
}

#[test]
fn test_member_id_generation() {
    let mut c = Context::new();
    let result = c.heartbeat(join("", &["foo", "bar"])).unwrap();
    // No topic exists: an empty assignment at epoch 1.
    assert_eq!(result.response, response("generated", 1, Some(none())));
}

#[test]
fn test_unknown_group_id() {
    let mut c = Context::new();
    let r = HeartbeatRequest {
        member_epoch: 100,
        ..join(&Uuid::new_v4().to_string(), &["foo", "bar"])
    };
    assert_eq!(err(c.heartbeat(r)).0, code::GROUP_ID_NOT_FOUND);
}

#[test]
fn test_unknown_member_id_joins_consumer_group() {
    let mut c = Context::new();
    c.heartbeat(join("member-1", &["foo", "bar"])).unwrap();
    let r = HeartbeatRequest {
        member_epoch: 1,
        ..join(&Uuid::new_v4().to_string(), &["foo", "bar"])
    };
    assert_eq!(err(c.heartbeat(r)).0, code::UNKNOWN_MEMBER_ID);
}

#[test]
fn test_consumer_group_member_epoch_validation() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    let member = stable_member(
        "m",
        (100, 99),
        &["foo", "bar"],
        assignment(&[(foo, &[1, 2, 3])]),
    );
    c.with_group(100, vec![member], 100);
    let at = |epoch: i32| HeartbeatRequest {
        rebalance_timeout_ms: 5000,
        subscribed_topic_names: Some(vec!["foo".into(), "bar".into()]),
        ..request("m", epoch)
    };
    // Greater than the member's epoch.
    assert_eq!(err(c.heartbeat(at(200))).0, code::FENCED_MEMBER_EPOCH);
    // Smaller.
    assert_eq!(err(c.heartbeat(at(50))).0, code::FENCED_MEMBER_EPOCH);
    // The previous epoch without its partitions.
    assert_eq!(err(c.heartbeat(at(99))).0, code::FENCED_MEMBER_EPOCH);
    // The previous epoch with a subset of its partitions: its answer was
    // lost; it gets the current epoch back.
    let result = c
        .heartbeat(HeartbeatRequest {
            owned: Some(assignment(&[(foo, &[1, 2])])),
            ..at(99)
        })
        .unwrap();
    assert_eq!(result.response.member_epoch, 100);
}

#[test]
fn test_member_joins_empty_consumer_group() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    let bar = c.add_topic("bar", 3);
    let all = assignment(&[(foo, &[0, 1, 2, 3, 4, 5]), (bar, &[0, 1, 2])]);
    c.assignor()
        .prepare([("member".to_string(), all.clone())].into());
    assert!(c.group.is_none());
    let result = c.heartbeat(join("member", &["foo", "bar"])).unwrap();
    assert_eq!(result.response, response("member", 1, Some(all.clone())));
    let expected_member = {
        let mut m = stable_member("member", (1, 0), &["foo", "bar"], all.clone());
        m.metadata.rebalance_timeout_ms = 5000;
        m
    };
    assert_eq!(
        result.records,
        vec![
            ConsumerGroupRecord::Member {
                member_id: "member".into(),
                metadata: expected_member.metadata.clone(),
            },
            ConsumerGroupRecord::SubscriptionMetadata {
                topics: c.topics.clone(),
            },
            ConsumerGroupRecord::GroupEpoch { epoch: 1 },
            ConsumerGroupRecord::TargetMember {
                member_id: "member".into(),
                partitions: all.clone(),
            },
            ConsumerGroupRecord::TargetEpoch {
                assignment_epoch: 1
            },
            current_assignment(&expected_member),
        ]
    );
    assert_eq!(c.group().state(), ConsumerGroupState::Stable);
}

#[test]
fn test_updating_subscription_triggers_new_target_assignment() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    let bar = c.add_topic("bar", 3);
    let foo_all = assignment(&[(foo, &[0, 1, 2, 3, 4, 5])]);
    c.with_group(
        10,
        vec![stable_member("member", (10, 9), &["foo"], foo_all)],
        10,
    );
    let both = assignment(&[(foo, &[0, 1, 2, 3, 4, 5]), (bar, &[0, 1, 2])]);
    c.assignor()
        .prepare([("member".to_string(), both.clone())].into());
    let result = c
        .heartbeat(HeartbeatRequest {
            subscribed_topic_names: Some(vec!["foo".into(), "bar".into()]),
            ..request("member", 10)
        })
        .unwrap();
    assert_eq!(result.response, response("member", 11, Some(both.clone())));
    let expected_member = stable_member("member", (11, 10), &["foo", "bar"], both.clone());
    assert_eq!(
        result.records,
        vec![
            ConsumerGroupRecord::Member {
                member_id: "member".into(),
                metadata: expected_member.metadata.clone(),
            },
            ConsumerGroupRecord::SubscriptionMetadata {
                topics: c.topics.clone(),
            },
            ConsumerGroupRecord::GroupEpoch { epoch: 11 },
            ConsumerGroupRecord::TargetMember {
                member_id: "member".into(),
                partitions: both,
            },
            ConsumerGroupRecord::TargetEpoch {
                assignment_epoch: 11
            },
            current_assignment(&expected_member),
        ]
    );
}

#[test]
fn test_leaving_member_bumps_group_epoch() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    let bar = c.add_topic("bar", 3);
    let _zar = c.add_topic("zar", 1);
    c.with_group(
        10,
        vec![
            stable_member(
                "member-1",
                (10, 9),
                &["foo", "bar"],
                assignment(&[(foo, &[0, 1, 2]), (bar, &[0, 1])]),
            ),
            // zar only here, so the metadata must be recomputed.
            stable_member(
                "member-2",
                (10, 9),
                &["foo", "bar", "zar"],
                assignment(&[(foo, &[3, 4, 5]), (bar, &[2])]),
            ),
        ],
        10,
    );
    let result = c
        .heartbeat(HeartbeatRequest {
            rebalance_timeout_ms: 5000,
            subscribed_topic_names: Some(vec!["foo".into(), "bar".into()]),
            owned: Some(none()),
            ..request("member-2", LEAVE_GROUP_MEMBER_EPOCH)
        })
        .unwrap();
    assert_eq!(
        result.response,
        HeartbeatResponse {
            member_id: "member-2".into(),
            member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
            heartbeat_interval_ms: 0,
            assignment: None,
        }
    );
    let mut foo_bar = c.topics.clone();
    foo_bar.remove("zar");
    assert_eq!(
        result.records,
        vec![
            ConsumerGroupRecord::CurrentAssignmentTombstone {
                member_id: "member-2".into()
            },
            ConsumerGroupRecord::TargetMemberTombstone {
                member_id: "member-2".into()
            },
            ConsumerGroupRecord::MemberTombstone {
                member_id: "member-2".into()
            },
            ConsumerGroupRecord::SubscriptionMetadata { topics: foo_bar },
            ConsumerGroupRecord::GroupEpoch { epoch: 11 },
        ]
    );
    assert!(c.group().member("member-2").is_none());
    assert_eq!(c.group().current_partition_epoch(foo, 3), -1);
}

/// Three members, one joining: partitions move only once their owner has
/// revoked them, so none is ever held twice.
#[test]
fn test_reconciliation_process() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    let bar = c.add_topic("bar", 3);
    c.with_group(
        10,
        vec![
            stable_member(
                "member-1",
                (10, 9),
                &["foo", "bar"],
                assignment(&[(foo, &[0, 1, 2]), (bar, &[0, 1])]),
            ),
            stable_member(
                "member-2",
                (10, 9),
                &["foo", "bar"],
                assignment(&[(foo, &[3, 4, 5]), (bar, &[2])]),
            ),
        ],
        10,
    );
    c.assignor().prepare(
        [
            ("member-1", assignment(&[(foo, &[0, 1]), (bar, &[0])])),
            ("member-2", assignment(&[(foo, &[2, 3]), (bar, &[2])])),
            ("member-3", assignment(&[(foo, &[4, 5]), (bar, &[1])])),
        ]
        .into_iter()
        .map(|(m, a)| (m.to_string(), a))
        .collect(),
    );
    assert_eq!(c.group().state(), ConsumerGroupState::Stable);

    // Member 3 joins: a new target at epoch 11; it gets nothing yet (all is
    // held) and waits at epoch 11 for unreleased partitions.
    let result = c.heartbeat(join("member-3", &["foo", "bar"])).unwrap();
    assert_eq!(result.response, response("member-3", 11, Some(none())));
    assert_eq!(
        result.records.last().unwrap(),
        &current(
            "member-3",
            MemberState::UnreleasedPartitions,
            (11, 0),
            none(),
            none()
        )
    );
    assert_eq!(
        c.member_state("member-3"),
        MemberState::UnreleasedPartitions
    );
    assert_eq!(c.group().state(), ConsumerGroupState::Reconciling);

    // Member 1 stays at epoch 10 until it revokes foo-2 and bar-1.
    let result = c.heartbeat(request("member-1", 10)).unwrap();
    let m1_kept = assignment(&[(foo, &[0, 1]), (bar, &[0])]);
    assert_eq!(
        result.response,
        response("member-1", 10, Some(m1_kept.clone()))
    );
    assert_eq!(
        result.records,
        vec![current(
            "member-1",
            MemberState::UnrevokedPartitions,
            (10, 10),
            m1_kept.clone(),
            assignment(&[(foo, &[2]), (bar, &[1])]),
        )]
    );
    assert!(result.timers.contains(&TimerOp::ScheduleRebalance {
        member_id: "member-1".into(),
        member_epoch: 10,
        deadline_ms: 5000,
    }));

    // Member 2 likewise for foo-4 and foo-5.
    let result = c.heartbeat(request("member-2", 10)).unwrap();
    let m2_kept = assignment(&[(foo, &[3]), (bar, &[2])]);
    assert_eq!(
        result.response,
        response("member-2", 10, Some(m2_kept.clone()))
    );
    assert_eq!(
        result.records,
        vec![current(
            "member-2",
            MemberState::UnrevokedPartitions,
            (10, 10),
            m2_kept,
            assignment(&[(foo, &[4, 5])]),
        )]
    );

    // Member 3 still waits.
    let result = c.heartbeat(request("member-3", 11)).unwrap();
    assert_eq!(result.response, response("member-3", 11, None));
    assert_eq!(
        result.records,
        vec![current(
            "member-3",
            MemberState::UnreleasedPartitions,
            (11, 11),
            none(),
            none()
        )]
    );

    // Member 1 reports it revoked: epoch 11, stable.
    let result = c
        .heartbeat(HeartbeatRequest {
            owned: Some(m1_kept.clone()),
            ..request("member-1", 10)
        })
        .unwrap();
    assert_eq!(result.response, response("member-1", 11, None));
    assert_eq!(
        result.records,
        vec![current(
            "member-1",
            MemberState::Stable,
            (11, 10),
            m1_kept,
            none()
        )]
    );
    assert!(result.timers.contains(&TimerOp::CancelRebalance {
        member_id: "member-1".into()
    }));
    assert_eq!(c.group().state(), ConsumerGroupState::Reconciling);

    // Member 2 heartbeats without revoking: nothing changes.
    let result = c.heartbeat(request("member-2", 10)).unwrap();
    assert_eq!(result.response, response("member-2", 10, None));
    assert!(result.records.is_empty());
    assert_eq!(c.member_state("member-2"), MemberState::UnrevokedPartitions);

    // Member 3 gets bar-1 (released by member 1), still waits for foo-4/5.
    let result = c.heartbeat(request("member-3", 11)).unwrap();
    assert_eq!(
        result.response,
        response("member-3", 11, Some(assignment(&[(bar, &[1])])))
    );
    assert_eq!(
        result.records,
        vec![current(
            "member-3",
            MemberState::UnreleasedPartitions,
            (11, 11),
            assignment(&[(bar, &[1])]),
            none(),
        )]
    );
    let result = c.heartbeat(request("member-3", 11)).unwrap();
    assert_eq!(result.response, response("member-3", 11, None));
    assert!(result.records.is_empty());

    // Member 2 revokes: epoch 11 with foo-2 (released by member 1).
    let result = c
        .heartbeat(HeartbeatRequest {
            owned: Some(assignment(&[(foo, &[3]), (bar, &[2])])),
            ..request("member-2", 10)
        })
        .unwrap();
    let m2_target = assignment(&[(foo, &[2, 3]), (bar, &[2])]);
    assert_eq!(
        result.response,
        response("member-2", 11, Some(m2_target.clone()))
    );
    assert_eq!(
        result.records,
        vec![current(
            "member-2",
            MemberState::Stable,
            (11, 10),
            m2_target,
            none()
        )]
    );
    assert_eq!(c.group().state(), ConsumerGroupState::Reconciling);

    // Member 3 gets the rest and is stable: the group is stable.
    let result = c
        .heartbeat(HeartbeatRequest {
            owned: Some(assignment(&[(bar, &[1])])),
            ..request("member-3", 11)
        })
        .unwrap();
    let m3_target = assignment(&[(foo, &[4, 5]), (bar, &[1])]);
    assert_eq!(
        result.response,
        response("member-3", 11, Some(m3_target.clone()))
    );
    assert_eq!(
        result.records,
        vec![current(
            "member-3",
            MemberState::Stable,
            (11, 11),
            m3_target,
            none()
        )]
    );
    assert_eq!(c.group().state(), ConsumerGroupState::Stable);
}

#[test]
fn test_new_member_is_rejected_with_maximum_members_is_reached() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    c.config.max_size = 2;
    c.with_group(
        10,
        vec![
            stable_member(
                "member-1",
                (10, 9),
                &["foo"],
                assignment(&[(foo, &[0, 1, 2])]),
            ),
            stable_member(
                "member-2",
                (10, 9),
                &["foo"],
                assignment(&[(foo, &[3, 4, 5])]),
            ),
        ],
        10,
    );
    let (code, message) = err(c.heartbeat(join("member-3", &["foo"])));
    assert_eq!(code, code::GROUP_MAX_SIZE_REACHED);
    assert_eq!(
        message,
        "The consumer group has reached its maximum capacity of 2 members."
    );
    // A member already in the group keeps heartbeating.
    assert!(c.heartbeat(request("member-1", 10)).is_ok());
}

#[test]
fn test_should_thrown_unreleased_instance_id_exception_when_new_member_joins_with_in_use_instance_id(
) {
    let mut c = Context::new();
    c.add_topic("foo", 6);
    c.heartbeat(HeartbeatRequest {
        instance_id: Some("instance-id".into()),
        ..join("member-1", &["foo"])
    })
    .unwrap();
    let (code, _) = err(c.heartbeat(HeartbeatRequest {
        instance_id: Some("instance-id".into()),
        ..join("member-2", &["foo"])
    }));
    assert_eq!(code, code::UNRELEASED_INSTANCE_ID);
}

#[test]
fn test_should_thrown_unknown_member_id_exception_when_unknown_static_member_joins() {
    let mut c = Context::new();
    c.add_topic("foo", 6);
    c.heartbeat(HeartbeatRequest {
        instance_id: Some("instance-id".into()),
        ..join("member-1", &["foo"])
    })
    .unwrap();
    let (code, message) = err(c.heartbeat(HeartbeatRequest {
        instance_id: Some("unknown-instance-id".into()),
        ..request("member-2", 11)
    }));
    assert_eq!(code, code::UNKNOWN_MEMBER_ID);
    assert_eq!(message, "Instance id unknown-instance-id is unknown.");
}

#[test]
fn test_should_throw_fenced_instance_id_exception_when_static_member_with_different_member_id_joins(
) {
    let mut c = Context::new();
    c.add_topic("foo", 6);
    c.heartbeat(HeartbeatRequest {
        instance_id: Some("instance-id".into()),
        ..join("member-1", &["foo"])
    })
    .unwrap();
    let (code, _) = err(c.heartbeat(HeartbeatRequest {
        instance_id: Some("instance-id".into()),
        ..request("member-2", 1)
    }));
    assert_eq!(code, code::FENCED_INSTANCE_ID);
}

/// A static member leaves with epoch -2 and a new incarnation takes its
/// place, its epoch and its partitions, without a new group epoch.
#[test]
fn test_static_member_gets_back_assignment_upon_rejoin() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    let all = assignment(&[(foo, &[0, 1, 2, 3, 4, 5])]);
    c.assignor()
        .prepare([("member-1".to_string(), all.clone())].into());
    c.heartbeat(HeartbeatRequest {
        instance_id: Some("instance-1".into()),
        ..join("member-1", &["foo"])
    })
    .unwrap();
    assert_eq!(c.group().group_epoch(), 1);

    let result = c
        .heartbeat(HeartbeatRequest {
            instance_id: Some("instance-1".into()),
            ..request("member-1", LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        })
        .unwrap();
    assert_eq!(
        result.response.member_epoch,
        LEAVE_GROUP_STATIC_MEMBER_EPOCH
    );
    // Still held for the next incarnation.
    assert_eq!(
        c.group().current_partition_epoch(foo, 0),
        LEAVE_GROUP_STATIC_MEMBER_EPOCH
    );

    let result = c
        .heartbeat(HeartbeatRequest {
            instance_id: Some("instance-1".into()),
            ..join("member-1-new", &["foo"])
        })
        .unwrap();
    assert_eq!(
        result.response,
        response("member-1-new", 1, Some(all.clone()))
    );
    assert_eq!(c.group().group_epoch(), 1, "no new group epoch");
    assert!(c.group().member("member-1").is_none());
    assert_eq!(
        c.group().static_member_id("instance-1"),
        Some("member-1-new")
    );
    assert_eq!(c.group().target_assignment()["member-1-new"], all);
    assert_eq!(c.group().state(), ConsumerGroupState::Stable);
}

#[test]
fn test_session_timeout_expiration() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    c.assignor().prepare(
        [(
            "member-1".to_string(),
            assignment(&[(foo, &[0, 1, 2, 3, 4, 5])]),
        )]
        .into(),
    );
    c.now_ms = 1_000;
    let result = c.heartbeat(join("member-1", &["foo"])).unwrap();
    assert!(result.timers.contains(&TimerOp::ScheduleSession {
        member_id: "member-1".into(),
        deadline_ms: 46_000,
    }));
    // The session expires: the member is fenced and the group epoch bumps.
    let records = on_session_timeout(c.group(), "member-1");
    assert_eq!(
        records,
        vec![
            ConsumerGroupRecord::CurrentAssignmentTombstone {
                member_id: "member-1".into()
            },
            ConsumerGroupRecord::TargetMemberTombstone {
                member_id: "member-1".into()
            },
            ConsumerGroupRecord::MemberTombstone {
                member_id: "member-1".into()
            },
            ConsumerGroupRecord::SubscriptionMetadata {
                topics: BTreeMap::new()
            },
            ConsumerGroupRecord::GroupEpoch { epoch: 2 },
        ]
    );
    c.apply_change(records);
    assert_eq!(c.group().state(), ConsumerGroupState::Empty);
    assert!(on_session_timeout(c.group(), "member-1").is_empty());
}

#[test]
fn test_rebalance_timeout_expiration() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 3);
    c.with_group(
        10,
        vec![stable_member(
            "member-1",
            (10, 9),
            &["foo"],
            assignment(&[(foo, &[0, 1, 2])]),
        )],
        10,
    );
    c.assignor().prepare(
        [
            ("member-1".to_string(), assignment(&[(foo, &[0, 1])])),
            ("member-2".to_string(), assignment(&[(foo, &[2])])),
        ]
        .into(),
    );
    c.heartbeat(join("member-2", &["foo"])).unwrap();
    let result = c.heartbeat(request("member-1", 10)).unwrap();
    assert_eq!(c.member_state("member-1"), MemberState::UnrevokedPartitions);
    assert!(result.timers.contains(&TimerOp::ScheduleRebalance {
        member_id: "member-1".into(),
        member_epoch: 10,
        deadline_ms: 5_000,
    }));
    // Another epoch: the timer does nothing.
    assert!(on_rebalance_timeout(c.group(), "member-1", 9).is_empty());
    // Still at epoch 10 when it fires: fenced, its partitions released.
    let records = on_rebalance_timeout(c.group(), "member-1", 10);
    assert!(records.contains(&ConsumerGroupRecord::MemberTombstone {
        member_id: "member-1".into()
    }));
    c.apply_change(records);
    assert!(c.group().member("member-1").is_none());
    assert_eq!(c.group().current_partition_epoch(foo, 2), -1);
}

/// A topic created, grown or deleted that a member subscribes to bumps
/// the group epoch at the next heartbeat (kaas compares the subscribed
/// topics on every heartbeat; Apache on a metadata change).
#[test]
fn a_subscribed_topic_created_grown_or_deleted_bumps_the_group_epoch() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 2);
    c.assignor()
        .prepare([("member-1".to_string(), assignment(&[(foo, &[0, 1])]))].into());
    c.heartbeat(join("member-1", &["foo", "bar"])).unwrap();
    assert_eq!(c.group().group_epoch(), 1);
    let result = c.heartbeat(request("member-1", 1)).unwrap();
    assert!(result.records.is_empty(), "nothing changed");
    let bar = c.add_topic("bar", 1);
    c.assignor().prepare(
        [(
            "member-1".to_string(),
            assignment(&[(foo, &[0, 1]), (bar, &[0])]),
        )]
        .into(),
    );
    let result = c.heartbeat(request("member-1", 1)).unwrap();
    assert_eq!(result.response.member_epoch, 2);
    assert_eq!(
        result.response.assignment,
        Some(assignment(&[(foo, &[0, 1]), (bar, &[0])]))
    );
    assert_eq!(c.group().subscription_metadata().len(), 2);

    // It grows: a new epoch and its new partition assigned.
    c.topics.get_mut("bar").unwrap().num_partitions = 2;
    let grown = assignment(&[(foo, &[0, 1]), (bar, &[0, 1])]);
    c.assignor()
        .prepare([("member-1".to_string(), grown.clone())].into());
    let result = c.heartbeat(request("member-1", 2)).unwrap();
    assert_eq!(
        (result.response.member_epoch, result.response.assignment),
        (3, Some(grown))
    );
    assert_eq!(c.group().subscription_metadata()["bar"].num_partitions, 2);

    // It is deleted: a new epoch without it.
    c.topics.remove("bar");
    c.assignor()
        .prepare([("member-1".to_string(), assignment(&[(foo, &[0, 1])]))].into());
    let result = c.heartbeat(request("member-1", 3)).unwrap();
    assert_eq!(c.group().group_epoch(), 4);
    assert_eq!(
        c.group().subscription_metadata().keys().collect::<Vec<_>>(),
        vec!["foo"]
    );
    // It gives up the deleted topic's partitions, then moves on.
    assert_eq!(
        (result.response.member_epoch, result.response.assignment),
        (3, Some(assignment(&[(foo, &[0, 1])])))
    );
    let result = c
        .heartbeat(HeartbeatRequest {
            owned: Some(assignment(&[(foo, &[0, 1])])),
            ..request("member-1", 3)
        })
        .unwrap();
    assert_eq!(result.response.member_epoch, 4);
}

mod regex;
