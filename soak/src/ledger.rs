//! What the cluster promised: per (group, partition) the offsets handed out
//! for commits and the highest one acknowledged, and which groups were
//! deleted (and when the deletion was acknowledged).
//!
//! Offsets committed to one partition strictly increase: each commit takes
//! the partition's next value, and within a generation one member owns a
//! partition and has at most one request in flight. So the committed offset
//! read at the end must be at least the highest acknowledged one, and must
//! be a value handed out (in `1..next`): an acknowledged commit that reads
//! back lower was lost, a value never sent was invented.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub struct Partition {
    /// The next offset to commit; every value below it was put in a request.
    pub next: i64,
    /// Highest acknowledged offset, -1 for none yet.
    pub acked: i64,
}

pub type GroupOffsets = Arc<Mutex<Vec<Partition>>>;

#[derive(Default)]
pub struct Ledger {
    groups: Mutex<BTreeMap<String, GroupOffsets>>,
    deleted: Mutex<HashMap<String, Instant>>,
}

impl Ledger {
    /// A new group id (never one used before).
    pub fn register(&self, group: &str, partitions: i32) -> GroupOffsets {
        let parts = (0..partitions)
            .map(|_| Partition { next: 1, acked: -1 })
            .collect();
        let g = Arc::new(Mutex::new(parts));
        let old = self
            .groups
            .lock()
            .unwrap()
            .insert(group.to_string(), g.clone());
        assert!(old.is_none(), "group id {group} reused");
        g
    }

    pub fn offsets(&self, group: &str) -> Option<GroupOffsets> {
        self.groups.lock().unwrap().get(group).cloned()
    }

    /// Records an acknowledged DeleteGroups: from now on the group must not
    /// be listed, and its offsets are no longer expected.
    pub fn mark_deleted(&self, group: &str) {
        self.deleted
            .lock()
            .unwrap()
            .insert(group.to_string(), Instant::now());
    }

    /// When `group`'s deletion was acknowledged, if it was.
    pub fn deleted_at(&self, group: &str) -> Option<Instant> {
        self.deleted.lock().unwrap().get(group).copied()
    }

    pub fn deleted(&self) -> Vec<String> {
        let mut v: Vec<String> = self.deleted.lock().unwrap().keys().cloned().collect();
        v.sort();
        v
    }

    /// Groups not deleted, with their offsets.
    pub fn live(&self) -> Vec<(String, GroupOffsets)> {
        let deleted = self.deleted.lock().unwrap();
        self.groups
            .lock()
            .unwrap()
            .iter()
            .filter(|(g, _)| !deleted.contains_key(*g))
            .map(|(g, o)| (g.clone(), o.clone()))
            .collect()
    }
}
