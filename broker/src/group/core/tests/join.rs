//! JoinGroup conformance (Apache GroupMetadataManagerTest / ClassicGroupTest).

use super::*;

#[test]
fn test_join_group_unknown_member_new_group() {
    let mut s = Shell::new();
    let t = s.join(consumer_join("group-id", "member-id"));
    assert_eq!(s.join_resp(t).unwrap().error_code, code::UNKNOWN_MEMBER_ID);
    // Static member too; and no group is created by a known member id.
    let t = s.join(JoinGroupRequest {
        group_instance_id: Some("group-instance-id".into()),
        ..consumer_join("group-id", "member-id")
    });
    let r = s.join_resp(t).unwrap();
    assert_eq!(r.error_code, code::UNKNOWN_MEMBER_ID);
    assert_eq!(r.protocol_type, None);
    assert!(!s.c.is_resident("group-id"));
}

#[test]
fn test_join_group_invalid_group_id_and_session_timeout() {
    let mut s = Shell::new();
    let t = s.join(consumer_join("", ""));
    assert_eq!(s.join_resp(t).unwrap().error_code, code::INVALID_GROUP_ID);
    let t = s.join(consumer_join(&"g".repeat(256), ""));
    assert_eq!(s.join_resp(t).unwrap().error_code, code::INVALID_GROUP_ID);
    for timeout in [5, 1_800_001] {
        let t = s.join(JoinGroupRequest {
            session_timeout_ms: timeout,
            ..consumer_join("g", "")
        });
        assert_eq!(
            s.join_resp(t).unwrap().error_code,
            code::INVALID_SESSION_TIMEOUT
        );
    }
}

#[test]
fn test_dynamic_members_join_group_with_max_size_and_required_known_member() {
    let mut s = Shell::with_config(GroupCoordinatorConfig {
        max_group_size: 10,
        initial_rebalance_delay_ms: 50,
        ..test_config()
    });
    // First round: all get MEMBER_ID_REQUIRED while the group is Empty.
    let first: Vec<_> = (0..11)
        .map(|_| s.join(consumer_join("group-id", "")))
        .collect();
    let ids: Vec<String> = first
        .iter()
        .map(|t| {
            let r = s.join_resp(*t).unwrap();
            assert_eq!(r.error_code, code::MEMBER_ID_REQUIRED);
            r.member_id
        })
        .collect();
    assert_eq!(s.group("group-id").num_members(), 0);
    assert!(s.group("group-id").is(GroupState::Empty));
    assert_eq!(s.group("group-id").num_pending_join_members(), 11);

    // Second round: one is over the max size.
    let second: Vec<_> = ids
        .iter()
        .map(|id| s.join(consumer_join("group-id", id)))
        .collect();
    s.sleep(50);
    s.sleep(50);
    let count = |s: &Shell, ts: &[RequestToken], e: i16| {
        ts.iter()
            .filter(|t| s.join_resp(**t).unwrap().error_code == e)
            .count()
    };
    assert_eq!(count(&s, &second, code::NONE), 10);
    assert_eq!(count(&s, &second, code::GROUP_MAX_SIZE_REACHED), 1);
    assert_eq!(s.group("group-id").num_members(), 10);
    assert_eq!(s.group("group-id").num_pending_join_members(), 0);
    assert!(s.group("group-id").is(GroupState::CompletingRebalance));

    // Accepted members can rejoin; the other is refused in CompletingRebalance.
    let third: Vec<_> = ids
        .iter()
        .map(|id| s.join(consumer_join("group-id", id)))
        .collect();
    assert_eq!(count(&s, &third, code::NONE), 10);
    assert_eq!(count(&s, &third, code::GROUP_MAX_SIZE_REACHED), 1);
}

#[test]
fn test_join_group_should_receive_error_if_group_over_max_size() {
    let mut s = Shell::with_config(GroupCoordinatorConfig {
        max_group_size: 10,
        ..test_config()
    });
    let req = JoinGroupRequest {
        api_version: 3,
        ..consumer_join("group-id", "")
    };
    for _ in 0..10 {
        let t = s.join(req.clone());
        assert!(s.join_resp(t).is_none());
    }
    let t = s.join(req);
    assert_eq!(
        s.join_resp(t).unwrap().error_code,
        code::GROUP_MAX_SIZE_REACHED
    );
}

