//! The states of a transactional id, as Apache Kafka's `TransactionState`
//! names, numbers and orders them: the number is what the transaction log
//! stores, the name is what DescribeTransactions and ListTransactions show.

/// Where a transactional id's transaction stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    /// No transaction open (after InitProducerId).
    Empty,
    /// Partitions or offsets were added: a transaction is open.
    Ongoing,
    /// EndTxn(commit) is durable; markers are being written.
    PrepareCommit,
    /// EndTxn(abort), a fence or a timeout is durable; markers are being
    /// written.
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    /// Being expired: only ever a pending state, never stored.
    Dead,
    /// An open transaction being fenced (InitProducerId or a timeout): only
    /// ever a pending state, never stored.
    PrepareEpochFence,
}

use TxnState::*;

impl TxnState {
    pub const ALL: [TxnState; 8] = [
        Empty,
        Ongoing,
        PrepareCommit,
        PrepareAbort,
        CompleteCommit,
        CompleteAbort,
        Dead,
        PrepareEpochFence,
    ];

    /// The id the transaction log stores.
    pub fn id(self) -> i8 {
        match self {
            Empty => 0,
            Ongoing => 1,
            PrepareCommit => 2,
            PrepareAbort => 3,
            CompleteCommit => 4,
            CompleteAbort => 5,
            Dead => 6,
            PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: i8) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.id() == id)
    }

    /// The name the admin APIs show.
    pub fn name(self) -> &'static str {
        match self {
            Empty => "Empty",
            Ongoing => "Ongoing",
            PrepareCommit => "PrepareCommit",
            PrepareAbort => "PrepareAbort",
            CompleteCommit => "CompleteCommit",
            CompleteAbort => "CompleteAbort",
            Dead => "Dead",
            PrepareEpochFence => "PrepareEpochFence",
        }
    }

    pub fn from_name(name: &str) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The states a transition into this one may start from.
    pub fn valid_previous(self) -> &'static [TxnState] {
        match self {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            // From Empty and Complete*: the empty abort of transaction
            // version 2.
            PrepareAbort => &[
                Ongoing,
                PrepareEpochFence,
                Empty,
                CompleteCommit,
                CompleteAbort,
            ],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        }
    }

    /// Whether an id resting in this state may be expired
    /// (`transactional.id.expiration.ms`); also the states InitProducerId
    /// bumps the epoch from.
    pub fn expiration_allowed(self) -> bool {
        matches!(self, Empty | CompleteCommit | CompleteAbort)
    }

    /// A transaction is open or being completed.
    pub fn has_pending_transaction(self) -> bool {
        matches!(self, Ongoing | PrepareAbort | PrepareCommit)
    }
}

/// The `transaction.version` this cluster finalizes, as Apache 4.x does
/// for a new cluster: ApiVersions advertises it, so clients that know
/// version 2 speak it, and the coordinator runs its own fences and
/// timeouts with it.
pub const FINALIZED_TXN_VERSION: TxnVersion = TxnVersion::V2;

/// The transaction protocol a client speaks (Apache's `transaction.version`
/// feature): version 2 (KIP-890 part 2) bumps the epoch at every EndTxn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum TxnVersion {
    #[default]
    V0,
    V1,
    V2,
}

impl TxnVersion {
    pub fn level(self) -> i16 {
        match self {
            TxnVersion::V0 => 0,
            TxnVersion::V1 => 1,
            TxnVersion::V2 => 2,
        }
    }

    /// Unknown levels above 2 read as 2, the newest this coordinator knows.
    pub fn from_level(level: i16) -> TxnVersion {
        match level {
            i16::MIN..=0 => TxnVersion::V0,
            1 => TxnVersion::V1,
            _ => TxnVersion::V2,
        }
    }

    pub fn supports_epoch_bump(self) -> bool {
        self >= TxnVersion::V2
    }

    /// The version EndTxn is spoken in: v5 is transaction version 2.
    pub fn of_end_txn(api_version: i16) -> TxnVersion {
        if api_version > 4 {
            TxnVersion::V2
        } else {
            TxnVersion::V0
        }
    }

    /// The version AddPartitionsToTxn is spoken in: v4+ (sent by brokers for
    /// version 2 clients) is transaction version 2.
    pub fn of_add_partitions(api_version: i16) -> TxnVersion {
        if api_version > 3 {
            TxnVersion::V2
        } else {
            TxnVersion::V0
        }
    }
}
