//! Client quotas on a request's way out (Apache's `KafkaApis` around
//! `sendResponseMaybeThrottle`): what the request used is added to its
//! client's rates (Produce: the request's bytes, when it is read; Fetch: the response's;
//! every request: the time the broker spent on it), and a client over a
//! quota is told `throttle_time_ms` and its connection is muted for that
//! long (KIP-219). A Fetch over a quota answers nothing, as Apache's does,
//! and what it would have used is taken back.

use std::future::Future;
use std::time::{Duration, Instant};

use kafka_protocol::messages::{ApiKey, FetchResponse, ResponseKind};
use kafka_protocol::protocol::Encodable;

use crate::broker::Broker;
use crate::client_quotas::enforce::{Client, QuotaType};

/// What a request used: its size and the time spent on it.
pub struct Usage {
    pub api_key: ApiKey,
    pub api_version: i16,
    pub request_bytes: usize,
    pub spent: Duration,
    /// A Produce's byte-rate throttle, counted when it was read
    /// ([`record_produce`]).
    pub produce_throttle: Duration,
}

/// Adds a Produce's bytes to its client's rate when the request is read
/// (Produces of one connection run overlapped, so counting each at its
/// answer would let those in flight pass the quota); returns its throttle.
pub fn record_produce(broker: &Broker, client: &Client<'_>, request_bytes: usize) -> Duration {
    let quotas = &broker.quotas;
    let ms = quotas.record(
        QuotaType::Produce,
        client,
        request_bytes as f64,
        quotas.now_ms(),
    );
    Duration::from_millis(ms)
}

/// Records `usage` for `client` and sets the response's `throttle_time_ms`
/// (0 within its quotas); returns how long to mute the connection from now.
pub fn apply(
    broker: &Broker,
    client: &Client<'_>,
    usage: &Usage,
    mut response: Option<&mut ResponseKind>,
) -> Duration {
    let quotas = &broker.quotas;
    let now = quotas.now_ms();
    let spent = || usage.spent.as_nanos() as f64 * 100.0 / 1e9;
    let exempt = matches!(usage.api_key, ApiKey::WriteTxnMarkers)
        || (usage.api_key == ApiKey::AddPartitionsToTxn && usage.api_version >= 4);
    let request = |responded: bool| match responded && !exempt {
        true => quotas.record(QuotaType::Request, client, spent(), now),
        false => 0,
    };
    // (bandwidth throttle and its type, request throttle)
    let (bandwidth, request_ms) = match usage.api_key {
        ApiKey::Produce => {
            let bandwidth = usage.produce_throttle.as_millis() as u64;
            // acks=0 has no response: no request time is charged (Apache's).
            ((bandwidth, QuotaType::Produce), request(response.is_some()))
        }
        ApiKey::Fetch => match response.as_deref_mut() {
            Some(ResponseKind::Fetch(fetch)) => {
                let size = match quotas.enabled(QuotaType::Fetch) {
                    true => fetch.compute_size(usage.api_version).unwrap_or(0) as f64,
                    false => 0.0,
                };
                let bandwidth = quotas.record(QuotaType::Fetch, client, size, now);
                let request_ms = request(true);
                if bandwidth.max(request_ms) > 0 {
                    quotas.unrecord(QuotaType::Fetch, client, size, now);
                    *fetch = FetchResponse::default().with_session_id(0);
                }
                ((bandwidth, QuotaType::Fetch), request_ms)
            }
            other => ((0, QuotaType::Fetch), request(other.is_some())),
        },
        _ => ((0, QuotaType::Produce), request(response.is_some())),
    };
    let (mut throttle_ms, mut cause) = match bandwidth.0 > request_ms {
        true => bandwidth,
        false => (request_ms, QuotaType::Request),
    };
    // A handler's own throttle (KIP-599's partition mutations) mutes too.
    let handler_ms = response.as_deref().map_or(0, throttle_time).max(0) as u64;
    if handler_ms > throttle_ms {
        (throttle_ms, cause) = (handler_ms, QuotaType::ControllerMutation);
    }
    if throttle_ms == 0 {
        return Duration::ZERO;
    }
    let throttle_ms = throttle_ms.min(i32::MAX as u64);
    broker.metrics.count_throttle(cause.label(), throttle_ms);
    if let Some(response) = response {
        set_throttle_time(response, throttle_ms as i32);
    }
    // A Produce's own byte-rate throttle mutes the connection from when it
    // was read (`record_produce`); only what came on top mutes from now.
    let mute_ms = match usage.api_key {
        ApiKey::Produce => request_ms.max(handler_ms),
        _ => throttle_ms,
    };
    Duration::from_millis(mute_ms)
}

