//! The records of a group log, their encoding, and the table they add up to.
//!
//! A record is framed as `[u32 BE payload length][u32 BE crc32c of
//! payload][payload]`; the payload is one kind byte and a body:
//!
//! | kind | record        | body                                                     |
//! | ---- | ------------- | -------------------------------------------------------- |
//! | 1    | Header        | JSON `{"version":1,"group_id":"…"}`, always first         |
//! | 2    | OffsetCommit  | JSON `[{"topic","partition","offset","leader_epoch","metadata","commit_timestamp_ms","expire_timestamp_ms"}…]` (read only) |
//! | 3    | OffsetDelete  | JSON `[{"topic","partition"}…]`                          |
//! | 4    | GroupMetadata | JSON: the whole record (replacing the previous one) or `null` |
//! | 5    | Snapshot      | JSON `{"offsets":[…as in 2…],"metadata":…,"claim":…}` (read only) |
//! | 6    | Claim         | JSON `{"broker","assignment_version","incarnation"}` (the last optional) |
//! | 7    | OffsetCommit  | binary offsets (below)                                   |
//! | 8    | Snapshot      | binary offsets, then metadata and claim (below)          |
//! | 9    | Transaction   | JSON: a transactional id's state (below) or `null`       |
//! | 10   | TxnOffsets    | `i64 producer id`, then binary offsets: pending until the transaction ends |
//! | 11   | TxnEnd        | `i64 producer id`, `u8` 1 commit / 0 abort               |
//! | 12   | ConsumerGroup | JSON: one change of a KIP-848 consumer group, its records in order (`[{"record":…}…]`, [`ConsumerGroupRecord`]) |
//! | 13   | Conversion    | JSON `{"metadata":…,"consumer":[…]}`: an online migration between a classic and a consumer group, the classic metadata (as in kind 4, `null` its tombstone) and the consumer group's records (as in kind 12) in one frame |
//!
//! Commits and snapshots are most of what a coordinator writes, so they are
//! binary (big-endian, as Kafka's own records): encoding a 1000-offset
//! snapshot as JSON cost more CPU than the commits it replaced. Logs
//! written with kinds 2 and 5 stay readable.
//!
//! Binary offsets: `u32 count`, then per offset `u16 topic length, topic
//! (UTF-8), i32 partition, i64 offset, i32 leader epoch (-1: none), u64
//! commit timestamp, i64 expire timestamp (-1: none), u32 metadata length,
//! metadata (UTF-8)`. A binary snapshot follows its offsets with `u8` 0/1
//! and, if 1, `u32 length` + the metadata record as JSON (as in kind 4),
//! then `u8` 0/1 and, if 1, `i32 broker, u64 assignment version`. Optional
//! sections follow, each a `u8` tag: 1 (a transaction log's state: `u32
//! length` and the transaction as JSON, as in kind 9) and 2 (a group's
//! pending transactional offsets: `u32 count`, then per producer `i64
//! producer id` and binary offsets) and 3 (a consumer group: `u32 length`
//! and, as JSON, the records that rebuild it, as in kind 12) and 4 (the
//! claim's incarnation: `u16 length` + UTF-8). A snapshot with none ends
//! after the claim, as group snapshots always have.
//!
//! The logs of transactional ids (`__cluster/__transaction_state`) are
//! the same files: a header, claims, kind 9 records and snapshots. A
//! transaction record holds `producer_id`, `prev_producer_id`,
//! `next_producer_id`, `producer_epoch`, `timeout_ms`, `state` (Apache's
//! state id), `partitions` (`[{"topic","partition"}…]`), `start_ms`,
//! `last_update_ms` and `client_version`; as in Apache's transaction log,
//! the last producer epoch is not kept.
//!
//! Byte fields of member records (subscription, assignment) are hex strings.
//!
//! The table the records add up to is [`super::table`].

use std::io;

use bytes::BufMut;
use serde::{Deserialize, Serialize};

use crate::records::classic::GroupMetadataRecord;
use crate::records::consumer::ConsumerGroupRecord;
use crate::records::offsets::OffsetAndMetadata;

/// Version written in every header; a log with another version is refused.
pub const FORMAT_VERSION: u32 = 1;

pub(super) const FRAME_HEADER: usize = 8;

pub(super) const KIND_HEADER: u8 = 1;
const KIND_COMMIT_JSON: u8 = 2;
const KIND_DELETE: u8 = 3;
const KIND_METADATA: u8 = 4;
const KIND_SNAPSHOT_JSON: u8 = 5;
const KIND_CLAIM: u8 = 6;
const KIND_COMMIT: u8 = 7;
pub(super) const KIND_SNAPSHOT: u8 = 8;
const KIND_TXN: u8 = 9;
const KIND_TXN_OFFSETS: u8 = 10;
const KIND_TXN_END: u8 = 11;
const KIND_CONSUMER: u8 = 12;
const KIND_CONVERSION: u8 = 13;

