//! The groups this coordinator owns that are out of memory, seen through
//! their logs without taking them: their committed offsets for lag, and
//! the retention sweep Apache runs over every group.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{offsets_in_force, GroupManager, NotServed, UnloadedOffset};

impl GroupManager {
    /// Learns the committed offsets of the groups this broker coordinates
    /// that have a log but are not in memory (after a restart, or groups
    /// that moved here), reading their logs without taking them, so their
    /// lag is exported before anyone uses them again. Offsets the retention
    /// sweep would remove are left out. As for groups unloaded for
    /// idleness, at most `max_resident_groups` groups are kept; groups
    /// already known are not read again. Runs once per assignment: in the
    /// background when one is applied, and awaited by the scrape that
    /// exports lag, which then shows every group.
    pub async fn learn_offsets_on_disk(self: Arc<Self>) {
        // One pass at a time, one per assignment: a pass asked for again
        // (by the scrape that waits for it) finds it done.
        let mut learned_for = self.learning.lock().await;
        let Some(version) = self.routing().map(|r| r.version()) else {
            return;
        };
        if *learned_for == Some(version) {
            return;
        }
        let unknown: Vec<String> = {
            let owned = self.owned_groups_on_disk().await;
            let st = self.lock();
            let room = self
                .config
                .max_resident_groups
                .saturating_sub(st.extra.idle_offsets.len());
            owned
                .into_iter()
                .filter(|g| !st.extra.idle_offsets.contains_key(g))
                .take(room)
                .collect()
        };
        if unknown.is_empty() {
            *learned_for = Some(version);
            return;
        }
        let learned: Vec<(String, Vec<UnloadedOffset>)> = self
            .read_offsets_in_force(unknown)
            .await
            .into_iter()
            .filter(|(_, offsets)| !offsets.is_empty())
            .collect();
        let mut st = self.lock();
        let count = learned.len();
        for (group_id, offsets) in learned {
            // Loaded or moved away meanwhile: what memory holds is newer,
            // or not ours to export.
            if st.core.is_resident(&group_id)
                || self.check_owner(&group_id).is_err()
                || st.extra.idle_offsets.len() >= self.config.max_resident_groups
            {
                continue;
            }
            st.extra.idle_offsets.entry(group_id).or_insert(offsets);
        }
        *learned_for = Some(version);
        info!(
            broker = self.runtime.broker_id(),
            groups = count,
            "read the committed offsets of groups not in memory"
        );
    }

    /// The offsets in force ([`offsets_in_force`]) of each of `groups` that
    /// has a log, read without taking it, off the runtime's threads.
    async fn read_offsets_in_force(
        &self,
        groups: Vec<String>,
    ) -> Vec<(String, Vec<UnloadedOffset>)> {
        let store = self.store.clone();
        let retention_ms = self.config.core.offsets_retention_ms;
        let now = self.now_ms();
        let read = tokio::task::spawn_blocking(move || {
            let mut read = Vec::new();
            for group_id in groups {
                match store.peek(&group_id) {
                    Ok(Some(stored)) => {
                        let offsets = offsets_in_force(
                            &group_id,
                            stored.metadata.as_ref(),
                            stored.consumer.as_ref(),
                            &stored.offsets,
                            retention_ms,
                            now,
                        );
                        read.push((group_id, offsets));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        warn!(group = %group_id, error = %e, "cannot read the group's log")
                    }
                }
            }
            read
        });
        read.await.unwrap_or_default()
    }

    /// The retention sweep for the groups this broker coordinates that are
    /// out of memory (Apache's sweep sees every group; kaas unloads idle
    /// ones): each whose log holds no offset in force is loaded, which
    /// expires what is due and removes the group when it is empty and
    /// left without offsets, as the sweep would. Others stay on disk, and
    /// their logs are read only when what is known of them has expired.
    pub async fn expire_groups_on_disk(self: &Arc<Self>) {
        let owned = self.owned_groups_on_disk().await;
        // A group whose offsets in force are known (unloaded for idleness,
        // or read for its lag) is not read again while one is in force.
        let unknown: Vec<String> = {
            let now = self.now_ms();
            let st = self.lock();
            owned
                .into_iter()
                .filter(|g| {
                    st.extra.idle_offsets.get(g).is_none_or(|offsets| {
                        offsets
                            .iter()
                            .all(|o| o.expires_at_ms.is_some_and(|at| now >= at))
                    })
                })
                .collect()
        };
        let candidates: Vec<String> = self
            .read_offsets_in_force(unknown)
            .await
            .into_iter()
            .filter(|(_, offsets)| offsets.is_empty())
            .map(|(group_id, _)| group_id)
            .collect();
        for group_id in candidates {
            if let Err(NotServed(code)) = self.prepare(&group_id).await {
                info!(group = %group_id, code, "not sweeping a group out of memory now");
            }
        }
    }

    /// [`Self::expire_groups_on_disk`] every `offsets.retention.check.interval.ms`,
    /// until shutdown.
    pub async fn run_disk_expiry(self: Arc<Self>, shutdown: CancellationToken) {
        let every = Duration::from_millis(self.config.core.offsets_retention_check_interval_ms);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(every) => {}
            }
            self.expire_groups_on_disk().await;
        }
    }

    /// Ids of groups with a log on the shared volume that this broker owns
    /// but has not loaded.
    pub async fn owned_groups_on_disk(&self) -> Vec<String> {
        let store = self.store.clone();
        let ids = tokio::task::spawn_blocking(move || store.list_groups())
            .await
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_default();
        let st = self.lock();
        ids.into_iter()
            .filter(|g| !st.core.is_resident(g) && self.check_owner(g).is_ok())
            .collect()
    }
}
