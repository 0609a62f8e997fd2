//! A member of a consumer group (Apache's `ConsumerGroupMember`): what it
//! subscribes to, as its heartbeats declare it, and where reconciliation
//! has taken it.

use super::reconcile::{MemberAssignmentState, MemberState};
use crate::group::assignor::MemberAssignment;
pub use crate::records::consumer::{
    ClassicMemberMetadata, ClassicProtocol, MemberSubscriptionMetadata,
};

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
