//! Consumer lag without an exporter: at each scrape of `/metrics` the
//! group coordinator sets, for every committed offset of the groups it
//! coordinates (those in memory, and those out of memory as their logs
//! hold them), the partition's log end offset (its high watermark: read
//! from the log when this broker leads the partition, else asked of the
//! leader with one ListOffsets per leader) and the lag between them; and
//! each leader sets its open partitions' log start offset, end offset and
//! size. Per-partition lag series stop at
//! `kaas.lag.metrics.max.partitions` (the per-group, per-topic sum is
//! always set), so a coordinator with many groups cannot flood the
//! metrics.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use tracing::debug;

use crate::broker::Broker;
use crate::metrics::{GroupPartitionLabels, GroupTopicLabels, PartitionLabels};

/// A partition of a topic.
type TopicPartition = (String, i32);

/// One committed offset beside its partition's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLag {
    pub labels: GroupPartitionLabels,
    pub committed: i64,
    pub end: i64,
    pub lag: i64,
}

/// Each committed offset's lag, capped at `max_series` per-partition
/// series: the series to set per partition, and the per-group, per-topic
/// sums (of every partition, beyond the cap too). A lag is never negative
/// (an offset committed past the end, as clients may, counts 0); a
/// partition whose end is unknown is left out.
pub fn lag_series(
    committed: &[(String, String, i32, i64)],
    ends: &HashMap<TopicPartition, i64>,
    max_series: usize,
) -> (Vec<PartitionLag>, BTreeMap<GroupTopicLabels, i64>) {
    let mut per_partition = Vec::new();
    let mut sums = BTreeMap::new();
    for (group, topic, partition, offset) in committed {
        let Some(&end) = ends.get(&(topic.clone(), *partition)) else {
            continue;
        };
        let lag = (end - offset).max(0);
        *sums
            .entry(GroupTopicLabels {
                group: group.clone(),
                topic: topic.clone(),
            })
            .or_insert(0) += lag;
        if per_partition.len() < max_series {
            per_partition.push(PartitionLag {
                labels: GroupPartitionLabels {
                    group: group.clone(),
                    topic: topic.clone(),
                    partition: partition.to_string(),
                },
                committed: *offset,
                end,
                lag,
            });
        }
    }
    (per_partition, sums)
}

/// Sets the lag and partition gauges as of now.
pub async fn refresh(broker: &Broker) {
    // After a restart or a move, groups not in memory are read first.
    broker.groups.clone().learn_offsets_on_disk().await;
    let committed = broker.groups.committed_offsets();
    let mut wanted: Vec<TopicPartition> = committed
        .iter()
        .map(|(_, t, p, _)| (t.clone(), *p))
        .collect();
    wanted.sort();
    wanted.dedup();
    let ends = end_offsets(broker, &wanted).await;
    let (per_partition, sums) =
        lag_series(&committed, &ends, broker.config.lag_metrics_max_partitions);
    let m = &broker.metrics;
    m.group_committed_offset.clear();
    m.group_log_end_offset.clear();
    m.group_lag.clear();
    m.group_topic_lag.clear();
    for p in per_partition {
        m.group_committed_offset
            .get_or_create(&p.labels)
            .set(p.committed);
        m.group_log_end_offset.get_or_create(&p.labels).set(p.end);
        m.group_lag.get_or_create(&p.labels).set(p.lag);
    }
    for (labels, lag) in sums {
        m.group_topic_lag.get_or_create(&labels).set(lag);
    }
    m.partition_log_start_offset.clear();
    m.partition_log_end_offset.clear();
    m.partition_size_bytes.clear();
    for p in broker.storage.open_partitions() {
        let labels = PartitionLabels {
            topic: p.topic.clone(),
            partition: p.index.to_string(),
        };
        m.partition_log_start_offset
            .get_or_create(&labels)
            .set(p.log_start_offset());
        m.partition_log_end_offset
            .get_or_create(&labels)
            .set(p.high_watermark());
        m.partition_size_bytes
            .get_or_create(&labels)
            .set(p.size() as i64);
    }
}

/// The high watermark of each partition in `wanted`: read here for those
/// this broker leads, asked of each other leader in one ListOffsets.
async fn end_offsets(broker: &Broker, wanted: &[TopicPartition]) -> HashMap<TopicPartition, i64> {
    let mut ends = HashMap::new();
    let Some(routing) = broker.routing() else {
        return ends;
    };
    let mut by_leader: BTreeMap<i32, Vec<&TopicPartition>> = BTreeMap::new();
    for tp in wanted {
        let Some(meta) = broker.storage.topics.get(&tp.0) else {
            continue;
        };
        if !(0..meta.partitions).contains(&tp.1) {
            continue;
        }
        match routing.owner_of_partition(&tp.0, tp.1) {
            Some(leader) if leader == broker.id() => {
                if let Ok(p) = broker.storage.partition(&meta, tp.1).await {
                    ends.insert(tp.clone(), p.high_watermark());
                }
            }
            Some(leader) => by_leader.entry(leader).or_default().push(tp),
            None => {}
        }
    }
    for (leader, partitions) in by_leader {
        let Some(b) = routing.broker(leader) else {
            continue;
        };
        let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (t, p) in partitions {
            topics.entry(t).or_default().push(*p);
        }
        let req = ListOffsetsRequest::default()
            .with_replica_id((-1).into())
            .with_topics(
                topics
                    .into_iter()
                    .map(|(t, ps)| {
                        ListOffsetsTopic::default()
                            .with_name(TopicName(StrBytes::from_string(t.to_string())))
                            .with_partitions(
                                ps.into_iter()
                                    .map(|p| {
                                        ListOffsetsPartition::default()
                                            .with_partition_index(p)
                                            .with_timestamp(-1)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
        let addr = format!("{}:{}", b.host, b.port);
        match broker.peers.send(&addr, &req, 5).await {
            Ok(resp) => {
                for t in resp.topics {
                    for p in t.partitions.into_iter().filter(|p| p.error_code == 0) {
                        ends.insert((t.name.to_string(), p.partition_index), p.offset);
                    }
                }
            }
            // Their lag is left out of this scrape.
            Err(e) => debug!(leader, error = %e, "cannot ask a leader for its end offsets"),
        }
    }
    ends
}

#[cfg(test)]
mod tests;
