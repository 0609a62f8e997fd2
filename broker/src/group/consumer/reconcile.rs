//! Apache's `CurrentAssignmentBuilder`: the consumer protocol's
//! reconciliation of one member towards the group's target assignment. A
//! member first gives up what the target takes away (it stays at its epoch
//! until its heartbeat no longer reports those partitions), then moves to
//! the target epoch and receives the rest, except partitions another member
//! has not released yet. Pure: the member, the target and who holds what
//! in, the member's next state out.

use std::collections::BTreeSet;

use uuid::Uuid;

use crate::group::assignor::MemberAssignment;

/// Apache's `MemberState` (its byte values are in the group log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// Reconciled with the target assignment.
    Stable,
    /// Must revoke partitions before moving to the next epoch.
    UnrevokedPartitions,
    /// At the target epoch, waiting for partitions others still hold.
    UnreleasedPartitions,
    /// A state a newer coordinator wrote: the member is fenced and starts
    /// over.
    Unknown,
}

impl MemberState {
    pub fn value(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    pub fn from_value(value: i8) -> MemberState {
        match value {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }
}

/// A member's epochs and partitions, as reconciliation moves them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberAssignmentState {
    pub state: MemberState,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// The partitions the member may consume.
    pub assigned: MemberAssignment,
    /// The partitions it must give up before its next epoch.
    pub pending_revocation: MemberAssignment,
}

/// FENCED_MEMBER_EPOCH: the member must give up all its partitions and
/// join again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.")]
pub struct FencedMemberEpoch;

impl MemberAssignmentState {
    /// With `epoch` as the member epoch, the current one as the previous.
    fn at_epoch(&self, epoch: i32) -> (i32, i32) {
        (epoch, self.member_epoch)
    }
}

/// The member's next state towards `target` (the group's target
/// assignment for it, at `target_epoch`). `held(topic, partition)`:
/// whether a member still holds the partition, assigned or pending its
/// revocation (Apache's current partition epoch is not -1). `owned`: the
/// partitions the member's heartbeat reports, `None` when it did not send
/// them.
pub fn reconcile(
    member: &MemberAssignmentState,
    target_epoch: i32,
    target: &MemberAssignment,
    held: impl Fn(Uuid, i32) -> bool,
    owned: Option<&MemberAssignment>,
) -> Result<MemberAssignmentState, FencedMemberEpoch> {
    let next = |epoch| next_assignment(member, epoch, target_epoch, target, &held, owned);
    Ok(match member.state {
        MemberState::Stable if member.member_epoch != target_epoch => next(member.member_epoch),
        MemberState::Stable => member.clone(),
        MemberState::UnrevokedPartitions => {
            if owns_any(owned, &member.pending_revocation) {
                member.clone()
            } else {
                next(member.member_epoch + 1)
            }
        }
        MemberState::UnreleasedPartitions => next(member.member_epoch),
        MemberState::Unknown => {
            if owned.is_none_or(|o| !o.is_empty()) {
                return Err(FencedMemberEpoch);
            }
            next(target_epoch)
        }
    })
}

/// Whether the heartbeat still reports one of `partitions` (true when it
/// reported nothing: the member has not shown it gave them up).
fn owns_any(owned: Option<&MemberAssignment>, partitions: &MemberAssignment) -> bool {
    let Some(owned) = owned else {
        return true;
    };
    owned.iter().any(|(topic, ps)| {
        partitions
            .get(topic)
            .is_some_and(|pending| ps.iter().any(|p| pending.contains(p)))
    })
}

fn next_assignment(
    member: &MemberAssignmentState,
    epoch: i32,
    target_epoch: i32,
    target: &MemberAssignment,
    held: &impl Fn(Uuid, i32) -> bool,
    owned: Option<&MemberAssignment>,
) -> MemberAssignmentState {
    let empty = BTreeSet::new();
    let mut unreleased = false;
    let mut assigned = MemberAssignment::new();
    let mut revoking = MemberAssignment::new();
    let mut adding = MemberAssignment::new();
    let topics: BTreeSet<&Uuid> = target.keys().chain(member.assigned.keys()).collect();
    for topic in topics {
        let wanted = target.get(topic).unwrap_or(&empty);
        let current = member.assigned.get(topic).unwrap_or(&empty);
        let keep: BTreeSet<i32> = current.intersection(wanted).copied().collect();
        let revoke: BTreeSet<i32> = current.difference(&keep).copied().collect();
        let mut add: BTreeSet<i32> = wanted.difference(&keep).copied().collect();
        let before = add.len();
        add.retain(|p| !held(*topic, *p));
        unreleased |= add.len() != before;
        for (out, set) in [
            (&mut assigned, keep),
            (&mut revoking, revoke),
            (&mut adding, add),
        ] {
            if !set.is_empty() {
                out.insert(*topic, set);
            }
        }
    }
    let state = |state, (member_epoch, previous_member_epoch), assigned, pending_revocation| {
        MemberAssignmentState {
            state,
            member_epoch,
            previous_member_epoch,
            assigned,
            pending_revocation,
        }
    };
    if !revoking.is_empty() && owns_any(owned, &revoking) {
        // Stay at this epoch until the member gave those up.
        return state(
            MemberState::UnrevokedPartitions,
            member.at_epoch(epoch),
            assigned,
            revoking,
        );
    }
    for (topic, partitions) in adding {
        assigned.entry(topic).or_default().extend(partitions);
    }
    let reached = if unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    state(
        reached,
        member.at_epoch(target_epoch),
        assigned,
        MemberAssignment::new(),
    )
}

#[cfg(test)]
mod tests;
