//! Transactions under kill -9 on a multi-process cluster (three
//! `kaas-broker serve` processes and a controller):
//!
//! - exactly-once consume-transform-produce: a copier reads 100,000 records
//!   of `ctp-in` in a consumer group and writes each to `ctp-out` in
//!   transactions that also commit its consumer offsets
//!   (send_offsets_to_transaction with the consumer's group metadata), while
//!   the transaction coordinator, the group coordinator and partition leaders
//!   are killed with -9 and restarted, one kind after another. A
//!   read_committed reader then finds every input record in the output
//!   exactly once, and the group's committed offsets are the input's end
//!   offsets. The copier is librdkafka (here) or the Java client
//!   (e2e/clients/java/CopyExactlyOnce.java), under one harness;
//! - a commit acknowledged by EndTxn whose coordinator is killed before its
//!   markers are written becomes visible with no client acting.

mod common;

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::procs::{self, ProcessCluster, PUBLISHED_WITHIN};
use common::{client_config, create_topic};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, KafkaResult, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

const IN: &str = "ctp-in";
const OUT: &str = "ctp-out";
const PARTITIONS: i32 = 6;
const RECORDS: u64 = 100_000;
/// Kills during a copy under kill -9, cycling through the three kinds of
/// victim.
const KILLS: u64 = 6;
const T: Duration = Duration::from_secs(30);

/// A line straight to stderr: the test harness's capture of `eprintln!`
/// is lost when a failed test ends the binary ([`TestGuard`]).
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

type Producer0 = ThreadedProducer<Logged>;

/// librdkafka's own log lines to stderr (with `KAAS_TEST_RDKAFKA_DEBUG`
/// set to its `debug` contexts, e.g. `eos,broker,protocol`).
#[derive(Clone, Default)]
struct Logged;

impl rdkafka::ClientContext for Logged {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, line: &str) {
        note!("rdkafka {level:?} {fac}: {line}");
    }
}

impl rdkafka::producer::ProducerContext for Logged {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::message::DeliveryResult<'_>, _: ()) {}
}

/// The tests of this file run one at a time: each is three brokers and
/// clients under kill -9, too much at once for a 2-core machine.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held by a test while it runs: one at a time, and a failure ends the test
/// binary. A client blocked inside librdkafka whose cluster is gone would
/// otherwise hold the runtime's shutdown, and the whole run, forever; the
/// panic is written straight to stderr first (the test harness's capture
/// would die with the process).
struct TestGuard {
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl TestGuard {
    fn take() -> TestGuard {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "{info}");
                default(info);
            }));
        });
        TestGuard {
            _serial: ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

impl Drop for TestGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "transactions_kill9: a test failed (above); exiting so no client can hang the run"
            );
            std::process::exit(101);
        }
    }
}

/// How far the copier may go and how far it has come, shared by the
/// harness and the copier (the Java copier reads the gate from a file and
/// reports its progress on stdout).
#[derive(Clone)]
struct Gate {
    allowed: Arc<AtomicU64>,
    committed: Arc<AtomicU64>,
    file: PathBuf,
}

impl Gate {
    fn new(dir: &Path) -> Gate {
        let gate = Gate {
            allowed: Arc::default(),
            committed: Arc::default(),
            file: dir.join("gate"),
        };
        gate.allow(0);
        gate
    }

    /// Lets the copier begin transactions until it has committed `n`
    /// records (a batch in progress may end past it).
    fn allow(&self, n: u64) {
        self.allowed.store(n, Ordering::SeqCst);
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, n.to_string()).unwrap();
        std::fs::rename(&tmp, &self.file).unwrap();
    }

    fn committed(&self) -> u64 {
        self.committed.load(Ordering::SeqCst)
    }

    /// Whether the harness is still there (its folder, with the file, goes
    /// when it panics): a copier stops otherwise.
    fn open(&self) -> bool {
        self.file.exists()
    }
}

/// What a copier went through.
#[derive(Debug, Default)]
struct CopyStats {
    transactions: u64,
    aborted: u64,
    /// Producers replaced after a fatal error (the new one fences the old).
    replaced: u64,
}

