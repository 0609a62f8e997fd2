//! Sans-IO core of the classic consumer-group coordinator.
//!
//! A deterministic state machine mirroring Apache Kafka's classic group
//! coordinator (`GroupMetadataManager`, `ClassicGroup`, `OffsetMetadataManager`).
//! No I/O, no threads, no clock: every entry point takes `now_ms` and returns
//! [`Effect`]s the shell executes (answer a request, arm/cancel a timer, write
//! group metadata or offsets and report back). [`GroupCoordinator`] documents
//! how a shell drives it.

mod admin;
mod api;
pub mod classic_bridge;
mod consumer;
mod group;
mod heartbeat;
mod join;
mod leave;
mod member;
mod migration;
mod offsets;
pub mod protocol;
mod rebalance;
mod sync;
mod time;
mod txn_offsets;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

pub use crate::coordinator::errors::{append_error_to_response_error, code};
pub use api::*;
pub use consumer::Assignors;
pub use group::{ClassicGroup, GroupState};
pub use member::{ClassicGroupMember, Protocol};
pub use offsets::offsets_in_force;
pub use time::TimerKey;
pub use txn_offsets::{TxnOffsetCommitRequest, TxnOffsetsPlan};

use offsets::{PendingCommit, PendingGroupDelete, PendingOffsetDelete};
use time::Timers;

/// Broker settings the classic coordinator reads (Apache names in comments).
#[derive(Clone, Debug)]
pub struct GroupCoordinatorConfig {
    /// group.initial.rebalance.delay.ms
    pub initial_rebalance_delay_ms: u64,
    /// group.min.session.timeout.ms
    pub min_session_timeout_ms: i32,
    /// group.max.session.timeout.ms
    pub max_session_timeout_ms: i32,
    /// group.max.size
    pub max_group_size: usize,
    /// Join timeout of new members (Apache `classicGroupNewMemberJoinTimeoutMs`).
    pub new_member_join_timeout_ms: u64,
    /// offset.metadata.max.bytes
    pub offset_metadata_max_bytes: usize,
    /// offsets.retention.minutes, in ms
    pub offsets_retention_ms: u64,
    /// offsets.retention.check.interval.ms
    pub offsets_retention_check_interval_ms: u64,
    /// The `group.consumer.*` settings of KIP-848 consumer groups.
    pub consumer: crate::group::consumer::heartbeat::ConsumerGroupConfig,
}

impl Default for GroupCoordinatorConfig {
    fn default() -> Self {
        GroupCoordinatorConfig {
            initial_rebalance_delay_ms: 3_000,
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            max_group_size: i32::MAX as usize,
            new_member_join_timeout_ms: 300_000,
            offset_metadata_max_bytes: 4_096,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1_000,
            offsets_retention_check_interval_ms: 600_000,
            consumer: Default::default(),
        }
    }
}

/// A group-metadata write whose outcome decides a parked answer.
#[derive(Debug)]
pub(crate) enum PendingPersist {
    /// Leader SyncGroup: on success store + propagate the assignment.
    SyncAssignment {
        group_id: String,
        generation: i32,
        assignment: HashMap<String, bytes::Bytes>,
        leader_member_id: String,
    },
    /// Static member replaced in Stable without rebalance.
    StaticReplace {
        group_id: String,
        instance_id: String,
        old_member_id: String,
        new_member_id: String,
        old_protocols: Vec<Protocol>,
        old_rebalance_timeout_ms: i32,
        old_session_timeout_ms: i32,
        leader_before: Option<String>,
        supports_skip_assignment: bool,
    },
}

#[derive(Debug, Default)]
pub(crate) struct PersistTable {
    next: u64,
    pending: HashMap<PersistToken, PendingPersist>,
}

impl PersistTable {
    pub(crate) fn register(&mut self, p: PendingPersist) -> PersistToken {
        self.next += 1;
        self.pending.insert(self.next, p);
        self.next
    }
}

/// Mutable context shared by the rebalance algorithms (split borrow of the
/// coordinator so a group and the timer table can be mutated together).
pub(crate) struct Ctx<'a> {
    pub cfg: &'a GroupCoordinatorConfig,
    pub timers: &'a mut Timers,
    pub persist: &'a mut PersistTable,
    pub now: u64,
    pub fx: &'a mut Vec<Effect>,
}

pub use crate::records::offsets::GroupOffsets;

