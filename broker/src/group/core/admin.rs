//! DescribeGroups, ListGroups, DeleteGroups, and group residency (load on a
//! new coordinator, unload on takeover, shutdown).

use super::api::group_id_too_long;
use super::offsets::PendingGroupDelete;
use super::rebalance::{answer_leftover_waiters, prepare_rebalance, reschedule_member_heartbeat};
use super::{
    ClassicGroup, DeleteGroupResult, DeleteGroupsPlan, DeleteGroupsResponse, DescribedGroup,
    DescribedMember, Effect, GroupCoordinator, GroupMetadataRecord, GroupOffsets, GroupState,
    ListedGroup, RequestToken, Response, TimerKey,
};
use crate::coordinator::errors::{append_error_to_response_error, code};

impl GroupCoordinator {
    /// DescribeGroups. An unknown group is described as Dead with no members
    /// (v6+ also carries GROUP_ID_NOT_FOUND), as Apache does.
    pub fn describe_groups(&self, group_ids: &[String], api_version: i16) -> Vec<DescribedGroup> {
        group_ids
            .iter()
            .map(|id| match self.groups.get(id) {
                Some(g) => {
                    let stable_protocol = match (g.state, g.protocol_name.as_deref()) {
                        (GroupState::Stable, Some(p)) => Some(p),
                        _ => None,
                    };
                    DescribedGroup {
                        error_code: code::NONE,
                        error_message: None,
                        group_id: id.clone(),
                        group_state: g.state.as_str().to_string(),
                        protocol_type: g.protocol_type.clone().unwrap_or_default(),
                        protocol_data: stable_protocol.unwrap_or("").to_string(),
                        members: g
                            .members_in_order()
                            .into_iter()
                            .map(|m| DescribedMember {
                                member_id: m.member_id.clone(),
                                group_instance_id: m.group_instance_id.clone(),
                                client_id: m.client_id.clone(),
                                client_host: m.client_host.clone(),
                                // Metadata only of the selected protocol, and
                                // only once the group is Stable.
                                member_metadata: stable_protocol
                                    .and_then(|p| m.metadata(p).cloned())
                                    .unwrap_or_default(),
                                member_assignment: m.assignment.clone(),
                            })
                            .collect(),
                    }
                }
                // Apache 4.x: v6 tells why (a KIP-848 consumer group is
                // not a classic group); older versions see a Dead group.
                None => DescribedGroup {
                    error_code: if api_version >= 6 {
                        code::GROUP_ID_NOT_FOUND
                    } else {
                        code::NONE
                    },
                    error_message: (api_version >= 6).then(|| {
                        if self.consumer.groups.contains_key(id) {
                            format!("Group {id} is not a classic group.")
                        } else {
                            format!("Group {id} not found.")
                        }
                    }),
                    group_id: id.clone(),
                    group_state: GroupState::Dead.as_str().to_string(),
                    protocol_type: String::new(),
                    protocol_data: String::new(),
                    members: Vec::new(),
                },
            })
            .collect()
    }

    /// ListGroups (v4 states filter, v5 types filter), case-insensitive like
    /// Apache. Groups holding only offsets are listed as Empty with protocol
    /// type "".
    pub fn list_groups(
        &self,
        states_filter: &[String],
        types_filter: &[String],
    ) -> Vec<ListedGroup> {
        let states: Vec<String> = states_filter
            .iter()
            .map(|s| s.trim().to_lowercase())
            .collect();
        let wanted = |kind: &str| {
            types_filter.is_empty()
                || types_filter
                    .iter()
                    .any(|t| t.trim().eq_ignore_ascii_case(kind))
        };
        let in_state = |state: &str| states.is_empty() || states.contains(&state.to_lowercase());
        let mut out: Vec<ListedGroup> = Vec::new();
        if wanted("classic") {
            out.extend(
                self.groups
                    .values()
                    .filter(|g| in_state(g.state.as_str()))
                    .map(|g| ListedGroup {
                        group_id: g.group_id.clone(),
                        protocol_type: g.protocol_type.clone().unwrap_or_default(),
                        group_state: g.state.as_str().to_string(),
                        group_type: "classic".to_string(),
                    }),
            );
        }
        if wanted("consumer") {
            // Apache lists a consumer group with protocol type "consumer".
            out.extend(
                self.consumer
                    .groups
                    .values()
                    .filter(|g| in_state(g.state().as_str()))
                    .map(|g| ListedGroup {
                        group_id: g.group_id().to_string(),
                        protocol_type: "consumer".to_string(),
                        group_state: g.state().as_str().to_string(),
                        group_type: "consumer".to_string(),
                    }),
            );
        }
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        out
    }

