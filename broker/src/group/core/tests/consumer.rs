//! KIP-848 consumer groups in the core: answers wait for their change to
//! be durable, a failed write drops the group, timers fence members.

use std::collections::BTreeMap;

use super::*;
use crate::group::consumer::heartbeat::HeartbeatRequest as ConsumerHeartbeat;
use crate::group::consumer::heartbeat::{HeartbeatError, HeartbeatResponse, MigrationPolicy};
use crate::group::consumer::records::{ConsumerGroupRecord, TopicMetadata};

pub(super) fn topics() -> BTreeMap<String, TopicMetadata> {
    [(
        "foo".to_string(),
        TopicMetadata {
            id: uuid::Uuid::from_u128(1),
            name: "foo".into(),
            num_partitions: 4,
        },
    )]
    .into()
}

pub(super) fn join(member: &str) -> ConsumerHeartbeat {
    ConsumerHeartbeat {
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["foo".into()]),
        owned: Some(Default::default()),
        ..Default::default()
    }
}

/// A classic consumer's JoinGroup to "g".
pub(super) fn classic_join() -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: String::new(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![Protocol {
            name: "range".into(),
            metadata: Bytes::new(),
        }],
        reason: None,
        api_version: 3,
        client_id: "c".into(),
        client_host: "h".into(),
    }
}

pub(super) fn beat(member: &str, epoch: i32) -> ConsumerHeartbeat {
    ConsumerHeartbeat {
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        ..Default::default()
    }
}

impl Shell {
    pub(super) fn consumer_heartbeat(&mut self, request: ConsumerHeartbeat) -> RequestToken {
        let t = self.token();
        let fx = self
            .c
            .consumer_group_heartbeat(t, request, &topics(), self.now);
        self.apply(fx);
        t
    }

    pub(super) fn consumer_answer(
        &mut self,
        t: RequestToken,
    ) -> Option<Result<HeartbeatResponse, HeartbeatError>> {
        match self.responses.remove(&t) {
            Some(Response::ConsumerGroupHeartbeat(r)) => Some(r),
            None => None,
            other => panic!("not a consumer heartbeat answer: {other:?}"),
        }
    }

    /// Reports the oldest consumer group write.
    pub(super) fn finish_consumer_write(&mut self, result: Result<(), i16>) {
        let (group, _, write) = self.consumer_writes.remove(0);
        let fx = self
            .c
            .complete_consumer_write(&group, write, result, self.now);
        self.apply(fx);
    }
}

#[test]
fn an_answer_waits_until_its_change_is_durable() {
    let mut s = Shell::new();
    let t = s.consumer_heartbeat(join("m1"));
    assert_eq!(s.consumer_writes.len(), 1);
    assert!(s.consumer_answer(t).is_none(), "not before the write");
    // The change is visible at once to the next request (as Apache's).
    assert_eq!(s.c.consumer_group("g").unwrap().group_epoch(), 1);
    // A heartbeat that changes nothing waits behind the write.
    let t2 = s.consumer_heartbeat(beat("m1", 1));
    assert_eq!(s.consumer_writes.len(), 1);
    assert!(s.consumer_answer(t2).is_none());
    s.finish_consumer_write(Ok(()));
    let answer = s.consumer_answer(t).unwrap().unwrap();
    assert_eq!((answer.member_id.as_str(), answer.member_epoch), ("m1", 1));
    assert_eq!(
        answer
            .assignment
            .unwrap()
            .values()
            .map(|p| p.len())
            .sum::<usize>(),
        4
    );
    assert_eq!(s.consumer_answer(t2).unwrap().unwrap().member_epoch, 1);
    // Nothing in flight: answered at once.
    let t3 = s.consumer_heartbeat(beat("m1", 1));
    assert!(s.consumer_answer(t3).is_some());
}

