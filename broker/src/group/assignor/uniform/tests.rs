use std::collections::BTreeMap;

use super::super::testing::*;
use super::super::*;
use super::{Heterogeneous, UniformAssignor};

fn assign(group: &GroupSpec, topics: &BTreeMap<Uuid, i32>) -> GroupAssignment {
    let out = UniformAssignor.assign(group, topics).unwrap();
    assert_valid(group, topics, &out);
    let sizes: Vec<usize> = out
        .values()
        .map(|a| a.values().map(BTreeSet::len).sum())
        .collect();
    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    assert!(max - min <= 1, "unbalanced: {sizes:?}");
    out
}

/// How many of the members' current partitions they keep.
fn kept(group: &GroupSpec, out: &GroupAssignment) -> usize {
    group
        .members
        .iter()
        .map(|(id, m)| {
            m.assignment
                .iter()
                .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
                .filter(|(t, p)| out[id].get(t).is_some_and(|ps| ps.contains(p)))
                .count()
        })
        .sum()
}

#[test]
fn test_one_member_no_topic_subscription() {
    let group = group(&[("A", member(&[], MemberAssignment::new()))]);
    let out = UniformAssignor
        .assign(&group, &topics(&[(TOPIC1, 3)]))
        .unwrap();
    assert!(out.is_empty());
}

#[test]
fn test_one_member_subscribed_to_nonexistent_topic() {
    let group = group(&[("A", member(&[TOPIC2], MemberAssignment::new()))]);
    assert!(UniformAssignor
        .assign(&group, &topics(&[(TOPIC1, 3)]))
        .is_err());
}

// Apache's expectations in the first-assignment and growth cases follow
// Java's hash order of topic ids; here topics are taken in id order, so
// the same partitions land on other members, as balanced and as sticky.

#[test]
fn test_first_assignment_two_members_two_topics_no_member_racks() {
    let both = member(&[TOPIC1, TOPIC3], MemberAssignment::new());
    let group = group(&[("A", both.clone()), ("B", both)]);
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC3, 2)]));
    assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 1, 2])]));
    assert_eq!(out["B"], assignment(&[(TOPIC3, &[0, 1])]));
}

#[test]
fn test_first_assignment_num_members_greater_than_total_num_partitions() {
    let m = member(&[TOPIC3], MemberAssignment::new());
    let group = group(&[("A", m.clone()), ("B", m.clone()), ("C", m)]);
    let out = assign(&group, &topics(&[(TOPIC3, 2)]));
    assert_eq!(out["A"], assignment(&[(TOPIC3, &[0])]));
    assert_eq!(out["B"], assignment(&[(TOPIC3, &[1])]));
    assert_eq!(out["C"], MemberAssignment::new());
}

#[test]
fn test_validity_and_balance_for_large_sample_set() {
    let topic_ids: Vec<Uuid> = (1..100).map(Uuid::from_u128).collect();
    let counts: Vec<(Uuid, i32)> = topic_ids.iter().map(|t| (*t, 3)).collect();
    let members: Vec<(String, MemberSubscription)> = (1..50)
        .map(|i| {
            (
                format!("member{i}"),
                member(&topic_ids, MemberAssignment::new()),
            )
        })
        .collect();
    let members: Vec<(&str, MemberSubscription)> = members
        .iter()
        .map(|(id, m)| (id.as_str(), m.clone()))
        .collect();
    assign(&group(&members), &topics(&counts));
}

#[test]
fn test_reassignment_for_two_members_two_topics_given_unbalanced_prev_assignment() {
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
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC2, 3)]));
    assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 1]), (TOPIC2, &[0])]));
    assert_eq!(out["B"], assignment(&[(TOPIC1, &[2]), (TOPIC2, &[1, 2])]));
}

#[test]
fn test_reassignment_when_partitions_are_added_for_two_members_two_topics() {
    let subscribed = [TOPIC1, TOPIC2];
    let group = group(&[
        (
            "A",
            member(
                &subscribed,
                assignment(&[(TOPIC1, &[0, 2]), (TOPIC2, &[0])]),
            ),
        ),
        (
            "B",
            member(
                &subscribed,
                assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1, 2])]),
            ),
        ),
    ]);
    let out = assign(&group, &topics(&[(TOPIC1, 6), (TOPIC2, 5)]));
    assert_eq!(kept(&group, &out), 6, "nobody loses a partition");
    assert_eq!(
        out["A"],
        assignment(&[(TOPIC1, &[0, 2, 3, 4, 5]), (TOPIC2, &[0])])
    );
    assert_eq!(
        out["B"],
        assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1, 2, 3, 4])])
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
                assignment(&[(TOPIC1, &[0, 2]), (TOPIC2, &[0])]),
            ),
        ),
        (
            "B",
            member(
                &subscribed,
                assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1, 2])]),
            ),
        ),
        ("C", member(&subscribed, MemberAssignment::new())),
    ]);
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC2, 3)]));
    // As Apache's: A and B give up one each, C gets those two.
    assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 2])]));
    assert_eq!(out["B"], assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1])]));
    assert_eq!(out["C"], assignment(&[(TOPIC2, &[0, 2])]));
}

