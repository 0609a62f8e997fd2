//! A multi-process cluster: three `kaas-broker serve` processes and a
//! `kaas-broker controller`. One broker is killed with SIGKILL while
//! librdkafka produces with acks=all: its partitions move per `route` within
//! seconds, production goes on, and when it comes back every acknowledged
//! message is still there, with no corrupt batch ever returned.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::procs::{self, PUBLISHED_WITHIN};
use common::{consume_until, create_topic, eventually};
use kaas_shared::route;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};

const PARTITIONS: i32 = 6;

/// (partition, offset, payload) of every acknowledged message.
type Acked = Arc<Mutex<Vec<(i32, i64, String)>>>;
/// Partition leaders as the cluster's Metadata reports them.
fn leaders(bootstrap: &str) -> Option<BTreeMap<i32, i32>> {
    let consumer: BaseConsumer = common::client_config(bootstrap).create().ok()?;
    let md = consumer
        .fetch_metadata(Some("orders"), Duration::from_secs(2))
        .ok()?;
    let topic = md.topics().first()?;
    Some(
        topic
            .partitions()
            .iter()
            .map(|p| (p.id(), p.leader()))
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_a_broker_loses_no_acknowledged_message() {
    let cluster = procs::start(3).await;
    let bootstrap = format!("{},{}", cluster.addr(0), cluster.addr(2));
    create_topic(&bootstrap, "orders", PARTITIONS).await;

    // The victim leads at least one partition under the full set.
    let victim = 1;
    let led_by_victim: Vec<i32> = (0..PARTITIONS)
        .filter(|p| route(format!("orders/{p}").as_bytes(), &[0, 1, 2], |_| true) == Some(victim))
        .collect();
    assert!(!led_by_victim.is_empty());

    // Produce continuously, recording every acknowledgement.
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let producer: FutureProducer = common::client_config(&bootstrap)
        .set("acks", "all")
        .set("linger.ms", "2")
        .set("message.timeout.ms", "60000")
        .set("retry.backoff.ms", "50")
        .create()
        .unwrap();
    let writer = {
        let acked = acked.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut i = 0u64;
            let mut inflight = futures::stream::FuturesUnordered::new();
            use futures::StreamExt;
            while !stop.load(Ordering::Relaxed) {
                let payload = format!("m-{i}");
                let p = (i % PARTITIONS as u64) as i32;
                let producer = producer.clone();
                inflight.push(async move {
                    let r = producer
                        .send(
                            FutureRecord::<(), _>::to("orders")
                                .partition(p)
                                .payload(&payload),
                            Duration::from_secs(60),
                        )
                        .await;
                    (payload, r)
                });
                i += 1;
                while inflight.len() >= 200 {
                    if let Some((payload, Ok(d))) = inflight.next().await {
                        acked.lock().unwrap().push((d.partition, d.offset, payload));
                    }
                }
            }
            while let Some((payload, r)) = inflight.next().await {
                if let Ok(d) = r {
                    acked.lock().unwrap().push((d.partition, d.offset, payload));
                }
            }
        })
    };
    let count = |acked: &Acked| acked.lock().unwrap().len();
    eventually(Duration::from_secs(30), "3000 acks before the kill", || {
        count(&acked) >= 3000
    })
    .await;

    cluster.kill(victim as usize);
    let at_kill = count(&acked);

    // Leadership moves per route over the alive set, within seconds.
    let expected: BTreeMap<i32, i32> = (0..PARTITIONS)
        .map(|p| {
            (
                p,
                route(format!("orders/{p}").as_bytes(), &[0, 1, 2], |b| {
                    b != victim
                })
                .unwrap(),
            )
        })
        .collect();
    let bs = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let what = "the killed broker's partitions to move per route";
        kaas_testkit::retry_blocking(
            Duration::from_secs(10),
            Duration::from_millis(100),
            what,
            || match leaders(&bs) {
                Some(l) if l == expected => Ok(()),
                other => Err(format!("leaders {other:?}, expected {expected:?}")),
            },
        )
    })
    .await
    .unwrap();

    // Production goes on, including on the partitions that moved.
    eventually(
        Duration::from_secs(30),
        "acks on moved partitions after the kill",
        || {
            let a = acked.lock().unwrap();
            a.len() > at_kill + 3000
                && a[at_kill..]
                    .iter()
                    .filter(|(p, _, _)| led_by_victim.contains(p))
                    .count()
                    > 100
        },
    )
    .await;

    // The victim comes back on its port; production keeps running.
    cluster.restart(victim as usize).unwrap();
    cluster.wait_alive_count(3, PUBLISHED_WITHIN).await.unwrap();
    let at_return = count(&acked);
    eventually(Duration::from_secs(30), "acks after the return", || {
        count(&acked) > at_return + 2000
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();

    // Every acknowledged message is where its ack said, once; nothing corrupt.
    let acked = acked.lock().unwrap().clone();
    let mut unique = HashSet::new();
    for (p, o, _) in &acked {
        assert!(
            unique.insert((*p, *o)),
            "offset {o} of p{p} acknowledged twice"
        );
    }
    // Read each partition up to the last acknowledged offset.
    let mut ends: BTreeMap<i32, i64> = BTreeMap::new();
    for (p, o, _) in &acked {
        let e = ends.entry(*p).or_default();
        *e = (*e).max(*o);
    }
    let bs = bootstrap.clone();
    let got = tokio::task::spawn_blocking(move || {
        consume_until(
            &bs,
            "orders",
            PARTITIONS,
            Duration::from_secs(120),
            |got, _| {
                ends.iter().all(|(p, end)| {
                    got.get(p)
                        .and_then(|m| m.last())
                        .is_some_and(|(o, _)| o >= end)
                })
            },
        )
    })
    .await
    .unwrap();
    let stored: std::collections::HashMap<(i32, i64), String> = got
        .into_iter()
        .flat_map(|(p, msgs)| msgs.into_iter().map(move |(o, v)| ((p, o), v)))
        .collect();
    let mut lost = 0;
    for (p, o, v) in &acked {
        if stored.get(&(*p, *o)) != Some(v) {
            lost += 1;
        }
    }
    println!("acknowledged: {}, lost: {lost}", acked.len());
    assert_eq!(lost, 0, "acknowledged messages lost");
}
