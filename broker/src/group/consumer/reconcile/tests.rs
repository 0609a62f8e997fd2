use super::*;
use crate::group::assignor::testing::{assignment, TOPIC1, TOPIC2};

fn member(
    state: MemberState,
    (member_epoch, previous_member_epoch): (i32, i32),
    assigned: MemberAssignment,
    pending_revocation: MemberAssignment,
) -> MemberAssignmentState {
    MemberAssignmentState {
        state,
        member_epoch,
        previous_member_epoch,
        assigned,
        pending_revocation,
    }
}

fn two(t1: &[i32], t2: &[i32]) -> MemberAssignment {
    assignment(&[(TOPIC1, t1), (TOPIC2, t2)])
}

fn none() -> MemberAssignment {
    MemberAssignment::new()
}

const FREE: fn(Uuid, i32) -> bool = |_, _| false;
const HELD: fn(Uuid, i32) -> bool = |_, _| true;

#[test]
fn test_stable_to_stable() {
    let m = member(
        MemberState::Stable,
        (10, 10),
        two(&[1, 2, 3], &[4, 5, 6]),
        none(),
    );
    let next = reconcile(&m, 11, &two(&[1, 2, 3], &[4, 5, 6]), HELD, None).unwrap();
    assert_eq!(
        next,
        member(
            MemberState::Stable,
            (11, 10),
            two(&[1, 2, 3], &[4, 5, 6]),
            none()
        )
    );
}

#[test]
fn test_stable_to_stable_with_new_partitions() {
    let m = member(
        MemberState::Stable,
        (10, 10),
        two(&[1, 2, 3], &[4, 5, 6]),
        none(),
    );
    let next = reconcile(&m, 11, &two(&[1, 2, 3, 4], &[4, 5, 6, 7]), FREE, None).unwrap();
    assert_eq!(
        next,
        member(
            MemberState::Stable,
            (11, 10),
            two(&[1, 2, 3, 4], &[4, 5, 6, 7]),
            none()
        )
    );
}

#[test]
fn test_stable_to_unrevoked_partitions() {
    let m = member(
        MemberState::Stable,
        (10, 10),
        two(&[1, 2, 3], &[4, 5, 6]),
        none(),
    );
    let next = reconcile(&m, 11, &two(&[2, 3, 4], &[5, 6, 7]), FREE, None).unwrap();
    assert_eq!(
        next,
        member(
            MemberState::UnrevokedPartitions,
            (10, 10),
            two(&[2, 3], &[5, 6]),
            two(&[1], &[4])
        )
    );
}

#[test]
fn test_stable_to_unreleased_partitions() {
    let m = member(
        MemberState::Stable,
        (10, 10),
        two(&[1, 2, 3], &[4, 5, 6]),
        none(),
    );
    let next = reconcile(&m, 11, &two(&[1, 2, 3, 4], &[4, 5, 6, 7]), HELD, None).unwrap();
    assert_eq!(
        next,
        member(
            MemberState::UnreleasedPartitions,
            (11, 10),
            two(&[1, 2, 3], &[4, 5, 6]),
            none()
        )
    );
}

#[test]
fn test_stable_to_unreleased_partitions_with_owned_partitions_not_having_revoked_partitions() {
    let m = member(
        MemberState::Stable,
        (10, 10),
        two(&[1, 2, 3], &[4, 5, 6]),
        none(),
    );
    let held_in_topic2 = |topic: Uuid, _| topic == TOPIC2;
    let next = reconcile(
        &m,
        11,
        &two(&[1, 2, 3], &[4, 5, 7]),
        held_in_topic2,
        Some(&none()),
    )
    .unwrap();
    assert_eq!(
        next,
        member(
            MemberState::UnreleasedPartitions,
            (11, 10),
            two(&[1, 2, 3], &[4, 5]),
            none()
        )
    );
}

#[test]
fn test_unrevoked_partitions_to_stable() {
    let m = member(
        MemberState::UnrevokedPartitions,
        (10, 10),
        two(&[2, 3], &[5, 6]),
        two(&[1], &[4]),
    );
    let owned = two(&[2, 3], &[5, 6]);
    let next = reconcile(&m, 11, &two(&[2, 3], &[5, 6]), FREE, Some(&owned)).unwrap();
    assert_eq!(
        next,
        member(MemberState::Stable, (11, 10), two(&[2, 3], &[5, 6]), none())
    );
}

