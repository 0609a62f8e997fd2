//! Compaction under kill -9: a broker (`kaas-broker serve`) whose cleaner
//! is throttled to 2 MB/s is killed at a random moment while it cleans a
//! compacted topic, and restarted. Every round, every key's last record is
//! read back at the offset its producer was given, offsets only grow, no
//! `.cleaned` file is left, and the cleaner goes on to finish.
//!
//! `KAAS_COMPACTION_KILL_SEED` sets the random seed (printed).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::client_config;
use common::procs::{self, PUBLISHED_WITHIN};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

const TOPIC: &str = "compacted";
const KEYS: usize = 1_000;
const ROUNDS: usize = 3;
const T: Duration = Duration::from_secs(60);

type Model = BTreeMap<String, (i64, String)>;

/// Produces `n` updates (200-byte values) round-robin over the keys and
/// records each key's last (offset, value).
async fn produce(bootstrap: &str, round: usize, n: usize, model: &mut Model) {
    let producer: FutureProducer = client_config(bootstrap)
        .set("acks", "all")
        .set("linger.ms", "5")
        .create()
        .unwrap();
    let mut pending = Vec::with_capacity(n);
    for i in 0..n {
        let key = format!("key-{}", i % KEYS);
        let value = format!("r{round}-{i}").repeat(20);
        let record = FutureRecord::to(TOPIC).key(&key).payload(&value);
        let delivery = producer.send_result(record).expect("queued");
        pending.push((key, value, delivery));
    }
    for (key, value, delivery) in pending {
        let delivered = delivery.await.expect("delivered").expect("acknowledged");
        model.insert(key, (delivered.offset, value));
    }
}

/// Every record of the topic: (offset, key, value).
fn read_all(bootstrap: &str) -> Vec<(i64, String, String)> {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", "reader")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let (_, high) = consumer
        .fetch_watermarks(TOPIC, 0, Duration::from_secs(10))
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(TOPIC, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&tpl).unwrap();
    let mut out: Vec<(i64, String, String)> = Vec::new();
    let deadline = Instant::now() + T;
    while out.last().is_none_or(|(o, ..)| *o < high - 1) {
        assert!(
            Instant::now() < deadline,
            "read up to {high}: {:?}",
            out.last()
        );
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            // A restarted broker's first moments: librdkafka reports the
            // refused connection and tries again.
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("consume: {e}");
                    continue;
                }
            };
            let text = |b: Option<&[u8]>| String::from_utf8(b.unwrap().to_vec()).unwrap();
            out.push((m.offset(), text(m.key()), text(m.payload())));
        }
    }
    out
}

fn cleaned_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".log.cleaned"))
            .count()
    })
}

fn check(log: &[(i64, String, String)], model: &Model) {
    assert!(log.windows(2).all(|w| w[0].0 < w[1].0), "offsets only grow");
    let found: BTreeMap<i64, (&str, &str)> = log
        .iter()
        .map(|(o, k, v)| (*o, (k.as_str(), v.as_str())))
        .collect();
    for (key, (offset, value)) in model {
        assert_eq!(
            found.get(offset),
            Some(&(key.as_str(), value.as_str())),
            "{key}'s last record at {offset}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_cleaning_keeps_every_last_record() {
    let seed: u64 = std::env::var("KAAS_COMPACTION_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("KAAS_COMPACTION_KILL_SEED={seed}");
    let cluster = procs::start_with(
        1,
        &[
            ("--log-cleaner-backoff-ms", "100"),
            ("--log-cleaner-io-max-bytes-per-second", "2000000"),
        ],
    )
    .await;
    let bootstrap = cluster.bootstrap();
    let admin: AdminClient<DefaultClientContext> = client_config(&bootstrap).create().unwrap();
    let topic = NewTopic::new(TOPIC, 1, TopicReplication::Fixed(1))
        .set("cleanup.policy", "compact")
        .set("segment.bytes", "1048576")
        .set("min.cleanable.dirty.ratio", "0.01");
    for r in admin
        .create_topics(&[topic], &AdminOptions::new())
        .await
        .unwrap()
    {
        r.expect("created");
    }
    let dir = cluster.data_dir().join(TOPIC).join("0");
    let mut model = Model::new();
    for round in 0..ROUNDS {
        produce(&bootstrap, round, 15_000, &mut model).await;
        // Kill at a random moment once a cleaning is writing.
        let pause = Duration::from_millis(5);
        kaas_testkit::retry(
            T,
            pause,
            "a cleaning to start",
            async || match cleaned_files(&dir) {
                0 => Err(cluster.logs()),
                _ => Ok(()),
            },
        )
        .await;
        let delay = (seed.wrapping_mul(round as u64 + 1) >> 7) % 1_500;
        tokio::time::sleep(Duration::from_millis(delay)).await;
        cluster.kill(0);
        eprintln!("round {round}: killed {delay} ms into a cleaning");
        cluster.spawn_broker(0).unwrap();
        cluster
            .wait_alive(&[0], PUBLISHED_WITHIN)
            .await
            .expect("the broker is back");
        check(&read_all(&bootstrap), &model);
        assert_eq!(cleaned_files(&dir), 0, "no .cleaned file is left");
    }
    // The restarted cleaner finishes: its checkpoint passes the last
    // round's start, and below it no key is left twice.
    let last_round_start = (ROUNDS as i64 - 1) * 15_000;
    let what = "the cleaner's checkpoint to pass the last round's start";
    let checkpoint = kaas_testkit::retry(T, Duration::from_millis(200), what, async || {
        let checkpoint = std::fs::read_to_string(dir.join("cleaner-offset-checkpoint"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .unwrap_or(0);
        if checkpoint > last_round_start {
            Ok(checkpoint)
        } else {
            Err(format!("it reached {checkpoint}: {}", cluster.logs()))
        }
    })
    .await;
    let log = read_all(&bootstrap);
    check(&log, &model);
    let mut keys = std::collections::BTreeSet::new();
    for (o, k, _) in log.iter().filter(|(o, ..)| *o < checkpoint) {
        assert!(
            keys.insert(k.clone()),
            "{k} again at {o}, below the checkpoint {checkpoint}"
        );
    }
}
