//! Pure builders of everything a `KaasCluster` owns. No I/O: the reconcile
//! server-side-applies what these return, and unit tests inspect them
//! directly.
//!
//! Builders set only fields that Kubernetes 1.20 knows: server-side apply
//! rejects fields missing from the server's schema, and the operator should
//! run on every server the CRD installs on.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource,
    HTTPGetAction, ObjectFieldSelector, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Probe, Secret, SecretKeySelector,
    SecretVolumeSource, Service, ServiceAccount, ServicePort, ServiceSpec, TCPSocketAction, Volume,
    VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{Resource, ResourceExt};
use sha2::Digest;

use crate::crd::{
    AdditionalListener, AdvertiseMode, Authentication, KaasCluster, LogFormat, INTERNAL_LISTENER,
};

/// The operator's field manager for server-side apply.
pub const MANAGER: &str = "kaas-operator";
/// Where the shared volume is mounted in broker pods.
pub const DATA_PATH: &str = "/data";
/// Where the broker config ConfigMap is mounted, and its one key.
pub const CONFIG_PATH: &str = "/etc/kaas";
/// Where a TLS listener's Secret is mounted (`tls.crt`, `tls.key`, `ca.crt`).
pub const TLS_PATH: &str = "/etc/kaas-tls";
/// Where an additional listener's TLS Secret is mounted, in a folder named
/// after the listener.
pub const LISTENER_TLS_PATH: &str = "/etc/kaas-listeners";
/// A client certificate's subject to its common name: the user of a
/// listener with `authentication: tls` (the rest of the subject may follow
/// the CN; a subject without one keeps Apache's default principal).
pub const CN_PRINCIPAL_RULES: &str = "RULE:^CN=([^,]*)(,.*)?$/$1/,DEFAULT";
pub const CONFIG_FILE: &str = "server.properties";
/// Pod-template annotation: the digest of the broker config, so that a
/// change rolls the brokers (they read the file at start).
pub const CONFIG_DIGEST: &str = "kaas.dev/broker-config-digest";
/// How long a broker serves on after SIGTERM while its groups move away.
pub const SHUTDOWN_DRAIN_MS: u64 = 5_000;
/// Name of the broker container and of its Kafka port.
pub const BROKER_CONTAINER: &str = "broker";
pub const KAFKA_PORT_NAME: &str = "kafka";
/// Name of the broker's HTTP port (/healthz, /readyz, /metrics).
pub const HTTP_PORT_NAME: &str = "http";

pub const LABEL_NAME: &str = "app.kubernetes.io/name";
pub const LABEL_INSTANCE: &str = "app.kubernetes.io/instance";
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const LABEL_COMPONENT: &str = "app.kubernetes.io/component";

/// Object names derived from the cluster's name. One place, because the
/// controller finds pods, slices and the ConfigMap by these names too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    pub cluster: String,
    pub namespace: String,
}

impl Names {
    pub fn of(kc: &KaasCluster) -> Self {
        Self {
            cluster: kc.name_any(),
            namespace: kc.namespace().unwrap_or_else(|| "default".into()),
        }
    }
    /// The StatefulSet; pods are `<cluster>-<ordinal>`.
    pub fn statefulset(&self) -> String {
        self.cluster.clone()
    }
    /// The headless Service giving each pod a DNS name.
    pub fn headless_service(&self) -> String {
        format!("{}-brokers", self.cluster)
    }
    /// The client Service (bootstrap address).
    pub fn client_service(&self) -> String {
        self.cluster.clone()
    }
    pub fn claim(&self) -> String {
        format!("{}-data", self.cluster)
    }
    pub fn assignment_configmap(&self) -> String {
        format!("{}-assignment", self.cluster)
    }
    /// The brokers' `server.properties`.
    pub fn broker_config(&self) -> String {
        format!("{}-broker-config", self.cluster)
    }
    pub fn pdb(&self) -> String {
        self.cluster.clone()
    }
    /// The Secret with `User:admin`'s password (SCRAM listeners).
    pub fn admin_secret(&self) -> String {
        format!("{}-admin", self.cluster)
    }
    /// Broker service account, Role and RoleBinding.
    pub fn broker_account(&self) -> String {
        format!("{}-broker", self.cluster)
    }
    pub fn pod(&self, ordinal: i32) -> String {
        format!("{}-{ordinal}", self.cluster)
    }
    /// The broker id of a pod of this cluster, from its name.
    pub fn ordinal_of(&self, pod_name: &str) -> Option<i32> {
        let rest = pod_name.strip_prefix(&self.cluster)?.strip_prefix('-')?;
        // Only plain decimal ordinals: "demo-01" or "demo-x-1" are not ours.
        kaas_shared::parse_ordinal(rest)
    }
    /// The DNS name a broker advertises in `dns` mode.
    pub fn broker_host(&self, ordinal: i32) -> String {
        format!(
            "{}.{}.{}.svc",
            self.pod(ordinal),
            self.headless_service(),
            self.namespace
        )
    }
}

