//! What a partition's leader checks and rewrites in a producer's records
//! before it appends them: Apache's `LogValidator` for magic v2 batches
//! from clients. Pure: the caller passes the clock's reading.
//!
//! - One batch per partition, with a consistent record count, no control
//!   records, and a sequence for every idempotent batch (INVALID_RECORD).
//! - Every record of a compacted topic has a key (INVALID_RECORD).
//! - `message.timestamp.type=CreateTime`: every record's timestamp within
//!   `message.timestamp.before.max.ms` / `after.max.ms` of now
//!   (INVALID_TIMESTAMP); the batch's largest timestamp is the records'.
//!   `LogAppendTime`: the batch carries the broker's time instead.
//! - `compression.type` other than `producer` and the batch's codec: the
//!   batch is re-encoded with the topic's codec at its level.
//!
//! A record error fails the whole batch; its response lists each record's
//! index and message (Apache's `RecordValidationException`).

use super::batch::{self, BatchHeader};
use super::decompress;
use super::records::{self, Codec, RecordView};

/// A partition as Apache's messages name it (`topic-index`), formatted
/// only when a message is: the produce path allocates nothing for it.
#[derive(Debug, Clone, Copy)]
pub struct Tp<'a>(pub &'a str, pub i32);

impl std::fmt::Display for Tp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

/// The topic configs a producer's records are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordPolicy {
    /// `cleanup.policy` holds `compact`: every record needs a key.
    pub compact: bool,
    /// `message.timestamp.type=LogAppendTime`.
    pub log_append_time: bool,
    /// `message.timestamp.before.max.ms`.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`.
    pub timestamp_after_max_ms: i64,
    /// `compression.type`: `None` keeps the producer's codec.
    pub compression: Option<Codec>,
}

impl Default for RecordPolicy {
    /// Apache's topic defaults.
    fn default() -> Self {
        RecordPolicy {
            compact: false,
            log_append_time: false,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: 3_600_000,
            compression: None,
        }
    }
}

/// Records ready to append.
#[derive(Debug, PartialEq, Eq)]
pub struct Validated {
    pub data: Vec<u8>,
    /// The broker's time stamped on the batch (`LogAppendTime`), else -1:
    /// the produce response's `log_append_time_ms`.
    pub log_append_time_ms: i64,
}

/// Why records are refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// INVALID_RECORD, INVALID_TIMESTAMP or CORRUPT_MESSAGE.
    pub error: kafka_protocol::ResponseError,
    pub message: String,
    /// Each failing record's index in the batch and why.
    pub record_errors: Vec<(i32, String)>,
}

impl Refusal {
    fn batch(error: kafka_protocol::ResponseError, message: String) -> Refusal {
        Refusal {
            error,
            message,
            record_errors: Vec::new(),
        }
    }

    fn invalid(message: String) -> Refusal {
        Refusal::batch(kafka_protocol::ResponseError::InvalidRecord, message)
    }

    /// Apache's `processRecordErrors`.
    fn records(errors: Vec<(i32, String, bool)>) -> Refusal {
        let timestamp = errors.iter().any(|(_, _, ts)| *ts);
        let record_errors: Vec<(i32, String)> =
            errors.into_iter().map(|(i, m, _)| (i, m)).collect();
        if timestamp {
            return Refusal {
                error: kafka_protocol::ResponseError::InvalidTimestamp,
                message: "One or more records have been rejected due to invalid timestamp".into(),
                record_errors,
            };
        }
        let shown: Vec<String> = record_errors
            .iter()
            .take(3)
            .map(|(i, m)| format!("RecordError(batchIndex={i}, message='{m}')"))
            .collect();
        Refusal {
            error: kafka_protocol::ResponseError::InvalidRecord,
            message: format!(
                "One or more records have been rejected due to {} record errors in total, and only \
                 showing the first three errors at most: [{}]",
                record_errors.len(),
                shown.join(", ")
            ),
            record_errors,
        }
    }
}

