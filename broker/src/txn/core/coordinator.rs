//! The transaction coordinator's decisions, as Apache Kafka's
//! `TransactionCoordinator` makes them, without I/O: each entry point
//! checks a request against the id's [`TxnMetadata`] and returns
//! [`TxnEffect`]s — an answer, a write of a transition to the id's log, or
//! markers to write to the transaction's partitions. The shell reports a
//! write's outcome with [`TxnCoordinator::write_done`] and the markers'
//! with [`TxnCoordinator::markers_written`]; only then does the coordinator
//! apply the transition (every transition is durable before it is
//! answered).
//!
//! Over 800 lines: every entry point of one state machine over one
//! `TxnMetadata`, as Apache's `TransactionCoordinator`; split, each part
//! would reach into the others' private checks.

use std::collections::{BTreeSet, HashMap};

use super::end_txn::{decide_end_v1, decide_end_v2, End};
use super::metadata::{
    epoch_exhausted, TopicPartition, TransitionError, TxnMetadata, TxnTransit, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
};
use super::state::{TxnState, TxnVersion};

pub use crate::coordinator::errors::code;

/// Broker settings the coordinator reads (Apache names in comments).
#[derive(Clone, Debug)]
pub struct TxnCoordinatorConfig {
    /// transaction.max.timeout.ms
    pub max_timeout_ms: i32,
    /// transactional.id.expiration.ms
    pub id_expiration_ms: i64,
    /// The transaction version this coordinator runs fences and timeouts
    /// with (Apache's finalized `transaction.version`).
    pub server_version: TxnVersion,
}

impl Default for TxnCoordinatorConfig {
    fn default() -> Self {
        TxnCoordinatorConfig {
            max_timeout_ms: 900_000,
            id_expiration_ms: 7 * 24 * 60 * 60 * 1_000,
            server_version: TxnVersion::V0,
        }
    }
}

/// Hands out new producer ids without blocking: a block the shell fetched
/// ahead. An error (no id at hand) is answered to the client, who retries.
pub trait ProducerIdSource {
    fn next_id(&mut self) -> Result<i64, i16>;
}

/// The shell's handle of a request, echoed in its answer.
pub type RequestToken = u64;
/// The coordinator's handle of a write, echoed by `write_done`.
pub type WriteToken = u64;

/// Commit or abort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnResult {
    Commit,
    Abort,
}

impl TxnResult {
    pub fn from_committed(committed: bool) -> TxnResult {
        if committed {
            TxnResult::Commit
        } else {
            TxnResult::Abort
        }
    }

    pub(super) fn prepare_state(self) -> TxnState {
        match self {
            TxnResult::Commit => TxnState::PrepareCommit,
            TxnResult::Abort => TxnState::PrepareAbort,
        }
    }
}

/// An answer to a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnAnswer {
    InitProducerId {
        producer_id: i64,
        producer_epoch: i16,
        error: i16,
    },
    /// AddPartitionsToTxn (every partition shares the error) and
    /// AddOffsetsToTxn.
    AddPartitions { error: i16 },
    /// EndTxn; the producer id and epoch are -1 but for a version-2 success
    /// (the bumped epoch, or the next producer id at epoch 0).
    EndTxn {
        error: i16,
        producer_id: i64,
        producer_epoch: i16,
    },
}

impl TxnAnswer {
    fn init_error(error: i16) -> TxnAnswer {
        TxnAnswer::InitProducerId {
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            error,
        }
    }

    fn end_error(error: i16) -> TxnAnswer {
        TxnAnswer::EndTxn {
            error,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
        }
    }

    pub fn error(&self) -> i16 {
        match self {
            TxnAnswer::InitProducerId { error, .. }
            | TxnAnswer::AddPartitions { error }
            | TxnAnswer::EndTxn { error, .. } => *error,
        }
    }
}

/// What the shell does for the coordinator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnEffect {
    Answer(RequestToken, TxnAnswer),
    /// Make `transit` durable in the id's log (a `None` transit: remove the
    /// id, it expired), then call `write_done(token, ..)`.
    Write {
        token: WriteToken,
        transactional_id: String,
        transit: Option<TxnTransit>,
    },
    /// Append `result` markers for the producer to each partition, then call
    /// `markers_written(transactional_id)`.
    WriteMarkers {
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        result: TxnResult,
        partitions: BTreeSet<TopicPartition>,
        client_version: TxnVersion,
    },
}

