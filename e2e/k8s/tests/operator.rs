//! The operator against a real API server (k8s-testenv, Kubernetes 1.20),
//! with real `kaas-broker serve` processes standing in for the broker
//! containers: each listens on the loopback IP `mark-pods-ready` gave its
//! pod and follows the assignment ConfigMap through the API.
//!
//! Run by `scripts/test-k8s` (they are `#[ignore]`d otherwise).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kaas_e2e_k8s::{
    committed_offset, coordinator, create_topic, eventually, free_port, produce, BrokerProc,
    GroupConsumer, Operator, Source, TestEnv,
};
use kaas_operator::status::{self, ASSIGNMENT_PUBLISHED, DEGRADED, PROGRESSING, READY};
use kaas_operator::{KaasCluster, KaasClusterStatus};
use kaas_shared::{route, Assignment, BrokerState, Routing};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::Api;

const WAIT: Duration = Duration::from_secs(60);
const SELECTOR: &str = "app.kubernetes.io/name=kaas";

fn cluster(name: &str, replicas: i32, port: u16) -> KaasCluster {
    let spec = serde_json::from_value(serde_json::json!({
        "replicas": replicas,
        "image": "kaas:e2e",
        // The test's broker processes listen on the pods' loopback IPs.
        "listener": {"port": port, "advertise": "podIP"},
        "storage": {"size": "1Gi"},
        "broker": {"groupInitialRebalanceDelayMs": 100},
    }))
    .expect("spec");
    KaasCluster::new(name, spec)
}

/// Waits until the cluster's status satisfies `check`.
async fn await_status(
    api: &Api<KaasCluster>,
    name: &str,
    what: &str,
    check: impl Fn(&KaasClusterStatus) -> bool,
) -> KaasClusterStatus {
    let found = tokio::time::timeout(
        WAIT,
        await_condition(api.clone(), name, move |kc: Option<&KaasCluster>| {
            kc.and_then(|k| k.status.as_ref()).is_some_and(&check)
        }),
    )
    .await;
    let current = api.get_status(name).await.ok().and_then(|k| k.status);
    let kc = found
        .unwrap_or_else(|_| panic!("timed out waiting for: {what}; status: {current:#?}"))
        .expect("watch the KaasCluster")
        .expect("the KaasCluster exists");
    kc.status.expect("status")
}

fn is(status: &KaasClusterStatus, type_: &str, value: &str) -> bool {
    status::condition(status, type_).is_some_and(|c| c.status == value)
}

/// A started cluster: pods marked Ready, one broker process per pod.
struct Running {
    brokers: BTreeMap<i32, BrokerProc>,
    _dir: tempfile::TempDir,
}

impl Running {
    fn bootstrap(&self) -> String {
        self.brokers
            .values()
            .map(|b| b.addr.clone())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Marks `n` pods Ready and starts a broker for each newly marked pod.
async fn start_brokers(
    env: &TestEnv,
    ns: &str,
    name: &str,
    port: u16,
    n: usize,
    running: &mut Running,
    data: &Path,
) {
    for (pod, ip) in env.mark_pods_ready(ns, SELECTOR, n).await {
        let id: i32 = pod.rsplit('-').next().unwrap().parse().unwrap();
        let logs = running._dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let source = Source::ConfigMap {
            namespace: ns.to_owned(),
            name: format!("{name}-assignment"),
        };
        let broker = BrokerProc::spawn(id, &ip, port, data, &logs, &source);
        broker.wait_listening(WAIT).await;
        running.brokers.insert(id, broker);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the k8s-testenv API server: run scripts/test-k8s"]
async fn an_invalid_spec_is_refused_with_a_readable_message() {
    let env = TestEnv::get().await;
    env.install_crd().await;
    let ns = env.namespace("invalid").await;
    // Untyped: the typed spec could not even hold these values.
    let ar = kube::api::ApiResource::erase::<KaasCluster>(&());
    let raw: Api<kube::api::DynamicObject> = Api::namespaced_with(env.client.clone(), &ns, &ar);
    let api: Api<KaasCluster> = Api::namespaced(env.client.clone(), &ns);
    let bad: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "kaas.dev/v1alpha1",
        "kind": "KaasCluster",
        "metadata": {"name": "bad"},
        "spec": {
            "replicas": 0,
            "image": "kaas:e2e",
            "listener": {"port": 70000, "advertise": "hostname"},
            "storage": {"size": "lots"},
        },
    }))
    .unwrap();
    let err = raw
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("refused");
    let kube::Error::Api(status) = err else {
        panic!("expected an API error, got {err}");
    };
    assert_eq!(status.code, 422, "{status:?}");
    for expected in [
        "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
        "spec.listener.port: Invalid value: 70000: spec.listener.port in body should be less than or equal to 65535",
        "spec.listener.advertise: Unsupported value: \"hostname\": supported values: \"dns\", \"podIP\"",
        "spec.storage.size: Invalid value: \"lots\"",
    ] {
        assert!(status.message.contains(expected), "{expected:?} not in: {}", status.message);
    }
    // Both storage choices at once is refused too.
    let mut both = cluster("both", 1, 9092);
    both.spec.storage.existing_claim = Some("shared".into());
    let err = api
        .create(&PostParams::default(), &both)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("oneOf"), "{err}");
}