/// Labels selecting a cluster's broker pods. Part of the StatefulSet's
/// immutable selector: never change them.
pub fn selector_labels(names: &Names) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_NAME.to_owned(), "kaas".to_owned()),
        (LABEL_INSTANCE.to_owned(), names.cluster.clone()),
    ])
}

/// Labels on everything the operator creates; the operator's Pod watch
/// selects on `managed-by`.
pub fn labels(names: &Names) -> BTreeMap<String, String> {
    let mut l = selector_labels(names);
    l.insert(LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned());
    l.insert(LABEL_COMPONENT.to_owned(), "broker".to_owned());
    l
}

/// `key=value,...` for a list call.
pub fn label_selector(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn owner(kc: &KaasCluster) -> OwnerReference {
    // A controller reference: garbage collection deletes what the cluster
    // owns, and Controller::owns() maps child events back to it.
    kc.controller_owner_ref(&())
        .expect("a KaasCluster read from the API has a name and uid")
}

fn meta(kc: &KaasCluster, names: &Names, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(names.namespace.clone()),
        labels: Some(labels(names)),
        owner_references: Some(vec![owner(kc)]),
        ..ObjectMeta::default()
    }
}

pub fn service_account(kc: &KaasCluster) -> ServiceAccount {
    let n = Names::of(kc);
    ServiceAccount {
        metadata: meta(kc, &n, n.broker_account()),
        ..ServiceAccount::default()
    }
}

/// Least privilege for brokers: read and watch their own assignment
/// ConfigMap, nothing else.
pub fn broker_role(kc: &KaasCluster) -> Role {
    let n = Names::of(kc);
    Role {
        metadata: meta(kc, &n, n.broker_account()),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".into()]),
            resource_names: Some(vec![n.assignment_configmap()]),
            verbs: vec!["get".into(), "list".into(), "watch".into()],
            ..PolicyRule::default()
        }]),
    }
}

pub fn broker_role_binding(kc: &KaasCluster) -> RoleBinding {
    let n = Names::of(kc);
    RoleBinding {
        metadata: meta(kc, &n, n.broker_account()),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: n.broker_account(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: n.broker_account(),
            namespace: Some(n.namespace.clone()),
            ..Subject::default()
        }]),
    }
}

/// The Services' ports: `listener`'s, then each additional listener's.
fn kafka_service_ports(kc: &KaasCluster) -> Vec<ServicePort> {
    let port = |name: String, port: i32| ServicePort {
        name: Some(name.clone()),
        port,
        target_port: Some(IntOrString::String(name)),
        protocol: Some("TCP".into()),
        ..ServicePort::default()
    };
    std::iter::once(port(KAFKA_PORT_NAME.into(), kc.spec.listener.port))
        .chain(
            kc.spec
                .additional_listeners
                .iter()
                .enumerate()
                .map(|(i, l)| port(listener_port_name(i), l.port)),
        )
        .collect()
}

/// The port name of additional listener `i` (a port name is at most 15
/// characters, so not the listener's own name).
pub fn listener_port_name(i: usize) -> String {
    format!("listener-{}", i + 1)
}

/// Apache's security protocol of a listener.
fn protocol(authentication: Authentication, tls: bool) -> &'static str {
    match (authentication, tls) {
        (Authentication::None, false) => "PLAINTEXT",
        (Authentication::Scram, false) => "SASL_PLAINTEXT",
        (Authentication::Scram, true) => "SASL_SSL",
        // `tls` without TLS is refused by `KaasClusterSpec::validate`.
        (Authentication::None | Authentication::Tls, _) => "SSL",
    }
}

/// Where additional listener `l`'s TLS Secret is mounted.
fn listener_tls_dir(l: &AdditionalListener) -> String {
    format!("{LISTENER_TLS_PATH}/{}", l.name.to_lowercase())
}

