//! Safe, unique file names for topic names and group ids, and the names of
//! a log's segment files (the log, the cleaner and the producer snapshots
//! name files alike).
//!
//! An id that comes off the wire is never used raw as a path: `/`, `..`, NUL
//! or a name longer than the file system allows would let a client escape
//! its folder or collide with another id. Short ids are escaped (readable,
//! reversible); long ones become a SHA-256 digest, which cannot collide with
//! an escaped name because `~` is always escaped.

use sha2::{Digest, Sha256};

/// Longest escaped name we use as is; longer ones are hashed. Well below
/// NAME_MAX (255) so that suffixes like `.tmp` still fit.
const MAX_ESCAPED_LEN: usize = 200;

/// Maps any id to a file name that stays inside its folder and is unique.
pub fn safe_file_name(id: &[u8]) -> String {
    let mut out = String::with_capacity(id.len());
    for (i, &b) in id.iter().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'-' || (i > 0 && (b == b'.' || b == b'_'));
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
        if out.len() > MAX_ESCAPED_LEN {
            break;
        }
    }
    if out.is_empty() {
        // The empty id is a legal group id for some old clients.
        return "%".to_string();
    }
    if out.len() > MAX_ESCAPED_LEN {
        let digest = Sha256::digest(id);
        let mut hashed = String::from("~");
        for b in digest {
            hashed.push_str(&format!("{b:02x}"));
        }
        return hashed;
    }
    out
}

/// A segment file's name: `<base>.<ext>` before generations,
/// `<base>-<generation>.<ext>` since.
pub fn segment_name(base: i64, gen: u32, ext: &str) -> String {
    match gen {
        0 => format!("{base:020}.{ext}"),
        g => format!("{base:020}-{g}.{ext}"),
    }
}

/// The base offset and generation of a file named as [`segment_name`]
/// with `ext`.
pub fn parse_segment_name(name: &str, ext: &str) -> Option<(i64, u32)> {
    let stem = name.strip_suffix(ext)?.strip_suffix('.')?;
    match stem.split_once('-') {
        None => Some((stem.parse().ok()?, 0)),
        Some((base, gen)) => {
            let gen: u32 = gen.parse().ok()?;
            (gen > 0).then_some((base.parse().ok()?, gen))
        }
    }
}

#[cfg(test)]
mod tests;
