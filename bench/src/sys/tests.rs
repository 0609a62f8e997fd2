use super::*;

#[test]
fn parses_proc_stat() {
    let line = "1234 (kaas bench) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 4 0 100 0 0";
    assert_eq!(parse_stat_cpu_ticks(line), Some(300));
    assert_eq!(parse_stat_cpu_ticks("garbage"), None);
}

#[test]
fn rng_stays_in_range_and_spreads() {
    let mut r = Rng::new(7);
    let mut seen = [0u32; 10];
    for _ in 0..10_000 {
        seen[r.below(10)] += 1;
    }
    assert!(seen.iter().all(|&c| c > 800 && c < 1200), "{seen:?}");
}
