use std::io::Write;

use super::*;

const LIMIT: usize = 1 << 20;

/// `n` zero bytes compressed with `codec`, as producers write them.
fn compressed(codec: i16, n: usize) -> Vec<u8> {
    let zeros = vec![0u8; n];
    match codec {
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&zeros).unwrap();
            e.finish().unwrap()
        }
        2 => snap::raw::Encoder::new().compress_vec(&zeros).unwrap(),
        3 => {
            let mut e = lz4::EncoderBuilder::new().build(Vec::new()).unwrap();
            e.write_all(&zeros).unwrap();
            e.finish().0
        }
        4 => zstd::stream::encode_all(&zeros[..], 1).unwrap(),
        _ => unreachable!(),
    }
}

/// xerial's framing of `n` zero bytes in 32 KiB blocks.
fn xerial(n: usize) -> Vec<u8> {
    let mut out = XERIAL_MAGIC.to_vec();
    out.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
    for chunk in vec![0u8; n].chunks(32 * 1024) {
        let block = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
        out.extend_from_slice(&(block.len() as u32).to_be_bytes());
        out.extend_from_slice(&block);
    }
    out
}

#[test]
fn every_codec_decompresses_up_to_the_bound_and_refuses_past_it() {
    for codec in 1..=4 {
        assert_eq!(
            decompress(codec, &compressed(codec, LIMIT), LIMIT).unwrap(),
            vec![0u8; LIMIT],
            "codec {codec} at the bound"
        );
        let bomb = compressed(codec, 8 * LIMIT);
        assert!(bomb.len() < LIMIT, "codec {codec}: a bomb is small");
        let e = decompress(codec, &bomb, LIMIT).unwrap_err();
        assert!(is_too_large(&e), "codec {codec}: {e}");
    }
    assert_eq!(decompress(2, &xerial(LIMIT), LIMIT).unwrap().len(), LIMIT);
    assert!(is_too_large(
        &decompress(2, &xerial(LIMIT + 1), LIMIT).unwrap_err()
    ));
}

/// A raw snappy block names its length up front: a few bytes claiming
/// 128 MiB are refused before anything is taken.
#[test]
fn a_snappy_length_past_the_bound_is_refused_before_it_is_taken() {
    let claim = [0x80, 0x80, 0x80, 0x40, 0x00];
    assert!(is_too_large(&decompress(2, &claim, LIMIT).unwrap_err()));
}

#[test]
fn damaged_data_is_an_error_not_a_too_large() {
    for codec in 1..=4 {
        let mut data = compressed(codec, 4096);
        let cut = data.len() / 2;
        data.truncate(cut);
        let e = decompress(codec, &data, LIMIT)
            .map(|d| d.len())
            .expect_err(&format!("codec {codec} cut short"));
        assert!(!is_too_large(&e), "codec {codec}: {e}");
    }
    let e = decompress(5, b"", LIMIT).unwrap_err();
    assert!(e.to_string().contains("unknown compression codec 5"), "{e}");
    let mut framed = xerial(100);
    framed.truncate(framed.len() - 1);
    assert!(decompress(2, &framed, LIMIT).is_err());
}
