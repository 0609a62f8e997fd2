//! Client quotas (issue #33): a librdkafka producer and consumer over their
//! byte-rate quotas are held to them (the rate over three whole spans of
//! the quota's window, 33 s, after the first, against the quota), and
//! produce throughput
//! with quotas in force but not reached, against none, in interleaved
//! rounds of the same run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kaas_client::KafkaClient;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::AlterClientQuotasRequest;
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use crate::dataplane::{client, create_topic, one_run, MESSAGE_BYTES};
use crate::report::{emit, median, note, section, Figure, Target};
use crate::wire::ChildServer;
use crate::Env;

const PRODUCER: &str = "bench-quota-producer";
const CONSUMER: &str = "bench-quota-consumer";
/// The quotas held: 2 MiB/s of Produce, 4 MiB/s of Fetch.
const PRODUCE_QUOTA: f64 = 2.0 * 1024.0 * 1024.0;
const FETCH_QUOTA: f64 = 4.0 * 1024.0 * 1024.0;

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let (measure, rounds, messages) = match env.quick {
        true => (Duration::from_secs(10), 1, 30_000),
        false => (Duration::from_secs(30), 5, 150_000),
    };
    section(&format!(
        "Client quotas: a producer and a consumer held to {} and {} MiB/s over {} s \
         (whole spans of the quota window, after the first), and produce throughput with quotas in force but not reached \
         against none ({rounds} rounds of both)",
        PRODUCE_QUOTA / 1048576.0,
        FETCH_QUOTA / 1048576.0,
        spans(measure).1.as_secs(),
    ));
    let kaas = ChildServer::kaas(3, &env.dir("quotas"))?;
    let first = kaas
        .bootstrap
        .split(',')
        .next()
        .unwrap_or_default()
        .to_string();
    let mut admin = KafkaClient::connect(&first, Duration::from_secs(10)).await?;

    // Quotas in force but not reached (a default client-id quota far above
    // what one producer does) against none: each round runs both, in turns
    // of order (the disk's drift through the run cancels), and the figure
    // is the median of each round's ratio.
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let mut pair = [0.0; 2];
        let order = match round % 2 {
            0 => [false, true],
            _ => [true, false],
        };
        for quotas in order {
            let far = quotas.then_some(1e12);
            set(&mut admin, None, "producer_byte_rate", far).await?;
            set(&mut admin, None, "request_percentage", far.map(|_| 1e6)).await?;
            // Every broker follows the quotas within a second.
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let topic = format!("quota-free-{round}-{quotas}");
            let c = client(&kaas.bootstrap);
            let r = tokio::task::spawn_blocking(move || one_run(&c, &topic, messages)).await??;
            note(format!(
                "  round {}: produce {:.1} MB/s {}",
                round + 1,
                r.produce_mb_s,
                if quotas {
                    "with quotas in force"
                } else {
                    "without quotas"
                }
            ));
            pair[quotas as usize] = r.produce_mb_s;
        }
        ratios.push(pair[1] / pair[0]);
    }
    emit(
        Figure::new(
            "produce acks=all with client quotas in force, not reached, over the same round without",
            median(&ratios),
            "x",
        )
        .baseline("unchanged", 1.0)
        .target(Target::RatioAtLeast(0.98)),
    );

    set(
        &mut admin,
        Some(PRODUCER),
        "producer_byte_rate",
        Some(PRODUCE_QUOTA),
    )
    .await?;
    set(
        &mut admin,
        Some(CONSUMER),
        "consumer_byte_rate",
        Some(FETCH_QUOTA),
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let c = client(&kaas.bootstrap);
    let produced =
        tokio::task::spawn_blocking(move || held_producer(&c, "quota-held", measure)).await??;
    note(format!(
        "  producer: {:.0} B/s against a quota of {PRODUCE_QUOTA:.0}",
        produced
    ));
    emit(
        Figure::new("a producer over its producer_byte_rate", produced, "B/s")
            .baseline("its quota", PRODUCE_QUOTA)
            .target(within_10_percent(produced / PRODUCE_QUOTA)),
    );
    let c = client(&kaas.bootstrap);
    let fetched =
        tokio::task::spawn_blocking(move || held_consumer(&c, "quota-held", measure)).await??;
    note(format!(
        "  consumer: {:.0} B/s against a quota of {FETCH_QUOTA:.0}",
        fetched
    ));
    emit(
        Figure::new("a consumer over its consumer_byte_rate", fetched, "B/s")
            .baseline("its quota", FETCH_QUOTA)
            .target(within_10_percent(fetched / FETCH_QUOTA)),
    );
    Ok(())
}

fn within_10_percent(ratio: f64) -> Target {
    Target::Holds(
        (0.9..=1.1).contains(&ratio),
        format!("{ratio:.3} of the quota, within 10%"),
    )
}

