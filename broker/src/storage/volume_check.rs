//! The volume contract, checked when a broker starts (docs/design/volume.md):
//! what kaas needs of its data volume, tried on the volume itself, and the
//! mount's type and options read from `/proc/self/mountinfo`. A broker on a
//! volume that fails a check refuses to serve, naming the property and the
//! fix, unless told to only warn (`kaas.volume.self.check`).
//!
//! One machine cannot see another's cache, so what only shows across
//! machines (how long another client's writes take to show) is judged by
//! the mount's options: an NFS mount must send `flock` to the server and
//! not cache missing names; a GlusterFS mount must not cache attributes,
//! names or pages across opens.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::fs::{create_atomic, space, sync_dir};

/// What to do when a check fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SelfCheck {
    /// Refuse to serve.
    #[default]
    Enforce,
    /// Log the failures and serve.
    Warn,
    /// Skip the checks.
    Off,
}

impl std::str::FromStr for SelfCheck {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "enforce" => Ok(SelfCheck::Enforce),
            "warn" => Ok(SelfCheck::Warn),
            "off" => Ok(SelfCheck::Off),
            other => Err(format!("'{other}' is not enforce, warn or off")),
        }
    }
}

/// A property the volume lacks, and how to give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub property: &'static str,
    pub detail: String,
    pub fix: String,
    /// Serving on it could lose or hide acknowledged data: the broker
    /// refuses to start. Otherwise only said (little free space, a
    /// read-only volume: writes fail cleanly, reads are served).
    pub refuses: bool,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}; fix: {}", self.property, self.detail, self.fix)
    }
}

/// A mount as `/proc/self/mountinfo` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub source: String,
    /// The mount's options and the file system's, together.
    pub options: Vec<String>,
}

impl Mount {
    fn option(&self, name: &str) -> Option<&str> {
        self.options.iter().find_map(|o| match o.split_once('=') {
            Some((k, v)) if k == name => Some(v),
            None if o == name => Some(""),
            _ => None,
        })
    }

    fn has(&self, name: &str) -> bool {
        self.option(name).is_some()
    }
}

/// `mountinfo`'s escapes (`\040` for a space, ...).
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let code: String = chars.by_ref().take(3).collect();
            match u8::from_str_radix(&code, 8) {
                Ok(b) => out.push(b as char),
                Err(_) => {
                    out.push('\\');
                    out.push_str(&code);
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The mounts in a `mountinfo` text.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let (mount_point, mount_options) = (fields.get(4)?, fields.get(5)?);
            let mut rest = after.split(' ');
            let fs_type = rest.next()?.to_string();
            let source = unescape(rest.next().unwrap_or(""));
            let super_options = rest.next().unwrap_or("");
            let options = mount_options
                .split(',')
                .chain(super_options.split(','))
                .filter(|o| !o.is_empty())
                .map(str::to_string)
                .collect();
            Some(Mount {
                mount_point: PathBuf::from(unescape(mount_point)),
                fs_type,
                source,
                options,
            })
        })
        .collect()
}

/// The mount holding `path` (canonical): the last listed with the longest
/// mount point above it.
pub fn mount_of<'m>(mounts: &'m [Mount], path: &Path) -> Option<&'m Mount> {
    mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| path.starts_with(&m.mount_point))
        .max_by_key(|(i, m)| (m.mount_point.components().count(), *i))
        .map(|(_, m)| m)
}

