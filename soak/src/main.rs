//! `kaas-soak`: a scripted soak of a multi-process kaas cluster (issue #6).
//!
//! N `kaas-broker serve` processes and a controller share one data folder.
//! A thousand consumer groups churn (members join, commit, leave, crash,
//! rejoin; groups are deleted and replaced) while brokers are killed with
//! SIGKILL and restarted. Throughout, and at the end, it checks that
//! resident memory stays bounded, no group stays resident on a broker that
//! does not own it, no deleted group reappears, and every acknowledged
//! offset is readable. It prints a summary and exits non-zero if a check
//! failed. See docs/soak.md.

mod chaos;
mod checks;
mod cluster;
mod ledger;
mod proto;
mod stats;
mod workload;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;

use crate::checks::{Findings, Monitor};
use crate::cluster::BrokerFlags;
use crate::ledger::Ledger;
use crate::stats::Stats;
use crate::workload::{Shared, WorkloadConfig};

#[derive(Parser, Debug)]
#[command(about = "Soak a multi-process kaas cluster: churning groups under kill -9")]
struct Args {
    /// How long the workload runs: 90s, 10m, 1h (plain numbers are seconds).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    duration: Duration,
    /// A smoke run: 90 seconds (unless --duration is given), chaos every 15 s.
    #[arg(long)]
    quick: bool,
    /// Brokers in the cluster.
    #[arg(long, default_value_t = 3)]
    brokers: usize,
    /// Consumer groups worked on at any time.
    #[arg(long, default_value_t = 1000)]
    groups: usize,
    /// Simulated consumers per group.
    #[arg(long, default_value_t = 2)]
    members_per_group: usize,
    /// Partitions each group commits offsets for.
    #[arg(long, default_value_t = 4)]
    partitions: i32,
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    #[arg(long, default_value_t = 15_000)]
    rebalance_timeout_ms: u64,
    #[arg(long, default_value_t = 3_000)]
    heartbeat_interval_ms: u64,
    #[arg(long, default_value_t = 3_000)]
    commit_interval_ms: u64,
    /// A member session lasts between these many seconds.
    #[arg(long, default_value_t = 10)]
    min_life_s: u64,
    #[arg(long, default_value_t = 60)]
    max_life_s: u64,
    /// Chance a session ends with LeaveGroup.
    #[arg(long, default_value_t = 0.45)]
    p_leave: f64,
    /// Chance a session ends with a crash (connection dropped, no leave).
    #[arg(long, default_value_t = 0.30)]
    p_crash: f64,
    /// One group is retired and deleted this often (ms).
    #[arg(long, default_value_t = 3_000)]
    delete_every_ms: u64,
    /// A broker is killed this often (seconds; 0: no chaos).
    #[arg(long, default_value_t = 30)]
    kill_every_s: u64,
    /// Chance a killed broker restarts at once instead of after the
    /// controller declared it dead.
    #[arg(long, default_value_t = 0.4)]
    p_immediate_restart: f64,
    /// Ownership check interval (seconds).
    #[arg(long, default_value_t = 20)]
    ownership_every_s: u64,
    /// ListGroups check interval (seconds).
    #[arg(long, default_value_t = 10)]
    list_every_s: u64,
    /// Allowed growth of the max RSS from the middle to the last third.
    #[arg(long, default_value_t = 0.25)]
    rss_growth: f64,
    /// Allowed extra MiB on top of --rss-growth (allocator noise).
    #[arg(long, default_value_t = 8.0)]
    rss_slack_mib: f64,
    /// No broker's RSS may ever exceed this many MiB.
    #[arg(long, default_value_t = 512.0)]
    rss_cap_mib: f64,
    /// group.initial.rebalance.delay.ms of the brokers.
    #[arg(long, default_value_t = 500)]
    initial_rebalance_delay_ms: u64,
    /// group.min.session.timeout.ms of the brokers.
    #[arg(long, default_value_t = 6_000)]
    min_session_timeout_ms: u64,
    /// Empty groups idle this long are unloaded by the brokers (ms).
    #[arg(long, default_value_t = 60_000)]
    idle_unload_ms: u64,
    /// The kaas-broker binary (default: beside this one).
    #[arg(long)]
    broker_bin: Option<PathBuf>,
    /// Working folder for data and logs (default: a new folder under /tmp).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the working folder after a passing run (a failing run always
    /// keeps it).
    #[arg(long)]
    keep: bool,
    /// Brokers on two GlusterFS mounts of one volume, even ids on
    /// `KAAS_GLUSTER_A`, odd ids and the controller on `KAAS_GLUSTER_B`
    /// (`eval "$(scripts/glusterfs-testenv up)"`); logs stay in the working
    /// folder.
    #[arg(long)]
    two_mounts: bool,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map_or((s, ""), |i| s.split_at(i));
    let n: u64 = num.parse().map_err(|_| format!("bad duration {s:?}"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("bad duration unit in {s:?} (use s, m or h)")),
    };
    Ok(Duration::from_secs(secs))
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown CPU".to_string(), |(_, m)| m.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cores} cores ({model}), {mem_gib:.1} GiB RAM, Linux {}",
        kernel.trim()
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    let explicit_duration = std::env::args().any(|a| a.starts_with("--duration"));
    if args.quick {
        if !explicit_duration {
            args.duration = Duration::from_secs(90);
        }
        args.kill_every_s = args.kill_every_s.min(15);
    }
    let pass = run(&args).await?;
    std::process::exit(if pass { 0 } else { 1 });
}

