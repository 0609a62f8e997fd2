//! ListOffsets (key 2): earliest, latest, max timestamp, or by timestamp.

use bytes::Bytes;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use kafka_protocol::records::RecordBatchDecoder;

use super::{leader_epoch_error, open_error_code, Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::storage::batch;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

pub async fn handle(ctx: &RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse {
    let broker = &ctx.broker;
    let routing = broker.routing();
    let mut resp = ListOffsetsResponse::default();
    for topic in req.topics {
        let meta = broker.storage.topics.get(topic.name.0.as_str());
        let mut out = ListOffsetsTopicResponse::default().with_name(topic.name.clone());
        let denied = !ctx.authorized(
            Operation::Describe,
            ResourceType::Topic,
            topic.name.0.as_str(),
        );
        for p in topic.partitions {
            let mut r = ListOffsetsPartitionResponse::default()
                .with_partition_index(p.partition_index)
                .with_timestamp(-1)
                .with_offset(-1)
                .with_leader_epoch(-1);
            if denied {
                r.error_code = Err::TopicAuthorizationFailed.code();
                out.partitions.push(r);
                continue;
            }
            let Some(meta) = meta
                .as_ref()
                .filter(|m| (0..m.partitions).contains(&p.partition_index))
            else {
                r.error_code = Err::UnknownTopicOrPartition.code();
                out.partitions.push(r);
                continue;
            };
            let Some(rt) = routing.as_ref().filter(|rt| {
                rt.owner_of_partition(&meta.name, p.partition_index) == Some(broker.id())
            }) else {
                r.error_code = Err::NotLeaderOrFollower.code();
                out.partitions.push(r);
                continue;
            };
            // v4+ fences a client with other metadata than ours.
            let code = leader_epoch_error(rt, p.current_leader_epoch);
            if code != 0 {
                r.error_code = code;
                out.partitions.push(r);
                continue;
            }
            let partition = match broker.storage.partition(meta, p.partition_index).await {
                Ok(partition) => partition,
                Err(e) => {
                    r.error_code = open_error_code(&e);
                    out.partitions.push(r);
                    continue;
                }
            };
            // What a reader at the request's isolation level may fetch.
            let last_fetchable = match req.isolation_level {
                1 => partition.last_stable_offset(),
                _ => partition.high_watermark(),
            };
            let found: std::io::Result<Option<(i64, i64)>> = match p.timestamp {
                LATEST => Ok(Some((last_fetchable, -1))),
                EARLIEST | EARLIEST_LOCAL => Ok(Some((partition.log_start_offset(), -1))),
                // No tiered storage: nothing is tiered.
                LATEST_TIERED => Ok(None),
                MAX_TIMESTAMP => partition
                    .batch_with_max_timestamp()
                    .map(|b| b.and_then(|b| record_at_timestamp(&b, None))),
                ts if ts >= 0 => partition
                    .batch_for_timestamp(ts)
                    .map(|b| b.and_then(|b| record_at_timestamp(&b, Some(ts)))),
                _ => {
                    r.error_code = Err::InvalidRequest.code();
                    out.partitions.push(r);
                    continue;
                }
            };
            // A timestamp's record a read_committed reader cannot fetch yet
            // is not found (LATEST and EARLIEST are bounds, not records);
            // one below the log start offset (DeleteRecords cut into its
            // batch) answers the start.
            let start = partition.log_start_offset();
            let found = found.map(|f| {
                f.map(|(offset, ts)| (offset.max(start), ts))
                    .filter(|(offset, _)| {
                        matches!(p.timestamp, LATEST | EARLIEST | EARLIEST_LOCAL)
                            || *offset < last_fetchable
                    })
            });
            match found {
                Ok(Some((offset, timestamp))) => {
                    r.offset = offset;
                    r.timestamp = timestamp;
                    // The epoch that wrote the offset, as Apache's
                    // `fetchOffsetByTimestamp`: the latest for the end.
                    if ctx.api_version >= 4 {
                        r.leader_epoch = match p.timestamp {
                            LATEST => partition.latest_epoch(),
                            _ => partition.epoch_of_offset(offset),
                        };
                    }
                }
                Ok(None) => {}
                Err(_) => r.error_code = Err::KafkaStorageError.code(),
            }
            out.partitions.push(r);
        }
        resp.topics.push(out);
    }
    resp
}

/// The (offset, timestamp) of the first record in `batch_bytes` at or after
/// `ts`, or of the record with the largest timestamp when `ts` is None.
/// Compressed batches are not opened: their base offset and max timestamp
/// answer, which never skips a record the client asked for.
fn record_at_timestamp(batch_bytes: &Bytes, ts: Option<i64>) -> Option<(i64, i64)> {
    let header = batch::parse_header(batch_bytes).ok()?;
    let fallback = Some((header.base_offset, header.max_timestamp));
    if batch::is_compressed(batch_bytes) {
        return fallback;
    }
    let mut buf = batch_bytes.clone();
    let Ok(set) = RecordBatchDecoder::decode(&mut buf) else {
        return fallback;
    };
    match ts {
        Some(ts) => set
            .records
            .iter()
            .find(|r| r.timestamp >= ts)
            .map(|r| (r.offset, r.timestamp))
            .or(fallback),
        None => set
            .records
            .iter()
            .max_by_key(|r| (r.timestamp, std::cmp::Reverse(r.offset)))
            .map(|r| (r.offset, r.timestamp))
            .or(fallback),
    }
}
