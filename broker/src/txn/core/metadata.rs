//! One transactional id's metadata and its transitions, as Apache Kafka's
//! `TransactionMetadata`: a `prepare_*` computes the next state (a
//! [`TxnTransit`], what the transaction log stores) and marks it pending;
//! once the log holds it, [`TxnMetadata::complete_transition`] checks it
//! against the current state and applies it. At most one transition is
//! pending at a time.

use std::collections::BTreeSet;

use super::state::{TxnState, TxnVersion};

pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// A partition of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

/// The prefix of the pseudo partition that stands for a consumer group's
/// offsets in a transaction (AddOffsetsToTxn). kaas has no offsets topic:
/// groups have logs of their own, so the transaction names the group. A
/// topic name cannot hold ':', so no topic is mistaken for one.
const GROUP_OFFSETS: &str = "__consumer_offsets:";

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// The offsets of `group_id`, as a partition of a transaction.
    pub fn offsets_of(group_id: &str) -> TopicPartition {
        TopicPartition::new(format!("{GROUP_OFFSETS}{group_id}"), 0)
    }

    /// The group whose offsets this pseudo partition stands for.
    pub fn offsets_group(&self) -> Option<&str> {
        self.topic.strip_prefix(GROUP_OFFSETS)
    }

    /// `topic` names a group's offsets, not a topic.
    pub fn is_offsets_topic(topic: &str) -> bool {
        topic.starts_with(GROUP_OFFSETS)
    }
}

/// An epoch from which no further bump is allowed: InitProducerId moves to
/// a new producer id instead (one value is kept for the fence).
pub fn epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// The state a transition leads to: what the transaction log stores for
/// the id once it is durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnTransit {
    pub producer_id: i64,
    /// The producer id before this transition (differs from `producer_id`
    /// only right after a rotation).
    pub prev_producer_id: i64,
    /// Transaction version 2: the producer id to move to at completion, the
    /// epoch being exhausted.
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    pub last_producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<TopicPartition>,
    pub start_ms: i64,
    pub last_update_ms: i64,
    pub client_version: TxnVersion,
}

/// Why a transition cannot be prepared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    /// The request's epoch is neither the current one nor a retry of the
    /// last bump.
    #[error("producer fenced")]
    ProducerFenced,
    /// The transition is not allowed from here (a bug, or a state a request
    /// should have been refused in first); Apache throws
    /// IllegalStateException.
    #[error("{0}")]
    IllegalState(String),
}

/// A transactional id's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    pub prev_producer_id: i64,
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last bump, to recognise a retried InitProducerId
    /// (not stored: -1 after a load).
    pub last_producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<TopicPartition>,
    /// When the first partition was added; -1 when no transaction is open.
    pub start_ms: i64,
    pub last_update_ms: i64,
    pub client_version: TxnVersion,
    /// The transition prepared and not yet durable.
    pub pending: Option<TxnState>,
    /// Transaction version 0/1: a fence whose write failed already bumped
    /// the epoch in memory, so the next fence does not bump again.
    pub failed_epoch_fence: bool,
}

/// What a `prepare_*` may change; starts as a copy of the current fields.
struct Next {
    producer_id: i64,
    next_producer_id: i64,
    producer_epoch: i16,
    last_producer_epoch: i16,
    timeout_ms: i32,
    state: TxnState,
    partitions: BTreeSet<TopicPartition>,
    start_ms: i64,
    last_update_ms: i64,
    client_version: TxnVersion,
}

