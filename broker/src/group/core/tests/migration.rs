//! Online migration between classic and consumer groups through the core:
//! a classic group converts when a consumer-protocol member joins, its
//! classic member goes on through JoinGroup / SyncGroup / Heartbeat inside
//! the consumer group, and the group converts back when the last
//! consumer-protocol member leaves (Apache's GroupMetadataManagerTest
//! classic-conversion cases, on the injected clock).

use kafka_protocol::messages::ConsumerProtocolAssignment;

use super::consumer::{beat, join, topics};
use super::*;
use crate::group::consumer::group::ConsumerGroupState;
use crate::group::consumer::heartbeat::{
    HeartbeatRequest as ConsumerHeartbeatRequest, MigrationPolicy,
};
use crate::group::consumer::member::ClassicMemberMetadata;
use crate::group::consumer::records::ConsumerGroupRecord;
use crate::group::core::protocol::{decode_assignment, encode_assignment};

/// A classic consumer subscribed to "foo" with the range assignor.
fn classic_member(member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 20_000,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![Protocol::new("range", encode_subscription(&["foo"]))],
        reason: None,
        api_version: 3,
        client_id: "classic".into(),
        client_host: "/10.0.0.1".into(),
    }
}

fn sync_request(
    member_id: &str,
    generation: i32,
    assignments: Vec<(String, Bytes)>,
) -> SyncGroupRequest {
    SyncGroupRequest {
        group_id: "g".into(),
        generation_id: generation,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments,
        api_version: 5,
    }
}

fn partitions(assignment: &Bytes) -> Vec<i32> {
    let a: ConsumerProtocolAssignment = decode_assignment(assignment).expect("an assignment");
    let mut ps: Vec<i32> = a
        .assigned_partitions
        .iter()
        .flat_map(|tp| tp.partitions.clone())
        .collect();
    ps.sort();
    ps
}

/// A Stable classic group: `c1` alone owns foo 0–3 at generation 1.
fn stable_classic_group() -> (Shell, String) {
    let mut s = Shell::new();
    s.topics = topics();
    let t = s.join(classic_member(""));
    s.sleep(DELAY);
    let joined = s.join_resp(t).expect("the join phase completed");
    assert_eq!((joined.error_code, joined.generation_id), (code::NONE, 1));
    let c1 = joined.member_id;
    let all = encode_assignment([("foo", vec![0, 1, 2, 3])], 0);
    let t = s.sync(sync_request(&c1, 1, vec![(c1.clone(), all)]));
    assert_eq!(s.sync_resp(t).unwrap().error_code, code::NONE);
    assert_eq!(s.group("g").state(), GroupState::Stable);
    (s, c1)
}

/// Converts the group: m1 joins with the consumer protocol. Returns m1's
/// epoch.
fn upgrade(s: &mut Shell, c1: &str) -> i32 {
    let t = s.consumer_heartbeat(join("m1"));
    assert!(s.c.group("g").is_none(), "the classic group is gone");
    let (_, records, write) = s.consumer_writes[0].clone();
    assert_eq!(s.conversions.get(&write), Some(&Conversion::FromClassic));
    // The classic member became a consumer group member that speaks the
    // classic protocol, at its generation, with what it owned.
    let ConsumerGroupRecord::Member {
        member_id,
        metadata,
    } = &records[0]
    else {
        panic!("first the member: {records:?}");
    };
    assert_eq!(member_id, c1);
    assert_eq!(
        metadata.classic,
        Some(ClassicMemberMetadata {
            session_timeout_ms: 10_000,
            supported_protocols: vec![crate::group::consumer::member::ClassicProtocol {
                name: "range".into(),
                metadata: encode_subscription(&["foo"]).to_vec(),
            }],
        })
    );
    assert!(s.consumer_answer(t).is_none(), "answered once durable");
    s.finish_consumer_write(Ok(()));
    let m1 = s.consumer_answer(t).unwrap().unwrap();
    assert_eq!(m1.member_epoch, 2);
    assert_eq!(
        m1.assignment.map(|a| a.is_empty()),
        Some(true),
        "c1 still owns everything"
    );
    let group = s.c.consumer_group("g").unwrap();
    assert_eq!(group.member(c1).unwrap().member_epoch(), 1);
    assert_eq!(group.state(), ConsumerGroupState::Reconciling);
    m1.member_epoch
}

