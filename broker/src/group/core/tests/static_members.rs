//! Static membership (KIP-345) conformance.

use super::*;

fn static_join(iid: &str, member: &str, p: Vec<Protocol>) -> JoinGroupRequest {
    JoinGroupRequest {
        group_instance_id: Some(iid.into()),
        ..join_req("group-id", member, p)
    }
}

/// One static member joined, synced, Stable at generation 1.
fn stable_static(s: &mut Shell, req: JoinGroupRequest) -> String {
    let r = s.join_static_and_complete(req);
    assert_eq!(r.error_code, code::NONE);
    assert_eq!(r.generation_id, 1);
    let t = s.sync(sync_req(
        "group-id",
        &r.member_id,
        1,
        Some("group-instance-id"),
        vec![],
    ));
    assert_eq!(s.sync_resp(t).unwrap().error_code, code::NONE);
    assert!(s.group("group-id").is(GroupState::Stable));
    r.member_id
}

fn replace_static_member_in_stable_state_no_error(supports_skip: bool) {
    let mut s = Shell::new();
    let api_version = if supports_skip { 9 } else { 8 };
    let old_id = stable_static(
        &mut s,
        JoinGroupRequest {
            api_version,
            ..static_join("group-instance-id", "", protocols(&["range"]))
        },
    );
    // Static member rejoins with an unknown member id and a protocol superset:
    // the selected protocol does not change, so no rebalance, only a write.
    s.auto_ack = false;
    let new_protocols = protocols(&["range", "roundrobin"]);
    let t = s.join(JoinGroupRequest {
        api_version,
        rebalance_timeout_ms: 7000,
        session_timeout_ms: 4500,
        ..static_join("group-instance-id", "", new_protocols.clone())
    });
    assert!(
        s.join_resp(t).is_none(),
        "answered only once the write is durable"
    );
    assert_eq!(s.pending_acks.len(), 1);
    let ack = s.pending_acks.pop().unwrap();
    let fx = s.c.complete_group_persist(ack, Ok(()), s.now);
    s.apply(fx);

    let g = s.group("group-id");
    let new_id = g.static_member_id("group-instance-id").unwrap().to_string();
    assert_ne!(new_id, old_id);
    let expected = JoinGroupResponse {
        error_code: code::NONE,
        generation_id: 1,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        leader: if supports_skip {
            new_id.clone()
        } else {
            old_id.clone()
        },
        skip_assignment: supports_skip,
        member_id: new_id.clone(),
        members: if supports_skip {
            vec![JoinGroupResponseMember {
                member_id: new_id.clone(),
                group_instance_id: Some("group-instance-id".into()),
                metadata: new_protocols[0].metadata.clone(),
            }]
        } else {
            vec![]
        },
    };
    assert_eq!(s.join_resp(t).unwrap(), expected);
    let m = g.member(&new_id).unwrap();
    assert_eq!(m.rebalance_timeout_ms, 7000);
    assert_eq!(m.session_timeout_ms, 4500);
    assert_eq!(m.protocols, new_protocols);
    assert_eq!(g.num_members(), 1);
    assert_eq!(g.generation_id(), 1);
    assert!(g.is(GroupState::Stable));
    // The persisted record names the new member id.
    assert_eq!(s.persisted.last().unwrap().members[0].member_id, new_id);
}

#[test]
fn test_replace_static_member_in_stable_state_no_error() {
    replace_static_member_in_stable_state_no_error(true);
    replace_static_member_in_stable_state_no_error(false);
}

#[test]
fn test_replace_static_member_in_stable_state_errors() {
    let mut s = Shell::new();
    let old_id = stable_static(
        &mut s,
        JoinGroupRequest {
            rebalance_timeout_ms: 4000,
            session_timeout_ms: 3000,
            api_version: 8,
            ..static_join("group-instance-id", "", protocols(&["range"]))
        },
    );
    s.auto_ack = false;
    let t = s.join(JoinGroupRequest {
        rebalance_timeout_ms: 7000,
        session_timeout_ms: 6000,
        api_version: 8,
        ..static_join("group-instance-id", "", protocols(&["range", "roundrobin"]))
    });
    let ack = s.pending_acks.pop().unwrap();
    let fx =
        s.c.complete_group_persist(ack, Err(code::UNKNOWN_TOPIC_OR_PARTITION), s.now);
    s.apply(fx);
    let r = s.join_resp(t).unwrap();
    assert_eq!(
        r,
        JoinGroupResponse {
            error_code: code::COORDINATOR_NOT_AVAILABLE,
            generation_id: 1,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            leader: old_id.clone(),
            skip_assignment: false,
            member_id: String::new(),
            members: vec![],
        }
    );
    // Reverted to the old member id and metadata.
    let g = s.group("group-id");
    assert_eq!(
        g.static_member_id("group-instance-id"),
        Some(old_id.as_str())
    );
    let m = g.member(&old_id).unwrap();
    assert_eq!((m.rebalance_timeout_ms, m.session_timeout_ms), (4000, 3000));
    assert_eq!(m.protocols, protocols(&["range"]));
    assert!(g.is(GroupState::Stable));
}

