//! A partition's leadership generations (docs/design/volume.md).
//!
//! Each time a broker process begins to lead a partition it opens a new
//! *generation*: a record `<n>.generation` in the partition's folder,
//! created whole and only if absent (so two brokers never both open
//! generation `n`), naming the process (broker and incarnation), the
//! assignment version and leader epoch it leads under, and the offset the
//! generation starts at: where the previous generation's durable records
//! ended when it was read. A generation writes only segment files named
//! with its number, so what an earlier holder writes late (a paused
//! process, a stalled mount that flushes when it comes back) lands in its
//! own files, beyond the offset the next generation starts at, where no
//! reader looks: a file of generation `g` is read only below the start of
//! generation `g + 1`.
//!
//! [`decide`] is the pure part: whether a broker may open the next
//! generation, must first fence the holder of the latest one, must wait
//! for it, or is itself out of date.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::fs::create_atomic;
use super::incarnation::Incarnation;
use super::leader_epochs::LeaderEpochCache;

const SUFFIX: &str = ".generation";

/// One generation of a partition's leadership.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generation {
    pub generation: u32,
    pub broker: i32,
    /// The holder's incarnation id (empty: a process with none, such as a
    /// tool or a test, which can be neither fenced nor fence).
    pub incarnation: String,
    pub assignment_version: u64,
    pub leader_epoch: i32,
    /// The first offset this generation writes: the previous one's end.
    pub start_offset: i64,
    /// The log start offset when this generation began.
    pub log_start_offset: i64,
    /// The holder got the partition's lock (`leader.lock`) when it began:
    /// a free lock then says it let go. One that began without (it fenced
    /// a holder whose lock the volume still kept) says it with its release
    /// marker only.
    #[serde(default)]
    pub holds_lock: bool,
    /// The leader epochs before this generation (epoch, start offset).
    #[serde(default)]
    pub epochs: Vec<(i32, i64)>,
}

fn record_path(dir: &Path, generation: u32) -> PathBuf {
    dir.join(format!("{generation:010}{SUFFIX}"))
}

fn released_path(dir: &Path, generation: u32) -> PathBuf {
    dir.join(format!("{generation:010}{SUFFIX}.released"))
}

/// Records that generation `generation` wrote its last: its holder closed
/// the partition with no append under way.
pub fn release(dir: &Path, generation: u32) -> io::Result<()> {
    fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(released_path(dir, generation))
        .map(drop)
}

/// Whether generation `generation`'s holder recorded that it let go.
pub fn is_released(dir: &Path, generation: u32) -> bool {
    released_path(dir, generation).exists()
}

/// The leader epochs as the latest generation (`latest`) recorded them:
/// its own checkpoint if it wrote one, else those it began with (before
/// generations: the partition's checkpoint). An unreadable checkpoint is
/// warned about and skipped: without its epochs a partition still serves
/// (OffsetForLeaderEpoch answers an unknown end for the epochs before).
pub fn epochs_of(dir: &Path, latest: Option<&Generation>) -> io::Result<LeaderEpochCache> {
    let gen = latest.map_or(0, |g| g.generation);
    match LeaderEpochCache::read(dir, gen) {
        Ok(Some(cache)) => return Ok(cache),
        Ok(None) => {}
        Err(e) => tracing::warn!(dir = %dir.display(), error = %e,
            "cannot read the leader epoch checkpoint; starting without past epochs"),
    }
    Ok(LeaderEpochCache::from_entries(
        latest.map_or(&[][..], |g| &g.epochs[..]).iter().copied(),
    ))
}

/// The generations recorded in `dir`, oldest first. A record that does not
/// parse is an error: guessing past it could serve a zombie's records.
pub fn read(dir: &Path) -> io::Result<Vec<Generation>> {
    let mut numbers: Vec<u32> = match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(SUFFIX)?.parse().ok()
            })
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    numbers.sort_unstable();
    numbers
        .into_iter()
        .map(|n| {
            let path = record_path(dir, n);
            let bytes = fs::read(&path)?;
            let g: Generation = serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unreadable generation record {}: {e}", path.display()),
                )
            })?;
            if g.generation != n {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} names generation {}", path.display(), g.generation),
                ));
            }
            Ok(g)
        })
        .collect()
}