#[test]
fn a_failed_write_drops_the_group_and_answers_not_coordinator() {
    let mut s = Shell::new();
    let t = s.consumer_heartbeat(join("m1"));
    let t2 = s.consumer_heartbeat(beat("m1", 1));
    s.finish_consumer_write(Err(code::KAFKA_STORAGE_ERROR));
    for t in [t, t2] {
        assert_eq!(
            s.consumer_answer(t).unwrap().unwrap_err().code,
            code::NOT_COORDINATOR
        );
    }
    assert!(!s.c.is_resident("g"));
    let session = TimerKey::ConsumerSession("g".into(), "m1".into());
    assert_eq!(
        s.c.timer_deadline(&session),
        None,
        "its timers went with it"
    );
}

#[test]
fn an_expired_session_fences_the_member() {
    let mut s = Shell::new();
    let t = s.consumer_heartbeat(join("m1"));
    s.finish_consumer_write(Ok(()));
    assert!(s.consumer_answer(t).unwrap().is_ok());
    let session = s.c.config().consumer.session_timeout_ms as u64;
    s.sleep(session - 1);
    assert!(s.consumer_writes.is_empty());
    s.sleep(1);
    let (_, records, _) = &s.consumer_writes[0];
    assert!(records.contains(&ConsumerGroupRecord::MemberTombstone {
        member_id: "m1".into()
    }));
    s.finish_consumer_write(Ok(()));
    let group = s.c.consumer_group("g").unwrap();
    assert!(group.members().is_empty());
    assert_eq!(group.group_epoch(), 2);
}

#[test]
fn a_loaded_group_arms_its_members_sessions() {
    let mut s = Shell::new();
    s.consumer_heartbeat(join("m1"));
    s.finish_consumer_write(Ok(()));
    let group = s.c.consumer_group("g").unwrap().clone();
    let fx = s.c.unload_group("g", s.now);
    s.apply(fx);
    assert!(!s.c.is_resident("g"));
    s.c.load_consumer_group(group, s.now);
    assert!(s.c.is_resident("g"));
    let key = TimerKey::ConsumerSession("g".into(), "m1".into());
    assert_eq!(s.c.timer_deadline(&key), Some(s.now + 45_000));
    // The member carries on at its epoch.
    let t = s.consumer_heartbeat(beat("m1", 1));
    assert_eq!(s.consumer_answer(t).unwrap().unwrap().member_epoch, 1);
}

#[test]
fn test_consumer_group_dynamic_configs() {
    use crate::group::configs::{
        GroupConfigs, CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS,
    };
    let mut s = Shell::new();
    let session = TimerKey::ConsumerSession("g".into(), "m1".into());
    // The session timer is armed at the first heartbeat, with the broker's
    // settings.
    let t = s.consumer_heartbeat(join("m1"));
    s.finish_consumer_write(Ok(()));
    let first = s.consumer_answer(t).unwrap().unwrap();
    assert_eq!(first.member_epoch, 1);
    assert_eq!(first.heartbeat_interval_ms, 5_000);
    assert_eq!(s.c.timer_deadline(&session), Some(s.now + 45_000));
    s.sleep(first.heartbeat_interval_ms as u64);

    // The group's configs change.
    let mut configs = GroupConfigs::default();
    configs.set(
        "g",
        [
            (CONSUMER_SESSION_TIMEOUT_MS.to_string(), "50000".to_string()),
            (
                CONSUMER_HEARTBEAT_INTERVAL_MS.to_string(),
                "10000".to_string(),
            ),
        ]
        .into(),
    );
    s.c.set_group_configs(&configs);

    // The next heartbeat re-arms the session timer with the new timeout
    // and hands out the new interval.
    let t = s.consumer_heartbeat(beat("m1", 1));
    let second = s.consumer_answer(t).unwrap().unwrap();
    assert_eq!(second.member_epoch, 1);
    assert_eq!(second.heartbeat_interval_ms, 10_000);
    assert_eq!(s.c.timer_deadline(&session), Some(s.now + 50_000));
    s.sleep(second.heartbeat_interval_ms as u64);
    assert!(s.consumer_writes.is_empty(), "nobody was fenced");

    // Leaving cancels the member's timers.
    let mut leave = beat("m1", -1);
    leave.member_epoch = -1;
    let t = s.consumer_heartbeat(leave);
    s.finish_consumer_write(Ok(()));
    assert_eq!(s.consumer_answer(t).unwrap().unwrap().member_epoch, -1);
    assert_eq!(s.c.timer_deadline(&session), None);
    let rebalance = TimerKey::ConsumerRebalance("g".into(), "m1".into());
    assert_eq!(s.c.timer_deadline(&rebalance), None);
}