/// What the mount's type and options say of the contract. `client_args`
/// finds a FUSE client's command line (by its mount point), when this
/// process can see it.
pub fn judge_mount(
    mount: &Mount,
    client_args: &dyn Fn(&Path) -> Option<Vec<String>>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let at = mount.mount_point.display();
    match mount.fs_type.as_str() {
        "nfs" | "nfs4" => {
            let version = mount.option("vers").or(mount.option("nfsvers")).unwrap_or("");
            if mount.fs_type == "nfs" && !version.starts_with('4') {
                out.push(Finding {
                    property: "NFS version 4",
                    detail: format!("{at} is NFS version {version:?}: locks go through NLM and a lost client's are not released by a lease"),
                    fix: "mount with vers=4.1 (or 4.2)".into(),
                    refuses: true,
                });
            }
            if mount.has("nolock") || matches!(mount.option("local_lock"), Some("flock" | "all")) {
                out.push(Finding {
                    property: "lock exclusion across clients",
                    detail: format!("{at} keeps flock locks local to this machine"),
                    fix: "mount without nolock and with local_lock=none (the default)".into(),
                    refuses: true,
                });
            }
            if mount.has("soft") {
                out.push(Finding {
                    property: "durable writes",
                    detail: format!("{at} is a soft mount: a timed-out write fails after the broker may have acknowledged it, or is dropped"),
                    fix: "mount with hard (the default)".into(),
                    refuses: true,
                });
            }
            if !matches!(mount.option("lookupcache"), Some("none" | "positive" | "pos")) && !mount.has("noac") {
                out.push(Finding {
                    property: "listings that show other clients' new files",
                    detail: format!("{at} caches that a name does not exist: a takeover may not see a file another broker just created"),
                    fix: "mount with lookupcache=positive (or none)".into(),
                    refuses: true,
                });
            }
        }
        "fuse.glusterfs" => match client_args(&mount.mount_point) {
            Some(args) => {
                let has = |flag: &str| args.iter().any(|a| a == flag);
                let missing: Vec<&str> = [
                    "--attribute-timeout=0",
                    "--entry-timeout=0",
                    "--negative-timeout=0",
                    "--fopen-keep-cache=false",
                ]
                .into_iter()
                .filter(|f| !has(f))
                .collect();
                if !missing.is_empty() {
                    out.push(Finding {
                        property: "close-to-open consistency",
                        detail: format!("the GlusterFS client of {at} caches attributes, names or pages: another broker's writes show up to a second late"),
                        fix: format!("mount with {} (and set the volume's performance.stat-prefetch, performance.quick-read and performance.open-behind off)", missing.join(" ")),
                        refuses: true,
                    });
                }
            }
            None => out.push(Finding {
                property: "close-to-open consistency",
                detail: format!("the GlusterFS client of {at} runs outside this process's view, so its options cannot be checked"),
                fix: "mount with --attribute-timeout=0 --entry-timeout=0 --negative-timeout=0 --fopen-keep-cache=false, then start with kaas.volume.self.check=warn".into(),
                refuses: true,
            }),
        },
        "cifs" | "smb3" => out.push(Finding {
            property: "lock exclusion across clients",
            detail: format!("{at} is SMB: flock is not shared between clients"),
            fix: "use an NFS 4.1 share (Azure Files premium NFS) or another file system of docs/design/volume.md".into(),
            refuses: true,
        }),
        _ => {}
    }
    out
}

/// The command line of the FUSE client serving `mount_point`, from
/// `/proc` (`None` when no visible process names it).
pub fn fuse_client_args(mount_point: &Path) -> Option<Vec<String>> {
    let wanted = mount_point.to_str()?;
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Ok(raw) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let is_client = args.first().is_some_and(|a| a.ends_with("glusterfs"));
        if is_client && args.last().is_some_and(|a| a == wanted) {
            return Some(args);
        }
    }
    None
}