/// Create → owned resources → Ready with the brokers in status → a pod
/// loses readiness: its groups move per `route`, the move is logged by both
/// brokers, the consumer carries on and its offsets survive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the k8s-testenv API server: run scripts/test-k8s"]
async fn a_cluster_becomes_ready_and_groups_follow_readiness() {
    kaas_e2e_k8s::init_tracing();
    let env = TestEnv::get().await;
    env.install_crd().await;
    let ns = env.namespace("ready").await;
    let _operator = Operator::start(&env.client, &ns).await;
    let api: Api<KaasCluster> = Api::namespaced(env.client.clone(), &ns);
    let port = free_port();
    api.create(&PostParams::default(), &cluster("demo", 3, port))
        .await
        .expect("create the KaasCluster");

    // Published at once, every broker dead: no pod is Ready yet.
    let s = await_status(&api, "demo", "first assignment published", |s| {
        is(s, ASSIGNMENT_PUBLISHED, "True") && s.assignment_version.is_some()
    })
    .await;
    assert!(
        is(&s, READY, "False") && is(&s, PROGRESSING, "True"),
        "{s:#?}"
    );
    assert_eq!((s.ready_brokers, s.brokers), (0, 3));

    // The owned resources exist, owned by the cluster.
    let c = &env.client;
    let sts = Api::<StatefulSet>::namespaced(c.clone(), &ns)
        .get("demo")
        .await
        .expect("StatefulSet");
    assert_eq!(sts.spec.as_ref().unwrap().replicas, Some(3));
    assert_eq!(
        sts.metadata.owner_references.as_ref().unwrap()[0].kind,
        "KaasCluster"
    );
    let svc = Api::<Service>::namespaced(c.clone(), &ns);
    assert_eq!(
        svc.get("demo-brokers")
            .await
            .expect("headless")
            .spec
            .unwrap()
            .cluster_ip
            .as_deref(),
        Some("None")
    );
    svc.get("demo").await.expect("client Service");
    let pvc = Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns)
        .get("demo-data")
        .await
        .expect("claim");
    assert_eq!(
        pvc.spec.unwrap().access_modes.unwrap(),
        vec!["ReadWriteMany"]
    );
    Api::<ServiceAccount>::namespaced(c.clone(), &ns)
        .get("demo-broker")
        .await
        .expect("ServiceAccount");
    Api::<Role>::namespaced(c.clone(), &ns)
        .get("demo-broker")
        .await
        .expect("Role");
    Api::<RoleBinding>::namespaced(c.clone(), &ns)
        .get("demo-broker")
        .await
        .expect("RoleBinding");
    Api::<ConfigMap>::namespaced(c.clone(), &ns)
        .get("demo-assignment")
        .await
        .expect("ConfigMap");
    // The brokers' server.properties, as the operator applied it, reads
    // cleanly with the broker's own parser, and the container's arguments
    // (with the kubelet's $(VAR) expansion) parse as a `serve` command.
    let config = Api::<ConfigMap>::namespaced(c.clone(), &ns)
        .get("demo-broker-config")
        .await
        .expect("the broker config ConfigMap");
    let properties = &config.data.unwrap()["server.properties"];
    let read = kaas_broker::settings::Settings::from_properties(properties)
        .expect("the rendered config is valid");
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    assert_eq!(
        read.settings.data.as_deref(),
        Some(std::path::Path::new("/data"))
    );
    assert_eq!(read.settings.listen.unwrap().port(), port);
    let pod = sts.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let container = &pod.containers[0];
    let mut argv = container.command.clone().unwrap();
    argv.extend(
        container
            .args
            .clone()
            .unwrap()
            .into_iter()
            .map(|a| a.replace("$(KAAS_ADVERTISE_HOST)", "demo-0.demo-brokers.ready.svc")),
    );
    assert_eq!(argv[0], "kaas-broker", "no shell");
    use clap::Parser;
    kaas_broker::cli::Cli::try_parse_from(&argv).expect("the rendered command parses");
    let pdb: Api<kube::api::DynamicObject> = Api::namespaced_with(
        c.clone(),
        &ns,
        &kaas_operator::context::ApiVersions::discover(c)
            .await
            .unwrap()
            .pdb
            .expect("policy API"),
    );
    pdb.get("demo").await.expect("PodDisruptionBudget");

    // Pods Ready, brokers serving on their IPs: Ready=True, all alive.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut running = Running {
        brokers: BTreeMap::new(),
        _dir: dir,
    };
    start_brokers(&env, &ns, "demo", port, 3, &mut running, &data).await;
    let s = await_status(&api, "demo", "Ready=True", |s| is(s, READY, "True")).await;
    assert_eq!((s.ready_brokers, s.brokers), (3, 3));
    let doc = env.assignment(&ns, "demo-assignment").await.unwrap();
    assert_eq!(s.assignment_version, Some(doc.version));
    for b in &doc.brokers {
        assert_eq!(b.state, BrokerState::Alive);
        assert_eq!(b.host, env.pod_ip(&ns, &format!("demo-{}", b.id)).await);
        assert_eq!(b.port, port);
    }

    // A consumer group with committed offsets.
    let bootstrap = running.bootstrap();
    create_topic(&bootstrap, "orders", 1).await;
    produce(&bootstrap, "orders", (0..10).map(|i| format!("m{i}"))).await;
    let group = "billing";
    let consumer = GroupConsumer::start(&bootstrap, group, "orders");
    eventually(WAIT, "10 messages consumed", || async {
        consumer.received().len() == 10
    })
    .await;
    let old_owner = Routing::new(doc.clone()).owner_of_group(group).unwrap();
    let addr = running.brokers[&0].addr.clone();
    eventually(WAIT, "the brokers name the hash owner", || {
        let addr = addr.clone();
        async move { coordinator(&addr, group).await == Some(old_owner) }
    })
    .await;
    await_status(&api, "demo", "the operator sees the active group", |s| {
        s.active_groups >= 1
    })
    .await;

    // Its coordinator's pod stops being Ready.
    env.set_pod_ready(&ns, &format!("demo-{old_owner}"), false)
        .await;
    let doc = env
        .await_assignment(
            &ns,
            "demo-assignment",
            WAIT,
            "the coordinator marked dead",
            |a| {
                a.brokers
                    .iter()
                    .any(|b| b.id == old_owner && b.state == BrokerState::Dead)
            },
        )
        .await;
    let new_owner = Routing::new(doc.clone()).owner_of_group(group).unwrap();
    assert_eq!(
        Some(new_owner),
        route(group.as_bytes(), &[0, 1, 2], |b| b != old_owner)
    );
    for b in running.brokers.values().filter(|b| b.id != old_owner) {
        let addr = b.addr.clone();
        eventually(WAIT, "brokers name the new coordinator", || {
            let addr = addr.clone();
            async move { coordinator(&addr, group).await == Some(new_owner) }
        })
        .await;
    }
    let s = await_status(&api, "demo", "Ready=False", |s| is(s, READY, "False")).await;
    assert_eq!(s.ready_brokers, 2);

    produce(&bootstrap, "orders", (10..20).map(|i| format!("m{i}"))).await;
    eventually(WAIT, "20 messages consumed", || async {
        consumer.received().len() == 20
    })
    .await;
    let (old, new) = (&running.brokers[&old_owner], &running.brokers[&new_owner]);
    eventually(WAIT, "the move logged by both brokers", || async {
        old.log_text()
            .lines()
            .any(|l| l.contains("group coordinator moved away") && l.contains(group))
            && new
                .log_text()
                .lines()
                .any(|l| l.contains("now coordinating group") && l.contains(group))
    })
    .await;
    consumer.stop();
    let bs = bootstrap.clone();
    let committed = tokio::task::spawn_blocking(move || committed_offset(&bs, group, "orders"))
        .await
        .unwrap();
    assert_eq!(committed, Some(20), "offsets survive the move");
}