/// Sets (or with `None` removes) one quota of a client id (`None`: the
/// default client id).
async fn set(
    admin: &mut KafkaClient,
    client_id: Option<&str>,
    key: &str,
    value: Option<f64>,
) -> anyhow::Result<()> {
    let entry = EntryData::default()
        .with_entity(vec![EntityData::default()
            .with_entity_type(StrBytes::from_static_str("client-id"))
            .with_entity_name(
                client_id.map(|c| StrBytes::from_string(c.to_string())),
            )])
        .with_ops(vec![OpData::default()
            .with_key(StrBytes::from_string(key.to_string()))
            .with_value(value.unwrap_or(0.0))
            .with_remove(value.is_none())]);
    let r = admin
        .send(
            &AlterClientQuotasRequest::default().with_entries(vec![entry]),
            1,
        )
        .await?;
    for e in &r.entries {
        anyhow::ensure!(
            e.error_code == 0,
            "AlterClientQuotas: {} {:?}",
            e.error_code,
            e.error_message
        );
    }
    Ok(())
}

struct CountBytes(Arc<AtomicU64>);

impl ClientContext for CountBytes {}

impl ProducerContext for CountBytes {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Ok(m) = result {
            let bytes = m.payload().map_or(0, <[u8]>::len);
            self.0.fetch_add(bytes as u64, Ordering::Relaxed);
        }
    }
}

/// Produces to `topic` as fast as the producer may; returns the payload
/// bytes acknowledged per second over the [`spans`] of `measure`.
fn held_producer(
    config: &rdkafka::ClientConfig,
    topic: &str,
    measure: Duration,
) -> anyhow::Result<f64> {
    let (skip, measure) = spans(measure);
    create_topic(config, topic, 1)?;
    let acked = Arc::new(AtomicU64::new(0));
    let producer: BaseProducer<CountBytes> = config
        .clone()
        .set("client.id", PRODUCER)
        .set("acks", "all")
        .set("linger.ms", "5")
        // 64 KiB requests (the Java producer's are 16 KiB): each request
        // over the quota is throttled for its size, so what passes between
        // bursts grows with the request, as the square root of its size
        // (librdkafka's 1 MB requests pass about 1.1× the quota).
        .set("batch.size", "65536")
        .set("queue.buffering.max.kbytes", "65536")
        .set("enable.idempotence", "false")
        .create_with_context(CountBytes(acked.clone()))?;
    let payload = vec![b'q'; MESSAGE_BYTES];
    let mut first = None;
    let mut from = None;
    loop {
        let done = acked.load(Ordering::Relaxed);
        if done > 0 {
            let at = *first.get_or_insert_with(Instant::now);
            if at.elapsed() >= skip {
                let (t, bytes) = *from.get_or_insert_with(|| (Instant::now(), done));
                if t.elapsed() >= measure {
                    return Ok((done - bytes) as f64 / t.elapsed().as_secs_f64());
                }
            }
        }
        match producer.send(BaseRecord::<(), _>::to(topic).payload(&payload[..])) {
            Ok(()) => {}
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                producer.poll(Duration::from_millis(5));
            }
            Err((e, _)) => return Err(e.into()),
        }
        producer.poll(Duration::ZERO);
    }
}

/// When a held client is measured, from its first acknowledgement or
/// record: whole spans of Apache's quota window (11 × 1 s), enough to cover
/// `measure`, after the first. A client with more to send than its quota
/// takes ten windows' worth at once when it starts, then what its throttles
/// let through; each time the span moves past that burst it may take what
/// the span has room for again (Apache's rate does the same). The first
/// span, a cold start's burst over the quota, is left out, and the
/// measurement runs from half a second before the second burst to half a
/// second before the one after its last span: whole spans, no burst cut in
/// two.
fn spans(measure: Duration) -> (Duration, Duration) {
    const SPAN: f64 = 11.0;
    let spans = (measure.as_secs_f64() / SPAN).ceil();
    (
        Duration::from_secs_f64(SPAN - 0.5),
        Duration::from_secs_f64(spans * SPAN),
    )
}

/// Reads `topic` over and over (from its start again at its end); returns
/// the payload bytes read per second over the [`spans`] of `measure`.
fn held_consumer(
    config: &rdkafka::ClientConfig,
    topic: &str,
    measure: Duration,
) -> anyhow::Result<f64> {
    let (skip, measure) = spans(measure);
    let consumer: BaseConsumer = config
        .clone()
        .set("client.id", CONSUMER)
        .set("group.id", "bench-quota-consumer")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("fetch.wait.max.ms", "100")
        .create()?;
    let from_start = || -> anyhow::Result<TopicPartitionList> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, 0, Offset::Beginning)?;
        Ok(tpl)
    };
    consumer.assign(&from_start()?)?;
    let mut read = 0u64;
    let mut first: Option<Instant> = None;
    let mut from = None;
    loop {
        if let Some(at) = first {
            if at.elapsed() >= skip {
                let (t, bytes) = *from.get_or_insert_with(|| (Instant::now(), read));
                if t.elapsed() >= measure {
                    return Ok((read - bytes) as f64 / t.elapsed().as_secs_f64());
                }
            }
        }
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                first.get_or_insert_with(Instant::now);
                read += m.payload().map_or(0, <[u8]>::len) as u64
            }
            Some(Err(KafkaError::PartitionEOF(_))) => consumer.assign(&from_start()?)?,
            Some(Err(e)) => return Err(e.into()),
            None => {}
        }
    }
}
