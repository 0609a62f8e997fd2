//! Record batch (magic v2) headers: parsing and validation.
//!
//! Batches are stored exactly as the producer sent them; the only bytes the
//! leader rewrites are the base offset and the partition leader epoch, which
//! lie outside the CRC, so the stored batch keeps a valid checksum.

use thiserror::Error;

/// Bytes before the first record of a v2 batch.
pub const HEADER_LEN: usize = 61;
/// Bytes of `baseOffset` + `batchLength`, not counted in `batchLength`.
pub const LOG_OVERHEAD: usize = 12;
const MAGIC_OFFSET: usize = 16;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum BatchError {
    #[error("record batch truncated: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("record batch length {0} is invalid")]
    BadLength(i32),
    #[error("record batch magic {0} is not supported (only v2)")]
    UnsupportedMagic(i8),
    #[error("record batch CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("record batch last offset delta {0} is invalid")]
    BadOffsetDelta(i32),
    #[error("control batch is malformed: {0}")]
    BadControl(String),
}

/// Attributes bit 4: the batch belongs to a transaction.
const TRANSACTIONAL: i16 = 0x10;
/// Attributes bit 5: the batch holds a control record (a marker).
const CONTROL: i16 = 0x20;

/// The fields of a batch header the broker needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    /// Whole batch size in bytes, including the 12 bytes of log overhead.
    pub size: usize,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    /// -1 for producers without idempotence.
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
    pub attributes: i16,
}

impl BatchHeader {
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL != 0
    }

    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }
    /// Sequence of the batch's last record (sequences wrap at i32::MAX).
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence < 0 {
            return -1;
        }
        ((i64::from(self.base_sequence) + i64::from(self.last_offset_delta))
            % (i64::from(i32::MAX) + 1)) as i32
    }
}

fn i16_at(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Parses the header at the start of `buf` without checking the CRC.
/// `buf` needs only the first [`HEADER_LEN`] bytes.
pub fn parse_header(buf: &[u8]) -> Result<BatchHeader, BatchError> {
    if buf.len() < HEADER_LEN {
        return Err(BatchError::Truncated {
            need: HEADER_LEN,
            have: buf.len(),
        });
    }
    let batch_length = i32_at(buf, 8);
    if batch_length < (HEADER_LEN - LOG_OVERHEAD) as i32 {
        return Err(BatchError::BadLength(batch_length));
    }
    let magic = buf[MAGIC_OFFSET] as i8;
    if magic != 2 {
        return Err(BatchError::UnsupportedMagic(magic));
    }
    let last_offset_delta = i32_at(buf, 23);
    if last_offset_delta < 0 {
        return Err(BatchError::BadOffsetDelta(last_offset_delta));
    }
    Ok(BatchHeader {
        base_offset: i64_at(buf, 0),
        size: batch_length as usize + LOG_OVERHEAD,
        last_offset_delta,
        base_timestamp: i64_at(buf, 27),
        max_timestamp: i64_at(buf, 35),
        producer_id: i64_at(buf, 43),
        producer_epoch: i16_at(buf, 51),
        base_sequence: i32_at(buf, 53),
        record_count: i32_at(buf, 57),
        attributes: i16_at(buf, ATTRIBUTES_OFFSET),
    })
}

/// The header of the whole batch at the start of `buf` (its checksum unchecked).
fn parse_whole(buf: &[u8]) -> Result<BatchHeader, BatchError> {
    let header = parse_header(buf)?;
    if buf.len() < header.size {
        return Err(BatchError::Truncated {
            need: header.size,
            have: buf.len(),
        });
    }
    Ok(header)
}

/// Parses and fully validates one batch at the start of `buf` (length and CRC).
pub fn validate(buf: &[u8]) -> Result<BatchHeader, BatchError> {
    let header = parse_whole(buf)?;
    let stored = u32::from_be_bytes(buf[CRC_OFFSET..CRC_OFFSET + 4].try_into().expect("4"));
    let computed = crc32c::crc32c(&buf[ATTRIBUTES_OFFSET..header.size]);
    if stored != computed {
        return Err(BatchError::CrcMismatch { stored, computed });
    }
    Ok(header)
}

/// Splits a produce payload into validated batches (as byte ranges).
pub fn split_batches(buf: &[u8]) -> Result<Vec<(std::ops::Range<usize>, BatchHeader)>, BatchError> {
    split(buf, validate)
}

/// [`split_batches`] of a payload whose checksums were verified already
/// (the produce handler did): lengths and headers only, no second pass
/// over every byte.
pub fn split_verified(
    buf: &[u8],
) -> Result<Vec<(std::ops::Range<usize>, BatchHeader)>, BatchError> {
    split(buf, parse_whole)
}

fn split(
    buf: &[u8],
    parse: fn(&[u8]) -> Result<BatchHeader, BatchError>,
) -> Result<Vec<(std::ops::Range<usize>, BatchHeader)>, BatchError> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let header = parse(&buf[at..])?;
        out.push((at..at + header.size, header));
        at += header.size;
    }
    Ok(out)
}

