//! The soak's checks. During the run: resident memory samples, group
//! ownership at quiescent moments, deleted groups absent from ListGroups,
//! and brokers that exit on their own. At the end: every acknowledged
//! offset read back through the group's coordinator.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cluster::Cluster;
use crate::ledger::Ledger;
use crate::proto::{self, Conn};
use crate::stats::Stats;

/// At most this many examples of one kind of failure are kept.
const KEEP: usize = 20;

#[derive(Default)]
pub struct Findings {
    /// (seconds since start, broker, VmRSS in KiB)
    pub rss: Mutex<Vec<(f64, usize, u64)>>,
    pub ownership_rounds: AtomicU64,
    pub ownership_skipped: AtomicU64,
    pub groups_checked_resident: AtomicU64,
    pub ownership_violations: Mutex<Vec<String>>,
    pub listings: AtomicU64,
    pub reappeared: Mutex<Vec<String>>,
    pub exits: Mutex<Vec<String>>,
}

fn keep(v: &Mutex<Vec<String>>, what: String) {
    let mut v = v.lock().unwrap();
    if v.len() < KEEP {
        println!("FAIL: {what}");
        v.push(what);
    }
}

pub struct Monitor {
    pub cluster: Arc<Cluster>,
    pub stats: Arc<Stats>,
    pub ledger: Arc<Ledger>,
    pub findings: Arc<Findings>,
    pub ownership_every: Duration,
    pub list_every: Duration,
    pub stop: Arc<AtomicBool>,
}

