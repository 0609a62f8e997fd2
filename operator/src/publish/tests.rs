use super::*;
use kaas_shared::{recompute, BrokerInfo, Routing};

fn brokers(n: i32) -> Vec<BrokerInfo> {
    (0..n)
        .map(|id| BrokerInfo::alive(id, format!("b{id}"), 9092))
        .collect()
}

/// Incompressible ids, like random UUIDs (a fixed xorshift stream, so
/// the test is deterministic).
fn random_ids(n: usize) -> Vec<String> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            format!("{:016x}{:016x}", next(), next())
        })
        .collect()
}

#[test]
fn a_document_that_fits_is_untouched() {
    let ids = random_ids(1000);
    let v1 = recompute(None, &brokers(3), &ids);
    let v2 = recompute(Some(&v1), &brokers(4), &ids);
    let (fitted, trimmed) = fit(Some(&v1), v2.clone(), BUDGET);
    assert_eq!((fitted, trimmed), (v2, 0));
}

#[test]
fn an_oversized_document_keeps_old_entries_and_as_many_new_as_fit() {
    let ids = random_ids(6000);
    // An earlier scale-up left entries behind...
    let v1 = recompute(None, &brokers(3), &ids[..1000]);
    let v2 = recompute(Some(&v1), &brokers(4), &ids[..1000]);
    assert!(!v2.consumer_groups.is_empty());
    // ...and now 6000 active groups and another scale-up.
    let v3 = recompute(Some(&v2), &brokers(5), &ids);
    let budget = size(&v3) / 2;
    let (fitted, trimmed) = fit(Some(&v2), v3.clone(), budget);
    assert!(size(&fitted) <= budget);
    assert!(trimmed > 0 && trimmed < v3.consumer_groups.len());
    assert_eq!(
        fitted.consumer_groups.len() + trimmed,
        v3.consumer_groups.len()
    );
    for e in &v2.consumer_groups {
        assert!(fitted.consumer_groups.contains(e), "old entry {e:?} kept");
    }
    for e in &fitted.consumer_groups {
        assert!(v3.consumer_groups.contains(e));
    }
    assert_eq!((fitted.version, &fitted.brokers), (v3.version, &v3.brokers));
    // One more entry would not have fit: the search is tight.
    let r = Routing::new(fitted.clone());
    let next_new = v3
        .consumer_groups
        .iter()
        .find(|e| r.group_entry(&e.group_id).is_none())
        .unwrap();
    let mut one_more = fitted.clone();
    one_more.consumer_groups.push(next_new.clone());
    one_more
        .consumer_groups
        .sort_by(|a, b| a.group_id.cmp(&b.group_id));
    assert!(size(&one_more) > budget);
    // Recomputing from the trimmed document adds nothing back: the
    // trimmed groups already moved.
    assert_eq!(recompute(Some(&fitted), &brokers(5), &ids), fitted);
}
