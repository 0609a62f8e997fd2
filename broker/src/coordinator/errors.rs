//! Kafka error codes the coordinators answer (groups of every kind and
//! transactions), plus the mapping
//! Apache applies to failed group-metadata writes.

/// Kafka wire error codes the coordinator answers, named as Apache names
/// them (`org.apache.kafka.common.protocol.Errors`) and taken from the
/// `kafka-protocol` crate, never written down by hand.
pub mod code {
    use kafka_protocol::ResponseError as E;

    pub const NONE: i16 = 0;
    pub const UNKNOWN_SERVER_ERROR: i16 = E::UnknownServerError.code();
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = E::UnknownTopicOrPartition.code();
    pub const MESSAGE_TOO_LARGE: i16 = E::MessageTooLarge.code();
    pub const OFFSET_METADATA_TOO_LARGE: i16 = E::OffsetMetadataTooLarge.code();
    pub const COORDINATOR_NOT_AVAILABLE: i16 = E::CoordinatorNotAvailable.code();
    pub const NOT_COORDINATOR: i16 = E::NotCoordinator.code();
    pub const RECORD_LIST_TOO_LARGE: i16 = E::RecordListTooLarge.code();
    pub const NOT_ENOUGH_REPLICAS: i16 = E::NotEnoughReplicas.code();
    pub const ILLEGAL_GENERATION: i16 = E::IllegalGeneration.code();
    pub const INCONSISTENT_GROUP_PROTOCOL: i16 = E::InconsistentGroupProtocol.code();
    pub const INVALID_GROUP_ID: i16 = E::InvalidGroupId.code();
    pub const UNKNOWN_MEMBER_ID: i16 = E::UnknownMemberId.code();
    pub const INVALID_SESSION_TIMEOUT: i16 = E::InvalidSessionTimeout.code();
    pub const REBALANCE_IN_PROGRESS: i16 = E::RebalanceInProgress.code();
    pub const REQUEST_TIMED_OUT: i16 = E::RequestTimedOut.code();
    pub const NOT_LEADER_OR_FOLLOWER: i16 = E::NotLeaderOrFollower.code();
    pub const INVALID_FETCH_SIZE: i16 = E::InvalidFetchSize.code();
    pub const UNSUPPORTED_VERSION: i16 = E::UnsupportedVersion.code();
    pub const KAFKA_STORAGE_ERROR: i16 = E::KafkaStorageError.code();
    pub const NON_EMPTY_GROUP: i16 = E::NonEmptyGroup.code();
    pub const GROUP_ID_NOT_FOUND: i16 = E::GroupIdNotFound.code();
    pub const MEMBER_ID_REQUIRED: i16 = E::MemberIdRequired.code();
    pub const GROUP_MAX_SIZE_REACHED: i16 = E::GroupMaxSizeReached.code();
    pub const FENCED_INSTANCE_ID: i16 = E::FencedInstanceId.code();
    pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = E::GroupSubscribedToTopic.code();
    pub const UNSTABLE_OFFSET_COMMIT: i16 = E::UnstableOffsetCommit.code();
    pub const INVALID_REQUEST: i16 = E::InvalidRequest.code();
    pub const UNSUPPORTED_ASSIGNOR: i16 = E::UnsupportedAssignor.code();
    pub const FENCED_MEMBER_EPOCH: i16 = E::FencedMemberEpoch.code();
    pub const UNRELEASED_INSTANCE_ID: i16 = E::UnreleasedInstanceId.code();
    pub const STALE_MEMBER_EPOCH: i16 = E::StaleMemberEpoch.code();
    pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = E::CoordinatorLoadInProgress.code();
    pub const INVALID_REGULAR_EXPRESSION: i16 = E::InvalidRegularExpression.code();
    pub const INVALID_TRANSACTION_TIMEOUT: i16 = E::InvalidTransactionTimeout.code();
    pub const CONCURRENT_TRANSACTIONS: i16 = E::ConcurrentTransactions.code();
    pub const PRODUCER_FENCED: i16 = E::ProducerFenced.code();
    pub const INVALID_PRODUCER_EPOCH: i16 = E::InvalidProducerEpoch.code();
    pub const INVALID_PRODUCER_ID_MAPPING: i16 = E::InvalidProducerIdMapping.code();
    pub const INVALID_TXN_STATE: i16 = E::InvalidTxnState.code();
    pub const TRANSACTIONAL_ID_NOT_FOUND: i16 = E::TransactionalIdNotFound.code();
    pub const TRANSACTION_ABORTABLE: i16 = E::TransactionAbortable.code();
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 =
        E::TransactionalIdAuthorizationFailed.code();
}

/// Apache's `appendGroupMetadataErrorToResponseError`: a failed write of group
/// metadata is reported to clients with a retriable coordinator error so they
/// rediscover the coordinator instead of seeing a storage-level code.
pub fn append_error_to_response_error(append_error: i16) -> i16 {
    match append_error {
        code::UNKNOWN_TOPIC_OR_PARTITION | code::NOT_ENOUGH_REPLICAS | code::REQUEST_TIMED_OUT => {
            code::COORDINATOR_NOT_AVAILABLE
        }
        code::NOT_LEADER_OR_FOLLOWER | code::KAFKA_STORAGE_ERROR => code::NOT_COORDINATOR,
        code::MESSAGE_TOO_LARGE | code::RECORD_LIST_TOO_LARGE | code::INVALID_FETCH_SIZE => {
            code::UNKNOWN_SERVER_ERROR
        }
        // A "success" code is never a failure: treat it as unknown rather than
        // letting a failed write be answered with NONE.
        code::NONE => code::UNKNOWN_SERVER_ERROR,
        other => other,
    }
}
