//! A batch's records decompressed with a bound on what they may take. A
//! few KiB of zstd or gzip can stand for gigabytes (a decompression bomb),
//! and a snappy block names its own length: the decoders stream into a
//! buffer that stops at the bound instead of taking what the data claims.

use std::io::{self, Read};

/// Most bytes a batch's records may take decompressed: the default
/// `socket.request.max.bytes`, what one request may carry uncompressed.
/// Producers bound a batch's uncompressed size by their own request size
/// (the Java client's `max.request.size`, librdkafka's
/// `message.max.bytes`: 1 MB by default), so only a forged batch comes
/// near it.
pub const MAX_DECOMPRESSED_BYTES: usize = 100 * 1024 * 1024;

/// The records of a batch decompress to more than the bound.
#[derive(Debug, thiserror::Error)]
#[error("the batch's records take more than {limit} bytes decompressed")]
pub struct TooLarge {
    pub limit: usize,
}

/// Whether `e` is a [`TooLarge`].
pub fn is_too_large(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<TooLarge>())
}

fn too_large(limit: usize) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, TooLarge { limit })
}

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// The decompressed bytes of `data` compressed with codec id `codec`
/// (attributes bits 0-2: 1 gzip, 2 snappy, 3 lz4, 4 zstd), at most
/// `limit` of them.
pub fn decompress(codec: i16, data: &[u8], limit: usize) -> io::Result<Vec<u8>> {
    match codec {
        1 => read_bounded(flate2::read::GzDecoder::new(data), limit),
        2 => snappy(data, limit),
        3 => {
            let mut decoder = lz4::Decoder::new(data)?;
            let out = read_bounded(&mut decoder, limit)?;
            // Its reads end quietly where the data does, mid-frame too.
            decoder
                .finish()
                .1
                .map_err(|_| invalid("an lz4 frame is cut short"))?;
            Ok(out)
        }
        4 => read_bounded(zstd::stream::read::Decoder::with_buffer(data)?, limit),
        c => Err(invalid(format!("unknown compression codec {c}"))),
    }
}

fn read_bounded(reader: impl Read, limit: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    reader
        .take(limit.saturating_add(1) as u64)
        .read_to_end(&mut out)?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(out)
}

/// xerial's framing (snappy-java's `SnappyOutputStream`, what the Java
/// client writes): this magic, a version and a compatible version (4 bytes
/// each), then blocks, each a 4-byte length and a raw snappy block.
/// Without the magic, the whole is one raw snappy block (as
/// `SnappyInputStream` reads it, and librdkafka writes it).
const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER_LEN: usize = 16;

fn snappy(data: &[u8], limit: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    if !data.starts_with(XERIAL_MAGIC) {
        snappy_block(data, &mut out, limit)?;
        return Ok(out);
    }
    let mut rest = data
        .get(XERIAL_HEADER_LEN..)
        .ok_or_else(|| invalid("a snappy stream's header is cut short"))?;
    while !rest.is_empty() {
        let (len, after) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| invalid("a snappy block's length is cut short"))?;
        let len = u32::from_be_bytes(*len) as usize;
        let block = after
            .get(..len)
            .ok_or_else(|| invalid("a snappy block runs past the batch"))?;
        snappy_block(block, &mut out, limit)?;
        rest = &after[len..];
    }
    Ok(out)
}

/// Appends one raw snappy block, its length checked before it is taken.
fn snappy_block(block: &[u8], out: &mut Vec<u8>, limit: usize) -> io::Result<()> {
    let len = snap::raw::decompress_len(block).map_err(invalid)?;
    let start = out.len();
    if len > limit - start {
        return Err(too_large(limit));
    }
    out.resize(start + len, 0);
    snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(invalid)?;
    Ok(())
}

#[cfg(test)]
mod tests;