pub(super) const SECTION_TXN: u8 = 1;
pub(super) const SECTION_PENDING: u8 = 2;
pub(super) const SECTION_CONSUMER: u8 = 3;
pub(super) const SECTION_CLAIM_INCARNATION: u8 = 4;

/// Offsets as the store takes and returns them: (topic, partition, offset).
pub type Offsets = Vec<(String, i32, OffsetAndMetadata)>;

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct HeaderBody {
    pub version: u32,
    pub group_id: String,
    /// Random, new for every file written from scratch (created, or
    /// replaced by a snapshot): journal entries name the file they were
    /// written to. 0 in logs written before the journal.
    #[serde(default)]
    pub log_id: u64,
}

/// An offset in the JSON records of earlier logs.
#[derive(Debug, Deserialize)]
struct OffsetEntry {
    topic: String,
    partition: i32,
    offset: i64,
    leader_epoch: Option<i32>,
    metadata: String,
    commit_timestamp_ms: u64,
    expire_timestamp_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionKey {
    pub topic: String,
    pub partition: i32,
}

/// The JSON snapshot of earlier logs.
#[derive(Debug, Deserialize)]
struct SnapshotJson {
    offsets: Vec<OffsetEntry>,
    metadata: Option<GroupMetadataRecord>,
    #[serde(default)]
    claim: Option<ClaimBody>,
}

/// Who writes this log: the broker that loaded the group, the assignment
/// version under which it did (see docs/design/fencing.md), and its
/// process's incarnation (empty in claims written before incarnations), so
/// a broker taking the log over can fence that process (docs/design/volume.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ClaimBody {
    pub broker: i32,
    pub assignment_version: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub incarnation: String,
}

#[derive(Debug)]
pub(super) struct Snapshot {
    pub(super) offsets: Offsets,
    pub(super) metadata: Option<GroupMetadataRecord>,
    pub(super) claim: Option<ClaimBody>,
    pub(super) txn: Option<TxnBody>,
    pub(super) pending: PendingTxnOffsets,
    /// The records that rebuild the group's consumer group state.
    pub(super) consumer: Option<Vec<ConsumerGroupRecord>>,
}

/// Transactional offsets by producer id, pending until their transaction
/// ends.
pub type PendingTxnOffsets = std::collections::BTreeMap<i64, Offsets>;

/// A transactional id's state as its log stores it (kind 9; Apache's
/// `TransactionLogValue`). The transaction coordinator converts it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnBody {
    pub producer_id: i64,
    pub prev_producer_id: i64,
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    /// Apache's `TransactionState` id: one of [`STORED_TXN_STATES`].
    pub state: i8,
    pub partitions: Vec<PartitionKey>,
    pub start_ms: i64,
    pub last_update_ms: i64,
    pub client_version: i16,
}

/// The transaction states a log stores (Empty, Ongoing, PrepareCommit,
/// PrepareAbort, CompleteCommit, CompleteAbort): Dead (6) and
/// PrepareEpochFence (7) never are. A record with another is corrupt, like
/// a bad checksum.
pub const STORED_TXN_STATES: std::ops::RangeInclusive<i8> = 0..=5;

impl TxnBody {
    fn checked(self) -> Result<TxnBody, String> {
        if STORED_TXN_STATES.contains(&self.state) {
            Ok(self)
        } else {
            Err(format!("transaction state {} is never stored", self.state))
        }
    }
}

#[derive(Debug)]
pub(super) enum Record {
    Header(HeaderBody),
    Commit(Offsets),
    Delete(Vec<PartitionKey>),
    Metadata(Option<GroupMetadataRecord>),
    Snapshot(Snapshot),
    Claim(ClaimBody),
    /// A transactional id's state; `None` clears it.
    Txn(Option<TxnBody>),
    /// Offsets a transaction committed for the group, pending until it ends.
    TxnOffsets {
        producer_id: i64,
        offsets: Offsets,
    },
    /// The transaction of `producer_id` ended: its pending offsets become
    /// the group's (commit) or are dropped (abort).
    TxnEnd {
        producer_id: i64,
        commit: bool,
    },
    /// One change of a consumer group: its records, replayed in order.
    Consumer(Vec<ConsumerGroupRecord>),
    /// An online migration: the classic metadata set (or cleared) and the
    /// consumer group's records replayed, together.
    Conversion(ConversionBody),
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ConversionBody {
    pub metadata: Option<GroupMetadataRecord>,
    pub consumer: Vec<ConsumerGroupRecord>,
}

impl From<OffsetEntry> for (String, i32, OffsetAndMetadata) {
    fn from(e: OffsetEntry) -> Self {
        let value = OffsetAndMetadata {
            offset: e.offset,
            leader_epoch: e.leader_epoch,
            metadata: e.metadata,
            commit_timestamp_ms: e.commit_timestamp_ms,
            expire_timestamp_ms: e.expire_timestamp_ms,
        };
        (e.topic, e.partition, value)
    }
}

/// A fresh id for a log file written from scratch.
pub(super) fn new_log_id() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}

