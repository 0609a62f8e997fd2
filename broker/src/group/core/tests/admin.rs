//! DeleteGroups, DescribeGroups, ListGroups, load/unload.

use super::*;

impl Shell {
    pub(super) fn delete_groups(
        &mut self,
        ids: &[&str],
        outcome: Option<i16>,
    ) -> Vec<(String, i16)> {
        let t = self.token();
        let fx = self
            .c
            .delete_groups(t, ids.iter().map(|s| s.to_string()).collect(), self.now);
        self.apply(fx);
        if let Some(p) = self.group_delete_plans.iter().position(|p| p.token == t) {
            self.group_delete_plans.remove(p);
            let fx = match outcome {
                None => self.c.complete_delete_groups(t, self.now),
                Some(e) => self.c.fail_delete_groups(t, e, self.now),
            };
            self.apply(fx);
        }
        match self.responses.remove(&t) {
            Some(Response::DeleteGroups(r)) => r
                .results
                .into_iter()
                .map(|r| (r.group_id, r.error_code))
                .collect(),
            other => panic!("no delete answer: {other:?}"),
        }
    }

    fn simple_commit(&mut self, group: &str) {
        let t = self.token();
        let fx = self
            .c
            .offset_commit(t, OffsetCommitRequest::simple(group, "t", 0, 1), self.now);
        self.apply(fx);
        let fx = self.c.complete_offset_commit(t, self.now);
        self.apply(fx);
    }
}

#[test]
fn test_classic_group_delete() {
    let mut s = Shell::new();
    // An Empty group with offsets: deleted with its offsets.
    let (ids, _) = s.stable_group("group-id", 1, protocols(&["range"]));
    s.leave("group-id", vec![leave_member(&ids[0], None)], 3);
    s.simple_commit("group-id");
    assert_eq!(
        s.delete_groups(&["group-id"], None),
        vec![("group-id".into(), 0)]
    );
    assert!(!s.c.is_resident("group-id"));
    assert!(s.c.committed_offset("group-id", "t", 0).is_none());
    assert!(s.c.list_groups(&[], &[]).is_empty());
}

#[test]
fn test_delete_groups_errors_and_offsets_only_group() {
    let mut s = Shell::new();
    s.stable_group("busy", 1, protocols(&["range"]));
    s.simple_commit("offsets-only");
    let r = s.delete_groups(&["busy", "unknown", "offsets-only"], None);
    assert_eq!(
        r,
        vec![
            ("busy".into(), code::NON_EMPTY_GROUP),
            ("unknown".into(), code::GROUP_ID_NOT_FOUND),
            ("offsets-only".into(), code::NONE),
        ]
    );
    assert!(s.c.is_resident("busy"));
    assert!(!s.c.is_resident("offsets-only"));
}

#[test]
fn test_delete_groups_failed_write_keeps_the_group() {
    let mut s = Shell::new();
    s.simple_commit("g");
    // While the delete is in flight the group is Dead: commits are refused.
    let t = s.token();
    let fx = s.c.delete_groups(t, vec!["g".into()], s.now);
    s.apply(fx);
    assert!(s.group("g").is(GroupState::Dead));
    let ct = s.token();
    let fx = s.c.offset_commit(
        ct,
        OffsetCommitRequest {
            group_id: "g".into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![],
            api_version: 8,
        },
        s.now,
    );
    assert!(fx.iter().all(|e| !matches!(e, Effect::PersistOffsets(_))));
    let fx = s.c.fail_delete_groups(t, code::KAFKA_STORAGE_ERROR, s.now);
    s.apply(fx);
    match s.responses.remove(&t) {
        Some(Response::DeleteGroups(r)) => {
            assert_eq!(r.results[0].error_code, code::NOT_COORDINATOR)
        }
        other => panic!("{other:?}"),
    }
    assert!(s.group("g").is(GroupState::Empty));
    assert!(s.c.committed_offset("g", "t", 0).is_some());
}