impl TxnMetadata {
    /// Metadata of an id seen for the first time (InitProducerId), not yet
    /// initialised: epoch -1, state Empty.
    pub fn new(transactional_id: &str, producer_id: i64, timeout_ms: i32, now_ms: i64) -> Self {
        TxnMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id,
            prev_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now_ms,
            client_version: TxnVersion::V0,
            pending: None,
            failed_epoch_fence: false,
        }
    }

    /// The metadata a stored transit describes (after a load): no pending
    /// transition, the last epoch unknown.
    pub fn from_stored(transactional_id: &str, t: &TxnTransit) -> Self {
        TxnMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id: t.producer_id,
            prev_producer_id: t.prev_producer_id,
            next_producer_id: t.next_producer_id,
            producer_epoch: t.producer_epoch,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            timeout_ms: t.timeout_ms,
            state: t.state,
            partitions: match t.state {
                TxnState::Empty => BTreeSet::new(),
                _ => t.partitions.clone(),
            },
            start_ms: t.start_ms,
            last_update_ms: t.last_update_ms,
            client_version: t.client_version,
            pending: None,
            failed_epoch_fence: false,
        }
    }

    pub fn epoch_exhausted(&self) -> bool {
        epoch_exhausted(self.producer_epoch)
    }

    pub fn transition_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The current values, as a transit (what the log would hold now); no
    /// transition is prepared.
    pub fn current(&self) -> TxnTransit {
        TxnTransit {
            producer_id: self.producer_id,
            prev_producer_id: self.prev_producer_id,
            next_producer_id: self.next_producer_id,
            producer_epoch: self.producer_epoch,
            last_producer_epoch: self.last_producer_epoch,
            timeout_ms: self.timeout_ms,
            state: self.state,
            partitions: self.partitions.clone(),
            start_ms: self.start_ms,
            last_update_ms: self.last_update_ms,
            client_version: self.client_version,
        }
    }

    fn next(&self, state: TxnState) -> Next {
        Next {
            producer_id: self.producer_id,
            next_producer_id: self.next_producer_id,
            producer_epoch: self.producer_epoch,
            last_producer_epoch: self.last_producer_epoch,
            timeout_ms: self.timeout_ms,
            state,
            partitions: self.partitions.clone(),
            start_ms: self.start_ms,
            last_update_ms: self.last_update_ms,
            client_version: self.client_version,
        }
    }

    fn prepare(&mut self, n: Next) -> Result<TxnTransit, TransitionError> {
        if let Some(pending) = self.pending {
            return Err(illegal(format!(
                "{}: cannot prepare {:?} while {:?} is pending",
                self.transactional_id, n.state, pending
            )));
        }
        if n.producer_id < 0 {
            return Err(illegal(format!(
                "illegal new producer id {}",
                n.producer_id
            )));
        }
        // Dead may keep epoch -1: metadata that was never initialised.
        if n.state != TxnState::Dead && n.producer_epoch < 0 {
            return Err(illegal(format!(
                "illegal new producer epoch {}",
                n.producer_epoch
            )));
        }
        if !n.state.valid_previous().contains(&self.state) {
            return Err(illegal(format!(
                "{}: cannot move from {:?} to {:?}",
                self.transactional_id, self.state, n.state
            )));
        }
        self.pending = Some(n.state);
        Ok(TxnTransit {
            producer_id: n.producer_id,
            prev_producer_id: self.producer_id,
            next_producer_id: n.next_producer_id,
            producer_epoch: n.producer_epoch,
            last_producer_epoch: n.last_producer_epoch,
            timeout_ms: n.timeout_ms,
            state: n.state,
            partitions: n.partitions,
            start_ms: n.start_ms,
            last_update_ms: n.last_update_ms,
            client_version: n.client_version,
        })
    }

    /// Fences the open transaction's producer: one epoch up (not past
    /// `i16::MAX`, and not again after a fence whose write failed), pending
    /// PrepareEpochFence. The metadata's own epoch is not changed here.
    pub fn prepare_fence_producer_epoch(&mut self) -> Result<TxnTransit, TransitionError> {
        let mut n = self.next(TxnState::PrepareEpochFence);
        if !(self.failed_epoch_fence || self.producer_epoch == i16::MAX) {
            n.producer_epoch = self.producer_epoch.wrapping_add(1);
        }
        self.prepare(n)
    }

    /// InitProducerId on a resting id: the epoch one up (or, for a retry of
    /// the last bump, as it is), the transaction cleared.
    pub fn prepare_increment_producer_epoch(
        &mut self,
        timeout_ms: i32,
        expected_epoch: Option<i16>,
        now_ms: i64,
    ) -> Result<TxnTransit, TransitionError> {
        if self.epoch_exhausted() {
            return Err(illegal(format!(
                "{}: cannot allocate any more producer epochs for producer id {}",
                self.transactional_id, self.producer_id
            )));
        }
        let bumped = self.producer_epoch.wrapping_add(1);
        let (epoch, last) = match expected_epoch {
            None => (bumped, NO_PRODUCER_EPOCH),
            Some(e) if self.producer_epoch == NO_PRODUCER_EPOCH || e == self.producer_epoch => {
                (bumped, self.producer_epoch)
            }
            // A retry of a bump that succeeded.
            Some(e) if e == self.last_producer_epoch => {
                (self.producer_epoch, self.last_producer_epoch)
            }
            Some(_) => return Err(TransitionError::ProducerFenced),
        };
        let mut n = self.next(TxnState::Empty);
        n.producer_epoch = epoch;
        n.last_producer_epoch = last;
        n.timeout_ms = timeout_ms;
        n.partitions = BTreeSet::new();
        n.start_ms = -1;
        n.last_update_ms = now_ms;
        self.prepare(n)
    }

    /// InitProducerId with the epoch exhausted: a new producer id at epoch
    /// 0 (`record_last_epoch`: remember the old epoch, for a retry).
    pub fn prepare_producer_id_rotation(
        &mut self,
        new_producer_id: i64,
        timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> Result<TxnTransit, TransitionError> {
        if self.state.has_pending_transaction() {
            return Err(illegal(format!(
                "{}: cannot rotate the producer id while in {:?}",
                self.transactional_id, self.state
            )));
        }
        let mut n = self.next(TxnState::Empty);
        n.producer_id = new_producer_id;
        n.producer_epoch = 0;
        n.last_producer_epoch = if record_last_epoch {
            self.producer_epoch
        } else {
            NO_PRODUCER_EPOCH
        };
        n.timeout_ms = timeout_ms;
        n.partitions = BTreeSet::new();
        n.start_ms = -1;
        n.last_update_ms = now_ms;
        self.prepare(n)
    }

    pub fn prepare_add_partitions(
        &mut self,
        added: &BTreeSet<TopicPartition>,
        now_ms: i64,
        client_version: TxnVersion,
    ) -> Result<TxnTransit, TransitionError> {
        let mut n = self.next(TxnState::Ongoing);
        if matches!(
            self.state,
            TxnState::Empty | TxnState::CompleteAbort | TxnState::CompleteCommit
        ) {
            n.start_ms = now_ms;
        }
        n.partitions.extend(added.iter().cloned());
        n.last_update_ms = now_ms;
        n.client_version = client_version;
        self.prepare(n)
    }

    /// EndTxn (or a fence's abort): PrepareCommit or PrepareAbort. Version
    /// 2 bumps the epoch here (an abort at `i16::MAX` keeps it);
    /// `next_producer_id` is where an exhausted epoch moves at completion.
    pub fn prepare_abort_or_commit(
        &mut self,
        state: TxnState,
        client_version: TxnVersion,
        next_producer_id: i64,
        now_ms: i64,
        no_partition_added: bool,
    ) -> Result<TxnTransit, TransitionError> {
        let mut n = self.next(state);
        if client_version.supports_epoch_bump() {
            if !(self.producer_epoch == i16::MAX && state == TxnState::PrepareAbort) {
                // A commit at i16::MAX wraps negative and is refused below.
                n.producer_epoch = self.producer_epoch.wrapping_add(1);
            }
            n.last_producer_epoch = self.producer_epoch;
        }
        if no_partition_added {
            n.start_ms = now_ms;
        }
        n.next_producer_id = next_producer_id;
        n.last_update_ms = now_ms;
        n.client_version = client_version;
        self.prepare(n)
    }

    /// The markers are written: CompleteCommit or CompleteAbort (version 2
    /// moves to the next producer id here when one was set).
    pub fn prepare_complete(&mut self, now_ms: i64) -> Result<TxnTransit, TransitionError> {
        self.failed_epoch_fence = false;
        let state = if self.state == TxnState::PrepareCommit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        let mut n = self.next(state);
        if self.client_version.supports_epoch_bump() && self.next_producer_id != NO_PRODUCER_ID {
            n.producer_id = self.next_producer_id;
            n.producer_epoch = 0;
        }
        n.next_producer_id = NO_PRODUCER_ID;
        n.partitions = BTreeSet::new();
        n.last_update_ms = now_ms;
        self.prepare(n)
    }

    /// Expiry of a resting id.
    pub fn prepare_dead(&mut self) -> Result<TxnTransit, TransitionError> {
        let mut n = self.next(TxnState::Dead);
        n.partitions = BTreeSet::new();
        self.prepare(n)
    }

    /// Applies a durable transition that was prepared from this metadata.
    pub fn complete_transition(&mut self, t: &TxnTransit) -> Result<(), TransitionError> {
        let Some(to) = self.pending else {
            return Err(illegal(format!(
                "{}: no transition pending to complete with {:?}",
                self.transactional_id, t.state
            )));
        };
        if to != t.state {
            return Err(illegal(format!(
                "{}: pending {:?}, completing {:?}",
                self.transactional_id, to, t.state
            )));
        }
        let valid = match to {
            TxnState::Empty => {
                (self.producer_epoch == t.producer_epoch || self.valid_epoch_bump(t))
                    && t.partitions.is_empty()
                    && t.start_ms == -1
            }
            TxnState::Ongoing => {
                self.valid_producer_epoch(t)
                    && t.partitions.is_superset(&self.partitions)
                    && self.timeout_ms == t.timeout_ms
            }
            TxnState::PrepareAbort | TxnState::PrepareCommit => {
                let allowed_empty_abort = to == TxnState::PrepareAbort
                    && t.client_version.supports_epoch_bump()
                    && self.state.expiration_allowed();
                self.valid_producer_epoch(t)
                    && self.partitions == t.partitions
                    && self.timeout_ms == t.timeout_ms
                    && (self.start_ms == t.start_ms || allowed_empty_abort)
            }
            TxnState::CompleteAbort | TxnState::CompleteCommit => {
                self.valid_producer_epoch(t) && self.timeout_ms == t.timeout_ms && t.start_ms != -1
            }
            TxnState::PrepareEpochFence | TxnState::Dead => false,
        };
        if !valid {
            return Err(illegal(format!(
                "{}: failed transition from {:?} to {:?}: unexpected metadata {:?}",
                self.transactional_id, self.state, to, t
            )));
        }
        self.producer_id = t.producer_id;
        self.prev_producer_id = t.prev_producer_id;
        self.next_producer_id = t.next_producer_id;
        self.producer_epoch = t.producer_epoch;
        self.last_producer_epoch = t.last_producer_epoch;
        self.timeout_ms = t.timeout_ms;
        self.partitions = t.partitions.clone();
        self.start_ms = t.start_ms;
        self.last_update_ms = t.last_update_ms;
        self.client_version = t.client_version;
        self.pending = None;
        self.state = to;
        Ok(())
    }

    fn valid_epoch_bump(&self, t: &TxnTransit) -> bool {
        t.producer_epoch == self.producer_epoch.wrapping_add(1)
            || (t.producer_epoch == 0 && t.producer_id != self.producer_id)
    }

    fn valid_producer_epoch(&self, t: &TxnTransit) -> bool {
        let v2 = t.client_version.supports_epoch_bump();
        let completing = matches!(t.state, TxnState::CompleteCommit | TxnState::CompleteAbort);
        let preparing = matches!(t.state, TxnState::PrepareCommit | TxnState::PrepareAbort);
        if v2 && completing && t.producer_epoch == 0 {
            // Moved to the next producer id at completion.
            return t.last_producer_epoch == self.last_producer_epoch
                && t.prev_producer_id == self.producer_id;
        }
        if v2 && preparing {
            return t.last_producer_epoch == self.producer_epoch
                && t.producer_id == self.producer_id;
        }
        t.producer_epoch == self.producer_epoch && t.producer_id == self.producer_id
    }
}

fn illegal(message: String) -> TransitionError {
    TransitionError::IllegalState(message)
}