#[test]
fn a_classic_group_upgrades_when_a_consumer_member_joins_and_downgrades_when_it_leaves() {
    let (mut s, c1) = stable_classic_group();
    let session = TimerKey::ConsumerSession("g".into(), c1.clone());
    upgrade(&mut s, &c1);
    assert_eq!(
        s.c.timer_deadline(&session),
        Some(s.now + 10_000),
        "the classic member's session runs on its own timeout"
    );

    // c1 learns of the rebalance through its heartbeat and rejoins,
    // having revoked everything (eager): it keeps its half at epoch 2.
    assert_eq!(s.heartbeat("g", &c1, 1, None), code::REBALANCE_IN_PROGRESS);
    let t = s.join(classic_member(&c1));
    assert!(s.join_resp(t).is_none(), "answered once durable");
    s.finish_consumer_write(Ok(()));
    let joined = s.join_resp(t).unwrap();
    assert_eq!(
        (
            joined.error_code,
            joined.generation_id,
            joined.protocol_name.as_deref(),
            joined.leader.as_str()
        ),
        (code::NONE, 2, Some("range"), ""),
        "a follower of generation 2"
    );
    let t = s.sync(sync_request(&c1, 2, Vec::new()));
    let synced = s.sync_resp(t).unwrap();
    assert_eq!(synced.error_code, code::NONE);
    let mine = partitions(&synced.assignment);
    assert_eq!(mine.len(), 2);
    assert_eq!(s.heartbeat("g", &c1, 2, None), code::NONE);

    // m1 now gets the other half.
    let t = s.consumer_heartbeat(beat("m1", 2));
    s.finish_consumer_write(Ok(()));
    let m1 = s.consumer_answer(t).unwrap().unwrap();
    let theirs: Vec<i32> = m1.assignment.unwrap().values().flatten().copied().collect();
    let mut all: Vec<i32> = mine.iter().chain(&theirs).copied().collect();
    all.sort();
    assert_eq!(all, vec![0, 1, 2, 3], "each partition owned once");
    assert_eq!(
        s.c.consumer_group("g").unwrap().state(),
        ConsumerGroupState::Stable
    );

    // The classic member commits with its generation (any version).
    assert_eq!(s.member_commit(&c1, 2, 8), code::NONE);
    assert_eq!(s.member_commit(&c1, 1, 8), code::ILLEGAL_GENERATION);

    // m1 leaves: only a classic member remains, the group goes back.
    let t = s.consumer_heartbeat(beat("m1", -1));
    assert!(s.c.consumer_group("g").is_none());
    let (_, records, write) = s.consumer_writes[0].clone();
    assert_eq!(records.last(), Some(&ConsumerGroupRecord::GroupTombstone));
    let Some(Conversion::ToClassic(record)) = s.conversions.get(&write).cloned() else {
        panic!("a conversion back: {:?}", s.conversions);
    };
    assert_eq!(
        (
            record.generation,
            record.protocol.as_deref(),
            record.members.len()
        ),
        (2, Some("range"), 1)
    );
    assert_eq!(
        partitions(&record.members[0].assignment),
        mine,
        "its assignment kept"
    );
    s.finish_consumer_write(Ok(()));
    assert_eq!(s.consumer_answer(t).unwrap().unwrap().member_epoch, -1);
    assert_eq!(s.group("g").state(), GroupState::PreparingRebalance);
    assert_eq!(
        s.c.timer_deadline(&session),
        None,
        "the consumer timers went"
    );

    // c1 rejoins the classic group and leads generation 3.
    assert_eq!(s.heartbeat("g", &c1, 2, None), code::REBALANCE_IN_PROGRESS);
    let t = s.join(classic_member(&c1));
    let joined = s.join_resp(t).expect("the only member rejoined");
    assert_eq!(
        (joined.generation_id, joined.leader.as_str()),
        (3, c1.as_str())
    );
    assert_eq!(
        s.member_commit(&c1, 3, 8),
        code::REBALANCE_IN_PROGRESS,
        "until it syncs"
    );
}

