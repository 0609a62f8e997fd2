//! The consumer protocol's server-side assignors (KIP-848), in the shapes
//! of Apache's `ServerSideAssignorBenchmark`: `memberCount` members
//! subscribed to `topicCount` topics of `memberCount x ratio / topicCount`
//! partitions (all of them, or for heterogeneous subscriptions 5 buckets
//! of members each on its own slice of the topics); FULL is a first
//! assignment, INCREMENTAL one member joining a group assigned by the same
//! assignor. The uniform assignor against the
//! range assignor on the same group, in the same run.

use std::collections::BTreeMap;
use std::time::Instant;

use kaas_broker::group::assignor::range::RangeAssignor;
use kaas_broker::group::assignor::uniform::UniformAssignor;
use kaas_broker::group::assignor::{GroupSpec, MemberSubscription, PartitionAssignor};
use uuid::Uuid;

use crate::report::{emit, median, note, section, Figure};
use crate::Env;

/// Apache's `MAX_BUCKET_COUNT`: heterogeneous members in this many
/// buckets, each subscribed to its own slice of the topics.
const BUCKETS: usize = 5;

/// A group as Apache's benchmark builds it (homogeneous: everyone on every
/// topic; heterogeneous: buckets); with `incremental`, all but the last
/// member hold `assignor`'s assignment and a new member (subscribed as the
/// one before it) has nothing.
fn group(
    members: usize,
    ratio: usize,
    topic_count: usize,
    heterogeneous: bool,
    incremental: Option<&dyn PartitionAssignor>,
) -> (GroupSpec, BTreeMap<Uuid, i32>) {
    let per_topic = (members * ratio / topic_count) as i32;
    let ids: Vec<Uuid> = (0..topic_count)
        .map(|i| Uuid::from_u128(i as u128 + 1))
        .collect();
    let topics: BTreeMap<Uuid, i32> = ids.iter().map(|t| (*t, per_topic)).collect();
    let assigned = if incremental.is_some() {
        members - 1
    } else {
        members
    };
    let topics_per_bucket = topic_count.div_ceil(BUCKETS);
    let members_per_bucket = assigned.div_ceil(BUCKETS);
    let subscription = |i: usize| {
        let subscribed = match heterogeneous {
            false => ids.iter().copied().collect(),
            true => {
                let bucket = i / members_per_bucket;
                let from = (bucket * topics_per_bucket).min(topic_count);
                let to = ((bucket + 1) * topics_per_bucket).min(topic_count);
                ids[from..to].iter().copied().collect()
            }
        };
        MemberSubscription {
            subscribed_topic_ids: subscribed,
            ..Default::default()
        }
    };
    let mut spec: BTreeMap<String, MemberSubscription> = (0..assigned)
        .map(|i| (format!("member{i}"), subscription(i)))
        .collect();
    if let Some(assignor) = incremental {
        let first = assignor
            .assign(&GroupSpec::new(spec.clone()), &topics)
            .expect("the group is assigned");
        for (id, assignment) in first {
            spec.get_mut(&id).expect("a member").assignment = assignment;
        }
        spec.insert("newMember".into(), subscription(assigned - 1));
    }
    (GroupSpec::new(spec), topics)
}

/// Median milliseconds of one assignment over `rounds`.
fn time_ms(
    assignor: &dyn PartitionAssignor,
    group: &GroupSpec,
    topics: &BTreeMap<Uuid, i32>,
    rounds: usize,
) -> f64 {
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        let out = assignor.assign(group, topics).expect("assigned");
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
        std::hint::black_box(out);
    }
    median(&samples)
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let rounds = if env.quick { 3 } else { 15 };
    section(&format!(
        "Server-side assignors (KIP-848): Apache's ServerSideAssignorBenchmark shapes, median of {rounds} \
         assignments"
    ));
    let shapes: &[(usize, usize, usize)] = if env.quick {
        &[(1_000, 10, 100)]
    } else {
        &[(1_000, 10, 100), (10_000, 10, 1_000)]
    };
    for &(members, ratio, topic_count) in shapes {
        for heterogeneous in [false, true] {
            let subscriptions = match heterogeneous {
                false => "HOMOGENEOUS",
                true => "HETEROGENEOUS",
            };
            for incremental in [false, true] {
                let kind = if incremental { "INCREMENTAL" } else { "FULL" };
                let shape = |assignor: &dyn PartitionAssignor| {
                    let previous = incremental.then_some(assignor);
                    group(members, ratio, topic_count, heterogeneous, previous)
                };
                let (uniform_group, topics) = shape(&UniformAssignor);
                let (range_group, _) = shape(&RangeAssignor);
                let uniform = time_ms(&UniformAssignor, &uniform_group, &topics, rounds);
                let range = time_ms(&RangeAssignor, &range_group, &topics, rounds);
                let partitions = members * ratio;
                emit(
                    Figure::new(
                        format!(
                            "assignor: uniform, {members} members x {partitions} partitions \
                             ({topic_count} topics), {subscriptions}, {kind}"
                        ),
                        uniform,
                        "ms",
                    )
                    .baseline("range", range),
                );
            }
        }
    }
    note(
        "Apache's figures (ServerSideAssignorBenchmark, UNIFORM, HOMOGENEOUS, not rack aware, JMH \
         on other hardware, KAFKA-18688): 10,000 members x 10 partitions each, FULL 2.6-3.3 ms \
         over 10-1,000 topics",
    );
    Ok(())
}
