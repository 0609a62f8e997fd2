//! The records a consumer group is made of, as plain values: Apache's
//! `ConsumerGroup*Key`/`*Value` records of `__consumer_offsets`, one
//! variant per record type and one per tombstone, the group id being the
//! log's. The group coordinator computes them and replays them
//! (`group::consumer::group::ConsumerGroup::replay`, live and at load alike;
//! its methods on these types live beside it); the group log stores them
//! and compacts them by key ([`CompactedRecords`]), knowing nothing else of
//! them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A member's partitions, by topic id.
pub type MemberAssignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// What a member declares about itself (Apache's
/// `ConsumerGroupMemberMetadataValue`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberSubscriptionMetadata {
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: BTreeSet<String>,
    pub subscribed_topic_regex: Option<String>,
    /// The `server_assignor` the member asked for.
    pub server_assignor: Option<String>,
    pub rebalance_timeout_ms: i32,
    /// Set while the member speaks the classic protocol (JoinGroup /
    /// SyncGroup / Heartbeat) inside a consumer group: online migration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classic: Option<ClassicMemberMetadata>,
}

/// What a classic member declared in its JoinGroup (Apache's
/// `ConsumerGroupMemberMetadataValue.ClassicMemberMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassicMemberMetadata {
    pub session_timeout_ms: i32,
    /// Its protocols (assignor names and their embedded subscriptions), in
    /// its order of preference.
    pub supported_protocols: Vec<ClassicProtocol>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassicProtocol {
    pub name: String,
    pub metadata: Vec<u8>,
}

/// A subscribed topic as the group last saw it (Apache's `TopicMetadata`
/// in `ConsumerGroupPartitionMetadataValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicMetadata {
    pub id: Uuid,
    pub name: String,
    pub num_partitions: i32,
}

/// What a subscribed regular expression resolved to (Apache's
/// `ResolvedRegularExpression`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedRegex {
    /// The topics it matched that the member resolving it may describe.
    pub topics: BTreeSet<String>,
    /// The version of the topics it was matched against.
    pub version: i64,
    /// When it was resolved (ms since the epoch).
    pub timestamp_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum ConsumerGroupRecord {
    /// `ConsumerGroupMetadataValue`: the group epoch.
    GroupEpoch {
        epoch: i32,
    },
    /// Its tombstone: the group is gone (members, target and target epoch
    /// must be gone first).
    GroupTombstone,
    /// `ConsumerGroupPartitionMetadataValue`: the subscribed topics, by name.
    SubscriptionMetadata {
        topics: BTreeMap<String, TopicMetadata>,
    },
    SubscriptionMetadataTombstone,
    /// `ConsumerGroupMemberMetadataValue`: a member's declaration.
    Member {
        member_id: String,
        metadata: MemberSubscriptionMetadata,
    },
    /// Its tombstone (after the member's current assignment and target
    /// tombstones).
    MemberTombstone {
        member_id: String,
    },
    /// `ConsumerGroupTargetAssignmentMemberValue`.
    TargetMember {
        member_id: String,
        partitions: MemberAssignment,
    },
    TargetMemberTombstone {
        member_id: String,
    },
    /// `ConsumerGroupTargetAssignmentMetadataValue`: the epoch the target
    /// assignment was computed at.
    TargetEpoch {
        assignment_epoch: i32,
    },
    TargetEpochTombstone,
    /// `ConsumerGroupCurrentMemberAssignmentValue`: where reconciliation
    /// has taken a member (`state` is Apache's `MemberState` value).
    CurrentAssignment {
        member_id: String,
        state: i8,
        member_epoch: i32,
        previous_member_epoch: i32,
        assigned: MemberAssignment,
        pending_revocation: MemberAssignment,
    },
    /// Its tombstone: the member has left (epoch -1, nothing assigned).
    CurrentAssignmentTombstone {
        member_id: String,
    },
    /// `ConsumerGroupRegularExpressionValue`: what a subscribed regex
    /// resolved to.
    RegularExpression {
        regex: String,
        resolved: ResolvedRegex,
    },
    /// Its tombstone: no member subscribes with the regex any more.
    RegularExpressionTombstone {
        regex: String,
    },
}

/// What a record is to log compaction: the key it writes, with what it
/// does to the records of the group written before it.
#[derive(Debug, PartialEq, Eq)]
pub enum Compaction {
    /// The record is the key's value now (a tombstone whose replay is not
    /// the key's absence stays as the key's value).
    Keep(RecordKey),
    /// The key is gone: replaying nothing for it is replaying the tombstone.
    Remove(RecordKey),
    /// A member's tombstone: it comes after its current and target
    /// assignments' tombstones, so all three of its keys go.
    RemoveMember(String),
    /// The group's tombstone: the group is gone, and every record with it.
    Clear,
}