#[test]
fn a_loaded_group_arms_its_sessions_with_its_own_timeout() {
    use crate::group::configs::{GroupConfigs, CONSUMER_SESSION_TIMEOUT_MS};
    let mut s = Shell::new();
    s.consumer_heartbeat(join("m1"));
    s.finish_consumer_write(Ok(()));
    let group = s.c.consumer_group("g").unwrap().clone();
    let fx = s.c.unload_group("g", s.now);
    s.apply(fx);
    let mut configs = GroupConfigs::default();
    configs.set(
        "g",
        [(CONSUMER_SESSION_TIMEOUT_MS.to_string(), "55000".to_string())].into(),
    );
    s.c.set_group_configs(&configs);
    s.c.load_consumer_group(group, s.now);
    let key = TimerKey::ConsumerSession("g".into(), "m1".into());
    assert_eq!(s.c.timer_deadline(&key), Some(s.now + 55_000));
}

#[test]
fn a_classic_group_with_members_is_not_a_consumer_group_without_the_upgrade() {
    let mut cfg = test_config();
    cfg.consumer.migration_policy = MigrationPolicy::Downgrade;
    let mut s = Shell::with_config(cfg);
    // A member joins (and waits out the initial rebalance delay).
    s.join(classic_join());
    assert_eq!(s.c.group("g").map(|g| g.num_members()), Some(1));
    let t = s.consumer_heartbeat(join("m1"));
    let e = s.consumer_answer(t).unwrap().unwrap_err();
    assert_eq!(e.code, code::GROUP_ID_NOT_FOUND);
    assert_eq!(e.message, "Group g is not a consumer group.");
}

/// Apache's OffsetMetadataManagerTest consumer group commit cases: the
/// generation id of a consumer-protocol member is its member epoch.
impl Shell {
    pub(super) fn member_commit(&mut self, member: &str, epoch: i32, version: i16) -> i16 {
        self.member_commit_to(member, epoch, version, "foo")
    }

    /// Commits offset 42 of `topic`-0 in "g" and makes it durable.
    pub(super) fn member_commit_to(
        &mut self,
        member: &str,
        epoch: i32,
        version: i16,
        topic: &str,
    ) -> i16 {
        let t = self.token();
        let request = OffsetCommitRequest {
            generation_id: epoch,
            member_id: member.into(),
            api_version: version,
            ..OffsetCommitRequest::simple("g", topic, 0, 42)
        };
        let fx = self.c.offset_commit(t, request, self.now);
        self.apply(fx);
        if let Some(plan) = self.commit_plans.pop() {
            let fx = self.c.complete_offset_commit(plan.token, self.now);
            self.apply(fx);
        }
        self.commit_resp(t).unwrap().topics[0].partitions[0].error_code
    }

    pub(super) fn stable_consumer_group(&mut self) {
        let t = self.consumer_heartbeat(join("m1"));
        self.finish_consumer_write(Ok(()));
        assert!(self.consumer_answer(t).unwrap().is_ok());
    }
}

