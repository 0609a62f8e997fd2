//! Regular-expression subscriptions: Apache's `GroupMetadataManagerTest`
//! regex cases, by name. Apache resolves in the background and writes the
//! outcome after the heartbeat; kaas resolves within it, so where Apache's
//! test runs the executor's task, the records here come with the
//! heartbeat that started the resolution.

use super::*;
use crate::group::consumer::records::ResolvedRegex;
use crate::group::consumer::regex_subscription::INVALID_REGULAR_EXPRESSION;

fn regex_member(
    id: &str,
    epoch: i32,
    regex: &str,
    assigned: MemberAssignment,
) -> ConsumerGroupMember {
    let mut m = stable_member(id, (epoch, epoch - 1), &[], assigned);
    m.metadata.subscribed_topic_regex = Some(regex.into());
    m
}

fn join_regex(member_id: &str, regex: &str) -> HeartbeatRequest {
    HeartbeatRequest {
        subscribed_topic_names: None,
        subscribed_topic_regex: Some(regex.into()),
        ..join(member_id, &[])
    }
}

fn resolved(topics: &[&str], version: i64, timestamp_ms: i64) -> ResolvedRegex {
    ResolvedRegex {
        topics: topics.iter().map(|t| t.to_string()).collect(),
        version,
        timestamp_ms,
    }
}

fn regex_record(regex: &str, r: ResolvedRegex) -> ConsumerGroupRecord {
    ConsumerGroupRecord::RegularExpression {
        regex: regex.into(),
        resolved: r,
    }
}

fn tombstone(regex: &str) -> ConsumerGroupRecord {
    ConsumerGroupRecord::RegularExpressionTombstone {
        regex: regex.into(),
    }
}

/// A group at epoch 10 whose one member subscribes with `foo*`, resolved
/// at time 0 to foo, and owns all of foo.
fn one_member_on_foo_star(c: &mut Context, foo: Uuid) {
    let owns = assignment(&[(foo, &[0, 1, 2, 3, 4, 5])]);
    c.with_group(10, vec![regex_member("member-1", 10, "foo*", owns)], 10);
    c.with_resolved("foo*", resolved(&["foo"], 0, 0));
}

impl Context {
    /// `regex` resolved to `topics`, and the group's metadata with them.
    fn with_resolved(&mut self, regex: &str, r: ResolvedRegex) {
        let mut metadata = self.group().subscription_metadata().clone();
        for t in &r.topics {
            metadata.insert(t.clone(), self.topics[t].clone());
        }
        self.replay(regex_record(regex, r));
        self.replay(ConsumerGroupRecord::SubscriptionMetadata { topics: metadata });
    }

    fn metadata_of(&self, names: &[&str]) -> BTreeMap<String, TopicMetadata> {
        names
            .iter()
            .map(|n| (n.to_string(), self.topics[*n].clone()))
            .collect()
    }

    /// The topics the assignor was last told `member_id` subscribes to.
    fn assignor_saw(&self, member_id: &str) -> std::collections::BTreeSet<Uuid> {
        let calls = self.assignor().called_with.lock().unwrap();
        let spec = calls.last().expect("the assignor ran");
        spec.members[member_id].subscribed_topic_ids.clone()
    }
}

#[test]
fn test_consumer_heartbeat_regex_validation() {
    let mut c = Context::new();
    let invalid = |regex: &str, reason: &str| {
        (
            INVALID_REGULAR_EXPRESSION,
            format!("SubscribedTopicRegex `{regex}` is not a valid regular expression: {reason}."),
        )
    };
    assert_eq!(
        err(c.heartbeat(join_regex("member", "["))),
        invalid("[", "unclosed character class")
    );
    assert!(c.group.is_none(), "nothing was written");
    let joined = c.heartbeat(join_regex("member", ".*")).unwrap();
    assert_eq!(joined.response.member_epoch, 1);
    let update = |regex: &str| HeartbeatRequest {
        subscribed_topic_regex: Some(regex.into()),
        ..request("member", 1)
    };
    assert_eq!(
        err(c.heartbeat(update("["))),
        invalid("[", "unclosed character class")
    );
    let names = c
        .heartbeat(HeartbeatRequest {
            subscribed_topic_names: Some(vec!["foo".into()]),
            ..request("member", 1)
        })
        .unwrap();
    assert_eq!(names.response.member_epoch, 2);
}

