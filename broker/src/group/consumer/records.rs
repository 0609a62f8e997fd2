//! The records a consumer group is made of (their values are
//! `crate::records::consumer`'s, below storage): the coordinator computes
//! records, then replays them ([`super::group::ConsumerGroup::replay`]):
//! the same path builds the group live and when its log is loaded.

use super::reconcile::MemberAssignmentState;
pub use crate::records::consumer::{ConsumerGroupRecord, ResolvedRegex, TopicMetadata};

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