#[test]
fn test_consumer_group_offset_commit() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(s.member_commit("m1", 1, 9), code::NONE);
    // Still a consumer group, with the offset.
    assert!(s.c.group("g").is_none());
    assert!(s.c.consumer_group("g").is_some());
    assert_eq!(
        s.c.committed_offset("g", "foo", 0).map(|o| o.offset),
        Some(42)
    );
    let fetched = s.c.offset_fetch(&OffsetFetchRequest {
        group_id: "g".into(),
        topics: None,
        require_stable: false,
        ..OffsetFetchRequest::admin()
    });
    assert_eq!(fetched.topics[0].partitions[0].offset, 42);
}

#[test]
fn test_consumer_group_offset_commit_with_unknown_member_id() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(s.member_commit("other", 1, 9), code::UNKNOWN_MEMBER_ID);
}

#[test]
fn test_consumer_group_offset_commit_with_stale_member_epoch() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(s.member_commit("m1", 10, 9), code::STALE_MEMBER_EPOCH);
}

#[test]
fn test_consumer_group_offset_commit_with_version_smaller_than_version9() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(s.member_commit("m1", 1, 8), code::UNSUPPORTED_VERSION);
}

#[test]
fn test_consumer_group_offset_commit_from_admin_client() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    // The group has a member: an admin commit is refused...
    assert_eq!(s.member_commit("", -1, 9), code::UNKNOWN_MEMBER_ID);
    // ...until it is empty.
    s.sleep(s.c.config().consumer.session_timeout_ms as u64);
    s.finish_consumer_write(Ok(()));
    assert_eq!(s.member_commit("", -1, 9), code::NONE);
}

#[test]
fn a_classic_member_with_an_unreadable_subscription_cannot_join_a_consumer_group() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    // Its protocol's metadata is no consumer subscription (Apache answers
    // the IllegalStateException it throws with UNKNOWN_SERVER_ERROR).
    let t = s.join(classic_join());
    assert_eq!(
        s.join_resp(t).unwrap().error_code,
        code::UNKNOWN_SERVER_ERROR
    );
    assert_eq!(s.c.consumer_group("g").unwrap().members().len(), 1);
}

#[test]
fn list_groups_shows_consumer_groups_by_type_and_state() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    let listed = |types: &[&str], states: &[&str]| {
        let types: Vec<String> = types.iter().map(|t| t.to_string()).collect();
        let states: Vec<String> = states.iter().map(|t| t.to_string()).collect();
        s.c.list_groups(&states, &types)
            .into_iter()
            .map(|g| (g.group_id, g.protocol_type, g.group_state, g.group_type))
            .collect::<Vec<_>>()
    };
    let g = (
        "g".to_string(),
        "consumer".to_string(),
        "Stable".to_string(),
        "consumer".to_string(),
    );
    assert_eq!(listed(&["consumer"], &[]), vec![g.clone()]);
    assert_eq!(listed(&["Consumer"], &["stable"]), vec![g]);
    assert!(listed(&["consumer"], &["Empty"]).is_empty());
    assert!(listed(&["classic"], &[]).is_empty());
}

/// Apache's `testConsumerGroupDelete`-like flow: only an empty consumer
/// group is deleted; while its log is being removed nothing joins or
/// commits; then a new member starts a new group.
#[test]
fn only_an_empty_consumer_group_is_deleted() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(
        s.delete_groups(&["g"], None),
        vec![("g".to_string(), code::NON_EMPTY_GROUP)]
    );
    s.sleep(s.c.config().consumer.session_timeout_ms as u64);
    s.finish_consumer_write(Ok(()));
    assert!(s.c.consumer_group("g").unwrap().members().is_empty());

    let t = s.token();
    let fx = s.c.delete_groups(t, vec!["g".into()], s.now);
    s.apply(fx);
    assert_eq!(
        s.group_delete_plans.len(),
        1,
        "the log's removal is planned"
    );
    // Meanwhile: no join, no commit.
    let join_t = s.consumer_heartbeat(join("m2"));
    assert_eq!(
        s.consumer_answer(join_t).unwrap().unwrap_err().code,
        code::COORDINATOR_LOAD_IN_PROGRESS
    );
    assert_eq!(s.member_commit("", -1, 9), code::COORDINATOR_NOT_AVAILABLE);
    s.group_delete_plans.clear();
    let fx = s.c.complete_delete_groups(t, s.now);
    s.apply(fx);
    assert!(!s.c.is_resident("g"));
    assert_eq!(s.c.committed_offset("g", "foo", 0), None);
    // A new group under the same id starts at epoch 1.
    let t = s.consumer_heartbeat(join("m3"));
    s.finish_consumer_write(Ok(()));
    assert_eq!(s.consumer_answer(t).unwrap().unwrap().member_epoch, 1);
}