#[test]
fn test_describe_groups() {
    let mut s = Shell::new();
    let d = s.c.describe_groups(&["unknown".into()], 5);
    assert_eq!(d[0].group_state, "Dead");
    assert_eq!(d[0].error_code, 0);
    assert!(d[0].members.is_empty());
    assert_eq!(
        s.c.describe_groups(&["unknown".into()], 6)[0].error_code,
        code::GROUP_ID_NOT_FOUND
    );

    let (ids, _) = s.stable_group("g", 2, protocol_superset());
    let d = &s.c.describe_groups(&["g".into()], 5)[0];
    assert_eq!(
        (
            d.group_state.as_str(),
            d.protocol_type.as_str(),
            d.protocol_data.as_str()
        ),
        ("Stable", "consumer", "range")
    );
    assert_eq!(d.members.len(), 2);
    let m = d.members.iter().find(|m| m.member_id == ids[1]).unwrap();
    assert_eq!(m.client_id, "client-1");
    assert_eq!(m.client_host, "/127.0.0.1");
    assert_eq!(m.member_metadata, protocol_superset()[0].metadata);
    assert_eq!(m.member_assignment.as_ref(), b"a");

    // Not Stable: no protocol and no metadata.
    s.join(consumer_join("g", &ids[0]));
    let d = &s.c.describe_groups(&["g".into()], 5)[0];
    assert_eq!(d.group_state, "PreparingRebalance");
    assert_eq!(d.protocol_data, "");
    assert!(d.members.iter().all(|m| m.member_metadata.is_empty()));
}

#[test]
fn test_list_groups_with_filters() {
    let mut s = Shell::new();
    s.stable_group("stable", 1, protocols(&["range"]));
    s.simple_commit("offsets-only");
    let all = s.c.list_groups(&[], &[]);
    assert_eq!(
        all.iter()
            .map(|g| (
                g.group_id.as_str(),
                g.group_state.as_str(),
                g.protocol_type.as_str()
            ))
            .collect::<Vec<_>>(),
        vec![
            ("offsets-only", "Empty", ""),
            ("stable", "Stable", "consumer")
        ]
    );
    assert!(all.iter().all(|g| g.group_type == "classic"));
    let empty = s.c.list_groups(&[" EMPTY ".into()], &[]);
    assert_eq!(empty.len(), 1);
    assert_eq!(empty[0].group_id, "offsets-only");
    assert_eq!(s.c.list_groups(&[], &["Classic".into()]).len(), 2);
    assert!(s.c.list_groups(&[], &["consumer".into()]).is_empty());
}

#[test]
fn test_load_group_keeps_generation_and_members_without_rebalance() {
    let mut old = Shell::new();
    let (ids, generation) = old.stable_group("g", 2, protocols(&["range"]));
    let record = old.persisted.last().unwrap().clone();
    assert_eq!(record.generation, generation);

    // A new coordinator loads the record: Stable, same generation and leader.
    let mut s = Shell::new();
    let fx = s.c.load_group(
        "g",
        Some(record),
        vec![(
            "t".into(),
            0,
            OffsetAndMetadata {
                offset: 5,
                leader_epoch: Some(1),
                metadata: String::new(),
                commit_timestamp_ms: s.now,
                expire_timestamp_ms: None,
            },
        )],
        s.now,
    );
    // Every loaded member's session timer is armed.
    for id in &ids {
        assert!(s
            .c
            .timer_deadline(&TimerKey::Heartbeat("g".into(), id.clone()))
            .is_some());
    }
    s.apply(fx);
    let g = s.group("g");
    assert!(g.is(GroupState::Stable));
    assert_eq!(g.generation_id(), generation);
    assert_eq!(g.leader(), Some(ids[0].as_str()));
    assert_eq!(g.member_ids().len(), 2);
    // Members carry on: heartbeat, sync and commit work without a rejoin.
    assert_eq!(s.heartbeat("g", &ids[1], generation, None), code::NONE);
    let t = s.sync(sync_req("g", &ids[1], generation, None, vec![]));
    assert_eq!(s.sync_resp(t).unwrap().assignment.as_ref(), b"a");
    // A follower rejoining with the single stored protocol does not rebalance.
    let t = s.join(JoinGroupRequest {
        client_id: "client-1".into(),
        ..consumer_join("g", &ids[1])
    });
    assert_eq!(s.join_resp(t).unwrap().generation_id, generation);
    assert!(s.group("g").is(GroupState::Stable));
    // Silent members expire as usual.
    s.sleep(5_000);
    assert!(!s.group("g").has_member(&ids[0]));
}

