//! Everything the broker keeps on the shared volume.

pub mod batch;
pub mod cleaner;
pub mod decompress;
pub mod fs;
pub mod generations;
pub mod group_commit;
pub mod group_log;
pub mod incarnation;
pub mod journal;
pub mod leader_epochs;
pub mod log;
#[cfg(test)]
pub mod model_check;
pub mod names;
pub mod partition;
pub mod producer_ids;
pub mod producer_snapshot;
pub mod producer_state;
pub mod records;
pub mod retention;
pub mod shared_doc;
pub mod topic_config;
pub mod topics;
#[cfg(test)]
pub mod two_mounts;
pub mod txn_index;
pub mod txn_log;
pub mod validator;
pub mod volume_check;
pub mod volume_sync;

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::OnceCell;
use tracing::{info, warn};

use generations::Tenure;
pub use log::LogConfig;
pub use partition::{Partition, PartitionRef};
use retention::RetentionPolicy;
use topic_config::BrokerTopicDefaults;
pub use topics::{TopicError, TopicMeta, TopicRegistry};

/// Opens a partition's log (recovering it): [`Partition::open`], or in
/// tests one that a test can hold back.
pub trait PartitionOpener: Send + Sync + 'static {
    fn open(
        &self,
        topic: &str,
        index: i32,
        dir: PathBuf,
        config: LogConfig,
        tenure: &Tenure,
    ) -> io::Result<Partition>;
}

struct OpenFromDisk;

impl PartitionOpener for OpenFromDisk {
    fn open(
        &self,
        topic: &str,
        index: i32,
        dir: PathBuf,
        config: LogConfig,
        tenure: &Tenure,
    ) -> io::Result<Partition> {
        Partition::open_as(topic, index, dir, config, tenure)
    }
}

/// What this broker is and follows, as a partition opened now begins its
/// generation under ([`generations::Tenure`]).
pub type TenureSource = Arc<dyn Fn() -> Tenure + Send + Sync>;

/// A partition this broker has open, or is opening.
struct OpenSlot {
    topic: String,
    partition: Arc<OnceCell<PartitionRef>>,
}

/// The data folder: topics, their partition logs, and the cluster folder.
pub struct Storage {
    data_dir: PathBuf,
    /// The broker settings topic configs default to, as started with.
    started_defaults: BrokerTopicDefaults,
    /// The same under the settings changed at run time: those in force.
    topic_defaults: RwLock<Arc<BrokerTopicDefaults>>,
    pub topics: Arc<TopicRegistry>,
    /// Partitions this broker has open (or is opening) because it leads them.
    open: Mutex<HashMap<(uuid::Uuid, i32), OpenSlot>>,
    opener: Arc<dyn PartitionOpener>,
    /// Who opens partitions ([`Storage::set_tenure`]); a process without
    /// an incarnation until told.
    tenure: RwLock<TenureSource>,
}

impl Storage {
    /// Storage under `data_dir`; partition logs follow their topic's
    /// configs over `topic_defaults` (every field of their [`LogConfig`]
    /// is a topic config).
    pub fn new(data_dir: &Path, topic_defaults: BrokerTopicDefaults) -> io::Result<Storage> {
        Storage::with_opener(data_dir, topic_defaults, Arc::new(OpenFromDisk))
    }