    /// DeleteGroups. Deletable groups (Empty) turn Dead at once so nothing
    /// joins or commits meanwhile, and come back as `DeleteGroups`; the answer
    /// waits for `complete_delete_groups` / `fail_delete_groups`.
    pub fn delete_groups(
        &mut self,
        token: RequestToken,
        group_ids: Vec<String>,
        now_ms: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let mut results = Vec::with_capacity(group_ids.len());
        let mut deleting = Vec::new();
        for id in group_ids {
            let error = if group_id_too_long(&id) {
                code::INVALID_GROUP_ID
            } else if let Some(error) = self.start_consumer_group_delete(&id) {
                error
            } else {
                match self.groups.get_mut(&id) {
                    None => code::GROUP_ID_NOT_FOUND,
                    Some(g) => match g.state {
                        GroupState::Dead => code::GROUP_ID_NOT_FOUND,
                        GroupState::Stable
                        | GroupState::PreparingRebalance
                        | GroupState::CompletingRebalance => code::NON_EMPTY_GROUP,
                        GroupState::Empty => {
                            // Their session timers are cancelled below.
                            g.clear_pending_join_members();
                            g.transition_to(GroupState::Dead, now_ms);
                            code::NONE
                        }
                    },
                }
            };
            if error == code::NONE {
                self.timers.cancel_group(&id);
                deleting.push(id.clone());
            }
            results.push(DeleteGroupResult {
                group_id: id,
                error_code: error,
            });
        }
        if deleting.is_empty() {
            fx.push(Effect::Respond(
                token,
                Response::DeleteGroups(DeleteGroupsResponse { results }),
            ));
            return fx;
        }
        self.pending_group_deletes.insert(
            token,
            PendingGroupDelete {
                results,
                group_ids: deleting.clone(),
            },
        );
        fx.push(Effect::DeleteGroups(DeleteGroupsPlan {
            token,
            group_ids: deleting,
        }));
        fx
    }

    /// The groups of `token`'s plan are gone from storage: drop them here.
    pub fn complete_delete_groups(&mut self, token: RequestToken, _now_ms: u64) -> Vec<Effect> {
        let Some(p) = self.pending_group_deletes.remove(&token) else {
            tracing::warn!(token, "completion for an unknown group deletion");
            return Vec::new();
        };
        for id in &p.group_ids {
            self.finish_consumer_group_delete(id, true);
            if self.groups.get(id).is_some_and(|g| g.is(GroupState::Dead)) {
                self.groups.remove(id);
                self.offsets.remove(id);
                tracing::info!(group = %id, "group deleted");
            }
        }
        vec![Effect::Respond(
            token,
            Response::DeleteGroups(DeleteGroupsResponse { results: p.results }),
        )]
    }

    /// Deleting failed: the groups return to Empty and report the error.
    pub fn fail_delete_groups(
        &mut self,
        token: RequestToken,
        error_code: i16,
        now_ms: u64,
    ) -> Vec<Effect> {
        let Some(mut p) = self.pending_group_deletes.remove(&token) else {
            tracing::warn!(token, "failure for an unknown group deletion");
            return Vec::new();
        };
        let e = append_error_to_response_error(error_code);
        for id in &p.group_ids {
            self.finish_consumer_group_delete(id, false);
            if let Some(g) = self.groups.get_mut(id) {
                if g.is(GroupState::Dead) {
                    g.force_state(GroupState::Empty, now_ms);
                }
            }
        }
        for r in &mut p.results {
            if p.group_ids.contains(&r.group_id) {
                r.error_code = e;
            }
        }
        vec![Effect::Respond(
            token,
            Response::DeleteGroups(DeleteGroupsResponse { results: p.results }),
        )]
    }

