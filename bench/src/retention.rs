//! Retention's cost: one pass of `Storage::enforce_retention` (what every
//! leader runs each `log.retention.check.interval.ms`) over many open
//! partitions of two segments each: a pass that deletes the older segment
//! of every partition, beside the same pass when nothing is due (the
//! usual case), in CPU-seconds per 10,000 partitions. The target (issue
//! #17) is at most one CPU-second per 10,000 partitions. Each open
//! partition holds five descriptors (its lock, two segments with their
//! indexes), so the partitions measured are as many as this machine's
//! descriptor limit allows, and the cost is scaled to 10,000: the pass
//! is per partition.

use std::collections::BTreeMap;

use kaas_broker::storage::topic_config::BrokerTopicDefaults;
use kaas_broker::storage::Storage;

use crate::report::{emit, section, Figure, Target};
use crate::{sys, Env};

const PER_TOPIC: i32 = 100;
/// Descriptors one partition holds here: its lock, two segments, their
/// indexes.
const FDS_PER_PARTITION: u64 = 5;

fn batch(timestamp: i64) -> Vec<u8> {
    let values = (0..10).map(|_| bytes::Bytes::from_static(&[b'x'; 100]));
    kaas_testkit::records::record_batch_at(values, None, timestamp).to_vec()
}

/// As many partitions as the descriptor limit allows (raised to its hard
/// limit), at most 10,000, in whole topics.
fn partitions_to_measure(quick: bool) -> i32 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        }
    }
    let spare = 1_000;
    let fit = (limit.rlim_cur.saturating_sub(spare) / FDS_PER_PARTITION).min(10_000) as i32;
    let n = if quick { fit.min(500) } else { fit };
    (n / PER_TOPIC).max(1) * PER_TOPIC
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let n = partitions_to_measure(env.quick);
    section(&format!(
        "Retention: one pass over {n} open partitions of two segments each (scaled to 10,000)"
    ));
    let storage = Storage::new(&env.dir("retention"), BrokerTopicDefaults::default())?;
    // Every batch rolls a segment: an old one, then a new one that time
    // retention keeps.
    let configs: BTreeMap<String, String> = [("segment.bytes", "100"), ("retention.ms", "-1")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let now = 10_000_000;
    let mut open = Vec::with_capacity(n as usize);
    for t in 0..n / PER_TOPIC {
        let meta = storage
            .topics
            .create(&format!("retention-{t}"), PER_TOPIC, configs.clone(), false)
            .await?;
        for p in 0..PER_TOPIC {
            let partition = storage.partition(&meta, p).await?;
            partition.append(batch(1_000), 0).await?;
            partition.append(batch(now), 0).await?;
            open.push(partition);
        }
    }
    let cpu = || sys::own_cpu().as_secs_f64();
    let before = cpu();
    let (idle_segments, _) = storage.enforce_retention(now).await;
    let idle = cpu() - before;
    anyhow::ensure!(
        idle_segments == 0,
        "retention.ms=-1 deleted {idle_segments} segments"
    );
    for t in 0..n / PER_TOPIC {
        let altered = storage
            .topics
            .update(&format!("retention-{t}"), false, |meta| {
                meta.configs.insert("retention.ms".into(), "1000".into());
                Ok::<(), ()>(())
            })
            .await?;
        anyhow::ensure!(altered.is_ok(), "retention.ms altered");
    }
    let before = cpu();
    let (deleted, _) = storage.enforce_retention(now).await;
    let deleting = cpu() - before;
    anyhow::ensure!(
        deleted == n as usize,
        "a pass deleted {deleted} segments of {n} due"
    );
    let per_10k = |s: f64| s * 10_000.0 / f64::from(n);
    emit(
        Figure::new(
            format!("retention: a pass with nothing due, per 10,000 partitions ({n} measured)"),
            per_10k(idle),
            "CPU-s",
        )
        .target(Target::AtMost(1.0)),
    );
    let raw = raw_deletion_cpu(&env.dir("retention-raw"), n as usize)?;
    emit(
        Figure::new(
            format!("retention: a pass deleting a segment of each partition, per 10,000 partitions ({n} measured)"),
            per_10k(deleting),
            "CPU-s",
        )
        .baseline("unlink + one syncfs alone", per_10k(raw))
        .target(Target::AtMost(1.0)),
    );
    drop(open);
    Ok(())
}

/// The file system's own part of a deleting pass: in `n` folders, a
/// segment's two files as large as the pass deleted (written and
/// fsynced), then unlinked in a plain loop and made durable with one
/// `syncfs`, as the pass makes its deletions durable.
fn raw_deletion_cpu(dir: &std::path::Path, n: usize) -> anyhow::Result<f64> {
    use std::io::Write;
    let sizes = [batch(0).len(), 20];
    for i in 0..n {
        let folder = dir.join(i.to_string());
        std::fs::create_dir_all(&folder)?;
        for (ext, size) in ["log", "index"].iter().zip(sizes) {
            let mut f = std::fs::File::create(folder.join(format!("0.{ext}")))?;
            f.write_all(&vec![b'x'; size])?;
            f.sync_all()?;
        }
    }
    let before = sys::own_cpu();
    for i in 0..n {
        let folder = dir.join(i.to_string());
        for ext in ["index", "log"] {
            std::fs::remove_file(folder.join(format!("0.{ext}")))?;
        }
    }
    kaas_broker::storage::fs::syncfs(&std::fs::File::open(dir)?)?;
    Ok((sys::own_cpu() - before).as_secs_f64())
}