/// Checks a produce request's records for one partition (`tp`) whose
/// checksums the caller verified, and returns them
/// as they are to be appended.
pub fn validate(
    mut data: Vec<u8>,
    tp: Tp<'_>,
    policy: &RecordPolicy,
    now_ms: i64,
) -> Result<Validated, Refusal> {
    let corrupt = |e: &dyn std::fmt::Display| {
        Refusal::batch(kafka_protocol::ResponseError::CorruptMessage, e.to_string())
    };
    let parts = batch::split_verified(&data).map_err(|e| corrupt(&e))?;
    let Some((range, h)) = parts.first().cloned() else {
        return Err(Refusal::invalid(
            "Record batch has no batches at all".into(),
        ));
    };
    if parts.len() > 1 {
        return Err(Refusal::invalid(
            "Compressed outer record has more than one batch".into(),
        ));
    }
    check_batch(&h, tp)?;
    let batch = &data[range.clone()];
    let section = records::records_section(batch, &h).map_err(|e| {
        if decompress::is_too_large(&e) {
            // Apache has no such bound (it reads records one by one): a
            // batch only a forged request comes near.
            Refusal::batch(
                kafka_protocol::ResponseError::MessageTooLarge,
                e.to_string(),
            )
        } else {
            corrupt(&e)
        }
    })?;
    let parsed = records::parse_records(&section, &h).map_err(|e| corrupt(&e))?;
    let batch_log_append_time = h.attributes & records::LOG_APPEND_TIME != 0;
    let mut errors = Vec::new();
    let mut max_timestamp = -1;
    let mut renumber = false;
    for (index, r) in parsed.iter().enumerate() {
        let index = index as i32;
        let timestamp = if batch_log_append_time {
            h.max_timestamp
        } else {
            r.timestamp
        };
        if let Some(error) = check_record(
            r,
            timestamp,
            index,
            tp,
            policy,
            now_ms,
            batch_log_append_time,
        ) {
            errors.push(error);
            continue;
        }
        max_timestamp = max_timestamp.max(timestamp);
        // Apache rewrites a compressed batch whose inner offsets are not
        // 0, 1, 2, … rather than refuse it.
        renumber |= r.offset - h.base_offset != i64::from(index);
    }
    if !errors.is_empty() {
        return Err(Refusal::records(errors));
    }
    let source = records::Codec::of_attributes(h.attributes).map_err(|e| corrupt(&e))?;
    let target = policy.compression.unwrap_or(source);
    let log_append_time = policy.log_append_time.then_some(now_ms);
    let log_append_time_ms = log_append_time.unwrap_or(-1);
    if target.id() != source.id() || (renumber && source != Codec::None) {
        let data = records::reencode(batch, &h, &parsed, target, log_append_time)
            .map_err(|e| corrupt(&e))?;
        return Ok(Validated {
            data,
            log_append_time_ms,
        });
    }
    drop(parsed);
    drop(section);
    records::set_max_timestamp(
        &mut data[range],
        policy.log_append_time,
        log_append_time.unwrap_or(max_timestamp),
    );
    Ok(Validated {
        data,
        log_append_time_ms,
    })
}

/// Apache's `validateBatch` for a client's v2 batch.
fn check_batch(h: &BatchHeader, tp: Tp<'_>) -> Result<(), Refusal> {
    let from_offsets = i64::from(h.last_offset_delta) + 1;
    if from_offsets <= 0 {
        return Err(Refusal::invalid(format!(
            "Batch has an invalid offset range: [{}, {}] in topic partition {tp}",
            h.base_offset,
            h.last_offset()
        )));
    }
    if h.record_count <= 0 {
        return Err(Refusal::invalid(format!(
            "Invalid reported count for record batch: {} in topic partition {tp}",
            h.record_count
        )));
    }
    if from_offsets != i64::from(h.record_count) {
        return Err(Refusal::invalid(format!(
            "Inconsistent batch offset range [{}, {}] and count of records {} in topic partition {tp}",
            h.base_offset,
            h.last_offset(),
            h.record_count
        )));
    }
    if h.is_control() {
        return Err(Refusal::invalid(format!(
            "Clients are not allowed to write control records in topic partition {tp}"
        )));
    }
    if h.producer_id >= 0 && h.base_sequence < 0 {
        return Err(Refusal::invalid(format!(
            "Invalid sequence number {} in record batch with producerId {} in topic partition {tp}",
            h.base_sequence, h.producer_id
        )));
    }
    Ok(())
}

/// Apache's `validateKey` and `validateTimestamp`: a record's error, as
/// (index, message, whether it is a timestamp's).
fn check_record(
    r: &RecordView,
    timestamp: i64,
    index: i32,
    tp: Tp<'_>,
    policy: &RecordPolicy,
    now_ms: i64,
    batch_log_append_time: bool,
) -> Option<(i32, String, bool)> {
    if policy.compact && r.key.is_none() {
        return Some((
            index,
            format!("Compacted topic cannot accept message without key in topic partition {tp}"),
            false,
        ));
    }
    if !policy.log_append_time && timestamp != -1 {
        // Java's long arithmetic: the bounds in the message wrap as Apache's do.
        let diff = now_ms.wrapping_sub(timestamp);
        if diff > policy.timestamp_before_max_ms
            || diff.wrapping_neg() > policy.timestamp_after_max_ms
        {
            return Some((
                index,
                format!(
                    "Timestamp {timestamp} of message with offset {} is out of range. The \
                     timestamp should be within [{}, {}]",
                    r.offset,
                    now_ms.wrapping_sub(policy.timestamp_before_max_ms),
                    now_ms.wrapping_add(policy.timestamp_after_max_ms)
                ),
                true,
            ));
        }
    } else if batch_log_append_time {
        return Some((
            index,
            format!(
                "Invalid timestamp type in message {}. Producer should not set timestamp type to \
                 LogAppendTime.",
                r.describe(timestamp)
            ),
            true,
        ));
    }
    None
}

#[cfg(test)]
pub(crate) mod tests;
