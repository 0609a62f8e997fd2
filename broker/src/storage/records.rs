//! The records inside a v2 batch, as the cleaner and the produce
//! validation read and rewrite them: each record's offset, timestamp, key
//! and whether it has a value; a batch rebuilt from the records it keeps
//! (Apache's `MemoryRecords.filterTo`: base offset, last offset delta,
//! producer fields and codec kept; the base timestamp becomes the delete
//! horizon when one is set); a batch re-encoded with another codec.

use std::borrow::Cow;
use std::io;

use bytes::BytesMut;
use kafka_protocol::compression::{Compressor, Snappy};

use crate::storage::batch::{BatchHeader, HEADER_LEN};
use crate::storage::decompress::{self, MAX_DECOMPRESSED_BYTES};

/// Attributes bit 3: timestamps are the broker's append time.
pub const LOG_APPEND_TIME: i16 = 0x08;
/// Attributes bit 6 (KIP-534): the base timestamp is the delete horizon.
pub const DELETE_HORIZON: i16 = 0x40;
const CODEC_MASK: i16 = 0x07;

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// The delete horizon a batch carries, if a cleaning set one.
pub fn delete_horizon(h: &BatchHeader) -> Option<i64> {
    (h.attributes & DELETE_HORIZON != 0).then_some(h.base_timestamp)
}

/// One record of a batch, borrowing the batch's (decompressed) records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    attributes: u8,
    offset_delta: i32,
    /// The header count and headers, as stored.
    headers: &'a [u8],
}

impl RecordView<'_> {
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }

    /// Apache's `DefaultRecord.toString`, with the record's `timestamp`
    /// (its batch's when that stamps append times).
    pub fn describe(&self, timestamp: i64) -> String {
        format!(
            "DefaultRecord(offset={}, timestamp={timestamp}, key={} bytes, value={} bytes)",
            self.offset,
            self.key.map_or(0, <[u8]>::len),
            self.value.map_or(0, <[u8]>::len)
        )
    }
}

/// The records section of `batch`: borrowed, or decompressed when the
/// batch is compressed (at most [`MAX_DECOMPRESSED_BYTES`]: past it the
/// error is a [`decompress::TooLarge`]).
pub fn records_section<'a>(batch: &'a [u8], h: &BatchHeader) -> io::Result<Cow<'a, [u8]>> {
    let body = &batch[HEADER_LEN..h.size];
    match h.attributes & CODEC_MASK {
        0 => Ok(Cow::Borrowed(body)),
        codec => decompress::decompress(codec, body, MAX_DECOMPRESSED_BYTES).map(Cow::Owned),
    }
}

/// A zigzag varlong (the record format's integers), at most 10 bytes.
fn read_varlong(buf: &mut &[u8]) -> io::Result<i64> {
    let mut zigzag = 0u64;
    for i in 0..10 {
        let (&b, rest) = buf
            .split_first()
            .ok_or_else(|| invalid("a record runs past the batch"))?;
        *buf = rest;
        zigzag |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64));
        }
    }
    Err(invalid("a varint longer than 10 bytes"))
}

fn read_varint(buf: &mut &[u8]) -> io::Result<i32> {
    i32::try_from(read_varlong(buf)?).map_err(|_| invalid("a varint out of range"))
}

fn write_varlong(out: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.push(zigzag as u8 | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

fn length_prefixed<'a>(buf: &mut &'a [u8], what: &str) -> io::Result<Option<&'a [u8]>> {
    let len = read_varint(buf)?;
    if len < 0 {
        return Ok(None);
    }
    let len = len as usize;
    if buf.len() < len {
        return Err(invalid(format!("record {what} runs past the batch")));
    }
    let (bytes, rest) = buf.split_at(len);
    *buf = rest;
    Ok(Some(bytes))
}

/// Calls `f` with each record of a batch, from its records section
/// ([`records_section`]).
pub fn for_each_record<'a>(
    section: &'a [u8],
    h: &BatchHeader,
    mut f: impl FnMut(RecordView<'a>),
) -> io::Result<()> {
    let mut buf = section;
    for _ in 0..h.record_count.max(0) {
        let len = read_varint(&mut buf)?;
        if len < 0 || buf.len() < len as usize {
            return Err(invalid("record length runs past the batch"));
        }
        let (mut rec, rest) = buf.split_at(len as usize);
        buf = rest;
        let attributes = *rec.first().ok_or_else(|| invalid("empty record"))?;
        rec = &rec[1..];
        let timestamp_delta = read_varlong(&mut rec)?;
        let offset_delta = read_varint(&mut rec)?;
        let key = length_prefixed(&mut rec, "key")?;
        let value = length_prefixed(&mut rec, "value")?;
        f(RecordView {
            offset: h.base_offset + i64::from(offset_delta),
            timestamp: h.base_timestamp + timestamp_delta,
            key,
            value,
            attributes,
            offset_delta,
            headers: rec,
        });
    }
    if !buf.is_empty() {
        return Err(invalid("bytes after the batch's last record"));
    }
    Ok(())
}

