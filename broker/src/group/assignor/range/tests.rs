use super::super::testing::*;
use super::super::*;
use super::RangeAssignor;

fn assign(group: &GroupSpec, topics: &BTreeMap<Uuid, i32>) -> GroupAssignment {
    let out = RangeAssignor.assign(group, topics).unwrap();
    assert_valid(group, topics, &out);
    out
}

#[test]
fn test_one_member_no_topic() {
    let group = group(&[("A", member(&[], MemberAssignment::new()))]);
    let out = assign(&group, &topics(&[(TOPIC1, 3)]));
    assert_eq!(out, [("A".to_string(), MemberAssignment::new())].into());
}

#[test]
fn test_one_member_subscribed_to_non_existent_topic() {
    let group = group(&[("A", member(&[TOPIC2], MemberAssignment::new()))]);
    assert!(RangeAssignor
        .assign(&group, &topics(&[(TOPIC1, 3)]))
        .is_err());
}

#[test]
fn test_first_assignment_two_members_two_topics_same_subscriptions() {
    let both = member(&[TOPIC1, TOPIC3], MemberAssignment::new());
    let group = group(&[("A", both.clone()), ("B", both)]);
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC3, 2)]));
    assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 1]), (TOPIC3, &[0])]));
    assert_eq!(out["B"], assignment(&[(TOPIC1, &[2]), (TOPIC3, &[1])]));
}

#[test]
fn test_first_assignment_three_members_three_topics_different_subscriptions() {
    let group = group(&[
        ("A", member(&[TOPIC1, TOPIC2], MemberAssignment::new())),
        ("B", member(&[TOPIC3], MemberAssignment::new())),
        ("C", member(&[TOPIC2, TOPIC3], MemberAssignment::new())),
    ]);
    assert_eq!(group.subscription_type, SubscriptionType::Heterogeneous);
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC2, 3), (TOPIC3, 2)]));
    assert_eq!(
        out["A"],
        assignment(&[(TOPIC1, &[0, 1, 2]), (TOPIC2, &[0, 1])])
    );
    assert_eq!(out["B"], assignment(&[(TOPIC3, &[0])]));
    assert_eq!(out["C"], assignment(&[(TOPIC2, &[2]), (TOPIC3, &[1])]));
}

#[test]
fn test_first_assignment_num_members_greater_than_num_partitions() {
    let all = member(&[TOPIC1, TOPIC3], MemberAssignment::new());
    let group = group(&[("A", all.clone()), ("B", all.clone()), ("C", all)]);
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC3, 2)]));
    assert_eq!(out["A"], assignment(&[(TOPIC1, &[0]), (TOPIC3, &[0])]));
    assert_eq!(out["B"], assignment(&[(TOPIC1, &[1]), (TOPIC3, &[1])]));
    // Topic 3 has 2 partitions for three members.
    assert_eq!(out["C"], assignment(&[(TOPIC1, &[2])]));
}

#[test]
fn test_static_membership() {
    let topics = topics(&[(TOPIC1, 3)]);
    let mut members = vec![
        ("A", static_member("instanceA", &[TOPIC1])),
        ("B", static_member("instanceB", &[TOPIC1])),
    ];
    let initial = assign(&group(&members), &topics);
    // memberA leaves and comes back with another member id, the same
    // instance id.
    members[0].0 = "memberA1";
    let again = assign(&group(&members), &topics);
    assert_eq!(initial["A"], again["memberA1"]);
    assert_eq!(initial["B"], again["B"]);
}

#[test]
fn test_mixed_static_membership() {
    let topics = topics(&[(TOPIC1, 5)]);
    let mut members = vec![
        ("A", static_member("instanceA", &[TOPIC1])),
        ("C", static_member("instanceC", &[TOPIC1])),
        ("B", member(&[TOPIC1], MemberAssignment::new())),
    ];
    let initial = assign(&group(&members), &topics);
    members[0].0 = "memberA1";
    let again = assign(&group(&members), &topics);
    assert_eq!(initial["A"], again["memberA1"]);
    assert_eq!(initial["B"], again["B"]);
    assert_eq!(initial["C"], again["C"]);
    // Static members first: the dynamic one gets the last range.
    assert_eq!(initial["B"], assignment(&[(TOPIC1, &[4])]));
}

#[test]
fn test_reassignment_num_members_greater_than_num_partitions_when_one_member_added() {
    let subscribed = [TOPIC1, TOPIC2];
    let group = group(&[
        (
            "A",
            member(&subscribed, assignment(&[(TOPIC1, &[0]), (TOPIC2, &[0])])),
        ),
        (
            "B",
            member(&subscribed, assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1])])),
        ),
        ("C", member(&subscribed, MemberAssignment::new())),
    ]);
    let out = assign(&group, &topics(&[(TOPIC1, 2), (TOPIC2, 2)]));
    assert_eq!(out["A"], assignment(&[(TOPIC1, &[0]), (TOPIC2, &[0])]));
    assert_eq!(out["B"], assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1])]));
    assert_eq!(out["C"], MemberAssignment::new(), "C gets nothing");
}

