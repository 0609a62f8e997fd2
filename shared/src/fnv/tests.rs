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