/// Group ids of which `moving` would change owner on a 3→4 scale by the
/// hash tier alone and `staying` would not.
fn groups_for_scale(moving: usize, staying: usize) -> Vec<String> {
    let (mut m, mut s) = (Vec::new(), Vec::new());
    for i in 0.. {
        let g = format!("scale-group-{i}");
        let before = route(g.as_bytes(), &[0, 1, 2], |_| true);
        let after = route(g.as_bytes(), &[0, 1, 2, 3], |_| true);
        if before != after && m.len() < moving {
            m.push(g);
        } else if before == after && s.len() < staying {
            s.push(g);
        }
        if m.len() == moving && s.len() == staying {
            break;
        }
    }
    m.extend(s);
    m
}

fn owners(a: &Assignment, groups: &[String]) -> Vec<i32> {
    let r = Routing::new(a.clone());
    groups
        .iter()
        .map(|g| r.owner_of_group(g).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the k8s-testenv API server: run scripts/test-k8s"]
async fn scaling_3_to_4_keeps_every_active_group_on_its_coordinator() {
    kaas_e2e_k8s::init_tracing();
    let env = TestEnv::get().await;
    env.install_crd().await;
    let ns = env.namespace("scale").await;
    let _operator = Operator::start(&env.client, &ns).await;
    let api: Api<KaasCluster> = Api::namespaced(env.client.clone(), &ns);
    let port = free_port();
    api.create(&PostParams::default(), &cluster("demo", 3, port))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut running = Running {
        brokers: BTreeMap::new(),
        _dir: dir,
    };
    start_brokers(&env, &ns, "demo", port, 3, &mut running, &data).await;
    await_status(&api, "demo", "Ready=True", |s| is(s, READY, "True")).await;

    let bootstrap = running.bootstrap();
    create_topic(&bootstrap, "scale", 1).await;
    let groups = groups_for_scale(4, 2);
    let consumers: Vec<GroupConsumer> = groups
        .iter()
        .map(|g| GroupConsumer::start(&bootstrap, g, "scale"))
        .collect();
    produce(&bootstrap, "scale", ["before".to_owned()]).await;
    eventually(WAIT, "every group consumed", || async {
        consumers.iter().all(|c| c.received().len() == 1)
    })
    .await;
    let n = groups.len() as i32;
    await_status(&api, "demo", "the operator sees every active group", |s| {
        s.active_groups == n
    })
    .await;
    let before = env.assignment(&ns, "demo-assignment").await.unwrap();
    let owners_before = owners(&before, &groups);

    // 3 → 4: the new broker joins the set (dead until its pod is Ready),
    // and every active group is pinned where it is.
    api.patch(
        "demo",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"replicas": 4}})),
    )
    .await
    .unwrap();
    let scaled = env
        .await_assignment(
            &ns,
            "demo-assignment",
            WAIT,
            "four brokers in the set",
            |a| a.brokers.len() == 4,
        )
        .await;
    assert_eq!(owners(&scaled, &groups), owners_before);
    assert!(
        scaled.consumer_groups.len() >= 4,
        "the moving groups got entries: {scaled:?}"
    );

    start_brokers(&env, &ns, "demo", port, 4, &mut running, &data).await;
    let s = await_status(&api, "demo", "Ready=True with 4 brokers", |s| {
        is(s, READY, "True") && s.ready_brokers == 4
    })
    .await;
    let all_alive = env.assignment(&ns, "demo-assignment").await.unwrap();
    assert_eq!(s.assignment_version, Some(all_alive.version));
    assert!(all_alive
        .brokers
        .iter()
        .all(|b| b.state == BrokerState::Alive));
    assert_eq!(
        owners(&all_alive, &groups),
        owners_before,
        "still on their coordinators"
    );
    for (g, owner) in groups.iter().zip(&owners_before) {
        for b in running.brokers.values() {
            let addr = b.addr.clone();
            eventually(WAIT, "every broker names the same coordinator", || {
                let addr = addr.clone();
                async move { coordinator(&addr, g).await == Some(*owner) }
            })
            .await;
        }
    }
    // No group lost its coordinator: each still consumes.
    produce(&bootstrap, "scale", ["after".to_owned()]).await;
    eventually(WAIT, "every group consumed after the scale", || async {
        consumers.iter().all(|c| c.received().len() == 2)
    })
    .await;
    for b in running.brokers.values() {
        assert!(
            !b.log_text().contains("group coordinator moved away"),
            "no group moved, yet broker {} logged a move:\n{}",
            b.id,
            b.log_text()
        );
    }
}

