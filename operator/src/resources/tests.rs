//! The builders' tests: what each owned resource holds for a spec.

use super::*;
use crate::crd::{KaasClusterSpec, PodOverrides};

pub(crate) fn cluster(spec: serde_json::Value) -> KaasCluster {
    let spec: KaasClusterSpec = serde_json::from_value(spec).expect("spec");
    let mut kc = KaasCluster::new("demo", spec);
    kc.metadata.namespace = Some("ns".into());
    kc.metadata.uid = Some("uid-1".into());
    kc
}

fn demo() -> KaasCluster {
    cluster(serde_json::json!({"image": "kaas:dev", "storage": {"size": "10Gi"}}))
}

#[test]
fn a_cluster_from_a_file_renders_its_broker_objects() {
    let list = render_broker_objects(
        "apiVersion: kaas.dev/v1alpha1\nkind: KaasCluster\n\
         metadata: {name: demo}\nspec: {image: 'kaas:dev', storage: {size: 1Gi}}\n",
    )
    .unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items[0]["kind"], "ConfigMap");
    assert_eq!(items[0]["metadata"]["name"], "demo-broker-config");
    assert_eq!(items[1]["kind"], "StatefulSet");
    let container = &items[1]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["command"][0], "kaas-broker");
    assert!(render_broker_objects("kind: KaasCluster\nspec: {}\n").is_err());
}

#[test]
fn names_and_ordinals() {
    let n = Names::of(&demo());
    assert_eq!(n.broker_host(2), "demo-2.demo-brokers.ns.svc");
    assert_eq!(n.ordinal_of("demo-0"), Some(0));
    assert_eq!(n.ordinal_of("demo-17"), Some(17));
    for other in [
        "demo", "demo-", "demo-01", "demo-x-1", "demox-1", "other-1", "demo--1",
    ] {
        assert_eq!(n.ordinal_of(other), None, "{other}");
    }
}

#[test]
fn everything_is_owned_and_labelled() {
    let kc = demo();
    let metas = [
        service_account(&kc).metadata,
        broker_role(&kc).metadata,
        broker_role_binding(&kc).metadata,
        headless_service(&kc).metadata,
        client_service(&kc).metadata,
        claim(&kc).unwrap().metadata,
        statefulset(&kc).metadata,
    ];
    for m in metas {
        let refs = m.owner_references.expect("owner");
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].kind, "KaasCluster");
        assert_eq!(refs[0].uid, "uid-1");
        assert_eq!(refs[0].controller, Some(true));
        assert_eq!(m.namespace.as_deref(), Some("ns"));
        assert_eq!(m.labels.unwrap()[LABEL_MANAGED_BY], MANAGER);
    }
    let pdb = pdb(&kc, "policy/v1beta1");
    assert_eq!(pdb["apiVersion"], "policy/v1beta1");
    assert_eq!(pdb["metadata"]["ownerReferences"][0]["kind"], "KaasCluster");
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
}

