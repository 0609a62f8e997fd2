//! KIP-848 consumer groups in the coordinator core (no I/O: each change's
//! write is reported durable at once, so the figures are the coordinator's
//! own work):
//! - convergence: 1,000 members join a group on a 1,000-partition topic,
//!   then heartbeat in rounds (one heartbeat interval: every member once),
//!   each client giving up what it was asked to before its next
//!   heartbeat, as librdkafka and the Java client do; the figure is the
//!   number of intervals until every member is stable at the group epoch;
//! - steady state: heartbeats of a stable 1,000-member group that change
//!   nothing, per CPU-second of the coordinator.
//!
//! Then over the wire, against one kaas broker in a child process: a
//! stable 100-member group's ConsumerGroupHeartbeats, pipelined on one
//! connection, per CPU-second of the broker, beside ApiVersions (the floor:
//! framing and dispatch with no handler work) in the same run.

use std::collections::BTreeMap;

use kaas_broker::group::assignor::MemberAssignment;
use kaas_broker::group::consumer::heartbeat::HeartbeatRequest;
use kaas_broker::group::consumer::records::TopicMetadata;
use kaas_broker::group::core::{Effect, GroupCoordinator, GroupCoordinatorConfig, Response};
use uuid::Uuid;

use bytes::Bytes;
use kafka_protocol::messages::consumer_group_heartbeat_request;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ConsumerGroupHeartbeatRequest, CreateTopicsRequest, GroupId,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::report::{emit, median, note, section, Figure, Target};
use crate::routing::{batches, BATCH};
use crate::sys::own_cpu;
use crate::wire::{self, ChildServer, RawConn};
use crate::Env;

const GROUP: &str = "bench-kip848";

/// A client's view of itself: its epoch and the partitions it owns.
struct Client {
    id: String,
    epoch: i32,
    owned: MemberAssignment,
}

struct Coordinator {
    core: GroupCoordinator,
    topics: BTreeMap<String, TopicMetadata>,
    token: u64,
    now: u64,
}

impl Coordinator {
    fn new(partitions: i32) -> Coordinator {
        let topics = [(
            "t".to_string(),
            TopicMetadata {
                id: Uuid::from_u128(1),
                name: "t".into(),
                num_partitions: partitions,
            },
        )]
        .into();
        Coordinator {
            core: GroupCoordinator::new(GroupCoordinatorConfig::default()),
            topics,
            token: 0,
            now: 0,
        }
    }

    /// One heartbeat of `client`, its change made durable at once; the
    /// client takes its new epoch and assignment.
    fn heartbeat(&mut self, client: &mut Client) -> anyhow::Result<()> {
        self.token += 1;
        let joining = client.epoch == 0;
        let request = HeartbeatRequest {
            group_id: GROUP.into(),
            member_id: client.id.clone(),
            member_epoch: client.epoch,
            rebalance_timeout_ms: if joining { 60_000 } else { -1 },
            subscribed_topic_names: joining.then(|| vec!["t".to_string()]),
            owned: Some(client.owned.clone()),
            ..Default::default()
        };
        let mut pending =
            self.core
                .consumer_group_heartbeat(self.token, request, &self.topics, self.now);
        let mut answer = None;
        while let Some(effect) = pending.pop() {
            match effect {
                Effect::PersistConsumerRecords {
                    group_id, write, ..
                } => pending.extend(self.core.complete_consumer_write(
                    &group_id,
                    write,
                    Ok(()),
                    self.now,
                )),
                Effect::Respond(_, Response::ConsumerGroupHeartbeat(r)) => answer = Some(r),
                _ => {}
            }
        }
        let r = answer
            .ok_or_else(|| anyhow::anyhow!("no answer"))?
            .map_err(|e| anyhow::anyhow!("heartbeat refused: {e}"))?;
        client.epoch = r.member_epoch;
        if let Some(assigned) = r.assignment {
            // The client revokes and takes what it is given at once.
            client.owned = assigned;
        }
        Ok(())
    }

    fn stable(&self) -> bool {
        self.core
            .consumer_group(GROUP)
            .is_some_and(|g| g.state().as_str() == "Stable")
    }
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let members: usize = if env.quick { 200 } else { 1_000 };
    let partitions = members as i32;
    section(&format!(
        "Consumer groups (KIP-848), the coordinator core: {members} members, {partitions} partitions"
    ));
    let mut c = Coordinator::new(partitions);
    let mut clients: Vec<Client> = (0..members)
        .map(|i| Client {
            id: format!("member-{i:04}"),
            epoch: 0,
            owned: MemberAssignment::new(),
        })
        .collect();
    let cpu = own_cpu();
    for client in clients.iter_mut() {
        c.heartbeat(client)?;
    }
    let mut intervals = 0;
    while !c.stable() {
        anyhow::ensure!(intervals < 50, "not stable after 50 heartbeat intervals");
        for client in clients.iter_mut() {
            c.heartbeat(client)?;
        }
        intervals += 1;
    }
    let converge_cpu = (own_cpu() - cpu).as_secs_f64();
    let group = c.core.consumer_group(GROUP).expect("the group");
    let epoch = group.group_epoch();
    anyhow::ensure!(
        clients.iter().all(|m| m.epoch == epoch),
        "a member is not at the group epoch"
    );
    let owned: usize = clients
        .iter()
        .map(|m| m.owned.values().map(|p| p.len()).sum::<usize>())
        .sum();
    anyhow::ensure!(owned == partitions as usize, "{owned} partitions owned");
    emit(
        Figure::new(
            format!("consumer groups: heartbeat intervals from {members} joins to a stable group"),
            intervals as f64,
            "intervals",
        )
        .target(Target::AtMost(3.0)),
    );
    emit(Figure::new(
        format!("consumer groups: coordinator CPU for {members} joins until stable"),
        converge_cpu * 1000.0,
        "ms",
    ));

