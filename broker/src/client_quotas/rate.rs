//! Apache Kafka's quota rate (`org.apache.kafka.common.metrics.stats.Rate`
//! over a `SampledStat`): what a client used in each of `samples` windows
//! of `window_ms`, each window starting at its first record, and the rate
//! over the windows still in force. [`Rate::throttle_ms`] is
//! `QuotaUtils.throttleTime`: how long the client must stay away for its
//! rate to fall back to the quota. Pure: every call is given the time.

/// `quota.window.num` and `quota.window.size.seconds` as Apache's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateConfig {
    pub samples: usize,
    pub window_ms: u64,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            samples: 11,
            window_ms: 1000,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    /// When the window started, in ms.
    start_ms: u64,
    value: f64,
}

#[derive(Debug, Clone)]
pub struct Rate {
    config: RateConfig,
    samples: Vec<Sample>,
    current: usize,
    /// The last time anything was recorded (for expiring idle rates).
    pub last_record_ms: u64,
}

impl Rate {
    pub fn new(config: RateConfig, now_ms: u64) -> Rate {
        Rate {
            config,
            samples: vec![Sample {
                start_ms: now_ms,
                value: 0.0,
            }],
            current: 0,
            last_record_ms: now_ms,
        }
    }

    /// Adds `value` at `now_ms` (negative to take back what was recorded).
    pub fn record(&mut self, value: f64, now_ms: u64) {
        let window = self.config.window_ms;
        if now_ms.saturating_sub(self.samples[self.current].start_ms) >= window {
            self.current = (self.current + 1) % self.config.samples;
            let fresh = Sample {
                start_ms: now_ms,
                value: 0.0,
            };
            if self.current >= self.samples.len() {
                self.samples.push(fresh);
            } else {
                self.samples[self.current] = fresh;
            }
        }
        self.samples[self.current].value += value;
        self.last_record_ms = now_ms;
    }

    /// Resets the windows older than the whole span (Apache's
    /// `purgeObsoleteSamples`).
    fn purge(&mut self, now_ms: u64) {
        let expire = self.config.samples as u64 * self.config.window_ms;
        for s in &mut self.samples {
            if now_ms.saturating_sub(s.start_ms) >= expire {
                *s = Sample {
                    start_ms: now_ms,
                    value: 0.0,
                };
            }
        }
    }

    /// The span the rate is taken over, in ms: from the oldest window, and
    /// never less than `samples - 1` whole windows (so a client's first
    /// burst is not measured over a few milliseconds).
    pub fn window_size_ms(&mut self, now_ms: u64) -> u64 {
        self.purge(now_ms);
        let oldest = self
            .samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms);
        let mut elapsed = now_ms.saturating_sub(oldest);
        let full = elapsed / self.config.window_ms;
        let min_full = self.config.samples as u64 - 1;
        if full < min_full {
            elapsed += (min_full - full) * self.config.window_ms;
        }
        elapsed
    }

    /// Units per second at `now_ms`.
    pub fn measure(&mut self, now_ms: u64) -> f64 {
        let size = self.window_size_ms(now_ms);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (size as f64 / 1000.0)
    }

    /// After a record: 0 within `bound`, else the ms that bring the rate
    /// back to it if nothing more is recorded, `(O - T) / T * W`.
    pub fn throttle_ms(&mut self, bound: f64, now_ms: u64) -> u64 {
        let observed = self.measure(now_ms);
        if observed <= bound {
            return 0;
        }
        let size = self.window_size_ms(now_ms) as f64;
        ((observed - bound) / bound * size).round() as u64
    }
}

/// Apache's `TokenBucket` (KIP-599), what `controller_mutation_rate`
/// limits: a bucket of `samples × window` seconds of the quota, refilled at
/// the quota, taken from by each mutation; below zero the client is over.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    tokens: f64,
    /// When the bucket was last refilled; `None`: full at the first use.
    updated_ms: Option<u64>,
}

impl TokenBucket {
    pub fn new() -> TokenBucket {
        TokenBucket {
            tokens: 0.0,
            updated_ms: None,
        }
    }

    fn refill(&mut self, config: RateConfig, quota: f64, now_ms: u64) {
        let burst = Self::burst(config, quota);
        self.tokens = match self.updated_ms {
            None => burst,
            Some(at) => {
                let seconds = now_ms.saturating_sub(at) as f64 / 1000.0;
                (self.tokens + quota * seconds).min(burst)
            }
        };
        self.updated_ms = Some(now_ms);
    }

    fn burst(config: RateConfig, quota: f64) -> f64 {
        config.samples as f64 * config.window_ms as f64 / 1000.0 * quota
    }

    /// The tokens left at `now_ms` (negative: over the quota).
    pub fn measure(&mut self, config: RateConfig, quota: f64, now_ms: u64) -> f64 {
        self.refill(config, quota, now_ms);
        self.tokens
    }

    pub fn record(&mut self, config: RateConfig, quota: f64, permits: f64, now_ms: u64) {
        self.refill(config, quota, now_ms);
        self.tokens = (self.tokens - permits).min(Self::burst(config, quota));
    }

    /// How long until the bucket is back to zero: `-tokens / quota`.
    pub fn throttle_ms(tokens: f64, quota: f64) -> u64 {
        match tokens < 0.0 {
            true => (-tokens / quota * 1000.0).round() as u64,
            false => 0,
        }
    }
}

impl Default for TokenBucket {
    fn default() -> Self {
        TokenBucket::new()
    }
}

#[cfg(test)]
mod tests;
