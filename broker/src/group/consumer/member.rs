//! A member of a consumer group (Apache's `ConsumerGroupMember`): what it
//! subscribes to, as its heartbeats declare it, and where reconciliation
//! has taken it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::reconcile::{MemberAssignmentState, MemberState};
use crate::group::assignor::MemberAssignment;

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

/// One member: its declaration and its reconciliation state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMember {
    pub member_id: String,
    pub metadata: MemberSubscriptionMetadata,
    pub assignment: MemberAssignmentState,
}

impl ConsumerGroupMember {
    /// A member that has not been given anything yet (epoch 0).
    pub fn new(member_id: impl Into<String>) -> ConsumerGroupMember {
        ConsumerGroupMember {
            member_id: member_id.into(),
            metadata: MemberSubscriptionMetadata::default(),
            assignment: MemberAssignmentState {
                state: MemberState::Stable,
                member_epoch: 0,
                previous_member_epoch: 0,
                assigned: MemberAssignment::new(),
                pending_revocation: MemberAssignment::new(),
            },
        }
    }

    pub fn instance_id(&self) -> Option<&str> {
        self.metadata.instance_id.as_deref()
    }

    /// Whether the member speaks the classic protocol.
    pub fn uses_classic_protocol(&self) -> bool {
        self.metadata.classic.is_some()
    }

    /// The session timeout of a classic member (its JoinGroup's).
    pub fn classic_session_timeout_ms(&self) -> Option<i32> {
        self.metadata.classic.as_ref().map(|c| c.session_timeout_ms)
    }

    pub fn member_epoch(&self) -> i32 {
        self.assignment.member_epoch
    }

    /// Apache's `isReconciledTo`: stable at the target assignment's epoch.
    pub fn is_reconciled_to(&self, target_assignment_epoch: i32) -> bool {
        self.assignment.state == MemberState::Stable
            && self.assignment.member_epoch == target_assignment_epoch
    }
}
