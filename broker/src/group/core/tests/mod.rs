//! Tests mirroring Apache's classic group conformance tests, driven through a
//! mock shell with an injected clock (no sleeping).

mod admin;
mod consumer;
mod join;
mod migration;
mod offsets;
mod rebalance;
mod static_members;
mod sync_heartbeat_leave;
mod txn_offsets;

use std::collections::HashMap;

use bytes::Bytes;

use super::protocol::encode_subscription;
use super::*;

pub(crate) const DELAY: u64 = 3_000;

pub(crate) fn test_config() -> GroupCoordinatorConfig {
    GroupCoordinatorConfig {
        min_session_timeout_ms: 10,
        ..GroupCoordinatorConfig::default()
    }
}

/// A mock shell: records answers, keeps the clock, acknowledges writes.
pub(crate) struct Shell {
    pub c: GroupCoordinator,
    pub now: u64,
    next_token: u64,
    pub responses: HashMap<RequestToken, Response>,
    pub persisted: Vec<GroupMetadataRecord>,
    /// Group metadata writes with an ack still waiting for an outcome.
    pub pending_acks: Vec<PersistToken>,
    /// When set, writes with an ack succeed immediately.
    pub auto_ack: bool,
    pub commit_plans: Vec<OffsetCommitPlan>,
    pub offset_delete_plans: Vec<OffsetDeletePlan>,
    pub group_delete_plans: Vec<DeleteGroupsPlan>,
    pub expired: Vec<ExpiredOffsets>,
    pub txn_offset_plans: Vec<TxnOffsetsPlan>,
    /// Transaction markers waiting for their write: (token, commit).
    pub txn_ends: Vec<(RequestToken, bool)>,
    /// Consumer group changes waiting for their write: (group, records, write).
    pub consumer_writes: Vec<(
        String,
        Vec<crate::group::consumer::records::ConsumerGroupRecord>,
        u64,
    )>,
    /// The conversions among them, by write.
    pub conversions: HashMap<u64, Conversion>,
    /// The topics that exist.
    pub topics: std::collections::BTreeMap<String, crate::group::consumer::records::TopicMetadata>,
}

impl Shell {
    pub fn new() -> Self {
        Self::with_config(test_config())
    }

    pub fn with_config(cfg: GroupCoordinatorConfig) -> Self {
        Shell {
            c: GroupCoordinator::new(cfg),
            now: 1_000_000,
            next_token: 0,
            responses: HashMap::new(),
            persisted: Vec::new(),
            pending_acks: Vec::new(),
            auto_ack: true,
            commit_plans: Vec::new(),
            offset_delete_plans: Vec::new(),
            group_delete_plans: Vec::new(),
            expired: Vec::new(),
            txn_offset_plans: Vec::new(),
            txn_ends: Vec::new(),
            consumer_writes: Vec::new(),
            conversions: HashMap::new(),
            topics: Default::default(),
        }
    }

    pub fn token(&mut self) -> RequestToken {
        self.next_token += 1;
        self.next_token
    }

    pub fn apply(&mut self, fx: Vec<Effect>) {
        for e in fx {
            match e {
                Effect::Respond(t, r) => {
                    assert!(
                        self.responses.insert(t, r).is_none(),
                        "request {t} answered twice"
                    );
                }
                Effect::PersistGroupMetadata { record, ack, .. } => {
                    self.persisted.push(record);
                    if let Some(a) = ack {
                        if self.auto_ack {
                            let fx = self.c.complete_group_persist(a, Ok(()), self.now);
                            self.apply(fx);
                        } else {
                            self.pending_acks.push(a);
                        }
                    }
                }
                Effect::PersistOffsets(p) => self.commit_plans.push(p),
                Effect::DeleteOffsets(p) => self.offset_delete_plans.push(p),
                Effect::DeleteGroups(p) => self.group_delete_plans.push(p),
                Effect::OffsetsExpired(e) => self.expired.push(e),
                Effect::PersistTxnOffsets(p) => self.txn_offset_plans.push(p),
                Effect::EndTxnOffsets { token, commit, .. } => self.txn_ends.push((token, commit)),
                Effect::PersistConsumerRecords {
                    group_id,
                    records,
                    write,
                    conversion,
                } => {
                    if let Some(c) = conversion {
                        self.conversions.insert(write, c);
                    }
                    self.consumer_writes.push((group_id, records, write))
                }
            }
        }
    }

