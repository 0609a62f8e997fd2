//! OffsetCommit / OffsetFetch / OffsetDelete and the retention sweep (Apache
//! `OffsetMetadataManager` + `ClassicGroup.validateOffsetCommit`).
//!
//! Over 800 lines: the three offset APIs and the retention sweep share their
//! validation and the committed-offset table, as in Apache's
//! `OffsetMetadataManager`.

use std::collections::BTreeMap;

use crate::group::consumer::group::ConsumerGroup;

use super::api::{group_id_too_long, invalid_group_id};
use super::rebalance::{reschedule_member_heartbeat, validate_member};
use super::{
    ClassicGroup, Effect, ExpiredOffsets, GroupCoordinator, GroupMetadataRecord, GroupOffsets,
    GroupState, OffsetAndMetadata, OffsetCommitPlan, OffsetCommitRequest, OffsetCommitResponse,
    OffsetCommitTopic, OffsetDeletePlan, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchPartition, OffsetFetchRequest, OffsetFetchResponse, OffsetFetchTopic,
    PartitionResult, RequestToken, Response, TopicResult, UnloadedOffset,
};
use crate::coordinator::errors::{append_error_to_response_error, code};

#[derive(Debug)]
pub(crate) struct PendingCommit {
    group_id: String,
    response: OffsetCommitResponse,
    offsets: super::api::CommittedOffsets,
    /// The group was unloaded meanwhile: answer, but do not touch memory.
    orphaned: bool,
}

#[derive(Debug)]
pub(crate) struct PendingOffsetDelete {
    group_id: String,
    response: OffsetDeleteResponse,
    partitions: Vec<(String, i32)>,
    orphaned: bool,
}

#[derive(Debug)]
pub(crate) struct PendingGroupDelete {
    pub(crate) results: Vec<super::DeleteGroupResult>,
    pub(crate) group_ids: Vec<String>,
}

/// Apache `ClassicGroup.validateOffsetCommit` (non-transactional).
pub(crate) fn validate_offset_commit(
    g: &ClassicGroup,
    member_id: &str,
    instance_id: Option<&str>,
    generation_id: i32,
) -> Result<(), i16> {
    if g.is(GroupState::Dead) {
        return Err(code::COORDINATOR_NOT_AVAILABLE);
    }
    if generation_id < 0 && g.is(GroupState::Empty) {
        // Admin client or a consumer without group management: allowed while
        // the group has no members.
        return Ok(());
    }
    if generation_id >= 0 || !member_id.is_empty() || instance_id.is_some() {
        validate_member(g, member_id, instance_id, "offset-commit")?;
        if generation_id != g.generation_id {
            return Err(code::ILLEGAL_GENERATION);
        }
    } else if !g.is(GroupState::Empty) {
        // No member id and no generation: only an empty group accepts it.
        return Err(code::UNKNOWN_MEMBER_ID);
    }
    if g.is(GroupState::CompletingRebalance) {
        // Valid member of the new generation that has not synced yet.
        return Err(code::REBALANCE_IN_PROGRESS);
    }
    Ok(())
}

/// Apache `ConsumerGroup.validateOffsetCommit`: the generation id is the
/// member epoch; `api_version` is OffsetCommit's (`None`: TxnOffsetCommit).
pub(crate) fn validate_consumer_commit(
    g: &ConsumerGroup,
    member_id: &str,
    member_epoch: i32,
    api_version: Option<i16>,
) -> Result<(), i16> {
    // The admin client, or a consumer outside group management: only an
    // empty group takes its commits.
    if member_epoch < 0 && g.members().is_empty() {
        return Ok(());
    }
    let member = g.member(member_id).ok_or(code::UNKNOWN_MEMBER_ID)?;
    let classic = member.uses_classic_protocol();
    if !classic && api_version.is_some_and(|v| v < 9) {
        // Consumer-protocol members commit with v9+.
        return Err(code::UNSUPPORTED_VERSION);
    }
    if member_epoch != member.member_epoch() {
        // A classic member's generation is its member epoch.
        return Err(if classic {
            code::ILLEGAL_GENERATION
        } else {
            code::STALE_MEMBER_EPOCH
        });
    }
    Ok(())
}

