//! SyncGroup, Heartbeat and LeaveGroup.

use bytes::Bytes;
use kafka_protocol::messages::ConsumerProtocolAssignment;
use kafka_protocol::protocol::Decodable;

use super::*;

/// Two dynamic members joined, CompletingRebalance: (leader, follower, generation).
fn completing(s: &mut Shell) -> (String, String, i32) {
    let req = JoinGroupRequest {
        api_version: 3,
        ..consumer_join("g", "")
    };
    let t1 = s.join(req.clone());
    let t2 = s.join(req);
    s.sleep(DELAY);
    s.sleep(DELAY);
    let (a, b) = (s.join_resp(t1).unwrap(), s.join_resp(t2).unwrap());
    (a.member_id, b.member_id, a.generation_id)
}

#[test]
fn test_sync_group_errors() {
    let mut s = Shell::new();
    let t = s.sync(sync_req("unknown", "m", 1, None, vec![]));
    assert_eq!(s.sync_resp(t).unwrap().error_code, code::UNKNOWN_MEMBER_ID);
    let t = s.sync(sync_req("", "m", 1, None, vec![]));
    assert_eq!(s.sync_resp(t).unwrap().error_code, code::INVALID_GROUP_ID);

    let (leader, follower, generation) = completing(&mut s);
    let t = s.sync(sync_req("g", "nobody", generation, None, vec![]));
    assert_eq!(s.sync_resp(t).unwrap().error_code, code::UNKNOWN_MEMBER_ID);
    let t = s.sync(sync_req("g", &follower, generation + 1, None, vec![]));
    assert_eq!(s.sync_resp(t).unwrap().error_code, code::ILLEGAL_GENERATION);
    let t = s.sync(SyncGroupRequest {
        protocol_name: Some("roundrobin".into()),
        ..sync_req("g", &follower, generation, None, vec![])
    });
    assert_eq!(
        s.sync_resp(t).unwrap().error_code,
        code::INCONSISTENT_GROUP_PROTOCOL
    );
    let t = s.sync(SyncGroupRequest {
        protocol_type: Some("connect".into()),
        ..sync_req("g", &follower, generation, None, vec![])
    });
    assert_eq!(
        s.sync_resp(t).unwrap().error_code,
        code::INCONSISTENT_GROUP_PROTOCOL
    );

    // A rejoin with new metadata puts the group in PreparingRebalance.
    s.join(join_req("g", &leader, protocol_superset()));
    assert!(s.group("g").is(GroupState::PreparingRebalance));
    let t = s.sync(sync_req("g", &follower, generation, None, vec![]));
    assert_eq!(
        s.sync_resp(t).unwrap().error_code,
        code::REBALANCE_IN_PROGRESS
    );
}

#[test]
fn test_sync_group_follower_parks_until_leader_assignment_is_durable() {
    let mut s = Shell::new();
    let (leader, follower, generation) = completing(&mut s);
    let ft = s.sync(sync_req("g", &follower, generation, None, vec![]));
    assert!(s.sync_resp(ft).is_none());
    s.auto_ack = false;
    let lt = s.sync(SyncGroupRequest {
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        ..sync_req(
            "g",
            &leader,
            generation,
            None,
            vec![
                (leader.clone(), Bytes::from_static(b"L")),
                (follower.clone(), Bytes::from_static(b"F")),
            ],
        )
    });
    assert!(s.sync_resp(lt).is_none() && s.sync_resp(ft).is_none());
    let record = s.persisted.last().unwrap().clone();
    assert_eq!(record.generation, generation);
    assert_eq!(record.members.len(), 2);
    let ack = s.pending_acks.pop().unwrap();
    let fx = s.c.complete_group_persist(ack, Ok(()), s.now);
    s.apply(fx);
    let (l, f) = (s.sync_resp(lt).unwrap(), s.sync_resp(ft).unwrap());
    assert_eq!(l.assignment, Bytes::from_static(b"L"));
    assert_eq!(f.assignment, Bytes::from_static(b"F"));
    assert_eq!(f.protocol_name.as_deref(), Some("range"));
    assert!(s.group("g").is(GroupState::Stable));
    // Stable: a late sync gets the stored assignment.
    let t = s.sync(sync_req("g", &follower, generation, None, vec![]));
    assert_eq!(s.sync_resp(t).unwrap().assignment, Bytes::from_static(b"F"));
}

