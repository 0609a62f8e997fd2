//! The group coordinator's shell on the coordinator runtime
//! ([`crate::coordinator::runtime`]): it feeds requests and timers to the
//! core, carries out the core's effects (each write through the
//! [`GroupStore`], its outcome reported back once durable), loads groups
//! on first use and unloads those that moved away or went idle.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use kaas_shared::Routing;
use parking_lot::MutexGuard;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug_span, info, warn, Instrument};

use super::core::{
    code, offsets_in_force, Effect, GroupCoordinator, GroupCoordinatorConfig, GroupState,
    RequestToken, Response, UnloadedOffset,
};
pub use super::store::{Durable, GroupStore, StoreError, StoredGroup};
use crate::coordinator::clock::Clock;
use crate::coordinator::runtime::{moved, Keyspace, NotServed, Runtime, Shard, TimerWake};

#[derive(Debug, Clone)]
pub struct GroupManagerConfig {
    pub core: GroupCoordinatorConfig,
    /// Empty groups untouched this long are unloaded from memory (they
    /// reload from their log on the next touch).
    pub idle_unload_ms: u64,
    /// Most groups resident at once; beyond it, idle Empty groups are
    /// unloaded first and new loads are refused with COORDINATOR_LOAD_IN_PROGRESS.
    pub max_resident_groups: usize,
}

impl Default for GroupManagerConfig {
    fn default() -> Self {
        Self {
            core: GroupCoordinatorConfig::default(),
            idle_unload_ms: 5 * 60 * 1000,
            max_resident_groups: 200_000,
        }
    }
}

/// What the group shell keeps beside the core, under the runtime's lock.
#[derive(Default)]
pub struct Resident {
    /// Last time each resident group was touched, for idle unloading.
    touched: HashMap<String, u64>,
    /// The committed offsets of groups out of memory (unloaded for idleness,
    /// or read from their logs after a restart or a move), as their log
    /// holds them until they load again: their lag stays on `/metrics` (a
    /// consumer group that stopped is the one whose lag matters).
    idle_offsets: HashMap<String, Vec<UnloadedOffset>>,
}

type GroupShard = Shard<GroupCoordinator, Response, Resident>;

/// Groups are routed by `Routing::owner_of_group`.
const GROUPS: Keyspace = Keyspace {
    noun: "group",
    owner: |routing, group_id| routing.owner_of_group(group_id),
    span: |group_id| tracing::info_span!("group", group_id),
};

pub struct GroupManager {
    config: GroupManagerConfig,
    runtime: Arc<Runtime<GroupCoordinator, Response, Resident>>,
    store: Arc<dyn GroupStore>,
    timers: TimerWake,
    /// Held by a [`GroupManager::learn_offsets_on_disk`] pass: the
    /// assignment version of the last pass that finished.
    learning: tokio::sync::Mutex<Option<u64>>,
}

/// Records a use of `group_id` (allocates only for a group not yet seen).
fn touch(touched: &mut HashMap<String, u64>, group_id: &str, now: u64) {
    match touched.get_mut(group_id) {
        Some(t) => *t = now,
        None => {
            touched.insert(group_id.to_string(), now);
        }
    }
}

/// Gives memory back after many groups were unloaded (amortised: only maps
/// at most a quarter full are shrunk).
fn shrink_if_sparse(st: &mut GroupShard) {
    st.core.shrink_if_sparse();
    let touched = &mut st.extra.touched;
    if touched.capacity() > 64 && touched.len() <= touched.capacity() / 4 {
        touched.shrink_to_fit();
    }
}

/// A group request the coordinator answers, at once or once a rebalance
/// round or a write completes: which entry point of the core takes it, and
/// which [`Response`] answers it.
pub trait CoordinatorCall: Send + 'static {
    type Answer;
    /// The operation, for spans and logs.
    const NAME: &'static str;
    fn group_id(&self) -> &str;
    fn submit(self, core: &mut GroupCoordinator, token: RequestToken, now: u64) -> Vec<Effect>;
    fn answer(response: Response) -> Option<Self::Answer>;
}