/// What a write's completion leads to.
#[derive(Debug)]
enum AfterWrite {
    /// Answer InitProducerId with the transit's id and epoch.
    InitProducerId(RequestToken),
    AddPartitions(RequestToken),
    /// A PrepareCommit/PrepareAbort: complete it, answer, write markers.
    Prepared(Prepared),
    /// A CompleteCommit/CompleteAbort after the markers: nothing to answer.
    Completed,
    /// An expired id's removal.
    Removed,
}

#[derive(Debug)]
struct Prepared {
    /// Who asked: EndTxn, InitProducerId (fencing an open transaction, told
    /// CONCURRENT_TRANSACTIONS once the abort is durable), or nobody (a
    /// timeout).
    reply: Reply,
    producer_id: i64,
    producer_epoch: i16,
    result: TxnResult,
    epoch_fence: bool,
    version: TxnVersion,
}

#[derive(Debug, Clone, Copy)]
enum Reply {
    EndTxn(RequestToken),
    InitProducerId(RequestToken),
    Nobody,
}

#[derive(Debug)]
struct PendingWrite {
    transactional_id: String,
    /// The entry's load it was prepared in: a write that outlives an unload
    /// and reload answers NOT_COORDINATOR.
    load: u64,
    transit: Option<TxnTransit>,
    then: AfterWrite,
}

struct Entry {
    metadata: TxnMetadata,
    load: u64,
    /// The completion prepared while markers are written.
    completing: Option<TxnTransit>,
}

/// The transactions coordinated here, loaded.
#[derive(Default)]
pub struct TxnCoordinator {
    cfg: TxnCoordinatorConfig,
    entries: HashMap<String, Entry>,
    writes: HashMap<WriteToken, PendingWrite>,
    next_token: WriteToken,
    loads: u64,
}

impl TxnCoordinator {
    pub fn new(cfg: TxnCoordinatorConfig) -> TxnCoordinator {
        TxnCoordinator {
            cfg,
            ..TxnCoordinator::default()
        }
    }

    pub fn config(&self) -> &TxnCoordinatorConfig {
        &self.cfg
    }

    pub fn metadata(&self, transactional_id: &str) -> Option<&TxnMetadata> {
        self.entries.get(transactional_id).map(|e| &e.metadata)
    }

    /// For tests: the metadata as it is now, to set a state up.
    #[cfg(test)]
    pub fn metadata_mut(&mut self, transactional_id: &str) -> Option<&mut TxnMetadata> {
        self.entries
            .get_mut(transactional_id)
            .map(|e| &mut e.metadata)
    }

    pub fn loaded(&self) -> impl Iterator<Item = &TxnMetadata> {
        self.entries.values().map(|e| &e.metadata)
    }

    /// Installs an id read from its log (`None`: it has none). A
    /// transaction found prepared is completed by this coordinator: its
    /// markers are written again, then the completion.
    pub fn load(
        &mut self,
        transactional_id: &str,
        stored: Option<&TxnTransit>,
        now_ms: i64,
    ) -> Vec<TxnEffect> {
        self.entries.remove(transactional_id);
        let Some(stored) = stored else {
            return Vec::new();
        };
        self.loads += 1;
        let mut entry = Entry {
            metadata: TxnMetadata::from_stored(transactional_id, stored),
            load: self.loads,
            completing: None,
        };
        let mut fx = Vec::new();
        if matches!(
            entry.metadata.state,
            TxnState::PrepareCommit | TxnState::PrepareAbort
        ) {
            if let Ok(complete) = entry.metadata.prepare_complete(now_ms) {
                fx.push(markers(&entry.metadata, &complete));
                entry.completing = Some(complete);
            }
        }
        self.entries.insert(transactional_id.to_string(), entry);
        fx
    }

    /// Forgets an id (moved to another coordinator). Writes in flight for it
    /// answer NOT_COORDINATOR when they complete.
    pub fn unload(&mut self, transactional_id: &str) {
        self.entries.remove(transactional_id);
    }

    /// Installs metadata as is (tests, and the shell's own checks).
    #[cfg(test)]
    pub fn put(&mut self, metadata: TxnMetadata) {
        self.loads += 1;
        self.entries.insert(
            metadata.transactional_id.clone(),
            Entry {
                metadata,
                load: self.loads,
                completing: None,
            },
        );
    }

