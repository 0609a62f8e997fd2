//! The transaction coordinator's shell on the coordinator runtime
//! ([`crate::coordinator::runtime`]): it loads a transactional id's log on
//! first use (finishing a transaction found prepared there), makes every
//! transition durable before the core hears it succeeded, writes markers
//! through a [`MarkerWriter`], and runs the timeout and expiry sweeps.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use kaas_shared::Routing;
use parking_lot::MutexGuard;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::core::{
    code, ProducerIdSource, RequestToken, TopicPartition, TxnAnswer, TxnCoordinator,
    TxnCoordinatorConfig, TxnEffect, TxnResult, TxnVersion, FINALIZED_TXN_VERSION,
};
use super::store::{StoreError, TxnStore};
use crate::coordinator::clock::Clock;
use crate::coordinator::runtime::{moved, Keyspace, NotServed, Runtime, Shard};
use crate::storage::producer_ids::ProducerIdAllocator;

#[derive(Debug, Clone)]
pub struct TxnManagerConfig {
    pub core: TxnCoordinatorConfig,
    /// transaction.abort.timed.out.transaction.cleanup.interval.ms
    pub abort_check_interval_ms: u64,
    /// transaction.remove.expired.transaction.cleanup.interval.ms
    pub expiry_check_interval_ms: u64,
}

impl Default for TxnManagerConfig {
    fn default() -> Self {
        TxnManagerConfig {
            core: TxnCoordinatorConfig {
                server_version: FINALIZED_TXN_VERSION,
                ..TxnCoordinatorConfig::default()
            },
            abort_check_interval_ms: 10_000,
            expiry_check_interval_ms: 3_600_000,
        }
    }
}

/// Markers for one ended transaction, to append to each of its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerJob {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub result: TxnResult,
    /// The coordinator's epoch: the assignment version it coordinates
    /// under, so a partition refuses markers of a coordinator since
    /// replaced.
    pub coordinator_epoch: i32,
    pub partitions: BTreeSet<TopicPartition>,
}

/// Appends markers to partitions, wherever they are led; resolves once
/// every partition has its marker (or no longer exists), retrying what
/// fails meanwhile.
pub trait MarkerWriter: Send + Sync + 'static {
    fn write(&self, job: MarkerJob) -> BoxFuture<'static, ()>;
}

/// Ids whose completion is being written after their markers, and who
/// waits for it (a held EndTxn answer): what the shell keeps beside the
/// core, under the runtime's lock.
type Completions = HashMap<String, Vec<oneshot::Sender<()>>>;

type TxnShard = Shard<TxnCoordinator, TxnAnswer, Completions>;

/// Transactional ids are routed by `Routing::owner_of_transaction`.
const TRANSACTIONAL_IDS: Keyspace = Keyspace {
    noun: "transactional id",
    owner: |routing, transactional_id| routing.owner_of_transaction(transactional_id),
    span: |transactional_id| tracing::info_span!("transaction", transactional_id),
};

/// How long an EndTxn answer waits for the transaction's markers and
/// completion. Apache answers once PrepareCommit is durable, and the
/// producer's next AddPartitionsToTxn is then refused with
/// CONCURRENT_TRANSACTIONS until the completion is written: clients retry
/// after their backoff (librdkafka 100 ms), which costs more than the few
/// milliseconds the markers take. Holding the answer until the completion
/// (never longer than this) lets the next transaction start at once.
const HOLD_END_TXN_ANSWER: Duration = Duration::from_millis(100);

pub struct TxnManager {
    config: TxnManagerConfig,
    runtime: Arc<Runtime<TxnCoordinator, TxnAnswer, Completions>>,
    store: Arc<dyn TxnStore>,
    producer_ids: Arc<ProducerIdAllocator>,
    /// Set once the broker around this manager exists.
    markers: OnceLock<Arc<dyn MarkerWriter>>,
}

/// The producer ids at hand, for the core (no I/O under the lock: an empty
/// block is refilled before the call).
struct AtHand<'a>(&'a ProducerIdAllocator);

impl ProducerIdSource for AtHand<'_> {
    fn next_id(&mut self) -> Result<i64, i16> {
        self.0
            .take()
            .ok_or(kafka_protocol::ResponseError::CoordinatorLoadInProgress.code())
    }
}

