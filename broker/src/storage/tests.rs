use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::FutureExt;

use super::*;

/// Opens partition `held` only once the test says so, as a long
/// recovery (or a slow volume) would hold it; others open at once.
struct HeldOpen {
    held: i32,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    opened_held: AtomicBool,
}

impl PartitionOpener for HeldOpen {
    fn open(
        &self,
        topic: &str,
        index: i32,
        dir: PathBuf,
        config: LogConfig,
        tenure: &Tenure,
    ) -> io::Result<Partition> {
        if index == self.held {
            self.release
                .lock()
                .unwrap()
                .recv()
                .map_err(io::Error::other)?;
            self.opened_held.store(true, Ordering::SeqCst);
        }
        Partition::open_as(topic, index, dir, config, tenure)
    }
}

/// Topic `name` with `configs` and `n` partitions, each holding four
/// one-record batches of key `k`.
async fn topic_of_four_batches(
    storage: &Storage,
    name: &str,
    n: i32,
    configs: &[(&str, &str)],
) -> (Arc<TopicMeta>, Vec<PartitionRef>) {
    use kaas_testkit::records::{encode_records, record};
    use kafka_protocol::records::Compression;
    let configs: BTreeMap<String, String> = configs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let meta = storage
        .topics
        .create(name, n, configs, false)
        .await
        .unwrap();
    let mut partitions = Vec::new();
    for p in 0..n {
        let partition = storage.partition(&meta, p).await.unwrap();
        for i in 0..4 {
            let r = record(0, 1_000 + i, Some(b"k"), Some(b"a value"));
            partition
                .append(encode_records(&[r], Compression::None), 0)
                .await
                .unwrap();
        }
        partitions.push(partition);
    }
    (meta, partitions)
}

const COMPACTED_SMALL_SEGMENTS: &[(&str, &str)] =
    &[("cleanup.policy", "compact"), ("segment.bytes", "100")];

/// `index.interval.bytes`: how many bytes of batches go between two
/// entries of a segment's offset index (0: an entry per batch).
#[tokio::test]
async fn the_index_follows_the_topics_index_interval() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::new(dir.path(), BrokerTopicDefaults::default()).unwrap();
    let mut entries = Vec::new();
    for (topic, configs) in [
        ("every", &[("index.interval.bytes", "0")][..]),
        ("default", &[]),
    ] {
        topic_of_four_batches(&storage, topic, 1, configs).await;
        let index = storage
            .topics
            .topic_dir(topic)
            .join("0")
            .join(format!("{:020}-1.index", 0));
        entries.push(std::fs::metadata(index).unwrap().len() / 20);
    }
    assert_eq!(entries, [4, 1], "an entry per batch; one per 4096 bytes");
}

/// With `log.cleaner.threads` above one, each thread cleans a log no
/// other thread has.
#[tokio::test]
async fn a_cleaner_thread_passes_over_a_log_another_is_cleaning() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::new(dir.path(), BrokerTopicDefaults::default()).unwrap();
    let (_, partitions) = topic_of_four_batches(&storage, "c", 2, COMPACTED_SMALL_SEGMENTS).await;
    let config = cleaner::CleanerConfig::default();
    let held = partitions[0].claim_cleaning().expect("free");
    assert!(
        partitions[0].claim_cleaning().is_none(),
        "one thread at a time"
    );
    let (cleaned, _) = storage
        .clean_filthiest(config, 10_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cleaned.index, 1, "the log no thread holds");
    let second = partitions[1]
        .claim_cleaning()
        .expect("released after cleaning");
    assert!(storage
        .clean_filthiest(config, 10_000)
        .await
        .unwrap()
        .is_none());
    drop((held, second));
    let (cleaned, _) = storage
        .clean_filthiest(config, 10_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cleaned.index, 0);
}

/// Apache's LogCleaner marks a log whose cleaning fails on its data
/// uncleanable: the cleaner passes over it (and goes on with the
/// others) until the partition is reopened.
#[tokio::test]
async fn a_log_the_cleaner_cannot_read_is_passed_over_until_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::new(dir.path(), BrokerTopicDefaults::default()).unwrap();
    let (meta, mut partitions) =
        topic_of_four_batches(&storage, "c", 1, COMPACTED_SMALL_SEGMENTS).await;
    let partition = partitions.pop().unwrap();
    let first = storage
        .topics
        .topic_dir("c")
        .join("0")
        .join(format!("{:020}-1.log", 0));
    // The first batch's magic byte: no v2 batch any more.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &[9], 16).unwrap();
    let config = cleaner::CleanerConfig::default();
    let Err(failed) = storage.clean_filthiest(config, 10_000).await else {
        panic!("a log with a broken batch cleaned");
    };
    assert_eq!(failed.kind(), io::ErrorKind::InvalidData, "{failed}");
    assert_eq!(storage.uncleanable_partitions(), 1);
    assert!(
        storage
            .clean_filthiest(config, 10_000)
            .await
            .unwrap()
            .is_none(),
        "passed over"
    );
    storage.retain_partitions(|_, _| false);
    drop(partition);
    storage.partition(&meta, 0).await.unwrap();
    assert_eq!(storage.uncleanable_partitions(), 0, "reopened: tried again");
    let again = storage.clean_filthiest(config, 10_000).await;
    assert!(again.is_err(), "{:?}", again.map(|r| r.map(|(_, s)| s)));
}

#[tokio::test]
async fn opening_one_partition_does_not_delay_produce_to_another() {
    let dir = tempfile::tempdir().unwrap();
    let (release, gate) = std::sync::mpsc::channel();
    let opener = Arc::new(HeldOpen {
        held: 0,
        release: std::sync::Mutex::new(gate),
        opened_held: AtomicBool::new(false),
    });
    let storage = Arc::new(
        Storage::with_opener(dir.path(), BrokerTopicDefaults::default(), opener.clone()).unwrap(),
    );
    let meta = storage
        .topics
        .create_blocking("t", 2, BTreeMap::new(), false)
        .unwrap();
    // Partition 0's open is under way and held.
    let (s, m) = (storage.clone(), meta.clone());
    let mut held = tokio::spawn(async move { s.partition(&m, 0).await.map(|_| ()) });
    tokio::task::yield_now().await;
    assert!(
        (&mut held).now_or_never().is_none(),
        "partition 0 is still opening"
    );
    // Partition 1 opens, takes a produce and makes it durable meanwhile.
    let p1 = storage.partition(&meta, 1).await.unwrap();
    let appended = p1
        .append(super::batch::tests::encode_batch(3, 0), 0)
        .await
        .unwrap();
    assert_eq!((appended.base_offset, appended.last_offset), (0, 2));
    assert_eq!(p1.high_watermark(), 3);
    assert!(
        !opener.opened_held.load(Ordering::SeqCst),
        "partition 0 was held all along"
    );
    // A second request for partition 0 waits for the same open.
    let (s, m) = (storage.clone(), meta.clone());
    let second = tokio::spawn(async move { s.partition(&m, 0).await.map(|p| p.index) });
    release.send(()).unwrap();
    held.await.unwrap().unwrap();
    assert_eq!(second.await.unwrap().unwrap(), 0);
    assert!(opener.opened_held.load(Ordering::SeqCst));
}
