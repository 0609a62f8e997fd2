//! OffsetCommit / OffsetFetch / OffsetDelete / retention
//! (Apache OffsetMetadataManagerTest).

use super::*;

fn commit_req(
    group: &str,
    member: &str,
    generation: i32,
    topic: &str,
    partition: i32,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest {
        generation_id: generation,
        member_id: member.into(),
        ..OffsetCommitRequest::simple(group, topic, partition, offset)
    }
}

impl Shell {
    fn commit(&mut self, req: OffsetCommitRequest) -> RequestToken {
        let t = self.token();
        let fx = self.c.offset_commit(t, req, self.now);
        self.apply(fx);
        t
    }

    /// Commits and makes the write durable.
    fn commit_durable(&mut self, req: OffsetCommitRequest) -> OffsetCommitResponse {
        let t = self.commit(req);
        if let Some(p) = self.commit_plans.iter().position(|p| p.token == t) {
            self.commit_plans.remove(p);
            let fx = self.c.complete_offset_commit(t, self.now);
            self.apply(fx);
        }
        self.commit_resp(t).expect("commit answered")
    }

    fn commit_error(&mut self, req: OffsetCommitRequest) -> i16 {
        let t = self.commit(req);
        let r = self.commit_resp(t).expect("answered at once");
        r.topics[0].partitions[0].error_code
    }

    fn fetch(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
        require_stable: bool,
    ) -> OffsetFetchPartition {
        let r = self.c.offset_fetch(&OffsetFetchRequest {
            group_id: group.into(),
            topics: Some(vec![(topic.into(), vec![partition])]),
            require_stable,
            ..OffsetFetchRequest::admin()
        });
        r.topics[0].partitions[0].clone()
    }

