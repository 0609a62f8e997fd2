//! Memory: heap bytes per idle loaded group and per member, counted by the
//! bench's allocator around a real group manager and group log store
//! driven in process with a manual clock (no network, so no client buffers
//! are counted).
//!
//! Idle groups: 100,000 group logs (each with 4 committed offsets) are
//! written first, then every group is loaded by the manager as a request
//! would load it; then the clock moves past the idle time and the manager
//! unloads them. Members: one group of 1,000 members joins and syncs.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use kaas_broker::coordinator::clock::ManualClock;
use kaas_broker::group::core::{
    GroupCoordinatorConfig, GroupState, JoinGroupRequest, OffsetAndMetadata, Protocol, Response,
    SyncGroupRequest,
};
use kaas_broker::group::manager::{GroupManager, GroupManagerConfig};
use kaas_broker::storage::group_log::GroupLogStore;
use kaas_shared::{Assignment, BrokerInfo, Routing};
use tokio::sync::watch;

use crate::report::{emit, note, section, Figure, Target};

/// A classic group reads no topics.
static NO_TOPICS: std::collections::BTreeMap<
    String,
    kaas_broker::group::consumer::records::TopicMetadata,
> = std::collections::BTreeMap::new();
use crate::sys::live_heap_bytes;
use crate::Env;

const TOPIC: &str = "orders";
const OFFSETS_PER_GROUP: i32 = 4;
const IDLE_MS: u64 = 60_000;

type RoutingSender = watch::Sender<Option<Arc<Routing>>>;

/// A group manager that owns every group; the routing sender comes back
/// with it, since the manager stops following routing once it is dropped.
fn manager(
    dir: &std::path::Path,
    clock: Arc<ManualClock>,
) -> anyhow::Result<(Arc<GroupManager>, RoutingSender)> {
    let routing = Routing::new(Assignment::of_brokers(
        1,
        [BrokerInfo::alive(0, "127.0.0.1", 9092)],
    ));
    let (tx, rx) = watch::channel(Some(Arc::new(routing)));
    let config = GroupManagerConfig {
        core: GroupCoordinatorConfig {
            initial_rebalance_delay_ms: 0,
            ..Default::default()
        },
        idle_unload_ms: IDLE_MS,
        ..Default::default()
    };
    let store = Arc::new(GroupLogStore::new(dir)?);
    Ok((GroupManager::new(0, config, store, clock, rx), tx))
}

fn group_id(i: usize) -> String {
    format!("consumer-group-{i:06}")
}

/// Resident set size of this process (VmRSS).
fn rss_bytes() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<i64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn mib(b: i64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let groups = if env.quick { 20_000 } else { 100_000 };
    let members = 1000;
    section(&format!(
        "Memory: {groups} idle groups ({OFFSETS_PER_GROUP} offsets each) loaded then unloaded; one group of {members} members"
    ));
    let dir = env.dir("memory");
    let t = Instant::now();
    write_logs(&dir, groups).await?;
    println!(
        "   wrote {groups} group logs in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let clock = Arc::new(ManualClock::new(1_000_000_000));
    let (m, _routing) = manager(&dir, clock.clone())?;
    let before = live_heap_bytes();
    let rss_before = rss_bytes();
    let t = Instant::now();
    let failures = futures::stream::iter(0..groups)
        .map(|i| {
            let m = m.clone();
            async move { m.prepare(&group_id(i)).await.is_err() }
        })
        .buffer_unordered(64)
        .filter(|failed| futures::future::ready(*failed))
        .count()
        .await;
    let resident = m.read(|c| c.resident_groups().len());
    let loaded = live_heap_bytes();
    let rss_loaded = rss_bytes();
    println!(
        "   loaded {resident} groups in {:.1} s ({failures} loads refused)",
        t.elapsed().as_secs_f64()
    );
    anyhow::ensure!(
        resident == groups,
        "only {resident} of {groups} groups loaded ({failures} refused)"
    );
    clock.advance(IDLE_MS + 1);
    m.unload_idle_groups();
    let unloaded = live_heap_bytes();
    let still = m.read(|c| c.resident_groups().len());

    let per_group = (loaded - before) as f64 / groups as f64;
    let payload = group_id(0).len() + OFFSETS_PER_GROUP as usize * (TOPIC.len() + 4 + 8 + 8);
    emit(
        Figure::new("memory: heap per idle loaded group", per_group, "bytes")
            .baseline("payload (id + offsets)", payload as f64),
    );
    let total_100k = per_group * 100_000.0;
    emit(
        Figure::new(
            if groups == 100_000 {
                "memory: 100,000 idle groups".to_string()
            } else {
                format!("memory: 100,000 idle groups (extrapolated from {groups})")
            },
            mib(total_100k as i64),
            "MiB",
        )
        .baseline("payload", mib(payload as i64 * 100_000))
        .target(Target::AtMost(200.0)),
    );
    emit(
        Figure::new(
            "memory: RSS growth, idle groups loaded",
            mib(rss_loaded - rss_before),
            "MiB",
        )
        .baseline("heap counted", mib(loaded - before)),
    );
    let kept = unloaded - before;
    let returned = 1.0 - kept as f64 / (loaded - before).max(1) as f64;
    emit(
        Figure::new("memory: heap left after idle unload", mib(kept), "MiB")
            .baseline("heap of the loaded groups", mib(loaded - before))
            .target(Target::Holds(
                still == 0 && returned >= 0.95,
                ">= 95% returned, 0 resident".into(),
            )),
    );
    drop(m);

    // Members.
    let clock = Arc::new(ManualClock::new(2_000_000_000));
    let dir = env.dir("memory-members");
    let (m, _routing) = manager(&dir, clock)?;
    // Warm the manager's maps with one group so the measured one pays only
    // for itself.
    form_group(&m, "warm-up", 1).await?;
    let before = live_heap_bytes();
    let payload_per_member = form_group(&m, "bench-members", members).await?;
    let after = live_heap_bytes();
    let per_member = (after - before) as f64 / members as f64;
    emit(
        Figure::new(
            "memory: heap per member (Stable group)",
            per_member,
            "bytes",
        )
        .baseline(
            "payload (ids, host, subscription, assignment)",
            payload_per_member,
        ),
    );
    note(format!(
        "heap counted by the bench's allocator; {} groups loaded, {} MiB before, {} MiB loaded, {} MiB after unload",
        groups,
        crate::report::num(mib(before)),
        crate::report::num(mib(loaded)),
        crate::report::num(mib(unloaded))
    ));
    Ok(())
}

/// Writes one log per group through the store (appends are written at call
/// time; the fsync is skipped by not awaiting it: setup only).
async fn write_logs(dir: &std::path::Path, groups: usize) -> anyhow::Result<()> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let store = GroupLogStore::new(&dir)?;
        for i in 0..groups {
            let id = group_id(i);
            let offsets: Vec<(String, i32, OffsetAndMetadata)> = (0..OFFSETS_PER_GROUP)
                .map(|p| {
                    (
                        TOPIC.to_string(),
                        p,
                        OffsetAndMetadata {
                            offset: 1_000_000 + i64::from(p),
                            leader_epoch: None,
                            metadata: String::new(),
                            commit_timestamp_ms: 1_000_000_000,
                            expire_timestamp_ms: None,
                        },
                    )
                })
                .collect();
            drop(store.commit_offsets(&id, &offsets));
            store.close(&id);
        }
        anyhow::Ok(())
    })
    .await?
}