/// Apache `ConsumerGroup.validateOffsetFetch`: a member that names
/// itself (v9+) must be one, at its epoch; no member id and a negative
/// epoch is an admin client or a client outside the group.
fn validate_consumer_fetch(
    g: &ConsumerGroup,
    member_id: Option<&str>,
    member_epoch: i32,
) -> Result<(), i16> {
    let Some(member_id) = member_id else {
        if member_epoch < 0 {
            return Ok(());
        }
        return Err(code::UNKNOWN_MEMBER_ID);
    };
    let member = g.member(member_id).ok_or(code::UNKNOWN_MEMBER_ID)?;
    if member_epoch != member.member_epoch() {
        return Err(if member.uses_classic_protocol() {
            code::ILLEGAL_GENERATION
        } else {
            code::STALE_MEMBER_EPOCH
        });
    }
    Ok(())
}

/// Java `String.length()` counts UTF-16 units; Apache compares that.
fn metadata_too_large(metadata: Option<&str>, max: usize) -> bool {
    metadata.is_some_and(|m| m.encode_utf16().count() > max)
}

/// Base timestamp rule of Apache `offsetExpirationCondition`.
#[derive(Clone, Copy)]
enum Expiry {
    /// Empty group: retention counts from when it became empty.
    StateTimestampOrCommit(Option<u64>),
    /// Retention counts from the commit.
    Commit,
}

/// The group whose offsets OffsetDelete and the retention sweep look at,
/// either kind (Apache's `Group` interface as `OffsetMetadataManager` uses it).
#[derive(Clone, Copy)]
enum OffsetsGroup<'a> {
    Classic(&'a ClassicGroup),
    Consumer(&'a ConsumerGroup),
}

impl OffsetsGroup<'_> {
    fn is_subscribed_to_topic(self, topic: &str) -> bool {
        match self {
            Self::Classic(g) => g.is_subscribed_to_topic(topic),
            Self::Consumer(g) => g.is_subscribed_to_topic(topic),
        }
    }

    /// Apache `offsetExpirationCondition`: a consumer group's offsets
    /// always count from their commit.
    fn expiration_condition(self) -> Option<Expiry> {
        let Self::Classic(g) = self else {
            return Some(Expiry::Commit);
        };
        if g.protocol_type.is_some() {
            if g.is(GroupState::Empty) {
                Some(Expiry::StateTimestampOrCommit(g.current_state_timestamp))
            } else if g.uses_consumer_protocol()
                && g.subscribed_topics.is_some()
                && g.is(GroupState::Stable)
            {
                Some(Expiry::Commit)
            } else {
                None
            }
        } else {
            // Simple (standalone) consumer group.
            Some(Expiry::Commit)
        }
    }

    /// Apache `Group.isEmpty`: no members.
    fn is_empty(self) -> bool {
        match self {
            Self::Classic(g) => g.is(GroupState::Empty),
            Self::Consumer(g) => g.members().is_empty(),
        }
    }
}

/// The committed offsets of a group out of memory, as its log holds them,
/// less those the retention sweep would remove were it loaded now, each
/// with when the sweep would: what its coordinator exports as the group's
/// lag.
pub fn offsets_in_force(
    group_id: &str,
    metadata: Option<&GroupMetadataRecord>,
    consumer: Option<&ConsumerGroup>,
    offsets: &GroupOffsets,
    retention_ms: u64,
    now_ms: u64,
) -> Vec<UnloadedOffset> {
    let classic;
    let group = match consumer {
        Some(c) => OffsetsGroup::Consumer(c),
        None => {
            classic = ClassicGroup::from_stored(group_id, metadata, now_ms);
            OffsetsGroup::Classic(&classic)
        }
    };
    in_force(group, offsets.committed(), retention_ms, now_ms)
}

/// [`offsets_in_force`] of the offsets `group` holds.
fn in_force<'a>(
    group: OffsetsGroup<'_>,
    offsets: impl Iterator<Item = (&'a str, i32, &'a OffsetAndMetadata)>,
    retention_ms: u64,
    now_ms: u64,
) -> Vec<UnloadedOffset> {
    let condition = group.expiration_condition();
    offsets
        .filter_map(|(topic, partition, o)| {
            let expires_at_ms = match condition {
                Some(cond) if !group.is_subscribed_to_topic(topic) => {
                    Some(expiry(o, cond, retention_ms))
                }
                _ => None,
            };
            if expires_at_ms.is_some_and(|at| now_ms >= at) {
                return None;
            }
            Some(UnloadedOffset {
                topic: topic.to_string(),
                partition,
                offset: o.offset,
                expires_at_ms,
            })
        })
        .collect()
}