    pub(super) fn delete_offsets(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> OffsetDeleteResponse {
        let t = self.token();
        let fx = self.c.offset_delete(
            t,
            OffsetDeleteRequest {
                group_id: group.into(),
                topics: vec![(topic.into(), vec![partition])],
            },
            self.now,
        );
        self.apply(fx);
        if let Some(p) = self.offset_delete_plans.iter().position(|p| p.token == t) {
            self.offset_delete_plans.remove(p);
            let fx = self.c.complete_offset_delete(t, self.now);
            self.apply(fx);
        }
        match self.responses.remove(&t) {
            Some(Response::OffsetDelete(r)) => r,
            other => panic!("no delete answer: {other:?}"),
        }
    }
}

#[test]
fn test_generic_group_offset_commit_with_illegal_generation() {
    let mut s = Shell::new();
    let (ids, generation) = s.stable_group("foo", 1, protocols(&["range"]));
    assert_eq!(generation, 1);
    assert_eq!(
        s.commit_error(commit_req("foo", &ids[0], 10, "bar", 0, 100)),
        code::ILLEGAL_GENERATION
    );
}

#[test]
fn test_generic_group_offset_commit_member_checks() {
    let mut s = Shell::new();
    let (_, _, leader_generation) =
        s.static_members_join_and_rebalance("foo", "new-instance-id", "other", 10_000, 30_000);
    let leader = s
        .group("foo")
        .static_member_id("new-instance-id")
        .unwrap()
        .to_string();
    // Unknown member, then an instance id mapped to another member id.
    assert_eq!(
        s.commit_error(commit_req("foo", "member", 10, "bar", 0, 100)),
        code::UNKNOWN_MEMBER_ID
    );
    let fenced = OffsetCommitRequest {
        group_instance_id: Some("new-instance-id".into()),
        ..commit_req("foo", "member", 10, "bar", 0, 100)
    };
    assert_eq!(s.commit_error(fenced), code::FENCED_INSTANCE_ID);
    // No member id and no generation on a non-empty group.
    assert_eq!(
        s.commit_error(commit_req("foo", "", -1, "bar", 0, 100)),
        code::UNKNOWN_MEMBER_ID
    );
    // Valid member of a generation that has not synced yet.
    s.join(JoinGroupRequest {
        group_instance_id: Some("new-instance-id".into()),
        ..join_req("foo", &leader, protocol_superset())
    });
    s.join(JoinGroupRequest {
        group_instance_id: Some("other".into()),
        ..join_req(
            "foo",
            s.group("foo").static_member_id("other").unwrap(),
            protocol_superset(),
        )
    });
    assert!(s.group("foo").is(GroupState::CompletingRebalance));
    let r = s.commit_error(commit_req(
        "foo",
        &leader,
        leader_generation + 1,
        "bar",
        0,
        100,
    ));
    assert_eq!(r, code::REBALANCE_IN_PROGRESS);
}

#[test]
fn test_simple_group_offset_commit() {
    let mut s = Shell::new();
    let t = s.commit(OffsetCommitRequest {
        group_instance_id: Some("instance-id".into()), // ignored for simple commits
        ..commit_req("foo", "", -1, "bar", 0, 100)
    });
    assert!(
        s.commit_resp(t).is_none(),
        "not acknowledged before it is durable"
    );
    let plan = s.commit_plans.pop().unwrap();
    assert_eq!(plan.offsets.len(), 1);
    let (topic, partition, o) = &plan.offsets[0];
    assert_eq!((&**topic, *partition, o.offset), ("bar", 0, 100));
    assert_eq!(o.leader_epoch, None);
    assert_eq!(o.metadata, "");
    assert_eq!(o.commit_timestamp_ms, s.now);
    assert_eq!(o.expire_timestamp_ms, None);
    let fx = s.c.complete_offset_commit(t, s.now);
    s.apply(fx);
    assert_eq!(
        s.commit_resp(t).unwrap().topics[0].partitions[0].error_code,
        code::NONE
    );
    // A simple (Empty, protocol-less) group now exists.
    let g = s.group("foo");
    assert!(g.is(GroupState::Empty));
    assert_eq!(g.protocol_type(), None);
    assert_eq!(s.fetch("foo", "bar", 0, false).offset, 100);
}

#[test]
fn test_offset_commit_to_missing_group_with_generation() {
    let mut s = Shell::new();
    assert_eq!(
        s.commit_error(commit_req("foo", "m", 1, "bar", 0, 1)),
        code::ILLEGAL_GENERATION
    );
    let v9 = OffsetCommitRequest {
        api_version: 9,
        ..commit_req("foo", "m", 1, "bar", 0, 1)
    };
    assert_eq!(s.commit_error(v9), code::GROUP_ID_NOT_FOUND);
    assert!(!s.c.is_resident("foo"));
}

#[test]
fn test_offset_commit_keeps_leader_epoch_metadata_and_retention() {
    let mut s = Shell::new();
    let mut req = commit_req("foo", "", -1, "bar", 0, 7);
    req.retention_time_ms = 1234;
    req.topics[0].partitions[0].leader_epoch = 3;
    req.topics[0].partitions[0].metadata = Some("meta".into());
    req.topics[0].partitions.push(OffsetCommitPartition {
        partition: 1,
        offset: 8,
        leader_epoch: -1,
        metadata: Some("x".repeat(4097)),
    });
    let r = s.commit_durable(req);
    let codes: Vec<i16> = r.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![code::NONE, code::OFFSET_METADATA_TOO_LARGE]);
    let stored = s.c.committed_offset("foo", "bar", 0).unwrap();
    assert_eq!(stored.expire_timestamp_ms, Some(s.now + 1234));
    let f = s.fetch("foo", "bar", 0, false);
    assert_eq!(
        (f.offset, f.leader_epoch, f.metadata.as_str()),
        (7, 3, "meta")
    );
    assert!(s.c.committed_offset("foo", "bar", 1).is_none());
}

#[test]
fn test_offset_commit_failed_write_is_reported_as_error() {
    let mut s = Shell::new();
    let t = s.commit(commit_req("foo", "", -1, "bar", 0, 100));
    let fx = s.c.fail_offset_commit(t, code::KAFKA_STORAGE_ERROR, s.now);
    s.apply(fx);
    let r = s.commit_resp(t).unwrap();
    assert_eq!(r.topics[0].partitions[0].error_code, code::NOT_COORDINATOR);
    assert!(s.c.committed_offset("foo", "bar", 0).is_none());
    let t = s.commit(commit_req("foo", "", -1, "bar", 0, 100));
    let fx = s.c.fail_offset_commit(t, code::UNKNOWN_SERVER_ERROR, s.now);
    s.apply(fx);
    assert_eq!(
        s.commit_resp(t).unwrap().topics[0].partitions[0].error_code,
        code::UNKNOWN_SERVER_ERROR
    );
}

