//! Pure routing and assignment logic shared by the kaas broker and the
//! controller.
//!
//! Both sides must answer "who coordinates group G?" with the same function
//! over the same document, or writing an entry would move a group; keeping
//! that logic here, free of I/O, async and threads, makes it one function.
//!
//! - [`fnv1a32`]: the key hash.
//! - [`route()`] / [`RouteTable`]: the hash tier — FNV-1a 32 modulo the full
//!   broker set, with a rendezvous fallback into the alive set.
//! - [`Assignment`] and friends: the controller's versioned JSON document
//!   (serde + JSON Schema), and [`Routing`], its indexed two-tier lookup
//!   (explicit entry, else hash tier).
//! - [`recompute()`]: the controller's pure previous-document → next-document
//!   step.
//! - [`pod_ordinal`]: broker ids are StatefulSet ordinals.

pub mod assignment;
#[cfg(feature = "configmap")]
pub mod configmap;
pub mod fnv;
pub mod ordinal;
pub mod recompute;
pub mod route;

pub use assignment::{
    partition_key, Assignment, BrokerInfo, BrokerState, Endpoint, GroupEntry, PartitionEntry,
    PartitionReplicas, Routing,
};
pub use fnv::{fnv1a32, Fnv1a32};
pub use ordinal::{parse_ordinal, pod_ordinal};
pub use recompute::{recompute, recompute_with};
pub use route::{route, BrokerId, RouteTable};
