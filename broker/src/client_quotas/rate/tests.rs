use super::*;

const CONFIG: RateConfig = RateConfig {
    samples: 11,
    window_ms: 1000,
};

/// Apache's ClientQuotaManagerTest.testQuotaViolation, on the rate
/// alone: 500 B/s quota; 10 records of 400 B one second apart stay
/// within it; 2300 B more exceeds it and is throttled for the time
/// that brings the rate back, (O - T) / T * W.
#[test]
fn quota_violation() {
    let mut rate = Rate::new(CONFIG, 0);
    let mut now = 0;
    for _ in 0..10 {
        rate.record(400.0, now);
        assert_eq!(rate.throttle_ms(500.0, now), 0);
        now += 1000;
    }
    // 4000 B over 10 s: 400 B/s. Another 2300 B at the same instant:
    // 6300 B over 10 s = 630 B/s, 130/500 × 10 s = 2.6 s.
    now -= 1000;
    rate.record(2300.0, now);
    assert_eq!(rate.throttle_ms(500.0, now), 2600);
    // Taken back (a throttled fetch returns nothing): within quota.
    rate.record(-2300.0, now);
    assert_eq!(rate.throttle_ms(500.0, now), 0);
}

/// A first burst is measured over `samples - 1` windows, not over the
/// milliseconds since it began.
#[test]
fn a_first_burst_counts_over_ten_windows() {
    let mut rate = Rate::new(CONFIG, 5_000);
    rate.record(1000.0, 5_000);
    assert_eq!(rate.window_size_ms(5_000), 10_000);
    assert!((rate.measure(5_010) - 1000.0 / 10.01).abs() < 1e-9);
}

/// Apache's StrictControllerMutationQuotaTest shape: a full bucket
/// (11 s × 10/s = 110 permits) takes any mutation, even past zero; then
/// the client waits until it refills to zero.
#[test]
fn a_token_bucket_lets_a_burst_through_then_holds() {
    let mut b = TokenBucket::new();
    assert_eq!(b.measure(CONFIG, 10.0, 0), 110.0);
    b.record(CONFIG, 10.0, 130.0, 0);
    let tokens = b.measure(CONFIG, 10.0, 0);
    assert_eq!(tokens, -20.0);
    assert_eq!(TokenBucket::throttle_ms(tokens, 10.0), 2000);
    // Refilled at 10 a second.
    assert_eq!(b.measure(CONFIG, 10.0, 1000), -10.0);
    assert_eq!(b.measure(CONFIG, 10.0, 2000), 0.0);
    assert_eq!(b.measure(CONFIG, 10.0, 60_000), 110.0);
}

/// Windows older than the whole span no longer count.
#[test]
fn old_windows_expire() {
    let mut rate = Rate::new(CONFIG, 0);
    rate.record(50_000.0, 0);
    assert!(rate.throttle_ms(1000.0, 0) > 0);
    rate.record(10.0, 11_000);
    assert_eq!(rate.measure(11_000), 1.0);
    assert_eq!(rate.throttle_ms(1000.0, 11_000), 0);
}
