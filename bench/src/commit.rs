//! OffsetCommit durability throughput: committers over groups with many
//! partitions each, every acknowledgement fsynced.
//!
//! Measured in the same run, interleaved round by round:
//! - kaas: OffsetCommit requests over the wire to a local broker;
//! - baseline (a), the seed's design: rewrite the group's whole JSON file
//!   (tmp + fsync + rename) per commit, under a per-group lock;
//! - limit (b): append the same bytes a kaas commit appends, to one file per
//!   group, and fdatasync, with group commit per file (appends waiting while
//!   a file syncs share the next fdatasync), which is how kaas batches;
//! - one fdatasync on an idle disk (one thread, one file).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use kaas_client::KafkaClient;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::report::{self, emit, median, note, percentile, Figure, Target};
use crate::sys::Rng;
use crate::wire::RawConn;
use crate::Env;

const TOPIC: &str = "orders";
const COMMIT_VERSION: i16 = 8;

#[derive(Clone, Copy)]
struct Params {
    groups: usize,
    partitions: usize,
    committers: usize,
    per_commit: usize,
    rounds: usize,
    window: Duration,
}

/// What one timed window produced.
#[derive(Default)]
struct Window {
    commits: u64,
    elapsed: Duration,
    /// Per-commit latency, microseconds.
    latencies: Vec<u64>,
    /// CPU time the machine under test used in the window (kaas: broker
    /// and clients; baselines: their threads).
    cpu: Duration,
}

impl Window {
    fn rate(&self) -> f64 {
        self.commits as f64 / self.elapsed.as_secs_f64()
    }

    fn merge(parts: Vec<(u64, Vec<u64>)>, elapsed: Duration) -> Window {
        let mut w = Window {
            elapsed,
            ..Default::default()
        };
        for (n, lat) in parts {
            w.commits += n;
            w.latencies.extend(lat);
        }
        w.latencies.sort_unstable();
        w
    }

    fn cpu_us_per_op(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.commits.max(1) as f64
    }

    fn cores(&self) -> f64 {
        self.cpu.as_secs_f64() / self.elapsed.as_secs_f64()
    }

