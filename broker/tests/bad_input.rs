//! Bad input from the wire, one test per case (see docs/security.md).
//!
//! Every case sends something broken to a real broker (in process, on
//! loopback) and asserts what a client sees: a Kafka error code, or the
//! connection closed with a readable log line naming the peer. Every case
//! then proves the broker is still whole: a client connected before the bad
//! input and a client connected after it are both served.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use kaas_client::KafkaClient;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const MAX_FRAME: usize = 64 * 1024;
const WAIT: Duration = Duration::from_secs(5);

// ------------------------------------------------------------------ logs

#[derive(Clone, Default)]
struct LogBuf(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every log line of this test binary (all tests share one subscriber).
fn logs() -> &'static LogBuf {
    static LOGS: OnceLock<LogBuf> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = LogBuf::default();
        let writer = buf.clone();
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .init();
        buf
    })
}

/// Waits until a log line holds every one of `needles`.
async fn assert_logged(needles: &[&str]) {
    let what = format!("a log line with {needles:?}");
    kaas_testkit::retry(WAIT, Duration::from_millis(20), &what, async || {
        let text = String::from_utf8_lossy(&logs().0.lock().unwrap()).to_string();
        match text.lines().any(|l| needles.iter().all(|n| l.contains(n))) {
            true => Ok(()),
            false => Err(format!("logs:\n{text}")),
        }
    })
    .await
}

// ------------------------------------------------------------------ broker

struct Env {
    cluster: LocalCluster,
    addr: String,
    root: tempfile::TempDir,
    /// A client connected before any bad input: it must still be served.
    bystander: KafkaClient,
}

fn data_dir(root: &Path) -> PathBuf {
    root.join("data")
}

async fn start_with(tune: fn(&mut kaas_broker::BrokerConfig)) -> Env {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut config = LocalClusterConfig::new(1, data_dir(root.path()));
    config.base_port = 0;
    config.probe_interval = Duration::from_millis(50);
    config.tune = tune;
    let cluster = LocalCluster::start(config).await.unwrap();
    // The topic the tests commit to (commits to a topic that does not exist
    // are refused, as Apache does).
    cluster.brokers[0]
        .storage
        .topics
        .create_blocking("t", 1, Default::default(), false)
        .unwrap();
    let addr = cluster.addrs[0].to_string();
    let bystander = KafkaClient::connect(&addr, WAIT).await.unwrap();
    Env {
        cluster,
        addr,
        root,
        bystander,
    }
}

fn default_tune(c: &mut kaas_broker::BrokerConfig) {
    c.max_frame_bytes = MAX_FRAME;
    c.groups.core.initial_rebalance_delay_ms = 300;
}

async fn start() -> Env {
    start_with(default_tune).await
}

impl Env {
    async fn raw(&self) -> (TcpStream, String) {
        let s = TcpStream::connect(&self.addr).await.unwrap();
        let peer = s.local_addr().unwrap().to_string();
        (s, peer)
    }

    async fn client(&self) -> KafkaClient {
        KafkaClient::connect(&self.addr, WAIT).await.unwrap()
    }

    /// The broker still serves: the bystander and a new client both get
    /// answers, including a commit that is durable and read back.
    async fn assert_still_serving(mut self) {
        let mut fresh = self.client().await;
        for client in [&mut self.bystander, &mut fresh] {
            let v = client
                .send(&ApiVersionsRequest::default(), 2)
                .await
                .expect("ApiVersions after bad input");
            assert_eq!(v.error_code, 0);
            let md = client
                .send(&MetadataRequest::default().with_topics(Some(vec![])), 12)
                .await
                .expect("Metadata after bad input");
            assert_eq!(md.brokers.len(), 1);
        }
        let mut c = self.client().await;
        assert_eq!(commit(&mut c, "healthy-group", "t", 0, 42, None).await, 0);
        assert_eq!(fetch(&mut c, "healthy-group", "t", 0).await, (0, 42));
        self.cluster.shutdown().await;
        drop(self.root);
    }
}

// ------------------------------------------------------------------ wire helpers

/// A whole request frame, encoded the way a client does (editable).
fn frame<R: Request>(req: &R, version: i16, correlation_id: i32) -> BytesMut {
    let f = kaas_client::frame::request_frame(req, version, correlation_id, "bad-input").unwrap();
    BytesMut::from(&f[..])
}

/// Fixes the length prefix after the body was edited.
fn relength(mut f: BytesMut) -> Bytes {
    let len = (f.len() - 4) as i32;
    f[0..4].copy_from_slice(&len.to_be_bytes());
    f.freeze()
}

