//! The workload: one driver per group slot, each running a few simulated
//! consumers over the raw protocol. A consumer joins, syncs, heartbeats and
//! commits for a random lifetime, then leaves cleanly, crashes (drops its
//! connection without leaving, so its session has to expire), or carries
//! on; then it comes back as a new member. Now and then a slot is told to
//! retire its group: its members leave, the group is deleted with
//! DeleteGroups, and the slot continues under a new, never used id.
//!
//! Errors are handled as a Kafka client does: NOT_COORDINATOR and friends
//! or a broken connection → find the coordinator again and carry on with
//! the same membership; REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION → rejoin
//! with the same member id; UNKNOWN_MEMBER_ID → rejoin as a new member.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    DeleteGroupsRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    OffsetCommitRequest, SyncGroupRequest, TopicName,
};

use crate::cluster::Cluster;
use crate::ledger::{GroupOffsets, Ledger};
use crate::proto::{self, gid, sb, Conn, NONE};
use crate::stats::Stats;

#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    pub groups: usize,
    pub members_per_group: usize,
    pub partitions: i32,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub commit_interval: Duration,
    /// A member session lasts a random time in this range.
    pub min_life: Duration,
    pub max_life: Duration,
    /// Chance that a session ends by LeaveGroup, and by a crash; the rest
    /// of the time the member simply carries on for another lifetime.
    pub p_leave: f64,
    pub p_crash: f64,
    /// One group retired and deleted this often.
    pub delete_every: Duration,
}

pub struct Shared {
    pub cluster: Arc<Cluster>,
    pub stats: Arc<Stats>,
    pub ledger: Arc<Ledger>,
    pub cfg: WorkloadConfig,
    stopping: AtomicBool,
    retire: Vec<AtomicBool>,
}

impl Shared {
    pub fn new(
        cluster: Arc<Cluster>,
        stats: Arc<Stats>,
        ledger: Arc<Ledger>,
        cfg: WorkloadConfig,
    ) -> Arc<Shared> {
        let retire = (0..cfg.groups).map(|_| AtomicBool::new(false)).collect();
        Arc::new(Shared {
            cluster,
            stats,
            ledger,
            cfg,
            stopping: AtomicBool::new(false),
            retire,
        })
    }

    /// Ends the workload: members leave, no more deletions.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Asks a coordinator (found through any broker, as a client's
    /// bootstrap list would) where `group` lives.
    async fn coordinator(&self, group: &str) -> Option<String> {
        let n = self.cluster.len();
        let first = rand::random_range(0..n);
        for k in 0..n {
            let via = self.cluster.addr((first + k) % n);
            match proto::find_coordinator(&via, group).await {
                Ok(Ok(addr)) => return Some(addr),
                Ok(Err(code)) => self.stats.code("FindCoordinator", code),
                Err(_) => self.stats.error("FindCoordinator", "connection"),
            }
        }
        None
    }
}

fn random_duration(lo: Duration, hi: Duration) -> Duration {
    if hi <= lo {
        return lo;
    }
    Duration::from_millis(rand::random_range(
        lo.as_millis() as u64..hi.as_millis() as u64,
    ))
}

/// Runs every slot's driver and the deleter until [`Shared::stop`]; returns
/// once every member has left.
pub async fn run(sh: Arc<Shared>) {
    let mut tasks = tokio::task::JoinSet::new();
    for slot in 0..sh.cfg.groups {
        tasks.spawn(drive_slot(sh.clone(), slot));
    }
    let deleter = tokio::spawn(retire_groups(sh.clone()));
    while tasks.join_next().await.is_some() {}
    let _ = deleter.await;
}

/// Now and then marks a random slot for retirement.
async fn retire_groups(sh: Arc<Shared>) {
    loop {
        tokio::time::sleep(sh.cfg.delete_every).await;
        if sh.stopping() {
            return;
        }
        let slot = rand::random_range(0..sh.cfg.groups);
        sh.retire[slot].store(true, Ordering::SeqCst);
    }
}

/// One group being worked on by a slot.
struct Group {
    id: String,
    offsets: GroupOffsets,
    stop: AtomicBool,
}