    // Steady state: nothing changes, nothing is written.
    let rounds = if env.quick { 20 } else { 100 };
    let cpu = own_cpu();
    for _ in 0..rounds {
        for client in clients.iter_mut() {
            c.heartbeat(client)?;
        }
    }
    let cpu_s = (own_cpu() - cpu).as_secs_f64().max(1e-9);
    emit(
        Figure::new(
            format!("consumer groups: steady-state heartbeats of a {members}-member group per CPU-second"),
            (rounds * members) as f64 / cpu_s,
            "heartbeats/CPU-s",
        )
        .target(Target::AtLeast(100_000.0)),
    );
    over_the_wire(env).await
}

const WIRE_MEMBERS: usize = 100;

async fn over_the_wire(env: &Env) -> anyhow::Result<()> {
    let rounds = if env.quick { 1 } else { 3 };
    let window = std::time::Duration::from_millis(if env.quick { 1000 } else { 2000 });
    section(&format!(
        "Consumer groups over the wire: a stable {WIRE_MEMBERS}-member group's heartbeats, pipelined ({} in flight), {rounds} rounds of {} ms",
        2 * BATCH,
        window.as_millis()
    ));
    let server = ChildServer::kaas(1, &env.dir("kip848-wire"))?;
    let addr = server.bootstrap.clone();
    let hv = wire::negotiate(&addr, ApiKey::ConsumerGroupHeartbeat, 1).await?;
    let tv = wire::negotiate(&addr, ApiKey::CreateTopics, 5).await?;
    let mut c = RawConn::connect(&addr).await?;
    let created = c
        .call(
            &CreateTopicsRequest::default()
                .with_topics(vec![CreatableTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("bench-kip848")))
                    .with_num_partitions(WIRE_MEMBERS as i32)
                    .with_replication_factor(1)])
                .with_timeout_ms(10_000),
            tv,
        )
        .await?;
    anyhow::ensure!(created.topics[0].error_code == 0, "CreateTopics failed");
    type Owned = Vec<consumer_group_heartbeat_request::TopicPartitions>;
    let request = |member: usize, epoch: i32, joining: bool, owned: Option<Owned>| {
        let r = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
            .with_member_id(StrBytes::from_string(format!("member-{member:03}")))
            .with_member_epoch(epoch)
            .with_topic_partitions(owned);
        if joining {
            r.with_rebalance_timeout_ms(60_000)
                .with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_static_str(
                    "bench-kip848",
                ))]))
        } else {
            r.with_rebalance_timeout_ms(-1)
        }
    };
    // Join, then heartbeat until every member is at the group epoch with
    // its share (the clients here give up what they are asked at once).
    let mut epochs = vec![0; WIRE_MEMBERS];
    let mut owned: Vec<Owned> = vec![Vec::new(); WIRE_MEMBERS];
    let take = |r: &kafka_protocol::messages::ConsumerGroupHeartbeatResponse, owned: &mut Owned| {
        if let Some(a) = &r.assignment {
            *owned = a
                .topic_partitions
                .iter()
                .map(|t| {
                    consumer_group_heartbeat_request::TopicPartitions::default()
                        .with_topic_id(t.topic_id)
                        .with_partitions(t.partitions.clone())
                })
                .collect();
        }
        r.assignment.is_some()
    };
    for m in 0..WIRE_MEMBERS {
        let r = c.call(&request(m, 0, true, Some(Vec::new())), hv).await?;
        anyhow::ensure!(r.error_code == 0, "join: {:?}", r.error_message);
        epochs[m] = r.member_epoch;
        take(&r, &mut owned[m]);
    }
    let mut stable = false;
    for _ in 0..20 {
        let mut changed = false;
        for m in 0..WIRE_MEMBERS {
            // The client reports what it owns after giving up what it was
            // asked to.
            let r = c
                .call(&request(m, epochs[m], false, Some(owned[m].clone())), hv)
                .await?;
            anyhow::ensure!(r.error_code == 0, "heartbeat: {:?}", r.error_message);
            changed |= r.member_epoch != epochs[m];
            epochs[m] = r.member_epoch;
            changed |= take(&r, &mut owned[m]);
        }
        if !changed && epochs.iter().all(|e| *e == epochs[0]) {
            stable = true;
            break;
        }
    }
    anyhow::ensure!(stable, "the group did not settle");
    let frames: Vec<Bytes> = (0..WIRE_MEMBERS)
        .map(|m| wire::frame(&request(m, epochs[m], false, None), hv, m as i32))
        .collect::<Result<_, _>>()?;
    let versions = vec![wire::frame(
        &ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str(wire::CLIENT_ID))
            .with_client_software_version(StrBytes::from_static_str("1")),
        3,
        1,
    )?];
    let mut heartbeats = Vec::new();
    let mut floor = Vec::new();
    for _ in 0..rounds {
        for (frames, out) in [(&frames, &mut heartbeats), (&versions, &mut floor)] {
            let batched = batches(frames);
            let cpu0 = server.cpu();
            let n = wire::pipelined(&addr, &batched, BATCH, window).await?;
            let cpu = (server.cpu() - cpu0).as_secs_f64().max(1e-9);
            out.push(n as f64 / cpu);
        }
    }
    emit(
        Figure::new(
            "consumer groups: ConsumerGroupHeartbeat pipelined per core (steady)",
            median(&heartbeats),
            "req/CPU-s",
        )
        .baseline("ApiVersions", median(&floor))
        .target(Target::AtLeast(100_000.0)),
    );
    note("per core = requests / CPU-seconds of the broker process during the window");
    Ok(())
}
