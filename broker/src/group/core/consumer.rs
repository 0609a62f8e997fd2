//! KIP-848 consumer groups in the coordinator core, beside classic groups
//! and sharing their offsets: ConsumerGroupHeartbeat through the pure
//! [`crate::group::consumer::heartbeat`], the member timers, and the
//! writes of each change.
//!
//! A change is replayed on the in-memory group when it is computed (the
//! next heartbeat sees it, as Apache's coordinator does) and answered once
//! it is durable; an answer that changed nothing waits behind the group's
//! writes still in flight, so no client hears of state that might yet be
//! lost. A write that fails drops the group from memory: its log, which
//! never got the change, is the truth the next request reads back.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;

use super::classic_bridge;
use super::{code, Conversion, Effect, GroupCoordinator, RequestToken, Response, TimerKey};
use crate::group::assignor::{self, PartitionAssignor};
use crate::group::consumer::group::{replay_change, ConsumerGroup, LEAVE_GROUP_MEMBER_EPOCH};
use crate::group::consumer::heartbeat::{
    self, on_rebalance_timeout, on_session_timeout, HeartbeatError, HeartbeatRequest, TimerOp,
    TopicsView,
};
use crate::group::consumer::reconcile::MemberState;
use crate::group::consumer::records::ConsumerGroupRecord;

/// `group.consumer.assignors`, the default first.
pub struct Assignors(pub Vec<Box<dyn PartitionAssignor>>);

impl Default for Assignors {
    fn default() -> Self {
        Assignors(assignor::defaults())
    }
}

impl Assignors {
    /// The assignors `group.consumer.assignors` lists, in its order.
    pub fn of(list: &[assignor::BuiltinAssignor]) -> Self {
        Assignors(list.iter().map(|a| a.build()).collect())
    }
}

impl fmt::Debug for Assignors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|a| a.name()))
            .finish()
    }
}

/// An answer waiting for its group's writes.
#[derive(Debug)]
pub(crate) struct Pending {
    /// The write this entry is, if it is one.
    write: Option<u64>,
    answer: Option<(RequestToken, Response)>,
    durable: bool,
}

/// The core's consumer groups.
#[derive(Debug, Default)]
pub(crate) struct ConsumerGroups {
    pub(crate) groups: HashMap<String, ConsumerGroup>,
    /// (group, member) → the epoch its armed rebalance timer fences at.
    rebalance_epochs: HashMap<(String, String), i32>,
    /// Group → its writes not yet durable and the answers behind them.
    pending: HashMap<String, VecDeque<Pending>>,
    next_write: u64,
    pub(crate) assignors: Assignors,
    /// Empty groups whose deletion (DeleteGroups) is being made durable:
    /// nothing joins or commits meanwhile.
    pub(crate) deleting: HashSet<String>,
}

