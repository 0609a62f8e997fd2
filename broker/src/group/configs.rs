//! Group configs (Apache's `GroupConfig`, KIP-848): one group's own session
//! timeout and heartbeat interval for the consumer protocol, kept on the
//! shared volume (`__cluster/group_configs`), where every broker follows
//! them, and read by the coordinator at each heartbeat and load. Their
//! checks and descriptions are `settings::group_configs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::group::consumer::config::{ConsumerGroupConfig, ConsumerTiming};

/// The shared document's name.
pub const DOCUMENT: &str = "group_configs";

pub const CONSUMER_SESSION_TIMEOUT_MS: &str = "consumer.session.timeout.ms";
pub const CONSUMER_HEARTBEAT_INTERVAL_MS: &str = "consumer.heartbeat.interval.ms";
pub const SHARE_SESSION_TIMEOUT_MS: &str = "share.session.timeout.ms";
pub const SHARE_HEARTBEAT_INTERVAL_MS: &str = "share.heartbeat.interval.ms";
pub const SHARE_RECORD_LOCK_DURATION_MS: &str = "share.record.lock.duration.ms";

/// Every group's overrides, as the shared volume holds them (values
/// written as Apache writes them back).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupConfigs {
    pub groups: BTreeMap<String, BTreeMap<String, String>>,
}

impl GroupConfigs {
    /// `group_id`'s overrides (empty when it has none).
    pub fn of(&self, group_id: &str) -> BTreeMap<String, String> {
        self.groups.get(group_id).cloned().unwrap_or_default()
    }

    /// Replaces `group_id`'s overrides; none left removes its entry.
    pub fn set(&mut self, group_id: &str, overrides: BTreeMap<String, String>) {
        if overrides.is_empty() {
            self.groups.remove(group_id);
        } else {
            self.groups.insert(group_id.to_string(), overrides);
        }
    }

    /// The consumer protocol's timing for `group_id`: its overrides, else
    /// the broker's `group.consumer.*` settings (Apache's
    /// `consumerGroupSessionTimeoutMs` and `consumerGroupHeartbeatIntervalMs`).
    pub fn consumer_timing(&self, group_id: &str, broker: &ConsumerGroupConfig) -> ConsumerTiming {
        let overrides = self.groups.get(group_id);
        let get = |name: &str, default: i32| {
            overrides
                .and_then(|o| o.get(name))
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        ConsumerTiming {
            session_timeout_ms: get(CONSUMER_SESSION_TIMEOUT_MS, broker.session_timeout_ms),
            heartbeat_interval_ms: get(
                CONSUMER_HEARTBEAT_INTERVAL_MS,
                broker.heartbeat_interval_ms,
            ),
        }
    }
}
