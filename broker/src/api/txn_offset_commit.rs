//! TxnOffsetCommit (key 28): offsets a transaction commits for a consumer
//! group, sent to the group's coordinator. They stay pending (invisible to
//! OffsetFetch) until the transaction's marker commits or aborts them.

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TopicName, TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::{str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType};
use crate::group::core::{self, OffsetCommitPartition, OffsetCommitTopic};

pub async fn handle(ctx: &RequestContext, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse {
    let v = ctx.api_version;
    let topics: Vec<OffsetCommitTopic> = req
        .topics
        .iter()
        .map(|t| OffsetCommitTopic {
            name: t.name.0.to_string(),
            partitions: t
                .partitions
                .iter()
                .map(|p| OffsetCommitPartition {
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if v >= 2 { p.committed_leader_epoch } else { -1 },
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                })
                .collect(),
        })
        .collect();
    // The transactional id, then the group (KafkaApis' order).
    let denied = if !ctx.authorized(
        Operation::Write,
        ResourceType::TransactionalId,
        req.transactional_id.0.as_str(),
    ) {
        Some(Err::TransactionalIdAuthorizationFailed)
    } else if !ctx.authorized(
        Operation::Read,
        ResourceType::Group,
        req.group_id.0.as_str(),
    ) {
        Some(Err::GroupAuthorizationFailed)
    } else {
        None
    };
    let group_id = req.group_id.0.as_str();
    let transactional_id = req.transactional_id.0.as_str();
    let answer = super::offset_commit::commit_known(ctx, topics, denied, |topics| async move {
        // The group's coordinator, then the transaction's: the group's
        // offsets must be in the producer's transaction (added by
        // AddOffsetsToTxn, or here for a transaction version 2 client).
        ctx.broker.groups.check_owner(group_id)?;
        let code = crate::api::txn_verify::check_txn_offset_commit(
            ctx,
            transactional_id,
            req.producer_id.0,
            req.producer_epoch,
            group_id,
        )
        .await;
        if code != 0 {
            return Ok(core::OffsetCommitResponse::all(&topics, code));
        }
        ctx.broker
            .groups
            .request(core::TxnOffsetCommitRequest {
                group_id: group_id.to_string(),
                producer_id: req.producer_id.0,
                producer_epoch: req.producer_epoch,
                // KIP-447's group metadata from v3.
                generation_id: if v >= 3 { req.generation_id } else { -1 },
                member_id: if v >= 3 {
                    req.member_id.to_string()
                } else {
                    String::new()
                },
                group_instance_id: if v >= 3 {
                    req.group_instance_id.as_ref().map(|s| s.to_string())
                } else {
                    None
                },
                topics,
            })
            .await
    })
    .await;
    // Clients before v2 retry COORDINATOR_NOT_AVAILABLE, not LOAD_IN_PROGRESS.
    let old = |code: i16| {
        if v < 2 && code == Err::CoordinatorLoadInProgress.code() {
            Err::CoordinatorNotAvailable.code()
        } else {
            code
        }
    };
    TxnOffsetCommitResponse::default().with_topics(
        answer
            .topics
            .into_iter()
            .map(|t| {
                TxnOffsetCommitResponseTopic::default()
                    .with_name(TopicName(str_bytes(t.name)))
                    .with_partitions(
                        t.partitions
                            .into_iter()
                            .map(|p| {
                                TxnOffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition)
                                    .with_error_code(old(p.error_code))
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}