impl GroupCoordinator {
    pub fn consumer_group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.consumer.groups.get(group_id)
    }

    /// `group.consumer.assignors`, the default first.
    pub fn consumer_assignor_names(&self) -> Vec<&'static str> {
        self.consumer.assignors.0.iter().map(|a| a.name()).collect()
    }

    /// Makes a consumer group read from its log resident: every member's
    /// session timer is armed, and the rebalance timer of every member
    /// still revoking (Apache's `onLoaded`).
    pub fn load_consumer_group(&mut self, group: ConsumerGroup, now_ms: u64) {
        let group_id = group.group_id().to_string();
        tracing::info!(group = %group_id, members = group.members().len(), epoch = group.group_epoch(),
                       "loaded consumer group");
        let timing = self.consumer_timing(&group_id);
        let mut ops = Vec::new();
        for member in group.members().values() {
            let session_timeout_ms = member
                .classic_session_timeout_ms()
                .unwrap_or(timing.session_timeout_ms);
            ops.push(TimerOp::ScheduleSession {
                member_id: member.member_id.clone(),
                deadline_ms: now_ms + session_timeout_ms.max(0) as u64,
            });
            if member.assignment.state == MemberState::UnrevokedPartitions {
                ops.push(TimerOp::ScheduleRebalance {
                    member_id: member.member_id.clone(),
                    member_epoch: member.member_epoch(),
                    deadline_ms: now_ms + member.metadata.rebalance_timeout_ms.max(0) as u64,
                });
            }
        }
        self.consumer.groups.insert(group_id.clone(), group);
        self.apply_timer_ops(&group_id, ops);
    }

    /// What a heartbeat of `group_id`'s members is computed with.
    pub(super) fn heartbeat_context<'a>(
        &'a self,
        group_id: &str,
        topics: &'a dyn TopicsView,
        now_ms: u64,
    ) -> heartbeat::Context<'a> {
        heartbeat::Context {
            config: &self.config.consumer,
            timing: self.consumer_timing(group_id),
            assignors: &self.consumer.assignors.0,
            topics,
            now_ms,
        }
    }

    /// ConsumerGroupHeartbeat. `topics`: the topics that exist now.
    pub fn consumer_group_heartbeat(
        &mut self,
        token: RequestToken,
        request: HeartbeatRequest,
        topics: &dyn TopicsView,
        now_ms: u64,
    ) -> Vec<Effect> {
        let group_id = request.group_id.clone();
        if self.consumer.deleting.contains(&group_id) {
            return vec![heartbeat_answer(
                token,
                Err(HeartbeatError {
                    code: code::COORDINATOR_LOAD_IN_PROGRESS,
                    message: format!("Group {group_id} is being deleted."),
                }),
            )];
        }
        let mut upgrade = None;
        if let Some(classic) = self.groups.get(&group_id) {
            if classic.num_members() > 0 {
                // A consumer-protocol member joining a classic group with
                // members converts it, if the policy allows (Apache's
                // `validateOnlineUpgrade`).
                let not_consumer = || {
                    vec![heartbeat_answer(
                        token,
                        Err(HeartbeatError {
                            code: code::GROUP_ID_NOT_FOUND,
                            message: format!("Group {group_id} is not a consumer group."),
                        }),
                    )]
                };
                if request.member_epoch != 0 {
                    return not_consumer();
                }
                if let Some(why) = self.upgrade_refused(classic) {
                    tracing::info!(group = %group_id, "cannot upgrade the classic group to a consumer group: {why}");
                    return not_consumer();
                }
                match classic_bridge::upgrade_records(classic, topics) {
                    Ok(records) => upgrade = Some(records),
                    Err(why) => {
                        tracing::warn!(group = %group_id, "cannot upgrade the classic group to a consumer group: {why}");
                        return vec![heartbeat_answer(
                            token,
                            Err(HeartbeatError {
                                code: code::GROUP_ID_NOT_FOUND,
                                message: format!("Cannot upgrade the classic group {group_id} to consumer group because the embedded consumer protocol is malformed."),
                            }),
                        )];
                    }
                }
            } else if request.member_epoch == 0 {
                // An empty classic group (offsets only) becomes a consumer
                // group, keeping its offsets (Apache deletes the empty
                // classic group and creates the consumer group).
                self.groups.remove(&group_id);
            }
        }
        let converted = upgrade.as_ref().map(|records| {
            let mut group = None;
            replay_change(&mut group, &group_id, records);
            group.unwrap_or_else(|| ConsumerGroup::new(group_id.clone()))
        });
        let cx = self.heartbeat_context(&group_id, topics, now_ms);
        let group = converted
            .as_ref()
            .or_else(|| self.consumer.groups.get(&group_id));
        let result =
            heartbeat::heartbeat(group, &request, &cx, || uuid::Uuid::new_v4().to_string());
        let result = match result {
            Err(e) => return vec![heartbeat_answer(token, Err(e))],
            Ok(result) => result,
        };
        let answer = (token, Response::ConsumerGroupHeartbeat(Ok(result.response)));
        if let (Some(records), Some(converted)) = (upgrade, converted) {
            let mut fx = self.drop_upgraded_classic_group(&group_id, &converted, now_ms);
            self.apply_timer_ops(&group_id, result.timers);
            let mut all = records;
            all.extend(result.records);
            fx.extend(self.write_consumer_change(
                &group_id,
                all,
                Some(answer),
                Some(Conversion::FromClassic),
            ));
            return fx;
        }
        let leaving = request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH;
        match member_fenced(&result.records).filter(|_| leaving) {
            Some(member) => {
                self.fence_consumer_member(&group_id, &member, result.records, Some(answer), now_ms)
            }
            None => {
                self.apply_timer_ops(&group_id, result.timers);
                self.write_consumer_change(&group_id, result.records, Some(answer), None)
            }
        }
    }

    /// The outcome of a [`Effect::PersistConsumerRecords`] write.
    pub fn complete_consumer_write(
        &mut self,
        group_id: &str,
        write: u64,
        result: Result<(), i16>,
        now_ms: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let Some(queue) = self.consumer.pending.get_mut(group_id) else {
            return fx;
        };
        if let Err(e) = result {
            let error = super::append_error_to_response_error(e);
            tracing::warn!(group = %group_id, error, "a consumer group change was not written; unloading the group");
            fx.extend(self.unload_group(group_id, now_ms));
            return fx;
        }
        if let Some(entry) = queue.iter_mut().find(|p| p.write == Some(write)) {
            entry.durable = true;
        }
        while queue.front().is_some_and(|p| p.durable) {
            let entry = queue.pop_front().expect("a front");
            if let Some((token, response)) = entry.answer {
                fx.push(Effect::Respond(token, response));
            }
        }
        if queue.is_empty() {
            self.consumer.pending.remove(group_id);
        }
        fx
    }

    /// A consumer member's timer fired.
    pub(crate) fn on_consumer_timer(&mut self, key: TimerKey, now_ms: u64, fx: &mut Vec<Effect>) {
        let (group_id, member_id, records) = match &key {
            TimerKey::ConsumerSession(g, m) => {
                let Some(group) = self.consumer.groups.get(g) else {
                    return;
                };
                tracing::info!(group = %g, member = %m, "consumer group member fenced: its session expired");
                (g, m, on_session_timeout(group, m))
            }
            TimerKey::ConsumerRebalance(g, m) => {
                let epoch = self
                    .consumer
                    .rebalance_epochs
                    .remove(&(g.clone(), m.clone()));
                let (Some(group), Some(epoch)) = (self.consumer.groups.get(g), epoch) else {
                    return;
                };
                let records = on_rebalance_timeout(group, m, epoch);
                if !records.is_empty() {
                    tracing::info!(group = %g, member = %m, epoch,
                                   "consumer group member fenced: it did not revoke its partitions within its rebalance timeout");
                }
                (g, m, records)
            }
            TimerKey::ConsumerJoin(g, m) | TimerKey::ConsumerSync(g, m) => {
                let Some(group) = self.consumer.groups.get(g) else {
                    return;
                };
                let which = if matches!(key, TimerKey::ConsumerJoin(..)) {
                    "join"
                } else {
                    "sync"
                };
                tracing::info!(group = %g, member = %m, "classic member of a consumer group fenced: it did not {which} within its rebalance timeout");
                (g, m, on_session_timeout(group, m))
            }
            _ => return,
        };
        if records.is_empty() {
            return;
        }
        let (group_id, member_id) = (group_id.clone(), member_id.clone());
        fx.extend(self.fence_consumer_member(&group_id, &member_id, records, None, now_ms));
    }

    /// Writes the fencing of `member_id` (its `records`), or, when only
    /// classic members would remain, the group's conversion back to a
    /// classic group, which then rebalances so they rejoin it (Apache's
    /// `consumerGroupFenceMember`).
    fn fence_consumer_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        records: Vec<ConsumerGroupRecord>,
        answer: Option<(RequestToken, Response)>,
        now_ms: u64,
    ) -> Vec<Effect> {
        let policy = self.config.consumer.migration_policy;
        let downgrade = self.consumer.groups.get(group_id).and_then(|group| {
            classic_bridge::downgrade_on_fence(group, member_id, policy, self.config.max_group_size)
                .then(|| {
                    let members: Vec<String> = group.members().keys().cloned().collect();
                    (
                        classic_bridge::downgrade(group, Some(member_id), now_ms),
                        members,
                    )
                })
        });
        let Some(((tombstones, record), members)) = downgrade else {
            self.apply_timer_ops(group_id, TimerOp::cancel_all(member_id));
            return self.write_consumer_change(group_id, records, answer, None);
        };
        for m in &members {
            self.apply_timer_ops(group_id, TimerOp::cancel_all(m));
        }
        tracing::info!(group = %group_id, members = record.members.len(), generation = record.generation,
                       "converting the consumer group back to a classic group: its last consumer-protocol member left");
        let mut fx = self.write_consumer_change(
            group_id,
            tombstones,
            answer,
            Some(Conversion::ToClassic(record.clone())),
        );
        let reason =
            format!("Downgrade group {group_id} from consumer to classic for member leaving.");
        self.install_downgraded_group(&record, Some(reason), now_ms, &mut fx);
        fx
    }

    /// The classic group a downgrade wrote, live: its members' heartbeats
    /// armed, and a rebalance started for `rebalance`'s reason if any.
    pub(super) fn install_downgraded_group(
        &mut self,
        record: &super::GroupMetadataRecord,
        rebalance: Option<String>,
        now_ms: u64,
        fx: &mut Vec<Effect>,
    ) {
        let group_id = record.group_id.clone();
        self.groups.insert(
            group_id.clone(),
            super::ClassicGroup::from_record(record, now_ms),
        );
        self.with_group(&group_id, now_ms, fx, |g, cx| {
            for id in g.member_ids() {
                super::rebalance::reschedule_member_heartbeat(g, &id, cx);
            }
            if let Some(reason) = rebalance {
                super::rebalance::prepare_rebalance(g, &reason, cx);
            }
        });
    }

    /// DeleteGroups of a consumer group: only an Empty one (Apache's
    /// `validateDeleteGroup`); it stays, refusing joins and commits, until
    /// its log is gone.
    pub(crate) fn start_consumer_group_delete(&mut self, group_id: &str) -> Option<i16> {
        let group = self.consumer.groups.get(group_id)?;
        Some(if self.consumer.deleting.contains(group_id) {
            code::GROUP_ID_NOT_FOUND
        } else if group.members().is_empty() {
            self.consumer.deleting.insert(group_id.to_string());
            code::NONE
        } else {
            code::NON_EMPTY_GROUP
        })
    }

    /// A consumer group's deletion is durable (`done`) or failed.
    pub(crate) fn finish_consumer_group_delete(&mut self, group_id: &str, done: bool) {
        if self.consumer.deleting.remove(group_id) && done {
            self.drop_consumer_group(group_id);
            self.offsets.remove(group_id);
            self.timers.cancel_group(group_id);
            tracing::info!(group = %group_id, "consumer group deleted");
        }
    }

    /// Forgets a consumer group whose removal is durable or decided.
    pub(crate) fn drop_consumer_group(&mut self, group_id: &str) {
        self.consumer.groups.remove(group_id);
        self.consumer.pending.remove(group_id);
        self.consumer
            .rebalance_epochs
            .retain(|(g, _), _| g != group_id);
    }

    /// Whether a write of the consumer group is not yet durable.
    pub(crate) fn consumer_group_writing(&self, group_id: &str) -> bool {
        self.consumer
            .pending
            .get(group_id)
            .is_some_and(|p| !p.is_empty())
    }

    /// Forgets a consumer group held in memory; answers waiting for its
    /// writes get NOT_COORDINATOR. Whether there was one.
    pub(crate) fn unload_consumer_group(&mut self, group_id: &str, fx: &mut Vec<Effect>) -> bool {
        for entry in self.consumer.pending.remove(group_id).into_iter().flatten() {
            if let Some((token, _)) = entry.answer {
                fx.push(heartbeat_answer(
                    token,
                    Err(HeartbeatError {
                        code: code::NOT_COORDINATOR,
                        message: "This is not the correct coordinator.".into(),
                    }),
                ));
            }
        }
        self.consumer.deleting.remove(group_id);
        let had = self.consumer.groups.contains_key(group_id);
        self.drop_consumer_group(group_id);
        had
    }

    /// Replays a change on the group now and writes it; `answer` goes out
    /// once it, and every write before it, is durable.
    pub(super) fn write_consumer_change(
        &mut self,
        group_id: &str,
        records: Vec<ConsumerGroupRecord>,
        answer: Option<(RequestToken, Response)>,
        conversion: Option<Conversion>,
    ) -> Vec<Effect> {
        let queue = self
            .consumer
            .pending
            .entry(group_id.to_string())
            .or_default();
        if records.is_empty() {
            if queue.is_empty() {
                self.consumer.pending.remove(group_id);
                return answer
                    .map(|(t, r)| Effect::Respond(t, r))
                    .into_iter()
                    .collect();
            }
            queue.push_back(Pending {
                write: None,
                answer,
                durable: true,
            });
            return Vec::new();
        }
        self.consumer.next_write += 1;
        let write = self.consumer.next_write;
        queue.push_back(Pending {
            write: Some(write),
            answer,
            durable: false,
        });
        let mut group = self.consumer.groups.remove(group_id);
        replay_change(&mut group, group_id, &records);
        if let Some(group) = group {
            self.consumer.groups.insert(group_id.to_string(), group);
        }
        vec![Effect::PersistConsumerRecords {
            group_id: group_id.to_string(),
            records,
            write,
            conversion,
        }]
    }

    pub(super) fn apply_timer_ops(&mut self, group_id: &str, ops: Vec<TimerOp>) {
        let key = |m: &str| (group_id.to_string(), m.to_string());
        for op in ops {
            match op {
                TimerOp::ScheduleSession {
                    member_id,
                    deadline_ms,
                } => self.timers.schedule(
                    TimerKey::ConsumerSession(group_id.to_string(), member_id),
                    deadline_ms,
                ),
                TimerOp::ScheduleRebalance {
                    member_id,
                    member_epoch,
                    deadline_ms,
                } => {
                    self.consumer
                        .rebalance_epochs
                        .insert(key(&member_id), member_epoch);
                    self.timers.schedule(
                        TimerKey::ConsumerRebalance(group_id.to_string(), member_id),
                        deadline_ms,
                    );
                }
                TimerOp::CancelSession { member_id } => self
                    .timers
                    .cancel(&TimerKey::ConsumerSession(group_id.to_string(), member_id)),
                TimerOp::CancelRebalance { member_id } => {
                    self.consumer.rebalance_epochs.remove(&key(&member_id));
                    self.timers.cancel(&TimerKey::ConsumerRebalance(
                        group_id.to_string(),
                        member_id,
                    ));
                }
                TimerOp::ScheduleJoinIfAbsent {
                    member_id,
                    deadline_ms,
                } => {
                    let key = TimerKey::ConsumerJoin(group_id.to_string(), member_id);
                    if self.timers.deadline(&key).is_none() {
                        self.timers.schedule(key, deadline_ms);
                    }
                }
                TimerOp::CancelJoin { member_id } => self
                    .timers
                    .cancel(&TimerKey::ConsumerJoin(group_id.to_string(), member_id)),
                TimerOp::ScheduleSync {
                    member_id,
                    deadline_ms,
                } => self.timers.schedule(
                    TimerKey::ConsumerSync(group_id.to_string(), member_id),
                    deadline_ms,
                ),
                TimerOp::CancelSync { member_id } => self
                    .timers
                    .cancel(&TimerKey::ConsumerSync(group_id.to_string(), member_id)),
            }
        }
    }
}

fn heartbeat_answer(
    token: RequestToken,
    answer: Result<heartbeat::HeartbeatResponse, HeartbeatError>,
) -> Effect {
    Effect::Respond(token, Response::ConsumerGroupHeartbeat(answer))
}

/// The member a fencing change removes (its member tombstone).
fn member_fenced(records: &[ConsumerGroupRecord]) -> Option<String> {
    records.iter().find_map(|r| match r {
        ConsumerGroupRecord::MemberTombstone { member_id } => Some(member_id.clone()),
        _ => None,
    })
}
