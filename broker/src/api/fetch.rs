//! Fetch (key 1): whole batches below the high watermark (below the last
//! stable offset, with the aborted transactions they may hold, for
//! `read_committed`), with long polls.
//!
//! Fetch sessions (KIP-227) are refused the way Apache permits: every
//! response carries session id 0, so clients send full fetch requests.

use std::time::Duration;

use futures::future::select_all;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, ProducerId};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{
    broker_endpoint, leader_epoch_error, open_error_code, topic_denied, Err, RequestContext,
};
use crate::auth::Operation;
use crate::client_quotas::enforce::{Client, QuotaType};

pub async fn handle(ctx: &RequestContext, req: FetchRequest) -> FetchResponse {
    if req.session_id != 0 {
        // We never hand out sessions, so any id the client names is unknown.
        return FetchResponse::default()
            .with_error_code(Err::FetchSessionIdNotFound.code())
            .with_session_id(0);
    }
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    // A new assignment may move a fetched partition's leadership (or drop
    // a deleted topic's): as Apache completes a delayed fetch when a
    // partition leaves its leader, the wait ends and the next round
    // answers what changed.
    let mut assignments = ctx.broker.cluster.subscribe();
    loop {
        assignments.borrow_and_update();
        let round = read_once(ctx, &req).await;
        let done = round.bytes >= req.min_bytes.max(0) as usize
            || round.has_error
            || round.waiters.is_empty()
            || Instant::now() >= deadline;
        if done {
            return round.response;
        }
        // Wait for any fetched partition's high watermark to move.
        let mut waiters = round.waiters;
        let appended = select_all(waiters.iter_mut().map(|w| Box::pin(w.changed())));
        tokio::select! {
            _ = appended => {}
            Ok(()) = assignments.changed() => {}
            _ = tokio::time::sleep_until(deadline) => {
                return read_once(ctx, &req).await.response;
            }
        }
    }
}

struct Round {
    response: FetchResponse,
    bytes: usize,
    has_error: bool,
    waiters: Vec<watch::Receiver<i64>>,
}