macro_rules! coordinator_calls {
    ($($request:ident => $entry:ident, $variant:ident($answer:ident);)*) => {$(
        impl CoordinatorCall for super::core::$request {
            type Answer = super::core::$answer;
            const NAME: &'static str = stringify!($entry);

            fn group_id(&self) -> &str {
                &self.group_id
            }

            fn submit(self, core: &mut GroupCoordinator, token: RequestToken, now: u64) -> Vec<Effect> {
                core.$entry(token, self, now)
            }

            fn answer(response: Response) -> Option<Self::Answer> {
                match response {
                    Response::$variant(r) => Some(r),
                    _ => None,
                }
            }
        }
    )*};
}

/// A ConsumerGroupHeartbeat with the topics that exist (read before the
/// manager's lock: looking a name up may touch the volume).
pub struct ConsumerHeartbeat {
    pub request: super::consumer::heartbeat::HeartbeatRequest,
    pub topics: Box<dyn super::consumer::heartbeat::TopicsView + Send>,
}

impl CoordinatorCall for ConsumerHeartbeat {
    type Answer = Result<
        super::consumer::heartbeat::HeartbeatResponse,
        super::consumer::heartbeat::HeartbeatError,
    >;
    const NAME: &'static str = "consumer_group_heartbeat";

    fn group_id(&self) -> &str {
        &self.request.group_id
    }

    fn submit(self, core: &mut GroupCoordinator, token: RequestToken, now: u64) -> Vec<Effect> {
        core.consumer_group_heartbeat(token, self.request, self.topics.as_ref(), now)
    }

    fn answer(response: Response) -> Option<Self::Answer> {
        match response {
            Response::ConsumerGroupHeartbeat(r) => Some(r),
            _ => None,
        }
    }
}

/// A JoinGroup with the topics that exist (a consumer group with classic
/// members reads them; read before the manager's lock).
pub struct Join {
    pub request: super::core::JoinGroupRequest,
    pub topics: Box<dyn super::consumer::heartbeat::TopicsView + Send>,
}

impl CoordinatorCall for Join {
    type Answer = super::core::JoinGroupResponse;
    const NAME: &'static str = "join_group";

    fn group_id(&self) -> &str {
        &self.request.group_id
    }

    fn submit(self, core: &mut GroupCoordinator, token: RequestToken, now: u64) -> Vec<Effect> {
        core.join_group(token, self.request, self.topics.as_ref(), now)
    }

    fn answer(response: Response) -> Option<Self::Answer> {
        match response {
            Response::Join(r) => Some(r),
            _ => None,
        }
    }
}

coordinator_calls! {
    SyncGroupRequest => sync_group, Sync(SyncGroupResponse);
    HeartbeatRequest => heartbeat, Heartbeat(HeartbeatResponse);
    LeaveGroupRequest => leave_group, Leave(LeaveGroupResponse);
    OffsetCommitRequest => offset_commit, OffsetCommit(OffsetCommitResponse);
    OffsetDeleteRequest => offset_delete, OffsetDelete(OffsetDeleteResponse);
    TxnOffsetCommitRequest => txn_offset_commit, TxnOffsetCommit(OffsetCommitResponse);
}

impl GroupManager {
    pub fn new(
        broker_id: i32,
        config: GroupManagerConfig,
        store: Arc<dyn GroupStore>,
        clock: Arc<dyn Clock>,
        routing: watch::Receiver<Option<Arc<Routing>>>,
    ) -> Arc<GroupManager> {
        let mut core = GroupCoordinator::new(config.core.clone());
        let fx = core.start(clock.now_ms());
        let runtime = Runtime::new(broker_id, GROUPS, core, Resident::default(), clock, routing);
        let manager = Arc::new(GroupManager {
            config,
            runtime: Arc::new(runtime),
            store,
            timers: TimerWake::default(),
            learning: tokio::sync::Mutex::new(None),
        });
        {
            let mut st = manager.lock();
            manager.execute(&mut st, fx);
        }
        manager
    }