/// When `o` expires under `cond`: its explicit expiry (v2-v4 commits), else
/// retention after the condition's base.
fn expiry(o: &OffsetAndMetadata, cond: Expiry, retention_ms: u64) -> u64 {
    if let Some(at) = o.expire_timestamp_ms {
        return at;
    }
    let base = match cond {
        Expiry::StateTimestampOrCommit(ts) => ts.unwrap_or(o.commit_timestamp_ms),
        Expiry::Commit => o.commit_timestamp_ms,
    };
    base.saturating_add(retention_ms)
}

/// Apache `OffsetExpirationConditionImpl.isOffsetExpired`.
fn is_expired(o: &OffsetAndMetadata, cond: Expiry, now_ms: u64, retention_ms: u64) -> bool {
    now_ms >= expiry(o, cond, retention_ms)
}

impl GroupCoordinator {
    /// The live group `group_id` names, either kind; none while a consumer
    /// group's deletion is being made durable.
    fn offsets_group(&self, group_id: &str) -> Option<OffsetsGroup<'_>> {
        if let Some(g) = self.consumer.groups.get(group_id) {
            return (!self.consumer.deleting.contains(group_id))
                .then_some(OffsetsGroup::Consumer(g));
        }
        self.groups
            .get(group_id)
            .filter(|g| !g.is(GroupState::Dead))
            .map(OffsetsGroup::Classic)
    }

    fn inflight_add(&mut self, group_id: &str, token: RequestToken) {
        match self.inflight.get_mut(group_id) {
            Some(tokens) => tokens.push(token),
            None => {
                self.inflight.insert(group_id.to_string(), vec![token]);
            }
        }
    }

    fn inflight_remove(&mut self, group_id: &str, token: RequestToken) {
        let Some(tokens) = self.inflight.get_mut(group_id) else {
            return;
        };
        tokens.retain(|t| *t != token);
        if tokens.is_empty() {
            self.inflight.remove(group_id);
        }
    }

    /// The offsets of `group_id`'s commits between plan and outcome.
    fn inflight_offsets<'a>(&'a self, group_id: &str) -> impl Iterator<Item = (&'a str, i32)> + 'a {
        self.inflight
            .get(group_id)
            .into_iter()
            .flatten()
            .filter_map(|token| self.pending_commits.get(token))
            .flat_map(|p| p.offsets.iter().map(|(t, p, _)| (&**t, *p)))
    }

    /// A commit of the partition is between plan and outcome, or a
    /// transaction's offset for it is pending: `require_stable` readers
    /// wait.
    fn is_inflight(&self, group_id: &str, topic: &str, partition: i32) -> bool {
        self.inflight_offsets(group_id)
            .any(|(t, p)| t == topic && p == partition)
            || self.has_pending_txn_offset(group_id, topic, partition)
    }

    /// OffsetCommit. Errors are answered at once; otherwise the validated
    /// offsets come back as `PersistOffsets` and the answer waits for
    /// `complete_offset_commit` / `fail_offset_commit`.
    pub fn offset_commit(
        &mut self,
        token: RequestToken,
        req: OffsetCommitRequest,
        now_ms: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let respond_all = |fx: &mut Vec<Effect>, e: i16| {
            fx.push(Effect::Respond(
                token,
                Response::OffsetCommit(OffsetCommitResponse::all(&req.topics, e)),
            ));
        };
        if group_id_too_long(&req.group_id) {
            respond_all(&mut fx, code::INVALID_GROUP_ID);
            return fx;
        }
        let missing = if req.api_version >= 9 {
            code::GROUP_ID_NOT_FOUND
        } else {
            code::ILLEGAL_GENERATION
        };
        let validation = match self.consumer.groups.get(&req.group_id) {
            // Being deleted, as a Dead classic group.
            Some(_) if self.consumer.deleting.contains(&req.group_id) => {
                Err(code::COORDINATOR_NOT_AVAILABLE)
            }
            Some(g) => validate_consumer_commit(
                g,
                &req.member_id,
                req.generation_id,
                Some(req.api_version),
            ),
            None => self.validate_commit(
                &req.group_id,
                &req.member_id,
                req.group_instance_id.as_deref(),
                req.generation_id,
                missing,
            ),
        };
        if let Err(e) = validation {
            respond_all(&mut fx, e);
            return fx;
        }
        // Classic members keep their session alive by committing.
        let member_id = req.member_id.clone();
        self.with_group(&req.group_id, now_ms, &mut fx, |g, cx| {
            if g.is(GroupState::Stable) || g.is(GroupState::PreparingRebalance) {
                reschedule_member_heartbeat(g, &member_id, cx);
            }
        });

        let expire = if req.retention_time_ms == -1 {
            None
        } else {
            Some(now_ms.saturating_add(req.retention_time_ms.max(0) as u64))
        };
        let (offsets, response) = self.offsets_to_commit(&req.topics, now_ms, expire);
        if offsets.is_empty() {
            fx.push(Effect::Respond(token, Response::OffsetCommit(response)));
            return fx;
        }
        self.inflight_add(&req.group_id, token);
        let offsets = std::sync::Arc::new(offsets);
        let plan = OffsetCommitPlan {
            token,
            group_id: req.group_id.clone(),
            offsets: offsets.clone(),
        };
        self.pending_commits.insert(
            token,
            PendingCommit {
                group_id: req.group_id,
                response,
                offsets,
                orphaned: false,
            },
        );
        fx.push(Effect::PersistOffsets(plan));
        fx
    }

    /// A commit's checks against its group (Apache's
    /// `validateOffsetCommit`); with no group, a generation-less commit
    /// makes a simple group and a member commit is answered `missing`.
    pub(crate) fn validate_commit(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        missing: i16,
    ) -> Result<(), i16> {
        match self.groups.get(group_id) {
            Some(g) => validate_offset_commit(g, member_id, group_instance_id, generation_id),
            None if generation_id < 0 => Ok(()),
            None => Err(missing),
        }
    }

    /// The offsets a commit of `topics` writes, and its answer (metadata
    /// over `offset.metadata.max.bytes` refused per partition).
    pub(crate) fn offsets_to_commit(
        &self,
        topics: &[OffsetCommitTopic],
        now_ms: u64,
        expire: Option<u64>,
    ) -> (
        Vec<(std::sync::Arc<str>, i32, OffsetAndMetadata)>,
        OffsetCommitResponse,
    ) {
        let max = self.config.offset_metadata_max_bytes;
        let mut offsets = Vec::with_capacity(topics.iter().map(|t| t.partitions.len()).sum());
        let mut response = OffsetCommitResponse {
            topics: Vec::with_capacity(topics.len()),
        };
        for t in topics {
            let name: std::sync::Arc<str> = t.name.as_str().into();
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for p in &t.partitions {
                if metadata_too_large(p.metadata.as_deref(), max) {
                    partitions.push(PartitionResult {
                        partition: p.partition,
                        error_code: code::OFFSET_METADATA_TOO_LARGE,
                    });
                    continue;
                }
                partitions.push(PartitionResult {
                    partition: p.partition,
                    error_code: code::NONE,
                });
                offsets.push((
                    name.clone(),
                    p.partition,
                    OffsetAndMetadata {
                        offset: p.offset,
                        leader_epoch: (p.leader_epoch >= 0).then_some(p.leader_epoch),
                        metadata: p.metadata.clone().unwrap_or_default(),
                        commit_timestamp_ms: now_ms,
                        expire_timestamp_ms: expire,
                    },
                ));
            }
            response.topics.push(TopicResult {
                name: t.name.clone(),
                partitions,
            });
        }
        (offsets, response)
    }

    /// The offsets of `token`'s plan are durable: apply and acknowledge.
    pub fn complete_offset_commit(&mut self, token: RequestToken, _now_ms: u64) -> Vec<Effect> {
        let Some(p) = self.pending_commits.remove(&token) else {
            tracing::warn!(token, "completion for an unknown offset commit");
            return Vec::new();
        };
        self.inflight_remove(&p.group_id, token);
        if !p.orphaned {
            // Offsets without a group live in a "simple" classic group.
            if !self.groups.contains_key(&p.group_id)
                && !self.consumer.groups.contains_key(&p.group_id)
            {
                self.groups
                    .insert(p.group_id.clone(), ClassicGroup::new(&p.group_id, _now_ms));
            }
            if !self.offsets.contains_key(&p.group_id) {
                self.offsets.insert(p.group_id.clone(), Default::default());
            }
            let table = self.offsets.get_mut(&p.group_id).expect("inserted above");
            for (t, part, o) in p.offsets.iter() {
                table.commit(t, *part, o.clone());
            }
        }
        vec![Effect::Respond(token, Response::OffsetCommit(p.response))]
    }

    /// The write of `token`'s plan failed: every partition gets the error
    /// (mapped like Apache maps append errors, e.g. KAFKA_STORAGE_ERROR ->
    /// NOT_COORDINATOR so the client retries elsewhere).
    pub fn fail_offset_commit(
        &mut self,
        token: RequestToken,
        error_code: i16,
        _now_ms: u64,
    ) -> Vec<Effect> {
        let Some(p) = self.pending_commits.remove(&token) else {
            tracing::warn!(token, "failure for an unknown offset commit");
            return Vec::new();
        };
        self.inflight_remove(&p.group_id, token);
        let e = append_error_to_response_error(error_code);
        let mut resp = p.response;
        for t in &mut resp.topics {
            for part in &mut t.partitions {
                part.error_code = e;
            }
        }
        vec![Effect::Respond(token, Response::OffsetCommit(resp))]
    }

    /// OffsetFetch (one group). `require_stable` answers UNSTABLE_OFFSET_COMMIT
    /// for partitions with a commit between plan and outcome.
    pub fn offset_fetch(&self, req: &OffsetFetchRequest) -> OffsetFetchResponse {
        if group_id_too_long(&req.group_id) {
            return OffsetFetchResponse {
                error_code: code::INVALID_GROUP_ID,
                topics: Vec::new(),
            };
        }
        let gid = req.group_id.as_str();
        if let Some(group) = self.consumer.groups.get(gid) {
            if let Err(error_code) =
                validate_consumer_fetch(group, req.member_id.as_deref(), req.member_epoch)
            {
                return OffsetFetchResponse {
                    error_code,
                    topics: Vec::new(),
                };
            }
        }
        let live = self
            .groups
            .get(gid)
            .is_some_and(|g| !g.is(GroupState::Dead))
            || self.consumer.groups.contains_key(gid);
        let empty = super::GroupOffsets::default();
        let table = if live {
            self.offsets.get(gid).unwrap_or(&empty)
        } else {
            &empty
        };
        let unstable = |t: &str, p: i32| req.require_stable && live && self.is_inflight(gid, t, p);
        let part = |t: &str, p: i32, o: Option<&OffsetAndMetadata>| {
            if unstable(t, p) {
                OffsetFetchPartition {
                    partition: p,
                    offset: -1,
                    leader_epoch: -1,
                    metadata: String::new(),
                    error_code: code::UNSTABLE_OFFSET_COMMIT,
                }
            } else {
                OffsetFetchPartition {
                    partition: p,
                    offset: o.map_or(-1, |o| o.offset),
                    leader_epoch: o.and_then(|o| o.leader_epoch).unwrap_or(-1),
                    metadata: o.map(|o| o.metadata.clone()).unwrap_or_default(),
                    error_code: code::NONE,
                }
            }
        };
        let topics = match &req.topics {
            Some(topics) => topics
                .iter()
                .map(|(t, parts)| OffsetFetchTopic {
                    name: t.clone(),
                    partitions: parts
                        .iter()
                        .map(|p| part(t, *p, table.get(t, *p)))
                        .collect(),
                })
                .collect(),
            None => {
                // Every committed partition, plus (when asked to be stable)
                // partitions whose first commit is still in flight.
                let mut all: BTreeMap<String, BTreeMap<i32, Option<&OffsetAndMetadata>>> =
                    BTreeMap::new();
                for (t, parts) in table.by_topic() {
                    for (p, o) in parts {
                        all.entry(t.clone()).or_default().insert(*p, Some(o));
                    }
                }
                if req.require_stable && live {
                    for (t, p) in self.inflight_offsets(gid) {
                        all.entry(t.to_string())
                            .or_default()
                            .entry(p)
                            .or_insert(None);
                    }
                }
                all.into_iter()
                    .map(|(t, parts)| OffsetFetchTopic {
                        partitions: parts.into_iter().map(|(p, o)| part(&t, p, o)).collect(),
                        name: t,
                    })
                    .collect()
            }
        };
        OffsetFetchResponse {
            error_code: code::NONE,
            topics,
        }
    }

    /// OffsetDelete. Errors are answered at once; partitions to remove come
    /// back as `DeleteOffsets`.
    pub fn offset_delete(
        &mut self,
        token: RequestToken,
        req: OffsetDeleteRequest,
        _now_ms: u64,
    ) -> Vec<Effect> {
        let error = |e: i16| {
            vec![Effect::Respond(
                token,
                Response::OffsetDelete(OffsetDeleteResponse {
                    error_code: e,
                    topics: Vec::new(),
                }),
            )]
        };
        if invalid_group_id(&req.group_id) {
            return error(code::INVALID_GROUP_ID);
        }
        // Apache `validateOffsetDelete`: a classic group only while it has
        // no members or its consumers' subscriptions are known; a consumer
        // group always.
        let Some(g) = self.offsets_group(&req.group_id) else {
            return error(code::GROUP_ID_NOT_FOUND);
        };
        if let OffsetsGroup::Classic(g) = g {
            if !g.is(GroupState::Empty) && !g.uses_consumer_protocol() {
                return error(code::NON_EMPTY_GROUP);
            }
        }
        let mut topics = Vec::new();
        let mut partitions = Vec::new();
        for (t, parts) in &req.topics {
            let subscribed = g.is_subscribed_to_topic(t);
            let results = parts
                .iter()
                .map(|p| {
                    // Apache writes the tombstone for a committed offset
                    // or a transaction's staged one: it removes both.
                    if !subscribed
                        && (self.committed_offset(&req.group_id, t, *p).is_some()
                            || self.has_pending_txn_offset(&req.group_id, t, *p))
                    {
                        partitions.push((t.clone(), *p));
                    }
                    PartitionResult {
                        partition: *p,
                        error_code: if subscribed {
                            code::GROUP_SUBSCRIBED_TO_TOPIC
                        } else {
                            code::NONE
                        },
                    }
                })
                .collect();
            topics.push(TopicResult {
                name: t.clone(),
                partitions: results,
            });
        }
        let response = OffsetDeleteResponse {
            error_code: code::NONE,
            topics,
        };
        if partitions.is_empty() {
            return vec![Effect::Respond(token, Response::OffsetDelete(response))];
        }
        self.pending_offset_deletes.insert(
            token,
            PendingOffsetDelete {
                group_id: req.group_id.clone(),
                response,
                partitions: partitions.clone(),
                orphaned: false,
            },
        );
        vec![Effect::DeleteOffsets(OffsetDeletePlan {
            token,
            group_id: req.group_id,
            partitions,
        })]
    }

    pub fn complete_offset_delete(&mut self, token: RequestToken, _now_ms: u64) -> Vec<Effect> {
        let Some(p) = self.pending_offset_deletes.remove(&token) else {
            tracing::warn!(token, "completion for an unknown offset delete");
            return Vec::new();
        };
        if !p.orphaned {
            self.remove_offsets(&p.group_id, &p.partitions);
        }
        vec![Effect::Respond(token, Response::OffsetDelete(p.response))]
    }

    pub fn fail_offset_delete(
        &mut self,
        token: RequestToken,
        error_code: i16,
        _now_ms: u64,
    ) -> Vec<Effect> {
        let Some(_p) = self.pending_offset_deletes.remove(&token) else {
            tracing::warn!(token, "failure for an unknown offset delete");
            return Vec::new();
        };
        vec![Effect::Respond(
            token,
            Response::OffsetDelete(OffsetDeleteResponse {
                error_code: append_error_to_response_error(error_code),
                topics: Vec::new(),
            }),
        )]
    }

    fn remove_offsets(&mut self, group_id: &str, partitions: &[(String, i32)]) {
        let Some(table) = self.offsets.get_mut(group_id) else {
            return;
        };
        for (t, p) in partitions {
            table.delete(t, *p);
        }
        if table.is_empty() {
            self.offsets.remove(group_id);
        }
    }

    /// Retention sweep (Apache `cleanupGroupMetadata` / `cleanupExpiredOffsets`):
    /// removes expired offsets of topics the group is not subscribed to, then
    /// drops Empty groups left without offsets. Applied in memory at once; the
    /// shell deletes what is returned.
    pub fn expire_offsets(&mut self, now_ms: u64) -> (ExpiredOffsets, Vec<Effect>) {
        (self.expire_offsets_into(now_ms), Vec::new())
    }

    pub(crate) fn expire_offsets_into(&mut self, now_ms: u64) -> ExpiredOffsets {
        let mut out = ExpiredOffsets::default();
        for gid in self.resident_groups() {
            self.expire_group_offsets(&gid, now_ms, &mut out);
        }
        out
    }

    /// [`offsets_in_force`] of a resident group, as it leaves memory.
    pub fn offsets_in_force_of(&self, group_id: &str, now_ms: u64) -> Vec<UnloadedOffset> {
        let (Some(group), Some(table)) = (self.offsets_group(group_id), self.offsets.get(group_id))
        else {
            return Vec::new();
        };
        in_force(
            group,
            table.committed(),
            self.config.offsets_retention_ms,
            now_ms,
        )
    }

    /// The retention sweep for one group just loaded from its log: offsets
    /// that expired while it was out of memory go now, as Apache's sweeps
    /// (which see every group) would have removed them meanwhile.
    pub fn expire_loaded_offsets(&mut self, group_id: &str, now_ms: u64) -> Vec<Effect> {
        let mut out = ExpiredOffsets::default();
        self.expire_group_offsets(group_id, now_ms, &mut out);
        out.into_effect().into_iter().collect()
    }

    fn expire_group_offsets(&mut self, gid: &str, now_ms: u64, out: &mut ExpiredOffsets) {
        let retention = self.config.offsets_retention_ms;
        let Some(g) = self.offsets_group(gid) else {
            return;
        };
        let mut all_expired = true;
        let mut expired_here = Vec::new();
        if let Some(table) = self.offsets.get(gid) {
            match g.expiration_condition() {
                None => all_expired = table.by_topic().is_empty(),
                Some(cond) => {
                    for (t, parts) in table.by_topic() {
                        if g.is_subscribed_to_topic(t) {
                            all_expired = false;
                            continue;
                        }
                        for (p, o) in parts {
                            // An in-flight commit will replace it: keep.
                            if !self.is_inflight(gid, t, *p)
                                && is_expired(o, cond, now_ms, retention)
                            {
                                expired_here.push((t.clone(), *p));
                            } else {
                                all_expired = false;
                            }
                        }
                    }
                }
            }
        }
        let group_empty = g.is_empty();
        let consumer = matches!(g, OffsetsGroup::Consumer(_));
        if !expired_here.is_empty() {
            tracing::debug!(group = %gid, count = expired_here.len(), "expired offsets");
            self.remove_offsets(gid, &expired_here);
            out.offsets.extend(
                expired_here
                    .into_iter()
                    .map(|(t, p)| (gid.to_string(), t, p)),
            );
        }
        // Apache keeps a group with an open transaction, whose offsets may
        // yet become the group's.
        let busy = self.inflight.contains_key(gid)
            || self.consumer_group_writing(gid)
            || !self.pending_txn_producers(gid).is_empty();
        if all_expired && group_empty && !busy {
            tracing::info!(group = %gid, "group has no offsets left and is empty; removing it");
            if consumer {
                self.drop_consumer_group(gid);
            } else if let Some(mut g) = self.groups.remove(gid) {
                g.transition_to(GroupState::Dead, now_ms);
            }
            self.offsets.remove(gid);
            self.timers.cancel_group(gid);
            out.removed_groups.push(gid.to_string());
        }
    }

    /// Marks pending offset writes of an unloaded group so their completion
    /// answers the client without resurrecting the group here.
    pub(crate) fn orphan_pending_offsets(&mut self, group_id: &str) {
        for p in self.pending_commits.values_mut() {
            if p.group_id == group_id {
                p.orphaned = true;
            }
        }
        for p in self.pending_offset_deletes.values_mut() {
            if p.group_id == group_id {
                p.orphaned = true;
            }
        }
    }
}
