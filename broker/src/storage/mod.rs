//! Everything the broker keeps on the shared volume.

pub mod batch;
pub mod fs;
pub mod group_log;
pub mod journal;
pub mod log;
pub mod names;
pub mod partition;
pub mod producer_ids;
pub mod producer_state;
pub mod topics;
pub mod volume_sync;

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tracing::info;

pub use log::LogConfig;
pub use partition::{Partition, PartitionRef};
pub use topics::{TopicError, TopicMeta, TopicRegistry};

/// The data folder: topics, their partition logs, and the cluster folder.
pub struct Storage {
    data_dir: PathBuf,
    log_config: LogConfig,
    pub topics: TopicRegistry,
    /// Partitions this broker has open because it leads them.
    open: Mutex<HashMap<(uuid::Uuid, i32), PartitionRef>>,
}

impl Storage {
    pub fn new(data_dir: &Path, log_config: LogConfig) -> io::Result<Storage> {
        std::fs::create_dir_all(data_dir.join("__cluster"))?;
        Ok(Storage {
            data_dir: data_dir.to_path_buf(),
            log_config,
            topics: TopicRegistry::new(data_dir.to_path_buf()),
            open: Mutex::new(HashMap::new()),
        })
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn cluster_dir(&self) -> PathBuf {
        self.data_dir.join("__cluster")
    }

    /// Opens (recovering if needed) a partition of an existing topic.
    pub fn partition(&self, topic: &TopicMeta, index: i32) -> io::Result<PartitionRef> {
        let key = (topic.id, index);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = open.get(&key) {
            return Ok(p.clone());
        }
        let dir = self.topics.topic_dir(&topic.name).join(index.to_string());
        let p = Arc::new(Partition::open(&topic.name, index, dir, self.log_config)?);
        open.insert(key, p.clone());
        Ok(p)
    }

    /// Closes partitions this broker no longer leads (or whose topic is
    /// gone), so a later leader change reopens and recovers from disk.
    pub fn retain_partitions(&self, mut keep: impl FnMut(&str, i32) -> bool) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let before = open.len();
        open.retain(|(id, index), p| {
            let current = self.topics.get(&p.topic).is_some_and(|t| t.id == *id);
            current && keep(&p.topic, *index)
        });
        let closed = before - open.len();
        if closed > 0 {
            info!(closed, "closed partitions this broker no longer leads");
        }
    }

    pub fn close_topic(&self, topic: &str) {
        self.retain_partitions(|t, _| t != topic);
    }
}

/// Whether an I/O error says the volume is mounted read-only.
pub fn is_read_only(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EROFS)
}