fn transactional_producer(bootstrap: &str, id: &str) -> Producer0 {
    let mut config = client_config(bootstrap);
    if let Ok(contexts) = std::env::var("KAAS_TEST_RDKAFKA_DEBUG") {
        config.set("debug", contexts);
    }
    config
        .set("transactional.id", id)
        .set("transaction.timeout.ms", "20000")
        .set("message.timeout.ms", "20000")
        .set("linger.ms", "5")
        .set("retry.backoff.ms", "50")
        // librdkafka #5511: a coordinator request waiting on a group
        // coordinator that left Metadata is tried again only on some
        // broker's state change. A connection to every broker (not only
        // those it needs) and a frequent Metadata refresh make the killed
        // broker's return such a change.
        .set("enable.sparse.connections", "false")
        .set("topic.metadata.refresh.interval.ms", "1000")
        .create_with_context(Logged)
        .expect("transactional producer")
}

/// init_transactions until it succeeds (its coordinator may be down).
fn init(bootstrap: &str, id: &str) -> Producer0 {
    let pause = Duration::from_millis(200);
    kaas_testkit::retry_blocking(Duration::from_secs(120), pause, "init_transactions", || {
        let p = transactional_producer(bootstrap, id);
        p.init_transactions(T).map(|()| p).inspect_err(|e| {
            note!("copier: init_transactions: {e}; again");
        })
    })
}

fn is(e: &KafkaError, f: impl Fn(&rdkafka::error::RDKafkaError) -> bool) -> bool {
    matches!(e, KafkaError::Transaction(t) if f(t))
}

/// One transaction: every record of `batch` to the same partition of `OUT`,
/// the consumer's next offsets, commit. Ok(next offset per partition).
fn transact(
    producer: &Producer0,
    consumer: &BaseConsumer,
    batch: &[(i32, i64, Vec<u8>)],
) -> KafkaResult<BTreeMap<i32, i64>> {
    producer.begin_transaction()?;
    let mut next = BTreeMap::new();
    for (partition, offset, value) in batch {
        let mut record = BaseRecord::<(), [u8]>::to(OUT)
            .partition(*partition)
            .payload(value);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err((e, _)) => return Err(e),
            }
        }
        next.insert(*partition, offset + 1);
    }
    let mut offsets = TopicPartitionList::new();
    for (p, o) in &next {
        offsets.add_partition_offset(IN, *p, Offset::Offset(*o))?;
    }
    let metadata = consumer
        .group_metadata()
        .expect("a consumer with a group id has group metadata");
    producer.send_offsets_to_transaction(&offsets, &metadata, T)?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match producer.commit_transaction(T) {
            Err(e) if is(&e, |t| t.is_retriable()) && Instant::now() < deadline => {
                note!("copier: commit: {e}; again")
            }
            other => return other.map(|()| next),
        }
    }
}

/// Seeks every assigned partition back to the group's committed offset
/// (the beginning without one) and returns those offsets.
fn rewind(consumer: &BaseConsumer) -> BTreeMap<i32, i64> {
    let pause = Duration::from_millis(200);
    kaas_testkit::retry_blocking(
        Duration::from_secs(120),
        pause,
        "the copier to rewind",
        || {
            let failed = match consumer.committed(T) {
                Ok(committed) => {
                    let mut at = BTreeMap::new();
                    let mut tpl = TopicPartitionList::new();
                    for e in committed.elements() {
                        let offset = match e.offset() {
                            Offset::Offset(o) => {
                                at.insert(e.partition(), o);
                                Offset::Offset(o)
                            }
                            _ => Offset::Beginning,
                        };
                        tpl.add_partition_offset(e.topic(), e.partition(), offset)
                            .unwrap();
                    }
                    match consumer.seek_partitions(tpl, T) {
                        Ok(r) if r.elements().iter().all(|e| e.error().is_ok()) => return Ok(at),
                        other => format!("seek: {other:?}"),
                    }
                }
                Err(e) => format!("committed: {e}"),
            };
            note!("copier: {failed}; again");
            Err(failed)
        },
    )
}

