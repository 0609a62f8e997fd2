//! Kafka's contract on a connection: each request sees every effect of
//! the requests sent before it on that connection (Apache's broker reads a
//! connection's next request only once it has answered the current one, and
//! clients rely on it: DeleteRecords then ListOffsets, OffsetCommit then
//! OffsetFetch, EndTxn then a read_committed Fetch).
//!
//! kaas starts a request only when that holds, and overlaps only what no
//! request could tell apart from running them one after another: reads
//! behind reads (neither changes what the other sees), and a Produce's wait
//! for its batches to be durable with the next Produce's append (the next
//! append sees the batches, already in the log; readers see neither until
//! both are durable, and the answers go out in order). Pure logic: the
//! connection ([`super::connection`]) asks it and says what happened.

use std::collections::VecDeque;
use std::sync::Arc;

use kafka_protocol::messages::RequestKind;
use parking_lot::Mutex;
use tokio::sync::oneshot;

/// What a request may run beside on its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// Changes nothing any request sees: may run beside other reads.
    Read,
    /// May start once the Produce before it appended its batches.
    Produce,
    /// Runs alone: everything before it done, nothing after it started.
    Alone,
}

/// How `request` may overlap. `auto_create_topics`: the broker's setting,
/// under which a Metadata request may create the topics it names.
pub fn overlap_of(request: &RequestKind, auto_create_topics: bool) -> Overlap {
    match request {
        RequestKind::Produce(_) => Overlap::Produce,
        RequestKind::Metadata(r) => {
            let may_create = auto_create_topics
                && r.allow_auto_topic_creation
                && r.topics.as_ref().is_some_and(|t| !t.is_empty());
            if may_create {
                Overlap::Alone
            } else {
                Overlap::Read
            }
        }
        RequestKind::ApiVersions(_)
        | RequestKind::FindCoordinator(_)
        | RequestKind::OffsetFetch(_)
        | RequestKind::ListOffsets(_)
        | RequestKind::OffsetForLeaderEpoch(_)
        | RequestKind::DescribeGroups(_)
        | RequestKind::ListGroups(_)
        | RequestKind::ConsumerGroupDescribe(_)
        | RequestKind::DescribeConfigs(_)
        | RequestKind::DescribeAcls(_)
        | RequestKind::DescribeCluster(_)
        | RequestKind::DescribeLogDirs(_)
        | RequestKind::DescribeProducers(_)
        | RequestKind::DescribeTransactions(_)
        | RequestKind::ListTransactions(_)
        | RequestKind::DescribeTopicPartitions(_)
        | RequestKind::DescribeUserScramCredentials(_)
        | RequestKind::ListConfigResources(_)
        | RequestKind::ListPartitionReassignments(_)
        | RequestKind::DescribeQuorum(_)
        | RequestKind::DescribeClientQuotas(_) => Overlap::Read,
        // Fetch too: a fetch session's epochs move with each fetch.
        _ => Overlap::Alone,
    }
}

/// The requests a connection has started and not yet answered, oldest
/// first.
#[derive(Debug, Default)]
pub struct InFlight {
    started: VecDeque<Overlap>,
    /// Whether the newest Produce has appended its batches (or ended).
    produce_applied: bool,
}

impl InFlight {
    /// Whether a request of kind `next` may start now.
    pub fn may_start(&self, next: Overlap) -> bool {
        match next {
            Overlap::Alone => self.started.is_empty(),
            Overlap::Read => self.started.iter().all(|o| *o == Overlap::Read),
            Overlap::Produce => {
                self.started.iter().all(|o| *o == Overlap::Produce)
                    && (self.started.is_empty() || self.produce_applied)
            }
        }
    }

    /// A request of kind `kind` started.
    pub fn started(&mut self, kind: Overlap) {
        if kind == Overlap::Produce {
            self.produce_applied = false;
        }
        self.started.push_back(kind);
    }

    /// The newest Produce appended its batches.
    pub fn produce_applied(&mut self) {
        self.produce_applied = true;
    }

    /// The oldest request was answered (answers come in order).
    pub fn answered(&mut self) {
        if self.started.pop_front() == Some(Overlap::Produce)
            && !self.started.contains(&Overlap::Produce)
        {
            // The newest Produce ended: it appended, or never will.
            self.produce_applied = true;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.started.is_empty()
    }

    pub fn len(&self) -> usize {
        self.started.len()
    }
}

/// Handed to a request: it says when its effects are in place for the
/// connection's next request before its answer is ready (a Produce, once
/// its batches are in the log). A request that never says so is taken to
/// have said it when it ends (the signal is dropped with it).
#[derive(Clone, Default)]
pub struct AppliedSignal(Option<Arc<Mutex<Option<oneshot::Sender<()>>>>>);

impl AppliedSignal {
    /// A signal, and what the connection waits on.
    pub fn new() -> (AppliedSignal, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (AppliedSignal(Some(Arc::new(Mutex::new(Some(tx))))), rx)
    }

    /// The request's effects are in place.
    pub fn fire(&self) {
        if let Some(tx) = self.0.as_ref().and_then(|s| s.lock().take()) {
            let _ = tx.send(());
        }
    }
}

impl std::fmt::Debug for AppliedSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppliedSignal")
    }
}

#[cfg(test)]
mod tests;
