//! What the coordinators' ports to durable storage share: a write's
//! durability and the errors a store of keyed logs (a group's, a
//! transactional id's) may answer. `group::store` and `txn::store` are the
//! ports; `storage` implements them on the shared volume.

use std::io;

use futures::future::BoxFuture;

/// A write that has been ordered; awaiting it waits for durability.
pub type Durable = BoxFuture<'static, Result<(), StoreError>>;

/// Why a store refused or failed a load or a write.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another broker claimed the key's log under an assignment at least
    /// as new as the one this broker follows: it coordinates the key.
    #[error(
        "log of {key:?} is claimed by broker {by_broker} under assignment \
         version {by_version} (this broker follows {ours})"
    )]
    Fenced {
        key: String,
        by_broker: i32,
        by_version: u64,
        ours: u64,
    },
    /// The assignment this broker follows now gives the key to another
    /// broker: it claims nothing (a claim must name a version under which
    /// its broker coordinates the key, or the rightful coordinator under
    /// that same version would be refused).
    #[error("this broker does not coordinate {key:?} under assignment version {version}")]
    Moved { key: String, version: u64 },
    /// Another broker wrote the key's log since this broker loaded it: what
    /// this broker holds may miss its records, so it must be reloaded
    /// before it is written again.
    #[error("log of {key:?} was written by broker {from_broker} since this broker loaded it; reload needed")]
    Reclaimed { key: String, from_broker: i32 },
    /// The write or read failed: nothing is known to be durable.
    #[error(transparent)]
    Io(#[from] io::Error),
}