    /// Apache's MockCoordinatorTimer: advance the clock, then fire every due
    /// timer (in deadline order) at the new time.
    pub fn sleep(&mut self, ms: u64) {
        self.now += ms;
        while let Some(k) = self.c.next_due_timer(self.now) {
            let fx = self.c.on_timer(k, self.now);
            self.apply(fx);
        }
    }

    pub fn join(&mut self, req: JoinGroupRequest) -> RequestToken {
        let t = self.token();
        let fx = self.c.join_group(t, req, &self.topics.clone(), self.now);
        self.apply(fx);
        t
    }

    pub fn sync(&mut self, req: SyncGroupRequest) -> RequestToken {
        let t = self.token();
        let fx = self.c.sync_group(t, req, self.now);
        self.apply(fx);
        t
    }

    pub fn heartbeat(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        instance: Option<&str>,
    ) -> i16 {
        let t = self.token();
        let fx = self.c.heartbeat(
            t,
            HeartbeatRequest {
                group_id: group.into(),
                generation_id: generation,
                member_id: member.into(),
                group_instance_id: instance.map(Into::into),
            },
            self.now,
        );
        self.apply(fx);
        match self.responses.remove(&t) {
            Some(Response::Heartbeat(h)) => h.error_code,
            other => panic!("no heartbeat answer: {other:?}"),
        }
    }

    pub fn leave(
        &mut self,
        group: &str,
        members: Vec<LeaveMember>,
        api_version: i16,
    ) -> LeaveGroupResponse {
        let t = self.token();
        let fx = self.c.leave_group(
            t,
            LeaveGroupRequest {
                group_id: group.into(),
                members,
                api_version,
            },
            self.now,
        );
        self.apply(fx);
        match self.responses.remove(&t) {
            Some(Response::Leave(l)) => l,
            other => panic!("no leave answer: {other:?}"),
        }
    }

    pub fn join_resp(&self, t: RequestToken) -> Option<JoinGroupResponse> {
        match self.responses.get(&t) {
            Some(Response::Join(j)) => Some(j.clone()),
            None => None,
            other => panic!("not a join answer: {other:?}"),
        }
    }

    pub fn sync_resp(&self, t: RequestToken) -> Option<SyncGroupResponse> {
        match self.responses.get(&t) {
            Some(Response::Sync(s)) => Some(s.clone()),
            None => None,
            other => panic!("not a sync answer: {other:?}"),
        }
    }

    pub fn commit_resp(&self, t: RequestToken) -> Option<OffsetCommitResponse> {
        match self.responses.get(&t) {
            Some(Response::OffsetCommit(s)) => Some(s.clone()),
            None => None,
            other => panic!("not a commit answer: {other:?}"),
        }
    }

    pub fn group(&self, id: &str) -> &ClassicGroup {
        self.c.group(id).expect("group resident")
    }

    /// Dynamic member joins (v4+ two-step) and the join phase completes.
    pub fn join_dynamic_and_complete(&mut self, req: JoinGroupRequest) -> JoinGroupResponse {
        let t = self.join(req.clone());
        let first = self.join_resp(t).expect("MEMBER_ID_REQUIRED");
        assert_eq!(first.error_code, code::MEMBER_ID_REQUIRED);
        let t = self.join(JoinGroupRequest {
            member_id: first.member_id,
            ..req
        });
        self.sleep(DELAY);
        self.join_resp(t).expect("join completed")
    }

    /// Static member joins an empty group and the join phase completes.
    pub fn join_static_and_complete(&mut self, req: JoinGroupRequest) -> JoinGroupResponse {
        let t = self.join(req);
        self.sleep(DELAY);
        self.join_resp(t).expect("join completed")
    }

