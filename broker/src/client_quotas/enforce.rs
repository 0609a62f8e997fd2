//! Enforcing client quotas on one broker, as Apache's `ClientQuotaManager`
//! (and its `DefaultQuotaCallback`) does: a request's (user, client id)
//! finds its quota in Apache's eight-level order, the quota's entity
//! decides who shares the rate (a user's quota is shared by all its
//! clients; a default one is each user's own), and a client over its
//! quota is told how long to stay away (`throttle_time_ms`, KIP-219).
//! Pure but for the lock around the rates: callers give the time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};

use super::rate::{Rate, RateConfig, TokenBucket};
use super::{
    ClientQuotas, CLIENT_ID, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE, USER,
};

/// What a quota limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaType {
    /// Bytes of Produce requests per second.
    Produce,
    /// Bytes of Fetch responses per second.
    Fetch,
    /// Percent of one thread's time spent on the client's requests.
    Request,
    /// Partitions created or deleted per second (KIP-599).
    ControllerMutation,
}

impl QuotaType {
    pub const ALL: [QuotaType; 4] = [
        QuotaType::Produce,
        QuotaType::Fetch,
        QuotaType::Request,
        QuotaType::ControllerMutation,
    ];

    pub fn key(self) -> &'static str {
        match self {
            QuotaType::Produce => PRODUCER_BYTE_RATE,
            QuotaType::Fetch => CONSUMER_BYTE_RATE,
            QuotaType::Request => REQUEST_PERCENTAGE,
            QuotaType::ControllerMutation => CONTROLLER_MUTATION_RATE,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            QuotaType::Produce => "produce",
            QuotaType::Fetch => "fetch",
            QuotaType::Request => "request",
            QuotaType::ControllerMutation => "controller_mutation",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One part of a quota entity: absent, the type's default, or a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Part {
    Absent,
    Default,
    Named(String),
}

impl Part {
    fn of(name: Option<&Option<String>>) -> Part {
        match name {
            None => Part::Absent,
            Some(None) => Part::Default,
            Some(Some(n)) => Part::Named(n.clone()),
        }
    }
}

/// One quota type's bounds by (user part, client-id part).
#[derive(Debug, Default)]
struct Bounds(HashMap<(Part, Part), f64>);

impl Bounds {
    fn get(&self, user: Part, client: Part) -> Option<f64> {
        self.0.get(&(user, client)).copied()
    }

    fn has(&self, user: Part, client: Part) -> bool {
        self.0.contains_key(&(user, client))
    }

    /// Apache's `quotaMetricTags`: whose rate the request adds to, as
    /// (user, client id) with "" for a part the quota does not split by.
    fn tags(&self, user: &str, client: &str) -> (String, String) {
        let (u, c) = (
            || Part::Named(user.to_string()),
            || Part::Named(client.to_string()),
        );
        let both = (user.to_string(), client.to_string());
        if self.has(u(), c()) || self.has(u(), Part::Default) {
            return both;
        }
        if self.has(u(), Part::Absent) {
            return (user.to_string(), String::new());
        }
        if self.has(Part::Default, c()) || self.has(Part::Default, Part::Default) {
            return both;
        }
        if self.has(Part::Default, Part::Absent) {
            return (user.to_string(), String::new());
        }
        (String::new(), client.to_string())
    }

