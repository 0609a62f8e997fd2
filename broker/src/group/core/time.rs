//! Keyed timers. The core never reads a clock: every entry point gets `now_ms`
//! and arming/cancelling a timer is reported to the shell as an effect. The
//! core also keeps its own table of armed deadlines so a late or duplicate
//! `on_timer` call from the shell is ignored instead of acting twice.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Timer identity, mirroring Apache's coordinator timer keys. Scheduling a key
/// again replaces its deadline.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimerKey {
    /// `join-<group>`: the join phase (initial delay or rebalance timeout).
    Join(String),
    /// `sync-<group>`: members must send SyncGroup within the rebalance timeout.
    Sync(String),
    /// `heartbeat-<group>-<member>`: session timeout of a member or pending member.
    Heartbeat(String, String),
    /// Periodic offsets retention sweep (`offsets.retention.check.interval.ms`).
    OffsetsRetention,
    /// `session-timeout-<group>-<member>` of a consumer-protocol member.
    ConsumerSession(String, String),
    /// `rebalance-timeout-<group>-<member>`: a consumer-protocol member must
    /// revoke by then.
    ConsumerRebalance(String, String),
    /// `join-<group>-<member>`: a classic member of a consumer group told
    /// to rejoin must send JoinGroup by then.
    ConsumerJoin(String, String),
    /// `sync-<group>-<member>`: a classic member of a consumer group that
    /// joined must send SyncGroup by then.
    ConsumerSync(String, String),
}

impl TimerKey {
    /// The group this timer belongs to, if any.
    pub fn group_id(&self) -> Option<&str> {
        match self {
            TimerKey::Join(g)
            | TimerKey::Sync(g)
            | TimerKey::Heartbeat(g, _)
            | TimerKey::ConsumerSession(g, _)
            | TimerKey::ConsumerRebalance(g, _)
            | TimerKey::ConsumerJoin(g, _)
            | TimerKey::ConsumerSync(g, _) => Some(g),
            TimerKey::OffsetsRetention => None,
        }
    }
}

impl fmt::Display for TimerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimerKey::Join(g) => write!(f, "join-{g}"),
            TimerKey::Sync(g) => write!(f, "sync-{g}"),
            TimerKey::Heartbeat(g, m) => write!(f, "heartbeat-{g}-{m}"),
            TimerKey::OffsetsRetention => write!(f, "offsets-retention"),
            TimerKey::ConsumerSession(g, m) => write!(f, "session-timeout-{g}-{m}"),
            TimerKey::ConsumerRebalance(g, m) => write!(f, "rebalance-timeout-{g}-{m}"),
            TimerKey::ConsumerJoin(g, m) => write!(f, "join-{g}-{m}"),
            TimerKey::ConsumerSync(g, m) => write!(f, "sync-{g}-{m}"),
        }
    }
}

/// The armed timers: key -> (deadline, arming sequence), and the same
/// timers ordered by (deadline, sequence) so the next one due is found in
/// O(log n): the shell asks after every request that arms a timer, and a
/// scan over every member's heartbeat timer would make that O(members).
/// The sequence orders timers that share a deadline by the order they were
/// armed.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    armed: HashMap<TimerKey, (u64, u64)>,
    order: BTreeMap<(u64, u64), TimerKey>,
    seq: u64,
}

impl Timers {
    pub(crate) fn schedule(&mut self, key: TimerKey, deadline_ms: u64) {
        self.seq += 1;
        if let Some(old) = self.armed.insert(key.clone(), (deadline_ms, self.seq)) {
            self.order.remove(&old);
        }
        self.order.insert((deadline_ms, self.seq), key);
    }

    pub(crate) fn shrink_if_sparse(&mut self) {
        if self.armed.capacity() > 64 && self.armed.len() <= self.armed.capacity() / 4 {
            self.armed.shrink_to_fit();
        }
    }

    pub(crate) fn cancel(&mut self, key: &TimerKey) {
        if let Some(old) = self.armed.remove(key) {
            self.order.remove(&old);
        }
    }

    /// Cancels every timer of a group (unload, delete, expiry).
    pub(crate) fn cancel_group(&mut self, group_id: &str) {
        let mut keys: Vec<TimerKey> = self
            .armed
            .keys()
            .filter(|k| k.group_id() == Some(group_id))
            .cloned()
            .collect();
        keys.sort();
        for k in keys {
            self.cancel(&k);
        }
    }

    /// Disarms `key` if it is armed and due; false means the firing is stale.
    pub(crate) fn take_due(&mut self, key: &TimerKey, now_ms: u64) -> bool {
        match self.armed.get(key) {
            Some(&(deadline, seq)) if deadline <= now_ms => {
                self.armed.remove(key);
                self.order.remove(&(deadline, seq));
                true
            }
            _ => false,
        }
    }

    pub(crate) fn deadline(&self, key: &TimerKey) -> Option<u64> {
        self.armed.get(key).map(|(d, _)| *d)
    }

    /// The earliest armed timer due at `now_ms` (ties by arming order).
    pub(crate) fn next_due(&self, now_ms: u64) -> Option<TimerKey> {
        self.order
            .first_key_value()
            .filter(|((deadline, _), _)| *deadline <= now_ms)
            .map(|(_, k)| k.clone())
    }

    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.order.first_key_value().map(|((d, _), _)| *d)
    }
}