#[test]
fn test_reassignment_when_one_partition_added_for_two_members_two_topics() {
    let subscribed = [TOPIC1, TOPIC2];
    let group = group(&[
        (
            "A",
            member(
                &subscribed,
                assignment(&[(TOPIC1, &[0, 1]), (TOPIC2, &[0, 1])]),
            ),
        ),
        (
            "B",
            member(&subscribed, assignment(&[(TOPIC1, &[2]), (TOPIC2, &[2])])),
        ),
    ]);
    let out = assign(&group, &topics(&[(TOPIC1, 4), (TOPIC2, 4)]));
    assert_eq!(
        out["A"],
        assignment(&[(TOPIC1, &[0, 1]), (TOPIC2, &[0, 1])])
    );
    assert_eq!(
        out["B"],
        assignment(&[(TOPIC1, &[2, 3]), (TOPIC2, &[2, 3])])
    );
}

#[test]
fn test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics() {
    let subscribed = [TOPIC1, TOPIC2];
    let group = group(&[
        (
            "A",
            member(
                &subscribed,
                assignment(&[(TOPIC1, &[0, 1]), (TOPIC2, &[0, 1])]),
            ),
        ),
        (
            "B",
            member(&subscribed, assignment(&[(TOPIC1, &[2]), (TOPIC2, &[2])])),
        ),
        ("C", member(&subscribed, MemberAssignment::new())),
    ]);
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC2, 3)]));
    assert_eq!(out["A"], assignment(&[(TOPIC1, &[0]), (TOPIC2, &[0])]));
    assert_eq!(out["B"], assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1])]));
    assert_eq!(out["C"], assignment(&[(TOPIC1, &[2]), (TOPIC2, &[2])]));
}

#[test]
fn test_reassignment_when_one_member_added_and_one_partition_after_initial_assignment_with_two_members_two_topics(
) {
    let subscribed = [TOPIC1, TOPIC2];
    let group = group(&[
        (
            "A",
            member(
                &subscribed,
                assignment(&[(TOPIC1, &[0, 1]), (TOPIC2, &[0, 1])]),
            ),
        ),
        (
            "B",
            member(&subscribed, assignment(&[(TOPIC1, &[2]), (TOPIC2, &[2])])),
        ),
        ("C", member(&[TOPIC1], MemberAssignment::new())),
    ]);
    let out = assign(&group, &topics(&[(TOPIC1, 4), (TOPIC2, 3)]));
    assert_eq!(
        out["A"],
        assignment(&[(TOPIC1, &[0, 1]), (TOPIC2, &[0, 1])])
    );
    assert_eq!(out["B"], assignment(&[(TOPIC1, &[2]), (TOPIC2, &[2])]));
    assert_eq!(out["C"], assignment(&[(TOPIC1, &[3])]));
}

#[test]
fn test_reassignment_when_one_member_removed_after_initial_assignment_with_two_members_two_topics()
{
    // Member A left; B gets everything.
    let subscribed = [TOPIC1, TOPIC2];
    let group = group(&[(
        "B",
        member(&subscribed, assignment(&[(TOPIC1, &[2]), (TOPIC2, &[2])])),
    )]);
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC2, 3)]));
    assert_eq!(
        out["B"],
        assignment(&[(TOPIC1, &[0, 1, 2]), (TOPIC2, &[0, 1, 2])])
    );
}

#[test]
fn test_reassignment_when_multiple_subscriptions_removed_after_initial_assignment_with_three_members_two_topics(
) {
    let group = group(&[
        (
            "A",
            member(
                &[TOPIC1],
                assignment(&[(TOPIC1, &[0, 1, 2]), (TOPIC2, &[0])]),
            ),
        ),
        (
            "B",
            member(&[TOPIC1, TOPIC2, TOPIC3], assignment(&[(TOPIC2, &[1])])),
        ),
        (
            "C",
            member(&[TOPIC2], assignment(&[(TOPIC2, &[2]), (TOPIC3, &[0, 1])])),
        ),
    ]);
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC2, 3), (TOPIC3, 2)]));
    assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 1])]));
    assert_eq!(
        out["B"],
        assignment(&[(TOPIC1, &[2]), (TOPIC2, &[0, 1]), (TOPIC3, &[0, 1])])
    );
    assert_eq!(out["C"], assignment(&[(TOPIC2, &[2])]));
}