    /// Apache's `quotaLimit` for those tags.
    fn limit(&self, user: &str, client: &str) -> Option<f64> {
        let (u, c) = (
            || Part::Named(user.to_string()),
            || Part::Named(client.to_string()),
        );
        if !user.is_empty() && !client.is_empty() {
            self.get(u(), c())
                .or_else(|| self.get(u(), Part::Default))
                .or_else(|| self.get(Part::Default, c()))
                .or_else(|| self.get(Part::Default, Part::Default))
        } else if !user.is_empty() {
            self.get(u(), Part::Absent)
                .or_else(|| self.get(Part::Default, Part::Absent))
        } else if !client.is_empty() {
            self.get(Part::Absent, c())
                .or_else(|| self.get(Part::Absent, Part::Default))
        } else {
            None
        }
    }
}

/// Rates not added to for this long are forgotten (Apache expires a
/// client's quota sensors after an hour idle).
const IDLE_MS: u64 = 3_600_000;

/// One broker's client quotas in force and the rates of the clients they
/// cover.
pub struct Enforcer {
    config: RateConfig,
    bounds: RwLock<Arc<[Bounds; 4]>>,
    /// Whether any quota is in force: without one, requests skip quotas
    /// altogether.
    any: AtomicBool,
    rates: Mutex<Rates>,
    /// What [`Enforcer::now_ms`] counts from.
    born: Instant,
}

#[derive(Default)]
struct Rates {
    by_tags: HashMap<(QuotaType, String, String), Rate>,
    /// `controller_mutation_rate`'s buckets, by (user, client id) tags.
    buckets: HashMap<(String, String), (TokenBucket, u64)>,
    /// When idle rates were last looked for.
    swept_ms: u64,
}

/// A client as quotas see it: its user (the principal's name) and client id.
pub struct Client<'a> {
    pub user: &'a str,
    pub client_id: &'a str,
}

impl Default for Enforcer {
    fn default() -> Self {
        Enforcer::new(RateConfig::default())
    }
}

impl Enforcer {
    pub fn new(config: RateConfig) -> Enforcer {
        Enforcer {
            config,
            bounds: RwLock::new(Arc::default()),
            any: AtomicBool::new(false),
            rates: Mutex::default(),
            born: Instant::now(),
        }
    }

    /// The time rates are recorded at, in ms (monotonic).
    pub fn now_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }

    /// Whether any user or client-id quota is in force.
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// Puts `quotas` in force (the user and client-id ones; IP quotas
    /// limit connections, not requests).
    pub fn install(&self, quotas: &ClientQuotas) {
        let mut bounds: [Bounds; 4] = Default::default();
        for (entity, values) in quotas.iter() {
            if entity.0.keys().any(|t| t != USER && t != CLIENT_ID) {
                continue;
            }
            let parts = (
                Part::of(entity.0.get(USER)),
                Part::of(entity.0.get(CLIENT_ID)),
            );
            for t in QuotaType::ALL {
                if let Some(v) = values.get(t.key()) {
                    bounds[t.index()].0.insert(parts.clone(), *v);
                }
            }
        }
        let any = bounds.iter().any(|b| !b.0.is_empty());
        *self.bounds.write() = Arc::new(bounds);
        self.any.store(any, Ordering::Relaxed);
    }

    /// Whether any quota of type `t` is in force: when none is, nothing is
    /// measured (Apache's `quotasEnabled`).
    pub fn enabled(&self, t: QuotaType) -> bool {
        !self.bounds.read()[t.index()].0.is_empty()
    }

    /// Adds `value` to the client's rate of type `t` at `now_ms`; returns
    /// how long the client must be throttled (0 within its quota).
    pub fn record(&self, t: QuotaType, client: &Client<'_>, value: f64, now_ms: u64) -> u64 {
        let bounds = self.bounds.read().clone();
        let bounds = &bounds[t.index()];
        if bounds.0.is_empty() {
            return 0;
        }
        let (user, client_id) = bounds.tags(client.user, client.client_id);
        let limit = bounds.limit(&user, &client_id);
        let mut rates = self.rates.lock();
        rates.sweep(now_ms);
        let rate = rates
            .by_tags
            .entry((t, user, client_id))
            .or_insert_with(|| Rate::new(self.config, now_ms));
        rate.record(value, now_ms);
        limit.map_or(0, |bound| rate.throttle_ms(bound, now_ms))
    }

    /// Takes back what [`Enforcer::record`] added (a throttled Fetch
    /// returns nothing, so it used nothing).
    pub fn unrecord(&self, t: QuotaType, client: &Client<'_>, value: f64, now_ms: u64) {
        if self.enabled(t) {
            self.record(t, client, -value, now_ms);
        }
    }

    /// The most the client may take at once without being throttled even
    /// from a standstill (Apache's `getMaxValueInQuotaWindow`): a Fetch
    /// asks for no more.
    pub fn max_in_window(&self, t: QuotaType, client: &Client<'_>) -> Option<f64> {
        let bounds = self.bounds.read().clone();
        let bounds = &bounds[t.index()];
        if bounds.0.is_empty() {
            return None;
        }
        let (user, client_id) = bounds.tags(client.user, client.client_id);
        let window_s = self.config.window_ms as f64 / 1000.0;
        bounds
            .limit(&user, &client_id)
            .map(|bound| bound * (self.config.samples - 1) as f64 * window_s)
    }
}

