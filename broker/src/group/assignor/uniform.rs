//! Apache's `UniformAssignor`, the consumer protocol's default: balance
//! first, then stickiness (a member keeps what it has where balance
//! allows). Two builders, as Apache's: `homogeneous` for groups whose
//! members all subscribe to the same topics (partition counts differ by
//! one at most), `Heterogeneous` for the others (each topic's partitions
//! balanced over its subscribers, the busiest topics first).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

use super::{
    AssignorError, GroupAssignment, GroupSpec, MemberAssignment, PartitionAssignor,
    SubscribedTopicDescriber, SubscriptionType,
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
            SubscriptionType::Heterogeneous => Heterogeneous::new(group, topics)?.build(),
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
    let mut counts: BTreeMap<Uuid, i32> = BTreeMap::new();
    for topic in subscribed {
        let partitions = topics.num_partitions(*topic).ok_or_else(|| {
            AssignorError(format!(
                "Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
            ))
        })?;
        counts.insert(*topic, partitions.max(0));
    }
    // What each member may keep: its partitions of subscribed topics that
    // exist, each partition once (a valid target assignment has nothing
    // else; a stale one loses the rest).
    let mut taken: BTreeMap<Uuid, Vec<bool>> = counts
        .iter()
        .map(|(t, c)| (*t, vec![false; *c as usize]))
        .collect();
    let mut held: BTreeMap<&String, MemberAssignment> = BTreeMap::new();
    for (id, member) in &group.members {
        let mut keep = MemberAssignment::new();
        for (topic, partitions) in &member.assignment {
            let Some(taken) = taken.get_mut(topic) else {
                continue;
            };
            let valid: BTreeSet<i32> = partitions
                .iter()
                .copied()
                .filter(|p| {
                    usize::try_from(*p)
                        .ok()
                        .and_then(|p| taken.get_mut(p))
                        .is_some_and(|t| !std::mem::replace(t, true))
                })
                .collect();
            if !valid.is_empty() {
                keep.insert(*topic, valid);
            }
        }
        held.insert(id, keep);
    }
    let mut unassigned: Vec<(Uuid, i32)> = taken
        .iter()
        .flat_map(|(topic, taken)| {
            let free = taken.iter().enumerate().filter(|(_, t)| !**t);
            free.map(move |(p, _)| (*topic, p as i32))
        })
        .collect();
    let total: usize = counts.values().map(|c| *c as usize).sum();
    let members = group.members.len();
    let min_quota = total / members;
    let extra = total % members;
    // Who gets one partition more than the minimum: first the members that
    // already hold more, so that a balanced assignment stays as it is when
    // assigned again (Apache's KAFKA-18688), then the others in id order.
    let size = |a: &MemberAssignment| -> usize { a.values().map(BTreeSet::len).sum() };
    let holding_more = held.iter().filter(|(_, a)| size(a) > min_quota);
    let others = held.iter().filter(|(_, a)| size(a) <= min_quota);
    let with_extra: BTreeSet<&String> = holding_more
        .chain(others)
        .map(|(id, _)| *id)
        .take(extra)
        .collect();

    // Keep what each member holds within its quota; the rest goes back to
    // be assigned.
    let mut out = GroupAssignment::new();
    let mut unfilled: Vec<(&str, usize)> = Vec::new();
    for (id, mut kept) in held {
        let mut quota = min_quota + usize::from(with_extra.contains(id));
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

/// Apache's `UniformHeterogeneousAssignmentBuilder`: members numbered in
/// id order; keep every subscribed partition a member holds, give the
/// unassigned ones to the least loaded subscribers topic by topic, then
/// move partitions from the most to the least loaded subscribers of each
/// topic until no topic can improve (at most 16 rounds).
struct Heterogeneous<'a> {
    member_ids: Vec<&'a String>,
    /// Each topic's partition count and subscribers (member numbers).
    topics: BTreeMap<Uuid, (i32, Vec<usize>)>,
    /// Each topic's partition owners (member numbers; `None` unassigned).
    owners: BTreeMap<Uuid, Vec<Option<usize>>>,
    assignment: Vec<MemberAssignment>,
    sizes: Vec<i32>,
}

/// Rounds of balancing over all topics (Apache's `MAX_ITERATION_COUNT`).
const MAX_BALANCE_ROUNDS: usize = 16;

impl<'a> Heterogeneous<'a> {
    fn new(
        group: &'a GroupSpec,
        describer: &dyn SubscribedTopicDescriber,
    ) -> Result<Self, AssignorError> {
        let member_ids: Vec<&String> = group.members.keys().collect();
        let mut topics: BTreeMap<Uuid, (i32, Vec<usize>)> = BTreeMap::new();
        for (index, id) in member_ids.iter().enumerate() {
            for topic in &group.members[*id].subscribed_topic_ids {
                let partitions = describer.num_partitions(*topic).ok_or_else(|| {
                    AssignorError(format!(
                        "Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
                    ))
                })?;
                topics
                    .entry(*topic)
                    .or_insert((partitions, Vec::new()))
                    .1
                    .push(index);
            }
        }
        let owners = topics
            .iter()
            .map(|(t, (n, _))| (*t, vec![None; (*n).max(0) as usize]))
            .collect();
        let mut builder = Heterogeneous {
            assignment: vec![MemberAssignment::new(); member_ids.len()],
            sizes: vec![0; member_ids.len()],
            member_ids,
            topics,
            owners,
        };
        // Keep what each member holds of its subscription.
        for index in 0..builder.member_ids.len() {
            let member = &group.members[builder.member_ids[index]];
            for (topic, partitions) in &member.assignment {
                if !member.subscribed_topic_ids.contains(topic) {
                    continue;
                }
                for p in partitions {
                    let owned = builder.owners.get(topic).and_then(|o| o.get(*p as usize));
                    if owned.is_some_and(Option::is_none) {
                        builder.assign(*topic, *p, index);
                    }
                }
            }
        }
        Ok(builder)
    }

    fn build(mut self) -> Result<GroupAssignment, AssignorError> {
        if self.topics.is_empty() {
            return Ok(GroupAssignment::new());
        }
        let unassigned: BTreeMap<Uuid, Vec<i32>> = self
            .owners
            .iter()
            .map(|(t, owners)| {
                let free = (0..owners.len() as i32).filter(|p| owners[*p as usize].is_none());
                (*t, free.collect::<Vec<_>>())
            })
            .filter(|(_, free)| !free.is_empty())
            .collect();
        let mut balancer = Balancer::default();
        for topic in self.sorted_topics(unassigned.keys().copied()) {
            balancer.initialize(&self.topics[&topic].1, &self.sizes);
            for p in &unassigned[&topic] {
                let member = balancer.next_least_loaded(&self.sizes);
                self.assign(topic, *p, member);
            }
        }
        self.balance();
        Ok(self
            .member_ids
            .iter()
            .map(|id| (*id).clone())
            .zip(self.assignment)
            .collect())
    }

    /// Most partitions per subscriber first, then fewer subscribers, then
    /// by id (Apache's `topicComparator`).
    fn sorted_topics(&self, topics: impl Iterator<Item = Uuid>) -> Vec<Uuid> {
        let mut sorted: Vec<Uuid> = topics.collect();
        sorted.sort_by(|a, b| {
            let (pa, sa) = (self.topics[a].0 as f64, self.topics[a].1.len());
            let (pb, sb) = (self.topics[b].0 as f64, self.topics[b].1.len());
            (pb / sb as f64)
                .total_cmp(&(pa / sa as f64))
                .then(sa.cmp(&sb))
                .then(a.cmp(b))
        });
        sorted
    }

    /// Gives `topic`/`partition` to member `index`, taking it from its
    /// owner.
    fn assign(&mut self, topic: Uuid, partition: i32, index: usize) {
        let owner =
            &mut self.owners.get_mut(&topic).expect("a subscribed topic")[partition as usize];
        if let Some(old) = owner.replace(index) {
            let held = self.assignment[old]
                .get_mut(&topic)
                .expect("its owner holds it");
            held.remove(&partition);
            if held.is_empty() {
                self.assignment[old].remove(&topic);
            }
            self.sizes[old] -= 1;
        }
        self.assignment[index]
            .entry(topic)
            .or_default()
            .insert(partition);
        self.sizes[index] += 1;
    }

    /// Round after round over the topics with two subscribers or more,
    /// until a whole round moved nothing.
    fn balance(&mut self) {
        let shared = self
            .topics
            .iter()
            .filter(|(_, (_, subscribers))| subscribers.len() >= 2)
            .map(|(t, _)| *t);
        let sorted = self.sorted_topics(shared);
        let mut balancer = Balancer::default();
        let mut last_moved: Option<usize> = None;
        for _ in 0..MAX_BALANCE_ROUNDS {
            for (index, topic) in sorted.iter().enumerate() {
                if last_moved == Some(index) {
                    return;
                }
                if self.balance_topic(*topic, &mut balancer) > 0 || last_moved.is_none() {
                    last_moved = Some(index);
                }
            }
        }
    }

    /// Moves `topic`'s partitions from its most to its least loaded
    /// subscribers (by their partition counts over all topics); returns
    /// how many moved.
    fn balance_topic(&mut self, topic: Uuid, balancer: &mut Balancer) -> usize {
        let subscribers = self.topics[&topic].1.clone();
        if balancer.initialize(&subscribers, &self.sizes) <= 1 {
            return 0;
        }
        // Each subscriber's partitions of this topic, as a run of
        // `partitions` (sorted by owner, then partition) it gives up from
        // the end.
        let owners = &self.owners[&topic];
        let mut partitions: Vec<i32> = (0..owners.len() as i32).collect();
        partitions.sort_by_key(|p| (owners[*p as usize], *p));
        let mut runs: HashMap<usize, (usize, usize)> = HashMap::new();
        for (i, p) in partitions.iter().enumerate() {
            if let Some(owner) = owners[*p as usize] {
                runs.entry(owner).or_insert((i, i)).1 = i + 1;
            }
        }
        let mut moved = 0;
        while !balancer.is_balanced() {
            let mut most = None;
            while let Some(m) = balancer.next_most_loaded(&self.sizes) {
                match runs.get(&m) {
                    Some((start, end)) if end > start => {
                        most = Some(m);
                        break;
                    }
                    _ => balancer.exclude_most_loaded(),
                }
            }
            let Some(most) = most else {
                break;
            };
            let run = runs.get_mut(&most).expect("checked above");
            let partition = partitions[run.1 - 1];
            run.1 -= 1;
            let least = balancer.next_least_loaded(&self.sizes);
            if balancer.is_balanced() {
                break;
            }
            self.assign(topic, partition, least);
            moved += 1;
        }
        moved
    }
}

/// Apache's `MemberAssignmentBalancer`: a topic's subscribers sorted by
/// load, handing out the least loaded (a range that grows rightwards as
/// its members each get one more) and the most loaded (a range that grows
/// leftwards as each gives one up), until the two differ by one at most.
/// Loads are read live: the caller moves partitions between calls.
#[derive(Default)]
struct Balancer {
    sorted: Vec<usize>,
    least_end: usize,
    least_count: i32,
    next_least: usize,
    most_start: usize,
    most_end: usize,
    most_count: i32,
    next_most: isize,
}

impl Balancer {
    /// Starts over with `members` (not empty); returns the spread between
    /// the most and the least loaded.
    fn initialize(&mut self, members: &[usize], sizes: &[i32]) -> i32 {
        self.sorted.clear();
        self.sorted.extend_from_slice(members);
        self.sorted.sort_by_key(|m| (sizes[*m], *m));
        let (first, last) = (self.sorted[0], self.sorted[self.sorted.len() - 1]);
        self.least_end = 0;
        self.least_count = sizes[first] - 1;
        self.next_least = 0;
        self.most_start = self.sorted.len();
        self.most_end = self.sorted.len();
        self.most_count = sizes[last] + 1;
        self.next_most = self.sorted.len() as isize - 1;
        sizes[last] - sizes[first]
    }

    /// The member to give the next partition to.
    fn next_least_loaded(&mut self, sizes: &[i32]) -> usize {
        if self.next_least >= self.least_end {
            self.least_count += 1;
            while self.least_end < self.sorted.len()
                && sizes[self.sorted[self.least_end]] == self.least_count
            {
                self.least_end += 1;
            }
            self.next_least = 0;
        }
        let member = self.sorted[self.next_least];
        self.next_least += 1;
        member
    }

    /// The member to take the next partition from, if any is left.
    fn next_most_loaded(&mut self, sizes: &[i32]) -> Option<usize> {
        if self.next_most < self.most_start as isize {
            if self.most_end <= self.most_start && self.most_start > 0 {
                self.most_count = sizes[self.sorted[self.most_start - 1]];
            } else {
                self.most_count -= 1;
            }
            while self.most_start > 0 && sizes[self.sorted[self.most_start - 1]] == self.most_count
            {
                self.most_start -= 1;
            }
            self.next_most = self.most_end as isize - 1;
        }
        if self.next_most < 0 {
            return None;
        }
        let member = self.sorted[self.next_most as usize];
        self.next_most -= 1;
        Some(member)
    }

    /// Takes the member `next_most_loaded` just returned out of the most
    /// loaded range: it has nothing of this topic to give.
    fn exclude_most_loaded(&mut self) {
        let at = (self.next_most + 1) as usize;
        self.sorted.swap(at, self.most_end - 1);
        self.most_end -= 1;
    }

    fn is_balanced(&self) -> bool {
        self.most_count - self.least_count <= 1
    }
}

#[cfg(test)]
mod tests;