/// Apache 4.x: DescribeGroups v6 tells a consumer group is not a classic
/// group; older versions see it Dead, with no error.
#[test]
fn describe_groups_of_a_consumer_group() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    let old = &s.c.describe_groups(&["g".into()], 5)[0];
    assert_eq!(
        (
            old.error_code,
            old.group_state.as_str(),
            old.error_message.clone()
        ),
        (code::NONE, "Dead", None)
    );
    let v6 = &s.c.describe_groups(&["g".into(), "nothing".into()], 6);
    assert_eq!(
        (v6[0].error_code, v6[0].error_message.as_deref()),
        (
            code::GROUP_ID_NOT_FOUND,
            Some("Group g is not a classic group.")
        )
    );
    assert_eq!(
        v6[1].error_message.as_deref(),
        Some("Group nothing not found.")
    );
}

impl Shell {
    fn member_fetch(&self, member: Option<&str>, epoch: i32) -> i16 {
        self.c
            .offset_fetch(&OffsetFetchRequest {
                group_id: "g".into(),
                member_id: member.map(Into::into),
                member_epoch: epoch,
                ..OffsetFetchRequest::admin()
            })
            .error_code
    }
}

/// Apache's OffsetMetadataManagerTest consumer-group fetch cases (v9).
#[test]
fn test_consumer_group_offset_fetch_with_member_id_and_epoch() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(s.member_fetch(Some("m1"), 1), code::NONE);
    // An admin client, or a client outside the group.
    assert_eq!(s.member_fetch(None, -1), code::NONE);
}

#[test]
fn test_consumer_group_offset_fetch_with_unknown_member_id() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(s.member_fetch(Some("nobody"), 1), code::UNKNOWN_MEMBER_ID);
    assert_eq!(s.member_fetch(None, 1), code::UNKNOWN_MEMBER_ID);
}

#[test]
fn test_consumer_group_offset_fetch_with_stale_member_epoch() {
    let mut s = Shell::new();
    s.stable_consumer_group();
    assert_eq!(s.member_fetch(Some("m1"), 7), code::STALE_MEMBER_EPOCH);
}

/// `group.consumer.assignors`: its first is the default, and a member
/// asking for one it does not list gets UNSUPPORTED_ASSIGNOR with Apache's
/// message.
#[test]
fn the_configured_assignors_are_the_ones_served() {
    use crate::group::assignor::BuiltinAssignor;
    let mut config = test_config();
    config.consumer.assignors = vec![BuiltinAssignor::Range];
    let mut s = Shell::with_config(config);
    assert_eq!(s.c.consumer_assignor_names(), vec!["range"]);
    let t = s.consumer_heartbeat(ConsumerHeartbeat {
        server_assignor: Some("uniform".into()),
        ..join("m1")
    });
    let e = s.consumer_answer(t).unwrap().unwrap_err();
    assert_eq!(e.code, code::UNSUPPORTED_ASSIGNOR);
    assert_eq!(
        e.message,
        "ServerAssignor uniform is not supported. Supported assignors: range."
    );
    let t = s.consumer_heartbeat(join("m1"));
    s.finish_consumer_write(Ok(()));
    assert!(s.consumer_answer(t).unwrap().is_ok());
    assert_eq!(
        Shell::new().c.consumer_assignor_names(),
        vec!["uniform", "range"],
        "Apache's default list"
    );
}
