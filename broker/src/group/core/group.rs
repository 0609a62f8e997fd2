//! Classic group state (Apache `ClassicGroup`), without timers or I/O.

use std::collections::{HashMap, HashSet};
use std::fmt;

use bytes::Bytes;

use super::api::{GroupMetadataRecord, JoinGroupResponseMember, MemberMetadataRecord};
use super::member::{plain_protocol_set, ClassicGroupMember, Protocol};
use super::protocol::{self, CONSUMER_PROTOCOL_TYPE};
use crate::coordinator::errors::code;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// Apache's state strings, as returned by DescribeGroups / ListGroups.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    fn valid_previous(self) -> &'static [GroupState] {
        use GroupState::*;
        match self {
            Empty => &[PreparingRebalance],
            PreparingRebalance => &[Stable, CompletingRebalance, Empty],
            CompletingRebalance => &[PreparingRebalance],
            Stable => &[CompletingRebalance],
            Dead => &[Stable, PreparingRebalance, CompletingRebalance, Empty, Dead],
        }
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the armed `join-<group>` timer does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JoinTimer {
    /// Apache `tryCompleteInitialRebalanceElseSchedule(delay, remaining)`.
    InitialDelay { delay_ms: u64, remaining_ms: u64 },
    /// Apache `completeClassicGroupJoin`.
    Complete,
}

#[derive(Debug)]
pub struct ClassicGroup {
    pub(crate) group_id: String,
    pub(crate) state: GroupState,
    pub(crate) previous_state: GroupState,
    pub(crate) current_state_timestamp: Option<u64>,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) generation_id: i32,
    pub(crate) leader_id: Option<String>,
    pub(crate) members: HashMap<String, ClassicGroupMember>,
    next_seq: u64,
    static_members: HashMap<String, String>,
    pending_join_members: HashSet<String>,
    num_awaiting_join: usize,
    supported_protocols: HashMap<String, usize>,
    pending_sync_members: HashSet<String>,
    pub(crate) subscribed_topics: Option<HashSet<String>>,
    pub(crate) new_member_added: bool,
    pub(crate) join_timer: Option<JoinTimer>,
    /// Generation the armed sync timer was scheduled for.
    pub(crate) sync_timer_generation: Option<i32>,
}