/// Waits until the broker closes the connection (EOF or reset), failing if
/// it answers or stays open.
async fn assert_closed(s: &mut TcpStream) {
    let mut buf = [0u8; 64];
    match tokio::time::timeout(WAIT, s.read(&mut buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => {}
        Ok(Ok(n)) => panic!("broker answered {n} bytes instead of closing"),
        Err(_) => panic!("broker kept the connection open"),
    }
}

fn group_id(s: &str) -> GroupId {
    GroupId(StrBytes::from_string(s.to_string()))
}

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// OffsetCommit v8 of one offset without a generation (a simple consumer).
async fn commit(
    c: &mut KafkaClient,
    group: &str,
    topic: &str,
    partition: i32,
    offset: i64,
    metadata: Option<String>,
) -> i16 {
    let req = OffsetCommitRequest::default()
        .with_group_id(group_id(group))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_committed_metadata(metadata.map(StrBytes::from_string))])]);
    let resp = c.send(&req, 8).await.expect("OffsetCommit");
    resp.topics[0].partitions[0].error_code
}

/// OffsetFetch v7 of one partition: (error, offset); a group-level error wins.
async fn fetch(c: &mut KafkaClient, group: &str, topic: &str, partition: i32) -> (i16, i64) {
    let req = OffsetFetchRequest::default()
        .with_group_id(group_id(group))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(topic_name(topic))
            .with_partition_indexes(vec![partition])]));
    let resp = c.send(&req, 7).await.expect("OffsetFetch");
    if resp.error_code != 0 {
        return (resp.error_code, -1);
    }
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.committed_offset)
}

fn join_request(group: &str, session_timeout_ms: i32) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(group_id(group))
        .with_session_timeout_ms(session_timeout_ms)
        .with_rebalance_timeout_ms(30_000)
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(Bytes::from_static(b"\x00\x01"))])
}

