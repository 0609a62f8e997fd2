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
mod tests;