#[test]
fn test_join_group_inconsistent_group_protocol() {
    let mut s = Shell::new();
    let req = JoinGroupRequest {
        api_version: 3,
        ..join_req("group-id", "", protocols(&["range"]))
    };
    let t1 = s.join(req.clone());
    assert!(s.join_resp(t1).is_none());
    let t2 = s.join(JoinGroupRequest {
        protocols: protocols(&["roundrobin"]),
        ..req
    });
    assert_eq!(
        s.join_resp(t2).unwrap().error_code,
        code::INCONSISTENT_GROUP_PROTOCOL
    );
    s.sleep(DELAY);
    assert_eq!(s.join_resp(t1).unwrap().error_code, code::NONE);
}

#[test]
fn test_join_group_with_empty_protocol_type_or_protocols() {
    let mut s = Shell::new();
    let t = s.join(JoinGroupRequest {
        protocol_type: String::new(),
        ..consumer_join("group-id", "")
    });
    assert_eq!(
        s.join_resp(t).unwrap().error_code,
        code::INCONSISTENT_GROUP_PROTOCOL
    );
    let t = s.join(join_req("group-id", "", vec![]));
    assert_eq!(
        s.join_resp(t).unwrap().error_code,
        code::INCONSISTENT_GROUP_PROTOCOL
    );
}

#[test]
fn test_classic_group_join_inconsistent_protocol_type() {
    let mut s = Shell::new();
    s.join_dynamic_and_complete(consumer_join("group-id", ""));
    let t = s.join(JoinGroupRequest {
        protocol_type: "connect".into(),
        ..consumer_join("group-id", "")
    });
    assert_eq!(
        s.join_resp(t).unwrap().error_code,
        code::INCONSISTENT_GROUP_PROTOCOL
    );
}

#[test]
fn test_delay_initial_rebalance_by_group_initial_rebalance_delay_on_empty_group() {
    let mut s = Shell::new();
    let t = s.join(JoinGroupRequest {
        api_version: 3,
        ..consumer_join("group-id", "")
    });
    s.sleep(DELAY / 2);
    assert!(s.join_resp(t).is_none());
    s.sleep(DELAY / 2 + 1);
    assert_eq!(s.join_resp(t).unwrap().error_code, code::NONE);
}

#[test]
fn test_reset_rebalance_delay_when_new_member_joins_group_during_initial_rebalance() {
    let mut s = Shell::new();
    let req = JoinGroupRequest {
        api_version: 3,
        rebalance_timeout_ms: (DELAY * 3) as i32,
        ..consumer_join("group-id", "")
    };
    let t1 = s.join(req.clone());
    s.sleep(DELAY - 1);
    let t2 = s.join(req);
    s.sleep(2);
    // Past the initial delay: extended, not completed.
    s.sleep(DELAY / 2 + 1);
    assert!(s.join_resp(t1).is_none());
    assert!(s.join_resp(t2).is_none());
    // Beyond the recomputed delay.
    s.sleep(DELAY / 2);
    assert_eq!(s.join_resp(t1).unwrap().error_code, code::NONE);
    assert_eq!(s.join_resp(t2).unwrap().error_code, code::NONE);
}

#[test]
fn test_delay_rebalance_upto_rebalance_timeout() {
    let mut s = Shell::new();
    let req = JoinGroupRequest {
        api_version: 3,
        rebalance_timeout_ms: (DELAY * 2) as i32,
        ..consumer_join("group-id", "")
    };
    let t1 = s.join(req.clone());
    let t2 = s.join(req.clone());
    s.sleep(DELAY + 1);
    let t3 = s.join(req);
    // Right before the rebalance timeout.
    s.sleep(DELAY - 1);
    for t in [t1, t2, t3] {
        assert!(s.join_resp(t).is_none());
    }
    // Beyond it: the delay is not extended past the rebalance timeout.
    s.sleep(1);
    for t in [t1, t2, t3] {
        assert_eq!(s.join_resp(t).unwrap().error_code, code::NONE);
    }
}

#[test]
fn test_heartbeat_expiration_should_remove_pending_member() {
    let mut s = Shell::new();
    let t = s.join(JoinGroupRequest {
        session_timeout_ms: 1000,
        ..consumer_join("group-id", "")
    });
    let r = s.join_resp(t).unwrap();
    assert_eq!(r.error_code, code::MEMBER_ID_REQUIRED);
    assert!(r.member_id.starts_with("client-"));
    assert_eq!(s.group("group-id").num_pending_join_members(), 1);
    s.sleep(1000);
    assert_eq!(s.group("group-id").num_pending_join_members(), 0);
}

