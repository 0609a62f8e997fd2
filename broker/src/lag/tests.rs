use super::*;

fn committed(rows: &[(&str, &str, i32, i64)]) -> Vec<(String, String, i32, i64)> {
    rows.iter()
        .map(|(g, t, p, o)| (g.to_string(), t.to_string(), *p, *o))
        .collect()
}

#[test]
fn lag_is_the_end_minus_the_committed_offset_summed_per_group_and_topic() {
    let c = committed(&[
        ("g", "t", 0, 5),
        ("g", "t", 1, 10),
        ("g", "u", 0, 7),
        ("h", "t", 0, 12),
        ("g", "gone", 0, 3),
    ]);
    let ends: HashMap<TopicPartition, i64> = [
        (("t".to_string(), 0), 10),
        (("t".to_string(), 1), 10),
        (("u".to_string(), 0), 7),
    ]
    .into();
    let (series, sums) = lag_series(&c, &ends, 100);
    let lags: Vec<(String, String, String, i64, i64, i64)> = series
        .into_iter()
        .map(|p| {
            let l = p.labels;
            (l.group, l.topic, l.partition, p.committed, p.end, p.lag)
        })
        .collect();
    assert_eq!(
        lags,
        [
            ("g".into(), "t".into(), "0".into(), 5, 10, 5),
            ("g".into(), "t".into(), "1".into(), 10, 10, 0),
            ("g".into(), "u".into(), "0".into(), 7, 7, 0),
            ("h".into(), "t".into(), "0".into(), 12, 10, 0),
        ],
        "an unknown end is left out; an offset past the end lags 0"
    );
    let sum = |g: &str, t: &str| {
        sums[&GroupTopicLabels {
            group: g.into(),
            topic: t.into(),
        }]
    };
    assert_eq!((sum("g", "t"), sum("g", "u"), sum("h", "t")), (5, 0, 0));
}

#[test]
fn per_partition_series_stop_at_the_cap_but_the_sums_count_every_partition() {
    let c: Vec<_> = (0..10)
        .map(|p| ("g".to_string(), "t".to_string(), p, 0))
        .collect();
    let ends: HashMap<TopicPartition, i64> = (0..10).map(|p| (("t".to_string(), p), 2)).collect();
    let (series, sums) = lag_series(&c, &ends, 3);
    assert_eq!(series.len(), 3);
    assert_eq!(sums.values().copied().collect::<Vec<_>>(), [20]);
}
