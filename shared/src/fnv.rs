//! FNV-1a, 32-bit.
//!
//! Coordinator routing hashes keys with FNV-1a 32 because it is tiny, has no
//! seed and no platform dependence: every broker and the controller compute
//! the same value for the same bytes, which is all routing needs.

/// FNV-1a 32-bit offset basis.
const OFFSET_BASIS: u32 = 0x811c_9dc5;
/// FNV 32-bit prime.
const PRIME: u32 = 0x0100_0193;

/// FNV-1a 32-bit hash of `bytes`.
#[must_use]
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h = Fnv1a32::new();
    h.write(bytes);
    h.finish()
}

/// Streaming FNV-1a 32 state.
///
/// Exists so keys built from parts (a partition's `"{topic}/{partition}"`,
/// a key followed by a broker id) hash without allocating a joined buffer:
/// feeding the parts in order gives exactly `fnv1a32` of their concatenation.
/// It also implements [`core::fmt::Write`], so `write!(h, "{topic}/{p}")`
/// hashes the formatted text directly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fnv1a32 {
    state: u32,
}

impl Fnv1a32 {
    /// A fresh hasher (the hash of the empty input).
    #[must_use]
    pub const fn new() -> Self {
        Self {
            state: OFFSET_BASIS,
        }
    }

    /// Resumes from a previous [`finish`](Self::finish) value, so a hash of
    /// `key` can be extended with more bytes without rehashing `key`.
    #[must_use]
    pub const fn from_state(state: u32) -> Self {
        Self { state }
    }

    /// Feeds `bytes`.
    pub fn write(&mut self, bytes: &[u8]) {
        let mut h = self.state;
        for &b in bytes {
            h ^= u32::from(b);
            h = h.wrapping_mul(PRIME);
        }
        self.state = h;
    }

    /// The hash of everything fed so far (the hasher stays usable).
    #[must_use]
    pub const fn finish(&self) -> u32 {
        self.state
    }
}

impl Default for Fnv1a32 {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Write for Fnv1a32 {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.write(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests;