/// Every classic group resident on this coordinator, with its offsets.
///
/// How the shell drives it:
/// - Before the first request touching a group that is not
///   [`is_resident`](Self::is_resident), read its persisted metadata record and
///   offsets and call [`load_group`](Self::load_group).
/// - Call the entry point for each request with a unique [`RequestToken`] and
///   execute the returned effects in order. `Respond` may come now or in a
///   later call (JoinGroup and SyncGroup park).
/// - Keep the armed timers; when one is due call [`on_timer`](Self::on_timer)
///   (or poll [`next_due_timer`](Self::next_due_timer)).
/// - `PersistGroupMetadata`: write the record (last write wins per group); if
///   it has an `ack`, report the outcome with
///   [`complete_group_persist`](Self::complete_group_persist).
/// - `PersistOffsets` / `DeleteOffsets` / `DeleteGroups`: make the change
///   durable (fsync), then call the matching `complete_*`, or `fail_*` with
///   the error code, so a failed write is never acknowledged.
/// - On takeover, [`unload_group`](Self::unload_group) every group no longer
///   owned; on shutdown, [`shutdown`](Self::shutdown).
#[derive(Debug)]
pub struct GroupCoordinator {
    pub(crate) config: GroupCoordinatorConfig,
    pub(crate) groups: HashMap<String, ClassicGroup>,
    /// Each group's committed offsets and the offsets its open
    /// transactions staged (by producer id).
    pub(crate) offsets: HashMap<String, GroupOffsets>,
    pub(crate) timers: Timers,
    pub(crate) persist: PersistTable,
    pub(crate) pending_commits: HashMap<RequestToken, PendingCommit>,
    /// group -> its commits between plan and outcome (their offsets are in
    /// `pending_commits`): a group rarely has more than a few, and a commit
    /// then costs one entry here instead of one per partition.
    pub(crate) inflight: HashMap<String, Vec<RequestToken>>,
    pub(crate) pending_offset_deletes: HashMap<RequestToken, PendingOffsetDelete>,
    pub(crate) pending_group_deletes: HashMap<RequestToken, PendingGroupDelete>,
    pub(crate) pending_txn_commits: HashMap<RequestToken, txn_offsets::PendingTxnCommit>,
    pub(crate) pending_txn_ends: HashMap<RequestToken, txn_offsets::PendingTxnEnd>,
    /// KIP-848 consumer groups (a group id is classic or consumer, never
    /// both); their offsets are in `offsets` with the classic groups'.
    pub(crate) consumer: consumer::ConsumerGroups,
    /// The consumer timing of each group with configs of its own
    /// (`__cluster/group_configs`), worked out once per change rather than
    /// at every heartbeat.
    pub(crate) consumer_timings: HashMap<String, crate::group::consumer::config::ConsumerTiming>,
}

impl GroupCoordinator {
    pub fn new(config: GroupCoordinatorConfig) -> Self {
        let mut consumer = consumer::ConsumerGroups::default();
        consumer.assignors = Assignors::of(&config.consumer.assignors);
        GroupCoordinator {
            config,
            groups: HashMap::new(),
            offsets: HashMap::new(),
            timers: Timers::default(),
            persist: PersistTable::default(),
            pending_commits: HashMap::new(),
            inflight: HashMap::new(),
            pending_offset_deletes: HashMap::new(),
            pending_group_deletes: HashMap::new(),
            pending_txn_commits: HashMap::new(),
            pending_txn_ends: HashMap::new(),
            consumer,
            consumer_timings: HashMap::new(),
        }
    }

    pub fn config(&self) -> &GroupCoordinatorConfig {
        &self.config
    }

    /// Installs the groups' own configs; a consumer group's member follows
    /// its group's at its next heartbeat (as Apache's members do).
    pub fn set_group_configs(&mut self, configs: &crate::group::configs::GroupConfigs) {
        self.consumer_timings = configs
            .groups
            .keys()
            .map(|g| (g.clone(), configs.consumer_timing(g, &self.config.consumer)))
            .collect();
    }

    /// The consumer protocol's session timeout and heartbeat interval for
    /// `group_id`: its own configs, else the broker's.
    pub(crate) fn consumer_timing(
        &self,
        group_id: &str,
    ) -> crate::group::consumer::config::ConsumerTiming {
        self.consumer_timings.get(group_id).copied().unwrap_or(
            crate::group::consumer::config::ConsumerTiming {
                session_timeout_ms: self.config.consumer.session_timeout_ms,
                heartbeat_interval_ms: self.config.consumer.heartbeat_interval_ms,
            },
        )
    }

    /// Arms the periodic offsets retention sweep.
    pub fn start(&mut self, now_ms: u64) -> Vec<Effect> {
        self.timers.schedule(
            TimerKey::OffsetsRetention,
            now_ms.saturating_add(self.config.offsets_retention_check_interval_ms),
        );
        Vec::new()
    }

