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
mod tests {
    use super::*;
    use core::fmt::Write as _;

    /// FNV-1a 32 vectors from the official FNV test suite (test_fnv.c,
    /// Landon Curt Noll), string inputs without the trailing NUL.
    const VECTORS: &[(&str, u32)] = &[
        ("", 0x811c_9dc5),
        ("a", 0xe40c_292c),
        ("b", 0xe70c_2de5),
        ("c", 0xe60c_2c52),
        ("d", 0xe10c_2473),
        ("e", 0xe00c_22e0),
        ("f", 0xe30c_2799),
        ("fo", 0x6222_e842),
        ("foo", 0xa9f3_7ed7),
        ("foob", 0x3f50_76ef),
        ("fooba", 0x39aa_a18a),
        ("foobar", 0xbf9c_f968),
        ("ch", 0x5f29_9f4e),
        ("cho", 0xef85_80f3),
        ("chon", 0xac29_7727),
        ("chong", 0x4546_b9c0),
        ("chongo", 0xbd56_4e7d),
        ("chongo ", 0x6bdd_5c67),
        ("chongo w", 0xdd77_ed30),
        ("chongo wa", 0xf4ca_9683),
        ("chongo was", 0x4aeb_9bd0),
        ("chongo was ", 0xe0e6_7ad0),
        ("chongo was h", 0xc2d3_2fa8),
        ("chongo was he", 0x7f74_3fb7),
        ("chongo was her", 0x6900_631f),
        ("chongo was here", 0xc59c_990e),
        ("chongo was here!", 0x4485_24fd),
        ("chongo was here!\n", 0xd499_30d5),
    ];

    #[test]
    fn official_vectors() {
        for &(input, expected) in VECTORS {
            assert_eq!(fnv1a32(input.as_bytes()), expected, "input {input:?}");
        }
    }

    #[test]
    fn streaming_equals_one_shot() {
        for &(input, expected) in VECTORS {
            let bytes = input.as_bytes();
            for split in 0..=bytes.len() {
                let (a, b) = bytes.split_at(split);
                let mut h = Fnv1a32::new();
                h.write(a);
                let mut resumed = Fnv1a32::from_state(h.finish());
                resumed.write(b);
                assert_eq!(resumed.finish(), expected);
            }
        }
        assert_eq!(Fnv1a32::default().finish(), fnv1a32(b""));
    }

    #[test]
    fn fmt_write_hashes_formatted_text() {
        let (topic, partition) = ("orders", -17);
        let mut h = Fnv1a32::new();
        write!(h, "{topic}/{partition}").expect("hashing never fails");
        assert_eq!(h.finish(), fnv1a32(b"orders/-17"));
    }
}