    /// Apache `staticMembersJoinAndRebalance`: leader + follower joined and
    /// synced, group Stable at generation 1.
    pub fn static_members_join_and_rebalance(
        &mut self,
        group: &str,
        leader_iid: &str,
        follower_iid: &str,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
    ) -> (String, String, i32) {
        let req = JoinGroupRequest {
            group_instance_id: Some(leader_iid.into()),
            rebalance_timeout_ms,
            session_timeout_ms,
            ..join_req(group, "", protocol_superset())
        };
        let lt = self.join(req.clone());
        let ft = self.join(JoinGroupRequest {
            group_instance_id: Some(follower_iid.into()),
            ..req
        });
        self.sleep(DELAY);
        self.sleep(DELAY);
        let l = self.join_resp(lt).unwrap();
        let f = self.join_resp(ft).unwrap();
        assert_eq!(l.error_code, 0);
        assert_eq!(f.error_code, 0);
        let ls = self.sync(sync_req(
            group,
            &l.member_id,
            l.generation_id,
            Some(leader_iid),
            vec![],
        ));
        let fs = self.sync(sync_req(
            group,
            &f.member_id,
            f.generation_id,
            Some(follower_iid),
            vec![],
        ));
        assert_eq!(self.sync_resp(ls).unwrap().error_code, 0);
        assert_eq!(self.sync_resp(fs).unwrap().error_code, 0);
        assert!(self.group(group).is(GroupState::Stable));
        (l.member_id, f.member_id, l.generation_id)
    }

    /// Drives a consumer group with `n` dynamic members to Stable; returns
    /// the member ids (leader first) and the generation.
    pub fn stable_group(
        &mut self,
        group: &str,
        n: usize,
        protocols: Vec<Protocol>,
    ) -> (Vec<String>, i32) {
        let mut tokens = Vec::new();
        for i in 0..n {
            let t = self.join(JoinGroupRequest {
                api_version: 3,
                client_id: format!("client-{i}"),
                ..join_req(group, "", protocols.clone())
            });
            tokens.push(t);
        }
        self.sleep(DELAY);
        if n > 1 {
            // Later arrivals extended the initial delay once.
            self.sleep(DELAY);
        }
        let resps: Vec<JoinGroupResponse> =
            tokens.iter().map(|t| self.join_resp(*t).unwrap()).collect();
        let leader = resps[0].leader.clone();
        let generation = resps[0].generation_id;
        let mut ids: Vec<String> = resps.iter().map(|r| r.member_id.clone()).collect();
        ids.sort_by_key(|id| id != &leader);
        for id in &ids {
            let assignments = if *id == leader {
                ids.iter()
                    .map(|m| (m.clone(), Bytes::from_static(b"a")))
                    .collect()
            } else {
                vec![]
            };
            self.sync(sync_req(group, id, generation, None, assignments));
        }
        assert!(self.group(group).is(GroupState::Stable));
        (ids, generation)
    }
}

pub(crate) fn protocols(names: &[&str]) -> Vec<Protocol> {
    names
        .iter()
        .map(|n| Protocol::new(*n, encode_subscription(&["foo"])))
        .collect()
}

/// Apache `withProtocolSuperset`: range + roundrobin.
pub(crate) fn protocol_superset() -> Vec<Protocol> {
    protocols(&["range", "roundrobin"])
}

pub(crate) fn join_req(group: &str, member: &str, protocols: Vec<Protocol>) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 5_000,
        rebalance_timeout_ms: 10_000,
        member_id: member.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols,
        reason: None,
        api_version: 9,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
    }
}

/// Default consumer join (protocol "range").
pub(crate) fn consumer_join(group: &str, member: &str) -> JoinGroupRequest {
    join_req(group, member, protocols(&["range"]))
}

pub(crate) fn sync_req(
    group: &str,
    member: &str,
    generation: i32,
    instance: Option<&str>,
    assignments: Vec<(String, Bytes)>,
) -> SyncGroupRequest {
    SyncGroupRequest {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: instance.map(Into::into),
        protocol_type: None,
        protocol_name: None,
        assignments,
        api_version: 5,
    }
}

pub(crate) fn leave_member(member: &str, instance: Option<&str>) -> LeaveMember {
    LeaveMember {
        member_id: member.into(),
        group_instance_id: instance.map(Into::into),
        reason: Some("test".into()),
    }
}
