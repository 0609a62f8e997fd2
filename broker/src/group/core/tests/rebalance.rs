//! Rebalance completion, eviction, expiry and the rolling-deploy scenario.

use super::*;

#[test]
fn test_complete_join_remove_not_yet_rejoined_dynamic_members() {
    let mut s = Shell::new();
    let req = JoinGroupRequest {
        session_timeout_ms: 1000,
        rebalance_timeout_ms: 1000,
        ..consumer_join("group-id", "")
    };
    let leader = s.join_dynamic_and_complete(req.clone());
    assert_eq!(leader.error_code, code::NONE);
    assert_eq!(leader.generation_id, 1);
    // A new member triggers a rebalance the old leader never rejoins.
    let t = s.join(JoinGroupRequest {
        api_version: 3,
        ..req
    });
    assert!(s.join_resp(t).is_none());
    assert_eq!(s.group("group-id").num_members(), 2);
    assert!(s.group("group-id").is(GroupState::PreparingRebalance));
    s.sleep(1000);
    let r = s.join_resp(t).unwrap();
    assert_eq!(r.error_code, code::NONE);
    assert_eq!(s.group("group-id").member_ids(), vec![r.member_id.clone()]);
    assert_eq!(r.leader, r.member_id);
    assert_eq!(s.group("group-id").generation_id(), 2);
}

#[test]
fn test_complete_join_keeps_static_members_that_did_not_rejoin() {
    let mut s = Shell::new();
    let (leader, follower, generation) =
        s.static_members_join_and_rebalance("g", "leader-iid", "follower-iid", 10_000, 30_000);
    // The leader rejoins; the static follower does not and is kept.
    let t = s.join(JoinGroupRequest {
        group_instance_id: Some("leader-iid".into()),
        rebalance_timeout_ms: 10_000,
        session_timeout_ms: 30_000,
        ..join_req("g", &leader, protocol_superset())
    });
    s.sleep(10_000);
    let r = s.join_resp(t).unwrap();
    assert_eq!(r.generation_id, generation + 1);
    assert!(s.group("g").has_member(&follower));
    assert_eq!(r.members.len(), 2);
}

#[test]
fn test_session_expiry_evicts_member_and_triggers_rebalance() {
    let mut s = Shell::new();
    let (ids, generation) = s.stable_group("g", 2, protocols(&["range"]));
    // Only the leader heartbeats.
    for _ in 0..2 {
        s.sleep(2000);
        assert_eq!(s.heartbeat("g", &ids[0], generation, None), code::NONE);
    }
    // The follower's 5 s session ran out.
    s.sleep(2000);
    assert!(!s.group("g").has_member(&ids[1]));
    assert!(s.group("g").is(GroupState::PreparingRebalance));
    assert_eq!(
        s.heartbeat("g", &ids[0], generation, None),
        code::REBALANCE_IN_PROGRESS
    );
    assert_eq!(
        s.heartbeat("g", &ids[1], generation, None),
        code::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn test_sync_timeout_removes_members_that_did_not_sync() {
    let mut s = Shell::new();
    let req = JoinGroupRequest {
        api_version: 3,
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 10_000,
        ..consumer_join("g", "")
    };
    let t1 = s.join(req.clone());
    let t2 = s.join(req);
    s.sleep(DELAY);
    s.sleep(DELAY);
    let (a, b) = (s.join_resp(t1).unwrap(), s.join_resp(t2).unwrap());
    // Only the follower syncs; it parks waiting for the leader.
    let st = s.sync(sync_req("g", &b.member_id, b.generation_id, None, vec![]));
    assert!(s.sync_resp(st).is_none());
    s.sleep(10_000);
    // The leader never synced: removed, the follower told to rejoin.
    assert!(!s.group("g").has_member(&a.member_id));
    assert_eq!(
        s.sync_resp(st).unwrap().error_code,
        code::REBALANCE_IN_PROGRESS
    );
    assert!(s.group("g").is(GroupState::PreparingRebalance));
}

/// kafka-classic-coordinator.md: a one-step assignor change is refused member
/// by member while an old member remains.
#[test]
fn test_rolling_deploy_one_step_refused_with_inconsistent_group_protocol() {
    let mut s = Shell::new();
    let (ids, _) = s.stable_group("g", 3, protocols(&["range"]));
    // Pod 0 restarts offering only cooperative-sticky.
    s.leave("g", vec![leave_member(&ids[0], None)], 3);
    let t = s.join(join_req("g", "", protocols(&["cooperative-sticky"])));
    assert_eq!(
        s.join_resp(t).unwrap().error_code,
        code::INCONSISTENT_GROUP_PROTOCOL
    );
    assert_eq!(
        s.group("g").num_members(),
        2,
        "the group shrinks, old pods stay"
    );
}

/// The two-step path: first every pod moves to [range, cooperative-sticky]
/// (range still chosen), then to [cooperative-sticky]; the protocol flips on
/// the first restart of the second step.
#[test]
fn test_rolling_deploy_two_step_flips_protocol() {
    let mut s = Shell::new();
    let (mut ids, _) = s.stable_group("g", 3, protocols(&["range"]));
    let roll = |s: &mut Shell, ids: &mut Vec<String>, p: &[&str]| -> Vec<Option<String>> {
        let mut chosen = Vec::new();
        for i in 0..ids.len() {
            let old = ids.remove(0);
            s.leave("g", vec![leave_member(&old, None)], 3);
            // Remaining members rejoin with what they already run.
            let others: Vec<(String, Vec<Protocol>)> = ids
                .iter()
                .map(|id| {
                    (
                        id.clone(),
                        s.group("g").member(id).unwrap().protocols.clone(),
                    )
                })
                .collect();
            let t = s.join(JoinGroupRequest {
                api_version: 3,
                ..join_req("g", "", protocols(p))
            });
            for (id, prot) in others {
                s.join(join_req("g", &id, prot));
            }
            // The last rejoin completes the join phase.
            let r = s.join_resp(t).unwrap();
            assert_eq!(r.error_code, code::NONE, "restart {i} admitted");
            chosen.push(r.protocol_name.clone());
            ids.push(r.member_id);
            let g = s.group("g");
            let generation = g.generation_id();
            let leader = g.leader().unwrap().to_string();
            let all = g.member_ids();
            s.sync(sync_req("g", &leader, generation, None, vec![]));
            for id in all.iter().filter(|m| **m != leader) {
                s.sync(sync_req("g", id, generation, None, vec![]));
            }
        }
        chosen
    };
    let step1 = roll(&mut s, &mut ids, &["range", "cooperative-sticky"]);
    assert!(step1.iter().all(|p| p.as_deref() == Some("range")));
    let step2 = roll(&mut s, &mut ids, &["cooperative-sticky"]);
    assert_eq!(step2[0].as_deref(), Some("cooperative-sticky"));
    assert!(step2
        .iter()
        .all(|p| p.as_deref() == Some("cooperative-sticky")));
}
