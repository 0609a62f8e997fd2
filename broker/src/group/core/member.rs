//! A classic group member (Apache `ClassicGroupMember`).

use std::collections::HashSet;

use bytes::Bytes;

use super::RequestToken;

/// One entry of a JoinGroup request's protocol list, in preference order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protocol {
    pub name: String,
    pub metadata: Bytes,
}

impl Protocol {
    pub fn new(name: impl Into<String>, metadata: impl Into<Bytes>) -> Self {
        Protocol {
            name: name.into(),
            metadata: metadata.into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct ClassicGroupMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    pub assignment: Bytes,
    /// Parked JoinGroup request, answered when the join phase completes.
    pub(crate) awaiting_join: Option<RequestToken>,
    /// Parked SyncGroup request, answered when the leader's assignment lands.
    pub(crate) awaiting_sync: Option<RequestToken>,
    /// New members can expire even while their JoinGroup is parked.
    pub(crate) is_new: bool,
    /// Insertion order; Apache iterates a HashMap, we use join order so every
    /// "first member" choice is deterministic.
    pub(crate) seq: u64,
}

impl ClassicGroupMember {
    pub fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }

    pub fn is_awaiting_join(&self) -> bool {
        self.awaiting_join.is_some()
    }

    pub fn is_awaiting_sync(&self) -> bool {
        self.awaiting_sync.is_some()
    }

    /// Metadata the member sent for `protocol_name`, if it supports it.
    pub fn metadata(&self, protocol_name: &str) -> Option<&Bytes> {
        self.protocols
            .iter()
            .find(|p| p.name == protocol_name)
            .map(|p| &p.metadata)
    }

    /// Members parked in a rebalance satisfy heartbeats, except new members
    /// (their JoinGroup is bounded by the new-member join timeout).
    pub fn has_satisfied_heartbeat(&self) -> bool {
        if self.is_new {
            false
        } else {
            self.is_awaiting_join() || self.is_awaiting_sync()
        }
    }

    /// Same protocol list, same order, same metadata.
    pub fn matches(&self, protocols: &[Protocol]) -> bool {
        self.protocols == protocols
    }

    /// The member's first protocol (in its preference order) among `candidates`.
    pub fn vote(&self, candidates: &HashSet<String>) -> Option<&str> {
        self.protocols
            .iter()
            .find(|p| candidates.contains(&p.name))
            .map(|p| p.name.as_str())
    }

    pub fn protocol_names(&self) -> HashSet<String> {
        plain_protocol_set(&self.protocols)
    }
}

pub(crate) fn plain_protocol_set(protocols: &[Protocol]) -> HashSet<String> {
    protocols.iter().map(|p| p.name.clone()).collect()
}