/// Tries the volume under `dir` itself: a file written, synced and read
/// back; `flock` held through one open refused through another (and
/// released); a name created only if absent refused the second time; free
/// space.
pub fn probe_volume(dir: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    let probe = dir.join(format!(".volume-check-{}", uuid::Uuid::new_v4().simple()));
    let mut fail = |property: &'static str, detail: String, fix: &str| {
        out.push(Finding {
            property,
            detail,
            fix: fix.into(),
            refuses: true,
        })
    };
    let written = (|| {
        let f = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&probe)?;
        f.write_all_at(b"kaas volume check", 0)?;
        f.sync_data()?;
        sync_dir(dir)?;
        let mut back = [0u8; 17];
        f.read_exact_at(&mut back, 0)?;
        Ok::<_, io::Error>(back == *b"kaas volume check")
    })();
    match written {
        Err(e) if super::is_read_only(&e) => {
            // Served for reads; every write fails cleanly until it is
            // writable (docs/operations.md). Nothing more can be tried.
            return vec![Finding {
                property: "writable",
                detail: format!(
                    "{} is read-only: reads are served, produce and commits fail",
                    dir.display()
                ),
                fix: "mount the volume read-write".into(),
                refuses: false,
            }];
        }
        Ok(true) => {}
        Ok(false) => fail(
            "reads see this broker's writes",
            format!(
                "{} read back something else than was written",
                probe.display()
            ),
            "use a file system of docs/design/volume.md",
        ),
        Err(e) => fail(
            "writable and durable",
            format!("cannot write and fsync {}: {e}", probe.display()),
            "mount the volume read-write; check its free space and permissions",
        ),
    }
    let locks = (|| {
        let one = OpenOptions::new().read(true).write(true).open(&probe)?;
        let two = OpenOptions::new().read(true).write(true).open(&probe)?;
        one.try_lock().map_err(io::Error::from)?;
        let excluded = matches!(two.try_lock(), Err(fs::TryLockError::WouldBlock));
        one.unlock()?;
        let released = two.try_lock().is_ok();
        Ok::<_, io::Error>((excluded, released))
    })();
    match locks {
        Ok((true, true)) => {}
        Ok((excluded, released)) => fail(
            "lock exclusion",
            format!(
                "flock held through one open {} another (released: {released})",
                if excluded {
                    "refused"
                } else {
                    "did not refuse"
                }
            ),
            "use a file system with working flock (NFS: local_lock=none)",
        ),
        Err(e) => fail(
            "lock exclusion",
            format!("flock does not work: {e}"),
            "use a file system with working flock (NFS: local_lock=none)",
        ),
    }
    let unique = dir.join(format!(".volume-check-{}", uuid::Uuid::new_v4().simple()));
    match (create_atomic(&unique, b"1"), create_atomic(&unique, b"2")) {
        (Ok(true), Ok(false)) => {}
        (a, b) => fail(
            "create only if absent",
            format!(
                "creating {} twice answered {a:?} then {b:?}",
                unique.display()
            ),
            "use a file system whose link(2) fails on an existing name",
        ),
    }
    let _ = fs::remove_file(&unique);
    let _ = fs::remove_file(&probe);
    match space(dir) {
        Ok((_, free)) if free < MIN_FREE_BYTES => out.push(Finding {
            property: "free space",
            detail: format!(
                "{} MiB free on the volume: writes fail once it is full (reads go on)",
                free >> 20
            ),
            fix: "grow the volume or delete data (retention.ms / retention.bytes)".into(),
            refuses: false,
        }),
        Ok(_) => {}
        Err(e) => fail(
            "free space",
            format!("cannot read it: {e}"),
            "check the mount",
        ),
    }
    out
}

/// Below this a broker soon cannot roll a segment or write a snapshot:
/// said at start.
const MIN_FREE_BYTES: u64 = 64 << 20;

/// Every check for the data folder `dir`.
pub fn check(dir: &Path) -> Vec<Finding> {
    let mut findings = probe_volume(dir);
    let canonical = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if let Ok(text) = fs::read_to_string("/proc/self/mountinfo") {
        let mounts = parse_mountinfo(&text);
        if let Some(m) = mount_of(&mounts, &canonical) {
            findings.extend(judge_mount(m, &fuse_client_args));
        }
    }
    findings
}

#[cfg(test)]
mod tests;
