//! Harness for the Kubernetes end-to-end tests: a real API server from
//! `scripts/k8s-testenv`, the operator in-process, and real
//! `kaas-broker serve` processes on the loopback "pod IPs" that
//! `mark-pods-ready` hands out.
//!
//! The tests that need the API server are `#[ignore]`d with a reason and
//! run by `scripts/test-k8s`, which starts the server and sets:
//!
//! - `KUBECONFIG`: the server's admin kubeconfig;
//! - `KAAS_K8S_DIR`: its state folder (for `mark-pods-ready`);
//! - `KAAS_K8S_TESTENV` (optional): the k8s-testenv folder, by default
//!   the repository's own `scripts/k8s-testenv`;
//! - `KAAS_BROKER_BIN` (optional): the broker binary, by default
//!   `kaas-broker` beside this test binary's `deps/` folder.
//!
//! Why a binary lookup: `env!("CARGO_BIN_EXE_kaas-broker")` exists only in
//! the broker package's own tests, and these tests also need the operator.
//! `cargo test --workspace` builds the broker binary before running any
//! test; `scripts/test-k8s` builds it explicitly first. A missing binary
//! fails the test with that instruction, never silently.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kaas_client::KafkaClient;
use kaas_operator::context::{kafka_prober, ApiVersions, Context, Settings};
use kaas_shared::configmap;
use kaas_shared::Assignment;
use kafka_protocol::messages::{FindCoordinatorRequest, ListGroupsRequest};
use kafka_protocol::protocol::StrBytes;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `kaas-broker` binary. See the module docs.
pub fn broker_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("KAAS_BROKER_BIN") {
        return PathBuf::from(p);
    }
    // target/<profile>/deps/<this test> → target/<profile>/kaas-broker
    let exe = std::env::current_exe().expect("current exe");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("kaas-broker"))
        .expect("a test binary lives in target/<profile>/deps");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p kaas-broker` first (scripts/test-k8s does), or set KAAS_BROKER_BIN",
        bin.display()
    );
    bin
}

/// The API server from k8s-testenv.
pub struct TestEnv {
    pub client: Client,
    /// k8s-testenv's state folder.
    pub dir: PathBuf,
    /// k8s-testenv's scripts.
    pub tools: PathBuf,
}

impl TestEnv {
    pub async fn get() -> TestEnv {
        let dir = std::env::var_os("KAAS_K8S_DIR")
            .map(PathBuf::from)
            .expect("KAAS_K8S_DIR is unset: run these tests through scripts/test-k8s");
        let tools = std::env::var_os("KAAS_K8S_TESTENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("scripts/k8s-testenv"));
        let client = Client::try_default()
            .await
            .expect("KUBECONFIG must point at the k8s-testenv API server");
        TestEnv { client, dir, tools }
    }

    /// A fresh namespace for one test, so tests can share the server.
    pub async fn namespace(&self, prefix: &str) -> String {
        let name = format!(
            "{prefix}-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let ns = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
        name
    }

    /// Installs the committed CRDs (`crds/`) and waits until the
    /// server serves them. Created, not applied: see docs/kubernetes.md on
    /// why servers before 1.25 want no server-side apply of CRDs with
    /// newer schema fields. Idempotent.
    pub async fn install_crd(&self) {
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        for (file, name) in [
            ("kaascluster.yaml", "kaasclusters.kaas.dev"),
            ("kaasuser.yaml", "kaasusers.kaas.dev"),
        ] {
            let text = std::fs::read_to_string(repo_root().join("crds").join(file))
                .unwrap_or_else(|e| panic!("crds/{file}: {e}"));
            let crd: CustomResourceDefinition = serde_yaml::from_str(&text).expect("CRD yaml");
            match api.create(&PostParams::default(), &crd).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => panic!("cannot create the CRD {name}: {e}"),
            }
            tokio::time::timeout(
                Duration::from_secs(30),
                await_condition(api.clone(), name, conditions::is_crd_established()),
            )
            .await
            .expect("CRD established in time")
            .expect("watch the CRD");
        }
    }

    /// Runs `mark-pods-ready` until `min_ready` pods of `selector` in `ns`
    /// are Ready; returns `(pod, ip)` for the pods it changed.
    pub async fn mark_pods_ready(
        &self,
        ns: &str,
        selector: &str,
        min_ready: usize,
    ) -> Vec<(String, String)> {
        let script = self.tools.join("mark-pods-ready");
        let dir = self.dir.clone();
        let (ns, selector) = (ns.to_owned(), selector.to_owned());
        let out = tokio::task::spawn_blocking(move || {
            Command::new("bash")
                .arg(&script)
                .arg(&dir)
                .args([&ns, &selector, "127.0.0.", &min_ready.to_string()])
                .output()
                .expect("run mark-pods-ready")
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "mark-pods-ready failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (pod, ip) = l.split_once(' ')?;
                Some((pod.rsplit('/').next()?.to_owned(), ip.trim().to_owned()))
            })
            .collect()
    }

    /// Sets a pod's Ready condition, as a kubelet would on a failed or
    /// passing readiness probe.
    pub async fn set_pod_ready(&self, ns: &str, pod: &str, ready: bool) {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let status = if ready { "True" } else { "False" };
        let patch = serde_json::json!({"status": {"conditions": [
            {"type": "Ready", "status": status},
            {"type": "ContainersReady", "status": status},
        ]}});
        api.patch_status(pod, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .expect("patch pod status");
    }

    /// The pod's IP.
    pub async fn pod_ip(&self, ns: &str, pod: &str) -> String {
        let p = Api::<Pod>::namespaced(self.client.clone(), ns)
            .get(pod)
            .await
            .expect("get pod");
        p.status.and_then(|s| s.pod_ip).expect("pod has an IP")
    }

    /// The assignment published in `ns/name`, if any.
    pub async fn assignment(&self, ns: &str, name: &str) -> Option<Assignment> {
        let cm = Api::<ConfigMap>::namespaced(self.client.clone(), ns)
            .get_opt(name)
            .await
            .expect("get configmap")?;
        Some(configmap::decode(&cm).expect("the published assignment decodes"))
    }

    /// Polls the published assignment until `check` holds.
    pub async fn await_assignment(
        &self,
        ns: &str,
        name: &str,
        within: Duration,
        what: &str,
        check: impl Fn(&Assignment) -> bool,
    ) -> Assignment {
        let deadline = Instant::now() + within;
        loop {
            if let Some(a) = self.assignment(ns, name).await {
                if check(&a) {
                    return a;
                }
                assert!(
                    Instant::now() < deadline,
                    "timed out waiting for: {what}; last: {a:?}"
                );
            } else {
                assert!(
                    Instant::now() < deadline,
                    "timed out waiting for: {what}; no ConfigMap"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The operator for one namespace, in-process; aborted on drop.
pub struct Operator(tokio::task::JoinHandle<()>);

impl Operator {
    pub async fn start(client: &Client, ns: &str) -> Operator {
        let versions = ApiVersions::discover(client).await.expect("discovery");
        let ctx = Arc::new(Context::new(
            client.clone(),
            versions,
            kafka_prober(Duration::from_secs(1)),
            Settings {
                // Fresh active-group lists without waiting long.
                resync: Duration::from_millis(500),
                max_backoff: Duration::from_secs(5),
            },
        ));
        Operator(tokio::spawn(kaas_operator::run::run(
            client.clone(),
            Some(ns.to_owned()),
            ctx,
        )))
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Where a broker process takes its assignment from.
#[derive(Clone, Debug)]
pub enum Source {
    File,
    ConfigMap { namespace: String, name: String },
}

/// One `kaas-broker serve` process; killed on drop. Logs to `log`.
pub struct BrokerProc {
    pub id: i32,
    pub addr: String,
    pub log: PathBuf,
    child: Child,
}

impl BrokerProc {
    pub fn spawn(
        id: i32,
        ip: &str,
        port: u16,
        data: &Path,
        logs: &Path,
        source: &Source,
    ) -> BrokerProc {
        Self::spawn_with_kubeconfig(id, ip, port, data, logs, source, None)
    }

    /// [`BrokerProc::spawn`] with `KUBECONFIG` pointing at `kubeconfig`
    /// (a file), as a pod would use its own service account.
    pub fn spawn_with_kubeconfig(
        id: i32,
        ip: &str,
        port: u16,
        data: &Path,
        logs: &Path,
        source: &Source,
        kubeconfig: Option<&Path>,
    ) -> BrokerProc {
        Self::spawn_with_args(id, ip, port, data, logs, source, kubeconfig, &[])
    }

    /// [`BrokerProc::spawn_with_kubeconfig`] with more `serve` flags (the
    /// ones the operator's pods get: `--sasl`, say).
    #[allow(clippy::too_many_arguments)]
    pub fn spawn_with_args(
        id: i32,
        ip: &str,
        port: u16,
        data: &Path,
        logs: &Path,
        source: &Source,
        kubeconfig: Option<&Path>,
        args: &[&str],
    ) -> BrokerProc {
        let log = logs.join(format!("broker-{id}.log"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("log file");
        let addr = format!("{ip}:{port}");
        let mut cmd = Command::new(broker_bin());
        cmd.args(["serve", "--id", &id.to_string(), "--listen", &addr])
            .args(["--group-initial-rebalance-delay-ms", "100", "--data"])
            .arg(data)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(file);
        if let Some(k) = kubeconfig {
            cmd.env("KUBECONFIG", k);
        }
        if let Source::ConfigMap { namespace, name } = source {
            cmd.args([
                "--assignment-configmap",
                name,
                "--assignment-namespace",
                namespace,
            ]);
        }
        let child = cmd.spawn().expect("spawn kaas-broker");
        BrokerProc {
            id,
            addr,
            log,
            child,
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the broker accepts connections: a process just spawned
    /// binds its port a moment later, and a pod's readiness (set by the
    /// test) says nothing about it.
    pub async fn wait_listening(&self, within: Duration) {
        let what = format!("broker {} listening on {}", self.id, self.addr);
        eventually(within, &what, || async {
            tokio::net::TcpStream::connect(&self.addr).await.is_ok()
        })
        .await;
    }
}

impl Drop for BrokerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free TCP port (on 127.0.0.1; the tests use it on other loopback IPs
/// too, where it is free as well unless something binds 0.0.0.0).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The coordinator broker `addr` names for `group`, if it answers one.
pub async fn coordinator(addr: &str, group: &str) -> Option<i32> {
    coordinator_as(addr, group, &kaas_client::Security::default()).await
}

/// [`coordinator`], connecting as `security`.
pub async fn coordinator_as(
    addr: &str,
    group: &str,
    security: &kaas_client::Security,
) -> Option<i32> {
    let mut c = KafkaClient::connect_as(addr, Duration::from_secs(1), security)
        .await
        .ok()?;
    let req = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(group.to_owned()))
        .with_key_type(0);
    let resp = c.send(&req, 3).await.ok()?;
    (resp.error_code == 0).then_some(resp.node_id.0)
}

/// The groups broker `addr` lists (it lists only groups it coordinates).
pub async fn listed_groups(addr: &str) -> Option<Vec<String>> {
    let mut c = KafkaClient::connect(addr, Duration::from_secs(1))
        .await
        .ok()?;
    let resp = c.send(&ListGroupsRequest::default(), 3).await.ok()?;
    (resp.error_code == 0).then(|| {
        resp.groups
            .into_iter()
            .map(|g| g.group_id.0.to_string())
            .collect()
    })
}

/// Polls an async check until it holds or `within` passes.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Logs to stderr for the test's output (shown on failure).
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube=warn")),
        )
        .with_test_writer()
        .try_init();
}

/// librdkafka settings every test client shares.
pub fn client_config(bootstrap: &str) -> rdkafka::ClientConfig {
    let mut c = rdkafka::ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("topic.metadata.refresh.interval.ms", "1000");
    c
}

pub async fn create_topic(bootstrap: &str, name: &str, partitions: i32) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let admin: AdminClient<rdkafka::client::DefaultClientContext> =
        client_config(bootstrap).create().expect("admin client");
    let results = admin
        .create_topics(
            &[NewTopic::new(name, partitions, TopicReplication::Fixed(1))],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .expect("create_topics");
    for r in results {
        r.expect("topic created");
    }
}

/// Produces `payloads` to partition 0 of `topic`, each acknowledged.
pub async fn produce(bootstrap: &str, topic: &str, payloads: impl IntoIterator<Item = String>) {
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let producer: FutureProducer = client_config(bootstrap)
        .set("acks", "all")
        .set("message.timeout.ms", "30000")
        .create()
        .expect("producer");
    for p in payloads {
        producer
            .send(
                FutureRecord::<(), _>::to(topic).partition(0).payload(&p),
                Duration::from_secs(30),
            )
            .await
            .map_err(|(e, _)| e)
            .expect("produced");
    }
}

/// One librdkafka group member in its own thread: consumes `topic` and
/// commits each message synchronously, until stopped.
pub struct GroupConsumer {
    received: Arc<std::sync::Mutex<Vec<String>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl GroupConsumer {
    pub fn start(bootstrap: &str, group: &str, topic: &str) -> GroupConsumer {
        use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
        use rdkafka::Message;
        let consumer: BaseConsumer = client_config(bootstrap)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("session.timeout.ms", "10000")
            .set("heartbeat.interval.ms", "500")
            .create()
            .expect("consumer");
        consumer.subscribe(&[topic]).expect("subscribe");
        let received = Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (r, s) = (received.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) else {
                    continue;
                };
                let payload = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
                // A commit racing a coordinator move may fail once; the
                // client finds the new coordinator and the retry lands.
                let deadline = Instant::now() + Duration::from_secs(30);
                while let Err(e) = consumer.commit_message(&m, CommitMode::Sync) {
                    assert!(
                        Instant::now() < deadline,
                        "commit of {payload} kept failing: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
                r.lock().unwrap().push(payload);
            }
            // Dropping the consumer leaves the group.
        });
        GroupConsumer {
            received,
            stop,
            thread: Some(thread),
        }
    }

    /// Payloads consumed and committed so far.
    pub fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }

    /// Stops polling and leaves the group.
    pub fn stop(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("consumer thread");
        }
    }
}

impl Drop for GroupConsumer {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// The committed offset of partition 0 of `topic` for `group`.
pub fn committed_offset(bootstrap: &str, group: &str, topic: &str) -> Option<i64> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition(topic, 0);
    let committed = consumer
        .committed_offsets(tpl, Duration::from_secs(10))
        .ok()?;
    match committed.find_partition(topic, 0)?.offset() {
        rdkafka::Offset::Offset(o) => Some(o),
        _ => None,
    }
}

impl TestEnv {
    /// A kubeconfig (YAML) for the same server, authenticating as
    /// `ns/service_account` with its token: what a pod running under that
    /// account would be allowed to do. 1.20's token controller creates the
    /// token Secret shortly after the account; this waits for it.
    pub async fn kubeconfig_for(&self, ns: &str, service_account: &str) -> String {
        use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
        let path = std::env::var("KUBECONFIG").expect("KUBECONFIG");
        let admin = kube::config::Kubeconfig::read_from(&path).expect("admin kubeconfig");
        let cluster = admin.clusters[0].cluster.clone().expect("a cluster");
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client.clone(), ns);
        let deadline = Instant::now() + Duration::from_secs(30);
        let secret = loop {
            let sa = accounts
                .get_opt(service_account)
                .await
                .expect("get ServiceAccount");
            if let Some(name) = sa
                .and_then(|sa| sa.secrets)
                .and_then(|s| s.into_iter().next())
                .and_then(|r| r.name)
            {
                break name;
            }
            assert!(
                Instant::now() < deadline,
                "no token for {ns}/{service_account}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let secret = Api::<Secret>::namespaced(self.client.clone(), ns)
            .get(&secret)
            .await
            .expect("token Secret");
        let token = secret.data.expect("token data")["token"].0.clone();
        let token = String::from_utf8(token).expect("a text token");
        format!(
            "apiVersion: v1\nkind: Config\n\
             clusters: [{{name: k, cluster: {{server: \"{}\", certificate-authority-data: \"{}\"}}}}]\n\
             users: [{{name: u, user: {{token: \"{token}\"}}}}]\n\
             contexts: [{{name: c, context: {{cluster: k, user: u, namespace: \"{ns}\"}}}}]\n\
             current-context: c\n",
            cluster.server.expect("server"),
            cluster.certificate_authority_data.expect("CA data"),
        )
    }

    /// A client from a kubeconfig made by [`TestEnv::kubeconfig_for`].
    pub async fn client_from(kubeconfig: &str) -> Client {
        let kc = kube::config::Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("config");
        Client::try_from(config).expect("client")
    }

    /// Creates every object of a multi-document YAML (e.g. `helm template`
    /// output), resolving each kind through discovery.
    pub async fn create_all(&self, yaml: &str) -> Vec<String> {
        use k8s_openapi::serde::Deserialize;
        let mut created = Vec::new();
        for doc in serde_yaml::Deserializer::from_str(yaml) {
            let value = serde_json::Value::deserialize(doc).expect("a YAML document");
            if value.is_null() {
                continue;
            }
            let obj: kube::api::DynamicObject = serde_json::from_value(value).expect("an object");
            let types = obj.types.clone().expect("apiVersion and kind");
            let gvk = kube::api::GroupVersionKind::try_from(&types).expect("a GVK");
            let (ar, caps) = kube::discovery::pinned_kind(&self.client, &gvk)
                .await
                .expect("a served kind");
            let api: Api<kube::api::DynamicObject> = match caps.scope {
                kube::discovery::Scope::Namespaced => Api::namespaced_with(
                    self.client.clone(),
                    obj.metadata.namespace.as_deref().unwrap_or("default"),
                    &ar,
                ),
                kube::discovery::Scope::Cluster => Api::all_with(self.client.clone(), &ar),
            };
            api.create(&PostParams::default(), &obj)
                .await
                .unwrap_or_else(|e| panic!("create {} {:?}: {e}", gvk.kind, obj.metadata.name));
            created.push(format!(
                "{}/{}",
                gvk.kind,
                obj.metadata.name.unwrap_or_default()
            ));
        }
        created
    }
}