    fn p(&self, pct: f64) -> f64 {
        percentile(&self.latencies, pct) as f64 / 1000.0
    }
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let p = Params {
        groups: 1000,
        partitions: 1000,
        // Profiling aid: KAAS_BENCH_COMMITTERS changes the load.
        committers: std::env::var("KAAS_BENCH_COMMITTERS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(100),
        per_commit: 10,
        rounds: if env.quick { 1 } else { 3 },
        window: Duration::from_secs(if env.quick { 2 } else { 4 }),
    };
    report::section(&format!(
        "OffsetCommit durability: {} committers, {} groups x {} partitions, {} partitions per commit, {} rounds of {} s",
        p.committers,
        p.groups,
        p.partitions,
        p.per_commit,
        p.rounds,
        p.window.as_secs()
    ));

    let server = crate::wire::ChildServer::kaas(1, &env.dir("commit-kaas"))?;
    let addr = server.bootstrap.clone();
    kaas_client::KafkaClient::connect(&addr, Duration::from_secs(5))
        .await?
        .create_topic(TOPIC, p.partitions as i32)
        .await?;
    let t = Instant::now();
    prefill_kaas(&addr, &p).await?;
    println!(
        "   prefilled kaas: {} groups x {} partitions in {:.1} s",
        p.groups,
        p.partitions,
        t.elapsed().as_secs_f64()
    );
    let json_dir = env.dir("commit-json");
    let json = Arc::new(JsonRewrite::new(&json_dir, &p)?);
    let raw_dir = env.dir("commit-raw");
    let record = delta_record_bytes(p.per_commit);
    let raw = Arc::new(RawAppend::new(&raw_dir, p.groups)?);
    let idle_file = raw_dir.join("idle.log");

    let mut kaas = Vec::new();
    let mut rewrite = Vec::new();
    let mut limit = Vec::new();
    let mut idle = Vec::new();
    // Profiling aid: only the kaas windows.
    let only_kaas = std::env::var_os("KAAS_BENCH_ONLY_KAAS").is_some();
    let cpu = || crate::sys::own_cpu() + server.cpu();
    let settle_dir = env.scratch.path().to_path_buf();
    for round in 0..p.rounds {
        // Each window starts on a settled disk (the previous window's
        // writeback flushed), and the order rotates every round so no
        // system always runs in another's wake.
        let mut k = Window::default();
        let mut a = Window::default();
        let mut b = Window::default();
        for which in (0..3).map(|i| (i + round) % 3) {
            if only_kaas && which != 0 {
                continue;
            }
            crate::sys::settle_disk(&settle_dir);
            let c0 = cpu();
            match which {
                0 => {
                    k = kaas_window(&addr, &p, round as u64).await?;
                    k.cpu = cpu() - c0;
                }
                1 => {
                    let json = json.clone();
                    let (c, g, pc, w) = (p.committers, p.groups, p.per_commit, p.window);
                    a = tokio::task::spawn_blocking(move || json.window(c, g, pc, w, round as u64))
                        .await??;
                    a.cpu = cpu() - c0;
                }
                _ => {
                    let raw = raw.clone();
                    let record = record.clone();
                    let (c, g, w) = (p.committers, p.groups, p.window);
                    b = tokio::task::spawn_blocking(move || {
                        raw.window(c, g, &record, w, round as u64)
                    })
                    .await??;
                    b.cpu = cpu() - c0;
                }
            }
        }
        if only_kaas {
            println!(
                "   kaas {:.0}/s, p50 {:.2} ms, p99 {:.2} ms, {:.0} CPU-us per commit, {:.2} cores busy",
                k.rate(),
                k.p(50.0),
                k.p(99.0),
                k.cpu_us_per_op(),
                k.cores()
            );
            continue;
        }
        crate::sys::settle_disk(&settle_dir);
        let f = {
            let path = idle_file.clone();
            let record = record.clone();
            tokio::task::spawn_blocking(move || idle_fdatasync(&path, &record, 200)).await??
        };
        println!(
            "   round {}: kaas {:.0}/s (p99 {:.2} ms, {:.0} CPU-us/commit, {:.2} cores), json-rewrite {:.0}/s ({:.0} CPU-us), append+fdatasync {:.0}/s (p50 {:.2} ms, {:.0} CPU-us), idle fdatasync {:.2} ms, load {}",
            round + 1,
            k.rate(),
            k.p(99.0),
            k.cpu_us_per_op(),
            k.cores(),
            a.rate(),
            a.cpu_us_per_op(),
            b.rate(),
            b.p(50.0),
            b.cpu_us_per_op(),
            f,
            crate::sys::load_average()
        );
        kaas.push(k);
        rewrite.push(a);
        limit.push(b);
        idle.push(f);
    }
    drop(server);

    let rate = |ws: &[Window]| median(&ws.iter().map(Window::rate).collect::<Vec<_>>());
    let pct = |ws: &[Window], q: f64| median(&ws.iter().map(|w| w.p(q)).collect::<Vec<_>>());
    let kaas_rate = rate(&kaas);
    emit(
        Figure::new(
            "commit: kaas commits/s vs JSON rewrite",
            kaas_rate,
            "commits/s",
        )
        .baseline("json tmp+fsync+rename", rate(&rewrite))
        .target(Target::RatioAtLeast(20.0)),
    );
    emit(
        Figure::new(
            "commit: kaas commits/s vs raw limit",
            kaas_rate,
            "commits/s",
        )
        .baseline("append+fdatasync, group commit", rate(&limit))
        .target(Target::RatioAtLeast(0.7)),
    );
    emit(
        Figure::new("commit: kaas p99 latency", pct(&kaas, 99.0), "ms")
            .baseline("fdatasync p50 at the same load", pct(&limit, 50.0))
            .target(Target::RatioAtMost(3.0)),
    );
    emit(
        Figure::new(
            "commit: kaas p99 latency vs idle fdatasync",
            pct(&kaas, 99.0),
            "ms",
        )
        .baseline("one fdatasync, idle disk", median(&idle)),
    );
    emit(
        Figure::new("commit: kaas p50 latency", pct(&kaas, 50.0), "ms")
            .baseline("fdatasync p50 at the same load", pct(&limit, 50.0)),
    );
    emit(
        Figure::new(
            "commit: raw limit's own p99 latency",
            pct(&limit, 99.0),
            "ms",
        )
        .baseline("fdatasync p50 at the same load", pct(&limit, 50.0)),
    );
    let cpu_per = |ws: &[Window]| median(&ws.iter().map(Window::cpu_us_per_op).collect::<Vec<_>>());
    emit(
        Figure::new(
            "commit: kaas CPU per commit (broker + client)",
            cpu_per(&kaas),
            "CPU-us",
        )
        .baseline("append+fdatasync", cpu_per(&limit)),
    );
    emit(
        Figure::new(
            "commit: JSON rewrite CPU per commit",
            cpu_per(&rewrite),
            "CPU-us",
        )
        .baseline("append+fdatasync", cpu_per(&limit)),
    );
    emit(
        Figure::new(
            "commit: JSON rewrite p99 latency",
            pct(&rewrite, 99.0),
            "ms",
        )
        .baseline("fdatasync p50 at the same load", pct(&limit, 50.0)),
    );
    note(format!(
        "{} committers keep {} commits in flight, so by Little's law latency >= {} / throughput: \
         the fair unit for latency is one fdatasync under that same load (limit b), not on an idle disk",
        p.committers, p.committers, p.committers
    ));
    match kaas_testkit::gluster::Mounts::from_env() {
        Some(m) => on_network_volume(&p, &m.a, &record).await?,
        None => note(
            "commit on GlusterFS skipped: no mount (eval \"$(scripts/glusterfs-testenv up)\" \
             sets KAAS_GLUSTER_A)",
        ),
    }
    Ok(())
}

/// The same load with the broker's data on a GlusterFS mount (issue #32),
/// beside that mount's own raw limit, in this run: rounds alternate.
async fn on_network_volume(p: &Params, mount: &Path, record: &Arc<Vec<u8>>) -> anyhow::Result<()> {
    let scratch = tempfile::Builder::new()
        .prefix("kaas-bench-commit-")
        .tempdir_in(mount)?;
    let (kaas_dir, raw_dir) = (scratch.path().join("kaas"), scratch.path().join("raw"));
    std::fs::create_dir_all(&kaas_dir)?;
    std::fs::create_dir_all(&raw_dir)?;
    let server = crate::wire::ChildServer::kaas(1, &kaas_dir)?;
    let addr = server.bootstrap.clone();
    kaas_client::KafkaClient::connect(&addr, Duration::from_secs(5))
        .await?
        .create_topic(TOPIC, p.partitions as i32)
        .await?;
    prefill_kaas(&addr, p).await?;
    let raw = Arc::new(RawAppend::new(&raw_dir, p.groups)?);
    let (mut kaas, mut limit) = (Vec::new(), Vec::new());
    for round in 0..p.rounds {
        for which in (0..2).map(|i| (i + round) % 2) {
            crate::sys::settle_disk(scratch.path());
            if which == 0 {
                kaas.push(kaas_window(&addr, p, round as u64).await?);
            } else {
                let (raw, record) = (raw.clone(), record.clone());
                let (c, g, w) = (p.committers, p.groups, p.window);
                limit.push(
                    tokio::task::spawn_blocking(move || raw.window(c, g, &record, w, round as u64))
                        .await??,
                );
            }
        }
    }
    drop(server);
    let rate = |ws: &[Window]| median(&ws.iter().map(Window::rate).collect::<Vec<_>>());
    let pct = |ws: &[Window], q: f64| median(&ws.iter().map(|w| w.p(q)).collect::<Vec<_>>());
    emit(
        Figure::new(
            "commit on GlusterFS: kaas commits/s vs raw limit there",
            rate(&kaas),
            "commits/s",
        )
        .baseline("append+fdatasync on the mount", rate(&limit)),
    );
    emit(
        Figure::new(
            "commit on GlusterFS: kaas p99 latency",
            pct(&kaas, 99.0),
            "ms",
        )
        .baseline("fdatasync p50 on the mount, same load", pct(&limit, 50.0)),
    );
    Ok(())
}

fn commit_request(
    group: usize,
    partitions: std::ops::Range<usize>,
    offset: i64,
) -> OffsetCommitRequest {
    commit_request_for(StrBytes::from_string(group_id(group)), partitions, offset)
}

fn commit_request_for(
    group: StrBytes,
    partitions: std::ops::Range<usize>,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(group))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::from_static_str(""))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partitions(
                partitions
                    .map(|p| {
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(p as i32)
                            .with_committed_offset(offset)
                            .with_committed_leader_epoch(-1)
                            .with_committed_metadata(Some(StrBytes::from_static_str("")))
                    })
                    .collect(),
            )])
}

