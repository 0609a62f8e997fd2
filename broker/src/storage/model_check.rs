//! The exhaustive search behind the model checks of the takeover protocols
//! (`generations_model_tests.rs`, `group_log/takeover_model_tests.rs`).

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;

/// Breadth-first over every state reachable from `initial` through
/// `successors`: the first violation `violation` finds (if any) and how
/// many states were seen.
pub fn explore<S: Clone + Eq + Hash>(
    initial: S,
    successors: impl Fn(&S) -> Vec<S>,
    violation: impl Fn(&S) -> Option<String>,
) -> (Option<String>, usize) {
    let mut seen: HashSet<S> = HashSet::new();
    let mut queue = VecDeque::from([initial.clone()]);
    seen.insert(initial);
    while let Some(s) = queue.pop_front() {
        if let Some(v) = violation(&s) {
            return (Some(v), seen.len());
        }
        for next in successors(&s) {
            if seen.insert(next.clone()) {
                queue.push_back(next);
            }
        }
    }
    (None, seen.len())
}
