//! Online migration in the core: classic members served inside consumer
//! groups (JoinGroup, SyncGroup, Heartbeat and LeaveGroup through the pure
//! [`super::classic_bridge`]), and the upgrade of a classic group
//! when a consumer-protocol member joins it, and its downgrade when a
//! classic static member replaces the last consumer-protocol member. The
//! downgrade when the last consumer-protocol member is fenced is in
//! [`super::consumer`].

use super::classic_bridge;
use super::leave::shape;
use super::rebalance::answer_leftover_waiters;
use super::{
    code, ClassicGroup, Conversion, Ctx, Effect, GroupCoordinator, HeartbeatRequest,
    HeartbeatResponse, JoinGroupRequest, LeaveGroupRequest, LeaveGroupResponse, RequestToken,
    Response, SyncGroupRequest,
};
use crate::group::consumer::group::{replay_change, ConsumerGroup};
use crate::group::consumer::heartbeat::{TimerOp, TopicsView};
use crate::group::consumer::records::ConsumerGroupRecord;

impl GroupCoordinator {
    /// Why a classic group with members may not become a consumer group
    /// (Apache's `validateOnlineUpgrade`), if it may not.
    pub(super) fn upgrade_refused(&self, classic: &ClassicGroup) -> Option<&'static str> {
        if !self.config.consumer.migration_policy.upgrade_enabled() {
            Some("the online upgrade is disabled")
        } else if !classic.uses_consumer_protocol() {
            Some("the group does not use the consumer embedded protocol")
        } else if classic.num_members() > self.config.consumer.max_size {
            Some("the group size exceeds the consumer group maximum size")
        } else {
            None
        }
    }

    /// A classic group converted to `converted` leaves memory: its parked
    /// JoinGroup and SyncGroup are told REBALANCE_IN_PROGRESS (they rejoin,
    /// into the consumer group), its timers go, and each converted member's
    /// session runs on its classic session timeout.
    pub(super) fn drop_upgraded_classic_group(
        &mut self,
        group_id: &str,
        converted: &ConsumerGroup,
        now_ms: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        if let Some(g) = self.groups.remove(group_id) {
            tracing::info!(group = %group_id, members = g.num_members(), generation = g.generation_id,
                           "converting the classic group to a consumer group: a consumer-protocol member joins");
            let mut cx = Ctx {
                cfg: &self.config,
                timers: &mut self.timers,
                persist: &mut self.persist,
                now: now_ms,
                fx: &mut fx,
            };
            for m in g.members_in_order() {
                answer_leftover_waiters(m, code::REBALANCE_IN_PROGRESS, &mut cx);
            }
        }
        self.timers.cancel_group(group_id);
        let timing = self.consumer_timing(group_id);
        let sessions = converted
            .members()
            .values()
            .map(|m| TimerOp::ScheduleSession {
                member_id: m.member_id.clone(),
                deadline_ms: now_ms
                    + m.classic_session_timeout_ms()
                        .unwrap_or(timing.session_timeout_ms)
                        .max(0) as u64,
            })
            .collect();
        self.apply_timer_ops(group_id, sessions);
        fx
    }

    /// JoinGroup of a classic member to a consumer group with members
    /// (Apache's `classicGroupJoinToConsumerGroup`), answered once durable.
    pub(super) fn classic_join_to_consumer_group(
        &mut self,
        token: RequestToken,
        req: &JoinGroupRequest,
        topics: &dyn TopicsView,
        now_ms: u64,
    ) -> Vec<Effect> {
        let Some(group) = self.consumer.groups.get(&req.group_id) else {
            return Vec::new();
        };
        let cx = self.heartbeat_context(&req.group_id, topics, now_ms);
        let result = classic_bridge::join(group, req, &cx, || uuid::Uuid::new_v4().to_string());
        // A static member with no id replaces the instance's member.
        let replaced = req
            .group_instance_id
            .as_deref()
            .filter(|_| req.member_id.is_empty() && result.response.error_code == code::NONE)
            .and_then(|instance| group.static_member_id(instance));
        let policy = self.config.consumer.migration_policy;
        let downgrade = replaced.is_some_and(|replaced| {
            classic_bridge::downgrade_on_replace(
                group,
                replaced,
                policy,
                self.config.max_group_size,
            )
        });
        if !downgrade {
            self.apply_timer_ops(&req.group_id, result.timers);
            return self.write_consumer_change(
                &req.group_id,
                result.records,
                Some((token, Response::Join(result.response))),
                None,
            );
        }
        // The last consumer-protocol member was replaced: the group, with
        // the joining member in its place, converts back (Apache's
        // `convertToClassicGroup` with a joining member), rebalancing only
        // if the subscriptions changed.
        let mut joined = Some(group.clone());
        replay_change(&mut joined, &req.group_id, &result.records);
        let Some(joined) = joined else {
            return Vec::new();
        };
        let (tombstones, record) = classic_bridge::downgrade(&joined, None, now_ms);
        let subscription_changed = result
            .records
            .iter()
            .any(|r| matches!(r, ConsumerGroupRecord::GroupEpoch { .. }));
        let mut gone: Vec<String> = group.members().keys().cloned().collect();
        gone.extend(joined.members().keys().cloned());
        for member_id in &gone {
            self.apply_timer_ops(&req.group_id, TimerOp::cancel_all(member_id));
        }
        tracing::info!(group = %req.group_id, members = record.members.len(), generation = record.generation,
                       "converting the consumer group back to a classic group: a classic static member replaced its last consumer-protocol member");
        let mut records = result.records;
        records.extend(tombstones);
        let mut fx = self.write_consumer_change(
            &req.group_id,
            records,
            Some((token, Response::Join(result.response))),
            Some(Conversion::ToClassic(record.clone())),
        );
        let reason = subscription_changed.then(|| {
            format!(
                "Downgrade group {} from consumer to classic for static member replacement with different subscription.",
                req.group_id
            )
        });
        self.install_downgraded_group(&record, reason, now_ms, &mut fx);
        fx
    }

    /// An empty consumer group that a classic member joins is deleted first
    /// (Apache's `maybeDeleteEmptyConsumerGroup`); its offsets stay.
    pub(super) fn delete_empty_consumer_group(&mut self, group_id: &str) -> Vec<Effect> {
        let Some(group) = self.consumer.groups.get(group_id) else {
            return Vec::new();
        };
        let tombstones = classic_bridge::tombstones(group);
        tracing::info!(group = %group_id, "empty consumer group replaced by a classic group: a classic member joins");
        self.write_consumer_change(group_id, tombstones, None, None)
    }

    /// SyncGroup of a classic member of a consumer group, answered behind
    /// the group's writes in flight.
    pub(super) fn classic_sync_to_consumer_group(
        &mut self,
        token: RequestToken,
        req: &SyncGroupRequest,
        now_ms: u64,
    ) -> Option<Vec<Effect>> {
        let group = self.consumer.groups.get(&req.group_id)?;
        let (response, timers) = classic_bridge::sync(group, req, now_ms);
        self.apply_timer_ops(&req.group_id, timers);
        Some(self.write_consumer_change(
            &req.group_id,
            Vec::new(),
            Some((token, Response::Sync(response))),
            None,
        ))
    }

    /// Heartbeat of a classic member of a consumer group.
    pub(super) fn classic_heartbeat_to_consumer_group(
        &mut self,
        token: RequestToken,
        req: &HeartbeatRequest,
        now_ms: u64,
    ) -> Option<Vec<Effect>> {
        let group = self.consumer.groups.get(&req.group_id)?;
        let (error_code, timers) = classic_bridge::heartbeat(group, req, now_ms);
        self.apply_timer_ops(&req.group_id, timers);
        Some(self.write_consumer_change(
            &req.group_id,
            Vec::new(),
            Some((token, Response::Heartbeat(HeartbeatResponse { error_code }))),
            None,
        ))
    }

    /// LeaveGroup of classic members of a consumer group.
    pub(super) fn classic_leave_to_consumer_group(
        &mut self,
        token: RequestToken,
        req: &LeaveGroupRequest,
    ) -> Option<Vec<Effect>> {
        let group = self.consumer.groups.get(&req.group_id)?;
        let result = classic_bridge::leave(group, req);
        self.apply_timer_ops(&req.group_id, result.timers);
        let response = shape(
            req.api_version,
            LeaveGroupResponse {
                error_code: code::NONE,
                members: result.members,
            },
        );
        Some(self.write_consumer_change(
            &req.group_id,
            result.records,
            Some((token, Response::Leave(response))),
            None,
        ))
    }
}