/// Creates the record of `g` in `dir`, durably, unless generation
/// `g.generation` exists already: `Ok(false)` then (another broker opened
/// it first).
pub fn create(dir: &Path, g: &Generation) -> io::Result<bool> {
    let bytes = serde_json::to_vec(g).map_err(io::Error::other)?;
    create_atomic(&record_path(dir, g.generation), &bytes)
}

/// Where each generation's files end: for generation `g`, the start of the
/// first recorded generation after it, if any.
pub fn limit_of(gens: &[Generation], generation: u32) -> Option<i64> {
    gens.iter()
        .find(|g| g.generation > generation)
        .map(|g| g.start_offset)
}

/// What a broker opening a partition is and follows.
#[derive(Clone)]
pub struct Tenure {
    pub broker: i32,
    /// This process on the volume; `None` for a process that registered
    /// none (a tool, a test): it waits for locks and fences no one.
    pub incarnation: Option<Arc<Incarnation>>,
    pub assignment_version: u64,
    pub leader_epoch: i32,
    /// The brokers the assignment counts alive.
    pub alive: Arc<[i32]>,
    /// The volume's `__cluster` folder, where incarnations are.
    pub cluster_dir: PathBuf,
}

impl Tenure {
    /// A new incarnation of `broker` registered under `cluster_dir`,
    /// following `version`, which counts `alive` alive (tests).
    #[cfg(test)]
    pub(crate) fn of_new_process(
        cluster_dir: &Path,
        broker: i32,
        version: u64,
        alive: &[i32],
    ) -> Tenure {
        Tenure {
            broker,
            incarnation: Some(Incarnation::register(cluster_dir, broker).unwrap()),
            assignment_version: version,
            leader_epoch: version as i32,
            alive: Arc::from(alive),
            cluster_dir: cluster_dir.to_path_buf(),
        }
    }

    /// A process without an incarnation: generation records name broker -1.
    pub fn standalone(cluster_dir: PathBuf) -> Tenure {
        Tenure {
            broker: -1,
            incarnation: None,
            assignment_version: 0,
            leader_epoch: 0,
            alive: Arc::from([]),
            cluster_dir,
        }
    }

    pub fn incarnation_id(&self) -> &str {
        self.incarnation.as_ref().map_or("", |i| i.id())
    }
}

/// What a broker about to lead a partition does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Takeover {
    /// Open the next generation.
    Proceed,
    /// Fence the latest generation's holder first (its lock is still
    /// held, by a process that can no longer be waited for), then open the
    /// next generation.
    Fence { broker: i32, incarnation: String },
    /// The lock is held by a holder that is expected to let go: retry.
    Wait(String),
    /// A broker on a newer assignment opened the latest generation: this
    /// broker's assignment is out of date.
    Stale {
        broker: i32,
        assignment_version: u64,
    },
}

/// The decision for `me`, given the latest generation (if any), whether
/// this process got the partition's lock and whether the latest
/// generation's holder recorded that it let go.
pub fn decide(latest: Option<&Generation>, locked: bool, released: bool, me: &Tenure) -> Takeover {
    let Some(latest) = latest else {
        return match locked {
            true => Takeover::Proceed,
            // Written before generations: who holds it is not recorded.
            false => Takeover::Wait("the previous leader still has the partition open".into()),
        };
    };
    let newer = latest.assignment_version > me.assignment_version
        || (latest.assignment_version == me.assignment_version
            && latest.broker != me.broker
            && me.broker >= 0);
    if newer && me.broker >= 0 {
        return Takeover::Stale {
            broker: latest.broker,
            assignment_version: latest.assignment_version,
        };
    }
    if released || (locked && latest.holds_lock) {
        return Takeover::Proceed;
    }
    let mine = me.incarnation_id();
    if me.incarnation.is_none() || latest.incarnation.is_empty() || latest.incarnation == mine {
        return Takeover::Wait("the previous leader still has the partition open".into());
    }
    let own_earlier = latest.broker == me.broker;
    if own_earlier || !me.alive.contains(&latest.broker) {
        return Takeover::Fence {
            broker: latest.broker,
            incarnation: latest.incarnation.clone(),
        };
    }
    Takeover::Wait(format!(
        "the previous leader, broker {}, still has the partition open",
        latest.broker
    ))
}

#[cfg(test)]
mod tests;