#[test]
fn the_statefulset_runs_brokers_on_the_shared_volume() {
    let kc = demo();
    let sts = statefulset(&kc);
    let spec = sts.spec.unwrap();
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(spec.service_name.as_deref(), Some("demo-brokers"));
    assert_eq!(spec.pod_management_policy.as_deref(), Some("Parallel"));
    let selector = spec.selector.match_labels.unwrap();
    let pod_labels = spec.template.metadata.unwrap().labels.unwrap();
    assert!(selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)));
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.service_account_name.as_deref(), Some("demo-broker"));
    assert_eq!(
        pod.volumes.unwrap()[0]
            .persistent_volume_claim
            .as_ref()
            .unwrap()
            .claim_name,
        "demo-data"
    );
    let c = &pod.containers[0];
    // No shell: the image needs none.
    assert_eq!(c.command.as_deref(), Some(&["kaas-broker".to_string()][..]));
    assert_eq!(
        c.args.as_ref().unwrap().join(" "),
        "serve --config /etc/kaas/server.properties --id-from-pod-name \
         --advertise $(KAAS_ADVERTISE_HOST):9092"
    );
    let properties = broker_properties(&kc);
    assert!(properties.contains("\nlog.dirs=/data\n"));
    assert!(properties.contains("\nlisteners=PLAINTEXT://0.0.0.0:9092\n"));
    assert!(properties.contains("\nauto.create.topics.enable=true\n"));
    assert!(properties.contains("\nkaas.http.listen=0.0.0.0:8080\n"));
    let config = broker_config(&kc);
    assert_eq!(config.metadata.name.as_deref(), Some("demo-broker-config"));
    assert_eq!(config.data.unwrap()[CONFIG_FILE], properties);
    let env: BTreeMap<_, _> = c
        .env
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| (e.name.as_str(), e))
        .collect();
    assert_eq!(
        env["KAAS_ADVERTISE_HOST"].value.as_deref(),
        Some("$(POD_NAME).demo-brokers.ns.svc")
    );
    assert_eq!(
        env["KAAS_ASSIGNMENT_CONFIGMAP"].value.as_deref(),
        Some("demo-assignment")
    );
    let readiness = c.readiness_probe.as_ref().unwrap();
    let serving = readiness.http_get.as_ref().unwrap();
    assert_eq!(
        serving.path.as_deref(),
        Some("/serving"),
        "not /readyz: see statefulset()"
    );
    assert_eq!(readiness.period_seconds, Some(1));
    let liveness = c
        .liveness_probe
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap();
    assert_eq!(liveness.path.as_deref(), Some("/healthz"));
    let ports: Vec<_> = c
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .map(|p| (p.name.clone().unwrap(), p.container_port))
        .collect();
    assert_eq!(ports, vec![("kafka".into(), 9092), ("http".into(), 8080)]);
    // SIGTERM drains in the broker itself (no preStop sleep), within
    // the pod's grace period.
    assert!(c.lifecycle.is_none());
    assert!(properties.contains("\nkaas.shutdown.drain.ms=5000\n"));
    assert!(pod.termination_grace_period_seconds.unwrap() * 1000 > SHUTDOWN_DRAIN_MS as i64);
    let mounts = c.volume_mounts.as_ref().unwrap();
    assert_eq!(mounts[0].mount_path, "/data");
    assert_eq!(
        (mounts[1].name.as_str(), mounts[1].mount_path.as_str()),
        ("config", "/etc/kaas")
    );
}

