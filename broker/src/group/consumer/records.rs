//! The records a consumer group is made of, as Apache's group coordinator
//! writes them to `__consumer_offsets` (one variant per record type and
//! one per tombstone, the group id being the log's). The coordinator
//! computes records, then replays them ([`super::group::ConsumerGroup::replay`]):
//! the same path builds the group live and when its log is loaded.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::member::MemberSubscriptionMetadata;
use super::reconcile::MemberAssignmentState;
use crate::group::assignor::MemberAssignment;

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

impl ConsumerGroupRecord {
    /// The `CurrentAssignment` record of a member in state `a`.
    pub fn current_assignment(member_id: &str, a: &MemberAssignmentState) -> ConsumerGroupRecord {
        ConsumerGroupRecord::CurrentAssignment {
            member_id: member_id.to_string(),
            state: a.state.value(),
            member_epoch: a.member_epoch,
            previous_member_epoch: a.previous_member_epoch,
            assigned: a.assigned.clone(),
            pending_revocation: a.pending_revocation.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