/// The key of a consumer group record in its group's log (Apache's
/// `*Key` records, the group id being the log's).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RecordKey {
    GroupEpoch,
    SubscriptionMetadata,
    TargetEpoch,
    Member(String),
    TargetMember(String),
    CurrentAssignment(String),
    RegularExpression(String),
}

impl ConsumerGroupRecord {
    /// What the record does to a compacted log: replaying the records a
    /// log keeps builds the group replaying every record built.
    pub fn compaction(&self) -> Compaction {
        use ConsumerGroupRecord as R;
        use RecordKey as K;
        match self {
            R::GroupEpoch { .. } => Compaction::Keep(K::GroupEpoch),
            R::GroupTombstone => Compaction::Clear,
            R::SubscriptionMetadata { .. } => Compaction::Keep(K::SubscriptionMetadata),
            // Its replay empties the subscription metadata, as a new group has it.
            R::SubscriptionMetadataTombstone => Compaction::Remove(K::SubscriptionMetadata),
            R::Member { member_id, .. } => Compaction::Keep(K::Member(member_id.clone())),
            R::MemberTombstone { member_id } => Compaction::RemoveMember(member_id.clone()),
            R::TargetMember { member_id, .. } => {
                Compaction::Keep(K::TargetMember(member_id.clone()))
            }
            R::TargetMemberTombstone { member_id } => {
                Compaction::Remove(K::TargetMember(member_id.clone()))
            }
            // Its replay sets -1, which a new group does not have.
            R::TargetEpoch { .. } | R::TargetEpochTombstone => Compaction::Keep(K::TargetEpoch),
            // Its replay sets the member's epoch to -1 while it is a member.
            R::CurrentAssignment { member_id, .. }
            | R::CurrentAssignmentTombstone { member_id } => {
                Compaction::Keep(K::CurrentAssignment(member_id.clone()))
            }
            R::RegularExpression { regex, .. } => {
                Compaction::Keep(K::RegularExpression(regex.clone()))
            }
            R::RegularExpressionTombstone { regex } => {
                Compaction::Remove(K::RegularExpression(regex.clone()))
            }
        }
    }
}

/// A consumer group's records as its compacted log keeps them: the last
/// record of each key, in the order they were written. The group log
/// keeps this (not the group) and writes it into its snapshots; a load
/// hands it to the coordinator, whose replay builds the group.
#[derive(Clone, Debug, Default)]
pub struct CompactedRecords {
    /// Record by the position it was written at.
    records: BTreeMap<u64, ConsumerGroupRecord>,
    /// Each key's position.
    positions: HashMap<RecordKey, u64>,
    next: u64,
}

impl CompactedRecords {
    /// Adds one record, as the log appends it.
    pub fn apply(&mut self, record: &ConsumerGroupRecord) {
        match record.compaction() {
            Compaction::Keep(key) => {
                let at = self.next;
                self.next += 1;
                if let Some(old) = self.positions.insert(key, at) {
                    self.records.remove(&old);
                }
                self.records.insert(at, record.clone());
            }
            Compaction::Remove(key) => self.remove(&key),
            Compaction::RemoveMember(member_id) => {
                self.remove(&RecordKey::Member(member_id.clone()));
                self.remove(&RecordKey::TargetMember(member_id.clone()));
                self.remove(&RecordKey::CurrentAssignment(member_id));
            }
            Compaction::Clear => {
                self.records.clear();
                self.positions.clear();
            }
        }
    }

    fn remove(&mut self, key: &RecordKey) {
        if let Some(at) = self.positions.remove(key) {
            self.records.remove(&at);
        }
    }

    /// The records kept, in the order they were written.
    pub fn records(&self) -> impl Iterator<Item = &ConsumerGroupRecord> {
        self.records.values()
    }

    /// No record kept: the log holds no consumer group.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

impl<'a> FromIterator<&'a ConsumerGroupRecord> for CompactedRecords {
    fn from_iter<I: IntoIterator<Item = &'a ConsumerGroupRecord>>(records: I) -> Self {
        let mut compacted = CompactedRecords::default();
        for record in records {
            compacted.apply(record);
        }
        compacted
    }
}

#[cfg(test)]
mod tests;