/// Whether a request's partition mutations are refused over the quota
/// (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) or taken and
/// throttled (older versions), as Apache's `newQuotaFor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    Strict,
    Permissive,
}

/// One request's `controller_mutation_rate` (Apache's
/// `ControllerMutationQuota`): each topic's partitions recorded in turn.
pub struct MutationQuota<'a> {
    enforcer: &'a Enforcer,
    user: String,
    client_id: String,
    strictness: Strictness,
    /// The throttle of the last mutation over the quota, and when.
    throttled: Option<(u64, u64)>,
}

impl Enforcer {
    /// The `controller_mutation_rate` of `client` for one request.
    pub fn mutation_quota(&self, client: &Client<'_>, strictness: Strictness) -> MutationQuota<'_> {
        MutationQuota {
            enforcer: self,
            user: client.user.to_string(),
            client_id: client.client_id.to_string(),
            strictness,
            throttled: None,
        }
    }
}

impl MutationQuota<'_> {
    /// Records `permits` partition mutations at `now_ms`. Strict: refused
    /// (`Err`, the throttle in ms) while the bucket is below zero, else
    /// taken even past it. Permissive: always taken.
    pub fn record(&mut self, permits: f64, now_ms: u64) -> Result<(), u64> {
        let e = self.enforcer;
        let bounds = e.bounds.read().clone();
        let bounds = &bounds[QuotaType::ControllerMutation.index()];
        if bounds.0.is_empty() {
            return Ok(());
        }
        let tags = bounds.tags(&self.user, &self.client_id);
        let Some(quota) = bounds.limit(&tags.0, &tags.1) else {
            return Ok(());
        };
        let mut rates = e.rates.lock();
        rates.sweep(now_ms);
        let (bucket, used) = rates.buckets.entry(tags).or_default();
        *used = now_ms;
        if self.strictness == Strictness::Strict {
            let tokens = bucket.measure(e.config, quota, now_ms);
            if tokens < 0.0 {
                let throttle = TokenBucket::throttle_ms(tokens, quota);
                self.throttled = Some((throttle, now_ms));
                return Err(throttle);
            }
        }
        bucket.record(e.config, quota, permits, now_ms);
        let tokens = bucket.measure(e.config, quota, now_ms);
        if self.strictness == Strictness::Permissive && tokens < 0.0 {
            self.throttled = Some((TokenBucket::throttle_ms(tokens, quota), now_ms));
        }
        Ok(())
    }

    /// The throttle to answer with at `now_ms`: the last one, less the time
    /// since (Apache's `throttleTime`).
    pub fn throttle_ms(&self, now_ms: u64) -> u64 {
        self.throttled
            .map_or(0, |(ms, at)| ms.saturating_sub(now_ms.saturating_sub(at)))
    }
}

impl Rates {
    fn sweep(&mut self, now_ms: u64) {
        if now_ms.saturating_sub(self.swept_ms) < IDLE_MS {
            return;
        }
        self.swept_ms = now_ms;
        self.by_tags
            .retain(|_, r| now_ms.saturating_sub(r.last_record_ms) < IDLE_MS);
        self.buckets
            .retain(|_, (_, used)| now_ms.saturating_sub(*used) < IDLE_MS);
    }
}

#[cfg(test)]
mod tests;