#[test]
fn test_consumer_group_heartbeat_with_non_empty_classic_group_and_the_upgrade_disabled() {
    let mut cfg = test_config();
    cfg.consumer.migration_policy = MigrationPolicy::Disabled;
    let mut s = Shell::with_config(cfg);
    s.topics = topics();
    s.join(classic_member(""));
    s.sleep(DELAY);
    let t = s.consumer_heartbeat(join("m1"));
    let e = s.consumer_answer(t).unwrap().unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (code::GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    );
    assert_eq!(
        s.group("g").num_members(),
        1,
        "the classic group is untouched"
    );
}

#[test]
fn test_consumer_group_heartbeat_with_preparing_rebalance_classic_group() {
    let (mut s, c1) = stable_classic_group();
    // c2 joins: the group prepares a rebalance, c2's JoinGroup parked.
    let t2 = s.join(classic_member(""));
    assert_eq!(s.group("g").state(), GroupState::PreparingRebalance);
    assert!(s.join_resp(t2).is_none());
    upgrade(&mut s, &c1);
    // The parked JoinGroup is told to rejoin: into the consumer group.
    let answer = s.join_resp(t2).expect("answered at the conversion");
    assert_eq!(answer.error_code, code::REBALANCE_IN_PROGRESS);
}

#[test]
fn test_consumer_group_member_using_classic_protocol_fenced_when_join_timeout() {
    let (mut s, c1) = stable_classic_group();
    upgrade(&mut s, &c1);
    // Told to rejoin, c1 has its rebalance timeout (20 s) to do it; its
    // heartbeats keep its session (10 s) but not the deadline.
    assert_eq!(s.heartbeat("g", &c1, 1, None), code::REBALANCE_IN_PROGRESS);
    s.sleep(9_999);
    assert_eq!(s.heartbeat("g", &c1, 1, None), code::REBALANCE_IN_PROGRESS);
    s.sleep(9_999);
    assert_eq!(s.heartbeat("g", &c1, 1, None), code::REBALANCE_IN_PROGRESS);
    assert!(s.consumer_writes.is_empty());
    s.sleep(2);
    let (_, records, write) = s.consumer_writes[0].clone();
    assert!(records.contains(&ConsumerGroupRecord::MemberTombstone {
        member_id: c1.clone()
    }));
    assert!(
        !s.conversions.contains_key(&write),
        "a consumer member remains"
    );
    s.finish_consumer_write(Ok(()));
    assert!(s.c.consumer_group("g").unwrap().member(&c1).is_none());
    assert_eq!(s.heartbeat("g", &c1, 1, None), code::UNKNOWN_MEMBER_ID);
}

#[test]
fn test_consumer_group_member_using_classic_protocol_fenced_when_session_timeout() {
    let (mut s, c1) = stable_classic_group();
    upgrade(&mut s, &c1);
    s.sleep(10_000);
    let (_, records, _) = s.consumer_writes[0].clone();
    assert!(records.contains(&ConsumerGroupRecord::MemberTombstone {
        member_id: c1.clone()
    }));
}

#[test]
fn test_classic_group_leave_to_consumer_group() {
    let (mut s, c1) = stable_classic_group();
    upgrade(&mut s, &c1);
    let t = s.token();
    let members = vec![
        LeaveMember {
            member_id: c1.clone(),
            group_instance_id: None,
            reason: None,
        },
        LeaveMember {
            member_id: "m1".into(),
            group_instance_id: None,
            reason: None,
        },
    ];
    let request = LeaveGroupRequest {
        group_id: "g".into(),
        members,
        api_version: 3,
    };
    let fx = s.c.leave_group(t, request, s.now);
    s.apply(fx);
    assert!(!s.responses.contains_key(&t), "answered once durable");
    s.finish_consumer_write(Ok(()));
    let Some(Response::Leave(left)) = s.responses.remove(&t) else {
        panic!("a leave answer");
    };
    // m1 speaks the consumer protocol: it cannot leave this way.
    let codes: Vec<i16> = left.members.iter().map(|m| m.error_code).collect();
    assert_eq!(codes, vec![code::NONE, code::UNKNOWN_MEMBER_ID]);
    let group = s.c.consumer_group("g").unwrap();
    assert!(group.member(&c1).is_none());
    assert_eq!(group.group_epoch(), 3);
}