/// Joins `n` members (JoinGroup v3: no member id round trip) and syncs them;
/// returns the payload bytes per member.
async fn form_group(m: &Arc<GroupManager>, group: &str, n: usize) -> anyhow::Result<f64> {
    let subscription =
        Bytes::from_static(b"\x00\x01\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff");
    let mut joins = Vec::new();
    for i in 0..n {
        let req = JoinGroupRequest {
            group_id: group.to_string(),
            session_timeout_ms: 45_000,
            rebalance_timeout_ms: 60_000,
            member_id: String::new(),
            group_instance_id: None,
            protocol_type: "consumer".into(),
            protocols: vec![Protocol::new("range", subscription.clone())],
            reason: None,
            api_version: 3,
            client_id: format!("consumer-{i}"),
            client_host: "/127.0.0.1".into(),
        };
        let m = m.clone();
        let g = group.to_string();
        joins.push(tokio::spawn(async move {
            m.call(&g, |core, token, now| {
                core.join_group(token, req, &NO_TOPICS, now)
            })
            .await
        }));
    }
    // Every join parked: fire the (zero) initial delay until the join completes.
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    while m.read(|c| c.group(group).map_or(0, |g| g.num_awaiting_join())) < n {
        anyhow::ensure!(Instant::now() < deadline, "joins did not all park");
        tokio::task::yield_now().await;
    }
    while m.read(|c| c.group(group).map(|g| g.state())) == Some(GroupState::PreparingRebalance) {
        anyhow::ensure!(Instant::now() < deadline, "join phase did not complete");
        let fired = m.apply(|core, now| match core.next_due_timer(now) {
            Some(k) => (true, core.on_timer(k, now)),
            None => (false, Vec::new()),
        });
        if !fired {
            tokio::task::yield_now().await;
        }
    }
    let mut responses = Vec::new();
    for j in joins {
        match j.await? {
            Some(Response::Join(r)) if r.error_code == 0 => responses.push(r),
            other => anyhow::bail!("JoinGroup answered {other:?}"),
        }
    }
    let generation = responses[0].generation_id;
    let mut payload = 0usize;
    let mut syncs = Vec::new();
    for r in &responses {
        let assignments: Vec<(String, Bytes)> = if r.leader == r.member_id {
            r.members
                .iter()
                .enumerate()
                .map(|(i, mm)| {
                    let mut a = b"\x00\x01\x00\x00\x00\x01\x00\x06orders\x00\x00\x00\x01".to_vec();
                    a.extend_from_slice(&(i as i32).to_be_bytes());
                    a.extend_from_slice(b"\xff\xff\xff\xff");
                    (mm.member_id.clone(), Bytes::from(a))
                })
                .collect()
        } else {
            Vec::new()
        };
        for (id, a) in &assignments {
            payload +=
                id.len() + a.len() + subscription.len() + "consumer-000".len() + "/127.0.0.1".len();
        }
        let req = SyncGroupRequest {
            group_id: group.to_string(),
            generation_id: generation,
            member_id: r.member_id.clone(),
            group_instance_id: None,
            protocol_type: None,
            protocol_name: None,
            assignments,
            api_version: 3,
        };
        let m = m.clone();
        let g = group.to_string();
        syncs.push(tokio::spawn(async move {
            m.call(&g, |core, token, now| core.sync_group(token, req, now))
                .await
        }));
    }
    for s in syncs {
        match s.await? {
            Some(Response::Sync(r)) if r.error_code == 0 => {}
            other => anyhow::bail!("SyncGroup answered {other:?}"),
        }
    }
    drop(responses);
    anyhow::ensure!(
        m.read(|c| c.group(group).map(|g| g.state())) == Some(GroupState::Stable),
        "group not Stable"
    );
    Ok(payload as f64 / n as f64)
}
