//! Transactions: librdkafka producing 1 KiB records to a 3-broker kaas
//! cluster, transactionally (100 ms transactions) and idempotently, in turn
//! round by round; EndTxn latency beside one fdatasync of the same disk;
//! read_committed against read_uncommitted fetch of what the transactions
//! wrote.

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Message, Offset, TopicPartitionList};

use crate::dataplane::create_topic;
use crate::report::{emit, median, note, section, Figure, Target};
use crate::wire::ChildServer;
use crate::Env;

const PARTITIONS: i32 = 6;
const MESSAGE_BYTES: usize = 1024;
const TRANSACTION: Duration = Duration::from_millis(100);

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let rounds = if env.quick { 1 } else { 2 };
    let messages: usize = if env.quick { 20_000 } else { 100_000 };
    section(&format!(
        "Transactions: librdkafka, {messages} x {MESSAGE_BYTES} B records over {PARTITIONS} partitions, acks=all; \
         100 ms transactions against idempotent produce; {rounds} rounds"
    ));
    let dir = env.dir("txn-kaas");
    let kaas = ChildServer::kaas(3, &dir)?;
    let bootstrap = kaas.bootstrap.clone();
    let mut idempotent = Vec::new();
    let mut transactional = Vec::new();
    let mut end_txn_ms = Vec::new();
    let mut committed_fetch = Vec::new();
    let mut uncommitted_fetch = Vec::new();
    for round in 0..rounds {
        let b = bootstrap.clone();
        let r = tokio::task::spawn_blocking(move || one_round(&b, round, messages)).await??;
        println!(
            "   round {}: idempotent {:.1} MB/s, transactional {:.1} MB/s ({} transactions, EndTxn p50 {:.2} ms), \
             fetch read_committed {:.1} MB/s, read_uncommitted {:.1} MB/s",
            round + 1,
            r.idempotent_mb_s,
            r.transactional_mb_s,
            r.end_txn_ms.len(),
            median(&r.end_txn_ms),
            r.committed_mb_s,
            r.uncommitted_mb_s
        );
        idempotent.push(r.idempotent_mb_s);
        transactional.push(r.transactional_mb_s);
        end_txn_ms.extend(r.end_txn_ms);
        committed_fetch.push(r.committed_mb_s);
        uncommitted_fetch.push(r.uncommitted_mb_s);
    }
    let record = vec![b'x'; 64];
    let fdatasync = {
        let path = dir.join("fdatasync.probe");
        tokio::task::spawn_blocking(move || crate::commit::idle_fdatasync(&path, &record, 200))
            .await??
    };
    emit(
        Figure::new(
            "txn: transactional produce (100 ms transactions)",
            median(&transactional),
            "MB/s",
        )
        .baseline("idempotent produce", median(&idempotent))
        .target(Target::RatioAtLeast(0.8)),
    );
    end_txn_ms.sort_by(f64::total_cmp);
    let p = |q: f64| end_txn_ms[((end_txn_ms.len() - 1) as f64 * q).round() as usize];
    emit(Figure::new("txn: EndTxn p50", p(0.5), "ms").baseline("one fdatasync, idle", fdatasync));
    emit(Figure::new("txn: EndTxn p99", p(0.99), "ms").baseline("one fdatasync, idle", fdatasync));
    emit(
        Figure::new(
            "txn: read_committed fetch",
            median(&committed_fetch),
            "MB/s",
        )
        .baseline("read_uncommitted fetch", median(&uncommitted_fetch))
        .target(Target::RatioAtLeast(0.9)),
    );
    note("EndTxn is timed from commit_transaction with every record already acknowledged: the coordinator's PrepareCommit write and its answer");
    Ok(())
}

struct Round {
    idempotent_mb_s: f64,
    transactional_mb_s: f64,
    end_txn_ms: Vec<f64>,
    committed_mb_s: f64,
    uncommitted_mb_s: f64,
}

fn producer(bootstrap: &str, transactional_id: Option<&str>) -> anyhow::Result<BaseProducer> {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("linger.ms", "5")
        .set("batch.size", "1000000")
        .set("queue.buffering.max.kbytes", "262144")
        // A short queue paces sends by acknowledgements: a transaction
        // holds what is produced in its 100 ms, not what fits in memory.
        .set("queue.buffering.max.messages", "2000")
        .set("compression.type", "none");
    if let Some(id) = transactional_id {
        c.set("transactional.id", id);
    }
    Ok(c.create()?)
}

/// Waits until every record sent is acknowledged, polling often (librdkafka's
/// own flush sleeps in 100 ms steps, which would be measured here).
fn drain(p: &BaseProducer) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while p.in_flight_count() > 0 {
        anyhow::ensure!(Instant::now() < deadline, "records still in flight");
        p.poll(Duration::from_millis(1));
    }
    Ok(())
}

fn send(p: &BaseProducer, topic: &str, i: usize, payload: &[u8]) -> anyhow::Result<()> {
    let key = (i as u32).to_be_bytes();
    let mut record = BaseRecord::to(topic)
        .payload(payload)
        .key(&key[..])
        .partition((i % PARTITIONS as usize) as i32);
    loop {
        match p.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                record = r;
                p.poll(Duration::from_millis(1));
            }
            Err((e, _)) => return Err(e.into()),
        }
    }
}

