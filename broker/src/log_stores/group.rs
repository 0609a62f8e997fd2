//! The group coordinator's port ([`GroupStore`]) on the group logs of the
//! shared volume (`storage::group_log`): each write ordered on its group's
//! lane, loads after the group's earlier writes, and a loaded consumer
//! group built by the coordinator's own replay of the records its log
//! keeps.

use std::io;

use crate::group::consumer::group::replay_change;
use crate::group::consumer::records::ConsumerGroupRecord;
use crate::group::core::{CommittedOffsets, Conversion, GroupMetadataRecord};
use crate::group::store::{Durable, GroupStore, StoreError, StoredGroup};
use crate::storage::group_log::{GroupLogStore, LoadedGroup, Logs};

/// The store's logs themselves (not this port's methods of the same names).
fn logs(store: &GroupLogStore) -> &Logs {
    store
}

impl GroupStore for GroupLogStore {
    fn load(&self, group_id: &str) -> Result<Option<StoredGroup>, StoreError> {
        let loaded = self.load_ordered(group_id)?;
        Ok(loaded.map(|g| stored(group_id, g)))
    }

    fn peek(&self, group_id: &str) -> Result<Option<StoredGroup>, StoreError> {
        let peeked = logs(self).peek(group_id)?;
        Ok(peeked.map(|g| stored(group_id, g)))
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
        logs(self).list_groups()
    }

    fn close(&self, group_id: &str) {
        self.close_ordered(group_id)
    }

    fn written_elsewhere(&self, group_id: &str) -> bool {
        logs(self).written_elsewhere(group_id)
    }
}

/// A group as its log holds it, as the coordinator takes it: the consumer
/// group built by its own replay of the records kept.
fn stored(group_id: &str, loaded: LoadedGroup) -> StoredGroup {
    let mut consumer = None;
    replay_change(&mut consumer, group_id, &loaded.consumer);
    StoredGroup {
        metadata: loaded.metadata,
        consumer,
        offsets: loaded.offsets,
    }
}
