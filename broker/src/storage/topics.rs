//! Topic metadata on the shared volume: `<data>/<safe name>/topic.json`.
//!
//! Every broker reads the same folder, so a topic created through one broker
//! is visible to all. Creation is atomic (a fully written temporary folder is
//! renamed into place), so two brokers racing to create a topic cannot both
//! win, and a crash never leaves a half-made topic.
//!
//! Each broker caches the topics it has read. Every change (create,
//! delete, new configs or partitions) advances a shared counter,
//! `__cluster/topics.version`, once it is durable; a lookup reads the
//! counter and rescans the folder when it moved. (A folder's mtime would miss a second change in the same clock
//! tick, and on NFS a `stat` may answer from the attribute cache; the
//! counter's content is revalidated on open.) A lookup that misses reads
//! the topic's own file too, so a topic is found as soon as it exists.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::fs::{sync_dir, write_atomic, write_synced, FileLock, SharedCounter};
use super::names::safe_file_name;

pub const TOPIC_FILE: &str = "topic.json";
/// Kafka's limit on topic name length.
pub const MAX_TOPIC_NAME_LEN: usize = 249;
/// kaas's limit on a topic's partitions.
pub const MAX_PARTITIONS: i32 = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicMeta {
    pub name: String,
    pub id: Uuid,
    pub partitions: i32,
    #[serde(default)]
    pub configs: BTreeMap<String, String>,
    /// The replicas users assigned, by partition (`api::replicas`); a
    /// partition without is led where the controller's hash puts it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replicas: BTreeMap<i32, Vec<i32>>,
    /// Each partition's replicas before its latest reassignment, which a
    /// cancelled reassignment goes back to.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replicas_before: BTreeMap<i32, Vec<i32>>,
}

#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    #[error("topic '{0}' already exists")]
    AlreadyExists(String),
    #[error("invalid topic name: {0}")]
    InvalidName(String),
    #[error("invalid partition count {0}")]
    InvalidPartitions(i32),
    #[error("topic '{0}' does not exist")]
    Unknown(String),
    #[error("storage error: {0}")]
    Io(#[from] io::Error),
}