#[test]
fn test_offset_commit_maintains_session() {
    let mut s = Shell::new();
    let (ids, generation) = s.stable_group("foo", 1, protocols(&["range"]));
    s.sleep(2500);
    s.commit_durable(commit_req("foo", &ids[0], generation, "bar", 0, 1));
    s.sleep(2500);
    assert!(s.group("foo").has_member(&ids[0]));
    s.sleep(2500);
    assert!(!s.group("foo").has_member(&ids[0]));
}

#[test]
fn test_offset_fetch_require_stable() {
    let mut s = Shell::new();
    s.commit_durable(commit_req("foo", "", -1, "bar", 0, 100));
    let t = s.commit(commit_req("foo", "", -1, "bar", 0, 200));
    // In flight: a stable read must wait; a plain read sees the durable value.
    assert_eq!(
        s.fetch("foo", "bar", 0, true).error_code,
        code::UNSTABLE_OFFSET_COMMIT
    );
    assert_eq!(s.fetch("foo", "bar", 0, false).offset, 100);
    let fx = s.c.complete_offset_commit(t, s.now);
    s.apply(fx);
    let f = s.fetch("foo", "bar", 0, true);
    assert_eq!((f.error_code, f.offset), (code::NONE, 200));
    // Unknown partitions and groups: -1, "", -1.
    let f = s.fetch("foo", "bar", 9, true);
    assert_eq!(
        (f.offset, f.leader_epoch, f.metadata.as_str()),
        (-1, -1, "")
    );
    assert_eq!(s.fetch("nope", "bar", 0, false).offset, -1);
    // Fetch-all lists every committed partition.
    let all = s.c.offset_fetch(&OffsetFetchRequest {
        group_id: "foo".into(),
        topics: None,
        require_stable: false,
        ..OffsetFetchRequest::admin()
    });
    assert_eq!(all.topics.len(), 1);
    assert_eq!(all.topics[0].partitions.len(), 1);
}

#[test]
fn test_offset_fetch_require_stable_tracks_each_commit_in_flight() {
    let mut s = Shell::new();
    s.commit_durable(commit_req("foo", "", -1, "bar", 0, 100));
    // Two commits in flight at once: partition 0 again, and partition 1's
    // first commit.
    let a = s.commit(commit_req("foo", "", -1, "bar", 0, 200));
    let b = s.commit(commit_req("foo", "", -1, "bar", 1, 50));
    let unstable = |s: &Shell, p| s.fetch("foo", "bar", p, true).error_code;
    assert_eq!(unstable(&s, 0), code::UNSTABLE_OFFSET_COMMIT);
    assert_eq!(unstable(&s, 1), code::UNSTABLE_OFFSET_COMMIT);
    assert_eq!(unstable(&s, 2), code::NONE);
    // A stable fetch of everything lists partition 1 (in flight, never
    // committed) as unstable beside the committed partition 0.
    let all = |s: &Shell| {
        s.c.offset_fetch(&OffsetFetchRequest {
            group_id: "foo".into(),
            topics: None,
            require_stable: true,
            ..OffsetFetchRequest::admin()
        })
        .topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition, p.error_code))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        all(&s),
        vec![
            (0, code::UNSTABLE_OFFSET_COMMIT),
            (1, code::UNSTABLE_OFFSET_COMMIT)
        ]
    );
    // One completes: only the other stays unstable.
    let fx = s.c.complete_offset_commit(a, s.now);
    s.apply(fx);
    assert_eq!(unstable(&s, 0), code::NONE);
    assert_eq!(unstable(&s, 1), code::UNSTABLE_OFFSET_COMMIT);
    // The other fails: nothing is in flight, and nothing was committed.
    let fx = s.c.fail_offset_commit(b, code::KAFKA_STORAGE_ERROR, s.now);
    s.apply(fx);
    assert_eq!(unstable(&s, 1), code::NONE);
    assert_eq!(all(&s), vec![(0, code::NONE)]);
    assert!(s.c.inflight.is_empty());
}