    /// Installs a group read from storage on this coordinator (Apache replay +
    /// `onLoaded`): Stable with its members, generation and assignments if the
    /// record has members, Empty otherwise (a "simple" group if only offsets
    /// exist). Every member's session timer is re-armed, so a coordinator
    /// move does not force a rebalance. A group already resident is left as is.
    pub fn load_group(
        &mut self,
        group_id: &str,
        record: Option<GroupMetadataRecord>,
        offsets: impl Into<GroupOffsets>,
        now_ms: u64,
    ) -> Vec<Effect> {
        let offsets = offsets.into();
        let mut fx = Vec::new();
        if self.groups.contains_key(group_id) {
            tracing::warn!(group = %group_id, "load of a group already resident ignored");
            return fx;
        }
        if self.consumer.groups.contains_key(group_id) {
            // A consumer group (loaded first): only its offsets here.
            self.load_offsets(group_id, offsets);
            return fx;
        }
        if record.is_none() && offsets.is_empty() {
            return fx;
        }
        let g = ClassicGroup::from_stored(group_id, record.as_ref(), now_ms);
        tracing::info!(group = %group_id, members = g.num_members(), generation = g.generation_id, "loaded classic group");
        self.groups.insert(group_id.to_string(), g);
        self.load_offsets(group_id, offsets);
        let max = self.config.max_group_size;
        self.with_group(group_id, now_ms, &mut fx, |g, cx| {
            for id in g.member_ids() {
                reschedule_member_heartbeat(g, &id, cx);
            }
            if g.num_members() > max {
                // max size may have been lowered since the group was written.
                let reason = format!(
                    "Freshly-loaded group {} (size {}) is over capacity {max}. Rebalancing in order to give a chance for consumers to commit offsets",
                    g.group_id,
                    g.num_members()
                );
                prepare_rebalance(g, &reason, cx);
            }
        });
        fx
    }

    /// Drops a group this broker no longer coordinates (takeover sweep):
    /// parked JoinGroup/SyncGroup get NOT_COORDINATOR, timers are cancelled,
    /// nothing is written.
    pub fn unload_group(&mut self, group_id: &str, now_ms: u64) -> Vec<Effect> {
        let mut fx = Vec::new();
        let consumer = self.unload_consumer_group(group_id, &mut fx);
        let Some(mut g) = self.groups.remove(group_id) else {
            if consumer {
                self.drop_group_state(group_id);
            }
            return fx;
        };
        tracing::info!(group = %group_id, generation = g.generation_id, "unloading group metadata");
        g.transition_to(GroupState::Dead, now_ms);
        {
            let mut cx = super::Ctx {
                cfg: &self.config,
                timers: &mut self.timers,
                persist: &mut self.persist,
                now: now_ms,
                fx: &mut fx,
            };
            for m in g.members_in_order() {
                if let Some(t) = m.awaiting_join {
                    super::rebalance::respond_join(
                        t,
                        super::JoinGroupResponse::error(m.member_id.clone(), code::NOT_COORDINATOR),
                        &mut cx,
                    );
                }
                if m.awaiting_sync.is_some() {
                    answer_leftover_waiters(
                        &super::ClassicGroupMember {
                            awaiting_join: None,
                            ..m.clone()
                        },
                        code::NOT_COORDINATOR,
                        &mut cx,
                    );
                }
            }
        }
        self.drop_group_state(group_id);
        fx
    }

    /// What an unloaded group leaves besides its members: timers, offsets
    /// and pending transactional offsets (the log keeps them; a reload
    /// reads them back).
    fn drop_group_state(&mut self, group_id: &str) {
        self.timers.cancel_group(group_id);
        self.offsets.remove(group_id);
        self.orphan_pending_offsets(group_id);
    }

    /// Holds a loaded group's offsets, committed and staged.
    fn load_offsets(&mut self, group_id: &str, mut offsets: GroupOffsets) {
        if offsets.is_empty() {
            return;
        }
        offsets.shrink_to_fit();
        self.offsets.insert(group_id.to_string(), offsets);
    }

    /// Unloads every group and stops the retention sweep.
    pub fn shutdown(&mut self, now_ms: u64) -> Vec<Effect> {
        let mut fx = Vec::new();
        for id in self.resident_groups() {
            fx.extend(self.unload_group(&id, now_ms));
        }
        self.timers.cancel(&TimerKey::OffsetsRetention);
        fx
    }
}
