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
    SecretVolumeSource, Service, ServiceAccount, ServicePort, ServiceSpec, Volume, VolumeMount,
    VolumeResourceRequirements,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{Resource, ResourceExt};
use sha2::Digest;

use crate::crd::{AdvertiseMode, Authentication, KaasCluster, LogFormat, INTERNAL_LISTENER};

mod listeners;
pub use listeners::{listener_port_name, CN_PRINCIPAL_RULES, LISTENER_TLS_PATH};
use listeners::{listener_properties, listener_tls_dir, listener_tls_volume};

/// The operator's field manager for server-side apply.
pub const MANAGER: &str = "kaas-operator";
/// Where the shared volume is mounted in broker pods.
pub const DATA_PATH: &str = "/data";
/// Where the broker config ConfigMap is mounted, and its one key.
pub const CONFIG_PATH: &str = "/etc/kaas";
/// Where a TLS listener's Secret is mounted (`tls.crt`, `tls.key`, `ca.crt`).
pub const TLS_PATH: &str = "/etc/kaas-tls";
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
    // Readiness is the broker's /serving (its volume answers and no other
    // broker fenced it), not /readyz: /readyz turns ready only once the
    // assignment counts the broker alive, and the operator counts it alive
    // only once its pod is Ready — using it here would deadlock every new
    // broker. Probed every second: a broker whose volume stalls is not
    // ready within about its volume check timeout plus two probes, and the
    // operator moves what it holds.
    let readiness = Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/serving".into()),
            port: IntOrString::String(HTTP_PORT_NAME.into()),
            ..HTTPGetAction::default()
        }),
        ..probe(2, 1, 2)
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
mod tests;