#[test]
fn test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_two_topics(
) {
    let subscribed = [TOPIC1, TOPIC2];
    // C (t1:2, t2:2) left.
    let group = group(&[
        (
            "A",
            member(&subscribed, assignment(&[(TOPIC1, &[0]), (TOPIC2, &[0])])),
        ),
        (
            "B",
            member(&subscribed, assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1])])),
        ),
    ]);
    let out = assign(&group, &topics(&[(TOPIC1, 3), (TOPIC2, 3)]));
    assert_eq!(kept(&group, &out), 4);
    assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 2]), (TOPIC2, &[0])]));
    assert_eq!(out["B"], assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1, 2])]));
}

#[test]
fn test_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics(
) {
    // Both now subscribe to topic 2 only.
    let group = group(&[
        (
            "A",
            member(&[TOPIC2], assignment(&[(TOPIC1, &[0]), (TOPIC2, &[0])])),
        ),
        (
            "B",
            member(&[TOPIC2], assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1])])),
        ),
    ]);
    let out = assign(&group, &topics(&[(TOPIC1, 2), (TOPIC2, 2)]));
    assert_eq!(out["A"], assignment(&[(TOPIC2, &[0])]));
    assert_eq!(out["B"], assignment(&[(TOPIC2, &[1])]));
}

#[test]
fn a_balanced_assignment_is_kept_when_assigned_again() {
    // B holds the extra partition: it keeps it, though A comes first.
    let subscribed = [TOPIC1];
    let group1 = group(&[
        ("A", member(&subscribed, assignment(&[(TOPIC1, &[0])]))),
        ("B", member(&subscribed, assignment(&[(TOPIC1, &[1, 2])]))),
    ]);
    let counts = topics(&[(TOPIC1, 3)]);
    let out = assign(&group1, &counts);
    assert_eq!(kept(&group1, &out), 3, "{out:?}");
    // And any assignment, assigned again, stays.
    let members: Vec<(String, MemberSubscription)> = (0..7)
        .map(|i| {
            (
                format!("m{i}"),
                member(&[TOPIC1, TOPIC2], MemberAssignment::new()),
            )
        })
        .collect();
    let counts = topics(&[(TOPIC1, 10), (TOPIC2, 13)]);
    let first = {
        let m: Vec<(&str, MemberSubscription)> = members
            .iter()
            .map(|(id, m)| (id.as_str(), m.clone()))
            .collect();
        assign(&group(&m), &counts)
    };
    let again: Vec<(&str, MemberSubscription)> = members
        .iter()
        .map(|(id, m)| {
            let mut m = m.clone();
            m.assignment = first[id].clone();
            (id.as_str(), m)
        })
        .collect();
    assert_eq!(assign(&group(&again), &counts), first);
}

/// UniformHeterogeneousAssignmentBuilderTest.
mod heterogeneous {
    use super::*;

    fn assign_heterogeneous(group: &GroupSpec, topics: &BTreeMap<Uuid, i32>) -> GroupAssignment {
        assert_eq!(group.subscription_type, SubscriptionType::Heterogeneous);
        let out = UniformAssignor.assign(group, topics).unwrap();
        assert_valid(group, topics, &out);
        out
    }

    const TOPIC4: Uuid = Uuid::from_u128(4);

