//! Keeping the published assignment under the ConfigMap limit.
//!
//! [`kaas_shared::recompute`] pins every active group a broker-set change
//! would move. Gzip makes that fit for realistic group ids (see
//! `kaas_shared::configmap`), but ids that are
//! incompressible (random UUIDs) cost ~16 bytes each even compressed, so a
//! very large scale-up could still overflow. Rather than publish nothing —
//! which would keep a dead broker "alive" in everyone's routing — the
//! operator then leaves out the newest pins, as few as needed: those groups
//! move to their hash owner (one rebalance each, what they would get with
//! no pinning at all), every older entry stays, and status says so.

use kaas_shared::configmap::{encode, encoded_size, CONFIGMAP_LIMIT};
use kaas_shared::Assignment;

/// What the operator allows itself: the limit less room for the summary
/// keys' growth and rounding, so a write never fails validation.
pub const BUDGET: usize = CONFIGMAP_LIMIT - 16 * 1024;

/// Encoded size of `a` as the API server counts it.
pub fn size(a: &Assignment) -> usize {
    let (data, binary) = encode(a);
    encoded_size(&data, &binary)
}

/// `next` if it fits `budget`, else `next` without the fewest of the group
/// entries that `previous` did not have. Returns the document and how many
/// entries were left out. Entries are dropped from the end of the
/// (id-sorted) list, so the choice is deterministic.
pub fn fit(previous: Option<&Assignment>, next: Assignment, budget: usize) -> (Assignment, usize) {
    if size(&next) <= budget {
        return (next, 0);
    }
    let old: std::collections::HashSet<&str> = previous
        .map(|p| {
            p.consumer_groups
                .iter()
                .map(|e| e.group_id.as_str())
                .collect()
        })
        .unwrap_or_default();
    let (kept, new): (Vec<_>, Vec<_>) = next
        .consumer_groups
        .iter()
        .cloned()
        .partition(|e| old.contains(e.group_id.as_str()));
    let with = |n: usize| {
        let mut groups = kept.clone();
        groups.extend(new.iter().take(n).cloned());
        groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        Assignment {
            consumer_groups: groups,
            ..next.clone()
        }
    };
    // Size grows with the number of entries kept: binary search the most
    // that fit. (lo fits or is 0; hi does not fit.)
    let (mut lo, mut hi) = (0, new.len());
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if size(&with(mid)) <= budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (with(lo), new.len() - lo)
}

#[cfg(test)]
mod tests {
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
}