#[test]
fn test_classic_group_sync_to_consumer_group_errors() {
    let (mut s, c1) = stable_classic_group();
    upgrade(&mut s, &c1);
    let sync_code = |s: &mut Shell, req: SyncGroupRequest| {
        let t = s.sync(req);
        s.sync_resp(t).unwrap().error_code
    };
    assert_eq!(
        sync_code(&mut s, sync_request("nobody", 1, Vec::new())),
        code::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        sync_code(&mut s, sync_request(&c1, 7, Vec::new())),
        code::ILLEGAL_GENERATION
    );
    let mut other = sync_request(&c1, 1, Vec::new());
    other.protocol_name = Some("roundrobin".into());
    assert_eq!(sync_code(&mut s, other), code::INCONSISTENT_GROUP_PROTOCOL);
    // Epoch 1 behind the group's 2: rejoin first.
    assert_eq!(
        sync_code(&mut s, sync_request(&c1, 1, Vec::new())),
        code::REBALANCE_IN_PROGRESS
    );
    assert_eq!(
        sync_code(&mut s, sync_request("m1", 2, Vec::new())),
        code::UNKNOWN_MEMBER_ID,
        "not a classic member"
    );
}

#[test]
fn test_joining_consumer_group_throws_exception_if_protocol_is_not_supported() {
    let (mut s, c1) = stable_classic_group();
    upgrade(&mut s, &c1);
    let mut req = classic_member("");
    req.protocols = vec![Protocol::new("roundrobin", encode_subscription(&["foo"]))];
    let t = s.join(req);
    assert_eq!(
        s.join_resp(t).unwrap().error_code,
        code::INCONSISTENT_GROUP_PROTOCOL
    );
}

#[test]
fn test_joining_consumer_group_with_new_dynamic_member() {
    let (mut s, c1) = stable_classic_group();
    upgrade(&mut s, &c1);
    // v4+: a new member first gets its id.
    let mut req = classic_member("");
    req.api_version = 5;
    let t = s.join(req.clone());
    let first = s.join_resp(t).unwrap();
    assert_eq!(first.error_code, code::MEMBER_ID_REQUIRED);
    assert!(!first.member_id.is_empty());
    req.member_id = first.member_id.clone();
    let t = s.join(req);
    s.finish_consumer_write(Ok(()));
    let joined = s.join_resp(t).unwrap();
    assert_eq!(
        (joined.error_code, joined.member_id.clone()),
        (code::NONE, first.member_id.clone())
    );
    let group = s.c.consumer_group("g").unwrap();
    assert_eq!(group.group_epoch(), 3, "its subscription bumped the epoch");
    assert!(group
        .member(&first.member_id)
        .unwrap()
        .uses_classic_protocol());
}

#[test]
fn test_classic_group_join_with_empty_consumer_group() {
    let mut s = Shell::new();
    s.topics = topics();
    let t = s.consumer_heartbeat(join("m1"));
    s.finish_consumer_write(Ok(()));
    assert!(s.consumer_answer(t).unwrap().is_ok());
    let t = s.consumer_heartbeat(beat("m1", -1));
    s.finish_consumer_write(Ok(()));
    assert!(s.consumer_answer(t).unwrap().is_ok());
    assert!(s.c.consumer_group("g").unwrap().members().is_empty());
    // A classic member: the empty consumer group makes way.
    let t = s.join(classic_member(""));
    let (_, records, _) = s.consumer_writes[0].clone();
    assert_eq!(records.last(), Some(&ConsumerGroupRecord::GroupTombstone));
    assert!(s.c.consumer_group("g").is_none());
    s.sleep(DELAY);
    assert_eq!(s.join_resp(t).unwrap().generation_id, 1);
}

