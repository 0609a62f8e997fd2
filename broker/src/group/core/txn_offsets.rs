//! Transactional offsets (Apache's `OffsetMetadataManager`, the pending
//! layer): TxnOffsetCommit stages offsets per (group, producer id), durable
//! in the group's log; they are not the group's — OffsetFetch does not show
//! them, `require_stable` waits on them — until the transaction's marker
//! commits them (they become the group's committed offsets) or aborts them
//! (they are dropped).

use std::sync::Arc;

use super::api::group_id_too_long;
use super::{
    Effect, GroupCoordinator, OffsetCommitResponse, OffsetCommitTopic, RequestToken, Response,
};
use crate::coordinator::errors::{append_error_to_response_error, code};

/// TxnOffsetCommit, as the group coordinator takes it.
#[derive(Clone, Debug)]
pub struct TxnOffsetCommitRequest {
    pub group_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// -1 before v3, and for a producer without the consumer's group
    /// metadata (KIP-447).
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub topics: Vec<OffsetCommitTopic>,
}

/// Offsets to stage durably, then `complete_txn_offset_commit` /
/// `fail_txn_offset_commit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnOffsetsPlan {
    pub token: RequestToken,
    pub group_id: String,
    pub producer_id: i64,
    pub offsets: super::api::CommittedOffsets,
}

#[derive(Debug)]
pub(crate) struct PendingTxnCommit {
    group_id: String,
    producer_id: i64,
    response: OffsetCommitResponse,
    offsets: super::api::CommittedOffsets,
}

#[derive(Debug)]
pub(crate) struct PendingTxnEnd {
    group_id: String,
    producer_id: i64,
    commit: bool,
}

impl GroupCoordinator {
    pub(crate) fn has_pending_txn_offset(
        &self,
        group_id: &str,
        topic: &str,
        partition: i32,
    ) -> bool {
        self.offsets
            .get(group_id)
            .is_some_and(|offsets| offsets.has_pending(topic, partition))
    }

    /// The producers with offsets pending in the group.
    pub fn pending_txn_producers(&self, group_id: &str) -> Vec<i64> {
        self.offsets
            .get(group_id)
            .map_or_else(Vec::new, |o| o.pending().keys().copied().collect())
    }

    /// TxnOffsetCommit: the group's checks (generation, member, instance id,
    /// as OffsetCommit, KIP-447), then the offsets staged for the producer.
    pub fn txn_offset_commit(
        &mut self,
        token: RequestToken,
        req: TxnOffsetCommitRequest,
        now_ms: u64,
    ) -> Vec<Effect> {
        let respond_all = |e: i16| {
            vec![Effect::Respond(
                token,
                Response::TxnOffsetCommit(OffsetCommitResponse::all(&req.topics, e)),
            )]
        };
        if group_id_too_long(&req.group_id) || req.group_id.is_empty() {
            return respond_all(code::INVALID_GROUP_ID);
        }
        let validation = match self.consumer.groups.get(&req.group_id) {
            Some(g) => {
                super::offsets::validate_consumer_commit(g, &req.member_id, req.generation_id, None)
            }
            None => self.validate_commit(
                &req.group_id,
                &req.member_id,
                req.group_instance_id.as_deref(),
                req.generation_id,
                code::ILLEGAL_GENERATION,
            ),
        };
        if let Err(e) = validation {
            return respond_all(e);
        }
        let (offsets, response) = self.offsets_to_commit(&req.topics, now_ms, None);
        if offsets.is_empty() {
            return vec![Effect::Respond(token, Response::TxnOffsetCommit(response))];
        }
        let offsets = Arc::new(offsets);
        self.pending_txn_commits.insert(
            token,
            PendingTxnCommit {
                group_id: req.group_id.clone(),
                producer_id: req.producer_id,
                response,
                offsets: offsets.clone(),
            },
        );
        vec![Effect::PersistTxnOffsets(TxnOffsetsPlan {
            token,
            group_id: req.group_id,
            producer_id: req.producer_id,
            offsets,
        })]
    }

    /// The staged offsets of `token` are durable: pending now, answered.
    pub fn complete_txn_offset_commit(&mut self, token: RequestToken, now_ms: u64) -> Vec<Effect> {
        let Some(p) = self.pending_txn_commits.remove(&token) else {
            return Vec::new();
        };
        self.ensure_simple_group(&p.group_id, now_ms);
        self.offsets.entry(p.group_id).or_default().stage(
            p.producer_id,
            p.offsets
                .iter()
                .map(|(t, part, o)| (t.clone(), *part, o.clone())),
        );
        vec![Effect::Respond(
            token,
            Response::TxnOffsetCommit(p.response),
        )]
    }

    pub fn fail_txn_offset_commit(
        &mut self,
        token: RequestToken,
        error_code: i16,
        _now_ms: u64,
    ) -> Vec<Effect> {
        let Some(p) = self.pending_txn_commits.remove(&token) else {
            return Vec::new();
        };
        let e = append_error_to_response_error(error_code);
        let mut resp = p.response;
        for t in &mut resp.topics {
            for part in &mut t.partitions {
                part.error_code = e;
            }
        }
        vec![Effect::Respond(token, Response::TxnOffsetCommit(resp))]
    }

    /// A transaction marker for the group: the producer's pending offsets
    /// are committed or dropped, durably, then the marker is answered.
    /// Nothing pending: answered at once.
    pub fn txn_marker(
        &mut self,
        token: RequestToken,
        group_id: &str,
        producer_id: i64,
        commit: bool,
    ) -> Vec<Effect> {
        let pending = self
            .offsets
            .get(group_id)
            .is_some_and(|o| o.pending().contains_key(&producer_id));
        if !pending {
            return vec![Effect::Respond(token, Response::TxnMarker(code::NONE))];
        }
        self.pending_txn_ends.insert(
            token,
            PendingTxnEnd {
                group_id: group_id.to_string(),
                producer_id,
                commit,
            },
        );
        vec![Effect::EndTxnOffsets {
            token,
            group_id: group_id.to_string(),
            producer_id,
            commit,
        }]
    }

    /// Offsets without a group live in a simple group, as plain ones do.
    fn ensure_simple_group(&mut self, group_id: &str, now_ms: u64) {
        if !self.groups.contains_key(group_id) && !self.consumer.groups.contains_key(group_id) {
            let mut g = super::ClassicGroup::new(group_id, now_ms);
            g.protocol_type = None;
            self.groups.insert(group_id.to_string(), g);
        }
    }

    /// The marker's outcome is durable: the offsets move (commit) or go.
    pub fn complete_txn_marker(&mut self, token: RequestToken, now_ms: u64) -> Vec<Effect> {
        let Some(end) = self.pending_txn_ends.remove(&token) else {
            return Vec::new();
        };
        if let Some(offsets) = self.offsets.get_mut(&end.group_id) {
            offsets.end_txn(end.producer_id, end.commit);
            if offsets.is_empty() {
                self.offsets.remove(&end.group_id);
            } else if end.commit {
                self.ensure_simple_group(&end.group_id, now_ms);
            }
        }
        vec![Effect::Respond(token, Response::TxnMarker(code::NONE))]
    }

    pub fn fail_txn_marker(
        &mut self,
        token: RequestToken,
        error_code: i16,
        _now_ms: u64,
    ) -> Vec<Effect> {
        self.pending_txn_ends.remove(&token);
        vec![Effect::Respond(
            token,
            Response::TxnMarker(append_error_to_response_error(error_code)),
        )]
    }
}
