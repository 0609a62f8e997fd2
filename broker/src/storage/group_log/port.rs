//! The group coordinator's port to storage ([`GroupStore`]) on the group
//! logs: each write ordered on its group's lane, loads after the group's
//! earlier writes.

use std::io;

use super::{writer_gone, GroupLogStore, LoadedGroup};
use crate::group::consumer::records::ConsumerGroupRecord;
use crate::group::core::{CommittedOffsets, Conversion, GroupMetadataRecord};
use crate::group::store::{Durable, GroupStore, StoreError, StoredGroup};

impl GroupLogStore {
    /// Waits for the key's earlier writes, then reads its log, on the key's
    /// lane (the caller is a blocking thread).
    pub(crate) fn load_ordered(&self, key: &str) -> Result<Option<LoadedGroup>, StoreError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let logs = self.logs.clone();
        let owned = key.to_string();
        self.writer.submit(
            key,
            Box::new(move || {
                let _ = tx.send(logs.load(&owned));
            }),
        );
        rx.recv().map_err(|_| StoreError::Io(writer_gone()))?
    }

    /// Forgets a key's open log after its earlier writes, on its lane.
    pub(crate) fn close_ordered(&self, key: &str) {
        let logs = self.logs.clone();
        let owned = key.to_string();
        self.writer
            .submit(key, Box::new(move || logs.close(&owned)));
    }
}

impl GroupStore for GroupLogStore {
    fn load(&self, group_id: &str) -> Result<Option<StoredGroup>, StoreError> {
        let loaded = self.load_ordered(group_id)?;
        Ok(loaded.map(|g| StoredGroup {
            metadata: g.metadata,
            consumer: g.consumer,
            offsets: g.offsets,
        }))
    }

    fn peek(&self, group_id: &str) -> Result<Option<StoredGroup>, StoreError> {
        self.logs.peek(group_id)
    }

    fn commit_offsets(&self, group_id: &str, offsets: &CommittedOffsets) -> Durable {
        let offsets = offsets.clone();
        self.ordered(group_id, move |logs, group| {
            logs.commit_offsets(group, &offsets[..])
        })
    }

    fn delete_offsets(&self, group_id: &str, partitions: &[(String, i32)]) -> Durable {
        let partitions = partitions.to_vec();
        self.ordered(group_id, move |logs, group| {
            logs.delete_offsets(group, &partitions)
        })
    }

    fn write_txn_offsets(
        &self,
        group_id: &str,
        producer_id: i64,
        offsets: &CommittedOffsets,
    ) -> Durable {
        let offsets = offsets.clone();
        self.ordered(group_id, move |logs, group| {
            logs.write_txn_offsets(group, producer_id, &offsets[..])
        })
    }

    fn end_txn_offsets(&self, group_id: &str, producer_id: i64, commit: bool) -> Durable {
        self.ordered(group_id, move |logs, group| {
            logs.end_txn_offsets(group, producer_id, commit)
        })
    }

    fn write_metadata(&self, group_id: &str, record: Option<&GroupMetadataRecord>) -> Durable {
        let record = record.cloned();
        self.ordered(group_id, move |logs, group| {
            logs.write_metadata(group, record.as_ref())
        })
    }

    fn write_consumer_records(&self, group_id: &str, records: &[ConsumerGroupRecord]) -> Durable {
        let records = records.to_vec();
        self.ordered(group_id, move |logs, group| {
            logs.write_consumer_records(group, &records)
        })
    }

    fn convert_group(
        &self,
        group_id: &str,
        conversion: &Conversion,
        records: &[ConsumerGroupRecord],
    ) -> Durable {
        let metadata = conversion.classic_metadata().cloned();
        let records = records.to_vec();
        self.ordered(group_id, move |logs, group| {
            logs.convert_group(group, metadata.as_ref(), &records)
        })
    }

    fn delete_group(&self, group_id: &str) -> Durable {
        self.ordered(group_id, |logs, group| logs.delete_group(group))
    }

    fn list_groups(&self) -> io::Result<Vec<String>> {
        self.logs.list_groups()
    }

    fn close(&self, group_id: &str) {
        self.close_ordered(group_id)
    }

    fn written_elsewhere(&self, group_id: &str) -> bool {
        self.logs.written_elsewhere(group_id)
    }
}