    #[test]
    fn test_two_members_no_topic_subscription() {
        // Different (empty) subscriptions are still "the same": homogeneous.
        let group = group(&[
            ("A", member(&[], MemberAssignment::new())),
            ("B", member(&[], MemberAssignment::new())),
        ]);
        let out = UniformAssignor
            .assign(&group, &topics(&[(TOPIC1, 3)]))
            .unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn test_two_members_subscribed_to_nonexistent_topics() {
        let group = group(&[
            ("A", member(&[TOPIC1], MemberAssignment::new())),
            ("B", member(&[TOPIC2], MemberAssignment::new())),
        ]);
        assert!(UniformAssignor
            .assign(&group, &topics(&[(TOPIC1, 3)]))
            .is_err());
    }

    #[test]
    fn test_first_assignment_two_members_two_topics() {
        let group = group(&[
            ("A", member(&[TOPIC1, TOPIC3], MemberAssignment::new())),
            ("B", member(&[TOPIC3], MemberAssignment::new())),
        ]);
        let out = assign_heterogeneous(&group, &topics(&[(TOPIC1, 3), (TOPIC3, 6)]));
        assert_eq!(
            out["A"],
            assignment(&[(TOPIC1, &[0, 1, 2]), (TOPIC3, &[4])])
        );
        assert_eq!(out["B"], assignment(&[(TOPIC3, &[0, 1, 2, 3, 5])]));
    }

    #[test]
    fn test_first_assignment_num_members_greater_than_total_num_partitions() {
        let group = group(&[
            ("A", member(&[TOPIC3], MemberAssignment::new())),
            ("B", member(&[TOPIC3], MemberAssignment::new())),
            ("C", member(&[TOPIC1], MemberAssignment::new())),
        ]);
        let out = assign_heterogeneous(&group, &topics(&[(TOPIC3, 1), (TOPIC1, 2)]));
        assert_eq!(out["A"], assignment(&[(TOPIC3, &[0])]));
        assert_eq!(out["B"], MemberAssignment::new());
        assert_eq!(out["C"], assignment(&[(TOPIC1, &[0, 1])]));
    }

    #[test]
    fn test_reassignment_for_two_members_three_topics_given_unbalanced_prev_assignment() {
        let group = group(&[
            ("A", member(&[TOPIC1], assignment(&[(TOPIC1, &[0, 1, 2])]))),
            (
                "B",
                member(
                    &[TOPIC1, TOPIC2],
                    assignment(&[(TOPIC1, &[3]), (TOPIC2, &[0])]),
                ),
            ),
            (
                "C",
                member(
                    &[TOPIC1, TOPIC2, TOPIC3],
                    assignment(&[
                        (TOPIC1, &[4, 5]),
                        (TOPIC2, &[1, 2, 3]),
                        (TOPIC3, &[0, 1, 2, 3]),
                    ]),
                ),
            ),
        ]);
        let out = assign_heterogeneous(&group, &topics(&[(TOPIC1, 6), (TOPIC2, 4), (TOPIC3, 4)]));
        assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 1, 2, 5])]));
        assert_eq!(
            out["B"],
            assignment(&[(TOPIC1, &[3]), (TOPIC2, &[0, 1, 2, 3])])
        );
        assert_eq!(
            out["C"],
            assignment(&[(TOPIC1, &[4]), (TOPIC3, &[0, 1, 2, 3])])
        );
    }

    #[test]
    fn test_reassignment_when_partitions_are_added_for_two_members() {
        let group = group(&[
            (
                "A",
                member(
                    &[TOPIC1, TOPIC3],
                    assignment(&[(TOPIC1, &[0, 1, 2, 3]), (TOPIC3, &[0, 1])]),
                ),
            ),
            (
                "B",
                member(
                    &[TOPIC1, TOPIC2, TOPIC3, TOPIC4],
                    assignment(&[(TOPIC2, &[0, 1, 2]), (TOPIC4, &[0, 1, 2])]),
                ),
            ),
        ]);
        let counts = topics(&[(TOPIC1, 6), (TOPIC2, 5), (TOPIC3, 3), (TOPIC4, 3)]);
        let out = assign_heterogeneous(&group, &counts);
        assert_eq!(
            out["A"],
            assignment(&[(TOPIC1, &[0, 1, 2, 3, 4, 5]), (TOPIC3, &[0, 1, 2])])
        );
        assert_eq!(
            out["B"],
            assignment(&[(TOPIC2, &[0, 1, 2, 3, 4]), (TOPIC4, &[0, 1, 2])])
        );
    }

    #[test]
    fn test_reassignment_when_one_member_added_and_partitions_added_two_members_two_topics() {
        let group = group(&[
            (
                "A",
                member(&[TOPIC1], assignment(&[(TOPIC1, &[0, 2]), (TOPIC2, &[0])])),
            ),
            (
                "B",
                member(
                    &[TOPIC1, TOPIC2],
                    assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1, 2])]),
                ),
            ),
            ("C", member(&[TOPIC1, TOPIC2], MemberAssignment::new())),
        ]);
        let out = assign_heterogeneous(&group, &topics(&[(TOPIC1, 6), (TOPIC2, 7)]));
        assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 2, 3, 4, 5])]));
        assert_eq!(
            out["B"],
            assignment(&[(TOPIC1, &[1]), (TOPIC2, &[1, 2, 6])])
        );
        assert_eq!(out["C"], assignment(&[(TOPIC2, &[0, 3, 4, 5])]));
    }

    #[test]
    fn test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_three_topics(
    ) {
        let group = group(&[
            (
                "A",
                member(
                    &[TOPIC1, TOPIC3],
                    assignment(&[(TOPIC1, &[0, 1, 2]), (TOPIC3, &[0, 1])]),
                ),
            ),
            (
                "B",
                member(&[TOPIC2], assignment(&[(TOPIC2, &[3, 4, 5, 6])])),
            ),
        ]);
        let out = assign_heterogeneous(&group, &topics(&[(TOPIC1, 3), (TOPIC2, 8), (TOPIC3, 3)]));
        assert_eq!(
            out["A"],
            assignment(&[(TOPIC1, &[0, 1, 2]), (TOPIC3, &[0, 1, 2])])
        );
        assert_eq!(out["B"], assignment(&[(TOPIC2, &[0, 1, 2, 3, 4, 5, 6, 7])]));
    }
    #[test]
    fn test_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics(
    ) {
        let group = group(&[
            (
                "A",
                member(
                    &[TOPIC1],
                    assignment(&[(TOPIC1, &[0, 2]), (TOPIC2, &[1, 3])]),
                ),
            ),
            (
                "B",
                member(
                    &[TOPIC1, TOPIC2],
                    assignment(&[(TOPIC1, &[1]), (TOPIC2, &[0, 2, 4])]),
                ),
            ),
        ]);
        let out = assign_heterogeneous(&group, &topics(&[(TOPIC1, 3), (TOPIC2, 5)]));
        assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 1, 2])]));
        assert_eq!(out["B"], assignment(&[(TOPIC2, &[0, 1, 2, 3, 4])]));
    }

    #[test]
    fn test_reassignment_when_topic_partitions_run_out_and_members_have_no_partitions() {
        // Apache runs its heterogeneous builder on this homogeneous group.
        let all = [TOPIC1, TOPIC2, TOPIC3];
        let group = group(&[
            (
                "A",
                member(
                    &all,
                    assignment(&[(TOPIC1, &[0, 1]), (TOPIC2, &[0, 1]), (TOPIC3, &[0, 1])]),
                ),
            ),
            ("B", member(&all, MemberAssignment::new())),
        ]);
        let counts = topics(&[(TOPIC1, 2), (TOPIC2, 2), (TOPIC3, 2)]);
        let out = Heterogeneous::new(&group, &counts)
            .unwrap()
            .build()
            .unwrap();
        assert_valid(&group, &counts, &out);
        assert_eq!(out["A"], assignment(&[(TOPIC2, &[0]), (TOPIC3, &[0, 1])]));
        assert_eq!(out["B"], assignment(&[(TOPIC1, &[0, 1]), (TOPIC2, &[1])]));
    }

    #[test]
    fn test_first_assignment_with_two_members_including_one_without_subscriptions() {
        let group = group(&[
            ("A", member(&[TOPIC1], MemberAssignment::new())),
            ("B", member(&[], MemberAssignment::new())),
        ]);
        let out = assign_heterogeneous(&group, &topics(&[(TOPIC1, 3)]));
        assert_eq!(out["A"], assignment(&[(TOPIC1, &[0, 1, 2])]));
        assert_eq!(out["B"], MemberAssignment::new());
    }
    proptest::proptest! {
        /// Any group, any current assignment (stale ones too: topics
        /// no longer subscribed, partitions that do not exist or held
        /// twice): every subscribed partition once, to a subscriber;
        /// assigned again, the assignment stays.
        #[test]
        fn any_group_is_assigned_validly_and_stably(
            subscriptions in proptest::collection::vec(proptest::collection::btree_set(1u128..6, 0..4), 1..8),
            counts in proptest::collection::vec(0i32..12, 5),
            seed in proptest::collection::vec((0usize..8, 0i32..12, 1u128..6), 0..20),
        ) {
            let counts: BTreeMap<Uuid, i32> =
                counts.iter().enumerate().map(|(i, n)| (Uuid::from_u128(i as u128 + 1), *n)).collect();
            let mut members: BTreeMap<String, MemberSubscription> = subscriptions
                .iter()
                .enumerate()
                .map(|(i, topics)| {
                    let topics: Vec<Uuid> = topics.iter().map(|t| Uuid::from_u128(*t)).collect();
                    (format!("m{i}"), member(&topics, MemberAssignment::new()))
                })
                .collect();
            // A current assignment, possibly stale (unsubscribed topics,
            // partitions twice).
            for (m, p, t) in seed {
                if let Some(member) = members.get_mut(&format!("m{}", m % subscriptions.len())) {
                    member.assignment.entry(Uuid::from_u128(t)).or_default().insert(p);
                }
            }
            let group = GroupSpec::new(members.clone());
            let out = UniformAssignor.assign(&group, &counts).unwrap();
            assert_valid(&group, &counts, &out);
            for (id, m) in members.iter_mut() {
                m.assignment = out.get(id).cloned().unwrap_or_default();
            }
            let again = UniformAssignor.assign(&GroupSpec::new(members), &counts).unwrap();
            proptest::prop_assert_eq!(again, out);
        }
    }
}