    fn write(
        &mut self,
        transactional_id: &str,
        transit: Option<TxnTransit>,
        then: AfterWrite,
    ) -> TxnEffect {
        self.next_token += 1;
        let token = self.next_token;
        let load = self.entries.get(transactional_id).map_or(0, |e| e.load);
        self.writes.insert(
            token,
            PendingWrite {
                transactional_id: transactional_id.to_string(),
                load,
                transit: transit.clone(),
                then,
            },
        );
        TxnEffect::Write {
            token,
            transactional_id: transactional_id.to_string(),
            transit,
        }
    }

    /// Whether `transaction.max.timeout.ms` allows this timeout.
    pub fn valid_timeout(&self, timeout_ms: i32) -> bool {
        timeout_ms > 0 && timeout_ms <= self.cfg.max_timeout_ms
    }

    /// InitProducerId with a transactional id (`None`: an idempotent
    /// producer, whose id the shell hands out without the coordinator).
    /// `expected`: the producer id and epoch a KIP-360 client already has.
    pub fn init_producer_id(
        &mut self,
        request: RequestToken,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
        now_ms: i64,
        ids: &mut dyn ProducerIdSource,
    ) -> Vec<TxnEffect> {
        let answer = |error| vec![TxnEffect::Answer(request, TxnAnswer::init_error(error))];
        if transactional_id.is_empty() {
            return answer(code::INVALID_REQUEST);
        }
        if !self.valid_timeout(timeout_ms) {
            return answer(code::INVALID_TRANSACTION_TIMEOUT);
        }
        if !self.entries.contains_key(transactional_id) {
            let producer_id = match ids.next_id() {
                Ok(id) => id,
                Err(error) => return answer(error),
            };
            self.loads += 1;
            self.entries.insert(
                transactional_id.to_string(),
                Entry {
                    metadata: TxnMetadata::new(transactional_id, producer_id, timeout_ms, now_ms),
                    load: self.loads,
                    completing: None,
                },
            );
        }
        let entry = self
            .entries
            .get_mut(transactional_id)
            .expect("just ensured");
        let m = &mut entry.metadata;
        if m.transition_pending() {
            return answer(code::CONCURRENT_TRANSACTIONS);
        }
        if let Some((pid, epoch)) = expected {
            let valid = m.producer_epoch == NO_PRODUCER_EPOCH
                || pid == m.producer_id
                || (pid == m.prev_producer_id && epoch_exhausted(epoch));
            if !valid {
                return answer(code::PRODUCER_FENCED);
            }
        }
        let transit = match m.state {
            TxnState::PrepareAbort | TxnState::PrepareCommit => {
                return answer(code::CONCURRENT_TRANSACTIONS)
            }
            TxnState::CompleteAbort | TxnState::CompleteCommit | TxnState::Empty => {
                let prepared = if m.epoch_exhausted()
                    && expected.is_none_or(|(_, e)| e == m.producer_epoch)
                {
                    match ids.next_id() {
                        Ok(id) => m.prepare_producer_id_rotation(
                            id,
                            timeout_ms,
                            now_ms,
                            expected.is_some(),
                        ),
                        Err(error) => return answer(error),
                    }
                } else {
                    m.prepare_increment_producer_epoch(timeout_ms, expected.map(|e| e.1), now_ms)
                };
                match prepared {
                    Ok(t) => t,
                    Err(e) => return answer(transition_error(&e)),
                }
            }
            TxnState::Ongoing => {
                // Fence the open transaction's producer and abort it; the
                // client retries once the abort is durable.
                let fence = match m.prepare_fence_producer_epoch() {
                    Ok(t) => t,
                    Err(e) => return answer(transition_error(&e)),
                };
                let version = self.cfg.server_version;
                return self.end_transaction(
                    Reply::InitProducerId(request),
                    transactional_id,
                    fence.producer_id,
                    fence.producer_epoch,
                    TxnResult::Abort,
                    false,
                    version,
                    now_ms,
                    ids,
                );
            }
            TxnState::Dead | TxnState::PrepareEpochFence => {
                return answer(code::UNKNOWN_SERVER_ERROR)
            }
        };
        vec![self.write(
            transactional_id,
            Some(transit),
            AfterWrite::InitProducerId(request),
        )]
    }