async fn run(args: &Args) -> anyhow::Result<bool> {
    let bin = match &args.broker_bin {
        Some(b) => b.clone(),
        None => std::env::current_exe()?.with_file_name("kaas-broker"),
    };
    anyhow::ensure!(bin.exists(), "no broker binary at {}", bin.display());
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!(
            "kaas-soak-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)?
                .as_secs()
        )),
    };
    anyhow::ensure!(
        !dir.join("data").exists(),
        "{} already holds a data folder: the soak needs a fresh one",
        dir.display()
    );
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    println!("kaas-soak: {command}");
    println!("machine: {}", machine());
    println!("working folder: {} (logs in logs/)", dir.display());

    let mounts = match args.two_mounts {
        true => Some(cluster::Mounts::from_env().context(
            "--two-mounts needs KAAS_GLUSTER_A and KAAS_GLUSTER_B: \
             eval \"$(scripts/glusterfs-testenv up)\"",
        )?),
        false => None,
    };
    let volume = mounts.as_ref().map(|m| cluster::OnMounts::new(m, &dir));
    if let Some(v) = &volume {
        println!("data on two mounts: {}", v.describe());
    }

    let stats = Arc::new(Stats::new());
    let cluster = Arc::new(
        cluster::start(
            &bin,
            &dir,
            args.brokers,
            BrokerFlags {
                initial_rebalance_delay_ms: args.initial_rebalance_delay_ms,
                min_session_timeout_ms: args.min_session_timeout_ms,
                idle_unload_ms: args.idle_unload_ms,
            },
            volume.as_ref(),
        )
        .await?,
    );
    stats.event(&format!("{} brokers alive", args.brokers));
    kaas_client::KafkaClient::connect(&cluster.addr(0), Duration::from_secs(5))
        .await?
        .create_topic(proto::TOPIC, args.partitions)
        .await?;

    let ledger = Arc::new(Ledger::default());
    let findings = Arc::new(Findings::default());
    let cfg = WorkloadConfig {
        groups: args.groups,
        members_per_group: args.members_per_group,
        partitions: args.partitions,
        session_timeout: Duration::from_millis(args.session_timeout_ms),
        rebalance_timeout: Duration::from_millis(args.rebalance_timeout_ms),
        heartbeat_interval: Duration::from_millis(args.heartbeat_interval_ms),
        commit_interval: Duration::from_millis(args.commit_interval_ms),
        min_life: Duration::from_secs(args.min_life_s),
        max_life: Duration::from_secs(args.max_life_s),
        p_leave: args.p_leave,
        p_crash: args.p_crash,
        delete_every: Duration::from_millis(args.delete_every_ms),
    };
    let shared = Shared::new(cluster.clone(), stats.clone(), ledger.clone(), cfg);
    let workload = tokio::spawn(workload::run(shared.clone()));

    let chaos_stop = Arc::new(AtomicBool::new(false));
    let chaos = (args.kill_every_s > 0).then(|| {
        tokio::spawn(
            chaos::Chaos {
                cluster: cluster.clone(),
                stats: stats.clone(),
                every: Duration::from_secs(args.kill_every_s),
                p_immediate: args.p_immediate_restart,
                stop: chaos_stop.clone(),
            }
            .run(),
        )
    });
    let monitor_stop = Arc::new(AtomicBool::new(false));
    let monitor = Monitor {
        cluster: cluster.clone(),
        stats: stats.clone(),
        ledger: ledger.clone(),
        findings: findings.clone(),
        ownership_every: Duration::from_secs(args.ownership_every_s),
        list_every: Duration::from_secs(args.list_every_s),
        stop: monitor_stop.clone(),
    };
    let monitor_task = tokio::spawn(monitor.run());

    // The run itself, with a progress line every 30 s.
    let run_start = Instant::now();
    while run_start.elapsed() < args.duration {
        let left = args.duration.saturating_sub(run_start.elapsed());
        tokio::time::sleep(left.min(Duration::from_secs(30))).await;
        stats.event(&format!(
            "progress: joins {}, rebalances {}, leaves {}, crashes {}, commits acked {}, groups deleted {}, kills {}",
            stats.joins.get(),
            stats.rebalances.get(),
            stats.leaves.get(),
            stats.crashes.get(),
            stats.commits_acked.get(),
            stats.groups_deleted.get(),
            stats.kills.get()
        ));
    }
    let run_s = stats.elapsed_s();

    // Wind down: chaos first (it restarts what it killed), then the
    // workload (members leave), then the samplers.
    stats.event("stopping chaos");
    chaos_stop.store(true, Ordering::SeqCst);
    let mut problems = Vec::new();
    if let Some(c) = chaos {
        if let Err(e) = c.await? {
            problems.push(format!("chaos: {e:#}"));
        }
    }
    stats.event("stopping the workload");
    shared.stop();
    if tokio::time::timeout(Duration::from_secs(120), workload)
        .await
        .is_err()
    {
        problems.push("the workload did not stop within 120 s".into());
    }
    monitor_stop.store(true, Ordering::SeqCst);
    let _ = monitor_task.await;

    // The final checks run with every broker up and alive.
    let down: Vec<usize> = (0..cluster.len()).filter(|&i| !cluster.is_up(i)).collect();
    for &id in &down {
        cluster.spawn_broker(id)?;
    }
    let all: Vec<usize> = (0..cluster.len()).collect();
    if let Err(e) = cluster.wait_alive(&all, Duration::from_secs(60)).await {
        problems.push(format!("final: {e:#}"));
    }
    stats.event("final checks");
    let final_monitor = Monitor {
        cluster: cluster.clone(),
        stats: stats.clone(),
        ledger: ledger.clone(),
        findings: findings.clone(),
        ownership_every: Duration::ZERO,
        list_every: Duration::ZERO,
        stop: monitor_stop.clone(),
    };
    let mut final_ownership = false;
    for _ in 0..20 {
        let before = findings.ownership_rounds.load(Ordering::Relaxed);
        final_monitor.ownership_round().await;
        if findings.ownership_rounds.load(Ordering::Relaxed) > before {
            final_ownership = true;
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    if !final_ownership {
        problems.push("final ownership check: the cluster never settled".into());
    }
    let offsets = checks::verify_offsets(cluster.clone(), &ledger, args.partitions).await;
    final_monitor.list_round().await;
    for (id, status) in cluster.exited() {
        findings
            .exits
            .lock()
            .unwrap()
            .push(format!("broker {id} exited on its own ({status})"));
    }
    if stats.member_panics.get() > 0 {
        problems.push(format!(
            "{} simulated members panicked",
            stats.member_panics.get()
        ));
    }
    stats.event("done");

    let pass = summary(args, &stats, &findings, &offsets, &problems, run_s);
    cluster.shutdown();
    if pass && !args.keep && args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
        if let Some(v) = &volume {
            v.remove();
        }
    } else {
        println!("working folder kept: {}", dir.display());
    }
    Ok(pass)
}