/// A cluster with a SASL_SSL listener (`authentication: scram` and a TLS
/// Secret): the operator makes the admin Secret, the pods get the password
/// from it and the TLS Secret mounted, and the operator probes the brokers
/// over TLS as the admin (Ready, not Degraded). Clients must log in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the k8s-testenv API server: run scripts/test-k8s"]
async fn a_sasl_ssl_cluster_is_probed_over_tls_as_the_admin_of_its_secret() {
    kaas_e2e_k8s::init_tracing();
    let env = TestEnv::get().await;
    env.install_crd().await;
    let ns = env.namespace("secure").await;
    let _operator = Operator::start(&env.client, &ns).await;
    let api: Api<KaasCluster> = Api::namespaced(env.client.clone(), &ns);
    let port = free_port();
    let mut kc = cluster("secure", 2, port);
    kc.spec.listener.authentication = kaas_operator::crd::Authentication::Scram;
    kc.spec.listener.tls = Some(kaas_operator::crd::ListenerTls {
        secret_name: "secure-tls".into(),
    });
    api.create(&PostParams::default(), &kc)
        .await
        .expect("create the KaasCluster");

    // The admin Secret, made by the operator with a random password.
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &ns);
    eventually(WAIT, "the admin Secret", || {
        let secrets = secrets.clone();
        async move {
            secrets
                .get_opt("secure-admin")
                .await
                .ok()
                .flatten()
                .is_some()
        }
    })
    .await;
    let secret = secrets.get("secure-admin").await.expect("the admin Secret");
    assert_eq!(
        secret.metadata.owner_references.as_ref().unwrap()[0].kind,
        "KaasCluster"
    );
    let password = String::from_utf8(secret.data.unwrap()["password"].0.clone()).unwrap();
    assert!(password.len() >= 20, "a random password");

    // The pods: a SASL_SSL listener, the password from the Secret, the TLS
    // Secret's files.
    // (The broker config is applied before the admin Secret is made.)
    let config = Api::<ConfigMap>::namespaced(env.client.clone(), &ns)
        .get("secure-broker-config")
        .await
        .expect("the broker config ConfigMap");
    let properties = &config.data.unwrap()["server.properties"];
    let read = kaas_broker::settings::Settings::from_properties(properties)
        .expect("the rendered config is valid");
    assert_eq!(
        (read.settings.security.sasl, read.settings.security.ssl),
        (Some(true), Some(true))
    );
    let statefulsets = Api::<StatefulSet>::namespaced(env.client.clone(), &ns);
    eventually(WAIT, "the StatefulSet", || {
        let statefulsets = statefulsets.clone();
        async move {
            statefulsets
                .get_opt("secure")
                .await
                .ok()
                .flatten()
                .is_some()
        }
    })
    .await;
    let sts = statefulsets.get("secure").await.expect("StatefulSet");
    let pod = sts.spec.unwrap().template.spec.unwrap();
    let container = &pod.containers[0];
    let from_secret = container
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == "KAAS_ADMIN_PASSWORD")
        .and_then(|e| e.value_from.as_ref())
        .and_then(|v| v.secret_key_ref.as_ref())
        .expect("the password from the Secret");
    assert_eq!(
        (from_secret.name.as_str(), from_secret.key.as_str()),
        ("secure-admin", "password")
    );
    let args = container.args.clone().unwrap().join(" ");
    assert!(args.contains("--tls-cert /etc/kaas-tls/tls.crt --tls-key /etc/kaas-tls/tls.key --tls-ca /etc/kaas-tls/ca.crt"), "{args}");
    assert!(pod.volumes.unwrap().iter().any(|v| v
        .secret
        .as_ref()
        .and_then(|s| s.secret_name.as_deref())
        == Some("secure-tls")));

    // The pods' addresses, a certificate naming them, the TLS Secret as
    // cert-manager would write it; then brokers as the pods run them.
    let pods = env.mark_pods_ready(&ns, SELECTOR, 2).await;
    let ips: Vec<&str> = pods.iter().map(|(_, ip)| ip.as_str()).collect();
    let pki = kaas_testkit::pki::TestPki::for_hosts(&ips).unwrap();
    let file = |p: &std::path::Path| k8s_openapi::ByteString(std::fs::read(p).unwrap());
    let tls_secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("secure-tls".into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(BTreeMap::from([
            ("tls.crt".to_string(), file(&pki.server_cert)),
            ("tls.key".to_string(), file(&pki.server_key)),
            ("ca.crt".to_string(), file(&pki.ca_cert)),
        ])),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &tls_secret)
        .await
        .expect("the TLS Secret");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let source = Source::ConfigMap {
        namespace: ns.clone(),
        name: "secure-assignment".into(),
    };
    let (cert, key, ca) = (
        pki.server_cert.to_str().unwrap(),
        pki.server_key.to_str().unwrap(),
        pki.ca_cert.to_str().unwrap(),
    );
    let mut brokers = Vec::new();
    for (pod, ip) in &pods {
        let id: i32 = pod.rsplit('-').next().unwrap().parse().unwrap();
        brokers.push(BrokerProc::spawn_with_args(
            id,
            ip,
            port,
            &data,
            dir.path(),
            &source,
            None,
            &[
                "--sasl",
                "--admin-password",
                &password,
                "--tls-cert",
                cert,
                "--tls-key",
                key,
                "--tls-ca",
                ca,
            ],
        ));
    }
    let s = await_status(&api, "secure", "Ready and probed", |s| {
        is(s, READY, "True") && is(s, DEGRADED, "False") && s.ready_brokers == 2
    })
    .await;
    assert_eq!(s.brokers, 2);

    // Plaintext gets nothing; the admin over TLS is served.
    let addr = brokers[0].addr.clone();
    let metadata = kafka_protocol::messages::MetadataRequest::default().with_topics(None);
    let mut plaintext = kaas_client::KafkaClient::connect(&addr, WAIT)
        .await
        .unwrap();
    assert!(plaintext.send(&metadata, 12).await.is_err());
    let admin = kaas_client::Security {
        tls: Some(kaas_client::ClientTls::new(&pki.ca_cert, None).unwrap()),
        sasl: Some(kaas_client::SaslCredentials {
            mechanism: "SCRAM-SHA-512".into(),
            user: "admin".into(),
            password,
        }),
    };
    // The broker follows the assignment the operator publishes from its
    // own source, so its first answer may still list only itself.
    eventually(WAIT, "the admin over TLS is served both brokers", || {
        let (addr, admin, metadata) = (addr.clone(), admin.clone(), metadata.clone());
        async move {
            let mut c = kaas_client::KafkaClient::connect_as(&addr, WAIT, &admin)
                .await
                .unwrap();
            c.send(&metadata, 12).await.unwrap().brokers.len() == 2
        }
    })
    .await;
}

