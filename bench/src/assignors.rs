//! The consumer protocol's server-side assignors (KIP-848), in the shapes
//! of Apache's `ServerSideAssignorBenchmark`: `memberCount` members all
//! subscribed to `topicCount` topics of `memberCount x ratio / topicCount`
//! partitions; FULL is a first assignment, INCREMENTAL one member joining a
//! group assigned by the same assignor. The uniform assignor against the
//! range assignor on the same group, in the same run.

use std::collections::BTreeMap;
use std::time::Instant;

use kaas_broker::group::assignor::range::RangeAssignor;
use kaas_broker::group::assignor::uniform::UniformAssignor;
use kaas_broker::group::assignor::{GroupSpec, MemberSubscription, PartitionAssignor};
use uuid::Uuid;

use crate::report::{emit, median, note, section, Figure};
use crate::Env;

/// A homogeneous group as Apache's benchmark builds it; with
/// `incremental`, all but the last member hold `assignor`'s assignment
/// and the last has nothing.
fn group(
    members: usize,
    ratio: usize,
    topic_count: usize,
    incremental: Option<&dyn PartitionAssignor>,
) -> (GroupSpec, BTreeMap<Uuid, i32>) {
    let per_topic = (members * ratio / topic_count) as i32;
    let topics: BTreeMap<Uuid, i32> = (0..topic_count)
        .map(|i| (Uuid::from_u128(i as u128 + 1), per_topic))
        .collect();
    let subscription = MemberSubscription {
        subscribed_topic_ids: topics.keys().copied().collect(),
        ..Default::default()
    };
    let mut spec: BTreeMap<String, MemberSubscription> = (0..members)
        .map(|i| (format!("member{i}"), subscription.clone()))
        .collect();
    if let Some(assignor) = incremental {
        spec.remove(&format!("member{}", members - 1));
        let first = assignor
            .assign(&GroupSpec::new(spec.clone()), &topics)
            .expect("a homogeneous group is assigned");
        for (id, assignment) in first {
            spec.get_mut(&id).expect("a member").assignment = assignment;
        }
        spec.insert("newMember".into(), subscription);
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
        "Server-side assignors (KIP-848): Apache's ServerSideAssignorBenchmark shapes, homogeneous \
         subscriptions, median of {rounds} assignments"
    ));
    let shapes: &[(usize, usize, usize)] = if env.quick {
        &[(1_000, 10, 100)]
    } else {
        &[(1_000, 10, 100), (10_000, 10, 1_000)]
    };
    for &(members, ratio, topic_count) in shapes {
        for incremental in [false, true] {
            let kind = if incremental { "INCREMENTAL" } else { "FULL" };
            let (uniform_group, topics) = group(
                members,
                ratio,
                topic_count,
                incremental.then_some(&UniformAssignor as _),
            );
            let (range_group, _) = group(
                members,
                ratio,
                topic_count,
                incremental.then_some(&RangeAssignor as _),
            );
            let uniform = time_ms(&UniformAssignor, &uniform_group, &topics, rounds);
            let range = time_ms(&RangeAssignor, &range_group, &topics, rounds);
            emit(
                Figure::new(
                    format!(
                        "assignor: uniform, {members} members x {} partitions ({topic_count} topics), {kind}",
                        members * ratio
                    ),
                    uniform,
                    "ms",
                )
                .baseline("range", range),
            );
        }
    }
    note(
        "Apache's figures (ServerSideAssignorBenchmark, UNIFORM, HOMOGENEOUS, not rack aware, JMH \
         on other hardware, KAFKA-18688): 10,000 members x 10 partitions each, FULL 2.6-3.3 ms \
         over 10-1,000 topics",
    );
    Ok(())
}