    /// [`Storage::new`] with partitions opened by `opener`.
    pub fn with_opener(
        data_dir: &Path,
        topic_defaults: BrokerTopicDefaults,
        opener: Arc<dyn PartitionOpener>,
    ) -> io::Result<Storage> {
        std::fs::create_dir_all(data_dir.join("__cluster"))?;
        Ok(Storage {
            data_dir: data_dir.to_path_buf(),
            topic_defaults: RwLock::new(Arc::new(topic_defaults.clone())),
            started_defaults: topic_defaults,
            topics: Arc::new(TopicRegistry::new(data_dir.to_path_buf())),
            open: Mutex::new(HashMap::new()),
            opener,
            tenure: RwLock::new({
                let cluster_dir = data_dir.join("__cluster");
                Arc::new(move || Tenure::standalone(cluster_dir.clone()))
            }),
        })
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Partitions opened from now on begin their generation as `source`
    /// says (this broker's incarnation and the assignment it follows).
    pub fn set_tenure(&self, source: TenureSource) {
        *self.tenure.write() = source;
    }

    pub fn cluster_dir(&self) -> PathBuf {
        self.data_dir.join("__cluster")
    }

    /// Opens (recovering if needed) a partition of an existing topic. The
    /// open runs on a blocking thread; requests for the same partition wait
    /// for it, requests for others do not.
    pub async fn partition(&self, topic: &TopicMeta, index: i32) -> io::Result<PartitionRef> {
        let cell = {
            let mut open = self.open.lock();
            let slot = open.entry((topic.id, index)).or_insert_with(|| OpenSlot {
                topic: topic.name.clone(),
                partition: Arc::default(),
            });
            if slot.partition.get().is_some_and(|p| p.is_deposed()) {
                // Another generation took it over: opened anew (which
                // answers whether this broker may lead it again).
                slot.partition = Arc::default();
            }
            slot.partition.clone()
        };
        if let Some(p) = cell.get() {
            return Ok(p.clone());
        }
        let config = self.log_settings(topic).0;
        let opener = self.opener.clone();
        let (name, dir) = (
            topic.name.clone(),
            self.topics.topic_dir(&topic.name).join(index.to_string()),
        );
        let tenure = (self.tenure.read())();
        cell.get_or_try_init(|| {
            blocking(move || {
                opener
                    .open(&name, index, dir, config, &tenure)
                    .map(Arc::new)
            })
        })
        .await
        .cloned()
    }

    /// Closes partitions this broker no longer leads (or whose topic is
    /// gone), so a later leader change reopens and recovers from disk. A
    /// partition still opening is let go too: its request uses it once.
    pub fn retain_partitions(&self, mut keep: impl FnMut(&str, i32) -> bool) {
        let mut open = self.open.lock();
        let before = open.len();
        open.retain(|(id, index), slot| {
            let current = self.topics.get(&slot.topic).is_some_and(|t| t.id == *id);
            let kept = current && keep(&slot.topic, *index);
            if !kept {
                if let Some(p) = slot.partition.get() {
                    p.close();
                }
            }
            kept
        });
        let closed = before - open.len();
        if closed > 0 {
            info!(closed, "closed partitions this broker no longer leads");
        }
    }

    /// In every partition open here, forgets the producers idle for
    /// `expiration_ms` with no open transaction (`producer.id.expiration.ms`);
    /// how many.
    pub fn expire_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        self.open_partitions()
            .iter()
            .map(|p| p.remove_expired_producers(now_ms, expiration_ms))
            .sum()
    }

    /// The broker settings topic configs default to, in force now.
    pub fn topic_defaults(&self) -> Arc<BrokerTopicDefaults> {
        self.topic_defaults.read().clone()
    }

    /// The dynamic broker settings changed: for every broker (`default`)
    /// and for this one (`broker`). The topic defaults follow them over
    /// those started with, and so do the partitions open here at once.
    pub fn set_dynamic_defaults(
        &self,
        default: &std::collections::BTreeMap<String, String>,
        broker: &std::collections::BTreeMap<String, String>,
    ) {
        let defaults = self.started_defaults.with_dynamic(default, broker);
        *self.topic_defaults.write() = Arc::new(defaults);
        self.apply_topic_configs(&self.topics.by_name());
    }

    /// What `topic`'s partition logs follow of its configs in force.
    fn log_settings(&self, topic: &TopicMeta) -> (LogConfig, RetentionPolicy) {
        let settings = topic_config::log_settings(&topic.configs, &self.topic_defaults());
        let config = LogConfig {
            segment_bytes: settings.segment_bytes,
            segment_ms: settings.segment_ms,
            segment_jitter_ms: settings.segment_jitter_ms,
            index_interval_bytes: settings.index_interval_bytes,
            max_message_bytes: settings.max_message_bytes,
            records: settings.records,
        };
        (config, settings.retention)
    }