fn group_id(g: usize) -> String {
    format!("bench-commit-{g}")
}

async fn commit(client: &mut KafkaClient, req: &OffsetCommitRequest) -> anyhow::Result<()> {
    check_commit(&client.send(req, COMMIT_VERSION).await?)
}

fn check_commit(resp: &kafka_protocol::messages::OffsetCommitResponse) -> anyhow::Result<()> {
    for t in &resp.topics {
        for p in &t.partitions {
            anyhow::ensure!(
                p.error_code == 0,
                "OffsetCommit answered error {} for partition {}",
                p.error_code,
                p.partition_index
            );
        }
    }
    Ok(())
}

/// Every group gets an offset for every partition.
async fn prefill_kaas(addr: &str, p: &Params) -> anyhow::Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..p.committers {
        let addr = addr.to_string();
        let (groups, partitions, step) = (p.groups, p.partitions, p.committers);
        tasks.spawn(async move {
            let mut client = KafkaClient::connect(&addr, Duration::from_secs(10)).await?;
            for g in (c..groups).step_by(step) {
                commit(&mut client, &commit_request(g, 0..partitions, 0)).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(())
}

/// The committers run on a runtime of their own with one thread, so the
/// load generator, which shares the machine's two cores with the broker
/// under test, stays on at most one of them (measured: no slower than on
/// the bench's multi-threaded runtime).
async fn kaas_window(addr: &str, p: &Params, round: u64) -> anyhow::Result<Window> {
    let addr = addr.to_string();
    let p = *p;
    tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(kaas_window_on(&addr, &p, round))
    })
    .await?
}

async fn kaas_window_on(addr: &str, p: &Params, round: u64) -> anyhow::Result<Window> {
    let mut conns = Vec::new();
    for _ in 0..p.committers {
        conns.push(RawConn::connect(addr).await?);
    }
    // The load generator shares the machine with the broker, so it is kept
    // lean: buffered reads, one encode per request, group ids made once.
    let ids: Arc<[StrBytes]> = (0..p.groups)
        .map(|g| StrBytes::from_string(group_id(g)))
        .collect();
    let start = Instant::now();
    let stop = start + p.window;
    let mut tasks = tokio::task::JoinSet::new();
    for (c, mut conn) in conns.into_iter().enumerate() {
        let (groups, partitions, k) = (p.groups, p.partitions, p.per_commit);
        let ids = ids.clone();
        tasks.spawn(async move {
            let mut rng = Rng::new(round * 1000 + c as u64 + 1);
            let mut lat = Vec::with_capacity(8192);
            let mut n = 0u64;
            let mut offset = (round as i64 + 1) * 1_000_000;
            // One request, its group and partitions rewritten per commit.
            let mut req = commit_request_for(ids[0].clone(), 0..k, offset);
            while Instant::now() < stop {
                let g = rng.below(groups);
                let first = rng.below(partitions / k) * k;
                offset += 1;
                req.group_id = GroupId(ids[g].clone());
                for (i, p) in req.topics[0].partitions.iter_mut().enumerate() {
                    p.partition_index = (first + i) as i32;
                    p.committed_offset = offset;
                }
                let t = Instant::now();
                let frame = crate::wire::frame(&req, COMMIT_VERSION, n as i32)?;
                conn.write(&frame).await?;
                let body = conn.read_body().await?;
                check_commit(&crate::wire::decode_response::<OffsetCommitRequest>(
                    body,
                    COMMIT_VERSION,
                )?)?;
                lat.push(t.elapsed().as_micros() as u64);
                n += 1;
            }
            anyhow::Ok((n, lat))
        });
    }
    let mut parts = Vec::new();
    while let Some(r) = tasks.join_next().await {
        parts.push(r??);
    }
    Ok(Window::merge(parts, start.elapsed()))
}

/// One committed offset as both kaas's log and the JSON baseline write it.
#[derive(Serialize, Clone)]
struct OffsetJson {
    topic: String,
    partition: i32,
    offset: i64,
    leader_epoch: Option<i32>,
    metadata: String,
    commit_timestamp_ms: u64,
    expire_timestamp_ms: Option<u64>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// As many bytes as one kaas commit of `k` partitions appends to a group
/// log: frame header (8), kind (1), count (4), and per offset the topic
/// (2 + name), partition, offset, leader epoch, two timestamps and an
/// empty metadata string (4 + 8 + 4 + 8 + 8 + 4).
fn delta_record_bytes(k: usize) -> Arc<Vec<u8>> {
    let per_offset = 2 + TOPIC.len() + 4 + 8 + 4 + 8 + 8 + 4;
    Arc::new(vec![0x5a; 8 + 1 + 4 + k * per_offset])
}

// ------------------------------------------------------------ baseline (a)

#[derive(Serialize)]
struct GroupFile<'a> {
    group_id: &'a str,
    offsets: &'a [OffsetJson],
}

/// The seed's design: each group's offsets in one JSON file, rewritten
/// whole (tmp file, fsync, rename) on every commit.
struct JsonRewrite {
    groups: Vec<Mutex<Vec<OffsetJson>>>,
    dir: PathBuf,
}

impl JsonRewrite {
    fn new(dir: &Path, p: &Params) -> anyhow::Result<JsonRewrite> {
        let me = JsonRewrite {
            groups: (0..p.groups)
                .map(|_| {
                    Mutex::new(
                        (0..p.partitions)
                            .map(|i| OffsetJson {
                                topic: TOPIC.into(),
                                partition: i as i32,
                                offset: 0,
                                leader_epoch: None,
                                metadata: String::new(),
                                commit_timestamp_ms: now_ms(),
                                expire_timestamp_ms: None,
                            })
                            .collect(),
                    )
                })
                .collect(),
            dir: dir.to_path_buf(),
        };
        for g in 0..p.groups {
            let offsets = me.groups[g].lock().expect("lock");
            me.rewrite(g, &offsets, false)?;
        }
        Ok(me)
    }

    fn rewrite(&self, g: usize, offsets: &[OffsetJson], sync: bool) -> std::io::Result<()> {
        let id = group_id(g);
        let bytes = serde_json::to_vec(&GroupFile {
            group_id: &id,
            offsets,
        })?;
        let path = self.dir.join(format!("{id}.json"));
        let tmp = self.dir.join(format!("{id}.json.tmp"));
        let mut f = File::create(&tmp)?;
        f.write_all(&bytes)?;
        if sync {
            f.sync_all()?;
        }
        fs::rename(&tmp, &path)
    }

    fn window(
        &self,
        committers: usize,
        groups: usize,
        k: usize,
        window: Duration,
        round: u64,
    ) -> anyhow::Result<Window> {
        let start = Instant::now();
        let stop = start + window;
        let parts = std::thread::scope(|s| {
            let handles: Vec<_> = (0..committers)
                .map(|c| {
                    s.spawn(move || {
                        let mut rng = Rng::new(round * 1000 + c as u64 + 1);
                        let mut lat = Vec::with_capacity(4096);
                        let mut n = 0u64;
                        let mut offset = (round as i64 + 1) * 1_000_000;
                        while Instant::now() < stop {
                            let g = rng.below(groups);
                            let first =
                                rng.below(self.groups[g].lock().expect("lock").len() / k) * k;
                            offset += 1;
                            let t = Instant::now();
                            {
                                let mut offsets = self.groups[g].lock().expect("lock");
                                let now = now_ms();
                                for o in &mut offsets[first..first + k] {
                                    o.offset = offset;
                                    o.commit_timestamp_ms = now;
                                }
                                self.rewrite(g, &offsets, true)?;
                            }
                            lat.push(t.elapsed().as_micros() as u64);
                            n += 1;
                        }
                        anyhow::Ok((n, lat))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("committer thread"))
                .collect::<anyhow::Result<Vec<_>>>()
        })?;
        Ok(Window::merge(parts, start.elapsed()))
    }
}

// ------------------------------------------------------------ limit (b)

#[derive(Default)]
struct FileState {
    len: u64,
    appended: u64,
    durable: u64,
    syncing: bool,
}

struct GroupFileLog {
    file: File,
    state: Mutex<FileState>,
    synced: Condvar,
}

/// Appends + fdatasync, one file per group, with group commit per file.
struct RawAppend {
    files: Vec<GroupFileLog>,
}

impl RawAppend {
    fn new(dir: &Path, groups: usize) -> anyhow::Result<RawAppend> {
        let mut files = Vec::with_capacity(groups);
        for g in 0..groups {
            let file = OpenOptions::new()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .open(dir.join(format!("{g}.log")))?;
            file.sync_all()?;
            files.push(GroupFileLog {
                file,
                state: Mutex::new(FileState::default()),
                synced: Condvar::new(),
            });
        }
        crate::commit::sync_dir(dir)?;
        Ok(RawAppend { files })
    }

    /// Appends `record` and returns once an fdatasync covering it is done.
    fn append(&self, g: usize, record: &[u8]) -> std::io::Result<()> {
        let f = &self.files[g];
        let mut st = f.state.lock().expect("lock");
        f.file.write_all_at(record, st.len)?;
        st.len += record.len() as u64;
        st.appended += 1;
        let mine = st.appended;
        loop {
            if st.durable >= mine {
                return Ok(());
            }
            if !st.syncing {
                st.syncing = true;
                let target = st.appended;
                drop(st);
                let r = f.file.sync_data();
                st = f.state.lock().expect("lock");
                st.syncing = false;
                if r.is_ok() {
                    st.durable = st.durable.max(target);
                }
                f.synced.notify_all();
                r?;
            } else {
                st = f.synced.wait(st).expect("lock");
            }
        }
    }

    fn window(
        &self,
        committers: usize,
        groups: usize,
        record: &[u8],
        window: Duration,
        round: u64,
    ) -> anyhow::Result<Window> {
        let start = Instant::now();
        let stop = start + window;
        let parts = std::thread::scope(|s| {
            let handles: Vec<_> = (0..committers)
                .map(|c| {
                    s.spawn(move || {
                        let mut rng = Rng::new(round * 1000 + c as u64 + 1);
                        let mut lat = Vec::with_capacity(8192);
                        let mut n = 0u64;
                        while Instant::now() < stop {
                            let g = rng.below(groups);
                            let t = Instant::now();
                            self.append(g, record)?;
                            lat.push(t.elapsed().as_micros() as u64);
                            n += 1;
                        }
                        anyhow::Ok((n, lat))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("appender thread"))
                .collect::<anyhow::Result<Vec<_>>>()
        })?;
        Ok(Window::merge(parts, start.elapsed()))
    }
}

/// Median latency (ms) of append + fdatasync, one thread, one file.
pub(crate) fn idle_fdatasync(path: &Path, record: &[u8], n: usize) -> anyhow::Result<f64> {
    let f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)?;
    f.sync_all()?;
    let mut at = 0u64;
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f.write_all_at(record, at)?;
        f.sync_data()?;
        at += record.len() as u64;
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(median(&lat))
}

pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}