/// The librdkafka copier: batches of up to 500 records, one transaction
/// each; an abortable error aborts and rewinds to the committed offsets, a
/// fatal one replaces the producer (fencing the old) and rewinds.
fn librdkafka_copier(bootstrap: &str, gate: &Gate, txn_id: &str, group: &str) -> CopyStats {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", "read_committed")
        .set("session.timeout.ms", "10000")
        .set("heartbeat.interval.ms", "500")
        .create()
        .expect("consumer");
    consumer.subscribe(&[IN]).unwrap();
    let mut producer = init(bootstrap, txn_id);
    let mut stats = CopyStats::default();
    let mut committed: BTreeMap<i32, i64> = BTreeMap::new();
    let total = |c: &BTreeMap<i32, i64>| c.values().map(|o| *o as u64).sum::<u64>();
    while total(&committed) < RECORDS && gate.open() {
        if total(&committed) >= gate.allowed.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let mut batch = Vec::new();
        let started = Instant::now();
        while batch.len() < 500 && started.elapsed() < Duration::from_millis(200) {
            match consumer.poll(Duration::from_millis(50)) {
                Some(Ok(m)) => batch.push((
                    m.partition(),
                    m.offset(),
                    m.payload().unwrap_or_default().to_vec(),
                )),
                Some(Err(e)) => note!("copier: consumer: {e}"),
                None if !batch.is_empty() => break,
                None => {}
            }
        }
        if batch.is_empty() {
            continue;
        }
        match transact(&producer, &consumer, &batch) {
            Ok(next) => {
                stats.transactions += 1;
                committed.extend(next);
            }
            Err(e) => {
                note!("copier: transaction failed: {e}");
                let abortable = is(&e, |t| t.txn_requires_abort());
                let deadline = Instant::now() + Duration::from_secs(120);
                let aborted = abortable
                    && loop {
                        match producer.abort_transaction(T) {
                            Ok(()) => break true,
                            Err(e) if is(&e, |t| t.is_retriable()) && Instant::now() < deadline => {
                                note!("copier: abort: {e}; again")
                            }
                            Err(e) => {
                                note!("copier: abort: {e}");
                                break false;
                            }
                        }
                    };
                if aborted {
                    stats.aborted += 1;
                } else {
                    stats.replaced += 1;
                    drop(producer);
                    producer = init(bootstrap, txn_id);
                }
                committed = rewind(&consumer);
            }
        }
        gate.committed.store(total(&committed), Ordering::SeqCst);
    }
    stats
}

/// Broker `kind` of the victims: the transaction coordinator, the group
/// coordinator, then leaders of the input and output partitions in turn.
fn victim(cluster: &ProcessCluster, round: u64, txn_id: &str, group: &str) -> (usize, String) {
    let routing = cluster.routing().expect("an assignment");
    let (owner, what) = match round % 3 {
        0 => (
            routing.owner_of_transaction(txn_id),
            format!("the transaction coordinator of {txn_id}"),
        ),
        1 => (
            routing.owner_of_group(group),
            format!("the group coordinator of {group}"),
        ),
        _ => {
            let topic = if round.is_multiple_of(2) { IN } else { OUT };
            let p = (round / 3) as i32 % PARTITIONS;
            (
                routing.owner_of_partition(topic, p),
                format!("the leader of {topic}/{p}"),
            )
        }
    };
    (owner.expect("an owner") as usize, what)
}

/// Every value of `topic` read_committed from the beginning: until `expect`
/// arrived, then until nothing more arrives for 3 s (a duplicate would).
fn read_committed(bootstrap: &str, topic: &str, expect: usize) -> Vec<Vec<u8>> {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", format!("{topic}-verifier"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut quiet_since = Instant::now();
    while got.len() < expect || quiet_since.elapsed() < Duration::from_secs(3) {
        assert!(
            Instant::now() < deadline,
            "read {} of {expect} from {topic}",
            got.len()
        );
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.expect("reader");
            got.push(m.payload().unwrap_or_default().to_vec());
            quiet_since = Instant::now();
        }
    }
    got
}