    /// One cleaning at `now_ms` of the dirtiest compacted log this broker
    /// leads, if one is due ([`cleaner::plan`]), and that no other cleaner
    /// thread is cleaning: the partition and counts.
    pub async fn clean_filthiest(
        &self,
        config: cleaner::CleanerConfig,
        now_ms: i64,
    ) -> io::Result<Option<(PartitionRef, cleaner::CleanStats)>> {
        let topics = self.topics.by_name();
        let mut candidates = Vec::new();
        let open = self.open_partitions();
        let defaults = self.topic_defaults();
        for (i, partition) in open.iter().enumerate() {
            let Some(meta) = topics.get(&partition.topic) else {
                continue;
            };
            if partition.is_uncleanable() || partition.is_being_cleaned() {
                continue;
            }
            let policy = topic_config::log_settings(&meta.configs, &defaults).compaction;
            if policy.compact {
                let c = cleaner::plan::cleanable(&partition.log_state(), &policy, now_ms);
                candidates.push((i, c, policy));
            }
        }
        let Some(i) = cleaner::plan::filthiest(&candidates) else {
            return Ok(None);
        };
        let (_, cleanable, policy) = candidates
            .into_iter()
            .find(|(j, ..)| *j == i)
            .expect("chosen among them");
        let partition = open[i].clone();
        // Another cleaner thread may have taken it since: the next look
        // finds another.
        let Some(claim) = partition.claim_cleaning() else {
            return Ok(None);
        };
        let cleaned = partition.clean(cleanable, policy, config, now_ms).await;
        drop(claim);
        match cleaned {
            Ok(stats) => Ok(Some((partition, stats))),
            // Cleaning it again would fail the same way, and starve the
            // other logs: Apache's LogCleaner marks it uncleanable.
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                partition.mark_uncleanable();
                warn!(topic = %partition.topic, partition = partition.index, error = %e,
                      "cannot clean this log's data; the cleaner passes over it until the \
                       partition is reopened");
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// How many partitions open here the cleaner passes over.
    pub fn uncleanable_partitions(&self) -> usize {
        self.open_partitions()
            .iter()
            .filter(|p| p.is_uncleanable())
            .count()
    }

    /// The partitions open here (those this broker leads and has used).
    pub fn open_partitions(&self) -> Vec<PartitionRef> {
        let mut open: Vec<PartitionRef> = self
            .open
            .lock()
            .values()
            .filter_map(|slot| slot.partition.get().cloned())
            .filter(|p| !p.is_deposed())
            .collect();
        open.sort_by(|a, b| (&a.topic, a.index).cmp(&(&b.topic, b.index)));
        open
    }

    /// When the topics changed on any broker since `seen` (the shared
    /// topics counter), the open partitions follow their topic's configs
    /// as they are now; returns the counter's value.
    pub fn follow_topic_configs(&self, seen: Option<i64>) -> Option<i64> {
        let (version, topics) = self.topics.versioned_within(Duration::ZERO);
        if seen == Some(version) {
            return seen;
        }
        self.apply_topic_configs(&topics);
        Some(version)
    }

    /// The partitions open here follow their topic's configs in `topics`
    /// over the topic defaults in force.
    fn apply_topic_configs(&self, topics: &HashMap<String, Arc<TopicMeta>>) {
        let mut configs: HashMap<&str, LogConfig> = HashMap::new();
        for partition in self.open_partitions() {
            if let Some(meta) = topics.get(&partition.topic) {
                let config = *configs
                    .entry(meta.name.as_str())
                    .or_insert_with(|| self.log_settings(meta).0);
                partition.set_config(config);
            }
        }
    }

    /// `topic`'s configs changed through this broker: its open partitions
    /// follow them at once (retention at its next pass; the other brokers'
    /// within a second, [`Storage::follow_topic_configs`]).
    pub fn topic_configs_changed(&self, topic: &TopicMeta) {
        let (config, _) = self.log_settings(topic);
        for p in self.open_partitions() {
            if p.topic == topic.name {
                p.set_config(config);
            }
        }
    }

    /// One retention pass at `now_ms` over the partitions this broker
    /// leads: each follows its topic's configs as they are now (segment
    /// size included) and deletes the old segments they let go. The
    /// segments and bytes deleted.
    pub async fn enforce_retention(&self, now_ms: i64) -> (usize, u64) {
        let topics = self.topics.by_name();
        let open: Vec<(String, PartitionRef)> = self
            .open
            .lock()
            .values()
            .filter_map(|slot| Some((slot.topic.clone(), slot.partition.get()?.clone())))
            .collect();
        let mut settings: HashMap<String, (LogConfig, RetentionPolicy)> = HashMap::new();
        let mut expired = Vec::new();
        for (topic, partition) in open {
            let Some(meta) = topics.get(&topic) else {
                continue;
            };
            let (config, policy) = *settings
                .entry(topic)
                .or_insert_with(|| self.log_settings(meta));
            partition.set_config(config);
            match partition.expire_segments(&policy, now_ms).await {
                Ok(e) if !e.bases.is_empty() => expired.push(e),
                Ok(_) => {}
                Err(e) => warn!(topic = %partition.topic, partition = partition.index,
                                error = %e, "retention could not let old segments go"),
            }
        }
        // Every partition's files in one blocking job, made durable by one
        // `syncfs` for the pass: a folder fsync per partition was most of a
        // pass's cost (`kaas-bench retention`).
        let data_dir = self.data_dir.clone();
        let deleted = blocking(move || {
            let mut counts = (0, 0);
            for e in &expired {
                match e.delete() {
                    Ok(()) => {
                        counts.0 += e.bases.len();
                        counts.1 += e.bytes;
                    }
                    Err(err) => warn!(dir = %e.dir_display(), error = %err,
                                      "retention could not delete old segments' files"),
                }
            }
            if counts.0 > 0 {
                if let Err(err) = std::fs::File::open(&data_dir).and_then(|d| fs::syncfs(&d)) {
                    warn!(error = %err, "retention could not make its deletions durable; \
                          a crash may bring old segments back for the next pass");
                }
            }
            Ok(counts)
        })
        .await;
        deleted.unwrap_or((0, 0))
    }

    pub fn close_topic(&self, topic: &str) {
        self.retain_partitions(|t, _| t != topic);
    }
}

/// Runs file I/O on a blocking thread, off the async runtime's.
/// How many segment files (`*.log`) `dir` holds.
#[cfg(test)]
pub(crate) fn count_segment_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let path = e.as_ref().unwrap().path();
            path.extension().is_some_and(|x| x == "log")
        })
        .count()
}

pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(io::Error::other)?
}

/// Whether an I/O error says the volume is mounted read-only.
pub fn is_read_only(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EROFS)
}

#[cfg(test)]
mod tests;
