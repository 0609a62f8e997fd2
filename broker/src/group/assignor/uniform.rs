//! Apache's `UniformAssignor`, the consumer protocol's default: balance
//! first (members' partition counts differ by one at most), then
//! stickiness (a member keeps what it has within its quota). This is
//! Apache's `UniformHomogeneousAssignmentBuilder`, for groups whose members
//! all subscribe to the same topics; groups with different subscriptions
//! (Apache's heterogeneous builder) are refused for now.

use std::collections::BTreeSet;

use uuid::Uuid;

use super::{
    AssignorError, GroupAssignment, GroupSpec, PartitionAssignor, SubscribedTopicDescriber,
    SubscriptionType,
};

pub struct UniformAssignor;

impl PartitionAssignor for UniformAssignor {
    fn name(&self) -> &'static str {
        "uniform"
    }

    fn assign(
        &self,
        group: &GroupSpec,
        topics: &dyn SubscribedTopicDescriber,
    ) -> Result<GroupAssignment, AssignorError> {
        if group.members.is_empty() {
            return Ok(GroupAssignment::new());
        }
        match group.subscription_type {
            SubscriptionType::Homogeneous => homogeneous(group, topics),
            SubscriptionType::Heterogeneous => Err(AssignorError(
                "the uniform assignor does not yet assign members subscribed to different topics"
                    .into(),
            )),
        }
    }
}

/// Members in id order; the first `total % members` get one partition
/// more than the rest.
fn homogeneous(
    group: &GroupSpec,
    topics: &dyn SubscribedTopicDescriber,
) -> Result<GroupAssignment, AssignorError> {
    let subscribed: &BTreeSet<Uuid> = &group
        .members
        .values()
        .next()
        .expect("a member")
        .subscribed_topic_ids;
    if subscribed.is_empty() {
        return Ok(GroupAssignment::new());
    }
    let mut unassigned: Vec<(Uuid, i32)> = Vec::new();
    let mut total = 0usize;
    for topic in subscribed {
        let partitions = topics.num_partitions(*topic).ok_or_else(|| {
            AssignorError(format!(
                "Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
            ))
        })?;
        for p in 0..partitions {
            if !group.is_partition_assigned(*topic, p) {
                unassigned.push((*topic, p));
            }
        }
        total += partitions.max(0) as usize;
    }
    let members = group.members.len();
    let min_quota = total / members;
    let extra = total % members;
    // Who gets one partition more than the minimum: first the members that
    // already hold more, so that a balanced assignment stays as it is when
    // assigned again (Apache's KAFKA-18688), then the others in id order.
    let held = |m: &super::MemberSubscription| -> usize {
        m.assignment
            .iter()
            .filter(|(topic, _)| subscribed.contains(topic))
            .map(|(_, partitions)| partitions.len())
            .sum()
    };
    let holding_more = group.members.iter().filter(|(_, m)| held(m) > min_quota);
    let others = group.members.iter().filter(|(_, m)| held(m) <= min_quota);
    let with_extra: BTreeSet<&String> = holding_more
        .chain(others)
        .map(|(id, _)| id)
        .take(extra)
        .collect();

    // Keep what each member has within its quota and its subscription;
    // the rest goes back to be assigned.
    let mut out = GroupAssignment::new();
    let mut unfilled: Vec<(&str, usize)> = Vec::new();
    for (id, member) in &group.members {
        let mut quota = min_quota + usize::from(with_extra.contains(id));
        let mut kept = member.assignment.clone();
        kept.retain(|topic, _| subscribed.contains(topic));
        for (topic, partitions) in kept.iter_mut() {
            if partitions.len() <= quota {
                quota -= partitions.len();
                continue;
            }
            let over: Vec<i32> = partitions.iter().skip(quota).copied().collect();
            quota = 0;
            for p in over {
                partitions.remove(&p);
                unassigned.push((*topic, p));
            }
        }
        kept.retain(|_, partitions| !partitions.is_empty());
        if quota > 0 {
            unfilled.push((id, quota));
        }
        out.insert(id.clone(), kept);
    }

    let mut next = unassigned.into_iter();
    for (id, quota) in unfilled {
        let assignment = out.get_mut(id).expect("inserted above");
        for (topic, p) in next.by_ref().take(quota) {
            assignment.entry(topic).or_default().insert(p);
        }
    }
    if next.next().is_some() {
        return Err(AssignorError("Partitions were left unassigned".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::testing::*;
    use super::super::*;
    use super::UniformAssignor;

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
    fn test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics(
    ) {
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

    #[test]
    fn members_with_different_subscriptions_are_refused_for_now() {
        let group = group(&[
            ("A", member(&[TOPIC1], MemberAssignment::new())),
            ("B", member(&[TOPIC2], MemberAssignment::new())),
        ]);
        let err = UniformAssignor
            .assign(&group, &topics(&[(TOPIC1, 1), (TOPIC2, 1)]))
            .unwrap_err();
        assert!(err.0.contains("different topics"), "{err}");
    }
}