impl TxnManager {
    pub fn new(
        broker_id: i32,
        config: TxnManagerConfig,
        store: Arc<dyn TxnStore>,
        clock: Arc<dyn Clock>,
        routing: watch::Receiver<Option<Arc<Routing>>>,
        producer_ids: Arc<ProducerIdAllocator>,
    ) -> Arc<TxnManager> {
        let core = TxnCoordinator::new(config.core.clone());
        let runtime = Runtime::new(
            broker_id,
            TRANSACTIONAL_IDS,
            core,
            Completions::new(),
            clock,
            routing,
        );
        Arc::new(TxnManager {
            config,
            runtime: Arc::new(runtime),
            store,
            producer_ids,
            markers: OnceLock::new(),
        })
    }

    /// Where markers go; set once, before requests are served.
    pub fn set_marker_writer(&self, markers: Arc<dyn MarkerWriter>) {
        let _ = self.markers.set(markers);
    }

    fn lock(&self) -> MutexGuard<'_, TxnShard> {
        self.runtime.lock()
    }

    fn now_ms(&self) -> i64 {
        self.runtime.now_ms() as i64
    }

    fn routing(&self) -> Option<Arc<Routing>> {
        self.runtime.routing()
    }

    /// Whether this broker coordinates the transactional id now.
    pub fn check_owner(&self, transactional_id: &str) -> Result<(), NotServed> {
        self.runtime.check_owner(transactional_id)
    }

    /// Owner check, then the id's log read if the id is not in memory (a
    /// transaction found prepared is completed: its markers go out again).
    pub async fn prepare(self: &Arc<Self>, transactional_id: &str) -> Result<(), NotServed> {
        self.check_owner(transactional_id)?;
        if transactional_id.is_empty() {
            return Ok(());
        }
        let store = self.store.clone();
        let id = transactional_id.to_string();
        self.runtime
            .load(
                transactional_id,
                |st| st.core.metadata(transactional_id).is_some(),
                move || store.load(&id),
                |st, stored, now| {
                    if let Some(t) = &stored {
                        info!(
                            transactional_id,
                            state = t.state.name(),
                            producer_id = t.producer_id,
                            "now coordinating transactional id (loaded from its log)"
                        );
                    }
                    let fx = st.core.load(transactional_id, stored.as_ref(), now as i64);
                    self.execute(st, fx);
                },
            )
            .await
    }

    /// Producer ids for the calls that may need one or two (a new id, a
    /// rotation, the next id of an exhausted epoch), fetched off the lock.
    async fn ensure_producer_ids(&self) -> Result<(), NotServed> {
        if self.producer_ids.at_hand() >= 2 {
            return Ok(());
        }
        let ids = self.producer_ids.clone();
        match tokio::task::spawn_blocking(move || ids.refill(2)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                warn!(error = %e, "cannot allocate producer ids");
                Err(NotServed(code::COORDINATOR_NOT_AVAILABLE))
            }
            Err(_) => Err(NotServed(code::COORDINATOR_NOT_AVAILABLE)),
        }
    }

    /// Runs a core entry point that answers later (once a write is
    /// durable) and waits for its answer.
    async fn call(
        self: &Arc<Self>,
        f: impl FnOnce(
            &mut TxnCoordinator,
            RequestToken,
            i64,
            &mut dyn ProducerIdSource,
        ) -> Vec<TxnEffect>,
    ) -> Result<TxnAnswer, NotServed> {
        self.runtime
            .call(|st, token, now| {
                let fx = f(
                    &mut st.core,
                    token,
                    now as i64,
                    &mut AtHand(&self.producer_ids),
                );
                self.execute(st, fx);
                None
            })
            .await
    }

    pub async fn init_producer_id(
        self: &Arc<Self>,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<TxnAnswer, NotServed> {
        self.prepare(transactional_id).await?;
        self.ensure_producer_ids().await?;
        self.call(|core, token, now, ids| {
            core.init_producer_id(token, transactional_id, timeout_ms, expected, now, ids)
        })
        .await
    }

    pub async fn add_partitions(
        self: &Arc<Self>,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        version: TxnVersion,
    ) -> Result<TxnAnswer, NotServed> {
        self.prepare(transactional_id).await?;
        self.call(|core, token, now, _| {
            core.add_partitions(
                token,
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                version,
                now,
            )
        })
        .await
    }

    /// AddPartitionsToTxn's verify-only form: per partition, whether it is
    /// in the producer's open transaction.
    pub async fn verify_partitions(
        self: &Arc<Self>,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
    ) -> Result<Vec<(TopicPartition, i16)>, NotServed> {
        self.prepare(transactional_id).await?;
        Ok(self.lock().core.verify_partitions(
            transactional_id,
            producer_id,
            producer_epoch,
            partitions,
        ))
    }

    pub async fn end_txn(
        self: &Arc<Self>,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        result: TxnResult,
        version: TxnVersion,
    ) -> Result<TxnAnswer, NotServed> {
        self.prepare(transactional_id).await?;
        self.ensure_producer_ids().await?;
        self.call(|core, token, now, ids| {
            core.end_txn(
                token,
                transactional_id,
                producer_id,
                producer_epoch,
                result,
                version,
                now,
                ids,
            )
        })
        .await
    }

    /// The coordinator epoch markers carry: the assignment version this
    /// broker coordinates under.
    fn coordinator_epoch(&self) -> i32 {
        self.routing().map_or(0, |r| r.coordinator_epoch())
    }

    fn execute(self: &Arc<Self>, st: &mut TxnShard, effects: Vec<TxnEffect>) {
        // The answers that come with markers (EndTxn, a fencing
        // InitProducerId) wait for the completion, within a bound.
        let marking = effects
            .iter()
            .any(|e| matches!(e, TxnEffect::WriteMarkers { .. }));
        let mut held = Vec::new();
        for effect in effects {
            match effect {
                TxnEffect::Answer(token, answer) => {
                    if marking {
                        held.extend(st.take_waiter(token).map(|tx| (tx, answer)));
                    } else {
                        st.answer(token, answer);
                    }
                }
                TxnEffect::Write {
                    token,
                    transactional_id,
                    transit,
                } => {
                    let durable = match &transit {
                        Some(t) => self.store.write(&transactional_id, t),
                        None => self.store.remove(&transactional_id),
                    };
                    let completes = transit.as_ref().is_some_and(|t| {
                        matches!(
                            t.state,
                            super::core::TxnState::CompleteCommit
                                | super::core::TxnState::CompleteAbort
                        )
                    });
                    let me = self.clone();
                    tokio::spawn(self.runtime.after_write(durable, move |st, outcome, now| {
                        let fenced = outcome.as_ref().is_err_and(moved);
                        let outcome = outcome.map_err(|e| {
                            warn!(transactional_id, error = %e, "transaction log write failed");
                            match e {
                                StoreError::Io(_) => code::COORDINATOR_NOT_AVAILABLE,
                                _ => code::NOT_COORDINATOR,
                            }
                        });
                        let fx = st.core.write_done(token, outcome, now as i64);
                        me.execute(st, fx);
                        if completes {
                            for done in st.extra.remove(&transactional_id).unwrap_or_default() {
                                let _ = done.send(());
                            }
                        }
                        if fenced {
                            // Another broker writes the id now: what we hold is stale.
                            st.core.unload(&transactional_id);
                            me.store.close(&transactional_id);
                        }
                    }));
                }
                TxnEffect::WriteMarkers {
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    result,
                    partitions,
                    ..
                } => {
                    let Some(markers) = self.markers.get().cloned() else {
                        warn!(
                            transactional_id,
                            "no marker writer: the transaction stays prepared"
                        );
                        continue;
                    };
                    let job = MarkerJob {
                        transactional_id: transactional_id.clone(),
                        producer_id,
                        producer_epoch,
                        result,
                        coordinator_epoch: self.coordinator_epoch(),
                        partitions,
                    };
                    let me = self.clone();
                    if !held.is_empty() {
                        let (done, completed) = oneshot::channel();
                        st.extra
                            .entry(transactional_id.clone())
                            .or_default()
                            .push(done);
                        let answers = std::mem::take(&mut held);
                        tokio::spawn(async move {
                            let _ = tokio::time::timeout(HOLD_END_TXN_ANSWER, completed).await;
                            for (tx, answer) in answers {
                                let _ = tx.send(answer);
                            }
                        });
                    }
                    tokio::spawn(async move {
                        markers.write(job).await;
                        let mut st = me.lock();
                        let fx = st.core.markers_written(&transactional_id);
                        me.execute(&mut st, fx);
                    });
                }
            }
        }
        // Answers held for markers that could not be started: sent now.
        for (tx, answer) in held {
            let _ = tx.send(answer);
        }
    }

    /// Unloads the transactional ids this broker no longer coordinates
    /// (their writes in flight answer NOT_COORDINATOR).
    pub fn sweep(self: &Arc<Self>, routing: &Routing) {
        self.unload_where(
            |id| !self.runtime.owns_in(routing, id),
            "transaction coordinator moved away; unloading",
        );
    }

    /// Unloads every transactional id: this process was fenced (another
    /// broker took over what it held; docs/design/volume.md).
    pub fn unload_all(self: &Arc<Self>) {
        self.unload_where(|_| true, "this broker process was fenced; unloading");
    }

    fn unload_where(self: &Arc<Self>, unload: impl Fn(&str) -> bool, why: &'static str) {
        let mut st = self.lock();
        let moved: Vec<String> = st
            .core
            .loaded()
            .map(|m| m.transactional_id.clone())
            .filter(|id| unload(id))
            .collect();
        for id in moved {
            info!(transactional_id = %id, "{why}");
            st.core.unload(&id);
            self.store.close(&id);
        }
    }

    /// Aborts open transactions past their timeout and, less often, removes
    /// ids idle past `transactional.id.expiration.ms`, until `shutdown`.
    pub async fn run_timers(self: Arc<Self>, shutdown: CancellationToken) {
        let abort_every = Duration::from_millis(self.config.abort_check_interval_ms.max(1));
        let expire_every = self.config.expiry_check_interval_ms.max(1) as i64;
        let mut last_expiry = self.now_ms();
        let mut assignments = self.runtime.assignments();
        self.adopt().await;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                changed = assignments.changed() => {
                    if changed.is_ok() {
                        self.adopt().await;
                    }
                    continue;
                }
                _ = tokio::time::sleep(abort_every) => {}
            }
            if self.ensure_producer_ids().await.is_err() {
                continue;
            }
            let mut st = self.lock();
            let now = self.now_ms();
            let mut fx = st
                .core
                .abort_timed_out(now, &mut AtHand(&self.producer_ids));
            if now - last_expiry >= expire_every {
                last_expiry = now;
                fx.extend(st.core.expire_ids(now));
            }
            self.execute(&mut st, fx);
        }
    }

    /// Loads every transactional id this broker now coordinates that has a
    /// log and is not in memory: a transaction its previous coordinator
    /// left prepared is completed, and an open one times out, with no client
    /// asking (Apache loads a whole transaction log partition on election).
    pub async fn adopt(self: &Arc<Self>) {
        let store = self.store.clone();
        let ids = match tokio::task::spawn_blocking(move || store.list()).await {
            Ok(Ok(ids)) => ids,
            Ok(Err(e)) => {
                warn!(error = %e, "cannot list the transaction logs to adopt");
                return;
            }
            Err(_) => return,
        };
        for id in ids {
            let known = self.lock().core.metadata(&id).is_some();
            if !known && self.check_owner(&id).is_ok() {
                if let Err(e) = self.prepare(&id).await {
                    warn!(transactional_id = %id, code = e.0, "cannot adopt a transactional id");
                }
            }
        }
    }

    /// The metadata of a loaded id, for tests and admin answers.
    pub fn metadata(&self, transactional_id: &str) -> Option<super::core::TxnMetadata> {
        self.lock().core.metadata(transactional_id).cloned()
    }

    /// DescribeTransactions of one id: its metadata (loaded first), `None`
    /// when it has none.
    pub async fn describe(
        self: &Arc<Self>,
        transactional_id: &str,
    ) -> Result<Option<super::core::TxnMetadata>, NotServed> {
        self.prepare(transactional_id).await?;
        Ok(self.metadata(transactional_id))
    }

    /// Every transactional id this broker coordinates, with a log on the
    /// volume or in memory (each loaded first), for ListTransactions.
    pub async fn list(self: &Arc<Self>) -> Result<Vec<super::core::TxnMetadata>, NotServed> {
        let store = self.store.clone();
        let on_volume = tokio::task::spawn_blocking(move || store.list())
            .await
            .map_err(|_| NotServed(code::COORDINATOR_NOT_AVAILABLE))?
            .map_err(|e| {
                warn!(error = %e, "cannot list the transaction logs");
                NotServed(code::COORDINATOR_NOT_AVAILABLE)
            })?;
        let mut ids: BTreeSet<String> = on_volume.into_iter().collect();
        ids.extend(
            self.lock()
                .core
                .loaded()
                .map(|m| m.transactional_id.clone()),
        );
        let mut out = Vec::new();
        for id in ids {
            if self.check_owner(&id).is_err() {
                continue;
            }
            match self.prepare(&id).await {
                Ok(()) => out.extend(self.metadata(&id)),
                // Moved meanwhile: another broker lists it.
                Err(NotServed(c)) if c == code::NOT_COORDINATOR => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