#[test]
fn test_sync_group_omitted_member_gets_valid_empty_consumer_assignment() {
    let mut s = Shell::new();
    let (leader, follower, generation) = completing(&mut s);
    let ft = s.sync(sync_req("g", &follower, generation, None, vec![]));
    s.sync(sync_req(
        "g",
        &leader,
        generation,
        None,
        vec![(leader.clone(), Bytes::from_static(b"L"))],
    ));
    let a = s.sync_resp(ft).unwrap().assignment;
    assert!(!a.is_empty(), "not raw empty bytes");
    assert_eq!(&a[..2], &[0, 0], "version of the member's subscription");
    let decoded = ConsumerProtocolAssignment::decode(&mut a.slice(2..), 0).unwrap();
    assert!(decoded.assigned_partitions.is_empty());
}

#[test]
fn test_sync_group_omitted_member_of_other_protocol_type_gets_empty_bytes() {
    let mut s = Shell::new();
    let req = JoinGroupRequest {
        api_version: 3,
        protocol_type: "connect".into(),
        ..consumer_join("g", "")
    };
    let t1 = s.join(req.clone());
    let t2 = s.join(req);
    s.sleep(DELAY);
    s.sleep(DELAY);
    let (a, b) = (s.join_resp(t1).unwrap(), s.join_resp(t2).unwrap());
    let ft = s.sync(sync_req("g", &b.member_id, b.generation_id, None, vec![]));
    s.sync(sync_req("g", &a.member_id, a.generation_id, None, vec![]));
    assert!(s.sync_resp(ft).unwrap().assignment.is_empty());
}

#[test]
fn test_sync_group_leader_write_failure_is_reported() {
    let mut s = Shell::new();
    let (leader, follower, generation) = completing(&mut s);
    let ft = s.sync(sync_req("g", &follower, generation, None, vec![]));
    s.auto_ack = false;
    let lt = s.sync(sync_req("g", &leader, generation, None, vec![]));
    let ack = s.pending_acks.pop().unwrap();
    let fx =
        s.c.complete_group_persist(ack, Err(code::KAFKA_STORAGE_ERROR), s.now);
    s.apply(fx);
    assert_eq!(s.sync_resp(lt).unwrap().error_code, code::NOT_COORDINATOR);
    assert_eq!(s.sync_resp(ft).unwrap().error_code, code::NOT_COORDINATOR);
    assert!(s.group("g").is(GroupState::PreparingRebalance));
}

#[test]
fn test_heartbeat_order_of_checks() {
    let mut s = Shell::new();
    assert_eq!(s.heartbeat("", "m", 0, None), code::INVALID_GROUP_ID);
    assert_eq!(
        s.heartbeat("unknown", "m", 0, None),
        code::UNKNOWN_MEMBER_ID
    );
    let (leader, follower, generation) =
        s.static_members_join_and_rebalance("g", "l-iid", "f-iid", 10_000, 30_000);
    // Fencing is checked before the member and the generation.
    assert_eq!(
        s.heartbeat("g", "other", generation + 5, Some("l-iid")),
        code::FENCED_INSTANCE_ID
    );
    assert_eq!(
        s.heartbeat("g", "other", generation + 5, Some("x-iid")),
        code::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        s.heartbeat("g", "other", generation + 5, None),
        code::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        s.heartbeat("g", &leader, generation + 5, None),
        code::ILLEGAL_GENERATION
    );
    assert_eq!(
        s.heartbeat("g", &leader, generation, Some("l-iid")),
        code::NONE
    );
    // PreparingRebalance: REBALANCE_IN_PROGRESS and the session is extended.
    s.join(JoinGroupRequest {
        group_instance_id: Some("l-iid".into()),
        session_timeout_ms: 30_000,
        ..join_req("g", &leader, protocol_superset())
    });
    assert!(s.group("g").is(GroupState::PreparingRebalance));
    s.sleep(9_000);
    assert_eq!(
        s.heartbeat("g", &follower, generation, None),
        code::REBALANCE_IN_PROGRESS
    );
    let deadline =
        s.c.timer_deadline(&TimerKey::Heartbeat("g".into(), follower.clone()))
            .unwrap();
    assert_eq!(deadline, s.now + 30_000);
}