    pub fn group(&self, group_id: &str) -> Option<&ClassicGroup> {
        self.groups.get(group_id)
    }

    pub fn is_resident(&self, group_id: &str) -> bool {
        self.groups.contains_key(group_id) || self.consumer.groups.contains_key(group_id)
    }

    /// How many groups are held in memory.
    pub fn num_resident_groups(&self) -> usize {
        self.groups.len() + self.consumer.groups.len()
    }

    /// Gives memory back once many groups have left (unload, expiry): maps
    /// at most a quarter full are shrunk, so the cost is amortised.
    pub fn shrink_if_sparse(&mut self) {
        fn shrink<K: std::hash::Hash + Eq, V>(m: &mut HashMap<K, V>) {
            if m.capacity() > 64 && m.len() <= m.capacity() / 4 {
                m.shrink_to_fit();
            }
        }
        shrink(&mut self.groups);
        shrink(&mut self.offsets);
        shrink(&mut self.inflight);
        shrink(&mut self.pending_commits);
        self.timers.shrink_if_sparse();
    }

    /// Every group id held in memory (the takeover sweep walks this set).
    pub fn resident_groups(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .groups
            .keys()
            .chain(self.consumer.groups.keys())
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Every committed offset of the groups resident here (durable state
    /// only): group, topic, partition, offset.
    pub fn committed_offsets(&self) -> Vec<(String, String, i32, i64)> {
        let mut out = Vec::new();
        for (group, offsets) in &self.offsets {
            for (topic, partition, committed) in offsets.committed() {
                out.push((
                    group.clone(),
                    topic.to_string(),
                    partition,
                    committed.offset,
                ));
            }
        }
        out
    }

    /// Committed offset of one partition (durable state only).
    pub fn committed_offset(
        &self,
        group_id: &str,
        topic: &str,
        partition: i32,
    ) -> Option<&OffsetAndMetadata> {
        self.offsets.get(group_id)?.get(topic, partition)
    }

    /// Deadline of an armed timer.
    pub fn timer_deadline(&self, key: &TimerKey) -> Option<u64> {
        self.timers.deadline(key)
    }

    /// Earliest armed timer due at `now_ms`; a shell without its own timer
    /// wheel can loop `while let Some(k) = next_due_timer(now) { on_timer(k, now) }`.
    pub fn next_due_timer(&self, now_ms: u64) -> Option<TimerKey> {
        self.timers.next_due(now_ms)
    }

    pub fn next_timer_deadline(&self) -> Option<u64> {
        self.timers.next_deadline()
    }

    /// A timer fired. Stale firings (cancelled, re-armed later) are ignored.
    pub fn on_timer(&mut self, key: TimerKey, now_ms: u64) -> Vec<Effect> {
        let mut fx = Vec::new();
        if !self.timers.take_due(&key, now_ms) {
            return fx;
        }
        match key {
            TimerKey::Join(group_id) => self.on_join_timer(&group_id, now_ms, &mut fx),
            TimerKey::Sync(group_id) => self.on_sync_timer(&group_id, now_ms, &mut fx),
            TimerKey::Heartbeat(group_id, member_id) => {
                self.on_heartbeat_timer(&group_id, &member_id, now_ms, &mut fx)
            }
            TimerKey::ConsumerSession(..)
            | TimerKey::ConsumerRebalance(..)
            | TimerKey::ConsumerJoin(..)
            | TimerKey::ConsumerSync(..) => self.on_consumer_timer(key, now_ms, &mut fx),
            TimerKey::OffsetsRetention => {
                fx.extend(self.expire_offsets_into(now_ms).into_effect());
                self.timers.schedule(
                    TimerKey::OffsetsRetention,
                    now_ms.saturating_add(self.config.offsets_retention_check_interval_ms),
                );
            }
        }
        fx
    }

    /// Runs `f` on a resident group with a [`Ctx`]; None if not resident.
    pub(crate) fn with_group<R>(
        &mut self,
        group_id: &str,
        now_ms: u64,
        fx: &mut Vec<Effect>,
        f: impl FnOnce(&mut ClassicGroup, &mut Ctx<'_>) -> R,
    ) -> Option<R> {
        let GroupCoordinator {
            config,
            groups,
            timers,
            persist,
            ..
        } = self;
        let g = groups.get_mut(group_id)?;
        let mut cx = Ctx {
            cfg: config,
            timers,
            persist,
            now: now_ms,
            fx,
        };
        Some(f(g, &mut cx))
    }
}