/// Every file and folder under `root`, relative to it.
fn tree(root: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            out.insert(p.strip_prefix(root).unwrap().to_path_buf());
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

// ------------------------------------------------------------------ framing

#[tokio::test]
async fn frame_over_the_maximum_is_closed() {
    let env = start().await;
    let (mut s, peer) = env.raw().await;
    // Only the length arrives: the broker must not wait for (or allocate) the body.
    s.write_all(&((MAX_FRAME + 1) as i32).to_be_bytes())
        .await
        .unwrap();
    assert_closed(&mut s).await;
    assert_logged(&[
        &peer,
        "closing the connection after a bad frame",
        "exceeds the maximum",
    ])
    .await;
    // Exactly the maximum is still accepted as a frame (then refused as a request).
    let (mut s, peer) = env.raw().await;
    let mut f = vec![0u8; 4 + MAX_FRAME];
    f[0..4].copy_from_slice(&(MAX_FRAME as i32).to_be_bytes());
    f[4..6].copy_from_slice(&9999i16.to_be_bytes());
    s.write_all(&f).await.unwrap();
    assert_closed(&mut s).await;
    assert_logged(&[&peer, "unknown or unsupported API key 9999"]).await;
    env.assert_still_serving().await;
}

/// Above what 127.0.0.1 uses here (the bystander, the checks' clients and
/// the controller's probe), which the test's own address must not share.
const PER_IP: usize = 8;

fn per_ip_tune(c: &mut kaas_broker::BrokerConfig) {
    default_tune(c);
    c.max_connections_per_ip = PER_IP;
}

/// A connection from 127.0.0.2, an address of the test's own.
async fn connect_from_second_address(addr: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    socket.connect(addr.parse().unwrap()).await.unwrap()
}

/// Whether the broker answers an ApiVersions request on `s`.
async fn answers(s: &mut TcpStream) -> bool {
    if s.write_all(&frame(&ApiVersionsRequest::default(), 2, 1))
        .await
        .is_err()
    {
        return false;
    }
    let mut len = [0u8; 4];
    matches!(
        tokio::time::timeout(WAIT, s.read_exact(&mut len)).await,
        Ok(Ok(_)) if i32::from_be_bytes(len) > 0
    )
}

/// `max.connections.per.ip`: the connection over the limit is closed and
/// logged with its address; the ones under it are served, other addresses
/// are not limited by it (127.0.0.1 is served throughout), and a closed
/// connection gives its place back.
#[tokio::test]
async fn connections_over_max_connections_per_ip_are_closed_and_logged() {
    let env = start_with(per_ip_tune).await;
    let mut held = Vec::new();
    for _ in 0..PER_IP {
        held.push(connect_from_second_address(&env.addr).await);
    }
    let mut over = connect_from_second_address(&env.addr).await;
    let peer = over.local_addr().unwrap().to_string();
    assert_closed(&mut over).await;
    assert_logged(&[&peer, "refused a connection", "max.connections.per.ip"]).await;
    for s in &mut held {
        assert!(answers(s).await, "a connection under the limit is served");
    }
    // One closes: a new one from the same address is served again, once
    // the broker has seen the close.
    drop(held.pop());
    let mut served = false;
    for _ in 0..100 {
        let mut s = connect_from_second_address(&env.addr).await;
        if answers(&mut s).await {
            served = true;
            held.push(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served, "a freed place is given to a new connection");
    drop(held);
    env.assert_still_serving().await;
}

#[tokio::test]
async fn negative_and_absurd_lengths_are_closed() {
    let env = start().await;
    for len in [-1i32, i32::MIN, i32::MAX] {
        let (mut s, peer) = env.raw().await;
        s.write_all(&len.to_be_bytes()).await.unwrap();
        assert_closed(&mut s).await;
        let why = if len < 0 {
            "is negative"
        } else {
            "exceeds the maximum"
        };
        assert_logged(&[&peer, "bad frame", why]).await;
    }
    env.assert_still_serving().await;
}

#[tokio::test]
async fn frame_too_short_for_a_header_is_closed() {
    let env = start().await;
    for body in [&[][..], &[0u8][..], &[0, 18, 0, 0, 0, 0, 0][..]] {
        let (mut s, peer) = env.raw().await;
        let mut f = (body.len() as i32).to_be_bytes().to_vec();
        f.extend_from_slice(body);
        s.write_all(&f).await.unwrap();
        assert_closed(&mut s).await;
        assert_logged(&[&peer, "bad request", "too short for a request header"]).await;
    }
    env.assert_still_serving().await;
}

#[tokio::test]
async fn connection_dropped_mid_frame_is_logged_and_forgotten() {
    let env = start().await;
    let (mut s, peer) = env.raw().await;
    s.write_all(&[0, 0, 0, 100, 0, 3, 0, 1]).await.unwrap();
    s.shutdown().await.unwrap();
    assert_closed(&mut s).await;
    assert_logged(&[&peer, "bad frame", "in the middle of a frame"]).await;
    env.assert_still_serving().await;
}

// ------------------------------------------------------------------ keys and versions

#[tokio::test]
async fn unknown_api_keys_are_closed() {
    let env = start().await;
    // 9999: no such API; 57 (UpdateFeatures) and 67 exist in Kafka but are not served; -1.
    for key in [9999i16, 57, 67, -1] {
        let (mut s, peer) = env.raw().await;
        let mut f = frame(&MetadataRequest::default(), 1, 7);
        f[4..6].copy_from_slice(&key.to_be_bytes());
        s.write_all(&f).await.unwrap();
        assert_closed(&mut s).await;
        assert_logged(&[&peer, &format!("unknown or unsupported API key {key}")]).await;
    }
    env.assert_still_serving().await;
}

#[tokio::test]
async fn api_versions_newer_than_served_gets_unsupported_version_at_v0() {
    let env = start().await;
    let mut c = env.client().await;
    let mut f = frame(&ApiVersionsRequest::default(), 3, 77);
    f[6..8].copy_from_slice(&99i16.to_be_bytes());
    c.send_raw(&f).await.unwrap();
    // Apache answers at v0 (header v0) so any client can read it.
    let (correlation_id, mut body) = c.read_response_body(0).await.unwrap();
    assert_eq!(correlation_id, 77);
    let resp = ApiVersionsResponse::decode(&mut body, 0).unwrap();
    assert_eq!(resp.error_code, 35, "UNSUPPORTED_VERSION");
    assert!(resp
        .api_keys
        .iter()
        .any(|k| k.api_key == 18 && k.max_version == 4));
    // The connection stays usable: the client retries at a version we serve.
    let again = c.send(&ApiVersionsRequest::default(), 2).await.unwrap();
    assert_eq!(again.error_code, 0);
    env.assert_still_serving().await;
}

#[tokio::test]
async fn unsupported_versions_of_other_apis_are_closed() {
    let env = start().await;
    // Too new, and below the floor (Produce v0..2 were removed in Kafka 4).
    for (key, version) in [(3i16, 99i16), (0, 0), (8, 10), (11, -1)] {
        let (mut s, peer) = env.raw().await;
        let mut f = frame(&MetadataRequest::default(), 1, 7);
        f[4..6].copy_from_slice(&key.to_be_bytes());
        f[6..8].copy_from_slice(&version.to_be_bytes());
        s.write_all(&f).await.unwrap();
        assert_closed(&mut s).await;
        assert_logged(&[&peer, &format!("version {version} is not supported")]).await;
    }
    env.assert_still_serving().await;
}

// ------------------------------------------------------------------ malformed bodies

#[tokio::test]
async fn truncated_requests_are_closed() {
    let env = start().await;
    let req = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(topic_name("some-topic")))
    ]));
    for version in [1i16, 9, 12] {
        let full = frame(&req, version, 5);
        // Every cut inside the body, each sent as a whole frame.
        for cut in [1usize, 3, 8] {
            let (mut s, peer) = env.raw().await;
            let mut f = full.clone();
            f.truncate(full.len() - cut);
            s.write_all(&relength(f)).await.unwrap();
            assert_closed(&mut s).await;
            assert_logged(&[&peer, "bad request", "malformed Metadata"]).await;
        }
    }
    env.assert_still_serving().await;
}