/// Kafka's topic name rules: 1..=249 chars of `[a-zA-Z0-9._-]`, not `.`/`..`.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    if name.is_empty() {
        return Err(TopicError::InvalidName(
            "the empty string is not allowed".into(),
        ));
    }
    if name == "." || name == ".." {
        return Err(TopicError::InvalidName(format!("'{name}' is not allowed")));
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Err(TopicError::InvalidName(format!(
            "'{}...' is longer than {MAX_TOPIC_NAME_LEN} characters",
            &name[..32]
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(TopicError::InvalidName(format!(
            "'{}' contains '{}'; only ASCII alphanumerics, '.', '_' and '-' are allowed",
            name.escape_debug(),
            c.escape_debug()
        )));
    }
    Ok(())
}

/// The set of topics in the data folder, cached and refreshed when the
/// shared version counter moves.
pub struct TopicRegistry {
    data_dir: PathBuf,
    version: SharedCounter,
    cache: RwLock<Cache>,
    /// When the counter was last read, in ns since `born`.
    checked_ns: AtomicU64,
    born: Instant,
}

#[derive(Default)]
struct Cache {
    /// The counter's value the cache was read at; `None` before the first
    /// scan.
    version: Option<i64>,
    /// Shared with [`TopicRegistry::by_name`]'s callers: a new scan
    /// replaces it, an insert copies it only while a caller holds it.
    by_name: Arc<HashMap<String, Arc<TopicMeta>>>,
}

fn write_json_durably(path: &Path, value: &impl Serialize) -> io::Result<()> {
    write_synced(
        path,
        &serde_json::to_vec_pretty(value).map_err(io::Error::other)?,
    )
}

impl TopicRegistry {
    pub fn new(data_dir: PathBuf) -> Self {
        Self {
            version: SharedCounter::new(data_dir.join("__cluster").join("topics.version")),
            data_dir,
            cache: RwLock::new(Cache::default()),
            checked_ns: AtomicU64::new(0),
            born: Instant::now(),
        }
    }

    pub fn topic_dir(&self, name: &str) -> PathBuf {
        self.data_dir.join(safe_file_name(name.as_bytes()))
    }

    /// Rescans the data folder if any topic was created or deleted since
    /// the last look. An unreadable counter rescans (and so does every
    /// lookup until it reads again).
    fn refresh(&self) {
        let version = self.version.read().ok();
        self.checked_ns
            .store(self.born.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if version.is_some() && self.cache.read().version == version {
            return;
        }
        let mut by_name = HashMap::new();
        if let Ok(entries) = fs::read_dir(&self.data_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with('.') || name.starts_with('_') {
                    continue;
                }
                if let Some(meta) = read_meta(&entry.path()) {
                    by_name.insert(meta.name.clone(), Arc::new(meta));
                }
            }
        }
        *self.cache.write() = Cache {
            version,
            by_name: Arc::new(by_name),
        };
    }

    pub fn all(&self) -> Vec<Arc<TopicMeta>> {
        self.refresh();
        let mut all: Vec<_> = self.cache.read().by_name.values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Every topic by name, as of now (one read of the shared counter, no
    /// copy): what a request that looks up several names reads once.
    pub fn by_name(&self) -> Arc<HashMap<String, Arc<TopicMeta>>> {
        self.refresh();
        self.cache.read().by_name.clone()
    }

    /// [`Self::by_name`] as read at most `max_age` ago: a heartbeat, which
    /// sees a topic change at its next beat anyway, spares the volume one
    /// read of the shared counter each (a change made through this broker
    /// is seen at once: it refreshes the cache).
    pub fn by_name_within(&self, max_age: Duration) -> Arc<HashMap<String, Arc<TopicMeta>>> {
        self.versioned_within(max_age).1
    }

    /// [`Self::by_name_within`] with the shared counter's value it was read
    /// at (0 if unreadable): it moves whenever a topic is created or
    /// deleted, on any broker.
    pub fn versioned_within(
        &self,
        max_age: Duration,
    ) -> (i64, Arc<HashMap<String, Arc<TopicMeta>>>) {
        let checked = Duration::from_nanos(self.checked_ns.load(Ordering::Relaxed));
        let fresh = self.born.elapsed().saturating_sub(checked) < max_age;
        if !fresh || self.cache.read().version.is_none() {
            self.refresh();
        }
        let cache = self.cache.read();
        (cache.version.unwrap_or(0), cache.by_name.clone())
    }

    pub fn get(&self, name: &str) -> Option<Arc<TopicMeta>> {
        self.refresh();
        if let Some(meta) = self.cache.read().by_name.get(name) {
            return Some(meta.clone());
        }
        // Created by a broker that has not advanced the counter yet (or
        // could not): the topic's own file says.
        let meta = Arc::new(read_meta(&self.topic_dir(name)).filter(|m| m.name == name)?);
        Arc::make_mut(&mut self.cache.write().by_name).insert(name.to_string(), meta.clone());
        Some(meta)
    }

    pub fn get_by_id(&self, id: Uuid) -> Option<Arc<TopicMeta>> {
        self.refresh();
        self.cache
            .read()
            .by_name
            .values()
            .find(|t| t.id == id)
            .cloned()
    }

    /// [`TopicRegistry::create_blocking`] on a blocking thread.
    pub async fn create(
        self: &Arc<Self>,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Arc<TopicMeta>, TopicError> {
        self.create_assigned(name, partitions, configs, BTreeMap::new(), validate_only)
            .await
    }

    /// [`TopicRegistry::create_assigned_blocking`] on a blocking thread.
    pub async fn create_assigned(
        self: &Arc<Self>,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        replicas: BTreeMap<i32, Vec<i32>>,
        validate_only: bool,
    ) -> Result<Arc<TopicMeta>, TopicError> {
        let (me, name) = (self.clone(), name.to_string());
        off_runtime(move || {
            me.create_assigned_blocking(&name, partitions, configs, replicas, validate_only)
        })
        .await
    }

    /// [`TopicRegistry::delete_blocking`] on a blocking thread.
    pub async fn delete(self: &Arc<Self>, name: &str) -> Result<Arc<TopicMeta>, TopicError> {
        let (me, name) = (self.clone(), name.to_string());
        off_runtime(move || me.delete_blocking(&name)).await
    }

    /// Creates a topic atomically; fails if it exists.
    pub fn create_blocking(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Arc<TopicMeta>, TopicError> {
        self.create_assigned_blocking(name, partitions, configs, BTreeMap::new(), validate_only)
    }

    /// Creates a topic atomically with the replicas users assigned its
    /// partitions; fails if it exists.
    pub fn create_assigned_blocking(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        replicas: BTreeMap<i32, Vec<i32>>,
        validate_only: bool,
    ) -> Result<Arc<TopicMeta>, TopicError> {
        validate_topic_name(name)?;
        if !(1..=MAX_PARTITIONS).contains(&partitions) {
            return Err(TopicError::InvalidPartitions(partitions));
        }
        let dir = self.topic_dir(name);
        if dir.exists() {
            return Err(TopicError::AlreadyExists(name.to_string()));
        }
        let meta = TopicMeta {
            name: name.to_string(),
            id: Uuid::new_v4(),
            partitions,
            configs,
            replicas,
            replicas_before: BTreeMap::new(),
        };
        if validate_only {
            return Ok(Arc::new(meta));
        }
        fs::create_dir_all(&self.data_dir)?;
        let tmp = self.data_dir.join(format!(".tmp-topic-{}", Uuid::new_v4()));
        fs::create_dir(&tmp)?;
        let result = write_json_durably(&tmp.join(TOPIC_FILE), &meta)
            .and_then(|_| sync_dir(&tmp))
            .and_then(|_| fs::rename(&tmp, &dir));
        if let Err(e) = result {
            let _ = fs::remove_dir_all(&tmp);
            // Renaming onto an existing, non-empty topic folder fails: the
            // other broker won the race.
            if dir.join(TOPIC_FILE).exists() {
                return Err(TopicError::AlreadyExists(name.to_string()));
            }
            return Err(e.into());
        }
        sync_dir(&self.data_dir)?;
        self.changed()?;
        Ok(Arc::new(meta))
    }

    /// Deletes a topic: renamed out of sight first (atomic), then removed.
    pub fn delete_blocking(&self, name: &str) -> Result<Arc<TopicMeta>, TopicError> {
        let meta = self
            .get(name)
            .ok_or_else(|| TopicError::Unknown(name.to_string()))?;
        let dir = self.topic_dir(name);
        let trash = self.data_dir.join(format!(".deleted-{}", meta.id));
        fs::rename(&dir, &trash).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => TopicError::Unknown(name.to_string()),
            _ => e.into(),
        })?;
        sync_dir(&self.data_dir)?;
        self.changed()?;
        let _ = fs::remove_dir_all(&trash);
        Ok(meta)
    }

    /// [`TopicRegistry::update_blocking`] on a blocking thread.
    pub async fn update<E: Send + 'static>(
        self: &Arc<Self>,
        name: &str,
        validate_only: bool,
        change: impl FnOnce(&mut TopicMeta) -> Result<(), E> + Send + 'static,
    ) -> Result<Result<Arc<TopicMeta>, E>, TopicError> {
        let (me, name) = (self.clone(), name.to_string());
        off_runtime(move || me.update_blocking(&name, validate_only, change)).await
    }

    /// Changes a topic's metadata (its configs, its partition count) by
    /// `change` applied to what the volume holds now, under the topic's
    /// `topic.lock` (two brokers changing it at once both count), durably,
    /// and tells every broker. With `validate_only`, or when `change`
    /// refuses, nothing is written.
    pub fn update_blocking<E>(
        &self,
        name: &str,
        validate_only: bool,
        change: impl FnOnce(&mut TopicMeta) -> Result<(), E>,
    ) -> Result<Result<Arc<TopicMeta>, E>, TopicError> {
        let dir = self.topic_dir(name);
        let unknown = || TopicError::Unknown(name.to_string());
        if read_meta(&dir).is_none_or(|m| m.name != name) {
            return Err(unknown());
        }
        let _lock =
            FileLock::acquire_path(&dir.join("topic.lock")).map_err(|e| match e.kind() {
                // Deleted meanwhile.
                io::ErrorKind::NotFound => unknown(),
                _ => e.into(),
            })?;
        let mut meta = read_meta(&dir)
            .filter(|m| m.name == name)
            .ok_or_else(unknown)?;
        if let Err(e) = change(&mut meta) {
            return Ok(Err(e));
        }
        if !validate_only {
            let json = serde_json::to_vec_pretty(&meta).map_err(io::Error::other)?;
            write_atomic(&dir.join(TOPIC_FILE), &json)?;
            self.changed()?;
        }
        Ok(Ok(Arc::new(meta)))
    }

    /// Tells every broker (this one included) that the topics changed.
    fn changed(&self) -> io::Result<()> {
        fs::create_dir_all(self.data_dir.join("__cluster"))?;
        self.version.advance(1)?;
        self.refresh();
        Ok(())
    }
}

async fn off_runtime<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, TopicError> + Send + 'static,
) -> Result<T, TopicError> {
    super::blocking(move || Ok(f()))
        .await
        .unwrap_or_else(|e| Err(TopicError::Io(e)))
}

fn read_meta(dir: &Path) -> Option<TopicMeta> {
    let raw = fs::read(dir.join(TOPIC_FILE)).ok()?;
    serde_json::from_slice(&raw).ok()
}

#[cfg(test)]
mod tests;