/// librdkafka's settings for `user` / `password` over SASL_PLAINTEXT.
fn sasl_client(bootstrap: &str, user: &str, password: &str) -> rdkafka::ClientConfig {
    let mut c = kaas_e2e_k8s::client_config(bootstrap);
    c.set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanism", "SCRAM-SHA-512")
        .set("sasl.username", user)
        .set("sasl.password", password);
    c
}

/// librdkafka with `config`: ten records produced to `topic`, consumed
/// from the start in `group` and committed. Blocking.
fn produce_consume_and_commit(config: &rdkafka::ClientConfig, topic: &str, group: &str) {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
    let producer: ThreadedProducer<DefaultProducerContext> = config
        .clone()
        .set("message.timeout.ms", "20000")
        .create()
        .unwrap();
    for i in 0..10 {
        let v = format!("v{i}");
        producer
            .send(BaseRecord::<(), _>::to(topic).payload(&v))
            .map_err(|(e, _)| e)
            .unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", group)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    consumer.subscribe(&[topic]).unwrap();
    let (mut got, deadline) = (0, std::time::Instant::now() + WAIT);
    while got < 10 {
        assert!(std::time::Instant::now() < deadline, "consumed {got} of 10");
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            m.expect("no consumer error");
            got += 1;
        }
    }
    consumer.commit_consumer_state(CommitMode::Sync).unwrap();
}

