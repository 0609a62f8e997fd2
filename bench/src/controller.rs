//! Controller recompute: 100,000 active groups over 100 brokers, one
//! broker dies. Pure (kaas-shared), so it runs in process.

use std::collections::HashSet;
use std::time::Instant;

use kaas_shared::{recompute, Assignment, BrokerInfo, BrokerState, GroupEntry, Routing};

use crate::report::{emit, median, note, section, Figure, Target};
use crate::Env;

const GROUPS: usize = 100_000;
const BROKERS: i32 = 100;
const DEAD: i32 = 37;

/// Bytes the document takes in the assignment ConfigMap (gzipped JSON plus
/// the plain summary keys), as the operator writes it.
fn configmap_bytes(a: &Assignment) -> usize {
    let (data, binary) = kaas_shared::configmap::encode(a);
    data.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
        + binary
            .iter()
            .map(|(k, v)| k.len() + v.0.len())
            .sum::<usize>()
}

fn brokers(dead: Option<i32>) -> Vec<BrokerInfo> {
    (0..BROKERS)
        .map(|id| BrokerInfo {
            id,
            host: format!("kaas-{id}.kaas-brokers.kaas.svc.cluster.local"),
            port: 9092,
            state: if Some(id) == dead {
                BrokerState::Dead
            } else {
                BrokerState::Alive
            },
            listeners: Vec::new(),
        })
        .collect()
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let reps = if env.quick { 5 } else { 21 };
    section(&format!(
        "Controller recompute: {GROUPS} active groups x {BROKERS} brokers, broker {DEAD} dies ({reps} runs)"
    ));
    let groups: Vec<String> = (0..GROUPS)
        .map(|i| format!("consumer-group-{i:06}"))
        .collect();
    let all_alive = brokers(None);
    let first = recompute(None, &all_alive, &groups);
    let steady = recompute(Some(&first), &all_alive, &groups);
    let observed = brokers(Some(DEAD));

    let mut times = Vec::new();
    let mut floor = Vec::new();
    let mut next = steady.clone();
    for _ in 0..reps {
        let t = Instant::now();
        next = recompute(Some(&steady), &observed, &groups);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        // The floor any recompute pays: route every active group once over
        // the new broker set.
        let t = Instant::now();
        let r = Routing::new(Assignment {
            version: steady.version + 1,
            brokers: observed.clone(),
            consumer_groups: Vec::new(),
            partitions: Vec::new(),
            partitions_version: steady.version + 1,
        });
        let mut sum = 0i64;
        for g in &groups {
            sum += i64::from(r.owner_of_group(g).unwrap_or(-1));
        }
        std::hint::black_box(sum);
        floor.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let doc = serde_json::to_vec(&next)?;
    // The naive document: every active group pinned explicitly.
    let naive = Assignment {
        consumer_groups: {
            let r = Routing::new(next.clone());
            groups
                .iter()
                .filter_map(|g| {
                    r.owner_of_group(g).map(|b| GroupEntry {
                        group_id: g.clone(),
                        broker: b,
                    })
                })
                .collect()
        },
        ..next.clone()
    };
    let naive_len = serde_json::to_vec(&naive)?.len();

    let before = Routing::new(steady.clone());
    let after = Routing::new(next.clone());
    let mut moved = HashSet::new();
    let mut on_dead = HashSet::new();
    for g in &groups {
        let b = before.owner_of_group(g);
        if b == Some(DEAD) {
            on_dead.insert(g.as_str());
        }
        if b != after.owner_of_group(g) {
            moved.insert(g.as_str());
        }
    }
    let exact = moved == on_dead && after.owner_of_group(&groups[0]) != Some(DEAD);
    let survivors: HashSet<i32> = on_dead
        .iter()
        .filter_map(|g| after.owner_of_group(g))
        .collect();

    emit(
        Figure::new("controller: recompute time", median(&times), "ms")
            .baseline("route every group once", median(&floor))
            .target(Target::AtMost(50.0)),
    );
    emit(
        Figure::new(
            "controller: assignment document",
            doc.len() as f64 / 1024.0,
            "KiB",
        )
        .baseline("every group pinned", naive_len as f64 / 1024.0)
        .target(Target::AtMost(1024.0)),
    );
    emit(
        Figure::new(
            "controller: groups that changed owner",
            moved.len() as f64,
            "groups",
        )
        .baseline("groups on the dead broker", on_dead.len() as f64)
        .target(Target::Holds(
            exact,
            "exactly the dead broker's groups".into(),
        )),
    );
    // Not a target: scaling the set from 99 to 100 brokers moves almost
    // every hash slot, so recompute pins each active group where it is.
    let before_scale: Vec<BrokerInfo> = brokers(None)
        .into_iter()
        .take(BROKERS as usize - 1)
        .collect();
    let small = recompute(None, &before_scale, &groups);
    let t = Instant::now();
    let scaled = recompute(Some(&small), &all_alive, &groups);
    let scale_ms = t.elapsed().as_secs_f64() * 1000.0;
    let scaled_len = serde_json::to_vec(&scaled)?.len();
    emit(
        Figure::new(
            "controller: JSON after scale-up 99 -> 100",
            scaled_len as f64 / 1024.0,
            "KiB",
        )
        .baseline("ConfigMap limit", 1024.0),
    );
    emit(
        Figure::new(
            "controller: ConfigMap payload after scale-up",
            configmap_bytes(&scaled) as f64 / 1024.0,
            "KiB",
        )
        .baseline("ConfigMap limit", 1024.0),
    );
    note(format!(
        "scale-up 99 -> 100 with {GROUPS} active groups: recompute {scale_ms:.1} ms, {} explicit entries",
        scaled.consumer_groups.len()
    ));
    note(format!(
        "the dead broker's {} groups spread over {} surviving brokers; document version {} -> {}, {} explicit entries",
        on_dead.len(),
        survivors.len(),
        steady.version,
        next.version,
        next.consumer_groups.len()
    ));
    Ok(())
}
