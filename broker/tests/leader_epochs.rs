//! Leader epochs end to end (KIP-320): after partition leaders move, the
//! consumers of librdkafka and of the Java client 3.9.1 validate their
//! positions through OffsetForLeaderEpoch on the new leaders and read on,
//! every record once and in order, without an error or an offset reset
//! (librdkafka with `auto.offset.reset=error`, Java with `none`).
//!
//! Three `serve` processes: the broker leading partition 0 is killed
//! (its partitions move to the others, every partition's epoch rises) while
//! librdkafka is caught up; then it comes back (they move back) while the
//! Java consumer is. Each broker's `kaas_requests_total` shows the
//! validations arrived.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::procs::{self, PUBLISHED_WITHIN};
use kaas_shared::route;
use kaas_testkit::ProcessCluster;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

const TOPIC: &str = "moves";
const PARTITIONS: i32 = 3;
/// Records per partition per round.
const ROUND: i64 = 40;

/// Appends round `round` to every partition: records `p{p}-{offset}` at
/// the offsets the round owns (an idempotent producer, so a retry across
/// the move adds no duplicate).
async fn produce_round(bootstrap: &str, round: i64) {
    let producer: FutureProducer = common::client_config(bootstrap)
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", "60000")
        .create()
        .unwrap();
    for p in 0..PARTITIONS {
        for offset in round * ROUND..(round + 1) * ROUND {
            let value = format!("p{p}-{offset}");
            let delivery = producer
                .send(
                    FutureRecord::<(), _>::to(TOPIC)
                        .partition(p)
                        .payload(&value),
                    Duration::from_secs(60),
                )
                .await
                .unwrap_or_else(|(e, _)| panic!("{value} not produced: {e}"));
            assert_eq!(
                (delivery.partition, delivery.offset),
                (p, offset),
                "{value} landed elsewhere"
            );
        }
    }
}

/// OffsetForLeaderEpoch requests served by the running brokers, by id.
fn validations(cluster: &ProcessCluster) -> Vec<(usize, u64)> {
    cluster
        .up_ids()
        .into_iter()
        .map(|id| {
            let addr = cluster.http_addr(id).expect("http endpoints");
            let (_, body) = common::http_get(addr.as_str(), "/metrics");
            let count = body
                .lines()
                .find_map(|l| l.strip_prefix("kaas_requests_total{api=\"OffsetForLeaderEpoch\"} "))
                .map_or(0, |n| n.trim().parse().unwrap());
            (id, count)
        })
        .collect()
}

fn total(counts: &[(usize, u64)]) -> u64 {
    counts.iter().map(|(_, n)| n).sum()
}

/// Reads with librdkafka until every partition reached `up_to`, checking
/// each record's offset and value; an offset reset (`auto.offset.reset`
/// is `error`), a detected truncation or any error but the killed
/// broker's connection failing fails.
fn read_up_to(consumer: &BaseConsumer, next: &mut [i64], up_to: i64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while next.iter().any(|&n| n < up_to) {
        assert!(
            Instant::now() < deadline,
            "librdkafka read up to {up_to}: {next:?}"
        );
        match consumer.poll(Duration::from_millis(200)) {
            None => {}
            // The killed broker's connections fail; nothing else may.
            Some(Err(KafkaError::MessageConsumption(
                RDKafkaErrorCode::BrokerTransportFailure | RDKafkaErrorCode::AllBrokersDown,
            ))) => {}
            Some(Err(e)) => {
                panic!("librdkafka consumer error (no reset or truncation expected): {e}")
            }
            Some(Ok(m)) => {
                let p = m.partition() as usize;
                let value = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
                assert_eq!(
                    (m.offset(), value.as_str()),
                    (next[p], format!("p{p}-{}", next[p]).as_str()),
                    "librdkafka: p{p} out of order"
                );
                next[p] += 1;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_validate_their_positions_after_leaders_move() {
    let mut opts = procs::options(3);
    opts.http = true;
    let cluster = ProcessCluster::start(None, opts).await.unwrap();
    let bootstrap = cluster.bootstrap();
    common::create_topic(&bootstrap, TOPIC, PARTITIONS).await;
    let victim = route(format!("{TOPIC}/0").as_bytes(), &[0, 1, 2], |_| true).unwrap() as usize;
    produce_round(&bootstrap, 0).await;

    // librdkafka reads round 0, then the victim dies and round 1 is
    // written to the partitions' new leaders.
    let (caught_up, wait_caught_up) = mpsc::channel();
    let (go, wait_go) = mpsc::channel::<()>();
    let bs = bootstrap.clone();
    let rdkafka = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = common::client_config(&bs)
            .set("group.id", "rdkafka-moves")
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "error")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        for p in 0..PARTITIONS {
            tpl.add_partition_offset(TOPIC, p, Offset::Beginning)
                .unwrap();
        }
        consumer.assign(&tpl).unwrap();
        let mut next = vec![0; PARTITIONS as usize];
        read_up_to(&consumer, &mut next, ROUND);
        caught_up.send(()).unwrap();
        wait_go.recv().unwrap();
        read_up_to(&consumer, &mut next, 2 * ROUND);
    });
    tokio::task::spawn_blocking(move || wait_caught_up.recv().unwrap())
        .await
        .unwrap();
    cluster.kill(victim);
    assert!(
        cluster.wait_dead(victim, PUBLISHED_WITHIN).await,
        "the victim is published dead"
    );
    let before = validations(&cluster);
    produce_round(&bootstrap, 1).await;
    go.send(()).unwrap();
    rdkafka.await.unwrap();
    let after = validations(&cluster);
    assert!(
        total(&after) > total(&before),
        "librdkafka validated on the new leaders: {before:?} -> {after:?}"
    );

    // The Java consumer reads rounds 0 and 1, the victim comes back (its
    // partitions move back to it), round 2 is written, the consumer reads on.
    let (_classes, classpath) = common::compile_java("LeaderMove");
    let mut java = Command::new("java")
        .args(["-cp", &classpath, "LeaderMove", &bootstrap, TOPIC])
        .args([
            PARTITIONS.to_string(),
            (2 * ROUND).to_string(),
            ROUND.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("java (scripts/install-test-deps installs a JDK)");
    let stdout = java.stdout.take().unwrap();
    let (lines_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut printed = Vec::new();
    let wait_for = |printed: &mut Vec<String>, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !printed.iter().any(|l| l == what) {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => printed.push(line),
                Err(_) => return false,
            }
        }
        true
    };
    let caught_up = tokio::task::block_in_place(|| wait_for(&mut printed, "caught up"));
    if !caught_up {
        let _ = java.kill();
        let out = java.wait_with_output().unwrap();
        panic!(
            "the Java consumer did not catch up:\n{}\n{}",
            printed.join("\n"),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    cluster.restart(victim).unwrap();
    cluster.wait_alive_count(3, PUBLISHED_WITHIN).await.unwrap();
    let before = validations(&cluster);
    produce_round(&bootstrap, 2).await;
    java.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let passed = tokio::task::block_in_place(|| wait_for(&mut printed, "all checks passed"));
    let out = java.wait_with_output().unwrap();
    assert!(
        passed && out.status.success(),
        "the Java consumer across the move:\n{}\n{}",
        printed.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    let after = validations(&cluster);
    assert!(
        total(&after) > total(&before),
        "the Java consumer validated on the new leaders: {before:?} -> {after:?}"
    );
}