/// An array count far beyond the bytes in the frame (here i32::MAX and
/// u32::MAX elements in a 30-byte request) must be refused without
/// reserving memory for it: the codec used to abort the process.
#[tokio::test]
async fn absurd_array_counts_are_closed() {
    let env = start().await;
    // Metadata v1 (classic): topics array of i32::MAX.
    let (mut s, peer) = env.raw().await;
    let mut f = frame(&MetadataRequest::default().with_topics(Some(vec![])), 1, 5);
    let n = f.len();
    f[n - 4..].copy_from_slice(&i32::MAX.to_be_bytes());
    s.write_all(&relength(f)).await.unwrap();
    assert_closed(&mut s).await;
    assert_logged(&[&peer, "bad request", "malformed Metadata"]).await;
    // Metadata v9 (flexible): compact array count u32::MAX as a varint.
    let (mut s, peer) = env.raw().await;
    let f = frame(&MetadataRequest::default().with_topics(Some(vec![])), 9, 5);
    // Body ends with: topics (varint 1 = empty), 2 bools, tagged fields (0).
    let mut g = BytesMut::from(&f[..f.len() - 4]);
    g.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0]);
    s.write_all(&relength(g)).await.unwrap();
    assert_closed(&mut s).await;
    assert_logged(&[&peer, "bad request", "malformed Metadata"]).await;
    // A JoinGroup whose protocols array claims i32::MAX entries.
    let (mut s, peer) = env.raw().await;
    let f = frame(&join_request("g", 10_000).with_protocols(vec![]), 5, 5);
    let n = f.len();
    let mut g = f.clone();
    g[n - 4..].copy_from_slice(&i32::MAX.to_be_bytes());
    s.write_all(&relength(g)).await.unwrap();
    assert_closed(&mut s).await;
    assert_logged(&[&peer, "bad request", "malformed JoinGroup"]).await;
    env.assert_still_serving().await;
}

#[tokio::test]
async fn non_utf8_strings_are_closed() {
    let env = start().await;
    let placeholder = "ZZZZZZZZ";
    for (name, f) in [
        ("JoinGroup", frame(&join_request(placeholder, 10_000), 5, 3)),
        (
            "OffsetCommit",
            frame(
                &OffsetCommitRequest::default().with_group_id(group_id(placeholder)),
                8,
                3,
            ),
        ),
        (
            "CreateTopics",
            frame(
                &CreateTopicsRequest::default().with_topics(vec![CreatableTopic::default()
                    .with_name(topic_name(placeholder))
                    .with_num_partitions(1)
                    .with_replication_factor(1)]),
                7,
                3,
            ),
        ),
    ] {
        let (mut s, peer) = env.raw().await;
        let mut f = f.to_vec();
        let at = f
            .windows(placeholder.len())
            .position(|w| w == placeholder.as_bytes())
            .unwrap();
        f[at..at + 8].copy_from_slice(&[0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80, 0x00]);
        s.write_all(&f).await.unwrap();
        assert_closed(&mut s).await;
        assert_logged(&[&peer, "bad request", &format!("malformed {name}")]).await;
    }
    env.assert_still_serving().await;
}

// ------------------------------------------------------------------ group ids

/// Group ids a file system would not like: each is either refused with
/// INVALID_GROUP_ID or stored under a safe name inside `__consumer_offsets`
/// and read back intact. Nothing is ever written outside that folder.
#[tokio::test]
async fn hostile_group_ids_are_refused_or_stored_safely() {
    let env = start().await;
    let before = tree(env.root.path());
    let long_ok = "g".repeat(255);
    let long_slashes = "/".repeat(255);
    let too_long = "x".repeat(256);
    let way_too_long = "../".repeat(20_000);
    let cases: Vec<(&str, i16)> = vec![
        ("", 0), // legal for commits (Apache only refuses null)
        ("..", 0),
        (".", 0),
        ("../../../../etc/passwd", 0),
        ("a/b", 0),
        ("/absolute", 0),
        ("nul\0inside", 0),
        ("\0", 0),
        ("ctl\x01\x1b[31m\x7f\r\n", 0),
        ("%2E%2E", 0),
        ("~deadbeef", 0),
        ("__cluster", 0),
        ("ünïcödé-🦀", 0),
        (&long_ok, 0),
        (&long_slashes, 0),
        (&too_long, 24),
        (&way_too_long, 24),
    ];
    let mut c = env.client().await;
    for (i, (id, expected)) in cases.iter().enumerate() {
        let offset = 1000 + i as i64;
        let got = commit(&mut c, id, "t", 0, offset, None).await;
        assert_eq!(
            got,
            *expected,
            "commit for group id {:?}",
            &id[..id.len().min(40)]
        );
        if *expected == 0 {
            let f = fetch(&mut c, id, "t", 0).await;
            assert_eq!(f, (0, offset), "fetch for group id {id:?}");
        } else {
            assert_eq!(fetch(&mut c, id, "t", 0).await.0, 24);
        }
    }
    // JoinGroup refuses the empty and over-long ids outright.
    for id in ["", too_long.as_str()] {
        let r = c.send(&join_request(id, 10_000), 5).await.unwrap();
        assert_eq!(r.error_code, 24, "join with {:?}", &id[..id.len().min(10)]);
    }
    // Every new file is a direct child of __consumer_offsets.
    let offsets_dir = Path::new("data/__cluster/__consumer_offsets");
    for p in tree(env.root.path()).difference(&before) {
        let inside = p.parent() == Some(offsets_dir)
            || p == offsets_dir
            || p.starts_with("data/__cluster") && p.components().count() <= 3;
        assert!(inside, "file written outside the offsets folder: {p:?}");
        let name = p
            .file_name()
            .unwrap()
            .to_str()
            .expect("file names are ASCII");
        assert!(name.len() <= 255 && !name.starts_with('.'), "{name:?}");
    }
    env.assert_still_serving().await;
}