/// The volume of additional listener `l`'s TLS Secret.
fn listener_tls_volume(l: &AdditionalListener) -> String {
    format!("listener-{}", l.name.to_lowercase().replace('_', "-"))
}

/// The `server.properties` lines of the listeners: one, named after its
/// protocol as Apache names a lone listener; or `listener` as
/// [`INTERNAL_LISTENER`], the one brokers call each other on, and each
/// additional listener with its own TLS files and, with `authentication:
/// tls`, required client certificates whose CN is the user.
fn listener_properties(kc: &KaasCluster) -> Vec<String> {
    let l = &kc.spec.listener;
    let primary = protocol(l.authentication, l.tls.is_some());
    let more = &kc.spec.additional_listeners;
    if more.is_empty() {
        return vec![format!("listeners={primary}://0.0.0.0:{}", l.port)];
    }
    let named = std::iter::once((INTERNAL_LISTENER, l.port, primary)).chain(more.iter().map(|a| {
        (
            a.name.as_str(),
            a.port,
            protocol(a.authentication, a.tls.is_some()),
        )
    }));
    let (mut listeners, mut map) = (Vec::new(), Vec::new());
    for (name, port, protocol) in named {
        listeners.push(format!("{name}://0.0.0.0:{port}"));
        map.push(format!("{name}:{protocol}"));
    }
    let mut lines = vec![
        format!("listeners={}", listeners.join(",")),
        format!("listener.security.protocol.map={}", map.join(",")),
        format!("inter.broker.listener.name={INTERNAL_LISTENER}"),
    ];
    for a in more.iter().filter(|a| a.tls.is_some()) {
        let (prefix, dir) = (
            format!("listener.name.{}", a.name.to_lowercase()),
            listener_tls_dir(a),
        );
        lines.extend([
            format!("{prefix}.ssl.keystore.location={dir}/tls.crt"),
            format!("{prefix}.kaas.ssl.key.location={dir}/tls.key"),
            format!("{prefix}.ssl.truststore.location={dir}/ca.crt"),
        ]);
        if a.authentication == Authentication::Tls {
            lines.extend([
                format!("{prefix}.ssl.client.auth=required"),
                format!("{prefix}.ssl.principal.mapping.rules={CN_PRINCIPAL_RULES}"),
            ]);
        }
    }
    lines
}