#[test]
fn additional_listeners_get_their_ports_protocols_and_tls_files() {
    let kc = cluster(serde_json::json!({
        "image": "kaas:1",
        "listener": {"port": 19092, "authentication": "scram",
                     "tls": {"secretName": "demo-tls"}},
        "additionalListeners": [
            {"name": "MTLS", "port": 19094, "authentication": "tls",
             "tls": {"secretName": "demo-mtls"}},
            {"name": "INSIDE_ONLY", "port": 19095},
        ],
        "storage": {"size": "1Gi"},
    }));
    let properties = broker_properties(&kc);
    for line in [
        "listeners=INTERNAL://0.0.0.0:19092,MTLS://0.0.0.0:19094,INSIDE_ONLY://0.0.0.0:19095",
        "listener.security.protocol.map=INTERNAL:SASL_SSL,MTLS:SSL,INSIDE_ONLY:PLAINTEXT",
        "inter.broker.listener.name=INTERNAL",
        "listener.name.mtls.ssl.keystore.location=/etc/kaas-listeners/mtls/tls.crt",
        "listener.name.mtls.kaas.ssl.key.location=/etc/kaas-listeners/mtls/tls.key",
        "listener.name.mtls.ssl.truststore.location=/etc/kaas-listeners/mtls/ca.crt",
        "listener.name.mtls.ssl.client.auth=required",
        "listener.name.mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]*)(,.*)?$/$1/,DEFAULT",
    ] {
        assert!(
            properties.contains(&format!("\n{line}\n")),
            "{line}:\n{properties}"
        );
    }
    assert!(!properties.contains("listener.name.inside_only."));
    assert!(!properties.contains("super.users"), "none beside the admin");
    let args = broker_args(&kc).join(" ");
    assert!(
        args.contains("--override advertised.listeners=INTERNAL://$(KAAS_ADVERTISE_HOST):19092,MTLS://$(KAAS_ADVERTISE_HOST):19094,INSIDE_ONLY://$(KAAS_ADVERTISE_HOST):19095"),
        "{args}"
    );
    let pod = statefulset(&kc).spec.unwrap().template.spec.unwrap();
    let ports: Vec<(String, i32)> = pod.containers[0]
        .ports
        .clone()
        .unwrap()
        .into_iter()
        .map(|p| (p.name.unwrap(), p.container_port))
        .collect();
    assert_eq!(
        ports,
        [
            ("kafka".to_string(), 19092),
            ("http".to_string(), 8080),
            ("listener-1".to_string(), 19094),
            ("listener-2".to_string(), 19095)
        ]
    );
    let mounts = pod.containers[0].volume_mounts.clone().unwrap();
    assert!(mounts
        .iter()
        .any(|m| m.name == "listener-mtls" && m.mount_path == "/etc/kaas-listeners/mtls"));
    assert!(pod
        .volumes
        .unwrap()
        .iter()
        .any(|v| v.name == "listener-mtls"
            && v.secret.as_ref().and_then(|s| s.secret_name.as_deref()) == Some("demo-mtls")));
    for service in [headless_service(&kc), client_service(&kc)] {
        let ports: Vec<i32> = service
            .spec
            .unwrap()
            .ports
            .unwrap()
            .iter()
            .map(|p| p.port)
            .collect();
        assert_eq!(ports, [19092, 19094, 19095]);
    }
    let with_super_users = cluster(serde_json::json!({
        "image": "kaas:1",
        "listener": {"authentication": "scram"},
        "authorization": {"type": "simple", "superUsers": ["User:ops", "User:app"]},
        "storage": {"size": "1Gi"},
    }));
    assert!(broker_properties(&with_super_users).contains("\nsuper.users=User:ops;User:app\n"));
    // One listener: named after its protocol, no map, no override.
    let one = cluster(serde_json::json!({"image": "kaas:1", "storage": {"size": "1Gi"}}));
    assert!(!broker_properties(&one).contains("listener.security.protocol.map"));
    assert!(!broker_args(&one).join(" ").contains("--override"));
}

#[test]
fn a_scram_listener_gets_the_admin_password_from_its_secret() {
    let kc = cluster(serde_json::json!({
        "image": "kaas:1",
        "listener": {"port": 19092, "authentication": "scram"},
        "storage": {"size": "1Gi"},
    }));
    assert!(broker_properties(&kc).contains("\nlisteners=SASL_PLAINTEXT://0.0.0.0:19092\n"));
    let pod = statefulset(&kc).spec.unwrap().template.spec.unwrap();
    let env = pod.containers[0].env.clone().unwrap();
    let password = env
        .iter()
        .find(|e| e.name == "KAAS_ADMIN_PASSWORD")
        .and_then(|e| e.value_from.clone())
        .and_then(|v| v.secret_key_ref)
        .expect("from a Secret");
    assert_eq!(
        (password.name.as_str(), password.key.as_str()),
        ("demo-admin", "password")
    );
    let secret = admin_secret(&kc, "s3cret");
    assert_eq!(secret.metadata.name.as_deref(), Some("demo-admin"));
    assert_eq!(
        secret.metadata.owner_references.unwrap()[0].kind,
        "KaasCluster"
    );
    assert_eq!(secret.string_data.unwrap()["password"], "s3cret");
    // Without authentication: PLAINTEXT, no password.
    let plain = cluster(serde_json::json!({"image": "kaas:1", "storage": {"size": "1Gi"}}));
    assert!(broker_properties(&plain).contains("\nlisteners=PLAINTEXT://"));
    let pod = statefulset(&plain).spec.unwrap().template.spec.unwrap();
    assert!(!pod.containers[0]
        .env
        .clone()
        .unwrap()
        .iter()
        .any(|e| e.name == "KAAS_ADMIN_PASSWORD"));
}

