//! Markers to a transaction's partitions: appended here to the partitions
//! this broker leads, sent as WriteTxnMarkers to the leaders of the
//! others. Every partition is retried (with a growing pause) until it has
//! its marker or no longer exists; a leader that moved answers
//! NOT_LEADER_OR_FOLLOWER and the next try goes to the new one.

use std::collections::BTreeMap;
use std::sync::Weak;
use std::time::Duration;

use futures::future::BoxFuture;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as Err;
use tracing::{debug, warn};

use crate::broker::Broker;
use crate::storage::batch::ControlMarker;
use crate::storage::log::AppendError;
use crate::txn::core::{TopicPartition, TxnResult};
use crate::txn::manager::{MarkerJob, MarkerWriter};

/// Appends one marker to a partition this broker leads; the error code for
/// the WriteTxnMarkers answer (NONE once it is fsynced).
pub async fn append_marker_here(
    broker: &Broker,
    topic: &str,
    partition: i32,
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
) -> i16 {
    // A consumer group's offsets: its coordinator commits or drops them.
    if let Some(group_id) = TopicPartition::new(topic, partition).offsets_group() {
        return match broker
            .groups
            .txn_marker(group_id, producer_id, commit)
            .await
        {
            Ok(code) => code,
            // Moved: the next try goes to the new coordinator.
            Err(e) if e.0 == Err::NotCoordinator.code() => Err::NotLeaderOrFollower.code(),
            Err(e) => e.0,
        };
    }
    let Some(meta) = broker
        .storage
        .topics
        .get(topic)
        .filter(|m| (0..m.partitions).contains(&partition))
    else {
        return Err::UnknownTopicOrPartition.code();
    };
    let Some(routing) = broker
        .routing()
        .filter(|r| r.owner_of_partition(topic, partition) == Some(broker.id()))
    else {
        return Err::NotLeaderOrFollower.code();
    };
    let part = match broker.storage.partition(&meta, partition).await {
        Ok(p) => p,
        Err(e) => return super::open_error_code(&e),
    };
    let marker = ControlMarker {
        commit,
        coordinator_epoch,
    };
    let now = crate::storage::log::wall_clock_ms();
    match part
        .append_marker(
            producer_id,
            producer_epoch,
            marker,
            now,
            routing.leader_epoch(),
        )
        .await
    {
        Ok(offset) => {
            debug!(
                topic,
                partition, producer_id, commit, offset, "transaction marker appended"
            );
            0
        }
        Err(AppendError::Refused(code)) => code,
        // A marker is a few dozen bytes.
        Err(AppendError::TooLarge { .. }) => Err::MessageTooLarge.code(),
        Err(AppendError::Io(e)) => {
            warn!(topic, partition, error = %e, "cannot append a transaction marker");
            super::open_error_code(&e)
        }
    }
}

/// Whether a partition's answer to a marker ends its part of the job: done,
/// gone, or superseded (a newer producer epoch or coordinator wrote since).
fn settled(code: i16) -> bool {
    code == 0
        || code == Err::UnknownTopicOrPartition.code()
        || code == Err::InvalidProducerEpoch.code()
        || code == Err::TransactionCoordinatorFenced.code()
}

/// The marker writer of a broker.
pub struct BrokerMarkers {
    pub broker: Weak<Broker>,
}

impl MarkerWriter for BrokerMarkers {
    fn write(&self, job: MarkerJob) -> BoxFuture<'static, ()> {
        let broker = self.broker.clone();
        Box::pin(async move {
            let commit = job.result == TxnResult::Commit;
            let mut left = job.partitions.clone();
            let mut pause = Duration::from_millis(20);
            while !left.is_empty() {
                // The broker is going away: a new coordinator finishes it.
                let Some(broker) = broker.upgrade() else {
                    return;
                };
                let routing = broker.routing();
                // Every partition led here, and every other leader, at once.
                let mut here = Vec::new();
                let mut remote: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
                for tp in &left {
                    // A group's offsets go to the group's coordinator.
                    let leader = routing.as_ref().and_then(|r| match tp.offsets_group() {
                        Some(group_id) => r.owner_of_group(group_id),
                        None => r.owner_of_partition(&tp.topic, tp.partition),
                    });
                    match leader {
                        Some(id) if id == broker.id() => here.push(tp.clone()),
                        Some(id) => remote.entry(id).or_default().push(tp.clone()),
                        None => {}
                    }
                }
                let local = futures::future::join_all(here.into_iter().map(|tp| {
                    let broker = broker.clone();
                    let job = &job;
                    async move {
                        let code = append_marker_here(
                            &broker,
                            &tp.topic,
                            tp.partition,
                            job.producer_id,
                            job.producer_epoch,
                            commit,
                            job.coordinator_epoch,
                        )
                        .await;
                        vec![(tp, code)]
                    }
                }));
                let sent =
                    futures::future::join_all(remote.into_iter().map(|(leader, partitions)| {
                        let broker = broker.clone();
                        let job = &job;
                        async move {
                            match send(&broker, leader, job, commit, &partitions).await {
                                Ok(answers) => answers,
                                Err(e) => {
                                    debug!(leader, error = %e, "WriteTxnMarkers failed; retrying");
                                    Vec::new()
                                }
                            }
                        }
                    }));
                let (local, sent) = futures::future::join(local, sent).await;
                let mut unsettled = Vec::new();
                for (tp, code) in local.into_iter().chain(sent).flatten() {
                    if settled(code) {
                        left.remove(&tp);
                    } else {
                        unsettled.push((tp, code));
                    }
                }
                // Retried at the longest pause: say what holds it up.
                if pause >= Duration::from_secs(2) && !left.is_empty() {
                    warn!(transactional_id = %job.transactional_id, producer_id = job.producer_id,
                          partitions = left.len(), answers = ?unsettled,
                          "transaction markers not all written yet; retrying");
                }
                if !left.is_empty() {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        })
    }
}

/// WriteTxnMarkers to `leader` for `partitions`: each partition's code.
async fn send(
    broker: &Broker,
    leader: i32,
    job: &MarkerJob,
    commit: bool,
    partitions: &[TopicPartition],
) -> anyhow::Result<Vec<(TopicPartition, i16)>> {
    let (host, port) = broker
        .routing()
        .and_then(|r| r.broker(leader).map(|b| (b.host.clone(), b.port)))
        .ok_or_else(|| anyhow::anyhow!("broker {leader} is not in the assignment"))?;
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        by_topic.entry(&tp.topic).or_default().push(tp.partition);
    }
    let marker = WritableTxnMarker::default()
        .with_producer_id(ProducerId(job.producer_id))
        .with_producer_epoch(job.producer_epoch)
        .with_transaction_result(commit)
        .with_coordinator_epoch(job.coordinator_epoch)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    WritableTxnMarkerTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                        .with_partition_indexes(partitions)
                })
                .collect(),
        );
    let req = WriteTxnMarkersRequest::default().with_markers(vec![marker]);
    let resp = broker
        .peers
        .send(&format!("{host}:{port}"), &req, 1)
        .await?;
    let mut out = Vec::new();
    for m in resp.markers {
        for t in m.topics {
            for p in t.partitions {
                out.push((
                    TopicPartition::new(t.name.0.to_string(), p.partition_index),
                    p.error_code,
                ));
            }
        }
    }
    Ok(out)
}