#[test]
fn test_new_member_join_expiration() {
    let mut s = Shell::new();
    let join_timeout = s.c.config().new_member_join_timeout_ms as i32;
    let req = JoinGroupRequest {
        api_version: 3,
        session_timeout_ms: 5000 + join_timeout,
        rebalance_timeout_ms: 2 * join_timeout,
        ..consumer_join("group-id", "")
    };
    let t = s.join(req.clone());
    s.sleep(DELAY);
    let first = s.join_resp(t).unwrap();
    assert_eq!(first.leader, first.member_id);

    let t2 = s.join(JoinGroupRequest {
        session_timeout_ms: 5000,
        rebalance_timeout_ms: 5000,
        ..req
    });
    assert_eq!(s.group("group-id").num_members(), 2);
    s.sleep(join_timeout as u64);
    assert_eq!(s.join_resp(t2).unwrap().error_code, code::UNKNOWN_MEMBER_ID);
    assert_eq!(s.group("group-id").member_ids(), vec![first.member_id]);
}

#[test]
fn test_join_group_existing_member_does_not_trigger_rebalance_in_stable_state() {
    let mut s = Shell::new();
    let (ids, generation) = s.stable_group("g", 2, protocols(&["range"]));
    // Follower with unchanged metadata gets the current generation back.
    let t = s.join(JoinGroupRequest {
        client_id: "client-1".into(),
        ..consumer_join("g", &ids[1])
    });
    let r = s.join_resp(t).unwrap();
    assert_eq!(r.error_code, code::NONE);
    assert_eq!(r.generation_id, generation);
    assert_eq!(r.leader, ids[0]);
    assert!(r.members.is_empty());
    assert!(s.group("g").is(GroupState::Stable));
    // The leader rejoining forces a rebalance.
    let t = s.join(consumer_join("g", &ids[0]));
    assert!(s.join_resp(t).is_none());
    assert!(s.group("g").is(GroupState::PreparingRebalance));
}

#[test]
fn test_join_group_existing_member_in_empty_state() {
    let mut s = Shell::new();
    let (ids, _) = s.stable_group("g", 1, protocols(&["range"]));
    s.leave("g", vec![leave_member(&ids[0], None)], 3);
    assert!(s.group("g").is(GroupState::Empty));
    let t = s.join(consumer_join("g", &ids[0]));
    let r = s.join_resp(t).unwrap();
    assert_eq!(r.error_code, code::UNKNOWN_MEMBER_ID);
    assert_eq!(r.generation_id, -1);
}

#[test]
fn test_leader_gets_every_member_metadata_followers_none() {
    let mut s = Shell::new();
    let req = JoinGroupRequest {
        api_version: 3,
        ..consumer_join("g", "")
    };
    let t1 = s.join(req.clone());
    let t2 = s.join(req);
    s.sleep(DELAY);
    s.sleep(DELAY);
    let (a, b) = (s.join_resp(t1).unwrap(), s.join_resp(t2).unwrap());
    assert_eq!(a.generation_id, 1);
    assert_eq!(a.leader, a.member_id, "first joiner leads");
    assert_eq!(a.members.len(), 2);
    assert!(b.members.is_empty());
    assert_eq!(a.protocol_name.as_deref(), Some("range"));
    assert_eq!(a.protocol_type.as_deref(), Some("consumer"));
}

#[test]
fn test_select_protocol_most_votes_among_common_protocols() {
    let mut s = Shell::new();
    let mk = |p: &[&str]| JoinGroupRequest {
        api_version: 3,
        ..join_req("g", "", protocols(p))
    };
    // Common: range, roundrobin. Votes: roundrobin 2, range 1.
    let t1 = s.join(mk(&["range", "roundrobin", "sticky"]));
    s.join(mk(&["roundrobin", "range"]));
    s.join(mk(&["sticky", "roundrobin", "range"]));
    s.sleep(DELAY);
    s.sleep(DELAY);
    assert_eq!(
        s.join_resp(t1).unwrap().protocol_name.as_deref(),
        Some("roundrobin")
    );
}