pub(super) fn header_record(group_id: &str, log_id: u64) -> Record {
    Record::Header(HeaderBody {
        version: FORMAT_VERSION,
        group_id: group_id.to_string(),
        log_id,
    })
}

// ---------------------------------------------------------------- encoding

/// A frame being written: the header is filled in by `finish`.
pub(super) struct FrameBuf(pub(super) Vec<u8>);

impl FrameBuf {
    pub(super) fn new(kind: u8, capacity: usize) -> FrameBuf {
        let mut buf = Vec::with_capacity(FRAME_HEADER + 1 + capacity);
        buf.extend_from_slice(&[0; FRAME_HEADER]);
        buf.push(kind);
        FrameBuf(buf)
    }

    fn json(kind: u8, body: &impl Serialize) -> io::Result<Vec<u8>> {
        let mut f = FrameBuf::new(kind, 64);
        serde_json::to_writer(&mut f.0, body).map_err(io::Error::other)?;
        f.finish()
    }

    pub(super) fn finish(mut self) -> io::Result<Vec<u8>> {
        let buf = &mut self.0;
        let len = u32::try_from(buf.len() - FRAME_HEADER).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "group log record exceeds 4 GiB",
            )
        })?;
        let crc = crc32c::crc32c(&buf[FRAME_HEADER..]);
        buf[0..4].copy_from_slice(&len.to_be_bytes());
        buf[4..8].copy_from_slice(&crc.to_be_bytes());
        Ok(self.0)
    }
}

/// Bytes one offset takes in binary, without its strings.
pub(super) const OFFSET_FIXED_BYTES: usize = 2 + 4 + 8 + 4 + 8 + 8 + 4;

pub(super) fn put_offsets<'a>(
    buf: &mut Vec<u8>,
    count: usize,
    offsets: impl Iterator<Item = (&'a str, i32, &'a OffsetAndMetadata)>,
) -> io::Result<()> {
    let too_long = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} too long for a group log record"),
        )
    };
    buf.put_u32(u32::try_from(count).map_err(|_| too_long("offset list"))?);
    for (topic, partition, o) in offsets {
        buf.put_u16(u16::try_from(topic.len()).map_err(|_| too_long("topic name"))?);
        buf.put_slice(topic.as_bytes());
        buf.put_i32(partition);
        buf.put_i64(o.offset);
        buf.put_i32(o.leader_epoch.unwrap_or(-1));
        buf.put_u64(o.commit_timestamp_ms);
        buf.put_i64(o.expire_timestamp_ms.map_or(-1, |t| t as i64));
        buf.put_u32(u32::try_from(o.metadata.len()).map_err(|_| too_long("offset metadata"))?);
        buf.put_slice(o.metadata.as_bytes());
    }
    Ok(())
}

pub(super) fn offsets_capacity<'a>(
    offsets: impl Iterator<Item = (&'a str, &'a OffsetAndMetadata)>,
) -> usize {
    4 + offsets
        .map(|(t, o)| OFFSET_FIXED_BYTES + t.len() + o.metadata.len())
        .sum::<usize>()
}

/// The framed commit record of `offsets`.
pub(super) fn encode_commit<T: AsRef<str>>(
    offsets: &[(T, i32, OffsetAndMetadata)],
) -> io::Result<Vec<u8>> {
    let capacity = offsets_capacity(offsets.iter().map(|(t, _, o)| (t.as_ref(), o)));
    let mut f = FrameBuf::new(KIND_COMMIT, capacity);
    put_offsets(
        &mut f.0,
        offsets.len(),
        offsets.iter().map(|(t, p, o)| (t.as_ref(), *p, o)),
    )?;
    f.finish()
}

