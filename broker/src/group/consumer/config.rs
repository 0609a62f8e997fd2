//! The broker settings of consumer groups (Apache's `group.consumer.*`
//! names) and the checks Apache makes of them together.

use crate::group::assignor::BuiltinAssignor;

/// A consumer-protocol group's session timeout and heartbeat interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerTiming {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
}

/// Broker settings of consumer groups (Apache's names).
#[derive(Debug, Clone)]
pub struct ConsumerGroupConfig {
    /// group.consumer.session.timeout.ms
    pub session_timeout_ms: i32,
    /// group.consumer.min.session.timeout.ms
    pub min_session_timeout_ms: i32,
    /// group.consumer.max.session.timeout.ms
    pub max_session_timeout_ms: i32,
    /// group.consumer.heartbeat.interval.ms
    pub heartbeat_interval_ms: i32,
    /// group.consumer.min.heartbeat.interval.ms
    pub min_heartbeat_interval_ms: i32,
    /// group.consumer.max.heartbeat.interval.ms
    pub max_heartbeat_interval_ms: i32,
    /// group.consumer.max.size
    pub max_size: usize,
    /// group.consumer.assignors, the default first.
    pub assignors: Vec<BuiltinAssignor>,
    /// group.consumer.migration.policy
    pub migration_policy: MigrationPolicy,
    /// group.consumer.regex.refresh.interval.ms: regexes are resolved
    /// again at least this often while members heartbeat.
    pub regex_refresh_interval_ms: u64,
}

impl ConsumerGroupConfig {
    /// Apache `GroupCoordinatorConfig`'s checks of these settings together:
    /// the setting at fault and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        const SESSION: &str = "group.consumer.session.timeout.ms";
        const MIN_SESSION: &str = "group.consumer.min.session.timeout.ms";
        const MAX_SESSION: &str = "group.consumer.max.session.timeout.ms";
        const INTERVAL: &str = "group.consumer.heartbeat.interval.ms";
        const MIN_INTERVAL: &str = "group.consumer.min.heartbeat.interval.ms";
        const MAX_INTERVAL: &str = "group.consumer.max.heartbeat.interval.ms";
        let checks = [
            (
                self.max_heartbeat_interval_ms >= self.min_heartbeat_interval_ms,
                MAX_INTERVAL,
                "greater than or equal to",
                MIN_INTERVAL,
            ),
            (
                self.heartbeat_interval_ms >= self.min_heartbeat_interval_ms,
                INTERVAL,
                "greater than or equal to",
                MIN_INTERVAL,
            ),
            (
                self.heartbeat_interval_ms <= self.max_heartbeat_interval_ms,
                INTERVAL,
                "less than or equal to",
                MAX_INTERVAL,
            ),
            (
                self.max_session_timeout_ms >= self.min_session_timeout_ms,
                MAX_SESSION,
                "greater than or equal to",
                MIN_SESSION,
            ),
            (
                self.session_timeout_ms >= self.min_session_timeout_ms,
                SESSION,
                "greater than or equal to",
                MIN_SESSION,
            ),
            (
                self.session_timeout_ms <= self.max_session_timeout_ms,
                SESSION,
                "less than or equal to",
                MAX_SESSION,
            ),
            (
                self.heartbeat_interval_ms < self.session_timeout_ms,
                INTERVAL,
                "less than",
                SESSION,
            ),
        ];
        const ASSIGNORS: &str = "group.consumer.assignors";
        if self.assignors.is_empty() {
            return Err((ASSIGNORS, "no assignor is listed".to_string()));
        }
        for (i, a) in self.assignors.iter().enumerate() {
            if self.assignors[..i].contains(a) {
                return Err((ASSIGNORS, format!("{} is listed twice", a.name())));
            }
        }
        match checks.into_iter().find(|(ok, ..)| !ok) {
            None => Ok(()),
            Some((_, key, relation, other)) => {
                Err((key, format!("{key} must be {relation} {other}")))
            }
        }
    }
}

/// `group.consumer.migration.policy`: which online conversions between
/// classic and consumer groups happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MigrationPolicy {
    Disabled,
    /// Classic to consumer only.
    Upgrade,
    /// Consumer to classic only.
    Downgrade,
    #[default]
    Bidirectional,
}

impl MigrationPolicy {
    pub fn upgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Upgrade | MigrationPolicy::Bidirectional
        )
    }

    pub fn downgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Downgrade | MigrationPolicy::Bidirectional
        )
    }
}

impl std::str::FromStr for MigrationPolicy {
    type Err = String;

    /// Apache's values, case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "disabled" => Ok(MigrationPolicy::Disabled),
            "upgrade" => Ok(MigrationPolicy::Upgrade),
            "downgrade" => Ok(MigrationPolicy::Downgrade),
            "bidirectional" => Ok(MigrationPolicy::Bidirectional),
            other => Err(format!(
                "unknown migration policy {other:?} (disabled, upgrade, downgrade or bidirectional)"
            )),
        }
    }
}

impl Default for ConsumerGroupConfig {
    fn default() -> Self {
        ConsumerGroupConfig {
            session_timeout_ms: 45_000,
            min_session_timeout_ms: 45_000,
            max_session_timeout_ms: 60_000,
            heartbeat_interval_ms: 5_000,
            min_heartbeat_interval_ms: 5_000,
            max_heartbeat_interval_ms: 15_000,
            max_size: i32::MAX as usize,
            assignors: BuiltinAssignor::DEFAULTS.to_vec(),
            migration_policy: MigrationPolicy::default(),
            regex_refresh_interval_ms: 600_000,
        }
    }
}