#[test]
fn test_replace_static_member_in_stable_state_with_updated_protocol_triggers_rebalance() {
    let mut s = Shell::new();
    stable_static(
        &mut s,
        static_join("group-instance-id", "", protocol_superset()),
    );
    let t = s.join(static_join(
        "group-instance-id",
        "",
        protocols(&["roundrobin"]),
    ));
    let r = s.join_resp(t).unwrap();
    assert_eq!(r.error_code, code::NONE);
    assert_eq!(r.generation_id, 2);
    assert_eq!(r.protocol_name.as_deref(), Some("roundrobin"));
    assert!(s.group("group-id").is(GroupState::CompletingRebalance));
}

#[test]
fn test_static_member_fence_duplicate_rejoined_follower() {
    let mut s = Shell::new();
    let (leader, follower, generation) = s.static_members_join_and_rebalance(
        "group-id",
        "leader-iid",
        "follower-iid",
        10_000,
        5_000,
    );
    // Known leader rejoins: rebalance.
    let lt = s.join(JoinGroupRequest {
        group_instance_id: Some("leader-iid".into()),
        rebalance_timeout_ms: 10_000,
        ..consumer_join("group-id", &leader)
    });
    assert!(s.join_resp(lt).is_none());
    assert!(s.group("group-id").is(GroupState::PreparingRebalance));
    // Old follower rejoins with its member id: the join phase completes.
    let ft = s.join(JoinGroupRequest {
        group_instance_id: Some("follower-iid".into()),
        rebalance_timeout_ms: 10_000,
        ..consumer_join("group-id", &follower)
    });
    let lr = s.join_resp(lt).unwrap();
    let fr = s.join_resp(ft).unwrap();
    assert_eq!(lr.generation_id, generation + 1);
    assert_eq!(lr.members.len(), 2);
    assert_eq!(fr.leader, leader);
    assert!(s.group("group-id").is(GroupState::CompletingRebalance));

    // The old follower syncs and parks; a duplicate follower (same instance,
    // unknown member id) replaces it and fences the parked sync.
    let st = s.sync(sync_req(
        "group-id",
        &follower,
        fr.generation_id,
        Some("follower-iid"),
        vec![],
    ));
    assert!(s.sync_resp(st).is_none());
    let dt = s.join(JoinGroupRequest {
        group_instance_id: Some("follower-iid".into()),
        rebalance_timeout_ms: 10_000,
        ..consumer_join("group-id", "")
    });
    assert!(s.group("group-id").is(GroupState::PreparingRebalance));
    assert!(s.join_resp(dt).is_none());
    assert_eq!(
        s.sync_resp(st).unwrap().error_code,
        code::FENCED_INSTANCE_ID
    );

    // After the rebalance timeout the leader (silent) is gone; the duplicate leads.
    s.sleep(10_000);
    let dr = s.join_resp(dt).unwrap();
    let g = s.group("group-id");
    assert!(g.is(GroupState::CompletingRebalance));
    assert_eq!(g.generation_id(), generation + 2);
    assert_eq!(g.member_ids(), vec![dr.member_id.clone()]);
    assert_eq!(dr.leader, dr.member_id);

    // The old follower id is fenced on every API.
    assert_eq!(
        s.heartbeat(
            "group-id",
            &follower,
            g.generation_id(),
            Some("follower-iid")
        ),
        code::FENCED_INSTANCE_ID
    );
}

#[test]
fn test_join_group_replace_static_member_while_rebalancing() {
    let mut s = Shell::new();
    let req = static_join("group-instance-id", "", protocols(&["range"]));
    let t1 = s.join(req.clone());
    assert_eq!(s.group("group-id").num_awaiting_join(), 1);
    let t2 = s.join(req);
    let old = s.join_resp(t1).unwrap();
    assert_eq!(old.error_code, code::FENCED_INSTANCE_ID);
    assert_eq!(s.group("group-id").num_members(), 1);
    assert_eq!(s.group("group-id").num_awaiting_join(), 1);
    s.sleep(DELAY);
    assert_eq!(s.join_resp(t2).unwrap().error_code, code::NONE);
    assert_eq!(s.group("group-id").num_awaiting_join(), 0);
}

#[test]
fn test_static_member_rejoin_with_explicit_unknown_member_id() {
    let mut s = Shell::new();
    s.join_static_and_complete(static_join("group-instance-id", "", protocols(&["range"])));
    let t = s.join(static_join(
        "group-instance-id",
        "unknown-member-id",
        protocols(&["range"]),
    ));
    assert_eq!(s.join_resp(t).unwrap().error_code, code::FENCED_INSTANCE_ID);
}