    /// AddPartitionsToTxn, and AddOffsetsToTxn (whose partition is the
    /// group's offsets, as the shell names it).
    #[allow(clippy::too_many_arguments)]
    pub fn add_partitions(
        &mut self,
        request: RequestToken,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        client_version: TxnVersion,
        now_ms: i64,
    ) -> Vec<TxnEffect> {
        let answer = |error| {
            vec![TxnEffect::Answer(
                request,
                TxnAnswer::AddPartitions { error },
            )]
        };
        if transactional_id.is_empty() {
            return answer(code::INVALID_REQUEST);
        }
        let Some(entry) = self.entries.get_mut(transactional_id) else {
            return answer(code::INVALID_PRODUCER_ID_MAPPING);
        };
        let m = &mut entry.metadata;
        // First: under version 2 the client may already use the producer id
        // a pending completion moves to.
        if m.transition_pending() {
            return answer(code::CONCURRENT_TRANSACTIONS);
        }
        if m.producer_id != producer_id {
            return answer(code::INVALID_PRODUCER_ID_MAPPING);
        }
        if m.producer_epoch != producer_epoch {
            return answer(code::PRODUCER_FENCED);
        }
        if matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return answer(code::CONCURRENT_TRANSACTIONS);
        }
        if m.state == TxnState::Ongoing && m.partitions.is_superset(partitions) {
            return answer(code::NONE);
        }
        match m.prepare_add_partitions(partitions, now_ms, client_version) {
            Ok(t) => vec![self.write(
                transactional_id,
                Some(t),
                AfterWrite::AddPartitions(request),
            )],
            Err(e) => answer(transition_error(&e)),
        }
    }

    /// AddPartitionsToTxn v4+ with `verify_only` (a partition leader asking
    /// whether a transactional batch may be appended): per partition, NONE
    /// if it is in the open transaction, TRANSACTION_ABORTABLE if not. A
    /// pending transition is not checked: the append checks again.
    pub fn verify_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
    ) -> Vec<(TopicPartition, i16)> {
        let all = |error| partitions.iter().map(|p| (p.clone(), error)).collect();
        if transactional_id.is_empty() {
            return all(code::INVALID_REQUEST);
        }
        let Some(entry) = self.entries.get(transactional_id) else {
            return all(code::INVALID_PRODUCER_ID_MAPPING);
        };
        let m = &entry.metadata;
        if m.producer_id != producer_id {
            return all(code::INVALID_PRODUCER_ID_MAPPING);
        }
        if m.producer_epoch != producer_epoch {
            return all(code::PRODUCER_FENCED);
        }
        if matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return all(code::CONCURRENT_TRANSACTIONS);
        }
        partitions
            .iter()
            .map(|p| {
                let error = if m.partitions.contains(p) {
                    code::NONE
                } else {
                    code::TRANSACTION_ABORTABLE
                };
                (p.clone(), error)
            })
            .collect()
    }

    /// EndTxn from a client.
    #[allow(clippy::too_many_arguments)]
    pub fn end_txn(
        &mut self,
        request: RequestToken,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        result: TxnResult,
        client_version: TxnVersion,
        now_ms: i64,
        ids: &mut dyn ProducerIdSource,
    ) -> Vec<TxnEffect> {
        self.end_transaction(
            Reply::EndTxn(request),
            transactional_id,
            producer_id,
            producer_epoch,
            result,
            true,
            client_version,
            now_ms,
            ids,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn end_transaction(
        &mut self,
        reply: Reply,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        result: TxnResult,
        from_client: bool,
        version: TxnVersion,
        now_ms: i64,
        ids: &mut dyn ProducerIdSource,
    ) -> Vec<TxnEffect> {
        let refuse = |error| answer_prepared(reply, Err(error));
        if transactional_id.is_empty() {
            return refuse(code::INVALID_REQUEST);
        }
        let Some(entry) = self.entries.get_mut(transactional_id) else {
            return refuse(code::INVALID_PRODUCER_ID_MAPPING);
        };
        let m = &mut entry.metadata;
        let decided = if version.supports_epoch_bump() {
            decide_end_v2(
                m,
                producer_id,
                producer_epoch,
                result,
                from_client,
                now_ms,
                ids,
            )
        } else {
            decide_end_v1(m, producer_id, producer_epoch, result, from_client, now_ms)
        };
        match decided {
            End::Refuse(error) => {
                // A fence that cannot go on is dropped, not left pending.
                if m.pending == Some(TxnState::PrepareEpochFence) {
                    m.pending = None;
                }
                refuse(error)
            }
            // An accepted retry of a completed EndTxn: nothing to write.
            End::Done {
                producer_id,
                producer_epoch,
            } => answer_prepared(reply, Ok((producer_id, producer_epoch))),
            End::Write {
                transit,
                epoch_fence,
            } => {
                let then = AfterWrite::Prepared(Prepared {
                    reply,
                    producer_id,
                    producer_epoch,
                    result,
                    epoch_fence,
                    version,
                });
                vec![self.write(transactional_id, Some(transit), then)]
            }
        }
    }

    /// A write the coordinator asked for is done (`Ok`) or failed with the
    /// Apache error the shell mapped its failure to.
    pub fn write_done(
        &mut self,
        token: WriteToken,
        outcome: Result<(), i16>,
        now_ms: i64,
    ) -> Vec<TxnEffect> {
        let Some(w) = self.writes.remove(&token) else {
            return Vec::new();
        };
        let entry = self
            .entries
            .get_mut(&w.transactional_id)
            .filter(|e| e.load == w.load);
        let outcome = match (outcome, entry) {
            (Err(error), Some(entry)) => {
                // The transition did not happen; a completion is kept
                // pending, to be written again.
                if !matches!(w.then, AfterWrite::Completed) {
                    entry.metadata.pending = None;
                }
                if let AfterWrite::Prepared(p) = &w.then {
                    if p.epoch_fence && !p.version.supports_epoch_bump() {
                        entry.metadata.failed_epoch_fence = true;
                    }
                }
                Err(error)
            }
            (Err(error), None) => Err(error),
            (Ok(()), None) => Err(code::NOT_COORDINATOR),
            (Ok(()), Some(entry)) => match &w.transit {
                Some(t) => entry
                    .metadata
                    .complete_transition(t)
                    .map_err(|e| transition_error(&e)),
                None => {
                    self.entries.remove(&w.transactional_id);
                    Ok(())
                }
            },
        };
        match w.then {
            AfterWrite::InitProducerId(request) => {
                let answer = match (&outcome, &w.transit) {
                    (Ok(()), Some(t)) => TxnAnswer::InitProducerId {
                        producer_id: t.producer_id,
                        producer_epoch: t.producer_epoch,
                        error: code::NONE,
                    },
                    (Err(e), _) => TxnAnswer::init_error(*e),
                    (Ok(()), None) => TxnAnswer::init_error(code::UNKNOWN_SERVER_ERROR),
                };
                vec![TxnEffect::Answer(request, answer)]
            }
            AfterWrite::AddPartitions(request) => vec![TxnEffect::Answer(
                request,
                TxnAnswer::AddPartitions {
                    error: outcome.err().unwrap_or(code::NONE),
                },
            )],
            AfterWrite::Prepared(p) => match outcome {
                Err(error) => answer_prepared(p.reply, Err(error)),
                Ok(()) => self.prepared(&w.transactional_id, p, now_ms),
            },
            AfterWrite::Completed => {
                if outcome.is_ok() {
                    if let Some(entry) = self.entries.get_mut(&w.transactional_id) {
                        entry.completing = None;
                    }
                }
                Vec::new()
            }
            AfterWrite::Removed => Vec::new(),
        }
    }

    /// A durable PrepareCommit/PrepareAbort: checks the request still holds,
    /// prepares the completion, answers, and starts the markers.
    fn prepared(&mut self, transactional_id: &str, p: Prepared, now_ms: i64) -> Vec<TxnEffect> {
        let entry = self
            .entries
            .get_mut(transactional_id)
            .expect("checked by write_done");
        let m = &mut entry.metadata;
        let epoch_ok = if p.version.supports_epoch_bump() {
            m.producer_epoch == p.producer_epoch
                || i32::from(m.producer_epoch) == i32::from(p.producer_epoch) + 1
        } else {
            m.producer_epoch == p.producer_epoch
        };
        let check = if m.producer_id != p.producer_id {
            Err(code::INVALID_PRODUCER_ID_MAPPING)
        } else if !epoch_ok {
            Err(code::PRODUCER_FENCED)
        } else if m.transition_pending() {
            Err(code::CONCURRENT_TRANSACTIONS)
        } else if m.state != p.result.prepare_state() {
            Err(code::INVALID_TXN_STATE)
        } else {
            m.prepare_complete(now_ms).map_err(|e| transition_error(&e))
        };
        let complete = match check {
            Ok(t) => t,
            Err(error) => return answer_prepared(p.reply, Err(error)),
        };
        let mut fx = answer_prepared(
            p.reply,
            Ok(if p.version.supports_epoch_bump() {
                (complete.producer_id, complete.producer_epoch)
            } else {
                (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            }),
        );
        fx.push(markers(m, &complete));
        entry.completing = Some(complete);
        fx
    }

    /// Every partition of the completing transaction has its marker: the
    /// completion is written. A completion whose write failed stays
    /// pending; calling this again writes it again.
    pub fn markers_written(&mut self, transactional_id: &str) -> Vec<TxnEffect> {
        let Some(complete) = self
            .entries
            .get(transactional_id)
            .and_then(|e| e.completing.clone())
        else {
            return Vec::new();
        };
        vec![self.write(transactional_id, Some(complete), AfterWrite::Completed)]
    }

    /// Open transactions past their timeout, oldest first: each is fenced
    /// and aborted, as InitProducerId does, without a reply.
    pub fn abort_timed_out(
        &mut self,
        now_ms: i64,
        ids: &mut dyn ProducerIdSource,
    ) -> Vec<TxnEffect> {
        let mut due: Vec<(i64, String)> = self
            .entries
            .values()
            .map(|e| &e.metadata)
            .filter(|m| {
                !m.transition_pending()
                    && m.state == TxnState::Ongoing
                    && m.start_ms + i64::from(m.timeout_ms) < now_ms
            })
            .map(|m| (m.start_ms, m.transactional_id.clone()))
            .collect();
        due.sort();
        let mut fx = Vec::new();
        for (_, id) in due {
            let m = &mut self.entries.get_mut(&id).expect("listed").metadata;
            let Ok(fence) = m.prepare_fence_producer_epoch() else {
                continue;
            };
            let version = self.cfg.server_version;
            fx.extend(self.end_transaction(
                Reply::Nobody,
                &id,
                fence.producer_id,
                fence.producer_epoch,
                TxnResult::Abort,
                false,
                version,
                now_ms,
                ids,
            ));
        }
        fx
    }

    /// Resting ids not used for `transactional.id.expiration.ms`: each is
    /// removed from its log.
    pub fn expire_ids(&mut self, now_ms: i64) -> Vec<TxnEffect> {
        let expiry = self.cfg.id_expiration_ms;
        let mut expired: Vec<String> = self
            .entries
            .values()
            .map(|e| &e.metadata)
            .filter(|m| {
                !m.transition_pending()
                    && m.state.expiration_allowed()
                    && m.last_update_ms <= now_ms - expiry
            })
            .map(|m| m.transactional_id.clone())
            .collect();
        expired.sort();
        let mut fx = Vec::new();
        for id in expired {
            let m = &mut self.entries.get_mut(&id).expect("listed").metadata;
            if m.prepare_dead().is_ok() {
                fx.push(self.write(&id, None, AfterWrite::Removed));
            }
        }
        fx
    }
}

/// The answer to whoever asked for a PrepareCommit/PrepareAbort: EndTxn
/// hears the outcome (with the producer id and epoch to use next);
/// InitProducerId, which fenced an open transaction, hears
/// CONCURRENT_TRANSACTIONS once the abort is durable, and retries.
fn answer_prepared(reply: Reply, outcome: Result<(i64, i16), i16>) -> Vec<TxnEffect> {
    match reply {
        Reply::EndTxn(request) => {
            let answer = match outcome {
                Ok((producer_id, producer_epoch)) => TxnAnswer::EndTxn {
                    error: code::NONE,
                    producer_id,
                    producer_epoch,
                },
                Err(error) => TxnAnswer::end_error(error),
            };
            vec![TxnEffect::Answer(request, answer)]
        }
        Reply::InitProducerId(request) => {
            let error = outcome.err().unwrap_or(code::CONCURRENT_TRANSACTIONS);
            vec![TxnEffect::Answer(request, TxnAnswer::init_error(error))]
        }
        Reply::Nobody => Vec::new(),
    }
}

fn markers(m: &TxnMetadata, complete: &TxnTransit) -> TxnEffect {
    TxnEffect::WriteMarkers {
        transactional_id: m.transactional_id.clone(),
        // The markers carry the prepared epoch (bumped under version 2).
        producer_id: m.producer_id,
        producer_epoch: m.producer_epoch,
        result: if complete.state == TxnState::CompleteCommit {
            TxnResult::Commit
        } else {
            TxnResult::Abort
        },
        partitions: m.partitions.clone(),
        client_version: m.client_version,
    }
}

pub(super) fn transition_error(e: &TransitionError) -> i16 {
    match e {
        TransitionError::ProducerFenced => code::PRODUCER_FENCED,
        TransitionError::IllegalState(message) => {
            tracing::error!(%message, "transaction state machine refused a transition");
            code::UNKNOWN_SERVER_ERROR
        }
    }
}