#[test]
fn test_generic_group_offset_delete_with_errors() {
    let mut s = Shell::new();
    // Consumer group subscribed to "foo" (test subscription), Stable.
    let (ids, generation) = s.stable_group("g", 1, protocols(&["range"]));
    s.commit_durable(commit_req("g", &ids[0], generation, "foo", 0, 100));
    s.commit_durable(commit_req("g", &ids[0], generation, "bar1", 0, 100));
    // Topic the group does not subscribe to: deleted.
    let r = s.delete_offsets("g", "bar1", 0);
    assert_eq!((r.error_code, r.topics[0].partitions[0].error_code), (0, 0));
    assert!(s.c.committed_offset("g", "bar1", 0).is_none());
    // Subscribed topic: refused per partition.
    let r = s.delete_offsets("g", "foo", 0);
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        code::GROUP_SUBSCRIBED_TO_TOPIC
    );
    assert!(s.c.committed_offset("g", "foo", 0).is_some());
    // Missing partition: no error.
    assert_eq!(
        s.delete_offsets("g", "bar2", 0).topics[0].partitions[0].error_code,
        0
    );
    // Unknown group.
    assert_eq!(
        s.delete_offsets("nope", "foo", 0).error_code,
        code::GROUP_ID_NOT_FOUND
    );
}

#[test]
fn test_offset_delete_non_consumer_group_with_members_is_non_empty() {
    let mut s = Shell::new();
    let req = JoinGroupRequest {
        protocol_type: "connect".into(),
        api_version: 3,
        ..consumer_join("c", "")
    };
    s.join(req);
    s.sleep(DELAY);
    assert_eq!(
        s.delete_offsets("c", "foo", 0).error_code,
        code::NON_EMPTY_GROUP
    );
}