/// Prints the summary; true when every check passed.
fn summary(
    args: &Args,
    stats: &Stats,
    f: &Findings,
    offsets: &checks::OffsetReport,
    problems: &[String],
    run_s: f64,
) -> bool {
    let mut pass = true;
    let mut verdict = |ok: bool, what: String| {
        pass &= ok;
        println!("  [{}] {what}", if ok { "PASS" } else { "FAIL" });
    };
    println!();
    println!("==== kaas soak summary ====");
    println!(
        "command: kaas-soak {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    println!("machine: {}", machine());
    println!(
        "run: {run_s:.0} s of workload; {} brokers; {} group slots x {} members, {} partitions each; session {} ms, heartbeat {} ms, commit every {} ms; a broker killed every {} s",
        args.brokers,
        args.groups,
        args.members_per_group,
        args.partitions,
        args.session_timeout_ms,
        args.heartbeat_interval_ms,
        args.commit_interval_ms,
        args.kill_every_s
    );
    println!(
        "groups: {} created, {} deleted, {} deletions not acknowledged (kept as live)",
        stats.groups_created.get(),
        stats.groups_deleted.get(),
        stats.delete_gave_up.get()
    );
    println!(
        "members: {} joins, {} rebalances completed, {} clean leaves, {} crashes, {} heartbeats, {} coordinator re-discoveries",
        stats.joins.get(),
        stats.rebalances.get(),
        stats.leaves.get(),
        stats.crashes.get(),
        stats.heartbeats.get(),
        stats.coordinator_moves.get()
    );
    println!(
        "commits: {} sent, {} acknowledged ({} partition offsets acknowledged)",
        stats.commits_sent.get(),
        stats.commits_acked.get(),
        stats.partition_commits_acked.get()
    );
    println!(
        "chaos: {} kill -9, {} restarts ({} at once, the others after the controller declared the broker dead)",
        stats.kills.get(),
        stats.restarts.get(),
        stats.restarts_at_once.get()
    );
    println!("errors seen (API, error: count):");
    for ((api, what), n) in stats.errors() {
        println!("  {api}, {what}: {n}");
    }
    println!("checks:");
    let rss = checks::rss_verdict(
        &f.rss.lock().unwrap(),
        args.brokers,
        run_s,
        args.rss_growth,
        args.rss_slack_mib,
        args.rss_cap_mib,
    );
    verdict(rss.pass, "resident memory bounded".into());
    for l in &rss.lines {
        println!("         {l}");
    }
    let violations = f.ownership_violations.lock().unwrap().clone();
    verdict(
        violations.is_empty() && f.ownership_rounds.load(Ordering::Relaxed) > 0,
        format!(
            "no group resident on a non-owner: {} quiescent rounds ({} skipped, not quiescent), {} resident groups checked, {} violations",
            f.ownership_rounds.load(Ordering::Relaxed),
            f.ownership_skipped.load(Ordering::Relaxed),
            f.groups_checked_resident.load(Ordering::Relaxed),
            violations.len()
        ),
    );
    for v in &violations {
        println!("         {v}");
    }
    let reappeared = f.reappeared.lock().unwrap().clone();
    verdict(
        reappeared.is_empty() && offsets.deleted_with_offsets.is_empty(),
        format!(
            "no deleted group reappears: {} deleted; {} ListGroups answers, {} listed a deleted group; {} deleted groups fetched at the end, {} with offsets",
            stats.groups_deleted.get(),
            f.listings.load(Ordering::Relaxed),
            reappeared.len(),
            offsets.deleted_checked,
            offsets.deleted_with_offsets.len()
        ),
    );
    for v in reappeared
        .iter()
        .chain(&offsets.deleted_with_offsets)
        .take(20)
    {
        println!("         {v}");
    }
    verdict(
        offsets.lost.is_empty() && offsets.invented.is_empty() && offsets.unreadable.is_empty(),
        format!(
            "every acknowledged offset readable: {} groups, {} partitions checked ({} with an acknowledged commit); lost {}, never-committed values {}, unreadable groups {}",
            offsets.groups,
            offsets.partitions,
            offsets.partitions_with_acked,
            offsets.lost.len(),
            offsets.invented.len(),
            offsets.unreadable.len()
        ),
    );
    for v in offsets
        .lost
        .iter()
        .chain(&offsets.invented)
        .chain(&offsets.unreadable)
        .take(20)
    {
        println!("         {v}");
    }
    let exits = f.exits.lock().unwrap().clone();
    verdict(
        exits.is_empty(),
        format!("no broker exited on its own: {} exits", exits.len()),
    );
    for v in &exits {
        println!("         {v}");
    }
    verdict(
        problems.is_empty(),
        format!("harness: {} problems", problems.len()),
    );
    for p in problems {
        println!("         {p}");
    }
    println!("result: {}", if pass { "PASS" } else { "FAIL" });
    pass
}
