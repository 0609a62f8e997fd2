//! Regular-expression subscriptions (`subscribed_topic_regex`): Apache's
//! `maybeUpdateRegularExpressions`, `resolveRegularExpressions` and
//! `handleRegularExpressionsResult`. A regex counts the members that
//! subscribe with it; what it resolved to (the topics it matches that the
//! resolving member may describe) is a record of the group, refreshed on a
//! heartbeat when a regex is new, when topics changed, or every
//! `group.consumer.regex.refresh.interval.ms`, never twice within 10 s.
//!
//! Apache resolves on a background thread and writes the outcome after
//! the heartbeat that asked for it; kaas resolves within that heartbeat
//! (pure, over the topics the heartbeat was given), so the records are
//! the same and a new regex's topics reach its member one heartbeat
//! sooner.
//!
//! Syntax: Apache compiles with RE2/J, kaas with the `regex` crate; both
//! are RE2 syntax and match a topic name whole. Differences are in
//! docs/design/consumer-protocol.md.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use super::group::ConsumerGroup;
use super::heartbeat::{error, Context, HeartbeatError};
use super::member::ConsumerGroupMember;
use super::records::{ConsumerGroupRecord, ResolvedRegex};

pub use crate::coordinator::errors::code::INVALID_REGULAR_EXPRESSION;

/// Apache's `REGEX_BATCH_REFRESH_MIN_INTERVAL_MS`: regexes are resolved
/// at most once in this long.
pub const REFRESH_MIN_INTERVAL_MS: i64 = 10_000;

/// Bounds what one regex may cost to compile (the default of the `regex`
/// crate is 10 MiB; topic name patterns need far less).
const COMPILED_SIZE_LIMIT: usize = 1 << 20;

/// `regex` compiled to match a whole topic name, or Apache's error.
pub fn compile(regex: &str) -> Result<Regex, HeartbeatError> {
    regex::RegexBuilder::new(&format!("^(?:{regex})$"))
        .size_limit(COMPILED_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            // The crate's message ends with the reason; Apache gives the
            // reason alone.
            let text = e.to_string();
            let reason = text
                .lines()
                .last()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            error(
                INVALID_REGULAR_EXPRESSION,
                format!(
                    "SubscribedTopicRegex `{regex}` is not a valid regular expression: {reason}."
                ),
            )
        })
}

/// The regexes after one heartbeat's change.
pub(super) struct RegexUpdate<'a> {
    /// The group epoch must move: the member took a regex already resolved
    /// or dropped its regex, or a resolution found other topics.
    pub bump: bool,
    /// Regex → what it resolved to, with this heartbeat's records applied
    /// (the group's own when they change nothing).
    pub resolved: Cow<'a, BTreeMap<String, ResolvedRegex>>,
}

/// Regex → subscribers, with `old` replaced by `new` among the members
/// (Apache's `computeSubscribedRegularExpressions`).
pub(super) fn subscribed_regexes(
    group: &ConsumerGroup,
    old: Option<&ConsumerGroupMember>,
    new: Option<&ConsumerGroupMember>,
) -> BTreeMap<String, usize> {
    let mut counts = group.subscribed_regexes().clone();
    if let Some(regex) = old.and_then(|m| m.metadata.subscribed_topic_regex.as_ref()) {
        if let Some(n) = counts.get_mut(regex) {
            *n -= 1;
            if *n == 0 {
                counts.remove(regex);
            }
        }
    }
    if let Some(regex) = new.and_then(|m| m.metadata.subscribed_topic_regex.as_ref()) {
        *counts.entry(regex.clone()).or_default() += 1;
    }
    counts
}