/// Rewrites the fields the leader owns: base offset and leader epoch.
pub fn assign_offset(batch: &mut [u8], base_offset: i64, leader_epoch: i32) {
    batch[0..8].copy_from_slice(&base_offset.to_be_bytes());
    batch[12..16].copy_from_slice(&leader_epoch.to_be_bytes());
}

/// A transaction marker: the control record of a control batch
/// (Apache's `EndTransactionMarker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlMarker {
    pub commit: bool,
    pub coordinator_epoch: i32,
}

/// Control record type ids (Apache's `ControlRecordType`).
const CONTROL_ABORT: i16 = 0;
const CONTROL_COMMIT: i16 = 1;

/// The marker in a control batch (`None`: a control batch without records,
/// or of another control type, which ends no transaction).
pub fn control_marker(batch: &[u8]) -> Result<Option<ControlMarker>, BatchError> {
    let bad = |m: String| BatchError::BadControl(m);
    let mut bytes = bytes::Bytes::copy_from_slice(batch);
    let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes)
        .map_err(|e| bad(e.to_string()))?;
    let Some(record) = set.records.first() else {
        return Ok(None);
    };
    let key = record.key.as_deref().unwrap_or_default();
    if key.len() < 4 {
        return Err(bad(format!("control key of {} bytes", key.len())));
    }
    let commit = match i16_at(key, 2) {
        CONTROL_COMMIT => true,
        CONTROL_ABORT => false,
        _ => return Ok(None),
    };
    let value = record.value.as_deref().unwrap_or_default();
    if value.len() < 6 {
        return Err(bad(format!("marker value of {} bytes", value.len())));
    }
    Ok(Some(ControlMarker {
        commit,
        coordinator_epoch: i32_at(value, 2),
    }))
}

/// A control batch holding one transaction marker, as a partition leader
/// appends it for WriteTxnMarkers (offset 0: the log assigns it).
pub fn encode_marker(
    producer_id: i64,
    producer_epoch: i16,
    marker: ControlMarker,
    timestamp: i64,
) -> Vec<u8> {
    let kind = if marker.commit {
        CONTROL_COMMIT
    } else {
        CONTROL_ABORT
    };
    let mut key = Vec::with_capacity(4);
    key.extend_from_slice(&0i16.to_be_bytes());
    key.extend_from_slice(&kind.to_be_bytes());
    let mut value = Vec::with_capacity(6);
    value.extend_from_slice(&0i16.to_be_bytes());
    value.extend_from_slice(&marker.coordinator_epoch.to_be_bytes());
    let record = kafka_protocol::records::Record {
        transactional: true,
        control: true,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id,
        producer_epoch,
        timestamp_type: kafka_protocol::records::TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp,
        key: Some(bytes::Bytes::from(key)),
        value: Some(bytes::Bytes::from(value)),
        headers: Default::default(),
    };
    let mut buf = bytes::BytesMut::new();
    kafka_protocol::records::RecordBatchEncoder::encode(
        &mut buf,
        [&record],
        &kafka_protocol::records::RecordEncodeOptions {
            version: 2,
            compression: kafka_protocol::records::Compression::None,
        },
    )
    .expect("a one-record uncompressed batch always encodes");
    buf.to_vec()
}

/// Whether the batch is compressed (attributes bits 0..3).
pub fn is_compressed(batch: &[u8]) -> bool {
    batch.len() > ATTRIBUTES_OFFSET + 1 && (i16_at(batch, ATTRIBUTES_OFFSET) & 0x7) != 0
}

#[cfg(test)]
pub(crate) mod tests;