/// The headless Service: per-pod DNS names, and the EndpointSlices the
/// controller reads broker readiness from. Not-ready pods are left out of
/// its endpoints on purpose, so slice readiness means "serving".
pub fn headless_service(kc: &KaasCluster) -> Service {
    let n = Names::of(kc);
    Service {
        metadata: meta(kc, &n, n.headless_service()),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            // Both fields: 1.20's dual-stack defaulting otherwise rewrites
            // clusterIPs on every apply, a new resourceVersion each time,
            // which would wake the controller forever.
            cluster_ips: Some(vec!["None".into()]),
            selector: Some(selector_labels(&n)),
            ports: Some(kafka_service_ports(kc)),
            publish_not_ready_addresses: Some(false),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The client Service: a stable bootstrap address. Clients then talk to
/// each broker at the address the assignment advertises.
pub fn client_service(kc: &KaasCluster) -> Service {
    let n = Names::of(kc);
    Service {
        metadata: meta(kc, &n, n.client_service()),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            selector: Some(selector_labels(&n)),
            ports: Some(kafka_service_ports(kc)),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The claim the operator creates, or `None` for `existingClaim`.
pub fn claim(kc: &KaasCluster) -> Option<PersistentVolumeClaim> {
    let n = Names::of(kc);
    let size = kc.spec.storage.size.clone()?;
    Some(PersistentVolumeClaim {
        metadata: meta(kc, &n, n.claim()),
        spec: Some(PersistentVolumeClaimSpec {
            // Every broker mounts the same volume: it must be RWX.
            access_modes: Some(vec!["ReadWriteMany".into()]),
            storage_class_name: kc.spec.storage.storage_class_name.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".into(), Quantity(size))])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    })
}

/// The claim brokers mount.
pub fn claim_name(kc: &KaasCluster) -> String {
    kc.spec
        .storage
        .existing_claim
        .clone()
        .unwrap_or_else(|| Names::of(kc).claim())
}

/// The PodDisruptionBudget as JSON for `api_version` (`policy/v1` or, on
/// servers before 1.21, `policy/v1beta1`; the fields used are the same).
/// One broker at a time: a voluntary eviction moves that broker's groups,
/// and moving two brokers' groups at once doubles the rebalances.
pub fn pdb(kc: &KaasCluster, api_version: &str) -> serde_json::Value {
    let n = Names::of(kc);
    serde_json::json!({
        "apiVersion": api_version,
        "kind": "PodDisruptionBudget",
        "metadata": meta(kc, &n, n.pdb()),
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": selector_labels(&n)},
        },
    })
}

fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..EnvVar::default()
    }
}

fn env_field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

/// The brokers' `server.properties`: every setting the cluster shares, by
/// the keys `kaas-broker serve --config` reads (Apache's where kaas has
/// them). Values are numbers and fixed paths, so nothing needs escaping.
pub fn broker_properties(kc: &KaasCluster) -> String {
    let b = &kc.spec.broker;
    let l = &kc.spec.listener;
    let header = [
        "# Rendered by kaas-operator from the KaasCluster; edits are overwritten.".to_string(),
        format!("log.dirs={DATA_PATH}"),
    ];
    // `User:admin` is a super user whenever the authorizer is on.
    let super_users = &kc.spec.authorization.super_users;
    let authorization = (!super_users.is_empty()).then(|| {
        let names: Vec<&str> = super_users.iter().map(|u| u.0.as_str()).collect();
        format!("super.users={}", names.join(";"))
    });
    header
        .into_iter()
        .chain(listener_properties(kc))
        .chain(authorization)
        .chain([
            format!("kaas.http.listen=0.0.0.0:{}", l.http_port),
            format!("num.partitions={}", b.default_partitions),
            format!("auto.create.topics.enable={}", b.auto_create_topics),
            format!(
                "group.initial.rebalance.delay.ms={}",
                b.group_initial_rebalance_delay_ms
            ),
            format!(
                "group.min.session.timeout.ms={}",
                b.group_min_session_timeout_ms
            ),
            format!(
                "group.max.session.timeout.ms={}",
                b.group_max_session_timeout_ms
            ),
            format!("offsets.retention.minutes={}", b.offsets_retention_minutes),
            format!("kaas.shutdown.drain.ms={SHUTDOWN_DRAIN_MS}"),
        ])
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The ConfigMap holding [`broker_properties`], mounted at [`CONFIG_PATH`].
pub fn broker_config(kc: &KaasCluster) -> ConfigMap {
    let n = Names::of(kc);
    ConfigMap {
        metadata: meta(kc, &n, n.broker_config()),
        data: Some(BTreeMap::from([(
            CONFIG_FILE.to_string(),
            broker_properties(kc),
        )])),
        ..ConfigMap::default()
    }
}

/// The broker's arguments: no shell. The id comes from the pod name
/// (`--id-from-pod-name` reads POD_NAME), the advertised host from the
/// environment (`$(VAR)` is expanded by the kubelet), the rest from the
/// mounted config.
pub fn broker_args(kc: &KaasCluster) -> Vec<String> {
    let port = kc.spec.listener.port;
    let mut args = [
        "serve",
        "--config",
        &format!("{CONFIG_PATH}/{CONFIG_FILE}"),
        "--id-from-pod-name",
        "--advertise",
        &format!("$(KAAS_ADVERTISE_HOST):{port}"),
    ]
    .map(String::from)
    .to_vec();
    // Every listener at the pod's host (`$(VAR)` expanded by the kubelet).
    let more = &kc.spec.additional_listeners;
    if !more.is_empty() {
        let advertised = std::iter::once((INTERNAL_LISTENER, port))
            .chain(more.iter().map(|a| (a.name.as_str(), a.port)))
            .map(|(name, port)| format!("{name}://$(KAAS_ADVERTISE_HOST):{port}"))
            .collect::<Vec<_>>()
            .join(",");
        args.extend([
            "--override".to_string(),
            format!("advertised.listeners={advertised}"),
        ]);
    }
    // The mounted Secret's files: a key store file of Apache's would hold
    // key and chain together, which a kubernetes.io/tls Secret does not.
    if kc.spec.listener.tls.is_some() {
        for (flag, file) in [
            ("--tls-cert", "tls.crt"),
            ("--tls-key", "tls.key"),
            ("--tls-ca", "ca.crt"),
        ] {
            args.extend([flag.to_string(), format!("{TLS_PATH}/{file}")]);
        }
    }
    args
}

/// The key of the admin's password in [`Names::admin_secret`].
pub const ADMIN_PASSWORD_KEY: &str = "password";

/// The Secret holding `User:admin`'s `password` (SCRAM listeners), owned by
/// the cluster. Made once: the operator never overwrites it.
pub fn admin_secret(kc: &KaasCluster, password: &str) -> Secret {
    let n = Names::of(kc);
    Secret {
        metadata: meta(kc, &n, n.admin_secret()),
        string_data: Some(BTreeMap::from([(
            ADMIN_PASSWORD_KEY.to_string(),
            password.to_string(),
        )])),
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

fn env_secret(name: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.into(),
                key: key.into(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

pub fn statefulset(kc: &KaasCluster) -> StatefulSet {
    let n = Names::of(kc);
    let spec = &kc.spec;
    let overrides = spec.pod.clone().unwrap_or_default();
    let port = spec.listener.port;

    let advertise_host = match spec.listener.advertise {
        // $(VAR) is expanded by the kubelet from variables defined earlier.
        AdvertiseMode::Dns => env(
            "KAAS_ADVERTISE_HOST",
            format!("$(POD_NAME).{}.{}.svc", n.headless_service(), n.namespace),
        ),
        AdvertiseMode::PodIp => env_field("KAAS_ADVERTISE_HOST", "status.podIP"),
    };
    let mut container_env = vec![
        env_field("POD_NAME", "metadata.name"),
        advertise_host,
        env("KAAS_ASSIGNMENT_CONFIGMAP", n.assignment_configmap()),
        env_field("KAAS_ASSIGNMENT_NAMESPACE", "metadata.namespace"),
        env(
            "KAAS_LOG_FORMAT",
            match spec.broker.log_format {
                LogFormat::Text => "text",
                LogFormat::Json => "json",
            },
        ),
    ];
    if spec.listener.authentication == Authentication::Scram {
        container_env.push(env_secret(
            "KAAS_ADMIN_PASSWORD",
            &n.admin_secret(),
            ADMIN_PASSWORD_KEY,
        ));
    }
    // User variables come last; the operator's names are reserved.
    for e in overrides.env.unwrap_or_default() {
        if !container_env.iter().any(|x| x.name == e.name) {
            container_env.push(e);
        }
    }

    let probe = |initial, period, failures| Probe {
        initial_delay_seconds: Some(initial),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        ..Probe::default()
    };
    // Readiness is "accepts Kafka connections", not the broker's /readyz:
    // /readyz turns ready only once the assignment counts the broker alive,
    // and the operator counts it alive only once its pod is Ready — using
    // it here would deadlock every new broker.
    let readiness = Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::String(KAFKA_PORT_NAME.into()),
            ..TCPSocketAction::default()
        }),
        ..probe(2, 5, 2)
    };
    // Liveness is slower, so a busy broker is not restarted for one slow
    // answer.
    let liveness = Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/healthz".into()),
            port: IntOrString::String(HTTP_PORT_NAME.into()),
            ..HTTPGetAction::default()
        }),
        ..probe(10, 10, 6)
    };

    let mut container = Container {
        name: BROKER_CONTAINER.into(),
        image: Some(spec.image.clone()),
        image_pull_policy: Some(spec.image_pull_policy.as_str().to_owned()),
        command: Some(vec!["kaas-broker".into()]),
        args: Some(broker_args(kc)),
        env: Some(container_env),
        ports: Some(
            vec![
                ContainerPort {
                    name: Some(KAFKA_PORT_NAME.into()),
                    container_port: port,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                },
                ContainerPort {
                    name: Some(HTTP_PORT_NAME.into()),
                    container_port: spec.listener.http_port,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                },
            ]
            .into_iter()
            .chain(
                spec.additional_listeners
                    .iter()
                    .enumerate()
                    .map(|(i, l)| ContainerPort {
                        name: Some(listener_port_name(i)),
                        container_port: l.port,
                        protocol: Some("TCP".into()),
                        ..ContainerPort::default()
                    }),
            )
            .collect(),
        ),
        // Pod readiness is what makes a broker alive in the assignment.
        readiness_probe: Some(readiness),
        liveness_probe: Some(liveness),
        resources: spec.resources.clone(),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "data".into(),
                mount_path: DATA_PATH.into(),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "config".into(),
                mount_path: CONFIG_PATH.into(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
        ]),
        ..Container::default()
    };
    let mut volumes = vec![
        Volume {
            name: "data".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(kc),
                ..PersistentVolumeClaimVolumeSource::default()
            }),
            ..Volume::default()
        },
        Volume {
            name: "config".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: n.broker_config(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
    ];
    // The TLS Secrets: `listener`'s, then each additional listener's.
    let secrets = spec
        .listener
        .tls
        .iter()
        .map(|tls| ("tls".to_string(), tls, TLS_PATH.to_string()))
        .chain(spec.additional_listeners.iter().filter_map(|l| {
            let tls = l.tls.as_ref()?;
            Some((listener_tls_volume(l), tls, listener_tls_dir(l)))
        }));
    for (name, tls, path) in secrets {
        volumes.push(Volume {
            name: name.clone(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(tls.secret_name.clone()),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        });
        if let Some(mounts) = container.volume_mounts.as_mut() {
            mounts.push(VolumeMount {
                name,
                mount_path: path,
                read_only: Some(true),
                ..VolumeMount::default()
            });
        }
    }

    let mut pod_labels = overrides.labels.unwrap_or_default();
    pod_labels.extend(labels(&n));
    let mut pod_annotations = overrides.annotations.unwrap_or_default();
    pod_annotations.insert(
        CONFIG_DIGEST.into(),
        format!(
            "{:x}",
            sha2::Sha256::digest(broker_properties(kc).as_bytes())
        ),
    );
    StatefulSet {
        metadata: meta(kc, &n, n.statefulset()),
        spec: Some(StatefulSetSpec {
            replicas: Some(spec.replicas),
            service_name: Some(n.headless_service()),
            // Brokers do not depend on each other to start: start them all.
            pod_management_policy: Some("Parallel".into()),
            selector: LabelSelector {
                match_labels: Some(selector_labels(&n)),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    annotations: Some(pod_annotations),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(n.broker_account()),
                    containers: vec![container],
                    volumes: Some(volumes),
                    termination_grace_period_seconds: Some(
                        overrides.termination_grace_period_seconds.unwrap_or(30),
                    ),
                    node_selector: overrides.node_selector,
                    tolerations: overrides.tolerations,
                    affinity: overrides.affinity,
                    priority_class_name: overrides.priority_class_name,
                    security_context: overrides.security_context,
                    ..PodSpec::default()
                }),
            },
            ..StatefulSetSpec::default()
        }),
        ..StatefulSet::default()
    }
}

/// What the operator applies for a broker pod, for a KaasCluster read from
/// a file (YAML or JSON) rather than the API: the broker ConfigMap and the
/// StatefulSet, as a `v1` List. A cluster without a namespace or uid gets
/// `default` and a placeholder uid.
pub fn render_broker_objects(cluster_yaml: &str) -> anyhow::Result<serde_json::Value> {
    let mut kc: KaasCluster = serde_yaml::from_str(cluster_yaml)?;
    anyhow::ensure!(
        kc.metadata.name.is_some(),
        "the KaasCluster has no metadata.name"
    );
    kc.metadata
        .uid
        .get_or_insert_with(|| "rendered-without-an-api-server".into());
    let mut config = serde_json::to_value(broker_config(&kc))?;
    config["apiVersion"] = "v1".into();
    config["kind"] = "ConfigMap".into();
    let mut sts = serde_json::to_value(statefulset(&kc))?;
    sts["apiVersion"] = "apps/v1".into();
    sts["kind"] = "StatefulSet".into();
    Ok(serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [config, sts]}))
}

/// The assignment ConfigMap for an encoded document (see
/// `kaas_shared::configmap::encode`).
pub fn assignment_configmap(
    kc: &KaasCluster,
    data: BTreeMap<String, String>,
    binary: BTreeMap<String, k8s_openapi::ByteString>,
) -> ConfigMap {
    let n = Names::of(kc);
    ConfigMap {
        metadata: meta(kc, &n, n.assignment_configmap()),
        data: Some(data),
        binary_data: Some(binary),
        ..ConfigMap::default()
    }
}

#[cfg(test)]
mod tests {
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
        assert!(
            readiness.tcp_socket.is_some(),
            "not /readyz: see statefulset()"
        );
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
}
