use super::*;

#[test]
fn medians_and_percentiles() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(&[]).is_nan());
    let v: Vec<u64> = (1..=100).collect();
    assert_eq!(percentile(&v, 50.0), 50);
    assert_eq!(percentile(&v, 99.0), 99);
    assert_eq!(percentile(&v, 100.0), 100);
    assert_eq!(percentile(&v, 0.0), 1);
    assert_eq!(percentile(&[], 99.0), 0);
}

#[test]
fn verdicts() {
    let f = Figure::new("x", 30.0, "ops/s").baseline("b", 1.0);
    assert_eq!(
        f.clone().target(Target::RatioAtLeast(20.0)).verdict(),
        Some(true)
    );
    assert_eq!(
        f.clone().target(Target::RatioAtMost(20.0)).verdict(),
        Some(false)
    );
    assert_eq!(f.clone().target(Target::AtMost(30.0)).verdict(), Some(true));
    assert_eq!(
        f.clone().target(Target::AtLeast(31.0)).verdict(),
        Some(false)
    );
    assert_eq!(f.verdict(), None);
    // No baseline: a ratio target cannot pass.
    let lone = Figure::new("y", 5.0, "ms").target(Target::RatioAtMost(2.0));
    assert_eq!(lone.verdict(), Some(false));
}

#[test]
fn numbers_read_well() {
    assert_eq!(num(1234567.0), "1,234,567");
    assert_eq!(num(-1234.4), "-1,234");
    assert_eq!(num(123.4), "123");
    assert_eq!(num(12.34), "12.3");
    assert_eq!(num(1.234), "1.23");
    assert_eq!(num(0.01234), "0.012");
    assert_eq!(num(0.0), "0");
}