impl Monitor {
    /// Samples and checks until `stop`.
    pub async fn run(self) {
        let mut next_ownership = Instant::now() + self.ownership_every;
        let mut next_list = Instant::now() + self.list_every;
        while !self.stop.load(Ordering::SeqCst) {
            self.sample_rss();
            for (id, status) in self.cluster.exited() {
                keep(
                    &self.findings.exits,
                    format!("broker {id} exited on its own ({status}); restarted"),
                );
                let _ = self.cluster.spawn_broker(id);
            }
            if Instant::now() >= next_ownership {
                self.ownership_round().await;
                next_ownership = Instant::now() + self.ownership_every;
            }
            if Instant::now() >= next_list {
                self.list_round().await;
                next_list = Instant::now() + self.list_every;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }

    fn sample_rss(&self) {
        let t = self.stats.elapsed_s();
        for id in self.cluster.up_ids() {
            if let Some(kib) = self.cluster.pid(id).and_then(rss_kib) {
                self.findings.rss.lock().unwrap().push((t, id, kib));
            }
        }
    }

    /// One ownership check; skipped unless quiescent.
    pub async fn ownership_round(&self) {
        match ownership_check(&self.cluster).await {
            Some((checked, violations)) => {
                self.findings
                    .ownership_rounds
                    .fetch_add(1, Ordering::Relaxed);
                self.findings
                    .groups_checked_resident
                    .fetch_add(checked, Ordering::Relaxed);
                for v in violations {
                    keep(&self.findings.ownership_violations, v);
                }
            }
            None => {
                self.findings
                    .ownership_skipped
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// ListGroups on every broker that is up: no group whose deletion was
    /// acknowledged before the request was sent may be listed.
    pub async fn list_round(&self) {
        for id in self.cluster.up_ids() {
            let sent = Instant::now();
            let Ok(groups) = proto::list_groups(&self.cluster.addr(id)).await else {
                self.stats.error("ListGroups", "connection");
                continue;
            };
            self.findings.listings.fetch_add(1, Ordering::Relaxed);
            for g in groups {
                if self.ledger.deleted_at(&g).is_some_and(|at| at < sent) {
                    keep(
                        &self.findings.reappeared,
                        format!(
                            "t={:.0}s: deleted group {g} listed by broker {id}",
                            self.stats.elapsed_s()
                        ),
                    );
                }
            }
        }
    }
}

/// VmRSS of a process, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Every up broker's resident groups under the published assignment
/// version, or None when some broker follows another version (not
/// quiescent) or does not answer.
async fn snapshot(cluster: &Cluster) -> Option<(u64, BTreeMap<usize, HashSet<String>>)> {
    let version = cluster.routing()?.version();
    let mut out = BTreeMap::new();
    for id in cluster.up_ids() {
        let body = crate::cluster::http_get(cluster, id, "/debug/groups")
            .await
            .ok()?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        if v["assignment_version"].as_u64()? != version {
            return None;
        }
        let resident = v["resident"]
            .as_array()?
            .iter()
            .filter_map(|g| g.as_str().map(str::to_string))
            .collect();
        out.insert(id, resident);
    }
    Some((version, out))
}

/// Two snapshots 1.5 s apart under one unchanged assignment version: a
/// group resident in both on a broker the version does not make its
/// coordinator is a leak. (A single snapshot could fall between a new
/// version's installation and its sweep.) Returns the number of resident
/// groups checked and the violations, or None when not quiescent.
pub async fn ownership_check(cluster: &Cluster) -> Option<(u64, Vec<String>)> {
    let (v1, first) = snapshot(cluster).await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (v2, second) = snapshot(cluster).await?;
    let routing = cluster.routing()?;
    if v1 != v2 || routing.version() != v2 {
        return None;
    }
    let mut checked = 0;
    let mut violations = Vec::new();
    for (id, groups) in &second {
        for g in groups {
            checked += 1;
            let owner = routing.owner_of_group(g);
            if owner != Some(*id as i32) && first.get(id).is_some_and(|f| f.contains(g)) {
                violations.push(format!(
                    "group {g} resident on broker {id}, owned by {owner:?} at assignment version {v2}"
                ));
            }
        }
    }
    Some((checked, violations))
}

/// Result of the final offset read-back.
#[derive(Default, Debug)]
pub struct OffsetReport {
    pub groups: u64,
    pub partitions: u64,
    pub partitions_with_acked: u64,
    pub lost: Vec<String>,
    pub invented: Vec<String>,
    pub unreadable: Vec<String>,
    pub deleted_checked: u64,
    pub deleted_with_offsets: Vec<String>,
}

/// Reads `group`'s committed offsets through its coordinator, retrying
/// coordinator errors for up to 30 s.
async fn fetch_group(cluster: &Cluster, group: &str, partitions: i32) -> Result<Vec<i64>, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < deadline {
        let via = cluster.addr(rand::random_range(0..cluster.len()));
        let addr = match proto::find_coordinator(&via, group).await {
            Ok(Ok(a)) => a,
            Ok(Err(c)) => {
                last = format!("FindCoordinator {}", proto::error_name(c));
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            Err(e) => {
                last = format!("FindCoordinator: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        let attempt = async {
            let mut c = Conn::connect(&addr, "soak-verify").await?;
            proto::fetch_offsets(&mut c, group, partitions).await
        };
        match attempt.await {
            Ok(Ok(offsets)) => return Ok(offsets),
            Ok(Err(code)) => last = format!("OffsetFetch {}", proto::error_name(code)),
            Err(e) => last = format!("OffsetFetch: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(last)
}

/// The end-of-run check, with every broker up and the workload stopped:
/// each live group's offsets read back are at least the highest
/// acknowledged and were handed out by the soak; each deleted group has no
/// offsets left.
pub async fn verify_offsets(
    cluster: Arc<Cluster>,
    ledger: &Ledger,
    partitions: i32,
) -> OffsetReport {
    let report = Arc::new(Mutex::new(OffsetReport::default()));
    let sem = Arc::new(tokio::sync::Semaphore::new(16));
    let mut tasks = tokio::task::JoinSet::new();
    for (group, offsets) in ledger.live() {
        let (cluster, report, sem) = (cluster.clone(), report.clone(), sem.clone());
        tasks.spawn(async move {
            let _permit = sem.acquire().await;
            let fetched = fetch_group(&cluster, &group, partitions).await;
            let mut r = report.lock().unwrap();
            r.groups += 1;
            let fetched = match fetched {
                Ok(f) => f,
                Err(e) => {
                    r.unreadable.push(format!("{group}: {e}"));
                    return;
                }
            };
            let expected = offsets.lock().unwrap();
            for (p, (got, want)) in fetched.iter().zip(expected.iter()).enumerate() {
                r.partitions += 1;
                if want.acked >= 0 {
                    r.partitions_with_acked += 1;
                }
                if *got < want.acked {
                    r.lost.push(format!(
                        "{group}/{p}: read {got}, acknowledged {}",
                        want.acked
                    ));
                } else if *got != -1 && !(1..want.next).contains(got) {
                    r.invented.push(format!(
                        "{group}/{p}: read {got}, never committed (handed out 1..{})",
                        want.next
                    ));
                }
            }
        });
    }
    for group in ledger.deleted() {
        let (cluster, report, sem) = (cluster.clone(), report.clone(), sem.clone());
        tasks.spawn(async move {
            let _permit = sem.acquire().await;
            let fetched = fetch_group(&cluster, &group, partitions).await;
            let mut r = report.lock().unwrap();
            r.deleted_checked += 1;
            match fetched {
                Ok(f) if f.iter().all(|o| *o == -1) => {}
                Ok(f) => r
                    .deleted_with_offsets
                    .push(format!("{group}: deleted, but offsets {f:?}")),
                // A deleted group may be answered GROUP_ID_NOT_FOUND.
                Err(e) if e.contains("GROUP_ID_NOT_FOUND") => {}
                Err(e) => r.unreadable.push(format!("{group} (deleted): {e}")),
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let mut r = std::mem::take(&mut *report.lock().unwrap());
    r.lost.sort();
    r.invented.sort();
    r.unreadable.sort();
    r.deleted_with_offsets.sort();
    r
}

/// The resident-memory verdict. Brokers restart during the run, so the
/// rule is over the samples of all brokers pooled: the largest RSS in the
/// last third of the run may exceed the largest in the middle third by at
/// most `growth` (a fraction) plus `slack_mib` (allocator noise), and no
/// sample may exceed `cap_mib`. The first third is warm-up (groups load,
/// buffers grow) and is not compared.
pub struct RssVerdict {
    pub pass: bool,
    pub lines: Vec<String>,
}

pub fn rss_verdict(
    samples: &[(f64, usize, u64)],
    brokers: usize,
    run_s: f64,
    growth: f64,
    slack_mib: f64,
    cap_mib: f64,
) -> RssVerdict {
    let mib = |k: u64| k as f64 / 1024.0;
    let mut lines = Vec::new();
    let mut pass = true;
    for id in 0..brokers {
        let mine: Vec<u64> = samples.iter().filter(|s| s.1 == id).map(|s| s.2).collect();
        let max = mine.iter().copied().max().unwrap_or(0);
        let last = samples.iter().rfind(|s| s.1 == id).map_or(0, |s| s.2);
        lines.push(format!(
            "broker {id}: {} samples, max {:.1} MiB, last {:.1} MiB",
            mine.len(),
            mib(max),
            mib(last)
        ));
        if mib(max) > cap_mib {
            pass = false;
            lines.push(format!("  FAIL: above the cap of {cap_mib:.0} MiB"));
        }
    }
    let third = run_s / 3.0;
    let max_in = |lo: f64, hi: f64| {
        samples
            .iter()
            .filter(|s| s.0 >= lo && s.0 < hi)
            .map(|s| s.2)
            .max()
            .unwrap_or(0)
    };
    let middle = max_in(third, 2.0 * third);
    let last = max_in(2.0 * third, f64::INFINITY);
    let limit = mib(middle) * (1.0 + growth) + slack_mib;
    let ok = middle > 0 && mib(last) <= limit;
    pass &= ok;
    lines.push(format!(
        "max over brokers: middle third {:.1} MiB, last third {:.1} MiB, limit {:.1} MiB (middle x {:.2} + {slack_mib:.0} MiB): {}",
        mib(middle),
        mib(last),
        limit,
        1.0 + growth,
        if ok { "bounded" } else { "FAIL: grew" }
    ));
    RssVerdict { pass, lines }
}
