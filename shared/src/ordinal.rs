//! Broker ids are StatefulSet ordinals: pod `<set>-<ordinal>` is broker
//! `<ordinal>`. The operator finds its brokers' pods by this rule and a
//! broker started with `--id-from-pod-name` takes its id by it: one parser.

/// A StatefulSet ordinal: plain decimal, no sign, no leading zero.
pub fn parse_ordinal(s: &str) -> Option<i32> {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !plain || s.len() > 1 && s.starts_with('0') {
        return None;
    }
    s.parse().ok()
}

/// The ordinal that ends a pod's name, `<set>-<ordinal>`.
pub fn pod_ordinal(pod_name: &str) -> Option<i32> {
    parse_ordinal(pod_name.rsplit_once('-')?.1)
}

#[cfg(test)]
mod tests;