/// The group's committed offsets of `IN`, partition -> offset.
fn group_offsets(bootstrap: &str, group: &str) -> BTreeMap<i32, i64> {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", group)
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition(IN, p);
    }
    let got = consumer
        .committed_offsets(tpl, T)
        .expect("committed offsets");
    got.elements()
        .iter()
        .map(|e| match e.offset() {
            Offset::Offset(o) => (e.partition(), o),
            other => panic!("no committed offset for {IN}/{}: {other:?}", e.partition()),
        })
        .collect()
}

/// The input: `RECORDS` distinct values round-robin over the partitions;
/// returns each partition's end offset.
fn produce_input(bootstrap: &str) -> BTreeMap<i32, i64> {
    let p: ThreadedProducer<DefaultProducerContext> = client_config(bootstrap)
        .set("enable.idempotence", "true")
        .set("linger.ms", "20")
        .create()
        .unwrap();
    for i in 0..RECORDS {
        let value = format!("r-{i:06}");
        let mut record = BaseRecord::<(), str>::to(IN)
            .partition((i % PARTITIONS as u64) as i32)
            .payload(&value);
        loop {
            match p.send(record) {
                Ok(()) => break,
                Err((_, r)) => {
                    record = r;
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
    }
    p.flush(Duration::from_secs(60))
        .expect("the input is written");
    (0..PARTITIONS)
        .map(|partition| {
            let n = RECORDS / PARTITIONS as u64
                + u64::from((partition as u64) < RECORDS % PARTITIONS as u64);
            (partition, n as i64)
        })
        .collect()
}

/// The harness: input written, the copier started, `KILLS` kills each
/// while the copier is mid-stage, then the copy finished and checked.
async fn copy_under_kill_9<C>(name: &str, kills: u64, copier: C)
where
    C: FnOnce(String, Gate) -> CopyStats + Send + 'static,
{
    let _guard = TestGuard::take();
    let work = tempfile::tempdir().unwrap();
    let cluster = procs::start(3).await;
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, IN, PARTITIONS).await;
    create_topic(&bootstrap, OUT, PARTITIONS).await;
    let b = bootstrap.clone();
    let ends = tokio::task::spawn_blocking(move || produce_input(&b))
        .await
        .unwrap();

    let gate = Gate::new(work.path());
    let stage = RECORDS / (kills + 1);
    let copy = {
        let (b, g) = (bootstrap.clone(), gate.clone());
        tokio::task::spawn_blocking(move || copier(b, g))
    };
    let mut victims = Vec::new();
    for round in 0..kills {
        // The stage opens; the kill comes once the copier is a quarter into
        // it, so it lands mid-stream with most of the stage to go.
        gate.allow((round + 1) * stage);
        let mid = round * stage + stage / 4;
        let deadline = Instant::now() + Duration::from_secs(180);
        while gate.committed() < mid {
            assert!(
                !copy.is_finished(),
                "{name}: the copier stopped at {}",
                gate.committed()
            );
            assert!(
                Instant::now() < deadline,
                "{name}: the copier is stuck at {} (round {round}); logs:\n{}",
                gate.committed(),
                cluster.logs()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // A different moment of the transaction in progress each round.
        tokio::time::sleep(Duration::from_millis(round * 37 % 150)).await;
        let (id, what) = victim(&cluster, round, "ctp-copier", "ctp-group");
        println!(
            "{name}: kill -9 broker {id}, {what}, at {} committed",
            gate.committed()
        );
        victims.push(what);
        cluster.kill(id);
        assert!(
            cluster.wait_dead(id, PUBLISHED_WITHIN).await,
            "{name}: broker {id} not published dead"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        cluster.restart(id).unwrap();
        cluster
            .wait_alive_count(3, PUBLISHED_WITHIN)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    gate.allow(RECORDS);
    let stats = tokio::time::timeout(Duration::from_secs(300), copy)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{name}: the copy did not finish, at {}; logs:\n{}",
                gate.committed(),
                cluster.logs()
            )
        })
        .unwrap();
    println!("{name}: {stats:?}, victims {victims:?}");
    assert!(
        cluster.exited().is_empty(),
        "{name}: a broker exited on its own"
    );

    let b = bootstrap.clone();
    let (output, committed) = tokio::task::spawn_blocking(move || {
        (
            read_committed(&b, OUT, RECORDS as usize),
            group_offsets(&b, "ctp-group"),
        )
    })
    .await
    .unwrap();
    assert_eq!(
        committed, ends,
        "{name}: the group's committed offsets are the input's end offsets"
    );
    let mut counts: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    for v in output {
        *counts.entry(v).or_default() += 1;
    }
    let duplicated: Vec<_> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(v, n)| (String::from_utf8_lossy(v).into_owned(), *n))
        .take(10)
        .collect();
    assert!(
        duplicated.is_empty(),
        "{name}: records copied more than once: {duplicated:?}"
    );
    let expected: Vec<Vec<u8>> = (0..RECORDS)
        .map(|i| format!("r-{i:06}").into_bytes())
        .collect();
    let missing = expected.iter().filter(|v| !counts.contains_key(*v)).count();
    assert_eq!(missing, 0, "{name}: records never copied");
    assert_eq!(
        counts.len() as u64,
        RECORDS,
        "{name}: records not in the input"
    );
    cluster.shutdown();
}

/// The Java copier (e2e/clients/java/CopyExactlyOnce.java) as a child
/// process: the gate through its file, its progress from its stdout.
fn java_copier(bootstrap: &str, gate: &Gate, txn_id: &str, group: &str) -> CopyStats {
    let (_classes, classpath) = common::compile_java("CopyExactlyOnce");
    let mut child = std::process::Command::new("java")
        .args(["-cp", &classpath, "CopyExactlyOnce", IN, OUT, group, txn_id])
        .arg(RECORDS.to_string())
        .arg(&gate.file)
        .arg(bootstrap)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("java (scripts/install-test-deps installs a JDK)");
    let mut stats = None;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("committed ") {
            gate.committed.store(n.parse().unwrap(), Ordering::SeqCst);
        } else if let Some(done) = line.strip_prefix("copy done ") {
            let field = |name: &str| -> u64 {
                done.split(' ')
                    .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("no {name} in {line:?}"))
            };
            stats = Some(CopyStats {
                transactions: field("transactions"),
                aborted: field("aborted"),
                replaced: field("replaced"),
            });
        } else {
            println!("java copier: {line}");
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "the Java copier failed: {status}");
    stats.expect("the Java copier reports when done")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_copies_exactly_once_while_coordinators_and_leaders_are_killed() {
    copy_under_kill_9("java", KILLS, |bootstrap, gate| {
        java_copier(&bootstrap, &gate, "ctp-copier", "ctp-group")
    })
    .await;
}

/// librdkafka 2.12 as the copier. Once the killed group coordinator drops
/// out of Metadata (as a dead broker does from Apache's), librdkafka
/// decommissions it while still caching it as the group coordinator, and
/// `send_offsets_to_transaction` waits until some broker's connection
/// changes state (librdkafka #5511 and #5456, open): with sparse
/// connections and no traffic that may be never. The copier's producer
/// connects to every broker and refreshes Metadata every second
/// ([`transactional_producer`]), so the killed broker's return is such a
/// change. Every kaas answer came within 5 s in the runs that hung before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_copies_exactly_once_while_coordinators_and_leaders_are_killed() {
    copy_under_kill_9("librdkafka", KILLS, |bootstrap, gate| {
        librdkafka_copier(&bootstrap, &gate, "ctp-copier", "ctp-group")
    })
    .await;
}

/// The same copy by librdkafka with every broker up: 100,000 records exactly
/// once, the group's offsets at the input's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_copies_exactly_once() {
    copy_under_kill_9("librdkafka", 0, |bootstrap, gate| {
        librdkafka_copier(&bootstrap, &gate, "ctp-copier", "ctp-group")
    })
    .await;
}