/// The records of a batch, from its records section.
pub fn parse_records<'a>(section: &'a [u8], h: &BatchHeader) -> io::Result<Vec<RecordView<'a>>> {
    let mut out = Vec::with_capacity(h.record_count.clamp(0, 1 << 16) as usize);
    for_each_record(section, h, |r| out.push(r))?;
    Ok(out)
}

fn encode_record(out: &mut Vec<u8>, r: &RecordView, base_timestamp: i64) {
    let mut body = Vec::with_capacity(32 + r.key.map_or(0, <[u8]>::len));
    body.push(r.attributes);
    write_varlong(&mut body, r.timestamp - base_timestamp);
    write_varlong(&mut body, i64::from(r.offset_delta));
    for field in [r.key, r.value] {
        match field {
            None => write_varlong(&mut body, -1),
            Some(b) => {
                write_varlong(&mut body, b.len() as i64);
                body.extend_from_slice(b);
            }
        }
    }
    body.extend_from_slice(r.headers);
    write_varlong(out, body.len() as i64);
    out.extend_from_slice(&body);
}

/// A batch's compression codec (attributes bits 0..3) with the level
/// the broker compresses at: Apache's defaults (gzip's -1 is deflate's 6)
/// unless a topic's `compression.*.level` says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None,
    Gzip { level: i32 },
    Snappy,
    Lz4 { level: i32 },
    Zstd { level: i32 },
}

impl Codec {
    pub const GZIP_DEFAULT_LEVEL: i32 = -1;
    pub const LZ4_DEFAULT_LEVEL: i32 = 9;
    pub const ZSTD_DEFAULT_LEVEL: i32 = 3;

    /// The codec a batch's attributes name, at its default level.
    pub fn of_attributes(attributes: i16) -> io::Result<Codec> {
        Ok(match attributes & CODEC_MASK {
            0 => Codec::None,
            1 => Codec::Gzip {
                level: Self::GZIP_DEFAULT_LEVEL,
            },
            2 => Codec::Snappy,
            3 => Codec::Lz4 {
                level: Self::LZ4_DEFAULT_LEVEL,
            },
            4 => Codec::Zstd {
                level: Self::ZSTD_DEFAULT_LEVEL,
            },
            c => return Err(invalid(format!("unknown compression codec {c}"))),
        })
    }

    /// The attributes bits naming this codec.
    pub fn id(self) -> i16 {
        match self {
            Codec::None => 0,
            Codec::Gzip { .. } => 1,
            Codec::Snappy => 2,
            Codec::Lz4 { .. } => 3,
            Codec::Zstd { .. } => 4,
        }
    }
}

/// `records` compressed with `codec` onto `out`, as Apache's clients frame
/// each codec (gzip stream, xerial-compatible snappy, LZ4 frame with
/// independent blocks, zstd frame).
fn compress(codec: Codec, records: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    use std::io::Write;
    match codec {
        Codec::None => out.extend_from_slice(records),
        Codec::Gzip { level } => {
            let level = match u32::try_from(level) {
                Ok(l) => flate2::Compression::new(l.min(9)),
                Err(_) => flate2::Compression::default(),
            };
            let mut encoder = flate2::write::GzEncoder::new(out, level);
            encoder.write_all(records)?;
            encoder.finish()?;
        }
        Codec::Snappy => Snappy::compress(out, |b: &mut BytesMut| {
            b.extend_from_slice(records);
            Ok(())
        })
        .map_err(invalid)?,
        Codec::Lz4 { level } => {
            let mut encoder = lz4::EncoderBuilder::new()
                .level(level.max(1) as u32)
                .block_mode(lz4::BlockMode::Independent)
                .build(out)?;
            encoder.write_all(records)?;
            encoder.finish().1?;
        }
        Codec::Zstd { level } => zstd::stream::copy_encode(records, out, level)?,
    }
    Ok(())
}