#[test]
fn test_cleanup_expired_offsets() {
    let mut s = Shell::with_config(GroupCoordinatorConfig {
        offsets_retention_ms: 60_000,
        ..test_config()
    });
    // A Stable consumer group subscribed to firstTopic, loaded from storage.
    let member = MemberMetadataRecord {
        member_id: "m".into(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "h".into(),
        rebalance_timeout_ms: 300_000,
        session_timeout_ms: 1_800_000,
        subscription: super::super::protocol::encode_subscription(&["firstTopic"]),
        assignment: Bytes::new(),
    };
    let record = GroupMetadataRecord {
        group_id: "group-id".into(),
        protocol_type: Some("consumer".into()),
        generation: 1,
        protocol: Some("range".into()),
        leader: Some("m".into()),
        current_state_timestamp_ms: Some(s.now),
        members: vec![member],
    };
    let fx = s.c.load_group("group-id", Some(record), vec![], s.now);
    s.apply(fx);
    s.commit_durable(commit_req("group-id", "m", 1, "firstTopic", 0, 100));
    s.commit_durable(commit_req("group-id", "m", 1, "secondTopic", 0, 100));
    s.sleep(500);
    s.commit_durable(commit_req("group-id", "m", 1, "secondTopic", 1, 100));
    s.sleep(60_000 - 500);

    // firstTopic-0 is subscribed; secondTopic-0 expired; secondTopic-1 not yet.
    let (e, _) = s.c.expire_offsets(s.now);
    assert_eq!(
        e.offsets,
        vec![("group-id".into(), "secondTopic".into(), 0)]
    );
    assert!(e.removed_groups.is_empty());
    s.sleep(500);
    let (e, _) = s.c.expire_offsets(s.now);
    assert_eq!(
        e.offsets,
        vec![("group-id".into(), "secondTopic".into(), 1)]
    );

    // The member leaves: Empty groups expire retention after becoming empty,
    // then the group itself is dropped.
    s.leave("group-id", vec![leave_member("m", None)], 3);
    assert!(s.group("group-id").is(GroupState::Empty));
    s.sleep(59_999);
    assert!(s.c.expire_offsets(s.now).0.offsets.is_empty());
    s.sleep(1);
    let (e, _) = s.c.expire_offsets(s.now);
    assert_eq!(e.offsets, vec![("group-id".into(), "firstTopic".into(), 0)]);
    assert_eq!(e.removed_groups, vec!["group-id".to_string()]);
    assert!(!s.c.is_resident("group-id"));
}

#[test]
fn test_cleanup_expired_offsets_simple_group_and_explicit_expiry_via_timer() {
    let mut s = Shell::with_config(GroupCoordinatorConfig {
        offsets_retention_ms: 60_000,
        offsets_retention_check_interval_ms: 1_000,
        ..test_config()
    });
    let fx = s.c.start(s.now);
    s.apply(fx);
    let mut req = commit_req("simple", "", -1, "t", 0, 1);
    req.retention_time_ms = 5_000; // v2-v4 explicit retention wins
    s.commit_durable(req);
    s.sleep(4_000);
    assert!(s.expired.is_empty());
    s.sleep(1_000);
    assert_eq!(s.expired.len(), 1);
    assert_eq!(s.expired[0].offsets, vec![("simple".into(), "t".into(), 0)]);
    assert_eq!(s.expired[0].removed_groups, vec!["simple".to_string()]);
}

/// Apache `testConsumerGroupOffsetDelete`: a consumer group's offsets of a
/// topic it does not subscribe to are deleted, members or not.
#[test]
fn test_consumer_group_offset_delete() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(s.member_commit_to("m1", 1, 9, "bar"), code::NONE);
    assert!(!s
        .c
        .consumer_group("g")
        .unwrap()
        .is_subscribed_to_topic("bar"));
    let r = s.delete_offsets("g", "bar", 0);
    assert_eq!(r.error_code, code::NONE);
    assert_eq!(r.topics[0].partitions[0].error_code, code::NONE);
    assert_eq!(s.c.committed_offset("g", "bar", 0), None);
}

/// Apache `testConsumerGroupOffsetDeleteWithErrors`.
#[test]
fn test_consumer_group_offset_delete_with_errors() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(s.member_commit_to("m1", 1, 9, "foo"), code::NONE);
    // The offset of a partition that does not exist.
    let r = s.delete_offsets("g", "bar1", 0);
    assert_eq!(r.topics[0].partitions[0].error_code, code::NONE);
    // The offset of a topic the group subscribes to.
    let r = s.delete_offsets("g", "foo", 0);
    assert_eq!(r.error_code, code::NONE);
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        code::GROUP_SUBSCRIBED_TO_TOPIC
    );
    assert_eq!(
        s.c.committed_offset("g", "foo", 0).map(|o| o.offset),
        Some(42)
    );
    // Once its last member is gone, nothing is subscribed.
    s.sleep(s.c.config().consumer.session_timeout_ms as u64);
    s.finish_consumer_write(Ok(()));
    let r = s.delete_offsets("g", "foo", 0);
    assert_eq!(r.topics[0].partitions[0].error_code, code::NONE);
    assert_eq!(s.c.committed_offset("g", "foo", 0), None);
    assert!(s.c.consumer_group("g").is_some(), "the group stays");
    // An unknown group.
    assert_eq!(
        s.delete_offsets("unknown", "foo", 0).error_code,
        code::GROUP_ID_NOT_FOUND
    );
}