// ------------------------------------------------------------------ topic names

#[tokio::test]
async fn hostile_topic_names_are_refused() {
    let env = start().await;
    let before = tree(env.root.path());
    let long = "t".repeat(250);
    let bad: Vec<&str> = vec![
        "",
        ".",
        "..",
        "../escape",
        "a/b",
        "/abs",
        "nul\0",
        "ctl\x01",
        "sp ace",
        "ü",
        &long,
    ];
    let mut c = env.client().await;
    let req = CreateTopicsRequest::default()
        .with_timeout_ms(5_000)
        .with_topics(
            bad.iter()
                .map(|n| {
                    CreatableTopic::default()
                        .with_name(topic_name(n))
                        .with_num_partitions(1)
                        .with_replication_factor(1)
                })
                .collect(),
        );
    let resp = c.send(&req, 7).await.unwrap();
    assert_eq!(resp.topics.len(), bad.len());
    for t in &resp.topics {
        assert_eq!(
            t.error_code, 17,
            "INVALID_TOPIC_EXCEPTION for {:?}",
            t.name.0
        );
        assert!(t.error_message.is_some());
    }
    // Metadata with auto-creation: refused per topic, never created.
    let md = c
        .send(
            &MetadataRequest::default()
                .with_allow_auto_topic_creation(true)
                .with_topics(Some(
                    bad.iter()
                        .filter(|n| !n.is_empty())
                        .map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n))))
                        .collect(),
                )),
            12,
        )
        .await
        .unwrap();
    for t in &md.topics {
        assert_eq!(t.error_code, 17, "metadata for {:?}", t.name);
    }
    // Produce to them: unknown topic, nothing written.
    let produce = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(1000)
        .with_topic_data(
            bad.iter()
                .map(|n| {
                    TopicProduceData::default()
                        .with_name(topic_name(n))
                        .with_partition_data(vec![PartitionProduceData::default().with_index(0)])
                })
                .collect(),
        );
    let pr = c.send(&produce, 9).await.unwrap();
    for t in &pr.responses {
        for p in &t.partition_responses {
            assert_ne!(p.error_code, 0, "produce to {:?}", t.name.0);
        }
    }
    // A hostile topic name inside a commit is data, not a path: no such
    // topic, so UNKNOWN_TOPIC_OR_PARTITION and nothing stored.
    assert_eq!(
        commit(&mut c, "topics-as-data", "../../x", 0, 5, None).await,
        3
    );
    assert_eq!(fetch(&mut c, "topics-as-data", "../../x", 0).await, (0, -1));
    let created: Vec<_> = tree(env.root.path())
        .difference(&before)
        .filter(|p| !p.starts_with("data/__cluster"))
        .cloned()
        .collect();
    assert!(created.is_empty(), "files outside __cluster: {created:?}");
    env.assert_still_serving().await;
}

// ------------------------------------------------------------------ group limits

#[tokio::test]
async fn session_timeouts_out_of_bounds_are_refused() {
    let env = start().await;
    let mut c = env.client().await;
    // Bounds are group.min/max.session.timeout.ms: 6 s and 30 min by default.
    for t in [-1, 0, 1, 5_999, 1_800_001, i32::MAX, i32::MIN] {
        let r = c.send(&join_request("timeouts", t), 5).await.unwrap();
        assert_eq!(r.error_code, 26, "INVALID_SESSION_TIMEOUT for {t}");
    }
    env.assert_still_serving().await;
}

#[tokio::test]
async fn offset_metadata_over_4096_bytes_is_refused() {
    let env = start().await;
    let mut c = env.client().await;
    assert_eq!(
        commit(&mut c, "meta", "t", 0, 1, Some("m".repeat(4096))).await,
        0
    );
    assert_eq!(
        commit(&mut c, "meta", "t", 0, 2, Some("m".repeat(4097))).await,
        12
    );
    assert_eq!(
        commit(&mut c, "meta", "t", 0, 3, Some("m".repeat(60_000))).await,
        12
    );
    // The refused commits changed nothing.
    assert_eq!(fetch(&mut c, "meta", "t", 0).await, (0, 1));
    env.assert_still_serving().await;
}

const MAX_MEMBERS: usize = 10_000;

