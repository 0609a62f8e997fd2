use super::*;

const RETRIABLE_FOR_OLD_CLIENTS: [Err; 4] = [
    Err::NetworkException,
    Err::CoordinatorLoadInProgress,
    Err::CoordinatorNotAvailable,
    Err::NotCoordinator,
];

/// ReplicaManagerTest's testVerificationErrorConversionsTV1.
#[test]
fn test_verification_error_conversions_tv1() {
    for supported in [Supported::DefaultError, Supported::GenericError] {
        for e in RETRIABLE_FOR_OLD_CLIENTS
            .into_iter()
            .chain([Err::ConcurrentTransactions])
        {
            assert_eq!(
                produce_code(supported, e.code()),
                Err::NotEnoughReplicas.code(),
                "{e:?}"
            );
        }
        assert_eq!(
            produce_code(supported, Err::InvalidTxnState.code()),
            Err::InvalidTxnState.code()
        );
    }
    // Only clients before TRANSACTION_ABORTABLE get INVALID_TXN_STATE.
    let abortable = Err::TransactionAbortable.code();
    assert_eq!(
        asker_code(Supported::DefaultError, abortable),
        Err::InvalidTxnState.code()
    );
    assert_eq!(asker_code(Supported::GenericError, abortable), abortable);
}

/// ReplicaManagerTest's testVerificationErrorConversionsTV2.
#[test]
fn test_verification_error_conversions_tv2() {
    for e in RETRIABLE_FOR_OLD_CLIENTS {
        assert_eq!(
            produce_code(Supported::AddPartition, e.code()),
            Err::NotEnoughReplicas.code(),
            "{e:?}"
        );
    }
    let concurrent = Err::ConcurrentTransactions.code();
    assert_eq!(
        produce_code(Supported::AddPartition, concurrent),
        concurrent
    );
}

/// AddPartitionsToTxnManagerTest's
/// testAddPartitionsToTxnHandlerErrorHandling: what the leader makes of
/// the coordinator's answers.
#[test]
fn test_add_partitions_to_txn_handler_error_handling() {
    for supported in [
        Supported::DefaultError,
        Supported::GenericError,
        Supported::AddPartition,
    ] {
        assert_eq!(
            asker_code(supported, Err::ProducerFenced.code()),
            Err::InvalidProducerEpoch.code()
        );
        assert_eq!(
            asker_code(supported, Err::ClusterAuthorizationFailed.code()),
            Err::InvalidTxnState.code()
        );
        assert_eq!(
            asker_code(supported, Err::InvalidProducerIdMapping.code()),
            Err::InvalidProducerIdMapping.code()
        );
        assert_eq!(asker_code(supported, 0), 0);
    }
}

#[test]
fn versions_map_to_apaches_supported_operations() {
    let produce: Vec<Supported> = (9..=13).map(Supported::of_produce).collect();
    use Supported::*;
    assert_eq!(
        produce,
        [
            DefaultError,
            DefaultError,
            GenericError,
            AddPartition,
            AddPartition
        ]
    );
    let commit: Vec<Supported> = (3..=5).map(Supported::of_txn_offset_commit).collect();
    assert_eq!(commit, [DefaultError, GenericError, AddPartition]);
}

/// The group coordinator's `handleOperationException` mapping.
#[test]
fn txn_offset_commit_errors_map_as_the_group_coordinator_does() {
    let cases = [
        (Err::NetworkException, Err::CoordinatorLoadInProgress),
        (Err::NotEnoughReplicas, Err::CoordinatorNotAvailable),
        (Err::UnknownTopicOrPartition, Err::CoordinatorNotAvailable),
        (Err::RequestTimedOut, Err::CoordinatorNotAvailable),
        (Err::NotLeaderOrFollower, Err::NotCoordinator),
        (Err::KafkaStorageError, Err::NotCoordinator),
        (Err::ConcurrentTransactions, Err::ConcurrentTransactions),
        (Err::InvalidProducerEpoch, Err::InvalidProducerEpoch),
    ];
    for (from, to) in cases {
        assert_eq!(txn_offset_commit_code(from.code()), to.code(), "{from:?}");
    }
}
