//! A cursor over a record's binary body.

use bytes::Buf;

use super::{Offsets, OFFSET_FIXED_BYTES};
use crate::records::offsets::OffsetAndMetadata;

/// Reads a binary body, refusing (never panicking on) truncated input.
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn need(&self, n: usize) -> Result<(), String> {
        if self.0.remaining() < n {
            Err(format!(
                "truncated binary record ({n} bytes needed, {} left)",
                self.0.remaining()
            ))
        } else {
            Ok(())
        }
    }

    pub(super) fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        self.need(n)?;
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub(super) fn string(&mut self, n: usize) -> Result<String, String> {
        let b = self.bytes(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| "string is not UTF-8".to_string())
    }

    pub(super) fn u8(&mut self) -> Result<u8, String> {
        self.need(1)?;
        Ok(self.0.get_u8())
    }

    pub(super) fn u16(&mut self) -> Result<u16, String> {
        self.need(2)?;
        Ok(self.0.get_u16())
    }

    pub(super) fn u32(&mut self) -> Result<u32, String> {
        self.need(4)?;
        Ok(self.0.get_u32())
    }

    pub(super) fn i32(&mut self) -> Result<i32, String> {
        self.need(4)?;
        Ok(self.0.get_i32())
    }

    pub(super) fn u64(&mut self) -> Result<u64, String> {
        self.need(8)?;
        Ok(self.0.get_u64())
    }

    pub(super) fn i64(&mut self) -> Result<i64, String> {
        self.need(8)?;
        Ok(self.0.get_i64())
    }

    pub(super) fn offsets(&mut self) -> Result<Offsets, String> {
        let count = self.u32()? as usize;
        // Each offset takes at least its fixed bytes: a count larger than
        // the record can hold is corrupt, not a reason to reserve memory.
        if count > self.0.len() / OFFSET_FIXED_BYTES {
            return Err(format!("offset count {count} exceeds the record"));
        }
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let topic_len = self.u16()? as usize;
            let topic = self.string(topic_len)?;
            let partition = self.i32()?;
            let offset = self.i64()?;
            let leader_epoch = self.i32()?;
            let commit_timestamp_ms = self.u64()?;
            let expire = self.i64()?;
            let metadata_len = self.u32()? as usize;
            let metadata = self.string(metadata_len)?;
            out.push((
                topic,
                partition,
                OffsetAndMetadata {
                    offset,
                    leader_epoch: (leader_epoch >= 0).then_some(leader_epoch),
                    metadata,
                    commit_timestamp_ms,
                    expire_timestamp_ms: (expire >= 0).then_some(expire as u64),
                },
            ));
        }
        Ok(out)
    }

    pub(super) fn end(&self) -> Result<(), String> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(format!("{} trailing bytes after the record", self.0.len()))
        }
    }
}