/// 10,050 members join one group, each on its own connection (a
/// connection runs one request at a time, as Kafka's, so a JoinGroup
/// parked until the group forms holds its connection): exactly 10,000 get
/// in (group.max.size), the rest get GROUP_MAX_SIZE_REACHED, the leader's
/// answer lists all 10,000, and other clients are served meanwhile. The
/// broker runs in a process of its own: the two ends of 10,050
/// connections in one process would pass its open-file limit. The group
/// forms once no member joined for the initial rebalance delay (each join
/// extends it, up to the rebalance timeout), so every join counts in one
/// generation however long the connections take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_members_in_one_group() {
    let opts = kaas_testkit::ClusterOptions::new(env!("CARGO_BIN_EXE_kaas-broker"), 1)
        .serve_arg("--group-max-size", MAX_MEMBERS)
        .serve_arg("--group-initial-rebalance-delay-ms", 3_000)
        // The broker has 20,000 sockets to serve on a small machine: the
        // controller must not count it dead for a slow answer.
        .controller_arg("--failures-before-dead", 1_000);
    let cluster = kaas_testkit::ProcessCluster::start(None, opts)
        .await
        .expect("the broker starts");
    let addr = cluster.addr(0);
    KafkaClient::connect(&addr, WAIT)
        .await
        .unwrap()
        .create_topic("t", 1)
        .await
        .unwrap();
    // The broker coordinates once it follows the controller's first
    // assignment.
    let mut warm = KafkaClient::connect(&addr, WAIT).await.unwrap();
    kaas_testkit::retry(
        WAIT,
        Duration::from_millis(50),
        "a first commit",
        async || match commit(&mut warm, "warm", "t", 0, 1, None).await {
            0 => Ok(()),
            code => Err(format!("error {code}; {}", cluster.logs())),
        },
    )
    .await;
    let started = Instant::now();
    let joins = MAX_MEMBERS + 50;
    // Connections opened a few hundred at a time: a burst of ten thousand
    // overflows the listen backlog, and the dropped SYNs are retried only
    // seconds later.
    let connecting = Arc::new(tokio::sync::Semaphore::new(200));
    let mut tasks = Vec::new();
    for i in 0..joins {
        let addr = addr.clone();
        let connecting = connecting.clone();
        tasks.push(tokio::spawn(async move {
            let permit = connecting.acquire_owned().await.unwrap();
            let mut s = TcpStream::connect(&addr).await.unwrap();
            // v3: no MEMBER_ID_REQUIRED round trip.
            let join = join_request("crowd", 30_000).with_rebalance_timeout_ms(120_000);
            s.write_all(&frame(&join, 3, i as i32)).await.unwrap();
            drop(permit);
            let mut len = [0u8; 4];
            s.read_exact(&mut len).await.unwrap();
            let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
            s.read_exact(&mut body).await.unwrap();
            let mut body = Bytes::from(body);
            let _header = ResponseHeader::decode(&mut body, 0).unwrap();
            let r = JoinGroupResponse::decode(&mut body, 3).unwrap();
            (r.error_code, r.generation_id, r.members.len())
        }));
    }
    // Meanwhile another client is served promptly.
    let mut other = KafkaClient::connect(&addr, WAIT).await.unwrap();
    let t = Instant::now();
    assert_eq!(commit(&mut other, "bystander", "t", 0, 1, None).await, 0);
    assert!(t.elapsed() < Duration::from_secs(2));
    let mut joined = 0;
    let mut refused = 0;
    let mut leader_saw = 0;
    for t in tasks {
        let (error, generation, members) = t.await.unwrap();
        match error {
            0 => {
                joined += 1;
                assert!(generation >= 1);
                leader_saw = leader_saw.max(members);
            }
            81 => refused += 1,
            e => panic!("unexpected JoinGroup error {e}"),
        }
    }
    eprintln!(
        "10k members: {joined} joined, {refused} refused in {:?}",
        started.elapsed()
    );
    assert_eq!(joined, MAX_MEMBERS);
    assert_eq!(refused, joins - MAX_MEMBERS);
    assert_eq!(
        leader_saw, MAX_MEMBERS,
        "the leader's answer lists every member"
    );
    // Still whole: a new client commits and reads back.
    let mut fresh = KafkaClient::connect(&addr, WAIT).await.unwrap();
    assert_eq!(
        commit(&mut fresh, "healthy-group", "t", 0, 42, None).await,
        0
    );
    assert_eq!(fetch(&mut fresh, "healthy-group", "t", 0).await, (0, 42));
    assert!(cluster.exited().is_empty(), "{:?}", cluster.exited());
    cluster.shutdown();
}

// ------------------------------------------------------------------ SASL

const ADMIN_PASSWORD: &str = "admin-secret";

fn admin(mechanism: &str, password: &str) -> kaas_client::SaslCredentials {
    kaas_client::SaslCredentials {
        mechanism: mechanism.into(),
        user: "admin".into(),
        password: password.into(),
    }
}

/// One broker serving SASL_PLAINTEXT, `User:admin` its super user.
async fn start_sasl() -> (LocalCluster, String, tempfile::TempDir) {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut config = LocalClusterConfig::new(1, data_dir(root.path()));
    config.base_port = 0;
    config.sasl_admin_password = Some(ADMIN_PASSWORD.into());
    let cluster = LocalCluster::start(config).await.unwrap();
    let addr = cluster.addrs[0].to_string();
    (cluster, addr, root)
}

/// The admin logs in and is served.
async fn assert_admin_served(addr: &str) {
    let mut c = KafkaClient::connect(addr, WAIT).await.unwrap();
    c.authenticate(&admin("SCRAM-SHA-512", ADMIN_PASSWORD))
        .await
        .expect("the admin logs in");
    let md = c
        .send(&MetadataRequest::default().with_topics(None), 12)
        .await
        .expect("Metadata once authenticated");
    assert_eq!(md.brokers.len(), 1);
}

