//! Apache's `RangeAssignor` of the consumer protocol: each topic's
//! partitions in contiguous ranges over its subscribers in a fixed order
//! (static members by instance id first, then the others by member id), so
//! co-partitioned topics give a member the same partition numbers. Not
//! sticky, as Apache's: the ranges follow the order alone.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::{
    AssignorError, GroupAssignment, GroupSpec, MemberAssignment, PartitionAssignor,
    SubscribedTopicDescriber, SubscriptionType,
};

pub struct RangeAssignor;

/// One topic's ranges as they are handed out.
struct TopicRanges {
    partitions: i32,
    subscribers: i32,
    /// Set at the first range: the smaller range and how many get one more.
    quota: Option<(i32, i32)>,
    next: i32,
}

impl TopicRanges {
    /// The next subscriber's range of this topic, if any is left.
    fn next_range(&mut self) -> std::ops::Range<i32> {
        let (min, extra) = self.quota.get_or_insert((
            self.partitions / self.subscribers,
            self.partitions % self.subscribers,
        ));
        let mut quota = *min;
        if *extra > 0 {
            quota += 1;
            *extra -= 1;
        }
        let start = self.next;
        let end = (start + quota).min(self.partitions);
        self.next = end;
        start..end
    }
}

/// Static members by instance id, then the others by member id.
fn sorted_members(group: &GroupSpec) -> Vec<&str> {
    let mut ids: Vec<&str> = group.members.keys().map(String::as_str).collect();
    ids.sort_by(|a, b| {
        let (ia, ib) = (
            &group.members[*a].instance_id,
            &group.members[*b].instance_id,
        );
        match (ia, ib) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.cmp(b),
        }
    });
    ids
}

impl PartitionAssignor for RangeAssignor {
    fn name(&self) -> &'static str {
        "range"
    }

    fn assign(
        &self,
        group: &GroupSpec,
        topics: &dyn SubscribedTopicDescriber,
    ) -> Result<GroupAssignment, AssignorError> {
        let members = sorted_members(group);
        let mut ranges: BTreeMap<Uuid, TopicRanges> = BTreeMap::new();
        for id in &members {
            for topic in &group.members[*id].subscribed_topic_ids {
                if let Some(r) = ranges.get_mut(topic) {
                    r.subscribers += 1;
                    continue;
                }
                let partitions = topics.num_partitions(*topic).ok_or_else(|| {
                    AssignorError(format!(
                        "Member {id} is subscribed to topic {topic} which does not exist"
                    ))
                })?;
                ranges.insert(
                    *topic,
                    TopicRanges {
                        partitions,
                        subscribers: 1,
                        quota: None,
                        next: 0,
                    },
                );
            }
        }
        let mut out = GroupAssignment::new();
        for id in members {
            let mut assignment = MemberAssignment::new();
            let subscribed = &group.members[id].subscribed_topic_ids;
            let mut take = |topic: &Uuid, r: &mut TopicRanges| {
                let range = r.next_range();
                if !range.is_empty() {
                    assignment.insert(*topic, range.collect());
                }
            };
            if group.subscription_type == SubscriptionType::Homogeneous {
                // Every member has every topic: no lookup per topic.
                for (topic, r) in ranges.iter_mut() {
                    take(topic, r);
                }
            } else {
                for topic in subscribed {
                    take(topic, ranges.get_mut(topic).expect("counted above"));
                }
            }
            out.insert(id.to_string(), assignment);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
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
    fn test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics(
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
    fn test_reassignment_when_one_member_removed_after_initial_assignment_with_two_members_two_topics(
    ) {
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
}