async fn read_once(ctx: &RequestContext, req: &FetchRequest) -> Round {
    let broker = &ctx.broker;
    let routing = broker.routing();
    let by_id = ctx.api_version >= 13;
    let read_committed = req.isolation_level == 1;
    let mut budget = if req.max_bytes > 0 {
        req.max_bytes as usize
    } else {
        usize::MAX
    };
    // A client with a consumer byte-rate quota asks for no more than the
    // quota lets through from a standstill (Apache's
    // `getMaxValueInQuotaWindow`): more would be throttled, answered with
    // nothing, and asked again.
    if broker.quotas.any() {
        let client = Client {
            user: &ctx.principal.name,
            client_id: &ctx.client_id,
        };
        if let Some(max) = broker.quotas.max_in_window(QuotaType::Fetch, &client) {
            budget = budget.min(max as usize);
        }
    }
    let mut round = Round {
        response: FetchResponse::default().with_session_id(0),
        bytes: 0,
        has_error: false,
        waiters: Vec::new(),
    };
    let mut hinted = Vec::new();
    for topic in &req.topics {
        let meta = if by_id {
            broker.storage.topics.get_by_id(topic.topic_id)
        } else {
            broker.storage.topics.get(topic.topic.0.as_str())
        };
        let mut out = FetchableTopicResponse::default()
            .with_topic(topic.topic.clone())
            .with_topic_id(topic.topic_id);
        let denied = topic_denied(
            ctx,
            Operation::Read,
            by_id,
            topic.topic.0.as_str(),
            meta.as_deref(),
        );
        for p in &topic.partitions {
            let mut data = PartitionData::default()
                .with_partition_index(p.partition)
                .with_high_watermark(-1)
                .with_last_stable_offset(-1)
                .with_log_start_offset(-1)
                .with_aborted_transactions(None)
                .with_records(Some(bytes::Bytes::new()));
            let error = |data: &mut PartitionData, code: i16| data.error_code = code;
            if denied {
                error(&mut data, Err::TopicAuthorizationFailed.code());
                round.has_error = true;
                out.partitions.push(data);
                continue;
            }
            let Some(meta) = meta.as_ref() else {
                let code = if by_id {
                    Err::UnknownTopicId.code()
                } else {
                    Err::UnknownTopicOrPartition.code()
                };
                error(&mut data, code);
                round.has_error = true;
                out.partitions.push(data);
                continue;
            };
            if p.partition < 0 || p.partition >= meta.partitions {
                error(&mut data, Err::UnknownTopicOrPartition.code());
                round.has_error = true;
                out.partitions.push(data);
                continue;
            }
            let leader = routing
                .as_ref()
                .and_then(|r| r.owner_of_partition(&meta.name, p.partition));
            let epoch = routing.as_ref().map_or(-1, |r| r.leader_epoch());
            if leader != Some(broker.id()) {
                error(&mut data, Err::NotLeaderOrFollower.code());
                if ctx.api_version >= 12 {
                    data.current_leader = LeaderIdAndEpoch::default()
                        .with_leader_id(BrokerId(leader.unwrap_or(-1)))
                        .with_leader_epoch(if leader.is_some() { epoch } else { -1 });
                }
                hinted.extend(leader);
                round.has_error = true;
                out.partitions.push(data);
                continue;
            }
            // The leader check found a routing.
            if let Some(rt) = routing.as_ref() {
                let code = leader_epoch_error(rt, p.current_leader_epoch);
                if code != 0 {
                    error(&mut data, code);
                    // KIP-951: a fenced fetch learns the leader's epoch.
                    if code == Err::FencedLeaderEpoch.code() && ctx.api_version >= 12 {
                        data.current_leader = LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(broker.id()))
                            .with_leader_epoch(epoch);
                        hinted.push(broker.id());
                    }
                    round.has_error = true;
                    out.partitions.push(data);
                    continue;
                }
            }
            let partition = match broker.storage.partition(meta, p.partition).await {
                Ok(partition) => partition,
                Err(e) => {
                    error(&mut data, open_error_code(&e));
                    round.has_error = true;
                    out.partitions.push(data);
                    continue;
                }
            };
            // Subscribe before reading so an append in between still wakes us.
            let waiter = partition.subscribe();
            let hw = partition.high_watermark();
            let start = partition.log_start_offset();
            data.high_watermark = hw;
            data.last_stable_offset = partition.last_stable_offset();
            data.log_start_offset = start;
            // Null for read_uncommitted, as Apache answers.
            data.aborted_transactions = read_committed.then(Vec::new);
            if p.fetch_offset < start || p.fetch_offset > hw {
                error(&mut data, Err::OffsetOutOfRange.code());
                round.has_error = true;
                out.partitions.push(data);
                continue;
            }
            // KIP-74: the first partition with data may exceed the limits.
            let limit = (p.partition_max_bytes.max(0) as usize).min(budget);
            let max = if round.bytes == 0 {
                limit.max(1)
            } else {
                limit
            };
            // read_committed: up to the last stable offset, with the
            // aborted transactions the records may hold.
            let read =
                match read_committed {
                    true => partition.read_committed(p.fetch_offset, max).map(
                        |(records, lso, aborted)| {
                            data.last_stable_offset = lso;
                            data.aborted_transactions = Some(
                                aborted
                                    .iter()
                                    .map(|t| {
                                        AbortedTransaction::default()
                                            .with_producer_id(ProducerId(t.producer_id))
                                            .with_first_offset(t.first_offset)
                                    })
                                    .collect(),
                            );
                            records
                        },
                    ),
                    false => partition.read(p.fetch_offset, max),
                };
            match read {
                Ok(records) if records.len() <= max || round.bytes == 0 => {
                    budget = budget.saturating_sub(records.len());
                    broker.metrics.fetch_bytes.inc_by(records.len() as u64);
                    round.bytes += records.len();
                    if records.is_empty() {
                        round.waiters.push(waiter);
                    }
                    data.records = Some(records);
                }
                Ok(_) => {}
                Err(_) => {
                    error(&mut data, Err::KafkaStorageError.code());
                    round.has_error = true;
                }
            }
            out.partitions.push(data);
        }
        round.response.responses.push(out);
    }
    if ctx.api_version >= 16 {
        hinted.sort_unstable();
        hinted.dedup();
        for id in hinted {
            if let Some((host, port)) = broker_endpoint(ctx, id) {
                round.response.node_endpoints.push(
                    NodeEndpoint::default()
                        .with_node_id(BrokerId(id))
                        .with_host(StrBytes::from_string(host))
                        .with_port(port),
                );
            }
        }
    }
    round
}
