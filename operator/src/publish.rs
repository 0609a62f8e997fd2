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
mod tests;