/// Apache's `maybeUpdateRegularExpressions` for `member` becoming
/// `updated`, with the resolution it may start done at once: the records
/// (a tombstone for a regex its last member dropped, what each subscribed
/// regex resolved to) go to `records`.
pub(super) fn update<'a>(
    group: &'a ConsumerGroup,
    member: &ConsumerGroupMember,
    updated: &ConsumerGroupMember,
    cx: &Context<'_>,
    records: &mut Vec<ConsumerGroupRecord>,
) -> Result<RegexUpdate<'a>, HeartbeatError> {
    let old = member.metadata.subscribed_topic_regex.as_deref();
    let new = updated.metadata.subscribed_topic_regex.as_deref();
    let mut resolved = Cow::Borrowed(group.resolved_regexes());
    let mut bump = false;
    let mut new_regex = false;
    if old != new {
        if let Some(old) = old.filter(|r| group.num_regex_subscribers(r) == 1) {
            records.push(ConsumerGroupRecord::RegularExpressionTombstone {
                regex: old.to_string(),
            });
            resolved.to_mut().remove(old);
        }
        match new {
            Some(new) if group.num_regex_subscribers(new) == 0 => {
                compile(new)?;
                new_regex = true;
            }
            Some(new) => bump = group.resolved_regexes().contains_key(new),
            None => bump = old.is_some(),
        }
    }
    let subscribed = subscribed_regexes(group, Some(member), Some(updated));
    if !subscribed.is_empty() && refresh_due(group, subscribed.len(), new_regex, cx) {
        bump |= resolve(&subscribed, resolved.to_mut(), cx, records);
    }
    Ok(RegexUpdate { bump, resolved })
}

/// Apache's conditions to resolve the group's regexes again: not within
/// 10 s of the last time, and a regex is new or unresolved, a topic was
/// created or deleted since, or the refresh interval passed.
fn refresh_due(
    group: &ConsumerGroup,
    subscribed: usize,
    new_regex: bool,
    cx: &Context<'_>,
) -> bool {
    let now = cx.now_ms as i64;
    let resolutions = group.resolved_regexes().values();
    let last_refresh = resolutions.clone().map(|r| r.timestamp_ms).max();
    if last_refresh.is_some_and(|last| now <= last + REFRESH_MIN_INTERVAL_MS) {
        return false;
    }
    let oldest_version = resolutions.map(|r| r.version).min();
    new_regex
        || subscribed != group.resolved_regexes().len()
        || oldest_version.is_some_and(|v| v < cx.topics.version())
        || last_refresh.is_none_or(|last| now > last + cx.config.regex_refresh_interval_ms as i64)
}

/// Apache's `resolveRegularExpressions` + `handleRegularExpressionsResult`:
/// each subscribed regex against the topics the member may describe, its
/// record written (the version and time move even when the topics do
/// not). Whether any regex now matches other topics.
fn resolve(
    subscribed: &BTreeMap<String, usize>,
    resolved: &mut BTreeMap<String, ResolvedRegex>,
    cx: &Context<'_>,
    records: &mut Vec<ConsumerGroupRecord>,
) -> bool {
    let names = cx.topics.names_for_regex();
    let version = cx.topics.version();
    let mut changed = false;
    for regex in subscribed.keys() {
        // Validated when it was first subscribed; a log written under
        // other rules resolves to nothing.
        let topics: BTreeSet<String> = match compile(regex) {
            Ok(re) => names.iter().filter(|n| re.is_match(n)).cloned().collect(),
            Err(_) => BTreeSet::new(),
        };
        let previous = resolved.get(regex).map(|r| &r.topics);
        changed |= previous.map_or(!topics.is_empty(), |p| *p != topics);
        let now = ResolvedRegex {
            topics,
            version,
            timestamp_ms: cx.now_ms as i64,
        };
        records.push(ConsumerGroupRecord::RegularExpression {
            regex: regex.clone(),
            resolved: now.clone(),
        });
        resolved.insert(regex.clone(), now);
    }
    changed
}

/// Apache's `maybeDeleteResolvedRegularExpressions`: the tombstones of
/// the regexes only `leaving` members subscribe with. Returns the
/// resolutions that remain.
pub(super) fn drop_unused(
    group: &ConsumerGroup,
    leaving: &[&ConsumerGroupMember],
    records: &mut Vec<ConsumerGroupRecord>,
) -> BTreeMap<String, ResolvedRegex> {
    let mut leaving_counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in leaving {
        if let Some(regex) = &m.metadata.subscribed_topic_regex {
            *leaving_counts.entry(regex).or_default() += 1;
        }
    }
    let mut resolved = group.resolved_regexes().clone();
    for (regex, count) in leaving_counts {
        if group.num_regex_subscribers(regex) == count {
            records.push(ConsumerGroupRecord::RegularExpressionTombstone {
                regex: regex.to_string(),
            });
            resolved.remove(regex);
        }
    }
    resolved
}

#[cfg(test)]
mod tests;