async fn drive_slot(sh: Arc<Shared>, slot: usize) {
    let mut incarnation = 0;
    loop {
        let id = format!("soak-{slot:04}-{incarnation}");
        let offsets = sh.ledger.register(&id, sh.cfg.partitions);
        sh.stats.groups_created.inc();
        let group = Arc::new(Group {
            id,
            offsets,
            stop: AtomicBool::new(false),
        });
        let mut members = tokio::task::JoinSet::new();
        for m in 0..sh.cfg.members_per_group {
            let member = Member {
                sh: sh.clone(),
                group: group.clone(),
                client_id: format!("soak-{slot}-{m}"),
                conn: None,
                member_id: String::new(),
                generation: -1,
                partitions: Vec::new(),
                joined: false,
                moved_since_join: false,
                synced: false,
            };
            members.spawn(member.run(incarnation == 0));
        }
        while !sh.stopping() && !sh.retire[slot].load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        group.stop.store(true, Ordering::SeqCst);
        while let Some(done) = members.join_next().await {
            if done.is_err() {
                sh.stats.member_panics.inc();
            }
        }
        if sh.stopping() {
            return;
        }
        delete_group(&sh, &group.id).await;
        sh.retire[slot].store(false, Ordering::SeqCst);
        incarnation += 1;
    }
}