#[test]
fn test_remains_in_unrevoked_partitions() {
    let m = member(
        MemberState::UnrevokedPartitions,
        (10, 10),
        two(&[2, 3], &[5, 6]),
        two(&[1], &[4]),
    );
    let target = two(&[3], &[6]);
    // Owned partitions not sent, or still holding a revoked one.
    assert_eq!(reconcile(&m, 12, &target, FREE, None).unwrap(), m);
    let owned = two(&[1, 2, 3], &[5, 6]);
    assert_eq!(reconcile(&m, 12, &target, FREE, Some(&owned)).unwrap(), m);
    let owned = two(&[2, 3], &[4, 5, 6]);
    assert_eq!(reconcile(&m, 12, &target, FREE, Some(&owned)).unwrap(), m);
}

#[test]
fn test_unrevoked_partitions_to_unrevoked_partitions() {
    let m = member(
        MemberState::UnrevokedPartitions,
        (10, 10),
        two(&[2, 3], &[5, 6]),
        two(&[1], &[4]),
    );
    let owned = two(&[2, 3], &[5, 6]);
    let next = reconcile(&m, 12, &two(&[3], &[6]), FREE, Some(&owned)).unwrap();
    assert_eq!(
        next,
        member(
            MemberState::UnrevokedPartitions,
            (11, 10),
            two(&[3], &[6]),
            two(&[2], &[5])
        )
    );
}

#[test]
fn test_unrevoked_partitions_to_unreleased_partitions() {
    let m = member(
        MemberState::UnrevokedPartitions,
        (11, 10),
        two(&[2, 3], &[5, 6]),
        none(),
    );
    let owned = two(&[2, 3], &[5, 6]);
    let next = reconcile(&m, 11, &two(&[2, 3, 4], &[5, 6, 7]), HELD, Some(&owned)).unwrap();
    assert_eq!(
        next,
        member(
            MemberState::UnreleasedPartitions,
            (11, 11),
            two(&[2, 3], &[5, 6]),
            none()
        )
    );
}

#[test]
fn test_unreleased_partitions_to_stable() {
    let m = member(
        MemberState::UnreleasedPartitions,
        (11, 11),
        two(&[2, 3], &[5, 6]),
        none(),
    );
    let next = reconcile(&m, 12, &two(&[2, 3], &[5, 6]), HELD, None).unwrap();
    assert_eq!(
        next,
        member(MemberState::Stable, (12, 11), two(&[2, 3], &[5, 6]), none())
    );
}

#[test]
fn test_unreleased_partitions_to_stable_with_new_partitions() {
    let m = member(
        MemberState::UnreleasedPartitions,
        (11, 11),
        two(&[2, 3], &[5, 6]),
        none(),
    );
    let next = reconcile(&m, 11, &two(&[2, 3, 4], &[5, 6, 7]), FREE, None).unwrap();
    assert_eq!(
        next,
        member(
            MemberState::Stable,
            (11, 11),
            two(&[2, 3, 4], &[5, 6, 7]),
            none()
        )
    );
}

#[test]
fn test_unreleased_partitions_to_unreleased_partitions() {
    let m = member(
        MemberState::UnreleasedPartitions,
        (11, 11),
        two(&[2, 3], &[5, 6]),
        none(),
    );
    let next = reconcile(&m, 11, &two(&[2, 3, 4], &[5, 6, 7]), HELD, None).unwrap();
    assert_eq!(next, m);
}

#[test]
fn test_unreleased_partitions_to_unrevoked_partitions() {
    let m = member(
        MemberState::UnreleasedPartitions,
        (11, 11),
        two(&[2, 3], &[5, 6]),
        none(),
    );
    let next = reconcile(&m, 12, &two(&[3], &[6]), HELD, None).unwrap();
    assert_eq!(
        next,
        member(
            MemberState::UnrevokedPartitions,
            (11, 11),
            two(&[3], &[6]),
            two(&[2], &[5])
        )
    );
}

#[test]
fn test_unknown_state() {
    let m = member(
        MemberState::Unknown,
        (11, 11),
        two(&[3], &[6]),
        two(&[2], &[5]),
    );
    let target = two(&[3], &[6]);
    // First fenced, so that the client drops its partitions...
    assert_eq!(
        reconcile(&m, 12, &target, HELD, None),
        Err(FencedMemberEpoch)
    );
    // ...then it comes back owning none.
    let next = reconcile(&m, 12, &target, HELD, Some(&none())).unwrap();
    assert_eq!(
        next,
        member(MemberState::Stable, (12, 11), two(&[3], &[6]), none())
    );
}

#[test]
fn member_states_keep_apaches_byte_values() {
    for state in [
        MemberState::Stable,
        MemberState::UnrevokedPartitions,
        MemberState::UnreleasedPartitions,
        MemberState::Unknown,
    ] {
        assert_eq!(MemberState::from_value(state.value()), state);
    }
    assert_eq!(MemberState::from_value(3), MemberState::Unknown);
}