    /// Installs the groups' own configs (`__cluster/group_configs`).
    pub fn set_group_configs(&self, configs: &crate::group::configs::GroupConfigs) {
        self.lock().core.set_group_configs(configs);
    }

    fn lock(&self) -> MutexGuard<'_, GroupShard> {
        self.runtime.lock()
    }

    pub fn now_ms(&self) -> u64 {
        self.runtime.now_ms()
    }

    /// The routing this broker follows, if any.
    pub fn routing(&self) -> Option<Arc<Routing>> {
        self.runtime.routing()
    }

    /// Whether this broker coordinates `group_id` now (both tiers).
    pub fn check_owner(&self, group_id: &str) -> Result<(), NotServed> {
        self.runtime.check_owner(group_id)
    }

    /// Owner check, then load the group's log if it is not in memory. A
    /// group already resident is never overwritten by older disk state.
    pub async fn prepare(self: &Arc<Self>, group_id: &str) -> Result<(), NotServed> {
        self.check_owner(group_id)?;
        {
            let mut st = self.lock();
            if st.core.is_resident(group_id) {
                let now = self.now_ms();
                touch(&mut st.extra.touched, group_id, now);
                return Ok(());
            }
            if st.core.num_resident_groups() >= self.config.max_resident_groups {
                self.unload_idle(&mut st, 0);
                if st.core.num_resident_groups() >= self.config.max_resident_groups {
                    warn!(
                        group = group_id,
                        limit = self.config.max_resident_groups,
                        "too many groups loaded; refusing to load another"
                    );
                    return Err(NotServed(code::COORDINATOR_LOAD_IN_PROGRESS));
                }
            }
        }
        let store = self.store.clone();
        let id = group_id.to_string();
        self.runtime
            .load(
                group_id,
                |st| st.core.is_resident(group_id),
                move || store.load(&id),
                |st, stored, now| self.install(st, group_id, stored, now),
            )
            .await
    }

    /// A group read from its log, into the core.
    fn install(
        self: &Arc<Self>,
        st: &mut GroupShard,
        group_id: &str,
        stored: Option<StoredGroup>,
        now: u64,
    ) {
        if let Some(s) = &stored {
            let version = self.routing().map(|r| r.version());
            info!(group = group_id, broker = self.runtime.broker_id(), assignment_version = ?version,
                  members = s.metadata.as_ref().map_or(0, |m| m.members.len()),
                  offsets = s.offsets.committed_len(), "now coordinating group (loaded from its log)");
        }
        let StoredGroup {
            metadata,
            offsets,
            consumer,
        } = stored.unwrap_or_default();
        if let Some(consumer) = consumer {
            st.core.load_consumer_group(consumer, now);
        }
        let mut fx = st.core.load_group(group_id, metadata, offsets, now);
        fx.extend(st.core.expire_loaded_offsets(group_id, now));
        st.extra.idle_offsets.remove(group_id);
        touch(&mut st.extra.touched, group_id, now);
        self.execute(st, fx);
    }

    /// [`Self::prepare`] for an answer read from memory (OffsetFetch): a
    /// resident group whose log another broker wrote since is stale here
    /// (this broker has not seen the assignment that moved it yet), so it
    /// is unloaded and loaded again, which refuses it if the other broker's
    /// claim is the newer one (docs/design/fencing.md).
    pub async fn prepare_read(self: &Arc<Self>, group_id: &str) -> Result<(), NotServed> {
        let resident = self.lock().core.is_resident(group_id);
        // One fstat of an open file, on this thread: a hop to a blocking
        // thread per OffsetFetch cost 40-60% of its throughput (measured).
        if resident && self.store.written_elsewhere(group_id) {
            info!(
                group = group_id,
                "the group's log was written by another broker; reloading before answering"
            );
            self.unload(group_id);
        }
        self.prepare(group_id).await
    }

    /// Serves one group request: the owner check and load, then the core's
    /// entry point, then its answer. A group unloaded before it answered
    /// (moved away, fenced) reads as NOT_COORDINATOR.
    pub async fn request<C: CoordinatorCall>(
        self: &Arc<Self>,
        request: C,
    ) -> Result<C::Answer, NotServed> {
        let group_id = request.group_id().to_string();
        let span = debug_span!("group", group = %group_id, op = C::NAME);
        async {
            self.prepare(&group_id).await?;
            self.call(&group_id, |core, token, now| {
                request.submit(core, token, now)
            })
            .await
            .and_then(C::answer)
            .ok_or(NotServed(code::NOT_COORDINATOR))
        }
        .instrument(span)
        .await
    }

    /// A transaction marker for the group (from its transaction's
    /// coordinator): the producer's pending offsets are committed or dropped
    /// durably; the error code for the marker's answer.
    pub async fn txn_marker(
        self: &Arc<Self>,
        group_id: &str,
        producer_id: i64,
        commit: bool,
    ) -> Result<i16, NotServed> {
        let span = debug_span!("group", group = %group_id, op = "txn_marker");
        async {
            self.prepare(group_id).await?;
            match self
                .call(group_id, |core, token, _| {
                    core.txn_marker(token, group_id, producer_id, commit)
                })
                .await
            {
                Some(Response::TxnMarker(code)) => Ok(code),
                _ => Err(NotServed(code::NOT_COORDINATOR)),
            }
        }
        .instrument(span)
        .await
    }

    /// Runs `f` on the core and executes its effects, under the lock.
    pub fn apply<T>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut GroupCoordinator, u64) -> (T, Vec<Effect>),
    ) -> T {
        let mut st = self.lock();
        let now = self.now_ms();
        let (out, fx) = f(&mut st.core, now);
        self.execute(&mut st, fx);
        out
    }

    /// Reads from the core under the lock.
    pub fn read<T>(&self, f: impl FnOnce(&GroupCoordinator) -> T) -> T {
        f(&self.lock().core)
    }

    /// Every committed offset this coordinator knows without reading a
    /// log: the resident groups', then those of groups out of memory not
    /// yet past their retention (group, topic, partition, offset).
    pub fn committed_offsets(&self) -> Vec<(String, String, i32, i64)> {
        let now = self.now_ms();
        let st = self.lock();
        let mut out = st.core.committed_offsets();
        for (group, offsets) in &st.extra.idle_offsets {
            out.extend(
                offsets
                    .iter()
                    .filter(|o| o.expires_at_ms.is_none_or(|at| now < at))
                    .map(|o| (group.clone(), o.topic.clone(), o.partition, o.offset)),
            );
        }
        out
    }

    /// Submits a request whose answer may come later (parked joins and
    /// syncs, commits waiting for fsync) and waits for it; `None` when the
    /// group was unloaded before it answered.
    pub async fn call(
        self: &Arc<Self>,
        group_id: &str,
        f: impl FnOnce(&mut GroupCoordinator, RequestToken, u64) -> Vec<Effect>,
    ) -> Option<Response> {
        self.runtime
            .call(|st, token, now| {
                touch(&mut st.extra.touched, group_id, now);
                let fx = f(&mut st.core, token, now);
                self.execute_for(st, fx, Some(token))
            })
            .await
            .ok()
    }

    fn execute(self: &Arc<Self>, st: &mut GroupShard, effects: Vec<Effect>) {
        let none = self.execute_for(st, effects, None);
        debug_assert!(none.is_none());
    }

    /// [`Self::execute`]; the report of an offset commit made for
    /// `caller` is returned for the caller to run instead of spawned.
    fn execute_for(
        self: &Arc<Self>,
        st: &mut GroupShard,
        effects: Vec<Effect>,
        caller: Option<RequestToken>,
    ) -> Option<BoxFuture<'static, ()>> {
        // The core keeps the timers; the timer loop only needs waking when
        // one falls due before the deadline it sleeps until.
        self.timers.armed(st.core.next_timer_deadline());
        let mut own = None;
        for effect in effects {
            match effect {
                Effect::Respond(token, response) => {
                    st.answer(token, response);
                }
                Effect::PersistGroupMetadata {
                    group_id,
                    record,
                    ack,
                } => {
                    let durable = self.store.write_metadata(&group_id, Some(&record));
                    tokio::spawn(self.report_on_durable(
                        durable,
                        "writing group metadata",
                        group_id,
                        move |core, result, now| {
                            // Only writes the core waits on carry an ack.
                            ack.map_or_else(Vec::new, |ack| {
                                core.complete_group_persist(ack, result, now)
                            })
                        },
                    ));
                }
                Effect::PersistOffsets(plan) => {
                    let durable = self.store.commit_offsets(&plan.group_id, &plan.offsets);
                    let token = plan.token;
                    let report = self.report_on_durable(
                        durable,
                        "offset commit",
                        plan.group_id,
                        move |core, result, now| match result {
                            Ok(()) => core.complete_offset_commit(token, now),
                            Err(code) => core.fail_offset_commit(token, code, now),
                        },
                    );
                    if caller == Some(token) && own.is_none() {
                        own = Some(report);
                    } else {
                        tokio::spawn(report);
                    }
                }
                Effect::PersistTxnOffsets(plan) => {
                    let durable = self.store.write_txn_offsets(
                        &plan.group_id,
                        plan.producer_id,
                        &plan.offsets,
                    );
                    let token = plan.token;
                    let report = self.report_on_durable(
                        durable,
                        "transactional offset commit",
                        plan.group_id,
                        move |core, result, now| match result {
                            Ok(()) => core.complete_txn_offset_commit(token, now),
                            Err(code) => core.fail_txn_offset_commit(token, code, now),
                        },
                    );
                    if caller == Some(token) && own.is_none() {
                        own = Some(report);
                    } else {
                        tokio::spawn(report);
                    }
                }
                Effect::EndTxnOffsets {
                    token,
                    group_id,
                    producer_id,
                    commit,
                } => {
                    let durable = self.store.end_txn_offsets(&group_id, producer_id, commit);
                    let report = self.report_on_durable(
                        durable,
                        "transaction marker",
                        group_id,
                        move |core, result, now| match result {
                            Ok(()) => core.complete_txn_marker(token, now),
                            Err(code) => core.fail_txn_marker(token, code, now),
                        },
                    );
                    if caller == Some(token) && own.is_none() {
                        own = Some(report);
                    } else {
                        tokio::spawn(report);
                    }
                }
                Effect::DeleteOffsets(plan) => {
                    let durable = self.store.delete_offsets(&plan.group_id, &plan.partitions);
                    let token = plan.token;
                    tokio::spawn(self.report_on_durable(
                        durable,
                        "offset delete",
                        plan.group_id,
                        move |core, result, now| match result {
                            Ok(()) => core.complete_offset_delete(token, now),
                            Err(code) => core.fail_offset_delete(token, code, now),
                        },
                    ));
                }
                Effect::DeleteGroups(plan) => {
                    let writes: Vec<Durable> = plan
                        .group_ids
                        .iter()
                        .map(|g| self.store.delete_group(g))
                        .collect();
                    let all: Durable =
                        Box::pin(
                            async move { futures::future::try_join_all(writes).await.map(|_| ()) },
                        );
                    let token = plan.token;
                    let groups = plan.group_ids.join(",");
                    tokio::spawn(self.report_on_durable(
                        all,
                        "group delete",
                        groups,
                        move |core, result, now| match result {
                            Ok(()) => core.complete_delete_groups(token, now),
                            Err(code) => core.fail_delete_groups(token, code, now),
                        },
                    ));
                }
                Effect::PersistConsumerRecords {
                    group_id,
                    records,
                    write,
                    conversion,
                } => {
                    let durable = match conversion {
                        None => self.store.write_consumer_records(&group_id, &records),
                        Some(conversion) => {
                            self.store.convert_group(&group_id, &conversion, &records)
                        }
                    };
                    let group = group_id.clone();
                    tokio::spawn(self.report_on_durable(
                        durable,
                        "consumer group change",
                        group_id,
                        move |core, result, now| {
                            core.complete_consumer_write(&group, write, result, now)
                        },
                    ));
                }
                Effect::OffsetsExpired(expired) => {
                    let mut by_group: HashMap<String, Vec<(String, i32)>> = HashMap::new();
                    for (g, t, p) in expired.offsets {
                        by_group.entry(g).or_default().push((t, p));
                    }
                    let mut writes: Vec<Durable> = by_group
                        .iter()
                        .map(|(g, parts)| self.store.delete_offsets(g, parts))
                        .collect();
                    writes.extend(
                        expired
                            .removed_groups
                            .iter()
                            .map(|g| self.store.delete_group(g)),
                    );
                    tokio::spawn(async move {
                        for r in futures::future::join_all(writes).await {
                            if let Err(e) = r {
                                // Harmless: the next load expires them again.
                                warn!(error = %e, "removing expired offsets failed");
                            }
                        }
                    });
                }
            }
        }
        own
    }

    /// Waits for a write to become durable, then reports the outcome to the
    /// core (a failed write as KAFKA_STORAGE_ERROR, never as success) and
    /// executes what it answers: a task to spawn, or for the request that
    /// waits on the write to await.
    fn report_on_durable(
        self: &Arc<Self>,
        durable: Durable,
        what: &'static str,
        group: String,
        report: impl FnOnce(&mut GroupCoordinator, Result<(), i16>, u64) -> Vec<Effect> + Send + 'static,
    ) -> BoxFuture<'static, ()> {
        let me = self.clone();
        self.runtime.after_write(durable, move |st, outcome, now| {
            let fenced = outcome.as_ref().is_err_and(moved);
            let result = outcome.map_err(|e| match e {
                // Another broker owns (or wrote) the group's log: what we
                // hold is stale. Retriable for the client; reload later.
                StoreError::Reclaimed { .. } => {
                    info!(group = %group, error = %e, "{what} refused: the group's log moved; unloading");
                    code::COORDINATOR_LOAD_IN_PROGRESS
                }
                e if moved(&e) => {
                    info!(group = %group, error = %e, "{what} refused: the group's log moved; unloading");
                    code::NOT_COORDINATOR
                }
                e => {
                    warn!(group = %group, error = %e, "{what} is not durable; answering with an error");
                    code::KAFKA_STORAGE_ERROR
                }
            });
            let fx = report(&mut st.core, result, now);
            me.execute(st, fx);
            if fenced && st.core.is_resident(&group) {
                st.extra.idle_offsets.remove(&group);
                me.unload_locked(st, &group, now);
            }
        })
    }

    /// Unloads one resident group (fenced: its log belongs to another
    /// broker, or changed under us); the next request reloads it from disk.
    fn unload(self: &Arc<Self>, group_id: &str) {
        let mut st = self.lock();
        if !st.core.is_resident(group_id) {
            return;
        }
        let now = self.now_ms();
        st.extra.idle_offsets.remove(group_id);
        self.unload_locked(&mut st, group_id, now);
    }

    /// Drops every resident group this broker no longer coordinates (the
    /// orphan sweep). Walks all groups in memory, not the ones we believe
    /// we own: filtering by ownership first would hide the disowned ones.
    pub fn sweep(self: &Arc<Self>, routing: &Routing) {
        let mut st = self.lock();
        let now = self.now_ms();
        for group_id in st.core.resident_groups() {
            if self.runtime.owns_in(routing, &group_id) {
                continue;
            }
            info!(group = %group_id, from = self.runtime.broker_id(), to = ?routing.owner_of_group(&group_id),
                  assignment_version = routing.version(), "group coordinator moved away; unloading");
            self.unload_locked(&mut st, &group_id, now);
        }
        st.extra
            .idle_offsets
            .retain(|group_id, _| self.runtime.owns_in(routing, group_id));
        shrink_if_sparse(&mut st);
    }

    /// Unloads every resident group: this process was fenced (another
    /// broker took over what it held; docs/design/volume.md). Requests
    /// load them again once it serves again, from their logs.
    pub fn unload_all(self: &Arc<Self>) {
        let mut st = self.lock();
        let now = self.now_ms();
        let resident = st.core.resident_groups();
        if !resident.is_empty() {
            info!(
                groups = resident.len(),
                "this broker process was fenced; unloading every group"
            );
        }
        for group_id in resident {
            self.unload_locked(&mut st, &group_id, now);
        }
        st.extra.idle_offsets.clear();
    }

    fn unload_locked(self: &Arc<Self>, st: &mut GroupShard, group_id: &str, now: u64) {
        let fx = st.core.unload_group(group_id, now);
        st.extra.touched.remove(group_id);
        self.store.close(group_id);
        self.execute(st, fx);
    }

    /// Unloads Empty groups idle longer than the configured time; they
    /// reload from their log on the next request.
    pub fn unload_idle_groups(self: &Arc<Self>) {
        let mut st = self.lock();
        self.unload_idle(&mut st, self.config.idle_unload_ms);
    }

    /// Unloads Empty groups untouched for `idle_ms`.
    fn unload_idle(self: &Arc<Self>, st: &mut GroupShard, idle_ms: u64) {
        let now = self.now_ms();
        let idle: Vec<String> = st
            .extra
            .touched
            .iter()
            .filter(|(_, t)| now.saturating_sub(**t) >= idle_ms)
            .map(|(g, _)| g.clone())
            .filter(|g| {
                st.core
                    .group(g)
                    .is_none_or(|grp| grp.state() == GroupState::Empty)
                    && st
                        .core
                        .consumer_group(g)
                        .is_none_or(|c| c.members().is_empty())
            })
            .collect();
        if idle.is_empty() {
            return;
        }
        for g in idle {
            let offsets = st.core.offsets_in_force_of(&g, now);
            // At most as many as may be loaded: the cache must not cost
            // more memory than unloading saved.
            if !offsets.is_empty() && st.extra.idle_offsets.len() < self.config.max_resident_groups
            {
                st.extra.idle_offsets.insert(g.clone(), offsets);
            }
            let fx = st.core.unload_group(&g, now);
            st.extra.touched.remove(&g);
            self.store.close(&g);
            self.execute(st, fx);
        }
        shrink_if_sparse(st);
    }

    /// Fires timers as they fall due and unloads idle groups, until shutdown.
    pub async fn run_timers(self: Arc<Self>, shutdown: CancellationToken) {
        let mut last_idle_check = self.now_ms();
        loop {
            let now = self.now_ms();
            let wait = {
                let st = self.lock();
                self.timers.plan(now, st.core.next_timer_deadline())
            };
            if !self.timers.sleep(wait, &shutdown).await {
                break;
            }
            let mut st = self.lock();
            loop {
                let now = self.now_ms();
                let Some(key) = st.core.next_due_timer(now) else {
                    break;
                };
                let fx = st.core.on_timer(key, now);
                self.execute(&mut st, fx);
            }
            let now = self.now_ms();
            if now.saturating_sub(last_idle_check) >= 1000 {
                last_idle_check = now;
                self.unload_idle(&mut st, self.config.idle_unload_ms);
            }
        }
        let mut st = self.lock();
        let now = self.now_ms();
        let fx = st.core.shutdown(now);
        self.execute(&mut st, fx);
    }
}

mod on_disk;
#[cfg(test)]
mod tests;