/// Apache `testCleanupExpiredOffsets` for a consumer group: offsets count
/// from their commit; those of subscribed topics stay; the empty group
/// goes with its last offset.
#[test]
fn test_cleanup_expired_offsets_of_a_consumer_group() {
    let mut s = Shell::with_config(GroupCoordinatorConfig {
        offsets_retention_ms: 10_000,
        ..test_config()
    });
    s.stable_consumer_group();
    assert!(s.c.config().consumer.session_timeout_ms > 10_000);
    assert_eq!(s.member_commit_to("m1", 1, 9, "foo"), code::NONE);
    assert_eq!(s.member_commit_to("m1", 1, 9, "bar"), code::NONE);
    s.sleep(9_999);
    let (e, _) = s.c.expire_offsets(s.now);
    assert!(e.offsets.is_empty());
    s.sleep(1);
    let (e, _) = s.c.expire_offsets(s.now);
    assert_eq!(e.offsets, vec![("g".into(), "bar".into(), 0)]);
    assert!(e.removed_groups.is_empty(), "the group has members");

    // The member's session ends: foo-0, committed long ago, expires at
    // once and the empty group with it.
    let session_ms = s.c.config().consumer.session_timeout_ms as u64;
    s.sleep(session_ms);
    assert!(s.c.consumer_group("g").is_some());
    // The fence is not durable yet: the group waits.
    let (e, _) = s.c.expire_offsets(s.now);
    assert_eq!(e.offsets, vec![("g".into(), "foo".into(), 0)]);
    assert!(e.removed_groups.is_empty(), "a write is in flight");
    s.finish_consumer_write(Ok(()));
    let (e, _) = s.c.expire_offsets(s.now);
    assert_eq!(e.removed_groups, vec!["g".to_string()]);
    assert!(!s.c.is_resident("g"));
    // A new member starts a new group.
    let t = s.consumer_heartbeat(super::consumer::join("m2"));
    s.finish_consumer_write(Ok(()));
    assert_eq!(s.consumer_answer(t).unwrap().unwrap().member_epoch, 1);
}

/// What a coordinator exports as the lag of a group it has not loaded:
/// the log's offsets less those the retention sweep would remove were the
/// group loaded now (the rules of `test_cleanup_expired_offsets`).
#[test]
fn offsets_in_force_leave_out_what_the_sweep_would_expire() {
    const RETENTION: u64 = 60_000;
    let t0: u64 = 1_000_000;
    let offset = |offset: i64, committed: u64, expires: Option<u64>| OffsetAndMetadata {
        offset,
        leader_epoch: None,
        metadata: String::new(),
        commit_timestamp_ms: committed,
        expire_timestamp_ms: expires,
    };
    let offsets: GroupOffsets = vec![
        ("a".to_string(), 0, offset(10, t0 - 100_000, None)),
        ("b".to_string(), 0, offset(20, t0, Some(t0 + 1_000))),
    ]
    .into();
    let kept = |record: Option<&GroupMetadataRecord>, now: u64| -> Vec<(String, i32, i64)> {
        offsets_in_force("g", record, None, &offsets, RETENTION, now)
            .into_iter()
            .map(|o| (o.topic, o.partition, o.offset))
            .collect()
    };

    // An Empty consumer-protocol group: retention counts from when it
    // became empty, not from the commit; an explicit expiry wins.
    let empty = GroupMetadataRecord {
        group_id: "g".into(),
        protocol_type: Some("consumer".into()),
        generation: 3,
        protocol: None,
        leader: None,
        current_state_timestamp_ms: Some(t0),
        members: vec![],
    };
    assert_eq!(
        kept(Some(&empty), t0 + 999),
        vec![("a".into(), 0, 10), ("b".into(), 0, 20)]
    );
    assert_eq!(kept(Some(&empty), t0 + 1_000), vec![("a".into(), 0, 10)]);
    assert_eq!(
        kept(Some(&empty), t0 + RETENTION - 1),
        vec![("a".into(), 0, 10)]
    );
    assert!(kept(Some(&empty), t0 + RETENTION).is_empty());

    // Each with when it goes, for a coordinator that keeps them.
    let deadlines: Vec<Option<u64>> =
        offsets_in_force("g", Some(&empty), None, &offsets, RETENTION, t0)
            .iter()
            .map(|o| o.expires_at_ms)
            .collect();
    assert_eq!(deadlines, vec![Some(t0 + RETENTION), Some(t0 + 1_000)]);

    // A simple group (no metadata): each offset from its commit.
    assert_eq!(kept(None, t0 + 999), vec![("b".into(), 0, 20)]);
    assert!(kept(None, t0 + 1_000).is_empty());
}