#[test]
fn spec_settings_reach_the_pods() {
    let mut kc = cluster(serde_json::json!({
        "replicas": 5,
        "image": "kaas:1",
        "imagePullPolicy": "Always",
        "listener": {"port": 19092, "advertise": "podIP"},
        "storage": {"existingClaim": "shared"},
        "broker": {"groupInitialRebalanceDelayMs": 0, "autoCreateTopics": false},
    }));
    kc.spec.pod = Some(PodOverrides {
        labels: Some(BTreeMap::from([
            ("team".into(), "data".into()),
            (LABEL_INSTANCE.into(), "hijack".into()),
        ])),
        env: Some(vec![env("EXTRA", "1"), env("POD_NAME", "nope")]),
        priority_class_name: Some("high".into()),
        ..PodOverrides::default()
    });
    assert!(claim(&kc).is_none());
    let spec = statefulset(&kc).spec.unwrap();
    assert_eq!(spec.replicas, Some(5));
    let meta = spec.template.metadata.unwrap();
    let labels = meta.labels.unwrap();
    assert_eq!(labels["team"], "data");
    assert_eq!(labels[LABEL_INSTANCE], "demo", "the operator's labels win");
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.priority_class_name.as_deref(), Some("high"));
    assert_eq!(
        pod.volumes.unwrap()[0]
            .persistent_volume_claim
            .as_ref()
            .unwrap()
            .claim_name,
        "shared"
    );
    let c = &pod.containers[0];
    assert_eq!(c.image_pull_policy.as_deref(), Some("Always"));
    assert!(c
        .args
        .as_ref()
        .unwrap()
        .contains(&"$(KAAS_ADVERTISE_HOST):19092".to_string()));
    let properties = broker_properties(&kc);
    assert!(properties.contains("\nlisteners=PLAINTEXT://0.0.0.0:19092\n"));
    assert!(properties.contains("\ngroup.initial.rebalance.delay.ms=0\n"));
    assert!(properties.contains("\nauto.create.topics.enable=false\n"));
    // A settings change changes the pod template: the brokers roll.
    let digest = |kc: &KaasCluster| {
        statefulset(kc)
            .spec
            .unwrap()
            .template
            .metadata
            .unwrap()
            .annotations
            .unwrap()[CONFIG_DIGEST]
            .clone()
    };
    let before = digest(&kc);
    kc.spec.broker.default_partitions += 1;
    assert_ne!(digest(&kc), before);
    let env = c.env.as_ref().unwrap();
    let advertise = env
        .iter()
        .find(|e| e.name == "KAAS_ADVERTISE_HOST")
        .unwrap();
    assert_eq!(
        advertise
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path,
        "status.podIP"
    );
    assert_eq!(env.iter().filter(|e| e.name == "POD_NAME").count(), 1);
    assert!(env.iter().any(|e| e.name == "EXTRA"));
    assert_eq!(
        headless_service(&kc).spec.unwrap().ports.unwrap()[0].port,
        19092
    );
}

#[test]
fn brokers_may_read_only_their_configmap() {
    let role = broker_role(&demo());
    let rules = role.rules.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].resources.as_deref(),
        Some(&["configmaps".to_owned()][..])
    );
    assert_eq!(
        rules[0].resource_names.as_deref(),
        Some(&["demo-assignment".to_owned()][..])
    );
    assert_eq!(rules[0].verbs, vec!["get", "list", "watch"]);
    let binding = broker_role_binding(&demo());
    assert_eq!(binding.subjects.unwrap()[0].name, "demo-broker");
}

#[test]
fn the_claim_is_read_write_many() {
    let kc = cluster(serde_json::json!({
        "image": "kaas:dev",
        "storage": {"size": "50Gi", "storageClassName": "nfs"},
    }));
    let spec = claim(&kc).unwrap().spec.unwrap();
    assert_eq!(spec.access_modes.unwrap(), vec!["ReadWriteMany"]);
    assert_eq!(spec.storage_class_name.as_deref(), Some("nfs"));
    assert_eq!(
        spec.resources.unwrap().requests.unwrap()["storage"].0,
        "50Gi"
    );
}