#[test]
fn test_consumer_group_member_picks_up_existing_resolved_regular_expression() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    one_member_on_foo_star(&mut c, foo);
    c.now_ms = 1_000;
    let result = c.heartbeat(join_regex("member-2", "foo*")).unwrap();
    // Already resolved: the group epoch moves at once.
    assert_eq!(result.response.member_epoch, 11);
    assert_eq!(c.assignor_saw("member-1"), [foo].into());
    assert_eq!(c.assignor_saw("member-2"), [foo].into());
    assert!(
        !result
            .records
            .iter()
            .any(|r| matches!(r, ConsumerGroupRecord::RegularExpression { .. })),
        "resolved 1 s ago: not again"
    );
    assert_eq!(c.group().num_regex_subscribers("foo*"), 2);
    assert!(c.group().is_subscribed_to_topic("foo"));
}

#[test]
fn test_consumer_group_member_joins_with_new_regex() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    c.add_topic("bar", 3);
    c.with_group(
        10,
        vec![stable_member(
            "member-1",
            (10, 9),
            &["foo"],
            assignment(&[(foo, &[0, 1, 2, 3, 4, 5])]),
        )],
        10,
    );
    c.now_ms = 12_345;
    let result = c.heartbeat(join_regex("member-2", "foo*")).unwrap();
    let member = c.group().member("member-2").unwrap().metadata.clone();
    assert_eq!(member.subscribed_topic_regex.as_deref(), Some("foo*"));
    assert_eq!(
        result.records[..3],
        [
            ConsumerGroupRecord::Member {
                member_id: "member-2".into(),
                metadata: member,
            },
            regex_record("foo*", resolved(&["foo"], 0, 12_345)),
            ConsumerGroupRecord::GroupEpoch { epoch: 11 },
        ]
    );
    assert_eq!(result.response.member_epoch, 11);
    assert_eq!(c.assignor_saw("member-2"), [foo].into());
}

#[test]
fn test_consumer_group_member_joins_with_updated_regex() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    let bar = c.add_topic("bar", 3);
    one_member_on_foo_star(&mut c, foo);
    c.now_ms = 10_001;
    let all = assignment(&[(foo, &[0, 1, 2, 3, 4, 5]), (bar, &[0, 1, 2])]);
    c.assignor()
        .prepare([("member-1".to_string(), all.clone())].into());
    let result = c
        .heartbeat(HeartbeatRequest {
            subscribed_topic_regex: Some("foo*|bar*".into()),
            ..request("member-1", 10)
        })
        .unwrap();
    let member = c.group().member("member-1").unwrap().metadata.clone();
    assert_eq!(
        result.records[..5],
        [
            ConsumerGroupRecord::Member {
                member_id: "member-1".into(),
                metadata: member,
            },
            tombstone("foo*"),
            regex_record("foo*|bar*", resolved(&["bar", "foo"], 0, 10_001)),
            ConsumerGroupRecord::SubscriptionMetadata {
                topics: c.metadata_of(&["bar", "foo"]),
            },
            ConsumerGroupRecord::GroupEpoch { epoch: 11 },
        ]
    );
    assert_eq!(result.response, response("member-1", 11, Some(all)));
    assert!(c.group().resolved_regexes().get("foo*").is_none());
}

/// A regex new to the group within 10 s of the last resolution waits for
/// the next heartbeat after them; meanwhile it matches nothing.
#[test]
fn a_new_regex_waits_for_the_minimum_refresh_interval() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    c.add_topic("bar", 3);
    one_member_on_foo_star(&mut c, foo);
    c.now_ms = 5_000;
    let result = c.heartbeat(join_regex("member-2", "bar*")).unwrap();
    assert_eq!(result.response, response("member-2", 10, Some(none())));
    assert!(c.group().resolved_regexes().get("bar*").is_none());
    c.now_ms = 10_001;
    let result = c.heartbeat(request("member-2", 10)).unwrap();
    assert!(result
        .records
        .contains(&regex_record("bar*", resolved(&["bar"], 0, 10_001))));
    assert!(result
        .records
        .contains(&regex_record("foo*", resolved(&["foo"], 0, 10_001))));
    assert_eq!(result.response.member_epoch, 11);
}