/// The framed record of a transaction's pending offsets for a group.
pub(super) fn encode_txn_offsets<T: AsRef<str>>(
    producer_id: i64,
    offsets: &[(T, i32, OffsetAndMetadata)],
) -> io::Result<Vec<u8>> {
    let capacity = 8 + offsets_capacity(offsets.iter().map(|(t, _, o)| (t.as_ref(), o)));
    let mut f = FrameBuf::new(KIND_TXN_OFFSETS, capacity);
    f.0.put_i64(producer_id);
    put_offsets(
        &mut f.0,
        offsets.len(),
        offsets.iter().map(|(t, p, o)| (t.as_ref(), *p, o)),
    )?;
    f.finish()
}

/// Frames a JSON-bodied record. Commits and snapshots have their own
/// encoders ([`encode_commit`], [`Table::encode_snapshot`]).
pub(super) fn encode(record: &Record) -> io::Result<Vec<u8>> {
    match record {
        Record::Header(b) => FrameBuf::json(KIND_HEADER, b),
        Record::Delete(b) => FrameBuf::json(KIND_DELETE, b),
        Record::Metadata(b) => FrameBuf::json(KIND_METADATA, b),
        Record::Claim(b) => FrameBuf::json(KIND_CLAIM, b),
        Record::Txn(t) => FrameBuf::json(KIND_TXN, t),
        Record::TxnOffsets {
            producer_id,
            offsets,
        } => encode_txn_offsets(*producer_id, offsets),
        Record::TxnEnd {
            producer_id,
            commit,
        } => {
            let mut f = FrameBuf::new(KIND_TXN_END, 9);
            f.0.put_i64(*producer_id);
            f.0.put_u8(u8::from(*commit));
            f.finish()
        }
        Record::Consumer(records) => FrameBuf::json(KIND_CONSUMER, records),
        Record::Conversion(body) => FrameBuf::json(KIND_CONVERSION, body),
        Record::Commit(offsets) => encode_commit(offsets),
        Record::Snapshot(_) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "snapshots are encoded from a table",
        )),
    }
}

// ---------------------------------------------------------------- decoding

fn decode_snapshot(body: &[u8]) -> Result<Snapshot, String> {
    let mut r = Reader(body);
    let offsets = r.offsets()?;
    let metadata = match r.u8()? {
        0 => None,
        1 => {
            let len = r.u32()? as usize;
            let json = r.bytes(len)?;
            let meta: GroupMetadataRecord =
                serde_json::from_slice(json).map_err(|e| e.to_string())?;
            Some(meta)
        }
        other => return Err(format!("bad metadata flag {other}")),
    };
    let claim = match r.u8()? {
        0 => None,
        1 => Some(ClaimBody {
            broker: r.i32()?,
            assignment_version: r.u64()?,
            incarnation: String::new(),
        }),
        other => return Err(format!("bad claim flag {other}")),
    };
    // Optional sections, each once, by tag.
    let mut txn = None;
    let mut pending = PendingTxnOffsets::new();
    let mut consumer = None;
    let mut claim = claim;
    let mut incarnation_seen = false;
    while !r.0.is_empty() {
        match r.u8()? {
            SECTION_CLAIM_INCARNATION if !incarnation_seen => {
                incarnation_seen = true;
                let len = r.u16()? as usize;
                let id = std::str::from_utf8(r.bytes(len)?).map_err(|e| e.to_string())?;
                match &mut claim {
                    Some(c) => c.incarnation = id.to_string(),
                    None => return Err("a claim's incarnation without a claim".to_string()),
                }
            }
            SECTION_TXN if txn.is_none() => {
                let len = r.u32()? as usize;
                let body: TxnBody =
                    serde_json::from_slice(r.bytes(len)?).map_err(|e| e.to_string())?;
                txn = Some(body.checked()?);
            }
            SECTION_PENDING if pending.is_empty() => {
                let producers = r.u32()? as usize;
                // Each producer takes at least its id and a count.
                if producers > r.0.len() / 12 {
                    return Err(format!(
                        "pending producer count {producers} exceeds the record"
                    ));
                }
                for _ in 0..producers {
                    let producer_id = r.i64()?;
                    pending.insert(producer_id, r.offsets()?);
                }
            }
            SECTION_CONSUMER if consumer.is_none() => {
                let len = r.u32()? as usize;
                let records: Vec<ConsumerGroupRecord> =
                    serde_json::from_slice(r.bytes(len)?).map_err(|e| e.to_string())?;
                consumer = Some(records);
            }
            other => return Err(format!("bad snapshot section {other}")),
        }
    }
    Ok(Snapshot {
        offsets,
        metadata,
        claim,
        txn,
        pending,
        consumer,
    })
}

