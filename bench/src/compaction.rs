//! Compaction's cost (issue #17): the cleaner's throughput over 1,000,000
//! records of 10,000 keys (100-byte values, a tenth of the keys deleted by
//! tombstones at the end), beside a plain sequential read and write (and
//! fsync) of the same segment files in the same run: at least 0.5× its
//! speed. Then produce latency to the compacted partition (one 10-record
//! batch, appended and fsynced, as Produce does) while the cleaner rewrites
//! it, beside the same appends with no cleaning: p99 at most 1.5×.
//!
//! Both run through `Storage` (the broker's own storage, no network): the
//! cleaning is `Storage::clean_filthiest`, what the broker's cleaner runs.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use bytes::Bytes;
use kaas_broker::storage::cleaner::CleanerConfig;
use kaas_broker::storage::topic_config::BrokerTopicDefaults;
use kaas_broker::storage::{PartitionRef, Storage};
use kaas_testkit::records::keyed_record_batch;

use crate::report::{emit, percentile, section, Figure, Target};
use crate::{sys, Env};

const KEYS: usize = 10_000;
const PER_BATCH: usize = 100;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `records` updates round-robin over the keys from `start`, then
/// tombstones for every tenth key when `tombstones`.
async fn fill(
    p: &PartitionRef,
    start: usize,
    records: usize,
    tombstones: bool,
) -> anyhow::Result<()> {
    let value = Bytes::from(vec![b'v'; 100]);
    for b in 0..records / PER_BATCH {
        let entries = (0..PER_BATCH).map(|i| {
            let n = start + b * PER_BATCH + i;
            (
                Bytes::from(format!("key-{:05}", n % KEYS)),
                Some(value.clone()),
            )
        });
        p.append(keyed_record_batch(entries, now_ms()).to_vec(), 0)
            .await?;
    }
    if tombstones {
        for chunk in (0..KEYS).step_by(10).collect::<Vec<_>>().chunks(PER_BATCH) {
            let entries = chunk
                .iter()
                .map(|k| (Bytes::from(format!("key-{k:05}")), None));
            p.append(keyed_record_batch(entries, now_ms()).to_vec(), 0)
                .await?;
        }
    }
    Ok(())
}

/// Reads `files` front to back in 1 MiB chunks and writes them to one new
/// file, fsynced: the I/O a cleaning of them cannot do without.
fn raw_copy(files: &[std::path::PathBuf], to: &std::path::Path) -> anyhow::Result<(u64, f64)> {
    use std::io::Read;
    let started = Instant::now();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(to)?);
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    for path in files {
        let mut f = std::fs::File::open(path)?;
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            bytes += n as u64;
            out.write_all(&buf[..n])?;
        }
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok((bytes, started.elapsed().as_secs_f64()))
}

/// Latencies (µs) of 10-record appends to `p` until `until` says stop
/// (at least `min` of them).
async fn append_latencies(
    p: &PartitionRef,
    min: usize,
    until: impl Fn() -> bool,
) -> anyhow::Result<Vec<u64>> {
    let value = Bytes::from(vec![b'p'; 100]);
    let mut out = Vec::new();
    let mut n = 0usize;
    while out.len() < min || !until() {
        let entries = (0..10).map(|_| {
            n += 1;
            (
                Bytes::from(format!("key-{:05}", n % KEYS)),
                Some(value.clone()),
            )
        });
        let batch = keyed_record_batch(entries, now_ms()).to_vec();
        let t = Instant::now();
        p.append(batch, 0).await?;
        out.push(t.elapsed().as_micros() as u64);
    }
    out.sort_unstable();
    Ok(out)
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let records = if env.quick { 100_000 } else { 1_000_000 };
    section(&format!(
        "Compaction: {records} records over {KEYS} keys, cleaned; produce during cleaning"
    ));
    let dir = env.dir("compaction");
    let storage = Storage::new(&dir, BrokerTopicDefaults::default())?;
    let configs: BTreeMap<String, String> = [
        ("cleanup.policy", "compact"),
        ("segment.bytes", "16777216"),
        ("min.cleanable.dirty.ratio", "0.01"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let meta = storage
        .topics
        .create("compacted", 1, configs, false)
        .await?;
    let p = storage.partition(&meta, 0).await?;
    fill(&p, 0, records, true).await?;
    let partition_dir = storage.topics.topic_dir("compacted").join("0");
    let mut sealed: Vec<std::path::PathBuf> = std::fs::read_dir(&partition_dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    sealed.sort();
    sealed.pop(); // the active segment is never cleaned

    sys::settle_disk(&dir);
    let (raw_bytes, raw_secs) = raw_copy(&sealed, &env.dir("compaction-raw").join("copy"))?;
    sys::settle_disk(&dir);
    let config = CleanerConfig::default();
    let started = Instant::now();
    let cleaned = storage.clean_filthiest(config, now_ms()).await?;
    let clean_secs = started.elapsed().as_secs_f64();
    let (_, stats) = cleaned.ok_or_else(|| anyhow::anyhow!("nothing was due for cleaning"))?;
    anyhow::ensure!(
        stats.bytes_read >= raw_bytes,
        "the cleaning read {} bytes of {raw_bytes}",
        stats.bytes_read
    );
    let mb = |bytes: u64, secs: f64| bytes as f64 / secs / 1e6;
    emit(
        Figure::new(
            format!(
                "compaction: cleaner throughput over {} MB of sealed segments ({} records kept of {})",
                raw_bytes / 1_000_000,
                stats.records_retained,
                stats.records_read
            ),
            mb(raw_bytes, clean_secs),
            "MB/s",
        )
        .baseline("sequential read + write + fsync of the same files", mb(raw_bytes, raw_secs))
        .target(Target::RatioAtLeast(0.5)),
    );

    // Produce latency while the cleaner rewrites the log after as many
    // updates again, beside the same appends with nothing to clean; three
    // rounds, the latencies of each kind pooled.
    let storage = std::sync::Arc::new(storage);
    let (mut quiet, mut during, mut cleaned_bytes) = (Vec::new(), Vec::new(), 0);
    for round in 1..=3 {
        sys::settle_disk(&dir);
        quiet.extend(append_latencies(&p, 2_000, || true).await?);
        fill(&p, round, records, false).await?;
        sys::settle_disk(&dir);
        let cleaning = {
            let storage = storage.clone();
            tokio::spawn(async move { storage.clean_filthiest(config, now_ms()).await })
        };
        during.extend(append_latencies(&p, 200, || cleaning.is_finished()).await?);
        let (_, stats) = cleaning
            .await??
            .ok_or_else(|| anyhow::anyhow!("a cleaning found nothing due"))?;
        cleaned_bytes += stats.bytes_read;
    }
    quiet.sort_unstable();
    during.sort_unstable();
    let p99 = |v: &[u64]| percentile(v, 99.0) as f64 / 1_000.0;
    emit(
        Figure::new(
            format!(
                "compaction: produce p99 to the partition while it is cleaned ({} appends, 3 cleanings of {} MB in all)",
                during.len(),
                cleaned_bytes / 1_000_000
            ),
            p99(&during),
            "ms",
        )
        .baseline(format!("the same appends with no cleaning ({})", quiet.len()), p99(&quiet))
        .target(Target::RatioAtMost(1.5)),
    );
    Ok(())
}