#[test]
fn test_consumer_group_member_clears_regex() {
    let mut c = Context::new();
    c.add_topic("foo", 6);
    c.with_group(10, vec![regex_member("member-1", 10, "foo*", none())], 10);
    c.with_resolved("foo*", resolved(&["foo"], 0, 0));
    c.now_ms = 1_000;
    let result = c
        .heartbeat(HeartbeatRequest {
            subscribed_topic_regex: Some(String::new()),
            ..request("member-1", 10)
        })
        .unwrap();
    let member = c.group().member("member-1").unwrap().clone();
    assert_eq!(member.metadata.subscribed_topic_regex, None);
    assert_eq!(
        result.records,
        vec![
            ConsumerGroupRecord::Member {
                member_id: "member-1".into(),
                metadata: member.metadata.clone(),
            },
            tombstone("foo*"),
            ConsumerGroupRecord::SubscriptionMetadata {
                topics: BTreeMap::new(),
            },
            ConsumerGroupRecord::GroupEpoch { epoch: 11 },
            ConsumerGroupRecord::TargetEpoch {
                assignment_epoch: 11
            },
            current("member-1", MemberState::Stable, (11, 10), none(), none()),
        ]
    );
    assert_eq!(result.response, response("member-1", 11, None));
}

#[test]
fn test_consumer_group_member_join_refreshes_expired_regexes() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    let bar = c.add_topic("bar", 3);
    c.with_group(
        10,
        vec![
            regex_member("member-1", 10, "foo*", assignment(&[(foo, &[0, 1, 2])])),
            regex_member("member-2", 10, "bar*", assignment(&[(bar, &[0, 1, 2])])),
        ],
        10,
    );
    c.with_resolved("foo*", resolved(&["foo"], 0, 0));
    c.with_resolved("bar*", resolved(&["bar"], 0, 0));
    // A topic is created: the topics' version moves.
    c.add_topic("fooo", 2);
    c.topics_version = 1;
    c.now_ms = 5_000;
    let early = c.heartbeat(request("member-1", 10)).unwrap();
    assert!(early.records.is_empty(), "within 10 s: {:?}", early.records);
    c.now_ms = 11_000;
    let result = c.heartbeat(request("member-1", 10)).unwrap();
    assert_eq!(
        result.records[..4],
        [
            regex_record("bar*", resolved(&["bar"], 1, 11_000)),
            regex_record("foo*", resolved(&["foo", "fooo"], 1, 11_000)),
            ConsumerGroupRecord::SubscriptionMetadata {
                topics: c.metadata_of(&["bar", "foo", "fooo"]),
            },
            ConsumerGroupRecord::GroupEpoch { epoch: 11 },
        ]
    );
}

/// Past `group.consumer.regex.refresh.interval.ms` the regexes are
/// resolved again though no topic changed; the same topics move nothing
/// but the records' time.
#[test]
fn regexes_are_refreshed_after_the_refresh_interval() {
    let mut c = Context::new();
    c.config.regex_refresh_interval_ms = 60_000;
    let foo = c.add_topic("foo", 6);
    one_member_on_foo_star(&mut c, foo);
    c.now_ms = 60_000;
    assert!(c
        .heartbeat(request("member-1", 10))
        .unwrap()
        .records
        .is_empty());
    c.now_ms = 60_001;
    let result = c.heartbeat(request("member-1", 10)).unwrap();
    assert_eq!(
        result.records,
        vec![regex_record("foo*", resolved(&["foo"], 0, 60_001))]
    );
    assert_eq!(result.response.member_epoch, 10);
}