fn finish(mut out: Vec<u8>) -> Vec<u8> {
    let len = (out.len() - 12) as i32;
    out[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    out
}

/// `original` rebuilt with only `kept` of its records (in order), with
/// `horizon` as its delete horizon when given (else the one it had). The
/// base offset and last offset delta stay, so offsets and the producer's
/// last sequence survive the cleaning.
pub fn rebuild(
    original: &[u8],
    h: &BatchHeader,
    kept: &[RecordView],
    horizon: Option<i64>,
) -> io::Result<Vec<u8>> {
    let horizon = horizon.or_else(|| delete_horizon(h));
    let base_timestamp = horizon.unwrap_or(h.base_timestamp);
    let max_timestamp = if h.attributes & LOG_APPEND_TIME != 0 {
        h.max_timestamp
    } else {
        kept.iter().map(|r| r.timestamp).max().unwrap_or(-1)
    };
    let mut attributes = h.attributes;
    if horizon.is_some() {
        attributes |= DELETE_HORIZON;
    }
    let codec = Codec::of_attributes(attributes)?;
    let header = Header {
        attributes,
        base_timestamp,
        max_timestamp,
        last_offset_delta: h.last_offset_delta,
    };
    assemble(original, header, kept.iter().copied(), codec, h.size)
}

/// `original`'s `records` (all of them, as parsed) in a batch compressed
/// with `codec`, offset deltas renumbered from 0 (Apache's
/// `LogValidator.buildRecordsAndAssignOffsets`): producer fields and the
/// transactional bit kept, the base timestamp the first record's, the
/// largest timestamp `log_append_time` when the topic stamps append times
/// (records keep their own), else the records' largest.
pub fn reencode(
    original: &[u8],
    h: &BatchHeader,
    records: &[RecordView],
    codec: Codec,
    log_append_time: Option<i64>,
) -> io::Result<Vec<u8>> {
    let mut attributes =
        (h.attributes & !(CODEC_MASK | LOG_APPEND_TIME | DELETE_HORIZON)) | codec.id();
    if log_append_time.is_some() {
        attributes |= LOG_APPEND_TIME;
    }
    let header = Header {
        attributes,
        base_timestamp: records.first().map_or(-1, |r| r.timestamp),
        max_timestamp: log_append_time
            .unwrap_or_else(|| records.iter().map(|r| r.timestamp).max().unwrap_or(-1)),
        last_offset_delta: records.len().saturating_sub(1) as i32,
    };
    let renumbered = records.iter().enumerate().map(|(i, r)| RecordView {
        offset: h.base_offset + i as i64,
        offset_delta: i as i32,
        ..*r
    });
    assemble(original, header, renumbered, codec, h.size)
}

/// The header fields a rebuilt batch sets.
struct Header {
    attributes: i16,
    base_timestamp: i64,
    max_timestamp: i64,
    last_offset_delta: i32,
}

fn assemble<'a>(
    original: &[u8],
    header: Header,
    records: impl Iterator<Item = RecordView<'a>>,
    codec: Codec,
    size_hint: usize,
) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(size_hint);
    out.extend_from_slice(&original[..HEADER_LEN]);
    out[21..23].copy_from_slice(&header.attributes.to_be_bytes());
    out[23..27].copy_from_slice(&header.last_offset_delta.to_be_bytes());
    out[27..35].copy_from_slice(&header.base_timestamp.to_be_bytes());
    out[35..43].copy_from_slice(&header.max_timestamp.to_be_bytes());
    let mut encoded = Vec::with_capacity(size_hint);
    let mut count = 0i32;
    for r in records {
        encode_record(&mut encoded, &r, header.base_timestamp);
        count += 1;
    }
    out[57..61].copy_from_slice(&count.to_be_bytes());
    compress(codec, &encoded, &mut out)?;
    Ok(finish(out))
}

/// `batch` with its largest timestamp and timestamp type set (Apache's
/// `DefaultRecordBatch.setMaxTimestamp`): the checksum recomputed only
/// when either changed.
pub fn set_max_timestamp(batch: &mut [u8], log_append_time: bool, max_timestamp: i64) {
    let attributes = i16::from_be_bytes([batch[21], batch[22]]);
    let wanted = if log_append_time {
        attributes | LOG_APPEND_TIME
    } else {
        attributes & !LOG_APPEND_TIME
    };
    let current = i64::from_be_bytes(batch[35..43].try_into().expect("8 bytes"));
    if wanted == attributes && current == max_timestamp {
        return;
    }
    batch[21..23].copy_from_slice(&wanted.to_be_bytes());
    batch[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// `original` with no records left, kept for its producer fields and last
/// offset (Apache's `writeEmptyHeader`: uncompressed, both timestamps the
/// batch's largest, no delete horizon).
pub fn empty(original: &[u8], h: &BatchHeader) -> Vec<u8> {
    let mut out = original[..HEADER_LEN].to_vec();
    let attributes = h.attributes & !(CODEC_MASK | DELETE_HORIZON);
    out[21..23].copy_from_slice(&attributes.to_be_bytes());
    out[27..35].copy_from_slice(&h.max_timestamp.to_be_bytes());
    out[57..61].copy_from_slice(&0i32.to_be_bytes());
    finish(out)
}

#[cfg(test)]
mod tests;