/// Deletes a group whose members were all stopped, retrying until it is
/// empty (crashed members' sessions expire) and the coordinator answers.
/// Only an acknowledged deletion is recorded as one.
async fn delete_group(sh: &Shared, group: &str) {
    let deadline = Instant::now() + sh.cfg.session_timeout * 6;
    let mut answer_lost = false;
    while Instant::now() < deadline {
        let Some(addr) = sh.coordinator(group).await else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let attempt = async {
            let mut c = Conn::connect(&addr, "soak-admin").await?;
            c.call(
                &DeleteGroupsRequest::default().with_groups_names(vec![gid(group)]),
                proto::DELETE_V,
                Duration::from_secs(10),
            )
            .await
        };
        let code = match attempt.await {
            Ok(r) => r.results.first().map_or(-1, |r| r.error_code),
            Err(_) => {
                sh.stats.error("DeleteGroups", "connection");
                answer_lost = true;
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        match code {
            NONE => {
                sh.ledger.mark_deleted(group);
                sh.stats.groups_deleted.inc();
                return;
            }
            // An earlier attempt whose answer was lost did it.
            proto::GROUP_ID_NOT_FOUND if answer_lost => {
                sh.ledger.mark_deleted(group);
                sh.stats.groups_deleted.inc();
                return;
            }
            // Nothing committed: the group may never have formed, or been
            // dropped once empty (as Apache drops an Empty group without
            // offsets). Its id is retired all the same.
            proto::GROUP_ID_NOT_FOUND if !has_acked(sh, group) => {
                sh.ledger.mark_deleted(group);
                sh.stats.groups_deleted.inc();
                return;
            }
            proto::GROUP_ID_NOT_FOUND => {
                // The group has acknowledged commits, so "not found" means
                // the coordinator lost it: kept as live so the final check
                // reads its offsets.
                sh.stats.code("DeleteGroups", code);
                sh.stats
                    .event(&format!("DeleteGroups {group}: GROUP_ID_NOT_FOUND"));
                sh.stats.delete_gave_up.inc();
                return;
            }
            c => {
                sh.stats.code("DeleteGroups", c);
                tokio::time::sleep(Duration::from_millis(1000)).await;
            }
        }
    }
    sh.stats.delete_gave_up.inc();
    sh.stats
        .event(&format!("DeleteGroups {group}: gave up; kept as live"));
}

fn has_acked(sh: &Shared, group: &str) -> bool {
    sh.ledger
        .offsets(group)
        .is_some_and(|o| o.lock().unwrap().iter().any(|p| p.acked >= 0))
}

/// What a failed request asks the member to do next.
enum Next {
    Fine,
    /// Find the coordinator again; the membership is kept.
    Refind,
    /// Rejoin with the same member id.
    Rejoin,
    /// Rejoin as a new member.
    Reset,
    /// Unexpected: wait, then rejoin.
    Backoff,
}

struct Member {
    sh: Arc<Shared>,
    group: Arc<Group>,
    client_id: String,
    conn: Option<Conn>,
    member_id: String,
    generation: i32,
    partitions: Vec<i32>,
    joined: bool,
    /// The coordinator was found again since the last completed join: an
    /// UNKNOWN_MEMBER_ID then is labelled apart, as the trace of a move.
    moved_since_join: bool,
    /// The current member id completed a SyncGroup, so a generation that
    /// the coordinator wrote to the group's log holds it.
    synced: bool,
}

impl Member {
    fn stopped(&self) -> bool {
        self.group.stop.load(Ordering::SeqCst)
    }

    async fn run(mut self, first: bool) {
        if first {
            // Spread the initial joins of thousands of members.
            tokio::time::sleep(random_duration(Duration::ZERO, Duration::from_secs(10))).await;
        }
        while !self.stopped() {
            self.session().await;
            if !self.stopped() {
                tokio::time::sleep(random_duration(Duration::ZERO, Duration::from_secs(3))).await;
            }
        }
        // A member mid-rebalance is in the group too: leave either way, so
        // a retired group empties without waiting for sessions to expire.
        if !self.member_id.is_empty() {
            if self.conn.is_none() {
                self.connect().await;
            }
            self.leave().await;
        }
    }

    /// One membership, from join to its end (leave, crash or carry on).
    async fn session(&mut self) {
        let cfg = self.sh.cfg.clone();
        let end = Instant::now() + random_duration(cfg.min_life, cfg.max_life);
        let mut next_heartbeat = Instant::now();
        let mut next_commit = Instant::now() + cfg.commit_interval;
        while !self.stopped() {
            if self.conn.is_none() && !self.connect().await {
                tokio::time::sleep(random_duration(
                    Duration::from_millis(200),
                    Duration::from_millis(800),
                ))
                .await;
                continue;
            }
            if !self.joined {
                let next = self.join_and_sync().await;
                self.apply(next).await;
                next_heartbeat = Instant::now() + cfg.heartbeat_interval;
                continue;
            }
            let now = Instant::now();
            if now >= end {
                let roll: f64 = rand::random();
                if roll < cfg.p_leave {
                    self.leave().await;
                    return;
                } else if roll < cfg.p_leave + cfg.p_crash {
                    self.crash();
                    return;
                }
                return; // carries on, same membership
            }
            let wake = next_heartbeat.min(next_commit).min(end);
            // Short naps, so a stop request is seen promptly.
            tokio::time::sleep(
                wake.saturating_duration_since(now)
                    .min(Duration::from_secs(1)),
            )
            .await;
            let now = Instant::now();
            if self.conn.is_some() && now >= next_heartbeat {
                next_heartbeat = now + cfg.heartbeat_interval;
                let next = self.heartbeat().await;
                self.apply(next).await;
            }
            if self.joined && self.conn.is_some() && now >= next_commit {
                next_commit = now + cfg.commit_interval;
                let next = self.commit().await;
                self.apply(next).await;
            }
        }
    }

    async fn connect(&mut self) -> bool {
        let Some(addr) = self.sh.coordinator(&self.group.id).await else {
            return false;
        };
        match Conn::connect(&addr, &self.client_id).await {
            Ok(c) => {
                self.conn = Some(c);
                true
            }
            Err(_) => {
                self.sh.stats.error("connect", "connection");
                false
            }
        }
    }

    /// Acts on what a request asked for.
    async fn apply(&mut self, next: Next) {
        match next {
            Next::Fine => {}
            Next::Refind => {
                self.conn = None;
                self.moved_since_join = true;
                self.sh.stats.coordinator_moves.inc();
                tokio::time::sleep(random_duration(
                    Duration::from_millis(100),
                    Duration::from_millis(500),
                ))
                .await;
            }
            Next::Rejoin => self.joined = false,
            Next::Reset => {
                self.joined = false;
                self.synced = false;
                self.member_id.clear();
            }
            Next::Backoff => {
                self.joined = false;
                self.conn = None;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }

    /// Counts an error answer and decides what to do about it.
    fn on_code(&self, api: &str, code: i16) -> Next {
        if code != NONE {
            self.sh.stats.code(api, code);
        }
        match code {
            NONE => Next::Fine,
            c if proto::is_coordinator_error(c) => Next::Refind,
            proto::REBALANCE_IN_PROGRESS | proto::ILLEGAL_GENERATION => Next::Rejoin,
            proto::UNKNOWN_MEMBER_ID => Next::Reset,
            _ => Next::Backoff,
        }
    }

    /// A request got no answer: the connection is dropped and the
    /// coordinator found again.
    fn on_transport(&self, api: &str) -> Next {
        self.sh.stats.error(api, "connection");
        Next::Refind
    }

    async fn join_and_sync(&mut self) -> Next {
        let cfg = &self.sh.cfg;
        let join = JoinGroupRequest::default()
            .with_group_id(gid(&self.group.id))
            .with_session_timeout_ms(cfg.session_timeout.as_millis() as i32)
            .with_rebalance_timeout_ms(cfg.rebalance_timeout.as_millis() as i32)
            .with_member_id(sb(&self.member_id))
            .with_protocol_type(sb("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(sb("range"))
                .with_metadata(proto::subscription())]);
        let within = cfg.rebalance_timeout + Duration::from_secs(10);
        let Some(conn) = self.conn.as_mut() else {
            return Next::Refind;
        };
        let r = match conn.call(&join, proto::JOIN_V, within).await {
            Ok(r) => r,
            Err(_) => return self.on_transport("JoinGroup"),
        };
        if r.error_code == proto::MEMBER_ID_REQUIRED {
            // KIP-394: the first join only hands out the member id.
            self.member_id = r.member_id.to_string();
            self.synced = false;
            return Next::Fine;
        }
        if r.error_code == proto::UNKNOWN_MEMBER_ID && self.moved_since_join {
            // A member id handed out by a coordinator that then died, or
            // that joined a generation it never synced, was not in the
            // group's log; one that synced was.
            let what = if self.synced {
                "UNKNOWN_MEMBER_ID after a coordinator change (member had synced)"
            } else {
                "UNKNOWN_MEMBER_ID after a coordinator change (member never synced)"
            };
            if self.synced {
                self.sh.stats.event(&format!(
                    "{} member {}: {what}",
                    self.group.id, self.member_id
                ));
            }
            self.sh.stats.error("JoinGroup", what);
            return Next::Reset;
        }
        if r.error_code != NONE {
            return self.on_code("JoinGroup", r.error_code);
        }
        self.sh.stats.joins.inc();
        self.moved_since_join = false;
        self.member_id = r.member_id.to_string();
        self.generation = r.generation_id;
        let leader = r.leader == r.member_id;
        let assignments = if leader {
            // Partitions dealt round-robin over the members, in id order.
            let mut ids: Vec<_> = r.members.iter().map(|m| m.member_id.clone()).collect();
            ids.sort();
            ids.iter()
                .enumerate()
                .map(|(i, id)| {
                    let mine: Vec<i32> = (0..cfg.partitions)
                        .filter(|p| *p as usize % ids.len() == i)
                        .collect();
                    SyncGroupRequestAssignment::default()
                        .with_member_id(id.clone())
                        .with_assignment(proto::assignment(&mine))
                })
                .collect()
        } else {
            Vec::new()
        };
        let sync = SyncGroupRequest::default()
            .with_group_id(gid(&self.group.id))
            .with_generation_id(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_assignments(assignments);
        let Some(conn) = self.conn.as_mut() else {
            return Next::Refind;
        };
        let r = match conn.call(&sync, proto::SYNC_V, within).await {
            Ok(r) => r,
            Err(_) => return self.on_transport("SyncGroup"),
        };
        if r.error_code != NONE {
            return self.on_code("SyncGroup", r.error_code);
        }
        match proto::decode_assignment(&r.assignment) {
            Ok(parts) => self.partitions = parts,
            Err(_) => {
                self.sh.stats.error("SyncGroup", "undecodable assignment");
                return Next::Backoff;
            }
        }
        self.joined = true;
        self.synced = true;
        if leader {
            self.sh.stats.rebalances.inc();
        }
        Next::Fine
    }

    async fn heartbeat(&mut self) -> Next {
        let req = HeartbeatRequest::default()
            .with_group_id(gid(&self.group.id))
            .with_generation_id(self.generation)
            .with_member_id(sb(&self.member_id));
        let Some(conn) = self.conn.as_mut() else {
            return Next::Refind;
        };
        match conn
            .call(&req, proto::HEARTBEAT_V, Duration::from_secs(10))
            .await
        {
            Ok(r) => {
                self.sh.stats.heartbeats.inc();
                self.on_code("Heartbeat", r.error_code)
            }
            Err(_) => self.on_transport("Heartbeat"),
        }
    }

    /// Commits the next offset of every partition this member holds.
    async fn commit(&mut self) -> Next {
        if self.partitions.is_empty() {
            return Next::Fine;
        }
        let sent: Vec<(i32, i64)> = {
            let mut parts = self.group.offsets.lock().unwrap();
            self.partitions
                .iter()
                .map(|&p| {
                    let slot = &mut parts[p as usize];
                    let v = slot.next;
                    slot.next += 1;
                    (p, v)
                })
                .collect()
        };
        let req = OffsetCommitRequest::default()
            .with_group_id(gid(&self.group.id))
            .with_generation_id_or_member_epoch(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(TopicName(sb(proto::TOPIC)))
                .with_partitions(
                    sent.iter()
                        .map(|&(p, v)| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(v)
                                .with_committed_metadata(Some(sb("")))
                        })
                        .collect(),
                )]);
        self.sh.stats.commits_sent.inc();
        let Some(conn) = self.conn.as_mut() else {
            return Next::Refind;
        };
        let r = match conn
            .call(&req, proto::COMMIT_V, Duration::from_secs(10))
            .await
        {
            Ok(r) => r,
            Err(_) => return self.on_transport("OffsetCommit"),
        };
        let mut first_error = NONE;
        {
            let mut parts = self.group.offsets.lock().unwrap();
            for p in r.topics.iter().flat_map(|t| t.partitions.iter()) {
                if p.error_code != NONE {
                    if first_error == NONE {
                        first_error = p.error_code;
                    }
                    continue;
                }
                let Some(&(_, v)) = sent.iter().find(|(q, _)| *q == p.partition_index) else {
                    continue;
                };
                let slot = &mut parts[p.partition_index as usize];
                slot.acked = slot.acked.max(v);
                self.sh.stats.partition_commits_acked.inc();
            }
        }
        if first_error == NONE {
            self.sh.stats.commits_acked.inc();
        }
        self.on_code("OffsetCommit", first_error)
    }

    /// LeaveGroup, then close the connection; best effort (a member whose
    /// leave is lost expires with its session).
    async fn leave(&mut self) {
        if let Some(conn) = self.conn.as_mut() {
            let req = LeaveGroupRequest::default()
                .with_group_id(gid(&self.group.id))
                .with_members(vec![MemberIdentity::default()
                    .with_member_id(sb(&self.member_id))
                    .with_reason(Some(sb("soak: leaving")))]);
            match conn
                .call(&req, proto::LEAVE_V, Duration::from_secs(10))
                .await
            {
                Ok(r) => {
                    let code = if r.error_code != NONE {
                        r.error_code
                    } else {
                        r.members.first().map_or(NONE, |m| m.error_code)
                    };
                    if code == NONE {
                        self.sh.stats.leaves.inc();
                    } else {
                        self.sh.stats.code("LeaveGroup", code);
                    }
                }
                Err(_) => self.sh.stats.error("LeaveGroup", "connection"),
            }
        }
        self.conn = None;
        self.joined = false;
        self.synced = false;
        self.member_id.clear();
        self.partitions.clear();
    }

    /// Drops the connection without a word: the process "died". Its next
    /// life is a new member.
    fn crash(&mut self) {
        self.sh.stats.crashes.inc();
        self.conn = None;
        self.joined = false;
        self.synced = false;
        self.member_id.clear();
        self.partitions.clear();
    }
}