fn decode(payload: &[u8]) -> Result<Record, String> {
    let (&kind, body) = payload.split_first().ok_or("empty record")?;
    let json_err = |e: serde_json::Error| format!("undecodable record of kind {kind}: {e}");
    let bin_err = |e: String| format!("undecodable record of kind {kind}: {e}");
    match kind {
        KIND_HEADER => serde_json::from_slice(body)
            .map(Record::Header)
            .map_err(json_err),
        KIND_COMMIT_JSON => serde_json::from_slice::<Vec<OffsetEntry>>(body)
            .map(|v| Record::Commit(v.into_iter().map(Into::into).collect()))
            .map_err(json_err),
        KIND_DELETE => serde_json::from_slice(body)
            .map(Record::Delete)
            .map_err(json_err),
        KIND_METADATA => serde_json::from_slice(body)
            .map(Record::Metadata)
            .map_err(json_err),
        KIND_SNAPSHOT_JSON => serde_json::from_slice::<SnapshotJson>(body)
            .map(|s| {
                Record::Snapshot(Snapshot {
                    offsets: s.offsets.into_iter().map(Into::into).collect(),
                    metadata: s.metadata,
                    claim: s.claim,
                    txn: None,
                    pending: PendingTxnOffsets::new(),
                    consumer: None,
                })
            })
            .map_err(json_err),
        KIND_CLAIM => serde_json::from_slice(body)
            .map(Record::Claim)
            .map_err(json_err),
        KIND_COMMIT => {
            let mut r = Reader(body);
            let offsets = r.offsets().map_err(bin_err)?;
            r.end().map_err(bin_err)?;
            Ok(Record::Commit(offsets))
        }
        KIND_SNAPSHOT => decode_snapshot(body).map(Record::Snapshot).map_err(bin_err),
        KIND_TXN => {
            let body: Option<TxnBody> = serde_json::from_slice(body).map_err(json_err)?;
            // A record that cannot become a state is corrupt, like a bad
            // checksum.
            let txn = body.map(TxnBody::checked).transpose().map_err(bin_err)?;
            Ok(Record::Txn(txn))
        }
        KIND_TXN_OFFSETS => {
            let mut r = Reader(body);
            let producer_id = r.i64().map_err(bin_err)?;
            let offsets = r.offsets().map_err(bin_err)?;
            r.end().map_err(bin_err)?;
            Ok(Record::TxnOffsets {
                producer_id,
                offsets,
            })
        }
        KIND_TXN_END => {
            let mut r = Reader(body);
            let producer_id = r.i64().map_err(bin_err)?;
            let commit = match r.u8().map_err(bin_err)? {
                0 => false,
                1 => true,
                other => return Err(bin_err(format!("bad commit flag {other}"))),
            };
            r.end().map_err(bin_err)?;
            Ok(Record::TxnEnd {
                producer_id,
                commit,
            })
        }
        KIND_CONSUMER => serde_json::from_slice(body)
            .map(Record::Consumer)
            .map_err(json_err),
        KIND_CONVERSION => serde_json::from_slice(body)
            .map(Record::Conversion)
            .map_err(json_err),
        other => Err(format!("unknown record kind {other}")),
    }
}

/// The record at the start of `buf` and its framed size, or why there is none.
pub(super) fn read_frame(buf: &[u8]) -> Result<(Record, usize), String> {
    if buf.len() < FRAME_HEADER {
        return Err(format!("torn frame header ({} of 8 bytes)", buf.len()));
    }
    let len = u32::from_be_bytes(buf[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_be_bytes(buf[4..8].try_into().expect("4 bytes"));
    let rest = &buf[FRAME_HEADER..];
    if len > rest.len() {
        return Err(format!(
            "torn record ({len} byte payload, {} bytes present)",
            rest.len()
        ));
    }
    let payload = &rest[..len];
    if crc32c::crc32c(payload) != crc {
        return Err("checksum mismatch".to_string());
    }
    Ok((decode(payload)?, FRAME_HEADER + len))
}

pub(super) fn invalid_data(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

pub(super) fn check_header(h: &HeaderBody, group_id: &str) -> io::Result<()> {
    if h.version != FORMAT_VERSION {
        return Err(invalid_data(format!(
            "group log of {group_id:?} has format version {}, this broker reads {FORMAT_VERSION}",
            h.version
        )));
    }
    if h.group_id != group_id {
        return Err(invalid_data(format!(
            "group log at the path of {group_id:?} belongs to group {:?}",
            h.group_id
        )));
    }
    Ok(())
}

mod reader;
use reader::Reader;

#[cfg(test)]
mod tests;