#[test]
fn test_heartbeat_in_completing_rebalance_is_ok_and_empty_is_unknown() {
    let mut s = Shell::new();
    let (leader, _, generation) = completing(&mut s);
    assert_eq!(s.heartbeat("g", &leader, generation, None), code::NONE);
    let mut s = Shell::new();
    let (ids, generation) = s.stable_group("g", 1, protocols(&["range"]));
    s.leave("g", vec![leave_member(&ids[0], None)], 3);
    assert!(s.group("g").is(GroupState::Empty));
    assert_eq!(
        s.heartbeat("g", &ids[0], generation, None),
        code::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn test_leave_group_legacy_shape() {
    let mut s = Shell::new();
    let (ids, _) = s.stable_group("g", 2, protocols(&["range"]));
    // v0-v2: unknown member is reported at top level, no member list.
    let r = s.leave("g", vec![leave_member("nobody", None)], 1);
    assert_eq!(r.error_code, code::UNKNOWN_MEMBER_ID);
    assert!(r.members.is_empty());
    let r = s.leave("g", vec![leave_member(&ids[1], None)], 2);
    assert_eq!(
        r,
        LeaveGroupResponse {
            error_code: 0,
            members: vec![]
        }
    );
    assert!(!s.group("g").has_member(&ids[1]));
    // Unknown group on the legacy shape.
    let r = s.leave("unknown", vec![leave_member("m", None)], 0);
    assert_eq!(r.error_code, code::UNKNOWN_MEMBER_ID);
}

#[test]
fn test_leave_group_batch_shape_per_member_codes() {
    let mut s = Shell::new();
    let (leader, follower, generation) =
        s.static_members_join_and_rebalance("g", "l-iid", "f-iid", 10_000, 30_000);
    let r = s.leave(
        "g",
        vec![
            leave_member("", Some("f-iid")),       // admin removal by instance id
            leave_member("", Some("unknown-iid")), // unknown instance
            leave_member("stale-id", Some("l-iid")), // fenced
            leave_member("nobody", None),          // unknown member
        ],
        5,
    );
    let codes: Vec<i16> = r.members.iter().map(|m| m.error_code).collect();
    assert_eq!(r.error_code, code::NONE);
    assert_eq!(
        codes,
        vec![
            code::NONE,
            code::UNKNOWN_MEMBER_ID,
            code::FENCED_INSTANCE_ID,
            code::UNKNOWN_MEMBER_ID
        ]
    );
    assert!(!s.group("g").has_member(&follower));
    assert!(s.group("g").is(GroupState::PreparingRebalance));
    // Last member leaves: the group completes the join phase as Empty.
    let r = s.leave("g", vec![leave_member(&leader, Some("l-iid"))], 3);
    assert_eq!(r.members[0].error_code, code::NONE);
    let g = s.group("g");
    assert!(g.is(GroupState::Empty));
    assert_eq!(g.generation_id(), generation + 1);
    let record = s.persisted.last().unwrap();
    assert!(record.members.is_empty());
    assert_eq!(record.generation, generation + 1);
}

#[test]
fn test_leave_group_unknown_group_and_pending_member() {
    let mut s = Shell::new();
    let r = s.leave(
        "unknown",
        vec![leave_member("a", None), leave_member("", Some("i"))],
        3,
    );
    assert!(r
        .members
        .iter()
        .all(|m| m.error_code == code::UNKNOWN_MEMBER_ID));
    assert_eq!(r.members.len(), 2);
    // A pending member (MEMBER_ID_REQUIRED issued) may leave.
    let t = s.join(consumer_join("p", ""));
    let pending = s.join_resp(t).unwrap().member_id;
    let r = s.leave("p", vec![leave_member(&pending, None)], 3);
    assert_eq!(r.members[0].error_code, code::NONE);
    assert_eq!(s.group("p").num_pending_join_members(), 0);
}

#[test]
fn test_leave_answers_parked_join_of_leaving_member() {
    let mut s = Shell::new();
    let (ids, _) = s.stable_group("g", 2, protocols(&["range"]));
    let t = s.join(consumer_join("g", &ids[0]));
    assert!(s.join_resp(t).is_none());
    s.leave("g", vec![leave_member(&ids[0], None)], 3);
    assert_eq!(s.join_resp(t).unwrap().error_code, code::UNKNOWN_MEMBER_ID);
}