/// Apache's `testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMember`:
/// a classic static member joining with no id replaces the instance's
/// member, the group's last one speaking the consumer protocol: the group
/// converts back with the new member in its place, its partitions kept,
/// and no rebalance since the subscriptions did not change.
#[test]
fn test_last_static_consumer_protocol_member_replaced_by_classic_protocol_member() {
    let (mut s, c1) = stable_classic_group();
    let t = s.consumer_heartbeat(ConsumerHeartbeatRequest {
        instance_id: Some("instance-id".into()),
        ..join("m1")
    });
    s.finish_consumer_write(Ok(()));
    assert_eq!(s.consumer_answer(t).unwrap().unwrap().member_epoch, 2);
    // c1 revokes and rejoins; m1 gets the other half.
    assert_eq!(s.heartbeat("g", &c1, 1, None), code::REBALANCE_IN_PROGRESS);
    let t = s.join(classic_member(&c1));
    s.finish_consumer_write(Ok(()));
    assert_eq!(s.join_resp(t).unwrap().generation_id, 2);
    let t = s.sync(sync_request(&c1, 2, Vec::new()));
    let c1_owns = partitions(&s.sync_resp(t).unwrap().assignment);
    let t = s.consumer_heartbeat(beat("m1", 2));
    s.finish_consumer_write(Ok(()));
    let m1_owns: Vec<i32> = s
        .consumer_answer(t)
        .unwrap()
        .unwrap()
        .assignment
        .unwrap()
        .values()
        .flatten()
        .copied()
        .collect();
    assert_eq!(c1_owns.len() + m1_owns.len(), 4);

    let t = s.join(JoinGroupRequest {
        group_instance_id: Some("instance-id".into()),
        ..classic_member("")
    });
    assert!(s.c.consumer_group("g").is_none(), "converted at once");
    let (_, records, write) = s.consumer_writes[0].clone();
    assert_eq!(records.last(), Some(&ConsumerGroupRecord::GroupTombstone));
    let Some(Conversion::ToClassic(record)) = s.conversions.get(&write).cloned() else {
        panic!("a conversion back: {:?}", s.conversions);
    };
    assert_eq!(record.generation, 2, "the group epoch");
    let ids: Vec<&str> = record
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert!(ids.contains(&c1.as_str()) && !ids.contains(&"m1") && ids.len() == 2);
    let new = record.members.iter().find(|m| m.member_id != c1).unwrap();
    assert_eq!(new.group_instance_id.as_deref(), Some("instance-id"));
    assert_eq!(new.session_timeout_ms, 10_000, "its JoinGroup's");
    assert_eq!(partitions(&new.assignment), m1_owns, "m1's partitions");
    s.finish_consumer_write(Ok(()));
    let joined = s.join_resp(t).unwrap();
    assert_eq!(
        (
            joined.error_code,
            joined.member_id.as_str(),
            joined.generation_id
        ),
        (code::NONE, new.member_id.as_str(), 2)
    );
    assert_eq!(s.group("g").state(), GroupState::Stable, "no rebalance");
    // Both go on in the classic group at generation 2.
    let t = s.sync(SyncGroupRequest {
        group_instance_id: Some("instance-id".into()),
        ..sync_request(&joined.member_id, 2, Vec::new())
    });
    assert_eq!(partitions(&s.sync_resp(t).unwrap().assignment), m1_owns);
    assert_eq!(s.heartbeat("g", &c1, 2, None), code::NONE);
}

/// With the downgrade disabled, the classic static member replaces the
/// consumer-protocol member inside the consumer group.
#[test]
fn a_replacing_classic_static_member_joins_the_consumer_group_without_the_downgrade() {
    let mut cfg = test_config();
    cfg.consumer.migration_policy = MigrationPolicy::Upgrade;
    let mut s = Shell::with_config(cfg);
    s.topics = topics();
    let t = s.consumer_heartbeat(ConsumerHeartbeatRequest {
        instance_id: Some("instance-id".into()),
        ..join("m1")
    });
    s.finish_consumer_write(Ok(()));
    assert!(s.consumer_answer(t).unwrap().is_ok());
    let t = s.join(JoinGroupRequest {
        group_instance_id: Some("instance-id".into()),
        protocols: vec![Protocol::new("range", encode_subscription(&["foo"]))],
        ..classic_member("")
    });
    s.finish_consumer_write(Ok(()));
    let joined = s.join_resp(t).unwrap();
    assert_eq!(joined.error_code, code::NONE);
    let group = s.c.consumer_group("g").expect("still a consumer group");
    assert!(group.member("m1").is_none());
    assert!(group
        .member(&joined.member_id)
        .unwrap()
        .uses_classic_protocol());
}