fn sasl_authenticate(bytes: &'static [u8]) -> SaslAuthenticateRequest {
    SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(bytes))
}

fn sasl_handshake(mechanism: &'static str) -> SaslHandshakeRequest {
    SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism))
}

/// Out-of-turn SASL requests, an unknown mechanism, malformed PLAIN and
/// SCRAM messages: Apache's error, then the connection closed; a request
/// before authentication larger than `sasl.server.max.receive.size` or a
/// truncated one: closed at once. The admin is served throughout.
#[tokio::test]
async fn malformed_sasl_exchanges_are_refused_and_closed() {
    let (cluster, addr, _root) = start_sasl().await;

    // SaslAuthenticate before SaslHandshake.
    let mut c = KafkaClient::connect(&addr, WAIT).await.unwrap();
    let r = c.send(&sasl_authenticate(b"\0admin\0x"), 2).await.unwrap();
    assert_eq!(r.error_code, 34, "ILLEGAL_SASL_STATE");
    assert!(c.is_closed(WAIT).await);

    // A mechanism kaas does not serve: the list of those it does.
    let mut c = KafkaClient::connect(&addr, WAIT).await.unwrap();
    let r = c.send(&sasl_handshake("GSSAPI"), 1).await.unwrap();
    assert_eq!(r.error_code, 33, "UNSUPPORTED_SASL_MECHANISM");
    assert_eq!(r.mechanisms.len(), 3);
    assert!(c.is_closed(WAIT).await);

    // PLAIN without its NUL separators; SCRAM bytes that are not UTF-8,
    // and that are no SCRAM message.
    for (mechanism, bytes) in [
        ("PLAIN", &b"admin admin-secret"[..]),
        ("SCRAM-SHA-256", &b"\xff\xfe\x00"[..]),
        ("SCRAM-SHA-512", &b"not a scram message"[..]),
    ] {
        let mut c = KafkaClient::connect(&addr, WAIT).await.unwrap();
        let r = c
            .send(
                &SaslHandshakeRequest::default()
                    .with_mechanism(StrBytes::from_static_str(mechanism)),
                1,
            )
            .await
            .unwrap();
        assert_eq!(r.error_code, 0);
        let r = c
            .send(
                &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(bytes)),
                2,
            )
            .await
            .unwrap();
        assert_eq!(r.error_code, 58, "{mechanism}: SASL_AUTHENTICATION_FAILED");
        assert!(c.is_closed(WAIT).await, "{mechanism}");
    }

    // 600 KiB of auth bytes before authentication: closed without reading
    // them (sasl.server.max.receive.size, 512 KiB).
    let (mut s, peer) = {
        let s = TcpStream::connect(&addr).await.unwrap();
        let peer = s.local_addr().unwrap().to_string();
        (s, peer)
    };
    s.write_all(&frame(&sasl_handshake("PLAIN"), 1, 1))
        .await
        .unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.unwrap();
    let mut answer = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut answer).await.unwrap();
    let huge = SaslAuthenticateRequest::default().with_auth_bytes(vec![b'x'; 600 << 10].into());
    let _ = s.write_all(&frame(&huge, 2, 2)).await;
    assert_closed(&mut s).await;
    assert_logged(&[&peer, "exceeds the maximum of 524288"]).await;

    // A SaslHandshake cut short: closed.
    let (mut s, peer) = {
        let s = TcpStream::connect(&addr).await.unwrap();
        let peer = s.local_addr().unwrap().to_string();
        (s, peer)
    };
    let mut f = frame(&sasl_handshake("SCRAM-SHA-512"), 1, 1);
    f.truncate(f.len() - 5);
    s.write_all(&relength(f)).await.unwrap();
    assert_closed(&mut s).await;
    assert_logged(&[&peer, "bad request"]).await;

    assert_admin_served(&addr).await;
    cluster.shutdown().await;
}

