//! Kafka error codes used by the classic group coordinator, plus the mapping
//! Apache applies to failed group-metadata writes.

/// Kafka wire error codes (`org.apache.kafka.common.protocol.Errors`).
pub mod code {
    pub const NONE: i16 = 0;
    pub const UNKNOWN_SERVER_ERROR: i16 = -1;
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub const MESSAGE_TOO_LARGE: i16 = 10;
    pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub const NOT_COORDINATOR: i16 = 16;
    pub const RECORD_LIST_TOO_LARGE: i16 = 18;
    pub const NOT_ENOUGH_REPLICAS: i16 = 19;
    pub const ILLEGAL_GENERATION: i16 = 22;
    pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
    pub const INVALID_GROUP_ID: i16 = 24;
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    pub const INVALID_SESSION_TIMEOUT: i16 = 26;
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    pub const REQUEST_TIMED_OUT: i16 = 7;
    pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    pub const INVALID_FETCH_SIZE: i16 = 4;
    pub const UNSUPPORTED_VERSION: i16 = 35;
    pub const KAFKA_STORAGE_ERROR: i16 = 56;
    pub const NON_EMPTY_GROUP: i16 = 68;
    pub const GROUP_ID_NOT_FOUND: i16 = 69;
    pub const MEMBER_ID_REQUIRED: i16 = 79;
    pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
    pub const FENCED_INSTANCE_ID: i16 = 82;
    pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
    pub const UNSTABLE_OFFSET_COMMIT: i16 = 88;
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