/// The two producers in turn (order alternating by round), then the two
/// fetches of the transactional topic.
fn one_round(bootstrap: &str, round: usize, messages: usize) -> anyhow::Result<Round> {
    let payload = vec![b'x'; MESSAGE_BYTES];
    let plain_topic = format!("bench-idem-{round}");
    let txn_topic = format!("bench-txn-{round}");
    let client = crate::dataplane::client(bootstrap);
    create_topic(&client, &plain_topic, PARTITIONS)?;
    create_topic(&client, &txn_topic, PARTITIONS)?;
    let mb = (messages * MESSAGE_BYTES) as f64 / 1e6;
    let fetched_mb = ((messages + 1000) * MESSAGE_BYTES) as f64 / 1e6;
    // Both producers are warmed up (connections, metadata, producer id)
    // with untimed records first.
    let warm = 1000;
    let idempotent = || -> anyhow::Result<f64> {
        let p = producer(bootstrap, None)?;
        for i in 0..warm {
            send(&p, &plain_topic, i, &payload)?;
        }
        p.flush(Duration::from_secs(60))?;
        let start = Instant::now();
        for i in 0..messages {
            send(&p, &plain_topic, i, &payload)?;
            if i % 1000 == 0 {
                p.poll(Duration::ZERO);
            }
        }
        drain(&p)?;
        Ok(mb / start.elapsed().as_secs_f64())
    };
    let transactional = || -> anyhow::Result<(f64, Vec<f64>)> {
        let p = producer(bootstrap, Some(&format!("kaas-bench-txn-{round}")))?;
        p.init_transactions(Duration::from_secs(30))?;
        p.begin_transaction()?;
        for i in 0..warm {
            send(&p, &txn_topic, i, &payload)?;
        }
        p.commit_transaction(Duration::from_secs(60))?;
        let mut end_txn = Vec::new();
        let start = Instant::now();
        let mut i = 0;
        while i < messages {
            p.begin_transaction()?;
            let opened = Instant::now();
            while i < messages && opened.elapsed() < TRANSACTION {
                send(&p, &txn_topic, i, &payload)?;
                i += 1;
                if i % 1000 == 0 {
                    p.poll(Duration::ZERO);
                }
            }
            let f = Instant::now();
            drain(&p)?;
            let flush_ms = f.elapsed().as_secs_f64() * 1000.0;
            let t = Instant::now();
            p.commit_transaction(Duration::from_secs(60))?;
            end_txn.push(t.elapsed().as_secs_f64() * 1000.0);
            if std::env::var_os("KAAS_BENCH_TXN_TRACE").is_some() {
                eprintln!(
                    "txn: {} records so far, send {:.1} ms, flush {:.1} ms, commit {:.1} ms",
                    i,
                    (f - opened).as_secs_f64() * 1000.0,
                    flush_ms,
                    end_txn.last().unwrap()
                );
            }
        }
        Ok((mb / start.elapsed().as_secs_f64(), end_txn))
    };
    let (idempotent_mb_s, (transactional_mb_s, end_txn_ms)) = if round.is_multiple_of(2) {
        let a = idempotent()?;
        (a, transactional()?)
    } else {
        let b = transactional()?;
        (idempotent()?, b)
    };
    let fetch = |isolation: &str| -> anyhow::Result<f64> {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", "kaas-bench-txn-fetch")
            .set("enable.auto.commit", "false")
            .set("isolation.level", isolation)
            .set("fetch.max.bytes", "52428800")
            .set("max.partition.fetch.bytes", "4194304")
            .set("fetch.wait.max.ms", "100")
            .create()?;
        let mut tpl = TopicPartitionList::new();
        for p in 0..PARTITIONS {
            tpl.add_partition_offset(&txn_topic, p, Offset::Beginning)?;
        }
        consumer.assign(&tpl)?;
        let start = Instant::now();
        let deadline = start + Duration::from_secs(120);
        let mut got = 0usize;
        while got < messages + warm {
            anyhow::ensure!(
                Instant::now() < deadline,
                "{isolation}: fetched {got} of {messages}"
            );
            if let Some(m) = consumer.poll(Duration::from_millis(100)) {
                let m = m?;
                anyhow::ensure!(
                    m.payload().map_or(0, <[u8]>::len) == MESSAGE_BYTES,
                    "a record of another size"
                );
                got += 1;
            }
        }
        Ok(fetched_mb / start.elapsed().as_secs_f64())
    };
    let (committed_mb_s, uncommitted_mb_s) = if round.is_multiple_of(2) {
        let c = fetch("read_committed")?;
        (c, fetch("read_uncommitted")?)
    } else {
        let u = fetch("read_uncommitted")?;
        (fetch("read_committed")?, u)
    };
    Ok(Round {
        idempotent_mb_s,
        transactional_mb_s,
        end_txn_ms,
        committed_mb_s,
        uncommitted_mb_s,
    })
}