/// Runs `answer`, measuring (when `measure`) the time spent polling it:
/// the broker's own time on the request, as Apache's request quota counts
/// a handler thread's time, without the waits (a long poll, a flush).
pub async fn polled<F: Future>(answer: F, measure: bool) -> (F::Output, Duration) {
    let mut answer = std::pin::pin!(answer);
    let mut spent = Duration::ZERO;
    let out = std::future::poll_fn(|cx| {
        let start = measure.then(Instant::now);
        let poll = answer.as_mut().poll(cx);
        if let Some(start) = start {
            spent += start.elapsed();
        }
        poll
    })
    .await;
    (out, spent)
}

/// Every response with a `throttle_time_ms`, for [`set_throttle_time`] and
/// [`throttle_time`].
macro_rules! with_throttle_time {
    ($m:ident) => {
        $m!(
            Produce,
            Fetch,
            ListOffsets,
            Metadata,
            OffsetCommit,
            OffsetFetch,
            FindCoordinator,
            JoinGroup,
            Heartbeat,
            LeaveGroup,
            SyncGroup,
            DescribeGroups,
            ListGroups,
            ApiVersions,
            CreateTopics,
            DeleteTopics,
            DeleteRecords,
            InitProducerId,
            OffsetForLeaderEpoch,
            AddPartitionsToTxn,
            AddOffsetsToTxn,
            EndTxn,
            TxnOffsetCommit,
            DescribeAcls,
            CreateAcls,
            DeleteAcls,
            DescribeConfigs,
            AlterConfigs,
            AlterReplicaLogDirs,
            DescribeLogDirs,
            CreatePartitions,
            CreateDelegationToken,
            RenewDelegationToken,
            ExpireDelegationToken,
            DescribeDelegationToken,
            DeleteGroups,
            ElectLeaders,
            IncrementalAlterConfigs,
            AlterPartitionReassignments,
            ListPartitionReassignments,
            OffsetDelete,
            DescribeClientQuotas,
            AlterClientQuotas,
            DescribeUserScramCredentials,
            AlterUserScramCredentials,
            AlterPartition,
            UpdateFeatures,
            FetchSnapshot,
            DescribeCluster,
            DescribeProducers,
            BrokerRegistration,
            BrokerHeartbeat,
            UnregisterBroker,
            DescribeTransactions,
            ListTransactions,
            AllocateProducerIds,
            ConsumerGroupHeartbeat,
            ConsumerGroupDescribe,
            ControllerRegistration,
            GetTelemetrySubscriptions,
            PushTelemetry,
            AssignReplicasToDirs,
            ListConfigResources,
            DescribeTopicPartitions,
            ShareGroupHeartbeat,
            ShareGroupDescribe,
            ShareFetch,
            ShareAcknowledge,
            AddRaftVoter,
            RemoveRaftVoter,
            UpdateRaftVoter,
            DescribeShareGroupOffsets,
            AlterShareGroupOffsets,
            DeleteShareGroupOffsets,
        )
    };
}

/// Sets `throttle_time_ms` on a response that has one (the larger of the
/// two, when the handler set one already).
fn set_throttle_time(response: &mut ResponseKind, ms: i32) {
    macro_rules! set {
        ($($variant:ident,)*) => {
            match response {
                $(ResponseKind::$variant(r) => r.throttle_time_ms = r.throttle_time_ms.max(ms),)*
                _ => {}
            }
        };
    }
    with_throttle_time!(set)
}

/// The `throttle_time_ms` a handler set (a `controller_mutation_rate` over
/// its quota), 0 for a response without one.
fn throttle_time(response: &ResponseKind) -> i32 {
    macro_rules! get {
        ($($variant:ident,)*) => {
            match response {
                $(ResponseKind::$variant(r) => r.throttle_time_ms,)*
                _ => 0,
            }
        };
    }
    with_throttle_time!(get)
}

#[cfg(test)]
mod tests;