impl ClassicGroup {
    pub(crate) fn new(group_id: &str, now_ms: u64) -> Self {
        ClassicGroup {
            group_id: group_id.to_string(),
            state: GroupState::Empty,
            previous_state: GroupState::Dead,
            current_state_timestamp: Some(now_ms),
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: HashMap::new(),
            next_seq: 0,
            static_members: HashMap::new(),
            pending_join_members: HashSet::new(),
            num_awaiting_join: 0,
            supported_protocols: HashMap::new(),
            pending_sync_members: HashSet::new(),
            subscribed_topics: None,
            new_member_added: false,
            join_timer: None,
            sync_timer_generation: None,
        }
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }
    pub fn state(&self) -> GroupState {
        self.state
    }
    pub fn generation_id(&self) -> i32 {
        self.generation_id
    }
    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }
    pub fn protocol_name(&self) -> Option<&str> {
        self.protocol_name.as_deref()
    }
    pub fn leader(&self) -> Option<&str> {
        self.leader_id.as_deref()
    }
    pub fn is(&self, s: GroupState) -> bool {
        self.state == s
    }
    pub fn has_member(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id)
    }
    pub fn member(&self, member_id: &str) -> Option<&ClassicGroupMember> {
        self.members.get(member_id)
    }
    pub(crate) fn member_mut(&mut self, member_id: &str) -> Option<&mut ClassicGroupMember> {
        self.members.get_mut(member_id)
    }
    pub fn num_members(&self) -> usize {
        self.members.len()
    }
    pub fn num_awaiting_join(&self) -> usize {
        self.num_awaiting_join
    }
    pub fn num_pending_join_members(&self) -> usize {
        self.pending_join_members.len()
    }
    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }
    pub fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        self.static_members.get(instance_id).map(String::as_str)
    }
    pub fn has_static_member(&self, instance_id: &str) -> bool {
        self.static_members.contains_key(instance_id)
    }
    pub fn is_pending_member(&self, member_id: &str) -> bool {
        self.pending_join_members.contains(member_id)
    }
    pub fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
    }

    /// Member ids in join order (deterministic stand-in for Apache's map order).
    pub fn member_ids(&self) -> Vec<String> {
        let mut v: Vec<&ClassicGroupMember> = self.members.values().collect();
        v.sort_by_key(|m| m.seq);
        v.into_iter().map(|m| m.member_id.clone()).collect()
    }

    pub(crate) fn members_in_order(&self) -> Vec<&ClassicGroupMember> {
        let mut v: Vec<&ClassicGroupMember> = self.members.values().collect();
        v.sort_by_key(|m| m.seq);
        v
    }

    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join && self.pending_join_members.is_empty()
    }

    pub fn can_rebalance(&self) -> bool {
        GroupState::PreparingRebalance
            .valid_previous()
            .contains(&self.state)
    }

    /// Apache asserts valid transitions; we log and refuse instead of panicking.
    pub(crate) fn transition_to(&mut self, target: GroupState, now_ms: u64) -> bool {
        if !target.valid_previous().contains(&self.state) {
            tracing::error!(
                group = %self.group_id,
                from = %self.state,
                to = %target,
                "invalid classic group state transition"
            );
            return false;
        }
        self.previous_state = self.state;
        self.state = target;
        self.current_state_timestamp = Some(now_ms);
        true
    }

    /// Forced state change outside Apache's transition graph (failed delete
    /// rollback). Kept separate so normal paths stay checked.
    pub(crate) fn force_state(&mut self, target: GroupState, now_ms: u64) {
        self.previous_state = self.state;
        self.state = target;
        self.current_state_timestamp = Some(now_ms);
    }

    pub fn generate_member_id(client_id: &str, group_instance_id: Option<&str>) -> String {
        let prefix = group_instance_id.unwrap_or(client_id);
        format!("{prefix}-{}", uuid::Uuid::new_v4())
    }

    /// Apache `supportsProtocols`: an Empty group accepts any non-empty
    /// protocol type and list; otherwise same type and at least one protocol
    /// every current member supports.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[Protocol]) -> bool {
        if self.is(GroupState::Empty) {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && plain_protocol_set(protocols).iter().any(|name| {
                    self.supported_protocols.get(name).copied().unwrap_or(0) == self.members.len()
                })
        }
    }

    fn increment_supported(&mut self, protocols: &[Protocol]) {
        for name in plain_protocol_set(protocols) {
            *self.supported_protocols.entry(name).or_insert(0) += 1;
        }
    }

    fn decrement_supported(&mut self, protocols: &[Protocol]) {
        for name in plain_protocol_set(protocols) {
            if let Some(c) = self.supported_protocols.get_mut(&name) {
                *c = c.saturating_sub(1);
                if *c == 0 {
                    self.supported_protocols.remove(&name);
                }
            }
        }
    }

    fn candidate_protocols(&self) -> HashSet<String> {
        self.supported_protocols
            .iter()
            .filter(|(_, c)| **c == self.members.len())
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Apache `selectProtocol`: every member votes for its most preferred
    /// protocol supported by all; most votes wins. Ties (Apache: hash order)
    /// go to the earliest in the first member's preference list.
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let ordered = self.members_in_order();
        let mut votes: HashMap<&str, usize> = HashMap::new();
        for m in &ordered {
            if let Some(p) = m.vote(&candidates) {
                *votes.entry(p).or_insert(0) += 1;
            }
        }
        let first = ordered.first()?;
        let mut best: Option<(&str, usize)> = None;
        for p in &first.protocols {
            if let Some(&n) = votes.get(p.name.as_str()) {
                let better = match best {
                    None => true,
                    Some((_, b)) => n > b,
                };
                if better {
                    best = Some((p.name.as_str(), n));
                }
            }
        }
        best.map(|(p, _)| p.to_string())
    }

    /// Apache `add`. Callers check protocol support first; violations are
    /// reported instead of thrown.
    pub(crate) fn add(&mut self, mut member: ClassicGroupMember) -> Result<(), i16> {
        if let Some(iid) = &member.group_instance_id {
            if self.static_members.contains_key(iid) {
                return Err(code::UNKNOWN_SERVER_ERROR);
            }
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.protocol_type.as_deref() != Some(member.protocol_type.as_str())
            || !self.supports_protocols(&member.protocol_type, &member.protocols)
        {
            return Err(code::INCONSISTENT_GROUP_PROTOCOL);
        }
        if let Some(iid) = &member.group_instance_id {
            self.static_members
                .insert(iid.clone(), member.member_id.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        self.next_seq += 1;
        member.seq = self.next_seq;
        self.increment_supported(&member.protocols.clone());
        if member.is_awaiting_join() {
            self.num_awaiting_join += 1;
        }
        self.pending_join_members.remove(&member.member_id);
        self.members.insert(member.member_id.clone(), member);
        Ok(())
    }

    /// Apache `remove`; returns the removed member (its parked requests are
    /// the caller's to answer).
    pub(crate) fn remove(&mut self, member_id: &str) -> Option<ClassicGroupMember> {
        let removed = self.members.remove(member_id);
        if let Some(m) = &removed {
            self.decrement_supported(&m.protocols.clone());
            if m.is_awaiting_join() {
                self.num_awaiting_join = self.num_awaiting_join.saturating_sub(1);
            }
            if let Some(iid) = &m.group_instance_id {
                self.static_members.remove(iid);
            }
        }
        if self.is_leader(member_id) {
            self.leader_id = self.member_ids().into_iter().next();
        }
        self.pending_join_members.remove(member_id);
        self.pending_sync_members.remove(member_id);
        removed
    }

    /// Apache `maybeElectNewJoinedLeader`: keep the leader if it rejoined,
    /// else pick the first member that did.
    pub(crate) fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.clone() else {
            return false;
        };
        let leader_joined = self
            .members
            .get(&leader)
            .is_some_and(|m| m.is_awaiting_join());
        if leader_joined {
            return true;
        }
        let next = self
            .members_in_order()
            .into_iter()
            .find(|m| m.is_awaiting_join())
            .map(|m| m.member_id.clone());
        match next {
            Some(id) => {
                tracing::info!(
                    group = %self.group_id,
                    old_leader = %leader,
                    new_leader = %id,
                    "group leader failed to join before the rebalance timeout; elected a new leader"
                );
                self.leader_id = Some(id);
                true
            }
            None => false,
        }
    }

    /// Apache `replaceStaticMember`: the new member id takes over the old
    /// member's metadata and assignment. Returns the old member so the caller
    /// can fence its parked requests.
    pub(crate) fn replace_static_member(
        &mut self,
        instance_id: &str,
        old_member_id: &str,
        new_member_id: &str,
    ) -> Option<ClassicGroupMember> {
        let mut old = self.members.remove(old_member_id)?;
        if old.is_awaiting_join() {
            self.num_awaiting_join = self.num_awaiting_join.saturating_sub(1);
        }
        self.next_seq += 1;
        let new = ClassicGroupMember {
            member_id: new_member_id.to_string(),
            group_instance_id: old.group_instance_id.clone(),
            client_id: old.client_id.clone(),
            client_host: old.client_host.clone(),
            rebalance_timeout_ms: old.rebalance_timeout_ms,
            session_timeout_ms: old.session_timeout_ms,
            protocol_type: old.protocol_type.clone(),
            protocols: old.protocols.clone(),
            assignment: old.assignment.clone(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            seq: self.next_seq,
        };
        self.members.insert(new_member_id.to_string(), new);
        if self.is_leader(old_member_id) {
            self.leader_id = Some(new_member_id.to_string());
        }
        self.static_members
            .insert(instance_id.to_string(), new_member_id.to_string());
        old.is_new = false;
        Some(old)
    }

    pub(crate) fn add_pending_member(&mut self, member_id: &str) -> bool {
        if self.has_member(member_id) {
            return false;
        }
        self.pending_join_members.insert(member_id.to_string())
    }

    /// Forgets members that were handed an id but never joined (group deletion).
    pub(crate) fn clear_pending_join_members(&mut self) {
        self.pending_join_members.clear();
    }

    pub(crate) fn add_pending_sync_member(&mut self, member_id: &str) {
        if self.has_member(member_id) {
            self.pending_sync_members.insert(member_id.to_string());
        }
    }

    pub(crate) fn remove_pending_sync_member(&mut self, member_id: &str) {
        self.pending_sync_members.remove(member_id);
    }

    pub fn has_received_sync_from_all_members(&self) -> bool {
        self.pending_sync_members.is_empty()
    }

    pub(crate) fn pending_sync_members(&self) -> Vec<String> {
        let mut v: Vec<String> = self.pending_sync_members.iter().cloned().collect();
        v.sort();
        v
    }

    pub(crate) fn clear_pending_sync_members(&mut self) {
        self.pending_sync_members.clear();
    }

    /// Dynamic members that are not parked in JoinGroup, in join order.
    pub(crate) fn not_yet_rejoined_dynamic_members(&self) -> Vec<String> {
        self.members_in_order()
            .into_iter()
            .filter(|m| !m.is_awaiting_join() && !m.is_static())
            .map(|m| m.member_id.clone())
            .collect()
    }

    /// Apache `updateMember`; `join` is the new parked JoinGroup, if any.
    pub(crate) fn update_member(
        &mut self,
        member_id: &str,
        protocols: Vec<Protocol>,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
        join: Option<u64>,
    ) {
        let Some(old_protocols) = self.members.get(member_id).map(|m| m.protocols.clone()) else {
            return;
        };
        self.decrement_supported(&old_protocols);
        self.increment_supported(&protocols);
        let Some(m) = self.members.get_mut(member_id) else {
            return;
        };
        m.protocols = protocols;
        m.rebalance_timeout_ms = rebalance_timeout_ms;
        m.session_timeout_ms = session_timeout_ms;
        let was_awaiting = m.is_awaiting_join();
        m.awaiting_join = join;
        match (join.is_some(), was_awaiting) {
            (true, false) => self.num_awaiting_join += 1,
            (false, true) => self.num_awaiting_join = self.num_awaiting_join.saturating_sub(1),
            _ => {}
        }
    }

    /// Takes the member's parked JoinGroup (Apache `completeJoinFuture`).
    pub(crate) fn take_join_waiter(&mut self, member_id: &str) -> Option<u64> {
        let token = self.members.get_mut(member_id)?.awaiting_join.take()?;
        self.num_awaiting_join = self.num_awaiting_join.saturating_sub(1);
        Some(token)
    }

    pub(crate) fn take_sync_waiter(&mut self, member_id: &str) -> Option<u64> {
        self.members.get_mut(member_id)?.awaiting_sync.take()
    }

    /// Apache `computeSubscribedTopics`.
    pub(crate) fn compute_subscribed_topics(&self) -> Option<HashSet<String>> {
        if !self.uses_consumer_protocol() {
            return None;
        }
        if self.members.is_empty() {
            return Some(HashSet::new());
        }
        let name = self.protocol_name.as_deref()?;
        let metas: Vec<Bytes> = self
            .members
            .values()
            .map(|m| m.metadata(name).cloned().unwrap_or_default())
            .collect();
        let topics = protocol::subscribed_topics(metas.iter().map(|b| b.as_ref()));
        if topics.is_none() {
            tracing::warn!(
                group = %self.group_id,
                "failed to parse the consumer protocol; the coordinator is not aware of the subscribed topics"
            );
        }
        topics
    }

    /// Apache `isSubscribedToTopic`: unknown subscriptions count as subscribed
    /// for consumer-protocol groups, so their offsets are never dropped blindly.
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        match &self.subscribed_topics {
            Some(t) => t.contains(topic),
            None => self.uses_consumer_protocol(),
        }
    }

    /// Apache `initNextGeneration`.
    pub(crate) fn init_next_generation(&mut self, now_ms: u64) {
        self.generation_id = self.generation_id.wrapping_add(1);
        if !self.members.is_empty() {
            self.protocol_name = self.select_protocol();
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::CompletingRebalance, now_ms);
        } else {
            self.protocol_name = None;
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::Empty, now_ms);
        }
        self.clear_pending_sync_members();
    }

    /// Members as the leader sees them in its JoinGroup response.
    pub(crate) fn current_members_for_join(&self) -> Vec<JoinGroupResponseMember> {
        let name = self.protocol_name.as_deref().unwrap_or("");
        self.members_in_order()
            .into_iter()
            .map(|m| JoinGroupResponseMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(name).cloned().unwrap_or_default(),
            })
            .collect()
    }

    /// Apache `newGroupMetadataRecord(group, assignment)`; `assignment`
    /// overrides the members' stored assignments (leader SyncGroup).
    pub(crate) fn to_record(
        &self,
        assignment: Option<&HashMap<String, Bytes>>,
    ) -> GroupMetadataRecord {
        let name = self.protocol_name.as_deref().unwrap_or("");
        GroupMetadataRecord {
            group_id: self.group_id.clone(),
            protocol_type: self.protocol_type.clone(),
            generation: self.generation_id,
            protocol: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            current_state_timestamp_ms: self.current_state_timestamp,
            members: self
                .members_in_order()
                .into_iter()
                .map(|m| MemberMetadataRecord {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(name).cloned().unwrap_or_default(),
                    assignment: assignment
                        .and_then(|a| a.get(&m.member_id).cloned())
                        .unwrap_or_else(|| m.assignment.clone()),
                })
                .collect(),
        }
    }

    /// A group as its log holds it: its metadata record, or without one
    /// Apache's simple group (offsets only, no protocol type).
    pub(crate) fn from_stored(
        group_id: &str,
        record: Option<&GroupMetadataRecord>,
        now_ms: u64,
    ) -> Self {
        match record {
            Some(r) => {
                let mut r = r.clone();
                r.group_id = group_id.to_string();
                ClassicGroup::from_record(&r, now_ms)
            }
            None => {
                let mut g = ClassicGroup::new(group_id, now_ms);
                g.protocol_type = None;
                g
            }
        }
    }

    /// Apache `replay(GroupMetadataKey, GroupMetadataValue)`.
    pub(crate) fn from_record(record: &GroupMetadataRecord, now_ms: u64) -> Self {
        let mut g = ClassicGroup::new(&record.group_id, now_ms);
        g.state = if record.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        g.generation_id = record.generation;
        g.protocol_type = record.protocol_type.clone().filter(|t| !t.is_empty());
        g.protocol_name = record.protocol.clone();
        g.leader_id = record.leader.clone();
        g.current_state_timestamp = record.current_state_timestamp_ms;
        let protocol_type = record.protocol_type.clone().unwrap_or_default();
        for m in &record.members {
            let rebalance = if m.rebalance_timeout_ms == -1 {
                m.session_timeout_ms
            } else {
                m.rebalance_timeout_ms
            };
            g.next_seq += 1;
            let member = ClassicGroupMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: rebalance,
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: protocol_type.clone(),
                protocols: vec![Protocol::new(
                    record.protocol.clone().unwrap_or_default(),
                    m.subscription.clone(),
                )],
                assignment: m.assignment.clone(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
                seq: g.next_seq,
            };
            if let Some(iid) = &m.group_instance_id {
                g.static_members.insert(iid.clone(), m.member_id.clone());
            }
            g.increment_supported(&member.protocols.clone());
            g.members.insert(m.member_id.clone(), member);
        }
        if g.leader_id.is_none() {
            g.leader_id = g.member_ids().into_iter().next();
        }
        g.subscribed_topics = g.compute_subscribed_topics();
        g
    }
}
