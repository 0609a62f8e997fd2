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

    pub fn member_epoch(&self) -> i32 {
        self.assignment.member_epoch
    }

    /// Apache's `isReconciledTo`: stable at the target assignment's epoch.
    pub fn is_reconciled_to(&self, target_assignment_epoch: i32) -> bool {
        self.assignment.state == MemberState::Stable
            && self.assignment.member_epoch == target_assignment_epoch
    }
}
