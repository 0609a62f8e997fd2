//! WriteTxnMarkers (key 27): a transaction coordinator asks the leader of
//! each partition to append a COMMIT or ABORT marker; partitions this
//! broker does not lead answer NOT_LEADER_OR_FOLLOWER.

use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};

use super::{Err, RequestContext};
use crate::api::txn_markers::append_marker_here;
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};

pub async fn handle(ctx: &RequestContext, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    let mut resp = WriteTxnMarkersResponse::default();
    // Only brokers append markers (Apache: ClusterAction on the cluster,
    // else CLUSTER_AUTHORIZATION_FAILED for every partition).
    let denied = !ctx.authorized(
        Operation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    );
    for marker in req.markers {
        let mut result = WritableTxnMarkerResult::default().with_producer_id(marker.producer_id);
        for topic in marker.topics {
            let mut out = WritableTxnMarkerTopicResult::default().with_name(topic.name.clone());
            for partition in topic.partition_indexes {
                let code = if denied {
                    Err::ClusterAuthorizationFailed.code()
                } else {
                    append_marker_here(
                        &ctx.broker,
                        topic.name.0.as_str(),
                        partition,
                        marker.producer_id.0,
                        marker.producer_epoch,
                        marker.transaction_result,
                        marker.coordinator_epoch,
                    )
                    .await
                };
                out.partitions.push(
                    WritableTxnMarkerPartitionResult::default()
                        .with_partition_index(partition)
                        .with_error_code(code),
                );
            }
            result.topics.push(out);
        }
        resp.markers.push(result);
    }
    resp
}