/// A thousand failed logins from one client address, fifty at a time:
/// each refused with SASL_AUTHENTICATION_FAILED no sooner than
/// `connection.failed.authentication.delay.ms` (100 ms), counted and logged
/// with the client's address and the user; the admin is served while they
/// go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_failed_logins_are_delayed_counted_and_logged() {
    const ATTEMPTS: usize = 1000;
    const AT_ONCE: usize = 50;
    let (cluster, addr, _root) = start_sasl().await;
    let before = cluster.brokers[0].metrics.failed_authentications.get();
    let storm = {
        let addr = addr.clone();
        tokio::spawn(async move {
            let mut lanes = tokio::task::JoinSet::new();
            for lane in 0..AT_ONCE {
                let addr = addr.clone();
                lanes.spawn(async move {
                    for attempt in 0..ATTEMPTS / AT_ONCE {
                        let mut c = KafkaClient::connect(&addr, WAIT).await.unwrap();
                        let mechanism = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"][attempt % 3];
                        let started = Instant::now();
                        let err = c
                            .authenticate(&admin(mechanism, &format!("guess-{lane}-{attempt}")))
                            .await
                            .expect_err("a wrong password");
                        assert!(format!("{err:#}").contains("error 58"), "{err:#}");
                        assert!(
                            started.elapsed() >= Duration::from_millis(100),
                            "answered after {:?}, before the delay",
                            started.elapsed()
                        );
                    }
                });
            }
            while let Some(lane) = lanes.join_next().await {
                lane.unwrap();
            }
        })
    };
    // Twenty refusals in a row on each lane take two seconds at least: the
    // admin's login lands in the middle of them.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_admin_served(&addr).await;
    assert!(
        !storm.is_finished(),
        "the failed logins were still going on"
    );
    storm.await.unwrap();
    let failed = cluster.brokers[0].metrics.failed_authentications.get() - before;
    assert_eq!(failed, ATTEMPTS as u64, "kaas_failed_authentications_total");
    assert_logged(&[
        "SASL authentication failed",
        "peer=127.0.0.1:",
        "invalid credentials for user \"admin\"",
    ])
    .await;
    assert_admin_served(&addr).await;
    cluster.shutdown().await;
}

// ------------------------------------------------------------------ decompression

/// A zigzag varint, as records write their lengths.
fn varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// A v2 batch of one record whose value is `value_len` zero bytes, its
/// records compressed with zstd without ever holding them: a few KiB that
/// stand for `value_len` bytes.
fn zstd_bomb(value_len: u64) -> Bytes {
    use std::io::Read;
    let mut body = Vec::new();
    body.push(0); // attributes
    varint(&mut body, 0); // timestamp delta
    varint(&mut body, 0); // offset delta
    varint(&mut body, -1); // no key
    varint(&mut body, value_len as i64);
    let mut head = Vec::new();
    varint(&mut head, body.len() as i64 + value_len as i64 + 1);
    head.extend_from_slice(&body);
    // (tokio's AsyncReadExt has the same method names.)
    let zeros = Read::take(std::io::repeat(0), value_len);
    let no_headers = [0u8];
    let records = Read::chain(Read::chain(&head[..], zeros), &no_headers[..]);
    let mut section = Vec::new();
    zstd::stream::read::Encoder::new(records, 1)
        .unwrap()
        .read_to_end(&mut section)
        .unwrap();
    let mut after_crc = Vec::new();
    after_crc.extend_from_slice(&4i16.to_be_bytes()); // zstd
    after_crc.extend_from_slice(&0i32.to_be_bytes()); // last offset delta
    after_crc.extend_from_slice(&0i64.to_be_bytes()); // base timestamp
    after_crc.extend_from_slice(&0i64.to_be_bytes()); // max timestamp
    after_crc.extend_from_slice(&(-1i64).to_be_bytes()); // producer id
    after_crc.extend_from_slice(&(-1i16).to_be_bytes()); // producer epoch
    after_crc.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    after_crc.extend_from_slice(&1i32.to_be_bytes()); // one record
    after_crc.extend_from_slice(&section);
    let mut batch = Vec::new();
    batch.extend_from_slice(&0i64.to_be_bytes()); // base offset
    batch.extend_from_slice(&((4 + 1 + 4 + after_crc.len()) as i32).to_be_bytes());
    batch.extend_from_slice(&0i32.to_be_bytes()); // leader epoch
    batch.push(2); // magic
    batch.extend_from_slice(&crc32c::crc32c(&after_crc).to_be_bytes());
    batch.extend_from_slice(&after_crc);
    Bytes::from(batch)
}

/// A decompression bomb: a batch of a few KiB whose records stand for
/// 1 GiB. It is refused MESSAGE_TOO_LARGE once the decompressed bytes pass
/// 100 MiB, without taking the rest; nothing is appended, and the broker
/// serves on.
#[tokio::test]
async fn a_decompression_bomb_is_refused_before_it_takes_the_memory() {
    let env = start().await;
    let mut c = env.client().await;
    let created = c
        .send(
            &CreateTopicsRequest::default().with_topics(vec![CreatableTopic::default()
                .with_name(topic_name("bombed"))
                .with_num_partitions(1)
                .with_replication_factor(1)]),
            7,
        )
        .await
        .unwrap();
    assert_eq!(created.topics[0].error_code, 0);
    let bomb = zstd_bomb(1 << 30);
    assert!(bomb.len() < MAX_FRAME, "{} bytes", bomb.len());
    let produce = |records: Bytes| {
        ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(topic_name("bombed"))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(records))])])
    };
    let r = c.send(&produce(bomb), 9).await.unwrap();
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 10, "MESSAGE_TOO_LARGE: {p:?}");
    let message = p.error_message.as_deref().map(|m| m.to_string());
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("decompressed")),
        "{message:?}"
    );
    // The same shape within the bound is a record like any other, at
    // offset 0: the refused one took no offset.
    let r = c.send(&produce(zstd_bomb(1 << 20)), 9).await.unwrap();
    let p = &r.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset), (0, 0), "{p:?}");
    env.assert_still_serving().await;
}