/// DescribeTransactions of `id` on `addr`: its state name.
async fn txn_state(addr: &str, id: &str) -> String {
    use kafka_protocol::messages::{DescribeTransactionsRequest, TransactionalId};
    use kafka_protocol::protocol::StrBytes;
    let mut c = kaas_client::KafkaClient::connect(addr, T).await.unwrap();
    let r = c
        .send(
            &DescribeTransactionsRequest::default().with_transactional_ids(vec![TransactionalId(
                StrBytes::from_string(id.to_string()),
            )]),
            0,
        )
        .await
        .unwrap();
    let s = &r.transaction_states[0];
    assert_eq!(s.error_code, 0, "DescribeTransactions of {id}");
    s.transaction_state.to_string()
}

/// EndTxn(commit) is acknowledged while a partition's leader is down (its
/// marker cannot be written: the controller is stopped, so nobody takes the
/// partition over), then the coordinator is killed with -9 in PrepareCommit.
/// Once the controller publishes both deaths, the broker left adopts the
/// transactional id and writes the markers: read_committed readers see the
/// records, and the producer never acts again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_commit_whose_coordinator_is_killed_before_its_markers_becomes_visible() {
    const TOPIC: &str = "ack-then-kill";
    const ID: &str = "ack-then-kill";
    let _guard = TestGuard::take();
    let cluster = procs::start(3).await;
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, TOPIC, PARTITIONS).await;
    let routing = cluster.routing().unwrap();
    let coordinator = routing.owner_of_transaction(ID).unwrap();
    let partition = (0..PARTITIONS)
        .find(|p| routing.owner_of_partition(TOPIC, *p) != Some(coordinator))
        .expect("a partition another broker leads");
    let leader = routing.owner_of_partition(TOPIC, partition).unwrap();
    let survivor = (0..3).find(|b| *b != coordinator && *b != leader).unwrap();
    println!("coordinator {coordinator}, {TOPIC}/{partition} led by {leader}, survivor {survivor}");

    let b = bootstrap.clone();
    let producer = tokio::task::spawn_blocking(move || {
        let p = transactional_producer(&b, ID);
        p.init_transactions(T).expect("init_transactions");
        p.begin_transaction().unwrap();
        for i in 0..10 {
            let value = format!("acked-{i}");
            p.send(
                BaseRecord::<(), str>::to(TOPIC)
                    .partition(partition)
                    .payload(&value),
            )
            .map_err(|(e, _)| e)
            .unwrap();
        }
        p.flush(T).expect("the records are written");
        p
    })
    .await
    .unwrap();

    cluster.pause_controller(true).unwrap();
    cluster.kill(leader as usize);
    let producer = tokio::task::spawn_blocking(move || {
        producer
            .commit_transaction(T)
            .expect("EndTxn(commit) acknowledged");
        producer
    })
    .await
    .unwrap();
    let state = txn_state(&cluster.addr(coordinator as usize), ID).await;
    assert_eq!(
        state, "PrepareCommit",
        "the markers wait for the dead leader, so the kill below lands before them"
    );
    cluster.kill(coordinator as usize);
    // The producer never sends anything again.
    std::mem::forget(producer);
    cluster.pause_controller(false).unwrap();
    assert!(
        cluster
            .wait_dead(coordinator as usize, PUBLISHED_WITHIN)
            .await
    );
    assert!(cluster.wait_dead(leader as usize, PUBLISHED_WITHIN).await);

    let survivor_addr = cluster.addr(survivor as usize);
    let got = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = client_config(&survivor_addr)
            .set("group.id", "ack-then-kill-reader")
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(TOPIC, partition, Offset::Beginning)
            .unwrap();
        consumer.assign(&tpl).unwrap();
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while got.len() < 10 && Instant::now() < deadline {
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(m)) => got.push(String::from_utf8_lossy(m.payload().unwrap()).into_owned()),
                // The dead brokers, until the survivor's metadata drops them.
                Some(Err(e)) => note!("reader: {e}"),
                None => {}
            }
        }
        got
    })
    .await
    .unwrap();
    let want: Vec<String> = (0..10).map(|i| format!("acked-{i}")).collect();
    assert_eq!(got, want, "the acknowledged commit became visible");
    assert_eq!(
        txn_state(&cluster.addr(survivor as usize), ID).await,
        "CompleteCommit"
    );
    cluster.shutdown();
}