#[test]
fn test_consumer_group_member_joins_with_regex_with_topic_authorization_failure() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    c.add_topic("bar", 3);
    c.undescribable.insert("bar".into());
    c.with_group(
        10,
        vec![stable_member(
            "member-1",
            (10, 9),
            &["foo"],
            assignment(&[(foo, &[0, 1, 2, 3, 4, 5])]),
        )],
        10,
    );
    c.now_ms = 10_001;
    let result = c.heartbeat(join_regex("member-2", "foo*|bar*")).unwrap();
    assert!(result
        .records
        .contains(&regex_record("foo*|bar*", resolved(&["foo"], 0, 10_001))));
    // Allowed later, seen at the next refresh.
    c.undescribable.clear();
    c.config.regex_refresh_interval_ms = 60_000;
    c.now_ms = 70_002;
    let epoch = c.group().group_epoch();
    let result = c.heartbeat(request("member-2", epoch)).unwrap();
    assert!(result.records.contains(&regex_record(
        "foo*|bar*",
        resolved(&["bar", "foo"], 0, 70_002)
    )));
    assert_eq!(c.group().group_epoch(), epoch + 1);
}

#[test]
fn test_resolved_regular_expressions_removed_when_members_leave_or_fenced() {
    let mut c = Context::new();
    let foo = c.add_topic("foo", 6);
    let bar = c.add_topic("bar", 3);
    c.with_group(
        10,
        vec![
            regex_member(
                "member-1",
                10,
                "foo*",
                assignment(&[(foo, &[0, 1, 2, 3, 4, 5])]),
            ),
            regex_member("member-2", 10, "bar*", assignment(&[(bar, &[0, 1, 2])])),
        ],
        10,
    );
    c.with_resolved("foo*", resolved(&["foo"], 0, 0));
    c.with_resolved("bar*", resolved(&["bar"], 0, 0));
    let left = c
        .heartbeat(request("member-1", LEAVE_GROUP_MEMBER_EPOCH))
        .unwrap();
    assert_eq!(
        left.records[3..],
        [
            tombstone("foo*"),
            ConsumerGroupRecord::SubscriptionMetadata {
                topics: c.metadata_of(&["bar"]),
            },
            ConsumerGroupRecord::GroupEpoch { epoch: 11 },
        ]
    );
    let fenced = on_session_timeout(c.group(), "member-2");
    assert_eq!(
        fenced[3..],
        [
            tombstone("bar*"),
            ConsumerGroupRecord::SubscriptionMetadata {
                topics: BTreeMap::new(),
            },
            ConsumerGroupRecord::GroupEpoch { epoch: 12 },
        ]
    );
    c.apply_change(fenced);
    assert!(c.group().resolved_regexes().is_empty());
    assert!(c.group().subscribed_regexes().is_empty());
}

/// Apache's `testSubscribedRegularExpressionCount` and the replay of the
/// regex records (`testReplayConsumerGroupRegularExpression*`).
#[test]
fn regex_subscriber_counts_and_records_replay() {
    let mut c = Context::new();
    c.add_topic("abc", 1);
    c.with_group(
        1,
        vec![
            regex_member("m1", 1, "abc*", none()),
            regex_member("m2", 1, "abc*", none()),
            regex_member("m3", 1, "xyz*", none()),
        ],
        1,
    );
    assert_eq!(c.group().num_regex_subscribers("abc*"), 2);
    assert_eq!(c.group().num_regex_subscribers("xyz*"), 1);
    assert_eq!(c.group().num_regex_subscribers(""), 0);
    assert!(!c.group().is_subscribed_to_topic("abc"));
    c.replay(regex_record("abc*", resolved(&["abc", "abcd"], 10, 12_345)));
    assert!(c.group().is_subscribed_to_topic("abcd"));
    assert_eq!(
        c.group().resolved_regexes()["abc*"],
        resolved(&["abc", "abcd"], 10, 12_345)
    );
    // The group rebuilt from its snapshot has the same regexes.
    let mut rebuilt = ConsumerGroup::new("fooup");
    for r in c.group().to_records() {
        rebuilt.replay(&r).unwrap();
    }
    assert_eq!(&rebuilt, c.group());
    c.replay(tombstone("abc*"));
    assert!(!c.group().is_subscribed_to_topic("abcd"));
}