#[test]
fn test_load_group_over_max_size_rebalances() {
    let mut old = Shell::new();
    old.stable_group("g", 2, protocols(&["range"]));
    let record = old.persisted.last().unwrap().clone();
    let mut s = Shell::with_config(GroupCoordinatorConfig {
        max_group_size: 1,
        ..test_config()
    });
    let fx = s.c.load_group("g", Some(record), vec![], s.now);
    s.apply(fx);
    assert!(s.group("g").is(GroupState::PreparingRebalance));
    assert_eq!(s.group("g").num_members(), 2);
}

#[test]
fn test_unload_group_answers_parked_requests_with_not_coordinator() {
    let mut s = Shell::new();
    let (ids, generation) = s.stable_group("g", 2, protocols(&["range"]));
    let t = s.join(consumer_join("g", &ids[0]));
    assert!(s.join_resp(t).is_none());
    let heartbeat = TimerKey::Heartbeat("g".into(), ids[0].clone());
    assert!(s.c.timer_deadline(&heartbeat).is_some());
    let fx = s.c.unload_group("g", s.now);
    assert_eq!(
        s.c.timer_deadline(&heartbeat),
        None,
        "the group's timers are disarmed"
    );
    s.apply(fx);
    let r = s.join_resp(t).unwrap();
    assert_eq!(
        (r.error_code, r.member_id.as_str()),
        (code::NOT_COORDINATOR, ids[0].as_str())
    );
    assert!(s.c.resident_groups().is_empty());
    assert_eq!(s.c.next_timer_deadline(), None);
    assert_eq!(
        s.heartbeat("g", &ids[1], generation, None),
        code::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn test_shutdown_wakes_parked_sync_and_clears_everything() {
    let mut s = Shell::new();
    let req = JoinGroupRequest {
        api_version: 3,
        ..consumer_join("g", "")
    };
    let t1 = s.join(req.clone());
    let t2 = s.join(req);
    s.sleep(DELAY);
    s.sleep(DELAY);
    let b = s.join_resp(t2).unwrap();
    assert!(s.join_resp(t1).is_some());
    let st = s.sync(sync_req("g", &b.member_id, b.generation_id, None, vec![]));
    s.simple_commit("other");
    let fx = s.c.start(s.now);
    s.apply(fx);
    let fx = s.c.shutdown(s.now);
    s.apply(fx);
    assert_eq!(s.sync_resp(st).unwrap().error_code, code::NOT_COORDINATOR);
    assert!(s.c.resident_groups().is_empty());
    assert_eq!(s.c.next_timer_deadline(), None);
}

#[test]
fn test_stale_timer_firing_is_ignored() {
    let mut s = Shell::new();
    let (ids, _) = s.stable_group("g", 1, protocols(&["range"]));
    let key = TimerKey::Heartbeat("g".into(), ids[0].clone());
    // Firing before the deadline (or a cancelled key) does nothing.
    assert!(s.c.on_timer(key.clone(), s.now).is_empty());
    assert!(s
        .c
        .on_timer(TimerKey::Join("nope".into()), s.now + 1_000_000)
        .is_empty());
    assert!(s.group("g").has_member(&ids[0]));
    assert_eq!(key.to_string(), format!("heartbeat-g-{}", ids[0]));
}
