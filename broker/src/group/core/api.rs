//! Plain request/response structs mirroring the wire fields, the effects the
//! shell executes, and the persisted group metadata record.

use bytes::Bytes;

use super::member::Protocol;

/// Opaque id the shell gives each request so deferred answers find their way
/// back. Must be unique among requests still awaiting an answer.
pub type RequestToken = u64;

/// Id of a group-metadata write whose outcome changes what the core answers
/// (leader SyncGroup, static member replacement).
pub type PersistToken = u64;

// ---------------------------------------------------------------- JoinGroup

#[derive(Clone, Debug)]
pub struct JoinGroupRequest {
    pub group_id: String,
    pub session_timeout_ms: i32,
    /// v0 had none: the shell passes the session timeout, as Apache does.
    pub rebalance_timeout_ms: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    pub reason: Option<String>,
    pub api_version: i16,
    pub client_id: String,
    pub client_host: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinGroupResponseMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinGroupResponse {
    pub error_code: i16,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub skip_assignment: bool,
    pub member_id: String,
    pub members: Vec<JoinGroupResponseMember>,
}

impl JoinGroupResponse {
    /// Apache's error response: generation -1, no protocol, no leader.
    pub fn error(member_id: impl Into<String>, error_code: i16) -> Self {
        JoinGroupResponse {
            error_code,
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.into(),
            members: Vec::new(),
        }
    }
}

// ---------------------------------------------------------------- SyncGroup

#[derive(Clone, Debug)]
pub struct SyncGroupRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+; None on older versions.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<(String, Bytes)>,
    pub api_version: i16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncGroupResponse {
    pub error_code: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncGroupResponse {
    pub fn error(error_code: i16) -> Self {
        SyncGroupResponse {
            error_code,
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

// ---------------------------------------------------------------- Heartbeat

#[derive(Clone, Debug)]
pub struct HeartbeatRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatResponse {
    pub error_code: i16,
}

// ---------------------------------------------------------------- LeaveGroup

#[derive(Clone, Debug)]
pub struct LeaveMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub reason: Option<String>,
}

/// v0–v2 carry a single `member_id`: the shell passes it as one `LeaveMember`
/// with no instance id. v3+ pass `members[]` as is.
#[derive(Clone, Debug)]
pub struct LeaveGroupRequest {
    pub group_id: String,
    pub members: Vec<LeaveMember>,
    pub api_version: i16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaveMemberResponse {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub error_code: i16,
}

/// For v0–v2 the core already folded per-member errors into `error_code`
/// (Apache `LeaveGroupResponse` does the same) and `members` is empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaveGroupResponse {
    pub error_code: i16,
    pub members: Vec<LeaveMemberResponse>,
}

// ---------------------------------------------------------------- Offsets

pub use crate::records::offsets::OffsetAndMetadata;

#[derive(Clone, Debug)]
pub struct OffsetCommitPartition {
    pub partition: i32,
    pub offset: i64,
    /// -1 when absent.
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

#[derive(Clone, Debug)]
pub struct OffsetCommitTopic {
    pub name: String,
    pub partitions: Vec<OffsetCommitPartition>,
}

#[derive(Clone, Debug)]
pub struct OffsetCommitRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// -1 (default) unless a v2–v4 client set it.
    pub retention_time_ms: i64,
    pub topics: Vec<OffsetCommitTopic>,
    pub api_version: i16,
}

impl OffsetCommitRequest {
    /// One offset committed by a simple consumer (no generation, no member;
    /// OffsetCommit v8): what admin tools send, and what tests use.
    pub fn simple(group_id: &str, topic: &str, partition: i32, offset: i64) -> OffsetCommitRequest {
        OffsetCommitRequest {
            group_id: group_id.into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![OffsetCommitTopic {
                name: topic.into(),
                partitions: vec![OffsetCommitPartition {
                    partition,
                    offset,
                    leader_epoch: -1,
                    metadata: None,
                }],
            }],
            api_version: 8,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionResult {
    pub partition: i32,
    pub error_code: i16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicResult {
    pub name: String,
    pub partitions: Vec<PartitionResult>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitResponse {
    pub topics: Vec<TopicResult>,
}

impl OffsetCommitResponse {
    pub(crate) fn all(request_topics: &[OffsetCommitTopic], error_code: i16) -> Self {
        OffsetCommitResponse {
            topics: request_topics
                .iter()
                .map(|t| TopicResult {
                    name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| PartitionResult {
                            partition: p.partition,
                            error_code,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// The offsets of one commit, shared by its plan and its pending state;
/// a topic's partitions share its name (one allocation per topic).
pub type CommittedOffsets = std::sync::Arc<Vec<(std::sync::Arc<str>, i32, OffsetAndMetadata)>>;

/// Validated offsets the shell must make durable before the commit is
/// acknowledged; then `complete_offset_commit` or `fail_offset_commit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitPlan {
    pub token: RequestToken,
    pub group_id: String,
    /// Shared with the pending commit, which applies them once durable.
    pub offsets: CommittedOffsets,
}

#[derive(Clone, Debug)]
pub struct OffsetFetchRequest {
    pub group_id: String,
    /// None asks for every committed offset of the group.
    pub topics: Option<Vec<(String, Vec<i32>)>>,
    pub require_stable: bool,
    /// v9+: the member asking, checked against a consumer group's members
    /// (None and -1: an admin client, or a client outside the group).
    pub member_id: Option<String>,
    pub member_epoch: i32,
}

impl OffsetFetchRequest {
    /// No member: what an admin client sends (the rest to fill in).
    pub fn admin() -> OffsetFetchRequest {
        OffsetFetchRequest {
            group_id: String::new(),
            topics: None,
            require_stable: false,
            member_id: None,
            member_epoch: -1,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetFetchPartition {
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub error_code: i16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetFetchTopic {
    pub name: String,
    pub partitions: Vec<OffsetFetchPartition>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    pub error_code: i16,
    pub topics: Vec<OffsetFetchTopic>,
}

#[derive(Clone, Debug)]
pub struct OffsetDeleteRequest {
    pub group_id: String,
    pub topics: Vec<(String, Vec<i32>)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetDeleteResponse {
    pub error_code: i16,
    pub topics: Vec<TopicResult>,
}

/// Offsets the shell must remove durably; then `complete_offset_delete` /
/// `fail_offset_delete`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetDeletePlan {
    pub token: RequestToken,
    pub group_id: String,
    pub partitions: Vec<(String, i32)>,
}

// ---------------------------------------------------------------- Admin

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteGroupResult {
    pub group_id: String,
    pub error_code: i16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteGroupsResponse {
    pub results: Vec<DeleteGroupResult>,
}

/// Groups (metadata and every committed offset) the shell must delete
/// durably; then `complete_delete_groups` / `fail_delete_groups`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteGroupsPlan {
    pub token: RequestToken,
    pub group_ids: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub member_metadata: Bytes,
    pub member_assignment: Bytes,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedGroup {
    pub error_code: i16,
    /// v6+: why the group is not described.
    pub error_message: Option<String>,
    pub group_id: String,
    pub group_state: String,
    pub protocol_type: String,
    pub protocol_data: String,
    pub members: Vec<DescribedMember>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    pub group_state: String,
    pub group_type: String,
}

/// What the retention sweep removed. The shell deletes these durably; a failed
/// delete is harmless (the next load expires them again).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpiredOffsets {
    pub offsets: Vec<(String, String, i32)>,
    /// Empty groups without offsets that were dropped (state Dead): their
    /// metadata record should be deleted too.
    pub removed_groups: Vec<String>,
}

/// A committed offset of a group out of memory, kept for the group's lag
/// until the retention sweep would remove it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnloadedOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// When the sweep would remove it were the group loaded; never for a
    /// topic the group subscribes to, or in a state whose offsets do not
    /// expire.
    pub expires_at_ms: Option<u64>,
}

impl ExpiredOffsets {
    /// What the shell deletes, when anything expired.
    pub fn into_effect(self) -> Option<Effect> {
        (!self.offsets.is_empty() || !self.removed_groups.is_empty())
            .then_some(Effect::OffsetsExpired(self))
    }
}

// ---------------------------------------------------------------- Record

pub use crate::records::classic::{GroupMetadataRecord, MemberMetadataRecord};

// ---------------------------------------------------------------- Effects

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    Join(JoinGroupResponse),
    Sync(SyncGroupResponse),
    Heartbeat(HeartbeatResponse),
    Leave(LeaveGroupResponse),
    OffsetCommit(OffsetCommitResponse),
    OffsetDelete(OffsetDeleteResponse),
    DeleteGroups(DeleteGroupsResponse),
    TxnOffsetCommit(OffsetCommitResponse),
    /// A transaction marker applied to the group's pending offsets.
    TxnMarker(i16),
    ConsumerGroupHeartbeat(
        Result<
            crate::group::consumer::heartbeat::HeartbeatResponse,
            crate::group::consumer::heartbeat::HeartbeatError,
        >,
    ),
}

/// What the shell must do, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Answer the request identified by the token.
    Respond(RequestToken, Response),
    /// Write the group's metadata record (replacing the previous one). With
    /// `ack`, call `complete_group_persist(ack, result)` after the write.
    PersistGroupMetadata {
        group_id: String,
        record: GroupMetadataRecord,
        ack: Option<PersistToken>,
    },
    /// Make the offsets durable, then `complete_offset_commit` / `fail_offset_commit`.
    PersistOffsets(OffsetCommitPlan),
    /// Stage a transaction's offsets durably, then
    /// `complete_txn_offset_commit` / `fail_txn_offset_commit`.
    PersistTxnOffsets(super::TxnOffsetsPlan),
    /// Commit or drop a producer's pending offsets durably, then
    /// `complete_txn_marker` / `fail_txn_marker`.
    EndTxnOffsets {
        token: RequestToken,
        group_id: String,
        producer_id: i64,
        commit: bool,
    },
    /// Remove offsets durably, then `complete_offset_delete` / `fail_offset_delete`.
    DeleteOffsets(OffsetDeletePlan),
    /// Delete groups durably, then `complete_delete_groups` / `fail_delete_groups`.
    DeleteGroups(DeleteGroupsPlan),
    /// The periodic retention sweep removed these (delete them durably).
    OffsetsExpired(ExpiredOffsets),
    /// Write one change of a consumer group (its records, all or none),
    /// then `complete_consumer_write(group_id, write, result)`.
    PersistConsumerRecords {
        group_id: String,
        records: Vec<crate::group::consumer::records::ConsumerGroupRecord>,
        write: u64,
        /// The classic side of an online migration, in the same write.
        conversion: Option<Conversion>,
    },
}

/// What an online migration does to the group's classic metadata, written
/// with the consumer group's records so that a crash leaves one kind of
/// group or the other, never both and never neither.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Conversion {
    /// Classic to consumer: the classic metadata's tombstone.
    FromClassic,
    /// Consumer to classic: the classic group's metadata.
    ToClassic(GroupMetadataRecord),
}

impl Conversion {
    /// The classic metadata once converted (`None`: its tombstone).
    pub fn classic_metadata(&self) -> Option<&GroupMetadataRecord> {
        match self {
            Conversion::FromClassic => None,
            Conversion::ToClassic(record) => Some(record),
        }
    }
}

pub(crate) fn join_error(token: RequestToken, member_id: &str, error: i16) -> Effect {
    Effect::Respond(
        token,
        Response::Join(JoinGroupResponse::error(member_id, error)),
    )
}

pub(crate) fn sync_error(token: RequestToken, error: i16) -> Effect {
    Effect::Respond(token, Response::Sync(SyncGroupResponse::error(error)))
}

pub(crate) fn heartbeat(token: RequestToken, error: i16) -> Effect {
    Effect::Respond(
        token,
        Response::Heartbeat(HeartbeatResponse { error_code: error }),
    )
}

/// Apache's group id check for join/sync/heartbeat/leave/offset-delete
/// (`isGroupIdNotEmpty`), plus kaas' 255-byte cap: group ids become file names.
pub(crate) fn invalid_group_id(group_id: &str) -> bool {
    group_id.is_empty() || group_id.len() > 255
}

/// Offset commit/fetch and DeleteGroups accept the empty group id for
/// backward compatibility (Apache only rejects null); only the cap applies.
pub(crate) fn group_id_too_long(group_id: &str) -> bool {
    group_id.len() > 255
}