/// A KaasUser on a SCRAM cluster: the operator makes its Secret, its
/// credentials, exactly its ACLs and its client quotas, which every broker
/// describes (Ready); with the Secret's password the
/// user produces, consumes in a group and commits where its ACLs allow and
/// is refused elsewhere; deleting the KaasUser removes its credentials,
/// ACLs and quotas, so it can no longer log in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the k8s-testenv API server: run scripts/test-k8s"]
async fn a_kaas_user_is_held_to_its_acls_and_removed_with_it() {
    use kaas_operator::user::KaasUser;

    kaas_e2e_k8s::init_tracing();
    let env = TestEnv::get().await;
    env.install_crd().await;
    let ns = env.namespace("users").await;
    let _operator = Operator::start(&env.client, &ns).await;
    let api: Api<KaasCluster> = Api::namespaced(env.client.clone(), &ns);
    let port = free_port();
    let mut kc = cluster("demo", 2, port);
    kc.spec.listener.authentication = kaas_operator::crd::Authentication::Scram;
    api.create(&PostParams::default(), &kc).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &ns);
    let secret_value = |name: &'static str, key: &'static str| {
        let secrets = secrets.clone();
        async move {
            let mut found = None;
            eventually(WAIT, &format!("the Secret {name}"), || {
                let secrets = secrets.clone();
                async move { secrets.get_opt(name).await.ok().flatten().is_some() }
            })
            .await;
            if let Ok(s) = secrets.get(name).await {
                found = s.data.and_then(|d| d.get(key).map(|v| v.0.clone()));
            }
            String::from_utf8(found.expect("the key")).unwrap()
        }
    };
    let admin_password = secret_value("demo-admin", "password").await;
    let dir = tempfile::tempdir().unwrap();
    let source = Source::ConfigMap {
        namespace: ns.clone(),
        name: "demo-assignment".into(),
    };
    let mut brokers = Vec::new();
    for (pod, ip) in env.mark_pods_ready(&ns, SELECTOR, 2).await {
        let id: i32 = pod.rsplit('-').next().unwrap().parse().unwrap();
        brokers.push(BrokerProc::spawn_with_args(
            id,
            &ip,
            port,
            &dir.path().join("data"),
            dir.path(),
            &source,
            None,
            &["--sasl", "--admin-password", &admin_password],
        ));
    }
    // Probed (not Degraded): both brokers answer, so they are listening.
    await_status(&api, "demo", "Ready and probed", |s| {
        is(s, READY, "True") && is(s, DEGRADED, "False") && s.ready_brokers == 2
    })
    .await;
    let bootstrap = brokers
        .iter()
        .map(|b| b.addr.clone())
        .collect::<Vec<_>>()
        .join(",");
    let admin = kaas_client::Security::sasl(&kaas_client::SaslCredentials {
        mechanism: "SCRAM-SHA-512".into(),
        user: "admin".into(),
        password: admin_password,
    });
    let mut a = kaas_client::KafkaClient::connect_as(&brokers[0].addr, WAIT, &admin)
        .await
        .unwrap();
    a.create_topic("orders", 2).await.unwrap();
    a.create_topic("secrets", 1).await.unwrap();

    // alice: read and write orders, read groups named orders-*.
    let users: Api<KaasUser> = Api::namespaced(env.client.clone(), &ns);
    let alice: KaasUser = serde_json::from_value(serde_json::json!({
        "apiVersion": "kaas.dev/v1alpha1", "kind": "KaasUser",
        "metadata": {"name": "alice"},
        "spec": {"cluster": "demo", "acls": [
            {"resource": {"type": "topic", "name": "orders"},
             "operations": ["Read", "Write", "Describe"]},
            {"resource": {"type": "group", "name": "orders-", "patternType": "prefix"},
             "operations": ["Read"]},
        ],
        "quotas": {"producerByteRate": 1048576, "requestPercentage": 200}},
    }))
    .unwrap();
    users.create(&PostParams::default(), &alice).await.unwrap();
    tokio::time::timeout(
        WAIT,
        await_condition(users.clone(), "alice", |u: Option<&KaasUser>| {
            u.and_then(|u| u.status.as_ref())
                .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
                .is_some_and(|c| c.status == "True")
        }),
    )
    .await
    .expect("alice Ready")
    .unwrap();
    let password = secret_value("alice", "password").await;
    assert!(secret_value("alice", "sasl.jaas.config")
        .await
        .contains("username=\"alice\""));

    // Every broker knows alice within the refresh delay (each follows the
    // SCRAM users on the volume): wait until she logs in to each one.
    let alice_login = kaas_client::Security::sasl(&kaas_client::SaslCredentials {
        mechanism: "SCRAM-SHA-512".into(),
        user: "alice".into(),
        password: password.clone(),
    });
    for b in &brokers {
        let deadline = std::time::Instant::now() + WAIT;
        while kaas_client::KafkaClient::connect_as(&b.addr, WAIT, &alice_login)
            .await
            .is_err()
        {
            assert!(
                std::time::Instant::now() < deadline,
                "alice cannot log in to {}",
                b.addr
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // Her quotas reach every broker (each follows them on the volume).
    let alice_quotas = BTreeMap::from([
        ("producer_byte_rate".to_string(), 1048576.0),
        ("request_percentage".to_string(), 200.0),
    ]);
    for b in &brokers {
        let mut c = kaas_client::KafkaClient::connect_as(&b.addr, WAIT, &admin)
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + WAIT;
        while user_quotas(&mut c, "alice").await != alice_quotas {
            assert!(
                std::time::Instant::now() < deadline,
                "alice's quotas on {}",
                b.addr
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // Then: produce to orders, consume it in orders-app and commit;
    // secrets is refused.
    let config = sasl_client(&bootstrap, "alice", &password);
    tokio::task::spawn_blocking(move || {
        produce_consume_and_commit(&config, "orders", "orders-app");
        let denied: rdkafka::producer::FutureProducer = config
            .clone()
            .set("message.timeout.ms", "10000")
            .create()
            .unwrap();
        let outcome = futures::executor::block_on(
            denied.send(
                rdkafka::producer::FutureRecord::<(), _>::to("secrets")
                    .payload("x")
                    .partition(0),
                Duration::from_secs(10),
            ),
        );
        let (e, _) = outcome.expect_err("alice may not write secrets");
        assert_eq!(
            e.rdkafka_error_code(),
            Some(rdkafka::types::RDKafkaErrorCode::TopicAuthorizationFailed),
            "{e}"
        );
    })
    .await
    .unwrap();

    // Deleted: the finalizer removes alice's credentials and ACLs first.
    users
        .delete("alice", &Default::default())
        .await
        .expect("delete alice");
    eventually(WAIT, "alice gone", || {
        let users = users.clone();
        async move { users.get_opt("alice").await.ok().flatten().is_none() }
    })
    .await;
    let alice = kaas_client::Security::sasl(&kaas_client::SaslCredentials {
        mechanism: "SCRAM-SHA-512".into(),
        user: "alice".into(),
        password,
    });
    let addr = brokers[1].addr.clone();
    eventually(Duration::from_secs(10), "alice refused", || {
        let (addr, alice) = (addr.clone(), alice.clone());
        async move {
            kaas_client::KafkaClient::connect_as(&addr, Duration::from_secs(2), &alice)
                .await
                .is_err()
        }
    })
    .await;
    let acls = a
        .send(
            // Null name and host filters (kafka-protocol's defaults are
            // empty strings, which match nothing).
            &kafka_protocol::messages::DescribeAclsRequest::default()
                .with_resource_type_filter(1)
                .with_resource_name_filter(None)
                .with_pattern_type_filter(1)
                .with_principal_filter(Some("User:alice".to_string().into()))
                .with_host_filter(None)
                .with_operation(1)
                .with_permission_type(1),
            3,
        )
        .await
        .unwrap();
    assert_eq!(acls.error_code, 0, "{:?}", acls.error_message);
    assert!(acls.resources.is_empty(), "{:?}", acls.resources);
    assert!(user_quotas(&mut a, "alice").await.is_empty());
}

/// The client quotas of the entity `user=<user>` alone, as a broker
/// describes them.
async fn user_quotas(c: &mut kaas_client::KafkaClient, user: &str) -> BTreeMap<String, f64> {
    use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
    let r = c
        .send(
            &kafka_protocol::messages::DescribeClientQuotasRequest::default()
                .with_components(vec![ComponentData::default()
                    .with_entity_type("user".to_string().into())
                    .with_match_type(0)
                    .with_match(Some(user.to_string().into()))])
                .with_strict(true),
            1,
        )
        .await
        .unwrap();
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    r.entries
        .unwrap_or_default()
        .iter()
        .flat_map(|e| e.values.iter().map(|v| (v.key.to_string(), v.value)))
        .collect()
}

/// Two listeners on every broker: SASL_SSL (`listener`) and SSL with
/// client certificates (`additionalListeners`, `authentication: tls`). The
/// brokers run from the operator's own rendered `server.properties` and
/// arguments, the pod's paths and address filled in as the kubelet would.
/// A KaasUser with `authentication: tls` gets exactly its ACLs: librdkafka
/// presenting a certificate with its CN produces, consumes in a group and
/// commits on the MTLS listener, whose Metadata names MTLS addresses; no
/// certificate is refused; a super user by `authorization.superUsers`
/// needs no ACL; deleting the KaasUser revokes its access.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the k8s-testenv API server: run scripts/test-k8s"]
async fn a_client_certificate_listener_beside_scram_holds_tls_users_to_their_acls() {
    use kaas_operator::user::KaasUser;

    kaas_e2e_k8s::init_tracing();
    let env = TestEnv::get().await;
    env.install_crd().await;
    let ns = env.namespace("mtls").await;
    let _operator = Operator::start(&env.client, &ns).await;
    let api: Api<KaasCluster> = Api::namespaced(env.client.clone(), &ns);
    let (port, mtls_port) = (free_port(), free_port());
    let mut kc = cluster("mtls", 2, port);
    kc.spec.listener.authentication = kaas_operator::crd::Authentication::Scram;
    kc.spec.listener.tls = Some(kaas_operator::crd::ListenerTls {
        secret_name: "mtls-tls".into(),
    });
    kc.spec.additional_listeners = serde_json::from_value(serde_json::json!([
        {"name": "MTLS", "port": mtls_port, "authentication": "tls",
         "tls": {"secretName": "mtls-tls"}},
    ]))
    .unwrap();
    kc.spec.authorization =
        serde_json::from_value(serde_json::json!({"superUsers": ["User:ops"]})).unwrap();
    api.create(&PostParams::default(), &kc).await.unwrap();

    // What the pods would get: the config, the arguments, the admin's
    // password; the TLS Secret for the pods' addresses.
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &ns);
    let statefulsets = Api::<StatefulSet>::namespaced(env.client.clone(), &ns);
    eventually(WAIT, "the admin Secret and the StatefulSet", || {
        let (secrets, statefulsets) = (secrets.clone(), statefulsets.clone());
        async move {
            secrets.get_opt("mtls-admin").await.ok().flatten().is_some()
                && statefulsets.get_opt("mtls").await.ok().flatten().is_some()
        }
    })
    .await;
    let admin_password = String::from_utf8(
        secrets.get("mtls-admin").await.unwrap().data.unwrap()["password"]
            .0
            .clone(),
    )
    .unwrap();
    let properties = Api::<ConfigMap>::namespaced(env.client.clone(), &ns)
        .get("mtls-broker-config")
        .await
        .unwrap()
        .data
        .unwrap()["server.properties"]
        .clone();
    let args = statefulsets
        .get("mtls")
        .await
        .unwrap()
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .args
        .clone()
        .unwrap();
    let pods = env.mark_pods_ready(&ns, SELECTOR, 2).await;
    let ips: Vec<&str> = pods.iter().map(|(_, ip)| ip.as_str()).collect();
    let pki = kaas_testkit::pki::TestPki::for_hosts(&ips).unwrap();
    let file = |p: &Path| k8s_openapi::ByteString(std::fs::read(p).unwrap());
    secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: kube::api::ObjectMeta {
                    name: Some("mtls-tls".into()),
                    ..Default::default()
                },
                type_: Some("kubernetes.io/tls".into()),
                data: Some(BTreeMap::from([
                    ("tls.crt".to_string(), file(&pki.server_cert)),
                    ("tls.key".to_string(), file(&pki.server_key)),
                    ("ca.crt".to_string(), file(&pki.ca_cert)),
                ])),
                ..Default::default()
            },
        )
        .await
        .unwrap();

    // Each broker as its pod runs it: the mounted files at the test's
    // paths, the pod's own address for 0.0.0.0 and $(KAAS_ADVERTISE_HOST).
    let dir = tempfile::tempdir().unwrap();
    let source = Source::ConfigMap {
        namespace: ns.clone(),
        name: "mtls-assignment".into(),
    };
    let mounted = |text: &str, ip: &str| {
        let mut text = text
            .replace("0.0.0.0:", &format!("{ip}:"))
            .replace("$(KAAS_ADVERTISE_HOST)", ip);
        for folder in ["/etc/kaas-tls", "/etc/kaas-listeners/mtls"] {
            for (name, path) in [
                ("tls.crt", &pki.server_cert),
                ("tls.key", &pki.server_key),
                ("ca.crt", &pki.ca_cert),
            ] {
                text = text.replace(&format!("{folder}/{name}"), path.to_str().unwrap());
            }
        }
        text
    };
    let mut brokers = Vec::new();
    for (pod, ip) in &pods {
        let id: i32 = pod.rsplit('-').next().unwrap().parse().unwrap();
        let config = dir.path().join(format!("server-{id}.properties"));
        std::fs::write(&config, mounted(&properties, ip)).unwrap();
        // The StatefulSet's arguments after `serve --config FILE
        // --id-from-pod-name` (the process gets --id; --advertise and the
        // listeners as the pod).
        let mut pod_args: Vec<String> = vec!["--config".into(), config.display().to_string()];
        pod_args.extend(args[4..].iter().map(|a| mounted(a, ip)));
        pod_args.extend(["--admin-password".to_string(), admin_password.clone()]);
        let pod_args: Vec<&str> = pod_args.iter().map(String::as_str).collect();
        brokers.push(BrokerProc::spawn_with_args(
            id,
            ip,
            port,
            &dir.path().join("data"),
            dir.path(),
            &source,
            None,
            &pod_args,
        ));
    }
    await_status(&api, "mtls", "Ready and probed", |s| {
        is(s, READY, "True") && is(s, DEGRADED, "False") && s.ready_brokers == 2
    })
    .await;
    let admin = kaas_client::Security {
        tls: Some(kaas_client::ClientTls::new(&pki.ca_cert, None).unwrap()),
        sasl: Some(kaas_client::SaslCredentials {
            mechanism: "SCRAM-SHA-512".into(),
            user: "admin".into(),
            password: admin_password,
        }),
    };
    let mut a = kaas_client::KafkaClient::connect_as(&brokers[0].addr, WAIT, &admin)
        .await
        .unwrap();
    a.create_topic("events", 2).await.unwrap();

    // app: a certificate user with its ACLs.
    let users: Api<KaasUser> = Api::namespaced(env.client.clone(), &ns);
    let app: KaasUser = serde_json::from_value(serde_json::json!({
        "apiVersion": "kaas.dev/v1alpha1", "kind": "KaasUser",
        "metadata": {"name": "app"},
        "spec": {"cluster": "mtls", "authentication": "tls", "acls": [
            {"resource": {"type": "topic", "name": "events"},
             "operations": ["Read", "Write", "Describe"]},
            {"resource": {"type": "group", "name": "events-", "patternType": "prefix"},
             "operations": ["Read"]},
        ]},
    }))
    .unwrap();
    users.create(&PostParams::default(), &app).await.unwrap();
    let ready = tokio::time::timeout(
        WAIT,
        await_condition(users.clone(), "app", |u: Option<&KaasUser>| {
            u.and_then(|u| u.status.as_ref())
                .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
                .is_some_and(|c| c.status == "True")
        }),
    )
    .await
    .expect("app Ready")
    .unwrap()
    .unwrap();
    let status = ready.status.unwrap();
    assert_eq!(
        (status.username.as_deref(), status.secret),
        (Some("app"), None),
        "a certificate user has no Secret"
    );
    assert!(secrets.get_opt("app").await.unwrap().is_none());

    // Metadata on the MTLS listener names its addresses; a client without
    // a certificate is refused.
    let (cert, key) = pki.client("app").unwrap();
    let mtls_addr = format!("{}:{mtls_port}", ips[0]);
    let with_cert = kaas_client::Security {
        tls: Some(kaas_client::ClientTls::new(&pki.ca_cert, Some((&cert, &key))).unwrap()),
        sasl: None,
    };
    let mut c = kaas_client::KafkaClient::connect_as(&mtls_addr, WAIT, &with_cert)
        .await
        .unwrap();
    let md = c
        .send(
            &kafka_protocol::messages::MetadataRequest::default().with_topics(None),
            12,
        )
        .await
        .unwrap();
    let mut ports: Vec<i32> = md.brokers.iter().map(|b| b.port).collect();
    ports.dedup();
    assert_eq!(ports, [mtls_port as i32], "{:?}", md.brokers);
    let no_cert = kaas_client::Security {
        tls: Some(kaas_client::ClientTls::new(&pki.ca_cert, None).unwrap()),
        sasl: None,
    };
    let refused = async {
        let mut c = kaas_client::KafkaClient::connect_as(&mtls_addr, WAIT, &no_cert).await?;
        c.send(
            &kafka_protocol::messages::MetadataRequest::default().with_topics(None),
            12,
        )
        .await
    };
    assert!(refused.await.is_err(), "no certificate, no service");
    // ops, a super user by `authorization.superUsers`, sees every topic
    // with no ACL of its own.
    let (ops_cert, ops_key) = pki.client("ops").unwrap();
    let ops = kaas_client::Security {
        tls: Some(kaas_client::ClientTls::new(&pki.ca_cert, Some((&ops_cert, &ops_key))).unwrap()),
        sasl: None,
    };
    let md = kaas_client::KafkaClient::connect_as(&mtls_addr, WAIT, &ops)
        .await
        .unwrap()
        .send(
            &kafka_protocol::messages::MetadataRequest::default().with_topics(None),
            12,
        )
        .await
        .unwrap();
    assert!(
        md.topics
            .iter()
            .any(|t| t.name.as_deref().map(|n| n.as_str()) == Some("events")),
        "{:?}",
        md.topics
    );

    // Every broker follows the ACLs within the refresh delay: wait until
    // each one lets app see the topic.
    for ip in &ips {
        let addr = format!("{ip}:{mtls_port}");
        eventually(WAIT, "app's ACLs on every broker", || {
            let (addr, security) = (addr.clone(), with_cert.clone());
            async move { topic_error(&addr, &security, "events").await == Some(0) }
        })
        .await;
    }

    // librdkafka with app's certificate: produce, consume in events-app,
    // commit.
    let bootstrap = ips
        .iter()
        .map(|ip| format!("{ip}:{mtls_port}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut config = kaas_e2e_k8s::client_config(&bootstrap);
    config
        .set("security.protocol", "SSL")
        .set("ssl.ca.location", pki.ca_cert.to_str().unwrap())
        .set("ssl.certificate.location", cert.to_str().unwrap())
        .set("ssl.key.location", key.to_str().unwrap());
    tokio::task::spawn_blocking(move || {
        produce_consume_and_commit(&config, "events", "events-app")
    })
    .await
    .unwrap();

    // The spec loses its group rule: the operator deletes that ACL (it
    // keeps exactly the spec's).
    users
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"acls": [
                {"resource": {"type": "topic", "name": "events"},
                 "operations": ["Read", "Write", "Describe"]},
            ]}})),
        )
        .await
        .unwrap();
    eventually(WAIT, "app's group ACL removed", || {
        let admin = admin.clone();
        let addr = brokers[0].addr.clone();
        async move {
            let Ok(mut a) = kaas_client::KafkaClient::connect_as(&addr, WAIT, &admin).await else {
                return false;
            };
            let r = a
                .send(
                    &kafka_protocol::messages::DescribeAclsRequest::default()
                        .with_resource_type_filter(1)
                        .with_resource_name_filter(None)
                        .with_pattern_type_filter(1)
                        .with_principal_filter(Some("User:app".to_string().into()))
                        .with_host_filter(None)
                        .with_operation(1)
                        .with_permission_type(1),
                    3,
                )
                .await;
            r.is_ok_and(|r| {
                r.error_code == 0
                    && r.resources.len() == 1
                    && r.resources[0].resource_name.as_str() == "events"
                    && r.resources[0].acls.len() == 3
            })
        }
    })
    .await;

    // Deleted: its ACLs go, so the topic is no longer its to see.
    users.delete("app", &Default::default()).await.unwrap();
    eventually(WAIT, "app gone", || {
        let users = users.clone();
        async move { users.get_opt("app").await.ok().flatten().is_none() }
    })
    .await;
    let denied = kafka_protocol::ResponseError::TopicAuthorizationFailed.code();
    for ip in &ips {
        let addr = format!("{ip}:{mtls_port}");
        eventually(Duration::from_secs(10), "app refused the topic", || {
            let (addr, security) = (addr.clone(), with_cert.clone());
            async move { topic_error(&addr, &security, "events").await == Some(denied) }
        })
        .await;
    }
}

/// The error Metadata answers `security`'s client for `topic` on `addr`
/// (`None`: no answer).
async fn topic_error(addr: &str, security: &kaas_client::Security, topic: &str) -> Option<i16> {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    let mut c = kaas_client::KafkaClient::connect_as(addr, Duration::from_secs(2), security)
        .await
        .ok()?;
    let name = kafka_protocol::protocol::StrBytes::from_string(topic.to_string());
    let md = c
        .send(
            &kafka_protocol::messages::MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name.into())),
            ])),
            12,
        )
        .await
        .ok()?;
    md.topics.first().map(|t| t.error_code)
}
